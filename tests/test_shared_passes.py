"""Shared-memory passes from the machine code (helpers/gpu/shared_passes.py): NVIDIA's rule on the forum's own examples,
the lane-by-lane evaluation of a listing's integer instructions, and every rung of chapter 07 compiled for sm_75 and
sm_90, whose passes per multiply-add are worked out by hand here from sgemm.cu's indexing."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from helpers.chapters import make_it_fast
from helpers.gpu import compiled, machine_code, shared_passes
from helpers.gpu.cuda import kernel_source

needs_nvdisasm = pytest.mark.skipif(compiled.disassembler() is None, reason=compiled.INSTALL_HINT)
LANE = np.arange(32)


@pytest.mark.parametrize(("addresses", "width", "passes"), [
    (LANE * 4, 32, 1),  # 32 neighbouring words: one pass
    (np.zeros(32, np.int64), 32, 1),  # one word for every lane: a broadcast
    (LANE * 8, 32, 2),  # every other word: two lanes a bank, a 2-way conflict
    (LANE * 128, 32, 32),  # one bank for every lane: 32-way
    (LANE * 8, 64, 2),  # 8-byte loads, neighbours: a half-warp a pass
    (LANE * 16, 128, 4),  # 16-byte loads, neighbours: a quarter-warp a pass
    (np.zeros(32, np.int64), 128, 2),  # NVIDIA: uniform LDS.128 'should reduce from 4 to 2'
    (np.where(LANE < 16, 0, 32), 128, 2),  # the forum's pattern 2 (lanes 0-15 one address, 16-31 another): 2
    ((LANE % 16) * 32, 128, 8),  # the forum's pattern 1 (lanes n and n+16 share, 32 bytes apart): 8
])
def test_nvidias_rule_on_its_own_examples(addresses, width, passes) -> None:
    assert shared_passes.passes_of(np.asarray(addresses, np.int64), width) == passes


#: A kernel as nvdisasm lists one: each lane's address built from threadIdx.x by shifts, masks, a multiply-add, a
#: constant written as two float16 halves, then three shared loads inside a loop.
LISTING = """
        .section        .text.toy,"ax",@progbits
toy:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   SHF.R.U32.HI R1, RZ, 0x5, R0 ;
        /*0020*/                   IMAD.SHL.U32 R2, R0, 0x4, RZ ;
        /*0030*/                   LOP3.LUT R3, R0, 0x10, RZ, 0xc0, !PT ;
        /*0040*/                   HFMA2.MMA R4, -RZ, RZ, 0, 1.9073486328125e-06 ;
        /*0050*/                   IMAD R5, R3, R4, c[0x2][0x0] ;
        /*0060*/                   LEA R6, R1, R2, 0x9 ;
.L_x_1:
        /*0070*/                   LDS R8, [R6+0x100] ;
        /*0080*/                   LDS.128 R12, [R5] ;
        /*0090*/                   LDS.64 R10, [R1.X4+0x40] ;
        /*00a0*/                   LDS R11, [R0.X8] ;
        /*00b0*/                   FFMA R9, R8, R12, R9 ;
        /*00c0*/              @P0 BRA `(.L_x_1) ;
        /*00d0*/                   EXIT ;
"""


def test_the_addresses_are_worked_out_lane_by_lane_from_the_listing() -> None:
    code, labels = machine_code.parse(LISTING)["toy"]
    each = shared_passes.load_passes(code, (32, 1, 1), {})
    # R6 = (tid >> 5 << 9) + tid * 4: neighbours (1 pass); R5 = (tid & 16) * 32 (0x20 as two float16 halves):
    # lanes 0-15 one address, 16-31 another, the forum's pattern 2 (2 passes); R1 = tid >> 5 = 0: uniform LDS.64 (1);
    # [R0.X8] = tid * 8 bytes: every other word, a 2-way conflict
    assert each == {7: 1, 8: 2, 9: 1, 10: 2}
    found = machine_code.loops(code, labels)
    own = {lp: list(range(lp.start, lp.end + 1)) for lp in found}
    assert shared_passes.per_warp(code, found, {found[0]: 10.0}, own, each) == 60.0


def test_an_address_from_a_loaded_value_is_unknown_and_no_count_is_made_up() -> None:
    listing = LISTING.replace("LDS R8, [R6+0x100]", "LDS R8, [R9]")  # R9: a multiply-add's result
    code, _ = machine_code.parse(listing)["toy"]
    assert shared_passes.load_passes(code, (32, 1, 1), {}) is None


def test_a_2d_blocks_warp_holds_two_rows_of_16_lanes() -> None:
    lanes = shared_passes.Lanes((16, 16, 1), {})
    assert lanes.special["SR_TID.X"].tolist() == [*range(16)] * 2
    assert lanes.special["SR_TID.Y"].tolist() == [0] * 16 + [1] * 16


def test_the_constant_bank_holds_blockdim_and_the_arguments_where_the_architecture_puts_them() -> None:
    a = np.zeros(4, np.float32)
    old, new = (shared_passes.constant_bank(arch, (256, 1, 1), (a, a, np.int32(4096))) for arch in ("sm_75", "sm_90"))
    assert old[0x0] == new[0x0] == 256
    assert old[0x170] == new[0x220] == 4096  # n after two 8-byte pointers, from 0x160 (sm_75) or 0x210 (sm_90)


#: Passes per multiply-add of each rung's shared loads, by hand from sgemm.cu (BM = BN = 128, BK = TM = TN = 8):
#: 3: per 32 multiply-adds 32 LDS of B (neighbours, 1 pass) + 8 LDS.128 of A (every lane one address: 2) = 48;
#: 4: per 64, 8 LDS of B (1) + 16 uniform LDS.128 of A (2) = 40; 5: per 64, 8 LDS of A (two rows 64 words apart,
#: one bank: 2) + 2 LDS.128 of B (lanes n and n+16 share, 32 bytes apart: 8) = 32; 6: per 64, A transposed, a
#: float4 whose lanes pair up (2) + B as in 5 (8), twice each = 20; 7: B spread out (4) = 12.
BY_HAND = {"3": 48 / 32, "4": 40 / 64, "5": 32 / 64, "6": 20 / 64, "7": 12 / 64}


@needs_nvdisasm
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_every_rungs_passes_from_its_machine_code_are_the_ones_worked_out_by_hand(arch) -> None:
    for label, per_fma in BY_HAND.items():
        made = make_it_fast.compile_rung(make_it_fast.rung(label), arch)
        assert made["lds_passes_per_fma"] == pytest.approx(per_fma), label
        assert make_it_fast.built(make_it_fast.rung(label).label, arch)["lds_passes_per_fma"] == pytest.approx(per_fma)


@needs_nvdisasm
def test_a_tile_loop_waits_once_a_step_and_a_planted_extra_barrier_count_shows() -> None:
    r = make_it_fast.rung("4")
    names = tuple(make_it_fast.name_expressions())
    code, found = compiled.loops_of(kernel_source(make_it_fast.SOURCE), "sm_90", r.kernel, make_it_fast.SOURCE, names)
    counted = make_it_fast.counts("4")
    steps = make_it_fast.COUNT_N // 8  # BK = 8
    assert compiled.barrier_waits(code, found, counted) == steps
    doubled = SimpleNamespace(**{**vars(counted), "barriers": 2 * counted.barriers})
    assert compiled.barrier_waits(code, found, doubled) == 2 * steps
