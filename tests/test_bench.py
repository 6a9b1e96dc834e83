"""The command line: `python -m helpers bench` measures, reports honestly, and rejects bad usage in one line."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import bench
from helpers.__main__ import main
from helpers.backend import backends
from helpers.hardware import Peak, hardware
from helpers.timing import Timing

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


@pytest.mark.filterwarnings("ignore::helpers.timing.NoisyTimingWarning")
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
    pytest.importorskip("helpers.upkeep")
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
    monkeypatch.setitem(sys.modules, "helpers.upkeep", None)  # as if nbclient & co were not installed
    assert main(["notebooks", "check"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install -e '.[dev]'" in err and "Traceback" not in err
