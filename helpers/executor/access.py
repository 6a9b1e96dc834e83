"""Loads and stores on lanes: each access of global, shared or local memory by the active lanes of a batch, checked
(bounds, garbage, races: helpers.executor.memory) and counted (sectors and requests of global memory, bank passes
of shared memory: helpers.executor.counters).

`_c.ld(p, i, ...)` is a load of p[i] through a pointer, `_c.lda(a, (i, j), ...)` of a shared or local array's
element a[i][j], `ldv` of a vector (float4) in one request; `st`, `sta` and `stv` store.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import counters as counting
from . import memory
from .batch import Batch, first
from .c_types import DTYPES
from .masks import _any, _eff
from .memory import Pointer, Shared, SharedRef


class Access(Batch):
    """A batch's lanes with their shared arrays, and the loads and stores the translated code makes."""

    def __init__(self, run: Any, first_block: int, blocks: int) -> None:
        super().__init__(run, first_block, blocks)
        self.arrays: dict[tuple[str, str, tuple[int, ...], int], Shared] = {}
        self.shared_used = 0

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
                lane = first(np.broadcast_to(outside, (self.lanes,)))
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


def _dynamic_note(a: Shared) -> str:
    if a.dynamic is None:
        return ""
    return (f"; {a.name} is extern __shared__: its size is the launch's shared_mem= ({a.dynamic} bytes here), "
            f"as in kernel(grid, block, args, shared_mem=n * {a.itemsize})")
