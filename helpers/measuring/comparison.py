"""compare(): several timings side by side with their speed-ups over the first; crossover(): the size from which
one way beats another for good.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from ..core.validate import finite
from .formats import format_fraction, format_seconds
from .record import Timing


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
