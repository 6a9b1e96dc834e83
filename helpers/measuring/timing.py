"""benchmark(): time a function honestly on any backend; compare(): a speed-up table.

Honest means: the first call (which may compile) is timed apart, the device is synchronised before the
clock is read (asynchronous GPU and JAX launches otherwise time only the launch), calls are repeated until a
time budget is spent, and the result reports a robust median with its spread.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import operator
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from html import escape
from numbers import Real
from typing import Any

import numpy as np

from ..core import backend as _backends
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.validate import finite, positive_int, positive_number
from .cpu import calibrated_blas_flops
from .hardware import PEAK_DTYPES, Hardware, Peak, hardware, jax_dot_roof

#: A sample shorter than this is dominated by timer overhead: loop the call until a sample lasts this long.
MIN_SAMPLE_SECONDS = 2e-3
#: Spread (IQR / median) above which a timing is flagged as noisy.
NOISY_SPREAD = 0.25
#: How far apart two modes of a timing must be (slow over fast) to count as two, not as noise.
MODE_GAP = 1.25
#: A NumPy float32 matrix product at least this long on every side is compute bound (it does hundreds of FLOPs per
#: number it reads) and takes long beside BLAS's fixed cost per call (microseconds), so its rate can be set beside
#: the one-core calibration (cpu.py, a 768 product). A smaller one may rightly fall far short of it.
BUSY_MIN_SIDE = 256
#: A steady timing of that work under this share of what ONE core reached in the calibration is far below what the
#: machine can do: all cores together should do at least as well as one. The margin of 4 covers a 256 product's
#: lower efficiency, one core boosting above all cores together, and BLAS's thread start-up. On a 2-core VM whose
#: one core calibrated at 135 GFLOP/s, chapter 00's 256 product reached 57% of that; a busy 512 product 8%.
BUSY_SHARE = 0.25


#: True while a timer's clock is running on repeated calls: checks that cost Python time (helpers.gpu.cupy_checked)
#: stay out of what is measured. The first call of a benchmark is not a timed region: it checks what it runs.
_TIMED: contextvars.ContextVar[bool] = contextvars.ContextVar("timed", default=False)


def in_timed_region() -> bool:
    """Whether a timer is now timing repeated calls, so a per-call check would be counted as the call's time."""
    return _TIMED.get()


@contextlib.contextmanager
def _timed_region() -> Iterator[None]:
    token = _TIMED.set(True)
    try:
        yield
    finally:
        _TIMED.reset(token)


@contextlib.contextmanager
def spread_shown() -> Iterator[None]:
    """Many timings whose spread a plot's error bars or a table's column shows: no NoisyTimingWarning for each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoisyTimingWarning)
        yield


#: The most repeats any timer takes, whatever it is asked for (each is also bounded by its time limit).
MAX_REPEATS = 100_000
#: Seconds of repeated timing a benchmark aims for when no `budget=` is given; a chapter sets it once.
_budget = 0.5


def set_timing_budget(seconds: float) -> float:
    """Set the default `budget` of every later benchmark (a chapter does this once, at the top); returns the old one.

    Raise it (say to 1.0) for steadier numbers, lower it for a quicker run.
    """
    global _budget
    seconds = positive_number("seconds (timing budget)", seconds)
    if seconds > 60:
        raise ValueError(f"a timing budget is seconds per measurement, at most 60; got {seconds:g}")
    old, _budget = _budget, seconds
    return old


def timing_budget() -> float:
    """The seconds of repeated timing a benchmark aims for when no `budget=` is given."""
    return _budget


class TooSlow(RuntimeError):
    """benchmark() could not time one repeated call within max_time."""


class NoisyTimingWarning(UserWarning):
    """The samples of a benchmark varied a lot: something else was probably using the machine."""


class BusyMachineWarning(UserWarning):
    """A steady timing came out far below what this machine did for the same work earlier in this process.

    Not a NoisyTimingWarning: its samples agree, so a plot's error bars or a table's spread column do not show it,
    and timing.spread_shown() must not hide it. `python -m helpers notebooks execute` counts both as disturbed.
    """


def _measured(name: str, value: Any) -> float | None:
    """A quantity to format: None when there is none (None, NaN, infinity); a ValueError for a negative or
    non-numeric one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r:.40}")
    if not finite(value):
        return None
    if value < 0:
        raise ValueError(f"{name} must be zero or more, got {value!r}")
    return float(value)


def format_seconds(seconds: float) -> str:
    """A duration with a unit that keeps 3 significant digits: '812 ns', '4.20 ms', '1.50 s', '2.1 h'.

    None, NaN or infinity (no measurement) give '-'; a negative or non-numeric duration is a ValueError.
    """
    seconds = _measured("seconds", seconds)
    if seconds is None:
        return "-"
    for unit, scale in (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3)):
        if seconds < scale * 1000:
            return f"{seconds / scale:.3g} {unit}"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / (365.25 * 86400):.3g} years"


def format_range(low: float, high: float) -> str:
    """A prediction that is a range: '12.1 µs to 112 µs', or one duration where both ends show the same."""
    low_text, high_text = format_seconds(low), format_seconds(high)
    if low_text != high_text and low > high:
        raise ValueError(f"a range runs from low to high; got {low_text} to {high_text}")
    return low_text if low_text == high_text else f"{low_text} to {high_text}"


def format_fraction(fraction: float | None) -> str:
    """A fraction of peak as a percentage with enough digits to be non-zero: '87.3%', '0.0134%'."""
    fraction = _measured("fraction", fraction)
    if fraction is None:
        return "-"
    if fraction == 0 or fraction >= 0.001:
        return f"{fraction:.1%}"
    return f"{fraction * 100:.3g}%"


@dataclass
class Timing:
    """What benchmark() measured: per-call seconds of every sample, the first call apart, and the roofs."""

    label: str
    backend: str
    dtype: str | None
    samples: np.ndarray  # seconds per call, one entry per sample
    number: int  # calls averaged in each sample
    compile_time: float  # seconds of the first call (tracing, compiling, caches warming)
    flops: float | None = None  # floating-point operations per call
    bytes: float | None = None  # bytes moved to or from memory per call
    peak: Peak | None = None
    capped: bool = False  # stopped by max_time before min_repeats samples were taken
    n: int | None = None  # problem size, when the caller says (used by plots)
    extra: dict[str, Any] = field(default_factory=dict)
    busy: bool = False  # steady but far below this machine's own calibration: another program held the cores

    @property
    def median(self) -> float:
        """Median seconds per call: the number to quote."""
        return float(np.median(self.samples))

    @property
    def min(self) -> float:
        """Fastest sample, seconds per call: the machine with the least interference."""
        return float(np.min(self.samples))

    @property
    def mean(self) -> float:
        """Mean seconds per call (pulled up by outliers; prefer the median)."""
        return float(np.mean(self.samples))

    @property
    def iqr(self) -> float:
        """Interquartile range of seconds per call: the spread of the middle half of the samples."""
        q75, q25 = np.percentile(self.samples, [75, 25])
        return float(q75 - q25)

    @property
    def spread(self) -> float:
        """IQR relative to the median: 0.05 means the middle half of the samples lie within about 5%."""
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def modes(self) -> tuple[float, float, float] | None:
        """(fast, slow, share of slow calls) when the calls take one of two times, each tight and far apart, as when
        every other call must find its memory again: the work alternates, no other program is to blame. Else None."""
        s = np.sort(self.samples)
        least = max(2, len(s) // 5)  # each mode holds a fifth of the samples at least
        if len(s) < 8 or s[0] <= 0:
            return None
        # the split that leaves the least spread within the two groups (of log time): a few calls that fall
        # between the modes (a page fault half paid) do not hide them
        logs = np.log(s)
        c = np.arange(least, len(s) - least + 1)  # candidate sizes of the fast group
        total, squares = np.cumsum(logs), np.cumsum(logs**2)
        inside = (squares[c - 1] - total[c - 1] ** 2 / c  # n x variance of each group, from running sums
                  + (squares[-1] - squares[c - 1]) - (total[-1] - total[c - 1]) ** 2 / (len(s) - c))
        cut = int(c[np.argmin(inside)])
        fast, slow = s[:cut], s[cut:]
        if np.median(slow) / np.median(fast) < MODE_GAP:
            return None

        def tight(group: np.ndarray) -> bool:
            q75, q25 = np.percentile(group, [75, 25])
            return (q75 - q25) / np.median(group) <= NOISY_SPREAD  # each mode as steady as a quiet timing
        if not (tight(fast) and tight(slow)):
            return None
        return float(np.median(fast)), float(np.median(slow)), len(slow) / len(s)

    @property
    def noisy(self) -> bool:
        """True when the spread says the machine was busy with something else (not two modes of the work's own)."""
        return len(self.samples) >= 4 and self.spread > NOISY_SPREAD and self.modes is None

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s at the median time, if flops were given."""
        return self.flops / self.median / 1e9 if self.flops else None

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s at the median time, if bytes were given."""
        return self.bytes / self.median / 1e9 if self.bytes else None

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in FLOP per byte, if both flops and bytes were given."""
        return self.flops / self.bytes if self.flops and self.bytes else None

    @property
    def fraction_of_peak(self) -> float | None:
        """Achieved FLOP/s over the device's peak for this dtype (or bytes/s over bandwidth if no flops)."""
        if self.peak is None:
            return None
        if self.flops and self.peak.flops:
            return self.flops / self.median / self.peak.flops
        if self.bytes and not self.flops and self.peak.bandwidth:
            return self.bytes / self.median / self.peak.bandwidth
        return None

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON: label, backend, n, dtype, median_s, min_s, iqr_s, gflops, ..."""
        return {
            "label": self.label, "backend": self.backend, "n": self.n, "dtype": self.dtype,
            "median_s": self.median, "min_s": self.min, "iqr_s": self.iqr, "compile_s": self.compile_time,
            "samples": len(self.samples), "number": self.number, "gflops": self.gflops, "gbps": self.gbps,
            "fraction_of_peak": self.fraction_of_peak,
            "peak_source": self.peak.source if self.peak else None,
            "noisy": self.noisy, "busy": self.busy, "capped": self.capped,
        }

    def _cells(self) -> list[tuple[str, str]]:
        cells = [("median", format_seconds(self.median)), ("± IQR", f"{self.spread:.0%}"),
                 ("min", format_seconds(self.min)), ("first call", format_seconds(self.compile_time))]
        if self.gflops is not None:
            cells.append(("GFLOP/s", f"{self.gflops:,.3g}"))
        if self.gbps is not None:
            cells.append(("GB/s", f"{self.gbps:,.3g}"))
        if self.fraction_of_peak is not None:
            cells.append(("of peak", format_fraction(self.fraction_of_peak)))
        cells.append(("samples", f"{len(self.samples)} x {self.number}"))
        return cells

    def caveat(self) -> str:
        """What to keep in mind when reading this timing: '' when nothing, else one clause."""
        if self.noisy:
            return "noisy: the samples varied a lot; rerun when the machine is quiet"
        if self.busy:
            return (f"busy: under {BUSY_SHARE:.0%} of what one core did in this kernel's calibration; rerun when "
                    "the machine is quiet")
        if self.capped:
            return (f"capped: max_time ran out after {len(self.samples)} sample{'s' * (len(self.samples) > 1)}; "
                    "the median is of those (raise max_time or time a smaller size for more)")
        if self.modes is None:
            return ""
        fast, slow, share = self.modes
        return (f"two modes: {format_seconds(fast)} for {1 - share:.0%} of calls, {format_seconds(slow)} for "
                f"{share:.0%}: the work alternates, as when memory must be found again")

    def __str__(self) -> str:
        text = f"{self.label} [{self.backend}]: " + ", ".join(f"{k} {v}" for k, v in self._cells())
        return text + (f" ({self.caveat()})" if self.caveat() else "")

    def __repr__(self) -> str:
        return f"<Timing {self}>"

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(k)}</th>" for k, _ in self._cells())
        row = "".join(f"<td>{escape(v)}</td>" for _, v in self._cells())
        peak = f"<br><small>peak: {escape(self.peak.device)}, {escape(self.peak.source)}</small>" if self.peak else ""
        caveat = f"<br><small>&#9888; {escape(self.caveat())}</small>" if self.caveat() else ""
        return (f"<b>{escape(self.label)}</b> <small>[{escape(self.backend)}]</small>"
                f"<table><tr>{head}</tr><tr>{row}</tr></table>{peak}{caveat}")


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


def _device_kind(backend: str, tree: Any) -> str:
    if backend == "jax":
        for leaf in _backends.leaves(tree):
            if _backends.backend_of(leaf) == "jax":
                return next(iter(leaf.devices())).platform
        return _backends.backends()["jax"].device_kind
    return "gpu" if backend == "cupy" else "cpu"


def _tf32_gpu(hw: Hardware) -> bool:
    """Whether the GPU that `hw.peak` judges by has TF32 tensor cores, where float32 matmuls may run."""
    gpu = next((a for a in hw.accelerators if a.kind == "gpu"), None)
    return bool(gpu and gpu.spec and gpu.spec.peak_for("tf32"))


def _equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr and of the jaxprs inside it (jit, cond branches, scan and remat bodies, ...)."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for inner in param if isinstance(param, tuple | list) else (param,):
                if hasattr(inner, "eqns"):  # a Jaxpr, or a ClosedJaxpr
                    yield from _equations(inner)


def _jax_matmul_roofs(fn: Callable[..., Any], args: tuple[Any, ...],
                      seconds: float) -> tuple[frozenset[str] | None, str]:
    """Where the matmuls of the JAX call `fn(*args)` run on a GPU with TF32 tensor cores (hardware.jax_dot_roof),
    read from its jaxpr, and a note for the peak's source.

    The jaxpr holds each dot's own precision: a `precision=` given to the call, else the default precision in
    force when it was traced (as now). Dots of bf16 or f16 arrays (with preferred_element_type=float32 or not) run
    on those tensor cores; a precision or arrays not known here give 'unknown' (judged by the highest roof). None
    when the call cannot be traced within `seconds`: the peak then follows JAX's default matmul precision, as the
    note says.
    """
    import jax

    limit = None
    try:
        with time_limit(seconds, "tracing the call for its matmul precisions") as limit:
            jaxpr = jax.make_jaxpr(lambda: fn(*args))()
    except TimeLimitExceeded as exc:
        if limit is None or exc.limit is not limit:
            raise
        return None, f"tracing the call took over {seconds:g} s: judged by JAX's default matmul precision"
    except Exception as exc:  # noqa: BLE001 - any failure to trace: judge by the setting instead, and say so
        return None, f"the call could not be traced ({type(exc).__name__}): judged by JAX's default matmul precision"
    roofs: set[str] = set()
    dots = 0
    for eqn in _equations(jaxpr):
        if "precision" not in eqn.params:  # dot_general, conv_general_dilated, ...: work for the tensor cores
            continue
        dots += 1
        dtypes = {str(v.aval.dtype) for v in eqn.invars[:2]}
        if dtypes <= {"float32", "complex64"}:
            try:
                roofs.add(jax_dot_roof(eqn.params["precision"]))
            except ValueError:
                roofs.add("unknown")
        elif len(dtypes) == 1 and dtypes <= {"bfloat16", "float16", "float64"}:
            roofs |= dtypes  # a precision changes float32 work only
        else:
            roofs.add("unknown")
    if not dots:
        return frozenset(), "no matmul in the traced call: the CUDA cores' float32 roof"
    return frozenset(roofs), f"{dots} matmul{'s' * (dots > 1)} in the traced call, on {', '.join(sorted(roofs))}"


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
    budget = _budget if budget is None else _positive("budget (seconds)", budget, allow_none=False)
    max_time = _positive("max_time (seconds)", max_time, allow_none=False)
    min_repeats, max_repeats, warmup = _counts(min_repeats, max_repeats, warmup)
    dtype = _dtype_name(dtype)
    n = None if n is None else positive_int("n (problem size)", n)
    run = _Run(fn, args, _busy_backends(backend, args), clock, label or getattr(fn, "__name__", "fn"),
               budget, max_time)
    _repeat(run, backend, dtype, warmup, min_repeats, max_repeats)
    result = _timing(run, dtype or run.actual, flops, bytes, n, capped=len(run.samples) < min_repeats)
    _warn_if_suspect(result)
    _judge_by_calibration(result, fn, args, clock)
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
    with _timed_region():
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
    peak = _judging_peak(run.fn, run.args, run.out, run.chosen, dtype or "float32", max(run.max_time - run.spent, 1.0))
    return Timing(run.name, run.chosen, dtype, np.asarray(run.samples), run.number, run.first,
                  flops, nbytes, peak, capped=capped, n=n)


def _judging_peak(fn: Callable[..., Any], args: tuple[Any, ...], out: Any, chosen: str, judged: str,
                  seconds: float) -> Peak:
    """The roofs a timing of `fn` on `chosen` in dtype `judged` is judged by, on the device its arrays live on.
    Integer or complex work has no FLOP roof on file: bandwidth only. seconds: what reading a JAX call may take."""
    hw, kind = hardware(), _device_kind(chosen, (args, out))
    matmuls, note = None, ""
    if chosen == "jax" and kind == "gpu" and judged == "float32" and _tf32_gpu(hw):  # only there does it matter
        matmuls, note = _jax_matmul_roofs(fn, args, seconds)
    peak = hw.peak(chosen, judged if judged in PEAK_DTYPES else "float64", kind, float32_matmuls=matmuls)
    if note:
        peak = replace(peak, source=f"{peak.source}; {note}")
    if judged not in PEAK_DTYPES:
        peak = replace(peak, flops=None, source=f"{peak.source}; no FLOP/s roof for {judged}")
    return peak


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


def _warn_if_suspect(result: Timing) -> None:
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
    from . import workloads  # here, not at the top: workloads times its work with benchmark

    if not any(fn is blas for blas in (np.matmul, np.dot, operator.matmul, workloads.matmul)) or len(args) != 2:
        return None
    if not all(isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 2 for x in args):
        return None
    (m, k), (inner, n) = args[0].shape, args[1].shape
    return 2.0 * m * k * n if k == inner and min(m, k, n) >= BUSY_MIN_SIDE else None


def _judge_by_calibration(result: Timing, fn: Callable[..., Any], args: tuple[Any, ...],
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
        with _timed_region():
            for _ in range(repeats):
                t0 = clock()
                out = fn(*args)
                times.append(clock() - t0)
                _backends.sync_each(out, _backends.backends_in(out))  # after the clock: the launch alone was timed
    return float(np.median(times))


def crossover(sizes: Sequence[Any], baseline_seconds: Sequence[float], other_seconds: Sequence[float]) -> Any:
    """The smallest size from which `other` beats `baseline` at every larger size too, or None if it never does.

    "From then on" matters: a noisy win at one small size, lost again above it, is not a crossover.
    """
    try:
        lengths = len(sizes), len(baseline_seconds), len(other_seconds)
    except TypeError:
        raise ValueError("crossover() needs three sequences: sizes, baseline_seconds and other_seconds") from None
    if len(set(lengths)) != 1 or not lengths[0]:
        raise ValueError("crossover() needs non-empty sizes, baseline_seconds and other_seconds of the same length; "
                         f"got {lengths[0]}, {lengths[1]} and {lengths[2]}")
    for name, values in (("sizes", sizes), ("baseline_seconds", baseline_seconds), ("other_seconds", other_seconds)):
        bad = [v for v in values if not finite(v) or v < 0]
        if bad:
            raise ValueError(f"crossover(): {name} must be finite numbers, zero or more; got {bad[0]!r}")
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    found = None
    for i in reversed(order):
        if not other_seconds[i] < baseline_seconds[i]:
            break
        found = sizes[i]
    return found


@dataclass
class Comparison:
    """Several timings side by side, with speed-ups relative to the first (the baseline)."""

    timings: list[Timing]

    @property
    def baseline(self) -> Timing:
        """The timing every speed-up is measured against."""
        return self.timings[0]

    @property
    def speedups(self) -> dict[str, float]:
        """label -> how many times faster than the baseline (median against median)."""
        return {t.label: self.baseline.median / t.median for t in self.timings}

    def rows(self) -> list[dict[str, str]]:
        """The table as strings, one dict per timing."""
        out = []
        for t in self.timings:
            out.append({
                "": t.label, "backend": t.backend, "median": format_seconds(t.median),
                "speed-up": f"{self.baseline.median / t.median:,.3g}x",
                "GFLOP/s": f"{t.gflops:,.3g}" if t.gflops is not None else "",
                "GB/s": f"{t.gbps:,.3g}" if t.gbps is not None else "",
                "of peak": format_fraction(t.fraction_of_peak) if t.fraction_of_peak is not None else "",
            })
        keep = [k for k in out[0] if any(r[k] for r in out)]
        return [{k: r[k] for k in keep} for r in out]

    def __str__(self) -> str:
        rows = self.rows()
        widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in rows[0]}
        lines = ["  ".join(k.rjust(w) for k, w in widths.items())]
        lines += ["  ".join(r[k].rjust(w) for k, w in widths.items()) for r in rows]
        return "\n".join(lines) + f"\n(speed-ups against {self.baseline.label!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{escape(k)}</th>" for k in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in r.values()) + "</tr>" for r in rows)
        return (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<small>speed-ups against {escape(self.baseline.label)}</small>")


def compare(timings: Mapping[str, Timing] | Iterable[Timing]) -> Comparison:
    """A speed-up table of timings against the first one: compare({'loops': t0, 'numpy': t1})."""
    if isinstance(timings, Timing | str) or not isinstance(timings, Mapping | Iterable):
        raise TypeError("compare() needs several Timing results from benchmark(), as a dict {'label': timing} or "
                        f"a list; got {type(timings).__name__}")
    if isinstance(timings, Mapping):
        items = []
        for label, t in timings.items():
            if not isinstance(t, Timing):
                raise TypeError(f"compare() needs Timing results from benchmark(); {label!r} is {type(t).__name__}")
            items.append(replace(t, label=str(label)))  # a relabelled copy: the caller's timing stays as it was
    else:
        items = list(timings)
        for t in items:
            if not isinstance(t, Timing):
                raise TypeError(f"compare() needs Timing results from benchmark(), got {type(t).__name__}")
    if not items:
        raise ValueError("compare() needs at least one Timing")
    return Comparison(items)
