"""Run every chapter top to bottom as a learner on Colab's TPU runtime would, with Colab's own package versions.

    .venv/bin/python tests/colab/run.py          # CI runs this (.ci/run); needs Python 3.13 and uv

1. A fresh virtual environment (.colab-venv) with the Python of Colab's runtime and exactly the versions pinned
   in pins-tpu.txt (Google's published list; see refresh_pins.py), installed without resolving anything else.
2. Each notebook runs in a fresh kernel of that environment, `google.colab` (a stand-in) imported before the
   first cell, in an empty working folder, as on Colab. The set-up cell is the stored one, its URL pointed at
   this checkout's commit: it installs the series the way a learner's does.
3. The run fails on any error output, on any claim (`h.claim`) that printed False, on any printed line ending
   in "False", and when the set-up cell's install changed the version of a package Colab had preinstalled.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from helpers import claims, project, upkeep

ROOT = Path(__file__).resolve().parents[2]

HERE = Path(__file__).resolve().parent
PINS = HERE / "pins-tpu.txt"
STAND_IN = HERE / "stand_in"
VENV = ROOT / ".colab-venv"
PREFIX = "colab run:"
#: A last cell added to every notebook: where `helpers` came from, and whether the set-up cell enabled widgets.
AFTERWARDS = ("import json, sys\n"
              "print(json.dumps({'helpers': sys.modules['helpers'].__file__, "
              "'widgets': sys.modules['google.colab'].output.widget_manager_requests}))")
VERSIONS = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()}))")


class Failed(Exception):
    """The Colab-versions run cannot go on, or found a problem; the message is one line saying which."""


def _python_version() -> str:
    found = re.search(r"^# python: (\d+\.\d+)$", PINS.read_text(encoding="utf-8"), re.MULTILINE)
    if not found:
        raise Failed(f"{PINS.name} names no Python version (a '# python: 3.13' line): run refresh_pins.py")
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


def build_environment(python: str, uv: str) -> Path:
    """A fresh .colab-venv holding exactly the pinned versions (and nothing they would pull in); its interpreter."""
    _run([uv, "venv", "--quiet", "--clear", "--python", python, str(VENV)], f"cannot make a virtual environment "
         f"with {python}")
    venv_python = VENV / "bin" / "python"
    _run([uv, "pip", "install", "--quiet", "--python", str(venv_python), "--no-deps", "-r", str(PINS)],
         "cannot install Colab's pinned versions (is the package index reachable?)")
    return venv_python


def versions(python: Path) -> dict[str, str]:
    """Every installed distribution of `python`'s environment and its version."""
    ran = subprocess.run([str(python), "-c", VERSIONS], capture_output=True, text=True, check=True)
    return json.loads(ran.stdout)


def head_commit() -> str:
    ran = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if ran.returncode != 0:
        raise Failed(f"{ROOT} is not a git checkout: the set-up cell installs the series from a commit")
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print(f"{PREFIX} note: uncommitted changes are not installed by the set-up cell (it installs HEAD)")
    return ran.stdout.strip()


def pointed_at_checkout(nb: NotebookNode, commit: str) -> NotebookNode:
    """`nb` with its set-up cell's requirement URL pointed at this checkout's `commit`."""
    public = f"git+{project.REPO_URL}@{project.BRANCH}"
    setups = [cell for cell in nb.cells if "setup" in cell.metadata.get("tags", [])]
    if len(setups) != 1 or public not in setups[0].source:
        raise Failed(f"expected one set-up cell installing {public}: run `python -m helpers notebooks sync`")
    setups[0].source = setups[0].source.replace(public, f"git+file://{ROOT}@{commit}")
    return nb


def set_up_as_on_colab(nb: NotebookNode) -> list[str]:
    """What went wrong with the set-up, read from the AFTERWARDS cell: helpers must come from the environment
    (installed by the set-up cell), not from this checkout, and the set-up cell must have enabled widgets."""
    outputs = nb.cells[-1].get("outputs", [])
    if not outputs or outputs[-1].output_type != "stream":
        return ["the notebook did not run to its end"]
    facts = json.loads(outputs[-1].text)
    found = [] if Path(facts["helpers"]).is_relative_to(VENV) else \
        [f"helpers were imported from {facts['helpers']}, not from the environment the set-up cell installed into"]
    return found + ([] if facts["widgets"] == 1 else
                    [f"the set-up cell enabled Colab's widget manager {facts['widgets']} times, not once"])


def problems(nb: NotebookNode) -> list[str]:
    """What a learner would see go wrong in an executed notebook: errors, false claims, lines ending in False."""
    found = set_up_as_on_colab(nb)
    for index, cell in enumerate(nb.cells[:-1]):
        for output in cell.get("outputs", []):
            claim = output.get("metadata", {}).get(claims.CLAIM_KEY)
            text = output.get("text", "") if output.output_type == "stream" else \
                output.get("data", {}).get("text/plain", "")
            if output.output_type == "error":
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif claim is not None and not claim["holds"]:
                found.append(f"cell {index}: claim printed False: {claim['statement']}")
            elif output.output_type == "stream" and output.name == "stderr" and "Traceback" in text:
                found.append(f"cell {index}: a traceback on stderr: {text.strip().splitlines()[-1]}")
            else:
                found += [f"cell {index}: printed {line.strip()!r}" for line in str(text).splitlines()
                          if line.rstrip().endswith("False")]
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Preinstalled packages whose version the set-up cell's install changed (new packages are fine)."""
    return [f"{name} {version} -> {after.get(name, 'removed')}" for name, version in sorted(before.items())
            if after.get(name) != version]


def main() -> int:
    start = time.perf_counter()
    try:
        python = find_python(_python_version())
        uv = find_uv()
        commit = head_commit()
        print(f"{PREFIX} building Colab's TPU environment with {python}", flush=True)
        venv_python = build_environment(python, uv)
        before = versions(venv_python)
        print(f"{PREFIX} {len(before)} packages at Colab's versions in {time.perf_counter() - start:.0f} s "
              f"(jax {before.get('jax')}, keras {before.get('keras')}, numpy {before.get('numpy')})", flush=True)
        kernel = upkeep.kernel_spec(str(venv_python), env={"PYTHONPATH": str(STAND_IN),
                                                           "PYDEVD_DISABLE_FILE_VALIDATION": "1"},
                                    startup=["import google.colab"])
        failures = []
        for chapter in project.CHAPTERS:
            nb = pointed_at_checkout(nbformat.read(ROOT / "notebooks" / chapter.file, as_version=4), commit)
            nb.cells.append(nbformat.v4.new_code_cell(AFTERWARDS))
            began = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="content-") as content:  # Colab's /content: empty
                try:
                    found = problems(upkeep.run_notebook(nb, Path(content), kernel=kernel))
                except upkeep.CellFailed as exc:
                    found = [str(exc)]
            failures += [f"{chapter.file}: {problem}" for problem in found]
            verdict = "ok" if not found else f"{len(found)} problem(s)"
            print(f"{PREFIX} {chapter.file}: {verdict} in {time.perf_counter() - began:.0f} s", flush=True)
        failures += [f"the set-up cell changed a preinstalled package: {change}"
                     for change in changed(before, versions(venv_python))]
    except Failed as exc:
        print(f"{PREFIX} FAILED: {exc}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"{PREFIX} {failure}", file=sys.stderr)
    print(f"{PREFIX} {'FAILED' if failures else 'passed'} in {time.perf_counter() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
