"""Atomics on lanes: atomicAdd and CUDA's other atomic functions (atomicCAS too) by the active lanes of a batch, on
global, shared or local memory: one lane at a time, in thread order, where lanes share an element; a spin lock that
never opens in lock step is a fault, not a hang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import memory
from .access import Access
from .c_types import CONVERSIONS
from .counters import WARP
from .masks import _eff
from .memory import SharedRef

#: Rounds in a row that an atomicCAS may fail for every lane that makes it before it is called a spin lock that
#: never opens (a compare-and-swap loop with contention has a winner every round).
MAX_SPINS = 2_000


class Atomics(Access):
    """A batch's lanes with the atomics the translated code makes."""

    def __init__(self, run: Any, first_block: int, blocks: int) -> None:
        super().__init__(run, first_block, blocks)
        self.cas_failed: dict[int, int] = {}  # an atomicCAS line's rounds in a row that no lane won
        self.cas_held: dict[int, tuple[int, int]] = {}  # the lane that last won it, and the element

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
