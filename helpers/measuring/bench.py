"""The bench command: time matmul and axpby on every usable backend and in Python loops, on this machine.

One run answers the series' question with numbers: how much faster are array libraries (and accelerators)
than Python loops, and how close do they get to the hardware's peak? Loops run at a small size only (at the
array backends' size they would take minutes), so speed-ups compare FLOP rates, not times.
"""

from __future__ import annotations

import math
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, TextIO

from ..core.backend import ARRAY_BACKENDS, backends, require_usable
from ..core.validate import available_memory
from . import workloads
from .disturbed import spread_shown
from .formats import format_fraction, format_seconds
from .hardware import Hardware, hardware
from .record import NOISY_SPREAD, Timing

#: Backend names as the bench shows them: Python loops are 'loops' (the rest of the package says 'python').
NAMES = ("loops", *ARRAY_BACKENDS)
OPS = ("matmul", "axpby")


def _internal(name: str) -> str:
    return "python" if name == "loops" else name


@dataclass(frozen=True)
class Sizes:
    """Problem sizes: matmul side and axpby length, for array backends and (smaller) for Python loops."""

    matmul: int
    matmul_loops: int
    axpby: int
    axpby_loops: int

    def of(self, op: str, backend: str) -> int:
        """The size `op` runs at on `backend`."""
        if op == "matmul":
            return self.matmul_loops if backend == "loops" else self.matmul
        return self.axpby_loops if backend == "loops" else self.axpby


#: About 20 s in all on a 2-core machine. axpby's 10M float32 elements (three 40 MB arrays plus NumPy's
#: temporaries) fit comfortably in Binder's 2 GB.
DEFAULT_SIZES = Sizes(matmul=1024, matmul_loops=64, axpby=10_000_000, axpby_loops=100_000)
DEFAULT_BUDGET = 2.0
#: A smoke test for CI: a few seconds, numbers too small to mean much.
QUICK_SIZES = Sizes(matmul=256, matmul_loops=32, axpby=1_000_000, axpby_loops=10_000)
QUICK_BUDGET = 0.1
TITLE = "From Loops to TPUs: bench"


@dataclass(frozen=True)
class Need:
    """The memory one case of the bench needs: `op` on `backend` at size n, and what that memory holds."""

    op: str
    backend: str
    n: int
    per_element: int  # bytes per element of the n x n matrices (matmul) or of the vectors of n (axpby)
    holds: str  # e.g. "three n x n float32 matrices"

    @property
    def nbytes(self) -> int:
        return (self.n * self.n if self.op == "matmul" else self.n) * self.per_element


def memory_need(op: str, backend: str, n: int, dtype: str) -> Need:
    """An estimate of the memory `op` needs at size n on `backend`: its two inputs and its result.

    Array backends hold three n x n matrices (matmul) or three vectors of n (axpby) in `dtype`. Python loops
    turn two float64 arrays into lists of Python floats (32 bytes a number) and build a third list.
    """
    shape = "n x n" if op == "matmul" else "n"
    per_element = workloads.bytes_per_element("python" if backend == "loops" else backend, dtype)
    if backend == "loops":
        return Need(op, backend, n, per_element, f"two float64 arrays of {shape} made into three lists of Python "
                    "floats")
    holds = f"three n x n {dtype} matrices" if op == "matmul" else f"three {dtype} vectors of n"
    return Need(op, backend, n, per_element, holds)


def format_bytes(nbytes: float) -> str:
    """A number of bytes with a unit, 3 significant digits: '812 bytes', '4.2 MB', '19.9 GB', '12,000 TB'."""
    for unit, scale in (("bytes", 1), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if nbytes < scale * 1000:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 1e12:.3g} TB" if nbytes < 1e15 else f"{nbytes / 1e12:,.0f} TB"


class TooLarge(ValueError):
    """A case of the bench needs more memory than this machine has available: raised before anything runs."""

    def __init__(self, need: Need, available: int) -> None:
        self.need, self.available = need, available
        #: The largest size of this op on this backend that fits in the available memory (0: none does).
        self.largest = available // need.per_element
        if need.op == "matmul":
            self.largest = math.isqrt(self.largest)
        super().__init__(f"{need.op} on {need.backend} at n = {need.n:,} needs about {format_bytes(need.nbytes)} "
                         f"({need.holds}), but about {format_bytes(available)} of memory is available here")


def check_memory(names: Sequence[str], dtype: str, sizes: Sizes, available: int | None = None) -> None:
    """TooLarge for the case of `names` that needs the most memory, if it needs more than is available.

    `available`: bytes (default: what this machine has free now); where that is unknown, nothing is checked.
    The cases run one after the other, so the largest one is what must fit.
    """
    available = available_memory() if available is None else available
    if available is None:
        return
    need = max((memory_need(op, b, sizes.of(op, b), dtype) for op in OPS for b in names),
               key=lambda need: need.nbytes, default=None)
    if need is not None and need.nbytes > available:
        raise TooLarge(need, available)


def resolve_backends(names: Sequence[str] | None) -> list[str]:
    """The backends to measure, in display order: all usable ones when `names` is None.

    ValueError for an unknown name; BackendUnavailable (with the reason and the fix) for one that cannot
    run here: a backend asked for by name is never skipped silently.
    """
    if names is None:
        return ["loops", *backends().usable()]
    if not names:
        raise ValueError(f"no backend given; accepted: {', '.join(NAMES)}")
    for name in names:
        if name not in NAMES:
            raise ValueError(f"unknown backend {name!r}; accepted: {', '.join(NAMES)}")
        require_usable(_internal(name))
    return [name for name in NAMES if name in names]


@dataclass(frozen=True)
class Result:
    """One measurement of the bench, with its speed-up over Python loops on the same op (None without loops)."""

    op: str
    backend: str  # display name: loops, numpy, jax, cupy
    timing: Timing
    speedup: float | None

    @property
    def over_peak(self) -> bool:
        """True when the measurement claims more than the hardware's peak: a bug, never a result."""
        return (self.timing.fraction_of_peak or 0.0) > 1.0

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON: op, backend, n, dtype, median_s, gflops, gbps, fraction_of_peak, ..."""
        out = {"op": self.op, **self.timing.as_dict(), "backend": self.backend}
        del out["label"]
        return {**out, "speedup_vs_loops": self.speedup, "noisy": self.timing.noisy}


def measure(op: str, backend: str, n: int, dtype: str, budget: float) -> Timing:
    """Time `op` at size n on `backend` (a display name: loops, numpy, jax, cupy)."""
    return workloads.measure(op, _internal(backend), n, dtype, budget, label=f"{op} {backend}")


@dataclass(frozen=True)
class Report:
    """Everything one bench run found: the machine, the results, and what was measured how."""

    hardware: Hardware
    results: list[Result]
    skipped: dict[str, str]  # backend -> why it could not run (only backends not asked for by name)
    dtype: str

    def table(self) -> list[dict[str, str]]:
        """The results as strings, one dict per row (the text and HTML tables)."""
        rows = []
        for r in self.results:
            t = r.timing
            rows.append({
                "op": r.op, "backend": r.backend, "n": f"{t.n:,}", "dtype": t.dtype or "",
                "median": format_seconds(t.median), "± IQR": f"{t.spread:.0%}",
                "GFLOP/s": _num(t.gflops), "GB/s": _num(t.gbps) if r.op == "axpby" else "",
                "of peak": format_fraction(t.fraction_of_peak) + (" (!)" if r.over_peak else ""),
                "speed-up": "-" if r.speedup is None else _num(r.speedup) + "x",
            })
        return rows

    def notes(self) -> list[str]:
        """The footer: where the peaks came from, how speed-ups are computed, what was skipped, warnings."""
        cpu = self.hardware.cpu
        peaks = {r.timing.peak.device: r.timing.peak for r in self.results if r.timing.peak}
        lines, memory = [], []
        for device, peak in peaks.items():
            if device.startswith("CPU"):
                lines.append(f"CPU peak FP32: {cpu.formula()}; FP64 half that, {cpu.peak_fp64 / 1e9:,.0f} GFLOP/s "
                             f"(clock: {cpu.clock_hz.source})")
                memory.append(f"CPU {peak.bandwidth / 1e9:,.1f} GB/s, {cpu.peak_bandwidth.source}")
            else:
                lines.append(f"{device} peak: {peak.source}")
                if peak.bandwidth:
                    memory.append(f"{device} {peak.bandwidth / 1e9:,.0f} GB/s published")
        if memory and any(r.op == "axpby" for r in self.results):
            lines.append(f"axpby is memory-bound: judge its GB/s against the memory's ({'; '.join(memory)}), "
                         "not its FLOP/s against the peak")
        if any(r.backend == "loops" for r in self.results):
            lines.append("speed-up: GFLOP/s over Python loops' GFLOP/s on the same op (loops run at a smaller n: "
                         "at the full size they would take minutes)")
        lines += [f"skipped {name}: {why}" for name, why in self.skipped.items()]
        if any(r.timing.noisy for r in self.results):
            lines.append(f"some timings spread over {NOISY_SPREAD:.0%} (± IQR): another program was busy; rerun when "
                         "the machine is quiet")
        lines += [self._over_peak_warning(r) for r in self.results if r.over_peak]
        return lines

    @staticmethod
    def _over_peak_warning(r: Result) -> str:
        t = r.timing
        return (f"WARNING: {r.op} on {r.backend} measured {t.fraction_of_peak:.0%} of the peak, which is impossible: "
                f"either the device was not synchronised before the clock was read or the peak is too low "
                f"({t.peak.source}). Please report this.")

    def __str__(self) -> str:
        rows = self.table()
        widths = {k: max(len(k), *(len(row[k]) for row in rows)) for k in rows[0]}
        left = ("op", "backend", "dtype")
        fmt = lambda text, key: text.ljust(widths[key]) if key in left else text.rjust(widths[key])
        lines = ["  ".join(fmt(k, k) for k in widths)]
        lines += ["  ".join(fmt(row[k], k) for k in widths).rstrip() for row in rows]
        notes = [textwrap.fill(line, 110, subsequent_indent="    ") for line in self.notes()]
        return "\n".join([*lines, "", *notes])

    def as_json(self) -> dict[str, Any]:
        """{"hardware": facts, "results": [one dict per measurement]}: the --json file."""
        return {"hardware": hardware_facts(self.hardware), "results": [r.as_dict() for r in self.results]}

    def to_html(self) -> str:
        """A self-contained HTML page (plotly.js inlined, so it opens offline): machine, results, speed-up chart."""
        import plotly.io as pio

        rows = self.table()
        head = "".join(f"<th>{escape(k)}</th>" for k in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row.values()) + "</tr>" for row in rows)
        notes = "".join(f"<li>{escape(line)}</li>" for line in self.notes())
        chart = pio.to_html(self.figure(), include_plotlyjs=True, full_html=False)
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{TITLE}</title>"
                "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                "td,th{padding:2px 10px;text-align:right}</style></head>"
                f"<body><h1>{TITLE}</h1><h2>This machine</h2>{self.hardware._repr_html_()}"
                f"<h2>Results</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<ul>{notes}</ul><h2>Speed-up</h2>{chart}</body></html>")

    def figure(self) -> Any:
        """Horizontal bars, log scale: speed-up over Python loops (GFLOP/s when loops were not measured).

        Not plots.speedup_bars: that divides median times, and here loops run at a smaller n than the rest.
        """
        import plotly.graph_objects as go

        from ..core.style import TEMPLATE, colour

        with_loops = any(r.backend == "loops" for r in self.results)
        values = [r.speedup if with_loops else r.timing.gflops for r in self.results]
        what = "speed-up over Python loops" if with_loops else "GFLOP/s"
        fig = go.Figure(go.Bar(
            orientation="h", x=values, y=[f"{r.op} {r.backend}" for r in self.results],
            marker_color=[colour(r.backend) for r in self.results], textposition="outside", cliponaxis=False,
            text=[_num(v) + ("x" if with_loops else "") for v in values]))
        fig.update_layout(template=TEMPLATE, title=f"{what[0].upper()}{what[1:]} ({self.dtype})",
                          xaxis={"type": "log", "title": f"{what} (log scale)"},
                          yaxis={"autorange": "reversed", "automargin": True},  # room for the whole labels
                          height=160 + 40 * len(self.results), margin={"r": 80})
        return fig


def _num(x: float | None) -> str:
    """3 significant digits, thousands separated, never in exponent notation: 0.0275, 1.43, 144, 5,240."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def hardware_facts(hw: Hardware) -> dict[str, Any]:
    """The machine as JSON-serialisable facts, each peak input with its source."""
    cpu = hw.cpu
    return {
        "environment": hw.environment,
        "cpu_model": cpu.model, "arch": cpu.arch, "logical_cpus": cpu.logical_cpus,
        "cores": int(cpu.cores.value), "cores_source": cpu.cores.source,
        "simd": cpu.simd, "simd_bits": cpu.simd_bits,
        "fma_units": int(cpu.fma_units.value), "fma_units_source": cpu.fma_units.source,
        "clock_hz": float(cpu.clock_hz.value), "clock_source": cpu.clock_hz.source,
        "nominal_clock_hz": float(cpu.nominal_clock_hz.value) if cpu.nominal_clock_hz else None,
        "peak_fp32": cpu.peak_fp32, "peak_fp64": cpu.peak_fp64, "peak_formula": cpu.formula(),
        "bandwidth": float(cpu.peak_bandwidth.value), "bandwidth_source": cpu.peak_bandwidth.source,
        "accelerators": [{
            "kind": a.kind, "name": a.name, "via": a.via, "memory_bytes": a.memory_bytes,
            "multiprocessors": a.multiprocessors,
            "peak_flops": dict(a.spec.peak_flops) if a.spec else None,
            "peak_bandwidth": a.spec.peak_bandwidth if a.spec else None,
            "source": a.spec.source if a.spec else None,
        } for a in hw.accelerators],
        "jax_platform": hw.jax_platform,
        "backends": {s.name: {"usable": s.usable, "detail": s.detail, "fix": s.fix} for s in backends().values()},
        "notes": list(hw.notes),
    }


def run(
    names: Sequence[str] | None = None,
    dtype: str = "float32",
    sizes: Sizes = DEFAULT_SIZES,
    budget: float = DEFAULT_BUDGET,
    progress: TextIO | None = None,
) -> Report:
    """Measure every op on every backend in `names` (all usable ones by default), progress lines to `progress`.

    Raises ValueError / BackendUnavailable, before measuring anything, for a backend that is unknown or
    cannot run here, and TooLarge when a case needs more memory than is available. Whatever stops the run
    (an error, Ctrl-C), the progress stream is left at the start of a line for the message that follows.
    """
    chosen = resolve_backends(names)
    check_memory(chosen, dtype, sizes)
    mid_line = False

    def say(text: str, end: str = "\n") -> None:
        nonlocal mid_line
        if progress is not None:
            print(text, end=end, file=progress, flush=True)
            mid_line = not (text + end).endswith("\n")

    try:
        return _run(chosen, names is None, dtype, sizes, budget, say)
    except BaseException:
        if mid_line and progress is not None:
            print(file=progress, flush=True)
        raise


def _run(chosen: list[str], all_usable: bool, dtype: str, sizes: Sizes, budget: float,
         say: Callable[..., None]) -> Report:
    say("detecting hardware (a short calibration of the CPU) ... ", end="")
    start = time.perf_counter()
    hw = hardware()
    say(f"{time.perf_counter() - start:.1f} s")
    cases = [(op, backend) for op in OPS for backend in chosen]
    timings: dict[tuple[str, str], Timing] = {}
    with spread_shown():  # the table shows the spread of every row
        for i, (op, backend) in enumerate(cases, 1):
            n = sizes.of(op, backend)
            say(f"[{i}/{len(cases)}] {op} {backend} n={n:,} ... ", end="")
            timings[op, backend] = t = measure(op, backend, n, dtype, budget)
            say(format_seconds(t.median))
    say(f"done in {time.perf_counter() - start:.0f} s")
    results = []
    for (op, backend), t in timings.items():
        loops = timings.get((op, "loops"))
        results.append(Result(op, backend, t, t.gflops / loops.gflops if loops else None))
    skipped = {} if not all_usable else {
        s.name: s.detail + (f" -> {s.fix}" if s.fix else "") for s in backends().values() if not s.usable}
    return Report(hw, results, skipped, dtype)
