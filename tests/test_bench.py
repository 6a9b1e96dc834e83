"""The command line: `python -m helpers bench` measures, reports honestly, and rejects bad usage in one line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers.__main__ import PROG, main
from helpers.core.backend import backends
from helpers.core.validate import available_memory
from helpers.measuring import bench
from helpers.measuring.hardware import Peak, hardware
from helpers.measuring.timing import Timing, TooSlow

ROOT = Path(__file__).resolve().parents[1]
# Tiny sizes keep every measurement far below the peak and the whole module to a few seconds.
FAST = ["bench", "--quick", "--size", "64", "--budget", "0.02"]
RESULT_KEYS = {"op", "backend", "n", "dtype", "median_s", "gflops", "fraction_of_peak"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One in-process bench run with --json and --html: exit code, stdout, stderr and both files."""
    folder = tmp_path_factory.mktemp("bench")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*FAST, "--json", str(folder / "b.json"), "--html", str(folder / "b.html")])
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "json": json.loads((folder / "b.json").read_text()), "html": (folder / "b.html").read_text()}


def test_bench_succeeds_with_table_on_stdout_and_progress_on_stderr(run: dict) -> None:
    assert run["code"] == 0
    header = run["stdout"].splitlines()[0].split()
    assert header[:4] == ["op", "backend", "n", "dtype"] and "speed-up" in header
    assert "[1/" in run["stderr"] and "[1/" not in run["stdout"]
    assert "CPU peak FP32" in run["stdout"]
    for name in backends().usable():
        assert f"matmul  {name}" in run["stdout"]


def test_json_has_the_documented_schema(run: dict) -> None:
    data = run["json"]
    assert set(data) == {"hardware", "results"}
    facts = data["hardware"]
    for key in ("cpu_model", "cores", "simd", "clock_hz", "clock_source", "peak_fp32", "peak_fp64", "bandwidth",
                "accelerators", "jax_platform", "environment"):
        assert key in facts
    assert facts["peak_fp64"] == pytest.approx(facts["peak_fp32"] / 2)
    results = data["results"]
    assert all(RESULT_KEYS <= set(r) for r in results)
    assert {r["backend"] for r in results} == {"loops", *backends().usable()}
    assert {r["op"] for r in results} == {"matmul", "axpby"}
    assert {r["n"] for r in results if r["backend"] == "loops"} == {bench.QUICK_SIZES.matmul_loops,
                                                                    bench.QUICK_SIZES.axpby_loops}
    assert {r["n"] for r in results if r["op"] == "matmul" and r["backend"] != "loops"} == {64}


def test_speedups_compare_flop_rates_against_loops(run: dict) -> None:
    results = run["json"]["results"]
    for op in ("matmul", "axpby"):
        loops = next(r for r in results if r["op"] == op and r["backend"] == "loops")
        assert loops["speedup_vs_loops"] == 1.0
        for r in results:
            if r["op"] == op:
                assert r["speedup_vs_loops"] == pytest.approx(r["gflops"] / loops["gflops"])
    numpy_matmul = next(r for r in results if r["op"] == "matmul" and r["backend"] == "numpy")
    assert numpy_matmul["speedup_vs_loops"] > 10  # BLAS against an interpreter: never close


def test_fractions_of_peak_are_fractions(run: dict) -> None:
    for r in run["json"]["results"]:
        assert 0 < r["fraction_of_peak"] <= 1, r
    assert "WARNING" not in run["stdout"]


def test_bench_figure_leaves_room_for_its_whole_labels(run: dict) -> None:
    assert '"automargin":true' in run["html"].replace(" ", "")


def test_html_report_is_self_contained(run: dict) -> None:
    html = run["html"]
    assert "plotly.js v" in html and "Plotly.newPlot" in html  # the library itself is inlined
    assert '<script src="' not in html and "<script src='" not in html  # nothing to fetch from a CDN
    assert "matmul numpy" in html and "Speed-up" in html


def test_a_reading_above_peak_is_flagged_loudly() -> None:
    impossible = Timing("matmul jax", "jax", "float32", np.array([1e-3]), 1, 1e-3, flops=1e9,
                        peak=Peak("CPU (2 cores)", 1e11, 1e10, "estimated: test"), n=64)
    report = bench.Report(hardware(), [bench.Result("matmul", "jax", impossible, None)], {}, "float32")
    assert impossible.fraction_of_peak == pytest.approx(10)
    text = str(report)
    assert "(!)" in text and "WARNING: matmul on jax measured 1000% of the peak" in text
    assert report.as_json()["results"][0]["fraction_of_peak"] == pytest.approx(10)  # reported, not hidden


@pytest.mark.parametrize("argv", [
    ["bench", "--size", "0"],
    ["bench", "--size", "ten"],
    ["bench", "--dtype", "float16"],
    ["bench", "--backends", "numpy,tpu"],
    ["bench", "--backends", ","],
    ["bench", "--budget", "nan"],
    ["bench", "--budget", "1e308"],
    ["bench", "--frobnicate"],
    ["bench", "--json", "{missing}/out.json"],
    ["bench", "--html", "{tmp}"],
    ["warp-speed"],
    [],
])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "error:" in err and "Traceback" not in err and "usage:" not in err


def test_an_unknown_option_lists_the_accepted_ones(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "--frobnicate" in err and "--backends" in err and "--quick" in err


def test_naming_an_unusable_backend_says_why(capsys: pytest.CaptureFixture) -> None:
    status = backends()["cupy"]
    if status.usable:
        pytest.skip("CuPy can run here")
    assert main(["bench", "--quick", "--backends", "numpy,cupy"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "cupy" in err and status.detail in err and "Traceback" not in err


def test_a_subset_of_backends_measures_only_those(capsys: pytest.CaptureFixture) -> None:
    assert main([*FAST, "--backends", "numpy,loops"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()[1:5]]
    assert rows == [["matmul", "loops"], ["matmul", "numpy"], ["axpby", "loops"], ["axpby", "numpy"]]


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")
def test_float64_runs_jax_in_64_bits_without_leaking_the_setting() -> None:
    if not backends()["jax"].usable:
        pytest.skip("JAX cannot run here")
    import jax.numpy as jnp

    assert bench.measure("matmul", "jax", 16, "float64", 0.01).dtype == "float64"
    assert bench.measure("axpby", "loops", 16, "float32", 0.01).dtype == "float64"  # Python floats are doubles
    assert jnp.ones(2).dtype == jnp.float32


def test_resolve_backends() -> None:
    assert bench.resolve_backends(None) == ["loops", *backends().usable()]
    assert bench.resolve_backends(["numpy", "loops"]) == ["loops", "numpy"]
    with pytest.raises(ValueError, match="accepted: loops, numpy, jax, cupy"):
        bench.resolve_backends(["python"])


def test_hardware_and_backends_commands(capsys: pytest.CaptureFixture) -> None:
    assert main(["hardware"]) == 0
    assert "CPU peak FP32" in capsys.readouterr().out
    assert main(["backends"]) == 0
    assert "numpy: yes" in capsys.readouterr().out


def test_notebooks_command_is_handed_to_upkeep(capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("helpers.book.upkeep")
    assert main(["notebooks", "--help"]) == 0
    assert "sync" in capsys.readouterr().out


def test_module_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, "-m", "helpers", *FAST, "--json", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "speed-up" in done.stdout and "Traceback" not in done.stderr
    results = json.loads(path.read_text())["results"]
    assert {r["backend"] for r in results} >= {"loops", "numpy"}


def test_notebook_upkeep_without_the_dev_tools_says_what_to_install(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "helpers.book.upkeep", None)  # as if nbclient & co were not installed
    assert main(["notebooks", "check"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install -e '.[dev]'" in err and "Traceback" not in err


# Bad input found before the run: nothing is measured. `no_work` makes any measurement fail the test.
@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the bench started working before it checked its input")

    monkeypatch.setattr(bench, "hardware", started)
    monkeypatch.setattr(bench, "measure", started)


def one_error_line(capsys: pytest.CaptureFixture) -> str:
    """The single line on stderr (nothing on stdout, no traceback)."""
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "error:" in err and "Traceback" not in err
    return err.strip()


def test_a_size_too_large_for_memory_is_refused_before_any_work(no_work, capsys: pytest.CaptureFixture) -> None:
    if available_memory() is None:
        pytest.skip("this system does not say how much memory is available")
    assert main(["bench", "--size", "1000000000000"]) == 1
    err = one_error_line(capsys)
    assert "--size 1,000,000,000,000 is too large" in err and "12,000,000,000,000 TB" in err  # 3 x n x n x 4 bytes
    assert "of memory is available" in err and "give a smaller --size (at most about" in err


def test_the_memory_message_gives_the_estimate_and_the_largest_size_that_fits(
        no_work, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(bench, "available_memory", lambda: 40_000_000)
    assert main(["bench", "--quick", "--size", "2000", "--dtype", "float64", "--backends", "numpy"]) == 1
    err = one_error_line(capsys)
    # 3 x 2000 x 2000 x 8 bytes = 96 MB; 40 MB / 24 bytes = 1,666,666 elements: 1,290 x 1,290
    assert "matmul on numpy at n = 2,000 needs about 96 MB (three n x n float64 matrices)" in err
    assert "about 40 MB of memory is available" in err and "at most about 1,290 fits" in err
    bench.check_memory(["numpy"], "float64", replace(bench.QUICK_SIZES, matmul=1290), available=40_000_000)


def test_an_axpby_too_large_for_memory_suggests_quick(no_work, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(bench, "available_memory", lambda: 50_000_000)
    assert main(["bench", "--backends", "numpy"]) == 1  # axpby: 3 x 10M x 4 bytes = 120 MB
    err = one_error_line(capsys)
    assert "axpby on numpy at n = 10,000,000 needs about 120 MB (three float32 vectors of n)" in err
    assert err.endswith("try --quick") and "--size" not in err


def test_memory_estimates() -> None:
    assert bench.memory_need("matmul", "numpy", 1000, "float32").nbytes == 3 * 1000 * 1000 * 4
    assert bench.memory_need("axpby", "jax", 1000, "float64").nbytes == 3 * 1000 * 8
    # Python loops: three lists of 32-byte Python floats, made from two float64 arrays, whatever the dtype
    assert bench.memory_need("matmul", "loops", 32, "float32").nbytes == 32 * 32 * (3 * 32 + 2 * 8)
    assert bench.memory_need("axpby", "loops", 100, "float32") == bench.memory_need("axpby", "loops", 100, "float64")
    # the largest case is what must fit: at the quick sizes that is axpby on the array backends (12 MB)
    with pytest.raises(bench.TooLarge) as caught:
        bench.check_memory(["loops", "numpy"], "float32", bench.QUICK_SIZES, available=5_000_000)
    assert (caught.value.need.op, caught.value.need.backend, caught.value.need.n) == ("axpby", "numpy", 1_000_000)
    bench.check_memory(["loops", "numpy"], "float32", bench.QUICK_SIZES, available=13_000_000)
    # --size sets the array backends' matmul only: loops keep their own small size
    huge = replace(bench.QUICK_SIZES, matmul=10**12)
    bench.check_memory(["loops"], "float32", huge, available=10**9)
    with pytest.raises(bench.TooLarge, match="matmul on numpy"):
        bench.check_memory(["loops", "numpy"], "float32", huge, available=10**9)


def test_unknown_available_memory_checks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "available_memory", lambda: None)
    bench.check_memory(["numpy"], "float64", replace(bench.QUICK_SIZES, matmul=10**12))


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_an_output_path_that_cannot_be_written_is_refused_before_the_run(
        option: str, tmp_path: Path, no_work, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    assert main(["bench", "--quick", option, str(tmp_path / "file" / "out")]) == 2
    err = one_error_line(capsys)
    assert f"argument {option}" in err and f"{tmp_path / 'file'}" in err and "is not a directory" in err
    assert main(["bench", "--quick", option, f"{tmp_path}/"]) == 2
    assert "is a directory; give a file name" in one_error_line(capsys)


def test_an_unwritable_folder_is_refused_before_the_run(tmp_path: Path, no_work, capsys) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    try:
        assert main(["bench", "--quick", "--json", str(folder / "b.json")]) == 2
    finally:
        folder.chmod(0o700)
    err = one_error_line(capsys)
    assert str(folder / "b.json") in err and "ermission denied" in err


def test_a_named_pipe_nobody_reads_is_refused_instead_of_hanging(tmp_path: Path, no_work, capsys) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    os.mkfifo(tmp_path / "pipe")
    assert main(["bench", "--quick", "--html", str(tmp_path / "pipe")]) == 2
    assert "a named pipe that nothing reads" in one_error_line(capsys)


def test_checking_an_output_path_leaves_no_file_behind(tmp_path: Path) -> None:
    from helpers.__main__ import _output_path

    assert _output_path(str(tmp_path / "new.json")) == str(tmp_path / "new.json")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "old.json").write_text("kept")
    _output_path(str(tmp_path / "old.json"))
    assert (tmp_path / "old.json").read_text() == "kept"


def test_the_same_path_for_json_and_html_is_refused(tmp_path: Path, no_work, capsys) -> None:
    path = tmp_path / "report"
    (tmp_path / "sub").mkdir()
    assert main(["bench", "--quick", "--json", str(path), "--html", str(path)]) == 2
    err = one_error_line(capsys)
    assert f"--json and --html both name '{path}'; give two different files" in err
    assert main(["bench", "--quick", "--json", str(path), "--html", f"{tmp_path}/sub/../report"]) == 2
    assert "--json and --html both name" in one_error_line(capsys)
    path.write_text("")
    os.link(path, tmp_path / "hard-link")
    assert main(["bench", "--quick", "--json", str(path), "--html", str(tmp_path / "hard-link")]) == 2
    assert "--json and --html both name" in one_error_line(capsys)


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_write_that_fails_after_the_run_names_the_path_and_exits_1(option: str, capsys) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    assert main([*FAST, "--backends", "numpy", option, "/dev/full"]) == 1
    out, err = capsys.readouterr()
    assert "speed-up" in out  # the table was printed: the results are not lost
    last = err.strip().splitlines()[-1]
    assert last == f"{PROG} bench: error: cannot write '/dev/full': No space left on device (the results are in " \
                   "the table above)"
    assert "None" not in err and "Traceback" not in err


@pytest.mark.parametrize("where", ["hardware", "measure"])
def test_ctrl_c_says_interrupted_on_its_own_line(where: str, tmp_path: Path, monkeypatch, capsys) -> None:
    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, where, ctrl_c)
    assert main([*FAST, "--backends", "numpy", "--json", str(tmp_path / "b.json")]) == 130
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and lines[-1] == f"{PROG}: interrupted", err
    assert lines[-2].endswith(" ... ")  # the progress line that was cut short, ended before the message
    assert list(tmp_path.iterdir()) == []  # the path check left nothing behind


@pytest.mark.parametrize("error", [ValueError("matmul at n = 64 needs 9 GB of memory, but about 1 GB is\navailable"),
                                   TooSlow("benchmark of 'matmul numpy' ran past max_time"), MemoryError()])
def test_an_error_during_the_run_is_one_line_after_the_progress(error: Exception, monkeypatch, capsys) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(bench, "measure", fail)
    assert main([*FAST, "--backends", "numpy"]) == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and "Traceback" not in err
    assert lines[-1].startswith(f"{PROG} bench: error: ") and lines[-2].endswith(" ... "), err
