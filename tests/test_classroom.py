"""python -m helpers classroom: learner copies of the chapters, and a class's bench results in one page."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import nbformat
import pytest

from helpers import classroom
from helpers.__main__ import main
from helpers.project import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- learner copies


def test_a_copy_clears_the_answers_after_each_prompt_and_every_measurement_and_keeps_the_rest(tmp_path) -> None:
    code, out, _ = _main(["classroom", "copies", str(tmp_path / "class")])
    assert code == 0 and "wrote 7 learner copies" in out
    for chapter in CHAPTERS:
        stored = nbformat.read(ROOT / "notebooks" / chapter.file, as_version=4)
        copy = nbformat.read(tmp_path / "class" / chapter.file, as_version=4)
        assert [c.source for c in copy.cells] == [c.source for c in stored.cells]  # exercises, solutions, set-up
        answering = False  # after a prompt, until the next text
        for index, (mine, theirs) in enumerate(zip(copy.cells, stored.cells, strict=True)):
            if theirs.cell_type == "markdown":
                answering = classroom.PROMPT in theirs.source
            if theirs.cell_type != "code":
                continue
            prompt = answering
            measured = classroom.MEASURED_TAG in theirs.metadata.get("tags", [])
            if prompt or measured:
                assert mine.outputs == [] and mine.execution_count is None, (chapter.file, index)
            else:
                assert mine.outputs == theirs.outputs, (chapter.file, index)
    prompts = sum(classroom.PROMPT in c.source for ch in CHAPTERS
                  for c in nbformat.read(ROOT / "notebooks" / ch.file, as_version=4).cells)
    assert prompts >= 40  # the test looked at every chapter's prompts


def test_copies_are_the_same_every_time_and_zipped(tmp_path) -> None:
    first = classroom.write_copies(tmp_path / "a")
    second = classroom.write_copies(tmp_path / "a", force=True)
    other = classroom.write_copies(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second] == [p.read_bytes() for p in other]
    import zipfile

    with zipfile.ZipFile(first[-1]) as z:
        assert sorted(z.namelist()) == sorted(f"loops-to-tpus/{c.file}" for c in CHAPTERS)


def test_copies_refuse_the_series_own_notebooks_a_full_folder_and_a_clone_without_notebooks(tmp_path) -> None:
    code, _, err = _main(["classroom", "copies", str(ROOT / "notebooks")])
    assert code == 2 and "is the series' own notebooks folder" in err and err.count("\n") == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep me")
    code, _, err = _main(["classroom", "copies", str(tmp_path / "full")])
    assert code == 2 and "is not empty: add --force" in err
    assert (tmp_path / "full" / "mine.txt").read_text() == "keep me"
    with pytest.raises(classroom.ClassroomError, match="notebooks not found in .*: 00_start_here.ipynb"):
        classroom.write_copies(tmp_path / "out", source=tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    assert _main(["classroom", "copies", str(tmp_path / "file")])[0] == 2


# ---------------------------------------------------------------- class results


@pytest.fixture(scope="module")
def bench_json(tmp_path_factory) -> Path:
    """One real `bench --json` file, from a quick in-process run named 'Ada's laptop'."""
    path = tmp_path_factory.mktemp("bench") / "ada.json"
    code, _, _ = _main(["bench", "--quick", "--size", "64", "--budget", "0.02", "--backends", "numpy",
                        "--name", "Ada's laptop", "--json", str(path)])
    assert code == 0
    return path


def test_bench_writes_the_machines_name(bench_json) -> None:
    assert json.loads(bench_json.read_text())["name"] == "Ada's laptop"


def test_merge_puts_every_machine_in_one_offline_page_and_skips_what_it_cannot_use(bench_json, tmp_path) -> None:
    other = json.loads(bench_json.read_text())
    other["name"] = "Colab T4"
    for r in other["results"]:
        r["gflops"] = r["gflops"] * 10
    (tmp_path / "t4.json").write_text(json.dumps(other))
    (tmp_path / "notes.json").write_text('{"todo": [1, 2]}')
    (tmp_path / "broken.json").write_text("{")
    page = tmp_path / "class.html"
    code, out, err = _main(["classroom", "merge", str(bench_json), str(tmp_path / "t4.json"),
                            str(tmp_path / "notes.json"), str(tmp_path / "broken.json"), str(tmp_path / "gone.json"),
                            "--html", str(page)])
    assert code == 0 and "2 machine(s), 3 file(s) skipped" in out
    assert err.count("\n") == 3 and "notes.json: it is not a bench --json file" in err
    assert "broken.json: it is not JSON" in err and "gone.json: cannot read it" in err
    html = page.read_text()
    assert "Ada&#x27;s laptop" in html and "Colab T4" in html
    assert "plotly.js v" in html and not re.search(r"<script[^>]+src=", html)  # inlined: nothing to fetch
    assert html.count("Plotly.newPlot") == 3  # the bars, and one roofline per machine


def test_two_machines_of_one_name_are_told_apart(bench_json) -> None:
    machines, skipped = classroom.read_machines([bench_json, bench_json])
    assert [m.name for m in machines] == ["Ada's laptop #1", "Ada's laptop #2"] and not skipped


def test_merge_without_one_usable_file_is_one_line_and_exit_2(tmp_path) -> None:
    (tmp_path / "x.json").write_text("[]")
    code, _, err = _main(["classroom", "merge", str(tmp_path / "x.json"), "--html", str(tmp_path / "c.html")])
    assert code == 2 and err.splitlines()[-1].endswith("none of the files is a bench --json file; nothing to show")
    assert not (tmp_path / "c.html").exists()
    assert _main(["classroom", "merge", str(tmp_path / "x.json")])[0] == 2  # --html is required
    assert _main(["classroom"])[0] == 2


@pytest.mark.parametrize("results", [[], [{"op": "matmul"}], [{"op": "matmul", "backend": "numpy", "n": 8,
                                                                "dtype": "float32", "median_s": "fast",
                                                                "gflops": 1.0}]])
def test_a_file_without_usable_results_says_so(tmp_path, results) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"hardware": {}, "results": results}))
    with pytest.raises(ValueError, match="it holds no results with op, backend, n, dtype, median_s and gflops"):
        classroom.read_machine(path)
