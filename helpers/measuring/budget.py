"""What every timer shares: the seconds of repeated timing a benchmark aims for (set once per chapter), the most
repeats any timer takes, and whether a timer is timing repeated calls right now.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from ..core.validate import positive_number

#: True while a timer's clock is running on repeated calls: checks that cost Python time (helpers.gpu.cupy_checked)
#: stay out of what is measured. The first call of a benchmark is not a timed region: it checks what it runs.
_TIMED: contextvars.ContextVar[bool] = contextvars.ContextVar("timed", default=False)


def in_timed_region() -> bool:
    """Whether a timer is now timing repeated calls, so a per-call check would be counted as the call's time."""
    return _TIMED.get()


@contextlib.contextmanager
def timed_region() -> Iterator[None]:
    """While the clock runs on repeated calls: in_timed_region() is True inside."""
    token = _TIMED.set(True)
    try:
        yield
    finally:
        _TIMED.reset(token)


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
