"""What a launch did, counted exactly as it ran, warp by warp: the numbers that explain a kernel's speed.

A warp is 32 threads of a block in order of x, then y, then z (a block's last warp may be partly empty). A
request is one warp's load or store at one line: a global one touches 32-byte sectors (coalesced: a warp reading
32 neighbouring floats touches 4; one float in each of 32 rows touches 32) in 128-byte lines (1 and 32); a shared
one is served in as many passes (wavefronts) as the most distinct 4-byte words any one of the 32 banks holds (2
words of one bank: a 2-way conflict; the same word read by many lanes is a broadcast, one pass), at least one per
phase (a float4 request has 4 phases of 8 lanes: 4 passes is conflict-free). A warp step is one statement, or one
branch or loop condition, run by a warp with at least one active lane; a warp primitive (a shuffle or a vote such
as __ballot_sync) is one more. Where the model is simpler than a GPU: shared arrays are laid out one after
another in declaration order, each at a 16-byte boundary; 8-byte elements are counted by their first word; the
L1 and L2 caches are not modelled (sectors are requested, not necessarily fetched from DRAM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

WARP = 32


@dataclass
class Counters:
    """Per launch: requests and what they touched, lanes per warp step, FLOPs, barriers, atomics, and the block's
    threads and shared memory (which limit how many blocks an SM holds at once: occupancy)."""

    threads_per_block: int = 0
    shared_bytes_per_block: int = 0
    blocks: int = 0
    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_load_bytes: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    global_store_bytes: int = 0
    shared_load_requests: int = 0
    shared_store_requests: int = 0
    shared_wavefronts: int = 0
    #: The passes the shared requests need at best: one per request, n for an n-word vector (LDS.64/128 is
    #: served in n phases of 32/n lanes), so bank conflicts are the passes beyond these.
    shared_phases: int = 0
    shared_load_wavefronts: int = 0  # the loads' share of shared_wavefronts
    shared_load_phases: int = 0  # and of shared_phases
    #: 128-byte lines the global requests touch: the L1 cache looks each one up in a cycle of its own.
    global_load_lines: int = 0
    global_store_lines: int = 0
    #: The most sectors any one global request touched: an average can hide one strided access among many good ones.
    worst_sectors: int = 0
    warp_steps: int = 0
    active_lanes: int = 0
    flops: int = 0
    barriers: int = 0
    atomics: int = 0
    shuffles: int = 0  # __shfl_*_sync calls, one per warp that makes one
    tensor_ops: int = 0  # wmma::mma_sync calls, one per warp: a tile product on the tensor cores
    tensor_flops: int = 0  # the FLOPs those products do (2 m n k each); also counted in flops
    tensor_loads: int = 0  # wmma::load_matrix_sync calls, one per warp: what feeds them
    tensor_stores: int = 0  # wmma::store_matrix_sync calls, one per warp

    @property
    def sectors_per_request(self) -> float:
        """Global sectors per load or store request: 4 for 32 coalesced floats, up to 32 when every lane strays."""
        requests = self.global_load_requests + self.global_store_requests
        return (self.global_load_sectors + self.global_store_sectors) / requests if requests else 0.0

    @property
    def load_sectors_per_request(self) -> float:
        """Global sectors per LOAD request: 4 when a warp reads 32 neighbouring floats, up to 32 when each lane
        strays (a broadcast, one number for all 32 lanes, is 1)."""
        return self.global_load_sectors / self.global_load_requests if self.global_load_requests else 0.0

    @property
    def bank_conflicts(self) -> int:
        """Extra shared-memory passes: a request served in k passes where it needed 1 has k - 1 conflicts."""
        return self.shared_wavefronts - self.shared_phases

    @property
    def ways_per_request(self) -> float:
        """Passes per pass needed: 1 without bank conflicts, 32 when all 32 lanes hit one bank's words (a float4
        request needs 4 passes at best, and counts as 1-way when it takes 4)."""
        return self.shared_wavefronts / self.shared_phases if self.shared_phases else 0.0

    @property
    def load_ways(self) -> float:
        """ways_per_request of the shared loads alone (a transpose's reads may conflict where its writes do not)."""
        return self.shared_load_wavefronts / self.shared_load_phases if self.shared_load_phases else 0.0

    @property
    def lines_per_request(self) -> float:
        """Global 128-byte lines per load or store request: 1 for 32 coalesced floats, 32 when every lane strays."""
        requests = self.global_load_requests + self.global_store_requests
        return (self.global_load_lines + self.global_store_lines) / requests if requests else 0.0

    @property
    def useful_lanes(self) -> float:
        """The share of a warp's 32 lanes that did work, per step: 1.0 without divergence or empty lanes."""
        return self.active_lanes / (WARP * self.warp_steps) if self.warp_steps else 0.0

    @property
    def flops_per_byte(self) -> float:
        """FLOPs per byte requested from global memory (loads and stores): the kernel's arithmetic intensity."""
        moved = self.global_load_bytes + self.global_store_bytes
        return self.flops / moved if moved else 0.0


def _rows(keys: Any, active: np.ndarray | None, lanes: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Keys as one row per warp with at least one active lane; an inactive lane repeats an active lane's key."""
    keys = np.broadcast_to(np.asarray(keys, np.int64), (lanes,)).reshape(-1, WARP)
    if active is None:
        return keys, np.ones(keys.shape, bool)
    on = active.reshape(-1, WARP)
    used = on.any(axis=1)
    keys, on = keys[used], on[used]
    first = keys[np.arange(len(keys)), on.argmax(axis=1)]
    return np.where(on, keys, first[:, None]), on


def distinct_per_warp(keys: Any, active: np.ndarray | None, lanes: int) -> tuple[int, int]:
    """(warps with an active lane, the sum over them of the distinct keys their active lanes hold)."""
    per_warp = distinct_each_warp(keys, active, lanes)
    return len(per_warp), int(per_warp.sum())


def distinct_each_warp(keys: Any, active: np.ndarray | None, lanes: int) -> np.ndarray:
    """For each warp with an active lane, how many distinct keys its active lanes hold."""
    if np.ndim(keys) == 0:
        warps = lanes // WARP if active is None else int(active.reshape(-1, WARP).any(axis=1).sum())
        return np.ones(warps, np.int64)
    rows, _ = _rows(keys, active, lanes)
    step = np.diff(rows, axis=1)
    if (step < 0).any():
        step = np.diff(np.sort(rows, axis=1), axis=1)
    return 1 + np.count_nonzero(step, axis=1)


def wavefronts(words: Any, active: np.ndarray | None, lanes: int) -> tuple[int, int]:
    """(shared requests, passes): per warp, the most distinct words any one bank holds (at least 1)."""
    if np.ndim(words) == 0:
        requests, _ = distinct_per_warp(0, active, lanes)
        return requests, requests
    rows, _ = _rows(words, active, lanes)
    banks = rows & (WARP - 1)
    seen = np.full(rows.shape, -1, np.int64)
    index = np.arange(len(rows))[:, None]
    seen[index, banks] = rows
    clash = (seen[index, banks] != rows).any(axis=1)
    requests = passes = len(rows)
    if clash.any():
        rows, banks = rows[clash], banks[clash]
        order = np.argsort(banks * (1 << 40) + rows, axis=1)
        words_sorted = np.take_along_axis(rows, order, axis=1)
        banks_sorted = np.take_along_axis(banks, order, axis=1)
        new = np.ones(rows.shape, bool)
        new[:, 1:] = (words_sorted[:, 1:] != words_sorted[:, :-1]) | (banks_sorted[:, 1:] != banks_sorted[:, :-1])
        per_bank = np.zeros((len(rows), WARP), np.int64)
        np.add.at(per_bank, (np.arange(len(rows))[:, None].repeat(WARP, 1), banks_sorted), new)
        passes += int(per_bank.max(axis=1).sum()) - len(rows)
    return requests, passes
