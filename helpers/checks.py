"""Exercise checkers: run the learner's code against a reference on awkward inputs and say what went wrong.

A checker never raises at the learner: it prints one verdict. An untouched exercise (its body still raises
NotImplementedError) gets a gentle "not attempted yet", so a notebook still runs top to bottom.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backend import to_numpy


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: passed or not, and the message shown to the learner."""

    passed: bool
    attempted: bool
    message: str

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Show nothing: the checker already printed the message (a bare check call must not say it twice)."""

    def __bool__(self) -> bool:
        return self.passed


def _short(value: Any) -> str:
    text = np.array2string(np.asarray(value), threshold=6, precision=4) if _is_arraylike(value) else repr(value)
    return text if len(text) < 160 else text[:157] + "..."


def _is_arraylike(value: Any) -> bool:
    return hasattr(value, "shape") or isinstance(value, (list, tuple))


def _close(got: Any, want: Any, rtol: float, atol: float) -> tuple[bool, str]:
    try:
        got_arr = np.asarray(to_numpy(got), dtype=float)
        want_arr = np.asarray(to_numpy(want), dtype=float)
    except (TypeError, ValueError):
        return False, f"expected something like {_short(want)}, got {type(got).__name__} {_short(got)}"
    if got_arr.shape != want_arr.shape:
        return False, f"shape {got_arr.shape}, expected {want_arr.shape}"
    if not np.allclose(got_arr, want_arr, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(got_arr, want_arr, rtol=rtol, atol=atol, equal_nan=True))
        where = tuple(int(i) for i in bad[0]) if got_arr.ndim else ()
        first = f" first at index {where}: got {got_arr[where]:.6g}, expected {want_arr[where]:.6g}" if got_arr.ndim \
            else f" got {float(got_arr):.6g}, expected {float(want_arr):.6g}"
        return False, f"{len(bad)} of {max(1, want_arr.size)} values differ;{first}"
    return True, ""


def check_function(
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[tuple[Any, ...]],
    name: str | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Verdict:
    """Call `learner(*case)` and `reference(*case)` for every case; print and return the verdict.

    Use cases whose sizes are awkward (1, odd, not a multiple of a block size): that is where bugs live.
    """
    title = name or getattr(learner, "__name__", "your function")
    for i, case in enumerate(cases, 1):
        try:
            got = learner(*case)
        except NotImplementedError:
            return _say(Verdict(False, False, f"⏳ {title}: not attempted yet. Fill in the cell above, run it, "
                                              "then run this check again."))
        except Exception as exc:  # the learner's bug, reported plainly
            return _say(Verdict(False, True, f"❌ {title} raised {type(exc).__name__}: {exc} "
                                             f"(case {i} of {len(cases)}, {_describe(case)})"))
        ok, why = _close(got, reference(*case), rtol, atol)
        if not ok:
            where = f"case {i} of {len(cases)} ({_describe(case)})"
            return _say(Verdict(False, True, f"❌ {title}: wrong on {where}: {why}"))
    cases_text = "the 1 case" if len(cases) == 1 else f"all {len(cases)} cases"
    return _say(Verdict(True, True, f"✅ {title}: correct on {cases_text}."))


def check_value(got: Any, expected: Any, what: str, rtol: float = 0.02, atol: float = 0.0) -> Verdict:
    """Compare a learner's number (or array) with the expected one, within a relative tolerance."""
    if got is ... or got is None:
        return _say(Verdict(False, False, f"⏳ {what}: not attempted yet: replace the ... with your answer."))
    ok, why = _close(got, expected, rtol, atol)
    if ok:
        return _say(Verdict(True, True, f"✅ {what}: {_short(got)} is right."))
    return _say(Verdict(False, True, f"❌ {what}: {why}. Tolerance: {rtol:.0%}."))


def check_answer(got: Any, problem: Callable[[Any], str | None], what: str) -> Verdict:
    """Judge an answer by a rule rather than one expected value: `problem(got)` says what is wrong, or None.

    For exercises with many right answers (shapes that fill a matrix unit, a layout over devices). `got` may be
    the learner's function, which `problem` calls: a stub that still raises NotImplementedError is not attempted.
    """
    untouched = Verdict(False, False, f"⏳ {what}: not attempted yet. Fill in the cell above (replace the ... or "
                                      "the NotImplementedError), run it, then run this check again.")
    if got is ... or got is None:
        return _say(untouched)
    try:
        why = problem(got)
    except NotImplementedError:
        return _say(untouched)
    except Exception as exc:  # an answer of the wrong kind, reported plainly
        why = f"could not judge {_short(got)}: {type(exc).__name__}: {exc}"
    if why:
        return _say(Verdict(False, True, f"❌ {what}: {why}"))
    return _say(Verdict(True, True, f"✅ {what}: right."))


def _describe(case: tuple[Any, ...]) -> str:
    parts = [f"shape {tuple(a.shape)}" if hasattr(a, "shape") else
             f"list of {len(a)}" if isinstance(a, list) else _short(a) for a in case]
    return "inputs: " + ", ".join(parts)


def _say(verdict: Verdict) -> Verdict:
    print(verdict.message)
    return verdict
