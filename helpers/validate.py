"""Argument checks the helpers share, so that every bad size or count gets the same clear message."""

from __future__ import annotations

import math
from numbers import Integral, Real


def positive_int(name: str, value: object, meaning: str = "") -> int:
    """`value` as an int if it is a whole number >= 1 (not a bool); otherwise a ValueError naming `name`.

    `meaning` (e.g. "a matrix dimension") is added in brackets after "positive integer" in the message.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(f"{name} must be a positive integer{what}, got {value!r}")
    return int(value)


def positive_number(name: str, value: object, meaning: str = "") -> float:
    """`value` as a float if it is a finite real number > 0 (not a bool); otherwise a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value <= 0:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(f"{name} must be a positive, finite number{what}, got {value!r}")
    return float(value)
