"""Warnings of a disturbed machine: a timing too noisy to trust (NoisyTimingWarning), one steady but far below
what this machine's own calibration did (BusyMachineWarning, with its cause measured), one above its compute
roof (a bug); and spread_shown(), for many timings whose spread a plot or a table shows.
"""

from __future__ import annotations

import contextlib
import operator
import os
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .cpu import calibrated_blas_flops
from .formats import format_fraction
from .operations import matmul
from .record import BUSY_SHARE, Timing

#: A NumPy float32 matrix product at least this long on every side is compute bound (it does hundreds of FLOPs per
#: number it reads) and takes long beside BLAS's fixed cost per call (microseconds), so its rate can be set beside
#: the one-core calibration (cpu.py, a 768 product). A smaller one may rightly fall far short of it.
BUSY_MIN_SIDE = 256


class NoisyTimingWarning(UserWarning):
    """The samples of a benchmark varied a lot: something else was probably using the machine."""


class BusyMachineWarning(UserWarning):
    """A steady timing came out far below what this machine did for the same work earlier in this process.

    Not a NoisyTimingWarning: its samples agree, so a plot's error bars or a table's spread column do not show it,
    and spread_shown() must not hide it. `python -m helpers notebooks execute` counts both as disturbed.
    """


@contextlib.contextmanager
def spread_shown() -> Iterator[None]:
    """Many timings whose spread a plot's error bars or a table's column shows: no NoisyTimingWarning for each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoisyTimingWarning)
        yield


def warn_if_suspect(result: Timing) -> None:
    """Warn of a timing above its compute roof (a bug) or too noisy to trust (the machine was busy)."""
    # Only a compute roof is a hard limit: data that fits in cache beats the main-memory bandwidth honestly.
    if result.flops and result.fraction_of_peak is not None and result.fraction_of_peak > 1:
        warnings.warn(f"{result.label}: {format_fraction(result.fraction_of_peak)} of the peak is impossible: either "
                      "the timing missed a device sync or the peak estimate is too low "
                      f"({result.peak.source if result.peak else ''}). Please report it.", stacklevel=3)
    if result.noisy:
        warnings.warn(f"{result.label}: the middle half of the samples spread over {result.spread:.0%} of the "
                      "median; another program may be using the machine. Rerun, or raise budget=.",
                      NoisyTimingWarning, stacklevel=3)


#: Whether this process has shown its BusyMachineWarning: once per kernel says it; later slow timings are marked busy.
_busy_warned = False


def _calibrated_work(fn: Callable[..., Any], args: tuple[Any, ...]) -> float | None:
    """FLOPs per call when `fn(*args)` is the work cpu.py calibrates, NumPy's BLAS multiplying two float32 matrices
    (BUSY_MIN_SIDE or more on every side); None for any other work, which has no calibration to be judged by."""
    if not any(fn is blas for blas in (np.matmul, np.dot, operator.matmul, matmul)) or len(args) != 2:
        return None
    if not all(isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 2 for x in args):
        return None
    (m, k), (inner, n) = args[0].shape, args[1].shape
    return 2.0 * m * k * n if k == inner and min(m, k, n) >= BUSY_MIN_SIDE else None


def judge_by_calibration(result: Timing, fn: Callable[..., Any], args: tuple[Any, ...],
                         clock: Callable[[], float] = time.perf_counter) -> None:
    """Mark a steady timing of the calibrated work busy when it is far below one core's calibrated rate, and warn
    once per process (a noisy one has its own warning). No calibration in this process: nothing to judge by."""
    global _busy_warned
    calibrated = calibrated_blas_flops()
    flops = _calibrated_work(fn, args) if calibrated and not result.noisy else None
    if not flops or flops / result.median >= BUSY_SHARE * calibrated:
        return
    result.busy = True
    if _busy_warned:
        return
    _busy_warned = True
    rate = flops / result.median
    cause = _busy_cause(fn, args, flops, rate, clock)
    warnings.warn(f"{result.label}: {rate / 1e9:,.3g} GFLOP/s for a float32 matrix product, {rate / calibrated:.0%} "
                  f"of the {calibrated / 1e9:,.3g} GFLOP/s ONE core reached in the same work when this kernel "
                  "calibrated the CPU (h.hardware()). All the cores together should do at least as well. The samples "
                  f"are steady, so something held the cores the whole time. {cause} "
                  "Shown once per kernel: later timings this slow say 'busy'.",
                  BusyMachineWarning, stacklevel=3)


def _busy_cause(fn: Callable[..., Any], args: tuple[Any, ...], flops: float, rate: float,
                clock: Callable[[], float]) -> str:
    """Which of the two usual causes it was, measured: the same product once more with the BLAS on one thread. If
    that runs several times faster, the BLAS's own threads were fighting for the cores (more of them, with this
    process's other threads, than free cores: their waiting spins); if not, another program held the cores."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        start = clock()
        fn(*args)
        alone = flops / max(clock() - start, 1e-12)
    threads, cores = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None, os.cpu_count()
    running = f"this process runs {threads} threads on {cores} CPUs" if threads else f"this machine has {cores} CPUs"
    if alone > 2 * rate:
        return (f"Measured: with the BLAS on one thread the same product ran at {alone / 1e9:,.3g} GFLOP/s, "
                f"{alone / rate:,.0f}x faster, so the BLAS's threads were fighting for the cores ({running}, a "
                "runtime's such as JAX's among them; h.threads.describe_blas() says how many the BLAS starts). Cap "
                "them with h.threads.limit_blas_threads(k) for a few fewer than the CPUs, or set "
                "OPENBLAS_NUM_THREADS=k before Python starts, then rerun.")
    return (f"Measured: with the BLAS on one thread it ran at {alone / 1e9:,.3g} GFLOP/s, no faster, so another "
            f"program held the cores ({running}). Close other programs or wait for them to finish, then rerun.")
