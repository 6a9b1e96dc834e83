"""Masks and variables per lane: which lanes of a batch are active, and a variable's value after the active
lanes assign it (the others keep theirs).

A mask is None (every live lane of the frame, `_b`) or a bool array over the batch's lanes. The translated code
(helpers.executor.translate) narrows the mask at an if or a loop and rejoins it after, takes lanes out at break,
continue and return, and reads a variable declared without a value through `_rd`, which names the first lane that
reads it unset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch, first
from .errors import KernelFault, UnsupportedSyntax
from .memory import Pointer, SharedRef


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

    def fault(self, c: Batch, line: int, lane: int) -> KernelFault:
        return c.fault("uninitialised variable", f"uses the variable {self.name} (declared at line {self.line} "
                       "without a value) before it is given one", line, lane)


class _Partial:
    """A variable some lanes have set."""

    __slots__ = ("unset", "value", "done")

    def __init__(self, unset: _Unset, value: Any, done: np.ndarray) -> None:
        self.unset, self.value, self.done = unset, value, done

    def assign(self, v: Any, m: np.ndarray) -> _Partial:
        return _Partial(self.unset, np.where(m, v, self.value), self.done | m)


def _rd(c: Batch, x: Any, line: int, m: Any, b: Any) -> Any:
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
            raise x.unset.fault(c, line, first(missing))
        return x.value
    return x


def _vrd(c: Batch, v: tuple[Any, ...], line: int, m: Any, b: Any) -> tuple[Any, ...]:
    """A vector variable declared without a value, read whole: each member as _rd reads it."""
    return tuple(_rd(c, x, line, m, b) for x in v)


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


def _srd(c: Batch, v: Any, line: int, m: Any, b: Any) -> Any:
    """A struct (or vector) declared without a value, read whole: each member as _rd reads it."""
    if isinstance(v, tuple):
        return tuple(_srd(c, x, line, m, b) for x in v)
    return _rd(c, v, line, m, b)


#: What the translated code calls from here.
RUNTIME: dict[str, Any] = {"_eff": _eff, "_any": _any, "_and": _and, "_andnot": _andnot, "_rejoin": _rejoin,
                           "_join": _join, "_leave": _leave, "_kill": _kill, "_set": _set, "_Unset": _Unset,
                           "_rd": _rd, "_vrd": _vrd, "_vput": _vput, "_vset": _vset, "_sset": _sset, "_sput": _sput,
                           "_srd": _srd}
