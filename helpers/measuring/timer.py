"""benchmark(): time a function honestly on any backend; time_without_sync(): the wrong way, kept for lessons.

Honest means: the first call (which may compile) is timed apart, the device is synchronised before the
clock is read (asynchronous GPU and JAX launches otherwise time only the launch), calls are repeated until a
time budget is spent, and the result reports a robust median with its spread, judged by the device's roofs.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import backend as _backends
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.validate import positive_int, positive_number
from .budget import MAX_REPEATS, timed_region, timing_budget
from .disturbed import judge_by_calibration, warn_if_suspect
from .formats import format_seconds
from .judging_peak import judging_peak
from .record import Timing

#: A sample shorter than this is dominated by timer overhead: loop the call until a sample lasts this long.
MIN_SAMPLE_SECONDS = 2e-3


class TooSlow(RuntimeError):
    """benchmark() could not time one repeated call within max_time."""


def _positive(name: str, value: Any, allow_none: bool = True) -> float | None:
    return None if value is None and allow_none else positive_number(name, value)


def _dtype_of(tree: Any, limit: int = 10_000) -> str | None:
    """The dtype of the first array among the first `limit` leaves; 'float64' for Python floats."""
    found_float = False
    for leaf in itertools.islice(_backends.leaves(tree), limit):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None:
            return str(dtype)
        found_float = found_float or isinstance(leaf, float)
    return "float64" if found_float else None


def benchmark(
    fn: Callable[..., Any],
    *args: Any,
    backend: str | None = None,
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002 - the natural name, next to flops
    label: str | None = None,
    dtype: str | Any | None = None,
    n: int | None = None,
    budget: float | None = None,
    max_time: float = 10.0,
    min_repeats: int = 5,
    max_repeats: int = 10_000,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time `fn(*args)`: first call apart, warm calls, device sync before every clock read, repeats in a budget.

    backend: 'python', 'numpy', 'jax' or 'cupy'; detected from the arrays in `args` (or, if there are none,
    from what `fn` returns) when not given. Arrays must already live on that backend, so transfers are not
    timed by accident. flops / bytes: work per call, for GFLOP/s, GB/s and the fraction of peak.
    budget: seconds of repeated timing to aim for (None: the chapter's, see set_timing_budget); max_time: hard cap
    on the whole benchmark, so a slow function cannot hang a notebook: a call still running at max_time is stopped
    (on Linux and macOS, in the main thread), and if not even the first call and one repeat fit, TooSlow says so.
    warmup: warm calls after the first, at least 1, even when the first call spent the budget: the first call may
    include a compile (XLA on a GPU or TPU), so the fastest warm call, not the first, sizes the samples. Extra
    warm calls stop once the budget is spent.
    """
    # Step 1, as CuPy's profiler.benchmark: check every argument before anything runs; _repeat does the timing.
    if not callable(fn):
        raise TypeError(f"benchmark() times a function: its first argument must be callable, got "
                        f"{type(fn).__name__} {fn!r:.60}. Pass the function and its arguments, e.g. "
                        "benchmark(np.matmul, a, b), or wrap an expression: benchmark(lambda: a @ b)")
    if backend is not None:
        _backends.check_name(backend)
        _backends.require_usable(backend)
    flops = _positive("flops (floating-point operations per call)", flops)
    bytes = _positive("bytes (bytes moved per call)", bytes)
    budget = timing_budget() if budget is None else _positive("budget (seconds)", budget, allow_none=False)
    max_time = _positive("max_time (seconds)", max_time, allow_none=False)
    min_repeats, max_repeats, warmup = _counts(min_repeats, max_repeats, warmup)
    dtype = _dtype_name(dtype)
    n = None if n is None else positive_int("n (problem size)", n)
    run = _Run(fn, args, _busy_backends(backend, args), clock, label or getattr(fn, "__name__", "fn"),
               budget, max_time)
    _repeat(run, backend, dtype, warmup, min_repeats, max_repeats)
    result = _timing(run, dtype or run.actual, flops, bytes, n, capped=len(run.samples) < min_repeats)
    warn_if_suspect(result)
    judge_by_calibration(result, fn, args, clock)
    return result


def _busy_backends(backend: str | None, args: tuple[Any, ...]) -> set[str]:
    """The backends whose devices `args` keep busy (and the one asked for), each synchronised now: nothing queued
    before the benchmark may leak into its first sample. Arrays on another backend than asked are a ValueError."""
    found = _backends.detect(args)
    if backend is not None and found not in ("python", backend) and not (backend == "python" and found == "numpy"):
        raise ValueError(f"benchmark(backend={backend!r}) got {found} arrays; move them first with "
                         f"helpers.to_backend(x, {backend!r}) so the transfer is not timed on every call")
    busy = {found} | ({backend} if backend else set())
    _backends.sync_each(args, busy)
    return busy


@dataclass
class _Run:
    """One benchmark's timing loop and what it has measured so far: the samples taken before max_time stand."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    busy: set[str]  # backends to wait for before every clock read
    clock: Callable[[], float]
    name: str
    budget: float
    max_time: float
    first: float | None = None  # seconds of the first call, once it returned
    spent: float = 0.0  # seconds of every call so far
    out: Any = None  # what the latest call returned
    chosen: str = "python"  # the backend the timing is reported on
    actual: str | None = None  # the dtype the arrays have
    number: int = 1  # calls per sample
    samples: list[float] = field(default_factory=list)  # seconds per call, one per sample

    def call(self, count: int) -> float:
        """Seconds for `count` calls, the devices waited for: without the sync we would time the launch only."""
        t0 = self.clock()
        for _ in range(count):
            self.out = self.fn(*self.args)
        _backends.sync_each(self.out, self.busy)
        return self.clock() - t0

    def too_slow(self) -> TooSlow:
        """The benchmark ran past max_time before one sample: say how far it got."""
        if self.first is None:
            return TooSlow(f"benchmark of {self.name!r} ran past max_time={self.max_time:g} s in its first call: "
                           "raise max_time or use a smaller size")
        return TooSlow(f"benchmark of {self.name!r} ran past max_time={self.max_time:g} s before one repeated call "
                       f"was timed (the first call took {format_seconds(self.first)}): time a smaller size, or "
                       "raise max_time")


def _repeat(run: _Run, backend: str | None, dtype: str | None, warmup: int, min_repeats: int,
            max_repeats: int) -> None:
    """Step 2, the timing loop: the first call, the warm calls, the calls per sample, then the samples."""
    limit = None
    try:
        # A real-time limit too, so that a call that never returns ends the benchmark (limits.py says where).
        with time_limit(run.max_time, f"benchmark of {run.name!r}") as limit:
            _first_call(run, backend, dtype)
            run.number = _calls_per_sample(_warm_up(run, warmup))
            _sample(run, min_repeats, max_repeats)
    except TimeLimitExceeded as exc:
        if limit is None or exc.limit is not limit:
            raise
        if not run.samples:
            raise run.too_slow() from None
        # The samples taken before the limit stand; the timing is marked capped.


def _first_call(run: _Run, backend: str | None, dtype: str | None) -> None:
    """Time the first call apart (it may compile) and learn from it where the results live and their dtype.

    A jitted JAX function fed NumPy arrays returns JAX arrays still being computed: every backend holding
    results is waited for, on every call. The dtype is checked now, before the repeats spend the budget."""
    t0 = run.clock()
    run.out = run.fn(*run.args)
    run.busy |= _backends.backends_in(run.out)
    _backends.sync_each(run.out, run.busy)
    run.first = run.spent = run.clock() - t0
    if run.first > run.max_time:
        raise TooSlow(f"benchmark of {run.name!r}: the first call took {format_seconds(run.first)}, longer than "
                      f"max_time={run.max_time:g} s; raise max_time or use a smaller size")
    on_device = [b for b in ("cupy", "jax") if b in run.busy]
    run.chosen = backend or (on_device[0] if on_device else "numpy" if "numpy" in run.busy else "python")
    run.actual = _dtype_of(run.args) or _dtype_of(run.out)
    if dtype is not None and run.actual not in (None, dtype) and _backends.backends_in((run.args, run.out)):
        raise ValueError(f"benchmark(dtype={dtype!r}) but the arrays are {run.actual}: leave dtype out, or make "
                         f"the inputs {dtype} (JAX makes float64 arrays only after `{_backends.JAX_X64_ON}`)")


def _warm_up(run: _Run, warmup: int) -> list[float]:
    """Seconds of each warm call: one at least, even when the first call spent the whole budget (it may include
    a compile, so only a warm call says how long a call takes); more, up to `warmup`, while the budget lasts."""
    warm: list[float] = []
    while len(warm) < warmup and (not warm or run.spent - run.first < run.budget):
        warm.append(run.call(1))
        run.spent += warm[-1]
    if run.spent >= run.max_time:
        raise run.too_slow()
    return warm


def _calls_per_sample(warm: list[float]) -> int:
    """Calls in each sample, sized by the fastest warm call so that a sample lasts MIN_SAMPLE_SECONDS."""
    fastest = min(warm)
    return max(1, int(MIN_SAMPLE_SECONDS / fastest)) if fastest > 0 else 1000


def _sample(run: _Run, min_repeats: int, max_repeats: int) -> None:
    """Take samples of `run.number` calls until max_repeats or max_time, or min_repeats once the budget is spent."""
    with timed_region():
        while True:
            elapsed = run.call(run.number)
            run.samples.append(elapsed / run.number)
            run.spent += elapsed
            if len(run.samples) >= max_repeats or run.spent >= run.max_time:
                break
            if len(run.samples) >= min_repeats and run.spent - run.first >= run.budget:
                break


def _timing(run: _Run, dtype: str | None, flops: float | None, nbytes: float | None, n: int | None,
            capped: bool) -> Timing:
    """The Timing of a finished run, with the roofs it is judged by (reading a JAX call may take what is left)."""
    peak = judging_peak(run.fn, run.args, run.out, run.chosen, dtype or "float32", max(run.max_time - run.spent, 1.0))
    return Timing(run.name, run.chosen, dtype, np.asarray(run.samples), run.number, run.first,
                  flops, nbytes, peak, capped=capped, n=n)


def _counts(min_repeats: int, max_repeats: int, warmup: int) -> tuple[int, int, int]:
    """benchmark's repeat and warm-up counts, each a whole number from 1 to MAX_REPEATS."""
    min_repeats, max_repeats = positive_int("min_repeats", min_repeats), positive_int("max_repeats", max_repeats)
    warmup = positive_int("warmup", warmup, "warm calls: one at least sizes the samples")
    if max(min_repeats, max_repeats, warmup) > MAX_REPEATS:
        raise ValueError(f"min_repeats, max_repeats and warmup must be at most {MAX_REPEATS:,}; got {min_repeats:,}, "
                         f"{max_repeats:,} and {warmup:,}")
    return min_repeats, max_repeats, warmup


def _dtype_name(dtype: str | Any | None) -> str | None:
    """A dtype given to benchmark, as its name ('float32'), or None."""
    if dtype is None or isinstance(dtype, str):
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise ValueError(f"dtype must be a dtype name such as 'float32', or a NumPy dtype; got {dtype!r}") from None


def time_without_sync(fn: Callable[..., Any], *args: Any, repeats: int = 20, max_time: float = 30.0,
                      clock: Callable[[], float] = time.perf_counter) -> float:
    """The WRONG way to time asynchronous code, kept for lessons: median seconds until `fn(*args)` returns.

    JAX and CuPy return as soon as the work is queued, so this times the launch, not the work. A first call
    (which may compile) is not timed. Each call's result is waited for after the clock is read, so every call
    starts on an idle device. Use benchmark(). Stops with TimeLimitExceeded after max_time seconds.
    """
    if not callable(fn):
        raise TypeError(f"time_without_sync() times a function; got {type(fn).__name__}")
    repeats = positive_int("repeats", repeats)
    max_time = positive_number("max_time (seconds)", max_time)
    if repeats > 1000:
        raise ValueError(f"repeats must be at most 1,000 (the lesson needs about 20); got {repeats:,}")
    with time_limit(max_time, f"time_without_sync of {getattr(fn, '__name__', 'fn')!r}"):
        out = fn(*args)  # the first call may compile: not timed
        _backends.sync_each(out, _backends.backends_in(out))
        times = []
        with timed_region():
            for _ in range(repeats):
                t0 = clock()
                out = fn(*args)
                times.append(clock() - t0)
                _backends.sync_each(out, _backends.backends_in(out))  # after the clock: the launch alone was timed
    return float(np.median(times))
