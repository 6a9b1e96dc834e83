"""The helpers' plan, read from the helpers themselves: the sub-packages, what each may import, the import graph.

Each sub-package's docstring says its job (its first line) and its rule (a sentence "It may import helpers.core
and helpers.measuring", naming every sub-package it may use). `graph()` reads every import of every module, at
module level, inside functions and under TYPE_CHECKING alike; `cycles` and `against_the_rules` are what
tests/test_architecture.py holds the package to. `python -m helpers.book.architecture` writes the picture and the
rules into docs/architecture.md, and the book shows the same section as a page.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.project import PACKAGE, ROOT

PAGE = ROOT / "docs" / "architecture.md"
START, END = "<!-- architecture:start -->", "<!-- architecture:end -->"
#: The package's front door and command line: they may import anything, and nothing imports them.
FRONT = ("helpers", "helpers.__main__")
_RULE = re.compile(r"may import (.*?)(?:;|\.(?:\s|$))")


@dataclass(frozen=True)
class SubPackage:
    """One sub-package: its name ('gpu'), its job (the docstring's first line) and the sub-packages it may import."""

    name: str
    job: str
    may_import: frozenset[str]


def rule_of(doc: str, known: set[str]) -> frozenset[str]:
    """The sub-packages a docstring's "may import ..." sentence names (none: "It imports nothing else")."""
    found = _RULE.search(" ".join(doc.split()))
    if found is None:
        return frozenset()
    return frozenset(name for name in re.findall(r"helpers\.(\w+)", found[1]) if name in known)


def subpackages(package: Path = PACKAGE) -> dict[str, SubPackage]:
    """Every sub-package of `package`, by name, as its docstring describes it."""
    folders = sorted(p.parent for p in package.glob("*/__init__.py"))
    known = {folder.name for folder in folders}
    found = {}
    for folder in folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        found[folder.name] = SubPackage(folder.name, " ".join(doc.split("\n\n")[0].split()), rule_of(doc, known))
    return found


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """helpers.gpu.cuda for helpers/gpu/cuda.py; helpers.gpu for helpers/gpu/__init__.py."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    """The absolute module an ImportFrom names, relative levels resolved from module `here`."""
    if not node.level:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, modules: set[str], package: Path = PACKAGE) -> set[str]:
    """The helpers modules the module at `path` imports, every kind counted: at module level, inside functions,
    under TYPE_CHECKING, and importlib.import_module with a constant name."""
    here, is_package = module_name(path, package), path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            target = _target(node, here, is_package)
            named = {f"{target}.{alias.name}" for alias in node.names} & modules
            found |= named or ({target} & modules)
            if len(named) < len(node.names) and target in modules:
                found.add(target)  # a name from the module itself beside submodules of it
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & modules
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            found |= {arg.value for arg in node.args if isinstance(arg, ast.Constant)} & modules
    return found - {here}


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of `package` and the modules of it that it imports."""
    paths = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    return {name: imports(path, set(paths), package) for name, path in paths.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan's strongly connected
    components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def subpackage_of(module: str) -> str | None:
    """'gpu' for helpers.gpu.cuda; None for the front door and the command line."""
    parts = module.split(".")
    return None if module in FRONT else parts[1]


def against_the_rules(edges: dict[str, set[str]], rules: dict[str, SubPackage]) -> list[str]:
    """Every import that crosses sub-packages against the importer's rule, or reaches the front door, one line each."""
    wrong = []
    for module, targets in sorted(edges.items()):
        home = subpackage_of(module)
        if home is None:
            continue
        if home not in rules:
            wrong.append(f"{module} sits in no sub-package: move it into the one whose job it does")
            continue
        for target in sorted(targets):
            there = subpackage_of(target)
            if there is None:
                wrong.append(f"{module} imports {target}: nothing imports the front door or the command line")
            elif there != home and there not in rules[home].may_import:
                allowed = ", ".join(sorted(rules[home].may_import)) or "nothing else"
                wrong.append(f"{module} imports {target}: helpers.{home} may import {allowed}")
    return wrong


def layers(rules: dict[str, SubPackage]) -> list[list[str]]:
    """The sub-packages by height: each above every one it may import; ValueError if the rules go round a loop."""
    height: dict[str, int] = {}
    while len(height) < len(rules):
        ready = [s for s in rules.values() if s.name not in height and s.may_import <= set(height)]
        if not ready:
            raise ValueError(f"the rules of {sorted(set(rules) - set(height))} go round a loop")
        for s in ready:
            height[s.name] = 1 + max((height[d] for d in s.may_import), default=-1)
    return [sorted(n for n, h in height.items() if h == level) for level in range(max(height.values()) + 1)]


def _boxes(names: list[str], span: int) -> list[str]:
    """One row of boxes, `span` characters wide in all, the room shared out evenly."""
    room = span - len(names) - 1
    widths = [room // len(names) + (i < room % len(names)) for i in range(len(names))]
    return ["┌" + "┬".join("─" * w for w in widths) + "┐",
            "│" + "│".join(f"{name:^{w}}" for name, w in zip(names, widths, strict=True)) + "│",
            "└" + "┴".join("─" * w for w in widths) + "┘"]


def diagram(rules: dict[str, SubPackage]) -> str:
    """The sub-packages as a text picture: a row of boxes per height, each above those it may import, the front
    door on top."""
    rows = layers(rules)[::-1]
    top = ["helpers/__init__.py (h.benchmark, ...) and __main__.py (python -m helpers)", "│", "▼"]
    span = max(15 * max(len(row) for row in rows) + 1, len(top[0]))
    return "\n".join([*(f"{line:^{span}}".rstrip() for line in top), *(line for row in rows for line in
                                                                         _boxes(row, span))])


def section(package: Path = PACKAGE) -> str:
    """The picture and the rules, as the Markdown docs/architecture.md opens with (and the book shows)."""
    rules = subpackages(package)
    table = "\n".join(f"| `{s.name}` | {s.job} | {', '.join(f'`{d}`' for d in sorted(s.may_import)) or 'nothing'} |"
                      for row in layers(rules)[::-1] for s in (rules[n] for n in row))
    return (f"{START}\n```text\n{diagram(rules)}\n```\n\n"
            "Each box is a sub-package of `helpers/`. A module imports from its own sub-package and from those its "
            "sub-package's docstring names, which all sit lower in the picture; nothing imports upwards, and no "
            "modules import each other round a loop, at module level, inside a function or under `TYPE_CHECKING` "
            "(`tests/test_architecture.py` walks every import). Written from the docstrings by "
            "`python -m helpers.book.architecture`; do not edit by hand.\n\n"
            f"| sub-package | its job | may import |\n|---|---|---|\n{table}\n{END}")


def written(page: str, package: Path = PACKAGE) -> str:
    """`page` with its architecture section (between START and END) made anew."""
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    if not rest:
        raise ValueError(f"{PAGE.name} has no {START} ... {END} markers to write between")
    return head + section(package) + tail


def main() -> int:
    """Write the section into docs/architecture.md; 0 when written."""
    PAGE.write_text(written(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the sub-package picture into {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
