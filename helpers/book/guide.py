"""The teacher guide's generated parts: each chapter's suggested minutes and its prediction questions with the
answers of the stored run, written into docs/teaching.md from the stored notebooks, never copied by hand.

Each chapter's part sits between `<!-- answers:NN:start -->` and `<!-- answers:NN:end -->` in the guide. `python
-m helpers notebooks sync` and `execute` rewrite every part whose markers are there; `notebooks check` and
tests/test_guide.py fail when one is out of step with the stored outputs.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.project import ROOT
from ..learning import prompts, telling
from . import chapter_time

GUIDE = ROOT / "docs" / "teaching.md"
#: An answer longer than this many lines is cut to the lines that carry its telling values.
MOST_LINES = 14


def markers(number: int) -> tuple[str, str]:
    """The start and end markers of chapter `number`'s generated part."""
    return f"<!-- answers:{number:02d}:start -->", f"<!-- answers:{number:02d}:end -->"


def _heading(cells: list[Any], index: int) -> str:
    """The `##` heading of the section cell `index` is in (the chapter's first section when none is above)."""
    for cell in reversed(cells[:index + 1]):
        found = re.search(r"(?m)^## (.+)$", telling.source(cell)) if cell.get("cell_type") == "markdown" else None
        if found:
            return found.group(1).strip()
    return "the chapter's start"


def question(text: str) -> str:
    """A prompt's question: its text from "**Before you ...:**" on, on one line."""
    start = text.find(prompts.PROMPT)
    asked = text[start:] if start >= 0 else text
    asked = re.sub(r"^\*\*Before you [^*]*\*\*\s*", "", asked)
    return " ".join(asked.split())


def answer_lines(cells: list[Any], prompt: prompts.Prompt) -> list[str]:
    """The lines the answer cells print, cut to those that carry a telling value when there are many; a figure
    is named, not drawn."""
    tells = telling.telling(cells, prompt.index, prompt.answers, prompt.words, prompt.context)
    patterns = [telling.word_pattern(word) for word in tells.words]
    lines, figures = [], 0
    for at in prompt.answers:
        lines += [line.rstrip() for line in chapter_time.printed(cells[at]).splitlines() if line.strip()]
        figures += sum(1 for output in cells[at].get("outputs", [])
                       if telling.PLOTLY in (output.get("data") or {}))
    if len(lines) > MOST_LINES:
        lines = [line for line in lines if tells.shown_in(line) or any(p.search(line) for p in patterns)]
        lines = lines[:MOST_LINES] + (["..."] if len(lines) > MOST_LINES else [])
    return lines + ([f"(and {figures} figure{'s' if figures > 1 else ''}: see the notebook)"] if figures else [])


def _minutes(nb: Any) -> str:
    """The chapter's minutes by the rule, split over its `##` sections by the words and prompts in each."""
    total = chapter_time.chapter_time(nb)
    cells, weights = nb["cells"], {}
    for i, cell in enumerate(cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if any(tag in chapter_time.NOT_READ for tag in tags) or "exercise" in tags:
            continue
        words = len((telling.source(cell) + "\n" + chapter_time.printed(cell)).split())
        minutes = words / chapter_time.WORDS_PER_MINUTE + (chapter_time.PROMPT_MINUTES if prompts.is_prompt(cell)
                                                           else 0)
        heading = _heading(cells, i)
        weights[heading] = weights.get(heading, 0.0) + minutes
    share = total.reading / sum(weights.values())
    split = " · ".join(f"{name} {round(weight * share)}" for name, weight in weights.items() if round(weight * share))
    return (f"**Suggested minutes** ({total.reading} to read and run, by the rule of \"How long each chapter takes\", "
            f"split over the sections by their words and prompts; the exercises {total.exercising} more): {split}.")


def block(nb: Any) -> str:
    """Chapter `nb`'s generated part: suggested minutes, then every prompt with the answer its stored run printed."""
    cells = nb["cells"]
    parts = [_minutes(nb), "", "**Prediction questions, with the answers the stored run printed** (measured on the "
             "reference machine, or predicted where a line says so):", ""]
    for n, prompt in enumerate(prompts.prompts(nb), 1):
        parts.append(f"- **P{n}** ({_heading(cells, prompt.index)}): {question(telling.source(cells[prompt.index]))}")
        parts += ["", "  ```text", *(f"  {line}" for line in answer_lines(cells, prompt)), "  ```", ""]
    return "\n".join(parts).rstrip()


def synced(text: str, notebooks: dict[int, Any]) -> str:
    """`text` (the guide) with the part of every chapter in `notebooks` (number -> notebook) whose markers it has
    rewritten from that notebook; parts without markers are left alone."""
    for number, nb in notebooks.items():
        start, end = markers(number)
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
        if pattern.search(text):
            made = f"{start}\n{block(nb)}\n{end}"
            text = pattern.sub(lambda _, made=made: made, text, count=1)
    return text
