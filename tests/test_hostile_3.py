"""Issue 38's hostile inputs: false ✅ in chapter 07's counter checks, hangs, tracebacks, and files read or written
where they should not be. Each test failed before its fix."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from test_classroom import _main
from test_counter_checks import ADD_SOLUTION, COALESCED, PADDED, TRANSPOSE_SOLUTION, _changed, _failed

from helpers.book import classroom, site, upkeep
from helpers.chapters import counter_checks, kernel_checks, make_it_fast
from helpers.core import files
from helpers.core.limits import time_limit
from helpers.core.project import CHAPTERS
from helpers.learning import glossary, prompts
from helpers.tpu import pallas

ROOT = Path(__file__).resolve().parents[1]

#: A hang guard, not a speed test.
HANG_SECONDS = 60.0

# ---------------------------------------------------------------- the counter checks: what "coalesced" is

LANE_ZERO_ADD = r"""
extern "C" __global__ void add_matrices(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (threadIdx.x == 0 && row < n) {
        for (int col = blockIdx.x * blockDim.x; col < n && col < (blockIdx.x + 1) * blockDim.x; ++col) {
            C[row * n + col] = A[row * n + col] + B[row * n + col];
        }
    }
}
"""

LANE_ZERO_TRANSPOSE = r"""
#define TILE 32

extern "C" __global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    if (threadIdx.x == 0) {
        int y = blockIdx.y * TILE + threadIdx.y;
        for (int i = 0; i < TILE; ++i) {
            int x = blockIdx.x * TILE + i;
            if (x < n && y < n) {
                tile[threadIdx.y][i] = in[y * n + x];
            }
        }
    }
    __syncthreads();
    int x = blockIdx.y * TILE + threadIdx.x;
    int y = blockIdx.x * TILE + threadIdx.y;
    if (x < n && y < n) {
        out[y * n + x] = tile[threadIdx.x][threadIdx.y];
    }
}
"""


def test_lane_zero_looping_over_its_rows_columns_is_not_coalesced(capsys) -> None:
    """One sector per request, but 32 times the requests: each request moves 4 bytes, not 128."""
    _failed(capsys, counter_checks.check_coalesced(LANE_ZERO_ADD), COALESCED, "right, but not fast yet",
            "global requests of 4 bytes each on average", "not a loop in one lane")


def test_lane_zero_moving_its_tile_row_is_not_coalesced(capsys) -> None:
    _failed(capsys, counter_checks.check_padded(LANE_ZERO_TRANSPOSE), PADDED, "right, but not fast yet",
            "not a loop in one lane")


def test_a_kernel_coalesced_only_at_the_size_once_counted_fails_at_another(capsys) -> None:
    only_at_64 = _changed(ADD_SOLUTION, "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n",
                          "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
                          "    if (n != 64) { int t = col; col = row; row = t; }\n")
    _failed(capsys, counter_checks.check_coalesced(only_at_64), COALESCED, "right, but not fast yet at n = 50",
            "up to 32 in one")


def test_a_transpose_whose_tile_writes_conflict_is_blamed_on_its_writes(capsys) -> None:
    by_columns = _changed(TRANSPOSE_SOLUTION, "tile[TILE][TILE + 1]", "tile[TILE][TILE]")
    by_columns = _changed(by_columns, "tile[threadIdx.y][threadIdx.x] = in[y * n + x];",
                          "tile[threadIdx.x][threadIdx.y] = in[y * n + x];")
    by_columns = _changed(by_columns, "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
                          "out[y * n + x] = tile[threadIdx.y][threadIdx.x];")
    message = _failed(capsys, counter_checks.check_padded(by_columns), PADDED, "right, but not fast yet at n = 64",
                      "shared-memory writes take 32.00 passes each", f"({4 * 32 * 31:,} extra passes in all)")
    assert "reads take" not in message


@pytest.mark.parametrize("trap", ["while (true) { }", "C[-1000000] = 1.0f;"], ids=["loops", "faults"])
def test_a_kernel_that_misbehaves_when_its_output_starts_at_zero_gets_a_verdict(capsys, trap) -> None:
    """Once, the counters came from a launch of their own, its output zeros: a kernel that looped or faulted only
    there hung the check or raised from inside the executor. Every launch is now a checked one."""
    trapped = _changed(ADD_SOLUTION, "        C[row * n + col] =",
                       f"        if (C[row * n + col] == 0.0f) {{ {trap} }}\n        C[row * n + col] =")
    with time_limit(HANG_SECONDS, "check_coalesced"):
        verdict = counter_checks.check_coalesced(trapped)
    assert verdict.message.startswith(("✅", "❌")) and capsys.readouterr().out.startswith(verdict.message)


def test_a_kernel_that_loops_only_at_the_drawn_size_is_stopped_by_the_time_limit(capsys) -> None:
    looping = _changed(ADD_SOLUTION, "    if (row < n && col < n) {",
                       "    if (n != 50 && n != 64) { while (true) { } }\n    if (row < n && col < n) {")
    with time_limit(HANG_SECONDS, "check_coalesced"):
        verdict = counter_checks.check_coalesced(looping)
    _failed(capsys, verdict, COALESCED, "a loop that never ends")


def test_a_printf_in_every_thread_shows_a_few_lines_not_thousands(capsys) -> None:
    loud = _changed(ADD_SOLUTION, "    if (row < n && col < n) {",
                    '    printf("hi %d\\n", row);\n    if (row < n && col < n) {')
    assert counter_checks.check_coalesced(loud).passed
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) < 60 and lines[-1].startswith("   | ... and ") and lines[-1].endswith(" more lines, not shown")


def test_a_kernel_only_a_gpu_ran_is_not_passed_on_counters_nobody_read(capsys, monkeypatch) -> None:
    """On a GPU, CUDA C outside the executor's subset skips the executor: then no counter was read, and no ✅."""
    def runs(title, build, runs, on, rtol, atol):
        return "not run on the CPU executor (outside its subset)" if on.endswith("executor") else "n = 64"

    monkeypatch.setattr(kernel_checks, "_run_all", runs)
    monkeypatch.setattr(kernel_checks, "gpu_here", lambda: True)
    _failed(capsys, counter_checks.check_coalesced(ADD_SOLUTION), COALESCED,
            "the counters this check reads come from the CPU executor, which could not run it")


# ---------------------------------------------------------------- chapter 04's block exercise on a small matrix


def test_blocks_for_a_matrix_smaller_than_every_side_the_sweep_tries_get_a_verdict() -> None:
    verdict = pallas.check_blocks((8, 128, 128), 8, 128, 128)
    assert verdict.passed and verdict.message.startswith("✅ your blocks for a 8 x 128 x 128")


# ---------------------------------------------------------------- chapter 07's ladder and the glossary


def test_a_numpy_whole_number_names_a_rung() -> None:
    assert make_it_fast.rung(np.int64(2)).label == "2 coalesced"


@pytest.mark.parametrize("seconds", [-0.01, 0, None, math.nan, math.inf, 1e-300])
def test_gflops_needs_a_positive_time(seconds) -> None:
    with pytest.raises(ValueError, match="seconds must be a positive, finite number"):
        make_it_fast.gflops(4096, seconds)


@pytest.mark.parametrize(("kernel", "tiles", "message"), [
    ("sgemm_2d", (128, 128), "tiles must be 5 whole numbers, sgemm_2d's BM, BN, BK, TM, TN"),
    ("sgemm_naive", (128, 128, 8, 8, 8), "kernel must be a template kernel of sgemm.cu"),
    ("sgemm_2d", "12345", "tiles must be 5 whole numbers"),
])
def test_a_template_instance_has_one_whole_number_per_parameter(kernel, tiles, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_it_fast.template(kernel, tiles)


@pytest.mark.parametrize(("a", "b"), [
    (np.ones((64, 128), np.float32), np.ones((128, 64), np.float32)),
    (np.array(1.0, np.float32), np.array(1.0, np.float32)),
    (np.ones((32, 32)), np.ones((32, 32))),
], ids=["not square", "0-d", "float64"])
def test_the_executor_multiplies_two_square_float32_matrices_only(a, b) -> None:
    with pytest.raises(ValueError, match="a and b must be two n x n float32 NumPy arrays"):
        make_it_fast.run_on_executor(make_it_fast.rung(2), a, b)


@pytest.mark.parametrize("name", [None, 5, ["warp"], "x" * 10**7])
def test_the_glossary_names_what_it_was_asked_for_in_one_short_line(name) -> None:
    with pytest.raises(ValueError, match="glossary term") as caught:
        glossary.define(name)
    assert len(str(caught.value)) < 2000


# ---------------------------------------------------------------- malformed chapter files: one reader, one line

GOOD_CHAPTER = (ROOT / "notebooks" / CHAPTERS[0].file).read_bytes()
MALFORMED = {
    "half a file": (GOOD_CHAPTER[:len(GOOD_CHAPTER) // 2], "it is not JSON (Unterminated string"),
    "empty": (b"", "it is empty"),
    "{}": (b"{}", "it has no nbformat version"),
    "invalid UTF-8": (b'{"cells": [], "x": "\xff"}', "it is not UTF-8 text (byte 0xff at offset 20)"),
    "a lone surrogate": (GOOD_CHAPTER.replace(b'"source": [', b'"source": ["\\udc80", ', 1),
                         "it holds a lone surrogate"),
    "cells as a string": (json.dumps({**json.loads(GOOD_CHAPTER), "cells": "abc"}).encode(), "its cells are str"),
    "nbformat 99": (json.dumps({**json.loads(GOOD_CHAPTER), "nbformat": 99}).encode(), "it is nbformat 99, not 4"),
    "a cell's source a number": (GOOD_CHAPTER.replace(b'"source": [', b'"source": 5, "x": [', 1),
                                 "cell 0: its source is int"),
    "NaN": (GOOD_CHAPTER.replace(b'"metadata": {', b'"metadata": {"x": NaN, ', 1), "it holds NaN"),
    "a link to /etc/passwd": (None, "it is a symbolic link, not a regular file"),
}


@pytest.fixture
def chapters(tmp_path) -> Path:
    """A copy of notebooks/ (each chapter's own file), in which a test may spoil the first chapter."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for chapter in CHAPTERS:
        shutil.copyfile(ROOT / "notebooks" / chapter.file, folder / chapter.file)
    return folder


def _spoil(path: Path, data: bytes | None) -> None:
    path.unlink()
    if data is None:
        path.symlink_to("/etc/passwd")
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("command", ["classroom copies", "site build"])
@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_chapter_is_one_line_naming_it_and_nothing_is_written(chapters, tmp_path, monkeypatch, command,
                                                                         case) -> None:
    data, said = MALFORMED[case]
    _spoil(chapters / CHAPTERS[0].file, data)
    module, write = (classroom, "write_copies") if command == "classroom copies" else (site, "build")
    monkeypatch.setattr(module, write, functools.partial(getattr(module, write), source=chapters))
    out = tmp_path / "out"
    code, printed, err = _main([*command.split(), str(out)])
    assert code == 2 and not printed and err.count("\n") == 1, err
    assert f"{chapters / CHAPTERS[0].file}: {said}" in err and "root:" not in err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_notebooks_check_names_a_malformed_chapter_in_one_line(chapters, case) -> None:
    data, said = MALFORMED[case]
    _spoil(chapters / CHAPTERS[0].file, data)
    found = upkeep.problems(chapters.parent)
    assert f"notebooks/{CHAPTERS[0].file}: unreadable: {said}" in "\n".join(found)


def test_a_teacher_guide_that_is_not_utf8_is_one_line_from_site_build(chapters, tmp_path, monkeypatch) -> None:
    guide = tmp_path / "teaching.md"
    guide.write_bytes("Café prices".encode("latin-1"))
    monkeypatch.setattr(site, "GUIDE", guide)
    monkeypatch.setattr(site, "chapter_html", lambda path, index: f"<html>{path.name}</html>")  # fast: no nbconvert
    monkeypatch.setattr(site, "build", functools.partial(site.build, source=chapters))
    code, _, err = _main(["site", "build", str(tmp_path / "book")])
    assert code == 2 and err.count("\n") == 1 and f"cannot make a page of {guide}: 'utf-8' codec can't decode" in err


# ---------------------------------------------------------------- prompts: malformed metadata, hostile words


def _prompted(word: str = "lanes", answer: str = "86% of lanes useful") -> nbformat.NotebookNode:
    """A small chapter: a prompt, then the code cell that answers it, showing `answer`; `word` its verdict."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(prompts.PROMPT + "run the next cell:** how many lanes?"),
                nbformat.v4.new_code_cell("y", outputs=[nbformat.v4.new_output("stream", text=answer)])]
    nb.cells[0].metadata["prompt"] = {"answers": [nb.cells[1].id], "words": [word]}
    return nb


def _set(path: str, value: object) -> Callable[[Any], None]:
    """A change to a notebook: the item at `path` (keys and indices, '/'-separated) set to `value`."""
    *keys, last = [int(k) if k.isdigit() else k for k in path.split("/")]

    def change(nb: Any) -> None:
        for key in keys:
            nb = nb[key]
        nb[last] = value
    return change


@pytest.mark.parametrize(("change", "said"), [
    (_set("cells", None), "its cells are NoneType, not a list"),
    (lambda nb: nb["cells"].append(5), "cell 2: it is int, not an object"),
    (_set("cells/0/metadata", ["prompt"]), "cell 0: its metadata is list"),
    (_set("cells/0/metadata/prompt/answers", [["b"]]), "does not name its answers"),
    (_set("cells/0/metadata/prompt/answers", "b"), "answers ['b'] are not ids of code cells after the prompt"),
    (_set("cells/0/metadata/prompt/context", [["b"]]), "context must be non-empty strings"),
    (_set("cells/0/metadata/prompt/words", [5]), "words must be non-empty strings"),
    (_set("cells/0/source", 5), "cell 0: its source is int"),
    (_set("cells/1/outputs", None), "cell 1: a code cell's outputs must be a list"),
    (_set("cells/0/metadata/prompt/context", ["nowhere"]), "context ['nowhere'] are not ids of cells above"),
    (_set("cells/1/outputs/0/text", 5), "it is not a valid notebook"),
], ids=["cells None", "a cell a number", "metadata a list", "answers [['b']]", "answers a string", "context [['b']]",
        "words a number", "source a number", "outputs None", "context no cell", "text a number"])
def test_a_malformed_prompt_is_one_line_from_problems_and_a_prompt_error_from_prompts(change, said) -> None:
    nb = _prompted()
    change(nb)
    (line,) = prompts.problems(nb)
    assert said in line and "\n" not in line, line
    with pytest.raises(prompts.PromptError, match=re.escape(said)):
        prompts.prompts(nb)


@pytest.mark.parametrize("word", ["(a+)+$", "(a|aa)+$", "(a|a)*b"])
def test_a_verdict_word_is_read_as_text_so_a_pattern_that_would_backtrack_cannot_hang_the_check(word) -> None:
    """In a fresh interpreter, so that a search which never ends fails this test instead of hanging the suite."""
    script = ("import json, sys; sys.path.insert(0, 'tests'); import test_hostile_3 as t; "
              "from helpers.learning import prompts; "
              f"print(json.dumps(prompts.problems(t._prompted({word!r}, 'a' * 40 + '!'))))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_SECONDS)
    assert done.returncode == 0, done.stderr
    lines = json.loads(done.stdout.strip().splitlines()[-1])
    assert lines[0] == f"cell 0: no answer prints the verdict word {word!r} (in the stored outputs)", lines


# ---------------------------------------------------------------- output paths: checked before the work


@pytest.mark.parametrize("argv", [
    ["gpu-report", "--json", "{package}/kernels/sgemm.cu"],
    ["bench", "--quick", "--json", "{package}/data/published-measurements.json"],
    ["bench", "--quick", "--html", "{package}/new-page.html"],
    ["classroom", "merge", "x.json", "--html", "{package}/__init__.py"],
], ids=["gpu-report over a kernel it runs", "bench over the package's data", "bench into the package",
        "merge over the package's code"])
def test_no_output_goes_into_the_package_it_reads(argv) -> None:
    package = ROOT / "helpers"
    before = {p: p.read_bytes() for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    code, out, err = _main([a.format(package=package) for a in argv])
    assert code == 2 and not out and err.count("\n") == 1, err
    assert "it is inside the helpers package" in err
    assert {p: p.read_bytes() for p in before} == before and not (package / "new-page.html").exists()


@pytest.mark.parametrize("name", ["README.md", f"notebooks/{CHAPTERS[0].file}", "pyproject.toml"])
def test_no_output_replaces_a_file_of_the_repository(name) -> None:
    before = (ROOT / name).read_bytes()
    code, _, err = _main(["bench", "--quick", "--json", str(ROOT / name)])
    assert code == 2 and f"it is a file of the repository ({name}), not an earlier output" in err, err
    assert (ROOT / name).read_bytes() == before


def test_no_output_replaces_what_earlier_runs_measured(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    kept = tmp_path / "loops-to-tpus" / "cpu-peak.json"
    kept.parent.mkdir()
    kept.write_text("{}")
    code, _, err = _main(["gpu-report", "--json", str(kept)])
    assert code == 2 and "it is in the series' cache" in err and kept.read_text() == "{}"


def test_an_output_replaces_its_file_and_changes_no_other_name_of_it(tmp_path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("the learner's own")
    os.link(kept, tmp_path / "out.json")
    files.write_output(tmp_path / "out.json", "new")
    assert (tmp_path / "out.json").read_text() == "new" and kept.read_text() == "the learner's own"


def test_hand_outs_are_never_written_into_the_package() -> None:
    code, _, err = _main(["classroom", "copies", str(ROOT / "helpers" / "handouts"), "--force"])
    assert code == 2 and "is inside the helpers package" in err and not (ROOT / "helpers" / "handouts").exists()


@pytest.mark.parametrize("call", [lambda: make_it_fast.chapter_gpu(None), lambda: make_it_fast.device_spec("T4"),
                                  lambda: make_it_fast.measure(None, make_it_fast.rung(2), 64, None)],
                         ids=["chapter_gpu", "device_spec", "measure"])
def test_the_chapter_gpu_must_be_what_cuda_gpu_gives(call) -> None:
    with pytest.raises(TypeError, match=r"gpu must be what h.cuda.gpu\(\) gives"):
        call()
