"""Chapter 03's kernel plumbing: sources, ElementwiseKernel snippets made whole, predictions, and the checkers."""

from __future__ import annotations

import importlib
import types

import numpy as np
import pytest
from conftest import without_gpu

from helpers import cuda, kernel_checks, nvrtc, plots, specs

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")

# ---------------------------------------------------------------- sources


def test_the_kernel_files_are_shipped_and_readable() -> None:
    assert cuda.kernel_files() == ["mandelbrot.cu", "matmul.cu", "reduce_sum.cu", "vector_add.cu"]
    assert "vector_add_grid_stride" in cuda.kernel_source("vector_add.cu")
    with pytest.raises(FileNotFoundError, match="the files are mandelbrot.cu, matmul.cu"):
        cuda.kernel_source("nope.cu")
    assert cuda.show("matmul.cu").data.startswith("```cuda\n// C = A @ B")


# ---------------------------------------------------------------- ElementwiseKernel snippets


def test_params_are_read_as_cupy_reads_them() -> None:
    assert cuda.parse_params("float32 a, raw T x") == [cuda.Param("float32", "a"), cuda.Param("T", "x", raw=True)]


@pytest.mark.parametrize("text", ["float32", "float32 x y", "float32 x,", "float32 2x", "float32 x, int32 x"])
def test_unreadable_params_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ValueError, match="type name|twice"):
        cuda.parse_params(text)


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
    roofline = plots.predict_time(gpu.spec, flops, nbytes)
    assert gpu.predict_seconds(flops, nbytes) == pytest.approx(roofline + 10e-6)
    assert gpu.predict_seconds(flops, nbytes, copies=12e9) == pytest.approx(roofline + 10e-6 + 1.0)


def test_on_a_gpu_its_own_name_labels_the_measurements(monkeypatch) -> None:
    hardware = importlib.import_module("helpers.hardware")  # `helpers.hardware` is the function, not the module

    monkeypatch.setattr(cuda, "gpu_here", lambda: True)
    for name, roofs in (("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"), ("Some Future GPU", "NVIDIA T4")):
        card = hardware.Accelerator("gpu", name, "cupy", spec=specs.lookup(name))
        monkeypatch.setattr(hardware, "hardware", lambda card=card: types.SimpleNamespace(gpus=[card]))
        found = cuda.gpu()
        assert found.here and found.label == f"{name} (measured)" and found.spec.name == roofs


@without_gpu
def test_gpu_paths_get_as_far_as_they_can_without_a_gpu() -> None:
    assert not cuda.gpu_here()
    kernel = cuda.file_kernel("vector_add.cu", "vector_add")  # CuPy builds the object; it compiles at first launch
    assert kernel.name == "vector_add" and kernel is cuda.file_kernel("vector_add.cu", "vector_add")
    assert cuda.Elementwise("float32 x", "float32 y", "y = x", "copy").on_gpu().name == "copy"
    with pytest.raises(Exception):  # noqa: B017 - any CuPy error: there is no device to allocate on
        cuda.vector_add(np.ones(4, np.float32), np.ones(4, np.float32))


@pytest.mark.parametrize(("gpu", "expected"), [
    ([5, 5, 2, 1], 30),  # loses, loses, wins, wins
    ([0, 5, 2, 1], 30),  # a lucky early win does not count
    ([0, 0, 0, 0], 10),
    ([0, 0, 0, 9], None),  # loses at the largest size
])
def test_crossover_is_where_the_gpu_wins_from_then_on(gpu, expected) -> None:
    assert cuda.crossover([10, 20, 30, 40], [1, 2, 3, 4], gpu) == expected
    assert cuda.crossover([40, 30, 20, 10], [4, 3, 2, 1], gpu[::-1]) == expected, "sizes in any order"


def test_crossover_refuses_mismatched_lists() -> None:
    with pytest.raises(ValueError, match="same length"):
        cuda.crossover([1, 2], [1], [1, 2])


def test_compile_report_without_nvrtc_says_how_to_get_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(nvrtc, "_library", lambda: "NVRTC was not found")
    assert cuda.compile_report("whatever", "k.cu") == []
    assert "k.cu: not compiled here. NVRTC was not found. To get it: pip install nvidia-cuda-nvrtc-cu12" in \
        capsys.readouterr().out


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


def scale_twin(t, x, out, factor, n):
    i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
    if i < n:
        out[i] = factor * x[i]


def unchecked_twin(t, x, out, factor, n):
    i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
    out[i] = factor * x[i]


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_untouched_exercises_are_not_attempted(capsys) -> None:
    stub = cuda.Elementwise("float32 x", "float32 y", "y = x;  // TODO: y = x * sigmoid(x)", "silu")
    verdicts = [kernel_checks.check_silu(stub), kernel_checks.check_silu(...),
                kernel_checks.check_scale(SCALE + "// TODO", unchecked_twin),
                kernel_checks.check_tiled_matmul("// TODO"), kernel_checks.check_tiled_matmul(...)]
    assert not any(v.attempted or v.passed for v in verdicts)
    assert all(line.startswith("⏳") for line in lines(capsys))


@needs_nvrtc
@without_gpu
def test_a_right_kernel_passes_with_what_was_not_checked_said(capsys) -> None:
    assert kernel_checks.check_silu(SILU)
    assert kernel_checks.check_scale(SCALE, scale_twin)
    out = lines(capsys)
    assert out[0] == "✅ silu: compiled for sm_75 and sm_90."
    assert out[1].startswith("   Not checked: its values: there is no GPU here")
    assert out[2].startswith("✅ scale with a bounds check: the Python twin stays in bounds and is right")
    assert out[3].startswith("   Not checked: the CUDA C was not run")


@needs_nvrtc
def test_compile_errors_are_a_cross_with_nvrtc_message(capsys) -> None:
    typo = cuda.Elementwise("float32 x", "float32 y", "y = x / (1.0f + expf(-z));", "silu")
    assert not kernel_checks.check_silu(typo)
    assert not kernel_checks.check_tiled_matmul('extern "C" __global__ void matmul_tiled_rect() { int x = ; }')
    out = capsys.readouterr().out
    assert out.startswith("❌ silu: NVRTC's compiler error") and "silu (operation):1: error" in out
    assert "❌ tiled matmul: NVRTC's compiler error" in out and "matmul_tiled_rect.cu:1: error" in out


def test_a_twin_that_runs_off_the_end_fails(capsys) -> None:
    assert not kernel_checks.check_scale(SCALE, unchecked_twin)
    out = capsys.readouterr().out
    assert out.startswith("❌ scale with a bounds check: your Python twin goes out of bounds (n = 1,000: 4 blocks")
    assert "OUT OF BOUNDS: 24 reads of x[1000..1023], 24 writes of out[1000..1023]" in out


def test_a_twin_with_wrong_values_or_an_error_fails(capsys) -> None:
    def wrong(t, x, out, factor, n):
        i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
        if i < n:
            out[i] = x[i]

    def broken(t, x, out, factor, n):
        raise KeyError("oops")

    assert not kernel_checks.check_scale(SCALE, wrong) and not kernel_checks.check_scale(SCALE, broken)
    out = lines(capsys)
    assert "values differ from 2.5 * x" in out[0] and "raised KeyError" in out[1]


def test_something_else_than_an_elementwise_is_refused(capsys) -> None:
    assert not kernel_checks.check_silu("y = x")
    assert "expected h.cuda.Elementwise" in capsys.readouterr().out


@without_gpu
def test_without_nvrtc_the_checker_says_it_could_not_compile(monkeypatch, capsys) -> None:
    monkeypatch.setattr(nvrtc, "_library", lambda: "NVRTC was not found")
    verdict = kernel_checks.check_silu(SILU)
    assert verdict.attempted and not verdict.passed
    assert capsys.readouterr().out.startswith("⚠️ silu: not compiled: NVRTC was not found")


# ---------------------------------------------------------------- the shared pieces this chapter added


def test_host_links_come_with_their_source() -> None:
    rate, source = specs.host_link("Tesla T4")
    assert rate == 12e9 and "PCIe Gen3" in source
    assert specs.host_link("TPU v4") is None and specs.host_link("no such card") is None
    assert all(specs.lookup(name) is not None for name in specs.HOST_LINKS)
