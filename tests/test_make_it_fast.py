"""Chapter 07's SGEMM ladder (helpers/chapters/make_it_fast.py, helpers/kernels/sgemm.cu) on the CPU executor: every
rung multiplies right, faults planted in the shipped source are caught, the counters tell the ladder's story, and the
kernel model of helpers.model.roofline ('A kernel from its counters') gives the bounds the chapter explains."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from helpers import executor
from helpers.chapters import make_it_fast
from helpers.gpu.cuda import kernel_source
from helpers.measuring import specs, workloads
from helpers.model import roofline

#: sgemm.cu as it ships: every planted fault below is a str.replace on it.
SHIPPED = kernel_source(make_it_fast.SOURCE)
T4 = specs.REFERENCE_GPU
#: The GPUs whose SM count and compute capability are on file: the ones the kernel model predicts for.
MODELLED = [s.name for s in specs.GPUS if s.sms and s.compute_capability in specs.SM_LIMITS]


def _right(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """C matches A @ B as make_it_fast.counts judges it."""
    n = a.shape[0]
    return bool(np.allclose(c, a @ b, rtol=1e-4, atol=1e-3 * np.sqrt(n)))


def _planted(label: str, old: str, new: str) -> str:
    """sgemm.cu with `old` replaced by `new` in rung `label`'s part only (where `old` must occur exactly once)."""
    part = make_it_fast.kernel_text(label)
    assert part in SHIPPED and part.count(old) == 1, f"rung {label} no longer holds {old!r} once: update the test"
    changed = SHIPPED.replace(part, part.replace(old, new))
    assert changed != SHIPPED
    return changed


def _forget() -> None:
    make_it_fast._counts.cache_clear()
    make_it_fast._program.cache_clear()


@pytest.fixture
def ship(monkeypatch):
    """ship(text): make_it_fast reads `text` as sgemm.cu (run_on_executor, counts) until the test ends."""
    def ship(text: str) -> None:
        monkeypatch.setattr(make_it_fast, "kernel_source",
                            lambda file: text if file == make_it_fast.SOURCE else kernel_source(file))
        _forget()

    _forget()
    yield ship
    monkeypatch.undo()
    _forget()  # no planted kernel's counts left behind for other tests


# ---------------------------------------------------------------- 1. every rung multiplies right


@pytest.mark.parametrize("label", [r.label for r in make_it_fast.RUNGS])
def test_every_rung_multiplies_right_at_128(label) -> None:
    a, b = workloads.make_inputs("matmul", 128, "float32", "numpy", seed=3)
    c, counted = make_it_fast.run_on_executor(make_it_fast.rung(label), a, b)
    assert _right(c, a, b)
    assert counted.flops == 2 * 128**3


@pytest.mark.parametrize("label", ["1", "2", "3"])
def test_the_bounds_checked_rungs_multiply_right_at_a_size_not_a_multiple_of_32(label) -> None:
    r = make_it_fast.rung(label)
    assert r.any_n
    a, b = workloads.make_inputs("matmul", 100, "float32", "numpy", seed=4)
    c, _ = make_it_fast.run_on_executor(r, a, b)
    assert _right(c, a, b)


@pytest.mark.parametrize(("label", "tile"), [("4", "64 x 64"), ("5", "128 x 128"), ("6", "128 x 128"),
                                             ("7", "128 x 128")])
def test_the_tiled_rungs_refuse_a_size_not_a_multiple_of_their_tile(label, tile) -> None:
    r = make_it_fast.rung(label)
    with pytest.raises(ValueError, match=f"n = 100 is not a multiple of its {tile} tile"):
        r.launch(100)
    a, b = workloads.make_inputs("matmul", 100, "float32", "numpy")
    with pytest.raises(ValueError, match=tile):
        make_it_fast.run_on_executor(r, a, b)
    grid, block = r.launch(256)
    side = int(tile.split(" x ")[0])
    assert grid == (256 // side, 256 // side) and int(np.prod(block)) == r.threads


def test_only_the_naive_rung_runs_blockidx_x_down_the_rows_of_c() -> None:
    assert [r.rows_first for r in make_it_fast.RUNGS] == [True] + [False] * 6
    # a tile of 64 rows x 32 columns at n = 128: 2 tiles down, 4 across; grid.x counts what blockIdx.x walks
    down = make_it_fast.Rung("down", "sgemm_naive", "", (64, 32), (32, 32), 1, rows_first=True, any_n=True)
    across = dataclasses.replace(down, rows_first=False)
    assert down.launch(128) == ((2, 4), (32, 32)) and across.launch(128) == ((4, 2), (32, 32))
    assert make_it_fast.rung("1").launch(100) == ((4, 4), (32, 32))  # 100 rows: 4 tiles, the last sticking out


@pytest.mark.parametrize("label", ["", "8", "n", 0, None])  # "n": naive and no bank conflicts
def test_a_label_that_names_no_single_rung_is_refused_with_the_list(label) -> None:
    with pytest.raises(ValueError, match="the rungs: 1 naive, 2 coalesced"):
        make_it_fast.rung(label)


# ---------------------------------------------------------------- 2. planted faults in the shipped source

#: (rung, exact text of sgemm.cu, its faulty replacement, n, what the executor must say; None: a wrong answer).
FAULTS = {
    "naive reads one past the end of k": ("1", "k < n", "k <= n", 128, "out-of-bounds read"),
    "coalesced without its bounds check": ("2", "if (row < n && col < n) {", "{", 100, "out-of-bounds read"),
    "shared tiles without the second __syncthreads()": (
        "3", "        }\n        __syncthreads();\n    }", "        }\n    }", 128, "race"),
    "2D tiling without the __syncthreads() after the copy": (
        "5", "        __syncthreads();\n        for (int k", "        for (int k", 128, "race"),
    "conflict-free with rung 6's B columns": (
        "7", "Bs[k * BN + (j / 4) * spread + tcol * 4]", "Bs[k * BN + tcol * TN + j]", 128, None),
    "float4 reading As one float off": (
        "6", "&As[k * BM + trow * TM + m]", "&As[k * BM + trow * TM + m + 1]", 128, "misaligned address"),
}


@pytest.mark.parametrize(("label", "old", "new", "n", "fault"), FAULTS.values(), ids=FAULTS.keys())
def test_a_fault_planted_in_the_shipped_source_is_caught(ship, label, old, new, n, fault) -> None:
    r = make_it_fast.rung(label)
    a, b = workloads.make_inputs("matmul", n, "float32", "numpy")
    ship(_planted(label, old, new))
    if fault:
        with pytest.raises(executor.KernelFault, match=fault):
            make_it_fast.run_on_executor(r, a, b)
        with pytest.raises(executor.KernelFault, match=fault):
            make_it_fast.counts(label, n)
    else:
        c, _ = make_it_fast.run_on_executor(r, a, b)
        assert not _right(c, a, b)
        with pytest.raises(AssertionError, match=f"{r.label}: C differs from A @ B at n = {n}"):
            make_it_fast.counts(label, n)


def test_the_shipped_source_passes_through_the_same_harness(ship) -> None:
    """The control for the planted faults: sgemm.cu as it ships, read through ship(), is right and counted."""
    ship(SHIPPED)
    assert make_it_fast.counts("7").bank_conflicts == 0
    a, b = workloads.make_inputs("matmul", 100, "float32", "numpy")
    c, _ = make_it_fast.run_on_executor(make_it_fast.rung("2"), a, b)
    assert _right(c, a, b)


def test_a_template_instance_the_source_lacks_is_refused_naming_its_templates() -> None:
    with pytest.raises(ValueError, match="one of sgemm_2d, sgemm_vectorized, sgemm_conflict_free; got 'sgemm_nope'"):
        make_it_fast.template("sgemm_nope")
    r = dataclasses.replace(make_it_fast.rung("5"), kernel="sgemm_nope<128, 128, 8, 8, 8>")
    a, b = workloads.make_inputs("matmul", 128, "float32", "numpy")
    with pytest.raises(executor.CudaCError, match="its templates: sgemm_2d, sgemm_vectorized, sgemm_conflict_free"):
        make_it_fast.run_on_executor(r, a, b, name_expressions=(r.kernel,))


def test_a_template_instance_of_other_tiles_runs_right() -> None:
    """name_expressions: a tile size of one's own (what check_tiles runs), instantiated beside the ladder's."""
    kernel = make_it_fast.template("sgemm_conflict_free", (64, 64, 8, 4, 4))
    assert kernel == "sgemm_conflict_free<64, 64, 8, 4, 4>"
    r = make_it_fast.Rung("mine", kernel, "", (64, 64), (256,), 16)
    a, b = workloads.make_inputs("matmul", 64, "float32", "numpy")
    c, counted = make_it_fast.run_on_executor(r, a, b, name_expressions=(kernel,))
    assert _right(c, a, b) and counted.threads_per_block == 256 and counted.bank_conflicts == 0
    with pytest.raises(ValueError, match="BM must be a positive integer"):
        make_it_fast.template("sgemm_2d", (True, 128, 8, 8, 8))


# ---------------------------------------------------------------- 3. the counters tell the ladder's story


def test_the_naive_rungs_a_loads_touch_32_sectors_and_its_b_loads_one() -> None:
    naive = make_it_fast.counts("1")
    assert naive.load_sectors_per_request == 16.5
    half = naive.global_load_requests // 2  # one load of A and one of B per step of k
    assert naive.global_load_sectors == 32 * half + 1 * half
    assert naive.global_load_lines == 32 * half + 1 * half
    # A alone, from the shipped kernel's own line: 32 rows of A per warp, a sector (and a line) each
    only_a = _planted("1", "sum += A[row * n + k] * B[k * n + col];", "sum += A[row * n + k];")
    a, b = workloads.make_inputs("matmul", 128, "float32", "numpy")
    grid, block = make_it_fast.rung("1").launch(128)
    counted = executor.Program(only_a).launch("sgemm_naive", grid, block,
                                              (a, b, np.zeros((128, 128), np.float32), np.int32(128))).counters
    assert counted.load_sectors_per_request == 32.0
    assert counted.global_load_lines == counted.global_load_sectors


def test_the_coalesced_rung_reads_a_broadcast_and_four_sectors() -> None:
    coalesced = make_it_fast.counts("2")
    assert coalesced.load_sectors_per_request == 2.5  # (1 + 4) / 2
    assert coalesced.global_load_requests == make_it_fast.counts("1").global_load_requests
    assert coalesced.shared_phases == 0 and coalesced.ways_per_request == 0.0


def test_shared_tiles_are_conflict_free_with_two_passes_per_multiply_add() -> None:
    tiles = make_it_fast.counts("3")
    assert tiles.ways_per_request == 1.0 and tiles.bank_conflicts == 0
    warp_multiply_adds = tiles.flops / roofline.WARP_FMA_FLOPS
    # two reads per multiply-add, and per 32 of them the two stores that fill the tiles
    assert tiles.shared_wavefronts / warp_multiply_adds == pytest.approx(2 + 2 / 32)
    assert tiles.barriers > 0


def test_the_register_tiles_trade_bank_conflicts_for_fewer_passes() -> None:
    c5, c6, c7 = (make_it_fast.counts(label) for label in ("5", "6", "7"))
    assert c5.ways_per_request > 1 and c5.bank_conflicts > 0
    assert c6.bank_conflicts > 0
    assert c7.ways_per_request == 1.0 and c7.bank_conflicts == 0
    assert c7.shared_wavefronts < c6.shared_wavefronts < c5.shared_wavefronts
    assert c7.shared_phases == c6.shared_phases  # the same requests; rung 7 only removes the extra passes
    assert c7.flops == c6.flops == c5.flops == 2 * make_it_fast.COUNT_N**3


def test_flops_per_byte_loaded_grows_up_the_ladder() -> None:
    intensity = [make_it_fast.counts(label).flops_per_byte for label in ("1", "2", "3", "4", "5")]
    assert intensity[0] == intensity[1]  # coalescing moves the same bytes in fewer sectors
    assert intensity[1] < intensity[2] < intensity[3] < intensity[4]
    assert intensity[2] / intensity[1] > 16  # each number of a 32 x 32 tile used 32 times


def test_the_vectorised_rungs_load_16_bytes_per_lane() -> None:
    c5, c6 = make_it_fast.counts("5"), make_it_fast.counts("6")
    assert c6.global_load_bytes == c5.global_load_bytes
    assert c6.global_load_requests * 4 == c5.global_load_requests
    assert c6.load_sectors_per_request == 16.0  # 32 float4s: 512 bytes, 16 sectors


# ---------------------------------------------------------------- 4. the model: occupancy, clocks, bounds


def test_a_1024_thread_block_fills_an_sm_of_the_t4() -> None:
    occ = roofline.occupancy(T4, 1024)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (1, 32, "threads")
    assert occ.fraction == 1.0
    assert roofline.occupancy(T4, 256).blocks_per_sm == 4


def test_shared_memory_and_registers_limit_the_blocks_an_sm_holds() -> None:
    by_shared = roofline.occupancy(T4, 64, 24 * 1024)  # 64 KiB per SM on the T4: two such blocks
    assert (by_shared.blocks_per_sm, by_shared.limited_by) == (2, "shared memory")
    by_registers = roofline.occupancy(T4, 256, 0, registers_per_thread=128)  # 64K registers: 2 blocks of 32K
    assert (by_registers.blocks_per_sm, by_registers.limited_by) == (2, "registers")
    by_blocks = roofline.occupancy(T4, 32)  # 16 blocks per SM at most on compute capability 7.5
    assert (by_blocks.blocks_per_sm, by_blocks.limited_by) == (16, "blocks")


@pytest.mark.parametrize(("threads", "shared", "message"), [
    (1025, 0, "at most 1,024"), (256, 48 * 1024 + 1, "48 KiB"),
])
def test_a_block_no_gpu_can_launch_is_refused(threads, shared, message) -> None:
    with pytest.raises(ValueError, match=message):
        roofline.occupancy(T4, threads, shared)


def test_a_block_whose_registers_do_not_fit_an_sm_is_refused() -> None:
    with pytest.raises(ValueError, match="registers run out"):
        roofline.occupancy(T4, 1024, 0, registers_per_thread=255)


@pytest.mark.parametrize("gpu", ["NVIDIA L4", "NVIDIA H100 PCIe"])
def test_a_gpu_without_its_sms_on_file_is_refused_naming_those_with_them(gpu) -> None:
    for model in (lambda: roofline.occupancy(gpu, 256), lambda: roofline.sm_clock(gpu),
                  lambda: make_it_fast.predict("1", gpu)):
        with pytest.raises(ValueError, match="GPUs with them: NVIDIA T4") as info:
            model()
        assert all(name in str(info.value) for name in MODELLED)


def test_the_sm_clock_follows_from_the_published_peak_but_a_t4_runs_at_the_clock_it_holds() -> None:
    assert roofline.peak_clock(T4) == pytest.approx(1.58e9, rel=0.01)
    assert roofline.sm_clock(T4) == 1185e6 == specs.get(T4).held_clock  # measured on a Colab T4 under a matmul
    assert "1185 MHz" in specs.get(T4).held_clock_source and "github.com" in specs.get(T4).held_clock_source
    assert roofline.held_share(specs.get(T4)) == pytest.approx(1185 / 1582, rel=0.01)
    for name in MODELLED:
        assert 0.9e9 < roofline.sm_clock(name) < 2.6e9, name  # every GPU on file boosts to 1 to 2.52 GHz (RTX 4090)
        assert roofline.sm_clock(name) == roofline.peak_clock(name) or name == T4


def test_the_t4_cublas_prediction_runs_at_the_held_clock_and_its_roof_stays_the_peak() -> None:
    spec = specs.get(T4)
    assert roofline.roofs(spec).roof("float32").flops == spec.peak_flops["float32"]
    busy = roofline.device_seconds(spec, flops=2 * 4096**3, bytes=0, matmul=True) - roofline.KERNEL_FLOOR["gpu"].value
    rate = 2 * 4096**3 / busy
    assert rate == pytest.approx(spec.peak_flops["float32"] * roofline.MATMUL_EFFICIENCY["gpu"].value
                                 * roofline.held_share(spec), rel=1e-6)


def test_on_the_t4_the_naive_rung_waits_on_the_l1_and_shared_tiles_on_shared_memory() -> None:
    naive, tiles = make_it_fast.predict("1", T4), make_it_fast.predict("3", T4)
    assert naive.bound == "L1 lines" and tiles.bound == "shared memory"
    assert naive.seconds > 10 * tiles.seconds
    assert naive.seconds == pytest.approx(max(naive.terms.values()) + roofline.KERNEL_FLOOR["gpu"].value)


@pytest.mark.parametrize("gpu", MODELLED)
def test_removing_bank_conflicts_never_slows_the_prediction(gpu) -> None:
    rung5, rung7 = make_it_fast.predict("5", gpu), make_it_fast.predict("7", gpu)
    assert rung7.seconds <= rung5.seconds
    assert rung7.terms["shared memory"] < rung5.terms["shared memory"]
    assert make_it_fast.predict("1", gpu).seconds > rung7.seconds


def test_the_table_has_a_row_per_rung_with_its_occupancy() -> None:
    rows = make_it_fast.table(T4)
    assert [row.rung for row in rows] == list(make_it_fast.RUNGS)
    assert rows[0].occupancy.blocks_per_sm == 1  # 1,024 threads
    assert rows[4].occupancy.blocks_per_sm == 2  # 256 threads x 105 registers (NVRTC): 2 of 65,536 registers' worth
    assert rows[4].occupancy.limited_by == "registers" and rows[4].occupancy.warps_per_sm == 16
    assert all(row.predicted.occupancy == row.occupancy for row in rows)


def test_the_dram_model_falls_back_to_every_block_reading_its_own_rows_and_columns() -> None:
    n, tile, resident = 4096, (128, 128), 160
    blocks = (n // 128) ** 2
    every_block = blocks * (128 + 128) * n * 4 + n * n * 4
    assert roofline.matmul_dram_bytes(n, tile, resident, None) == every_block
    assert roofline.matmul_dram_bytes(n, tile, resident, 1024) == every_block  # an L2 too small for a wave's step
    shared = roofline.matmul_dram_bytes(n, tile, resident, 40 * 2**20)
    assert n * n * 4 < shared < every_block / 4


def test_the_dram_model_follows_the_order_blocks_start_in() -> None:
    """A wave of 32 blocks of 32 x 32 along a row of C reads 32 rows of A and all n columns of B per step; down a
    column, the transpose: the same bytes for a square C, and both far under every block reading its own."""
    along = roofline.matmul_dram_bytes(1024, (32, 32), 32, 2**30)
    down = roofline.matmul_dram_bytes(1024, (32, 32), 32, 2**30, rows_first=True)
    assert along == down == 32 * (32 + 1024) * 1024 * 4 + 1024 * 1024 * 4


def _work(sums_per_thread: int) -> roofline.KernelWork:
    """Arithmetic only, in blocks of one warp with 24 KiB of shared memory: two blocks, two warps, per T4 SM."""
    return roofline.KernelWork(flops=1e12, shared_passes=0, global_lines=0, requests=0, dram_bytes=0,
                               threads_per_block=32, shared_bytes_per_block=24 * 1024,
                               sums_per_thread=sums_per_thread)


def test_too_few_warps_stretch_the_arithmetic_term() -> None:
    few, enough = roofline.predict_kernel(T4, _work(1)), roofline.predict_kernel(T4, _work(8))
    assert few.occupancy.warps_per_sm == 2
    assert few.hidden == pytest.approx(2 / 16) and enough.hidden == 1.0  # 16 warps x sums hide 4 clocks x 4
    assert few.terms["arithmetic"] == pytest.approx(8 * enough.terms["arithmetic"])
    assert few.bound == "arithmetic" and few.seconds > enough.seconds


def test_a_tile_loop_waits_one_dram_latency_a_step_a_wave_and_a_lone_block_adds_its_dram_time() -> None:
    """1,000 steps of 40 blocks on a T4's 40 SMs: two blocks an SM (24 KiB each) make half a wave of steps, 500
    latencies; blocks of 40 KiB, one an SM, wait 1,000 and add the DRAM time to the arithmetic's."""
    t4 = specs.get("NVIDIA T4")
    latency = roofline.dram_latency(t4).value
    pair = dataclasses.replace(_work(8), barrier_waits=40 * 1000, dram_bytes=1e9)
    alone = dataclasses.replace(pair, shared_bytes_per_block=40 * 1024)
    two, one = roofline.predict_kernel(t4, pair), roofline.predict_kernel(t4, alone)
    assert two.occupancy.blocks_per_sm == 2 and one.occupancy.blocks_per_sm == 1
    assert two.terms["barrier waits"] == pytest.approx(500 * latency)
    assert one.terms["barrier waits"] == pytest.approx(1000 * latency)
    floor = roofline.KERNEL_FLOOR["gpu"].value
    assert two.seconds == pytest.approx(two.terms["arithmetic"] + 500 * latency + floor)  # the DRAM hides
    assert one.seconds == pytest.approx(one.terms["arithmetic"] + one.terms["DRAM"] + 1000 * latency + floor)
    without = roofline.predict_kernel(t4, dataclasses.replace(alone, barrier_waits=0))
    assert without.seconds == pytest.approx(max(without.terms.values()) + floor)  # no tile loop: the slowest unit


def test_predict_kernel_wants_a_kernel_work() -> None:
    with pytest.raises(TypeError, match="KernelWork"):
        roofline.predict_kernel(T4, {"flops": 1.0})


def test_a_wave_reads_no_rows_or_columns_beyond_the_matrix() -> None:
    """Tiles sticking out of C read only the rows and columns that exist: a 16 x 16 product in one 32 x 32 tile
    moves A, B and C once (3 x 16² floats)."""
    assert roofline.matmul_wave(100, (64, 64), 3) == (100, 100)
    assert roofline.matmul_dram_bytes(16, (32, 32), 1000, 4 * 2**20) == 3 * 16 * 16 * 4
    assert roofline.matmul_dram_bytes(16, (32, 32), 1000, None) == 3 * 16 * 16 * 4
    with pytest.raises(ValueError, match="tile must be"):
        roofline.matmul_wave(4096, (32,), 4)


@pytest.mark.parametrize("bad", [None, 100, 4096 * 8 + 1])
def test_a_size_a_rung_cannot_run_has_no_prediction(bad) -> None:
    with pytest.raises(ValueError):
        make_it_fast.predict("5", "NVIDIA T4", bad)


#: Chapter 07 on a real H200 (this project's run of 2026-11-28, shared/gpu-runs/h200-2026-11-28/07_make_it_fast.ipynb,
#: cell 42): each rung's median at n = 4,096, as the chapter printed it. 132 SMs, read by CuPy there.
H200_MEASURED = {"1": 276e-3, "2": 22.2e-3, "3": 15.7e-3, "4": 8.31e-3, "5": 6.34e-3, "6": 4.94e-3, "7": 4.72e-3}


def test_the_h200_ladder_measured_on_a_real_h200_is_within_1_3x_of_the_model() -> None:
    h200 = specs.get("NVIDIA H200")
    assert h200.sms == 132 and h200.sms_source.startswith("measured")
    for label, seconds in H200_MEASURED.items():
        ratio = seconds / make_it_fast.predict(label, h200).seconds
        assert 1 / 1.3 <= ratio <= 1.3, (label, round(ratio, 2))
