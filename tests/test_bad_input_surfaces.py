"""Bad input to the entry points added since test_bad_input.py was written (issue 22): the executor's CuPy-shaped
front, the kernel checks, the model (helpers.model.roofline, helpers.chapters.choosing) and the class page's JSON files.

The rule is test_bad_input.py's, with its machinery: one wrong argument at a time in a call that otherwise works;
a result, or one clear error raised inside helpers/ that names the argument; never a hang. A checker's learner
argument (the kernel) is stricter: whatever it is, the answer is a verdict, never an exception. A class's JSON
files, however wrong, are each named and skipped on one line (or, with none usable, one line and exit code 2).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import traceback
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_bad_input import (
    BAD,
    BAD_VALUES,
    HANG_SECONDS,
    HELPERS,
    Public,
    assert_result_or_clear_error,
    draw_one_bad_argument,
)
from test_counter_checks import ADD_SOLUTION, TRANSPOSE_SOLUTION
from test_cuda import SCALE, SILU, _solution
from test_tensor_cores import SOLUTION as WMMA_SOLUTION

from helpers import executor
from helpers.__main__ import main
from helpers.book import classroom
from helpers.chapters import (
    choosing,
    counter_checks,
    kernel_checks,
    make_it_fast,
    mlp,
    momentum,
    tensor_checks,
    tensor_cores,
)
from helpers.core.limits import time_limit
from helpers.executor import cupy_cpu
from helpers.figures import plots
from helpers.gpu import cuda
from helpers.learning import glossary
from helpers.learning.checks import Verdict
from helpers.measuring import specs
from helpers.model import roofline
from helpers.tpu import pallas

T4 = specs.get("NVIDIA T4")
VECTOR_ADD = cuda.kernel_source("vector_add.cu")
DIGITS = mlp.load_digits_split()
START = mlp.init_params(DIGITS.n_features, 8, DIGITS.n_classes)
ORDER = mlp.batch_order(len(DIGITS.y_train), 4, 1)[0][:3]
MATMUL = _solution("matmul_tiled_rect")
N = 8


def _vectors() -> tuple[Any, ...]:
    """vector_add's arguments for N elements: a, b, out, n."""
    return (np.arange(N, dtype=np.float32), np.ones(N, dtype=np.float32), np.zeros(N, dtype=np.float32),
            np.int32(N))


#: Wrong launch shapes, each a tuple as CuPy wants: empty, zero, negative, too many axes, fractional, too large.
SHAPES = ((), (0,), (-1,), (1, 1, 1, 1), (1.5,), (True,), (2**40,), ("4",), (None,))
#: Wrong kernel arguments: too few, a Python number for a C int, a list for a pointer, an array of the wrong dtype.
ARGS = ((), _vectors()[:3], (*_vectors()[:3], N), (*_vectors()[:3], 8.0), ([0.0] * N, *_vectors()[1:]),
        (np.arange(N), *_vectors()[1:]), (np.arange(N, dtype=np.float32)[::2], *_vectors()[1:]),
        (np.float32(1), *_vectors()[1:]), (np.array(1.0, np.float32), *_vectors()[1:]))
#: Wrong dtypes: unknown names, strings, objects, a structured dtype.
DTYPES = ("float32x", "U3", object, np.dtype([("a", "f4")]), "S1", "datetime64[s]")

TWICE = cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x", "twice")
FILL = cupy_cpu.ElementwiseKernel("float32 a", "float32 y", "y = a", "fill")


def elementwise_twice(x: Any, y: Any, block_size: Any) -> Any:
    """cupy_cpu.ElementwiseKernel's call with an array input and its output given: TWICE(x, y, block_size=...)."""
    return TWICE(x, y, block_size=block_size)


def elementwise_fill(a: Any, size: Any) -> Any:
    """cupy_cpu.ElementwiseKernel's call with a scalar input only, so the size comes from size=: FILL(a, size=...)."""
    return FILL(a, size=size)


def check_launch_of_vector_add(name: Any, grid: Any, block: Any, args: Any) -> None:
    """executor.check_launch(VECTOR_ADD, ...): its source argument is tried on its own (below)."""
    executor.check_launch(VECTOR_ADD, name, grid, block, args)


SURFACES = [
    # ---------------------------------------------------------------- the executor's CuPy-shaped front
    Public(cupy_cpu.RawKernel, {"code": VECTOR_ADD, "name": "vector_add", "options": ("-std=c++17",)}),
    Public(cupy_cpu.RawKernel(VECTOR_ADD, "vector_add").__call__,
           {"grid": (1,), "block": (N,), "args": _vectors(), "shared_mem": 0},
           {"args": "argument"}, {"grid": SHAPES, "block": SHAPES, "args": ARGS}),
    Public(cupy_cpu.ElementwiseKernel, {"in_params": "float32 x", "out_params": "float32 y", "operation": "y = 2 * x",
                                        "name": "twice", "preamble": "", "no_return": False, "return_tuple": False},
           bad={"in_params": ("float32", "float32 x,", "float32 i", "float32 x, float32 x", "T 1x"),
                "name": ("two words", "1x", "x;y")}),
    Public(elementwise_twice, {"x": np.arange(N, dtype=np.float32), "y": cupy_cpu.empty(N, cupy_cpu.float32),
                               "block_size": 32},
           bad={"x": ARGS[-1:] + (np.arange(N), np.arange(N, dtype=np.float64), np.ones((2, 3), np.float32)),
                "y": (np.zeros(N), np.zeros(N + 1, np.float32), np.zeros(2 * N, np.float32)[::2]),
                "block_size": (2048, 2**40)}),
    Public(elementwise_fill, {"a": np.float32(2.0), "size": 10}, bad={"size": (10**7, np.int64(-3), 1.0)}),
    Public(cupy_cpu.asarray, {"a": [1.0, 2.0], "dtype": "float32"}, bad={"dtype": DTYPES}),
    Public(cupy_cpu.asnumpy, {"a": np.ones(3)}),
    Public(cupy_cpu.empty, {"shape": (2, 3), "dtype": "float32"},
           bad={"shape": ((2, -3), (2.0,), 10**12, (2**40, 2**40)), "dtype": DTYPES}),
    Public(cupy_cpu.empty_like, {"a": np.ones(3, np.float32), "dtype": None}, bad={"dtype": DTYPES}),
    Public(check_launch_of_vector_add, {"name": "vector_add", "grid": (1,), "block": (N,), "args": _vectors()},
           {"args": "argument", "name": "kernel"},
           {"grid": SHAPES, "block": SHAPES + ((2048,), (32, 32, 2)), "args": ARGS}),
    # ---------------------------------------------------------------- the kernel checks' author arguments
    Public(kernel_checks.check_silu, {"kernel": SILU, "n": 40}, bad={"n": (1, 2, 10**9)}),
    Public(kernel_checks.check_elementwise, {"kernel": SILU, "reference": kernel_checks.silu_reference,
                                             "inputs": lambda n: (np.linspace(-3, 3, n, dtype=np.float32),),
                                             "title": "silu", "n": 40},
           bad={"n": (1, 2, 10**9), "title": ("  ",), "reference": (print, len),
                "inputs": (lambda n: (), lambda n: None, lambda n: 5, lambda n: (np.ones(2, np.float32),))}),
    Public(kernel_checks.check_scale, {"source": SCALE, "n": 40, "threads": 32},
           bad={"n": (1, 33, 10**9), "threads": (1, 1025)}),
    Public(kernel_checks.check_tiled_matmul, {"source": MATMUL, "shape": (17, 18, 19), "tile": 16},
           bad={"shape": ((1, 1, 1), (16, 16, 16), (17, 18), (17, 18, 19, 20), (17.0, 18, 19), (17, -18, 19),
                          (10**6, 17, 17), "17,18,19"),
                "tile": (1, 33, 16.0)}),
    Public(kernel_checks.silu_reference, {"x": np.ones(3, np.float32)}),
    Public(kernel_checks.scale_reference, {"x": np.ones(3, np.float32), "factor": 1.5}),
    # ---------------------------------------------------------------- chapter 05's momentum exercise
    Public(momentum.reference, {"data": DIGITS, "params": START, "idx": ORDER, "lr": 0.2, "mu": 0.9, "steps": 2},
           bad={"idx": (ORDER[:1], ORDER.astype(float), ORDER + 10**6, ORDER[None])}),
    Public(momentum.check, {"step": lambda p, v, x, y: (p, v, 1.0), "data": DIGITS, "params": START, "idx": ORDER,
                            "lr": 0.2, "mu": 0.9, "steps": 2}),
    # ---------------------------------------------------------------- the model
    Public(roofline.published_spec, {"device": "NVIDIA T4"}, bad={"device": ("definitely not a T4", "x" * 10**7)}),
    Public(roofline.roofs, {"device": "NVIDIA T4"}),
    Public(roofline.host_link, {"device": "NVIDIA T4"}),
    Public(roofline.mxu_side, {"device": "TPU v6e"}),
    Public(roofline.padded, {"size": 100, "side": 128}),
    Public(roofline.roofs(T4).roof, {"dtype": "float32"}),
    Public(roofline.roofs(T4).ridge, {"dtype": "float32"}),
    Public(roofline.roofs(T4).attainable, {"intensity": 4.0, "dtype": "float32"}),
    Public(choosing.divergence_figure, {"runs": {"sorted": np.ones((2, 32), np.int64)}},
           bad={"runs": ({"a": "7"}, {"a": np.ones((2, 31))}, {"a": -np.ones((2, 32))}, {"a": np.full((1, 32), 2.5)},
                         {"a": np.ones((0, 32))}, {1: np.ones((1, 32))}, {"a": [[math.nan] * 32]})}),
    Public(choosing.Divergence, {"steps": np.ones((2, 32), np.int64)},
           bad={"steps": (np.ones((2, 31)), -np.ones((2, 32)), np.ones(32), np.ones((0, 32)))}),
    Public(choosing.amdahl_figure, {"measured_serial": 0.1, "fractions": (0.01, 0.05)},
           bad={"fractions": ((0.1, "7"), (2.0,), np.array([0.1, 0.2]), "0.1")}),
    Public(choosing.wrong_winners, {"answers": dict.fromkeys(choosing.WINNER_QUIZ, "CPU")},
           bad={"answers": ({k: [] for k in choosing.WINNER_QUIZ}, {k: {} for k in choosing.WINNER_QUIZ},
                            {k: math.nan for k in choosing.WINNER_QUIZ})}),
    # ---------------------------------------------------------------- chapter 04's Pallas blocks (the model's side)
    Public(pallas.Blocks, {"m": 4096, "k": 4096, "n": 4096, "bm": 512, "bk": 1024, "bn": 1024}),
    Public(pallas.sweep, {"m": 1024, "k": 1024, "n": 1024, "device": "TPU v5e", "sides": (128, 256)},
           bad={"sides": ((0,), "x", (), (128, "256"), (10**30,))}),
    Public(pallas.check_blocks, {"choice": (512, 1024, 1024), "m": 4096, "k": 4096, "n": 4096,
                                 "device": "TPU v5e"}, bad={"device": ("NVIDIA T4", "x" * 10**4)}),
    Public(pallas.figure, {"choices": pallas.sweep(1024, 1024, 1024, sides=(256, 512)), "device": "TPU v5e",
                           "marked": None}, bad={"choices": ([None], ["x"], "blocks"), "marked": ((512, 1024, 1024),)}),
    # ---------------------------------------------------------------- chapter 07: the ladder and its checks
    Public(make_it_fast.rung, {"label": 2}, {"label": "rung"}, {"label": (np.int64(9), "2 coalesced x", 2.0)}),
    Public(make_it_fast.kernel_text, {"label": "5"}, {"label": "rung"}),
    Public(make_it_fast.template, {"kernel": "sgemm_2d", "tiles": (128, 128, 8, 8, 8)}, {"tiles": "tile"},
           {"kernel": ("sgemm_naive", "sgemm_2d<1>"), "tiles": ((128, 128), (128, 128, 0, 8, 8), "12345")}),
    Public(make_it_fast.gflops, {"n": 4096, "seconds": 0.01}),
    Public(make_it_fast.counts, {"label": 2, "n": 128}, {"label": "rung"}, {"n": (257, np.int64(-3), 32)}),
    Public(make_it_fast.run_on_executor, {"r": make_it_fast.rung(2), "a": np.ones((32, 32), np.float32),
                                          "b": np.ones((32, 32), np.float32), "name_expressions": ()},
           {"a": "a and b", "b": "a and b"},
           {"a": (np.ones((32, 64), np.float32), np.ones((32, 32)), np.array(1.0, np.float32),
                  np.ones((512, 512), np.float32)),
            "name_expressions": (5, "sgemm_2d<1>", [5])}),
    Public(make_it_fast.work, {"r": make_it_fast.rung(5), "counted": make_it_fast.counts(5), "device": "NVIDIA T4",
                               "n": 4096, "counted_at": 128}),
    Public(make_it_fast.predict, {"label": "2", "device": "NVIDIA T4", "n": 4096}, {"label": "rung"}),
    Public(make_it_fast.table, {"device": "NVIDIA T4", "n": 4096}),
    Public(make_it_fast.show_table, {"rows": make_it_fast.table("NVIDIA T4"), "n": 4096}),
    Public(make_it_fast.chapter_gpu, {"gpu": cuda.gpu()}),
    Public(make_it_fast.measure, {"gpu": cuda.gpu(), "r": make_it_fast.rung(2), "n": 64, "kernel": None}),
    Public(tensor_cores.rung, {"label": 8}, {"label": "tensor rung"}, {"label": (np.int64(7), "8 tensor x", 8.0)}),
    Public(tensor_cores.kernel_text, {"label": "9"}, {"label": "tensor rung"}),
    Public(tensor_cores.counts, {"label": 8, "n": 64}, {"label": "tensor rung"}, {"n": (257, np.int64(-3), 100)}),
    Public(tensor_cores.predict, {"label": "9", "device": "NVIDIA T4", "n": 4096}, {"label": "tensor rung"}),
    Public(tensor_cores.predict_cublas, {"device": "NVIDIA T4", "n": 4096}),
    Public(roofline.tensor_rate, {"device": "NVIDIA T4", "dtype": "float16"},
           bad={"dtype": ("bfloat16", "float32", "fp16")}),
    Public(plots.kernel_ladder, {"device": "NVIDIA T4", "points": [("1 naive", 0.5, 1e11, None)]},
           bad={"points": ([("a", -1.0, 1e11, None)], [("a", 1.0, math.nan, None)], [("a", 1.0)], [(1, 2, 3, 4, 5)],
                           [("a", 1.0, 1e11, "fast")])}),
    Public(counter_checks.tile_problem, {"tiles": (128, 128, 8, 8, 8), "device": "NVIDIA T4"},
           bad={"tiles": ((128, 128, 8, 8), (0, 128, 8, 8, 8), (128.0, 128, 8, 8, 8))}),
    Public(glossary.define, {"name": "warp"}, {"name": "glossary term"},
           bad={"name": ("x" * 10**7, ["warp"], "no such term")}),
]


@pytest.mark.parametrize("public", SURFACES, ids=str)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_bad_argument_to_a_new_entry_point_gets_a_result_or_a_clear_error(
        public: Public, data: st.DataObject, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        assert_result_or_clear_error(public, *draw_one_bad_argument(public, data))
    finally:
        capsys.readouterr()


@pytest.mark.parametrize("source", BAD_VALUES)
def test_check_launch_takes_any_source_without_a_raw_traceback(source: Any) -> None:
    assert_result_or_clear_error(Public(executor.check_launch, {"source": VECTOR_ADD, "name": "vector_add",
                                                                "grid": (1,), "block": (N,), "args": _vectors()}),
                                 "source", source)


# ---------------------------------------------------------------- the checks' learner argument: always a verdict

#: What a learner might hand a checker instead of a kernel: the TODO stub aside, a kernel of the wrong kind, a
#: source that is not C, a C source outside the executor's subset, an #include of a file of this machine.
NOT_KERNELS = st.one_of(BAD, st.sampled_from([
    ..., SCALE, MATMUL, SILU, VECTOR_ADD, TWICE, cupy_cpu.RawKernel(SCALE, "scale"), "x" * 10_000, "\x00",
    '#include "/etc/passwd"\n' + SCALE, "extern \"C\" __global__ void scale(", "int main() { return 0; }",
    cuda.Elementwise("float32 x", "float32 y", "y = x", "silu"),
    cuda.Elementwise("float32 x", "float32 y", "y = undeclared", "s"),
    cuda.Elementwise("float32 x, float32 z", "float32 y", "y = x", "s"), np.float32(1.0), print,
    ADD_SOLUTION, TRANSPOSE_SOLUTION, WMMA_SOLUTION]))
CHECKERS = {kernel_checks.check_silu: {"n": 40}, kernel_checks.check_scale: {"n": 40, "threads": 32},
            kernel_checks.check_tiled_matmul: {"shape": (17, 18, 19)}, counter_checks.check_coalesced: {},
            counter_checks.check_padded: {}, tensor_checks.check_wmma_tile: {}}
#: The one kernel each checker should pass.
RIGHT = {kernel_checks.check_silu: SILU, kernel_checks.check_scale: SCALE, kernel_checks.check_tiled_matmul: MATMUL,
         counter_checks.check_coalesced: ADD_SOLUTION, counter_checks.check_padded: TRANSPOSE_SOLUTION,
         tensor_checks.check_wmma_tile: WMMA_SOLUTION}


@pytest.mark.parametrize("check", CHECKERS, ids=lambda check: check.__name__)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kernel=NOT_KERNELS)
def test_whatever_a_learner_hands_a_checker_gets_a_verdict_and_only_the_right_kernel_a_tick(
        check: Any, kernel: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with time_limit(HANG_SECONDS, f"{check.__name__}({kernel!r:.40})"):
        verdict = check(kernel, **CHECKERS[check])
    printed = capsys.readouterr().out
    assert isinstance(verdict, Verdict)
    assert printed.startswith(verdict.message) and verdict.message[0] in "✅❌⏳⚠"
    if kernel is not RIGHT[check]:
        assert not verdict.passed, f"{check.__name__} ticked {kernel!r:.60}"


# ---------------------------------------------------------------- the class page's JSON files

#: Any JSON value, a few levels deep, with numbers too large for a float and strings of any characters.
JSON = st.recursive(st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20)
GOOD_RESULT = {"op": "matmul", "backend": "numpy", "n": 64, "dtype": "float32", "median_s": 1e-4, "gflops": 5.2,
               "gbps": 1.0, "fraction_of_peak": 0.1}
GOOD_FILE = {"name": "Ada", "hardware": {"cpu_model": "Test CPU", "peak_fp32": 1e11, "bandwidth": 2e10,
                                         "accelerators": [{"name": "T4", "peak_flops": {"float32": 8.1e12},
                                                           "peak_bandwidth": 3.2e11}]},
             "results": [GOOD_RESULT, {**GOOD_RESULT, "op": "axpby"}]}


#: A document nested 100,000 deep (Python's parser gives up: RecursionError), and a number of 5,000 digits (more
#: than Python's limit on an int's digits, 4,300: ValueError).
DEEP = "[" * 100_000 + "]" * 100_000
DIGITS = json.dumps(GOOD_FILE).replace("5.2", "9" * 5000)


def _paths(data: Any) -> list[tuple[Any, ...]]:
    """Every place in `data` (a tuple of keys and indices), the whole document first."""
    places: list[tuple[Any, ...]] = [()]
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in children:
        places += [(key, *rest) for rest in _paths(value)]
    return places


@st.composite
def wrong_documents(draw: st.DrawFn) -> str:
    """A bench --json document made wrong in one place: a value of any kind there, or that field removed, or a field
    (an item) added beside it; or any JSON at all."""
    how = draw(st.sampled_from(["replace", "remove", "add", "any"]), label="how")
    if how == "any":
        return json.dumps(draw(JSON, label="document"))
    document = json.loads(json.dumps(GOOD_FILE))
    *parents, last = draw(st.sampled_from(_paths(document)[1:]), label="where")
    holder = document
    for key in parents:
        holder = holder[key]
    if how == "replace":
        holder[last] = draw(JSON, label="value")
    elif how == "remove":
        del holder[last]
    elif isinstance(holder, dict):
        holder[draw(st.text(max_size=8), label="key")] = draw(JSON, label="value")
    else:
        holder.append(draw(JSON, label="value"))
    return json.dumps(document)


def _merge(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["classroom", "merge", *argv])
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=20, deadline=None)
@given(text=wrong_documents(), alone=st.booleans())
@example(text=DEEP, alone=True)
@example(text=DIGITS, alone=False)
@example(text='{"hardware": {"peak_fp32": 1e400}, "results": [{"op": "x", "n": 1e400}]}', alone=True)
@example(text="[]", alone=True)
@example(text='"a string"', alone=False)
def test_a_wrong_json_file_is_named_and_skipped_in_one_line_and_never_written_over(
        text: str, alone: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("class")
    good, bad, page = folder / "ada.json", folder / "bad.json", folder / "class.html"
    good.write_text(json.dumps(GOOD_FILE))
    bad.write_text(text)
    files = [bad] if alone else [good, bad]
    try:
        with time_limit(HANG_SECONDS, "classroom merge"):
            code, out, err = _merge([*map(str, files), "--html", str(page)])
    except Exception as exc:  # noqa: BLE001 - a traceback is the failure this test looks for
        last = traceback.extract_tb(exc.__traceback__)[-1]
        raise AssertionError(f"classroom merge raised {type(exc).__name__} from {last.filename}:{last.lineno}: "
                             f"{exc}") from exc
    assert "Traceback" not in err and good.read_text() == json.dumps(GOOD_FILE) and bad.read_text() == text
    lines = err.splitlines()
    assert all(len(line.partition(f"skipped {bad}: ")[2]) < 200 for line in lines), lines  # the reason: short
    if code == 0:  # usable after all (an extra field, a null where one is allowed: shown), or skipped in one line
        assert page.read_text().startswith("<!DOCTYPE html>")
        assert lines == [] or (len(lines) == 1 and f"classroom merge: skipped {bad}: " in lines[0])
    else:
        assert code == 2 and alone and not page.exists()
        assert len(lines) == 2 and f"classroom merge: skipped {bad}: " in lines[0]
        assert lines[1].endswith("none of the files is a bench --json file; nothing to show")


# ---------------------------------------------------------------- regression tests: what the suite found

FLOATS = np.arange(N, dtype=np.float32)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: cupy_cpu.empty(4, dtype="float32x"), TypeError, "dtype must be a dtype of numbers such as np.float32"),
    (lambda: cupy_cpu.empty(4, dtype=object), TypeError, "dtype must be a dtype of numbers"),
    (lambda: cupy_cpu.empty(2**2000), ValueError, "is too large for the CPU stand-in"),
    (lambda: cupy_cpu.asarray(["a"]), ValueError, "a must be an array, a number or a list of numbers"),
    (lambda: cupy_cpu.asarray([[1.0, 2.0], [3.0]]), ValueError, "(rows of equal length)"),
    (lambda: cupy_cpu.asarray([1.0], dtype="U3"), TypeError, "dtype must be a dtype of numbers"),
    (lambda: cupy_cpu.empty_like([[1.0, 2.0], [3.0]]), ValueError, "a must be an array"),
    (lambda: cupy_cpu.empty_like(FLOATS, dtype=0), TypeError, "dtype must be a dtype of numbers"),
    (lambda: cupy_cpu.ElementwiseKernel("float32 x", None, "y = x"), TypeError, "out_params must be a string"),
    (lambda: cupy_cpu.ElementwiseKernel("float32 i", "float32 y", "y = i"), ValueError, "i (in in_params): the names"),
    (lambda: cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x", "1x"), ValueError,
     "name must be the kernel's name, a C identifier"),
    (lambda: cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x", preamble=None), TypeError,
     "preamble must be a string"),
    (lambda: cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x", no_return="no"), TypeError,
     "no_return must be True or False"),
    (lambda: TWICE(FLOATS, block_size="7"), ValueError, "block_size must be a whole number of threads from 1 to 1,024"),
    (lambda: TWICE(FLOATS, block_size=0), ValueError, "block_size must be"),
    (lambda: FILL(2**2000, size=3), ValueError, "fill: a does not fit in float32; got int 1148130695274254524"),
    (lambda: cupy_cpu.ElementwiseKernel("int32 k", "int32 y", "y = k", "copy")(math.nan, size=2), ValueError,
     "copy: k does not fit in int32; got float nan"),
    (lambda: TWICE(np.ones((2, 3), np.float32), FLOATS), ValueError,
     "twice: the arrays' shapes (x (2, 3), y (8,)) do not broadcast together"),
    (lambda: kernel_checks.check_elementwise(SILU, None, lambda n: (FLOATS,), "silu"), TypeError,
     "reference must be a function"),
    (lambda: kernel_checks.check_elementwise(SILU, kernel_checks.silu_reference, "x", "silu"), TypeError,
     "inputs must be a function"),
    (lambda: kernel_checks.check_elementwise(SILU, kernel_checks.silu_reference, lambda n: (), "silu"), ValueError,
     "inputs(n) must return a tuple of the kernel's inputs, each an array of n = 1,000 numbers or a number"),
    (lambda: kernel_checks.check_elementwise(SILU, kernel_checks.silu_reference, lambda n: (FLOATS,), "silu"),
     ValueError, "inputs(n) must return"),
    (lambda: kernel_checks.check_elementwise(SILU, print, lambda n: (np.ones(n, np.float32),), "silu"), ValueError,
     "reference must return NumPy's answer, an array of one number per element (1 here); got NoneType"),
    (lambda: kernel_checks.silu_reference([1.0]), TypeError, "x must be a NumPy array of floats"),
    (lambda: kernel_checks.scale_reference(FLOATS, "2"), ValueError, "factor must be a finite number"),
    (lambda: roofline.roofs(T4).attainable("7"), ValueError, "intensity (FLOP per byte) must be a finite number"),
    (lambda: choosing.Divergence(np.ones((2, 31))), ValueError, "steps must be each thread's loop steps, as "
                                                                "warp_steps returns them: whole numbers >= 0 of shape"),
    (lambda: choosing.Divergence(np.full((1, 32), 2.5)), ValueError, "steps must be"),
    (lambda: choosing.divergence_figure({"a": "7"}), ValueError, "runs['a'] must be each thread's loop steps"),
    (lambda: choosing.divergence_figure({"a": [[math.nan] * 32]}), ValueError, "runs['a'] must be"),
])
def test_what_the_suite_found_gets_one_clear_error_from_the_helpers(call: Any, error: type, message: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(error) as caught:
        call()
    assert message in str(caught.value)
    assert traceback.extract_tb(caught.value.__traceback__)[-1].filename.startswith(HELPERS)
    assert capsys.readouterr().out == "", "an author's mistake is an error, not a ❌ for the learner"


def test_a_divergence_of_whole_float_steps_is_counted_as_before() -> None:
    assert choosing.Divergence(np.ones((2, 32))).lock_step == 64
    assert choosing.Divergence([[5] + [1] * 31]).useful == 36


def test_a_skipped_files_reason_shows_at_most_80_characters_of_the_value(tmp_path) -> None:
    wide = {f"key {i}": "x" * 30 for i in range(4)}
    (tmp_path / "wide.json").write_text(json.dumps({**GOOD_FILE, "name": wide}))
    _, skipped = classroom.read_machines([tmp_path / "wide.json"])
    shown = skipped[0].removeprefix(f"skipped {tmp_path / 'wide.json'}: name is ").removesuffix(
        ", not a string or null")
    assert len(shown) == classroom.SHOWN_CHARS and shown.startswith("{'key 0': 'xxx") and shown.endswith("...")
