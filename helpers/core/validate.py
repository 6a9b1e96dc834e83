"""Argument checks the helpers share, so that every bad size or count gets the same clear message."""

from __future__ import annotations

import math
import os
from numbers import Integral, Real
from pathlib import Path

import numpy as np

#: The largest count or size the helpers accept: the largest whole number a float holds exactly (about 9e15),
#: so that every count can become a float (a rate, a time) without overflowing or rounding.
LARGEST = 2**53


def positive_int(name: str, value: object, meaning: str = "") -> int:
    """`value` as an int if it is a whole number from 1 to LARGEST (not a bool); otherwise a ValueError naming
    `name`. `meaning` (e.g. "a matrix dimension") is added in brackets after "positive integer" in the message.
    """
    what = f" ({meaning})" if meaning else ""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer{what}, got {value!r:.40}")
    if value > LARGEST:
        raise ValueError(f"{name} must be a positive integer{what} of at most {LARGEST:,} (2**53), got {value!r:.40}")
    return int(value)


def flag(name: str, value: object) -> bool:
    """`value` as a bool if it is True or False (NumPy's too); otherwise a TypeError naming `name`: a string such
    as "no" is truthy, and would silently mean True."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r:.40}")
    return bool(value)


def seed(value: object) -> int:
    """`value` as a random seed NumPy accepts: a whole number from 0 to 2**32 - 1; otherwise a ValueError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or not 0 <= value < 2**32:
        raise ValueError(f"seed must be a whole number from 0 to 2**32 - 1, got {value!r:.40}")
    return int(value)


def finite(value: object) -> bool:
    """Whether `value` is a real number (not a bool) that is finite as a float."""
    try:
        return not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def fraction(name: str, value: object, meaning: str = "") -> float:
    """`value` as a float if it is a real number from 0 to 1 (not a bool); otherwise a ValueError naming `name`."""
    if not finite(value) or not 0 <= value <= 1:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(f"{name} must be a number from 0 to 1{what}; got {value!r:.40}")
    return float(value)


def positive_number(name: str, value: object, meaning: str = "") -> float:
    """`value` as a float if it is a finite real number > 0 (not a bool); otherwise a ValueError naming `name`."""
    if not finite(value) or value <= 0:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(f"{name} must be a positive, finite number{what}, got {value!r:.40}")
    return float(value)


def available_memory() -> int | None:
    """Bytes of memory this process can still use: free physical memory, capped by a container's limit (as on
    Binder's 2 GB), or None where the system does not say."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # macOS has no SC_AVPHYS_PAGES: total memory is the bound
        try:
            free = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit, usage = (Path(f).read_text().strip() for f in (limit_file, usage_file))
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit() and int(limit) < 1 << 60:
            free = min(free, int(limit) - int(usage))
        break
    return max(free, 0)


def fits_in_memory(nbytes: int, what: str) -> None:
    """A ValueError saying so when `what` needs more than the memory available here (unknown: no check)."""
    free = available_memory()
    if free is not None and nbytes > free:
        raise ValueError(f"{what} needs {nbytes / 1e9:,.2f} GB of memory, but about {free / 1e9:,.2f} GB is "
                         "available here: use a smaller size")
