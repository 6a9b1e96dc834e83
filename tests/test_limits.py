"""Time limits: an endless loop ends in the limit's time, nested limits each end their own context, and where
there is no limit (outside the main thread) the code runs and the learner is told once."""

from __future__ import annotations

import signal
import sys
import threading
import time

import pytest

from helpers.core import limits
from helpers.core.limits import TimeLimitExceeded, time_limit


def _spin() -> None:
    while True:
        pass


def test_an_endless_loop_ends_at_the_limit_and_the_timer_is_put_back() -> None:
    before = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    with pytest.raises(TimeLimitExceeded, match="your loop took longer than 0.2 s"), time_limit(0.2, "your loop"):
        _spin()
    assert time.monotonic() - start < 2
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before


def test_a_quick_body_is_left_alone() -> None:
    with time_limit(5, "quick") as limit:
        total = sum(range(1000))
    assert total == 499500 and limit.what == "quick"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_except_exception_in_learner_code_cannot_swallow_the_limit() -> None:
    def stubborn() -> None:
        while True:
            try:
                _spin()
            except Exception:  # noqa: BLE001 - what a learner might write
                pass

    with pytest.raises(TimeLimitExceeded), time_limit(0.2, "stubborn"):
        stubborn()


def test_a_bare_except_cannot_swallow_the_limit_and_a_trace_function_is_put_back() -> None:
    def hidden() -> None:
        while True:
            try:
                sum(range(1000))
            except:  # noqa: E722 - what a learner might write: it catches even a BaseException
                pass

    def debugger(frame, event, arg):  # a debugger's or coverage's trace function
        return None

    previous = sys.gettrace()
    sys.settrace(debugger)
    try:
        start = time.monotonic()
        with pytest.raises(TimeLimitExceeded), time_limit(0.2, "hidden"):
            hidden()
        assert time.monotonic() - start < 2
        assert sys.gettrace() is debugger
    finally:
        sys.settrace(previous)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_limit_falling_due_while_another_is_entered_or_left_leaves_nothing_behind() -> None:
    before = signal.getsignal(signal.SIGALRM)
    for _ in range(100):  # the outer limit falls due at a random point of the inner limits' bookkeeping
        with pytest.raises(TimeLimitExceeded) as hit, time_limit(0.002, "outer") as outer:
            while True:
                with time_limit(10, "inner"):
                    pass
        assert hit.value.limit is outer
        assert not limits._active and signal.getsignal(signal.SIGALRM) is before
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_nested_limits_end_their_own_context() -> None:
    with time_limit(5, "outer") as outer:
        with pytest.raises(TimeLimitExceeded) as inner_hit, time_limit(0.1, "inner") as inner:
            _spin()
        assert inner_hit.value.limit is inner
        time.sleep(0.05)  # the outer limit is still armed and has not fired
    with pytest.raises(TimeLimitExceeded) as outer_hit, time_limit(0.2, "outer") as outer:
        with time_limit(30, "inner"):
            _spin()
    assert outer_hit.value.limit is outer
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_outside_the_main_thread_there_is_no_limit_and_it_is_said_once(monkeypatch, capsys) -> None:
    monkeypatch.setattr(limits, "_said_unavailable", [])
    ran = []

    def worker() -> None:
        for _ in range(2):
            with time_limit(0.01, "in a thread") as limit:
                time.sleep(0.05)
                ran.append(limit)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert ran == [None, None]
    assert capsys.readouterr().out.count("no time limits here (the code runs outside the main thread)") == 1


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), "3", True, None])
def test_a_limit_must_be_a_positive_finite_number(seconds: object) -> None:
    with pytest.raises(ValueError, match="seconds must be a positive, finite number"), time_limit(seconds, "x"):
        pass


def test_a_limit_longer_than_any_timer_works_and_leaves_nothing_behind() -> None:
    with time_limit(1e30, "forever") as limit:
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= limits._LONGEST_TIMER
    assert limit.seconds == 1e30 and limits._active == []
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
