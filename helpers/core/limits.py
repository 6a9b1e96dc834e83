"""Time limits on a learner's code, so an endless loop ends a check or a benchmark instead of hanging a notebook.

    with time_limit(3.0, "your function"):
        learner(*case)          # TimeLimitExceeded after 3 s

It uses a real-time interval timer (SIGALRM), which exists on Linux and macOS (Colab, Binder, laptops) and
works in the main thread, where Jupyter runs every cell. Elsewhere (Windows, a thread of your own) there is no
limit, and the first attempt says so once. A call stuck inside native code (a BLAS routine, a compiler) cannot
be interrupted from Python: the limit takes effect when control comes back to Python.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from .validate import positive_number


class TimeLimitExceeded(BaseException):
    """The code under `time_limit` ran past its limit (`limit` says which, when limits nest).

    A BaseException, like KeyboardInterrupt, so that a learner's `except Exception:` cannot swallow it.
    """

    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        super().__init__(f"{limit.what} took longer than {limit.seconds:g} s")


@dataclass(eq=False)
class Limit:
    """One active limit: what it guards and when it ends (time.monotonic())."""

    what: str
    seconds: float
    deadline: float
    raised: bool = False  # once raised, a second alarm means the learner's code swallowed it (a bare `except:`)


_active: list[Limit] = []  # outermost first; the timer always fires at the nearest deadline
_said_unavailable: list[str] = []


def available() -> str:
    """'' when limits work here, otherwise why not (one short clause)."""
    if not hasattr(signal, "setitimer"):
        return "this system has no interval timer (Windows)"
    if threading.current_thread() is not threading.main_thread():
        return "the code runs outside the main thread"
    return ""


def _fire(signum: int, frame: FrameType | None) -> None:
    if frame is not None and frame.f_code.co_filename in _BOOKKEEPING:  # a limit is being entered or left: ending
        if _active:  # it half-way would leave a limit behind or the handler not put back; try again shortly
            signal.setitimer(signal.ITIMER_REAL, _AGAIN)
        return
    due = [limit for limit in _active if limit.deadline <= time.monotonic() + 1e-3]
    if due:  # the outermost expired limit: the context it guards must end
        limit = due[0]
        if limit.raised:  # swallowed: raise at the next line too, which also reaches an `except:` clause's body
            _raise_at_every_line(frame, limit)
        limit.raised = True
        signal.setitimer(signal.ITIMER_REAL, _AGAIN)  # and check again shortly, until the context ends
        raise TimeLimitExceeded(limit)
    _arm()


def _raise_at_every_line(frame: FrameType | None, limit: Limit) -> None:
    """Trace the running code so that its next line raises again: a raise inside `except:` is not caught there."""
    def tracer(traced: FrameType, event: str, arg: object) -> object:
        if event == "line" and limit in _active and traced.f_code.co_filename not in _BOOKKEEPING:
            raise TimeLimitExceeded(limit)
        return tracer

    if _Tracing.saved is _Tracing.NONE:
        _Tracing.saved = sys.gettrace()
    sys.settrace(tracer)
    while frame is not None:
        frame.f_trace, frame = tracer, frame.f_back


class _Tracing:
    """The trace function (a debugger's, coverage's) to put back when the limit that replaced it ends."""

    NONE = object()
    saved: object = NONE


def _stop_tracing() -> None:
    if _Tracing.saved is not _Tracing.NONE:
        sys.settrace(_Tracing.saved)  # type: ignore[arg-type]
        _Tracing.saved = _Tracing.NONE


#: Seconds between repeated alarms once a limit has expired and its context has not ended yet.
_AGAIN = 0.01
#: Where the timer must not raise: this module's and contextlib's code, which enter and leave limits.
_BOOKKEEPING = frozenset({__file__, contextlib.__file__})


#: The longest the timer is set for at once (a day): a longer limit is re-armed when it fires, so any limit works
#: whatever the system's largest timer.
_LONGEST_TIMER = 86400.0


def _arm() -> None:
    """Set the timer to the nearest deadline (or switch it off)."""
    delay = min(limit.deadline for limit in _active) - time.monotonic() if _active else 0.0
    signal.setitimer(signal.ITIMER_REAL, min(max(delay, 1e-4), _LONGEST_TIMER) if _active else 0.0)


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[Limit | None]:
    """Raise TimeLimitExceeded if the body runs longer than `seconds` (see the module's notes).

    Yields the Limit (None where limits are unavailable): with nested limits, compare `exc.limit` with it to
    tell your own limit from an outer one. Where limits are unavailable the body runs without one, and the
    first such call prints why, once.
    """
    seconds = positive_number("seconds", seconds)
    why = available()
    if why:
        if not _said_unavailable:
            _said_unavailable.append(why)
            print(f"Note: no time limits here ({why}): code that never ends will hang this cell; interrupt it "
                  "with Kernel > Interrupt.")
        yield None
        return
    limit = Limit(what, seconds, time.monotonic() + seconds)
    previous = signal.signal(signal.SIGALRM, _fire) if not _active else None
    try:
        _active.append(limit)
        _arm()
        _raise_if_due()
        yield limit
    finally:
        _active.remove(limit)
        _arm()
        if previous is not None:
            _stop_tracing()
            signal.signal(signal.SIGALRM, previous)
    _raise_if_due()


def _raise_if_due() -> None:
    """Raise for the outermost limit that fell due while a limit was entered or left (when the timer defers)."""
    now = time.monotonic()
    for limit in _active:
        if limit.deadline <= now:
            limit.raised = True
            raise TimeLimitExceeded(limit)
