"""Every recorded run (docs/runs/): how it was made, small, without machine paths, and held to helpers.book.run_checks,
its known findings listed beside it by issue item; each rule on small planted notebooks; the record command.

A recorded run keeps what the chapters printed on that day: the H200 runs of commit 8569a29 print the mistakes
issue 36 lists (items 1 to 4), and the checks must find exactly those until the runs are recorded again.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.__main__ import main as cli
from helpers.book import records, report_case, run_checks, upkeep
from helpers.core import project
from helpers.learning import claims

ROOT = Path(__file__).resolve().parents[1]
RUNS = records.runs()
CHAPTER_RUNS = [(run, chapter) for run in RUNS for chapter in run.chapters()]
FIRST = ROOT / "docs" / "runs" / "nvidia-h200-2026-11-28"


def _ids(value: object) -> str:
    return value.folder.name if isinstance(value, records.Run) else str(value)


# ---------------------------------------------------------------- the stored runs


def test_there_is_a_recorded_run_and_the_readme_names_each_one_by_device_and_date() -> None:
    assert RUNS, "docs/runs/ holds no recorded run"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for run in RUNS:
        assert f"docs/runs/{run.folder.name}" in readme and run.device in readme, run.folder.name
    assert "python -m helpers notebooks record" in readme


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_a_run_says_on_what_when_and_how_it_was_made(run: records.Run) -> None:
    facts = run.facts
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", run.date) and run.folder.name == f"{records.slug(run.device)}-{run.date}"
    assert facts["device"]["kind"] in ("GPU", "TPU", "GPU/TPU") and facts["made_by"]
    assert re.fullmatch(r"[0-9a-f]{7,40}", facts["commit"]), facts["commit"]
    assert list(facts["chapters"]) == run.chapters(), "run.json lists the chapters the folder holds"
    assert all(set(chapter.uses) & set(facts["device"]["kind"].split("/")) for chapter in project.CHAPTERS
               if chapter.file in facts["chapters"]), "a run holds only chapters that use its accelerator"
    assert (run.folder / "README.md").read_text(encoding="utf-8") == records.readme(facts), \
        "README.md is written from run.json (records.readme)"


@pytest.mark.parametrize(("run", "chapter"), CHAPTER_RUNS, ids=_ids)
def test_a_recorded_chapter_is_small_valid_and_carries_no_machine_path(run: records.Run, chapter: str) -> None:
    path = run.folder / chapter
    assert path.stat().st_size < records.RUN_LIMIT, f"{path.name}: {path.stat().st_size:,} bytes"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    text = path.read_text(encoding="utf-8")
    assert not records.MACHINE_TRACES.search(text), records.MACHINE_TRACES.search(text).group(0)
    assert upkeep.dumps(nb) == text, "stored as nbformat writes it (records.store)"


@pytest.mark.parametrize("run", RUNS, ids=_ids)
def test_the_checks_find_exactly_the_known_findings_of_each_run(run: records.Run) -> None:
    for entry in run.known():
        assert entry["rule"] in run_checks.RULES and re.fullmatch(r"issue \d+, item \d+", entry["item"]), entry
    new, gone = records.compare(run)
    assert not new, (f"{run.folder.name}: new findings (fix the chapter and record it again, or list each in "
                     f"{records.FINDINGS} with its issue item):\n" + "\n".join(new))
    assert not gone, f"{run.folder.name}: update {records.FINDINGS}:\n" + "\n".join(gone)


def _found(chapter: str) -> list[run_checks.Finding]:
    run = next(run for run in RUNS if run.folder == FIRST)
    return run_checks.findings(nbformat.read(FIRST / chapter, as_version=4).cells, run.devices())


def test_the_h200_runs_of_8569a29_show_items_1_to_4_of_issue_36_and_nothing_else() -> None:
    """Found by the rules, not only listed: each item where the issue says it is."""
    ch03, ch05 = _found("03_gpu_cupy.ipynb"), _found("05_training.ipynb")
    assert [(f.cell, f.rule) for f in ch03] == [(19, "factor"), (69, "bound-beaten"), (107, "factor")]
    assert "1x too small" in ch03[0].text and ch03[1].text.startswith("naive kernel:") and "at most 1,200" in \
        ch03[1].text and "5,175 GFLOP/s" in ch03[1].why
    claimed = [f.text for f in ch05 if f.rule == "prediction-claimed"]
    assert [f.cell for f in ch05 if f.rule == "prediction-claimed"] == [49, 49, 49]
    assert any("one jit per epoch predicts no faster epoch than jit per step" in text for text in claimed)
    raced = {(f.cell, f.text) for f in ch05 if f.rule == "prediction-raced"}
    for cell, measure in ((58, "hidden"), (61, "batch")):
        assert (cell, f"CuPy on the NVIDIA H200 (prediction) beats CuPy here from the smallest {measure} measured, "
                      "16") in raced
    assert {f.cell for f in ch05} == {49, 58, 61, 86}
    assert not _found("06_when_to_use_which.ipynb") and not _found("07_make_it_fast.ipynb")
    items = {(k["chapter"][:2], k["cell"]): k["item"] for k in records.runs()[0].known()}
    assert items[("03", 19)] == "issue 36, item 1" and items[("03", 69)] == "issue 36, item 2"
    assert items[("05", 49)] == "issue 36, item 3" and items[("05", 58)] == items[("05", 61)] == "issue 36, item 4"


def test_the_h200_runs_keep_only_warnings_listed_with_why() -> None:
    printed = "".join(o.get("text", "") for chapter in FIRST.glob("*.ipynb")
                      for cell in nbformat.read(chapter, as_version=4).cells for o in cell.get("outputs", [])
                      if o.get("name") == "stderr")
    assert {"NoisyTimingWarning", "BusyMachineWarning"} == set(re.findall(r"\b(\w+Warning):", printed))
    assert set(run_checks.ALLOWED_WARNINGS) == {"NoisyTimingWarning", "BusyMachineWarning"}


def test_a_finding_not_listed_and_a_listed_one_gone_both_fail(tmp_path: Path) -> None:
    copy = tmp_path / FIRST.name
    shutil.copytree(FIRST, copy)
    known = json.loads((copy / records.FINDINGS).read_text(encoding="utf-8"))
    dropped = known["findings"].pop(0)
    known["findings"].append({**dropped, "cell": 3, "text": "a finding no rule makes"})
    (copy / records.FINDINGS).write_text(json.dumps(known), encoding="utf-8")
    new, gone = records.compare(records.runs(tmp_path)[0])
    assert len(new) == 1 and new[0].startswith("cell 19: factor: ") and "The naive number is 1x too small" in new[0]
    assert '"item": "issue N, item M"' in new[0]
    assert gone == [f"{dropped['chapter']} cell 3: factor: 'a finding no rule makes' is listed in findings.json but "
                    "no longer found"]


def test_a_run_folder_with_a_broken_run_json_is_named(tmp_path: Path) -> None:
    (tmp_path / "x-2030-01-01").mkdir()
    (tmp_path / "x-2030-01-01" / "run.json").write_text('{"kind": "something else"}')
    with pytest.raises(ValueError, match=r"x-2030-01-01/run.json: not a version 1 recorded run"):
        records.runs(tmp_path)


# ---------------------------------------------------------------- each rule, on planted notebooks


def _cell(*texts: str, stderr: str = "", claims_made: tuple[tuple[str, bool], ...] = ()) -> nbformat.NotebookNode:
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in texts]
    outputs += [nbformat.v4.new_output("stream", name="stderr", text=stderr)] if stderr else []
    outputs += [nbformat.v4.new_output("display_data", data={"text/plain": f"{s}: {h}"},
                                       metadata={claims.CLAIM_KEY: {"statement": s, "holds": h}})
                for s, h in claims_made]
    return nbformat.v4.new_code_cell("pass", outputs=outputs)


def _rules(cell: nbformat.NotebookNode, devices: tuple[str, ...] = ()) -> list[str]:
    return [f.rule for f in run_checks.findings([nbformat.v4.new_markdown_cell("x"), cell], devices)]


def test_the_problem_rule_is_claims_problems() -> None:
    assert _rules(_cell(claims_made=(("loops and NumPy agree", False),))) == ["problem"]
    assert _rules(_cell(claims_made=(("loops and NumPy agree", True),))) == []
    error = nbformat.v4.new_code_cell("1/0", outputs=[nbformat.v4.new_output("error", ename="ZeroDivisionError",
                                                                             evalue="division by zero")])
    assert _rules(error) == ["problem"]


def test_a_warning_fails_unless_listed_with_why() -> None:
    noisy = "<cell>:3: NoisyTimingWarning: t: the middle half of the samples spread over 40%\n  x = 1\n"
    assert _rules(_cell(stderr=noisy)) == []
    assert _rules(_cell(stderr="lib/x.py:9: RuntimeWarning: overflow encountered in exp\n")) == ["warning"]
    assert _rules(_cell("x.py:9: UserWarning: printed, not warned\n")) == []  # a warning is what goes to stderr


@pytest.mark.parametrize(("line", "flagged"), [
    ("matmul 4096 [cupy]: 71,000 GFLOP/s, 105.9% of peak", True),
    ("axpby: 5,100 GB/s, 106% of the roof", True),
    ("matmul 4096 [cupy]: 67,000 GFLOP/s, 100.0% of the float32 peak", False),
    ("Taken at face value it would mean 17,270 GFLOP/s, 2646% of this device's peak.", False),
    ("without waiting (wrong): 15.5 µs per call = 2648.9% of the peak of CPU (2 cores)", False),
    ("the loop took 250% of the scan's time", False),
])
def test_no_share_of_a_peak_or_roof_above_100_percent(line: str, flagged: bool) -> None:
    assert _rules(_cell(line + "\n")) == (["over-peak"] if flagged else [])


SIDE_BY_SIDE = ("                        predicted, NVIDIA H200         measured, NVIDIA H200  measured/predicted\n"
                "naive kernel, n = 2,048               17.9 ms                       {naive}               0.19x\n"
                "cuBLAS (a @ b), n = 2,048              347 µs                        374 µs               1.08x\n"
                "naive kernel: 0.25 FLOP/byte from main memory -> at most 1,200 GFLOP/s on the NVIDIA H200 "
                "(roofline prediction)\n")


@pytest.mark.parametrize(("naive", "flagged"), [("3.32 ms", True), ("14.5 ms", False), ("13.9 ms", True)])
def test_a_matmul_measured_faster_than_the_at_most_printed_for_it_is_found(naive: str, flagged: bool) -> None:
    """2 x 2048^3 FLOPs over 1,200 GFLOP/s is 14.3 ms: a kernel measured faster beats its own 'at most'."""
    found = run_checks.findings([_cell(SIDE_BY_SIDE.format(naive=naive))])
    assert [f.rule for f in found] == (["bound-beaten"] if flagged else [])
    if flagged:
        assert found[0].text.startswith("naive kernel: 0.25 FLOP/byte") and "over the bound of 1,200" in found[0].why


def test_a_printed_measured_rate_above_the_bound_for_the_same_thing_is_found() -> None:
    bound = ("matmul 4096 on the NVIDIA H200:\n  roofline bound from published specs: at most 67,000 GFLOP/s, an "
             "upper limit\n")
    assert _rules(_cell("matmul 4096 [cupy, measured]: 70,113.0 GFLOP/s, 70.5 GB/s\n", bound)) == ["bound-beaten"]
    assert _rules(_cell("matmul 4096 [cupy, measured]: 48,113.0 GFLOP/s, 70.5 GB/s\n", bound)) == []
    assert _rules(_cell("matmul 512 [numpy, measured]: 70,113.0 GFLOP/s\n", bound)) == []  # another subject
    assert _rules(_cell("matmul 4096 [cupy, measured]: 70,113.0 GFLOP/s\n"), ) == []  # no bound printed
    assert _rules(_cell(SIDE_BY_SIDE.format(naive="3.32 ms").replace("cuBLAS (a @ b)", "library"))) == [], \
        "without a matrix product named, a row's FLOPs are not known: nothing is claimed"


@pytest.mark.parametrize(("text", "flagged"), [
    ("no sync: 109 µs per call\nsynced: 72.1 µs per call\nThe naive number is 1x too small.\n", True),
    ("no sync: 15.5 µs per call\nsynced: 603 µs per call\nThe naive number is 39x too small.\n", False),
    ("no sync: 15.5 µs per call\nsynced: 603 µs per call\nThe naive number is 12x too small.\n", True),
    ("no sync: 20 µs\nsynced: 30 µs\nThe naive number is 1.5x too small.\n", False),
    ("no sync: 20 µs\nsynced: 30 µs\nThe naive number is 0.67x too small.\n", True),
    ("a clock without sync read 39x too little (JAX matmul on this CPU)\n", False),
    ("a clock without sync read 1x too little\n", True),
    ("3 times: 1 ms, 2 ms, 9 ms; one is 39x too small\n", False),  # which two? not judged
])
def test_a_factor_too_small_must_agree_with_the_two_times_it_compares(text: str, flagged: bool) -> None:
    assert _rules(_cell(text)) == (["factor"] if flagged else [])


H200 = ("NVIDIA H200",)


@pytest.mark.parametrize(("line", "devices", "flagged"), [
    ("  CuPy on the NVIDIA H200 (prediction) beats CuPy here from the smallest hidden measured, 16", H200, True),
    ("  CuPy on the NVIDIA H200 (prediction) beats NumPy here from between batch 16 and 64", H200, True),
    ("  CuPy on the NVIDIA T4 (prediction) beats NumPy here from between batch 16 and 64", H200, False),
    ("  CuPy on the NVIDIA T4 (prediction) beats NumPy here from between batch 16 and 64", (), False),
    ("NVIDIA H200 (predicted): one sample 10.4 µs; beats this CPU from a batch between 1 and 16", H200, True),
    ("CuPy on the NVIDIA H200 (prediction): 15.1 ms per epoch", H200, False),  # a prediction beside nothing
    ("NVIDIA H200 (measured) faster than this CPU from n = 100,000 on", H200, False),
])
def test_a_prediction_for_the_device_here_is_never_raced(line: str, devices: tuple[str, ...], flagged: bool) -> None:
    assert _rules(_cell(line + "\n"), devices) == (["prediction-raced"] if flagged else [])


@pytest.mark.parametrize(("statement", "devices", "flagged"), [
    ("on the NVIDIA H200, one jit per epoch predicts no faster epoch than jit per step", H200, True),
    ("on the NVIDIA H200, fixed costs are most of CuPy's predicted epoch", H200, True),
    ("on the NVIDIA T4, one jit per epoch predicts no faster epoch than jit per step", H200, False),
    ("on the NVIDIA T4, one jit per epoch predicts no faster epoch than jit per step", (), False),
    ("on the NVIDIA H200, the measured epoch is within 2x of the prediction", H200, False),
    ("on the NVIDIA H200, the fused kernel gives NumPy's answer", H200, False),
])
def test_a_claim_about_the_prediction_for_the_device_here_is_found(statement: str, devices: tuple[str, ...],
                                                                  flagged: bool) -> None:
    assert _rules(_cell(claims_made=((statement, True),)), devices) == (["prediction-claimed"] if flagged else [])


def test_findings_name_their_cell_and_the_stored_cpu_chapters_have_none() -> None:
    found = run_checks.findings([nbformat.v4.new_markdown_cell("x"), _cell("1x too small\n")])
    assert str(found[0]).startswith("cell 1: factor: '1x too small': ")
    for chapter in project.CHAPTERS:
        nb = nbformat.read(ROOT / "notebooks" / chapter.file, as_version=4)
        assert run_checks.findings(nb.cells) == [], chapter.file


# ---------------------------------------------------------------- the record command


def test_without_a_gpu_or_tpu_record_says_so_in_one_line_and_exits_2(monkeypatch, capsys, tmp_path) -> None:

    def none_here(purpose: str) -> None:
        raise report_case.NoAccelerator(f"no GPU or TPU here (CuPy: none; JAX runs on the CPU): {purpose}")

    monkeypatch.setattr(report_case, "accelerators", none_here)
    assert records.main([], folder=tmp_path) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "no GPU or TPU here" in err and "records the chapters" in err
    assert list(tmp_path.iterdir()) == []
    assert cli(["notebooks", "record", "--bogus"]) == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


def _chapter_with_an_exercise(root: Path) -> None:
    """A tiny chapter 03: an exercise and its check, a cell that prints this machine's paths and name, a figure
    too large for the repository, and a claim."""
    grid = np.add.outer(np.arange(480), np.arange(640)).astype(np.float32)  # as plotly 6 stores arrays: base64
    big = {"data": [{"type": "heatmap", "z": {"dtype": "f4", "bdata": base64.b64encode(grid.tobytes()).decode(),
                                              "shape": "480, 640"}}], "layout": {"title": {"text": "big"}}}
    cells = [nbformat.v4.new_code_cell("def double(x):\n    raise NotImplementedError",
                                       metadata={"tags": ["exercise"]}),
             nbformat.v4.new_code_cell("print('✅ double: right' if double(2) == 4 else '❌ double: wrong')",
                                       metadata={"tags": ["check"]}),
             nbformat.v4.new_markdown_cell("<details><summary>Solution</summary>\n\n```python\ndef double(x):\n"
                                           "    return 2 * x\n```\n</details>"),
             nbformat.v4.new_code_cell("import os, socket, sys\nprint(os.getcwd(), socket.gethostname(), sys.prefix)"),
             nbformat.v4.new_code_cell(f"from IPython.display import display\ndisplay({{'{upkeep.PLOTLY}': {big!r}}}, "
                                       "raw=True)"),
             nbformat.v4.new_code_cell("import helpers as h\nh.claim('on the NVIDIA H200, the model predicts a win', "
                                       "True)")]
    (root / "notebooks").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), root / "notebooks" / "03_gpu_cupy.ipynb")


def test_record_runs_a_chapter_with_its_solutions_and_stores_it_scrubbed_and_thinned(monkeypatch, capsys,
                                                                                    tmp_path) -> None:
    root = tmp_path / "repo"
    _chapter_with_an_exercise(root)
    monkeypatch.setattr(records, "ROOT", root)
    facts = {"date": "2030-01-02T03:04:05+00:00", "devices": [{"name": "NVIDIA H200", "spec": "NVIDIA H200"}],
             "helpers": {"commit": "0123456789abcdef", "changed": False}, "packages": {"numpy": "2.0"},
             "python": "3.12.0"}
    monkeypatch.setattr(records, "present", lambda: records.Present(("GPU",), "NVIDIA H200", ("NVIDIA H200",), facts))
    runs = root / "docs" / "runs"
    assert records.main(["03_gpu_cupy.ipynb"], folder=runs) == 0
    said = capsys.readouterr().out
    stored = runs / "nvidia-h200-2030-01-02"
    assert "03_gpu_cupy.ipynb: recorded in" in said and "prediction-claimed" in said and records.FINDINGS in said
    nb = nbformat.read(stored / "03_gpu_cupy.ipynb", as_version=4)
    assert "✅ double: right" in nb.cells[1].outputs[0].text, "the exercise ran with its solution filled in"
    printed = nb.cells[3].outputs[0].text
    assert printed.split()[0] == "./notebooks" and printed.split()[2] == "<python>", printed
    assert str(root) not in printed and sys.prefix not in printed
    assert ("<host>" in printed) == (len(socket.gethostname()) >= 3), "a name of 1 or 2 letters is left: too common"
    figure = nb.cells[4].outputs[0].data[upkeep.PLOTLY]
    z = records._array(figure["data"][0]["z"])
    assert z.shape == (160, 214) and z[1, 1] == 3 + 3 and figure["data"][0]["dx"] == 3  # grid[i, j] = i + j
    assert "(recorded run, thinned: one row and one column in 3 kept" in figure["layout"]["title"]["text"]
    facts_stored = json.loads((stored / "run.json").read_text())
    assert facts_stored["device"] == {"name": "NVIDIA H200", "kind": "GPU"}
    assert facts_stored["commit"] == "0123456789abcdef"
    assert facts_stored["chapters"]["03_gpu_cupy.ipynb"]["thinned"][0].startswith("cell 4: figure thinned from ")
    assert (stored / "README.md").read_text() == records.readme(facts_stored)
    assert records.main(["03_gpu_cupy.ipynb"], folder=runs) == 2, "a run folder is never written over unasked"
    assert "holds a run already: add --force" in capsys.readouterr().err
    assert records.main(["04_tpu_jax.ipynb"], folder=runs) == 2
    assert "'04_tpu_jax.ipynb' is not a chapter that uses the GPU here" in capsys.readouterr().err


def test_the_scrubber_takes_out_paths_names_and_serials() -> None:
    scrub = records.Scrubber(root="/home/ada/loops", prefix="/opt/venv", home="/home/ada", host="ada-laptop")
    text = scrub.text("/home/ada/loops/helpers/x.py:3: warning; /opt/venv/lib/jax; /home/ada/.cache; on ada-laptop; "
                      "UUID: GPU-6c1236f9-25a3-ea90-6fdc-40acd725cefd; /tmp/ipykernel_812/2345.py:9; ada-laptops")
    assert text == ("./helpers/x.py:3: warning; <python>/lib/jax; ~/.cache; on <host>; UUID: GPU-<serial>; <cell>:9; "
                    "ada-laptops")
    assert not records.MACHINE_TRACES.search(text) and records.MACHINE_TRACES.search("/home/ada/x")


def test_a_figure_that_cannot_be_thinned_enough_is_left_out_saying_so() -> None:
    wide = {"data": [{"type": "scatter", "x": list(range(70_000)), "y": [1.5] * 70_000,
                      "text": ["label"] * 70_000}], "layout": {}}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("display_data", data={upkeep.PLOTLY: wide})])])
    assert records.thin(nb, figure_limit=200_000)[0].startswith("cell 0: figure left out (")
    assert nb.cells[0].outputs[0].data["text/plain"].startswith("[a figure left out of this recorded run: ")
    small = {"data": [{"type": "scatter", "x": list(range(200_000)), "y": list(range(200_000)),
                       "text": ["a"] * 200_000}], "layout": {}}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("display_data", data={upkeep.PLOTLY: small})])])
    [note] = records.thin(nb, figure_limit=2_000_000, run_limit=10_000_000)
    assert note.startswith("cell 0: figure thinned from ") and note.endswith("one point in 4 kept of its 200,000")
    trace = nb.cells[0].outputs[0].data[upkeep.PLOTLY]["data"][0]
    assert len(trace["x"]) == len(trace["y"]) == len(trace["text"]) == 50_000 and trace["x"][1] == 4
