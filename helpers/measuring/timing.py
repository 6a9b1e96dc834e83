"""Honest timing, as the rest of helpers and the chapters import it: benchmark() and its Timing, compare(), the
formats, the budget and the warnings of a disturbed machine. Each lives in a module of its own:

    record (Timing)  formats (format_seconds, ...)  budget (set_timing_budget, in_timed_region)
    timer (benchmark, time_without_sync, TooSlow)  judging_peak (the roofs a timing is judged by)
    disturbed (NoisyTimingWarning, BusyMachineWarning, spread_shown)  comparison (compare, crossover)

This module only gathers them: import a name from here, or from its own module inside helpers.measuring.
"""

from __future__ import annotations

from .budget import MAX_REPEATS, in_timed_region, set_timing_budget, timing_budget
from .comparison import Comparison, compare, crossover
from .disturbed import BusyMachineWarning, NoisyTimingWarning, spread_shown
from .formats import format_fraction, format_range, format_seconds
from .record import BUSY_SHARE, NOISY_SPREAD, Timing
from .timer import MIN_SAMPLE_SECONDS, TooSlow, benchmark, time_without_sync

__all__ = ["BUSY_SHARE", "MAX_REPEATS", "MIN_SAMPLE_SECONDS", "NOISY_SPREAD", "BusyMachineWarning", "Comparison",
           "NoisyTimingWarning", "Timing", "TooSlow", "benchmark", "compare", "crossover", "format_fraction",
           "format_range", "format_seconds", "in_timed_region", "set_timing_budget", "spread_shown",
           "time_without_sync", "timing_budget"]
