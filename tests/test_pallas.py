"""Chapter 04's Pallas kernels: the chapter's solutions (bf16 in and out, a float32 scratch accumulator, the grid's
dimension semantics, as JAX's guide writes them) pass their checks on every JAX the series supports; planted faults
fail with what is wrong: an accumulator never zeroed or overwritten, a kernel or a grid that assumes a number of k
steps, no Pallas at all, a product outside the kernel, a loop that never ends (refused before it is compiled); the
block exercise refuses blocks that do not divide, are not whole lanes, or take too much VMEM."""

from __future__ import annotations

import re
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from test_bad_input import BAD_VALUES

from helpers.learning.checks import Verdict
from helpers.tpu import pallas


def kernel(x_ref, y_ref, z_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        z_ref[...] = acc_ref[...].astype(z_ref.dtype)


def never_zeroed(x_ref, y_ref, z_ref, acc_ref):
    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        z_ref[...] = acc_ref[...].astype(z_ref.dtype)


def overwritten(x_ref, y_ref, z_ref, acc_ref):
    acc_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        z_ref[...] = acc_ref[...].astype(z_ref.dtype)


def never_written(x_ref, y_ref, z_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def two_k_steps_only(x_ref, y_ref, z_ref, acc_ref):
    """Right when the grid has exactly two k steps: `=` on the first, `+=` and the write on the second."""
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == 1)
    def _():
        z_ref[...] = (acc_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
                      ).astype(z_ref.dtype)


def zeroed_on_the_wrong_axis(x_ref, y_ref, z_ref, acc_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        z_ref[...] = acc_ref[...].astype(z_ref.dtype)


def looping_kernel(x_ref, y_ref, z_ref, acc_ref):
    """A kernel whose loop never ends: compiled, nothing could stop it."""
    acc_ref[...] = jax.lax.while_loop(lambda a: True, lambda a: a + 1, acc_ref[...])
    z_ref[...] = acc_ref[...].astype(z_ref.dtype)


def epilogue_kernel(epilogue):
    """A fused kernel with the epilogue `epilogue(acc, bias)` written on the last k step; `epilogue(acc, bias, every=)`
    plants one applied at every step."""
    def body(x_ref, y_ref, b_ref, z_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
        acc_ref[...] = epilogue[0](acc_ref[...], b_ref[...].astype(jnp.float32))

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            z_ref[...] = epilogue[1](acc_ref[...], b_ref[...].astype(jnp.float32)).astype(z_ref.dtype)
    return body


#: The fused exercise's solution: the bias and the ReLU once, on the last k step.
fused_kernel = epilogue_kernel((lambda acc, b: acc, lambda acc, b: jnp.maximum(acc + b, 0)))


def blocked(body, x_map=lambda i, j, kk: (i, kk), k_steps=None, k_last: bool = True):
    """The chapter's call around `body`; x_map, k_steps (a hard-coded number of k steps) and k_last plant faults
    in the BlockSpecs and the grid."""
    def matmul(x, y, bm, bk, bn):
        m, k = x.shape
        _, n = y.shape
        steps = k // bk if k_steps is None else k_steps
        grid = (m // bm, n // bn, steps) if k_last else (m // bm, steps, n // bn)
        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=grid,
            in_specs=[pl.BlockSpec((bm, bk), x_map), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pallas.tpu_params(dimension_semantics=("parallel", "parallel", "arbitrary")),
            interpret=pallas.interpret())(x, y)
    return matmul


def fused(body):
    """The chapter's fused call around `body`: the bias's (1, bn) block follows the output's column."""
    def matmul(x, y, bias, bm, bk, bn):
        m, k = x.shape
        _, n = y.shape
        return pl.pallas_call(
            body, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)), pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pallas.tpu_params(dimension_semantics=("parallel", "parallel", "arbitrary")),
            interpret=pallas.interpret())(x, y, bias)
    return matmul


def test_the_chapters_kernels_pass(capsys):
    assert pallas.check_blocked_matmul(blocked(kernel), kernel)
    assert pallas.check_blocked_matmul(jax.jit(blocked(kernel), static_argnums=(2, 3, 4)), kernel)
    assert pallas.check_fused_matmul(fused(fused_kernel), fused_kernel)
    out = capsys.readouterr().out
    assert out.count("✅") == 3 and "1, 2, 3, 5 k steps" in out, out


def test_the_checks_try_1_3_and_more_k_steps_with_several_output_blocks():
    steps = {case.k // case.bk for case in pallas.CASES}
    assert {1, 3} <= steps and max(steps) > 3
    assert all(case.m // case.bm * (case.n // case.bn) > 1 for case in pallas.CASES)
    assert pallas.ALONE.k // pallas.ALONE.bk > 2


@pytest.mark.parametrize(("matmul", "body", "message"), [
    (lambda x, y, bm, bk, bn: x @ y, kernel, "no pallas_call ran"),
    (lambda x, y, bm, bk, bn: (blocked(kernel)(x, y, bm, bk, bn), x @ y)[1], kernel,
     "result does not come out of the pallas_call"),
    (lambda x, y, bm, bk, bn: blocked(kernel)(x, y, bm, bk, bn) * 0 + x @ y, kernel, "multiplies outside the kernel"),
    (blocked(overwritten), kernel, "runs overwritten, not your kernel kernel"),
    (blocked(never_zeroed), never_zeroed, "NaN in the result: the accumulator was never zeroed"),
    (blocked(never_written), never_written, "NaN in the result: .*never written"),
    (blocked(overwritten), overwritten, "only the last k block counted: add each block's product"),
    (blocked(two_k_steps_only), two_k_steps_only, "1 k step\\): NaN|3 k steps\\): (wrong|only)"),
    (blocked(zeroed_on_the_wrong_axis), zeroed_on_the_wrong_axis, "wrong|NaN|only the last"),
    (blocked(kernel, x_map=lambda i, j, kk: (kk, i)), kernel, "wrong|raised|NaN"),
    (blocked(kernel, k_last=False), kernel, "wrong|raised|NaN"),
    (blocked(kernel, k_steps=2), kernel, "1 k step\\)|3 k steps\\)"),
    (lambda x, y, bm, bk, bn: blocked(kernel)(x, y, bm, bk, bn)[:, :-1], kernel,
     "of shape \\(128, 255\\); expected \\(128, 256\\)"),
], ids=["no Pallas", "pallas result dropped", "product outside the kernel", "another kernel", "never zeroed",
        "never written", "overwritten", "two k steps only", "zeroed on the wrong axis", "swapped index map",
        "k not last", "k grid hard-coded to 2", "wrong shape"])
def test_a_planted_fault_fails_saying_what_is_wrong(matmul, body, message, capsys):
    verdict = pallas.check_blocked_matmul(matmul, body)
    assert not verdict and verdict.attempted
    assert re.search(message, verdict.message), verdict.message


@pytest.mark.parametrize(("epilogue", "message"), [
    ((lambda acc, b: acc, lambda acc, b: jnp.maximum(acc, 0)), "the bias is missing"),
    ((lambda acc, b: acc, lambda acc, b: acc + b), "no ReLU"),
    ((lambda acc, b: acc + b, lambda acc, b: jnp.maximum(acc, 0)), "k steps\\): the bias was added at every k step"),
    ((lambda acc, b: jnp.maximum(acc, 0), lambda acc, b: jnp.maximum(acc + b, 0)), "wrong|only the last"),
], ids=["no bias", "no ReLU", "bias at every step", "ReLU at every step"])
def test_a_planted_epilogue_fault_fails_saying_what_is_wrong(epilogue, message):
    body = epilogue_kernel(epilogue)
    verdict = pallas.check_fused_matmul(fused(body), body)
    assert not verdict and verdict.attempted
    assert re.search(message, verdict.message), verdict.message


def test_a_loop_that_never_ends_is_refused_before_it_is_compiled():
    def spinning(x, y, bm, bk, bn):
        x = jax.lax.while_loop(lambda v: True, lambda v: v, x)
        return blocked(kernel)(x, y, bm, bk, bn)

    def huge(x, y, bm, bk, bn):
        x = jax.lax.fori_loop(0, 10**9, lambda i, v: v, x)  # a scan of 10**9 steps: bounded, far too long
        return blocked(kernel)(x, y, bm, bk, bn)

    start = time.monotonic()
    for matmul, body, message in ((spinning, kernel, "while_loop"), (blocked(looping_kernel), looping_kernel,
                                                                     "your kernel, behind .*while_loop"),
                                  (huge, kernel, "about [12],\\d{3},\\d{3},\\d{3} operations")):
        verdict = pallas.check_blocked_matmul(matmul, body)
        assert not verdict and re.search(message, verdict.message), verdict.message
    assert time.monotonic() - start < 60  # a hang guard, not a speed test: each is refused before it runs


def test_a_python_loop_that_never_ends_is_stopped_by_the_time_limit(monkeypatch):
    monkeypatch.setattr(pallas, "TIME_LIMIT", 1.0)

    def forever(x, y, bm, bk, bn):
        while True:
            pass

    verdict = pallas.check_blocked_matmul(forever, kernel)
    assert not verdict and "took over 1 s" in verdict.message


def test_an_untouched_exercise_is_not_attempted_and_bad_arguments_say_so():
    def stub(x_ref, y_ref, z_ref, acc_ref):
        raise NotImplementedError
    assert not pallas.check_blocked_matmul(blocked(stub), stub).attempted
    assert not pallas.check_blocked_matmul(..., kernel).attempted
    assert not pallas.check_fused_matmul(fused(fused_kernel), None).attempted
    wrong = pallas.check_blocked_matmul(blocked(kernel), 5)
    assert wrong.attempted and "pass your two functions themselves" in wrong.message


#: What a learner might hand a Pallas check instead of a function: wrong values, and functions of the wrong kind.
NOT_FUNCTIONS = (*BAD_VALUES, print, len, np.float32, lambda *refs: None, fused_kernel)


@pytest.mark.parametrize("check", [pallas.check_blocked_matmul, pallas.check_fused_matmul], ids=lambda c: c.__name__)
@pytest.mark.parametrize("position", ["matmul", "kernel"])
def test_whatever_a_learner_hands_a_pallas_check_gets_a_verdict_never_a_tick(check, position, capsys):
    right = {"matmul": blocked(kernel), "kernel": kernel} if check is pallas.check_blocked_matmul else {
        "matmul": fused(fused_kernel), "kernel": fused_kernel}
    for value in NOT_FUNCTIONS:
        if value is right[position]:
            continue
        verdict = check(**{**right, position: value})
        printed = capsys.readouterr().out
        assert isinstance(verdict, Verdict) and not verdict.passed, f"{check.__name__} ticked {value!r:.60}"
        assert printed.rstrip().endswith(verdict.message) and verdict.message[0] in "❌⏳", verdict.message


def test_a_kernel_with_the_wrong_arguments_gets_one_line_naming_the_right_ones():
    def three(x_ref, y_ref, z_ref):
        z_ref[...] = jnp.dot(x_ref[...], y_ref[...]).astype(z_ref.dtype)
    verdict = pallas.check_blocked_matmul(blocked(three), three)
    assert not verdict and "raised TypeError" in verdict.message and "(x_ref, y_ref, z_ref, acc_ref)" in verdict.message


def test_tpu_params_names_the_compiler_parameters_this_jax_has():
    params = pallas.tpu_params(dimension_semantics=("parallel", "parallel", "arbitrary"))
    assert tuple(str(s).lower().split(".")[-1] for s in params.dimension_semantics) == ("parallel", "parallel",
                                                                                         "arbitrary")
    assert type(params).__name__ == ("CompilerParams" if hasattr(pltpu, "CompilerParams") else "TPUCompilerParams")
    with pytest.raises(ValueError, match="tpu_params takes .*dimension_semantics"):
        pallas.tpu_params(semantics=("parallel",))


def test_the_vmem_the_blocks_take_is_double_buffered_with_a_float32_accumulator():
    guide = pallas.Blocks(4096, 4096, 4096, 512, 1024, 1024)
    assert guide.vmem == 2 * (512 * 1024 + 1024 * 1024 + 512 * 1024) * 2 + 512 * 1024 * 4 == 10 * 2**20
    assert pallas.budget() == guide.vmem < pallas.PHYSICAL_VMEM and guide.steps == 8 * 4 * 4
    assert guide.hbm == (4096**3 // 1024 + 4096**3 // 512 + 4096**2) * 2


@pytest.mark.parametrize(("choice", "message"), [
    ((384, 1024, 1024), "bm = 384 does not divide m = 4096"),
    ((512, 1024, 200), "bn = 200 does not divide"),
    ((512, 64, 1024), "bk = 64 is not a multiple of 128"),
    ((1024, 1024, 2048), "28.0 MiB of VMEM, over the 10 MiB .* default scoped VMEM limit"),
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


def test_the_chapters_layer_wants_other_blocks_than_the_guides():
    """Exercise 4's layer, 4096 x 1024 x 8192: the guide's blocks are not its fastest, so nothing above gives it."""
    assert pallas.check_blocks((1024, 256, 1024), 4096, 1024, 8192)
    verdict = pallas.check_blocks((512, 1024, 1024), 4096, 1024, 8192)
    assert not verdict and "1024 x 256 x 1024 is predicted" in verdict.message


def test_the_mode_line_says_how_the_kernel_runs_here():
    assert ("interpret" in pallas.mode()) == pallas.interpret()
