"""Chapter 04's own TPU kernel: a blocked matmul in Pallas, its checks, and what a choice of blocks costs.

The learner writes the kernel body and the `pallas_call` with its BlockSpecs. On a TPU, Pallas compiles it; on
any other device JAX interprets the same kernel (`interpret=True`), so every learner can write and check it.
`check_blocked_matmul` runs the learner's kernel and call at shapes the blocks divide against NumPy;
`Blocks` counts what blocks cost on a TPU (the VMEM their buffers take, the HBM bytes the grid moves, its
steps) and `sweep` prices each choice with helpers.roofline (one model for the whole series).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np

from . import precision, roofline
from .checks import Verdict
from .limits import TimeLimitExceeded, time_limit
from .validate import positive_int

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: VMEM per TensorCore on a v5e and a v6e: 128 MiB (`vmem_capacity_bytes` in JAX's own table of TPU chips).
PHYSICAL_VMEM = 128 * 2**20
TPU_INFO = ("https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/tpu_info.py")
#: "Pallas on TPU only supports double-buffering": each input and output block has two buffers in VMEM.
DOUBLE_BUFFERING = ("https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/docs/pallas/"
                    "pipelining.md")
#: The guide's largest blocks (bm, bk, bn): they compile with Pallas's default VMEM limit, whose size JAX's
#: documentation does not state; the block exercise keeps to what they take.
GUIDE_BLOCKS = (512, 1024, 1024)
#: A TPU block's last dimension is a multiple of the vector unit's 128 lanes (`NUM_LANES` in the same table).
LANES = 128
#: Block sides the sweep and the exercise choose from.
SIDES = (128, 256, 512, 1024)
#: Seconds the learner's kernel may take on one check case before it is called an endless loop.
TIME_LIMIT = 15.0


def interpret() -> bool:
    """Whether Pallas must interpret the kernel here: True unless JAX's default device is a TPU."""
    import jax

    return jax.default_backend() != "tpu"


def mode() -> str:
    """One line saying how this machine runs a Pallas kernel."""
    if not interpret():
        return "Pallas compiles your kernel for this TPU (Mosaic): timings below are the real thing"
    import jax

    return (f"no TPU here: JAX interprets your kernel on the {jax.default_backend().upper()} (interpret=True), "
            "block by block: the same answers, far slower than a TPU, so the timings below are the model's")


@dataclass(frozen=True)
class Blocks:
    """A blocked (m, k) @ (k, n) with (bm, bk) and (bk, bn) blocks: what its buffers and its grid cost."""

    m: int
    k: int
    n: int
    bm: int
    bk: int
    bn: int
    itemsize: int = 2  # bfloat16 inputs and output
    accumulator: bool = True  # a float32 scratch block the kernel sums into (outputs narrower than float32)

    @property
    def vmem(self) -> int:
        """Bytes of VMEM: two buffers for each input block and for the output block, and the accumulator."""
        blocks = 2 * (self.bm * self.bk + self.bk * self.bn + self.bm * self.bn) * self.itemsize
        return blocks + (self.bm * self.bn * 4 if self.accumulator else 0)

    @property
    def hbm(self) -> float:
        """HBM bytes the grid moves (roofline.pallas_traffic)."""
        return roofline.pallas_traffic(self.m, self.k, self.n, self.bm, self.bk, self.bn, self.itemsize)

    @property
    def steps(self) -> int:
        return roofline.pallas_steps(self.m, self.k, self.n, self.bm, self.bk, self.bn)

    def problem(self) -> str | None:
        """Why these blocks cannot run as they are (do not divide, not whole lanes, too big for VMEM), or None."""
        for side, size, block in (("m", self.m, self.bm), ("k", self.k, self.bk), ("n", self.n, self.bn)):
            if size % block:
                return (f"b{side} = {block} does not divide {side} = {size}: the grid's {size} // {block} = "
                        f"{size // block} steps leave the last {size % block} rows or columns out")
        for name, block in (("bk", self.bk), ("bn", self.bn)):
            if block % LANES:
                return f"{name} = {block} is not a multiple of {LANES}: a TPU block's last side fills whole lanes"
        if self.vmem > PHYSICAL_VMEM:
            return (f"the blocks take {self.vmem / 2**20:,.0f} MiB of VMEM (two buffers each, and the float32 "
                    f"accumulator), more than the {PHYSICAL_VMEM / 2**20:.0f} MiB a v5e or v6e core has")
        return None

    def seconds(self, device: str = "TPU v5e") -> float:
        """The model's time for one synced call on `device` (roofline.predict_pallas_matmul_seconds)."""
        return roofline.predict_pallas_matmul_seconds(device, self.m, self.k, self.n, self.bm, self.bk, self.bn,
                                                      "bfloat16" if self.itemsize == 2 else "float32")


def budget() -> int:
    """The VMEM the block exercise allows: what the guide's largest blocks take, which compile with the defaults."""
    return Blocks(4096, 4096, 4096, *GUIDE_BLOCKS).vmem


def sweep(m: int, k: int, n: int, device: str = "TPU v5e", sides: Sequence[int] = SIDES) -> list[Blocks]:
    """Every choice of (bm, bk, bn) from `sides` that divides the matrix and fits the budget, fastest first."""
    m, k, n = (positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    found = [Blocks(m, k, n, *b) for b in itertools.product(sides, repeat=3)]
    fitting = [b for b in found if b.problem() is None and b.vmem <= budget()]
    return sorted(fitting, key=lambda b: b.seconds(device))


def figure(choices: Sequence[Blocks], device: str = "TPU v5e", marked: Blocks | None = None) -> go.Figure:
    """Predicted time against the VMEM each choice takes: the fastest blocks are large, up to what fits."""
    import plotly.graph_objects as go

    from .style import PREDICTION_COLOUR, colour
    from .style import figure as styled

    m, k, n = (choices[0].m, choices[0].k, choices[0].n) if choices else (0, 0, 0)
    fig = styled(f"A {m} x {k} x {n} bfloat16 Pallas matmul on a {device}: predicted time by block size")
    fig.add_trace(go.Scatter(
        x=[b.vmem / 2**20 for b in choices], y=[b.seconds(device) * 1e3 for b in choices], mode="markers",
        name="a choice of blocks (predicted)", marker={"color": PREDICTION_COLOUR},
        text=[f"{b.bm} x {b.bk} x {b.bn}: {b.steps:,} steps" for b in choices],
        hovertemplate="%{text}<br>%{x:.1f} MiB of VMEM<br>%{y:.3g} ms predicted<extra></extra>"))
    if marked is not None:
        fig.add_trace(go.Scatter(x=[marked.vmem / 2**20], y=[marked.seconds(device) * 1e3], mode="markers",
                                 marker={"size": 14, "symbol": "star", "color": colour("jax")},
                                 name=f"yours: {marked.bm} x {marked.bk} x {marked.bn}"))
    fig.update_layout(xaxis_title="VMEM the blocks take (MiB)", yaxis_title="predicted ms per call (log)",
                      yaxis_type="log")
    return fig


# ------------------------------------------------------------------------------------------------ the checks


#: (m, k, n, bm, bk, bn) the check runs: several k steps (the sum), unequal sides (a swapped index map shows).
CASES = ((256, 512, 384, 128, 256, 128), (384, 256, 256, 128, 128, 256))


def _say(passed: bool, message: str, attempted: bool = True) -> Verdict:
    print(message)
    return Verdict(passed, attempted, message)


def _untouched(title: str) -> Verdict:
    return _say(False, f"⏳ {title}: not attempted yet. Fill in the cell above, run it, then run this check again.",
                attempted=False)


def check_blocked_matmul(matmul: Any, kernel: Any = None) -> Verdict:
    """Run the learner's `matmul(x, y, bm, bk, bn)` at shapes the blocks divide against NumPy; with `kernel`, also
    run the kernel body alone behind the check's own BlockSpecs, its output filled with NaN first (a kernel that
    never zeroes its accumulator keeps them, whatever JAX's interpreter would have put there)."""
    title = "your blocked matmul"
    if matmul is ... or matmul is None:
        return _untouched(title)
    if not callable(matmul) or (kernel is not None and kernel is not ... and not callable(kernel)):
        return _say(False, f"❌ {title}: pass your functions themselves, check_blocked_matmul(matmul, kernel)")
    if callable(kernel):
        why = _run(lambda: _kernel_problem(kernel))
        if why == "untouched":
            return _untouched(title)
        if why:
            return _say(False, f"❌ {title}: {why}")
    for m, k, n, bm, bk, bn in CASES:
        why = _run(lambda m=m, k=k, n=n, b=(bm, bk, bn): _call_problem(matmul, m, k, n, *b))
        if why == "untouched":
            return _untouched(title)
        if why:
            return _say(False, f"❌ {title}, ({m}, {k}) @ ({k}, {n}) in {bm} x {bk} x {bn} blocks: {why}")
    ran = "interpreted by JAX" if interpret() else "compiled for this TPU"
    return _say(True, f"✅ {title}: right at {len(CASES)} shapes ({ran}), "
                      f"{'the kernel alone too' if callable(kernel) else 'with your kernel inside'}.")


def _run(problem: Callable[[], str | None]) -> str | None:
    """The problem found, 'untouched' for an exercise stub, or what went wrong while running the learner's code."""
    try:
        with time_limit(TIME_LIMIT, "your blocked matmul"):
            return problem()
    except NotImplementedError:
        return "untouched"
    except TimeLimitExceeded:
        return f"took over {TIME_LIMIT:.0f} s on a small case: does a loop never end?"
    except Exception as exc:  # noqa: BLE001 - whatever the learner's code raises, a verdict, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (f"raised {type(exc).__name__}: {first[:300]} (are the block shapes, the index maps and the grid "
                "consistent? x's block is (bm, bk), y's (bk, bn), z's (bm, bn); grid (m // bm, n // bn, k // bk))")


def _inputs(m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([m, k, n])
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def _call_problem(matmul: Callable[..., Any], m: int, k: int, n: int, bm: int, bk: int, bn: int) -> str | None:
    import jax.numpy as jnp

    x, y = _inputs(m, k, n)
    got = matmul(jnp.asarray(x), jnp.asarray(y), bm, bk, bn)
    return _compare(got, x, y, bk)


def _compare(got: Any, x: np.ndarray, y: np.ndarray, bk: int) -> str | None:
    """What is wrong with `got` as x @ y, with a hint at the usual cause, or None."""
    shape = (x.shape[0], y.shape[1])
    if getattr(got, "shape", None) != shape:
        if hasattr(got, "shape"):
            return f"returned {type(got).__name__} of shape {got.shape}; expected {shape}"
        return f"returned {type(got).__name__} {got!r:.40}; expected an array of shape {shape}"
    values = np.asarray(got, dtype=np.float64)
    want = x.astype(np.float64) @ y.astype(np.float64)
    if np.isnan(values).any():
        return ("NaN in the result: some output blocks were never written, or the accumulator was never zeroed "
                "(zero z_ref when pl.program_id(2) == 0, the first k step)")
    tolerance = precision.rounding(got).tolerance(x, y)
    error = np.abs(values - want)
    if error.max() <= tolerance:
        return None
    last = x[:, -bk:].astype(np.float64) @ y[-bk:, :].astype(np.float64)
    if np.abs(values - last).max() <= tolerance:
        return ("only the last k block counted: add each block's product to z_ref (+=), and zero it only when "
                "pl.program_id(2) == 0")
    return (f"wrong: largest error {error.max():.3g} (allowed {tolerance:.2g} here); check the index maps (x's "
            "block at grid step (i, j, kk) is (i, kk), y's (kk, j), z's (i, j)) and that k is the grid's last "
            "axis, pl.program_id(2)")


def _kernel_problem(kernel: Callable[..., Any]) -> str | None:
    """Run the learner's kernel body behind the check's own BlockSpecs, into an output filled with NaN."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    m, k, n, bm, bk, bn = CASES[0]
    x, y = _inputs(m, k, n)

    def body(x_ref: Any, y_ref: Any, start_ref: Any, z_ref: Any) -> None:
        kernel(x_ref, y_ref, z_ref)

    got = pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), input_output_aliases={2: 0},
        interpret=interpret())(jnp.asarray(x), jnp.asarray(y), jnp.full((m, n), jnp.nan, jnp.float32))
    why = _compare(got, x, y, bk)
    return f"your kernel, behind correct BlockSpecs: {why}" if why else None


def check_blocks(choice: Any, m: int = 4096, k: int = 4096, n: int = 4096, device: str = "TPU v5e") -> Verdict:
    """The block exercise: (bm, bk, bn) from SIDES that the model predicts fastest for a bfloat16 (m, k) @ (k, n)
    on `device`, within the VMEM the guide's largest blocks take."""
    what = f"your blocks for a {m} x {k} x {n} bfloat16 matmul on a {device}"
    if choice is ... or choice is None:
        return _untouched(what)
    whole = isinstance(choice, tuple | list) and len(choice) == 3 and all(
        isinstance(v, Integral) and not isinstance(v, bool | np.bool_) and v > 0 for v in choice)
    if not whole:
        return _say(False, f"❌ {what}: give three positive whole numbers, (bm, bk, bn); got {choice!r:.60}")
    mine = Blocks(m, k, n, *(int(v) for v in choice))
    why = mine.problem()
    if why:
        return _say(False, f"❌ {what}: {why}")
    if mine.vmem > budget():
        return _say(False, f"❌ {what}: they take {mine.vmem / 2**20:.1f} MiB of VMEM, over the "
                           f"{budget() / 2**20:.0f} MiB of the guide's largest blocks {GUIDE_BLOCKS}, which compile "
                           "with Pallas's default limit (raise it with compiler_params=pltpu.CompilerParams("
                           "vmem_limit_bytes=...), at the risk of the compiler running out)")
    best = next(iter(sweep(m, k, n, device)), mine)  # none of SIDES fits a matrix smaller than them all
    if mine.seconds(device) > best.seconds(device) * 1.001:
        return _say(False, f"❌ {what}: predicted {mine.seconds(device) * 1e3:.3g} ms ({mine.steps:,} steps); "
                           f"{best.bm} x {best.bk} x {best.bn} is predicted {best.seconds(device) * 1e3:.3g} ms "
                           f"({best.steps:,} steps). Fewer, larger blocks: less HBM traffic, fewer steps")
    return _say(True, f"✅ {what}: the fastest the model predicts that fits, {mine.seconds(device) * 1e3:.3g} ms "
                      f"({mine.steps:,} grid steps, {mine.vmem / 2**20:.1f} MiB of VMEM).")
