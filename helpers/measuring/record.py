"""Timing: what benchmark() measured, per-call seconds of every sample with the first call apart, and the roofs it
is judged by; the statistics a chapter quotes (median, spread, two modes) and how it prints in a notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np

from .formats import format_fraction, format_seconds
from .hardware import Peak

#: Spread (IQR / median) above which a timing is flagged as noisy.
NOISY_SPREAD = 0.25
#: How far apart two modes of a timing must be (slow over fast) to count as two, not as noise.
MODE_GAP = 1.25
#: A steady timing of a large float32 matrix product (disturbed.BUSY_MIN_SIDE on every side) under this share of
#: what ONE core reached in cpu.py's calibration is far below what the machine can do: all cores together should
#: do at least as well as one. The margin of 4 covers a 256 product's lower efficiency, one core boosting above all
#: cores together, and BLAS's thread start-up. On a 2-core VM whose one core calibrated at 135 GFLOP/s, chapter
#: 00's 256 product reached 57% of that; a busy 512 product 8%.
BUSY_SHARE = 0.25


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
