"""The GPU suite: real CuPy (and JAX on the GPU) against NumPy, the exercise checks, chapters 03, 05, 06 and 07
with their solutions, and the measurements against their roofs and predictions (chapter 07's ladder, rung by rung).

    python -m pytest -m gpu          # on a machine with an NVIDIA GPU (Colab: a T4 runtime)

Without a GPU every test here is skipped with the reason. The CPU executor runs the same kernels in
tests/test_executor.py, so what this suite adds is the GPU itself: its compiler, its arithmetic (a fused
multiply-add rounds once), its timings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_cuda_sim import RUNS, notebook_kernels
from test_notebooks import run_with_solutions

from helpers.book import evidence
from helpers.chapters import counter_checks, kernel_checks, make_it_fast, tensor_checks, tensor_cores
from helpers.core import backend, project
from helpers.gpu import cuda
from helpers.measuring import specs, workloads
from helpers.model import roofline

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not backend.backends()["cupy"].usable,
                                                  reason="needs an NVIDIA GPU that CuPy can use: "
                                                         f"{backend.backends()['cupy'].detail}")]
#: How far a measurement may sit from its prediction: the factor every published measurement in
#: docs/predictions.md is held to.
FACTOR = evidence.RATIO_LIMIT


def gpu_launch(src: str, name: str, grid: tuple[int, ...], block: tuple[int, ...], args: tuple) -> None:
    """Launch with CuPy: arrays copied to the GPU, the launch checked and run, outputs copied back in place."""
    cupy = cuda.cupy()
    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    cupy.RawKernel(src, name)(tuple(grid), tuple(block), tuple(device))
    cupy.cuda.get_current_stream().synchronize()
    for host, on_gpu in zip(args, device, strict=True):
        if isinstance(host, np.ndarray):
            host[...] = cupy.asnumpy(on_gpu)


def test_jax_sees_the_gpu_that_cupy_sees():
    """The chapters' JAX-on-GPU paths (the async trap, fusion, training) are only tested when JAX runs there."""
    import jax

    platforms = {device.platform for device in jax.devices()}
    assert "gpu" in platforms, (f"CuPy sees a GPU, JAX only {sorted(platforms)}: install the suite's extra, "
                                'pip install -e ".[gpu-suite]" (CUDA 12 driver) or ".[gpu-suite-cuda13]"')


@pytest.mark.parametrize("file", cuda.kernel_files())
def test_every_kernel_file_matches_numpy_on_the_gpu(file):
    src = cuda.kernel_source(file)
    for name, _ in re.findall(r'extern "C" __global__ void (\w+)\s*\(([^)]*)\)', src):
        extra = {"exact": False} if name == "mandelbrot" else {}
        RUNS[name](src, launch=gpu_launch, **extra)


@pytest.mark.parametrize(("notebook", "src", "starter"), [k for k in notebook_kernels() if not k[2]],
                         ids=lambda v: v if isinstance(v, str) and v.endswith("ipynb") else None)
def test_every_solution_kernel_in_the_notebooks_matches_numpy_on_the_gpu(notebook, src, starter):
    for name in re.findall(r'extern "C" __global__ void (\w+)\s*\(', src):
        RUNS[name](src, launch=gpu_launch)


def _solution(name: str) -> str:
    for _, src, starter in notebook_kernels():
        if not starter and f"void {name}(" in src:
            return src
    raise AssertionError(f"no solution for {name} in the notebooks")


def test_the_exercise_solutions_pass_and_planted_wrong_kernels_fail_on_the_gpu(capsys):
    scale, tiled = _solution("scale"), _solution("matmul_tiled_rect")

    silu = cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(-x));", "silu")
    assert kernel_checks.check_scale(scale)
    assert kernel_checks.check_tiled_matmul(tiled)
    assert kernel_checks.check_silu(silu)
    out = capsys.readouterr().out
    assert out.count("ran on this GPU and matches NumPy") == 3, out
    planted = [kernel_checks.check_scale(scale.replace("factor * x[i]", "factor + x[i]")),
               kernel_checks.check_tiled_matmul(tiled.replace("C[row * N + col] = sum", "C[row * N + col] = -sum")),
               kernel_checks.check_silu(cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(x));",
                                                         "silu"))]
    assert not any(planted) and all(v.attempted for v in planted)


@pytest.mark.parametrize("chapter", [chapter.file for chapter in project.chapters_using("GPU")])
def test_the_gpu_chapters_run_to_the_end_with_their_solutions(chapter):
    """Every check passes, and no measurement beats a bound the chapter printed, no sentence states what the
    numbers contradict, no prediction for this GPU is raced against a measurement (helpers.book.run_checks)."""
    gpu = cuda.gpu()
    run_with_solutions(chapter, devices=tuple(dict.fromkeys((gpu.name, gpu.spec.name))))


def _here() -> specs.DeviceSpec:
    spec = cuda.gpu().spec
    assert spec is not None, "this GPU has no published specs in helpers/measuring/specs.py: add them"
    return spec


@pytest.mark.parametrize(("op", "n"), [("axpby", 1 << 26), ("matmul", 4096)])
def test_no_gpu_measurement_is_above_its_roof(op, n):
    timing = workloads.measure(op, "cupy", n, budget=1.0)
    spec = _here()
    assert timing.flops / timing.median <= spec.peak_for("float32") * 1.0001, timing
    assert timing.bytes / timing.median <= spec.peak_bandwidth * 1.0001, timing


def test_the_axpby_prediction_is_within_the_documented_factor_of_the_measurement():
    n = 1 << 26  # 256 MB per float32 array: far beyond any L2 cache
    measured = workloads.measure("axpby", "cupy", n, budget=1.0).median
    predicted = cuda.gpu().predict_cupy_axpby(n)
    assert 1 / FACTOR <= measured / predicted <= FACTOR, (measured, predicted)


def test_a_big_matmul_prediction_is_within_the_documented_factor_of_the_measurement():
    n = 4096
    measured = workloads.measure("matmul", "cupy", n, budget=1.0).median
    predicted = roofline.predict_seconds(_here(), flops=2 * n**3, bytes=3 * 4 * n * n, dtype="float32",
                                         call="cupy", timed="synced", matmul=True)
    assert 1 / FACTOR <= measured / predicted <= FACTOR, (measured, predicted)



#: Rungs whose published counterparts already sit outside FACTOR of the model, listed with why in
#: docs/predictions.md: measured here, printed, not held to it.
KNOWN_GAPS = {"2 coalesced"}


def test_every_rung_of_the_ladder_is_right_and_beside_its_prediction_on_the_gpu(capsys):
    """Chapter 07: each rung at 4096 on this GPU against NumPy's product of a corner, then timed beside
    make_it_fast.predict; every ratio is printed, and each held to FACTOR but the listed gaps."""
    cupy, gpu = cuda.cupy(), cuda.gpu()
    spec, n = make_it_fast.device_spec(gpu), make_it_fast.BIG_N
    kernels = make_it_fast.gpu_kernels(cupy)
    a, b = workloads.make_inputs("matmul", n, "float32", "numpy")
    want = a[:64] @ b
    ratios = {}
    for r in make_it_fast.RUNGS:
        c = cupy.empty((n, n), dtype=cupy.float32)
        grid, block = r.launch(n)
        kernels[r.label](grid, block, (cupy.asarray(a), cupy.asarray(b), c, np.int32(n)))
        np.testing.assert_allclose(cupy.asnumpy(c[:64]), want, rtol=1e-3, atol=1e-2)
        ratios[r.label] = make_it_fast.measure(gpu, r, n, kernels[r.label]).median / make_it_fast.predict(
            r.label, spec, n).seconds
    with capsys.disabled():
        print("\n" + "\n".join(f"{label}: measured / predicted = {ratio:.2f}" for label, ratio in ratios.items()))
    outside = {label: ratio for label, ratio in ratios.items()
               if label not in KNOWN_GAPS and not 1 / FACTOR <= ratio <= FACTOR}
    assert not outside, outside


def test_the_tensor_core_rungs_are_right_and_beside_cublas_fp16_on_the_gpu(capsys):
    """Chapter 07's rungs 8 and 9 at 4096 on this GPU: a corner against the exact product of the fp16 inputs (to
    float32 sums), then timed beside their predictions and beside cuBLAS's fp16 product (cupy.matmul on float16),
    each ratio printed and held to FACTOR; the exercise's solution passes its check here too."""
    from test_tensor_cores import SOLUTION

    cupy, gpu = cuda.cupy(), cuda.gpu()
    spec, n = make_it_fast.device_spec(gpu), make_it_fast.BIG_N
    kernels = tensor_cores.gpu_kernels(cupy)
    a, b = tensor_cores.inputs(n)
    a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
    ratios = {}
    for r in tensor_cores.RUNGS:
        c = tensor_cores.run_on_gpu(r, kernels[r.label], a, b)
        assert tensor_cores.agrees(c[:64], a[:64], b), r.label
        ratios[r.label] = tensor_cores.measure(gpu, r, n, kernels[r.label], a_gpu, b_gpu).median / \
            tensor_cores.predict(r.label, spec, n).seconds
    cublas = gpu.measure(lambda: cupy.matmul(a_gpu, b_gpu), flops=workloads.matmul_flops(n), dtype="float16",
                         label="cuBLAS fp16")
    ratios["cuBLAS fp16"] = cublas.median / tensor_cores.predict_cublas(spec, n)
    with capsys.disabled():
        print("\n" + "\n".join(f"{label}: measured / predicted = {ratio:.2f}" for label, ratio in ratios.items()))
    assert all(1 / FACTOR <= ratio <= FACTOR for ratio in ratios.values()), ratios
    assert tensor_checks.check_wmma_tile(SOLUTION).passed


def test_the_exercise_checks_of_chapter_07_read_the_counters_on_the_gpu():
    """Right on the GPU is not enough: the strided add still fails its check, the coalesced one passes."""
    strided = ('extern "C" __global__ void add_matrices(const float* A, const float* B, float* C, int n) {\n'
               "    int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    int col = blockIdx.y * blockDim.y + threadIdx.y;\n"
               "    if (row < n && col < n) { C[row * n + col] = A[row * n + col] + B[row * n + col]; }\n}\n")
    coalesced = strided.replace("int row = blockIdx.x", "int col = blockIdx.x").replace("int col = blockIdx.y",
                                                                                        "int row = blockIdx.y")
    assert not counter_checks.check_coalesced(strided).passed
    assert counter_checks.check_coalesced(coalesced).passed
    assert counter_checks.check_tiles((128, 128, 16, 8, 8)).passed


def test_the_gpu_report_measures_every_case_on_this_gpu(tmp_path):
    """python -m helpers gpu-report, at small sizes: every case measured on this GPU, none skipped."""
    from helpers.__main__ import main

    path = tmp_path / "report.json"
    assert main(["gpu-report", "--quick", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["skipped"] == [] and {"03", "05", "07"} <= {row["chapter"] for row in data["rows"]}
