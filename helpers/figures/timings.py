"""What the figures are drawn from: timings with their labels, and the numbers as every figure prints them
(speed-ups, FLOP/s, the rates a hover shows, the range of a log axis)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from html import escape

from ..measuring.timing import Comparison, Timing, format_fraction

# --------------------------------------------------------------------------------------------------------------
# Input normalisation.

Timings = Comparison | Mapping[str, Timing] | Iterable[Timing]


def labelled(timings: Timings, allow_empty: bool = False) -> list[tuple[str, Timing]]:
    """(label, Timing) pairs from a Comparison, a dict label -> Timing, or a list; labels made unique."""
    if isinstance(timings, Comparison):
        pairs = [(t.label, t) for t in timings.timings]
    elif isinstance(timings, Mapping):
        pairs = [(str(k), t) for k, t in timings.items()]
    elif isinstance(timings, Timing):
        pairs = [(timings.label, timings)]
    elif isinstance(timings, Iterable) and not isinstance(timings, str | bytes):
        pairs = [(getattr(t, "label", ""), t) for t in timings]
    else:
        raise TypeError(f"timings must be Timing results from helpers.benchmark() (a Comparison, a dict label -> "
                        f"Timing, or a list); got {type(timings).__name__}")
    for label, t in pairs:
        if not isinstance(t, Timing):
            raise TypeError(f"timings must be Timing results from helpers.benchmark(); {label!r} is "
                            f"{type(t).__name__}")
    if not pairs and not allow_empty:
        raise ValueError("no timings to plot: pass a Comparison, a dict label -> Timing, or a list of Timing")
    seen: dict[str, int] = {}
    out = []
    for label, t in pairs:
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label} ({seen[label]})", t))
    return out


def format_speedup(s: float) -> str:
    return f"{s:,.0f}x" if s >= 100 else f"{s:.3g}x"


def format_flops(flops_per_s: float) -> str:
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:,.3g} {unit}"
    return f"{flops_per_s:,.3g} FLOP/s"


def rate_lines(t: Timing) -> list[str]:
    lines = []
    if t.gflops is not None:
        lines.append(f"{t.gflops:,.3g} GFLOP/s")
    if t.gbps is not None:
        lines.append(f"{t.gbps:,.3g} GB/s")
    if t.fraction_of_peak is not None and t.peak is not None:
        lines.append(f"{format_fraction(t.fraction_of_peak)} of peak ({escape(t.peak.source)})")
    return lines


def log_range(values: Iterable[float], pad: float = 0.25) -> list[float]:
    logs = [math.log10(v) for v in values if v and v > 0 and math.isfinite(v)]
    lo, hi = min(logs), max(logs)
    return [lo - pad, hi + pad]
