"""The lock-step runtime: the threads of a batch of blocks run together as NumPy vectors of lanes.

A launch runs its grid in batches of whole blocks (at most BATCH_LANES lanes at once); each block's threads are
padded to whole warps of 32 lanes, and the padding is never active. `Lanes` is `_c` in the translated code, built
up in layers, one module each: `batch` (who each lane is, faults that name it), `access` (loads and stores),
`atomics`, and here control flow, barriers, printf and assert. `namespace()` is everything else the translated code
calls: `masks` (masks and variables per lane) and `operators` (C's operators and math on lanes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import masks, operators, printing
from .atomics import Atomics
from .batch import first
from .c_types import CONVERSIONS
from .counters import WARP
from .masks import _NONE, _eff

#: Loop rounds (lock-step: one round of a loop for all its active lanes) a launch may take before it is
#: stopped as a loop that never ends.
MAX_STEPS = 1_000_000
#: The most lanes run at once: big enough that NumPy's work dwarfs Python's, small enough for 2 GB.
BATCH_LANES = 1 << 17


class Lanes(Atomics):
    """The lanes of one batch of blocks (`_c` in the translated code): their coordinates, the blocks' barrier
    epochs, shared memory, and the loads, stores, atomics and barriers the code makes."""

    def __init__(self, run: Any, first_block: int, blocks: int) -> None:
        super().__init__(run, first_block, blocks)
        _NONE.lanes = self.lanes

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

    # ---------------------------------------------------------------- device functions

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
                             first(np.broadcast_to(failed, (self.lanes,))))


def namespace() -> dict[str, Any]:
    """What the translated code may call: C's conversions, masks and variables, operators and math."""
    return {**CONVERSIONS, **masks.RUNTIME, **operators.RUNTIME}


__all__ = ["BATCH_LANES", "MAX_STEPS", "Lanes", "namespace"]
