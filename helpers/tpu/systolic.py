"""A cycle-by-cycle simulation of a systolic array: how a TPU's matrix unit (MXU) computes C = A @ B.

The dataflow is **weight-stationary**, as in the TPU's MXU. The grid has R rows and C columns of
processing elements (PEs). Each PE holds one weight and two registers:

- an activation register: the value of A it received from its left neighbour last cycle;
- a partial-sum register: the running sum it passed down to its lower neighbour last cycle.

Before a pass, the weights B[k, n] are loaded, one per PE: PE (k, n) holds B[k, n]. Then A streams in
from the left edge, one row of A per cycle, skewed: grid row k receives A[m, k] at cycle m + k. In every
cycle, every PE at once takes the activation from its left neighbour's register and the partial sum from
its upper neighbour's register (both written in the cycle before), does one multiply-accumulate,

    psum = psum_from_above + activation_from_left * weight,

and keeps the activation (for its right neighbour) and the new partial sum (for its lower neighbour). No
value goes back to a register file or to memory in between: it hops from PE to PE. The partial sum for
C[m, n] leaves the bottom of column n complete, into an accumulator.

Closed-form cycle count. A[m, k] reaches PE (k, n) at cycle m + k + n (it entered row k at cycle m + k and
moves one PE to the right per cycle), so the last output, C[M-1, N-1], is finished by PE (K-1, N-1) at
cycle (M-1) + (K-1) + (N-1), counting from 0. One pass therefore takes

    M + K + N - 2 cycles        (grid exactly K x N)

A fixed R x C grid (the MXU is 128 x 128) cuts B into ceil(K/R) x ceil(N/C) tiles, each padded with zeros
to R x C, and makes one pass per tile; the partial products of tiles along K add up in the accumulators:

    ceil(K / R) * ceil(N / C) * (M + R + C - 2) cycles

This simulator runs passes one after another and does not count loading the weights (a real MXU loads the
next tile while computing the current one: "double buffering", Jouppi et al., ISCA 2017). The count
`simulate` reports is the number of cycles it actually ran, never computed from the formula.

    product, cycles = h.systolic.simulate(a, b)            # grid of exactly K x N PEs
    product, cycles = h.systolic.simulate(a, b, grid=128)  # a fixed 128 x 128 grid, tiled
    h.systolic.history(a, b)                               # every cycle's registers, for the animation
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..core.validate import positive_int

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: The MXU of a TPU v5e (and v2 to v5p) is a 128 x 128 systolic array; v6e's is 256 x 256.
MXU_SIZE = 128
#: The largest side `history` records: beyond this an animation is unreadable.
HISTORY_LIMIT = 16

_EMPTY = -1  # the row tag of a register that holds no value (a bubble in the pipeline)


class Simulation(NamedTuple):
    """What `simulate` returns: the product A @ B and the number of clock cycles the array ran."""

    product: np.ndarray
    cycles: int


@dataclass(frozen=True)
class Snapshot:
    """The array's state after `cycle` clock cycles (cycle 0: before the first), for one pass."""

    cycle: int
    weights: np.ndarray  # (R, C): the stationary weights
    activation: np.ndarray  # (R, C): each PE's activation register
    activation_row: np.ndarray  # (R, C): the row of A that activation belongs to, -1 for none
    psum: np.ndarray  # (R, C): each PE's partial-sum register
    active: np.ndarray  # (R, C) bool: the PEs that did a useful multiply-accumulate in this cycle
    waiting: np.ndarray  # (M, K) bool: the values of A not yet fed in at the left edge
    product: np.ndarray  # (M, N): the accumulators (the outputs that have arrived so far)
    arrived: np.ndarray  # (M, N) bool: which outputs have arrived


def step(activation: np.ndarray, psum: np.ndarray, weights: np.ndarray,
         left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One clock cycle of the whole grid: the new (activation, psum) registers from the previous ones.

    `left` holds the values entering the grid's left edge this cycle, one per grid row. Every PE reads only
    its left neighbour's activation and its upper neighbour's partial sum from the previous cycle (zero
    enters at the top), multiplies the activation by its weight, adds, and keeps both for the next cycle.
    """
    shapes = [np.shape(x) for x in (activation, psum, weights)]
    if len(shapes[0]) != 2 or len(set(shapes)) != 1 or np.shape(left) != shapes[0][:1]:
        raise ValueError(f"step() needs activation, psum and weights of one 2-D shape (rows, columns) and left of "
                         f"shape (rows,); got {shapes[0]}, {shapes[1]}, {shapes[2]} and {np.shape(left)}")
    new_activation = np.empty_like(activation)
    new_activation[:, 0] = left
    new_activation[:, 1:] = activation[:, :-1]  # each activation moves one PE to the right
    from_above = np.zeros_like(psum)
    from_above[1:, :] = psum[:-1, :]  # each partial sum moves one PE down
    return new_activation, from_above + new_activation * weights


def _grid(grid: int | tuple[int, int] | None, k: int, n: int) -> tuple[int, int]:
    if grid is None:
        return k, n
    sides = (grid, grid) if isinstance(grid, Integral) and not isinstance(grid, bool) else grid
    if (not isinstance(sides, (tuple, list)) or len(sides) != 2
            or not all(isinstance(s, Integral) and not isinstance(s, bool) and s > 0 for s in sides)):
        raise ValueError(f"grid must be None (a K x N grid, one PE per weight), a positive int (a square grid) or "
                         f"a pair of positive ints (rows, columns); got {grid!r}")
    return int(sides[0]), int(sides[1])


def _matrix(x: object, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):  # ragged lists
        raise ValueError(f"{name} must be a 2-D matrix of numbers (rows of equal length); got {x!r:.60}") from None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} has dtype {arr.dtype}; the simulator takes integer matrices (exact, int64) or "
                        "real floating-point ones (float64). Convert first, e.g. x.astype(int)")
    if arr.ndim != 2:
        hint = f" (a vector? use {name}.reshape(1, -1) for a row or {name}.reshape(-1, 1) for a column)" \
            if arr.ndim == 1 else ""
        raise ValueError(f"{name} must be a 2-D matrix; got shape {arr.shape}{hint}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}): every dimension must be at least 1")
    return arr


def _operands(a: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    """a and b checked and converted to one exact working dtype: int64 for integers, float64 otherwise."""
    a, b = _matrix(a, "a"), _matrix(b, "b")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {a.shape[0]} x {a.shape[1]} and b is {b.shape[0]} x {b.shape[1]}: a's columns "
                         f"({a.shape[1]}) must equal b's rows ({b.shape[0]}) for a @ b")
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        bound = a.shape[1] * int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0))  # Python ints: no wrap
        if bound > np.iinfo(np.int64).max:
            raise OverflowError(f"a @ b could reach {bound:.3g}, beyond int64 ({np.iinfo(np.int64).max:.3g}): the "
                                "exact integer result would wrap around. Use smaller values or float inputs")
        return a.astype(np.int64), b.astype(np.int64)
    return a.astype(np.float64), b.astype(np.float64)


def _pass(a_tile: np.ndarray, w_tile: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Run one pass with weights `w_tile` (R x C) stationary while `a_tile` (M x R) streams in from the left.

    Yields after every cycle: (activation, activation_row, psum, fed) where `fed[k]` is the row of A that
    entered grid row k this cycle (outside 0..M-1: nothing entered). The bottom row of `psum` leaves the grid
    as the output of row activation_row[-1] of A (-1: no output). Stops when every output of the pass has left.
    """
    m, rows = a_tile.shape
    cols = w_tile.shape[1]
    activation = np.zeros((rows, cols), a_tile.dtype)
    psum = np.zeros((rows, cols), a_tile.dtype)
    tag = np.full((rows, cols), _EMPTY)  # which row of A each activation register belongs to
    grid_rows = np.arange(rows)
    left_tag = np.empty(rows, dtype=int)
    outputs_left = m * cols
    cycle = 0
    while outputs_left:
        feed = cycle - grid_rows  # grid row k gets A[cycle - k, k]: the skew
        valid = (feed >= 0) & (feed < m)
        left = np.where(valid, a_tile[np.clip(feed, 0, m - 1), grid_rows], 0)
        left_tag[:] = np.where(valid, feed, _EMPTY)
        activation, psum = step(activation, psum, w_tile, left)
        tag = np.concatenate([left_tag[:, None], tag[:, :-1]], axis=1)  # tags travel with their activations
        # The bottom PE's new partial sum is complete: it belongs to the row of A its activation came from.
        outputs_left -= int(np.count_nonzero(tag[-1] != _EMPTY))
        yield activation, tag, psum, feed
        cycle += 1


def _tiles(k: int, n: int, rows: int, cols: int) -> Iterator[tuple[int, int]]:
    for k0 in range(0, k, rows):
        for n0 in range(0, n, cols):
            yield k0, n0


def simulate(a: object, b: object, grid: int | tuple[int, int] | None = None) -> Simulation:
    """A @ B computed cycle by cycle on a weight-stationary systolic array, and the cycles it took.

    grid=None: one PE per weight (a K x N grid), one pass of M + K + N - 2 cycles. grid=R or (R, C): a fixed
    grid; B is cut into R x C tiles (padded with zeros), one pass each. Integer inputs give the exact integer
    product (int64), as `a @ b` would; floats are computed in float64.
    """
    a, b = _operands(a, b)
    (m, k), n = a.shape, b.shape[1]
    rows, cols = _grid(grid, k, n)
    product = np.zeros((m, n), a.dtype)
    cycles = 0
    for k0, n0 in _tiles(k, n, rows, cols):
        a_tile = np.zeros((m, rows), a.dtype)
        a_tile[:, :min(rows, k - k0)] = a[:, k0:k0 + rows]
        w_tile = np.zeros((rows, cols), a.dtype)
        w_tile[:min(rows, k - k0), :min(cols, n - n0)] = b[k0:k0 + rows, n0:n0 + cols]
        real_cols = np.arange(cols) < n - n0  # a padded column's outputs are dropped
        for _, tag, psum, _ in _pass(a_tile, w_tile):
            cycles += 1
            out = (tag[-1] != _EMPTY) & real_cols
            product[tag[-1, out], n0 + np.flatnonzero(out)] += psum[-1, out]  # the accumulators add tiles along K
    return Simulation(product, cycles)


def history(a: object, b: object) -> list[Snapshot]:
    """Every cycle of `simulate(a, b)` on a K x N grid (one pass), from before the first cycle to the last.

    For the animation (`animation`); sides up to HISTORY_LIMIT.
    """
    a, b = _operands(a, b)
    (m, k), n = a.shape, b.shape[1]
    if max(m, k, n) > HISTORY_LIMIT:
        raise ValueError(f"history() records small arrays only (every side at most {HISTORY_LIMIT}); got a "
                         f"{m} x {k} by {k} x {n} product. Use simulate() for larger ones")
    zeros = np.zeros((k, n), a.dtype)
    product = np.zeros((m, n), a.dtype)
    arrived = np.zeros((m, n), bool)
    waiting = np.ones((m, k), bool)
    snapshots = [Snapshot(0, b.copy(), zeros, np.full((k, n), _EMPTY), zeros, np.zeros((k, n), bool),
                          waiting.copy(), product.copy(), arrived.copy())]
    for cycle, (activation, tag, psum, feed) in enumerate(_pass(a, b), 1):
        fed = (feed >= 0) & (feed < m)
        waiting[feed[fed], np.flatnonzero(fed)] = False
        out = tag[-1] != _EMPTY
        product[tag[-1, out], out] = psum[-1, out]
        arrived[tag[-1, out], out] = True
        snapshots.append(Snapshot(cycle, b.copy(), activation.copy(), tag.copy(), psum.copy(), tag != _EMPTY,
                                  waiting.copy(), product.copy(), arrived.copy()))
    return snapshots


# ---------------------------------------------------------------------------------------------- closed forms


def passes(k: int, n: int, grid: int | tuple[int, int] = MXU_SIZE) -> int:
    """How many passes (weight tiles) a K x N weight matrix needs on an R x C grid: ceil(K/R) * ceil(N/C)."""
    _check_sizes(k=k, n=n)
    rows, cols = _grid(grid, k, n)
    return math.ceil(k / rows) * math.ceil(n / cols)


def cycle_count(m: int, k: int, n: int, grid: int | tuple[int, int] | None = None) -> int:
    """The closed-form cycles of an (M x K) @ (K x N) product: passes x (M + R + C - 2), R x C the grid."""
    _check_sizes(m=m, k=k, n=n)
    rows, cols = _grid(grid, k, n)
    return passes(k, n, (rows, cols)) * (m + rows + cols - 2)


def fill(k: int, n: int, size: int | tuple[int, int] = MXU_SIZE) -> float:
    """The fraction of the array's multiply-accumulators that hold a real weight (not padding) for K x N weights.

    1.0 when K and N are multiples of the grid's sides; a 129 x 128 matrix needs two passes, so about half.
    """
    _check_sizes(k=k, n=n)
    rows, cols = _grid(size, k, n)
    return k * n / (passes(k, n, (rows, cols)) * rows * cols)


def utilisation(m: int, k: int, n: int, grid: int | tuple[int, int] | None = None) -> float:
    """Useful multiply-accumulates over all the PE-cycles of the product: M*K*N / (R*C * cycles).

    Below 1 for two reasons: padding (see `fill`) and filling and draining the pipeline (R + C - 2 cycles
    a pass in which part of the grid idles). Streaming many rows (large M) hides the second.
    """
    _check_sizes(m=m, k=k, n=n)
    rows, cols = _grid(grid, k, n)
    return m * k * n / (rows * cols * cycle_count(m, k, n, (rows, cols)))


def shape_problem(shape: object, at_least: tuple[int, int], size: int = MXU_SIZE) -> str | None:
    """What is wrong with `shape` = (K, N) as the smallest weight shape of at least `at_least` that fills every
    pass of a size x size array; None when it is right. For the chapter's "fill the matrix unit" exercise.
    """
    if (not isinstance(shape, (tuple, list)) or len(shape) != 2
            or not all(isinstance(s, Integral) and not isinstance(s, bool) and s > 0 for s in shape)):
        return f"give two positive integers (rows, columns) of the weight matrix; got {shape!r}"
    if (not isinstance(at_least, (tuple, list)) or len(at_least) != 2
            or not all(isinstance(s, Integral) and not isinstance(s, bool) and s > 0 for s in at_least)):
        raise ValueError(f"at_least must be two positive integers (rows, columns), got {at_least!r:.40}")
    (k, n), (k_min, n_min) = shape, at_least
    if k < k_min or n < n_min:
        return f"{k} x {n} is smaller than the layer's {k_min} x {n_min}: pad up with zeros, never cut"
    share = fill(k, n, size)
    if share < 1:
        return (f"{k} x {n} weights need {passes(k, n, size)} passes of the {size} x {size} array and fill "
                f"{share:.1%} of them: the rest multiplies padding zeros")
    if k >= k_min + size or n >= n_min + size:
        return f"{k} x {n} fills every pass, but a smaller shape of at least {k_min} x {n_min} does too"
    return None


def _check_sizes(**sizes: object) -> None:
    for name, value in sizes.items():
        positive_int(name, value, "a matrix dimension")


# --------------------------------------------------------------------------------------------------------------
# The animation: the simulation above, cycle by cycle.


def _cell_outlines(xs: Iterable[float], ys: Iterable[float], half: float = 0.45) -> tuple[list, list]:
    """One polygon per cell centre, separated by None: a single trace draws them all."""
    px: list[float | None] = []
    py: list[float | None] = []
    for x, y in zip(xs, ys, strict=True):
        px += [x - half, x + half, x + half, x - half, x - half, None]
        py += [y - half, y - half, y + half, y + half, y - half, None]
    return px, py


def animation(a: Any, b: Any, title: str | None = None, frame_ms: int = 800) -> go.Figure:
    """Plotly animation of `simulate(a, b)` cycle by cycle: play/pause buttons and a cycle slider.

    Weights sit still in the grid (grey), activations of A (orange) enter from the left with a skew and move
    right, partial sums (blue, Σ) move down, and finished outputs of C land in the accumulators below.
    PEs that did a useful multiply-accumulate in a cycle are shaded. Keep matrices small (4 x 4 reads best).
    """
    import plotly.graph_objects as go

    from ..core.style import BACKEND_COLOURS, figure

    shots = history(a, b)
    first = shots[0]
    m, n = first.product.shape
    k = first.weights.shape[0]
    activation_colour, psum_colour, weight_colour = BACKEND_COLOURS["python"], BACKEND_COLOURS["numpy"], "#777777"
    pe_x, pe_y = np.meshgrid(np.arange(n), -np.arange(k))
    pe_x, pe_y = pe_x.ravel().astype(float), pe_y.ravel().astype(float)
    out_top = -k - 0.6  # the accumulators sit under the grid, row m of C at out_top - m
    acc_x, acc_y = np.meshgrid(np.arange(n), out_top - np.arange(m))
    acc_x, acc_y = acc_x.ravel().astype(float), acc_y.ravel().astype(float)

    def fmt(v: Any) -> str:
        return f"{v:g}" if isinstance(v, float) else str(v)

    def dynamic(s: Any) -> list[go.Scatter]:
        live = s.activation_row.ravel() >= 0
        ax, ay = _cell_outlines(pe_x[live], pe_y[live])
        rows, cols = np.nonzero(s.waiting)  # A[row, col] waits to enter grid row col at cycle row + col
        queue_x = -(rows + cols - s.cycle + 1.0)
        done = s.arrived.ravel()
        return [
            go.Scatter(x=ax, y=ay, fill="toself", fillcolor="rgba(0,158,115,0.18)", mode="lines",
                       line=dict(width=0), hoverinfo="skip", name="did a multiply-add this cycle"),
            go.Scatter(x=pe_x[live] - 0.2, y=pe_y[live] + 0.12, mode="text", hoverinfo="skip", name="activation",
                       text=[fmt(v) for v in s.activation.ravel()[live]],
                       textfont=dict(color=activation_colour, size=15)),
            go.Scatter(x=pe_x[live] + 0.05, y=pe_y[live] - 0.2, mode="text", hoverinfo="skip", name="partial sum",
                       text=[f"Σ{fmt(v)}" for v in s.psum.ravel()[live]], textfont=dict(color=psum_colour, size=13)),
            go.Scatter(x=queue_x, y=-cols.astype(float), mode="text", hoverinfo="skip", name="A, waiting",
                       text=[fmt(v) for v in np.asarray(a)[rows, cols]], textfont=dict(color=activation_colour,
                                                                                       size=15)),
            go.Scatter(x=acc_x[done], y=acc_y[done], mode="text", hoverinfo="skip", name="C, arrived",
                       text=[fmt(v) for v in s.product.ravel()[done]], textfont=dict(color=psum_colour, size=15)),
        ]

    outline_x, outline_y = _cell_outlines(np.concatenate([pe_x, acc_x]), np.concatenate([pe_y, acc_y]))
    static = [
        go.Scatter(x=outline_x, y=outline_y, mode="lines", line=dict(color="#BBBBBB", width=1), hoverinfo="skip",
                   name="cells"),
        go.Scatter(x=pe_x + 0.22, y=pe_y + 0.3, mode="text", text=[f"w{fmt(v)}" for v in first.weights.ravel()],
                   textfont=dict(color=weight_colour, size=11), hoverinfo="skip", name="weight (stays)"),
    ]
    moving = list(range(len(static), len(static) + len(dynamic(first))))
    fig = figure(title or f"A weight-stationary systolic array: ({m} x {k}) @ ({k} x {n}), "
                           f"{len(shots) - 1} cycles", height=int(90 + 62 * (k + m + 1.5)))
    for trace in static + dynamic(first):
        fig.add_trace(trace)
    fig.frames = [go.Frame(name=str(s.cycle), data=dynamic(s), traces=moving) for s in shots]
    left = -(m + k - 1.0) - 0.6
    fig.add_annotation(x=(left - 1) / 2, y=0.85, text="A enters from the left, skewed", showarrow=False,
                       font=dict(color=activation_colour, size=12))
    fig.add_annotation(x=(n - 1) / 2, y=0.85, text="weights w of B stay; sums Σ move down", showarrow=False,
                       font=dict(color=weight_colour, size=12))
    fig.add_annotation(x=(n - 1) / 2, y=out_top + 0.75, text="accumulators: C = A @ B", showarrow=False,
                       font=dict(color=psum_colour, size=12))
    animate = dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))
    fig.update_layout(
        showlegend=False, margin=dict(l=20, r=20, t=60, b=20),
        xaxis=dict(visible=False, range=[left, n - 0.4]),
        yaxis=dict(visible=False, range=[out_top - m + 0.4, 1.2], scaleanchor="x"),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=0, xanchor="left", yanchor="top",
                          pad=dict(t=10, r=10), showactive=False, buttons=[
                              dict(label="▶ play", method="animate",
                                   args=[None, dict(frame=dict(duration=frame_ms, redraw=True), fromcurrent=True,
                                                    transition=dict(duration=0))]),
                              dict(label="❚❚ pause", method="animate", args=[[None], animate])])],
        sliders=[dict(active=0, x=0.22, len=0.78, y=0, yanchor="top", pad=dict(t=10),
                      currentvalue=dict(prefix="after cycle ", font=dict(size=14)),
                      steps=[dict(label=str(s.cycle), method="animate", args=[[str(s.cycle)], animate])
                             for s in shots])],
    )
    return fig


__all__ = ["HISTORY_LIMIT", "MXU_SIZE", "Simulation", "Snapshot", "cycle_count", "fill", "history", "passes",
           "shape_problem", "simulate", "step", "utilisation"]
