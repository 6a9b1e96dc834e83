"""C's operators and math on lanes: what the translated code calls for logic that runs one side only for some
lanes (&&, ||, ?:), arithmetic that can fault (a division by zero, a shift out of range), pointer arithmetic and
casts (checked for alignment), bit casts and bit intrinsics, and the math library on NumPy's functions.

Each takes the batch's lanes (`c`) and the mask arguments (m, b: see helpers.executor.masks) where it can fault,
so a fault names the first active thread that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .batch import Batch, first
from .c_types import CONVERSIONS
from .errors import KernelFault
from .masks import _and, _andnot, _any, _eff
from .memory import Pointer, SharedRef


def _i(q: Any) -> Any:
    """A truth value as C's int 0 or 1."""
    return q.astype(np.int32) if isinstance(q, np.ndarray) else (1 if q else 0)


def _not(q: Any) -> Any:
    return ~q if isinstance(q, np.ndarray) else not q


def _land(a: Any, right: Callable[[Any], Any], m: Any, b: Any) -> Any:
    """a && right: right runs only for the lanes where a holds."""
    on = _and(m, b, a)
    if not _any(on) or (isinstance(on, np.ndarray) and not on.any()):
        return a if isinstance(a, np.ndarray) else False
    return a & right(on) if isinstance(a, np.ndarray) else right(on)


def _lor(a: Any, right: Callable[[Any], Any], m: Any, b: Any) -> Any:
    """a || right: right runs only for the lanes where a fails."""
    off = _andnot(m, b, a)
    if isinstance(off, np.ndarray) and not off.any():
        return a if isinstance(a, np.ndarray) else True
    if not isinstance(a, np.ndarray):
        return True if a else right(off)
    return a | right(off)


def _tern(c: Batch, q: Any, yes: Callable[[Any], Any], no: Callable[[Any], Any], m: Any, b: Any) -> Any:
    """q ? yes : no, each side run only by the lanes that take it."""
    if not isinstance(q, np.ndarray):
        return yes(m) if q else no(m)
    on, off = _and(m, b, q), _andnot(m, b, q)
    a = yes(on) if on.any() or not off.any() else None  # no lane on either side: a value nobody reads
    z = no(off) if off.any() else None
    if a is None or z is None:
        return a if z is None else z
    return _where(q, a, z)


def _where(q: Any, a: Any, z: Any) -> Any:
    """Per lane, `a` where q holds, else `z`: member by member for a struct or vector."""
    if isinstance(a, tuple):
        return tuple(_where(q, x, y) for x, y in zip(a, z, strict=True))
    return np.where(q, a, z)


def _fl(c: Batch, flops: int, m: Any, b: Any, value: Any) -> Any:
    c.counters.flops += flops * c.count(_eff(m, b))
    return value


def _fell_off(c: Batch, m: Any, b: Any) -> None:
    if _any(_eff(m, b)):
        raise KernelFault("missing return", "a __device__ function that returns a value ended without a return")


def _shift(c: Batch, a: Any, op: str, n: Any, bits: int, line: int, m: Any, b: Any) -> Any:
    """a << n or a >> n, with C's rule that the count is from 0 to the width less 1 (anything else is undefined:
    a GPU gives one answer, a CPU another)."""
    e = _eff(m, b)
    wrong = (n < 0) | (n >= bits)
    if e is not None and isinstance(wrong, np.ndarray):
        wrong = wrong & e
    if np.any(wrong):
        lane = first(np.broadcast_to(wrong, (c.lanes,)))
        av, nv = (int(np.broadcast_to(v, (c.lanes,))[lane]) for v in (a, n))
        raise c.fault("shift count out of range", f"computes {av} {op} {nv}, a shift of a {bits}-bit integer by "
                      f"{nv}; C allows 0 to {bits - 1} (anything else is undefined behaviour: a GPU and a CPU give "
                      "different answers)", line, lane)
    if isinstance(a, int) and isinstance(n, int):
        return a << n if op == "<<" else a >> n
    n = np.where(wrong, 0, n) if isinstance(wrong, np.ndarray) else n
    a = np.asarray(a)
    n = np.asarray(n).astype(a.dtype) if a.dtype.kind in "iu" else n
    return np.left_shift(a, n) if op == "<<" else np.right_shift(a, n)


def _idiv(bits: int, signed: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    wrap = CONVERSIONS[{(32, True): "_to_int", (32, False): "_to_unsigned_int", (64, True): "_to_long_long",
                        (64, False): "_to_unsigned_long_long"}[bits, signed]]

    def quotient(c: Batch, a: Any, d: Any, line: int, m: Any, b: Any) -> Any:
        zero = d == 0
        e = _eff(m, b)
        hit = zero if e is None or not isinstance(zero, np.ndarray) else zero & e
        if np.any(hit) and _any(e) and (e is None or e.any()):
            lane = first(np.broadcast_to(hit if isinstance(hit, np.ndarray) else e if e is not None else True,
                                                (c.lanes,)))
            raise c.fault("division by zero", "divides by zero (an integer division or %)", line, lane)
        if isinstance(a, int) and isinstance(d, int):
            if d == 0:
                return a
            q = abs(a) // abs(d)
            return wrap(q if (a < 0) == (d < 0) else -q)
        kind = np.int64 if signed else np.uint64
        a64 = np.asarray(a).astype(kind)
        d64 = np.where(zero, 1, np.asarray(d)).astype(kind)
        q = a64 // d64  # floor division; C truncates toward zero
        if signed:
            r = a64 - q * d64
            q = q + ((r != 0) & ((a64 < 0) != (d64 < 0)))
        return wrap(q)

    def remainder(c: Batch, a: Any, d: Any, line: int, m: Any, b: Any) -> Any:
        q = quotient(c, a, d, line, m, b)
        if isinstance(q, int) and isinstance(d, int):
            return wrap(a - d * q)
        return wrap(np.asarray(a).astype(np.int64 if signed else np.uint64)
                    - np.asarray(d).astype(np.int64 if signed else np.uint64) * np.asarray(q))
    return quotient, remainder


def _offset(c: Batch, p: Any, index: Any, line: int, m: Any, b: Any, sign: int = 1) -> Pointer:
    """p + index (or p - index): offsets in 64 bits, so an unsigned index never wraps a pointer around."""
    step = np.add if sign > 0 else np.subtract
    if isinstance(p, SharedRef):
        return SharedRef(p.array, step(p.offset, index, dtype=np.int64))
    if not isinstance(p, Pointer):
        raise c.fault("bad pointer", "did arithmetic on a pointer that points nowhere", line, c.first(_eff(m, b)))
    return Pointer(p.alloc, step(p.offset, index, dtype=np.int64), p.name, p.start, p.writable)


def _isnull(p: Any) -> bool:
    """p == nullptr (the executor's pointers are null in every lane or in none)."""
    return p is None



def _vptr(c: Batch, p: Any, n: int, line: int, m: Any, b: Any) -> Any:
    """`p` seen as a pointer to vectors of n elements: a fault where a lane's address is not a multiple of n."""
    if not isinstance(p, Pointer | SharedRef):
        raise c.fault("bad pointer", "cast a pointer that points nowhere", line, c.first(_eff(m, b)))
    _aligned(c, p, p.offset, n, f"{n * _source(p).data.itemsize}-byte vectors", line, m, b)
    return p


def _retype(c: Batch, p: Any, ctype: str, line: int, m: Any, b: Any) -> Any:
    """`p` seen as a pointer to `ctype` (reinterpret_cast<float*>(bytes)): the same bytes as elements of that
    type, a fault where a lane's address is not a multiple of its size."""
    if not isinstance(p, Pointer | SharedRef):
        raise c.fault("bad pointer", "cast a pointer that points nowhere", line, c.first(_eff(m, b)))
    old = _source(p)
    view = old.view(ctype, line) if isinstance(p, SharedRef) else old.view(ctype)
    size, was = view.data.itemsize, old.data.itemsize
    byte = p.offset * was if isinstance(p.offset, int) else np.multiply(p.offset, was, dtype=np.int64)
    if size > was:
        _aligned(c, p, byte, size, f"{ctype} ({size} bytes)", line, m, b, unit=1)
    offset = byte // size
    if isinstance(p, SharedRef):
        return SharedRef(view, offset)
    return Pointer(view, offset, p.name, p.start * was // size, p.writable)


def _source(p: Pointer | SharedRef) -> Any:
    """The array or allocation a pointer points into."""
    return p.array if isinstance(p, SharedRef) else p.alloc


def _aligned(c: Batch, p: Pointer | SharedRef, where: Any, n: int, what: str, line: int, m: Any, b: Any,
             unit: int | None = None) -> None:
    """A "misaligned address" fault where an active lane's `where` (in elements, or bytes: unit=1) is not a
    multiple of n: a cast to a pointer to `what`, whose elements start at a multiple of their size."""
    bad = np.broadcast_to(np.asarray(where) % n != 0, (c.lanes,))
    e = _eff(m, b)
    bad = bad & (e if e is not None else c.real if c.real is not None else True)
    if not bad.any():
        return
    lane = int(np.flatnonzero(bad)[0])
    data, name, start = (p.array.data, p.array.name, 0) if isinstance(p, SharedRef) else \
        (p.alloc.data, p.name, p.start)
    unit = data.itemsize if unit is None else unit
    at = int(np.broadcast_to(where, (c.lanes,))[lane])
    place = f"byte {at - start * data.itemsize}" if unit == 1 else f"element {at - start}"
    raise c.fault("misaligned address", f"casts a pointer to {place} of {name} to a pointer to {what}, which must "
                  f"start at a multiple of {n * unit} bytes: on a GPU, \"misaligned address\"", line, lane)


def _fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once: exact in double for float operands (a float's product fits a double's 53 bits)."""
    dtype = np.asarray(a).dtype
    if dtype == np.float32:
        return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32) if np.ndim(a) or np.ndim(b) \
            or np.ndim(c) else np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    return a * b + c


def _mul24(a: Any, b: Any, signed: bool) -> Any:
    """The product of the low 24 bits of a and b (sign-extended when signed), in 64 bits (the caller keeps 32)."""
    def low(x: Any) -> Any:
        x = np.asarray(x).astype(np.int64) & 0xFFFFFF
        return np.where(x >= 1 << 23, x - (1 << 24), x) if signed else x
    return low(a) * low(b)


def _bits(x: Any, frm: str, to: str) -> Any:
    """x (of dtype `frm`) with its bits read as dtype `to` (__float_as_int, __int_as_float, ...)."""
    out = np.array(x, dtype=frm).view(to)
    return out if np.ndim(x) else (int(out[()]) if out.dtype.kind in "iu" else out[()])


def _unsigned(x: Any, bits: int) -> np.ndarray:
    """x's bits as an unsigned 64-bit array (the low `bits` of them)."""
    return np.asarray(x).astype(np.int64).astype(np.uint64) & np.uint64((1 << bits) - 1)


def _bit_popc(x: Any, bits: int) -> Any:
    """__popc, __popcll: the number of bits set."""
    v = _unsigned(x, bits)
    count = np.zeros(v.shape, np.int64)
    for _ in range(bits // 8):
        count += _BYTE_BITS[(v & np.uint64(0xFF)).astype(np.int64)]
        v = v >> np.uint64(8)
    return count if count.ndim else int(count)


def _bit_length(v: np.ndarray) -> np.ndarray:
    """The number of bits up to the highest one set (0 for 0), exactly for any 64-bit value."""
    high, low = (v >> np.uint64(32)).astype(np.float64), (v & np.uint64(0xFFFFFFFF)).astype(np.float64)
    return np.where(high > 0, 32 + np.frexp(high)[1], np.frexp(low)[1]).astype(np.int64)


def _bit_clz(x: Any, bits: int) -> Any:
    """__clz, __clzll: the leading zero bits."""
    out = bits - _bit_length(_unsigned(x, bits))
    return out if np.ndim(out) else int(out)


def _bit_ffs(x: Any, bits: int) -> Any:
    """__ffs, __ffsll: the position of the lowest bit set, from 1; 0 when none is."""
    v = _unsigned(x, bits)
    out = _bit_length(v & (~v + np.uint64(1)))
    return out if np.ndim(out) else int(out)


def _bit_brev(x: Any, bits: int) -> Any:
    """__brev, __brevll: the bits in reverse order."""
    v, out = _unsigned(x, bits), np.zeros(np.shape(x), np.uint64)
    for k in range(bits):
        out |= ((v >> np.uint64(k)) & np.uint64(1)) << np.uint64(bits - 1 - k)
    return out if np.ndim(out) else int(out)


_BYTE_BITS = np.array([bin(k).count("1") for k in range(256)], np.int64)


def _round(x: Any) -> Any:
    """C's roundf/round: halves away from zero (NumPy rounds them to even)."""
    return np.copysign(np.floor(np.abs(x) + np.asarray(x).dtype.type(0.5)), x)



def _runtime() -> dict[str, Any]:
    """The operators, math functions and intrinsics the translated code calls, by the names it calls them."""
    names: dict[str, Any] = {}
    for bits, signed, type_name in ((32, True, "int"), (32, False, "unsigned_int"), (64, True, "long_long"),
                                    (64, False, "unsigned_long_long")):
        names[f"_idiv_{type_name}"], names[f"_imod_{type_name}"] = _idiv(bits, signed)
    math = {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
            "rsqrt": lambda x: np.asarray(x).dtype.type(1) / np.sqrt(x), "fabs": np.abs, "sin": np.sin,
            "cos": np.cos, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": _round, "trunc": np.trunc,
            "exp2": np.exp2, "fmax": np.fmax, "fmin": np.fmin, "pow": np.power, "atan2": np.arctan2,
            "fmod": np.fmod, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
            "sinh": np.sinh, "cosh": np.cosh, "expm1": np.expm1, "log1p": np.log1p, "cbrt": np.cbrt,
            "rint": np.rint, "copysign": np.copysign, "hypot": np.hypot}
    for name, fn in math.items():
        names[f"_m_{name}"] = fn
        names[f"_m_{name}f"] = fn
    for intrinsic, fn in {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin,
                          "cos": np.cos, "tan": np.tan, "pow": np.power}.items():
        names[f"_m___{intrinsic}f"] = fn
    names.update(_m___fdividef=np.divide, _m___fdiv_rn=np.divide, _m___fmul_rn=np.multiply,
                 _m___fadd_rn=np.add, _m___fsub_rn=np.subtract, _m___fsqrt_rn=np.sqrt,
                 _m___frcp_rn=lambda x: np.asarray(x).dtype.type(1) / x,
                 _m___saturatef=lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(np.asarray(x).dtype),
                 _fma=_fma, _bits=_bits, _mul24=_mul24, _min=np.minimum, _max=np.maximum, _abs=np.abs)
    names.update(_i=_i, _not=_not, _land=_land, _lor=_lor, _tern=_tern, _fl=_fl, _fell_off=_fell_off,
                 _shift=_shift, _offset=_offset, _isnull=_isnull, _bit_popc=_bit_popc, _bit_clz=_bit_clz,
                 _bit_ffs=_bit_ffs, _bit_brev=_bit_brev, _vptr=_vptr, _retype=_retype)
    return names


#: What the translated code calls from here.
RUNTIME = _runtime()
