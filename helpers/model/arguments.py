"""The model's checks of its arguments: a one-line error naming what is accepted, shared by every part."""

from __future__ import annotations

import numpy as np

from ..core.validate import finite


def _amount(name: str, value: object, positive: bool = False) -> float:
    """A finite number of FLOPs, bytes or seconds, zero or more (positive: more than zero)."""
    if isinstance(value, bool) or not finite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be a finite number, {'more than zero' if positive else 'zero or more'}; "
                         f"got {value!r:.40}")
    return float(value)  # type: ignore[arg-type]


def _choice(name: str, value: object, accepted: tuple[str, ...] | dict[str, object]) -> str:
    """`value` if it is one of the `accepted` names (a str: a list or an array is not a name); else a ValueError."""
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, accepted))}; got {value!r:.40}")
    return str(value)


def _count(name: str, value: object) -> int:
    """A whole number, zero or more."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be a whole number, zero or more; got {value!r:.40}")
    return int(value)
