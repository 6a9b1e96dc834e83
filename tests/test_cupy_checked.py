"""helpers.gpu.cupy_checked: on a GPU, each RawKernel launch is checked once per signature, never while timed."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FakeClock
from test_cuda import FakeCupy, on_device

from helpers import executor
from helpers.gpu import cuda, cupy_checked
from helpers.measuring import timing

SOURCE = cuda.kernel_source("vector_add.cu")
#: What one launch check costs in Python on a GPU machine (20-33 µs measured), and what the kernel takes.
CHECK_SECONDS, KERNEL_SECONDS = 30e-6, 10e-6


@pytest.fixture
def counted(monkeypatch):
    """The real check_launch, counted: each call logs whether a timer was timing repeated calls then."""
    calls: list[bool] = []
    real = executor.check_launch

    def check(*args):
        calls.append(timing.in_timed_region())
        return real(*args)

    monkeypatch.setattr(executor, "check_launch", check)
    return calls


def vectors(n: int, dtype=np.float32):
    return [on_device(np.arange(n, dtype=dtype)) for _ in range(3)]


def test_a_launch_signature_is_checked_once_and_a_new_one_again(counted) -> None:
    kernel = cupy_checked.CheckedCupy(FakeCupy()).RawKernel(SOURCE, "vector_add")
    a, b, out = vectors(300)
    for _ in range(6):
        kernel((2,), (256,), (a, b, out, np.int32(300)))
    assert len(counted) == 1
    kernel((2,), (256,), (a, b, out, np.int32(7)))  # other values, same signature
    assert len(counted) == 1
    kernel((3,), (128,), (a, b, out, np.int32(300)))  # another launch shape
    assert len(counted) == 2
    a64, b64, out64 = vectors(300, np.float64)
    with pytest.raises(TypeError, match="float"):  # a new signature, wrong: refused though the kernel was checked
        kernel((3,), (128,), (a64, b64, out64, np.int32(300)))
    with pytest.raises(TypeError, match="np.int32"):
        kernel((2,), (256,), (a, b, out, 300.0))  # a Python float for an int
    assert len(counted) == 4


def test_a_raw_modules_functions_are_checked_as_a_raw_kernel_is(counted) -> None:
    module = cupy_checked.CheckedCupy(FakeCupy()).RawModule(code=SOURCE, options=("-std=c++17",))
    kernel = module.get_function("vector_add")
    a, b, out = vectors(300)
    kernel((2,), (256,), (a, b, out, np.int32(300)))
    assert len(counted) == 1 and (np.asarray(out) == 2 * np.arange(300)).all()
    with pytest.raises(TypeError, match=r"the Python int 4294967296 does not fit a int"):
        kernel((2,), (256,), (a, b, out, 2**32))  # refused before the GPU misreads it
    with pytest.raises(ValueError, match="a block has at most 1024 threads"):
        kernel((1,), (64, 32), (a, b, out, np.int32(300)))


def test_the_check_stays_out_of_what_benchmark_times(counted, monkeypatch) -> None:
    clock = FakeClock()
    fake = FakeCupy()
    real_launch = executor.check_launch

    def slow_check(*args):  # the check's Python time, as a GPU machine spends it
        clock.advance(CHECK_SECONDS)
        return real_launch(*args)

    monkeypatch.setattr(executor, "check_launch", slow_check)
    kernel = cupy_checked.CheckedCupy(fake).RawKernel(SOURCE, "vector_add")
    fake.emulations["vector_add"] = lambda *args: clock.advance(KERNEL_SECONDS)
    a, b, out = vectors(300)
    timed = timing.benchmark(lambda: kernel((2,), (256,), (a, b, out, np.int32(300))), clock=clock,
                             budget=0.01, min_repeats=5)
    assert timed.median == pytest.approx(KERNEL_SECONDS), "the launch check was timed as the kernel's time"
    assert len(counted) == 1 and counted == [False], counted  # checked in the first call only
    assert len(fake.launches) > 100


def test_launches_first_seen_while_timing_are_not_checked_there(counted) -> None:
    kernel = cupy_checked.CheckedCupy(FakeCupy()).RawKernel(SOURCE, "vector_add")
    a, b, out = vectors(300)
    timing.time_without_sync(lambda: kernel((2,), (256,), (a, b, out, np.int32(300))), repeats=5)
    assert counted == [False]  # the untimed first call checked it; the timed calls did not


def test_an_unhashable_launch_is_still_checked_every_time(counted) -> None:
    kernel = cupy_checked.CheckedCupy(FakeCupy()).RawKernel(SOURCE, "vector_add")
    with pytest.raises(TypeError, match="tuple"):
        kernel([2], (256,), tuple(vectors(300)) + (np.int32(300),))
    with pytest.raises(TypeError, match="tuple"):
        kernel([2], (256,), tuple(vectors(300)) + (np.int32(300),))
    assert len(counted) == 2

