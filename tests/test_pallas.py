"""Chapter 04's Pallas kernel: the blocked matmul the chapter shows passes its check; planted faults (a swapped
index map, an accumulator never zeroed or overwritten, k on the wrong grid axis) fail with what is wrong; the
block exercise refuses blocks that do not divide, are not whole lanes, or take too much VMEM."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from helpers import pallas


def kernel(x_ref, y_ref, z_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        z_ref[...] = jnp.zeros_like(z_ref)

    z_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def never_zeroed(x_ref, y_ref, z_ref):
    z_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def overwritten(x_ref, y_ref, z_ref):
    z_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def zeroed_on_the_wrong_axis(x_ref, y_ref, z_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        z_ref[...] = jnp.zeros_like(z_ref)

    z_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def blocked(body, x_map=lambda i, j, kk: (i, kk), k_last: bool = True):
    """The chapter's call around `body`; x_map and k_last plant faults in the BlockSpecs and the grid."""
    def matmul(x, y, bm, bk, bn):
        m, k = x.shape
        _, n = y.shape
        grid = (m // bm, n // bn, k // bk) if k_last else (m // bm, k // bk, n // bn)
        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=grid,
            in_specs=[pl.BlockSpec((bm, bk), x_map), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=pallas.interpret())(x, y)
    return matmul


def test_the_chapters_kernel_passes(capsys):
    assert pallas.check_blocked_matmul(blocked(kernel), kernel)
    assert "✅" in capsys.readouterr().out


@pytest.mark.parametrize(("matmul", "body", "message"), [
    (blocked(kernel, x_map=lambda i, j, kk: (kk, i)), None, "wrong: largest error .* check the index maps"),
    (blocked(never_zeroed), never_zeroed, "NaN in the result: .*zero z_ref when pl.program_id\\(2\\) == 0"),
    (blocked(overwritten), overwritten, "only the last k block counted: add each block's product"),
    (blocked(zeroed_on_the_wrong_axis), zeroed_on_the_wrong_axis, "NaN in the result"),
    (blocked(kernel, k_last=False), None, "wrong|raised|NaN"),
    (lambda x, y, bm, bk, bn: x @ y[:, :-1], None, "of shape \\(256, 383\\); expected \\(256, 384\\)"),
], ids=["swapped index map", "never zeroed", "overwritten", "zeroed on the wrong axis", "k not last",
        "wrong shape"])
def test_a_planted_fault_fails_saying_what_is_wrong(matmul, body, message, capsys):
    verdict = pallas.check_blocked_matmul(matmul, body)
    assert not verdict and verdict.attempted
    assert re.search(message, verdict.message), verdict.message


def test_an_untouched_exercise_is_not_attempted():
    def stub(x, y, bm, bk, bn):
        raise NotImplementedError
    assert not pallas.check_blocked_matmul(stub).attempted
    assert not pallas.check_blocked_matmul(...).attempted


def test_the_vmem_the_blocks_take_is_double_buffered_with_a_float32_accumulator():
    guide = pallas.Blocks(4096, 4096, 4096, 512, 1024, 1024)
    assert guide.vmem == 2 * (512 * 1024 + 1024 * 1024 + 512 * 1024) * 2 + 512 * 1024 * 4 == 10 * 2**20
    assert pallas.budget() == guide.vmem and guide.steps == 8 * 4 * 4
    assert guide.hbm == (4096**3 // 1024 + 4096**3 // 512 + 4096**2) * 2


@pytest.mark.parametrize(("choice", "message"), [
    ((384, 1024, 1024), "bm = 384 does not divide m = 4096"),
    ((512, 1024, 200), "bn = 200 does not divide"),
    ((512, 64, 1024), "bk = 64 is not a multiple of 128"),
    ((1024, 1024, 2048), "28.0 MiB of VMEM, over the 10 MiB"),
    ((4096, 4096, 4096), "more than the 128 MiB a v5e or v6e core has"),
    ((128, 128, 128), "predicted 11.8 ms .* is predicted 0.867 ms"),
    ((512, 1024), "give three positive whole numbers"),
    ((True, 1024, 1024), "give three positive whole numbers"),
    ("512", "give three positive whole numbers"),
])
def test_the_block_exercise_says_why_a_choice_is_not_the_answer(choice, message):
    verdict = pallas.check_blocks(choice)
    assert not verdict and re.search(message, verdict.message), verdict.message


def test_the_fastest_blocks_that_fit_pass_and_are_the_guides_size():
    best = pallas.sweep(4096, 4096, 4096)[0]
    assert best.vmem <= pallas.budget() and {best.bm, best.bn} == {512, 1024} and best.bk == 1024
    assert pallas.check_blocks((best.bm, best.bk, best.bn))
    assert pallas.check_blocks(tuple(np.int64(v) for v in (best.bm, best.bk, best.bn)))  # NumPy's integers too
    assert pallas.figure(pallas.sweep(4096, 4096, 4096), marked=best).data


def test_the_mode_line_says_how_the_kernel_runs_here():
    assert ("interpret" in pallas.mode()) == pallas.interpret()
