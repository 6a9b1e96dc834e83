"""helpers.chapters.training: the shared loop, epoch timing, the traced step, GPU predictions, sweeps, figures."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import without_gpu

from helpers.chapters import epochs, mlp, trainers, training, xla_step
from helpers.core import backend
from helpers.measuring import host_calls, specs
from helpers.measuring.hardware import Peak
from helpers.measuring.timing import Timing, format_seconds
from helpers.model import roofline


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
    monkeypatch.setattr(trainers, "array_module", lambda name: np if name == "cupy" else backend.array_module(name))
    for module in (trainers, epochs):
        monkeypatch.setattr(module, "to_backend",
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


def _entry(hlo_text: str) -> list[str]:
    """The instruction lines of the ENTRY computation of a compiled HLO module."""
    block = hlo_text[hlo_text.index("\nENTRY"):]
    return block[:block.index("\n}")].splitlines()[2:]  # after the blank split and the header line


def test_xla_kernels_counts_the_work_instructions_of_the_compiled_step() -> None:
    import jax
    import jax.numpy as jnp

    count = training.xla_kernels(32, 64, 64, 10)
    shapes = {"W1": (64, 64), "b1": (64,), "W2": (64, 10), "b2": (10,)}
    params = {name: jax.ShapeDtypeStruct(shape, jnp.float32) for name, shape in shapes.items()}
    text = mlp.jax_step(0.2).lower(params, jax.ShapeDtypeStruct((32, 64), jnp.float32),
                                   jax.ShapeDtypeStruct((32,), jnp.int32)).compile().as_text()
    bookkeeping = ("parameter(", "constant(", "tuple(", "get-tuple-element(", "bitcast(")
    work = [line for line in _entry(text) if not any(f" {op}" in line.split(", metadata")[0] for op in bookkeeping)]
    assert count.total == len(work) and count.platform == jax.default_backend()
    assert dict(count.by_op) == {op: sum(f" {op}(" in line for line in work) for op, _ in count.by_op}
    assert count.total < training.trace_step(32).launches == 36, "XLA fuses the 36 operations into fewer kernels"
    assert str(count).startswith(f"{count.total} kernels (XLA:{count.platform.upper()}: ")
    assert training.xla_kernels(32, 64, 64, 10) is count, "one compile per shape"


def test_kernel_count_follows_calls_into_command_buffers() -> None:
    # XLA:GPU's compiled program wraps kernels in a command buffer that ENTRY calls: its kernels are counted.
    text = """HloModule jit_step, is_scheduled=true

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  ROOT %negate = f32[8]{0} negate(%param_0)
}

%command_buffer (p0: f32[8], p1: f32[8,8]) -> (f32[8], f32[8]) {
  %p0 = f32[8]{0} parameter(0)
  %p1 = f32[8,8]{1,0} parameter(1)
  %loop_negate_fusion = f32[8]{0} fusion(%p0), kind=kLoop, calls=%fused_computation
  %cublas-gemm.1 = (f32[8]{0}, s8[64]{0}) custom-call(%p1, %p0), custom_call_target="__cublas$gemm"
  %get-tuple-element = f32[8]{0} get-tuple-element(%cublas-gemm.1), index=0
  ROOT %tuple = (f32[8]{0}, f32[8]{0}) tuple(%loop_negate_fusion, %get-tuple-element)
}

ENTRY %main.5 (x: f32[8], w: f32[8,8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %copy = f32[8]{0} copy(%x)
  ROOT %call = (f32[8]{0}, f32[8]{0}) call(%copy, %w), to_apply=%command_buffer
}
"""
    assert xla_step._kernels_in(text) == {"fusion": 1, "custom-call": 1, "copy": 1}
    with pytest.raises(ValueError, match="no ENTRY computation"):
        xla_step._kernels_in("HloModule m")


def test_each_prediction_is_the_roofline_sum_it_is_defined_as() -> None:
    t4, steps, host = specs.get("NVIDIA T4"), 42, 6e-4
    work, k = training.trace_step(32), training.xla_kernels(32).total
    cupy_call, jax_call = (roofline.OVERHEADS[name].value for name in ("cupy", "jax_gpu"))
    # Pipelined calls: each costs the larger of its host overhead and its device time (helpers.model.roofline).
    per_op = [max(cupy_call, roofline.device_seconds(t4, flops=op.flops, bytes=op.bytes, matmul=op.name == "matmul"))
              for op in work.kernels]
    # A fused step moves each matmul's inputs and output, and reads and writes the float32 parameters once.
    moved = sum(op.bytes for op in work.matmuls) + 2 * 4 * (64 * 64 + 64 + 64 * 10 + 10)
    fused_step = roofline.device_seconds(t4, flops=work.flops, bytes=moved, kernels=k, matmul=True, program=True)
    fused_epoch = roofline.device_seconds(t4, flops=steps * work.flops, bytes=steps * moved, kernels=steps * k,
                                          matmul=True, loop_steps=steps)  # one iteration of a compiled loop a step
    expected = {"cupy": steps * sum(per_op), "jax": steps * max(jax_call, fused_step),
                "jax-scan": max(jax_call, fused_epoch), "keras": steps * max(jax_call, fused_step) + steps * host}
    got = {kind: training.predict_epoch("NVIDIA T4", 32, 64, steps, kind=kind,
                                        host_seconds=host if kind == "keras" else None) for kind in expected}
    for kind, prediction in got.items():
        assert prediction.seconds == pytest.approx(expected[kind]), kind
        assert prediction.kind == kind and prediction.steps == steps
    assert (got["cupy"].kernels, got["cupy"].calls) == (36, 36 * steps)
    assert [(got[kind].kernels, got[kind].calls) for kind in ("jax", "jax-scan", "keras")] == [
        (k, steps), (k, 1), (k, steps)]
    assert got["keras"].seconds == pytest.approx(got["jax"].seconds + host * steps)
    assert got["jax"].label == "JAX jit per step on the NVIDIA T4 (prediction)"
    assert got["cupy"].where == "NVIDIA T4 (prediction)" and str(got["keras"]).startswith("Keras on the NVIDIA T4")


def test_fusing_predicts_a_faster_epoch_and_one_jit_per_epoch_wins_where_calls_cost_more_than_loop_steps() -> None:
    k = training.xla_kernels(32).total
    for batch, hidden in ((16, 16), (32, 64), (64, 256)):
        cupy, jax_step = (training.predict_epoch("NVIDIA T4", batch, hidden, 42, kind=kind) for kind in ("cupy", "jax"))
        assert jax_step.seconds < cupy.seconds
    # One jit per epoch trades a call per step for an iteration of a compiled loop per step (LOOP_STEP). With the
    # published call cost (a few µs) the calls were hidden behind the step's kernels, and the loop costs more...
    step, scan = (training.predict_epoch("NVIDIA T4", 32, 64, 42, kind=kind) for kind in ("jax", "jax-scan"))
    assert scan.seconds > step.seconds
    # ... while on a host where a call costs 180 µs (the H200 run's), one call per epoch wins by several times, as
    # measured there (8.51 ms an epoch against 1.11 ms).
    slow_host = host_calls.HostCalls(cupy=dict.fromkeys(host_calls.CUPY_KINDS, 10e-6), jax=180e-6, arrays=(6, 5),
                                     device="H200")
    step, scan = (training.predict_epoch("NVIDIA H200", 32, 64, 42, kind=kind, calls=slow_host)
                  for kind in ("jax", "jax-scan"))
    assert step.seconds == pytest.approx(42 * 180e-6) and scan.seconds < step.seconds / 4
    loop = 42 * (roofline.LOOP_STEP["gpu"].value + (k - 1) * roofline.PROGRAM_KERNEL["gpu"].value)
    assert scan.seconds == pytest.approx(max(180e-6, loop), rel=0.01)  # epochs queued: the one call hides
    # Where calls are not hidden (a TPU, predicted synced by helpers.model.roofline), one call per epoch wins outright.
    tpu_step, tpu_scan = (training.predict_epoch("TPU v5e", 32, 64, 42, kind=kind) for kind in ("jax", "jax-scan"))
    assert tpu_scan.seconds < tpu_step.seconds


def test_predictions_are_fixed_cost_bound_when_small_and_roof_bound_when_big() -> None:
    for kind in ("cupy", "jax"):
        small = training.predict_epoch("NVIDIA T4", 32, 64, 42, kind=kind)
        assert small.fixed > 0.9 * small.seconds and small.roofs < 0.1 * small.seconds
        big = training.predict_epoch("NVIDIA T4", 1024, 16384, 1, kind=kind)
        assert big.fixed < 0.2 * big.seconds and big.seconds > big.roofs > big.fixed


def test_predict_epoch_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no published specs for 'GTX 280'"):
        training.predict_epoch("GTX 280", 32, 64, 10)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        training.predict_epoch("NVIDIA T4", 32, 64, 0)
    with pytest.raises(ValueError, match="kind must be one of 'cupy', 'jax', 'jax-scan', 'keras'; got 'numpy'"):
        training.predict_epoch("NVIDIA T4", 32, 64, 1, kind="numpy")
    with pytest.raises(ValueError, match="host_seconds .* must be a finite number, zero or more; got -1e-06"):
        training.predict_epoch("NVIDIA T4", 32, 64, 1, kind="keras", host_seconds=-1e-6)
    with pytest.raises(ValueError, match="host_seconds .*; got None"):
        training.predict_epoch("NVIDIA T4", 32, 64, 1, kind="keras")
    with pytest.raises(ValueError, match="kind 'jax' has none"):
        training.predict_epoch("NVIDIA T4", 32, 64, 1, kind="jax", host_seconds=1e-4)
    with pytest.raises(ValueError, match="CuPy runs on GPUs, and the TPU v5e is not one"):
        training.predict_epoch("TPU v5e", 32, 64, 1, kind="cupy")


def _fake_timing(seconds: float, label: str = "NumPy") -> Timing:
    return Timing(label, "numpy", "float32", np.array([seconds]), 1, seconds, flops=1e6)


def _predictions(hiddens: tuple[int, ...]) -> dict[str, tuple[training.Prediction, ...]]:
    return {kind: tuple(training.predict_epoch("NVIDIA T4", 32, h, 42, kind=kind) for h in hiddens)
            for kind in ("cupy", "jax")}


def test_crossover_is_where_the_prediction_wins_from_then_on() -> None:
    preds = _predictions((16, 64, 256, 1024))
    p = preds["cupy"][0].seconds  # nearly the same at every width: fixed-cost bound
    sw = training.Sweep("hidden", (16, 64, 256, 1024), 32, 64,
                        {"NumPy": [_fake_timing(s * p) for s in (0.5, 2.0, 0.9, 3.0)]}, {"NumPy": "numpy"}, preds)
    assert sw.crossover("NumPy") == sw.crossover("NumPy", "cupy") == 1024
    assert sw.crossover("NumPy", "jax") == 16, "a third of the CuPy prediction: the fused step wins at every width"
    sw.timings["NumPy"][2] = _fake_timing(1.5 * p)
    assert sw.crossover("NumPy") == 64
    sw.timings["NumPy"][3] = _fake_timing(0.1 * p)
    assert sw.crossover("NumPy") is None
    np.testing.assert_allclose(sw.seconds("NumPy"), [0.5 * p, 2 * p, 1.5 * p, 0.1 * p])
    np.testing.assert_allclose(sw.predicted("jax"), [q.seconds for q in preds["jax"]])
    assert sw.wins_from("NumPy") == "at no hidden measured"
    sw.timings["NumPy"][3] = _fake_timing(3.0 * p)
    assert sw.wins_from("NumPy") == "from between hidden 16 and 64", "names the gap, not the first size above it"
    assert sw.wins_from("NumPy", "jax") == "from the smallest hidden measured, 16"
    with pytest.raises(KeyError, match="no trainer labelled 'CuPy' in this sweep; it timed: NumPy"):
        sw.crossover("CuPy")
    with pytest.raises(KeyError, match="no prediction of kind 'keras' in this sweep; it predicted: cupy, jax"):
        sw.crossover("NumPy", "keras")


def test_sweep_report_says_which_prediction_wins_where_even_without_a_known_peak() -> None:
    preds = _predictions((16, 64))
    p = preds["cupy"][0].seconds
    unknown = _fake_timing(2 * p, "JAX")  # a GPU with no published peaks on file: no fraction of peak
    sw = training.Sweep("hidden", (16, 64), 32, 64, {"NumPy": [_fake_timing(0.5 * p), _fake_timing(2 * p)],
                                                     "JAX": [unknown, unknown]},
                        {"NumPy": "numpy", "JAX": "jax"}, preds)
    lines = training.sweep_report(sw).splitlines()
    assert lines[0].startswith("NumPy, measured here: ") and " per epoch at hidden 64, " in lines[0]
    assert lines[1] == "  CuPy on the NVIDIA T4 (prediction) beats NumPy here from between hidden 16 and 64"
    assert lines[2] == ("  JAX jit per step on the NVIDIA T4 (prediction) beats NumPy here from the smallest hidden "
                        "measured, 16")
    assert lines[3].endswith(" GFLOP/s") and "peak" not in lines[3] and len(lines) == 6


def test_on_the_predicted_device_the_report_sets_each_prediction_beside_its_measurement_and_races_measurements(
) -> None:
    # the H200 run (cells 58 and 61): CuPy measured there 57.7 ms an epoch, and the report said "CuPy on the NVIDIA
    # H200 (prediction) beats CuPy here from the smallest hidden measured": a device raced against itself
    preds = {kind: tuple(training.predict_epoch("NVIDIA H200", 32, h, 42, kind=kind) for h in (16, 64))
             for kind in ("cupy", "jax")}
    h200 = Peak("NVIDIA H200", 67e12, 4.8e12, "published")

    def on_h200(seconds: float, label: str) -> Timing:
        t = _fake_timing(seconds, label)
        t.peak = h200
        return t

    cupy = [on_h200(57.7e-3, "CuPy"), on_h200(57.7e-3, "CuPy")]
    sw = training.Sweep("hidden", (16, 64), 32, 64, {"NumPy": [_fake_timing(20e-3), _fake_timing(80e-3)],
                                                     "CuPy": cupy},
                        {"NumPy": "numpy", "CuPy": "cupy"}, preds)
    assert sw.on_device("CuPy") and not sw.on_device("NumPy") and sw.measured_as("cupy") == "CuPy"
    text = training.sweep_report(sw)
    assert "beats CuPy" not in text, "a prediction for the H200 is not raced against the H200's own measurement"
    lines = text.splitlines()
    assert lines[1] == "  CuPy on the NVIDIA H200 (measured) beats NumPy here from between hidden 16 and 64"
    assert lines[2].startswith("  JAX jit per step on the NVIDIA H200 (prediction) beats NumPy here")
    predicted = preds["cupy"][0].seconds
    assert lines[4] == ("  on the NVIDIA H200, where it ran: predicted / measured per hidden: "
                        f"16: {format_seconds(predicted)} / 57.7 ms = {57.7e-3 / predicted:.2f}x; "
                        f"64: {format_seconds(preds['cupy'][1].seconds)} / 57.7 ms = "
                        f"{57.7e-3 / preds['cupy'][1].seconds:.2f}x")


def test_sweep_predicts_cupy_and_each_swept_kind(data: mlp.Digits) -> None:
    numpy_only = training.sweep([training.trainer("numpy", 0.1)], data, "batch", (512, 1024), hidden=8, budget=0.01)
    assert numpy_only.values == (512, 1024) and [t.n for t in numpy_only.timings["NumPy"]] == [512, 1024]
    assert list(numpy_only.predictions) == ["cupy"] and numpy_only.kinds == {"NumPy": "numpy"}
    assert [p.steps for p in numpy_only.predictions["cupy"]] == [2, 1]
    trainers = [training.trainer("numpy", 0.1), training.trainer("jax", 0.1)]
    sw = training.sweep(trainers, data, "hidden", (4, 8), batch=512, budget=0.01)
    assert list(sw.predictions) == ["cupy", "jax"] and [p.hidden for p in sw.predictions["jax"]] == [4, 8]
    fig = training.sweep_figure(sw)
    where = sw.timings["NumPy"][0].peak.device
    assert [trace.name for trace in fig.data] == [f"NumPy, measured here on {where}",
                                                  f"JAX (jit per step), measured here on {where}",
                                                  "CuPy on the NVIDIA T4 (prediction)",
                                                  "JAX jit per step on the NVIDIA T4 (prediction)"]
    assert fig.data[1].line.color == fig.data[3].line.color and fig.data[3].line.dash == "dash"
    with pytest.raises(ValueError, match="vary must be 'batch' or 'hidden'"):
        training.sweep([training.trainer("numpy", 0.1)], data, "depth", (1,))
    with pytest.raises(ValueError, match="host_seconds .* goes with a Keras trainer"):
        training.sweep([training.trainer("keras", 0.1)], data, "batch", (512,))
    with pytest.raises(ValueError, match="host_seconds .* goes with a Keras trainer"):
        training.sweep([training.trainer("numpy", 0.1)], data, "batch", (512,), host_seconds=1e-4)


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


@pytest.mark.parametrize("device", roofline.DECIDE_DEVICES)
def test_one_epoch_gets_one_prediction_in_chapter_05_and_chapter_06(device: str) -> None:
    """Chapter 06's decision for chapter 05's epoch is chapter 05's own JAX prediction, device by device."""
    steps = 1347 // 32
    decision = roofline.decide(**training.epoch_workload(32, 64, steps), devices=roofline.DECIDE_DEVICES)
    estimate = next(e for e in decision.estimates if e.device == device)
    assert estimate.seconds == pytest.approx(training.predict_epoch(device, 32, 64, steps, kind="jax").seconds,
                                             rel=1e-9)


# ------------------------------------------------------------------- Keras on the host CPU and on the accelerator


def _device(platform: str, id: int = 0) -> object:
    """A stand-in for a JAX device: what accelerator() and keras_cpu_vs_accelerator read of one."""
    return SimpleNamespace(platform=platform, id=id, device_kind={"cpu": "cpu", "gpu": "Tesla T4"}.get(platform, "TPU"))


class _Placed:
    """A stand-in for jax.default_device: records which device is in force, so the fake timer can read it."""

    def __init__(self) -> None:
        self.current: object | None = None

    @contextlib.contextmanager
    def __call__(self, device: object) -> Iterator[None]:
        self.current = device
        try:
            yield
        finally:
            self.current = None


def _fake_epochs(placed: _Placed, seconds: dict[str, float], calls: list[tuple[str, str]]) -> Callable[..., Timing]:
    """A timer in time_epoch's place: an epoch of `seconds[platform]` where the device in force lives."""

    def timer(tr: training.Trainer, data: mlp.Digits, params: mlp.Params, idx: np.ndarray, label: str) -> Timing:
        assert tr.kind == "keras" and idx.shape == (5, 64)
        device = placed.current
        assert device is not None, "an epoch was timed outside jax.default_device"
        calls.append((device.platform, label))
        where = "this CPU" if device.platform == "cpu" else f"{device.platform.upper()} 0 ({device.device_kind})"
        t = _fake_timing(seconds[device.platform], label)
        t.extra["where"] = where
        return t

    return timer


def test_accelerator_is_the_first_gpu_or_tpu_among_the_devices() -> None:
    assert training.accelerator([_device("cpu"), _device("cpu", 1)]) is None
    gpu0, gpu1 = _device("gpu"), _device("gpu", 1)
    assert training.accelerator([_device("cpu"), gpu0, gpu1]) is gpu0
    tpu = _device("tpu")
    assert training.accelerator([tpu, _device("cpu")]) is tpu
    assert training.accelerator() is None, "this machine's JAX has no accelerator"


@pytest.mark.parametrize(("gpu_seconds", "words"), [(0.5, "4.00x faster"), (4.0, "2.00x slower")])
def test_keras_on_an_accelerator_compares_the_two_measured_epochs(data: mlp.Digits, small_order: np.ndarray,
                                                                  gpu_seconds: float, words: str) -> None:
    placed, calls = _Placed(), []
    prediction = training.predict_epoch("NVIDIA T4", 64, 64, 5, kind="keras", host_seconds=1e-4)
    found = training.keras_cpu_vs_accelerator(data, mlp.init_params(), small_order[0], 0.2, prediction,
                                              devices=[_device("gpu"), _device("cpu")], place=placed,
                                              timer=_fake_epochs(placed, {"cpu": 2.0, "gpu": gpu_seconds}, calls))
    assert calls == [("cpu", "Keras on the host CPU"), ("gpu", "Keras on the accelerator")]
    assert found.measured and found.cpu.median == 2.0 and found.accelerator.median == gpu_seconds
    assert found.speedup == pytest.approx(2.0 / gpu_seconds), "CPU seconds over the accelerator's, not the reverse"
    text = str(found)
    assert "predict" not in text.lower(), "an accelerator is here: both epochs are measured, nothing predicted"
    assert "  this CPU: 2 s per epoch (measured in this run)" in text
    assert f"  GPU 0 (Tesla T4): {format_seconds(gpu_seconds)} per epoch (measured in this run)" in text
    assert text.endswith(f"over this CPU, from these two measurements: {2.0 / gpu_seconds:.2f}x ({words})")


def test_keras_without_an_accelerator_stands_its_cpu_epoch_beside_the_labelled_prediction(
        data: mlp.Digits, small_order: np.ndarray) -> None:
    placed, calls = _Placed(), []
    prediction = training.predict_epoch("NVIDIA T4", 64, 64, 5, kind="keras", host_seconds=1e-4)
    found = training.keras_cpu_vs_accelerator(data, mlp.init_params(), small_order[0], 0.2, prediction,
                                              devices=[_device("cpu"), _device("cpu", 1)], place=placed,
                                              timer=_fake_epochs(placed, {"cpu": 0.01}, calls))
    assert calls == [("cpu", "Keras on the host CPU")], "no accelerator: only the CPU is timed"
    assert not found.measured and found.accelerator is None
    assert found.speedup == pytest.approx(0.01 / prediction.seconds)
    text = str(found)
    assert "no GPU or TPU here: Keras on the NVIDIA T4 (prediction): " in text
    assert "source: h.roofline's model through h.training.predict_epoch" in text
    assert f"PREDICTED speed-up of the NVIDIA T4 over this CPU: {0.01 / prediction.seconds:,.2f}x" in text
    with pytest.raises(ValueError, match="needs the accelerator's measured epoch or, without one, a prediction"):
        training.KerasOnDevices(found.cpu, None, None)


def test_keras_refuses_a_cpu_epoch_whose_data_was_not_on_the_cpu(data: mlp.Digits, small_order: np.ndarray) -> None:
    """If the device in force were ignored (the model and data made on the GPU), the CPU's row would be the GPU's."""
    ignored = _Placed()
    timer = _fake_epochs(ignored, {"gpu": 1.0}, [])
    with ignored(_device("gpu")), pytest.raises(RuntimeError, match="meant for the host CPU ran with its data on GPU"):
        training.keras_cpu_vs_accelerator(data, mlp.init_params(), small_order[0], 0.2, None,
                                          devices=[_device("gpu"), _device("cpu")],
                                          place=lambda device: contextlib.nullcontext(), timer=timer)
    with pytest.raises(ValueError, match="no CPU among the devices"):
        training.keras_cpu_vs_accelerator(data, mlp.init_params(), small_order[0], 0.2, None,
                                          devices=[_device("gpu")])


def test_time_epoch_says_where_its_data_lived(data: mlp.Digits, small_order: np.ndarray) -> None:
    t = training.time_epoch(training.trainer("jax", 0.1), data, mlp.init_params(), small_order[0], budget=0.01)
    assert t.extra["where"] == "this CPU"


def _width_timer(placed: _Placed, seconds: Callable[[str, int], float], calls: list[tuple[str, int]]
                 ) -> Callable[..., Timing]:
    """A timer in time_epoch's place whose epoch takes seconds(platform, hidden width) where the device in force is."""

    def timer(tr: training.Trainer, data: mlp.Digits, params: mlp.Params, idx: np.ndarray, label: str) -> Timing:
        assert tr.kind == "keras" and idx.shape[1] == training.KERAS_WIDTHS_BATCH
        device, width = placed.current, params["W1"].shape[1]
        calls.append((device.platform, width))
        t = _fake_timing(seconds(device.platform, width), label)
        t.extra["where"] = "this CPU" if device.platform == "cpu" else "GPU 0 (Tesla T4)"
        return t

    return timer


def test_keras_by_width_finds_where_the_accelerator_starts_to_win_from_two_measurements(data: mlp.Digits) -> None:
    # the H200 run: Keras at hidden 64 took 3.6x as long on the GPU as on the CPU; wider layers cost the CPU more
    placed, calls = _Placed(), []
    found = training.keras_widths(data, 0.2, devices=[_device("gpu"), _device("cpu")], place=placed,
                                  timer=_width_timer(placed, lambda p, w: 0.1 if p == "gpu" else w / 20_000, calls))
    assert calls == [(p, w) for w in training.KERAS_WIDTHS for p in ("cpu", "gpu")]
    assert found.accelerator is not None and found.predictions is None
    assert found.crossover == 4096  # 64 / 20,000 s and 1,024 / 20,000 s lose to 0.1 s; 4,096 / 20,000 s wins
    text = str(found)
    assert "PREDICTED" not in text and "(prediction)" not in text
    assert text.endswith("the Tesla T4 wins from between hidden 1,024 and 4,096")
    never = training.keras_widths(data, 0.2, devices=[_device("gpu"), _device("cpu")], place=placed,
                                  timer=_width_timer(placed, lambda p, w: 1.0 if p == "gpu" else 0.5, []))
    assert never.crossover is None and str(never).endswith("at no width measured (up to 16,384)")


def test_keras_by_width_without_an_accelerator_predicts_the_reference_gpu_and_says_so(data: mlp.Digits) -> None:
    placed, calls = _Placed(), []
    found = training.keras_widths(data, 0.2, host_seconds=1e-3, widths=(64, 256), devices=[_device("cpu")],
                                  place=placed, timer=_width_timer(placed, lambda p, w: 0.05, calls))
    assert calls == [("cpu", 64), ("cpu", 256)] and found.accelerator is None
    expected = [training.predict_epoch("NVIDIA T4", training.KERAS_WIDTHS_BATCH, w, found.predictions[0].steps,
                                       kind="keras", host_seconds=1e-3).seconds for w in (64, 256)]
    assert found.other.tolist() == expected
    assert "against the NVIDIA T4 (PREDICTED)" in str(found) and "the NVIDIA T4 is predicted to win" in str(found)


def test_cupys_epoch_on_the_gpu_here_prices_each_operation_by_its_kind_of_call() -> None:
    """CuPy's reductions, matrix products and gathers cost the host more than a ufunc: with the costs measured here
    by kind, each of the step's 36 operations pays its own kind's (the H200 run: 28.1 ms an epoch, where 10 µs a
    call for all of them predicts 15 ms)."""
    costs = {"elementwise": 10e-6, "reduction": 25e-6, "matmul": 30e-6, "gather": 50e-6}
    here = host_calls.HostCalls(cupy=costs, jax=180e-6, arrays=(6, 5), device="NVIDIA H200")
    work = training.trace_step(32)
    kinds = [training.cupy_kind(k.name) for k in work.kernels]
    assert kinds.count("matmul") == 5 and kinds.count("reduction") == 5 and kinds.count("gather") == 1
    predicted = training.predict_epoch("NVIDIA H200", 32, 64, 42, kind="cupy", calls=here)
    assert predicted.seconds == pytest.approx(42 * sum(costs[kind] for kind in kinds), rel=0.01)
    assert 1 / 1.5 < 28.1e-3 / predicted.seconds < 1.5
    with pytest.raises(ValueError, match="kind must be one of elementwise, reduction, matmul, gather"):
        here.cupy_call("conv")
