"""Print pip requirements that pin JAX, Keras and pycparser to the oldest releases pyproject.toml admits.

    .venv/bin/uv pip install -e ".[dev]" $(python tests/floors.py)     # .ci/run: the unit tests on the floors

The chapters lean hardest on JAX and Keras, whose behaviour changes between releases (Keras's per-batch loss,
JAX's 64-bit switch); pycparser's floor is the release Colab preinstalls, whose parser the CUDA C executor
relies on. CI runs the unit tests once on these floors, once on the newest releases.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
#: The packages pinned to their floor, and the ones that must move with them (jaxlib is released with jax).
FLOORED = {"jax": ("jax", "jaxlib"), "keras": ("keras",), "pycparser": ("pycparser",)}


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


if __name__ == "__main__":
    print(" ".join(floors(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"])))
