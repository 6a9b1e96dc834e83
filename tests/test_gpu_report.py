"""python -m helpers gpu-report: its real code run here, on a stand-in GPU, and refused where there is none.

CuPy cannot run on this machine, so a stand-in takes its place: test_cuda's FakeCupy (every RawKernel launch
checked against the kernel's C signature, then run by the CPU executor), whose arrays helpers.core.backend is told
are CuPy's, as real cupy.ndarrays are, and whose other functions are NumPy's. JAX, on this CPU, is told it runs on
a GPU (or a TPU). Everything between the probe and the file is the command's own code: the chapters' helpers
measure, helpers.model.roofline predicts, the report is written and read back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import math
import platform
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from test_cuda import FakeArray, FakeCupy, on_device

from helpers.__main__ import main
from helpers.book import evidence, gpu_report, report_case, report_chapters
from helpers.chapters import choosing, make_it_fast, mandelbrot, training
from helpers.core import backend
from helpers.core.backend import BackendStatus
from helpers.executor import cupy_cpu
from helpers.gpu import cuda
from helpers.measuring import host_calls, specs, workloads
from helpers.measuring.timing import Timing
from helpers.model import roofline

hardware_module = importlib.import_module("helpers.measuring.hardware")  # `helpers.measuring.hardware` is the function
ROOT = Path(__file__).resolve().parents[1]
#: Sizes the CPU executor runs in moments: every case of every chapter, small.
TINY = report_case.Sizes(copy_mib=1, axpby=1_000, sweep=(100, 1_000), stream=600, matmul_kernels=8, roof_matmul=16,
                        image=(8, 6), jax_matmul=(16, 32), pad_base=16, precision=16, widths=(64,), batch_sweep=(32,),
                        steps=(10, 100), batches=(1, 4), ladder=128)
GPU_NAME = "Tesla T4"
#: The stand-in host's call costs: CuPy's by kind, a jitted JAX call (as helpers.measuring.host_calls.here gives them).
HOST = host_calls.HostCalls(cupy={"elementwise": 11e-6, "reduction": 23e-6, "matmul": 31e-6, "gather": 47e-6},
                            jax=41e-6, arrays=(6, 5), device="stand-in")


class StandInCupy(FakeCupy):
    """FakeCupy with what the report also asks of CuPy: the runtime's versions and properties, asnumpy, kernels
    taking NumPy scalars (as CuPy's do), and NumPy's functions for the rest (the training step's xp.exp, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.__version__ = "0.0+stand-in"
        props = {"name": GPU_NAME.encode(), "totalGlobalMem": 16 * 2**30, "multiProcessorCount": 40,
                 "major": 7, "minor": 5, "l2CacheSize": 0}  # no L2: beyond_l2 keeps the sizes given
        self.cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDeviceProperties=lambda i: props,
                                                  driverGetVersion=lambda: 12040, runtimeGetVersion=lambda: 12060)

        class ElementwiseKernel:
            def __init__(self, in_params, out_params, operation, name, preamble="") -> None:
                self.on_cpu = cupy_cpu.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)

            def __call__(self, *args):
                assert all(isinstance(a, FakeArray | np.generic) for a in args), [type(a) for a in args]
                return on_device(self.on_cpu(*(np.asarray(a) if isinstance(a, FakeArray) else a for a in args)))

        self.ElementwiseKernel = ElementwiseKernel

        class RawModule:  # chapter 07's templates: the executor's RawModule, handed NumPy arrays
            def __init__(self, code, name_expressions=()) -> None:
                self.on_cpu = cupy_cpu.RawModule(code=code, name_expressions=name_expressions)

            def get_function(self, name):
                kernel = self.on_cpu.get_function(name)

                def launch(grid, block, args):
                    if name in fake.emulations:
                        return fake.emulations[name](grid, block, *args)
                    return kernel(grid, block, tuple(np.asarray(a) if isinstance(a, FakeArray) else a for a in args))

                return launch

        fake = self
        self.RawModule = RawModule

    @staticmethod
    def asnumpy(a) -> np.ndarray:
        return np.array(a)

    def __getattr__(self, name: str):
        return getattr(np, name)


class PinnedCopies(FakeArray):
    """A 'GPU' array that counts the copies .set makes into it (CuPy's ndarray.set: from host memory)."""

    sets = 0

    def set(self, host: np.ndarray) -> None:
        PinnedCopies.sets += 1
        self[...] = host


def _on_accelerators(monkeypatch, jax_kind: str | None = "gpu", gpu: bool = True) -> StandInCupy:
    """Make this machine look as if CuPy had a GPU (when `gpu`) and JAX ran on `jax_kind` (None: the CPU)."""
    probes = backend.backends()  # the real probes first, of the real CuPy
    fake = StandInCupy()
    if gpu:
        monkeypatch.setitem(sys.modules, "cupy", fake)
        monkeypatch.setattr(fake, "empty", lambda shape, dtype: np.empty(shape, dtype).view(PinnedCopies))
        monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(  # page-locked memory is host memory here
            empty_pinned=lambda shape, dtype=float: np.empty(shape, dtype)))
        real_owner = backend.backend_of
        monkeypatch.setattr(backend, "backend_of", lambda x: "cupy" if isinstance(x, FakeArray) else real_owner(x))
    monkeypatch.setitem(probes, "cupy", BackendStatus("cupy", True, f"GPU: {GPU_NAME} (1 device)", device_kind="gpu")
                        if gpu else BackendStatus("cupy", False, "no CUDA GPU found (0 devices)", "get a GPU", "gpu"))
    monkeypatch.setitem(probes, "jax", BackendStatus("jax", True, f"{(jax_kind or 'cpu').upper()}: stand-in",
                                                     device_kind=jax_kind or "cpu"))
    return fake


@pytest.fixture
def fresh_caches():
    """hardware() and the kernel cache probed anew inside the test, and again after it."""
    hardware_module.hardware.cache_clear()
    cuda.raw_kernel.cache_clear()
    yield
    hardware_module.hardware.cache_clear()
    cuda.raw_kernel.cache_clear()


def _matmul_into_c(grid, block, a, b, c, n) -> None:
    """A GPU's run of one of chapter 07's SGEMM rungs, as NumPy does it: C = A @ B."""
    np.matmul(np.asarray(a), np.asarray(b), out=np.asarray(c))


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """One run of the command, every chapter, on the stand-in GPU with JAX 'on it': exit code, output, file."""
    import jax  # noqa: F401 - imported before the streams are swapped: its logging keeps the stderr it finds

    path = tmp_path_factory.mktemp("report") / "report.json"
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        hardware_module.hardware.cache_clear()
        cuda.raw_kernel.cache_clear()
        fake = _on_accelerators(mp)
        # The ladder's rungs run on the CPU executor in tests/test_make_it_fast.py; here the report's plumbing is
        # what is tested, and the executor takes seconds a call for a 128³ rung (8 s on a machine 5x slower than
        # the one this was written on, past the report's max_time): NumPy stands in for the GPU's run.
        for r in make_it_fast.RUNGS:
            fake.emulations[r.kernel] = _matmul_into_c
        mp.setattr(gpu_report, "QUICK", TINY)
        # one shape: quicker
        mp.setattr(report_chapters, "TRAINING", dataclasses.replace(report_chapters.TRAINING, wide=64))
        # this host's call costs, as host_calls.here measures them on a GPU (fixed here: the stand-in's are NumPy's)
        mp.setattr(host_calls, "here", lambda arrays_in, arrays_out: HOST)
        try:  # a time limit a machine 4x slower than this one reaches the last case within
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["gpu-report", "--json", str(path), "--quick", "--budget", "0.01", "--time-limit", "3600"])
        finally:
            hardware_module.hardware.cache_clear()
            cuda.raw_kernel.cache_clear()
    return types.SimpleNamespace(code=code, out=out.getvalue(), err=err.getvalue(), path=path)


def test_the_command_writes_every_chapters_measurements_beside_their_predictions(full_run) -> None:
    assert full_run.code == 0, full_run.err
    data = json.loads(full_run.path.read_text(encoding="utf-8"))  # strict JSON: no NaN anywhere
    assert data["kind"] == gpu_report.KIND and data["version"] == gpu_report.VERSION
    assert data["skipped"] == [], data["skipped"]
    assert data["settings"] == {"sizes": "quick", "budget_s": 0.01, "time_limit_s": 3600,
                                "cases": len(rows := data["rows"]), "left_out": [], "complete": True}
    assert {r["chapter"] for r in rows} == {"03", "04", "05", "06", "07"}
    assert all(r["wall_s"] >= r["measured_s"] for r in rows)  # each case's own seconds, for the next run's plan
    assert len({(r["chapter"], r["label"]) for r in rows}) == len(rows)  # every measurement once
    for r in rows:
        assert r["predicted_s"] > 0 and r["measured_s"] > 0 and r["iqr_s"] >= 0, r
        assert r["ratio"] == pytest.approx(r["measured_s"] / r["predicted_s"], rel=1e-12), r
        assert r["measured_s"] == r["timing"]["median_s"] and r["timing"]["samples"] >= 1, r
        # a timing max_time stopped before its 5 samples says so, in the JSON and in the table's row (how many
        # samples fit depends on how fast this machine runs the CPU stand-in, so the test reads what the row says)
        assert r["timing"]["capped"] == (r["timing"]["samples"] < 5), r
        table_row = next(line for line in full_run.out.splitlines() if f" {r['label']} (" in line)
        assert ("capped: " in table_row) == r["timing"]["capped"], table_row
        assert r["spec"] == "NVIDIA T4" and r["model"], r  # the stand-in is a T4: its published specs predict
    by_label = {r["label"]: r for r in rows}
    labels = set(by_label)
    assert {"host -> GPU, 1 MiB", "axpby, data stays on the GPU", "axpby, copied in and out every call",
            "fusion: CuPy, 3 passes", "fusion: ElementwiseKernel, 1 pass", "matmul: naive kernel",
            "matmul: tiled kernel (16 x 16)", "matmul: cuBLAS (a @ b)", "sum: cupy.sum",
            "sum: our block_sum kernel, 2 launches", "Mandelbrot: CUDA kernel", "roofline point: matmul 16",
            "one epoch: CuPy", "one epoch: JAX, jit per step", "one epoch: JAX, one jit per epoch",
            "epoch by width: CuPy, hidden 64", "epoch by width: JAX, jit per step, hidden 64",
            "epoch by batch: CuPy, batch 32", "epoch by batch: JAX, jit per step, batch 32",
            "recurrence: scan, n = 100", "recurrence: associative scan, n = 10", "inference: batch 4",
            "jit matmul bfloat16, n = 32"} <= labels, labels
    assert {f"axpby sweep, n = {n:,}" for n in TINY.sweep} <= labels
    assert not any(label.startswith(("padding", "precision")) for label in labels)  # those are for a TPU only
    assert ("one epoch: Keras" in labels) == report_chapters._keras_installed()
    # the predictions are the chapters' own helpers, for the card here
    t4 = cuda.GPU(GPU_NAME, specs.get("NVIDIA T4"), True)
    # a pageable copy goes no faster than this host copies memory, measured in the report's own run (a busy or slow
    # machine measures less there than here), so it is the link's prediction or slower; the pinned one is exact
    assert by_label["host -> GPU, 1 MiB"]["predicted_s"] >= roofline.predict_copy_seconds("NVIDIA T4", 2**20)
    assert by_label["host -> GPU, 1 MiB, from pinned memory"]["predicted_s"] == roofline.predict_copy_seconds(
        "NVIDIA T4", 2**20, memory="pinned")
    assert PinnedCopies.sets > 0  # the pinned row timed .set from pinned memory, as chapter 03 does
    assert by_label["axpby, data stays on the GPU"]["predicted_s"] == t4.predict_cupy_axpby(TINY.axpby)
    assert by_label["axpby, copied in and out every call"]["predicted_s"] == t4.predict_cupy_axpby(
        TINY.axpby, copies=12 * TINY.axpby)
    # chapter 03's own kernels are priced by chapter 07's kernel model, as chapter 03 prices them
    assert by_label["sum: our block_sum kernel, 2 launches"]["predicted_s"] == cuda.predict_reduce_sum(
        "NVIDIA T4", TINY.stream)
    assert by_label["Mandelbrot: CUDA kernel"]["predicted_s"] == cuda.pipelined(
        mandelbrot.predict_gpu("NVIDIA T4", *TINY.image).seconds)
    assert by_label["matmul: naive kernel"]["predicted_s"] == cuda.pipelined(
        cuda.predict_matmul_kernel("NVIDIA T4", "matmul_naive", TINY.matmul_kernels).seconds)
    assert by_label["inference: batch 4"]["predicted_s"] == choosing.predict_inference("NVIDIA T4", 4)
    mm_flops = workloads.matmul_flops(TINY.matmul_kernels)
    assert by_label["matmul: cuBLAS (a @ b)"]["predicted_s"] == t4.predict_seconds(  # priced as a tuned matmul
        mm_flops, mm_flops / cuda.matmul_ways(TINY.matmul_kernels)["cuBLAS (a @ b)"][0], matmul=True)
    assert by_label["SGEMM rung 5 2D block tiling"]["predicted_s"] == make_it_fast.predict(
        "5", "NVIDIA T4", TINY.ladder).seconds  # chapter 07: the kernel model, from the executor's counts
    assert {f"SGEMM rung {r.label}" for r in make_it_fast.RUNGS} <= labels
    assert report_case.CHAPTER_SIZES.ladder == make_it_fast.BIG_N  # the chapter's size, written twice
    steps = 1347 // 32  # chapter 05's 1,347 training digits in batches of 32
    assert by_label["epoch by width: CuPy, hidden 64"]["predicted_s"] == training.predict_epoch(
        "NVIDIA T4", 32, 64, steps, 64, 10, kind="cupy", calls=HOST).seconds  # the GPU here: this host's calls
    assert by_label["epoch by width: JAX, jit per step, hidden 64"]["predicted_s"] == training.predict_epoch(
        "NVIDIA T4", 32, 64, steps, 64, 10, kind="jax", calls=HOST).seconds
    assert by_label["jit matmul float32, n = 16"]["predicted_s"] == roofline.predict_matmul_seconds(
        "NVIDIA T4", 16, 16, 16, "float32", timed="pipelined", call_seconds=HOST.jax)


def test_the_report_says_on_what_it_ran(full_run) -> None:
    facts = json.loads(full_run.path.read_text(encoding="utf-8"))["facts"]
    assert [(d["name"], d["via"], d["spec"]) for d in facts["devices"]] == [
        (GPU_NAME, "cupy", "NVIDIA T4"), ("cpu", "jax", "NVIDIA T4")]
    assert facts["cuda_driver"] == "12.4" and facts["cuda_runtime"] == "12.6"
    assert facts["python"] == platform.python_version()
    packages = facts["packages"]
    for name in ("numpy", "jax", "jaxlib", "keras"):
        assert packages[name] == importlib.metadata.version(name)
    assert packages["numpy"] == np.__version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", facts["date"])
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        assert facts["helpers"]["commit"] == head and isinstance(facts["helpers"]["changed"], bool)


def test_the_command_prints_the_table_and_where_the_file_goes(full_run) -> None:
    out = full_run.out
    rows = json.loads(full_run.path.read_text(encoding="utf-8"))["rows"]
    assert out.startswith("gpu-report, ") and f"{GPU_NAME} via cupy (predicted from the NVIDIA T4)" in out
    assert "cuda driver 12.4, cuda runtime 12.6" in out
    for r in rows:
        line = next(line for line in out.splitlines() if f"{r['label']} ({r['work']})" in line)
        note = f"  capped: {r['timing']['samples']} sample" if r["timing"]["capped"] else ""
        assert line.startswith(r["chapter"]) and f"{r['ratio']:.2f}x{note}" in line, line
    assert f"{len(rows)} rows; measured/predicted from" in out
    report = gpu_report.Report(json.loads(full_run.path.read_text())["facts"], [])
    name = f"gpu-report-tesla-t4-{report.facts['date'][:10]}.json"
    assert gpu_report.suggested_name(report) == name
    assert out.endswith(f"wrote {full_run.path}; to list it in docs/predictions.md, commit it as docs/{name} and run "
                        "python -m helpers.book.evidence\n")
    assert gpu_report.next_step(str(ROOT / "docs" / name), report) == (
        "commit it and run python -m helpers.book.evidence: docs/predictions.md then lists its rows")
    assert re.search(r"^\[1/\d+, 0:\d\d so far, about \d+:\d\d left\] ch03 host -> GPU, 1 MiB .*\.\.\. .*"
                     r"\(predicted .*\)( +capped: .*)?$", full_run.err, re.M)


def test_the_page_lists_the_reports_rows_as_measured_by_this_project(full_run, tmp_path) -> None:
    (tmp_path / "gpu-report-tesla-t4-2030-01-01.json").write_text(full_run.path.read_text())
    reports = gpu_report.load_reports(tmp_path)
    assert [name for name, _ in reports] == ["gpu-report-tesla-t4-2030-01-01.json"]
    text = evidence.page(reports=reports)
    section = text.split("## Measured by this project on a GPU or a TPU")[1].split("## The model's constants")[0]
    assert "None yet" not in section and f"### {GPU_NAME} via cupy, cpu via jax" in section
    rows = reports[0][1]["rows"]
    for r in rows:
        assert f"| {r['chapter']} | {r['label']} | {r['work']} | " in section
        assert f" | {r['ratio']:.2f} | " in section
    assert f"{len(rows)} rows; ratios from" in section


def test_the_page_says_when_a_report_was_interrupted_and_what_it_left_out(full_run, tmp_path) -> None:
    data = json.loads(full_run.path.read_text())
    data["settings"].update(complete=False, cases=99, left_out=["ch06 recurrence: scan, n = 100,000: why"])
    (tmp_path / "gpu-report-tesla-t4-2030-01-01.json").write_text(json.dumps(data))
    text = evidence.page(reports=gpu_report.load_reports(tmp_path))
    assert f"- interrupted: {len(data['rows'])} of 99 cases run" in text
    assert "- left out: ch06 recurrence: scan, n = 100,000: why" in text


def test_without_a_gpu_or_tpu_it_says_what_it_is_for_and_writes_nothing(monkeypatch, fresh_caches, tmp_path,
                                                                         capsys) -> None:
    _on_accelerators(monkeypatch, jax_kind=None, gpu=False)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    for path in (new, old):
        assert main(["gpu-report", "--json", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("python -m helpers gpu-report: error: no GPU or TPU here")
        assert "records every measurement the chapters make" in err and "Runtime > Change runtime type" in err
    assert not new.exists() and old.read_text() == "kept"
    with pytest.raises(report_case.NoAccelerator, match=r"JAX runs on the CPU"):
        gpu_report.run(TINY, 0.01)


def test_bad_arguments_are_refused_before_anything_runs(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setattr(gpu_report, "run", lambda *a, **k: pytest.fail("ran"))
    for argv, message in ((["--budget", "0"], "argument --budget: '0' is not a number of seconds"),
                          (["--json", str(tmp_path / "no" / "x.json")], "does not exist"),
                          (["--size", "3"], "unrecognized arguments: --size 3 (accepted: --help, --json, --quick"),
                          (["--time-limit", "-5"], "argument --time-limit: '-5' is not a number of seconds between 0 "
                                                   "and 86400")):
        assert main(["gpu-report", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_a_case_that_fails_is_recorded_with_why_and_the_others_still_run(monkeypatch, fresh_caches) -> None:
    fake = _on_accelerators(monkeypatch, jax_kind=None)
    monkeypatch.setattr(gpu_report, "CHAPTERS", {"03": report_chapters.chapter03})
    fake.emulations["matmul_naive"] = lambda *args: 1 / 0  # a GPU whose launch fails
    report = gpu_report.run(TINY, 0.01)
    assert report.skipped == [{"chapter": "03", "label": "matmul: naive kernel",
                               "work": "n = 8 float32, 0.25 FLOP/byte", "why": "ZeroDivisionError: division by zero"}]
    labels = [r.label for r in report.rows]
    assert "matmul: tiled kernel (16 x 16)" in labels and "Mandelbrot: CUDA kernel" in labels
    assert "not measured: ch03 matmul: naive kernel: ZeroDivisionError: division by zero" in str(report)


def test_on_a_tpu_the_matmuls_are_padded_and_the_precisions_timed(monkeypatch, fresh_caches) -> None:
    _on_accelerators(monkeypatch, jax_kind="tpu", gpu=False)
    monkeypatch.setattr(gpu_report, "CHAPTERS", {"04": report_chapters.chapter04})
    report = gpu_report.run(TINY, 0.01)
    assert report.skipped == []
    v5e = specs.get("TPU v5e")  # the TPU Colab lends: its specs stand in for a TPU whose own are not on file
    by_label = {r.label: r for r in report.rows}
    assert {f"padding: bf16 matmul, n = {n}" for n in (16, 17, 16 + 128)} <= set(by_label)
    assert by_label["padding: bf16 matmul, n = 17"].predicted == roofline.predict_matmul_seconds(v5e, 17, 17, 17,
                                                                                                 "bfloat16")
    flops, nbytes = workloads.matmul_flops(16), workloads.matmul_bytes(16, 4)
    for precision, passes in (("HIGHEST", 6), ("DEFAULT", 1)):  # HIGHEST: six bf16 passes of the MXU
        assert by_label[f"precision: float32, precision {precision}"].predicted == roofline.predict_seconds(
            v5e, flops=passes * flops, bytes=nbytes, dtype="bfloat16", call="jax_tpu", matmul=True)
    assert all(r.spec == "TPU v5e" and r.timing.median > 0 for r in report.rows)


def test_the_float32_roof_of_a_jax_matmul_follows_jaxs_precision_on_a_tf32_gpu() -> None:
    import jax

    h100, t4 = specs.get("NVIDIA H100 SXM"), specs.get("NVIDIA T4")
    assert hardware_module.jax_matmul_roof(h100, "bfloat16") == "bfloat16"
    with jax.default_matmul_precision("highest"):
        assert hardware_module.jax_matmul_roof(h100, "float32") == "float32"
    with jax.default_matmul_precision("default"):
        assert hardware_module.jax_matmul_roof(h100, "float32") == "tf32"
        assert hardware_module.jax_matmul_roof(t4, "float32") == "float32"  # no TF32 on a T4
        assert hardware_module.jax_matmul_roof(specs.get("TPU v5e"), "float32") == "float32"


def _assignment(source: str, target: str) -> str:
    """The right-hand side of the line `target = ...` in a chapter's code (comment dropped)."""
    found = re.findall(rf"^{re.escape(target)} = (.+)$", source, re.M)
    assert len(found) == 1, f"{target}: {len(found)} assignments"
    return found[0].split("  #")[0].strip()


def _numbers(text: str) -> list[float]:
    return [float(n.replace("_", "")) for n in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?", text)]


def _code(notebook: str) -> str:
    cells = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_the_sizes_and_kernels_are_the_chapters_own() -> None:
    """Each size the report keeps is the one its chapter uses: the chapter imports it (h.report_case.CHAPTER_SIZES,
    TRAINING, ...), or writes the same numbers; the fused kernel and chapter 06's functions are the chapters' own."""
    s, t = report_case.CHAPTER_SIZES, report_chapters.TRAINING
    expected = {
        "03_gpu_cupy.ipynb": {"COPY_MIB": [s.copy_mib], "N": [s.axpby], "SWEEP": list(s.sweep),
                              "GPU_FUSE": [s.stream], "N_ROOF_AXPBY": [s.stream], "N_SUM_GPU": [s.stream],
                              "N_MM_GPU": [s.matmul_kernels], "N_ROOF_MATMUL, GPU_MATMUL": [s.roof_matmul],
                              "BIG_IMAGE": list(s.image)},
        "04_tpu_jax.ipynb": {"SIZES": list(s.jax_matmul), "BASE": [s.pad_base], "N_PRECISION": [s.precision],
                             "MXU_PASSES": list(report_chapters.MXU_PASSES.values())},
        "05_training.ipynb": {"HIDDEN, BATCH, EPOCHS, LR": [t.hidden, t.batch, t.epochs, t.lr],
                              "HIDDEN_SWEEP": list(s.widths), "BATCH_SWEEP": list(s.batch_sweep),
                              "HIDDEN_WIDE": [t.wide]},
        "06_when_to_use_which.ipynb": {"N_STEPS": list(s.steps), "BATCHES": list(s.batches),
                                       "ALPHA": [float(report_chapters.EMA_ALPHA)]},
    }
    for notebook, assignments in expected.items():
        code = _code(notebook)
        for target, values in assignments.items():
            rhs = _assignment(code, target)
            if not re.search(r"gpu_report|CHAPTER_SIZES|TRAINING|MXU_PASSES|EMA_ALPHA", rhs):  # not imported: same
                found = _numbers(rhs)
                assert all(any(math.isclose(v, f, rel_tol=1e-6) for f in found) for v in values), (notebook, target,
                                                                                                   rhs, values)
    fused = report_chapters.AXPBY_FUSED
    code = _code("03_gpu_cupy.ipynb")
    assert all(f'"{part}"' in code for part in (fused.in_params, fused.out_params, fused.operation, fused.name))
    code = _code("06_when_to_use_which.ipynb")
    assert "state = (1 - ALPHA) * state + ALPHA * value" in code and "return a1 * a2, a2 * b1 + b2" in code
    assert "h.choosing.predict_inference" in code  # the report's prediction is the chapter's own function


def test_a_row_that_max_time_capped_says_so_in_its_table_line_and_its_json() -> None:
    def row(samples: list[float], capped: bool) -> report_case.Row:
        timing = Timing("t", "cupy", "float32", np.asarray(samples), 1, 1.0, capped=capped)
        return report_case.Row("07", "SGEMM rung 5", "n = 128", "T4", "NVIDIA T4", "make_it_fast", 1.0, timing)

    capped, full = row([2.5], True), row([1.0] * 5, False)
    report = gpu_report.Report({"date": "2026-11-28", "devices": [], "python": "3.11", "packages": {}},
                               [capped, full])
    lines = [line for line in str(report).splitlines() if "SGEMM rung 5" in line]
    assert "capped: 1 sample in max_time" in lines[0] and "capped" not in lines[1]
    assert [r["timing"]["capped"] for r in report.as_json()["rows"]] == [True, False]
    assert "capped: max_time ran out after 1 sample" in str(capped.timing)


# ---------------------------------------------------------------- streaming, the estimate and the time limits


def _quick_timing(label: str) -> Timing:
    from helpers.measuring.timing import benchmark

    return benchmark(lambda: sum(range(100)), budget=0.001, label=label)


def _fake_cases(count: int, measure=None) -> list[report_case.Case]:
    """`count` cases of chapter 03 that time a tiny Python call (or run `measure(i)`), each predicted at 1 µs."""
    return [report_case.Case("03", f"case {i}", "a sum of 100 numbers", "stand-in", "NVIDIA T4", "none",
                            (lambda i=i: measure(i)) if measure else (lambda i=i: _quick_timing(f"case {i}")),
                            lambda: 1e-6) for i in range(1, count + 1)]


def test_each_row_is_printed_and_written_as_it_is_measured_and_an_interrupt_keeps_them(monkeypatch, tmp_path,
                                                                                       fresh_caches) -> None:
    """Before case k runs, the table printed and the JSON file already hold the k - 1 rows before it; a run
    interrupted at case 3 keeps rows 1 and 2 in the file, marked incomplete."""
    path, out, err, seen = tmp_path / "report.json", io.StringIO(), io.StringIO(), []

    def measure(i: int) -> Timing:
        written = json.loads(path.read_text()) if path.exists() else {"rows": [], "settings": {}}
        seen.append((i, out.getvalue().count("\n03  case "), len(written["rows"]),
                     written["settings"].get("complete")))
        if i == 3:
            raise KeyboardInterrupt
        return _quick_timing(f"case {i}")

    _on_accelerators(monkeypatch, jax_kind=None)
    monkeypatch.setattr(gpu_report, "CHAPTERS", {"03": lambda here, sizes: _fake_cases(4, measure)})
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["gpu-report", "--json", str(path)])
    assert code == 130 and seen == [(1, 0, 0, None), (2, 1, 1, False), (3, 2, 2, False)]
    kept = json.loads(path.read_text())
    assert [r["label"] for r in kept["rows"]] == ["case 1", "case 2"] and kept["settings"]["complete"] is False
    assert kept["settings"]["cases"] == 4 and all(r["wall_s"] > 0 for r in kept["rows"])
    assert err.getvalue().endswith(f"python -m helpers gpu-report: interrupted; {path} holds every row measured "
                                   "before it\n")
    assert out.getvalue().startswith("gpu-report, ") and "case 4" not in out.getvalue()
    assert re.search(r"^\[2/4, 0:\d\d so far, about 0:0\d left\] ch03 case 2 ", err.getvalue(), re.M)


def test_the_estimate_comes_from_the_budget_and_the_cases_left() -> None:
    from helpers.core.progress import FIRST_GUESS, Progress, clock_text

    now = [100.0]
    progress = Progress(total=4, budget=0.5, time_limit=None, clock=lambda: now[0])
    assert progress.left() == 4 * (0.5 + FIRST_GUESS) and progress.line() == "[1/4, 0:00 so far, about 0:06 left]"
    now[0] += 2.5
    progress.done(2.5)  # 2 s beyond its budget: the cases left are taken to cost as much
    assert progress.left() == 3 * 2.5 and progress.line() == "[2/4, 0:02 so far, about 0:08 left]"
    now[0] += 0.5
    progress.done(0.5)
    assert progress.left() == 2 * (0.5 + 1.0)
    limited = Progress(total=40, budget=0.5, time_limit=10.0, clock=lambda: now[0])
    now[0] += 4
    assert limited.left() == 6.0 and not limited.out_of_time()  # no longer than the time limit leaves
    now[0] += 6
    assert limited.out_of_time() and limited.left() == 0
    assert clock_text(83.4) == "1:23" and clock_text(3725) == "62:05"


def test_cases_not_begun_within_the_time_limit_are_listed_and_a_case_never_runs_past_it(monkeypatch) -> None:
    """Each case takes 40 s of a fake clock: those begun within the limit run, each given at most the time the
    limit leaves plus LAST_CASE_GRACE, so the run ends within 3 minutes; the others are listed as not measured."""
    now, caps = [0.0], []

    def measure(case: report_case.Case, seconds: float) -> report_case.Row:
        caps.append((now[0], seconds))
        now[0] += 40
        return case.run()

    monkeypatch.setattr(gpu_report, "_measure", measure)
    limit = gpu_report.DEFAULT_TIME_LIMIT
    done = gpu_report.measure_all(_fake_cases(8), lambda *a, **k: None, 0.5, limit, clock=lambda: now[0])
    rows, skipped = done.rows, done.skipped
    assert done.wall_s[("03", "case 1")] == 40 and len(rows) == math.ceil(limit / 40) and len(rows) + len(skipped) == 8
    assert all(start < limit and start + cap <= limit + gpu_report.LAST_CASE_GRACE <= 180 for start, cap in caps)
    assert caps[0][1] == gpu_report.CASE_LIMIT and caps[-1][1] < gpu_report.CASE_LIMIT
    assert skipped[0]["why"] == (f"the report's time limit of {limit:g} s was spent before it began "
                                 "(--time-limit SECONDS gives more)")


def test_a_case_that_hangs_is_stopped_and_the_others_still_run(monkeypatch) -> None:
    import time

    monkeypatch.setattr(gpu_report, "CASE_LIMIT", 0.5)
    hangs = _fake_cases(3, lambda i: time.sleep(60) if i == 2 else _quick_timing(f"case {i}"))
    done = gpu_report.measure_all(hangs, lambda *a, **k: None, 0.01)
    assert [r.label for r in done.rows] == ["case 1", "case 3"]
    assert done.skipped == [{"chapter": "03", "label": "case 2", "work": "a sum of 100 numbers",
                        "why": "TimeLimitExceeded: ch03 case 2 took longer than 0.5 s"}]


def test_the_longest_scan_is_left_out_saying_why_and_the_others_kept() -> None:
    here = report_case.Here(None, "gpu", "stand-in", specs.get("NVIDIA T4"))
    labels = [case.label for case in report_chapters.chapter06(here, report_case.CHAPTER_SIZES)]
    assert "recurrence: scan, n = 10,000" in labels and "recurrence: scan, n = 100,000" not in labels
    assert "recurrence: associative scan, n = 100,000" in labels  # microseconds: the chapter's size
    [note] = report_chapters.left_out(here, report_case.CHAPTER_SIZES)
    assert note.startswith("ch06 recurrence: scan, n = 100,000: a scan's steps run one after another")
    nothing_here = report_case.Here(None, None)
    assert report_chapters.left_out(here, TINY) == [] and report_chapters.left_out(nothing_here, TINY) == []
    report = gpu_report.Report({}, [], [], {"left_out": [note]})
    assert f"left out: {note}" in report.footer()
