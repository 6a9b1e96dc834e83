"""The exercise convention of the chapters, and a chapter with its exercises' solutions filled in.

An exercise is a code cell tagged `exercise`, followed by its `check` code cell, then a markdown cell holding
`<details><summary>Solution</summary>` and one ```python block. `with_solutions` fills every solution in (as a
learner who did the exercises runs the chapter) and `unpassed_checks` judges their check cells. One implementation
for every run that needs them: the tests (tests/test_notebooks.py), CI's Colab-versions run (tests/colab/run.py),
the GPU suite and `python -m helpers notebooks record`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

SOLUTION = re.compile(r"```python\n(.*?)```", re.DOTALL)
#: What a checker's verdict line starts with: passed, failed, not attempted yet.
VERDICTS = ("✅", "❌", "⏳")


def tags(cell: Any) -> list[str]:
    """The cell's tags (none when it has no metadata)."""
    return cell.get("metadata", {}).get("tags", [])


def printed_text(cell: Any) -> str:
    """Everything a code cell printed or displayed as text (streams and text/plain), a newline after each part."""
    parts = []
    for output in cell.get("outputs", []):
        part = output.get("text", "") if output.get("output_type") == "stream" else \
            output.get("data", {}).get("text/plain", "")
        parts.append(part if isinstance(part, str) else "".join(part))
    return "".join(part if part.endswith("\n") or not part else part + "\n" for part in parts)


def exercises(nb: Any) -> tuple[list[tuple[int, int, str]], list[str]]:
    """(exercise index, check index, solution code) for each exercise of `nb`, and how `nb` breaks the convention."""
    found, broken = [], []
    cells = nb["cells"]
    for index, cell in enumerate(cells):
        if "check" in tags(cell) and (index == 0 or "exercise" not in tags(cells[index - 1])):
            broken.append(f"cell {index}: a `check` cell must follow an `exercise` cell")
        if "exercise" not in tags(cell):
            continue
        check, solution = (cells[index + offset] if index + offset < len(cells) else None for offset in (1, 2))
        source = _source(solution) if solution else ""
        blocks = SOLUTION.findall(source) if solution and solution["cell_type"] == "markdown" else []
        if cell["cell_type"] != "code" or not check or check["cell_type"] != "code" or "check" not in tags(check):
            broken.append(f"cell {index}: an `exercise` code cell must be followed by a `check` code cell")
        elif "<details><summary>Solution</summary>" not in source or len(blocks) != 1:
            broken.append(f"cell {index + 2}: expected a markdown cell with <details><summary>Solution</summary> "
                          "and one ```python block")
        else:
            found.append((index, index + 1, blocks[0]))
    return found, broken


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def with_solutions(nb: Any) -> tuple[Any, list[int]]:
    """A copy of chapter `nb` with every exercise's solution filled in, and the indices of their check cells.

    Raises ValueError when the chapter breaks the exercise convention (see `exercises`)."""
    found, broken = exercises(nb)
    if broken or not found:
        raise ValueError("exercise convention broken (see test_tags_and_exercises_follow_the_conventions): "
                         + ("; ".join(broken) or "no exercises"))
    nb = copy.deepcopy(nb)
    for exercise, _, solution in found:
        nb["cells"][exercise]["source"] = solution
    return nb, [check for _, check, _ in found]


def unpassed_checks(done: Any, checks: list[int]) -> list[str]:
    """The check cells `checks` of an executed chapter that did not pass: every verdict they print (a line starting
    with ✅, ❌ or ⏳) must be ✅, and there must be one."""
    failing = []
    for check in checks:
        verdicts = [line for line in printed_text(done["cells"][check]).splitlines() if line.startswith(VERDICTS)]
        if not verdicts or not all(line.startswith("✅") for line in verdicts):
            failing.append(f"cell {check}: the solution above does not pass its check: "
                           f"{verdicts or 'no verdict printed'}")
    return failing
