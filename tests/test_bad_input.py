"""Bad input to every public function a chapter calls: a result, or one clear error raised from the helpers.

Hypothesis puts one wrong argument at a time (a wrong type, sign or size, a non-finite number, a huge value)
into a call that otherwise works, and checks: the call returns, or raises an Exception whose traceback ends
inside helpers/ and whose message names the argument; never a traceback from NumPy, JAX, scikit-learn or
inspect, never a hang. A public function added later joins PUBLIC (docs/architecture.md).
Below it: regression tests for the cases a learner met.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import chapter_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers as h
from helpers.chapters import choosing, make_it_fast, mandelbrot, mlp, training
from helpers.core.limits import time_limit
from helpers.figures import plots
from helpers.gpu import cuda
from helpers.learning import checks, lessons
from helpers.measuring import specs, threads, timing, workloads
from helpers.measuring.hardware import jax_dot_roof
from helpers.model import roofline
from helpers.tpu import sharding, systolic

HELPERS = str(Path(h.__file__).resolve().parent)
T4 = specs.get("NVIDIA T4")


@dataclass(frozen=True)
class Public:
    """A public function and keyword arguments with which it works; `named` maps a parameter to the words its
    error message uses for it, where that is not the parameter's own name; `bad` adds wrong values of its own
    (a tuple of the wrong size, a shape that checks nothing) to BAD."""

    fn: Callable[..., Any]
    good: dict[str, Any]
    named: dict[str, str] = field(default_factory=dict)
    bad: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.fn.__module__.removeprefix('helpers.')}.{self.fn.__qualname__}"


def _timing() -> timing.Timing:
    return timing.Timing("t", "numpy", "float32", np.array([1e-3]), 1, 1e-3, 1e6, 1e6, None)


PUBLIC = [
    Public(workloads.matmul_flops, {"n": 64}),
    Public(workloads.matmul_bytes, {"n": 64, "itemsize": 4}),
    Public(workloads.axpby_flops, {"n": 64}),
    Public(workloads.axpby_bytes, {"n": 64, "itemsize": 4}),
    Public(workloads.get, {"name": "matmul"}, {"name": "operation"}),
    Public(workloads.make_inputs, {"op": "axpby", "n": 8, "dtype": "float32", "backend": "numpy", "seed": 0},
           {"op": "operation"}),
    Public(workloads.runner, {"op": "matmul", "backend": "numpy"}, {"op": "operation"}),
    Public(lessons.peak_gflops, {"cores": 2, "ghz": 3.0, "fma_units": 2, "lanes": 8}),
    Public(lessons.matmul_flops, {"m": 2, "k": 3, "n": 4}),
    Public(lessons.dense_layer_flops, {"batch": 2, "n_in": 3, "n_out": 4}),
    Public(lessons.matmul_seconds, {"n": 64, "gflops": 10.0}),
    Public(lessons.show_source, {"obj": workloads.axpby}, {"obj": "show_source"}),
    Public(lessons.line_bytecode, {"fn": workloads.axpby, "text": "return"}, {"fn": "line_bytecode"}),
    Public(lessons.page_faults, {"fn": float, "calls": 2}, {"fn": "page_faults"}),
    Public(lessons.cores_busy, {"fn": float, "calls": 2}, {"fn": "cores_busy"}),
    Public(timing.format_seconds, {"seconds": 1.5}),
    Public(timing.format_fraction, {"fraction": 0.5}),
    Public(timing.crossover, {"sizes": [1, 2], "baseline_seconds": [1.0, 2.0], "other_seconds": [2.0, 1.0]}),
    Public(timing.compare, {"timings": {"a": _timing(), "b": _timing()}}, {"timings": "compare"}),
    Public(timing.benchmark, {"fn": float, "budget": 0.01, "max_time": 2.0, "min_repeats": 1},
           {"fn": "benchmark"}),
    Public(h.hardware().peak, {"backend": "numpy", "dtype": "float32"}),
    Public(h.hardware().cpu.formula, {"dtype": "bfloat16"}),
    Public(jax_dot_roof, {"precision": "highest"}),
    Public(timing.set_timing_budget, {"seconds": 0.5}, {"seconds": "timing budget"}),
    Public(h.to_backend, {"x": [1.0, 2.0], "name": "numpy"}, {"x": "array", "name": "backend"}),
    Public(h.to_numpy, {"x": [1.0, 2.0]}, {"x": "array"}),
    Public(h.array_module, {"name": "numpy"}, {"name": "backend"}),
    Public(h.accelerator_backend, {"kind": "gpu"}, {"kind": "accelerator"}),
    Public(specs.get, {"name": "NVIDIA T4"}, {"name": "specs"}),
    Public(make_it_fast.show_compiled, {"device": "NVIDIA T4"}),
    Public(make_it_fast.explain, {"row": make_it_fast.table("NVIDIA T4")[2], "device": "NVIDIA T4"},
           {"row": "explain"}),
    Public(make_it_fast.compiled_here, {"device": "NVIDIA T4", "label": "5"}, {"label": "rung"}),
    Public(make_it_fast.sm_limits_text, {"device": "NVIDIA T4"}),
    Public(make_it_fast.built, {"label": "5 2D block tiling", "arch": "sm_75"}),
    Public(roofline.predict_seconds, {"device": T4, "flops": 1e9, "bytes": 1e6, "dtype": "float32", "calls": 2,
                                      "call": "cupy", "kernels": 2, "timed": "pipelined", "matmul": False}),
    Public(roofline.predict_matmul_seconds, {"device": "TPU v5e", "m": 128, "k": 128, "n": 128, "dtype": "bfloat16",
                                             "timed": "kernel"}),
    Public(roofline.predict_copy_seconds, {"device": T4, "bytes": 1e6, "calls": 1, "timed": "synced",
                                           "memory": "pinned"}),
    Public(roofline.device_seconds, {"device": T4, "flops": 1e9, "bytes": 1e6, "dtype": "float32", "kernels": 1,
                                     "matmul": True}),
    Public(roofline.decide, {"flops": 1e9, "bytes": 1e6, "calls": 2, "kernels": 2, "host_bytes": 1e3,
                             "serial_fraction": 0.1, "footprint": 1e6, "dtype": "float32", "matmul": False,
                             "call": "jax", "timed": "pipelined", "cpu": None, "devices": ("NVIDIA T4",),
                             "workload": "w"},
           {"devices": "device"}),
    Public(choosing.recurrence_work, {"n": 100, "method": "scan"}),
    Public(choosing.predict_recurrence, {"device": "NVIDIA T4", "n": 100, "method": "associative scan"}),
    Public(choosing.amdahl, {"serial_fraction": 0.1, "parallel_speedup": 10.0}),
    Public(choosing.price, {"device": "TPU v5e"}, {"device": "price"}),
    Public(choosing.inference_crossovers, {"batches": [1, 16], "cpu_seconds": [1e-5, 1e-4],
                                           "devices": ("NVIDIA T4",)}),
    Public(choosing.from_batch, {"batches": [1, 16, 256], "wins": 16}),
    Public(choosing.first_win, {"batches": [1, 16], "wins": {"NVIDIA T4": 16}}),
    Public(choosing.format_dollars, {"amount": 1.5}),
    Public(choosing.warp_steps, {"source": chapter_kernel("06_when_to_use_which.ipynb", "decay_steps"),
                                 "name": "decay_steps", "x": np.full(40, 3.0), "threads": 64},
           {"source": "source", "name": "kernel", "x": "x"}),
    Public(roofline.roofline_seconds, {"device": T4, "flops": 1e9, "bytes": 1e6, "dtype": "float32"}),
    Public(timing.set_timing_budget, {"seconds": 0.5}),
    Public(cuda.kernel_source, {"file": "vector_add.cu"}, {"file": "kernel file"}),
    Public(cuda.blocks_for, {"n": 1000, "threads": 256}),
    Public(mlp.load_digits_split, {"test_fraction": 0.25, "seed": 0}),
    Public(mlp.init_params, {"n_in": 8, "hidden": 8, "n_out": 3, "seed": 0, "dtype": "float32"}),
    Public(training.trace_step, {"batch": 4, "n_in": 8, "hidden": 8, "n_out": 3}),
    Public(training.predict_epoch, {"device": "NVIDIA T4", "batch": 32, "hidden": 64, "steps": 10, "kind": "keras",
                                    "host_seconds": 1e-4}),
    Public(training.xla_kernels, {"batch": 4, "n_in": 8, "hidden": 8, "n_out": 3}),
    Public(systolic.passes, {"k": 129, "n": 128}),
    Public(systolic.fill, {"k": 129, "n": 128}),
    Public(systolic.cycle_count, {"m": 8, "k": 129, "n": 128}),
    Public(systolic.utilisation, {"m": 8, "k": 129, "n": 128}),
    Public(systolic.simulate, {"a": np.ones((2, 3)), "b": np.ones((3, 2))}),
    Public(threads.default_thread_counts, {"most": 4}),
    Public(checks.check_value, {"got": 1.0, "expected": 1.0, "what": "x"}),
    Public(timing.time_without_sync, {"fn": float, "repeats": 3, "max_time": 2.0}, {"fn": "time_without_sync"}),
    Public(plots.speedup_bars, {"timings": {"a": _timing(), "b": _timing()}}),
    Public(plots.gflops_bars, {"timings": {"a": _timing(), "b": _timing()}}),
    Public(plots.roofline, {"device": T4, "timings": {"a": _timing()}, "dtype": "float32"}),
    Public(roofline.attainable, {"device": T4, "intensity": 4.0, "dtype": "float32"},
           bad={"device": ("definitely not a T4", "cpu")}),
    Public(mlp.batch_order, {"n_samples": 100, "batch_size": 8, "epochs": 2, "seed": 0}),
    Public(mandelbrot.mandelbrot_loops, {"width": 8, "height": 6, "max_steps": 20}),
    Public(mandelbrot.mandelbrot_array, {"width": 8, "height": 6, "max_steps": 20}),
    Public(mandelbrot.flops, {"counts": np.ones((2, 2))}),
    Public(systolic.shape_problem, {"shape": (256, 384), "at_least": (200, 300)}),
    Public(sharding.collectives, {"hlo_text": "all-reduce(x)"}, {"hlo_text": "collectives"}),
    Public(training.trainer, {"kind": "numpy", "lr": 0.1, "compute_dtype": "float32"},
           {"kind": "trainer kind", "lr": "learning rate lr"}),
    Public(training.device_name, {"backend": "numpy"}),
    Public(cuda.show, {"source_or_file": "vector_add.cu"}, {"source_or_file": "show"}),
    Public(cuda.Elementwise, {"in_params": "float32 x", "out_params": "float32 y", "operation": "y = x",
                              "name": "copy"}),
    Public(lessons.arithmetic_units, {"devices": ("NVIDIA T4",)}),
    Public(lessons.clock_story, {"cpu": h.hardware().cpu}, {"cpu": "clock_story"}),
    Public(cuda.gpu().predict_cupy_axpby, {"n": 1000, "copies": 0.0}),
    Public(cuda.compile_report, {"source": "extern \"C\" __global__ void k() {}", "name": "k.cu", "archs": "sm_75"},
           {"source": "compile"}),
]

#: A call still running after this long hangs (a hang guard, not a speed test: the slowest call, the first
#: load_digits_split that imports scikit-learn, takes about 5 s on CI's machine).
HANG_SECONDS = 60.0
BAD_VALUES = (None, "7", "", -1, 0, -2.5, math.nan, math.inf, -math.inf, True, 10**30, 2**2000, [], [1, 2],
              [[1.0, 2.0], [3.0]], {}, 1 + 2j, object(), b"x", "float32x")
BAD = st.sampled_from(BAD_VALUES)


def draw_one_bad_argument(public: Public, data: st.DataObject) -> tuple[str, Any]:
    """(a parameter of `public`, a wrong value for it): from BAD, or from the entry's own wrong values."""
    name = data.draw(st.sampled_from(sorted(public.good)), label="argument")
    own = public.bad.get(name, ())
    return name, data.draw(st.one_of(BAD, st.sampled_from(own)) if own else BAD, label="value")


def assert_result_or_clear_error(public: Public, name: str, bad: Any) -> None:
    """Call `public` with `bad` as `name`: it must return, or raise an Exception inside helpers/ naming the argument."""
    try:
        with time_limit(HANG_SECONDS, f"{public}({name}={bad!r:.40})"):
            public.fn(**{**public.good, name: bad})
    except Exception as exc:  # noqa: BLE001 - what matters is where it came from and what it says
        last = traceback.extract_tb(exc.__traceback__)[-1]
        assert last.filename.startswith(HELPERS), (
            f"{public}({name}={bad!r:.40}) raised {type(exc).__name__} from {last.filename}:{last.lineno}: {exc}")
        words = public.named.get(name, name)
        assert words in str(exc), f"{public}({name}={bad!r:.40}): the message does not name {words!r}: {exc}"


@pytest.mark.parametrize("public", PUBLIC, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_bad_argument_gets_a_result_or_a_clear_error_from_the_helpers(public: Public, data: st.DataObject,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    try:
        assert_result_or_clear_error(public, *draw_one_bad_argument(public, data))
    finally:
        capsys.readouterr()


# ---------------------------------------------------------------- regression tests: cases learners met


@pytest.mark.parametrize(("call", "message"), [
    (lambda: workloads.matmul_flops(-1), "n (matrix side) must be a positive integer"),
    (lambda: workloads.matmul_bytes(10, "4"), "itemsize (bytes per number) must be a positive integer"),
    (lambda: workloads.axpby_flops("7"), "n (vector length) must be a positive integer"),
    (lambda: lessons.matmul_flops(-1, 2, 3), "m must be a positive integer"),
    (lambda: timing.format_seconds(-1.0), "seconds must be zero or more"),
    (lambda: h.hardware().peak("bogus"), "unknown backend 'bogus'"),
    (lambda: timing.crossover([1, 2], [1.0, math.nan], [2.0, 1.0]), "baseline_seconds must be finite numbers"),
    (lambda: plots.roofline(T4, dtype="int8"), "dtype 'int8': NVIDIA T4 has no such roof on file"),
    (lambda: h.to_backend("str", "jax"), "expected an array of numbers; got str 'str'"),
    (lambda: lessons.show_source(print), "show_source() shows a Python function or class"),
    (lambda: cuda.kernel_source(None), "no kernel file None"),
    (lambda: workloads.runner(["matmul"], "numpy"), "unknown operation ['matmul']"),
    (lambda: mlp.load_digits_split(test_fraction=0.999), "use a value between 0.0056 and 0.9944"),
    (lambda: h.compare(None), "compare() needs several Timing results"),
    (lambda: workloads.make_inputs("matmul", 10**7), "needs 1,200,000.00 GB of memory"),
    (lambda: threads.thread_sweep(np.negative, threads="12"), "threads must be a list of thread counts"),
    (lambda: cuda.gpu().predict_cupy_axpby(10**12), "does not fit on the NVIDIA T4"),
    (lambda: training.keras_widths(mlp.load_digits_split(), 0.1, widths=()), "widths must be a non-empty list"),
    (lambda: training.keras_widths(mlp.load_digits_split(), 0.1, widths="64"), "widths must be a non-empty list"),
    (lambda: training.keras_widths(mlp.load_digits_split(), 0.1, widths=(64, 0)), "width must be"),
    (lambda: training.keras_widths(mlp.load_digits_split(), 0.1, batch=-2), "batch must be"),
    (lambda: training.keras_widths(mlp.load_digits_split(), -1.0), "learning rate"),
    (lambda: training.keras_widths({"x": 1}, 0.1), "data must be the digits"),
])
def test_what_learners_typed_gets_one_clear_line(call: Callable[[], Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError, KeyError, FileNotFoundError)) as caught:
        call()
    assert message in str(caught.value)
    assert traceback.extract_tb(caught.value.__traceback__)[-1].filename.startswith(HELPERS)


def test_thread_sweep_labels_the_threads_really_applied() -> None:
    sweep = threads.thread_sweep(np.dot, np.ones(64), np.ones(64), threads=[10**6], budget=0.01)
    (timed,) = sweep.values()
    applied = timed.extra["threads"]
    assert applied < 10**6, "no BLAS runs a million threads: the count in force is what the BLAS took"
    assert timed.label == f"dot, {applied} thread{'s' if applied != 1 else ''} (asked for 1000000)"


def test_predictions_count_from_shapes_at_any_size() -> None:
    # Running a step with a hidden layer of 10**7 would need 4096 x 10**7 floats (160 GB): it cannot finish, so
    # a result at all shows the prediction counted from shapes.
    with time_limit(HANG_SECONDS, "predict_epoch with a hidden layer of 10**7"):
        huge = training.predict_epoch("NVIDIA T4", 4096, 10**7, 1)
    assert not huge.fits and "DOES NOT FIT" in str(huge)
    assert training.predict_epoch("NVIDIA T4", 4096, 16384, 1).fits


def test_the_shape_trace_counts_what_the_step_really_does() -> None:
    """trace_step scales a trace taken at small sizes; at those sizes it must equal running the step itself."""
    work = training.trace_step(2, 3, 5, 4)
    matmuls = [(k.shapes, k.flops) for k in work.matmuls]
    # forward: x @ W1, h @ W2; backward: dlogits @ W2.T, h.T @ dlogits, x.T @ dh
    assert matmuls == [("(2, 3) @ (3, 5)", 60), ("(2, 5) @ (5, 4)", 80), ("(2, 4) @ (4, 5)", 80),
                       ("(5, 2) @ (2, 4)", 80), ("(3, 2) @ (2, 5)", 60)]
    assert work.launches == 36 and work.flops == sum(k.flops for k in work.kernels)
