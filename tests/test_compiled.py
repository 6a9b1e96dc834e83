"""What the compiler made: the assembler's report, the machine code's loops and their weights, and the stored facts
of chapter 07's ladder against NVRTC's and nvdisasm's own output on sm_75 (T4) and sm_90 (H100, H200)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from helpers.chapters import make_it_fast
from helpers.gpu import compiled, machine_code, nvrtc
from helpers.gpu.cuda import kernel_source
from helpers.measuring import specs
from helpers.model import roofline

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")
needs_nvdisasm = pytest.mark.skipif(compiled.disassembler() is None, reason=compiled.INSTALL_HINT)

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z8sgemm_2dILi128EEvPKf' for 'sm_75'
ptxas info    : Function properties for _Z8sgemm_2dILi128EEvPKf
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 105 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'sgemm_naive' for 'sm_75'
ptxas info    : Function properties for sgemm_naive
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 52 registers, used 0 barriers, 380 bytes cmem[0]
"""

#: A kernel of two loops as nvdisasm lists one: an outer loop (a load, a store to shared memory, a barrier) around
#: an inner one (two shared loads, one of them 16 bytes, and four multiply-adds).
LISTING = """
        .section        .text.toy,"ax",@progbits
toy:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E.SYS R2, [R4] ;
        /*0020*/                   STS [R6], R2 ;
        /*0030*/                   BAR.SYNC 0x0 ;
.L_x_2:
        /*0040*/                   LDS.U.128 R8, [R7] ;
        /*0050*/                   LDS.U R12, [R7+0x100] ;
        /*0060*/                   FFMA R13, R8, R12, R13 ;
        /*0070*/                   FFMA R13, R9, R12, R13 ;
        /*0080*/                   FFMA R13, R10, R12, R13 ;
        /*0090*/                   FFMA R13, R11, R12, R13 ;
        /*00a0*/              @P1 BRA `(.L_x_2) ;
        /*00b0*/                   BAR.SYNC 0x0 ;
        /*00c0*/              @P0 BRA `(.L_x_1) ;
        /*00d0*/                   EXIT ;
"""


def _counters(**per_launch: int) -> SimpleNamespace:
    base = dict(blocks=1, threads_per_block=32, flops=0, global_load_requests=0, global_store_requests=0,
                shared_store_requests=0, shared_load_requests=0, barriers=0)
    return SimpleNamespace(**{**base, **per_launch})


def test_the_assembler_report_gives_registers_spills_shared_memory_and_barriers_per_kernel() -> None:
    report = compiled.assembler_report(LOG)
    assert report["_Z8sgemm_2dILi128EEvPKf"] == {"registers": 105, "barriers": 1, "shared": 8192, "stack": 16,
                                                 "stores": 8, "loads": 12}
    assert report["sgemm_naive"]["registers"] == 52 and report["sgemm_naive"]["shared"] == 0


def test_loops_are_found_by_their_backward_branches_and_weighed_by_the_executors_counts() -> None:
    code, labels = machine_code.parse(LISTING)["toy"]
    found = machine_code.loops(code, labels)
    assert [(lp.start, lp.end) for lp in found] == [(4, 10), (1, 12)]
    # one warp, 8 tiles of 8 inner steps: 256 FFMAs (512 FLOP units of a warp), 8 loads, 8 stores, 16 barriers
    mix = compiled.weigh(code, found, _counters(flops=256 * 64, global_load_requests=8, shared_store_requests=8,
                                                barriers=16))
    assert mix.per_fma["FFMA"] == 1.0
    assert mix.per_fma["LDS.128"] == mix.per_fma["LDS"] == pytest.approx(1 / 4)  # each inner step: 1 + 1 per 4
    assert mix.per_fma["LDG"] == pytest.approx(8 / 256) and mix.per_fma["BAR"] == pytest.approx(16 / 256)
    assert mix.lds_words_per_fma == pytest.approx((4 + 1) / 4)  # LDS.128 returns 4 words a lane
    assert mix.step == {"LDS.128": 1, "LDS": 1, "FFMA": 4, "BRA": 1}  # the hottest loop, as compiled
    assert mix.issued_per_fma == pytest.approx((7 * 64 + 5 * 8) / 256)  # 7 a step, 5 more a tile (BAR, BRA...)


def test_a_wrong_weight_shows_a_planted_miscount_and_a_kernel_without_multiply_adds_is_refused() -> None:
    code, labels = machine_code.parse(LISTING)["toy"]
    found = machine_code.loops(code, labels)
    right = compiled.weigh(code, found, _counters(flops=256 * 64, global_load_requests=8, shared_store_requests=8,
                                                  barriers=16))
    halved = compiled.weigh(code, found, _counters(flops=256 * 64, global_load_requests=16, shared_store_requests=16,
                                                   barriers=32))
    assert halved.per_fma["LDG"] == 2 * right.per_fma["LDG"]  # the outer loop's weight follows the loads
    no_math = LISTING.replace("FFMA", "FMNMX")
    code, labels = machine_code.parse(no_math)["toy"]
    with pytest.raises(ValueError, match="no multiply-add"):
        compiled.weigh(code, machine_code.loops(code, labels), _counters(global_load_requests=8))


def test_the_stored_facts_say_which_compiler_made_them_and_cover_every_rung() -> None:
    data = make_it_fast.stored()
    assert data["nvrtc"] and data["nvdisasm"]
    assert set(data["archs"]) == set(make_it_fast.COMPILED_ARCHS)
    for arch, rungs in data["archs"].items():
        assert list(rungs) == [r.label for r in make_it_fast.RUNGS], arch
        assert all(f["spill_stores"] == 0 == f["spill_loads"] for f in rungs.values()), arch


def test_occupancy_comes_from_the_compilers_registers() -> None:
    t4, h100 = specs.get("NVIDIA T4"), specs.get("NVIDIA H100 SXM")
    for label in ("4", "5", "6", "7"):  # a T4 SM holds 16 warps of each, not the 32 threads alone allow
        assert make_it_fast.predict(label, t4).occupancy.warps_per_sm == 16, label
    assert make_it_fast.predict("4", h100).occupancy.warps_per_sm == 32
    assert [make_it_fast.predict(label, h100).occupancy.warps_per_sm for label in "567"] == [16, 16, 16]


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_the_stored_registers_are_the_compilers_own(arch: str) -> None:
    live = compiled.facts(kernel_source(make_it_fast.SOURCE), arch, make_it_fast.SOURCE,
                          tuple(make_it_fast.name_expressions()))
    stored = make_it_fast.stored()
    for r in make_it_fast.RUNGS:
        made = live[r.kernel]
        assert made.shared_bytes == stored["archs"][arch][r.label]["shared_bytes"] == r_shared(r), r.label
        if nvrtc.version() == stored["nvrtc"]:  # another NVRTC may allocate otherwise: only the same one must agree
            assert made.registers == stored["archs"][arch][r.label]["registers"], (arch, r.label)
        occ = roofline.occupancy(specs.get("NVIDIA T4" if arch == "sm_75" else "NVIDIA H100 SXM"),
                                 make_it_fast.counts(r.label).threads_per_block, made.shared_bytes or 0,
                                 made.registers)
        assert occ.blocks_per_sm >= 1


def r_shared(r: make_it_fast.Rung) -> int:
    """The rung's shared bytes as the executor counted them: the compiler must agree."""
    return make_it_fast.counts(r.label).shared_bytes_per_block


@needs_nvrtc
@needs_nvdisasm
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_the_stored_instruction_mix_is_the_disassemblers_own(arch: str) -> None:
    stored = make_it_fast.stored()
    same = nvrtc.version() == stored["nvrtc"] and compiled.disassembler_version() == stored["nvdisasm"]
    for r in make_it_fast.RUNGS:
        live = make_it_fast.compile_rung(r, arch)
        if same:
            assert live["step"] == stored["archs"][arch][r.label]["step"], (arch, r.label)
            assert live["issued_per_fma"] == pytest.approx(stored["archs"][arch][r.label]["issued_per_fma"])
        assert live["per_fma"]["FFMA"] == 1.0
    shared_tiles, one_d, two_d = (make_it_fast.compile_rung(make_it_fast.rung(n), arch)["step"] for n in "345")
    # the compiler merges neighbouring shared reads into 16-byte ones: what the executor counts as 64 reads per 32
    # multiply-adds in rung 3, 72 per 64 in rung 4 and 16 per 64 in rung 5, the GPU issues as 40, 24 and 10
    assert (shared_tiles["LDS"], shared_tiles["LDS.128"], shared_tiles["FFMA"]) == (32, 8, 32)
    assert (one_d["LDS"], one_d["LDS.128"], one_d["FFMA"]) == (8, 16, 64)
    assert (two_d["LDS"], two_d["LDS.128"], two_d["FFMA"]) == (8, 2, 64)


@needs_nvrtc
def test_any_hand_written_kernel_is_priced_from_the_executors_counts_and_the_compilers_facts() -> None:
    import numpy as np

    from helpers import executor

    source, n = kernel_source("matmul.cu"), 64
    a, b, c = (np.ones((n, n), np.float32) for _ in range(3))
    naive, tiled = (executor.Program(source).launch(k, (n // 16, n // 16), (16, 16), (a, b, c, np.int32(n))).counters
                    for k in ("matmul_naive", "matmul_tiled"))
    big = 4096
    works = [compiled.kernel_work(counted, "NVIDIA T4", source, k, name="matmul.cu", dram_bytes=3 * 4 * big**2,
                                  scale=(big / n) ** 3) for counted, k in ((naive, "matmul_naive"),
                                                                         (tiled, "matmul_tiled"))]
    assert all(w.registers_per_thread and w.flops == 2 * big**3 for w in works)
    times = [roofline.predict_kernel("NVIDIA T4", w) for w in works]
    assert times[0].bound in ("L1 lines", "arithmetic") and times[1].seconds < times[0].seconds
    if compiled.disassembles("sm_75"):
        assert works[0].other_instructions > 0  # address arithmetic and loads beside the multiply-adds


@needs_nvrtc
def test_without_the_disassembler_a_learners_tile_is_priced_from_its_registers_alone(monkeypatch) -> None:
    monkeypatch.setattr(compiled, "disassembler", lambda: None)
    r = make_it_fast.rung("5")
    made = make_it_fast.compile_rung(r, "sm_75")
    assert "step" not in made and made["registers"] > 64
    work = make_it_fast.work(r, make_it_fast.counts("5"), "NVIDIA T4", made=made)
    assert work.registers_per_thread == made["registers"] and work.other_instructions is None
    assert "registers alone" in make_it_fast.compiled_here("NVIDIA T4", "5")
