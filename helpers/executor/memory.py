"""The executor's memory, as CUDA has it, and every check on it.

Global memory is allocations: an array argument is a pointer into its base allocation (a slice `a[3:]` points 3
elements into `a`; one array passed twice is one allocation), so a kernel may read `in[-3]` inside the
allocation, and anything outside it is out of bounds, named against the allocation. Shared arrays belong to a
block, local arrays to a thread. Each access is checked for all its lanes at once: out of bounds, an element of
a shared or local array read before any thread wrote it, and races: two threads of a block touching one shared
element between two barriers with at least one write, and a global element read or written after another
thread wrote it with nothing ordering the two (another block, or this block before a barrier).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .batch import Batch, first
from .c_types import DTYPES
from .counters import WARP
from .errors import CudaCError, KernelFault, UnsupportedSyntax


class Allocation:
    """A flat array in global memory that every pointer into it shares, and the last write to each element
    (the writing thread's global id, its block's barrier count then, the line), kept from its first write. Where
    a kernel may write it (a pointer to it is not const), the last reads too: a later write by another thread
    with nothing ordering the two is a race (an in-place shift, y[i + 1] = x[i] with x and y one array)."""

    __slots__ = ("data", "name", "writer", "epoch", "line", "integer", "reader", "r_block", "r_epoch", "r_line",
                 "views")

    def __init__(self, data: np.ndarray, name: str) -> None:
        self.data, self.name = data, name
        self.integer = data.dtype.kind in "iub"
        self.views: dict[str, Allocation] = {data.dtype.str: self}
        self.writer: np.ndarray | None = None
        self.epoch: np.ndarray | None = None
        self.line: np.ndarray | None = None
        self.reader: np.ndarray | None = None  # the reading thread's global id; -2: several; -1: none
        self.r_block = self.r_epoch = self.r_line = None

    def watch_reads(self) -> None:
        if self.reader is None:
            self.reader = np.full(self.data.size, -1, np.int64)
            self.r_block = np.full(self.data.size, -1, np.int64)  # -2: readers in several blocks
            self.r_epoch = np.zeros(self.data.size, np.int64)
            self.r_line = np.zeros(self.data.size, np.int32)

    def track(self) -> None:
        if self.writer is None:
            self.writer = np.full(self.data.size, -1, np.int64)
            self.epoch = np.zeros(self.data.size, np.int64)
            self.line = np.zeros(self.data.size, np.int32)

    def view(self, ctype: str) -> Allocation:
        """The same bytes as elements of `ctype` (a byte buffer read as floats): one view per type, shared by
        every pointer cast to it, each with its own record of writers (races across two types go unseen)."""
        dtype = np.dtype(DTYPES[ctype])
        found = self.views.get(dtype.str)
        if found is None:
            whole = self.data.nbytes // dtype.itemsize * dtype.itemsize
            found = self.views[dtype.str] = Allocation(self.data.view(np.uint8)[:whole].view(dtype), self.name)
            found.views = self.views
            if self.reader is not None:
                found.watch_reads()
        return found


@dataclass(frozen=True, slots=True)
class Pointer:
    """Where a pointer points: an allocation and an element offset into it (one per lane, or one for all); the
    parameter it came from and where that parameter starts, for messages; whether the caller let it be written."""

    alloc: Allocation
    offset: Any
    name: str
    start: int = 0
    writable: bool = True


@dataclass(frozen=True, slots=True)
class SharedRef:
    """A pointer into a __shared__ or local array (an array passed to a __device__ function, &tile[i], a volatile
    float* to shared memory): the array and a flat element offset into it (one per lane, or one for all)."""

    array: Shared
    offset: Any

    def index(self, i: Any) -> tuple[Any, ...]:
        """The element `i` past where this points, as an index of each of the array's dimensions."""
        flat = np.add(self.offset, i, dtype=np.int64)
        parts = []
        for stride in self.array.strides[:-1]:
            parts.append(flat // stride)
            flat = flat % stride
        return (*parts, flat)


def allocations(arrays: list[np.ndarray], names: list[str], written: list[bool]) -> list[Pointer]:
    """A pointer for each array argument: views of one contiguous base array share that base's allocation.
    `written`: whether the kernel may write through each (its parameter is not a pointer to const)."""
    found: dict[int, Allocation] = {}
    pointers = []
    for array, name, may_write in zip(arrays, names, written, strict=True):
        base, start = _base(array)
        alloc = found.get(id(base))
        if alloc is None:
            alloc = found[id(base)] = Allocation(base.reshape(-1), name)
        if may_write:
            alloc.watch_reads()
        pointers.append(Pointer(alloc, start, name, start, bool(array.flags.writeable)))
    return pointers


def constant_pointer(data: np.ndarray, name: str) -> Pointer:
    """A pointer to a __constant__ array: kernels only read it (writes are refused when they are translated)."""
    return Pointer(Allocation(data, name), 0, name, 0, writable=False)


def _base(array: np.ndarray) -> tuple[np.ndarray, int]:
    """The contiguous array of the same dtype that `array` is a view into, and where it starts in it."""
    base = array
    while isinstance(base.base, np.ndarray) and base.base.dtype == array.dtype and base.base.flags.c_contiguous:
        base = base.base
    if base is array:
        return array, 0
    offset = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if offset % array.itemsize or not 0 <= offset // array.itemsize <= base.size - array.size:
        return array, 0
    return base, offset // array.itemsize


class Shared:
    """A __shared__ array (one copy per block of the batch) or a local one (one per lane), flat: whether anything
    wrote each element (for garbage) and, when shared, its last reader and writer in the block's barrier epoch."""

    def __init__(self, name: str, ctype: str, dims: tuple[int, ...], copies: int, space: str, base: int,
                 data: np.ndarray | None = None) -> None:
        self.name, self.space, self.dims, self.base = name, space, dims, base
        self.dynamic: int | None = None  # extern __shared__: the launch's shared_mem= bytes
        self.size = int(np.prod(dims))
        self.strides = tuple(int(np.prod(dims[i + 1:])) for i in range(len(dims)))
        self.data = np.zeros(self.size * copies, DTYPES[ctype]) if data is None else data
        self.views: dict[str, Shared] = {self.data.dtype.str: self}  # the same bytes as other types (view)
        self.itemsize = self.data.itemsize
        self.integer = self.data.dtype.kind in "iub"
        self.written = np.zeros(self.data.size, bool)
        if space == "shared":
            self.r_epoch = np.full(self.data.size, -1, np.int64)
            self.r_gid = np.full(self.data.size, -1, np.int64)
            self.r_line = np.zeros(self.data.size, np.int32)
            self.w_epoch = np.full(self.data.size, -1, np.int64)
            self.w_gid = np.full(self.data.size, -1, np.int64)
            self.w_line = np.zeros(self.data.size, np.int32)
            self.w_sync = np.zeros(self.data.size, np.int64)  # the writer's warp's __syncwarp() count then
            self.r_sync = np.zeros(self.data.size, np.int64)  # the readers' warp's __syncwarp() count at the last
            self.r_warp = np.full(self.data.size, -1, np.int64)  # the readers' warp in the batch; -2: several
            self.r_bits = np.zeros(self.data.size, np.int64)  # the readers' lanes of that warp, one bit each

    def view(self, ctype: str, line: int | None) -> Shared:
        """The same bytes as a flat array of `ctype` (extern __shared__ unsigned char smem[] carved into float and
        int arrays): one view per type, each with its own record of accesses (a race between accesses of two
        types goes unseen; a read of what another type wrote is not garbage)."""
        dtype = np.dtype(DTYPES[ctype])
        found = self.views.get(dtype.str)
        if found is not None:
            return found
        nbytes = self.size * self.itemsize
        if nbytes % dtype.itemsize:
            raise UnsupportedSyntax(f"the {self.space} array {self.name} ({nbytes} bytes) seen as {ctype}: the CPU "
                                    f"executor reinterprets whole arrays only; make its size a multiple of "
                                    f"{dtype.itemsize} bytes", line)
        copies = self.data.size // self.size
        found = Shared(self.name, ctype, (nbytes // dtype.itemsize,), copies, self.space, self.base,
                       self.data.view(dtype))
        found.dynamic, found.views = self.dynamic, self.views
        self.views[dtype.str] = found
        return found

    def written_elsewhere(self, flat: np.ndarray) -> np.ndarray:
        """For elements of this view: whether a view of another type wrote all their bytes."""
        done = np.zeros(flat.shape, bool)
        start = flat.astype(np.int64) * self.itemsize
        for other in self.views.values():
            if other is not self:
                covered = np.ones(flat.shape, bool)
                for byte in range(0, self.itemsize, other.itemsize):
                    covered &= other.written[(start + byte) // other.itemsize]
                done |= covered
        return done

    def element(self, flat: int) -> str:
        index, rest = [], flat % self.size
        for stride in self.strides:
            index.append(rest // stride)
            rest %= stride
        return self.name + "".join(f"[{i}]" for i in index)


MAX_ARRAY = 1 << 16


def check_size(name: str, size: int, space: str) -> None:
    if size > MAX_ARRAY:
        raise CudaCError(f"the {space} array {name} has {size:,} elements; the executor (and a GPU's 48 KB of "
                         "shared memory per block) allows far fewer")


# ------------------------------------------------------------------------------------------------ checks


def outside(c: Batch, p: Pointer, flat: Any, active: Any) -> int | None:
    """The first active lane (in thread order) whose element is outside the allocation, or None."""
    size = p.alloc.data.size
    bad = (flat < 0) | (flat >= size)
    if active is not None:
        bad = bad & active
    if not np.any(bad):
        return None
    return first(np.broadcast_to(bad, (c.lanes,)))


def out_of_bounds(c: Batch, p: Pointer, flat: Any, lane: int, line: int, verb: str) -> KernelFault:
    """The fault for lane's access outside the allocation, named against it."""
    size = p.alloc.data.size
    at = int(np.broadcast_to(flat, (c.lanes,))[lane])
    index = at - p.start
    if p.start == 0 and p.alloc.name == p.name:
        where = f"{p.name} has {size} elements (0 to {size - 1})"
    else:
        where = (f"that is element {at} of the allocation {p.name} points into, which has {size} elements "
                 f"(0 to {size - 1}; {p.name} starts at its element {p.start})")
    return c.fault(f"out-of-bounds {verb}", f"{verb} {p.name}[{index}], but {where}: is a bounds check such as "
                   "if (i < n) missing or wrong?", line, lane)


def global_race(c: Batch, p: Pointer, flat: np.ndarray, lanes: np.ndarray, line: int, doing: str) -> None:
    """A read or write of elements another thread wrote with nothing ordering the two."""
    alloc = p.alloc
    writer = alloc.writer[flat]
    gid = c.gid[lanes]
    other = (writer >= 0) & (writer != gid)
    if not other.any():
        return
    block_of_writer = writer // c.threads
    bad = other & ((block_of_writer != gid // c.threads) | (alloc.epoch[flat] == c.lep[lanes]))
    if bad.any():
        k = first(bad)
        raise _global_race_fault(c, p, int(flat[k]), int(lanes[k]), int(writer[k]), int(alloc.line[flat[k]]),
                                 line, doing)


def _global_race_fault(c: Batch, p: Pointer, flat: int, lane: int, writer: int, at: int, line: int,
                       doing: str) -> KernelFault:
    same = writer // c.threads == c.gid[lane] // c.threads
    who = f"thread {c.xyz_thread(writer % c.threads)} of " + (
        "the same block" if same else f"block {c.xyz_block(writer // c.threads)}")
    fix = ("a plain store and an atomic on one element race like two plain stores: zero the array before the "
           "launch (cupy.zeros) or in a kernel of its own" if doing.startswith("atomic") else
           "several threads adding into one element need atomicAdd")
    return c.fault("race", f"will {doing} {p.name}[{flat - p.start}], which {who} wrote at line {at} in this "
                   f"launch with nothing ordering the two: on a GPU the result depends on which runs "
                   f"first ({fix})", line, lane)


def record_reads(c: Batch, p: Pointer, flat: np.ndarray, lanes: np.ndarray, line: int) -> None:
    """Keep who read each element since its block's last barrier (several threads: -2; several blocks: -2)."""
    alloc = p.alloc
    gid, epoch = c.gid[lanes], c.lep[lanes]
    block = gid // c.threads
    reader, r_block = alloc.reader[flat], alloc.r_block[flat]
    fresh = (reader == -1) | ((r_block == block) & (alloc.r_epoch[flat] != epoch))
    elsewhere = ~fresh & (r_block != block)
    alloc.r_block[flat[elsewhere]] = -2
    alloc.reader[flat[~fresh & (reader != gid)]] = -2
    if fresh.any():
        f, g = flat[fresh], gid[fresh]
        alloc.reader[f], alloc.r_block[f], alloc.r_epoch[f], alloc.r_line[f] = g, block[fresh], epoch[fresh], line
        alloc.r_block[f[alloc.r_block[f] != block[fresh]]] = -2  # lanes of two blocks on one element
        alloc.reader[f[alloc.reader[f] != g]] = -2  # two lanes of this read on one element


def read_race(c: Batch, p: Pointer, flat: np.ndarray, lanes: np.ndarray, line: int) -> None:
    """A write of elements another thread read with nothing ordering the two: a race."""
    alloc = p.alloc
    gid, epoch = c.gid[lanes], c.lep[lanes]
    reader = alloc.reader[flat]
    bad = (reader != -1) & (reader != gid) & ((alloc.r_block[flat] != gid // c.threads)
                                              | (alloc.r_epoch[flat] == epoch))
    if bad.any():
        k = first(bad)
        other, block = int(reader[k]), int(alloc.r_block[flat[k]])
        who = ("other threads" if other == -2 else f"thread {c.xyz_thread(other % c.threads)}") + (
            " of the same block" if block == gid[k] // c.threads else " of other blocks" if block == -2
            else f" of block {c.xyz_block(block)}")
        at = int(alloc.r_line[flat[k]])
        fix = ("several threads adding into one element need atomicAdd" if at == line else
               "write to another array, or order the two with a __syncthreads() within a block")
        raise c.fault("race", f"will write {p.name}[{int(flat[k]) - p.start}], which {who} read at line {at} with "
                      f"nothing ordering the two: on a GPU the read may see the old value or the new one ({fix})",
                      line, int(lanes[k]))


def record_writes(c: Batch, p: Pointer, flat: np.ndarray, lanes: np.ndarray, line: int, values: Any) -> None:
    """Keep each element's writer; two lanes of this store writing different values to one element race."""
    alloc = p.alloc
    alloc.track()
    gid = c.gid[lanes]
    alloc.writer[flat] = gid
    clash = alloc.writer[flat] != gid
    if clash.any() and (pair := _pair(flat, values)) is not None:
        one, two = pair
        raise _global_race_fault(c, p, int(flat[two]), int(lanes[two]), int(gid[one]), line, line, "write")
    alloc.epoch[flat] = c.lep[lanes]
    alloc.line[flat] = line


def _pair(flat: np.ndarray, values: Any) -> tuple[int, int] | None:
    """The first two lanes (in thread order) of one store that wrote different values to one element; None when
    every element's lanes wrote the same value (flag = 1 from every thread: whichever lands, the element holds
    it, so compute-sanitizer's racecheck counts it benign)."""
    values = np.broadcast_to(values, flat.shape)
    order = np.argsort(flat, kind="stable")
    f, v = flat[order], values[order]
    differ = (f[1:] == f[:-1]) & (v[1:] != v[:-1])
    if not differ.any():
        return None
    k = int(np.flatnonzero(differ)[0])
    return int(order[k]), int(order[k + 1])


def uninitialised(c: Batch, a: Shared, flat: np.ndarray, lanes: np.ndarray, line: int) -> None:
    unwritten = ~a.written[flat]
    if unwritten.any() and len(a.views) > 1:
        unwritten &= ~a.written_elsewhere(flat)
    if unwritten.any():
        k = first(unwritten)
        hint = (" (shared memory starts with garbage: write every element before any thread reads it, with a "
                "__syncthreads() between the writes and the reads)" if a.space == "shared" else "")
        raise c.fault("uninitialised read", f"read {a.element(int(flat[k]))}, which no thread has written yet"
                      + hint, line, int(lanes[k]))


def shared_read(c: Batch, a: Shared, flat: np.ndarray, lanes: np.ndarray, line: int, doing: str = "read") -> None:
    """A read of shared elements (or an atomic update: `doing`): after another thread's write in this epoch, with
    no __syncwarp() between them when they share a warp, it races; else it is recorded."""
    gid, epoch = c.gid[lanes], c.lep[lanes]
    raced = (a.w_epoch[flat] == epoch) & (a.w_gid[flat] != gid)
    if raced.any() and (raced := _unsynced(c, a, flat, lanes, raced, "wrote")).any():
        k = first(raced)
        raise _shared_race(c, a, int(flat[k]), int(lanes[k]), "wrote", int(a.w_gid[flat[k]]),
                           int(a.w_line[flat[k]]), doing, line)
    fresh = a.r_epoch[flat] != epoch
    if c.warp_sync.used:  # reads a __syncwarp() orders before this one are forgotten, as a barrier's are
        fresh |= c.warp_sync.ordered(lanes, a.r_warp[flat], a.r_bits[flat], a.r_sync[flat])
    several = ~fresh & (a.r_gid[flat] != gid)
    a.r_gid[flat[several]] = -2
    warp = lanes // WARP
    if fresh.any():
        f, g = flat[fresh], gid[fresh]
        a.r_epoch[f], a.r_gid[f], a.r_line[f] = epoch[fresh], g, line
        a.r_gid[f[a.r_gid[f] != g]] = -2  # two lanes of this read on one element
        a.r_warp[f], a.r_bits[f] = warp[fresh], 0
    if not c.warp_sync.possible:
        return
    np.bitwise_or.at(a.r_bits, flat, np.left_shift(1, lanes % WARP))
    a.r_warp[flat[a.r_warp[flat] != warp]] = -2  # readers in two warps
    a.r_sync[flat] = c.warp_sync.count[warp]


def _unsynced(c: Batch, a: Shared, flat: np.ndarray, lanes: np.ndarray, raced: np.ndarray, did: str) -> np.ndarray:
    """`raced` less the lanes that a __syncwarp() orders after the element's writer ('wrote') or readers ('read')."""
    k = np.flatnonzero(raced)
    f, on = flat[k], lanes[k]
    if did == "wrote":
        writer = c.lane_of(a.w_gid[f])
        synced = c.warp_sync.ordered(on, writer // WARP, np.left_shift(1, writer % WARP), a.w_sync[f])
    else:
        synced = c.warp_sync.ordered(on, a.r_warp[f], a.r_bits[f], a.r_sync[f])
    if not synced.any():
        return raced
    raced = raced.copy()
    raced[k[synced]] = False
    return raced


def shared_write(c: Batch, a: Shared, flat: np.ndarray, lanes: np.ndarray, line: int, values: Any) -> None:
    """A write of shared elements: after another thread's read or write in this epoch it races."""
    gid, epoch = c.gid[lanes], c.lep[lanes]
    for did, e, who, at in (("wrote", a.w_epoch, a.w_gid, a.w_line), ("read", a.r_epoch, a.r_gid, a.r_line)):
        raced = (e[flat] == epoch) & (who[flat] != gid)
        if raced.any() and (raced := _unsynced(c, a, flat, lanes, raced, did)).any():
            k = first(raced)
            raise _shared_race(c, a, int(flat[k]), int(lanes[k]), did, int(who[flat[k]]), int(at[flat[k]]),
                               "write", line)
    a.w_gid[flat] = gid
    clash = a.w_gid[flat] != gid
    if clash.any() and (pair := _pair(flat, values)) is not None:  # two lanes of this store: different values
        one, two = pair
        raise _shared_race(c, a, int(flat[two]), int(lanes[two]), "wrote", int(gid[one]), line, "write", line,
                           warp=False)
    a.w_epoch[flat], a.w_line[flat] = epoch, line
    a.w_sync[flat] = c.warp_sync.count[lanes // WARP]
    a.written[flat] = True


def _shared_race(c: Batch, a: Shared, flat: int, lane: int, did: str, other: int, at: int, doing: str,
                 line: int, warp: bool = True) -> KernelFault:
    who = "other threads" if other == -2 else f"thread {c.xyz_thread(other % c.threads)}"
    if warp and _same_warp(c, a, flat, lane, did, other):
        return _warp_race(c, a, flat, lane, did, other, at, doing, line)
    return c.fault("race", f"will {doing} {a.element(flat)}, which {who} of the block {did} at line {at} with no "
                   "__syncthreads() in between: the result depends on which thread runs first (is a "
                   "__syncthreads() missing?)", line, lane)


def _same_warp(c: Batch, a: Shared, flat: int, lane: int, did: str, other: int) -> bool:
    """Whether the other side of a race (a thread, or several readers: -2) is in `lane`'s warp."""
    if other >= 0:
        return bool(c.lane_of(other) // WARP == lane // WARP)
    return did == "read" and bool(a.r_warp[flat] == lane // WARP)


def _warp_race(c: Batch, a: Shared, flat: int, lane: int, did: str, other: int, at: int, doing: str,
               line: int) -> KernelFault:
    """A race between lanes of one warp: warp-synchronous code needs __syncwarp() since Volta."""
    me = c.xyz_thread(int(c.gid[lane]) % c.threads)
    pair = f"threads {c.xyz_thread(other % c.threads)} and {me} are" if other >= 0 else f"they and thread {me} are"
    who = "other threads" if other == -2 else f"thread {c.xyz_thread(other % c.threads)}"
    first_access = "write" if did == "wrote" else "read"
    tail = (" (this one statement reads and writes it: read into a variable, then __syncwarp(), then write, as in "
            "v += s[i + 16]; __syncwarp(); s[i] = v;)" if at == line and first_access != doing else "")
    if a.space == "shared" and not {line, at} & c.run.volatile_lines and not c.run.syncwarp and "update" not in (
            doing, first_access):  # warp-synchronous code that trusts plain loads and stores: told apart
        return c.fault("race", f"will {doing} {a.element(flat)}, which {who} of the block {did} at line {at} with "
                       f"nothing ordering the two: {pair} in the same warp, and {a.name} is not read through a "
                       "volatile pointer, so the compiler may keep its elements in registers and a lane never sees "
                       "the others' writes: wrong on every GPU, before Volta too (worse than the same code with "
                       "volatile, which only Volta's independent thread scheduling breaks). Put __syncwarp() between "
                       f"the {first_access} and the {doing}{tail}, or use __shfl_down_sync", line, lane)
    return c.fault("race", f"will {doing} {a.element(flat)}, which {who} of the block {did} at line {at} with nothing "
                   f"ordering the two: {pair} in the same warp, but since Volta (independent thread scheduling) a "
                   f"warp's lanes need not run in step: put __syncwarp() between the {first_access} and the "
                   f"{doing}{tail}, or __syncthreads(), which orders the whole block", line, lane)
