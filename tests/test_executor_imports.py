"""The executor's imports (helpers/executor's docstring states the rule): no cycle among its modules, counting every
import wherever it stands (module level, inside a function, under `if TYPE_CHECKING:`), and nothing of helpers
from outside it but helpers.core and helpers.measuring. Planted cycles and imports fail the same checks."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

EXECUTOR = Path(__file__).resolve().parent.parent / "helpers" / "executor"
PACKAGE = "helpers.executor"
#: What the executor may import of helpers from outside itself.
ALLOWED = ("helpers.core", "helpers.measuring")


def imported(source: str) -> list[tuple[str, list[str]]]:
    """Each import of helpers in a module of the executor, wherever it stands: (the module imported from, the names
    imported from it; none for `import helpers.x`)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(source)):  # ast.walk enters function bodies and if blocks too
        if isinstance(node, ast.ImportFrom):
            base = PACKAGE.split(".")[: 3 - node.level] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target.split(".")[0] == "helpers":
                found.append((target, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "helpers"]
    return found


def _module(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def _sources() -> dict[str, str]:
    return {_module(path): path.read_text(encoding="utf-8") for path in sorted(EXECUTOR.glob("*.py"))}


def graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Each module of the executor, and the modules of the executor it imports (`from . import memory`: memory;
    `from . import Program`: the package, whose __init__ gives Program)."""
    edges: dict[str, set[str]] = {}
    for name, text in sources.items():
        edges[name] = set()
        for target, names in imported(text):
            modules = {f"{target}.{n}" for n in names} & sources.keys()
            if (len(modules) < len(names) or not names) and target in sources:
                modules.add(target)
            edges[name] |= modules - {name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports among the modules, or None."""
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError as error:
        return list(error.args[1])
    return None


def outside(sources: dict[str, str]) -> set[tuple[str, str]]:
    """(module, import) for every import of helpers from outside the executor but helpers.core and measuring."""
    def allowed(target: str) -> bool:
        return any(target == root or target.startswith(f"{root}.") for root in (PACKAGE, *ALLOWED))
    return {(name, target) for name, text in sources.items() for target, names in imported(text)
            if not allowed(target) and not (names and all(allowed(f"{target}.{n}") for n in names))}


def test_the_executors_modules_import_each_other_without_a_cycle() -> None:
    sources = _sources()
    assert len(sources) > 30 and "helpers.executor.runtime" in sources
    assert cycle(graph(sources)) is None


def test_a_planted_cycle_fails_the_check_wherever_its_import_stands() -> None:
    sources = _sources()
    placed = {"inside a function": "\n\ndef _late() -> None:\n    from .runtime import Lanes  # noqa: F401\n",
              "under TYPE_CHECKING": "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                     "    from .runtime import Lanes\n",
              "at module level": "\nfrom . import runtime\n"}
    for where, text in placed.items():
        planted = {**sources, "helpers.executor.memory": sources["helpers.executor.memory"] + text}
        found = cycle(graph(planted))
        assert found is not None and "helpers.executor.memory" in found, where


def test_the_executor_imports_of_helpers_only_core_and_measuring() -> None:
    sources = _sources()
    assert any(t.startswith("helpers.measuring") for text in sources.values() for t, _ in imported(text))
    assert outside(sources) == set()


def test_a_planted_import_of_another_part_of_helpers_fails_the_check() -> None:
    sources = _sources()
    for text in ("\nfrom ..model import roofline\n", "\nimport helpers\n", "\nfrom helpers.gpu import cuda\n",
                 "\nfrom .. import learning\n",
                 "\n\ndef _late() -> None:\n    from ..chapters import make_it_fast\n"):
        planted = {**sources, "helpers.executor.unit": sources["helpers.executor.unit"] + text}
        assert outside(planted), text
