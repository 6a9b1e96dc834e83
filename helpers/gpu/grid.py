"""A CPU model of CUDA's thread grid: which block and thread touches which element, drawn as a picture.

A CUDA kernel is one function run by every thread of a grid of blocks; each thread finds its element from
blockIdx, blockDim and threadIdx. `launch` runs a Python twin of a kernel body the same way, one thread after
another, and records every read and write. Out-of-range indices are recorded instead of raised: on a GPU
nothing stops such an access, it silently reads or overwrites memory that belongs to something else.

    run = h.grid.launch(h.grid.vector_add, 3, 8, a, b, out, 20)   # 3 blocks of 8 threads, 20 elements
    print(run)                                                     # who wrote what, idle threads, out of bounds
    run.figure()                                                   # threads above, elements below, lines between

1-D grids only: the lessons it serves (blocks, bounds checks, grid-stride loops) need no more.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np

from ..core.validate import positive_int

#: More threads than this would make the Python model slow, and its picture unreadable.
MAX_THREADS = 100_000
#: Columns a picture can show legibly.
MAX_PICTURE = 160


@dataclass(frozen=True)
class Dim3:
    """CUDA's dim3: sizes or indices along x, y, z (only x is used in a 1-D grid)."""

    x: int
    y: int = 0
    z: int = 0


@dataclass(frozen=True)
class Thread:
    """What a kernel body sees, with CUDA's names: t.blockIdx.x * t.blockDim.x + t.threadIdx.x is its element."""

    blockIdx: Dim3  # noqa: N815 - CUDA's names, so the twin reads like the CUDA C
    threadIdx: Dim3  # noqa: N815
    blockDim: Dim3  # noqa: N815
    gridDim: Dim3  # noqa: N815


@dataclass(frozen=True)
class Access:
    """One read or write of one element by one thread; in_bounds is False past either end of the array."""

    array: str
    index: int
    write: bool
    block: int
    thread: int  # within its block
    in_bounds: bool


class TracedArray:
    """A 1-D array as a kernel sees it through a pointer: every access is logged, none is bounds-checked.

    An out-of-range read gives NaN (a GPU would return whatever lies there); an out-of-range write is dropped
    (a GPU would overwrite someone else's data). Both are logged, so the launch can report them.
    """

    def __init__(self, name: str, data: np.ndarray, run: Launch) -> None:
        self._name, self._data, self._run = name, data, run

    def _index(self, index: Any) -> int:
        if isinstance(index, bool) or not isinstance(index, Integral):
            raise TypeError(f"{self._name}[{index!r}]: a kernel indexes with one integer, like {self._name}[i]")
        return int(index)

    def _log(self, index: int, write: bool) -> bool:
        ok = 0 <= index < len(self._data)
        block, thread = self._run.current
        self._run.accesses.append(Access(self._name, index, write, block, thread, ok))
        return ok

    def __getitem__(self, index: Any) -> Any:
        index = self._index(index)
        return self._data[index] if self._log(index, False) else np.nan

    def __setitem__(self, index: Any, value: Any) -> None:
        index = self._index(index)
        if self._log(index, True):
            self._data[index] = value


def _ranges(numbers: list[int]) -> str:
    """[20, 21, 22, 23, 30] -> '20..23, 30'."""
    out, numbers = [], sorted(set(numbers))
    start = prev = None
    for x in [*numbers, None]:
        if x is not None and prev is not None and x == prev + 1:
            prev = x
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}..{prev}")
        start = prev = x
    return ", ".join(out)


@dataclass
class Launch:
    """What one emulated launch did: its shape, the arrays it saw, and every access of every thread."""

    kernel: str
    grid: int
    block: int
    arrays: dict[str, int]  # name -> length
    accesses: list[Access] = field(default_factory=list)
    current: tuple[int, int] = (0, 0)

    @property
    def threads(self) -> int:
        """Threads in the grid: blocks x threads per block."""
        return self.grid * self.block

    def global_id(self, block: int, thread: int) -> int:
        """The thread's number in the whole grid: block x blockDim + thread."""
        return block * self.block + thread

    def out_of_bounds(self) -> list[Access]:
        """Accesses past either end of their array: on a GPU, silent corruption or a crash."""
        return [a for a in self.accesses if not a.in_bounds]

    def idle_threads(self) -> list[int]:
        """Global ids of threads that touched no memory at all (e.g. stopped by a bounds check)."""
        busy = {self.global_id(a.block, a.thread) for a in self.accesses}
        return [g for g in range(self.threads) if g not in busy]

    def writers(self, array: str) -> dict[int, list[int]]:
        """index -> global ids of the threads that wrote it (in bounds), for `array`."""
        self._known(array)
        out: dict[int, list[int]] = {}
        for a in self.accesses:
            if a.array == array and a.write and a.in_bounds:
                out.setdefault(a.index, []).append(self.global_id(a.block, a.thread))
        return out

    def written(self) -> list[str]:
        """Names of the arrays the kernel wrote to, in order of first write."""
        return list(dict.fromkeys(a.array for a in self.accesses if a.write))

    def _known(self, array: str) -> None:
        if array not in self.arrays:
            raise ValueError(f"no array called {array!r} in this launch; arrays: {', '.join(self.arrays)}")

    def summary(self) -> str:
        """The launch in a few sentences: shape, coverage, idle threads, out-of-bounds accesses."""
        lines = [f"{self.kernel}: {self.grid} block{'s' * (self.grid != 1)} x {self.block} threads = "
                 f"{self.threads} threads"]
        for name in self.written():
            who = self.writers(name)
            missing = [i for i in range(self.arrays[name]) if i not in who]
            twice = [i for i, ids in who.items() if len(ids) > 1]
            per_thread = len(who) / max(1, len({g for ids in who.values() for g in ids}))
            text = f"{name}: {len(who)} of {self.arrays[name]} elements written"
            text += ", every one exactly once" if not missing and not twice else ""
            text += f"; never written: {_ranges(missing)}" if missing else ""
            text += f"; written more than once: {_ranges(twice)}" if twice else ""
            text += f"; {per_thread:.3g} elements per busy thread" if per_thread != 1 else ""
            lines.append(text)
        idle = self.idle_threads()
        if idle:
            lines.append(f"idle threads (touched nothing): {len(idle)}, global ids {_ranges(idle)}")
        bad = self.out_of_bounds()
        if bad:
            by_array = {}
            for a in bad:
                by_array.setdefault((a.array, "write" if a.write else "read"), []).append(a.index)
            parts = [f"{len(idx)} {kind}{'s' * (len(idx) != 1)} of {name}[{_ranges(idx)}]"
                     for (name, kind), idx in by_array.items()]
            threads = sorted({self.global_id(a.block, a.thread) for a in bad})
            lines.append(f"OUT OF BOUNDS: {', '.join(parts)} by threads {_ranges(threads)}. On a GPU nothing stops "
                         "this: the reads return garbage and the writes overwrite other data, or the kernel crashes.")
        else:
            lines.append("no access out of bounds")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.summary())

    def figure(self, array: str | None = None, title: str | None = None) -> Any:
        """Threads (top row, one colour per block) joined to the elements of `array` (bottom row) they wrote.

        Idle threads are hollow; writes out of bounds land on red cells past the end of the array.
        """
        import plotly.graph_objects as go

        from ..core.style import OTHER_COLOURS, TEMPLATE

        array = array or (self.written() or list(self.arrays))[0]
        self._known(array)
        length = self.arrays[array]
        writes = [a for a in self.accesses if a.array == array and a.write]
        beyond = sorted({a.index for a in writes if not a.in_bounds})
        columns = max(self.threads, length, *(i + 1 for i in beyond)) if beyond else max(self.threads, length)
        if columns > MAX_PICTURE:
            raise ValueError(f"{columns} columns are too many to draw (at most {MAX_PICTURE}): "
                             "emulate a smaller launch")
        palette = list(OTHER_COLOURS[:1]) + ["#0072B2", "#009E73", "#CC79A7", "#E69F00"]
        colour = [palette[b % len(palette)] for b in range(self.grid)]
        idle = set(self.idle_threads())
        fig = go.Figure()
        for a in writes:  # one line per write, under the markers
            g = self.global_id(a.block, a.thread)
            fig.add_trace(go.Scatter(x=[g, a.index], y=[1, 0], mode="lines", showlegend=False, hoverinfo="skip",
                                     line=dict(color="#D55E00" if not a.in_bounds else colour[a.block], width=1.5)))
        for b in range(self.grid):
            fig.add_trace(self._block_row(b, colour[b], idle))
        fig.add_trace(_element_row(array, length, self.writers(array)))
        if beyond:
            fig.add_trace(go.Scatter(
                x=beyond, y=[0] * len(beyond), mode="markers+text", name="past the end (out of bounds)",
                text=["✗"] * len(beyond), textfont=dict(color="white"),
                marker=dict(symbol="square", size=18, color="#D55E00")))
        fig.update_layout(
            template=TEMPLATE, height=300, title=title or f"{self.kernel}: {self.grid} blocks x {self.block} threads, "
                                                          f"{array} has {length} elements",
            xaxis=dict(title="global thread id (top) / element index (bottom)", range=[-1, columns],
                       showgrid=False, dtick=4),
            yaxis=dict(tickvals=[0, 1], ticktext=["elements", "threads"], range=[-0.5, 1.5], showgrid=False),
            legend=dict(orientation="h", y=-0.35), margin=dict(b=110))
        return fig

    def _block_row(self, b: int, colour: str, idle: set[int]) -> Any:
        """The threads of block `b` in the picture's top row, in the block's colour; idle ones hollow."""
        import plotly.graph_objects as go

        ids = [self.global_id(b, t) for t in range(self.block)]
        return go.Scatter(
            x=ids, y=[1] * len(ids), mode="markers+text", name=f"block {b}",
            text=[str(t) for t in range(self.block)],
            textfont=dict(size=10, color=["#444444" if g in idle else "white" for g in ids]),
            marker=dict(symbol="square", size=18, color=[("white" if g in idle else colour) for g in ids],
                        line=dict(color=colour, width=2)),
            hovertemplate=[f"block {b}, thread {t} (global {g}){' idle' if g in idle else ''}<extra></extra>"
                           for t, g in enumerate(ids)])


def _element_row(array: str, length: int, who: dict[int, list[int]]) -> Any:
    """The elements of `array` in the picture's bottom row, each saying which threads wrote it."""
    import plotly.graph_objects as go

    return go.Scatter(
        x=list(range(length)), y=[0] * length, mode="markers+text", name=f"{array}[0..{length - 1}]",
        text=[str(i) for i in range(length)], textfont=dict(size=9, color="#222222"),
        marker=dict(symbol="square", size=18, color="#EEEEEE" if who else "#FFFFFF",
                    line=dict(color="#444444", width=1)),
        hovertemplate=[f"{array}[{i}] written by global thread(s) {who.get(i, 'none')}<extra></extra>"
                       for i in range(length)])


def launch(body: Callable[..., Any], grid: int, block: int, *args: Any) -> Launch:
    """Run `body(t, *args)` once per thread of `grid` blocks x `block` threads, recording every array access.

    NumPy arrays in `args` are passed as TracedArray under their parameter names in `body`; they are written
    in place. Other arguments (sizes, scalars) are passed as they are.
    """
    grid, block = positive_int("grid (blocks)", grid), positive_int("block (threads per block)", block)
    if grid * block > MAX_THREADS:
        raise ValueError(f"{grid} x {block} threads are too many for the Python model (at most {MAX_THREADS:,})")
    names = list(inspect.signature(body).parameters)[1:]
    if len(names) < len(args) and not any(p.kind == p.VAR_POSITIONAL
                                          for p in inspect.signature(body).parameters.values()):
        raise TypeError(f"{body.__name__} takes {len(names)} arguments after the thread, got {len(args)}")
    names += [f"arg{i}" for i in range(len(names), len(args))]
    arrays = {name: len(arg) for name, arg in zip(names, args, strict=False) if isinstance(arg, np.ndarray)}
    for name, arg in zip(names, args, strict=False):
        if isinstance(arg, np.ndarray) and arg.ndim != 1:
            raise ValueError(f"{name} has shape {arg.shape}: the grid model takes 1-D arrays (flatten 2-D ones)")
    run = Launch(getattr(body, "__name__", "kernel"), int(grid), int(block), arrays)
    wrapped = [TracedArray(name, arg, run) if isinstance(arg, np.ndarray) else arg
               for name, arg in zip(names, args, strict=False)]
    grid_dim, block_dim = Dim3(int(grid), 1, 1), Dim3(int(block), 1, 1)
    for b in range(grid):
        for t in range(block):
            run.current = (b, t)
            body(Thread(Dim3(b), Dim3(t), block_dim, grid_dim), *wrapped)
    return run


# --------------------------------------------------------------------------------------------------------------
# Python twins of helpers/kernels/vector_add.cu, line for line.


def vector_add(t: Thread, a: Any, b: Any, out: Any, n: int) -> None:
    """Twin of vector_add: one thread per element, with the bounds check."""
    i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
    if i < n:
        out[i] = a[i] + b[i]


def vector_add_unchecked(t: Thread, a: Any, b: Any, out: Any, n: int) -> None:
    """vector_add without its bounds check: the last block's spare threads run off the end."""
    i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
    out[i] = a[i] + b[i]


def vector_add_grid_stride(t: Thread, a: Any, b: Any, out: Any, n: int) -> None:
    """Twin of vector_add_grid_stride: each thread jumps by the grid's size until it passes n."""
    stride = t.blockDim.x * t.gridDim.x
    i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x
    while i < n:
        out[i] = a[i] + b[i]
        i += stride
