"""Chapter 07's tensor-core rungs (helpers/chapters/tensor_cores.py, helpers/kernels/hgemm.cu) and its exercise's
checker (helpers/chapters/tensor_checks.py): right on the executor, counted as the compiled code moves the tiles
(checked against NVRTC's machine code), priced by the model under the tensor-core roofs, checked against published
rows, and the checker's planted faults failing."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from helpers.book import evidence
from helpers.chapters import tensor_checks, tensor_cores
from helpers.executor import wmma
from helpers.gpu import compiled, nvrtc
from helpers.gpu.cuda import kernel_source
from helpers.measuring import specs
from helpers.model import roofline

needs_nvdisasm = pytest.mark.skipif(compiled.disassembler() is None, reason=compiled.INSTALL_HINT)


@pytest.mark.parametrize(("label", "accumulate"), [("8", "float"), ("9", "float"), ("9", "half")])
def test_each_rung_is_right_and_makes_one_mma_sync_per_warp_per_step(label, accumulate):
    n = tensor_cores.COUNT_N
    c = tensor_cores.counts(label, n, accumulate)  # raises unless C agrees with NumPy
    steps = (n // 16) ** 3  # 16 x 16 tiles of C, times 16-wide steps along k
    assert c.tensor_ops == steps and c.tensor_loads == 2 * steps and c.tensor_stores == (n // 16) ** 2
    assert c.tensor_flops == 2 * n**3 == c.flops  # every FLOP on the tensor cores


def test_the_agreement_check_fails_a_wrong_product():
    a, b = tensor_cores.inputs(32)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    assert tensor_cores.agrees(c, a, b)
    c[3, 5] += 1e-3 * abs(c[3, 5]) + 1e-3
    assert not tensor_cores.agrees(c, a, b)


def test_fp16_inputs_cost_digits_and_stay_within_the_stated_bound():
    """The price of the tensor cores' rate: fp16 inputs keep about 3 digits where float32 keeps about 6."""
    a32, b32 = (np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    exact = a32.astype(np.float64) @ b32.astype(np.float64)
    a16, b16 = a32.astype(np.float16), b32.astype(np.float16)
    c16, _ = tensor_cores.run_on_executor(tensor_cores.rung("8"), a16, b16)
    assert np.all(np.abs(c16 - exact) <= tensor_cores.fp16_bound(a32, b32))
    assert 2 < tensor_cores.digits(c16, exact) < 4.5 < tensor_cores.digits(a32 @ b32, exact)
    assert [f[:2] for f in tensor_cores.formats()][::2] == [("float32", 24), ("float16", 11)]


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@needs_nvdisasm
def test_the_executor_counts_the_tile_moves_the_machine_code_makes(arch):
    """Rung 8: 32-bit LDG per 8 x 8 block of halves, 4 per tile; rung 9: ldmatrix blocks (LDSM .2 on sm_75, .4 on
    sm_90); stores: a 64-bit STG per 8 x 8 block of floats. Per mma_sync, machine code and executor agree."""
    made = compiled.facts(kernel_source(tensor_cores.SOURCE), arch, tensor_cores.SOURCE,
                          tuple(tensor_cores.name_expressions()))
    for r in tensor_cores.RUNGS:
        ops = collections.Counter(i.opcode.split(".")[0] for i in made[r.name].sass)
        blocks = sum(int(i.opcode.rsplit(".", 1)[1]) for i in made[r.name].sass if i.kind == "LDSM")
        hmma = [i.opcode for i in made[r.name].sass if i.kind == "HMMA"]
        per_mma = {"HMMA.1688": 4, "HMMA.16816": 2}[hmma[0].rsplit(".", 1)[0]]  # m16n8k8 or m16n8k16 pieces
        c = tensor_cores.counts(r.label)
        if r.kernel == "hgemm_wmma":
            assert ops["LDG"] / len(hmma) * per_mma == c.global_load_requests / c.tensor_ops == 8
        else:
            assert blocks / len(hmma) * per_mma == 8 == c.shared_load_requests * wmma.BLOCKS_PER_LDSM / c.tensor_ops
        assert ops["STG"] == 4 == c.global_store_requests / c.tensor_stores


@pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")
def test_the_stored_registers_are_what_this_nvrtc_makes():
    stored = tensor_cores.stored()
    if stored["nvrtc"] != nvrtc.version():
        pytest.skip(f"stored by NVRTC {stored['nvrtc']}, this is {nvrtc.version()}")
    assert tensor_cores.compile_all() == stored


@pytest.mark.parametrize("device", ["T4", "A100 40GB", "H100 SXM", "H200", "NVIDIA GeForce RTX 4090"])
def test_no_prediction_is_above_the_tensor_roof(device):
    spec = specs.get(device)
    n = tensor_cores.BIG_N
    roof = roofline.tensor_rate(spec, "float16")
    for r in tensor_cores.RUNGS:
        seconds = tensor_cores.predict(r.label, spec, n).seconds
        assert 2 * n**3 / seconds <= roof
    assert 2 * n**3 / tensor_cores.predict_cublas(spec, n) <= roof


def test_the_tensor_roofs_per_gpu_and_their_refusals():
    rtx = "NVIDIA GeForce RTX 4090"  # fp16 sums at twice the rate of float32 sums (NVIDIA's Ada whitepaper)
    assert roofline.tensor_rate(rtx, "float16_acc16") / roofline.tensor_rate(rtx, "float16") == \
        pytest.approx(330.3 / 165.2)
    assert roofline.tensor_rate("A100 40GB", "float16_acc16") == roofline.tensor_rate("A100 40GB", "float16")
    assert roofline.tensor_rate("H100 SXM", "bfloat16") == roofline.tensor_rate("H100 SXM", "float16")
    with pytest.raises(ValueError, match="no tensor-core roof for dtype 'bfloat16'"):
        roofline.tensor_rate("T4", "bfloat16")  # a T4's tensor cores take fp16, not bf16
    with pytest.raises(ValueError, match="no tensor-core roof for dtype 'float32'"):
        roofline.tensor_rate("T4", "float32")


def test_bad_rungs_sizes_and_sums_are_refused():
    with pytest.raises(ValueError, match="not a multiple of its 16 x 64 tile"):
        tensor_cores.rung("8").launch(100)
    with pytest.raises(ValueError, match="no tensor rung called"):
        tensor_cores.rung(7)
    with pytest.raises(ValueError, match="'half' needs the template"):
        tensor_cores.rung("8").with_sums("half")
    with pytest.raises(ValueError, match="at most n = 256"):
        tensor_cores.counts("8", 512)


#: The published rows that check the tensor-core pricing: the model's op and the source's address.
def _tensor_rows() -> list[evidence.Check]:
    rows = [r for r in evidence.load() if r["model"].get("op") == "wmma_rung"
            or (r["model"].get("op") == "matmul" and r["model"]["dtype"] in ("float16", "float16_acc16", "bfloat16")
                and r["device"].startswith("NVIDIA"))]
    return evidence.checks(rows)


def _repository(url: str) -> str:
    """owner/name of a GitHub address: a source is a repository (its issues and files alike)."""
    return "/".join(url.split("/")[3:5])


def test_the_tensor_pricing_sits_within_2x_of_published_rows_that_set_no_constant():
    setting = {_repository(r["url"]) for r in evidence.load() if r["model"].get("sets")}
    free = [c for c in _tensor_rows() if _repository(c.row["url"]) not in setting]
    sources = {_repository(c.row["url"]) for c in free}
    wmma = [c for c in free if c.row["model"]["op"] == "wmma_rung"]
    assert len(free) >= 4 and len(sources) >= 2 and len(wmma) >= 2
    for c in free:
        assert 1 / evidence.RATIO_LIMIT <= c.ratio <= evidence.RATIO_LIMIT, (c.row["library"], c.ratio)
        assert "/blob/" in c.row["url"] and c.row["quote"].strip()  # pinned to a commit, quoted


# --------------------------------------------------------------------------------------------------------------
# The exercise's checker: the solution passes, the starter waits, planted faults fail.

SOLUTION = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_tile(const half* A, const half* B, float* C, int n) {
    int row = blockIdx.y * 16, col = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum;
    wmma::fill_fragment(sum, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + row * n + k, n);
        wmma::load_matrix_sync(b, B + k * n + col, n);
        wmma::mma_sync(sum, a, b, sum);
    }
    wmma::store_matrix_sync(C + row * n + col, sum, n, wmma::mem_row_major);
}
"""
#: A product without the tensor cores: right, but not what the exercise asks.
SCALAR = SOLUTION.replace("""    wmma::fill_fragment(sum, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + row * n + k, n);
        wmma::load_matrix_sync(b, B + k * n + col, n);
        wmma::mma_sync(sum, a, b, sum);
    }
    wmma::store_matrix_sync(C + row * n + col, sum, n, wmma::mem_row_major);""",
    """    for (int e = threadIdx.x; e < 256; e += 32) {
        float s = 0.0f;
        for (int k = 0; k < n; k++)
            s += __half2float(A[(row + e / 16) * n + k]) * __half2float(B[k * n + col + e % 16]);
        C[(row + e / 16) * n + col + e % 16] = s;
    }""")


def test_the_solution_passes_and_says_what_it_counted():
    verdict = tensor_checks.check_wmma_tile(SOLUTION)
    assert verdict.passed, verdict.message
    assert "8 mma_sync and 16 load_matrix_sync" in verdict.message


@pytest.mark.parametrize(("fault", "source", "said"), [
    ("a divergent mma_sync", SOLUTION.replace("wmma::mma_sync(sum, a, b, sum);",
                                              "if (threadIdx.x < 16) wmma::mma_sync(sum, a, b, sum);"), "divergence"),
    ("a wrong leading dimension", SOLUTION.replace("A + row * n + k, n);", "A + row * n + k, 16);"), "differ"),
    ("an accumulator never filled", SOLUTION.replace("wmma::fill_fragment(sum, 0.0f);\n", ""), "unfilled"),
    ("half steps along k", SOLUTION.replace("k += 16", "k += 8"), "aligned"),
    ("a stray leading dimension", SOLUTION.replace("B + k * n + col, n);", "B + k * n + col, n + 4);"), "multiple"),
    ("no tensor cores", SCALAR, "no wmma::mma_sync"),
    ("each product twice", SOLUTION.replace("wmma::mma_sync(sum, a, b, sum);",
                                            "wmma::mma_sync(sum, a, b, sum);\n        wmma::mma_sync(sum, a, b, sum);"),
     None),
])
def test_planted_faults_fail_the_check(fault, source, said):
    verdict = tensor_checks.check_wmma_tile(source)
    assert not verdict.passed and verdict.message.startswith("❌"), fault
    if said:
        assert said in verdict.message, verdict.message


def test_the_starter_is_not_attempted_yet():
    starter = SOLUTION.replace("    wmma::fill_fragment(sum, 0.0f);\n", "    // TODO: the tile loop\n")
    verdict = tensor_checks.check_wmma_tile(starter)
    assert not verdict.passed and verdict.message.startswith("⏳")
