"""The notebooks: in step with helpers/core/project.py, stored from one clean run, and every exercise solvable.

Every chapter runs with its solutions filled in (with_solutions, judged by unpassed_checks) in CI's Colab-versions
run, tests/colab/run.py (TPU image), not here: nbval already runs every chapter as stored, and running each twice
in this suite cost CI two minutes. tests/test_gpu.py runs chapters 03, 05, 06 and 07 with their solutions on a GPU.

Fix most failures here with `python -m helpers notebooks sync` (header, set-up cell, metadata, README map) and
`python -m helpers notebooks execute` (stored outputs).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import pkgutil
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from nbformat import NotebookNode

import helpers
from helpers.book import run_checks, solutions, upkeep
from helpers.book.solutions import VERDICTS, unpassed_checks, with_solutions
from helpers.core import project
from helpers.learning import claims

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
FILES = [chapter.file for chapter in project.CHAPTERS]
SYNC = "run `python -m helpers notebooks sync`"
EXECUTE = "run `python -m helpers notebooks execute NOTEBOOK` to store outputs from one clean run"


# ---------------------------------------------------------------- throwaway repositories for the upkeep tests


def _throwaway_notebook() -> NotebookNode:
    """An author's notebook before any sync: old format (no cell ids), no header or set-up, stray metadata."""
    code = nbformat.v4.new_code_cell("x = 6 * 7\nprint(x)", execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", text="42\n")])
    code.metadata["execution"] = {"iopub.execute_input": "2024-01-01T00:00:00Z"}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Some prose."), code],
                                  metadata={"language_info": {"name": "python", "version": "3.11.7"}})
    nb.nbformat_minor = 4
    for cell in nb.cells:
        del cell["id"]
    return nb


@pytest.fixture
def tmp_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repository's notebooks and README under tmp_path (throwaways where none exist yet).

    upkeep.main works on it for the duration of the test.
    """
    (tmp_path / "notebooks").mkdir()
    for file in FILES:
        if (NOTEBOOKS / file).exists():
            shutil.copy(NOTEBOOKS / file, tmp_path / "notebooks" / file)
        else:
            nbformat.write(_throwaway_notebook(), tmp_path / "notebooks" / file)
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    if upkeep.MAP_START not in text:
        text = f"# From Loops to TPUs\n\n{upkeep.MAP_START}\nstale\n{upkeep.MAP_END}\n\nMore prose.\n"
    (tmp_path / "README.md").write_text(text, encoding="utf-8")
    monkeypatch.setattr(upkeep, "ROOT", tmp_path)
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# ---------------------------------------------------------------- 1. in step with helpers/core/project.py


def test_repository_notebooks_exist_and_are_in_step() -> None:
    found = upkeep.problems(ROOT)
    assert not found, ("notebooks or README.md out of step with helpers/core/project.py:\n  " + "\n  ".join(found)
                       + f"\nFix: {SYNC} (it also creates a missing notebook's header and set-up cells), "
                       "then write the notebook's content.")


def test_sync_is_idempotent(tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nbformat.write(_throwaway_notebook(), tmp_repo / "notebooks" / FILES[-1])  # so the first sync has work to do
    assert upkeep.main(["sync"]) == 0
    assert f"updated notebooks/{FILES[-1]}" in capsys.readouterr().out
    first = _snapshot(tmp_repo)
    assert upkeep.main(["sync"]) == 0
    assert _snapshot(tmp_repo) == first, "a second sync changed files: sync must be deterministic"
    assert capsys.readouterr().out == "everything already in step\n"
    assert upkeep.main(["check"]) == 0
    assert capsys.readouterr().out == "notebooks in step\n"


def test_sync_writes_header_setup_and_metadata_and_keeps_the_rest(tmp_repo: Path) -> None:
    path = tmp_repo / "notebooks" / FILES[1]
    nbformat.write(_throwaway_notebook(), path)
    assert upkeep.main(["sync", f"notebooks/{FILES[1]}"]) == 0
    nb = nbformat.read(path, as_version=4)
    header, setup, prose, code = nb.cells
    chapter = project.CHAPTERS[1]
    assert (header.id, header.cell_type, header.metadata.tags) == ("header", "markdown", ["header"])
    assert header.source.startswith(f"# 01 · {chapter.title}\n\n{chapter.promise}\n")
    assert f"**[Open in Colab]({project.colab_url(chapter.file)})**" in header.source
    assert f"**[Open in Binder]({project.binder_url(chapter.file)})**" in header.source
    assert "![" not in header.source, "no picture from another host: opening the notebook fetches nothing"
    assert header.source.endswith(f"Time: about {chapter.minutes} minutes to read and run, plus "
                                  f"{chapter.exercise_minutes} for the exercises ([how we count]({upkeep.TIME_RULE}))")
    assert (setup.id, setup.cell_type, setup.metadata.tags, setup.outputs) == ("setup", "code", ["setup"], [])
    assert setup.source == upkeep.setup_source()
    assert prose.source == "Some prose." and code.source == "x = 6 * 7\nprint(x)"
    assert code.outputs[0].text == "42\n" and code.execution_count == 1
    assert code.metadata == {}, "volatile execution metadata should be gone"
    assert nb.nbformat_minor == 5 and len({cell.id for cell in nb.cells}) == 4
    # the kernel's language_info is kept: JupyterLab writes its kernel's into an opened notebook (dirtying it)
    assert nb.metadata == {"kernelspec": upkeep.KERNELSPEC, "language_info": {"name": "python", "version": "3.11.7"},
                           "colab": {"provenance": []}}


def test_sync_repairs_an_altered_colab_link(tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert upkeep.main(["sync"]) == 0
    path = tmp_repo / "notebooks" / FILES[0]
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace(project.colab_url(FILES[0]), "https://example.org/old-fork")
    nbformat.write(nb, path)
    capsys.readouterr()
    assert upkeep.main(["check"]) == 1
    assert capsys.readouterr().out == f"notebooks/{FILES[0]}: header cell out of step ({upkeep.FIX})\n"
    assert upkeep.main(["sync"]) == 0
    assert project.colab_url(FILES[0]) in nbformat.read(path, as_version=4).cells[0].source
    assert upkeep.problems(tmp_repo) == []


def test_check_detects_a_wrong_readme_map(tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert upkeep.main(["sync"]) == 0
    readme = tmp_repo / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(" min |", " minutes |", 1), encoding="utf-8")
    capsys.readouterr()
    assert upkeep.main(["check"]) == 1
    assert capsys.readouterr().out == f"README.md: chapter map out of step ({upkeep.FIX})\n"
    readme.write_text("# No map here\n", encoding="utf-8")
    assert any("markers" in problem for problem in upkeep.problems(tmp_repo))
    assert upkeep.main(["sync"]) == 1, "sync cannot place the map without markers"


def test_check_reports_missing_and_unlisted_notebooks(tmp_repo: Path) -> None:
    assert upkeep.main(["sync"]) == 0
    (tmp_repo / "notebooks" / FILES[2]).unlink()
    nbformat.write(_throwaway_notebook(), tmp_repo / "notebooks" / "99_scratch.ipynb")
    assert upkeep.problems(tmp_repo) == [
        f"notebooks/{FILES[2]}: missing (listed in helpers/core/project.py CHAPTERS)",
        "notebooks/99_scratch.ipynb: not in helpers/core/project.py CHAPTERS (add it there or remove it)",
    ]


@pytest.mark.parametrize(("accelerator", "gpu_type", "hint"), [("GPU", "T4", "GPU (T4)"), ("TPU", "V5E1", "TPU")])
def test_accelerator_chapters_ask_colab_for_their_runtime(accelerator: str, gpu_type: str, hint: str) -> None:
    chapter = project.Chapter("07_fast.ipynb", "Fast", "Speed.", 20, accelerator)
    nb = upkeep.synced(nbformat.v4.new_notebook(), 7, chapter)
    assert nb.metadata.accelerator == accelerator and nb.metadata.colab == {"provenance": [], "gpuType": gpu_type}
    assert "Time: about 20 minutes to read and run, plus 0 for the exercises" in nb.cells[0].source
    assert f"[how we count]({upkeep.TIME_RULE})) · Runtime: {hint}" in nb.cells[0].source


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["check", "extra"], ["sync", "nope.ipynb"], ["execute", "-x"]])
def test_bad_usage_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert upkeep.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1


def test_the_upkeep_loads_neither_ipywidgets_nor_plotly() -> None:
    """`notebooks sync` and `check` import helpers.book.upkeep: the explorer's widgets and plotly (seconds) stay out."""
    code = ("import sys, helpers.book.upkeep; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'ipywidgets', 'plotly'}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0 and run.stdout == "[]\n", run.stdout + run.stderr


# ---------------------------------------------------------------- the Colab set-up cell


@pytest.mark.parametrize("file", [None, *FILES], ids=["generated", *FILES])
def test_setup_cell_does_nothing_outside_colab(file: str | None) -> None:
    if file is None:
        source = upkeep.setup_source()
    else:
        setups = [cell.source for cell in _stored(file).cells if "setup" in solutions.tags(cell)]
        assert setups, f"no cell tagged `setup`: {SYNC}"
        source = setups[0]
    program = ("import sys\nbefore = set(sys.modules)\nexec(sys.argv[1], {})\n"
               "assert set(sys.modules) == before, sorted(set(sys.modules) - before)")
    ran = subprocess.run([sys.executable, "-c", program, source], capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", ""), "the set-up cell imported or printed something"


class _Distribution:
    """importlib.metadata's view of an installed loops-to-tpus whose helpers live in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def locate_file(self, path: str) -> Path:
        return self.folder / path


def _run_setup_on_colab(monkeypatch: pytest.MonkeyPatch, installed: bool) -> list[object]:
    """Run the set-up cell as Colab would (google.colab imported); return pip's commands and widget calls."""
    calls: list[object] = []
    output = types.SimpleNamespace(enable_custom_widget_manager=lambda: calls.append("widgets"))
    monkeypatch.setitem(sys.modules, "google.colab", types.SimpleNamespace(output=output))
    ours = _Distribution(project.PACKAGE.parent)  # the helpers these tests import: the folder above helpers/

    def distribution(name: str) -> _Distribution:
        assert name == project.DISTRIBUTION, "the set-up cell must look for the distribution, not a module"
        if not installed and not any(isinstance(call, list) for call in calls):
            raise importlib.metadata.PackageNotFoundError(name)
        return ours

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    monkeypatch.setattr(subprocess, "run", lambda command, check: calls.append(command))
    exec(upkeep.setup_source(), {})
    return calls


@pytest.mark.parametrize("installed", [True, False])
def test_setup_cell_on_colab_installs_once_and_enables_widgets(installed: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _run_setup_on_colab(monkeypatch, installed)
    pip = [sys.executable, "-m", "pip", "install", "-q", project.pip_requirement()]
    assert calls == (["widgets"] if installed else [pip, "widgets"])
    assert "loops-to-tpus[nvrtc] @ git+" in project.pip_requirement(), "Colab's CPU and TPU runtimes need NVRTC"


def test_setup_cell_trusts_an_editable_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install -e` leaves no helpers/ where the distribution's files would be: nothing to compare."""
    monkeypatch.setattr(_Distribution, "locate_file", lambda self, path: tmp_path / "site-packages" / path)
    assert _run_setup_on_colab(monkeypatch, installed=True) == ["widgets"]


def test_setup_cell_refuses_a_learners_own_helpers_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "helpers.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "helpers")  # as in a fresh kernel: found on the path, not already loaded
    with pytest.raises(ImportError, match=re.escape(f"'import helpers' would load {tmp_path / 'helpers.py'}, not "
                                                    "this series' helpers")):
        _run_setup_on_colab(monkeypatch, installed=True)


# ---------------------------------------------------------------- execute


def test_execute_runs_this_python_in_notebooks_dir_and_stores_a_clean_run(
        tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_repo / "notebooks" / FILES[0]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os\nimport sys\n\nprint(sys.executable)\nprint(os.getcwd())"),
        nbformat.v4.new_markdown_cell("Between."),
        nbformat.v4.new_code_cell("6 * 7", execution_count=9)])
    nbformat.write(nb, path)
    assert upkeep.main(["execute", FILES[0]]) == 0
    assert re.search(rf"notebooks/{re.escape(FILES[0])}: executed in \d+\.\d s", capsys.readouterr().out)
    stored = nbformat.read(path, as_version=4)
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == [1, 2, 3]
    assert code[1].outputs[0].text.splitlines() == [sys.executable, str((tmp_repo / "notebooks").resolve())]
    assert code[2].outputs[0].data["text/plain"] == "42"
    assert all("execution" not in cell.metadata for cell in stored.cells)
    assert not [p for p in upkeep.problems(tmp_repo) if FILES[0] in p], "execute must leave the notebook in step"


def test_execute_failure_names_the_cell_and_leaves_the_file_unchanged(
        tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_repo / "notebooks" / FILES[0]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                                   nbformat.v4.new_code_cell("raise ValueError('boom')"),
                                                   nbformat.v4.new_code_cell("y = 2")]), path)
    before = path.read_bytes()
    assert upkeep.main(["execute", FILES[0]]) == 1
    assert f"notebooks/{FILES[0]}: cell 3 failed: ValueError: boom" in capsys.readouterr().out
    assert path.read_bytes() == before


def _kernels_left() -> list[str]:
    import psutil

    return [" ".join(child.cmdline()) for child in psutil.Process().children(recursive=True)
            if "ipykernel_launcher" in " ".join(child.cmdline())]


def test_run_notebook_shuts_its_kernel_down_after_success_and_failure(tmp_path: Path) -> None:
    upkeep.run_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), tmp_path)
    assert _kernels_left() == []
    with pytest.raises(upkeep.CellFailed):
        upkeep.run_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")]), tmp_path)
    assert _kernels_left() == []


def test_run_notebook_runs_another_interpreter_with_startup_lines(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os, sys\nprint(sys.executable, STARTED, "
                                                                   "os.environ['MARK'])")])
    kernel = upkeep.kernel_spec(sys.executable, env={"MARK": "env-set"}, startup=["STARTED = 'startup-ran'"])
    done = upkeep.run_notebook(nb, tmp_path, kernel=kernel)
    assert done.cells[0].outputs[0].text.split() == [sys.executable, "startup-ran", "env-set"]


def test_run_notebook_enforces_the_cell_timeout(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\n\ntime.sleep(30)")])
    with pytest.raises(upkeep.CellFailed, match="cell 0 failed: CellTimeoutError"):
        upkeep.run_notebook(nb, tmp_path, timeout=1)


# ---------------------------------------------------------------- 2. and 3. the stored notebooks


def _stored(file: str) -> NotebookNode:
    path = NOTEBOOKS / file
    if not path.exists():
        pytest.skip(f"notebooks/{file} is not written yet")
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("file", FILES)
def test_stored_outputs_come_from_one_clean_run(file: str) -> None:
    nb = _stored(file)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"no python3 kernelspec: {SYNC}"
    counts = [cell.execution_count for cell in nb.cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"execution counts {counts} are not 1..N: {EXECUTE}"
    errors = [index for index, cell in enumerate(nb.cells)
              if any(output.output_type == "error" for output in cell.get("outputs", []))]
    assert not errors, f"error outputs stored in cells {errors}"


@pytest.mark.parametrize("file", FILES)
def test_every_printed_true_or_false_is_a_claim(file: str) -> None:
    """A line ending in True or False states a fact that must hold: h.claim prints it, so CI can check it."""
    loose = [f"cell {index}: {line!r}" for index, cell in enumerate(_stored(file).cells)
             for output in cell.get("outputs", []) if claims.CLAIM_KEY not in output.get("metadata", {})
             for line in solutions.printed_text(nbformat.v4.new_code_cell(outputs=[output])).splitlines()
             if line.rstrip().endswith(("True", "False"))]
    assert not loose, f"print these with h.claim(statement, holds): {loose}"


@pytest.mark.parametrize("file", FILES)
def test_tags_and_exercises_follow_the_conventions(file: str) -> None:
    nb = _stored(file)
    misplaced = [index for index, cell in enumerate(nb.cells)
                 if "nbval-ignore-output" in solutions.tags(cell) and cell.cell_type != "code"]
    assert not misplaced, f"`nbval-ignore-output` on cells {misplaced}, which are not code cells"
    found, broken = solutions.exercises(nb)
    assert not broken, "exercise convention broken:\n" + "\n".join(broken)
    assert len(found) >= 2, f"{len(found)} exercise/check/solution triples; every notebook needs at least two"
    untouched = {check: solutions.printed_text(nb.cells[check]) for _, check, _ in found}
    wrong = {index: text for index, text in untouched.items() if not text.lstrip().startswith("⏳")}
    assert not wrong, (f"check cells whose stored output does not start with ⏳: {wrong}; leave the exercises "
                       f"untouched and {EXECUTE}")


# ---------------------------------------------------------------- house style: one way to reach the helpers


#: Every module of the helpers package, as a notebook may reach it: `h.<name>`.
HELPER_MODULES = frozenset(module.name for module in pkgutil.iter_modules(helpers.__path__))
HELPERS_IMPORT = re.compile(r"\s*(import\s+helpers\.|from\s+helpers\b)")
MODULE_ALIAS = re.compile(r"\s*[\w\s,()]+=\s*(h\.\w+(?:\s*,\s*h\.\w+)*)\s*,?\s*(#.*)?")
TIMED = re.compile(r"\bh\.(benchmark|workloads\.measure)\(")


def _code_lines(file: str) -> list[tuple[str, str]]:
    """(where, line) for every line of every code cell: where is 'notebooks/FILE cell N line M'."""
    return [(f"notebooks/{file} cell {index} line {number}", line)
            for index, cell in enumerate(_stored(file).cells) if cell.cell_type == "code"
            for number, line in enumerate(cell.source.splitlines(), start=1)]


@pytest.mark.parametrize("file", FILES)
def test_helper_modules_are_reached_only_through_h(file: str) -> None:
    """`import helpers as h`, then `h.workloads.x`, `h.plots.x`, ...: no second way in, and no alias per chapter."""
    imports = [f"{where}: {line.strip()}" for where, line in _code_lines(file) if HELPERS_IMPORT.match(line)]
    assert not imports, ("import helper modules through `import helpers as h` only (they load on first use as "
                         "h.<module>); remove:\n  " + "\n  ".join(imports))
    aliases = [f"{where}: {line.strip()}" for where, line in _code_lines(file)
               if (found := MODULE_ALIAS.fullmatch(line))
               and any(name.split(".", 1)[1].strip() in HELPER_MODULES for name in found.group(1).split(","))]
    assert not aliases, "write h.<module>.x everywhere, not an alias of the module:\n  " + "\n  ".join(aliases)


@pytest.mark.parametrize("file", FILES)
def test_every_helper_module_a_chapter_names_is_reached_through_h(file: str) -> None:
    """Each `h.<module>.x` a chapter's code writes finds its module (helpers._LAZY names the sub-package it is in)."""
    named = {name for _, line in _code_lines(file) for name in re.findall(r"\bh\.([a-z_]\w*)\.", line)}
    missing = sorted(name for name in named if not hasattr(helpers, name))
    assert not missing, f"notebooks/{file} reaches h.{', h.'.join(missing)}: add each to helpers._LAZY"


@pytest.mark.parametrize("file", FILES)
def test_timing_budget_is_set_once_before_the_first_timing(file: str) -> None:
    """h.set_timing_budget(seconds) once, before the first h.benchmark or h.workloads.measure; no BUDGET passed
    around (a call that needs another budget says why, with a literal budget=)."""
    lines = _code_lines(file)
    budget = [f"{where}: {line.strip()}" for where, line in lines if re.search(r"\bBUDGET\b", line)]
    assert not budget, ("set the budget once with h.set_timing_budget(...) instead of a BUDGET variable passed to "
                        "every call:\n  " + "\n  ".join(budget))
    sets = [(position, where) for position, (where, line) in enumerate(lines) if "h.set_timing_budget(" in line]
    timed = [(position, where) for position, (where, line) in enumerate(lines) if TIMED.search(line)]
    assert len(sets) <= 1, f"h.set_timing_budget is called {len(sets)} times: {[where for _, where in sets]}"
    if timed:
        assert sets, f"notebooks/{file} times code ({timed[0][1]} first) but never calls h.set_timing_budget"
        assert sets[0][0] < timed[0][0], (f"h.set_timing_budget ({sets[0][1]}) comes after the first timing "
                                          f"({timed[0][1]})")


@pytest.mark.parametrize("file", FILES)
def test_a_chapter_using_cupy_stops_jax_taking_the_gpus_memory_first(file: str) -> None:
    """JAX, on a GPU, takes 75% of its memory when it starts; a chapter that also uses CuPy (h.cuda) must set
    XLA_PYTHON_CLIENT_PREALLOCATE=false before anything can start JAX (its first `import jax` or `h.` use)."""
    lines = [(where, line) for where, line in _code_lines(file) if line.strip() and " cell 1 line " not in where]
    if not any("h.cuda." in line for _, line in lines):
        return
    found = [i for i, (_, line) in enumerate(lines) if 'environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")'
             in line]
    assert found, f"notebooks/{file} uses CuPy and JAX: set XLA_PYTHON_CLIENT_PREALLOCATE=false before JAX starts"
    first_jax = next(i for i, (_, line) in enumerate(lines) if re.match(r"\s*import jax\b|.*\bh\.", line))
    assert found[0] < first_jax, f"set it before {lines[first_jax][0]}: {lines[first_jax][1].strip()}"


def run_with_solutions(file: str, devices: tuple[str, ...] = ()) -> None:
    """Run chapter `file` top to bottom with every exercise's solution filled in; every check must pass (on
    whatever this machine has), and the run must break none of helpers.book.run_checks' rules (claims.problems among
    them; `devices`: the names of the accelerators here, for the rules on their predictions). tests/test_gpu.py
    calls it on a GPU; CI's Colab-versions run (tests/colab/run.py, TPU image) fills the solutions in with
    with_solutions and judges them with unpassed_checks and claims.problems, as here."""
    try:
        nb, checks = with_solutions(_stored(file))
    except ValueError as exc:
        pytest.fail(f"{file}: {exc}")
    try:
        done = upkeep.run_notebook(nb, NOTEBOOKS, timeout=300)
    except upkeep.CellFailed as exc:
        pytest.fail(f"{file} with every solution filled in: {exc}")
    seen = unpassed_checks(done, checks) + [str(finding) for finding in run_checks.findings(done.cells, devices)]
    if seen:
        pytest.fail(f"{file} with every solution filled in: {'; '.join(seen)}")


@pytest.mark.solutions
@pytest.mark.parametrize("file", FILES)
def test_solutions_pass_their_checks(file: str) -> None:
    """Left out unless pytest is given --solutions (tests/conftest.py): CI runs the solutions in tests/colab/run.py."""
    run_with_solutions(file)


def test_filling_in_the_solutions_changes_only_the_exercise_cells_of_a_copy() -> None:
    stored = _stored(FILES[1])
    found, _ = solutions.exercises(stored)
    nb, checks = with_solutions(stored)
    assert checks == [check for _, check, _ in found] and len(checks) >= 2
    changed = [index for index, (cell, before) in enumerate(zip(nb.cells, stored.cells, strict=True))
               if cell.source != before.source]
    assert changed == [exercise for exercise, _, _ in found]
    assert [nb.cells[exercise].source for exercise, _, _ in found] == [solution for _, _, solution in found]
    assert stored == _stored(FILES[1]), "the stored notebook must be left as it was"
    with pytest.raises(ValueError, match="no exercises"):
        with_solutions(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))


@pytest.mark.parametrize(("printed", "passes"), [
    ("✅ scale: right for every size tried\n", True),
    ("✅ first part\n✅ second part\n", True),
    ("✅ first part\n❌ second part: 3 elements differ\n", False),
    ("⏳ not tried yet: fill in the cell above\n", False),
    ("a result, but no verdict\n", False),
])
def test_a_check_passes_only_when_every_verdict_it_prints_is_a_tick(printed: str, passes: bool) -> None:
    done = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("solution()"),
        nbformat.v4.new_code_cell("check()", outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])])
    assert unpassed_checks(done, [1]) == ([] if passes else [
        f"cell 1: the solution above does not pass its check: "
        f"{[line for line in printed.splitlines() if line.startswith(VERDICTS)] or 'no verdict printed'}"])


def test_chapter_03_runs_to_the_end_without_nvrtc_and_says_so_once() -> None:
    """A Mac, or a Colab runtime where NVRTC could not be installed: the chapter runs, naming what it skipped."""
    file = next(chapter.file for chapter in project.CHAPTERS if chapter.file.startswith("03_"))
    no_nvrtc = upkeep.kernel_spec(sys.executable, startup=["import helpers.gpu.nvrtc",
                                                           "helpers.gpu.nvrtc._candidates = lambda: []"])
    try:
        done = upkeep.run_notebook(_stored(file), NOTEBOOKS, kernel=no_nvrtc)
    except upkeep.CellFailed as exc:
        pytest.fail(f"{file} without NVRTC: {exc}")
    text = "".join(solutions.printed_text(cell) for cell in done.cells if cell.cell_type == "code")
    assert text.count("To get it: pip install nvidia-cuda-nvrtc") == 1, "say once why, and how to get NVRTC"
    assert "- not compiled here (NVRTC is missing): axpby_fused, vector_add.cu, matmul.cu" in text
    assert "compiled by NVRTC" not in text


# ---------------------------------------------------------------- reading without running: static images

#: The most a stored notebook may weigh: it is read on GitHub and downloaded by every learner.
MAX_NOTEBOOK_BYTES = 1_500_000


@pytest.mark.parametrize("file", FILES)
def test_every_stored_figure_has_a_static_image_and_the_file_stays_small(file: str) -> None:
    nb = _stored(file)
    figures = [(index, output) for index, cell in enumerate(nb.cells) for output in cell.get("outputs", [])
               if upkeep.PLOTLY in output.get("data", {})]
    without = [index for index, output in figures if "image/png" not in output["data"]]
    assert not without, f"figures without a static image in cells {without}: {EXECUTE}"
    size = (NOTEBOOKS / file).stat().st_size
    assert size <= MAX_NOTEBOOK_BYTES, f"notebooks/{file} weighs {size:,} bytes, over {MAX_NOTEBOOK_BYTES:,}"


def test_static_images_are_added_once_beside_the_interactive_figure() -> None:
    figure = {"data": [{"type": "bar", "y": [1, 2]}], "layout": {"height": 300}}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", data={upkeep.PLOTLY: figure})]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", data={
            upkeep.PLOTLY: figure, "image/png": "c3RvcmVk"})]),
        nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", name="stdout", text="no figure")]),
    ])
    drawn = []
    assert upkeep.add_static_images(nb, render=lambda fig: drawn.append(fig) or b"PNG") == 1
    assert drawn == [figure] and nb.cells[0].outputs[0].data["image/png"] == "UE5H"  # base64 of b"PNG"
    assert nb.cells[1].outputs[0].data["image/png"] == "c3RvcmVk"  # one already there is kept
    assert upkeep.add_static_images(nb, render=lambda fig: b"again") == 0


def test_without_a_browser_the_static_images_say_what_to_install(monkeypatch) -> None:
    import plotly.io as pio

    def no_browser(*args, **kwargs):
        raise RuntimeError("Could not find a Chrome executable")

    monkeypatch.setattr(pio, "to_image", no_browser)
    with pytest.raises(upkeep.StaticImagesUnavailable, match="apt-get install chromium, or set BROWSER_PATH"):
        upkeep.kaleido_png({"data": [], "layout": {}})


def test_a_chapter_run_with_its_solutions_fails_on_a_claim_that_printed_false(monkeypatch) -> None:
    """run_with_solutions (the GPU suite calls it on a GPU) judges by claims.problems, as the Colab run does."""
    file = next(chapter.file for chapter in project.CHAPTERS if chapter.file.startswith("03_"))

    def ran(nb: NotebookNode, *args: object, **kwargs: object) -> NotebookNode:
        for cell in nb.cells:
            cell["outputs"] = [nbformat.v4.new_output("stream", name="stdout", text="✅ checked\n")]
        nb.cells[0]["outputs"] = [nbformat.v4.new_output(
            "display_data", data={"text/plain": "JAX and NumPy agree: False"},
            metadata={claims.CLAIM_KEY: {"statement": "JAX and NumPy agree", "holds": False}})]
        return nb

    monkeypatch.setattr(upkeep, "run_notebook", ran)
    with pytest.raises(pytest.fail.Exception, match="claim printed False: JAX and NumPy agree"):
        run_with_solutions(file)


def test_a_chapter_run_with_its_solutions_fails_where_a_measurement_beats_a_bound_it_printed(monkeypatch) -> None:
    """The GPU suite's runs are held to helpers.book.run_checks: a matmul measured faster than its 'at most' fails."""
    file = next(chapter.file for chapter in project.CHAPTERS if chapter.file.startswith("03_"))
    printed = ("naive kernel, n = 2,048                  17.9 ms                  3.32 ms               0.19x\n"
               "cuBLAS (a @ b), n = 2,048                347 µs                  374 µs               1.08x\n"
               "naive kernel: 0.25 FLOP/byte from main memory -> at most 1,200 GFLOP/s on the NVIDIA H200\n")

    def ran(nb: NotebookNode, *args: object, **kwargs: object) -> NotebookNode:
        for cell in nb.cells:
            cell["outputs"] = [nbformat.v4.new_output("stream", name="stdout", text="✅ checked\n")]
        nb.cells[5]["outputs"] = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        return nb

    monkeypatch.setattr(upkeep, "run_notebook", ran)
    with pytest.raises(pytest.fail.Exception, match=r"cell 5: bound-beaten: .*5,175 GFLOP/s, over the bound of 1,200"):
        run_with_solutions(file, devices=("NVIDIA H200",))


def test_execute_runs_a_noisy_chapter_again_and_stores_a_quiet_run(
        tmp_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A busy moment makes a timing noisy: execute runs the chapter again (up to upkeep.RUNS times in all)."""
    path = tmp_repo / "notebooks" / FILES[0]
    counter = tmp_repo / "runs.txt"
    noisy_once = (f"from pathlib import Path\nimport warnings\nimport helpers as h\nrun = Path({str(counter)!r})\n"
                  "run.write_text(run.read_text() + 'x' if run.exists() else 'x')\n"
                  "if len(run.read_text()) == 1:\n    warnings.warn('spread over 99%', h.NoisyTimingWarning)")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(noisy_once)]), path)
    assert upkeep.main(["execute", FILES[0]]) == 0
    assert counter.read_text() == "xx"
    assert upkeep.noisy_timings(nbformat.read(path, as_version=4)) == []


@pytest.mark.parametrize("warning", ["NoisyTimingWarning", "BusyMachineWarning"])
def test_execute_never_stores_a_disturbed_timing(
        tmp_repo: Path, capsys: pytest.CaptureFixture[str], warning: str) -> None:
    """Disturbed in every run: the file stays as it was, and the exit status and message say what to do."""
    path = tmp_repo / "notebooks" / FILES[0]
    counter = tmp_repo / "runs.txt"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from pathlib import Path\nimport warnings\nimport helpers as h\nrun = Path({str(counter)!r})\n"
        "run.write_text(run.read_text() + 'x' if run.exists() else 'x')\n"
        f"warnings.warn('another program', h.{warning})")]), path)
    before = path.read_bytes()
    assert upkeep.main(["execute", FILES[0]]) == 1
    assert counter.read_text() == "x" * upkeep.RUNS
    assert path.read_bytes() == before
    said = capsys.readouterr().out
    assert f"notebooks/{FILES[0]}: timings disturbed by another program in each of {upkeep.RUNS} runs" in said
    assert "in cells [2]" in said and "file left unchanged: re-execute it when the machine is quiet" in said


def test_noisy_timings_finds_each_disturbed_timing_by_its_warning() -> None:
    def printed(text: str) -> NotebookNode:
        return nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", name="stderr", text=text)])

    nb = nbformat.v4.new_notebook(cells=[
        printed("<cell>:3: NoisyTimingWarning: t: the middle half of the samples spread over 40%\n"),
        nbformat.v4.new_markdown_cell("NoisyTimingWarning in prose is no timing"),
        printed("<cell>:1: BusyMachineWarning: matmul 512: 11 GFLOP/s for a float32 matrix product\n"),
        printed("<cell>:1: UserWarning: something else\n")])
    assert upkeep.noisy_timings(nb) == [0, 2]


@pytest.mark.parametrize("file", FILES)
def test_stored_timings_come_from_a_quiet_machine(file: str) -> None:
    """No stored output says another program disturbed a timing: a learner would read a busy machine's numbers."""
    noisy = upkeep.noisy_timings(_stored(file))
    assert not noisy, (f"{' or '.join(upkeep.DISTURBED)} stored in cells {sorted(set(noisy))}: {EXECUTE} on a quiet "
                       "machine")
