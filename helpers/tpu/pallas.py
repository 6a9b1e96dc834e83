"""Chapter 04's own TPU kernel: a blocked matmul in Pallas, its checks, and what a choice of blocks costs.

The chapter gives the `pallas_call` (the grid, the BlockSpecs, a float32 scratch accumulator in VMEM and the grid's
dimension semantics) and the learner writes the kernel body, as JAX's Pallas TPU matmul guide does: bf16 in and
out, float32 sums, so the model's rows of that guide describe it. On a TPU, Pallas compiles the kernel; on any
other device JAX interprets it (`interpret=True`), so every learner can write and check it.
`check_blocked_matmul` and `check_fused_matmul` (a bias and a ReLU fused into the last k step, as the guide's
fused rows) trace the learner's call to see that a pallas_call runs the learner's kernel and makes the result,
refuse before compiling what might run without end (compiled code cannot be stopped from Python), then compare it
with NumPy at shapes with 1 to 5 k steps, and run the kernel alone behind the check's own BlockSpecs.
`Blocks` counts what blocks cost on a TPU (the VMEM their buffers take, the HBM bytes the grid moves, its steps)
and `sweep` prices each choice with helpers.model.roofline (one model for the whole series).
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.limits import TimeLimitExceeded, time_limit
from ..core.validate import positive_int
from ..learning.checks import Verdict
from ..measuring.precision import FLOAT32_UNIT
from ..model import roofline

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: VMEM per TensorCore on a v5e and a v6e: 128 MiB (`vmem_capacity_bytes` in JAX's own table of TPU chips).
PHYSICAL_VMEM = 128 * 2**20
TPU_INFO = ("https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/tpu_info.py")
#: Google's XLA documentation: each kernel's VMEM (its block buffers, its scratch) must fit a *scoped* limit, set
#: for a whole program by --xla_tpu_scoped_vmem_limit_kib and per kernel by `vmem_limit_bytes`.
SCOPED_VMEM = "https://openxla.org/xla/errors/error_1001"
#: JAX's TPU compiler parameters: `vmem_limit_bytes` "overrides the default VMEM limit for a kernel". Neither
#: document states the default's size.
VMEM_LIMIT_BYTES = ("https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/pallas/"
                    "mosaic/core.py")
#: "Pallas on TPU only supports double-buffering": each input and output block has two buffers in VMEM.
DOUBLE_BUFFERING = ("https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/docs/pallas/"
                    "pipelining.md")
#: The guide's largest blocks (bm, bk, bn): they compiled within the default scoped VMEM limit on the guide's v5e,
#: so the block exercise keeps to the VMEM they take (10 MiB), a size known to fit the default.
GUIDE_BLOCKS = (512, 1024, 1024)
#: A TPU block's last dimension is a multiple of the vector unit's 128 lanes (`NUM_LANES` in the same table).
LANES = 128
#: Block sides the sweep and the exercise choose from.
SIDES = (128, 256, 512, 1024)
#: Seconds the learner's code may take on one check case (tracing, compiling and running it).
TIME_LIMIT = 30.0
#: Operations (each loop's body counted once per trip) a checked call may run: more is refused before compiling.
MAX_OPERATIONS = 100_000


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


def tpu_params(**options: Any) -> Any:
    """Pallas's TPU compiler parameters (`dimension_semantics=...`, `vmem_limit_bytes=...`) in the class this JAX
    names them: `pltpu.CompilerParams` from JAX 0.6.2 on, `pltpu.TPUCompilerParams` in 0.6.0 and 0.6.1."""
    from jax.experimental.pallas import tpu as pltpu

    params = getattr(pltpu, "CompilerParams", None) or pltpu.TPUCompilerParams
    try:
        return params(**options)
    except TypeError as exc:
        raise ValueError(f"tpu_params takes {params.__name__}'s options, such as dimension_semantics=(...) and "
                         f"vmem_limit_bytes=...: {exc}") from None


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

    def __post_init__(self) -> None:
        for name in ("m", "k", "n", "bm", "bk", "bn", "itemsize"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))

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

    @property
    def grid(self) -> tuple[int, int, int]:
        """The chapter's grid: (m // bm, n // bn, k // bk), k last."""
        return self.m // self.bm, self.n // self.bn, self.k // self.bk

    def __str__(self) -> str:
        k_steps = self.k // self.bk
        return (f"({self.m}, {self.k}) @ ({self.k}, {self.n}) in {self.bm} x {self.bk} x {self.bn} blocks "
                f"({k_steps} k step{'s' if k_steps != 1 else ''})")

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
    """The VMEM the block exercise allows: what the guide's largest blocks take (10 MiB), which compiled within
    the default scoped VMEM limit (SCOPED_VMEM) on the guide's v5e; the 128 MiB a core has is the hardware's."""
    return Blocks(4096, 4096, 4096, *GUIDE_BLOCKS).vmem


def _sides(m: Any, k: Any, n: Any) -> tuple[int, int, int]:
    """The matrix sides, each checked to be a positive whole number."""
    return positive_int("m", m), positive_int("k", k), positive_int("n", n)


def sweep(m: int, k: int, n: int, device: str = "TPU v5e", sides: Sequence[int] = SIDES) -> list[Blocks]:
    """Every choice of (bm, bk, bn) from `sides` that divides the matrix and fits the budget, fastest first."""
    m, k, n = _sides(m, k, n)
    if isinstance(sides, str | bytes) or not isinstance(sides, Sequence) or not sides:
        raise ValueError(f"sides must be block sides to choose from, such as {SIDES}; got {sides!r:.60}")
    sides = [positive_int("sides", side, "a block side") for side in sides]
    found = [Blocks(m, k, n, *b) for b in itertools.product(sides, repeat=3)]
    fitting = [b for b in found if b.problem() is None and b.vmem <= budget()]
    return sorted(fitting, key=lambda b: b.seconds(device))


def figure(choices: Sequence[Blocks], device: str = "TPU v5e", marked: Blocks | None = None) -> go.Figure:
    """Predicted time against the VMEM each choice takes: the fastest blocks are large, up to what fits."""
    import plotly.graph_objects as go

    from ..core.style import PREDICTION_COLOUR, colour
    from ..core.style import figure as styled

    if isinstance(choices, str | bytes) or not isinstance(choices, Sequence) or not all(
            isinstance(b, Blocks) for b in choices):
        raise ValueError(f"choices must be a list of h.pallas.Blocks, as sweep() returns; got {choices!r:.60}")
    if marked is not None and not isinstance(marked, Blocks):
        raise ValueError(f"marked must be one h.pallas.Blocks (or None); got {marked!r:.60}")
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


#: The shapes the checks try: 1, 3, 2 and 5 steps along k (a kernel or a grid that assumes a number of k steps
#: fails one), unequal sides (a swapped index map shows), several output blocks (an accumulator carried over shows).
CASES = (Blocks(128, 128, 256, 128, 128, 128), Blocks(256, 384, 128, 128, 128, 128),
         Blocks(384, 256, 256, 128, 128, 256), Blocks(256, 640, 128, 128, 128, 128))
#: The shape the kernel alone runs at, behind the check's own BlockSpecs: 2 x 2 output blocks, 3 k steps.
ALONE = Blocks(256, 384, 256, 128, 128, 128)


@dataclass(frozen=True)
class Exercise:
    """What one Pallas exercise's check needs to know: the kernel's arguments, the call's, and the epilogue."""

    title: str
    kernel_args: str
    call: str
    bias: bool  # the fused exercise: relu(x @ y + bias), the bias a (1, n) row

    def want(self, x: np.ndarray, y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        """The right answer in float64, from the bf16 inputs' exact values."""
        product = x @ y
        return np.maximum(product + bias, 0.0) if bias is not None else product


BLOCKED = Exercise("your blocked matmul", "(x_ref, y_ref, z_ref, acc_ref)", "blocked_matmul(x, y, bm, bk, bn)", False)
FUSED = Exercise("your fused matmul (bias and ReLU)", "(x_ref, y_ref, b_ref, z_ref, acc_ref)",
                 "fused_matmul(x, y, bias, bm, bk, bn)", True)


def _say(passed: bool, message: str, attempted: bool = True) -> Verdict:
    print(message)
    return Verdict(passed, attempted, message)


def _untouched(title: str) -> Verdict:
    return _say(False, f"⏳ {title}: not attempted yet. Fill in the cell above, run it, then run this check again.",
                attempted=False)


def check_blocked_matmul(matmul: Any, kernel: Any) -> Verdict:
    """The kernel exercise: `kernel(x_ref, y_ref, z_ref, acc_ref)` inside the learner's `matmul(x, y, bm, bk, bn)`
    (bf16 in and out) must equal x @ y at every shape in CASES, and alone behind the check's own BlockSpecs."""
    return _check(BLOCKED, matmul, kernel)


def check_fused_matmul(matmul: Any, kernel: Any) -> Verdict:
    """The epilogue exercise: `kernel(x_ref, y_ref, b_ref, z_ref, acc_ref)` inside `matmul(x, y, bias, bm, bk, bn)`
    must equal relu(x @ y + bias) at every shape in CASES, and alone behind the check's own BlockSpecs."""
    return _check(FUSED, matmul, kernel)


def _check(exercise: Exercise, matmul: Any, kernel: Any) -> Verdict:
    """Run one Pallas exercise's check: the kernel alone first (the clearest diagnosis), then the learner's call."""
    title = exercise.title
    if any(f is ... or f is None for f in (matmul, kernel)):
        return _untouched(title)
    if not callable(matmul) or not callable(kernel):
        return _say(False, f"❌ {title}: pass your two functions themselves, {exercise.call.split('(')[0]} and "
                           "your kernel, not what they return")
    why = _run(lambda: _alone_problem(exercise, kernel), exercise)
    if why is None:
        for case in CASES:
            why = _run(lambda case=case: _call_problem(exercise, matmul, kernel, case), exercise)
            if why:
                why = why if why == "untouched" else f"{case}: {why}"
                break
    if why == "untouched":
        return _untouched(title)
    if why:
        return _say(False, f"❌ {title}: {why}")
    ran = "interpreted by JAX" if interpret() else "compiled for this TPU"
    steps = sorted({case.k // case.bk for case in CASES})
    return _say(True, f"✅ {title}: right at {len(CASES)} shapes with {', '.join(map(str, steps))} k steps "
                      f"({ran}), your kernel running in your pallas_call; the kernel alone right too.")


def _run(problem: Callable[[], str | None], exercise: Exercise) -> str | None:
    """The problem found, 'untouched' for an exercise stub, or what went wrong while running the learner's code."""
    try:
        with time_limit(TIME_LIMIT, exercise.title):
            return problem()
    except NotImplementedError:
        return "untouched"
    except TimeLimitExceeded:
        return f"took over {TIME_LIMIT:.0f} s on a small case: does a Python loop never end?"
    except Exception as exc:  # noqa: BLE001 - whatever the learner's code raises, a verdict, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return (f"raised {type(exc).__name__}: {first[:300]} (the kernel takes {exercise.kernel_args}; x's block "
                "is (bm, bk), y's (bk, bn), z's (bm, bn); grid (m // bm, n // bn, k // bk))")


def _inputs(case: Blocks, bias: bool) -> list[Any]:
    """bf16 inputs for `case`: x, y and, for the fused exercise, a (1, n) bias row."""
    import jax.numpy as jnp

    rng = np.random.default_rng([case.m, case.k, case.n])
    shapes = [(case.m, case.k), (case.k, case.n)] + ([(1, case.n)] if bias else [])
    return [jnp.asarray(rng.standard_normal(shape), jnp.bfloat16) for shape in shapes]


def _call_problem(exercise: Exercise, matmul: Callable[..., Any], kernel: Callable[..., Any],
                  case: Blocks) -> str | None:
    """Trace the learner's call at `case`, refuse what it must not do, then run it and compare."""
    import jax

    inputs = _inputs(case, exercise.bias)

    def call(*arrays: Any) -> Any:
        return matmul(*arrays, case.bm, case.bk, case.bn)

    traced = jax.make_jaxpr(call)(*inputs)
    why = _unbounded(traced.jaxpr) or _structure_problem(traced.jaxpr, kernel)
    return why or _compare(exercise, call(*inputs), case, inputs)


def _alone_problem(exercise: Exercise, kernel: Callable[..., Any]) -> str | None:
    """Run the learner's kernel behind the check's own BlockSpecs, its output and its accumulator NaN at the start
    (a kernel that never zeroes its accumulator, or never writes a block, keeps them: VMEM holds no zeros)."""
    import jax

    case = ALONE
    inputs = _inputs(case, exercise.bias)
    call = partial(_behind_our_specs, kernel, case)
    traced = jax.make_jaxpr(call)(*inputs)
    why = _unbounded(traced.jaxpr) or _compare(exercise, call(*inputs), case, inputs)
    return f"your kernel, behind the check's own BlockSpecs, {case}: {why}" if why else None


def _behind_our_specs(kernel: Callable[..., Any], case: Blocks, *inputs: Any) -> Any:
    """`kernel` in the chapter's pallas_call, run into an output filled with NaN (aliased), its float32
    accumulator set to NaN on the first grid step."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    bm, bk, bn = case.bm, case.bk, case.bn
    specs = [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))]
    specs += [pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))] * (len(inputs) - 2)
    out = pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))

    def body(*refs: Any) -> None:
        *ins, _, z_ref, acc_ref = refs

        @pl.when(pl.program_id(0) + pl.program_id(1) + pl.program_id(2) == 0)
        def _() -> None:
            acc_ref[...] = jnp.full(acc_ref.shape, jnp.nan, acc_ref.dtype)

        kernel(*ins, z_ref, acc_ref)

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((case.m, case.n), jnp.bfloat16), grid=case.grid,
        in_specs=[*specs, out], out_specs=out, scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        input_output_aliases={len(inputs): 0}, compiler_params=tpu_params(dimension_semantics=("arbitrary",) * 3),
        interpret=interpret())(*inputs, jnp.full((case.m, case.n), jnp.nan, jnp.bfloat16))


def _compare(exercise: Exercise, got: Any, case: Blocks, inputs: list[Any]) -> str | None:
    """What is wrong with `got` as the exercise's answer for `inputs`, with a hint at the usual cause, or None."""
    shape = (case.m, case.n)
    if getattr(got, "shape", None) != shape:
        if hasattr(got, "shape"):
            return f"returned {type(got).__name__} of shape {got.shape}; expected {shape}"
        return f"returned {type(got).__name__} {got!r:.40}; expected an array of shape {shape}"
    dtype = np.dtype(getattr(got, "dtype", np.float64))
    if dtype.kind != "f" and dtype.name != "bfloat16":
        return f"returned {dtype.name} values; expected floating-point ones (bfloat16, as its inputs)"
    values = np.asarray(got).astype(np.float64)
    x, y, *rest = (np.asarray(a).astype(np.float64) for a in inputs)
    bias = rest[0] if rest else None
    if np.isnan(values).any():
        return ("NaN in the result: the accumulator was never zeroed (zero acc_ref when pl.program_id(2) == 0, "
                "the first k step), or some blocks of z were never written (write z_ref when pl.program_id(2) == "
                "pl.num_programs(2) - 1, the last)")
    tolerance = _tolerance(dtype, x, y, bias)
    error = float(np.abs(values - exercise.want(x, y, bias)).max())
    if error <= tolerance:
        return None
    for wrong, why in _usual_mistakes(exercise, case, x, y, bias):
        if np.abs(values - wrong).max() <= tolerance:
            return why
    return (f"wrong: largest error {error:.3g} (allowed {tolerance:.2g} here); acc_ref must start at zero on the "
            "first k step, gather every step's product, and be written to z_ref on the last (pl.program_id(2) == "
            "pl.num_programs(2) - 1)" + ("; the bias and the ReLU go in there too, once" if exercise.bias else ""))


def _tolerance(dtype: np.dtype, x: np.ndarray, y: np.ndarray, bias: np.ndarray | None) -> float:
    """The largest error a right answer can have: bf16 inputs multiply exactly, float32 sums of k terms (k * 2**-24
    each, both ways), then the output rounded to its dtype (half its step), times the largest |x| |y| (+ |bias|)."""
    import jax.numpy as jnp

    scale = float(np.max(np.abs(x) @ np.abs(y), initial=0.0)) + float(np.max(np.abs(bias), initial=0.0)
                                                                        if bias is not None else 0.0)
    return (float(jnp.finfo(dtype).eps) / 2 + 2 * x.shape[1] * FLOAT32_UNIT) * scale


def _usual_mistakes(exercise: Exercise, case: Blocks, x: np.ndarray, y: np.ndarray,
                    bias: np.ndarray | None) -> Iterator[tuple[np.ndarray, str]]:
    """Wrong answers a learner's kernel often gives, each with what to change."""
    steps = case.k // case.bk
    if steps > 1:
        yield (exercise.want(x[:, -case.bk:], y[-case.bk:], bias),
               "only the last k block counted: add each block's product into acc_ref (+=), and zero it only on "
               "the first k step (pl.program_id(2) == 0)")
    if bias is None:
        return
    product = x @ y
    yield np.maximum(product, 0.0), "the bias is missing: add b_ref[...] to the sums on the last k step"
    yield product + bias, "no ReLU: write jnp.maximum(sums + bias, 0) on the last k step"
    if steps > 1:
        yield (np.maximum(product + steps * bias, 0.0),
               "the bias was added at every k step: add it once, on the last")


# --------------------------------------------------------- what the learner's call may do, read before it runs


def _subjaxprs(eqn: Any) -> list[Any]:
    """The jaxprs inside one equation's parameters: a jit's body, cond's branches, a loop's body, a kernel."""
    found: list[Any] = []

    def add(value: Any) -> None:
        if hasattr(getattr(value, "jaxpr", None), "eqns"):  # a ClosedJaxpr (JAX 0.6's has .eqns, not .outvars)
            found.append(value.jaxpr)
        elif hasattr(value, "eqns"):
            found.append(value)
        elif isinstance(value, tuple | list):
            for item in value:
                add(item)

    for value in eqn.params.values():
        add(value)
    return found


def _trips(eqn: Any) -> float:
    """How many times an equation runs its body: a scan's length, a pallas_call's grid steps, else once."""
    name = eqn.primitive.name
    if name == "scan":
        return float(eqn.params.get("length", 1))
    if name == "pallas_call":
        grid = getattr(eqn.params.get("grid_mapping"), "grid", ())
        return float(math.prod(g if isinstance(g, Integral) else math.inf for g in grid))
    return 1.0


def _operations(jaxpr: Any) -> float:
    """The operations `jaxpr` runs, each loop's body counted once per trip (infinite for a while loop)."""
    total = 0.0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            return math.inf
        inner = [_operations(sub) for sub in _subjaxprs(eqn)]
        body = max(inner, default=0.0) if eqn.primitive.name == "cond" else sum(inner)
        total += _trips(eqn) * (1.0 + body)
    return total


def _every(jaxpr: Any, kernels: bool) -> Iterator[Any]:
    """Every equation of `jaxpr` and of the jaxprs inside it (inside pallas_call kernels only if `kernels`)."""
    for eqn in jaxpr.eqns:
        yield eqn
        if kernels or eqn.primitive.name != "pallas_call":
            for sub in _subjaxprs(eqn):
                yield from _every(sub, kernels)


def _unbounded(jaxpr: Any) -> str | None:
    """Why the traced call might not end, or run too long to wait for, before it is compiled; None if bounded.
    Compiled code ignores Python's time limit, so this is the only point at which it can still be refused."""
    names = {eqn.primitive.name for eqn in _every(jaxpr, kernels=True)}
    if "while" in names:
        return ("it runs a jax.lax.while_loop (or a fori_loop with traced bounds): compiled, a loop that never "
                "ends cannot be stopped, so the check does not run it. A blocked matmul needs none: the grid is "
                "its loop")
    called = sorted(name for name in names if name in ("pure_callback", "io_callback"))
    if called:
        return (f"it calls back into Python from compiled code ({', '.join(called)}), which cannot be stopped if "
                "it never returns: a blocked matmul needs no callback")
    operations = _operations(jaxpr)
    if operations > MAX_OPERATIONS:
        return (f"it would run about {operations:,.0f} operations on this small case (loops counted per trip), "
                f"more than the {MAX_OPERATIONS:,} the check allows before compiling: is a loop's length or a "
                "grid far larger than the blocks need?")
    return None


def _origin(function: Callable[..., Any]) -> str:
    """How JAX names a kernel it traced: 'name at file:line' of the function (through partial and wrappers)."""
    while isinstance(function, partial):
        function = function.func
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    name = getattr(function, "__name__", type(function).__name__)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _kernel_origin(eqn: Any) -> str | None:
    """The origin of the kernel a pallas_call equation runs, as JAX recorded it (None where it did not)."""
    return getattr(getattr(eqn.params.get("jaxpr"), "debug_info", None), "func_src_info", None)


def _producers(jaxpr: Any, wanted: Sequence[bool]) -> Iterator[Any]:
    """The equations the `wanted` outputs of `jaxpr` depend on, inside calls too, but not inside kernels."""
    from jax.extend.core import Var

    needed = {v for v, want in zip(jaxpr.outvars, wanted, strict=True) if want and isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        used = [isinstance(v, Var) and v in needed for v in eqn.outvars]
        if not any(used):
            continue
        yield eqn
        needed.update(v for v in eqn.invars if isinstance(v, Var))
        if eqn.primitive.name != "pallas_call":
            for sub in _subjaxprs(eqn):
                yield from _producers(sub, used if len(sub.outvars) == len(used) else [True] * len(sub.outvars))


def _structure_problem(jaxpr: Any, kernel: Callable[..., Any]) -> str | None:
    """None if a pallas_call running `kernel` makes the traced call's result and no product is computed outside
    a kernel; otherwise what the call does instead."""
    calls = [eqn for eqn in _every(jaxpr, kernels=False) if eqn.primitive.name == "pallas_call"]
    if not calls:
        return ("no pallas_call ran: your matmul must call pl.pallas_call with your kernel, which does the "
                "product block by block")
    mine = _origin(kernel)
    ours = {id(eqn) for eqn in calls if _kernel_origin(eqn) in (mine, None)}
    if not ours:
        others = ", ".join(sorted({str(_kernel_origin(eqn)).split(" at ")[0] for eqn in calls}))
        return f"its pallas_call runs {others}, not your kernel {mine.split(' at ')[0]}: pass your kernel to it"
    producers = list(_producers(jaxpr, [True] * len(jaxpr.outvars)))
    if not any(id(eqn) in ours for eqn in producers):
        return "the result does not come out of the pallas_call that runs your kernel: return what it returns"
    if any(eqn.primitive.name == "dot_general" for eqn in producers):
        return ("it multiplies outside the kernel (x @ y, jnp.dot or jnp.matmul outside pl.pallas_call): the "
                "kernel must do the product")
    return None


def check_blocks(choice: Any, m: int = 4096, k: int = 4096, n: int = 4096, device: str = "TPU v5e") -> Verdict:
    """The block exercise: (bm, bk, bn) from SIDES that the model predicts fastest for a bfloat16 (m, k) @ (k, n)
    on `device`, within the VMEM the guide's largest blocks take."""
    m, k, n = _sides(m, k, n)
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
                           f"{budget() / 2**20:.0f} MiB of the guide's largest blocks {GUIDE_BLOCKS}, which compiled "
                           "within the default scoped VMEM limit (a kernel may raise it: compiler_params="
                           "h.pallas.tpu_params(vmem_limit_bytes=...), up to the 128 MiB a core has)")
    best = next(iter(sweep(m, k, n, device)), mine)  # none of SIDES fits a matrix smaller than them all
    if mine.seconds(device) > best.seconds(device) * 1.001:
        return _say(False, f"❌ {what}: predicted {mine.seconds(device) * 1e3:.3g} ms ({mine.steps:,} steps); "
                           f"{best.bm} x {best.bk} x {best.bn} is predicted {best.seconds(device) * 1e3:.3g} ms "
                           f"({best.steps:,} steps). Fewer, larger blocks: less HBM traffic, fewer steps")
    return _say(True, f"✅ {what}: the fastest the model predicts that fits, {mine.seconds(device) * 1e3:.3g} ms "
                      f"({mine.steps:,} grid steps, {mine.vmem / 2**20:.1f} MiB of VMEM).")
