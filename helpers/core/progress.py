"""How far a long run of measurements is, and about how long is left: one line before each case.

    progress = Progress(total=75, budget=0.5, time_limit=150)
    print(progress.line())   # [1/75, 0:00 so far, about 1:53 left]
    ... measure ...
    progress.done(seconds)

The estimate comes from the budget and the cases left: each case costs its timing budget plus what the cases so
far took beyond theirs (a first call, making the data, a compile), never more than the time limit leaves.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Before any case has run, what one is taken to cost beyond its timing budget, in seconds.
FIRST_GUESS = 1.0


def clock_text(seconds: float) -> str:
    """Seconds as minutes and seconds on a clock: 83.4 -> '1:23'."""
    whole = max(round(seconds), 0)
    return f"{whole // 60}:{whole % 60:02d}"


@dataclass
class Progress:
    """A run of `total` cases, each timed for `budget` seconds, within `time_limit` seconds (None: no limit)."""

    total: int
    budget: float
    time_limit: float | None = None
    clock: Callable[[], float] = time.perf_counter
    seconds: list[float] = field(default_factory=list)  # each finished case's wall time
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        """Seconds since the run began."""
        return self.clock() - self.started

    def done(self, seconds: float) -> None:
        """A case finished after `seconds`."""
        self.seconds.append(seconds)

    def left(self) -> float:
        """About how many seconds the cases left take: each its budget plus the mean overhead so far."""
        over = [max(s - self.budget, 0.0) for s in self.seconds]
        per_case = self.budget + (sum(over) / len(over) if over else FIRST_GUESS)
        estimate = (self.total - len(self.seconds)) * per_case
        return estimate if self.time_limit is None else min(estimate, max(self.time_limit - self.elapsed(), 0.0))

    def out_of_time(self) -> bool:
        """Whether the time limit is spent (a case not yet begun should then not begin)."""
        return self.time_limit is not None and self.elapsed() >= self.time_limit

    def line(self) -> str:
        """'[12/75, 0:34 so far, about 1:20 left]', for the case about to begin."""
        return (f"[{min(len(self.seconds) + 1, self.total)}/{self.total}, {clock_text(self.elapsed())} so far, "
                f"about {clock_text(self.left())} left]")
