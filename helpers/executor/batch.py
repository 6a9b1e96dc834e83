"""A batch of blocks as lanes: which thread and block each lane is, the blocks' barrier epochs, the warps'
__syncwarp() record, and the faults that name a lane's thread and block.

A launch runs its grid in batches of whole blocks; each block's threads are padded to whole warps of 32 lanes, and
the padding is never active. `Batch` is the base of the runtime's `Lanes` (helpers.executor.runtime), and what the
checks on memory (helpers.executor.memory) know of the lanes they check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .counters import WARP
from .errors import KernelFault


class Batch:
    """The lanes of one batch of blocks: their coordinates, which of them are real threads, the blocks' barrier
    epochs."""

    def __init__(self, run: Any, first_block: int, blocks: int) -> None:
        self.run, self.counters = run, run.counters
        bdx, bdy, bdz = run.block
        gdx, gdy, _ = run.grid
        self.threads = bdx * bdy * bdz
        self.padded = -(-self.threads // WARP) * WARP
        self.blocks, self.lanes = blocks, blocks * self.padded
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
        self.real_warps = blocks * -(-self.threads // WARP)
        self.real_lanes = blocks * self.threads
        self.warp_sync = WarpSync(self.lanes, run.syncwarp)  # __syncwarp() calls, for the race check
        self.mapping = run.mapping  # how a WMMA fragment's x[i] maps to tile elements (helpers.executor.wmma)

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
            return 0 if self.real is None else first(self.real)
        return first(e)

    def count(self, e: Any) -> int:
        return self.real_lanes if e is None else int(np.count_nonzero(e))

    def lane_of(self, gid: Any) -> Any:
        """The lane of the batch that runs the thread with global id `gid` (a thread of one of its blocks)."""
        return (gid // self.threads - self.first_block) * self.padded + gid % self.threads


class WarpSync:
    """The __syncwarp() calls of a batch's warps: how many each warp has made, and for each lane the last one it
    took part in and that call's mask. Two accesses by lanes of one warp are ordered when, after the first, both
    lanes took part in one __syncwarp()."""

    def __init__(self, lanes: int, possible: bool = True) -> None:
        self.possible = possible  # the source calls __syncwarp(): reads keep their warp (else they need not)
        self.count = np.zeros(lanes // WARP, np.int64)
        self.last = np.zeros(lanes, np.int64)
        self.mask = np.zeros(lanes, np.int64)
        self.used = False  # whether any warp has called __syncwarp()

    def sync(self, lanes: np.ndarray, masks: np.ndarray) -> None:
        """A __syncwarp() by `lanes` (lanes of the batch, in order), each with its mask."""
        warps = lanes // WARP
        self.used = True
        self.count[np.unique(warps)] += 1
        self.last[lanes] = self.count[warps]
        self.mask[lanes] = masks

    def ordered(self, lanes: np.ndarray, warp: np.ndarray, bits: np.ndarray, since: np.ndarray) -> np.ndarray:
        """For each of `lanes`: whether its last __syncwarp() came after its warp's count was `since` and named
        every lane of `bits`, in warp `warp`, as well: then their accesses before it come before this lane's."""
        return (warp == lanes // WARP) & (self.last[lanes] > since) & ((bits & ~self.mask[lanes]) == 0)


def first(bad: np.ndarray) -> int:
    """The first lane where `bad` holds (0 if none does)."""
    return int(np.argmax(bad))


def unflatten(index: int, shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """A linear thread or block index as (x, y, z) in `shape`, x fastest (CUDA's order)."""
    return index % shape[0], index // shape[0] % shape[1], index // (shape[0] * shape[1])


def _xyz(t: tuple[int, ...], shape: tuple[int, int, int]) -> str:
    """A thread's or block's coordinates in as many dimensions as the launch has: (5,) or (5, 2)."""
    used = 3 if shape[2] > 1 else 2 if shape[1] > 1 else 1
    return "(" + ", ".join(map(str, t[:used])) + (",)" if used == 1 else ")")
