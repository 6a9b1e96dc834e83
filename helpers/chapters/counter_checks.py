"""Checkers for chapter 07's exercises: a kernel must be right (as chapter 03's checkers judge it) AND its counters
must show the speed-up asked for: coalesced loads, no bank conflicts, a tile that fits and keeps an SM busy.

The counters come from the CPU executor (helpers.executor), from the very launches that check the kernel is right:
every size it runs (one of them drawn afresh, which a learner cannot guess) is counted and judged, under the same
time limit. A kernel that is right but not yet fast is a ❌ that names the size, the counter, its value and the
value asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import executor
from ..executor import Counters
from ..gpu import nvrtc
from ..gpu.cuda import blocks_for, kernel_source
from ..learning.checks import Verdict
from ..measuring import specs, workloads
from ..model import roofline
from . import make_it_fast
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
    _type_name,
)

#: The size whose counters the passing verdict shows: a multiple of 32, so every warp is full and every row starts
#: on a sector (4.00 sectors per request exactly). It is judged first, so a kernel slow everywhere is named there.
COUNT_N = 64
#: Every size the kernels run at, to be right and to be counted (no multiple of 32: the last blocks stick out); one
#: more, drawn afresh from DRAWN, joins them in every check.
SIZES = (COUNT_N, 50)
DRAWN = (33, 95)
#: A 32 x 32 block of threads, the shape both kernels are launched with.
BLOCK = (32, 32)
#: Floats a warp moves in one request when it is coalesced: one per lane, neighbours in memory.
WARP = 32
#: How far above a coalesced kernel's requests and sectors a kernel may go and still pass: half again (a guard that
#: reads a clamped index, a number read twice), never twice (half the lanes of a warp idle is twice the requests;
#: a warp across two rows of 16 is twice the sectors; 32 strided lanes are 8 times the sectors).
SLACK = 1.5


def _square_runs(name: str, reference: Callable[[np.ndarray], np.ndarray], arrays: int,
                 sizes: list[int]) -> Callable[[Launcher], Runs]:
    """Runs of kernel `name` on n x n inputs (arrays of them, then the output), for each n of `sizes`."""
    data = np.random.default_rng(SEED)
    big = data.standard_normal((arrays, max(sizes), max(sizes)), dtype=np.float32)

    def runs(launch: Launcher) -> Runs:
        def run(n: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
            def go(kernel: Any) -> tuple[Any, np.ndarray]:
                ins = [np.ascontiguousarray(x[:n, :n]) for x in big]
                want = reference(*ins)  # first, from the checker's own inputs
                named = {f"in{i}": x for i, x in enumerate(ins)} | {"out": np.full((n, n), np.nan, np.float32)}
                *_, out = launch(kernel, name, (blocks_for(n, 32), blocks_for(n, 32)), BLOCK, named, (np.int32(n),))
                return out, want
            return go
        return [(f"n = {n}", run(n)) for n in sizes]
    return runs


def _counting(counted: dict[int, Counters]) -> Launcher:
    """The CPU executor's launcher, keeping each launch's counters under its n (the kernels' last argument)."""
    def launch(program: executor.Program, name: str, grid: tuple[int, ...], block: tuple[int, ...],
               arrays: dict[str, np.ndarray], scalars: tuple[Any, ...]) -> list[Any]:
        copies = [np.array(array, copy=True) for array in arrays.values()]
        counted[int(scalars[-1])] = program.launch(name, grid, block, (*copies, *scalars)).counters
        return copies
    return launch


def _right_then_counted(title: str, source: Any, name: str, what: str, reference: Callable[..., np.ndarray],
                        arrays: int, judge: Callable[[Counters, int], str | None]) -> Verdict:
    """Compile, run right on the executor (and a GPU) at every size, counting each executor launch; then judge
    each size's counters (COUNT_N first): judge(counters, n) says what is still slow."""
    problem = _source_problem(title, source, what)
    if problem is not None:
        return problem
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, f"{name}.cu"))
    if failed is not None:
        return failed
    drawn = _drawn(_fresh(), *DRAWN, set(SIZES), WARP)
    sizes = [*SIZES, drawn]
    counted: dict[int, Counters] = {}
    builds, runs = _builds(source, name), _square_runs(name, reference, arrays, sizes)

    def plans(where: str) -> tuple[Callable[[], Any], Runs]:
        build, launch = builds(where)
        return build, runs(_counting(counted) if where == "cpu" else launch)

    verdict = _run_both(title, compiled, plans, (1e-5, 1e-6), f"n = {drawn}")
    if not verdict.passed:
        return verdict
    failed = counted_problem(title, verdict, counted, sizes, judge, "not fast yet")
    if failed is not None:
        return failed
    first, *rest = verdict.message.split("\n", 1)
    counts = f"   Counted on the CPU executor at every size it ran, as fast as asked at each; at n = {COUNT_N}: "
    return Verdict(True, True, "\n".join([first, f"{counts}{_counted(counted[COUNT_N])}.", *rest]))


def counted_problem(title: str, verdict: Verdict, counted: dict[int, Counters], sizes: list[int],
                    judge: Callable[[Counters, int], str | None], not_yet: str) -> Verdict | None:
    """After a kernel ran right: a failing Verdict when the executor did not count every size (on a GPU, CUDA C
    outside its subset) or a size's counters fail `judge` ("right, but {not_yet} at n = ..."); None when all pass."""
    if set(counted) != set(sizes):
        first = verdict.message.split("\n", 1)[0]
        return Verdict(False, True, f"❌ {title}: the counters this check reads come from the CPU executor, which "
                                    f"could not run it; the rest of the check said:\n   {first}")
    for n in sizes:
        slow = judge(counted[n], n)
        if slow:
            return Verdict(False, True, f"❌ {title}: right, but {not_yet} at n = {n}: {slow}")
    return None


def _counted(c: Counters) -> str:
    ways = f", shared reads {c.load_ways:.2f}-way and writes {_store_ways(c):.2f}-way" if c.shared_phases else ""
    return f"{c.sectors_per_request:.2f} sectors per global request{ways}"


def _store_ways(c: Counters) -> float:
    """ways_per_request of the shared stores alone."""
    phases = c.shared_phases - c.shared_load_phases
    return (c.shared_wavefronts - c.shared_load_wavefronts) / phases if phases else 0.0


def coalesced_counts(n: int) -> tuple[int, int]:
    """(requests, 32-byte sectors) that moving one n x n float32 array takes when each warp's request moves 32
    neighbouring floats of a row (the last of a row fewer): what a coalesced kernel makes, per array."""
    starts = np.arange(n)[:, None] * n + np.arange(0, n, WARP)[None, :]
    ends = np.arange(n)[:, None] * n + np.minimum(np.arange(0, n, WARP) + WARP, n)[None, :]
    return starts.size, int((((ends * 4 - 1) >> 5) - ((starts * 4) >> 5) + 1).sum())


def _global_problem(c: Counters, n: int, arrays: int, strided: str) -> str | None:
    """Why the global requests at n x n are not coalesced (too many requests, or too many sectors: `strided` says
    what to change), or None: `arrays` arrays are moved."""
    requests, sectors = (arrays * count for count in coalesced_counts(n))
    made = c.global_load_requests + c.global_store_requests
    touched = c.global_load_sectors + c.global_store_sectors
    if made > SLACK * requests:
        moved = c.global_load_bytes + c.global_store_bytes
        return (f"its warps make {made:,} global requests of {moved / made:.0f} bytes each on average, where a "
                f"coalesced kernel makes {requests:,} of up to 128: each request should move 32 neighbouring floats, "
                "one for each lane of the warp (not a loop in one lane), and each number once")
    if touched > SLACK * sectors:
        return (f"its requests touch {touched:,} sectors of 32 bytes ({touched / made:.2f} a request, up to "
                f"{c.worst_sectors} in one), where a coalesced kernel touches {sectors:,} (32 neighbouring floats "
                f"touch 4). {strided}")
    return None


def add_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What the coalescing exercise's kernel computes: C = A + B."""
    return (a + b).astype(np.float32)


@_announced
def check_coalesced(source: Any) -> Verdict:
    """The coalescing exercise: add_matrices right on the executor (and a GPU) at n = 64, 50 and one drawn afresh,
    and at each of them no more global requests and sectors than a coalesced kernel (SLACK)."""
    def judge(c: Counters, n: int) -> str | None:
        return _global_problem(c, n, 3, "Make threadIdx.x move along a row (the column index), so that the 32 "
                                        "threads of a warp read 32 neighbouring numbers")
    return _right_then_counted("coalesced matrix add", source, "add_matrices", "the two index lines",
                               add_reference, 2, judge)


def transpose_reference(a: np.ndarray) -> np.ndarray:
    """What the bank-conflict exercise's kernel computes: the transpose of A."""
    return np.ascontiguousarray(a.T)


def _conflict_problem(c: Counters) -> str | None:
    """Which shared requests (reads, writes) take more than one pass (bank conflicts), and how to remove them."""
    if c.bank_conflicts == 0:
        return None
    slow = [f"{what} take {ways:.2f} passes each" for what, ways in (("reads", c.load_ways), ("writes", _store_ways(c)))
            if ways > 1]
    return (f"its shared-memory {' and its '.join(slow)} where 1 would do ({c.bank_conflicts:,} extra passes in all): "
            "the numbers of one column of the tile share a bank. A row of 32 floats spans the 32 banks once; give "
            "each row one more float, so that the next row starts one bank later")


@_announced
def check_padded(source: Any) -> Verdict:
    """The bank-conflict exercise: transpose right on the executor (and a GPU) at n = 64, 50 and one drawn afresh,
    and at each of them coalesced global requests, a tile written once and read once per warp, and every shared
    request served in one pass (1-way: no bank conflict)."""
    def judge(c: Counters, n: int) -> str | None:
        if not c.shared_load_requests:
            return "it reads no shared memory: the exercise is to keep the tile and remove its bank conflicts"
        slow = _global_problem(c, n, 2, "The tile is there so that both the read of `in` and the write of `out` take "
                                        "neighbouring numbers; read the tile by columns instead, "
                                        "tile[threadIdx.x][threadIdx.y]")
        if slow:
            return slow
        warps = blocks_for(n, WARP) ** 2 * BLOCK[1]
        shared = c.shared_load_requests + c.shared_store_requests
        if shared > SLACK * 2 * warps:
            return (f"its warps make {shared:,} shared-memory requests where {2 * warps:,} would do (each warp writes "
                    "a row of the tile and reads a column, 32 numbers a request): every lane should move a number, "
                    "not a loop in one lane")
        return _conflict_problem(c)
    return _right_then_counted("conflict-free transpose", source, "transpose", "the tile's declaration",
                               transpose_reference, 1, judge)


# --------------------------------------------------------------------------------------------------------------
# Tile sizes for rung 5 (sgemm_2d): what fits, and what keeps an SM busy.

#: The exercise's starting tiles: too much shared memory for one block.
START_TILES = (256, 256, 32, 8, 8)
#: The largest side of C's tile a check runs (the executor then multiplies 256 x 256 matrices: about 2 s).
MAX_SIDE = 256
#: The most float32 registers a thread has (NVIDIA's tuning guides: 'The maximum registers per thread is 255').
MAX_REGISTERS = 255
#: The sides BM and BN must divide: the largest the check runs (the kernel has no bounds checks).
BIG_SIDES = MAX_SIDE
#: Blocks an SM of the T4 must hold at once: while one waits at __syncthreads(), another computes.
MIN_BLOCKS = 2


def tile_problem(tiles: tuple[int, int, int, int, int], device: str = specs.REFERENCE_GPU) -> str | None:
    """Why sgemm_2d<BM, BN, BK, TM, TN> cannot run well on `device`, or None: each refusal says what to change.
    Tiles that are not five whole numbers are a ValueError."""
    checked = _tiles(tiles)
    if isinstance(checked, str):
        raise ValueError(f"tiles: {checked}")
    bm, bn, bk, tm, tn = checked
    if bm % tm or bn % tn:
        return f"TM = {tm} must divide BM = {bm} and TN = {tn} must divide BN = {bn}: each thread takes TM x TN of C"
    if make_it_fast.BIG_N % bk or BIG_SIDES % bm or BIG_SIDES % bn:
        return (f"BM = {bm}, BN = {bn} and BK = {bk} must each divide the matrices' side: the kernel has no bounds "
                f"checks, and this check runs it at n = {MAX_SIDE} or less and predicts n = {make_it_fast.BIG_N:,}. "
                "Pick powers of two (BM and BN at most 256)")
    threads = (bm // tm) * (bn // tn)
    if threads % 32 or threads > specs.MAX_BLOCK_THREADS:
        return (f"(BM / TM) x (BN / TN) = {threads:,} threads per block: a block must be whole warps (a multiple of "
                f"32) and at most {specs.MAX_BLOCK_THREADS:,} threads. Raise TM or TN, or lower BM or BN")
    shared = (bm + bn) * bk * 4
    if shared > specs.MAX_STATIC_SHARED:
        return (f"the block's tiles of A and B take (BM + BN) x BK x 4 = {shared:,} bytes of shared memory; a block's "
                f"__shared__ arrays may hold {specs.MAX_STATIC_SHARED:,}. Lower BK, BM or BN")
    registers = tm * tn + tm + tn
    if registers > MAX_REGISTERS:
        return (f"each thread keeps TM x TN + TM + TN = {registers} floats in registers; a thread has at most "
                f"{MAX_REGISTERS}, and the rest spill to slow memory. Lower TM or TN")
    try:
        occ = roofline.occupancy(device, threads, shared, registers)  # a lower bound on registers: a GPU holds no more
    except ValueError:
        spec = roofline.published_spec(device)
        return (f"one block needs {threads:,} threads x {registers} registers = {threads * registers:,} registers, "
                f"more than an SM of the {spec.name} has ({specs.sm_limits(spec).registers:,}): fewer threads per "
                "block, or a smaller TM x TN")
    if occ.blocks_per_sm < MIN_BLOCKS:
        return (f"an SM of the {roofline.published_spec(device).name} holds {occ.blocks_per_sm} such block at once "
                f"({occ.limited_by} run out): while it waits at __syncthreads(), nothing else runs there. Keep at "
                f"least {MIN_BLOCKS} blocks per SM: fewer threads or less shared memory per block")
    return None


def _tiles(tiles: Any) -> tuple[int, int, int, int, int] | str:
    """The five tile sizes as ints, or what is wrong with them."""
    if type(tiles) not in (tuple, list) or len(tiles) != 5:
        return f"expected five whole numbers (BM, BN, BK, TM, TN), got {_type_name(tiles)}"
    if any(isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 1 for t in tiles):
        return f"expected five whole numbers above zero (BM, BN, BK, TM, TN), got {tuple(tiles)!r:.80}"
    return tuple(int(t) for t in tiles)  # type: ignore[return-value]


@_announced
def check_tiles(tiles: Any) -> Verdict:
    """The tile exercise: sgemm_2d<BM, BN, BK, TM, TN> must fit a block, keep MIN_BLOCKS blocks on a T4's SM,
    compile, and multiply right on the executor; the verdict then gives its predicted GFLOP/s on a T4."""
    title = "tile sizes for sgemm_2d"
    checked = _tiles(tiles)
    if isinstance(checked, str):
        return Verdict(False, True, f"❌ {title}: {checked}")
    if checked == START_TILES:
        return Verdict(False, False, f"⏳ {title}: not attempted yet. Change my_tiles, run it, then run this check "
                                     "again.")
    why = tile_problem(checked)
    if why:
        return Verdict(False, True, f"❌ {title}: {why}.")
    expression = make_it_fast.template("sgemm_2d", checked)
    source = kernel_source(make_it_fast.SOURCE)
    if nvrtc.available():
        try:
            for arch in nvrtc.TARGET_ARCHS:
                nvrtc.compile_source(source, arch, "sgemm.cu", name_expressions=(expression,))
        except nvrtc.CompileError as exc:
            return Verdict(False, True, f"❌ {title}: NVRTC could not instantiate {expression}:\n{exc}")
    r = make_it_fast.Rung(f"your {expression}", expression, "", (checked[0], checked[1]),
                          ((checked[0] // checked[3]) * (checked[1] // checked[4]),), checked[3] * checked[4])
    n = max(checked[0], checked[1])  # both divide 256, so the larger is a multiple of the smaller
    if n % checked[2]:
        return Verdict(False, True, f"❌ {title}: BK = {checked[2]} must divide n = {n}, the side this check runs at "
                                    "(the larger of BM and BN): the kernel steps along k by BK with no bounds check.")
    a, b = workloads.make_inputs("matmul", n, "float32", "numpy", seed=SEED)
    try:
        c, counted = make_it_fast.run_on_executor(r, a, b, name_expressions=(expression,))
    except executor.KernelFault as exc:
        return Verdict(False, True, f"❌ {title}: {exc}")
    if not np.allclose(c, a @ b, rtol=1e-4, atol=1e-3 * np.sqrt(n)):
        return Verdict(False, True, f"❌ {title}: {expression} at n = {n} differs from A @ B")
    t4 = specs.get(specs.REFERENCE_GPU)
    made = make_it_fast.compile_rung(r, make_it_fast.arch_of(t4), counted) if nvrtc.available() else None
    if made is not None:
        occ = roofline.occupancy(t4, r.threads, made["shared_bytes"] or 1, made["registers"])
        if occ.blocks_per_sm < MIN_BLOCKS:
            return Verdict(False, True, f"❌ {title}: the compiler gives {expression} {made['registers']} registers "
                                        f"per thread (NVRTC {made['nvrtc']}, sm_75): {r.threads} x {made['registers']} "
                                        f"= {r.threads * made['registers']:,} of an SM's "
                                        f"{specs.sm_limits(t4).registers:,}, so a T4's SM holds {occ.blocks_per_sm} "
                                        f"such block ({occ.limited_by} run out). Keep at least {MIN_BLOCKS}: fewer "
                                        "threads, or a smaller TM x TN.")
    yours = make_it_fast.gflops(make_it_fast.BIG_N, roofline.predict_kernel(
        t4, make_it_fast.work(r, counted, t4, counted_at=n, made=made)).seconds)
    rung5 = make_it_fast.gflops(make_it_fast.BIG_N, make_it_fast.predict("5", t4).seconds)
    compiled = f", compiled for {' and '.join(nvrtc.TARGET_ARCHS)}" if nvrtc.available() else ""
    shared = (checked[0] + checked[1]) * checked[2] * 4
    registers = (f" and {made['registers']} registers a thread (NVRTC {made['nvrtc']}, sm_75)" if made else "")
    return Verdict(True, True, f"✅ {title}: {expression} fits ({r.threads} threads, {shared:,} "
                               f"bytes of shared memory{registers}), an SM of a T4 holds {MIN_BLOCKS} or more of its "
                               f"blocks, and it multiplies right at n = {n} on the CPU executor{compiled}.\n"
                               f"   Predicted on a T4 at n = {make_it_fast.BIG_N:,}: {yours:,.0f} GFLOP/s (rung 5's "
                               f"128, 128, 8, 8, 8: {rung5:,.0f}). Not checked: how fast it runs (no GPU measured it).")
