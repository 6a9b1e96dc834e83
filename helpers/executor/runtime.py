"""The lock-step runtime: the threads of a batch of blocks run together as NumPy vectors of lanes.

A launch runs its grid in batches of whole blocks (at most BATCH_LANES lanes at once); each block's threads are
padded to whole warps of 32 lanes, and the padding is never active. The translated code calls this module's
functions for masks, control flow, arithmetic that can fault, and (through `Lanes`) memory and barriers.
A mask is None (every live lane of the frame) or a bool array over the batch's lanes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import counters as counting
from . import memory, printing
from .c_types import CONVERSIONS, DTYPES
from .counters import WARP, Counters
from .front import UnsupportedSyntax
from .memory import KernelFault, Pointer, Shared, SharedRef

#: Loop rounds (lock-step: one round of a loop for all its active lanes) a launch may take before it is
#: stopped as a loop that never ends.
MAX_STEPS = 1_000_000
#: The most lanes run at once: big enough that NumPy's work dwarfs Python's, small enough for 2 GB.
BATCH_LANES = 1 << 17
#: Rounds in a row that an atomicCAS may fail for every lane that makes it before it is called a spin lock that
#: never opens (a compare-and-swap loop with contention has a winner every round).
MAX_SPINS = 2_000


# ------------------------------------------------------------------------------------------------ masks


def _eff(m: Any, b: Any) -> Any:
    return m if m is not None else b


def _any(m: Any) -> bool:
    return m is None or bool(m.any())


def _and(m: Any, b: Any, q: Any) -> Any:
    """The lanes of m (None: all of b) whose condition q holds."""
    if not isinstance(q, np.ndarray):
        return m if q else _NONE.get(b, m)
    e = _eff(m, b)
    return q if e is None else e & q


def _andnot(m: Any, b: Any, q: Any) -> Any:
    if not isinstance(q, np.ndarray):
        return _NONE.get(b, m) if q else m
    e = _eff(m, b)
    return ~q if e is None else e & ~q


class _Empty:
    """Masks with no lane, one per batch size (looked up by the frame's live mask or the current mask)."""

    def __init__(self) -> None:
        self.lanes = 0
        self.mask = np.zeros(0, bool)

    def get(self, b: Any, m: Any) -> np.ndarray:
        ref = b if b is not None else m
        size = ref.size if isinstance(ref, np.ndarray) else self.lanes
        if self.mask.size != size:
            self.mask = np.zeros(size, bool)
        return self.mask


_NONE = _Empty()


def _rejoin(s: Any, b: Any, *left: Any) -> Any:
    """The lanes of s still live (in b) and not among those that left (break, continue)."""
    left = [x for x in left if x is not None]
    if s is None and not left:
        return None
    e = s if s is not None else b
    if s is not None and b is not None:
        e = s & b
    for x in left:
        e = ~x if e is None else e & ~x
    return e


def _join(x: Any, m: Any, b: Any) -> Any:
    """x with the active lanes added (None: no lanes yet)."""
    e = _eff(m, b)
    if e is None:
        e = np.ones(_NONE.lanes, bool)
    return e.copy() if x is None else x | e


def _leave(x: Any, m: Any, b: Any, q: Any) -> Any:
    """The lanes that left a loop, with those of m whose condition q fails."""
    if not isinstance(q, np.ndarray):
        return x if q else _join(x, m, b)
    return _join(x, _andnot(m, b, q), b)


def _kill(m: Any, b: Any) -> Any:
    """The frame's live lanes after the active ones return."""
    if m is None:
        return _NONE.get(b, m)
    return ~m if b is None else b & ~m


def _set(x: Any, v: Any, m: Any, b: Any) -> Any:
    """A variable after an assignment by the active lanes: the others keep their value."""
    if m is None:
        return v
    if v is None or (x is None and isinstance(v, Pointer | SharedRef)):
        e = _eff(m, b)
        if x is v or e is None or np.all(e):
            return v
        raise UnsupportedSyntax("a pointer that is nullptr in some threads and points to an array in others: the "
                                "CPU executor follows one array per pointer; keep a flag instead")
    if isinstance(v, Pointer):
        if isinstance(x, Pointer) and x.alloc is v.alloc:
            return Pointer(v.alloc, np.where(m, v.offset, x.offset), v.name, v.start, v.writable)
        if isinstance(x, Pointer):
            raise UnsupportedSyntax(f"a pointer that points into {x.name} in some threads and into {v.name} in "
                                    "others: the CPU executor follows one array per pointer; choose between the "
                                    f"elements instead, as in c ? {x.name}[i] : {v.name}[i]")
        return v
    if isinstance(v, SharedRef):
        if isinstance(x, SharedRef) and x.array is v.array:
            return SharedRef(v.array, np.where(m, v.offset, x.offset))
        if isinstance(x, SharedRef | Pointer):
            raise UnsupportedSyntax("a pointer that points into different arrays in different threads: the CPU "
                                    "executor follows one array per pointer")
        return v
    if isinstance(x, _Unset | _Partial):
        return x.assign(v, m)
    if x is None:
        return np.where(m, v, np.zeros_like(v))
    return np.where(m, v, x)


class _Unset:
    """The value of a variable declared without one: reading it before a value is set is reported."""

    __slots__ = ("name", "line")

    def __init__(self, name: str, line: int) -> None:
        self.name, self.line = name, line

    def assign(self, v: Any, m: np.ndarray) -> _Partial:
        return _Partial(self, np.where(m, v, np.zeros_like(v)), m.copy())

    def fault(self, c: Lanes, line: int, lane: int) -> KernelFault:
        return c.fault("uninitialised variable", f"uses the variable {self.name} (declared at line {self.line} "
                       "without a value) before it is given one", line, lane)


class _Partial:
    """A variable some lanes have set."""

    __slots__ = ("unset", "value", "done")

    def __init__(self, unset: _Unset, value: Any, done: np.ndarray) -> None:
        self.unset, self.value, self.done = unset, value, done

    def assign(self, v: Any, m: np.ndarray) -> _Partial:
        return _Partial(self.unset, np.where(m, v, self.value), self.done | m)


def _rd(c: Lanes, x: Any, line: int, m: Any, b: Any) -> Any:
    """A variable declared without a value, read by the active lanes at `line`: each of them must have set it."""
    e = _eff(m, b)
    if isinstance(x, _Unset):
        if _any(e) and (e is None or e.any()):
            raise x.fault(c, line, c.first(e))
        return 0
    if isinstance(x, _Partial):
        missing = ~x.done if e is None else e & ~x.done
        if c.real is not None:
            missing = missing & c.real
        if missing.any():
            raise x.unset.fault(c, line, memory.first(missing))
        return x.value
    return x


def _vrd(c: Lanes, v: tuple[Any, ...], line: int, m: Any, b: Any) -> tuple[Any, ...]:
    """A vector variable declared without a value, read whole: each member as _rd reads it."""
    return tuple(_rd(c, x, line, m, b) for x in v)


# ------------------------------------------------------------------------------------------------ values


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


def _tern(c: Lanes, q: Any, yes: Callable[[Any], Any], no: Callable[[Any], Any], m: Any, b: Any) -> Any:
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


def _fl(c: Lanes, flops: int, m: Any, b: Any, value: Any) -> Any:
    c.counters.flops += flops * c.count(_eff(m, b))
    return value


def _fell_off(c: Lanes, m: Any, b: Any) -> None:
    if _any(_eff(m, b)):
        raise KernelFault("missing return", "a __device__ function that returns a value ended without a return")


def _shift(c: Lanes, a: Any, op: str, n: Any, bits: int, line: int, m: Any, b: Any) -> Any:
    """a << n or a >> n, with C's rule that the count is from 0 to the width less 1 (anything else is undefined:
    a GPU gives one answer, a CPU another)."""
    e = _eff(m, b)
    wrong = (n < 0) | (n >= bits)
    if e is not None and isinstance(wrong, np.ndarray):
        wrong = wrong & e
    if np.any(wrong):
        lane = memory.first(np.broadcast_to(wrong, (c.lanes,)))
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

    def quotient(c: Lanes, a: Any, d: Any, line: int, m: Any, b: Any) -> Any:
        zero = d == 0
        e = _eff(m, b)
        hit = zero if e is None or not isinstance(zero, np.ndarray) else zero & e
        if np.any(hit) and _any(e) and (e is None or e.any()):
            lane = memory.first(np.broadcast_to(hit if isinstance(hit, np.ndarray) else e if e is not None else True,
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

    def remainder(c: Lanes, a: Any, d: Any, line: int, m: Any, b: Any) -> Any:
        q = quotient(c, a, d, line, m, b)
        if isinstance(q, int) and isinstance(d, int):
            return wrap(a - d * q)
        return wrap(np.asarray(a).astype(np.int64 if signed else np.uint64)
                    - np.asarray(d).astype(np.int64 if signed else np.uint64) * np.asarray(q))
    return quotient, remainder


def _offset(c: Lanes, p: Any, index: Any, line: int, m: Any, b: Any, sign: int = 1) -> Pointer:
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


def _vput(v: tuple[Any, ...], k: int, x: Any) -> tuple[Any, ...]:
    """A vector with member k replaced."""
    return (*v[:k], x, *v[k + 1:])


def _vset(x: Any, v: tuple[Any, ...], m: Any, b: Any) -> tuple[Any, ...]:
    """A vector variable after an assignment by the active lanes: member by member."""
    return tuple(_set(x[k] if isinstance(x, tuple) else None, v[k], m, b) for k in range(len(v)))


def _sset(x: Any, v: tuple[Any, ...], m: Any, b: Any) -> tuple[Any, ...]:
    """A struct (or vector) variable after an assignment by the active lanes: member by member, inside nested
    members too."""
    return tuple((_sset if isinstance(v[k], tuple) else _set)(x[k] if isinstance(x, tuple) else None, v[k], m, b)
                 for k in range(len(v)))


def _sput(x: tuple[Any, ...], where: tuple[int, ...], v: Any, m: Any, b: Any) -> tuple[Any, ...]:
    """A struct variable after its member at `where` (s.in.x: two positions) is set by the active lanes."""
    k, rest = where[0], where[1:]
    inner = _sput(x[k], rest, v, m, b) if rest else (_sset if isinstance(v, tuple) else _set)(x[k], v, m, b)
    return (*x[:k], inner, *x[k + 1:])


def _srd(c: Lanes, v: Any, line: int, m: Any, b: Any) -> Any:
    """A struct (or vector) declared without a value, read whole: each member as _rd reads it."""
    if isinstance(v, tuple):
        return tuple(_srd(c, x, line, m, b) for x in v)
    return _rd(c, v, line, m, b)


def _vptr(c: Lanes, p: Any, n: int, line: int, m: Any, b: Any) -> Any:
    """`p` seen as a pointer to vectors of n elements: a fault where a lane's address is not a multiple of n."""
    if not isinstance(p, Pointer | SharedRef):
        raise c.fault("bad pointer", "cast a pointer that points nowhere", line, c.first(_eff(m, b)))
    _aligned(c, p, p.offset, n, f"{n * _source(p).data.itemsize}-byte vectors", line, m, b)
    return p


def _retype(c: Lanes, p: Any, ctype: str, line: int, m: Any, b: Any) -> Any:
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


def _aligned(c: Lanes, p: Pointer | SharedRef, where: Any, n: int, what: str, line: int, m: Any, b: Any,
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


def namespace() -> dict[str, Any]:
    """What the translated code may call."""
    names: dict[str, Any] = dict(CONVERSIONS)
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
    names.update(_eff=_eff, _any=_any, _and=_and, _andnot=_andnot, _rejoin=_rejoin, _join=_join,
                 _leave=_leave, _kill=_kill, _set=_set, _Unset=_Unset, _rd=_rd, _i=_i, _not=_not, _land=_land,
                 _lor=_lor, _tern=_tern, _fl=_fl, _fell_off=_fell_off, _shift=_shift, _offset=_offset, _vput=_vput,
                 _isnull=_isnull, _bit_popc=_bit_popc, _bit_clz=_bit_clz, _bit_ffs=_bit_ffs, _bit_brev=_bit_brev,
                 _vset=_vset, _vptr=_vptr, _vrd=_vrd, _retype=_retype,
                 _sset=_sset, _sput=_sput, _srd=_srd)
    return names


# ------------------------------------------------------------------------------------------------ lanes


class Lanes:
    """The lanes of one batch of blocks (`_c` in the translated code): their coordinates, the blocks' barrier
    epochs, shared memory, and the loads, stores, atomics and barriers the code makes."""

    def __init__(self, run: Any, first_block: int, blocks: int) -> None:
        self.run, self.counters = run, run.counters
        bdx, bdy, bdz = run.block
        gdx, gdy, _ = run.grid
        self.threads = bdx * bdy * bdz
        self.padded = -(-self.threads // WARP) * WARP
        self.blocks, self.lanes = blocks, blocks * self.padded
        _NONE.lanes = self.lanes
        lane = np.arange(self.lanes, dtype=np.int64)
        tid, self.lb = lane % self.padded, lane // self.padded
        blk = first_block + self.lb
        self.real = None if self.padded == self.threads else tid < self.threads
        self.alive: Any = None  # the lanes that have not returned from the kernel (None: all)
        self.gid = blk * self.threads + tid
        self.rank = tid.astype(np.uint32)  # the thread's linear index in its block (a thread_block's thread_rank)
        self.bd = np.uint32(self.threads)
        self.blocks_in_grid = np.uint64(gdx * gdy * run.grid[2])
        self.first_block = first_block
        u = np.uint32
        self.tx, self.ty, self.tz = (tid % bdx).astype(u), (tid // bdx % bdy).astype(u), (tid // (bdx * bdy)).astype(u)
        self.bx, self.by, self.bz = (blk % gdx).astype(u), (blk // gdx % gdy).astype(u), (blk // (gdx * gdy)).astype(u)
        self.bdx, self.bdy, self.bdz = u(bdx), u(bdy), u(bdz)
        self.gdx, self.gdy, self.gdz = (u(g) for g in run.grid)
        self.epoch = np.zeros(blocks, np.int64)
        self.lep = np.zeros(self.lanes, np.int64)
        self.none = np.zeros(self.lanes, bool)
        self.arrays: dict[tuple[str, str, tuple[int, ...], int], Shared] = {}
        self.shared_used = 0
        self.real_warps = blocks * -(-self.threads // WARP)
        self.real_lanes = blocks * self.threads
        self.warp_sync = memory.WarpSync(self.lanes, run.syncwarp)  # __syncwarp() calls, for the race check
        self.mapping = run.mapping  # how a WMMA fragment's x[i] maps to tile elements (helpers.executor.wmma)
        self.cas_failed: dict[int, int] = {}  # an atomicCAS line's rounds in a row that no lane won
        self.cas_held: dict[int, tuple[int, int]] = {}  # the lane that last won it, and the element

    # ---------------------------------------------------------------- who is who

    def xyz_thread(self, tid: int) -> str:
        return _xyz(unflatten(tid, self.run.block), self.run.block)

    def xyz_block(self, blk: int) -> str:
        return _xyz(unflatten(blk, self.run.grid), self.run.grid)

    def coordinates(self, lane: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(block, thread) of a lane, each as (x, y, z)."""
        blk, tid = self.first_block + lane // self.padded, lane % self.padded
        return unflatten(blk, self.run.grid), unflatten(tid, self.run.block)

    def fault(self, kind: str, what: str, line: int, lane: int) -> KernelFault:
        block, thread = self.coordinates(lane)
        where = f"thread {_xyz(thread, self.run.block)} of block {_xyz(block, self.run.grid)}"
        return KernelFault(kind, f"{kind} at line {line}: {where} {what}", thread=thread, block=block, line=line)

    def first(self, e: Any) -> int:
        if e is None:
            return 0 if self.real is None else memory.first(self.real)
        return memory.first(e)

    def count(self, e: Any) -> int:
        return self.real_lanes if e is None else int(np.count_nonzero(e))

    # ---------------------------------------------------------------- control flow

    def tick(self, flops: int, m: Any, b: Any) -> None:
        """One warp step by the active lanes, with `flops` floating-point operations each."""
        e = _eff(m, b)
        counters = self.counters
        if e is None:
            counters.warp_steps += self.real_warps
            counters.active_lanes += self.real_lanes
            counters.flops += flops * self.real_lanes
            return
        lanes = int(np.count_nonzero(e))
        if lanes:
            counters.warp_steps += int(e.reshape(-1, WARP).any(axis=1).sum())
            counters.active_lanes += lanes
            counters.flops += flops * lanes

    def cond(self, line: int, q: Any, m: Any, b: Any, loop: bool = False) -> Any:
        """A branch's or loop's condition; a loop's round counts toward the step limit; traced when asked."""
        run = self.run
        if loop:
            run.steps += 1
            if run.steps > run.max_steps:
                raise self.fault("step limit", f"was still looping after {run.max_steps:,} loop rounds in all: is "
                                 "there a loop that never ends? (pass max_steps= for a bigger launch)", line,
                                 self.first(_eff(m, b)))
        if run.paths is not None:
            run.record(self, line, _eff(m, b), q)
        return q

    def barrier(self, line: int, m: Any, b: Any) -> None:
        """__syncthreads(): every thread of a block that reaches it must reach it together."""
        e = _eff(m, b)
        here = np.broadcast_to(e if e is not None else self.real if self.real is not None else True,
                               (self.lanes,)).reshape(self.blocks, self.padded)[:, :self.threads]
        count = here.sum(axis=1)
        partial = (count > 0) & (count < self.threads)
        if partial.any():
            self._divergent_barrier(line, here, count, int(np.argmax(partial)), b)
        reached = count > 0
        self.epoch[reached] += 1
        self.lep = self.epoch[self.lb]
        self.counters.barriers += int(reached.sum())

    def _divergent_barrier(self, line: int, here: np.ndarray, count: np.ndarray, block: int, b: Any) -> None:
        waiting = block * self.padded + int(np.argmax(here[block]))
        missing = np.flatnonzero(~here[block])
        live = np.broadcast_to(b if b is not None else True, (self.lanes,))
        gone = [t for t in missing if not live[block * self.padded + t]]
        if gone:
            why = f"thread {self.xyz_thread(int(gone[0]))} had already returned: every thread of a block must " \
                  "reach each __syncthreads() (keep it outside if and return)"
        else:
            why = "the others are elsewhere: a __syncthreads() inside an if or a loop that not every thread takes"
        raise self.fault("barrier divergence", f"waits at the __syncthreads() of line {line}, which "
                         f"{int(count[block])} of the block's {self.threads} threads reached; {why}", line, waiting)

    # ---------------------------------------------------------------- memory

    def shared(self, name: str, ctype: str, dims: tuple[int, ...], line: int) -> Shared:
        key = (name, ctype, dims, line)
        array = self.arrays.get(key)
        if array is None:
            size = int(np.prod(dims))
            memory.check_size(name, size, "shared")
            array = self.arrays[key] = Shared(name, ctype, dims, self.blocks, "shared", self.shared_used)
            self.shared_used += -(-size * array.itemsize // 16) * 16
            self.counters.shared_bytes_per_block = max(self.counters.shared_bytes_per_block, self.shared_used)
        return array

    def dynamic_shared(self, name: str, ctype: str, line: int) -> Shared:
        """An extern __shared__ array: the launch's shared_mem= bytes, one region every such array shares."""
        array = self.arrays.get(("extern", "", (), 0))
        if array is not None and array.data.dtype != DTYPES[ctype]:
            return array.view(ctype, line)  # extern __shared__ arrays of two types: one region, as on a GPU
        if array is None:
            size = self.run.shared_mem // np.dtype(DTYPES[ctype]).itemsize
            array = Shared(name, ctype, (size,), self.blocks, "shared", self.shared_used)
            array.dynamic = self.run.shared_mem
            self.arrays[("extern", "", (), 0)] = array
            self.counters.shared_bytes_per_block = max(self.counters.shared_bytes_per_block,
                                                       self.shared_used + self.run.shared_mem)
        return array

    @staticmethod
    def decay(a: Shared) -> SharedRef:
        """A shared or local array used as a pointer to its first element (passed to a __device__ function)."""
        return SharedRef(a, 0)

    def ref(self, a: Shared, index: tuple[Any, ...], line: int, m: Any, b: Any) -> SharedRef:
        """&a[i][j] of a shared or local array: checked against the array's bounds."""
        return SharedRef(a, self._flat(a, index, line, _eff(m, b), "take the address of") % a.size)

    def fill(self, a: Shared, values: list[Any], m: Any, b: Any) -> None:
        """A local array's initial values ({1, 2, 3}, the rest 0) in every lane."""
        rows = a.data.reshape(self.lanes, a.size)
        for k, value in enumerate(values):
            rows[:, k] = value
        a.written[:] = True

    def printf(self, literal: str, values: tuple[Any, ...], line: int, m: Any, b: Any) -> int:
        """printf from every active thread, in thread order: at most MAX_PRINTED lines a launch (a GPU's printf
        buffer, 1 MB by default, also drops what does not fit)."""
        fmt = printing.python_format(literal, len(values), line)
        lanes = self._lanes(_eff(m, b))
        columns = [np.broadcast_to(v, (self.lanes,)) for v in values]
        for lane in lanes.tolist():
            if self.run.printed >= printing.MAX_PRINTED:
                if self.run.printed == printing.MAX_PRINTED:
                    print(f"... (the CPU executor prints the first {printing.MAX_PRINTED} printf lines of a launch)")
                    self.run.printed += 1
                break
            print(fmt % tuple(column[lane].item() for column in columns), end="")
            self.run.printed += 1
        return 0

    def check(self, q: Any, line: int, m: Any, b: Any) -> None:
        """assert(q): a fault naming the first active thread where q is false, as CUDA's device-side assert."""
        e = _eff(m, b)
        failed = np.broadcast_to(np.logical_not(q), (self.lanes,))
        failed = failed & (e if e is not None else self.real if self.real is not None else True)
        if np.any(failed):
            raise self.fault("assertion failed", f"fails the assert on line {line} (on a GPU the kernel stops: "
                             "\"device-side assert triggered\", and the process's GPU context is lost)", line,
                             memory.first(np.broadcast_to(failed, (self.lanes,))))

    def local(self, name: str, ctype: str, dims: tuple[int, ...]) -> Shared:
        memory.check_size(name, int(np.prod(dims)), "local")
        return Shared(name, ctype, dims, self.lanes, "local", 0)

    def _flat(self, a: Shared, index: tuple[Any, ...], line: int, e: Any, verb: str) -> Any:
        flat: Any = 0
        for i, (size, stride) in enumerate(zip(a.dims, a.strides, strict=True)):
            j = index[i]
            outside = (j < 0) | (j >= size)
            if e is not None and isinstance(outside, np.ndarray):
                outside = outside & e
            if np.any(outside):
                lane = memory.first(np.broadcast_to(outside, (self.lanes,)))
                text = a.name + "".join(f"[{int(np.broadcast_to(k, (self.lanes,))[lane])}]" for k in index)
                raise self.fault(f"out-of-bounds {verb}", f"{verb} {text}, but dimension {i + 1} of {a.name} has "
                                 f"{size} elements (0 to {size - 1}){_dynamic_note(a)}", line, lane)
            flat = flat + np.asarray(j, np.int64) * stride if stride != 1 else flat + np.asarray(j, np.int64)
        copy = self.lb if a.space == "shared" else np.arange(self.lanes)
        return np.broadcast_to(flat + copy * a.size, (self.lanes,))

    def lda(self, a: Shared, index: tuple[Any, ...], line: int, m: Any, b: Any, count: bool = True) -> Any:
        e = _eff(m, b)
        flat = self._flat(a, index, line, e, "read")
        lanes = np.flatnonzero(e) if e is not None else np.arange(self.lanes) if self.real is None \
            else np.flatnonzero(self.real)
        f = flat[lanes]
        memory.uninitialised(self, a, f, lanes, line)
        if a.space == "shared":
            memory.shared_read(self, a, f, lanes, line)
            if count:
                self._bank_count(a, flat, e, load=True)
        return a.data[flat if e is None else np.where(e, flat, flat[lanes[0]] if lanes.size else 0)]

    def sta(self, a: Shared, index: tuple[Any, ...], value: Any, line: int, m: Any, b: Any,
            count: bool = True) -> None:
        e = _eff(m, b)
        flat = self._flat(a, index, line, e, "write")
        lanes = np.flatnonzero(e) if e is not None else np.arange(self.lanes) if self.real is None \
            else np.flatnonzero(self.real)
        if not lanes.size:
            return
        f = flat[lanes]
        if a.space == "shared":
            memory.shared_write(self, a, f, lanes, line, np.broadcast_to(value, (self.lanes,))[lanes])
            if count:
                self._bank_count(a, flat, e, load=False)
        else:
            a.written[f] = True
        a.data[f] = np.broadcast_to(value, (self.lanes,))[lanes]

    def _bank_count(self, a: Shared, flat: np.ndarray, e: Any, load: bool, n: int = 1) -> None:
        """One request per warp and its passes; a vector of n elements (LDS.64/128) is one request, which the
        GPU serves in n phases of 32/n lanes, each phase's words spread over the 32 banks."""
        words = (a.base + (flat % a.size) * a.itemsize) >> 2
        active = e if e is not None else self.real
        if n > 1:
            requests, _ = counting.distinct_per_warp(0, active, self.lanes)
            words = (np.broadcast_to(words, (self.lanes,))[:, None] + np.arange(n) * (a.itemsize // 4)).reshape(-1)
            active = None if active is None else np.repeat(np.broadcast_to(active, (self.lanes,)), n)
            _, passes = counting.wavefronts(words, active, self.lanes * n)
        else:
            requests, passes = counting.wavefronts(words, active, self.lanes)
        if load:
            self.counters.shared_load_requests += requests
            self.counters.shared_load_wavefronts += passes
            self.counters.shared_load_phases += requests * n
        else:
            self.counters.shared_store_requests += requests
        self.counters.shared_wavefronts += passes
        self.counters.shared_phases += requests * n

    def _global(self, p: Any, index: Any, line: int, e: Any) -> tuple[Pointer, Any, int | None]:
        """The pointer, the elements the lanes access, and the first lane outside the allocation (or None)."""
        if not isinstance(p, Pointer):
            raise self.fault("bad pointer", "used a pointer that points nowhere", line, self.first(e))
        if isinstance(p.offset, int) and p.offset == 0:
            flat = index.astype(np.int64) if isinstance(index, np.ndarray) and index.dtype.kind == "u" else index
        else:
            flat = np.add(p.offset, index, dtype=np.int64)
        return p, flat, memory.outside(self, p, flat, e)

    def _before(self, lanes: np.ndarray, stray: int | None) -> np.ndarray:
        """The lanes that run before the first stray one: their faults come first, as in thread order."""
        return lanes if stray is None else lanes[lanes < stray]

    def _sectors(self, p: Pointer, flat: Any, e: Any, load: bool, n: int = 1) -> None:
        """Count one request per warp: the 32-byte sectors its lanes touch (an aligned vector of n elements, at
        most 16 bytes, lies in one sector), and the bytes moved."""
        keys = (np.asarray(flat, np.int64) * p.alloc.data.itemsize) >> 5 if np.ndim(flat) else 0
        active = e if e is not None else self.real
        per_warp = counting.distinct_each_warp(keys, active, self.lanes)
        requests, sectors = len(per_warp), int(per_warp.sum())
        _, lines = counting.distinct_per_warp(keys >> 2, active, self.lanes)
        moved = self.count(e) * p.alloc.data.itemsize * n
        c = self.counters
        if requests:
            c.worst_sectors = max(c.worst_sectors, int(per_warp.max()))
        if load:
            c.global_load_requests += requests
            c.global_load_sectors += sectors
            c.global_load_lines += lines
            c.global_load_bytes += moved
        else:
            c.global_store_requests += requests
            c.global_store_sectors += sectors
            c.global_store_lines += lines
            c.global_store_bytes += moved

    def _lanes(self, e: Any) -> np.ndarray:
        if e is not None:
            return np.flatnonzero(e)
        return np.arange(self.lanes) if self.real is None else np.flatnonzero(self.real)

    def ldv(self, p: Any, index: Any, n: int, line: int, m: Any, b: Any) -> tuple[Any, ...]:
        """A load of an n-element vector (p a float4*: p[i] is elements n*i to n*i + n - 1): one request."""
        first = np.multiply(index, n, dtype=np.int64)
        if isinstance(p, SharedRef):
            value = tuple(self.lda(p.array, p.index(first + k), line, m, b, count=False) for k in range(n))
        else:
            value = tuple(self.ld(p, first + k, line, m, b, count=False) for k in range(n))
        self._vector_sectors(p, first, n, line, m, b, load=True)
        return value

    def stv(self, p: Any, index: Any, value: tuple[Any, ...], n: int, line: int, m: Any, b: Any) -> None:
        """A store of an n-element vector through a vector pointer: one request."""
        first = np.multiply(index, n, dtype=np.int64)
        for k in range(n):
            if isinstance(p, SharedRef):
                self.sta(p.array, p.index(first + k), value[k], line, m, b, count=False)
            else:
                self.st(p, first + k, value[k], line, m, b, count=False)
        self._vector_sectors(p, first, n, line, m, b, load=False)

    def _vector_sectors(self, p: Any, first: Any, n: int, line: int, m: Any, b: Any, load: bool) -> None:
        """One request for the vector: its sectors in global memory, its bank passes in shared memory."""
        e = _eff(m, b)
        if not self._lanes(e).size:
            return
        if isinstance(p, SharedRef):
            if p.array.space == "shared":
                self._bank_count(p.array, self._flat(p.array, p.index(first), line, e, "read"), e, load, n)
        else:
            p, flat, _ = self._global(p, first, line, e)
            self._sectors(p, flat, e, load, n)

    def ld(self, p: Any, index: Any, line: int, m: Any, b: Any, count: bool = True) -> Any:
        if isinstance(p, SharedRef):
            return self.lda(p.array, p.index(index), line, m, b, count)
        e = _eff(m, b)
        p, flat, stray = self._global(p, index, line, e)
        alloc = p.alloc
        if alloc.writer is not None or alloc.reader is not None:
            lanes = self._before(self._lanes(e), stray)
            f = np.broadcast_to(flat, (self.lanes,))[lanes]
            if alloc.writer is not None:
                memory.global_race(self, p, f, lanes, line, "read")
            if alloc.reader is not None:
                memory.record_reads(self, p, f, lanes, line)
        if stray is not None:
            raise memory.out_of_bounds(self, p, flat, stray, line, "read")
        if count:
            self._sectors(p, flat, e, load=True)
        if np.ndim(flat) == 0:
            value = alloc.data[int(flat)] if _any(e) else alloc.data.dtype.type(0)
            return int(value) if alloc.integer and value.dtype.kind != "b" else value
        return alloc.data[flat if e is None else np.where(e, flat, 0)]

    def st(self, p: Any, index: Any, value: Any, line: int, m: Any, b: Any, count: bool = True) -> None:
        if isinstance(p, SharedRef):
            self.sta(p.array, p.index(index), value, line, m, b, count)
            return
        e = _eff(m, b)
        p, flat, stray = self._global(p, index, line, e)
        lanes = self._lanes(e)
        if not lanes.size:
            return
        f = np.broadcast_to(flat, (self.lanes,))
        if not p.writable:
            raise self.fault("write to a read-only array", f"writes {p.name}[{int(f[lanes[0]]) - p.start}], but the "
                             f"array passed as {p.name} is read-only (its flags.writeable is False): pass a writable "
                             "copy, a.copy()", line, int(lanes[0]))
        before = self._before(lanes, stray)
        alloc = p.alloc
        if alloc.writer is not None:
            memory.global_race(self, p, f[before], before, line, "write")
        memory.record_writes(self, p, f[before], before, line,  # two lanes of this store on one element first
                             np.broadcast_to(value, (self.lanes,))[before])
        if alloc.reader is not None:
            memory.read_race(self, p, f[before], before, line)
        if stray is not None:
            raise memory.out_of_bounds(self, p, flat, stray, line, "write")
        if count:
            self._sectors(p, flat, e, load=False)
        alloc.data[f[lanes]] = np.broadcast_to(value, (self.lanes,))[lanes]

    def atomic(self, op: str, p: Any, value: Any, line: int, m: Any, b: Any, compare: Any = None) -> Any:
        """atomicAdd and the others (atomicCAS: with `compare`): one lane at a time, in thread order, where lanes
        share an element. On a __shared__ array, atomics do not race with each other; one after another thread's
        plain write with no barrier (or __syncwarp()) between races, and so does a plain write after one (it is
        kept as a read); a plain read after one is not checked."""
        e = _eff(m, b)
        lanes = self._lanes(e)
        if isinstance(p, SharedRef):
            data, f = self._shared_atomic(p, line, e, lanes)
        else:
            data, f = self._global_atomic(p, line, e, lanes)
        v = np.broadcast_to(value, (self.lanes,))[lanes]
        want = v if compare is None else np.broadcast_to(compare, (self.lanes,))[lanes]
        self.counters.atomics += lanes.size
        old = np.zeros(self.lanes, data.dtype)
        apply = _ATOMIC[op]
        wrap = _WRAP.get(data.dtype.name)
        if np.unique(f).size == f.size:
            before = data[f]
            new = apply(before, v, want)
            data[f] = wrap(new) if wrap and isinstance(new, np.ndarray) and new.dtype != data.dtype else new
            old[lanes] = before
        else:
            for lane, k, x, y in zip(lanes.tolist(), f.tolist(), v.tolist(), want.tolist(), strict=True):
                before = data[k]
                new = apply(int(before) if wrap else before, x, y)
                data[k] = wrap(new) if wrap else new
                old[lane] = before
        if compare is not None and lanes.size:
            self._spin(line, lanes, f, old[lanes] == want)
        return old

    def _spin(self, line: int, lanes: np.ndarray, f: np.ndarray, won: np.ndarray) -> None:
        """An atomicCAS that fails for every lane making it, round after round, is a spin lock waiting for a
        thread that, in lock step, never runs again to let go: a fault saying so (not a hang)."""
        if won.any():
            self.cas_held[line] = (int(lanes[np.argmax(won)]), int(f[np.argmax(won)]))
            self.cas_failed[line] = 0
            return
        self.cas_failed[line] = self.cas_failed.get(line, 0) + 1
        if self.cas_failed[line] < MAX_SPINS:
            return
        holder = self.cas_held.get(line)
        lane = int(lanes[0])
        if holder is not None and holder[0] // WARP == lane // WARP:
            who = (f"thread {self.xyz_thread(holder[0] % self.padded)}, a lane of the same warp, took it and waits "
                   "for its warp's other lanes to leave the loop, which they never do: a warp's lanes run in lock "
                   "step here, as on GPUs before Volta (since Volta a GPU may let the holder go on, but CUDA does "
                   "not promise it)")
        else:
            who = ("the thread that holds it runs in lock step with the waiting ones here and never gets to let "
                   "it go (the CPU executor cannot run a spin lock)")
        raise self.fault("spin lock", f"has waited {MAX_SPINS:,} rounds at the atomicCAS of line {line} for a "
                         f"lock no thread lets go: {who}. Take the lock in one lane of each warp (if (lane == 0)), "
                         "or do without a lock: atomicAdd, or a warp reduction with __shfl_down_sync",
                         line, lane)

    def _global_atomic(self, p: Any, line: int, e: Any, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The data an atomic on global memory updates and each lane's element: in bounds and writable."""
        p, flat, stray = self._global(p, 0, line, e)
        if stray is not None:
            raise memory.out_of_bounds(self, p, flat, stray, line, "atomic update of")
        f = np.broadcast_to(flat, (self.lanes,))[lanes]
        if not p.writable:
            raise self.fault("write to a read-only array", f"writes {p.name}[{int(f[0]) - p.start}], but the array "
                             f"passed as {p.name} is read-only (its flags.writeable is False): pass a writable copy, "
                             "a.copy()", line, int(lanes[0]))
        alloc = p.alloc
        if alloc.writer is not None:  # another thread's plain store, nothing ordering it before this atomic
            memory.global_race(self, p, f, lanes, line, "atomically update")
        if alloc.reader is not None:  # kept as a read: a plain store after it by another thread races
            memory.record_reads(self, p, f, lanes, line)
        return alloc.data, f

    def _shared_atomic(self, p: SharedRef, line: int, e: Any, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The data an atomic on a shared or local array updates and each lane's element: in bounds, written
        before, and (shared) not racing a plain write."""
        a = p.array
        f = self._flat(a, p.index(0), line, e, "atomic update of")[lanes]
        memory.uninitialised(self, a, f, lanes, line)
        if a.space == "shared":
            memory.shared_read(self, a, f, lanes, line, "update")
        return a.data, f


_ATOMIC: dict[str, Callable[[Any, Any, Any], Any]] = {
    "atomicAdd": lambda a, v, _: a + v, "atomicSub": lambda a, v, _: a - v, "atomicExch": lambda a, v, _: v,
    "atomicMax": lambda a, v, _: np.maximum(a, v), "atomicMin": lambda a, v, _: np.minimum(a, v),
    "atomicAnd": lambda a, v, _: np.bitwise_and(a, v), "atomicOr": lambda a, v, _: np.bitwise_or(a, v),
    "atomicXor": lambda a, v, _: np.bitwise_xor(a, v),
    "atomicInc": lambda a, v, _: np.where(a >= v, 0, a + 1),  # ((old >= val) ? 0 : old + 1), as CUDA has it
    "atomicDec": lambda a, v, _: np.where((a == 0) | (a > v), v, a - 1),  # ((old == 0 || old > val) ? val : old - 1)
    "atomicCAS": lambda a, v, want: np.where(a == want, v, a)}
#: Integer wrap-around for each integer dtype an array may hold.
_WRAP = {"int8": CONVERSIONS["_to_char"], "uint8": CONVERSIONS["_to_unsigned_char"],
         "int16": CONVERSIONS["_to_short"], "uint16": CONVERSIONS["_to_unsigned_short"],
         "int32": CONVERSIONS["_to_int"], "uint32": CONVERSIONS["_to_unsigned_int"],
         "int64": CONVERSIONS["_to_long_long"], "uint64": CONVERSIONS["_to_unsigned_long_long"],
         "bool": CONVERSIONS["_to_bool"]}


def _dynamic_note(a: Shared) -> str:
    if a.dynamic is None:
        return ""
    return (f"; {a.name} is extern __shared__: its size is the launch's shared_mem= ({a.dynamic} bytes here), "
            f"as in kernel(grid, block, args, shared_mem=n * {a.itemsize})")


def unflatten(index: int, shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """A linear thread or block index as (x, y, z) in `shape`, x fastest (CUDA's order)."""
    return index % shape[0], index // shape[0] % shape[1], index // (shape[0] * shape[1])


def _xyz(t: tuple[int, ...], shape: tuple[int, int, int]) -> str:
    """A thread's or block's coordinates in as many dimensions as the launch has: (5,) or (5, 2)."""
    used = 3 if shape[2] > 1 else 2 if shape[1] > 1 else 1
    return "(" + ", ".join(map(str, t[:used])) + (",)" if used == 1 else ")")


__all__ = ["BATCH_LANES", "MAX_STEPS", "Counters", "KernelFault", "Lanes", "namespace"]
