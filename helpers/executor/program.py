"""A CUDA C program on the CPU executor: translate once, then launch its kernels on NumPy arrays.

    program = Program(source)                       # translates every function of the source
    run = program.launch("vector_add", grid=(4,), block=(32,), args=(a, b, out, np.int32(n)))
    run.counters.sectors_per_request                # what the launch did, warp by warp

A launch runs the grid a batch of blocks at a time, each batch in lock step (helpers.executor.runtime), checking
every access (helpers.executor.memory) and counting what it did (helpers.executor.counters). With `trace=True`
it keeps the path each thread took through the branches (for pictures of divergence). `check_launch` refuses a
GPU launch the executor would refuse, before it runs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.validate import positive_int
from . import groups, warp, wmma
from .arguments import MAX_LAUNCH_THREADS, arguments, dynamic_shared_bytes, executor_shape, launch_shape
from .counters import WARP, Counters
from .errors import KernelFault
from .front import CudaCError
from .memory import allocations, constant_pointer
from .runtime import BATCH_LANES, MAX_STEPS, Lanes, namespace
from .scopes import Function
from .translate import TOO_DEEP
from .unit import translate_unit

Path = list[tuple[int, bool]]
#: The most branch and loop tests a launch with trace=True records, all threads together (each one is a Python
#: object: a million take a few seconds and about 100 MB).
MAX_TRACED = 1_000_000
TOO_DEEP_CALLS = ("__device__ calls nest deeper than the CPU executor follows (each C call is a Python call; Python "
                  "stops at a few hundred): is a function calling itself without end? On a GPU, recursion too deep "
                  "overflows the thread's stack (\"unspecified launch failure\"); write the recursion as a loop")


@dataclass
class Launch:
    """One launch: what it ran, what it counted, and with trace=True every thread's path through the branches."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    max_steps: int
    shared_mem: int = 0  # bytes of dynamic shared memory per block (extern __shared__)
    steps: int = 0
    printed: int = 0  # printf lines so far
    syncwarp: bool = False  # the kernel's source calls __syncwarp()
    volatile_lines: frozenset[int] = frozenset()  # lines whose shared accesses go through a volatile name
    mapping: int = 0  # how a WMMA fragment's x[i] maps to its tile's elements (0 or 1; CUDA leaves it unspecified)
    counters: Counters = field(default_factory=Counters)
    paths: dict[tuple[tuple[int, int, int], tuple[int, int, int]], Path] | None = None
    traced: int = 0  # the branch and loop tests recorded in paths so far

    def record(self, lanes: Lanes, line: int, active: Any, taken: Any) -> None:
        """Each active thread's way through the branch or loop test at `line` (at most MAX_TRACED a launch)."""
        on = np.flatnonzero(np.broadcast_to(active if active is not None else
                                            (lanes.real if lanes.real is not None else True), (lanes.lanes,)))
        self.traced += on.size
        if self.traced > MAX_TRACED:
            raise CudaCError(f"trace=True keeps each thread's way through every branch and loop test, and this launch "
                             f"passed {MAX_TRACED:,} of them (at line {line}): trace a smaller launch (a few blocks "
                             "show divergence as well as many), or launch without trace=True")
        way = np.broadcast_to(taken, (lanes.lanes,))
        for lane in on.tolist():
            self.paths[lanes.coordinates(lane)].append((line, bool(way[lane])))

    def warps(self, block: tuple[int, int, int] = (0, 0, 0)) -> list[list[Path]]:
        """The paths of `block`'s threads, warp by warp (32 threads in order of x, then y, then z)."""
        bx, by, bz = self.block
        ordered = [self.paths[(block, (x, y, z))] for z in range(bz) for y in range(by) for x in range(bx)]
        return [ordered[i:i + WARP] for i in range(0, len(ordered), WARP)]


class Program:
    """Every function of a CUDA C source, translated once; `launch` runs one of its kernels."""

    def __init__(self, source: str, name_expressions: Sequence[str] = ()) -> None:
        self.source = source
        unit = translate_unit(source, name_expressions)
        self.functions, self.kernels, self._exported = unit.functions, unit.kernels, unit.exported
        self.constant_arrays = unit.constant_arrays  # __constant__ memory, filled by the host between launches
        self.syncwarp = unit.syncwarp
        self.volatile_lines = frozenset(unit.volatile_lines)
        self.fragment_elements = unit.fragment_elements  # frag.x[i]: run under both mappings (helpers.executor.wmma)
        names = namespace() | warp.RUNTIME | groups.RUNTIME | wmma.RUNTIME
        code = "\n\n".join(dict.fromkeys(f.python for f in self.functions.values()))
        try:
            compiled = compile(code, "<kernel>", "exec")
        except (SyntaxError, RecursionError, MemoryError):  # Python's nesting limits, met by valid C
            raise CudaCError(TOO_DEEP) from None
        exec(compiled, names)  # noqa: S102 - our translation of the learner's C
        self._namespace = names

    def params(self, name: str) -> list[tuple[str, Any]]:
        """The parameters of kernel `name`, with their C types."""
        return self.kernel(name).params

    def kernel(self, name: str) -> Function:
        """Kernel `name`, or a CudaCError naming the kernels there are (or why CuPy could not find it)."""
        if name not in self.kernels and isinstance(name, str) and "<" in name:
            given = ", ".join(repr(k) for k in self.kernels if "<" in k) or "none"
            raise CudaCError(f"no template instance called {name!r}: an instance is found by a name expression given "
                             f"to RawModule(code, name_expressions=[...]), written exactly as there; given: {given}")
        if name not in self.kernels:
            kernels = ", ".join(self.kernels)
            raise CudaCError(f"no kernel called {name!r} in this source; its kernels: {kernels} (a kernel needs "
                             'extern "C" __global__ before it, and the exact name)')
        kernel = self.functions[name]
        if name not in self._exported:
            raise CudaCError(f'the kernel {name} is not declared extern "C": C++ renames it, so CuPy cannot find it '
                             f'by its name (on a GPU: "named symbol not found"); write extern "C" __global__ void '
                             f"{name}(...), or name it in cupy.RawModule(code=..., name_expressions=['{name}'])")
        return kernel

    def launch(self, name: str, grid: Sequence[int] | int, block: Sequence[int] | int, args: Sequence[Any], *,
               trace: bool = False, max_steps: int = MAX_STEPS, shared_mem: int = 0) -> Launch:
        """Run kernel `name` on a grid of blocks of threads, as `kernel<<<grid, block>>>(args...)` would.

        Array arguments are NumPy arrays, written in place; scalars are NumPy scalars of the parameter's type.
        `shared_mem`: the bytes of each block's extern __shared__ array, as CuPy's shared_mem= gives them. A
        source that reads or writes a WMMA fragment's x[i] runs twice, under two mappings of x[i] to the tile
        (CUDA leaves it unspecified): results that differ are a fault.
        """
        if not self.fragment_elements:
            return self._launch(name, grid, block, args, trace, max_steps, shared_mem, 0)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        self._launch(name, grid, block, copies, False, max_steps, shared_mem, 1)
        run = self._launch(name, grid, block, args, trace, max_steps, shared_mem, 0)
        for k, (mine, other) in enumerate(zip(args, copies, strict=True)):
            if isinstance(mine, np.ndarray) and not np.array_equal(mine, other, equal_nan=mine.dtype.kind == "f"):
                where = int(np.flatnonzero((mine != other).reshape(-1))[0])
                param = self.kernel(name).params[k][0]
                raise KernelFault("fragment mapping", f"fragment mapping: argument {k + 1} ({param}) differs at "
                                  f"element {where} when a fragment's x[i] is mapped to its tile in "
                                  "another way: CUDA leaves which matrix element x[i] is unspecified, so a kernel "
                                  "may apply the same operation to every x[i] (scale, add a constant) but not depend "
                                  "on where an element sits; load and store whole tiles instead")
        return run

    def _launch(self, name: str, grid: Sequence[int] | int, block: Sequence[int] | int, args: Sequence[Any],
                trace: bool, max_steps: int, shared_mem: int, mapping: int) -> Launch:
        """One launch, with fragment elements mapped by `mapping` (see launch)."""
        kernel = self.kernel(name)
        grid3, block3 = executor_shape(grid, block)
        values = arguments(name, kernel.params, args)
        arrays = [(i, v) for i, v in enumerate(values) if isinstance(v, np.ndarray)]
        names = [kernel.params[i][0] for i, _ in arrays]
        pointers = allocations([v for _, v in arrays], names, [name not in kernel.const for name in names])
        for (i, _), pointer in zip(arrays, pointers, strict=True):
            values[i] = pointer
        run = Launch(name, grid3, block3, positive_int("max_steps", max_steps, "loop rounds a launch may take"),
                     dynamic_shared_bytes(shared_mem), syncwarp=self.syncwarp, volatile_lines=self.volatile_lines,
                     mapping=mapping)
        if trace:
            run.paths = {}
            for b in np.ndindex(*grid3[::-1]):
                for t in np.ndindex(*block3[::-1]):
                    run.paths[(b[::-1], t[::-1])] = []
        for const_name, data in self.constant_arrays.items():
            self._namespace[f"__constant_{const_name}"] = constant_pointer(data, const_name)
        fn = self._namespace[kernel.py_name]
        threads = int(np.prod(block3))
        blocks = int(np.prod(grid3))
        per_batch = max(1, BATCH_LANES // (-(-threads // WARP) * WARP))
        run.counters.threads_per_block, run.counters.blocks = threads, blocks
        with np.errstate(all="ignore"):
            for start in range(0, blocks, per_batch):
                lanes = Lanes(run, start, min(per_batch, blocks - start))
                try:
                    fn(lanes, lanes.real, *values)
                except RecursionError:  # each C call is a Python call
                    raise CudaCError(TOO_DEEP_CALLS) from None
        return run


def check_launch(source: str, name: str, grid: Any, block: Any, args: Sequence[Any],
                 name_expressions: Sequence[str] = ()) -> None:
    """Raise, with the executor's message, what a launch of kernel `name` of `source` with these arguments would
    get wrong on a GPU (a block over 1024 threads, a Python int for an int, an array of the wrong dtype), so a
    GPU launch is refused as the CPU executor would refuse it. CUDA C outside the executor's subset is not
    checked here (CuPy, its compiler and the driver check what they can)."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C, a string; got {type(source).__name__} {source!r:.40}")
    for what, dims in (("grid", grid), ("block", block)):
        if not isinstance(dims, tuple):
            raise TypeError(f"{what} must be a tuple such as (4,) or (8, 8), as CuPy wants; got {dims!r:.40}")
    try:
        program = _program(source, tuple(name_expressions))
    except CudaCError:  # outside the executor's subset (or not C): CuPy's compiler will say what it sees
        return
    params = program.params(name)
    launch_shape(grid, block)
    arguments(name, params, args, run=False)


@functools.lru_cache(maxsize=64)
def _program(source: str, name_expressions: tuple[str, ...]) -> Program:
    return Program(source, name_expressions)


__all__ = ["MAX_LAUNCH_THREADS", "Launch", "Program", "check_launch"]
