"""How a measured quantity reads: a duration with a unit that keeps 3 significant digits, a range of two, and a
fraction of peak as a percentage. No measurement (None, NaN, infinity) reads '-'.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

from ..core.validate import finite


def _measured(name: str, value: Any) -> float | None:
    """A quantity to format: None when there is none (None, NaN, infinity); a ValueError for a negative or
    non-numeric one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r:.40}")
    if not finite(value):
        return None
    if value < 0:
        raise ValueError(f"{name} must be zero or more, got {value!r}")
    return float(value)


def format_seconds(seconds: float) -> str:
    """A duration with a unit that keeps 3 significant digits: '812 ns', '4.20 ms', '1.50 s', '2.1 h'.

    None, NaN or infinity (no measurement) give '-'; a negative or non-numeric duration is a ValueError.
    """
    seconds = _measured("seconds", seconds)
    if seconds is None:
        return "-"
    for unit, scale in (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3)):
        if seconds < scale * 1000:
            return f"{seconds / scale:.3g} {unit}"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / (365.25 * 86400):.3g} years"


def format_range(low: float, high: float) -> str:
    """A prediction that is a range: '12.1 µs to 112 µs', or one duration where both ends show the same."""
    low_text, high_text = format_seconds(low), format_seconds(high)
    if low_text != high_text and low > high:
        raise ValueError(f"a range runs from low to high; got {low_text} to {high_text}")
    return low_text if low_text == high_text else f"{low_text} to {high_text}"


def format_fraction(fraction: float | None) -> str:
    """A fraction of peak as a percentage with enough digits to be non-zero: '87.3%', '0.0134%'."""
    fraction = _measured("fraction", fraction)
    if fraction is None:
        return "-"
    if fraction == 0 or fraction >= 0.001:
        return f"{fraction:.1%}"
    return f"{fraction * 100:.3g}%"
