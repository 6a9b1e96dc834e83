"""Workloads: Python loops and whole-array versions agree, FLOP and byte counts, inputs and runners."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from conftest import without_gpu

from helpers.core.backend import BackendUnavailable, detect
from helpers.measuring import workloads
from helpers.measuring.workloads import (
    axpby,
    axpby_bytes,
    axpby_flops,
    axpby_loops,
    make_inputs,
    matmul,
    matmul_bytes,
    matmul_flops,
    matmul_loops,
    measure,
    precision,
    runner,
)


@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (3, 5, 2), (7, 7, 7)])
def test_matmul_loops_agree_with_numpy(n, k, m):
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    got = matmul_loops(a.tolist(), b.tolist())
    assert isinstance(got, list) and len(got) == n and all(len(row) == m for row in got)
    np.testing.assert_allclose(np.array(got), a @ b, rtol=1e-12)


def test_matmul_loops_by_hand():
    assert matmul_loops([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]) == [[19.0, 22.0], [43.0, 50.0]]


def test_axpby_loops_agree_with_whole_arrays():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(11), rng.standard_normal(11)
    np.testing.assert_allclose(axpby_loops(2.0, x.tolist(), 3.0, y.tolist()), axpby(2.0, x, 3.0, y))
    np.testing.assert_allclose(axpby(2.0, x, 3.0, y), 2 * x + 3 * y)
    assert axpby_loops(2.0, [1.0, 0.0], 3.0, [0.0, 1.0]) == [2.0, 3.0]
    with pytest.raises(ValueError):
        axpby_loops(2.0, [1.0, 2.0], 3.0, [1.0])  # lengths must match


def test_vectorised_matmul_on_jax():
    a, b = make_inputs("matmul", 5, backend="jax")
    np.testing.assert_allclose(np.asarray(matmul(a, b)), np.asarray(a) @ np.asarray(b), rtol=1e-5)


def test_flop_and_byte_counts():
    assert matmul_flops(1) == 2 and matmul_flops(10) == 2000 and matmul_flops(1024) == 2 * 1024**3
    assert matmul_bytes(10, 4) == 1200 and matmul_bytes(10, 8) == 2400
    assert axpby_flops(1000) == 3000 and axpby_bytes(1000, 4) == 12000
    assert axpby_flops(10**6) / axpby_bytes(10**6, 4) == pytest.approx(0.25)  # memory-bound: 1/4 FLOP per byte
    n = 3000
    assert matmul_flops(n) / matmul_bytes(n, 4) == pytest.approx(n / 6)  # compute-bound for large n


def test_workload_registry():
    assert set(workloads.WORKLOADS) == {"matmul", "axpby"}
    work = workloads.get("matmul")
    assert work.flops is matmul_flops and work.loops is matmul_loops and work.vectorised is matmul
    with pytest.raises(ValueError, match="unknown operation 'conv'; accepted: matmul, axpby"):
        workloads.get("conv")


# --- inputs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_make_inputs_numpy(dtype):
    a, b = make_inputs("matmul", 6, dtype)
    assert a.shape == b.shape == (6, 6) and a.dtype == b.dtype == np.dtype(dtype)
    assert not np.array_equal(a, b)
    again = make_inputs("matmul", 6, dtype)
    np.testing.assert_array_equal(again[0], a)  # the same seed gives the same inputs
    assert not np.array_equal(make_inputs("matmul", 6, dtype, seed=1)[0], a)


def test_make_inputs_axpby_and_backends():
    alpha, x, beta, y = make_inputs("axpby", 9)
    assert (alpha, beta) == (2.0, 3.0) and x.shape == y.shape == (9,) and x.dtype == np.float32
    jx = make_inputs("axpby", 9, backend="jax")
    assert detect(jx) == "jax" and isinstance(jx[1], jax.Array)
    np.testing.assert_array_equal(np.asarray(jx[1]), x)
    lx = make_inputs("axpby", 9, backend="python")
    assert isinstance(lx[1], list) and lx[1] == x.tolist()
    la, lb = make_inputs("matmul", 3, backend="python")
    assert isinstance(la, list) and len(la) == 3 and isinstance(la[0], list) and isinstance(la[0][0], float)
    assert make_inputs("matmul", np.int64(4))[0].shape == (4, 4)  # sizes from np.arange / np.logspace work


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"op": "conv", "n": 4}, ValueError, "unknown operation"),
    ({"op": "matmul", "n": 0}, ValueError, "matrix side n"),
    ({"op": "axpby", "n": -5}, ValueError, "vector length n"),
    ({"op": "matmul", "n": 2.5}, ValueError, "positive integer"),
    ({"op": "matmul", "n": True}, ValueError, "positive integer"),
    ({"op": "matmul", "n": "8"}, ValueError, "positive integer"),
    ({"op": "matmul", "n": 4, "dtype": "float16"}, ValueError, "accepted: float32, float64"),
    ({"op": "matmul", "n": 4, "backend": "torch"}, ValueError, "accepted: python, numpy, jax, cupy"),
])
def test_make_inputs_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_inputs(**kwargs)


@without_gpu
def test_make_inputs_on_a_missing_gpu():
    with pytest.raises(BackendUnavailable, match="cupy"):
        make_inputs("matmul", 4, backend="cupy")


# --- runners --------------------------------------------------------------------------------------------------


def test_runner_styles():
    assert runner("matmul", "python") is matmul_loops
    assert runner("axpby", "python") is axpby_loops
    assert runner("matmul", "numpy") is matmul
    assert runner("axpby", "numpy") is axpby
    with pytest.raises(ValueError):
        runner("matmul", "torch")
    with pytest.raises(ValueError):
        runner("fft", "numpy")


def test_jax_runner_is_jitted_and_correct():
    run = runner("matmul", "jax")
    assert hasattr(run, "lower") and run is not matmul  # a jax.jit-wrapped function
    a, b = make_inputs("matmul", 16, backend="jax")
    out = run(a, b)
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(np.asarray(out), np.asarray(a) @ np.asarray(b), rtol=1e-5, atol=1e-5)
    assert "dot_general" in run.lower(a, b).as_text()  # compiled by XLA as one matmul
    alpha, x, beta, y = make_inputs("axpby", 10, backend="jax")
    np.testing.assert_allclose(np.asarray(runner("axpby", "jax")(alpha, x, beta, y)),
                               2 * np.asarray(x) + 3 * np.asarray(y), rtol=1e-6)


@pytest.mark.parametrize("op", ["matmul", "axpby"])
def test_every_style_gives_the_same_answer(op):
    reference = np.asarray(runner(op, "numpy")(*make_inputs(op, 5, "float64")), dtype=float)
    for name in ("python", "jax"):
        with precision(name, "float64"):  # JAX keeps float64 only in its 64-bit mode
            got = np.asarray(runner(op, name)(*make_inputs(op, 5, "float64", backend=name)), dtype=float)
        np.testing.assert_allclose(got, reference, rtol=1e-5)


def test_measure_counts_the_work_and_keeps_float64_on_jax():
    t = measure("matmul", "jax", 16, "float64", budget=0.01)
    assert t.dtype == "float64" and t.backend == "jax" and t.n == 16
    assert t.flops == matmul_flops(16) and t.bytes == matmul_bytes(16, 8)
    assert "half" in t.peak.source  # judged by the FP64 roof, not the FP32 one


def test_measure_runs_loops_in_float64_whatever_is_asked():
    t = measure("axpby", "python", 10, "float32", budget=0.01)
    assert t.dtype == "float64" and t.bytes == axpby_bytes(10, 8)


def test_runner_is_made_once_so_jax_compiles_once():
    assert runner("matmul", "jax") is runner("matmul", "jax")


@pytest.mark.parametrize(("backend", "numbers", "how"), [("numpy", 7, "3 passes"), ("cupy", 7, "3 passes"),
                                                         ("jax", 3, "fused"), ("python", 3, "fused")])
def test_each_implementation_is_judged_by_the_bytes_it_moves(backend: str, numbers: int, how: str) -> None:
    """NumPy and CuPy run 2x + 3y as three passes (7 numbers per element); a fused loop moves 3 (axpby_bytes)."""
    assert workloads.traffic("axpby", 1000, 4, backend) == (numbers * 4000,
                                                             f"bytes: {numbers} numbers per element ({how})")
    assert workloads.traffic("matmul", 10, 4, backend)[0] == workloads.matmul_bytes(10, 4)


def test_measure_counts_numpys_three_passes_and_says_so() -> None:
    timing = workloads.measure("axpby", "numpy", 1000, budget=0.01)
    assert timing.bytes == 7 * 4 * 1000 and timing.extra["bytes_counted"] == "bytes: 7 numbers per element (3 passes)"
