"""python -m helpers classroom: learner copies of the chapters, and a class's bench results in one page."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import threading
from pathlib import Path

import nbformat
import pytest

from helpers.__main__ import PROG, main
from helpers.book import classroom
from helpers.core.project import CHAPTERS
from helpers.learning import prompts

ROOT = Path(__file__).resolve().parents[1]


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- learner copies


def test_a_copy_clears_each_prompt_to_its_last_answer_and_every_measurement_and_keeps_the_rest(tmp_path) -> None:
    code, out, _ = _main(["classroom", "copies", str(tmp_path / "class")])
    assert code == 0 and f"wrote {len(CHAPTERS)} learner copies" in out
    count = 0
    for chapter in CHAPTERS:
        stored = nbformat.read(ROOT / "notebooks" / chapter.file, as_version=4)
        copy = nbformat.read(tmp_path / "class" / chapter.file, as_version=4)
        assert [c.source for c in copy.cells] == [c.source for c in stored.cells]  # exercises, solutions, set-up
        spans = [(p.index, p.last) for p in prompts.prompts(stored)]
        count += len(spans)
        for index, (mine, theirs) in enumerate(zip(copy.cells, stored.cells, strict=True)):
            if theirs.cell_type != "code":
                continue
            answering = any(first < index <= last for first, last in spans)
            measured = classroom.MEASURED_TAG in theirs.metadata.get("tags", [])
            if answering or measured:
                assert mine.outputs == [] and mine.execution_count is None, (chapter.file, index)
            else:
                assert mine.outputs == theirs.outputs, (chapter.file, index)
    assert count >= 40  # the test looked at every chapter's prompts


def test_a_copy_clears_every_cell_up_to_a_later_answer_even_past_text() -> None:
    nb = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_output("stream", text="42\n")
    nb.cells = [nbformat.v4.new_code_cell("before", outputs=[shown]),
                nbformat.v4.new_markdown_cell(prompts.PROMPT + ":** guess."),
                nbformat.v4.new_code_cell("setup", outputs=[shown]),
                nbformat.v4.new_markdown_cell("Some text between."),
                nbformat.v4.new_code_cell("answer", outputs=[shown]),
                nbformat.v4.new_code_cell("after", outputs=[shown])]
    nb.cells[1].metadata["prompt"] = {"answers": [nb.cells[4].id]}
    copy = classroom.learner_copy(nb)
    assert [bool(c.get("outputs")) for c in copy.cells if c.cell_type == "code"] == [True, False, False, True]
    del nb.cells[1].metadata["prompt"]
    with pytest.raises(classroom.ClassroomError, match="does not name its answers"):
        classroom.learner_copy(nb)


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


@pytest.mark.parametrize(("results", "why"), [
    ([], "it holds no results with op, backend, n, dtype, median_s and gflops"),
    ([{"op": "matmul"}], "results[0] has no 'backend'"),
    ([{"op": "matmul", "backend": "numpy", "n": 8, "dtype": "float32", "median_s": "fast", "gflops": 1.0}],
     "results[0].median_s is 'fast', not a number >= 0")])
def test_a_file_without_usable_results_says_so(tmp_path, results, why) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"hardware": {}, "results": results}))
    with pytest.raises(ValueError, match=re.escape(why)):
        classroom.read_machine(path)


# ---------------------------------------------------------------- files that are not what they seem


@pytest.mark.parametrize("page", ["the same path", "another spelling", "a hard link"])
def test_merge_never_writes_its_page_over_one_of_its_inputs(bench_json, tmp_path, page) -> None:
    victim = tmp_path / "victim.json"
    victim.write_bytes(bench_json.read_bytes())
    (tmp_path / "sub").mkdir()
    html = {"the same path": str(victim), "another spelling": f"{tmp_path}/sub/../victim.json",
            "a hard link": str(tmp_path / "class.html")}[page]
    if page == "a hard link":
        os.link(victim, html)
    code, out, err = _main(["classroom", "merge", str(bench_json), str(victim), "--html", html])
    assert code == 2 and not out and err.count("\n") == 1
    assert err == (f"{PROG} classroom merge: error: --html {html!r} is the input file {str(victim)!r}: "
                   "give the page a path of its own (the FILEs are only read)\n")
    assert victim.read_bytes() == bench_json.read_bytes()


@pytest.mark.parametrize("leads_to", ["a notebook", "nothing yet"])
def test_merge_never_writes_its_page_through_a_symbolic_link(bench_json, tmp_path, leads_to) -> None:
    notebooks = tmp_path / "repo" / "notebooks"  # a repository-like tree: the real notebooks are never touched
    notebooks.mkdir(parents=True)
    (notebooks / "00_start_here.ipynb").write_text('{"cells": []}')
    target = notebooks / ("00_start_here.ipynb" if leads_to == "a notebook" else "new.html")
    (tmp_path / "class.html").symlink_to(target)
    code, out, err = _main(["classroom", "merge", str(bench_json), "--html", str(tmp_path / "class.html")])
    assert code == 2 and not out and err.count("\n") == 1
    assert err.endswith(f"error: argument --html: {str(tmp_path / 'class.html')!r} is a symbolic link (to "
                        f"{str(target)!r}); give the file's own path: a link is not written through\n")
    assert sorted(p.name for p in notebooks.iterdir()) == ["00_start_here.ipynb"]
    assert (notebooks / "00_start_here.ipynb").read_text() == '{"cells": []}'


def test_merge_replaces_a_page_that_is_a_second_name_of_another_file(bench_json, tmp_path) -> None:
    (tmp_path / "notebook.ipynb").write_text("keep me")
    os.link(tmp_path / "notebook.ipynb", tmp_path / "class.html")
    code, _, _ = _main(["classroom", "merge", str(bench_json), "--html", str(tmp_path / "class.html")])
    assert code == 0 and (tmp_path / "notebook.ipynb").read_text() == "keep me"
    assert (tmp_path / "class.html").read_text().startswith("<!DOCTYPE html>")


def _changed(data: dict, where: tuple, value: object) -> dict:
    """A deep copy of `data` with the field at `where` (keys and indices) set to `value`."""
    data = json.loads(json.dumps(data))
    *parents, last = where
    holder = data
    for key in parents:
        holder = holder[key]
    holder[last] = value
    return data


WRONG_KINDS = [
    (("results", 0, "op"), {"x": 1}, "results[0].op is {'x': 1}, not a string"),
    (("results", 0, "backend"), ["numpy"], "results[0].backend is ['numpy'], not a string"),
    (("results", 0, "n"), "64", "results[0].n is '64', not a whole number from 1 to 2**53"),
    (("results", 0, "n"), 2**60, "results[0].n is 1152921504606846976, not a whole number from 1 to 2**53"),
    (("results", 0, "median_s"), 10**400, "results[0].median_s is 100000000000000000...0000000000000000000, not a "
                                          "number >= 0"),
    (("results", 0, "gflops"), True, "results[0].gflops is True, not a number >= 0 or null"),
    (("results", 0, "gbps"), "fast", "results[0].gbps is 'fast', not a number >= 0 or null"),
    (("results", 1), [1], "results[1] is [1], not an object"),
    (("name",), 5, "name is 5, not a string or null"),
    (("hardware", "cpu_model"), {"a": [[[[1]]]]}, "hardware.cpu_model is {'a': [[[...]]]}, not a string or null"),
    (("hardware", "peak_fp32"), -1.0, "hardware.peak_fp32 is -1.0, not a number >= 0 or null"),
    (("hardware", "accelerators"), 5, "hardware.accelerators is 5, not a list or null"),
    (("hardware", "accelerators"), ["T4"], "hardware.accelerators[0] is 'T4', not an object"),
    (("hardware", "accelerators"), [{"name": "T4", "peak_flops": {"fp32": "many"}, "peak_bandwidth": 3e11}],
     "hardware.accelerators[0].peak_flops is {'fp32': 'many'}, not an object of numbers >= 0 or null")]


@pytest.mark.parametrize(("where", "value", "why"), WRONG_KINDS, ids=[why.split(" ")[0] for *_, why in WRONG_KINDS])
def test_merge_names_and_skips_a_file_with_a_field_of_the_wrong_kind(bench_json, tmp_path, where, value, why) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_changed(json.loads(bench_json.read_text()), where, value)))
    code, out, err = _main(["classroom", "merge", str(bench_json), str(bad), "--html", str(tmp_path / "c.html")])
    assert code == 0 and "1 machine(s), 1 file(s) skipped" in out
    assert err == f"{PROG} classroom merge: skipped {bad}: {why}\n"


@pytest.mark.parametrize(("text", "why"), [
    ("[" * 100_000 + "]" * 100_000, "it is nested too deeply to be a bench --json file"),
    ('{"hardware": {}, "results": [' + "9" * 5000 + "]}",
     "it holds a number of thousands of digits: not a bench --json file")])
def test_merge_names_and_skips_a_file_python_cannot_parse(tmp_path, text, why) -> None:
    (tmp_path / "odd.json").write_text(text)
    assert classroom.read_machines([tmp_path / "odd.json"]) == ([], [f"skipped {tmp_path / 'odd.json'}: {why}"])


def test_merge_skips_a_file_too_large_for_a_bench_file_unread(tmp_path) -> None:
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate(100_000_000)  # 100 MB (sparse: nothing is written to disk)
    assert classroom.read_machines([tmp_path / "huge.json"]) == ([], [
        f"skipped {tmp_path / 'huge.json'}: it is 100,000,000 bytes, more than the 1,000,000 a bench --json file may "
        "have (one is a few KB)"])


def test_merge_skips_a_named_pipe_nobody_writes_and_a_folder_without_waiting(tmp_path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    found: list = []
    reading = threading.Thread(target=lambda: found.append(classroom.read_machines([tmp_path / "pipe.json",
                                                                                     tmp_path])), daemon=True)
    reading.start()
    reading.join(timeout=30)
    if reading.is_alive():  # it opened the pipe and waits for a writer: give it one, so that the thread ends
        os.close(os.open(tmp_path / "pipe.json", os.O_WRONLY | os.O_NONBLOCK))
    assert found == [([], [f"skipped {tmp_path / 'pipe.json'}: it is a named pipe, not a regular file (what bench "
                           "--json writes); it was not opened",
                           f"skipped {tmp_path}: it is a folder, not a regular file (what bench --json writes); it "
                           "was not opened"])]


def test_merge_still_feeds_a_named_pipe_someone_reads_and_leaves_it_a_pipe(bench_json, tmp_path) -> None:
    os.mkfifo(tmp_path / "page")
    fd = os.open(tmp_path / "page", os.O_RDWR | os.O_NONBLOCK)  # a reader that is there before and after
    os.set_blocking(fd, True)
    received = bytearray()

    def drain() -> None:
        while not received.endswith(b"</html>"):
            received.extend(os.read(fd, 1 << 16))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    code, _, _ = _main(["classroom", "merge", str(bench_json), "--html", str(tmp_path / "page")])
    reader.join(timeout=60)
    os.close(fd)
    assert code == 0 and received.startswith(b"<!DOCTYPE html>") and received.endswith(b"</html>")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "page").st_mode)


# ---------------------------------------------------------------- each machine under its own roofs

RESULT = {"op": "matmul", "backend": "numpy", "n": 512, "dtype": "float32", "median_s": 2e-3, "gflops": 134.0,
          "gbps": 1.57, "fraction_of_peak": 0.42}
T4 = {"kind": "gpu", "name": "Tesla T4", "peak_flops": {"float32": 8.1e12, "float16": 6.5e13},
      "peak_bandwidth": 3.2e11, "source": "NVIDIA T4 datasheet"}
HARDWARE = {"cpu_model": "Test CPU", "peak_fp32": 3.2e11, "peak_formula": "2 cores x 8 lanes x 2 FMA x 2 x 5 GHz",
            "bandwidth": 2e10, "jax_platform": "gpu", "accelerators": [T4]}
RESULTS = [RESULT, {**RESULT, "backend": "loops", "n": 64, "gflops": 0.01, "gbps": 1e-4},
           {**RESULT, "backend": "cupy", "gflops": 4000.0, "gbps": 47.0},
           {**RESULT, "backend": "jax", "gflops": 3500.0, "gbps": 41.0}]


def _points(fig) -> dict[str, list[str]]:
    """The measured points of a plots.roofline figure: backend -> the points' labels."""
    return {t.name.removeprefix("measured: "): list(t.text) for t in fig.data if t.name.startswith("measured: ")}


def test_each_device_gets_the_series_roofline_with_the_points_that_ran_on_it() -> None:
    cpu, gpu = classroom.roofline_figures(classroom.Machine("Colab T4", HARDWARE, RESULTS))
    assert cpu.layout.title.text == "Colab T4: CPU: Test CPU" and gpu.layout.title.text == "Colab T4: Tesla T4"
    assert _points(cpu) == {"numpy": ["matmul numpy"], "loops": ["matmul loops"]}
    assert _points(gpu) == {"cupy": ["matmul cupy"], "jax": ["matmul jax"]}  # JAX ran where its platform was
    gpu_roofs = [t.name for t in gpu.data if t.mode == "lines"]
    assert gpu_roofs == ["memory 320 GB/s (published)", "fp16 peak 65 TFLOP/s (published)",
                         "fp32 peak 8.1 TFLOP/s (published)"]  # one roof per published dtype, from the file
    assert [t.name for t in cpu.data if t.mode == "lines"][1] == "peak 320 GFLOP/s (estimated)"
    assert "peak: estimated: 2 cores x 8 lanes" in cpu.layout.annotations[0].text
    point = next(t for t in gpu.data if t.name == "measured: cupy")
    assert point.x[0] == pytest.approx(4000 / 47) and point.y[0] == pytest.approx(4000)


def test_jax_on_the_cpu_and_a_device_without_roofs_on_file() -> None:
    hardware = {**HARDWARE, "jax_platform": "cpu", "accelerators": [{**T4, "peak_flops": None}]}
    (cpu,) = classroom.roofline_figures(classroom.Machine("laptop", hardware, RESULTS))
    assert _points(cpu) == {"numpy": ["matmul numpy"], "loops": ["matmul loops"], "jax": ["matmul jax"]}
    assert classroom.roofline_figures(classroom.Machine("bare", {"peak_fp32": None}, RESULTS)) == []


@pytest.mark.parametrize(("field", "value"), [("gflops", 5e-324), ("gflops", 1.7e308), ("gbps", 5e-324),
                                              ("median_s", 1e-320), ("gbps", 0)])
def test_a_point_too_small_or_large_to_draw_is_left_off_its_roofline(field, value) -> None:
    results = [{**RESULT, field: value}, {**RESULT, "op": "axpby"}]
    (cpu,) = classroom.roofline_figures(classroom.Machine("odd", {**HARDWARE, "accelerators": []}, results))
    assert _points(cpu) == {"numpy": ["axpby numpy"]}


def test_the_table_shows_times_and_fractions_as_timing_formats_them() -> None:
    page = classroom.class_page([classroom.Machine("Ada", HARDWARE, [{**RESULT, "fraction_of_peak": 1.34e-4}])])
    assert "<td>2 ms</td>" in page and "<td>134</td>" in page and "<td>0.0134%</td>" in page
