"""Exercise checkers: one printed verdict, never an exception at the learner."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from helpers.learning.checks import Verdict, check_answer, check_function, check_value
from helpers.measuring.workloads import matmul_loops

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
    assert not words.passed and words.attempted and "expected a number like 100.0, got str 'fast'" in words.message


@pytest.mark.parametrize("got", [0.0, -100.0, float("nan"), float("inf")])
def test_check_value_rejects_far_off_numbers(got):
    assert not check_value(got, 100.0, "x").passed


def test_a_count_off_by_one_is_wrong_however_large():
    flops = 2 * 4096**3  # within any relative tolerance of flops + 1, but a different count
    assert not check_value(flops + 1, flops, "FLOPs").passed
    assert not check_function(lambda n: 2 * n**3 + 1, lambda n: 2 * n**3, [(4096,)], name="flops").passed
    assert not check_function(lambda n: np.arange(n) + (np.arange(n) == n - 1), np.arange, [(10**6,)]).passed
    assert check_value(float(flops), flops, "FLOPs").passed  # the same whole number as a float is right
    assert check_value(np.int64(flops), flops, "FLOPs").passed
    assert not check_value(12.5, 12, "bytes").passed


def test_a_0d_bool_array_is_judged_as_true_or_false():
    assert check_function(lambda x: np.array(x > 0), lambda x: x > 0, [(1,), (-1,)], name="positive").passed
    assert not check_function(lambda x: np.array(x < 0), lambda x: x > 0, [(1,)], name="positive").passed


# ---------------------------------------------------------------- what must never get a ✅, or a traceback


def _spin(*args):
    while True:
        pass


@pytest.mark.parametrize(("learner", "reference", "case", "expected"), [
    (lambda x, y: "2.0", lambda x, y: 2.0, (1, 1), "expected a number like 2.0, got str '2.0' (a string"),
    (lambda x: 2 + 0j, lambda x: 2.0, (1,), "expected a number like 2.0, got complex"),
    (lambda x: True, lambda x: 1.0, (1,), "expected a number like 1.0, got bool True"),
    (lambda x: None, lambda x: 1.0, (1,), "expected a number like 1.0, got NoneType None"),
    (lambda x: 2**2000, lambda x: 1.0, (1,), "a number too large for a float"),
    (lambda x: 1, lambda x: True, (1,), "expected True or False, got int 1"),
    (lambda x: [[1.0, 2.0], [3.0]], lambda x: [[1.0, 2.0], [3.0, 4.0]], (1,), "got a ragged list"),
    (lambda x: [2**2000, 1], lambda x: [1.0, 1.0], (1,), "got numbers too large for a float"),
    (lambda x: np.array([1 + 1j, 2]), lambda x: np.array([1.0, 2.0]), (1,), "got complex numbers, expected real"),
    (lambda x: ["1.0", "2.0"], lambda x: [1.0, 2.0], (1,), "<U3 values, expected real numbers"),
    (lambda x: np.array([True, False]), lambda x: np.array([1.0, 0.0]), (1,), "True/False values, expected numbers"),
    (lambda x: 3.0, lambda x: [1.0, 2.0], (1,), "expected an array like [1.0, 2.0], got float 3.0"),
])
def test_the_wrong_kind_of_result_is_wrong(capsys, learner, reference, case, expected):
    verdict = check_function(learner, reference, [case], name="f")
    assert not verdict.passed and verdict.attempted and verdict.message.startswith("❌ f: wrong on case 1 of 1")
    assert expected in verdict.message
    assert capsys.readouterr().out.strip() == verdict.message


def test_a_learner_who_changes_the_inputs_cannot_fool_the_reference():
    sneaky = lambda x: (x.append(9.0), sum(x))[1]  # noqa: E731
    verdict = check_function(sneaky, sum, [([1.0, 2.0],)], name="sneaky")
    assert not verdict.passed and "got 12, expected 3" in verdict.message
    inputs = [1.0, 2.0]
    check_function(sneaky, sum, [(inputs,)])
    assert inputs == [1.0, 2.0], "the author's case must not change either"


@pytest.mark.parametrize("cases", [[], (), None, "abc", [1, 2]])
def test_an_exercise_without_proper_cases_is_the_authors_error(cases):
    with pytest.raises((ValueError, TypeError), match="case"):
        check_function(len, len, cases)


def test_an_endless_loop_gets_a_verdict_within_the_limit(capsys):
    import time

    start = time.monotonic()
    verdict = check_function(_spin, lambda x: x, [(1,)], name="loop", time_limit=0.3)
    assert time.monotonic() - start < 3
    assert not verdict.passed and verdict.attempted
    assert verdict.message.startswith("❌ loop took longer than 0.3 s: is there an endless loop? (case 1 of 1")
    answered = check_answer(_spin, lambda fn: fn(), "layout", time_limit=0.3)
    assert answered.message == "❌ layout: took longer than 0.3 s: is there an endless loop?"


def test_a_learner_that_prints_or_is_not_a_function_gets_one_verdict(capsys):
    def chatty(x):
        print("thinking...")
        return x

    assert check_function(chatty, lambda x: x, [(1.0,)]).passed
    not_a_function = check_function(42, lambda x: x, [(1.0,)], name="f")
    assert not_a_function.message == "❌ f: expected a function, got int 42"
    assert not check_function(..., lambda x: x, [(1.0,)], name="f").attempted


def test_check_answer_reports_a_judge_that_cannot_judge():
    verdict = check_answer((3, "x"), lambda shape: None if shape[1] % 128 == 0 else "not a multiple", "shape")
    assert not verdict.passed and verdict.message.startswith("❌ shape: could not judge (3, 'x'): TypeError")
