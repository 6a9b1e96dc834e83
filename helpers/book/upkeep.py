"""Notebook upkeep: keep the notebooks and the README chapter map in step with helpers/core/project.py.

    python -m helpers notebooks sync [NOTEBOOK ...]     # write header, Colab set-up cell, metadata, README map
    python -m helpers notebooks check                   # one line per thing out of step; exit 1 if any
    python -m helpers notebooks execute [NOTEBOOK ...]  # sync, run top to bottom here, store the outputs (with a
                                                        # PNG beside every figure: needs kaleido and Chromium)
    python -m helpers notebooks record [NOTEBOOK ...]   # on a GPU or TPU: store the chapters that use it, as they
                                                        # ran there, in docs/runs/ (helpers.book.records)

Cell 0 (tagged `header`) and cell 1 (tagged `setup`) and the notebook metadata belong to this module; every other
cell is the author's and is kept as it is, outputs included, less volatile metadata (execution timings). Needs the
`dev` extra (nbformat, nbclient).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import nbformat
from ipykernel.kernelspec import RESOURCES, get_kernel_dict
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode

from ..core import project
from ..core.files import replace_file
from ..core.notebook_file import NotebookFileError, read_notebook, read_notebook_text
from ..core.project import ROOT
from ..measuring.timing import BusyMachineWarning, NoisyTimingWarning
from . import chapter_time, guide

#: The repository root; main() works on the notebooks and README.md under it.
CELL_TIMEOUT = 300  # seconds a cell may run under `execute`, as in the test suite
USAGE = ("usage: python -m helpers notebooks {sync [NOTEBOOK ...] | check | execute [NOTEBOOK ...] | "
         "record [NOTEBOOK ...] [--force]}")
FIX = "run: python -m helpers notebooks sync"

COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
MAP_START, MAP_END = "<!-- chapters:start -->", "<!-- chapters:end -->"
#: Chapter.accelerator -> (notebook metadata "accelerator", Colab's "gpuType", what the header says).
RUNTIMES = {"GPU": ("GPU", "T4", "GPU (T4)"), "TPU": ("TPU", "V5E1", "TPU (v5e-1)")}
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: Cell metadata that changes on every run or every Colab view: dropped so diffs stay quiet.
VOLATILE_CELL_METADATA = ("execution", "executionInfo", "outputId", "colab")
ROLES = ("header", "setup")  # the tags (and fixed cell ids) of cells 0 and 1
#: Where the headers' times are explained (from a notebook in notebooks/).
TIME_RULE = "../docs/teaching.md#how-long-each-chapter-takes"
#: Environment of every kernel this module starts. glibc gives a process up to 8 malloc arenas per core and
#: keeps what XLA's threads free in them: re-running chapter 04 in one kernel grew it by 30-100 MB a run, all of
#: it free memory held by 16 arenas. Two arenas hold it flat and leave the timings as they were. The limit is
#: read once, before the kernel's own threads start, so it must be in the environment (README, binder/start
#: and environment.yml set it for learners' kernels too); other C libraries ignore it.
KERNEL_ENV = {"MALLOC_ARENA_MAX": "2"}

SETUP_TEMPLATE = """\
# On Colab only: install this series' helpers (once) and let ipywidgets render; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    import importlib.metadata
    import importlib.util
    import subprocess
    from pathlib import Path

    from google.colab import output

    try:
        series = importlib.metadata.distribution({distribution})
    except importlib.metadata.PackageNotFoundError:
        requirement = {requirement}
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement], check=True)
        importlib.invalidate_caches()
        series = importlib.metadata.distribution({distribution})
    ours = Path(series.locate_file("helpers/__init__.py")).resolve()  # absent for an editable install: no check
    found = importlib.util.find_spec("helpers")
    where = found.origin if found else None
    if ours.exists() and (where is None or Path(where).resolve() != ours):
        raise ImportError(f"'import helpers' would load {{where}}, not this series' helpers ({{ours}}): rename that "
                          "file or folder, then Runtime > Restart session and run this notebook again.")
    output.enable_custom_widget_manager()"""


class CellFailed(Exception):
    """A notebook cell (by its index in the notebook) raised, timed out or killed its kernel."""

    def __init__(self, index: int, error: str) -> None:
        super().__init__(f"cell {index} failed: {error}")


class _OneKernel(KernelSpecManager):
    """Kernel specs that always give one ipykernel: this interpreter's, whatever else is installed, or `spec`."""

    spec: KernelSpec | None = None

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return self.spec or KernelSpec(resource_dir=RESOURCES, env=dict(KERNEL_ENV), **get_kernel_dict())


def kernel_spec(python: str, env: dict[str, str] | None = None, startup: Sequence[str] = ()) -> KernelSpec:
    """An ipykernel run by another interpreter `python` (which must have ipykernel), with extra environment
    variables (over KERNEL_ENV) and lines of code run before the first cell (as a hosted kernel such as Colab's
    imports its own)."""
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    argv += [f"--IPKernelApp.exec_lines={line}" for line in startup]
    return KernelSpec(argv=argv, env={**KERNEL_ENV, **(env or {})}, display_name=f"Python ({python})",
                      language="python")


def _runtime(chapter: project.Chapter) -> tuple[str, str, str] | None:
    if chapter.accelerator is None:
        return None
    if chapter.accelerator not in RUNTIMES:
        raise ValueError(f"{chapter.file}: accelerator {chapter.accelerator!r} is not one of {sorted(RUNTIMES)}")
    return RUNTIMES[chapter.accelerator]


def _badges(chapter: project.Chapter) -> tuple[str, str]:
    return (f"[![Open In Colab]({COLAB_BADGE})]({project.colab_url(chapter.file)})",
            f"[![Binder]({BINDER_BADGE})]({project.binder_url(chapter.file)})")


def _links(chapter: project.Chapter) -> str:
    """Where to run the chapter, as plain links: a badge is a picture on another host, fetched whenever the
    notebook is shown (the README's map keeps the badges)."""
    return (f"**[Open in Colab]({project.colab_url(chapter.file)})** · "
            f"**[Open in Binder]({project.binder_url(chapter.file)})**")


def header_source(number: int, chapter: project.Chapter) -> str:
    """The markdown of cell 0: title, promise, where to run it, time (and Colab runtime)."""
    runtime = _runtime(chapter)
    time_line = (f"Time: about {chapter.minutes} minutes to read and run, plus {chapter.exercise_minutes} for the "
                 f"exercises ([how we count]({TIME_RULE}))" + (f" · Runtime: {runtime[2]}" if runtime else ""))
    return "\n".join([f"# {number:02d} · {chapter.title}", "", chapter.promise, "", _links(chapter), "", time_line])


def setup_source() -> str:
    """The code of cell 1: on Colab, install the helpers and enable widgets; elsewhere do nothing."""
    return SETUP_TEMPLATE.format(requirement=json.dumps(project.pip_requirement()),
                                 distribution=json.dumps(project.DISTRIBUTION))


def notebook_metadata(chapter: project.Chapter, language_info: dict | None = None) -> dict:
    """The whole notebook metadata: kernelspec, language and Colab's runtime request.

    language_info: what the kernel that ran the notebook reported (nbclient stores it), kept as it is, because
    JupyterLab writes the kernel's own into a notebook it opens and would mark the file modified if it differed.
    """
    language = dict(language_info) if isinstance(language_info, dict) and language_info.get("name") == "python" \
        else {"name": "python"}
    metadata: dict = {"kernelspec": dict(KERNELSPEC), "language_info": language, "colab": {"provenance": []}}
    runtime = _runtime(chapter)
    if runtime:
        metadata["accelerator"] = runtime[0]
        metadata["colab"]["gpuType"] = runtime[1]
    return metadata


def _role(cell: NotebookNode) -> str | None:
    tags = cell.get("metadata", {}).get("tags", [])
    return next((role for role in ROLES if role in tags), None)


def _fresh_id(index: int, cell: NotebookNode, taken: set[str]) -> str:
    """A deterministic id for a cell that has none (or a clashing one), so sync writes the same bytes twice."""
    salt = 0
    while True:
        cell_id = hashlib.sha1(f"{salt}:{index}:{cell.source}".encode()).hexdigest()[:8]
        if cell_id not in taken:
            return cell_id
        salt += 1


def synced(nb: NotebookNode, number: int, chapter: project.Chapter) -> NotebookNode:
    """A copy of `nb` as sync writes it: fresh header and set-up cells, metadata, ids, no volatile metadata.

    The set-up cell keeps its execution count (it prints nothing outside Colab, so it never has outputs).
    """
    old_setup = next((cell for cell in nb.cells if _role(cell) == "setup"), None)
    header = nbformat.v4.new_markdown_cell(header_source(number, chapter), id="header", metadata={"tags": ["header"]})
    setup = nbformat.v4.new_code_cell(setup_source(), id="setup", metadata={"tags": ["setup"]},
                                      execution_count=old_setup.get("execution_count") if old_setup else None)
    body = [copy.deepcopy(cell) for cell in nb.cells if _role(cell) is None]
    taken = set(ROLES)
    for index, cell in enumerate(body):
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or cell_id in taken or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cell_id):
            cell["id"] = _fresh_id(index, cell, taken)
        taken.add(cell["id"])
    metadata = notebook_metadata(chapter, nb.metadata.get("language_info"))
    if isinstance(nb.metadata.get(chapter_time.RUN_KEY), dict):  # what the stored run took: execute records it
        metadata[chapter_time.RUN_KEY] = dict(nb.metadata[chapter_time.RUN_KEY])
    return nbformat.v4.new_notebook(cells=[header, setup, *body], metadata=metadata)


def dumps(nb: NotebookNode) -> str:
    """The file text of `nb`, exactly as nbformat.write (and Jupyter) lay it out: indent 1, sorted keys."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def chapter_map() -> str:
    """The README chapter map: a markdown table of every chapter with its badges."""
    rows = ["| # | Notebook | What you get | Time | Colab | Binder |", "|---|---|---|---|---|---|"]
    for number, chapter in enumerate(project.CHAPTERS):
        runtime = _runtime(chapter)
        duration = chapter.time + (f" · {runtime[2]}" if runtime else "")
        cells = [f"{number:02d}", f"[{chapter.title}](notebooks/{chapter.file})", chapter.promise, duration,
                 *_badges(chapter)]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join([*rows, "", project.TIME_NOTE])


def synced_readme(text: str) -> str | None:
    """`text` with the chapter map between the markers rewritten; None when the markers are missing."""
    pattern = re.compile(re.escape(MAP_START) + ".*?" + re.escape(MAP_END), re.DOTALL)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda _: f"{MAP_START}\n{chapter_map()}\n{MAP_END}", text, count=1)


def _difference(nb: NotebookNode, want: NotebookNode) -> str:
    """Which parts of `nb` differ from what sync would write, in words."""
    parts = [f"{role} cell" for position, role in enumerate(ROLES)
             if len(nb.cells) <= position or _role(nb.cells[position]) != role
             or nb.cells[position].source != want.cells[position].source]
    if nb.metadata != want.metadata:
        parts.append("metadata")
    return ", ".join(parts) or "cell ids, volatile cell metadata or JSON layout"


def _readme_problem(root: Path) -> str | None:
    readme = root / "README.md"
    if not readme.exists():
        return "README.md: missing, so there is no chapter map"
    text = readme.read_text(encoding="utf-8")
    want = synced_readme(text)
    if want is None:
        return f"README.md: no {MAP_START} ... {MAP_END} markers: add them where the chapter map goes"
    return None if want == text else f"README.md: chapter map out of step ({FIX})"


def _guide_text(root: Path) -> tuple[str | None, str | None, list[str]]:
    """(the teacher guide, as sync would write it, why a chapter's part cannot be written), from the stored
    notebooks; (None, None, []) where there is no guide."""
    path = root / "docs" / "teaching.md"
    if not path.exists():
        return None, None, []
    text, stored, cannot = path.read_text(encoding="utf-8"), {}, []
    for number, chapter in enumerate(project.CHAPTERS):
        notebook = root / "notebooks" / chapter.file
        if guide.markers(number)[0] not in text or not notebook.exists():
            continue
        try:
            nb = read_notebook(notebook)
            guide.block(nb)
        except (ValueError, KeyError) as exc:  # chapter_time.NoStoredRun, prompts.PromptError, an unreadable file
            cannot.append(f"docs/teaching.md: chapter {number:02d}'s answers cannot be written: {exc}")
            continue
        stored[number] = nb
    return text, guide.synced(text, stored), cannot


def _sync_guide(root: Path) -> tuple[bool, bool]:
    """Rewrite the teacher guide's generated parts from the stored notebooks: (ok, changed)."""
    text, want, cannot = _guide_text(root)
    for line in cannot:
        print(line)
    if want is not None and want != text:
        (root / "docs" / "teaching.md").write_text(want, encoding="utf-8")
        print("updated docs/teaching.md (its answers and minutes, from the stored notebooks)")
    return not cannot, want != text


def problems(root: Path) -> list[str]:
    """Everything under `root` that is out of step with helpers/core/project.py, one line each."""
    found = []
    for number, chapter in enumerate(project.CHAPTERS):
        path = root / "notebooks" / chapter.file
        if not os.path.lexists(path):
            found.append(f"notebooks/{chapter.file}: missing (listed in helpers/core/project.py CHAPTERS)")
            continue
        try:
            text, nb = read_notebook_text(path)
        except NotebookFileError as exc:
            found.append(f"notebooks/{chapter.file}: unreadable: {exc.problem}")
            continue
        want = synced(nb, number, chapter)
        if dumps(want) != text:
            found.append(f"notebooks/{chapter.file}: {_difference(nb, want)} out of step ({FIX})")
    listed = {chapter.file for chapter in project.CHAPTERS}
    found += [f"notebooks/{path.name}: not in helpers/core/project.py CHAPTERS (add it there or remove it)"
              for path in sorted((root / "notebooks").glob("*.ipynb")) if path.name not in listed]
    readme = _readme_problem(root)
    text, want, cannot = _guide_text(root)
    stale = [f"docs/teaching.md: answers or minutes out of step with the stored notebooks ({FIX})"] \
        if want != text else []
    return found + ([readme] if readme else []) + cannot + stale


def _sync_readme(root: Path) -> tuple[bool, bool]:
    """Rewrite the README map: (ok, changed). Says why when it cannot (no README, no markers)."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else None
    want = synced_readme(text) if text is not None else None
    if want is None:
        print(_readme_problem(root))
        return False, False
    if want != text:
        replace_file(readme, want.encode("utf-8"))
        print("updated README.md")
    return True, want != text


def sync(chapters: Sequence[tuple[int, project.Chapter]], root: Path) -> int:
    """Write header, set-up cell and metadata of `chapters` (creating missing notebooks) and the README map."""
    ok, changed = _sync_readme(root)
    for number, chapter in chapters:
        path = root / "notebooks" / chapter.file
        try:
            text, nb = read_notebook_text(path) if os.path.lexists(path) else (None, nbformat.v4.new_notebook())
        except NotebookFileError as exc:
            print(f"notebooks/{chapter.file}: unreadable, left alone: {exc.problem}")
            ok = False
            continue
        new = dumps(synced(nb, number, chapter))
        if new != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, new.encode("utf-8"))
            print(f"{'updated' if text is not None else 'created'} notebooks/{chapter.file}")
            changed = True
    guide_ok, guide_changed = _sync_guide(root)
    if ok and guide_ok and not (changed or guide_changed):
        print("everything already in step")
    return 0 if ok and guide_ok else 1


def run_notebook(nb: NotebookNode, cwd: Path, timeout: int = CELL_TIMEOUT,
                 kernel: KernelSpec | None = None) -> NotebookNode:
    """Execute a copy of `nb` top to bottom in a fresh ipykernel (this interpreter's, or `kernel`) in `cwd`.

    Raises CellFailed when a cell raises, runs past `timeout` seconds, or kills the kernel. The kernel is shut
    down in every case.
    """
    current = {"index": 0}

    def on_cell_start(cell: NotebookNode, cell_index: int) -> None:
        current["index"] = cell_index

    specs = _OneKernel()
    specs.spec = kernel
    km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)
    client = NotebookClient(copy.deepcopy(nb), timeout=timeout, record_timing=False, on_cell_start=on_cell_start,
                            km=km, resources={"metadata": {"path": str(cwd)}})
    try:
        return client.execute()
    except CellExecutionError as exc:
        raise CellFailed(current["index"], f"{exc.ename}: {exc.evalue}") from exc
    except (CellTimeoutError, DeadKernelError) as exc:
        raise CellFailed(current["index"], f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}") from exc
    finally:
        if km.has_kernel:  # nbclient leaves a kernel manager it was given running
            run_sync(km.shutdown_kernel)(now=True)


PLOTLY = "application/vnd.plotly.v1+json"
#: The size of every static image, in CSS pixels (a figure's own where it sets one), and its pixels per CSS pixel.
STATIC_WIDTH, STATIC_HEIGHT, STATIC_SCALE = 900, 460, 1


class StaticImagesUnavailable(RuntimeError):
    """kaleido or a Chromium to drive cannot make the static images here."""


def kaleido_png(figure: dict[str, Any]) -> bytes:
    """A plotly figure (its JSON) as a PNG, drawn by kaleido in a headless Chromium (the system's: Debian's
    `chromium` package, or Chrome). Only maintainers need this: learners' installs get the stored images."""
    try:
        import kaleido  # noqa: F401 - plotly.io draws through it
        import plotly.io as pio
    except ImportError as exc:
        raise StaticImagesUnavailable(f"static images need kaleido ({exc.name} is missing): pip install -e "
                                      "'.[dev]'") from None
    layout = figure.get("layout", {})
    width, height = layout.get("width") or STATIC_WIDTH, layout.get("height") or STATIC_HEIGHT
    _DRAWING.setdefault("stop", _start_drawing())
    try:
        return pio.to_image(figure, format="png", width=width, height=height, scale=STATIC_SCALE)
    except Exception as exc:  # noqa: BLE001 - kaleido's errors for a missing browser vary by version
        raise StaticImagesUnavailable(f"kaleido could not draw a figure ({type(exc).__name__}: {exc}); it drives "
                                      "Chromium: apt-get install chromium, or set BROWSER_PATH") from None


def add_static_images(nb: NotebookNode, render: Callable[[dict[str, Any]], bytes] = kaleido_png) -> int:
    """Give every stored plotly figure of `nb` a PNG beside its interactive data, so GitHub, nbviewer and
    nbconvert show it, and JupyterLab's plotly extension finds nothing to add when the file is opened; and turn
    an explorer's snapshot (project.SNAPSHOT) into a static picture with the line saying how to use it.
    Returns how many images it added (figures that have one are left alone)."""
    added = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY in data and "image/png" not in data:
                data["image/png"] = base64.b64encode(render(data[PLOTLY])).decode("ascii")
                added += 1
            snapshot = data.pop(project.SNAPSHOT, None)
            if snapshot is not None:
                images = [base64.b64encode(render(fig)).decode("ascii") for fig in snapshot["figures"]]
                data["text/html"] = (f"<p><em>A snapshot: {snapshot['text']}.</em></p>" + "".join(
                    f'<img alt="explorer figure" src="data:image/png;base64,{png}"/>' for png in images))
                added += len(images)
    return added


#: kaleido's browser, started at the first figure of an `execute` run and stopped at its end.
_DRAWING: dict[str, Callable[[], None]] = {}


def _start_drawing() -> Callable[[], None]:
    """Start kaleido's browser once for all the figures of a run (a fresh one per figure takes seconds)."""
    try:
        import kaleido

        kaleido.start_sync_server(silence_warnings=True)
        return kaleido.stop_sync_server
    except Exception:  # noqa: BLE001 - older kaleido, or none: each figure then starts its own (or says why not)
        return lambda: None


def execute(chapters: Sequence[tuple[int, project.Chapter]], root: Path) -> int:
    """Sync, then re-execute `chapters` in order and store their outputs; a notebook that fails, or whose timings
    another program disturbed in every one of RUNS runs, is left unchanged."""
    ok = _sync_readme(root)[0]
    try:
        return _execute(chapters, root, ok)
    finally:
        _DRAWING.pop("stop", lambda: None)()


#: How many times execute runs a chapter whose timings came out disturbed (see noisy_timings) before it gives up: a
#: busy moment spoils one run, and stored outputs must come from a quiet one.
RUNS = 3
#: The warnings that say another program disturbed a timing: no stored notebook may carry one.
DISTURBED = (NoisyTimingWarning.__name__, BusyMachineWarning.__name__)


def noisy_timings(nb: NotebookNode) -> list[int]:
    """The index of the cell of each output of `nb` that carries a NoisyTimingWarning or a BusyMachineWarning:
    timings that another program disturbed."""
    return [index for index, cell in enumerate(nb.cells) for output in cell.get("outputs", [])
            if any(name in str(output.get("text", "")) for name in DISTURBED)]


def _quiet_run(path: Path, number: int, chapter: project.Chapter, root: Path) -> tuple[NotebookNode, list[int]]:
    """The chapter run top to bottom, again until no timing is disturbed, RUNS times at most: the last run, with the
    seconds it took in its metadata (chapter_time.RUN_KEY: the run time of a chapter's header), and the cells of its
    disturbed timings (none when it was quiet)."""
    for _ in range(RUNS):
        start = time.perf_counter()
        done = run_notebook(synced(read_notebook(path), number, chapter), root / "notebooks",
                            kernel=kernel_spec(sys.executable, env={project.STATIC_ENV: "1"}))
        done.metadata[chapter_time.RUN_KEY] = {"run_seconds": round(time.perf_counter() - start)}
        noisy = noisy_timings(done)
        if not noisy:
            break
    return done, noisy


def _execute(chapters: Sequence[tuple[int, project.Chapter]], root: Path, ok: bool) -> int:
    for number, chapter in chapters:
        path = root / "notebooks" / chapter.file
        if not os.path.lexists(path):
            print(f"notebooks/{chapter.file}: missing, nothing to execute (sync creates a skeleton)")
            ok = False
            continue
        start = time.perf_counter()
        try:
            done, noisy = _quiet_run(path, number, chapter, root)
        except (CellFailed, NotebookFileError) as exc:
            print(f"notebooks/{chapter.file}: {exc}; file left unchanged")
            ok = False
            continue
        if noisy:
            print(f"notebooks/{chapter.file}: timings disturbed by another program in each of {RUNS} runs (the "
                  f"last: {' or '.join(DISTURBED)} in cells {sorted(set(noisy))}); file left unchanged: re-execute "
                  "it when the machine is quiet (close other programs, wait for other jobs)")
            ok = False
            continue
        try:
            images = add_static_images(done)
        except StaticImagesUnavailable as exc:
            print(f"notebooks/{chapter.file}: {exc}; file left unchanged")
            return 1
        replace_file(path, dumps(synced(done, number, chapter)).encode("utf-8"))
        print(f"notebooks/{chapter.file}: executed in {time.perf_counter() - start:.1f} s, {images} static images")
    guide_ok = _sync_guide(root)[0]  # the teacher guide's answers come from the outputs just stored
    return 0 if ok and guide_ok else 1


def _select(names: Sequence[str]) -> list[tuple[int, project.Chapter]]:
    """(number, chapter) for each named notebook (a file name or a path to it), or for all when none is named."""
    numbered = list(enumerate(project.CHAPTERS))
    by_file = {chapter.file: (number, chapter) for number, chapter in numbered}
    unknown = [name for name in names if Path(name).name not in by_file]
    if unknown:
        raise ValueError(f"unknown notebook {unknown[0]!r}: expected one of {', '.join(by_file)}")
    return [by_file[Path(name).name] for name in names] if names else numbered


def clone_problem() -> str | None:
    """Why `python -m helpers notebooks` cannot work here (an installed package, not a clone), or None."""
    if (ROOT / "notebooks").is_dir():
        return None
    return (f"python -m helpers notebooks works on a clone of the repository, with the package installed editable "
            f"(pip install -e '.[dev]'); {ROOT} is not one")


def main(argv: list[str]) -> int:
    """`python -m helpers notebooks ARGS`: 0 when all is well, 1 when out of step or failing, 2 on bad usage.

    `notebooks record` is helpers.book.records' command (the command line sends it there): records uses the
    upkeep, so the upkeep never calls records."""
    if argv in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not argv or argv[0] not in ("sync", "check", "execute") or (argv[0] == "check" and len(argv) > 1):
        print(USAGE, file=sys.stderr)
        return 2
    command, names = argv[0], argv[1:]
    if (problem := clone_problem()) is not None:
        print(problem, file=sys.stderr)
        return 2
    if command == "check":
        found = problems(ROOT)
        print("\n".join(found) if found else "notebooks in step")
        return 1 if found else 0
    try:
        chapters = _select(names)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    return sync(chapters, ROOT) if command == "sync" else execute(chapters, ROOT)
