"""The helpers' plan holds: every module in a sub-package that says its job and what it may import, every import
(at module level, inside functions, under TYPE_CHECKING) within those rules, no import cycle, no long module
without its reason, and docs/architecture.md opening with the picture the rules make."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.book import architecture
from helpers.core.project import PACKAGE

RULES = architecture.subpackages()
GRAPH = architecture.graph()
#: A module longer than this says why in its docstring, after these words.
LONGEST, WHY_LONG = 600, "Why it is long:"


def test_there_are_sub_packages_and_every_module_sits_in_one() -> None:
    assert {"core", "measuring", "model", "gpu", "executor", "tpu", "learning", "chapters", "book"} <= set(RULES)
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules outside a sub-package: {loose}"
    assert not [d for d in PACKAGE.iterdir() if d.is_dir() and any(d.glob("*.py")) and d.name not in RULES]


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_sub_package_says_its_job_and_what_it_may_import(name: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())) or ""
    assert len(RULES[name].job) > 40, f"helpers/{name}/__init__.py: its docstring's first paragraph names its job"
    assert "may import" in doc or "imports nothing else" in doc, f"helpers/{name}: say what it may import"


def test_the_rules_make_layers_with_the_core_at_the_bottom() -> None:
    rows = architecture.layers(RULES)
    assert rows[0] == ["core"] and rows[-1] == ["book"]
    assert RULES["model"].may_import == {"core", "measuring"}, "the model stands on measurements alone"
    assert "book" not in set().union(*(s.may_import for s in RULES.values()))


def test_no_import_cycle_of_any_kind() -> None:
    assert architecture.cycles(GRAPH) == []


def test_every_import_follows_its_sub_packages_rule() -> None:
    assert architecture.against_the_rules(GRAPH, RULES) == []


def test_the_model_draws_nothing() -> None:
    drawing = {"helpers.core.style", "helpers.figures.plots", "helpers.figures.widgets"}
    for module in (m for m in GRAPH if m.startswith("helpers.model.")):
        assert not GRAPH[module] & drawing, module
        tree = ast.parse((PACKAGE.parent / (module.replace(".", "/") + ".py")).read_text())
        named = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        named |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not {name for name in named if name.split(".")[0] == "plotly"}, module


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_long_module_says_why(path: Path) -> None:
    text = path.read_text()
    if text.count("\n") > LONGEST:
        doc = ast.get_docstring(ast.parse(text)) or ""
        assert WHY_LONG in doc, f"{path.name}: {text.count(chr(10))} lines; split it or say '{WHY_LONG} ...'"


def test_the_architecture_page_opens_with_the_picture_the_rules_make() -> None:
    page = architecture.PAGE.read_text(encoding="utf-8")
    assert page == architecture.written(page), "run: python -m helpers.book.architecture"
    first, second = [i for i, line in enumerate(page.splitlines()) if line.startswith("## ")][:2]
    assert first < page[:page.index(architecture.START)].count("\n") < second, "the picture is the first section"


# --- the walker sees every kind of import, and the checks fail on planted faults -------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    """A throwaway package `helpers` under root with these files (and an __init__.py in every folder)."""
    package = root / "helpers"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for folder in (path.parent, *path.parent.parents):
            if folder == root:
                break
            (folder / "__init__.py").touch()
    return package


def test_imports_inside_functions_and_under_type_checking_count(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import b\n",
        "high/b.py": "def f():\n    from ..low.a import x\n    import importlib\n"
                     "    importlib.import_module('helpers.high.c')\n",
        "high/c.py": "from helpers.low import a\n"})
    edges = architecture.graph(package)
    assert edges["helpers.low.a"] == {"helpers.high.b"}
    assert edges["helpers.high.b"] == {"helpers.low.a", "helpers.high.c"}
    assert edges["helpers.high.c"] == {"helpers.low.a"}
    assert architecture.cycles(edges) == [["helpers.high.b", "helpers.high.c", "helpers.low.a"]]  # b > c > a > b


def test_a_planted_import_against_the_rules_is_named(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "low/__init__.py": '"""Low things.\n\nIt imports nothing else from helpers."""\n',
        "high/__init__.py": '"""High things.\n\nIt may import helpers.low; never helpers.top."""\n',
        "low/a.py": "def f():\n    from ..high import b\n    from helpers import h\n",
        "high/b.py": "from ..low import a\nfrom .. import x\n", "x.py": ""})
    rules = architecture.subpackages(package)
    assert rules["high"].may_import == {"low"} and rules["low"].may_import == frozenset()
    assert architecture.against_the_rules(architecture.graph(package), rules) == [
        "helpers.high.b imports helpers.x: helpers.high may import low",
        "helpers.low.a imports helpers: nothing imports the front door or the command line",
        "helpers.low.a imports helpers.high.b: helpers.low may import nothing else",
        "helpers.x sits in no sub-package: move it into the one whose job it does"]
    assert architecture.layers(rules) == [["low"], ["high"]]


def test_rules_that_go_round_a_loop_are_refused(tmp_path: Path) -> None:
    package = _package(tmp_path, {"a/__init__.py": '"""A.\n\nIt may import helpers.b."""\n',
                                  "b/__init__.py": '"""B.\n\nIt may import helpers.a."""\n'})
    with pytest.raises(ValueError, match="go round a loop"):
        architecture.layers(architecture.subpackages(package))
