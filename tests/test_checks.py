"""Exercise checkers: one printed verdict, never an exception at the learner."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from helpers.checks import Verdict, check_function, check_value
from helpers.workloads import matmul_loops

CASES = [(np.ones((1, 1)), np.ones((1, 1))), (np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4))]


def reference(a, b):
    return a @ b


def test_untouched_exercise_is_not_attempted(capsys):
    def my_matmul(a, b):
        raise NotImplementedError

    verdict = check_function(my_matmul, reference, CASES)
    assert isinstance(verdict, Verdict)
    assert not verdict.passed and not verdict.attempted and not verdict
    assert "my_matmul: not attempted yet" in verdict.message
    assert capsys.readouterr().out.strip() == verdict.message  # printed, not raised


def test_wrong_answer_says_where(capsys):
    def my_matmul(a, b):
        out = a @ b
        out[..., -1] += 1.0  # off by one in the last column
        return out

    verdict = check_function(my_matmul, reference, CASES)
    assert not verdict.passed and verdict.attempted
    assert "wrong on case 1 of 2" in verdict.message and "shape (1, 1)" in verdict.message
    assert "first at index (0, 0): got 2, expected 1" in verdict.message
    assert verdict.message in capsys.readouterr().out


def test_wrong_shape_is_reported():
    verdict = check_function(lambda a, b: (a @ b).T, reference, CASES, name="transposed")
    assert not verdict.passed and verdict.attempted
    assert "transposed: wrong on case 2 of 2" in verdict.message
    assert "shape (4, 2), expected (2, 4)" in verdict.message


def test_raising_is_reported_with_the_case():
    def my_matmul(a, b):
        if a.shape[0] > 1:
            raise IndexError("list index out of range")
        return a @ b

    verdict = check_function(my_matmul, reference, CASES)
    assert not verdict.passed and verdict.attempted
    assert "my_matmul raised IndexError: list index out of range" in verdict.message
    assert "case 2 of 2" in verdict.message and "shape (2, 3), shape (3, 4)" in verdict.message


def test_correct_function_passes(capsys):
    verdict = check_function(lambda a, b: matmul_loops(a.tolist(), b.tolist()), reference, CASES, name="loops")
    assert verdict.passed and verdict.attempted and bool(verdict)
    assert verdict.message == "✅ loops: correct on all 2 cases."
    assert str(verdict) == verdict.message
    assert verdict.message in capsys.readouterr().out
    assert check_function(reference, reference, CASES[:1]).message.endswith("correct on the 1 case.")


def test_jax_results_and_list_inputs_are_compared():
    assert check_function(lambda a, b: jnp.asarray(a) @ jnp.asarray(b), reference, CASES, rtol=1e-5).passed
    verdict = check_function(lambda x: [v * 2 for v in x], lambda x: [v * 2 for v in x], [([1.0, 2.0],)])
    assert verdict.passed


def test_returning_nothing_is_wrong_not_a_crash():
    def forgot_return(a, b):
        a @ b

    verdict = check_function(forgot_return, reference, CASES)
    assert not verdict.passed and verdict.attempted and "forgot_return" in verdict.message


def test_check_value_verdicts(capsys):
    assert not check_value(..., 2.0, "peak").attempted
    assert not check_value(None, 2.0, "peak").attempted
    assert "peak: not attempted yet" in capsys.readouterr().out
    ok = check_value(101.0, 100.0, "GFLOP/s")  # within the default 2%
    assert ok.passed and ok.message == "✅ GFLOP/s: 101.0 is right."
    bad = check_value(110.0, 100.0, "GFLOP/s")
    assert not bad.passed and bad.attempted
    assert "got 110, expected 100" in bad.message and "Tolerance: 2%" in bad.message
    assert check_value(110.0, 100.0, "GFLOP/s", rtol=0.2).passed


def test_check_value_arrays_and_nonsense():
    assert check_value(np.array([1.0, 2.0]), [1.0, 2.0], "pair").passed
    assert check_value(jnp.array([1.0, 2.0]), np.array([1.0, 2.0]), "pair").passed
    wrong = check_value([1.0, 3.0], [1.0, 2.0], "pair")
    assert "1 of 2 values differ" in wrong.message and "index (1,)" in wrong.message
    words = check_value("fast", 100.0, "GFLOP/s")
    assert not words.passed and words.attempted and "expected something like 100.0" in words.message


@pytest.mark.parametrize("got", [0.0, -100.0, float("nan"), float("inf")])
def test_check_value_rejects_far_off_numbers(got):
    assert not check_value(got, 100.0, "x").passed
