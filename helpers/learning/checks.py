"""Exercise checkers: run the learner's code against a reference on awkward inputs and say what went wrong.

A checker never raises at the learner: whatever the learner's code does (raise, return the wrong kind of
thing, print, run forever), it prints one verdict. An untouched exercise (its body still raises
NotImplementedError, or holds `...`) gets a gentle "not attempted yet", so a notebook still runs top to bottom.
What the author gets wrong (no cases, a reference that fails) raises, so the tests catch it.

Results are judged by kind first: a number must be a real number (not a string, a bool, a complex number or
one too large for a float), a bool a bool, an array an array of real numbers of the expected shape. The learner
and the reference each get their own copy of every input, and the reference's answer is computed first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from ..core.backend import to_numpy
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.validate import positive_number

#: Seconds a learner's code may run per case before the check calls it an endless loop.
TIME_LIMIT = 5.0


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


class _Untouched(Exception):
    """The learner's code still holds the exercise stub."""


def _short(value: Any) -> str:
    """A short description of any value; never raises."""
    try:
        if hasattr(value, "shape") and not isinstance(value, np.generic):
            text = np.array2string(np.asarray(to_numpy(value)), threshold=6, precision=4)
        else:
            text = repr(value)
    except Exception:  # noqa: BLE001 - a learner's object whose repr fails is still described
        text = f"<{type(value).__name__}>"
    return text if len(text) < 160 else text[:157] + "..."


def describe(value: Any) -> str:
    """A short description of any value for a verdict (its kind and a few of its numbers); never raises."""
    return _short(value)


def _kind(value: Any) -> str:
    """'bool', 'number', 'array' or 'other': how a result is judged."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, Real):
        return "number"
    if hasattr(value, "shape") and getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        kind = np.dtype(value.dtype).kind
        return "bool" if kind == "b" else "number" if kind in "iuf" else "other"
    if hasattr(value, "shape") or isinstance(value, list | tuple):
        return "array"
    return "other"


def _as_real_array(value: Any, want_bool: bool) -> tuple[np.ndarray | None, str]:
    """`value` as a float (or bool) array, or None and what is wrong with it."""
    try:
        array = np.asarray(to_numpy(value) if hasattr(value, "shape") else value)
    except (ValueError, TypeError, OverflowError):
        return None, "a ragged list (rows of different lengths) or values that are not numbers"
    kind = array.dtype.kind
    if want_bool:
        return (array, "") if kind == "b" else (None, f"an array of {array.dtype}, expected True/False values")
    if kind == "c":
        return None, "complex numbers, expected real ones"
    if kind == "b":
        return None, "True/False values, expected numbers"
    if kind not in "iuf":
        what = "numbers too large for a float" if kind == "O" and _all_ints(array) else f"{array.dtype} values"
        return None, f"{what}, expected real numbers"
    with np.errstate(over="ignore"):
        floats = array.astype(float)
    if np.isinf(floats).any() and not np.isinf(array).any():
        return None, "numbers too large for a float"
    return floats, ""


def _all_ints(array: np.ndarray) -> bool:
    return all(isinstance(item, int) for item in array.ravel())


def _judge(got: Any, want: Any, rtol: float, atol: float) -> str:
    """What is wrong with `got` as an answer where `want` is right: '' when nothing is."""
    kind, wanted = _kind(got), _kind(want)
    if wanted == "bool":
        if kind != "bool":
            return f"expected True or False, got {type(got).__name__} {_short(got)}"
        return "" if bool(got) == bool(want) else f"got {bool(got)}, expected {bool(want)}"
    if wanted == "number":
        return _judge_number(got, want, rtol, atol)
    if kind != "array":
        return f"expected an array like {_short(want)}, got {type(got).__name__} {_short(got)}"
    return _judge_array(got, want, rtol, atol)


def _judge_number(got: Any, want: Any, rtol: float, atol: float) -> str:
    """_judge where `want` is a number: a count exactly, any other number within the tolerances."""
    if _kind(got) != "number":
        extra = " (a string, not a number: remove the quotes)" if isinstance(got, str) else ""
        return f"expected a number like {_short(want)}, got {type(got).__name__} {_short(got)}{extra}"
    if _integral(want):  # a count: off by one is wrong however large it is
        return "" if _same_whole_number(got, want) else f"got {_short(got)}, expected exactly {int(want)}"
    try:
        got_value, want_value = float(got), float(want)
    except OverflowError:
        return f"got {_short(got)}, a number too large for a float; expected about {_short(want)}"
    if np.isclose(got_value, want_value, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    return f"got {got_value:.6g}, expected {want_value:.6g}"


def _judge_array(got: Any, want: Any, rtol: float, atol: float) -> str:
    """_judge where `want` is an array: same shape, True/False and counts exactly, other numbers within tolerance."""
    want_host = np.asarray(to_numpy(want) if hasattr(want, "shape") else want)
    want_bool = want_host.dtype.kind == "b"
    got_array, why = _as_real_array(got, want_bool)
    if got_array is None:
        return f"got {why}: {_short(got)}"
    want_array = want_host.astype(bool if want_bool else float)
    if got_array.shape != want_array.shape:
        return f"shape {got_array.shape}, expected {want_array.shape}"
    exact = want_bool or want_host.dtype.kind in "iu"  # True/False and counts: no tolerance
    same = got_array == want_array if exact else np.isclose(got_array, want_array, rtol=rtol, atol=atol,
                                                            equal_nan=True)
    if same.all():
        return ""
    if not got_array.ndim:
        return f"got {got_array[()]:.6g}, expected {want_array[()]:.6g}"
    bad = np.argwhere(~same)
    where = tuple(int(i) for i in bad[0])
    return (f"{len(bad)} of {want_array.size} values differ; first at index {where}: got {got_array[where]:.6g}, "
            f"expected {want_array[where]:.6g}")


def _integral(value: Any) -> bool:
    """Whether `value` is a whole-number type (an int, or a NumPy integer scalar or 0-d array), not a bool."""
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, int | np.integer):
        return True
    return getattr(value, "shape", None) == () and np.dtype(getattr(value, "dtype", object)).kind in "iu"


def _same_whole_number(got: Any, want: Any) -> bool:
    """Whether `got` is exactly the whole number `want` (12.0 counts as 12; 12.5 and 13 do not)."""
    value = got.item() if hasattr(got, "item") else got
    if isinstance(value, int):
        return value == int(want)
    try:
        return float(value).is_integer() and int(value) == int(want)
    except (OverflowError, ValueError, TypeError):
        return False


def _run_limited(code: Callable[[], Any], seconds: float, what: str) -> tuple[Any, str | None]:
    """(result, None) or (None, what went wrong) for the learner's `code`, run under a time limit.

    Raises _Untouched for an exercise stub. Only KeyboardInterrupt (the learner stopping the cell) gets through.
    """
    try:
        with time_limit(seconds, what) as limit:
            return code(), None
    except NotImplementedError:
        raise _Untouched from None
    except TimeLimitExceeded as exc:
        if limit is not None and exc.limit is not limit:
            raise
        return None, f"took longer than {seconds:g} s: is there an endless loop?"
    except Exception as exc:  # noqa: BLE001 - the learner's bug, reported plainly
        return None, f"raised {type(exc).__name__}: {exc}"


def _cases(cases: Any) -> list[tuple[Any, ...]]:
    """The author's cases as a list of tuples; an empty or malformed list is the author's error."""
    if isinstance(cases, str | bytes) or not isinstance(cases, Sequence) or not cases:
        raise ValueError("an exercise needs at least one case: cases=[(arg1, arg2, ...), ...]; got "
                         f"{_short(cases)}")
    if not all(isinstance(case, tuple) for case in cases):
        raise TypeError("each case is a tuple of the function's arguments, e.g. cases=[(3, 4), (1, 7)]")
    return list(cases)


def check_function(
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[tuple[Any, ...]],
    name: str | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    time_limit: float = TIME_LIMIT,
) -> Verdict:
    """Call `reference(*case)`, then `learner(*case)`, each on its own copy of every case; print the verdict.

    Use cases whose sizes are awkward (1, odd, not a multiple of a block size): that is where bugs live.
    `time_limit`: seconds the learner's function may take on one case.
    """
    cases = _cases(cases)
    time_limit = positive_number("time_limit (seconds per case)", time_limit)
    title = name or getattr(learner, "__name__", "your function")
    if learner is ... or learner is None:
        return _say(_untouched(title))
    if not callable(learner):
        return _say(Verdict(False, True, f"❌ {title}: expected a function, got {type(learner).__name__} "
                                         f"{_short(learner)}"))
    for i, case in enumerate(cases, 1):
        want = reference(*_copy(case))  # first, on its own copy: the learner cannot change the reference's inputs
        where = f"case {i} of {len(cases)}, {_describe(case)}"
        try:
            mine = _copy(case)
            got, failed = _run_limited(lambda: learner(*mine), time_limit, title)  # noqa: B023 - called at once
        except _Untouched:
            return _say(_untouched(title))
        if failed:
            return _say(Verdict(False, True, f"❌ {title} {failed} ({where})"))
        why = _safe_judge(got, want, rtol, atol)
        if why:
            return _say(Verdict(False, True, f"❌ {title}: wrong on {where}: {why}"))
    cases_text = "the 1 case" if len(cases) == 1 else f"all {len(cases)} cases"
    return _say(Verdict(True, True, f"✅ {title}: correct on {cases_text}."))


def check_value(got: Any, expected: Any, what: str, rtol: float = 0.02, atol: float = 0.0) -> Verdict:
    """Compare a learner's number (or array) with the expected one, within a relative tolerance."""
    if got is ... or got is None:
        return _say(Verdict(False, False, f"⏳ {what}: not attempted yet: replace the ... with your answer."))
    why = _safe_judge(got, expected, rtol, atol)
    if not why:
        return _say(Verdict(True, True, f"✅ {what}: {_short(got)} is right."))
    return _say(Verdict(False, True, f"❌ {what}: {why}. Tolerance: {rtol:.0%}."))


def check_answer(got: Any, problem: Callable[[Any], str | None], what: str,
                 time_limit: float = TIME_LIMIT) -> Verdict:
    """Judge an answer by a rule rather than one expected value: `problem(got)` says what is wrong, or None.

    For exercises with many right answers (shapes that fill a matrix unit, a layout over devices). `got` may be
    the learner's function, which `problem` calls (within `time_limit` seconds): a stub that still raises
    NotImplementedError is not attempted.
    """
    time_limit = positive_number("time_limit (seconds)", time_limit)
    if got is ... or got is None:
        return _say(_untouched(what))
    try:
        why, failed = _run_limited(lambda: problem(got), time_limit, what)
    except _Untouched:
        return _say(_untouched(what))
    if failed:
        judged = failed.removeprefix("raised ")
        why = failed if failed.startswith("took") else f"could not judge {_short(got)}: {judged}"
    if why:
        return _say(Verdict(False, True, f"❌ {what}: {why}"))
    return _say(Verdict(True, True, f"✅ {what}: right."))


def _safe_judge(got: Any, want: Any, rtol: float, atol: float) -> str:
    try:
        return _judge(got, want, rtol, atol)
    except Exception as exc:  # noqa: BLE001 - whatever the learner returned, a verdict, not a traceback
        return f"could not compare {type(got).__name__} {_short(got)} with {_short(want)} ({type(exc).__name__})"


def _copy(case: tuple[Any, ...]) -> tuple[Any, ...]:
    """A deep copy of the case's arguments (an argument that cannot be copied is passed as it is)."""
    out = []
    for argument in case:
        try:
            out.append(copy.deepcopy(argument))
        except Exception:  # noqa: BLE001 - e.g. a generator: nothing to protect
            out.append(argument)
    return tuple(out)


def _untouched(title: str) -> Verdict:
    return Verdict(False, False, f"⏳ {title}: not attempted yet. Fill in the cell above (replace the ... or the "
                                 "NotImplementedError), run it, then run this check again.")


def _describe(case: tuple[Any, ...]) -> str:
    parts = [f"shape {tuple(a.shape)}" if hasattr(a, "shape") and not isinstance(a, np.generic) else
             f"list of {len(a)}" if isinstance(a, list) else _short(a) for a in case]
    return "inputs: " + ", ".join(parts)


def _say(verdict: Verdict) -> Verdict:
    print(verdict.message)
    return verdict
