"""Recorded runs: the chapters as they ran on a real GPU or TPU, stored in docs/runs/<device>-<date>/.

    python -m helpers notebooks record [NOTEBOOK ...] [--force]   # on a GPU or a TPU

On whatever accelerator is here (a GPU CuPy can use, or JAX on a GPU or TPU), runs each chapter that uses it
(project.Chapter.uses) top to bottom in a fresh kernel with its exercises' solutions filled in (helpers.book.solutions),
and stores it with a run.json and a README.md saying how it was made: device, driver, package versions, commit.
Machine paths, host names and GPU serial numbers are scrubbed from the outputs; a figure too large for the
repository is thinned (or left out), saying so, so that each chapter stays under RUN_LIMIT. Each chapter's findings
(helpers.book.run_checks) are printed: tests/test_recorded_runs.py holds every recorded run to them, with the known
ones listed beside the run in findings.json. Without a GPU or TPU it says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import re
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import nbformat
import numpy as np

from ..core import project
from ..core.files import replace_file
from ..core.project import ROOT
from . import run_checks, solutions, upkeep

RUNS = ROOT / "docs" / "runs"
#: What run.json says it is, and the version of its layout.
KIND, VERSION = "loops-to-tpus recorded run", 1
#: The most a recorded chapter may weigh, and the most one of its figures may weigh before it is thinned.
RUN_LIMIT, FIGURE_LIMIT = 2_000_000, 400_000
#: How many numbers a thinned array keeps at most (a 2-D one keeps every k-th row and column).
THINNED_SIZE = 65_536
FINDINGS = "findings.json"
PROG = "python -m helpers notebooks record"


#: A GPU's serial number as nvidia-smi prints it: it names one card, so no recorded run keeps it.
SERIAL = r"GPU-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"


class RecordError(Exception):
    """A recording cannot start: the one line says why (exit 2)."""


# ---------------------------------------------------------------------------------------------------------------
# Machine paths out


@dataclass(frozen=True)
class Scrubber:
    """What a run's outputs must not carry, and what replaces each: this checkout's folder, the Python's prefix,
    the home folder, the host name, GPU serial numbers, and the kernel's temporary cell files."""

    root: str
    prefix: str
    home: str
    host: str

    @classmethod
    def here(cls) -> Scrubber:
        """The paths and host name of this machine."""
        return cls(str(ROOT), sys.prefix, str(Path.home()), socket.gethostname())

    def text(self, value: str) -> str:
        """`value` with every machine path and name replaced."""
        for path, by in ((self.root, "."), (self.prefix, "<python>"), (self.home, "~")):
            if len(path) > 1:
                value = value.replace(path + "/", by + "/").replace(path, by)
        value = re.sub(r"/tmp/ipykernel_\d+/\d+\.py", "<cell>", value)
        value = re.sub(SERIAL, "GPU-<serial>", value)
        if len(self.host) >= 3:
            value = re.sub(rf"(?<![\w-]){re.escape(self.host)}(?![\w-])", "<host>", value)
        return value

    def outputs(self, nb: Any) -> None:
        """Scrub every text of every output of `nb`, in place (encoded figure data left as it is)."""
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                for key in list(output):
                    if key not in ("output_type", "execution_count", "metadata"):
                        output[key] = self._value(output[key])

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._value(v) for v in value]
        if isinstance(value, dict):
            return {k: v if k == "bdata" else self._value(v) for k, v in value.items()}
        return value


#: What no recorded run may carry (tests/test_recorded_runs.py reads the stored files for it).
MACHINE_TRACES = re.compile(rf"/home/\w|/Users/\w|/root/|[A-Z]:\\Users\\|/tmp/ipykernel_|{SERIAL}")


# ---------------------------------------------------------------------------------------------------------------
# Figures thinned


def _array(value: Any) -> np.ndarray | None:
    """A trace's numbers (plotly's {'dtype', 'bdata', 'shape'} or a list of numbers), or None for anything else."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        shape = value.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    if not (isinstance(value, list) and value and isinstance(value[0], int | float | list)):
        return None
    try:
        found = np.asarray(value, dtype=float)
    except (ValueError, TypeError):  # ragged, or not numbers
        return None
    return found if found.ndim in (1, 2) else None


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a trace's array (of numbers, or of labels), or None for a value that is not one."""
    if isinstance(value, dict):
        found = _array(value)
        return None if found is None else found.shape
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(row, list) for row in value) and len({len(row) for row in value}) == 1:
        return len(value), len(value[0])
    return None if any(isinstance(v, list | dict) for v in value) else (len(value),)


def _every(value: Any, step: int, dims: int) -> Any:
    """Every `step`-th element of a trace's array (every `step`-th row and column of a 2-D one), in its own form."""
    if isinstance(value, dict):
        found = _array(value)
        array = np.ascontiguousarray(found[::step, ::step] if dims == 2 else found[::step],
                                     dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        out = {"dtype": value["dtype"], "bdata": base64.b64encode(array.tobytes()).decode("ascii")}
        return {**out, "shape": ", ".join(str(n) for n in array.shape)} if "shape" in value else out
    return [row[::step] for row in value[::step]] if dims == 2 else value[::step]


def thin_trace(trace: dict[str, Any], size: int = THINNED_SIZE) -> str | None:
    """Keep every k-th row and column of a trace's 2-D arrays (and the matching x and y), or every k-th point of
    its 1-D ones (labels too), so that no array holds more than `size` values; in place. What it did, or None."""
    shapes = {key: shape for key, value in trace.items() if (shape := _shape(value)) is not None}
    grids = [shape for shape in shapes.values() if len(shape) == 2]  # a colour scale is one too: the largest counts
    if grids:
        rows, cols = max(grids, key=math.prod)
        step = math.ceil(math.sqrt(rows * cols / size))
        if step <= 1:
            return None
        for key, shape in shapes.items():
            if shape == (rows, cols):
                trace[key] = _every(trace[key], step, 2)
            elif (key, shape) in (("x", (cols,)), ("y", (rows,))):
                trace[key] = _every(trace[key], step, 1)
        for axis in ("x", "y"):  # a grid placed by x0 and dx keeps its coordinates (and its hover text's)
            if axis not in shapes:
                trace[f"d{axis}"] = trace.get(f"d{axis}", 1) * step
        return f"one row and one column in {step} kept of its {rows:,} x {cols:,} grid"
    longest = max((shape[0] for shape in shapes.values()), default=0)
    step = math.ceil(longest / size)
    if step <= 1:
        return None
    for key, shape in shapes.items():
        if shape == (longest,):
            trace[key] = _every(trace[key], step, 1)
    return f"one point in {step} kept of its {longest:,}"


def _size(value: Any) -> int:
    """About the bytes `value` takes in a notebook file (nbformat writes one list element a line)."""
    return len(json.dumps(value, indent=1))


def _left_out(output: Any, why: str) -> None:
    output["data"] = {"text/plain": f"[a figure left out of this recorded run: {why}; the chapter draws it when run]"}
    output["metadata"] = {}


def thin(nb: Any, figure_limit: int = FIGURE_LIMIT, run_limit: int = RUN_LIMIT) -> list[str]:
    """Make `nb` fit the repository, in place: each plotly figure over `figure_limit` bytes thinned (its title saying
    so) or, if still over, left out; then the largest figures left out until the file is under `run_limit`. What
    was done, one line per figure."""
    notes, figures = [], []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            figure = output.get("data", {}).get(upkeep.PLOTLY)
            if figure is None:
                continue
            before = _size(figure)
            if before > figure_limit:
                done = [note for trace in figure.get("data", []) if (note := thin_trace(trace))]
                if done and _size(figure) <= figure_limit:
                    _say_thinned(figure, "; ".join(done))
                    notes.append(f"cell {index}: figure thinned from {before:,} to {_size(figure):,} bytes: "
                                 f"{'; '.join(done)}")
                else:
                    _left_out(output, f"{before:,} bytes of figure data")
                    notes.append(f"cell {index}: figure left out ({before:,} bytes of figure data)")
                    continue
            figures.append((index, output))
    for index, output in sorted(figures, key=lambda found: -_size(found[1]["data"])):
        if len(upkeep.dumps(nb).encode()) <= run_limit:
            break
        _left_out(output, "the recorded chapter would weigh over 2 MB with it")
        notes.append(f"cell {index}: figure left out (the chapter would weigh over {run_limit:,} bytes)")
    return notes


def _say_thinned(figure: dict[str, Any], how: str) -> None:
    """Add to the figure's title that a recorded run keeps less of its data."""
    layout = figure.setdefault("layout", {})
    title = layout.get("title")
    text = title.get("text", "") if isinstance(title, dict) else str(title or "")
    note = f"(recorded run, thinned: {how})"
    layout["title"] = {**(title if isinstance(title, dict) else {}), "text": f"{text}<br><sub>{note}</sub>"}


# ---------------------------------------------------------------------------------------------------------------
# The stored runs


@dataclass(frozen=True)
class Run:
    """One recorded run: its folder under docs/runs/ and its run.json."""

    folder: Path
    facts: dict[str, Any]

    @property
    def device(self) -> str:
        return self.facts["device"]["name"]

    @property
    def date(self) -> str:
        return self.facts["date"]

    @property
    def label(self) -> str:
        """How the book and the README name it: 'NVIDIA H200, 2026-11-28'."""
        return f"{self.device}, {self.date}"

    def chapters(self) -> list[str]:
        """The chapter files the run holds, in the series' order."""
        return [chapter.file for chapter in project.CHAPTERS if (self.folder / chapter.file).is_file()]

    def devices(self) -> list[str]:
        """Every name the run's accelerators go by (as found and as their published specs name them)."""
        names = [self.device] + [name for d in self.facts.get("facts", {}).get("devices", [])
                                 for name in (d.get("name"), d.get("spec")) if name]
        return list(dict.fromkeys(names))

    def known(self) -> list[dict[str, Any]]:
        """The run's known findings (findings.json beside it): each with its chapter, cell, rule, text and the
        issue item it belongs to. A ValueError, in one line, for a file that is not such a list."""
        path = self.folder / FINDINGS
        if not path.is_file():
            return []
        try:
            found = json.loads(path.read_text(encoding="utf-8"))["findings"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a findings file ({type(exc).__name__}: {exc})") from None
        keys = {"chapter", "cell", "rule", "text", "item"}
        if not isinstance(found, list) or not all(isinstance(f, dict) and keys <= set(f) for f in found):
            raise ValueError(f"{path}: each finding needs {', '.join(sorted(keys))}")
        return found


def compare(run: Run) -> tuple[list[str], list[str]]:
    """What `run_checks` finds in each of the run's chapters against the known findings beside it: (new, gone),
    each one line. New: found, not listed (shown as the findings.json entry to add, once it has its issue item);
    gone: listed, no longer found (remove it, with the run it was fixed in)."""
    known = {(k["chapter"], k["cell"], k["rule"], k["text"]) for k in run.known()}
    found = {(chapter, *finding.key()): finding for chapter in run.chapters()
             for finding in run_checks.findings(nbformat.read(run.folder / chapter, as_version=4).cells,
                                                run.devices())}
    new = [f"{finding}; to list it: " + json.dumps({"chapter": key[0], "cell": key[1], "rule": key[2],
                                                    "text": key[3], "item": "issue N, item M"}, ensure_ascii=False)
           for key, finding in found.items() if key not in known]
    gone = [f"{chapter} cell {cell}: {rule}: {text!r} is listed in {FINDINGS} but no longer found"
            for chapter, cell, rule, text in sorted(known - set(found))]
    return new, gone


def runs(folder: Path = RUNS) -> list[Run]:
    """Every recorded run under `folder`, oldest first; a ValueError naming a run.json that is not one."""
    found = []
    for path in sorted(folder.glob("*/run.json")):
        try:
            facts = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a readable JSON file ({exc})") from None
        if not isinstance(facts, dict) or facts.get("kind") != KIND or facts.get("version") != VERSION:
            raise ValueError(f"{path}: not a version {VERSION} recorded run ({PROG} writes them)")
        device = facts.get("device")
        if not (isinstance(device, dict) and isinstance(device.get("name"), str) and isinstance(device.get("kind"), str)
                and isinstance(facts.get("date"), str) and isinstance(facts.get("commit"), str)):
            raise ValueError(f"{path}: a recorded run names its device (name and kind), date and commit")
        found.append(Run(path.parent, facts))
    return sorted(found, key=lambda run: (run.date, run.folder.name))


def latest(chapter: str, folder: Path = RUNS) -> Run | None:
    """The latest recorded run that holds `chapter` (a file name), or None."""
    holding = [run for run in runs(folder) if (run.folder / chapter).is_file()]
    return holding[-1] if holding else None


def slug(name: str) -> str:
    """A device's name as a folder name: 'NVIDIA H200' -> 'nvidia-h200'."""
    return "-".join(filter(None, "".join(c if c.isalnum() else "-" for c in name.lower()).split("-")))


def readme(facts: dict[str, Any]) -> str:
    """The run's README: what it is, on what, how it was made, what was thinned, how to check it."""
    f = facts.get("facts", {})
    packages = ", ".join(f"{name} {version}" for name, version in f.get("packages", {}).items())
    device = facts["device"]
    lines = [f"# Chapters as they ran on the {device['name']} ({device['kind']}), {facts['date']}", "",
             "What a learner with this accelerator saw, cell by cell, each chapter run top to bottom with every "
             "exercise's solution filled in. Read them in the book (`python -m helpers site build DIR`: each GPU "
             "or TPU chapter's page links to its latest recorded run) or in any notebook viewer.", "",
             "## How they were made", "", f"- {facts['made_by'].rstrip('.')}.",
             f"- At commit {facts['commit']}" + (" (with uncommitted changes)" if facts.get("changed") else "") + ".",
             f"- Environment variables: {', '.join(f'{k}={v}' for k, v in facts.get('environment', {}).items())}.",
             *(f"- {note}" for note in facts.get("notes", [])),
             "", "## The machine", "", "- " + "; ".join([device["name"], *(
                 f"{key.replace('_', ' ')} {f[key]}" for key in ("nvidia_driver", "cuda_driver", "cuda_runtime")
                 if f.get(key))]) + ".", f"- Python {f.get('python', '?')}; {packages or 'packages not recorded'}.",
             *([f"- {f['host']}."] if f.get("host") else []), "",
             "## The chapters", ""]
    for file, chapter in facts["chapters"].items():
        lines.append(f"- `{file}`" + (f", {chapter['seconds']:.0f} s" if chapter.get("seconds") else "") + ".")
        lines += [f"  - {note}" for note in chapter.get("thinned", [])]
    lines += ["", "## Checked", "",
              "`tests/test_recorded_runs.py` holds every chapter here to `helpers.book.run_checks` (no error or False "
              "claim, no measurement over a bound or roof the run printed, no sentence its numbers contradict, no "
              "prediction for this device raced against a measurement, only the warnings listed with why). "
              f"What a run was recorded with is listed in `{FINDINGS}`, each finding with the issue item it belongs "
              "to; anything new, or a listed finding gone, fails the test.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Recording


@dataclass(frozen=True)
class Present:
    """The accelerators here: their kinds ("GPU", "TPU"), the names they go by, and the report's facts."""

    kinds: tuple[str, ...]
    name: str
    devices: tuple[str, ...]
    facts: dict[str, Any]


def present() -> Present:
    """The accelerators here; RecordError, in one line, when there is none."""
    from . import gpu_report, report_case

    try:
        here = report_case.accelerators(purpose="it records the chapters that use one, as they run there")
    except report_case.NoAccelerator as exc:
        raise RecordError(str(exc)) from None
    kinds = tuple(dict.fromkeys((["GPU"] if here.gpu is not None else [])
                                + ([here.jax_kind.upper()] if here.jax_kind else [])))
    facts = gpu_report.facts(here)
    names = [name for d in facts["devices"] for name in (d["name"], d.get("spec")) if name and name != "cpu"]
    return Present(kinds, names[0], tuple(dict.fromkeys(names)), facts)


def store(nb: Any, scrubber: Scrubber) -> tuple[str, list[str]]:
    """`nb` as a recorded run keeps it: scrubbed, thinned; its file text and the notes on what was thinned."""
    scrubber.outputs(nb)
    notes = thin(nb)
    return upkeep.dumps(nb), notes


def record_chapter(chapter: project.Chapter, devices: tuple[str, ...]) -> tuple[Any, float, list[str]]:
    """Run `chapter` with its solutions filled in: the executed notebook, its seconds, and what went wrong."""
    nb, checks = solutions.with_solutions(nbformat.read(ROOT / "notebooks" / chapter.file, as_version=4))
    start = time.perf_counter()
    done = upkeep.run_notebook(nb, ROOT / "notebooks", timeout=upkeep.CELL_TIMEOUT)
    seconds = time.perf_counter() - start
    found = solutions.unpassed_checks(done, checks) + [str(f) for f in run_checks.findings(done.cells, devices)]
    return done, seconds, found


class _Arguments(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise RecordError(f"{message} (usage: {PROG} [NOTEBOOK ...] [--force])")


def _chosen(names: list[str], kinds: tuple[str, ...]) -> list[project.Chapter]:
    """The chapters to record: those named (each must use an accelerator here), or every one that does."""
    using = [chapter for chapter in project.CHAPTERS if set(chapter.uses) & set(kinds)]
    if not names:
        return using
    by_file = {chapter.file: chapter for chapter in using}
    wrong = [name for name in names if Path(name).name not in by_file]
    if wrong:
        raise RecordError(f"{wrong[0]!r} is not a chapter that uses the {' or '.join(kinds)} here: choose from "
                          f"{', '.join(by_file)}")
    return [by_file[Path(name).name] for name in names]


def main(argv: list[str], folder: Path = RUNS) -> int:
    """`notebooks record [NOTEBOOK ...] [--force]`: 0 recorded, 1 a chapter failed, 2 nothing could start."""
    parser = _Arguments(prog=PROG, description=__doc__.strip().splitlines()[0])
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK")
    parser.add_argument("--force", action="store_true", help="write into a run folder that exists already")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, after printing it
        return exc.code if isinstance(exc.code, int) else 0
    except RecordError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    try:
        here = present()
        chapters = _chosen(args.notebooks, here.kinds)
        date = here.facts["date"][:10]
        target = folder / f"{slug(here.name)}-{date}"
        if target.exists() and any(target.iterdir()) and not args.force:
            raise RecordError(f"{target} holds a run already: add --force to record into it")
    except RecordError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    target.mkdir(parents=True, exist_ok=True)
    return _record(chapters, here, target, date)


def _record(chapters: list[project.Chapter], here: Present, target: Path, date: str) -> int:
    """Record each chapter into `target`, then its run.json and README.md; 1 if a chapter did not run through."""
    facts_path = target / "run.json"
    old = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.is_file() else {}
    helpers = here.facts.get("helpers") or {}
    facts = {"kind": KIND, "version": VERSION, "device": {"name": here.name, "kind": "/".join(here.kinds)},
             "date": date, "made_by": f"`{PROG}` (every chapter in a fresh kernel, {upkeep.CELL_TIMEOUT} s a cell)",
             "commit": helpers.get("commit", "not a git checkout"), "changed": helpers.get("changed", False),
             "environment": dict(upkeep.KERNEL_ENV), "facts": here.facts, "chapters": old.get("chapters", {})}
    failed, scrubber = 0, Scrubber.here()
    for chapter in chapters:
        print(f"{chapter.file}: running on the {here.name} ...", flush=True)
        try:
            done, seconds, found = record_chapter(chapter, here.devices)
        except upkeep.CellFailed as exc:
            print(f"{chapter.file}: {exc}; not recorded")
            failed += 1
            continue
        text, notes = store(done, scrubber)
        replace_file(target / chapter.file, text.encode("utf-8"))
        facts["chapters"][chapter.file] = {"seconds": round(seconds, 1), "thinned": notes}
        print(f"{chapter.file}: recorded in {seconds:.0f} s, {len(text.encode()):,} bytes"
              + "".join(f"\n  {line}" for line in notes + found))
        if found:
            print(f"  list each finding in {target.name}/{FINDINGS} with the issue item it belongs to, or fix the "
                  "chapter: tests/test_recorded_runs.py fails on a finding not listed")
    facts["chapters"] = {c.file: facts["chapters"][c.file] for c in project.CHAPTERS if c.file in facts["chapters"]}
    replace_file(facts_path, (json.dumps(facts, indent=1) + "\n").encode("utf-8"))
    replace_file(target / "README.md", readme(facts).encode("utf-8"))
    print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 1 if failed else 0

