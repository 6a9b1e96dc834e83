"""helpers/executor/benchmark.py at tiny sizes: every timed run's result is checked (a planted wrong kernel fails
the check, on the executor and on numba's simulator), the table and --json say what was run, and --json refuses
links and the script's own inputs. numba's half runs only where numba is installed; no wall-clock assertions."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from helpers.executor import benchmark
from helpers.executor.benchmark import (
    EXECUTOR,
    MATMUL,
    NUMBA,
    VECTOR_ADD,
    Row,
    Sizes,
    check_matmul,
    check_vector_add,
    executor_matmul,
    executor_vector_add,
    kernel_source,
)

ROOT = Path(__file__).resolve().parent.parent
HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install numba)")
TINY = Sizes(vector_add=1000, matmul=32, repeats=1)


def planted(file: str, old: str, new: str) -> str:
    """The kernel file's source with a planted fault: every `old` made `new` (`old` must be there)."""
    source = kernel_source(file)
    assert old in source, f"{old!r} is no longer in {file}: plant the fault elsewhere"
    return source.replace(old, new)


# ------------------------------------------------------------------------------------------------ the executor


def test_the_vector_add_runs_checked_and_counts_the_threads_launched():
    row = executor_vector_add(1000, 2)
    assert (row.kernel, row.engine, row.threads, row.repeats, row.checked) == (VECTOR_ADD, EXECUTOR, 1024, 2, True)
    assert row.seconds > 0 and row.threads_per_s > 0 and row.met is None


@pytest.mark.parametrize("old, new", [
    ("out[i] = a[i] + b[i];", "out[i] = a[i] - b[i];"),  # a wrong value
    ("if (i < n) {", "if (i < n - 1) {"),  # the last element never written (out starts as NaN)
])
def test_a_planted_wrong_vector_add_fails_the_check(old, new):
    with pytest.raises(AssertionError, match="vector_add"):
        executor_vector_add(1000, 1, source=planted("vector_add.cu", old, new))


@pytest.mark.parametrize("n", [32, 20])  # 20: the last tiles stick out of the matrix and are padded with zeros
def test_the_tiled_matmul_runs_checked(n):
    row = executor_matmul(n, 1, target_s=1e9)
    assert (row.kernel, row.engine, row.checked, row.met) == (MATMUL, EXECUTOR, True, True)
    assert row.threads == (-(-n // 16)) ** 2 * 256


@pytest.mark.parametrize("n, old, new", [
    (32, "k < TILE; ++k", "k < TILE - 1; ++k"),  # one product of each tile left out
    (20, ": 0.0f;", ": 1.0f;"),  # the tiles of A and B padded with ones, not zeros
    (32, "start += TILE", "start += 2 * TILE"),  # every other tile skipped
])
def test_a_planted_wrong_matmul_fails_the_check(n, old, new):
    with pytest.raises(AssertionError, match="matmul_tiled"):
        executor_matmul(n, 1, source=planted("matmul.cu", old, new))


def test_the_checks_are_exact_for_the_add_and_within_1e_4_for_the_matmul():
    a, b = np.ones(4, np.float32), np.full(4, 2, np.float32)
    check_vector_add(a, b, np.full(4, 3, np.float32))
    with pytest.raises(AssertionError):
        check_vector_add(a, b, np.array([3, 3, 3, np.nextafter(np.float32(3), np.float32(4))], np.float32))
    m = np.eye(3, dtype=np.float32)
    check_matmul(m, m, m + np.float32(5e-5))
    with pytest.raises(AssertionError):
        check_matmul(m, m, m + np.float32(1e-3))


def test_a_target_missed_is_said_and_makes_the_exit_code_one():
    met, missed = (Row(VECTOR_ADD, EXECUTOR, "n=1", 256, 0.5, 1, True, target) for target in (1.0, 0.1))
    assert (met.met, missed.met) == (True, False)
    table = benchmark.format_table([met, missed])
    assert "met (<= 1 s)" in table and "MISSED (<= 0.1 s)" in table and "512" in table
    assert missed.as_dict()["met_target"] is False and missed.as_dict()["threads_per_s"] == 512


# ------------------------------------------------------------------------------------------------ the command


def test_without_numba_one_line_says_how_to_install_it_and_the_executor_half_runs(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(benchmark, "EXECUTOR_QUICK", TINY)
    monkeypatch.setattr(benchmark, "numba_available", lambda: False)
    out = tmp_path / "rows.json"
    assert benchmark.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sum("pip install numba" in line for line in printed.splitlines()) == 1
    assert NUMBA not in printed.split("pip install numba")[1]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["quick"] is True
    assert [(r["kernel"], r["engine"], r["threads"], r["checked"], r["met_target"]) for r in data["rows"]] == [
        (VECTOR_ADD, EXECUTOR, 1024, True, None), (MATMUL, EXECUTOR, 1024, True, None)]


def test_json_refuses_a_link_a_folder_and_the_scripts_inputs(tmp_path, capsys):
    target = tmp_path / "elsewhere.json"
    target.write_text("keep", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    refused = [(link, "symbolic link"), (tmp_path, "folder"), (tmp_path / "no" / "x.json", "does not exist"),
               (ROOT / "helpers" / "kernels" / "vector_add.cu", "which this script reads"),
               (Path(benchmark.__file__), "which this script reads")]
    hard = tmp_path / "hard.cu"
    try:  # another name for matmul.cu (where tmp_path is on the same file system)
        os.link(ROOT / "helpers" / "kernels" / "matmul.cu", hard)
        refused.append((hard, "which this script reads"))
    except OSError:
        pass
    for path, why in refused:
        with pytest.raises(SystemExit):
            benchmark.parse_args(["--json", str(path)])
        assert why in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "keep"


# ------------------------------------------------------------------------------------------------ numba's simulator


@needs_numba
def test_numbas_half_runs_in_a_subprocess_with_the_simulator_beside_the_executor_at_its_sizes(monkeypatch):
    before = os.environ.get("NUMBA_ENABLE_CUDASIM")
    monkeypatch.setattr(benchmark, "EXECUTOR_QUICK", Sizes(vector_add=2000, matmul=48, repeats=1))
    monkeypatch.setattr(benchmark, "NUMBA_QUICK", TINY)
    rows = benchmark.run(quick=True, with_numba=True)
    assert [(r.kernel, r.engine, r.threads, r.checked) for r in rows] == [
        (VECTOR_ADD, EXECUTOR, 2048, True), (MATMUL, EXECUTOR, 9 * 256, True),
        (VECTOR_ADD, EXECUTOR, 1024, True), (MATMUL, EXECUTOR, 1024, True),  # the executor at numba's sizes
        (VECTOR_ADD, NUMBA, 1024, True), (MATMUL, NUMBA, 1024, True)]
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") == before  # set for the subprocess only
    said = benchmark.speedups(rows)
    assert [line.split(":")[0] for line in said] == ["vector_add at n=1,000", "matmul_tiled at 32x32x32"]


PLANTED_NUMBA = textwrap.dedent("""
    from helpers.executor import benchmark as bm

    def wrong_add(a, b, out, n):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < n - 1:
            out[i] = a[i] + b[i]

    def wrong_matmul(a, b, c, n):
        row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
        if row < n and col < n:
            c[row, col] = a[row, col] * b[row, col]

    add, matmul = bm.numba_kernels(wrong_add, wrong_matmul)
    for name, measure, kernel, n in (("add", bm.numba_vector_add, add, 1000), ("matmul", bm.numba_matmul, matmul, 20)):
        try:
            measure(kernel, n, 1)
        except AssertionError:
            print(name, "caught")
    right_add, right_matmul = bm.numba_kernels()
    bm.numba_vector_add(right_add, 1000, 1)
    bm.numba_matmul(right_matmul, 20, 1)  # padded tiles
    print("right ones pass")
""")


@needs_numba
def test_a_planted_wrong_numba_kernel_fails_the_check():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", PLANTED_NUMBA], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["add", "caught", "matmul", "caught", "right", "ones", "pass"]


def test_the_numba_worker_refuses_to_run_without_the_simulator(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        benchmark.numba_worker(1000, 32, 1)


@pytest.mark.parametrize(("path", "why"), [("/proc/x.json", "no file can be made in '/proc'"),
                                           ("/dev/null", "not a regular file")])
def test_json_refuses_a_device_and_a_folder_where_no_file_can_be_made_in_one_line_before_the_run(path, why, capsys):
    if not Path(path).parent.exists():
        pytest.skip(f"{Path(path).parent} is not on this system")
    with pytest.raises(SystemExit) as caught:
        benchmark.parse_args(["--json", path])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and why in err and err.count("\n") == 1, err
    assert Path("/dev/null").is_char_device()


def test_json_refuses_a_named_pipe_without_waiting_for_a_reader(tmp_path, capsys):
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with pytest.raises(SystemExit):
        benchmark.parse_args(["--json", str(pipe)])
    assert "not a regular file" in capsys.readouterr().err and pipe.is_fifo()
