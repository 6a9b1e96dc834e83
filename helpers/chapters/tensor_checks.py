"""The checker of chapter 07's tensor-core exercise: the warp's 16 x 16 tile loop of a WMMA kernel.

The learner's kernel `wmma_tile` gives each warp (a block of 32 threads) one 16 x 16 tile of C = A @ B, A and B in
fp16, the sums in float32. The check runs it on the CPU executor (and on a GPU when there is one) at n = 32, 48 and
one size drawn afresh, against NumPy's product of the same fp16 numbers in float64; then it reads the executor's
counters: every 16 x 16 x 16 product must go through the tensor cores once (mma_sync), its tiles loaded once each.
The executor's own faults catch what a GPU would run silently wrong or hang on: an mma_sync that not every lane of
the warp reaches, a leading dimension the programming guide forbids, an accumulator read before it was filled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..executor import Counters
from ..gpu import nvrtc
from ..learning.checks import Verdict
from .counter_checks import _counting, counted_problem
from .kernel_checks import (
    SEED,
    Launcher,
    Runs,
    _announced,
    _builds,
    _compile_problem,
    _drawn,
    _fresh,
    _run_both,
    _source_problem,
)

TITLE = "the warp's 16 x 16 tile loop"
NAME = "wmma_tile"
#: The side of a WMMA tile (m16n16k16) and the threads of the one warp a block holds.
TILE = 16
BLOCK = (32, 1)
#: The sizes every check runs; one more, a multiple of TILE drawn afresh from DRAWN (64, 80 or 96), joins them.
SIZES = (32, 48)
DRAWN = (64, 96)
#: How close each element must be to NumPy's float64 product of the same fp16 numbers: float32 sums of at most 96
#: exact products of numbers about 1 in size are within about 1e-5 of it; a tensor core that rounds its partial
#: sums differently stays well inside 1e-3. A wrong tile is wrong by about 1.
TOLERANCE = (1e-3, 1e-3)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What wmma_tile computes: A @ B of the fp16 inputs, exactly (float64), as float32."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def _runs(sizes: list[int]) -> Callable[[Launcher], Runs]:
    """Runs of wmma_tile at each n of `sizes`: fp16 normals, one warp per 16 x 16 tile of C."""
    data = np.random.default_rng(SEED)
    big = data.standard_normal((2, max(sizes), max(sizes))).astype(np.float16)

    def runs(launch: Launcher) -> Runs:
        def run(n: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
            def go(kernel: Any) -> tuple[Any, np.ndarray]:
                a, b = (np.ascontiguousarray(x[:n, :n]) for x in big)
                want = reference(a, b)  # first, from the checker's own inputs
                arrays = {"A": a, "B": b, "C": np.full((n, n), np.nan, np.float32)}
                *_, c = launch(kernel, NAME, (n // TILE, n // TILE), BLOCK, arrays, (np.int32(n),))
                return c, want
            return go
        return [(f"n = {n}", run(n)) for n in sizes]
    return runs


def tensor_problem(c: Counters, n: int) -> str | None:
    """Why the counters of an n x n run do not show each 16 x 16 x 16 product on the tensor cores once, or None."""
    products = (n // TILE) ** 3
    if c.tensor_ops == 0:
        return ("it makes no wmma::mma_sync: the exercise is to hand each 16 x 16 x 16 product to the tensor cores, "
                "not to multiply in a loop of your own")
    if c.tensor_ops != products:
        return (f"its warps make {c.tensor_ops:,} mma_sync calls where the product needs {products:,} ((n / 16)³: "
                "each warp one per step of 16 along k): step k by 16 from 0 to n")
    if c.tensor_loads != 2 * products:
        return (f"its warps make {c.tensor_loads:,} load_matrix_sync calls where {2 * products:,} do (a tile of A and "
                "one of B per step): load each tile once a step")
    return None


@_announced
def check_wmma_tile(source: Any) -> Verdict:
    """The tensor-core exercise: wmma_tile right on the executor (and a GPU) at n = 32, 48 and one drawn afresh,
    within TOLERANCE of NumPy, each warp's products made by mma_sync, one a step."""
    problem = _source_problem(TITLE, source, "the tile loop")
    if problem is not None:
        return problem
    failed, compiled = _compile_problem(TITLE, lambda: nvrtc.compile_for_targets(source, f"{NAME}.cu"))
    if failed is not None:
        return failed
    drawn = TILE * _drawn(_fresh(), DRAWN[0] // TILE, DRAWN[1] // TILE, {n // TILE for n in SIZES})
    sizes = [*SIZES, drawn]
    counted: dict[int, Counters] = {}
    builds, runs = _builds(source, NAME), _runs(sizes)

    def plans(where: str) -> tuple[Callable[[], Any], Runs]:
        build, launch = builds(where)
        return build, runs(_counting(counted) if where == "cpu" else launch)

    verdict = _run_both(TITLE, compiled, plans, TOLERANCE, f"n = {drawn}")
    if not verdict.passed:
        return verdict
    failed = counted_problem(TITLE, verdict, counted, sizes, tensor_problem, "not on the tensor cores as asked")
    if failed is not None:
        return failed
    first, *rest = verdict.message.split("\n", 1)
    c = counted[SIZES[0]]
    counts = (f"   Counted on the CPU executor at n = {SIZES[0]}: {c.tensor_ops} mma_sync and {c.tensor_loads} "
              f"load_matrix_sync calls, one product and two tiles per warp per step.")
    return Verdict(True, True, "\n".join([first, counts, *rest]))
