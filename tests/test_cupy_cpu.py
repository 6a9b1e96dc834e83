"""The CuPy-shaped front: the same calls give the same results through helpers.cupy_cpu (always) and through
CuPy itself (on a GPU), and what CuPy would misread is refused with a clear message."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import without_gpu

from helpers.executor import CudaCError, KernelFault, cupy_cpu
from helpers.gpu import cuda

FRONTS = [pytest.param(cupy_cpu, id="cpu executor"),
          pytest.param("gpu", id="cupy", marks=pytest.mark.skipif(not cuda.gpu_here(), reason="needs a GPU"))]


@pytest.fixture(params=FRONTS)
def cp(request):
    return cuda.cupy() if request.param == "gpu" else request.param


def test_a_raw_kernel_launch_adds_two_vectors(cp):
    add = cp.RawKernel(cuda.kernel_source("vector_add.cu"), "vector_add")
    n = 1000
    a, b = (cp.asarray(np.arange(n, dtype=np.float32) * k) for k in (1, 3))
    out = cp.empty(n, dtype=cp.float32)
    add(((n + 255) // 256,), (256,), (a, b, out, np.int32(n)))
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out), np.arange(n, dtype=np.float32) * 4)


def test_an_elementwise_kernel_broadcasts_and_takes_scalars(cp):
    squared_diff = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "sq_diff")
    x = cp.arange(10, dtype=np.float32).reshape(2, 5)
    y = cp.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(cp.asnumpy(squared_diff(x, y)), [[0] * 5, [25] * 5])
    np.testing.assert_array_equal(cp.asnumpy(squared_diff(x, 5)), (np.arange(10).reshape(2, 5) - 5) ** 2)


def test_a_type_placeholder_takes_the_arrays_dtype_and_outputs_can_be_given(cp):
    generic = cp.ElementwiseKernel("T x, T y", "T z", "z = x * y", "times")
    got = generic(cp.arange(4, dtype=np.float64), cp.ones(4, dtype=np.float64))
    assert got.dtype == np.float64
    out = cp.zeros(4, dtype=np.int32)
    generic(cp.arange(4, dtype=np.int32), cp.full(4, 3, dtype=np.int32), out)
    np.testing.assert_array_equal(cp.asnumpy(out), [0, 3, 6, 9])


def test_a_raw_parameter_is_indexed_by_the_operation(cp):
    reverse = cp.ElementwiseKernel("raw T x, int32 m", "T y", "y = x[m - i - 1]", "reverse")
    got = reverse(cp.arange(5, dtype=np.float32), np.int32(5), size=5)
    np.testing.assert_array_equal(cp.asnumpy(got), [4, 3, 2, 1, 0])


# ---------------------------------------------------------------- what the CPU front refuses, and how it says so


def test_a_launch_with_what_cupy_would_misread_is_refused():
    add = cupy_cpu.RawKernel(cuda.kernel_source("vector_add.cu"), "vector_add")
    a = cupy_cpu.zeros(8, dtype=np.float32)
    with pytest.raises(TypeError, match=r"got the Python float 8.0, which CuPy passes as a double.*np.int32\(8.0\)"):
        add((1,), (32,), (a, a, a, 8.0))
    with pytest.raises(TypeError, match=r"the Python int -2147483649 does not fit a int"):
        add((1,), (32,), (a, a, a, -2**31 - 1))
    add((1,), (32,), (a, a, a, 8))  # its low 4 bytes: what a GPU reads
    with pytest.raises(TypeError, match="an array of float64, but the kernel reads float32"):
        add((1,), (32,), (a, a.astype(np.float64), a, np.int32(8)))
    with pytest.raises(TypeError, match="grid must be a tuple"):
        add(1, (32,), (a, a, a, np.int32(8)))
    with pytest.raises(ValueError, match="at most 1024 threads"):
        add((1,), (32, 64), (a, a, a, np.int32(8)))


def test_elementwise_errors_point_into_the_operation():
    with pytest.raises(CudaCError, match="line 2 of the operation of bad: 'z' is not declared"):
        cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x +\n z", "bad")(np.ones(3, np.float32))
    past_end = cupy_cpu.ElementwiseKernel("raw float32 x", "float32 y", "y = x[i + 1]", "shift")
    with pytest.raises(KernelFault, match=r"line 1 of the operation of shift: thread \(2,\).*read x\[3\]"):
        past_end(np.ones(3, np.float32), size=3)


@pytest.mark.parametrize(("call", "message"), [
    (lambda k: k(np.ones(3, np.float32), np.ones(3, np.float32), np.ones(3, np.float32), np.ones(3, np.float32)),
     r"takes 2 input\(s\) \(float32 x, float32 y\), then optionally its 1 output"),
    (lambda k: k(np.ones(3, np.float32), np.ones(4, np.float32)), "do not broadcast together"),
    (lambda k: k(np.ones(3, np.complex64), np.ones(3, np.float32)), "does not cast safely"),
    (lambda k: k(np.ones(3, np.float32), "two"), "must be an array or a number"),
    (lambda k: k(np.ones(3, np.float32), np.ones(3, np.float32), np.ones(3, np.float64)),
     "output z is declared float32 but got an array of float64"),
])
def test_a_bad_elementwise_call_says_what_is_accepted(call, message):
    kernel = cupy_cpu.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "add")
    with pytest.raises((TypeError, ValueError), match=message):
        call(kernel)


def test_reserved_names_and_an_empty_operation_are_refused():
    with pytest.raises(ValueError, match="i, n and names starting with _ are CuPy's own"):
        cupy_cpu.ElementwiseKernel("float32 i", "float32 y", "y = i", "k")
    with pytest.raises(ValueError, match="non-empty string"):
        cupy_cpu.ElementwiseKernel("float32 x", "float32 y", " ", "k")


def test_empty_memory_shows_a_value_never_written():
    assert np.isnan(cupy_cpu.empty(3, np.float32)).all() and (cupy_cpu.empty(2, np.int32) == -1).all()


def test_without_a_gpu_the_chapter_gets_the_cpu_front(monkeypatch):
    monkeypatch.setattr(cuda, "gpu_here", lambda: False)
    assert cuda.cupy() is cupy_cpu


def test_the_profiler_times_each_call_as_cupyx_does_and_says_there_is_no_gpu_time():
    calls = []
    result = cupy_cpu.profiler.benchmark(lambda x: calls.append(x), (7,), n_repeat=20, n_warmup=3, name="append")
    assert len(calls) == 23 and result.cpu_times.shape == (20,) and (result.cpu_times >= 0).all()
    assert result.gpu_times.shape == (0, 20)
    text = str(result)
    assert text.startswith("append") and " us " in text and "GPU: none here" in text
    few = cupy_cpu.profiler.benchmark(lambda: time_sink(0.01), n_repeat=1000, n_warmup=0, max_duration=0.03)
    assert 1 <= few.cpu_times.size <= 10  # max_duration stops it, as CuPy's does


def time_sink(seconds):
    import time

    time.sleep(seconds)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: cupy_cpu.profiler.benchmark(5), "takes a function and a tuple"),
    (lambda: cupy_cpu.profiler.benchmark(print, [1]), "takes a function and a tuple"),
    (lambda: cupy_cpu.profiler.benchmark(print, n_repeat=0), "n_repeat must be a whole number"),
    (lambda: cupy_cpu.profiler.benchmark(print, n_warmup=-1), "n_warmup must be a whole number"),
])
def test_the_profiler_refuses_what_cupyx_would(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_cuda_profiler_is_the_stand_in_without_a_gpu():
    assert cuda.profiler() is (cupy_cpu.profiler if not cuda.gpu_here() else __import__("cupyx.profiler").profiler)


def test_a_launch_too_big_for_the_executor_is_refused_before_it_runs():
    add = cupy_cpu.RawKernel(cuda.kernel_source("vector_add.cu"), "vector_add")
    a = cupy_cpu.zeros(8, dtype=np.float32)
    with pytest.raises(ValueError, match=r"8,388,608 threads in one launch: the CPU executor .* at most 4,194,304"):
        add((32768,), (256,), (a, a, a, np.int32(8)))


def test_an_elementwise_kernel_reads_back_as_its_parts_whoever_made_it():
    front = cupy_cpu.ElementwiseKernel("float32 a, raw T x", "T z", "z = a * x[i]", "scaled", preamble="// p")
    assert cuda.Elementwise.of(front) == cuda.Elementwise("float32 a, raw T x", "T z", "z = a * x[i]", "scaled",
                                                          "// p")

    class Info:  # CuPy's ParameterInfo: name, dtype (None for a type placeholder), ctype, raw
        def __init__(self, name, dtype, ctype, raw=False):
            self.name, self.dtype, self.ctype, self.raw = name, dtype, ctype, raw

    class RealKernel:  # what cupy.ElementwiseKernel keeps: parsed parameters (CuPy 14.1 and later: np.dtype)
        in_params = (Info("a", np.dtype("float32"), "float"), Info("x", None, "T", raw=True))
        out_params = (Info("z", None, "T"),)
        operation, name, preamble = "z = a * x[i]", "scaled", "// p"

    class OlderKernel(RealKernel):  # CuPy 13.x and 14.0: the dtype is NumPy's scalar type, numpy.float32
        in_params = (Info("a", np.float32, "float"), Info("x", None, "T", raw=True))

    assert cuda.Elementwise.of(RealKernel()) == cuda.Elementwise.of(front) == cuda.Elementwise.of(OlderKernel())
    with pytest.raises(TypeError, match="expected an ElementwiseKernel"):
        cuda.Elementwise.of("y = x")


@without_gpu
def test_pinned_memory_is_host_memory_on_the_stand_in_and_cupyx_on_a_gpu() -> None:
    """Chapter 03's cupyx.empty_pinned line runs without a GPU: uninitialised host memory, as CuPy's is."""
    from helpers.gpu import cuda

    pinned = cuda.cupyx().empty_pinned((4,), np.float32)
    assert cuda.cupyx() is cupy_cpu.cupyx and cupy_cpu.cupyx.profiler is cupy_cpu.profiler
    assert type(pinned) is np.ndarray and pinned.dtype == np.float32 and np.isnan(pinned).all()
    with pytest.raises(ValueError, match="shape must be a whole number"):
        cupy_cpu.cupyx.empty_pinned(-1)
