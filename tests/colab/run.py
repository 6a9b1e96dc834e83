"""Run the chapters top to bottom as a learner on one of Colab's runtimes would, with Colab's own package versions.

    .venv/bin/python tests/colab/run.py              # the TPU runtime's versions, every chapter
    .venv/bin/python tests/colab/run.py --image gpu  # the GPU runtime's versions, the chapters that use a GPU
                                                     # CI runs both (.ci/run); they need Python 3.13 and uv

1. A fresh virtual environment (.colab-venv, or .colab-venv-gpu) with the Python of Colab's runtime and exactly the
   versions pinned in pins-tpu.txt (or pins-gpu.txt: Google's published lists; see refresh_pins.py), installed
   without resolving anything else. There is no TPU or GPU here: JAX and CuPy take their no-accelerator paths
   (for the GPU runtime, see GPU_KERNEL_ENV).
2. Each notebook, as this checkout's last commit has it, runs in a fresh kernel of that environment, with
   `google.colab` (a stand-in) imported before the first cell, in an empty working folder, as on Colab. The set-up
   cell is the stored one, its URL pointed at that commit: it installs the series the way a learner's does.
   With the TPU image's versions every chapter runs as a learner who did the exercises runs it: each exercise's
   solution filled in (CI's one run of the solutions; helpers.book.solutions.with_solutions). With the GPU
   image's versions the exercises are left as stored, as a learner who skipped them runs the chapter.
3. The run fails on any error output, on any claim (`h.claim`) that printed False, on any printed line ending
   in "False", on a check cell of a filled-in exercise that did not print only ✅ verdicts, and when the set-up
   cell's install changed the version of a package Colab had preinstalled.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import nbformat
from jupyter_client.kernelspec import KernelSpec
from nbformat import NotebookNode

from helpers.book import upkeep
from helpers.book.solutions import unpassed_checks, with_solutions
from helpers.core import project
from helpers.learning import claims

ROOT = Path(__file__).resolve().parents[2]

HERE = Path(__file__).resolve().parent
STAND_IN = HERE / "stand_in"
PREFIX = "colab run:"
#: A last cell added to every notebook: where `helpers` came from, and whether the set-up cell enabled widgets.
AFTERWARDS = ("import json, sys\n"
              "print(json.dumps({'helpers': sys.modules['helpers'].__file__, "
              "'widgets': sys.modules['google.colab'].output.widget_manager_requests}))")
VERSIONS = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()}))")
#: The packages whose versions the run names once the environment is built (those installed).
NAMED = ("jax", "keras", "numpy", "cupy-cuda12x", "jax-cuda12-plugin", "nvidia-cuda-nvrtc-cu12")
#: The chapters that use CuPy, NVRTC or a GPU (project.Chapter.uses), run with the GPU runtime's versions.
GPU_CHAPTERS = tuple(chapter.file for chapter in project.chapters_using("GPU"))
#: Colab's GPU runtime has a GPU and NVIDIA's CUDA libraries (at the versions Google ships with JAX's CUDA plugin);
#: here there are neither. The plugin's check of those libraries' versions would fail, logging a traceback
#: ("RuntimeError: Unable to load CUDA. Is it installed?") in the first cell that uses JAX, which no learner on
#: that runtime sees. Without the check the plugin loads and registers as on Colab and, finding no GPU, leaves JAX
#: on the CPU quietly.
GPU_KERNEL_ENV = {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}


@dataclass(frozen=True)
class Image:
    """One of Colab's runtime images: the pins of its packages, the environment built from them, its chapters."""

    name: str
    pins: Path
    venv: Path
    chapters: tuple[project.Chapter, ...]
    kernel_env: dict[str, str] = field(default_factory=dict)  # what stands in for hardware that is not here
    solutions: bool = False  # run each chapter with its exercises' solutions filled in, and judge their checks


IMAGES = {
    "tpu": Image("tpu", HERE / "pins-tpu.txt", ROOT / ".colab-venv", project.CHAPTERS, solutions=True),
    "gpu": Image("gpu", HERE / "pins-gpu.txt", ROOT / ".colab-venv-gpu",
                 tuple(chapter for chapter in project.CHAPTERS if chapter.file in GPU_CHAPTERS), GPU_KERNEL_ENV),
}


class Failed(Exception):
    """The Colab-versions run cannot go on, or found a problem; the message is one line saying which."""


class _Arguments(argparse.ArgumentParser):
    """The command line; a bad one is a Failed (one line), not argparse's usage and exit."""

    def error(self, message: str) -> NoReturn:
        raise Failed(f"{message} ({self.format_usage().strip()})")


def choose_image(argv: list[str]) -> Image:
    """The image that the command line `argv` names with --image (tpu when none does)."""
    parser = _Arguments(prog="tests/colab/run.py", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--image", choices=sorted(IMAGES), default="tpu",
                        help=f"which Colab runtime's versions: tpu (every chapter) or gpu (chapters "
                             f"{', '.join(file[:2] for file in GPU_CHAPTERS)})")
    return IMAGES[parser.parse_args(argv).image]


def python_version(pins: Path) -> str:
    """The Python version ('3.13') that the pins file `pins` names."""
    found = re.search(r"^# python: (\d+\.\d+)$", pins.read_text(encoding="utf-8"), re.MULTILINE)
    if not found:
        raise Failed(f"{pins.name} names no Python version (a '# python: 3.13' line): run refresh_pins.py")
    return found.group(1)


def find_python(version: str) -> str:
    """The interpreter for Colab's Python `version`: $COLAB_PYTHON, python3.13 on the PATH, or pyenv's."""
    candidates = [os.environ.get("COLAB_PYTHON", ""), shutil.which(f"python{version}") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for candidate in filter(None, candidates):
        ran = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True)
        if ran.returncode == 0 and ran.stdout.strip() == version:
            return candidate
    raise Failed(f"no Python {version} found (Colab's): install one (e.g. `pyenv install {version}`) or set "
                 f"COLAB_PYTHON to its path")


def find_uv() -> str:
    """uv (in the dev extra), next to this interpreter or on the PATH."""
    for candidate in (Path(sys.executable).parent / "uv", shutil.which("uv")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise Failed("uv is not installed: pip install -e '.[dev]' brings it")


def _run(command: list[str], what: str) -> None:
    """Run `command`; if it fails, raise Failed naming `what` failed, with the command's last line of error."""
    ran = subprocess.run(command, capture_output=True, text=True)
    if ran.returncode != 0:
        last = (ran.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise Failed(f"{what}: {last}")


def build_environment(image: Image, python: str, uv: str) -> Path:
    """A fresh environment holding exactly `image`'s pins (and nothing they would pull in); its interpreter."""
    _run([uv, "venv", "--quiet", "--clear", "--python", python, str(image.venv)], f"cannot make a virtual "
         f"environment with {python}")
    venv_python = image.venv / "bin" / "python"
    _run([uv, "pip", "install", "--quiet", "--python", str(venv_python), "--no-deps", "-r", str(image.pins)],
         "cannot install Colab's pinned versions (is the package index reachable?)")
    return venv_python


def versions(python: Path) -> dict[str, str]:
    """Every installed distribution of `python`'s environment and its version."""
    # Not from this checkout's folder: `python -c` would find its loops_to_tpus.egg-info there.
    ran = subprocess.run([str(python.absolute()), "-c", VERSIONS], capture_output=True, text=True, check=True,
                         cwd=python.parent)
    return json.loads(ran.stdout)


def head_commit() -> str:
    """This checkout's commit, which the set-up cells install (saying so when there are uncommitted changes)."""
    ran = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if ran.returncode != 0:
        raise Failed(f"{ROOT} is not a git checkout: the set-up cell installs the series from a commit")
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print(f"{PREFIX} note: uncommitted changes are not run (the chapters and the series come from HEAD)")
    return ran.stdout.strip()


def read_chapter(chapter: project.Chapter, commit: str) -> NotebookNode:
    """`chapter`'s notebook as `commit` has it: the same commit the set-up cell installs the series from."""
    ran = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:notebooks/{chapter.file}"],
                         capture_output=True, text=True)
    if ran.returncode != 0:
        raise Failed(f"commit {commit[:12]} has no notebooks/{chapter.file}: {ran.stderr.strip()}")
    return nbformat.reads(ran.stdout, as_version=4)


def pointed_at_checkout(nb: NotebookNode, commit: str) -> NotebookNode:
    """`nb` with its set-up cell's requirement URL pointed at this checkout's `commit`."""
    public = f"git+{project.REPO_URL}@{project.BRANCH}"
    setups = [cell for cell in nb.cells if "setup" in cell.metadata.get("tags", [])]
    if len(setups) != 1 or public not in setups[0].source:
        raise Failed(f"expected one set-up cell installing {public}: run `python -m helpers notebooks sync`")
    setups[0].source = setups[0].source.replace(public, f"git+file://{ROOT}@{commit}")
    return nb


def set_up_as_on_colab(nb: NotebookNode, venv: Path) -> list[str]:
    """What went wrong with the set-up, read from the AFTERWARDS cell: helpers must come from the environment
    `venv` (installed by the set-up cell), not from this checkout, and the set-up cell must have enabled widgets."""
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.output_type == "stream")
    # the facts are the line the cell printed: a thread of an earlier cell may print into this cell's output too
    line = next((line for line in text.splitlines() if line.startswith('{"helpers": ')), None)
    if line is None:
        return [f"the notebook did not run to its end (its last cell printed {text[-300:]!r})"]
    facts = json.loads(line)
    found = [] if Path(facts["helpers"]).is_relative_to(venv) else \
        [f"helpers were imported from {facts['helpers']}, not from the environment the set-up cell installed into"]
    return found + ([] if facts["widgets"] == 1 else
                    [f"the set-up cell enabled Colab's widget manager {facts['widgets']} times, not once"])


def problems(nb: NotebookNode, venv: Path, checks: list[int] | None = None) -> list[str]:
    """What a learner would see go wrong in an executed notebook (claims.problems: errors, false claims, tracebacks,
    lines ending in False), a set-up that did not install helpers into `venv`, and, where the exercises' solutions
    were filled in, a check cell among `checks` that did not pass."""
    last = copy.deepcopy(nb.cells[-1])  # what an earlier cell's thread printed late lands here: judged too
    for output in last.get("outputs", []):
        if output.output_type == "stream":
            output.text = "".join(line for line in output.text.splitlines(keepends=True)
                                  if not line.startswith('{"helpers": '))
    return (set_up_as_on_colab(nb, venv) + claims.problems([*nb.cells[:-1], last])
            + unpassed_checks(nb, checks or []))


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Preinstalled packages whose version the set-up cell's install changed (new packages are fine)."""
    return [f"{name} {version} -> {after.get(name, 'removed')}" for name, version in sorted(before.items())
            if after.get(name) != version]


def with_solutions_filled_in(nb: NotebookNode, image: Image) -> tuple[NotebookNode, list[int]]:
    """`nb`, with its exercises' solutions filled in if `image` runs them, and the check cells to judge."""
    if not image.solutions:
        return nb, []
    try:
        return with_solutions(nb)
    except ValueError as exc:
        raise Failed(str(exc)) from exc


def run_chapter(chapter: project.Chapter, image: Image, kernel: KernelSpec, commit: str) -> list[str]:
    """Run one chapter as on Colab in `kernel`, printing how long it took; what went wrong, each named by file."""
    nb, checks = with_solutions_filled_in(pointed_at_checkout(read_chapter(chapter, commit), commit), image)
    nb.cells.append(nbformat.v4.new_code_cell(AFTERWARDS))
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="content-") as content:  # Colab's /content: empty
        try:
            found = problems(upkeep.run_notebook(nb, Path(content), kernel=kernel), image.venv, checks)
        except upkeep.CellFailed as exc:
            found = [str(exc)]
    verdict = "ok" if not found else f"{len(found)} problem(s)"
    solved = f" (the solutions of its {len(checks)} exercises filled in)" if checks else ""
    print(f"{PREFIX} {chapter.file}: {verdict} in {time.perf_counter() - began:.0f} s{solved}", flush=True)
    return [f"{chapter.file}: {problem}" for problem in found]


def run_image(image: Image, start: float) -> list[str]:
    """Build `image`'s environment and run its chapters in it (`start`: when the run began); what went wrong."""
    python = find_python(python_version(image.pins))
    uv = find_uv()
    commit = head_commit()
    print(f"{PREFIX} building Colab's {image.name.upper()} environment with {python}", flush=True)
    venv_python = build_environment(image, python, uv)
    before = versions(venv_python)
    named = ", ".join(f"{name} {before[name]}" for name in NAMED if name in before)
    print(f"{PREFIX} {len(before)} packages at Colab's versions in {time.perf_counter() - start:.0f} s ({named})",
          flush=True)
    kernel = upkeep.kernel_spec(str(venv_python), env={"PYTHONPATH": str(STAND_IN),
                                                       "PYDEVD_DISABLE_FILE_VALIDATION": "1", **image.kernel_env},
                                startup=["import google.colab"])
    failures = [failure for chapter in image.chapters for failure in run_chapter(chapter, image, kernel, commit)]
    return failures + [f"the set-up cell changed a preinstalled package: {change}"
                       for change in changed(before, versions(venv_python))]


def main(argv: list[str]) -> int:
    """Run the chapters of the image that `argv` names; 0 if a learner would see nothing go wrong."""
    start = time.perf_counter()
    try:
        image = choose_image(argv)
        failures = run_image(image, start)
    except Failed as exc:
        print(f"{PREFIX} FAILED: {exc}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"{PREFIX} {failure}", file=sys.stderr)
    print(f"{PREFIX} {image.name.upper()} image {'FAILED' if failures else 'passed'} in "
          f"{time.perf_counter() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
