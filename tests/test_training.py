"""helpers.training: the shared loop, epoch timing, the traced step, GPU predictions, sweeps, figures and table."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import without_gpu

from helpers import backend, mlp, specs, training
from helpers.hardware import Peak
from helpers.timing import Timing


@pytest.fixture(scope="module")
def data() -> mlp.Digits:
    return mlp.load_digits_split()


@pytest.fixture(scope="module")
def small_order(data: mlp.Digits) -> np.ndarray:
    return mlp.batch_order(len(data.y_train), 64, 2)[:, :5]  # 2 epochs of 5 steps: quick


def test_trainer_rejects_unknown_kinds_and_settings() -> None:
    with pytest.raises(ValueError, match="unknown trainer kind 'torch'; accepted: numpy, cupy, jax, jax-scan, keras"):
        training.trainer("torch", 0.1)
    with pytest.raises(ValueError, match="only for the JAX trainers"):
        training.trainer("numpy", 0.1, "bfloat16")
    with pytest.raises(ValueError, match="learning rate lr must be a positive number"):
        training.trainer("numpy", -1)


@without_gpu
def test_cupy_trainer_without_a_gpu_says_why() -> None:
    with pytest.raises(backend.BackendUnavailable, match="backend 'cupy' is not usable here"):
        training.trainer("cupy", 0.1)


def test_numpy_jax_and_scan_follow_the_same_losses(data: mlp.Digits, small_order: np.ndarray) -> None:
    params = mlp.init_params()
    runs = [training.train(training.trainer(kind, 0.2), data, params, small_order)
            for kind in ("numpy", "jax", "jax-scan")]
    assert all(run.losses.shape == (2, 5) for run in runs)
    assert runs[0].losses[-1].mean() < runs[0].losses[0, 0], "training should lower the loss"
    for run in runs[1:]:
        np.testing.assert_allclose(run.losses, runs[0].losses, rtol=1e-5, err_msg=run.label)
        np.testing.assert_allclose(run.params["W2"], runs[0].params["W2"], rtol=1e-4, atol=1e-6)
        assert run.accuracy == pytest.approx(runs[0].accuracy, abs=1 / len(data.y_test))
    assert 0.1 < runs[0].accuracy <= 1 and runs[0].device == "CPU"
    assert str(runs[0]).startswith("NumPy on CPU: 2 epochs of 5 steps, loss ")


def test_cupy_trainer_runs_the_numpy_step_through_the_array_module(data: mlp.Digits, small_order: np.ndarray,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # No GPU here: NumPy stands in for CuPy behind the two names the trainer moves data and finds its module by.
    monkeypatch.setattr(training, "array_module", lambda name: np if name == "cupy" else backend.array_module(name))
    monkeypatch.setattr(training, "to_backend",
                        lambda x, name: backend.to_backend(x, "numpy" if name == "cupy" else name))
    tr = training.trainer("cupy", 0.2)
    assert (tr.label, tr.backend) == ("CuPy", "cupy")
    cupy_run = training.train(tr, data, mlp.init_params(), small_order)
    numpy_run = training.train(training.trainer("numpy", 0.2), data, mlp.init_params(), small_order)
    np.testing.assert_array_equal(cupy_run.losses, numpy_run.losses)
    assert cupy_run.accuracy == numpy_run.accuracy
    assert all(np.array_equal(cupy_run.params[k], numpy_run.params[k]) for k in mlp.PARAM_NAMES)


def test_keras_trainer_follows_numpy_through_the_shared_loop(data: mlp.Digits, small_order: np.ndarray) -> None:
    params = mlp.init_params(64, 16, 10)
    keras_run = training.train(training.trainer("keras", 0.2), data, params, small_order)
    numpy_run = training.train(training.trainer("numpy", 0.2), data, params, small_order)
    assert keras_run.label == "Keras (JAX backend)" and keras_run.losses.shape == (2, 5)
    np.testing.assert_allclose(keras_run.losses, numpy_run.losses, rtol=1e-5)
    np.testing.assert_allclose(keras_run.params["W1"], numpy_run.params["W1"], rtol=1e-4, atol=1e-6)
    assert keras_run.accuracy == pytest.approx(numpy_run.accuracy, abs=1 / len(data.y_test))


def test_train_does_not_change_the_shared_start(data: mlp.Digits, small_order: np.ndarray) -> None:
    params = mlp.init_params()
    copy = {k: v.copy() for k, v in params.items()}
    training.train(training.trainer("numpy", 0.2), data, params, small_order)
    assert all(np.array_equal(params[k], copy[k]) for k in mlp.PARAM_NAMES)


def test_train_rejects_mismatched_inputs(data: mlp.Digits, small_order: np.ndarray) -> None:
    tr = training.trainer("numpy", 0.1)
    with pytest.raises(ValueError, match="takes 32 inputs and gives 10 scores, but the data has 64 features"):
        training.train(tr, data, mlp.init_params(32, 8, 10), small_order)
    with pytest.raises(ValueError, match="indices outside 0..1346"):
        training.train(tr, data, mlp.init_params(), small_order + 5000)
    with pytest.raises(ValueError, match="integer indices of shape"):
        training.train(tr, data, mlp.init_params(), small_order.astype(float))


def test_time_epoch_counts_the_work_of_every_step(data: mlp.Digits, small_order: np.ndarray) -> None:
    t = training.time_epoch(training.trainer("numpy", 0.1), data, mlp.init_params(), small_order[0], budget=0.01,
                            min_repeats=1)
    work = training.trace_step(64)
    assert (t.backend, t.n, t.flops, t.bytes) == ("numpy", 64, 5 * work.flops, 5 * work.bytes)
    assert training.samples_per_second(t) == pytest.approx(5 * 64 / t.median)
    with pytest.raises(ValueError, match="times one epoch"):
        training.time_epoch(training.trainer("numpy", 0.1), data, mlp.init_params(), small_order)


def test_samples_per_second_needs_a_timing_from_time_epoch() -> None:
    with pytest.raises(ValueError, match="not timed by training.time_epoch"):
        training.samples_per_second(Timing("x", "numpy", "float32", np.array([1.0]), 1, 1.0))


def test_trace_step_counts_the_operations_that_run() -> None:
    b, n_in, hidden, n_out = 8, 5, 7, 3
    work = training.trace_step(b, n_in, hidden, n_out)
    # Forward: 2 products; backward: dx of layer 2, dW2, dW1 (the data needs no gradient): 2mkn FLOPs each.
    assert [k.shapes for k in work.matmuls] == ["(8, 5) @ (5, 7)", "(8, 7) @ (7, 3)", "(8, 3) @ (3, 7)",
                                               "(7, 8) @ (8, 3)", "(5, 8) @ (8, 7)"]
    assert sum(k.flops for k in work.matmuls) == 2 * b * (2 * n_in * hidden + 3 * hidden * n_out)
    assert sum(k.name == "subtract" and k.shapes.startswith("(") for k in work.kernels[-8:]) == 4, "SGD: 4 updates"
    assert work.launches == 36 and work.launches == training.trace_step(512, 64, 4096, 10).launches
    assert work.bytes > 4 * (n_in * hidden + hidden * n_out)  # at least the weights, read once
    assert training.trace_step(8, 5, 14, 3).flops > work.flops
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        training.trace_step(0)
    with pytest.raises(ValueError, match="hidden must be a positive integer"):
        training.trace_step(8, 5, 2.5, 3)


def test_predictions_are_launch_bound_when_small_and_roofline_bound_when_big() -> None:
    t4 = specs.get("NVIDIA T4")
    small = training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=42)
    assert small.device == "NVIDIA T4" and small.label == "NVIDIA T4 (prediction)"
    assert small.launch_bound == small.launches == 36
    assert small.seconds == pytest.approx(42 * 36 * training.LAUNCH_FLOOR)
    free = training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=42, floor=0)
    assert free.seconds == pytest.approx(42 * free.roofline_step) and free.launch_bound == 0
    work = training.trace_step(32)
    assert free.roofline_step >= max(work.flops / t4.peak_for("float32"), work.bytes / t4.peak_bandwidth)
    big = training.predict_epoch("NVIDIA T4", batch=1024, hidden=16384, steps=1)
    assert big.launch_bound < big.launches and big.seconds > big.launches * big.floor
    assert "NVIDIA T4 (prediction): " in str(small)


def test_predict_epoch_rejects_bad_input() -> None:
    with pytest.raises(KeyError, match="no published specs for 'GTX 280'"):
        training.predict_epoch("GTX 280", 32, 64, 10)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        training.predict_epoch("NVIDIA T4", 32, 64, 0)
    with pytest.raises(ValueError, match="floor"):
        training.predict_epoch("NVIDIA T4", 32, 64, 1, floor=-1e-6)


def _fake_timing(seconds: float, label: str = "NumPy") -> Timing:
    return Timing(label, "numpy", "float32", np.array([seconds]), 1, seconds, flops=1e6)


def test_crossover_is_where_the_prediction_wins_from_then_on() -> None:
    preds = tuple(training.predict_epoch("NVIDIA T4", 32, h, 42) for h in (16, 64, 256, 1024))
    p = preds[0].seconds  # the same at every width: launch-bound
    sw = training.Sweep("hidden", (16, 64, 256, 1024), 32, 64,
                        {"NumPy": [_fake_timing(s * p) for s in (0.5, 2.0, 0.9, 3.0)]}, preds)
    assert sw.crossover("NumPy") == 1024
    sw.timings["NumPy"][2] = _fake_timing(1.5 * p)
    assert sw.crossover("NumPy") == 64
    sw.timings["NumPy"][3] = _fake_timing(0.1 * p)
    assert sw.crossover("NumPy") is None
    np.testing.assert_allclose(sw.seconds("NumPy"), [0.5 * p, 2 * p, 1.5 * p, 0.1 * p])
    with pytest.raises(KeyError, match="no trainer labelled 'CuPy' in this sweep; it timed: NumPy"):
        sw.crossover("CuPy")


def test_sweep_report_says_where_the_prediction_wins_even_without_a_known_peak() -> None:
    preds = tuple(training.predict_epoch("NVIDIA T4", 32, h, 42) for h in (16, 64))
    p = preds[0].seconds
    on_gpu = _fake_timing(2 * p, "CuPy")
    on_gpu.peak = Peak("NVIDIA T4", 8.1e12, 320e9, "published")
    unknown = _fake_timing(2 * p, "JAX")  # a GPU with no published peaks on file: no fraction of peak
    sw = training.Sweep("hidden", (16, 64), 32, 64, {"NumPy": [_fake_timing(0.5 * p), _fake_timing(2 * p)],
                                                     "CuPy": [on_gpu, on_gpu], "JAX": [unknown, unknown]}, preds)
    lines = training.sweep_report(sw).splitlines()
    assert lines[0].startswith("NumPy: NVIDIA T4 (prediction) is faster from hidden 64 on; at hidden 64: ")
    assert lines[1].endswith(" GFLOP/s (0% of the NVIDIA T4 peak)") and lines[1].startswith("CuPy: ")
    assert lines[2].endswith(" GFLOP/s") and "peak" not in lines[2]


def test_sweep_times_every_trainer_at_every_value(data: mlp.Digits) -> None:
    sw = training.sweep([training.trainer("numpy", 0.1)], data, "batch", (512, 1024), hidden=8, budget=0.01)
    assert sw.values == (512, 1024) and [t.n for t in sw.timings["NumPy"]] == [512, 1024]
    assert [p.steps for p in sw.predictions] == [2, 1] and all(p.hidden == 8 for p in sw.predictions)
    fig = training.sweep_figure(sw)
    assert [trace.name for trace in fig.data] == [f"NumPy, measured here on {sw.timings['NumPy'][0].peak.device}",
                                                  "NVIDIA T4 (prediction)",
                                                  "its kernel launches alone (10 µs each)"]
    with pytest.raises(ValueError, match="vary must be 'batch' or 'hidden'"):
        training.sweep([training.trainer("numpy", 0.1)], data, "depth", (1,))


def test_loss_figure_draws_every_run(data: mlp.Digits, small_order: np.ndarray) -> None:
    run = training.train(training.trainer("numpy", 0.2), data, mlp.init_params(), small_order)
    fig = training.loss_figure([run, run])
    assert len(fig.data) == 2 and len(fig.data[0].y) == 10
    with pytest.raises(ValueError, match="at least one Run"):
        training.loss_figure([])


def test_summary_table_gives_speed_ups_over_the_first_row() -> None:
    table = training.summary_table([training.Row("NumPy", "CPU", 0.9733, 0.004),
                                    training.Row("CuPy", "NVIDIA T4 (prediction)", None, 0.016),
                                    training.Row("JAX", "CPU", 0.9733, 0.002)])
    text = getattr(table, "data", table)
    assert "| NumPy | CPU | 97.3% | 4 ms | 1.00x |" in text
    assert "| CuPy | NVIDIA T4 (prediction) | - | 16 ms | 0.25x |" in text
    assert "| JAX | CPU | 97.3% | 2 ms | 2.00x |" in text
    with pytest.raises(ValueError, match="at least one Row"):
        training.summary_table([])
    with pytest.raises(ValueError, match="positive number of seconds per epoch; these do not: JAX"):
        training.summary_table([training.Row("NumPy", "CPU", 0.9, 0.004), training.Row("JAX", "CPU", 0.9, 0.0)])
