"""Issue 22's silent wrong results and hangs in the model, the prices and the CuPy stand-in: each a clear error
naming the argument, or a bounded answer, never a plausible wrong one."""

from __future__ import annotations

import time

import numpy as np
import pytest

from helpers import executor
from helpers.chapters import choosing
from helpers.executor import cupy_cpu
from helpers.measuring import specs
from helpers.model import roofline


@pytest.mark.parametrize("name", ["definitely not a T4", "T4 T4", "my H100 SXM please", "x" * 10**7])
def test_an_unknown_device_name_is_refused_with_the_known_ones(name: str) -> None:
    with pytest.raises(ValueError, match="known devices: NVIDIA T4, "):
        roofline.published_spec(name)


@pytest.mark.parametrize(("name", "expected"), [("NVIDIA T4", "NVIDIA T4"), ("t4", "NVIDIA T4"),
                                                ("Tesla T4", "NVIDIA T4"), ("TPU v5 lite", "TPU v5e"),
                                                ("h100 pcie", "NVIDIA H100 PCIe")])
def test_a_device_is_found_by_its_name_or_an_alias(name: str, expected: str) -> None:
    assert roofline.published_spec(name).name == expected


def test_hardware_names_are_still_found_inside_longer_names_but_not_endless_ones() -> None:
    assert specs.lookup("NVIDIA H100 80GB HBM3").name == "NVIDIA H100 SXM"
    assert specs.lookup("x" * 10**7 + " T4") is None


@pytest.mark.parametrize("matmul", ["no", "False", 0, 1, None])
def test_matmul_must_be_a_bool_not_something_truthy(matmul: object) -> None:
    with pytest.raises(TypeError, match="matmul must be True or False"):
        roofline.predict_seconds("NVIDIA T4", flops=1e9, bytes=1e6, matmul=matmul)
    with pytest.raises(TypeError, match="matmul must be True or False"):
        roofline.decide(flops=1e9, bytes=1e6, matmul=matmul, devices=())


def test_an_elementwise_kernels_size_is_a_whole_number_the_executor_can_run() -> None:
    fill = cupy_cpu.ElementwiseKernel("float32 a", "raw float32 y", "y[i] = a", "fill")
    out = np.zeros(10, np.float32)
    for bad in ("10", 10.0, -1, True, cupy_cpu.MAX_ELEMENTS + 1):
        with pytest.raises(ValueError, match="size must be a whole number of elements"):
            fill(np.float32(1), out, size=bad)
    fill(np.float32(1), out, size=10)
    assert (out == 1).all()
    twice = cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x * 2", "twice")
    with pytest.raises(ValueError, match="at most 4,194,304"):
        twice(np.ones(10_000_000, np.float32))


def test_the_stand_in_profiler_stops_within_its_limit_and_says_so(monkeypatch) -> None:
    monkeypatch.setattr(cupy_cpu, "STAND_IN_SECONDS", 0.05)
    result = cupy_cpu.profiler.benchmark(lambda: time.sleep(0.005), ())  # CuPy's default: 10,000 repeats
    assert 1 <= result.cpu_times.size < 100 and result.capped
    assert "stopped after" in str(result) and "at most 0.05 s" in str(result)
    quick = cupy_cpu.profiler.benchmark(lambda: None, (), n_repeat=20)
    assert quick.cpu_times.size == 20 and not quick.capped and "stopped" not in str(quick)


@pytest.mark.parametrize("position", [0, 3])  # a pointer (float *a) and a scalar (int n)
def test_a_0d_array_is_refused_where_a_kernel_takes_a_pointer_or_a_scalar(position: int) -> None:
    source = 'extern "C" __global__ void fill(float *a, int n) { int i = threadIdx.x; if (i < n) a[i] = 1.0f; }'
    args = [np.zeros(4, np.float32), np.int32(4)]
    args[min(position, 1)] = np.array(4, dtype=np.int32) if position else np.array(0, dtype=np.float32)
    with pytest.raises(TypeError, match="0-d array"):
        executor.Program(source).launch("fill", (1,), (4,), args)
    with pytest.raises(TypeError, match="0-d array"):
        executor.check_launch(source, "fill", (1,), (4,), tuple(args))


@pytest.mark.parametrize(("argument", "value", "error"), [
    ("call", [], ValueError), ("call", np.array(["cupy"]), ValueError), ("timed", {}, ValueError),
    ("dtype", [], TypeError), ("dtype", np.array(["float32"]), TypeError)])
def test_the_models_names_must_be_names(argument: str, value: object, error: type) -> None:
    with pytest.raises(error, match=argument):
        roofline.predict_seconds("NVIDIA T4", flops=1e9, bytes=1e6, **{argument: value})


def test_the_stand_ins_arguments_are_checked_with_a_message_of_their_own() -> None:
    with pytest.raises(ValueError, match="shape must be a whole number"):
        cupy_cpu.empty(-1, np.float32)
    with pytest.raises(ValueError, match="too large for the CPU stand-in"):
        cupy_cpu.empty((10**6, 10**6), np.float32)
    assert cupy_cpu.empty((2, 0), np.float32).shape == (2, 0)
    source = 'extern "C" __global__ void k(float *a) { a[threadIdx.x] = 1.0f; }'
    with pytest.raises(TypeError, match="options must be a tuple"):
        cupy_cpu.RawKernel(source, "k", options=5)
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        executor.Program(source).launch("k", (1,), (1,), [np.zeros(1, np.float32)], max_steps=None)


@pytest.mark.parametrize(("measured", "fractions"), [("x", (0.1,)), (0.1, "x"), (0.1, ()), (0.1, (2.0,)),
                                                     (float("nan"), (0.1,))])
def test_the_amdahl_figure_takes_serial_shares_from_0_to_1(measured: object, fractions: object) -> None:
    with pytest.raises(ValueError, match="measured_serial|fractions"):
        choosing.amdahl_figure(measured, fractions)


GOOD = 'extern "C" __global__ void k(float *a) { a[threadIdx.x] = 1.0f; }'


@pytest.mark.parametrize("source", [
    "/*" + "x" * 10_000_000 + "*/\n" + GOOD,  # a 10 MB comment before the kernel
    GOOD + "\n" * 20_000_000,  # the right answer, then 20 MB of blank lines
    "".join(f"#define M{i} ({'+'.join([f'M{i + 1}'] * 8)})\n" for i in range(9)) + "#define M9 1.0f\n"
    + GOOD.replace("1.0f", "M0"),  # every macro uses the next eight times: 8**9 terms
], ids=["huge comment", "blank lines", "exponential define"])
def test_a_source_that_would_take_minutes_is_refused_before_any_work(source: str) -> None:
    with pytest.raises(executor.CudaCError, match="at most|over 400,000 characters"):
        executor.Program(source)


def test_a_backslash_in_a_define_stays_cs_own() -> None:
    source = '#define ONE 1.0f\n#define PATH "a\\\\1"\n' + GOOD.replace("1.0f", "ONE")
    out = np.zeros(1, np.float32)
    executor.Program(source).launch("k", (1,), (1,), [out])
    assert out[0] == 1.0
