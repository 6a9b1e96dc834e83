"""CuPy's arrays on the CPU executor: NumPy arrays of what CuPy would hold (numbers and bools), and fresh memory
that holds garbage as a GPU's does (`cupy.empty` fills with NaN or -1). helpers.executor.cupy_cpu gives them
CuPy's names."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from .arguments import MAX_LAUNCH_THREADS

#: The most elements an ElementwiseKernel runs here: the executor's launch limit, so a call answers in seconds
#: (an array may hold 64 times as many).
MAX_ELEMENTS = MAX_LAUNCH_THREADS
#: The kinds of dtype CuPy's arrays hold: bools, signed and unsigned integers, floats and complex numbers.
NUMBER_KINDS = "biufc"


def _dtype(name: str, dtype: Any) -> np.dtype | None:
    """`dtype` as a NumPy dtype of numbers or bools (None stays None); a TypeError naming `name` for anything else,
    as CuPy, whose arrays hold no strings, objects or records, refuses it."""
    if dtype is None:
        return None
    try:
        found = np.dtype(dtype)
    except (TypeError, ValueError):
        found = None
    if found is None or found.kind not in NUMBER_KINDS or found.fields:
        raise TypeError(f"{name} must be a dtype of numbers such as np.float32 or 'int32' (CuPy's arrays hold bools, "
                        f"integers, floats and complex numbers); got {dtype!r:.40}")
    return found


def _array(name: str, a: Any, dtype: Any = None) -> np.ndarray:
    """A new NumPy array of `a`'s numbers, in `dtype`; a ValueError naming `name` for what CuPy would not take."""
    want = _dtype("dtype", dtype)
    try:
        array = np.array(a, dtype=want, copy=True)
    except (TypeError, ValueError, OverflowError):
        array = None
    if array is None or array.dtype.kind not in NUMBER_KINDS or array.dtype.fields:
        raise ValueError(f"{name} must be an array, a number or a list of numbers (rows of equal length), as CuPy "
                         f"takes; got {describe(a)}")
    return array


def asarray(a: Any, dtype: Any = None) -> np.ndarray:
    """A copy of `a` 'on the device' (CuPy copies host data to the GPU; here, to a new array)."""
    return _array("a", a, dtype)


def asnumpy(a: Any) -> np.ndarray:
    """A copy of a device array on the host (here, a NumPy copy)."""
    return _array("a", a)


def empty(shape: int | Sequence[int], dtype: Any = float) -> np.ndarray:
    """Uninitialised memory, as on a GPU: NaN for floats, -1 for integers (the largest value for unsigned ones),
    so a value never written shows."""
    dims = (shape,) if isinstance(shape, Integral) else tuple(shape) if isinstance(shape, tuple | list) else None
    if dims is None or any(isinstance(d, bool) or not isinstance(d, Integral) or d < 0 for d in dims):
        raise ValueError(f"shape must be a whole number of elements, zero or more, or a tuple of them; got "
                         f"{shape!r:.40}")
    if math.prod(int(d) for d in dims) > MAX_ELEMENTS * 64:
        raise ValueError(f"shape {shape!r:.60} is too large for the CPU stand-in (at most {MAX_ELEMENTS * 64:,} "
                         "elements)")
    want = _dtype("dtype", dtype) or np.dtype(float)
    return np.full(dims, np.nan if want.kind in "fc" else np.iinfo(want).max if want.kind == "u" else -1, dtype=want)


def empty_like(a: Any, dtype: Any = None) -> np.ndarray:
    """Uninitialised memory of `a`'s shape and (unless `dtype` is given) dtype, as cupy.empty_like."""
    a = a if isinstance(a, np.ndarray) else _array("a", a)
    return empty(a.shape, a.dtype if dtype is None else dtype)


def describe(value: Any) -> str:
    """A value as an error message names it: an array by its dtype and shape, anything else by its type and text."""
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype} and shape {value.shape}"
    return f"{type(value).__name__} {value!r:.40}"
