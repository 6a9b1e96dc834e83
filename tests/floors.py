"""Print pip requirements that pin JAX, Keras and pycparser to the oldest releases pyproject.toml admits; with
--off, print the pytest options that leave off the tests whose outcome cannot depend on those releases.

    .venv/bin/uv pip install -e ".[dev]" $(python tests/floors.py)     # .ci/run: the unit tests on the floors
    .floor-venv/bin/python -m pytest -q tests --ignore=tests/test_notebooks.py $(python tests/floors.py --off)

The chapters lean hardest on JAX and Keras, whose behaviour changes between releases (Keras's per-batch loss,
JAX's 64-bit switch); pycparser's floor is the release Colab preinstalls, whose parser the CUDA C executor
relies on. CI runs the unit tests once on these floors, once on the newest releases.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
#: The packages pinned to their floor, and the ones that must move with them (jaxlib is released with jax).
FLOORED = {"jax": ("jax", "jaxlib"), "keras": ("keras",), "pycparser": ("pycparser",)}

#: Test files the floors step leaves off, and why (besides tests/test_notebooks.py, the notebooks, which .ci/run
#: leaves off: the chapters run under nbval and with Colab's versions, not on the floors). Each runs in the README's
#: test command on the newest releases. tests/test_repo.py keeps this honest: it runs these files with every import
#: of JAX, Keras and pycparser refused (in their subprocesses too) and no browser; only the tests that need
#: Chromium may be skipped there, and those check what the browser shows.
OFF_THE_FLOORS = {
    "tests/test_site.py": "the HTML book, built from the stored notebooks, and Chromium drawing its figures",
    "tests/test_browser_lab.py": "what Chromium shows of JupyterLab running chapters 00 and 02 (like every "
                                 "chapter, run on the newest releases and Colab's, not on the floors)",
}
#: The test that keeps OFF_THE_FLOORS honest: it needs no floor either (it refuses JAX, Keras and pycparser).
HONESTY_TEST = "tests/test_repo.py::test_the_tests_left_off_the_floors_never_import_jax_keras_or_pycparser"


def floors(dependencies: list[str]) -> list[str]:
    """'name==version' for each FLOORED package, from its '>=' lower bound in `dependencies`."""
    pins = []
    for line in dependencies:
        requirement = Requirement(line)
        if requirement.name in FLOORED:
            lowest = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            if len(lowest) != 1:
                raise SystemExit(f"pyproject.toml: {line!r} needs one '>=' lower bound")
            pins += [f"{name}=={lowest[0]}" for name in FLOORED[requirement.name]]
    if len(pins) != sum(map(len, FLOORED.values())):
        raise SystemExit(f"pyproject.toml must list {', '.join(FLOORED)} among its dependencies")
    return pins


def off_the_floors() -> list[str]:
    """pytest's options that leave OFF_THE_FLOORS and HONESTY_TEST out of the floors step."""
    return [f"--ignore={path}" for path in OFF_THE_FLOORS] + [f"--deselect={HONESTY_TEST}"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--off"]:
        print(" ".join(off_the_floors()))
    elif sys.argv[1:]:
        raise SystemExit("usage: python tests/floors.py [--off]")
    else:
        print(" ".join(floors(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"])))
