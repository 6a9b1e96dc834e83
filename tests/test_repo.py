"""Repository checks: the README's two set-up commands and CI, the chapter map, lint, the complexity of helpers/,
Binder and conda files, and what CI's floors step (tests/floors.py) pins and leaves off.

The README's ```bash blocks are reserved for the two set-up commands, each one line right under its heading;
CI (.ci/run) runs the test command verbatim, so the instructions a reader follows are the ones CI proves.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from floors import FLOORED, HONESTY_TEST, OFF_THE_FLOORS, floors, off_the_floors
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from radon.complexity import cc_visit
from radon.visitors import Class

from helpers.core import project

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI_SCRIPT = ROOT / ".ci" / "run"
BINDER = ROOT / "binder"
SETUP_HEADING = "Set up"
OPEN_HEADING = "Open the series"
TEST_HEADING = "Run all the tests"
MAP_START, MAP_END = "<!-- chapters:start -->", "<!-- chapters:end -->"


def readme() -> str:
    return README.read_text(encoding="utf-8")


def command_under(heading: str, text: str) -> str:
    """The one-line command in the ```bash block that immediately follows the Markdown heading `heading`."""
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if re.fullmatch(rf"#{{1,6}}\s+{re.escape(heading)}\s*", line.strip())]
    assert len(at) == 1, f"README needs exactly one heading {heading!r}, found {len(at)}"
    rest = [line.strip() for line in lines[at[0] + 1:]]
    rest = rest[next((i for i, line in enumerate(rest) if line), len(rest)):]  # skip blank lines
    assert rest and rest[0] == "```bash", f"the heading {heading!r} must be followed directly by a ```bash block"
    end = rest.index("```", 1) if "```" in rest[1:] else None
    assert end is not None, f"the ```bash block under {heading!r} is not closed"
    body = [line for line in rest[1:end] if line]
    assert len(body) == 1, f"the ```bash block under {heading!r} must hold exactly one line, found {body}"
    return body[0]


def code_lines(path: Path) -> list[str]:
    """The lines of a shell script or requirements file, stripped, without comments and blank lines."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line.split(" #", 1)[0].strip())
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def extra_requirements(extra: str, data: dict) -> Iterator[Requirement]:
    """The requirements of an extra of this distribution, self-references (loops-to-tpus[lab,gpu]) expanded."""
    name = canonicalize_name(data["project"]["name"])
    for line in data["project"]["optional-dependencies"][extra]:
        req = Requirement(line)
        if canonicalize_name(req.name) == name:
            for inner in sorted(req.extras):
                yield from extra_requirements(inner, data)
        else:
            yield req


def test_readme_has_the_set_up_open_and_test_commands() -> None:
    text = readme()
    bash_blocks = [line for line in text.splitlines() if line.strip().startswith("```bash")]
    assert len(bash_blocks) == 3, "README's ```bash blocks are only set up, open and test; use ```shell elsewhere"
    setup_cmd, open_cmd = command_under(SETUP_HEADING, text), command_under(OPEN_HEADING, text)
    test_cmd = command_under(TEST_HEADING, text)
    for cmd in (setup_cmd, test_cmd):
        assert cmd.startswith("python3 -m venv .venv && "), f"it makes its own environment: {cmd}"
    assert '".[lab]"' in setup_cmd and "jupyter" not in setup_cmd
    assert "pip install" not in open_cmd and "-m venv" not in open_cmd, "opening the series installs nothing again"
    assert "jupyter lab --ServerApp.root_dir=. " in open_cmd, "the repository is JupyterLab's root"
    assert open_cmd.endswith(f"notebooks/{project.CHAPTERS[0].file}"), "the open command opens the first chapter"
    assert '".[dev]"' in test_cmd and test_cmd.endswith("-m pytest")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_cmd = command_under(TEST_HEADING, readme())
    assert CI_SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")
    lines = code_lines(CI_SCRIPT)
    assert "set -euo pipefail" in lines
    # Last, so that the && list's exit status (a failed install, pytest's 5 for "no tests") is the script's.
    assert lines[-1] == test_cmd, f".ci/run must end with the README's test command:\n{test_cmd}"


def test_chapter_map_lists_every_notebook() -> None:
    text = readme()
    assert text.count(MAP_START) == 1 and text.count(MAP_END) == 1, "README needs one pair of chapter-map markers"
    start, end = text.index(MAP_START), text.index(MAP_END)
    assert start < end, "the chapter map's start marker must come before its end marker"
    chapter_map = text[start:end]
    missing = [nb.name for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) if nb.name not in chapter_map]
    assert not missing, f"README's chapter map does not list {missing}: run `python -m helpers notebooks sync`"


def ruff_command() -> list[str]:
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    beside = Path(sys.executable).with_name("ruff")
    if beside.exists():
        return [str(beside)]
    pytest.skip("ruff is not installed: pip install -e '.[dev]'")


def test_ruff_passes_notebooks_included() -> None:
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"ruff check . failed:\n{result.stdout}{result.stderr}"


# ---------------------------------------------------------------- the complexity gate

#: No function in helpers/ above this cyclomatic complexity as radon counts it. Ruff's C901 (mccabe) counts less: it
#: leaves out `and`/`or` and a comprehension's loops and conditions, so it scored the old plots.roofline 12, radon 51.
MAX_COMPLEXITY = 20
def complexities(source: str) -> Iterator[tuple[str, int]]:
    """(qualified name, radon's cyclomatic complexity) of every function in `source`: methods, nested functions
    and the methods of nested classes too (radon's own report leaves the last two out)."""
    def walk(blocks: list, prefix: str) -> Iterator[tuple[str, int]]:
        for block in blocks:
            if isinstance(block, Class):
                yield from walk(block.methods + block.inner_classes, f"{prefix}{block.name}.")
            elif prefix or not block.is_method:  # radon lists a class's methods beside it too: walked with it
                yield f"{prefix}{block.name}", block.complexity
                yield from walk(block.closures, f"{prefix}{block.name}.")
    return walk(cc_visit(source), "")


def test_no_function_in_helpers_is_above_complexity_20() -> None:
    gated = sorted((ROOT / "helpers").rglob("*.py"))
    too_complex = [f"{path.relative_to(ROOT).as_posix()}: {name} ({score})" for path in gated
                   for name, score in complexities(path.read_text(encoding="utf-8")) if score > MAX_COMPLEXITY]
    assert len(gated) > 30, "the gate found too few modules in helpers/ to prove anything"
    assert not too_complex, (f"above cyclomatic complexity {MAX_COMPLEXITY} (radon cc -s helpers/): split each into "
                             "named steps:\n" + "\n".join(too_complex))


def test_the_complexity_gate_sees_methods_nested_functions_and_nested_classes() -> None:
    branches = "".join(f"if x == {i}:\n    return {i}\n" for i in range(MAX_COMPLEXITY))  # complexity 21
    source = (f"def top(x):\n    def inner(x):\n{textwrap.indent(branches, ' ' * 8)}    return inner\n\n\n"
              f"class Outer:\n    class Inner:\n        def method(self, x):\n{textwrap.indent(branches, ' ' * 12)}")
    source += "\n    def plain(self):\n        return 1\n"
    assert sorted(complexities(source)) == [("Outer.Inner.method", MAX_COMPLEXITY + 1), ("Outer.plain", 1),
                                            ("top", 1), ("top.inner", MAX_COMPLEXITY + 1)]


def test_binder_installs_the_package_without_cupy() -> None:
    requirements = BINDER / "requirements.txt"
    assert requirements.exists() and (BINDER / "runtime.txt").exists()
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.(1[1-9])", runtime), f"binder/runtime.txt: {runtime!r}"
    lines = code_lines(requirements)
    assert any(re.fullmatch(r"(-e )?\.(\[[a-z,]+\])?", line) for line in lines), \
        "binder/requirements.txt must install the package itself"
    for path in BINDER.iterdir():
        assert not any("cupy" in line.lower() for line in code_lines(path)), f"{path.name} pulls CuPy: no GPU there"
    core = {canonicalize_name(Requirement(r).name) for r in pyproject()["project"]["dependencies"]}
    assert {"plotly", "ipywidgets"} <= core, "Binder gets plotly and ipywidgets through the package's dependencies"
    assert not any(name.startswith("cupy") for name in core), "CuPy belongs in the gpu extra, not the core"


def test_environment_yml_names_the_package() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with JupyterLab (via jupyter-events)")
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert env["name"] == "loops-to-tpus" and "conda-forge" in env["channels"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    names = {re.split(r"[<>=!\s]", d, maxsplit=1)[0] for d in conda}
    assert {"python", "numpy", "jax", "plotly", "ipywidgets", "jupyterlab", "pip"} <= names, names
    assert not any(name.startswith("cupy") for name in names), "environment.yml is the CPU environment"
    pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip and "-e ." in pip[0], "environment.yml must pip-install the package itself (-e .)"


def test_dev_extra_has_cupy_except_on_macos() -> None:
    cupy = [r for r in extra_requirements("dev", pyproject()) if canonicalize_name(r.name) == "cupy-cuda12x"]
    assert cupy, "the dev extra must pull cupy-cuda12x, so CI exercises 'CuPy installed, no GPU'"
    marker = cupy[0].marker
    assert marker is not None and not marker.evaluate({"sys_platform": "darwin"}), "no CuPy wheels for macOS"
    assert marker.evaluate({"sys_platform": "linux"})


@pytest.mark.parametrize(("extra", "cupy", "jax_extra"), [("gpu-suite", "cupy-cuda12x", "cuda12"),
                                                          ("gpu-suite-cuda13", "cupy-cuda13x", "cuda13")])
def test_the_gpu_suite_extras_bring_jax_for_cuda_and_one_cupy(extra: str, cupy: str, jax_extra: str) -> None:
    """Without JAX built for CUDA, the GPU suite would run every JAX-on-GPU path on the CPU and still pass."""
    found = list(extra_requirements(extra, pyproject()))
    names = {canonicalize_name(r.name) for r in found}
    assert {cupy, "pytest", "nbval"} <= names, names
    assert [n for n in names if n.startswith("cupy")] == [cupy], "two CuPy packages break each other's import"
    assert any(canonicalize_name(r.name) == "jax" and jax_extra in r.extras for r in found), found
    assert f'".[{extra}]"' in README.read_text(encoding="utf-8"), "README must say how to install it"


def test_kernel_sources_ship_with_the_package() -> None:
    """Colab installs the package from git, not editable: every .cu file must be listed as package data."""
    globs = pyproject()["tool"]["setuptools"]["package-data"]["helpers"]
    kernels = sorted((ROOT / "helpers").rglob("*.cu"))
    assert kernels, "chapter 03's kernels live in helpers/kernels/*.cu"
    missing = [p.name for p in kernels if not any(p.relative_to(ROOT / "helpers").match(g) for g in globs)]
    assert not missing, f"not in [tool.setuptools.package-data] helpers: {missing}"


def test_the_teacher_guide_covers_every_chapter_and_is_linked() -> None:
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    for chapter in project.CHAPTERS:
        assert f"## Chapter {chapter.file[:2]} · {chapter.title}" in guide, chapter.file
    for heading in ("## A 50-minute class", "## A 90-minute class", "## Class results", "## Learner copies"):
        assert heading in guide
    assert "python -m helpers classroom merge" in guide and "python -m helpers classroom copies" in guide
    assert "(docs/teaching.md)" in readme()


def test_the_test_session_stops_jax_taking_the_gpus_memory_before_jax_starts() -> None:
    """The GPU suite's module probes the backends (JAX) when pytest collects it: the setting must come first."""
    probe = (
        "import importlib.abc, os, sys\n"
        "seen = []\n"
        "class Spy(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'jax' and not seen:\n"
        "            seen.append(os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'))\n"
        "sys.meta_path.insert(0, Spy())\n"
        "sys.path.insert(0, 'tests')\n"
        "import conftest, test_gpu\n"
        "print(seen)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "['false']", ran.stdout


# ---------------------------------------------------------------- the floors step (.ci/run step 2, tests/floors.py)

FLOORS_STEP = ".floor-venv/bin/python -m pytest -q tests --ignore=tests/test_notebooks.py $(.venv/bin/python " \
              "tests/floors.py --off)"
#: Put on the path of a Python that must not import the floored packages: any import of them fails.
REFUSE = """import importlib.abc, sys


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {refused!r}:
            raise ImportError(f"{{name}} imported by a test that tests/floors.py leaves off the floors")


sys.meta_path.insert(0, _Refuse())
"""


def test_the_floors_pin_the_lowest_admitted_releases_and_ci_uses_them() -> None:
    assert floors(["numpy>=1.24", "jax>=0.6", "keras>=3.0", "pycparser>=3.0"]) == [
        "jax==0.6", "jaxlib==0.6", "keras==3.0", "pycparser==3.0"]
    with pytest.raises(SystemExit, match="must list jax, keras, pycparser"):
        floors(["jax>=0.6", "keras>=3.0"])
    with pytest.raises(SystemExit, match="needs one '>=' lower bound"):
        floors(["jax>=0.6,>=0.7", "keras>=3.0", "pycparser>=3.0"])
    lines = code_lines(CI_SCRIPT)
    assert any("$(.venv/bin/python tests/floors.py)" in line and "--python .floor-venv/bin/python" in line
               for line in lines)
    assert FLOORS_STEP in lines, f".ci/run must run the unit tests on the floors as: {FLOORS_STEP}"


def test_the_floors_step_leaves_off_only_the_listed_files_and_this_check() -> None:
    assert off_the_floors() == [*(f"--ignore={path}" for path in OFF_THE_FLOORS), f"--deselect={HONESTY_TEST}"]
    assert all((ROOT / path).is_file() and path.startswith("tests/test_") for path in OFF_THE_FLOORS)
    assert "tests/test_notebooks.py" not in OFF_THE_FLOORS, ".ci/run leaves it off on its own: its kernels use JAX"
    this = test_the_tests_left_off_the_floors_never_import_jax_keras_or_pycparser
    assert HONESTY_TEST == f"tests/{Path(__file__).name}::{this.__name__}"


def test_the_tests_left_off_the_floors_never_import_jax_keras_or_pycparser(tmp_path: Path) -> None:
    """What the floors step leaves off cannot depend on the floored releases: run with every import of them
    refused (sitecustomize, so in subprocesses and kernels too), those files pass; without a browser on the PATH,
    only the tests that need Chromium skip, and those check what the browser shows."""
    refused = sorted({name for names in FLOORED.values() for name in names})
    (tmp_path / "sitecustomize.py").write_text(REFUSE.format(refused=refused), encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "CI"}
    env.update(PYTHONPATH=str(tmp_path), PATH=str(Path(sys.executable).parent))
    for name in refused:  # the refusal works here, or the run below would prove nothing
        tried = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, env=env)
        assert tried.returncode == 1 and "leaves off the floors" in tried.stderr, (name, tried.stderr[-500:])
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *OFF_THE_FLOORS],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert ran.returncode == 0, f"a test that tests/floors.py leaves off the floors failed here:\n{ran.stdout[-4000:]}"
    skipped = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert all("no Chromium here" in line for line in skipped), skipped
    assert re.search(r"\b\d+ passed", ran.stdout), ran.stdout[-2000:]
