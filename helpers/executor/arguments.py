"""A launch's shape and arguments, checked as a GPU would need them: the block and grid limits every NVIDIA GPU
has, and each argument against its parameter's C type (what CuPy would pass silently and the GPU misread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..measuring.specs import MAX_BLOCK_THREADS, MAX_STATIC_SHARED
from . import structs
from .c_types import CONVERSIONS, DTYPES, INTEGERS, VECTORS, CType
from .front import CudaCError

#: Threads that run in lock step on an NVIDIA GPU.
WARP_SIZE = 32
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
#: The most threads one launch may have on the CPU executor: a vector add of this many runs in about 1 s on a
#: 2-core machine, a 256 x 256 tiled matmul (65,536 threads, each looping 256 times) in about 3 s.
MAX_LAUNCH_THREADS = 2**22


def launch_shape(grid: Any, block: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The grid and the block as (x, y, z); a clear error for what no GPU launches."""
    grid3, block3 = _dims("grid", grid, MAX_GRID), _dims("block", block, MAX_BLOCK)
    threads = block3[0] * block3[1] * block3[2]
    if threads > MAX_BLOCK_THREADS:
        shown = block3[:len(block)] if isinstance(block, tuple | list) else block3[:1]
        raise ValueError(f"a block of {' x '.join(map(str, shown))} = {threads:,} threads: a block "
                         f"has at most {MAX_BLOCK_THREADS} threads; use more blocks instead")
    return grid3, block3


def executor_shape(grid: Any, block: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """_launch_shape, and no more threads than the CPU executor runs in reasonable time."""
    grid3, block3 = launch_shape(grid, block)
    total = int(np.prod(grid3)) * int(np.prod(block3))
    if total > MAX_LAUNCH_THREADS:
        raise ValueError(f"{total:,} threads in one launch: the CPU executor (no GPU here) runs at most "
                         f"{MAX_LAUNCH_THREADS:,}, checking every access; use a smaller size here")
    return grid3, block3


def _dims(what: str, value: Sequence[int] | int, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    items = (value,) if isinstance(value, int | np.integer) else value
    ok = isinstance(items, tuple | list) and 1 <= len(items) <= 3 and all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1 for v in items)
    if not ok:
        raise ValueError(f"{what} must be a tuple of 1 to 3 positive whole numbers, e.g. (4,) or (8, 8); got "
                         f"{value!r:.60}")
    dims = (*(int(v) for v in items), 1, 1)[:3]
    for axis, (v, limit) in enumerate(zip(dims, limits, strict=True)):
        if v > limit:
            raise ValueError(f"{what} {'xyz'[axis]} = {v:,}: at most {limit:,} in that dimension")
    return dims  # type: ignore[return-value]


def arguments(name: str, params: list[tuple[str, CType]], args: Sequence[Any], *, run: bool = True) -> list[Any]:
    """The values the kernel's parameters get: arrays as pointers, NumPy scalars as C values; a clear error when
    an argument does not match its parameter (what CuPy would pass silently, and the GPU read wrongly).
    run=False only checks, and takes any array with a dtype (a CuPy array, for a launch on a GPU)."""
    if not isinstance(args, tuple | list):
        raise TypeError(f"the kernel's arguments are a tuple, e.g. (a, b, out, np.int32(n)); got {args!r:.60}")
    if len(args) != len(params):
        wanted = ", ".join(f"{t} {p}" for p, t in params)
        raise TypeError(f"{name} takes {len(params)} arguments ({wanted}); got {len(args)}")
    values = []
    for i, ((pname, ctype), arg) in enumerate(zip(params, args, strict=True), 1):
        where = f"argument {i} ({ctype} {pname}) of {name}"
        if structs.value(ctype):
            values.append(structs.argument(where, ctype, arg))
            continue
        element, per = VECTORS.get(ctype.name, (ctype.name, 1))
        if per > 1 and not ctype.pointer:
            raise TypeError(f"{where}: the executor passes no vector by value; give its members as separate "
                            f"{element} parameters")
        want = np.dtype(DTYPES[element])
        if getattr(arg, "ndim", None) == 0 and not isinstance(arg, np.generic):  # CuPy passes any array by pointer
            raise TypeError(f"{where}: got a 0-d array; pass "
                            + (f"an array of {want} with one element or more (a.reshape(1))" if ctype.pointer
                               else f"a NumPy scalar, np.{want}(a.item()): CuPy would pass the array's address"))
        if ctype.pointer:
            values.append(_array(where, ctype, want, per, arg, run))
        else:
            values.append(_scalar(where, ctype, want, arg))
    return values


def _array(where: str, ctype: CType, want: np.dtype, per: int, arg: Any, run: bool) -> Any:
    """An array argument for a pointer parameter, checked: its dtype, kind, contiguity, and whole vectors."""
    array = arg if isinstance(arg, np.ndarray) or (not run and _device_array(arg)) else None
    if array is None:
        raise TypeError(f"{where}: expected an array of {want}, got {type(arg).__name__} {arg!r:.40}")
    if run and type(array) is not np.ndarray:  # np.matrix, a masked array: they index their own way
        raise TypeError(f"{where}: a {type(array).__name__}, not a plain NumPy array; pass np.asarray(a)")
    if array.dtype != want:
        raise TypeError(f"{where}: an array of {array.dtype}, but the kernel reads {want}: pass "
                        f"a.astype(np.{want}) (on a GPU the kernel would read the bytes as {want}: "
                        "wrong numbers, no error)")
    if per > 1 and array.size % per:
        raise TypeError(f"{where}: {array.size} elements of {want} are not whole {ctype.name}s ({per} "
                        f"each): pass an array whose size is a multiple of {per}")
    if not array.flags.c_contiguous:
        raise TypeError(f"{where}: the array is not contiguous (a transposed or sliced view?): pass "
                        "an ascontiguousarray(a) copy")
    return array


def _device_array(arg: Any) -> bool:
    """Whether `arg` looks like an array on a GPU (CuPy's): a dtype, a shape and contiguity flags."""
    return not isinstance(arg, np.generic) and all(hasattr(arg, a) for a in ("dtype", "shape", "flags"))


def _scalar(where: str, ctype: CType, want: np.dtype, arg: Any) -> Any:
    """A scalar argument as the kernel sees it. NumPy scalars must have the parameter's exact type. CuPy passes a
    Python int as a 64-bit integer and a Python float as a double, and the kernel reads its parameter's size of
    them: an int into any integer parameter is its low bytes (right while the value fits the parameter's type),
    a float fits only a double (into a float parameter it reads half a double's bytes: garbage)."""
    if type(arg) is int and ctype.name in INTEGERS and ctype.name != "bool":
        bits, signed = INTEGERS[ctype.name]
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if not low <= arg <= high:
            raise TypeError(f"{where}: the Python int {arg} does not fit a {ctype} ({low:,} to {high:,}); CuPy passes "
                            "it as a 64-bit integer and the kernel would read only its low bytes: a wrong number")
        return CONVERSIONS[f"_to_{ctype.name.replace(' ', '_')}"](arg)
    python = {int: ("long long", "unsigned long long"), float: ("double",), bool: ("bool",)}
    if type(arg) in python:
        if ctype.name not in python[type(arg)]:
            garbage = " (on a GPU the kernel reads 4 of the double's 8 bytes as a float: garbage)" if (
                type(arg) is float and ctype.name == "float") else ""
            raise TypeError(f"{where}: got the Python {type(arg).__name__} {arg!r}, which CuPy passes as a "
                            f"{'64-bit integer' if type(arg) is int else 'double' if type(arg) is float else 'bool'}"
                            f"; the kernel wants {ctype}: pass np.{want}({arg!r}){garbage}")
        return CONVERSIONS[f"_to_{ctype.name.replace(' ', '_')}"](arg)
    if isinstance(arg, np.generic):
        got = np.asarray(arg).dtype
        if got != want:
            raise TypeError(f"{where}: got a {got} scalar; the kernel wants {ctype}: pass np.{want}(...)")
        return CONVERSIONS[f"_to_{ctype.name.replace(' ', '_')}"](np.asarray(arg)[()])
    raise TypeError(f"{where}: expected a NumPy scalar np.{want}(...), got {type(arg).__name__} {arg!r:.40}")


MAX_SHARED_BYTES = MAX_STATIC_SHARED


def dynamic_shared_bytes(shared_mem: Any) -> int:
    """A launch's shared_mem= (bytes of extern __shared__ memory per block), checked."""
    if isinstance(shared_mem, bool) or not isinstance(shared_mem, int | np.integer) or shared_mem < 0:
        raise CudaCError(f"shared_mem= is a number of bytes (0 or more); got {shared_mem!r:.40}")
    if shared_mem > MAX_SHARED_BYTES:
        raise CudaCError(f"shared_mem={int(shared_mem):,} bytes: a block may use at most {MAX_SHARED_BYTES:,} bytes "
                         "(48 KiB) of shared memory unless the kernel opts in (in CuPy: kernel.max_dynamic_shared_"
                         "size_bytes = n); on a GPU this launch fails")
    return int(shared_mem)
