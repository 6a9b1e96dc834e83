"""Chapter 03's kernel plumbing: sources, ElementwiseKernel snippets made whole, predictions, and the checkers."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import without_gpu

from helpers import executor
from helpers.chapters import kernel_checks
from helpers.chapters import mandelbrot as mb
from helpers.core import cupy_params
from helpers.executor import cupy_cpu
from helpers.gpu import cuda, nvrtc
from helpers.measuring import specs, timing, workloads
from helpers.model import roofline

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")

# ---------------------------------------------------------------- sources


def test_the_kernel_files_are_shipped_and_readable() -> None:
    assert cuda.kernel_files() == ["hgemm.cu", "mandelbrot.cu", "matmul.cu", "reduce_sum.cu", "sgemm.cu",
                                   "vector_add.cu"]
    assert "vector_add_grid_stride" in cuda.kernel_source("vector_add.cu")
    with pytest.raises(FileNotFoundError, match="the files are hgemm.cu, mandelbrot.cu, matmul.cu"):
        cuda.kernel_source("nope.cu")
    assert cuda.show("matmul.cu").data.startswith("```cuda\n// C = A @ B")


# ---------------------------------------------------------------- ElementwiseKernel snippets


def test_params_are_read_as_cupy_reads_them() -> None:
    assert cupy_params.parse_params("float32 a, raw T x") == [cupy_params.Param("float32", "a"),
                                                              cupy_params.Param("T", "x", raw=True)]


@pytest.mark.parametrize("text", ["float32", "float32 x y", "float32 x,", "float32 2x", "float32 x, int32 x"])
def test_unreadable_params_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ValueError, match="type name|twice"):
        cupy_params.parse_params(text)


def test_the_generated_kernel_binds_every_parameter_to_its_element() -> None:
    k = cuda.Elementwise("float32 a, T x, raw T y", "T z", "z = a * x + y[i]", "axpy")
    source = k.source({"T": "float64"})
    assert k.placeholders() == ["T"] and "typedef double T;" in source
    assert 'extern "C" __global__ void axpy(const float* _in_a, const T* _in_x, const T* _in_y, T* _out_z,' in source
    for line in ("const float a = _in_a[i];", "const T x = _in_x[i];", "const T* y = _in_y;", "T& z = _out_z[i];",
                 '#line 1 "axpy (operation)"\nz = a * x + y[i]\n;'):
        assert line in source
    assert "typedef float T;" in k.source(), "placeholders default to float32"


@pytest.mark.parametrize(("args", "message"), [
    (("float32 x", "float32 y", "", "k"), "non-empty"),
    (("float32 x", "float32 y", "y = x", "2k"), "C identifier"),
    (("float32 x", "float32 x", "x = x", "k"), "both an input and an output"),
])
def test_bad_elementwise_kernels_are_refused(args, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cuda.Elementwise(*args)


def test_an_unknown_dtype_for_a_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="accepted: bool, int8"):
        cuda.Elementwise("T x", "T y", "y = x", "k").source({"T": "float"})
    with pytest.raises(ValueError, match="U is not a type placeholder of 'k'; its placeholders: T"):
        cuda.Elementwise("T x", "T y", "y = x", "k").source({"U": "float32"})


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: cuda.Elementwise("float32 x", 5, "y = x", "k"), TypeError, "out_params must be a string"),
    (lambda: cuda.show(5), TypeError, "CUDA C source or a file name"),
])
def test_arguments_of_the_wrong_type_say_what_is_expected(call, error, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


@needs_nvrtc
def test_one_architecture_may_be_given_as_a_string(capsys) -> None:
    copy = cuda.Elementwise("float32 x", "float32 y", "y = x", "copy")
    assert [c.arch for c in copy.compile("sm_90")] == ["sm_90"]
    assert [c.arch for c in cuda.compile_report(copy.source(), "copy.cu", "sm_75")] == ["sm_75"]
    assert [c.arch for c in nvrtc.compile_for_targets(copy.source(), "copy.cu", "sm_75")] == ["sm_75"]


@needs_nvrtc
def test_a_snippet_compiles_and_its_errors_point_into_the_operation() -> None:
    good = cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(-x))", "silu",
                            preamble="__device__ float square(float v) { return v * v; }")
    assert [c.arch for c in good.compile()] == list(nvrtc.TARGET_ARCHS)
    bad = cuda.Elementwise("float32 x", "float32 y", "float t = x;\ny = sqr(t);", "silu")
    with pytest.raises(nvrtc.CompileError, match=r'silu \(operation\):2: error: identifier "sqr" is undefined'):
        bad.compile()
    in_preamble = cuda.Elementwise("float32 x", "float32 y", "y = x", "k", preamble="// one\n__device__ int q = ;")
    with pytest.raises(nvrtc.CompileError, match=r"k \(preamble\):2: error"):
        in_preamble.compile(archs=("sm_75",))


# ---------------------------------------------------------------- launching, and the GPU that is not here


@pytest.mark.parametrize(("n", "threads", "blocks"), [(1, 256, 1), (256, 256, 1), (257, 256, 2), (1000, 256, 4),
                                                      (20, 8, 3)])
def test_blocks_for(n: int, threads: int, blocks: int) -> None:
    assert cuda.blocks_for(n, threads) == blocks


@pytest.mark.parametrize(("n", "threads"), [(0, 256), (10, 0), (2.5, 8), (True, 8)])
def test_blocks_for_refuses_what_is_not_a_positive_integer(n, threads) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        cuda.blocks_for(n, threads)


@without_gpu
def test_without_a_gpu_the_t4_gives_the_predictions() -> None:
    gpu = cuda.gpu()
    assert not gpu.here and gpu.spec.name == "NVIDIA T4"
    assert gpu.label == "prediction (NVIDIA T4 published specs)"
    assert gpu.host_link() == specs.HOST_LINKS["NVIDIA T4"]
    flops, nbytes = 3e6, 12e6
    # one CuPy call, timed back to back: the larger of its 10 µs host overhead and its device time, which is
    # 12 MB at 80% of 320 GB/s plus the 2.433 µs kernel floor = 52.075 µs
    assert gpu.predict_seconds(flops, nbytes) == pytest.approx(12e6 / 256e9 + 2.433e-6)
    # 11 GB of NumPy (pageable) arrays over the T4's 11 GB/s link, at PAGEABLE_FRACTION of its pinned rate
    pageable = 1.0 / roofline.PAGEABLE_FRACTION.value
    assert gpu.predict_seconds(flops, nbytes, copies=11e9) == pytest.approx(12e6 / 256e9 + 2.433e-6 + 10e-6 + pageable)
    # three calls share the work: each 4 MB, 15.6 + 2.4 µs, longer than a call's 10 µs of host time
    assert gpu.predict_seconds(flops, nbytes, launches=3) == pytest.approx(3 * (4e6 / 256e9 + 2.433e-6))
    # tiny work: the host's 10 µs per call decides
    assert gpu.predict_seconds(30, 120, launches=3) == pytest.approx(30e-6)
    # CuPy's axpby: 3 kernels moving 7 float32 numbers per element
    assert gpu.predict_cupy_axpby(10**6) == pytest.approx(3 * (28e6 / 3 / 256e9 + 2.433e-6))
    assert gpu.predict_cupy_axpby(10**6, copies=11e6) == pytest.approx(
        3 * (28e6 / 3 / 256e9 + 2.433e-6) + 10e-6 + 1e-3 * pageable)
    with pytest.raises(ValueError, match="launches must be a positive integer"):
        gpu.predict_seconds(flops, nbytes, launches=0)


def test_cublas_is_priced_as_a_tuned_matmul_and_the_kernels_by_their_bytes() -> None:
    """One path for every matmul prediction: cuBLAS at MATMUL_EFFICIENCY of the roof, as roofline prices it."""
    gpu, n = cuda.gpu(), 2048
    flops = 2 * n**3
    ways = cuda.matmul_ways(n, 16)
    assert ways == {"naive kernel": (0.25, False), "tiled kernel (16 x 16)": (4.0, False),
                    "cuBLAS (a @ b)": (flops / (3 * 4 * n * n), True)}
    intensity = ways["cuBLAS (a @ b)"][0]
    tuned = gpu.predict_seconds(flops, flops / intensity, matmul=True)
    held = roofline.held_share(specs.get("NVIDIA T4"))  # a T4 holds 1,185 MHz under load, not its peak's 1,590
    assert tuned == pytest.approx(flops / (8.1e12 * 0.75 * held) + 2.433e-6)  # the T4's fp32 peak at 75%, held clock
    assert tuned == roofline.predict_seconds("NVIDIA T4", flops=flops, bytes=flops / intensity, call="cupy",
                                             timed="pipelined", matmul=True)


def test_on_a_gpu_its_own_name_labels_the_measurements(monkeypatch) -> None:
    # `helpers.measuring.hardware` is the function, not the module
    hardware = importlib.import_module("helpers.measuring.hardware")

    monkeypatch.setattr(cuda, "gpu_here", lambda: True)
    for name, roofs in (("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"), ("Some Future GPU", "NVIDIA T4")):
        card = hardware.Accelerator("gpu", name, "cupy", spec=specs.lookup(name))
        monkeypatch.setattr(hardware, "hardware", lambda card=card: types.SimpleNamespace(gpus=[card]))
        found = cuda.gpu()
        assert found.here and found.label == f"{name} (measured)" and found.spec.name == roofs
        assert found.own_specs == (name != "Some Future GPU")
        assert found.note == ("" if found.own_specs else "No published specs on file for the Some Future GPU: the "
                              "NVIDIA T4's roofs and host link stand in for its own in the plots and predictions.")


@without_gpu
def test_gpu_paths_get_as_far_as_they_can_without_a_gpu() -> None:
    assert not cuda.gpu_here()
    kernel = cuda.file_kernel("vector_add.cu", "vector_add")  # CuPy builds the object; it compiles at first launch
    assert kernel.name == "vector_add" and kernel is cuda.file_kernel("vector_add.cu", "vector_add")
    assert cuda.Elementwise("float32 x", "float32 y", "y = x", "copy").on_gpu().name == "copy"
    with pytest.raises(Exception):  # noqa: B017 - any CuPy error: there is no device to allocate on
        cuda.vector_add(np.ones(4, np.float32), np.ones(4, np.float32))


def test_compile_report_without_nvrtc_says_how_to_get_it_once(monkeypatch, capsys) -> None:
    monkeypatch.setattr(nvrtc, "_library", lambda: "NVRTC was not found")
    monkeypatch.setattr(nvrtc, "_told_why", [])
    assert cuda.compile_report("whatever", "k.cu") == []
    assert cuda.compile_report("whatever", "k2.cu") == []
    assert capsys.readouterr().out.splitlines() == [
        f"k.cu: not compiled. NVRTC was not found. To get it: {nvrtc.INSTALL_HINT}",
        "k2.cu: not compiled. NVRTC is missing here (see above)."]


@needs_nvrtc
def test_compile_report_prints_one_line_and_raises_on_errors(capsys) -> None:
    built = cuda.compile_report(cuda.kernel_source("vector_add.cu"), "vector_add.cu")
    assert [c.arch for c in built] == ["sm_75", "sm_90"]
    assert capsys.readouterr().out.startswith("vector_add.cu: compiled by NVRTC")
    with pytest.raises(nvrtc.CompileError):
        cuda.compile_report("__global__ void k() { oops }", "k.cu")


# ---------------------------------------------------------------- exercise checkers

SILU = cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(-x));", "silu")
SCALE = """
extern "C" __global__ void scale(const float* x, float* out, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = factor * x[i];
}
"""


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_untouched_exercises_are_not_attempted(capsys) -> None:
    stub = cuda.Elementwise("float32 x", "float32 y", "y = x;  // TODO: y = x * sigmoid(x)", "silu")
    verdicts = [kernel_checks.check_silu(stub), kernel_checks.check_silu(...),
                kernel_checks.check_scale(SCALE + "// TODO"),
                kernel_checks.check_tiled_matmul("// TODO"), kernel_checks.check_tiled_matmul(...)]
    assert not any(v.attempted or v.passed for v in verdicts)
    assert all(line.startswith("⏳") for line in lines(capsys))


@needs_nvrtc
@without_gpu
def test_a_right_kernel_passes_with_what_was_not_checked_said(capsys) -> None:
    assert kernel_checks.check_silu(SILU)
    assert kernel_checks.check_scale(SCALE)
    out = lines(capsys)
    assert re.fullmatch(r"✅ silu: ran on the CPU executor and matches NumPy, in bounds with no race \(1 element; "
                        r"(\d+ elements; )+1,000 elements\); compiled for sm_75 and sm_90\. Drawn afresh for this "
                        r"check: \d+ elements\.", out[0]), out[0]
    assert out[1] == "   Not checked: how fast it runs (there is no GPU here)."
    assert re.fullmatch(r"✅ scale with a bounds check: ran on the CPU executor and matches NumPy, in bounds with no "
                        r"race \(n = 1, 1 block of 256 threads; (n = \d+, \d blocks? of 256 threads; )+n = 1,000, 4 "
                        r"blocks of 256 threads\); compiled for sm_75 and sm_90\. Drawn afresh for this check: "
                        r"factor = -?\d\.\d\d, n = \d+\.", out[2]), out[2]
    assert "n = 257, 2 blocks of 256 threads; " in out[2]
    assert out[3].startswith("   Not checked: how fast it runs")


@without_gpu
def test_without_nvrtc_a_kernel_the_executor_ran_right_still_passes_and_says_what_was_not_compiled(
        capsys, monkeypatch) -> None:
    monkeypatch.setattr(kernel_checks.nvrtc, "available", lambda: False)
    assert kernel_checks.check_scale(SCALE)
    out = lines(capsys)
    assert out[0].startswith("✅ scale with a bounds check: ran on the CPU executor and matches NumPy")
    assert out[1].startswith("   Not checked: how fast it runs (there is no GPU here); NVIDIA's own compiler (")
    assert not kernel_checks.check_scale(SCALE.replace("if (i < n) ", ""))


@pytest.mark.parametrize("source", ["", "  \n", "\t"])
def test_an_empty_source_is_a_cross_not_an_exception(capsys, source) -> None:
    assert not kernel_checks.check_scale(source) and not kernel_checks.check_tiled_matmul(source)
    out = lines(capsys)
    assert len(out) >= 2 and all(line.startswith("❌") for line in out if not line.startswith(" ")), out


def _solution(name: str) -> str:
    """The chapter's own solution kernel `name` (from its collapsed solution)."""
    text = (Path(__file__).resolve().parents[1] / "notebooks" / "03_gpu_cupy.ipynb").read_text()
    for cell in json.loads(text)["cells"]:
        if cell["cell_type"] == "markdown" and "Solution" in "".join(cell["source"]):
            for found in re.findall(r'r"""(.*?)"""', "".join(cell["source"]), re.S):
                if f"void {name}(" in found:
                    return found
    raise AssertionError(f"no solution for {name}")


@without_gpu
@pytest.mark.parametrize(("planted", "message"), [
    (lambda s: s.replace("if (i < n) ", ""), "out-of-bounds read at line 4: thread (1,) of block (0,) read x[1]"),
    (lambda s: s.replace("factor * x[i]", "factor + x[i]"),
     "values differ from NumPy's (n = 1, 1 block of 256 threads, on the CPU executor)"),
    (lambda s: s.replace("void scale(", "void scale_kernel("),
     "no kernel called 'scale' in this source; its kernels: scale_kernel"),
    (lambda s: s.replace('extern "C" ', ""), 'the kernel scale is not declared extern "C"'),
    (lambda s: s.replace("int n)", "long long n)"), "the kernel wants long long"),
])
def test_a_wrong_cuda_c_fails_on_the_cpu(capsys, planted, message) -> None:
    assert not kernel_checks.check_scale(planted(SCALE))
    out = capsys.readouterr().out
    assert out.startswith("❌ scale with a bounds check: ") and message in out, out


@without_gpu
@pytest.mark.parametrize("operation", ["y = x / (1.0f + expf(x));", "y = x;", "y = x * (1.0f + expf(-x));"],
                         ids=["a sign", "the starter without its TODO", "times for divided"])
def test_a_wrong_elementwise_fails_on_the_cpu(capsys, operation) -> None:
    assert not kernel_checks.check_silu(cuda.Elementwise("float32 x", "float32 y", operation, "silu"))
    out = capsys.readouterr().out
    assert out.startswith("❌ silu: ") and "values differ from NumPy's" in out and "on the CPU executor" in out


@without_gpu
def test_a_right_elementwise_in_double_precision_passes_on_the_cpu(capsys) -> None:
    assert kernel_checks.check_silu(cuda.Elementwise("float32 x", "float32 y", "y = x / (1 + exp(-x));", "silu"))


@without_gpu
def test_the_tiled_solution_passes_on_the_cpu_and_planted_bugs_fail(capsys) -> None:
    solution = _solution("matmul_tiled_rect")
    assert kernel_checks.check_tiled_matmul(solution)
    assert "ran on the CPU executor and matches NumPy, in bounds with no race ((33 x 20) @ (20 x 17); " \
        "(17 x 35) @ (35 x 40); (" in capsys.readouterr().out  # then a shape drawn afresh
    second_barrier = solution.rfind("__syncthreads();")
    planted = {
        "race": solution[:second_barrier] + solution[second_barrier + len("__syncthreads();"):],
        "out-of-bounds read": re.sub(r"\(row < M && [^?]*\? (A\[[^\]]*\]) : 0\.0f", r"\1", solution),
        "values differ": solution.replace("C[row * N + col] = sum", "C[row * N + col] = sum + 1.0f"),
    }
    for kind, source in planted.items():
        assert source != solution, kind
        assert not kernel_checks.check_tiled_matmul(source), kind
        assert kind in capsys.readouterr().out, kind


@needs_nvrtc
def test_compile_errors_are_a_cross_with_nvrtc_message(capsys) -> None:
    typo = cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(-z));", "silu")
    assert not kernel_checks.check_silu(typo)
    assert not kernel_checks.check_tiled_matmul('extern "C" __global__ void matmul_tiled_rect() { int x = ; }')
    out = capsys.readouterr().out
    assert out.startswith("❌ silu: NVRTC's compiler error") and "silu (operation):1: error" in out
    assert "❌ tiled matmul: NVRTC's compiler error" in out and "matmul_tiled_rect.cu:1: error" in out


def test_something_else_than_an_elementwise_or_a_source_is_refused(capsys) -> None:
    assert not kernel_checks.check_silu("y = x")
    assert not kernel_checks.check_tiled_matmul(5) and not kernel_checks.check_scale(["x"])
    out = lines(capsys)
    assert "expected an ElementwiseKernel" in out[0]
    assert out[1] == "❌ tiled matmul: expected the kernel's CUDA C as a string (r\"\"\"...\"\"\"), got int"
    assert out[2].startswith("❌ scale with a bounds check: expected the kernel's CUDA C as a string")


def test_an_elementwise_with_the_wrong_number_of_parameters_fails_without_a_gpu(capsys) -> None:
    two_in = cuda.Elementwise("float32 x, float32 b", "float32 y", "y = x / (1.0f + expf(-b));", "silu")
    assert not kernel_checks.check_silu(two_in)
    assert lines(capsys) == ["❌ silu: the kernel must take 1 input(s) and give 1 output; yours takes 2 "
                             "('float32 x, float32 b') and gives 1 ('float32 y')"]


@without_gpu
def test_without_nvrtc_the_checker_says_it_could_not_compile(monkeypatch, capsys) -> None:
    monkeypatch.setattr(nvrtc, "_library", lambda: "NVRTC was not found")
    verdict = kernel_checks.check_silu(SILU)
    assert verdict.attempted and verdict.passed  # the executor ran it right: the compile is what is missing
    out = capsys.readouterr().out
    assert out.startswith("✅ silu: ran on the CPU executor and matches NumPy")
    assert "Not checked: how fast it runs (there is no GPU here); NVIDIA's own compiler (NVRTC was not found" in out


# ---------------------------------------------------------------- the shared pieces this chapter added


def test_host_links_come_with_their_source() -> None:
    rate, source = specs.host_link("Tesla T4")
    assert rate == 11e9 and "PCIe Gen3" in source and "https://" in source
    assert specs.host_link("TPU v4") is None and specs.host_link("no such card") is None
    assert all(specs.lookup(name) is not None for name in specs.HOST_LINKS)


# ---------------------------------------------------------------- the GPU paths, on a fake CuPy
# CuPy cannot run here, so these tests swap in a stand-in that is strict where real bugs hide: every
# RawKernel launch is checked against the kernel's C signature (a Python int where C takes `int`, a float64
# where it takes `float`, a float64 array behind `float*` all fail), grid and block must be tuples, a block
# may hold at most 1024 threads. The kernel itself then runs, its real CUDA C, on the CPU executor (and an
# ElementwiseKernel on helpers.cupy_cpu); a test may put an emulation in its place to play a GPU that
# misbehaves in a way the executor would stop (writing past the end of an array).

C_TYPES = {"int": np.int32, "float": np.float32}
SIGNATURE = re.compile(r'extern "C" __global__ void (\w+)\s*\(([^)]*)\)')


class FakeArray(np.ndarray):
    """A 'GPU' array: NumPy underneath, with CuPy's .get() and .device (GPU 0)."""

    @property
    def device(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(id=0)

    def get(self) -> np.ndarray:
        return np.array(self)


def on_device(x) -> FakeArray:
    return np.array(x).view(FakeArray)


def emulate_rect_matmul(grid_, block, a, b, out, m, k, n):
    assert grid_[0] * block[0] >= n and grid_[1] * block[1] >= m, "x must cover the columns, y the rows"
    out.reshape(m, n)[...] = a.reshape(m, k) @ b.reshape(k, n)


def allocation(view: np.ndarray) -> tuple[np.ndarray, int]:
    """The whole array a view lies in, and where the view starts in it (as a GPU pointer would see it)."""
    root = view
    while root.base is not None and isinstance(root.base, np.ndarray):
        root = root.base
    start = (view.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // view.itemsize
    return root.reshape(-1), start


class FakeCupy(types.ModuleType):
    """Just enough of CuPy for helpers.gpu.cuda, helpers.chapters.mandelbrot and helpers.chapters.kernel_checks."""

    ndarray = FakeArray
    float32, int32 = np.float32, np.int32

    def __init__(self) -> None:
        super().__init__("cupy")
        self.launches: list[tuple[str, tuple, tuple]] = []
        self.emulations: dict[str, object] = {}  # kernel name -> a stand-in for the GPU's run
        self.elementwise: dict[str, object] = {}
        stream = types.SimpleNamespace(synchronize=lambda: None)
        self.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
        fake = self

        class RawKernel:
            def __init__(self, source: str, name: str) -> None:
                found = {m[1]: m[2] for m in SIGNATURE.finditer(source)}
                assert name in found, f"no extern \"C\" __global__ function {name} in the source"
                self.name, self.params = name, [p.strip() for p in found[name].split(",")]
                self.source = source

            def __call__(self, grid_, block, args) -> None:
                for what, dims in (("grid", grid_), ("block", block)):
                    assert isinstance(dims, tuple) and 1 <= len(dims) <= 3, f"{what} must be a tuple, got {dims!r}"
                    assert all(type(d) is int and d > 0 for d in dims), f"{what} must hold Python ints: {dims!r}"
                assert math.prod(block) <= 1024, f"{math.prod(block)} threads in a block"
                assert isinstance(args, tuple) and len(args) == len(self.params), (self.params, args)
                for param, arg in zip(self.params, args, strict=True):
                    c_type = param.replace("const ", "").split()[0].rstrip("*")
                    if "*" in param:
                        assert isinstance(arg, FakeArray) and arg.dtype == C_TYPES[c_type], (param, arg.dtype)
                        assert arg.flags.c_contiguous, param
                    else:
                        assert type(arg) is C_TYPES[c_type], f"{param} given a {type(arg).__name__}"
                fake.launches.append((self.name, grid_, block))
                if self.name in fake.emulations:
                    fake.emulations[self.name](grid_, block, *args)
                else:
                    executor.Program(self.source).launch(self.name, grid_, block, [
                        np.asarray(a) if isinstance(a, FakeArray) else a for a in args])

        class ElementwiseKernel:
            def __init__(self, in_params, out_params, operation, name, preamble="") -> None:
                self.name, self.inputs = name, in_params.count(",") + 1
                self.on_cpu = cupy_cpu.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)

            def __call__(self, *args):
                assert len(args) == self.inputs and all(isinstance(a, FakeArray) for a in args)
                run = fake.elementwise.get(self.name) or self.on_cpu
                return on_device(run(*map(np.asarray, args)))

        class RawModule:
            def __init__(self, code: str, options: tuple = (), name_expressions=None) -> None:
                self.code = code

            def get_function(self, name: str) -> RawKernel:
                return RawKernel(self.code, name)

        self.RawKernel, self.ElementwiseKernel, self.RawModule = RawKernel, ElementwiseKernel, RawModule

    asarray = staticmethod(on_device)

    @staticmethod
    def empty(shape, dtype) -> FakeArray:
        return on_device(np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -1, dtype=dtype))

    @staticmethod
    def empty_like(a) -> FakeArray:
        return FakeCupy.empty(a.shape, a.dtype)

    @staticmethod
    def zeros(shape, dtype) -> FakeArray:
        return on_device(np.zeros(shape, dtype))

    @staticmethod
    def full(shape, value, dtype) -> FakeArray:
        return on_device(np.full(shape, value, dtype))


@pytest.fixture
def fake_gpu(monkeypatch):
    """A FakeCupy in place of CuPy, and helpers told that a GPU is here."""
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(kernel_checks, "gpu_here", lambda: True)
    cuda.raw_kernel.cache_clear()
    yield fake
    cuda.raw_kernel.cache_clear()


def random_on_device(*shape: int, seed: int = 0) -> FakeArray:
    return on_device(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def test_vector_add_launches_one_thread_per_element_or_a_grid_stride(fake_gpu) -> None:
    a, b = random_on_device(1000), random_on_device(1000, seed=1)
    assert np.array_equal(cuda.vector_add(a, b).get(), a + b)
    assert np.array_equal(cuda.vector_add(a, b, threads=128, grid_stride_blocks=3).get(), a + b)
    assert fake_gpu.launches == [("vector_add", (4,), (256,)), ("vector_add_grid_stride", (3,), (128,))]


def test_the_matmul_kernels_cover_a_matrix_that_is_not_a_multiple_of_the_tile(fake_gpu) -> None:
    a, b = random_on_device(37, 37), random_on_device(37, 37, seed=1)
    for kernel in cuda.MATMUL_KERNELS:
        assert np.allclose(cuda.matmul_kernel(a, b, kernel).get(), np.asarray(a) @ np.asarray(b), atol=1e-5)
    assert [launch[1:] for launch in fake_gpu.launches] == [((3, 3), (16, 16))] * 2


def test_reduce_sum_adds_the_blocks_partial_sums_in_a_second_launch(fake_gpu) -> None:
    x = random_on_device(100_003)
    assert float(cuda.reduce_sum(x, blocks=7)) == pytest.approx(float(np.asarray(x).sum(dtype=np.float64)),
                                                                rel=1e-5, abs=1e-2)
    assert fake_gpu.launches == [("block_sum", (7,), (256,)), ("block_sum", (1,), (256,))]
    cuda.reduce_sum(on_device(np.ones(300, np.float32)))  # fewer elements than 1024 blocks would need
    assert fake_gpu.launches[-2][1] == (2,)


def test_the_mandelbrot_kernel_gets_float32_corners_and_a_grid_over_the_image(fake_gpu) -> None:
    counts = mb.mandelbrot_gpu(50, 20, max_steps=30)
    assert counts.shape == (20, 50) and counts.dtype == np.int32
    assert fake_gpu.launches == [("mandelbrot", (4, 2), (16, 16))]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: cuda.vector_add(np.ones(4, np.float32), np.ones(4, np.float32)), "cupy.asarray"),
    (lambda: cuda.vector_add(on_device(np.ones(4)), on_device(np.ones(4))), "float64.*astype"),
    (lambda: cuda.vector_add(random_on_device(4), random_on_device(5)), "shape"),
    (lambda: cuda.vector_add(random_on_device(8)[::2], random_on_device(4)), "contiguous"),
    (lambda: cuda.vector_add(random_on_device(4), random_on_device(4), threads=2048), "1 to 1024"),
    (lambda: cuda.vector_add(random_on_device(4), random_on_device(4), grid_stride_blocks=0), "grid_stride_blocks"),
    (lambda: cuda.matmul_kernel(random_on_device(3, 4), random_on_device(3, 4)), "square"),
    (lambda: cuda.matmul_kernel(random_on_device(3, 3), random_on_device(3, 3), "matmul_fast"), "matmul_naive"),
    (lambda: cuda.reduce_sum(random_on_device(10), blocks=0), "blocks must be a positive integer"),
])
def test_what_a_kernel_would_misread_is_refused_before_the_launch(fake_gpu, call, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        call()
    assert fake_gpu.launches == []


def test_the_elementwise_checker_runs_the_kernel_on_the_executor_then_on_a_gpu(fake_gpu, capsys) -> None:
    assert kernel_checks.check_silu(SILU)
    fake_gpu.elementwise["silu"] = lambda x: x / (1 + np.exp(x))  # a GPU that gets it wrong
    assert not kernel_checks.check_silu(SILU)
    out = lines(capsys)
    sizes = r"1 element; (?:\d+ elements; )+1,000 elements"
    assert re.fullmatch(rf"✅ silu: ran on this GPU and matches NumPy \({sizes}\), writing nothing outside its "
                        rf"arrays; on the CPU executor in bounds with no race \({sizes}\)\. Drawn afresh for this "
                        r"check: \d+ elements\.", out[0]), out[0]
    assert out[1].startswith("   In your own programs, compute-sanitizer --tool racecheck")
    assert out[2].startswith("❌ silu: ") and "values differ from NumPy's (1 element, on this GPU)" in out[2]


def spill_past_the_end(grid_, block, x, out, factor, n):
    """A scale kernel without its bounds check, as a GPU runs it: the last block writes past the end of out."""
    memory, start = allocation(out)
    memory[start:start + grid_[0] * block[0]] = factor * np.float32(1)


def test_the_bounds_check_checker_sees_writes_past_the_end_on_a_gpu(fake_gpu, capsys) -> None:
    assert kernel_checks.check_scale(SCALE)
    grids = [launch[1] for launch in fake_gpu.launches[-4:]]  # n = 1, 257, 1,000 and one drawn afresh, in order
    assert len(fake_gpu.launches) == 4 and {(1,), (2,), (4,)} <= set(grids) and grids == sorted(grids)
    fake_gpu.emulations["scale"] = spill_past_the_end
    assert not kernel_checks.check_scale(SCALE)
    out = lines(capsys)
    assert out[0].startswith("✅ scale with a bounds check: ran on this GPU and matches NumPy (n = 1, 1 block")
    assert out[2].startswith("❌ scale with a bounds check: your kernel wrote 64 values outside out (past its end or "
                             "before its start): the bounds check is missing or wrong (n = 1, 1 block of 256 "
                             "threads, on this GPU). Drawn afresh for this check: factor = ")


def test_a_kernel_cupy_cannot_find_by_name_fails_before_the_gpu_launch(fake_gpu, capsys) -> None:
    verdict = kernel_checks._run_all("scale", lambda: kernel_checks._gpu_kernel(SCALE.replace('extern "C" ', ""),
                                                                                "scale"), [], "on this GPU", 1e-5, 1e-6)
    assert 'CuPy cannot find a kernel called scale: it is not declared extern "C"' in verdict.message
    assert fake_gpu.launches == []


def test_the_tiled_matmul_checker_runs_a_100_by_70_by_90_product_on_a_gpu(fake_gpu, capsys) -> None:
    fake_gpu.emulations["matmul_tiled_rect"] = emulate_rect_matmul  # the executor would take seconds at 100 x 90
    assert kernel_checks.check_tiled_matmul(_solution("matmul_tiled_rect"))
    drawn = r"\((\d+) x (\d+)\) @ \(\2 x (\d+)\)"  # a shape drawn afresh for every check
    again = r"\(\1 x \2\) @ \(\2 x \3\)"
    fixed = r"\(33 x 20\) @ \(20 x 17\); \(17 x 35\) @ \(35 x 40\)"
    out = lines(capsys)
    assert re.fullmatch(rf"✅ tiled matmul: ran on this GPU and matches NumPy \(\(100 x 70\) @ \(70 x 90\); {fixed}; "
                        rf"{drawn}, 16 x 16 tiles\), writing nothing outside its arrays; on the CPU executor in "
                        rf"bounds with no race \({fixed}; {again}\)\. Drawn afresh for this check: {again}\.",
                        out[0]), out[0]
    assert out[1:] == ["   In your own programs, compute-sanitizer --tool racecheck python your_script.py finds races "
                       "on a GPU."]
    assert fake_gpu.launches[0] == ("matmul_tiled_rect", (6, 7), (16, 16))
    fake_gpu.emulations["matmul_tiled_rect"] = lambda *args: 1 / 0
    assert not kernel_checks.check_tiled_matmul(_solution("matmul_tiled_rect"))
    assert lines(capsys)[0].startswith("❌ tiled matmul: the GPU run failed ((100 x 70) @ (70 x 90)): "
                                       "ZeroDivisionError: division by zero. Drawn afresh for this check: (")

    def illegal(*args):
        raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    fake_gpu.emulations["matmul_tiled_rect"] = illegal
    assert not kernel_checks.check_tiled_matmul(_solution("matmul_tiled_rect"))
    assert "After an illegal memory access CUDA refuses every later call: restart the runtime" in lines(capsys)[0]


def test_on_a_gpu_a_raw_kernel_launch_cupy_would_misread_is_refused_with_the_executors_message(
        fake_gpu, monkeypatch) -> None:
    monkeypatch.setattr(cuda, "gpu_here", lambda: True)
    cp = cuda.cupy()
    add = cp.RawKernel(cuda.kernel_source("vector_add.cu"), "vector_add")
    a = cp.asarray(np.ones(300, np.float32))
    out = cp.empty(300, cp.float32)
    # (a Python int into an int parameter is accepted, as a GPU takes its low 4 bytes: tests/test_cupy_checked.py)
    for args, message in [((a, a.astype(np.float64), out, np.int32(300)), "an array of float64, but the kernel"),
                          ((a, a, out), "vector_add takes 4 arguments")]:
        with pytest.raises(TypeError, match=message):
            add((3,), (128,), args)
    with pytest.raises(ValueError, match="at most 1024 threads"):
        add((1,), (32, 64), (a, a, out, np.int32(300)))
    assert fake_gpu.launches == []
    add((3,), (128,), (a, a, out, np.int32(300)))  # then CuPy's own launch (here the fake's)
    assert fake_gpu.launches == [("vector_add", (3,), (128,))] and np.array_equal(out.get(), np.full(300, 2.0))


def test_memory_bound_sizes_are_four_times_the_l2_or_more(monkeypatch) -> None:
    h100 = cuda.GPU("NVIDIA H100 80GB HBM3", specs.get("NVIDIA H100 80GB HBM3"), here=False)
    assert h100.l2_bytes() == 50 * 2**20
    assert h100.beyond_l2(10_000_000, bytes_per_element=4) == 53_000_000  # 4 x 50 MiB / 4 B, rounded up
    assert h100.beyond_l2(10_000_000, bytes_per_element=12) == 18_000_000
    assert h100.beyond_l2(60_000_000, bytes_per_element=4) == 60_000_000  # already beyond
    t4 = cuda.GPU("NVIDIA T4", specs.get("NVIDIA T4"), here=False)
    assert t4.l2_bytes() == 4 * 2**20 and t4.beyond_l2(10_000_000, 4) == 10_000_000  # 4 x 4 MiB is less: as asked
    unknown = cuda.GPU("NVIDIA T4", dataclasses.replace(specs.get("NVIDIA T4"), l2_bytes=None), here=False)
    assert unknown.l2_bytes() is None and unknown.beyond_l2(1_000, 4) == 1_000  # no L2 on file: the size asked
    runtime = types.SimpleNamespace(getDeviceProperties=lambda device: {"l2CacheSize": 6 * 2**20})
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime)))
    assert cuda.GPU("Tesla T4", specs.get("NVIDIA T4"), here=True).beyond_l2(1_000, 4) == 7_000_000  # the card's
    with pytest.raises(ValueError, match="bytes_per_element"):
        t4.beyond_l2(10, 0)


# ---------------------------------------------------------------- predict, then measure when you can


def test_without_a_gpu_nothing_is_measured_and_the_prediction_is_quoted(capsys) -> None:
    t4 = cuda.GPU("NVIDIA T4", specs.get("NVIDIA T4"), here=False)
    ran = []
    assert t4.pick(on_gpu=2048, on_cpu=40) == 40
    assert t4.only(ran.append, 1) is None and t4.measure(ran.append, 1) is None and ran == []
    quoted = t4.side_by_side({"axpby": (1e-4, None), "copy": (2e-3, None)})
    assert quoted == {"axpby": 1e-4, "copy": 2e-3}
    out = lines(capsys)
    assert "predicted, NVIDIA T4" in out[0] and "measured here" in out[0]
    assert out[1].startswith("axpby") and "100 µs" in out[1] and out[1].rstrip().endswith("no GPU here")


def test_on_a_gpu_the_measurement_is_printed_beside_the_prediction_and_quoted(capsys, monkeypatch) -> None:
    here = cuda.GPU("NVIDIA H100 80GB HBM3", specs.get("NVIDIA H100 SXM"), here=True)
    assert here.pick(on_gpu=2048, on_cpu=40) == 2048
    calls = []

    def fake_benchmark(fn, *args, **kwargs):
        calls.append(kwargs)
        return timing.Timing("fake", "cupy", None, np.array([2e-4, 2e-4, 2e-4]), 1, 1e-3)

    monkeypatch.setattr(cuda, "benchmark", fake_benchmark)
    measured = here.measure(print, label="x")
    assert calls == [{"backend": "cupy", "label": "x"}]
    assert here.side_by_side({"axpby": (1e-4, measured)}) == {"axpby": pytest.approx(2e-4)}
    out = lines(capsys)
    assert "measured, NVIDIA H100 80GB HBM3" in out[0] and "200 µs" in out[1] and out[1].endswith("2.00x")


@pytest.mark.parametrize(("rows", "message"), [
    ({}, "rows must be a non-empty dict"),
    ({"x": (0.0, None)}, "x: the predicted seconds must be a finite number above zero"),
    ({"x": (float("nan"), None)}, "finite number above zero"),
    ({"x": (1e-3, 5.0)}, "x: the measurement must be a Timing"),
])
def test_side_by_side_refuses_rows_it_cannot_print(rows, message, capsys) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        cuda.GPU("NVIDIA T4", specs.get("NVIDIA T4"), here=False).side_by_side(rows)


# ---------------------------------------------------------------- section 6: fusion on the CPU


def test_fusion_signs_name_each_reason_the_numbers_show_and_only_those() -> None:
    plain = cuda.LoopSigns("3 passes", cores=1.0, faults=0.0, gbps=40.0)
    split = cuda.LoopSigns("fused", cores=1.7, faults=None, gbps=30.0)
    cached = cuda.LoopSigns("fused", cores=1.0, faults=0.0, gbps=81.5)
    faulting = cuda.LoopSigns("fused", cores=1.0, faults=16_385.0, gbps=11.6)
    assert cuda.fusion_signs([plain, split], 44.4) == [
        "fused: 1.7 cores busy, so its loop was split over the cores (one core alone may not draw all of the "
        "memory's bandwidth)"]
    (line,) = cuda.fusion_signs([plain, cached], 44.4)
    assert line.startswith("fused: 81.5 GB/s, 1.8x the 44.4 GB/s main-memory roof, so a cache served")
    near_roof = dataclasses.replace(cached, gbps=cuda.ABOVE_ROOF * 44.4)  # within the roof's own error: no sign
    assert cuda.fusion_signs([plain, near_roof], 44.4)[0].startswith("none of these")
    (line,) = cuda.fusion_signs([plain, faulting], 44.4)
    assert line.startswith("fused: 16,385 page faults a call")
    assert len(cuda.fusion_signs([split, cached, faulting], 44.4)) == 3  # every sign, in the loops' order
    (line,) = cuda.fusion_signs([plain, dataclasses.replace(plain, label="fused", faults=cuda.FEW_FAULTS)], 44.4)
    assert line.startswith("none of these: 3 passes, fused each kept one core busy") and "byte count" in line
    with pytest.raises(ValueError, match="roof_gbps must be a finite number above zero"):
        cuda.fusion_signs([plain], float("nan"))


def test_chapter_03s_kernels_priced_by_the_kernel_model_fit_the_h200_run() -> None:
    """../shared/gpu-runs/h200-2026-11-28: chapter 03 measured the naive matmul kernel at 3.32 ms (the old roofline
    price, every load from main memory, said 17.9 ms and called 1,200 GFLOP/s an upper limit), the tiled one at
    2.23 ms, the Mandelbrot kernel at 22.2 µs (the old price: 10 µs); gpu-report measured block_sum at 128 µs."""

    h200 = "NVIDIA H200"
    for kernel, measured in (("matmul_naive", 3.32e-3), ("matmul_tiled", 2.23e-3)):
        predicted = cuda.predict_matmul_kernel(h200, kernel, 2048).seconds
        assert 1 / 1.5 < measured / predicted < 1.5, (kernel, predicted)
    naive = cuda.predict_matmul_kernel(h200, "matmul_naive", 2048)
    every_load_from_dram = roofline.attainable(h200, 0.25)  # 1,200 GFLOP/s: what the old chapter called "at most"
    assert workloads.matmul_flops(2048) / naive.seconds > 2 * every_load_from_dram  # the caches serve the rest
    assert naive.bound == "L1 lines"
    assert 1 / 1.5 < 22.2e-6 / cuda.pipelined(mb.predict_gpu(h200, 1280, 960).seconds) < 1.5
    assert 1 / 2 < 128e-6 / cuda.predict_reduce_sum(h200, 63_000_000) < 2


def test_the_kernel_prices_refuse_what_they_cannot_price() -> None:
    with pytest.raises(ValueError, match="kernel must be 'matmul_naive' or 'matmul_tiled'"):
        cuda.predict_matmul_kernel("NVIDIA T4", "matmul_fast", 64)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        cuda.predict_reduce_sum("NVIDIA T4", 0)
    with pytest.raises(ValueError, match="launches must be a positive integer"):
        cuda.pipelined(1e-3, launches=0)
