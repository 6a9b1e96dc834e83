"""Prediction prompts and their answers: which cells answer a prompt, and whether anything shows it too early.

A prompt is a markdown cell that asks the learner to guess before running ("**Before you run the next cell:**").
Its cell metadata names the code cells that answer it and how the answer looks:

    "prompt": {"answers": ["<cell id>", ...], "gives_away": ["<regex>", ...]}

Hand-outs (`classroom.learner_copy`) clear every code cell from a prompt to its last answer. `problems(nb)` is
the rule tests/test_prompts.py holds every chapter to: each pattern shows in an answer's output, and in nothing a
learner sees before the first answer runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: The words that open every prediction prompt ("**Before you run the next cell:**", "... the next cells:**",
#: "**Before you look at the plot:**").
PROMPT = "**Before you "
#: The cell metadata key that holds a prompt's answers.
KEY = "prompt"


@dataclass(frozen=True)
class Prompt:
    """One prompt in a notebook: its cell's index, the indices of its answer cells, the patterns of its answer."""

    index: int
    answers: tuple[int, ...]
    gives_away: tuple[str, ...]

    @property
    def last(self) -> int:
        """The index of its last answer cell: a hand-out clears every code cell from the prompt to here."""
        return max(self.answers, default=self.index)


class PromptError(ValueError):
    """A prompt whose metadata a hand-out cannot follow (no answers, an id that is no cell after it)."""


def is_prompt(cell: Any) -> bool:
    """Whether `cell` is a markdown cell asking for a prediction."""
    return cell.get("cell_type") == "markdown" and PROMPT in _source(cell)


def _source(cell: Any) -> str:
    """A cell's source as one string (a stored notebook may keep it as a list of lines)."""
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def prompts(nb: Any) -> list[Prompt]:
    """Every prompt of the notebook `nb` with its answer cells, or a PromptError naming the first one that does
    not say which code cells after it answer it."""
    cells = nb["cells"]
    index_of = {cell.get("id"): i for i, cell in enumerate(cells)}
    found = []
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {}).get(KEY)
        if not is_prompt(cell) and meta is None:
            continue
        where = f"cell {i} (id {cell.get('id')})"
        if not is_prompt(cell):
            raise PromptError(f"{where} has '{KEY}' metadata but does not ask for a prediction ({PROMPT!r})")
        if not isinstance(meta, dict) or not meta.get("answers") or not meta.get("gives_away"):
            raise PromptError(f"{where} asks for a prediction but its metadata does not name its answers: give it "
                              f'"{KEY}": {{"answers": [ids of the code cells that answer it], "gives_away": '
                              "[regexes of the answer as shown]}")
        answers = tuple(index_of.get(a, -1) for a in meta["answers"])
        wrong = [a for a, at in zip(meta["answers"], answers, strict=True)
                 if at <= i or cells[at].get("cell_type") != "code"]
        if wrong:
            raise PromptError(f"{where}: answers {wrong} are not ids of code cells after the prompt")
        found.append(Prompt(i, answers, tuple(meta["gives_away"])))
    return found


def output_text(cell: Any) -> str:
    """All a code cell shows: stream text, every display value (plotly figures as JSON) and error text."""
    parts = []
    for output in cell.get("outputs", []):
        text = output.get("text", "")
        parts.append(text if isinstance(text, str) else "".join(text))
        for value in output.get("data", {}).values():
            if isinstance(value, list) and all(isinstance(line, str) for line in value):
                parts.append("".join(value))
            else:
                parts.append(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        parts += [output.get("ename", ""), output.get("evalue", "")]
    return "\n".join(parts)


def problems(nb: Any) -> list[str]:
    """What is wrong with the prompts of the stored notebook `nb`, one line each: a pattern no answer shows (it
    could never catch a give-away), or a pattern that something before the first answer already shows."""
    try:
        found = prompts(nb)
    except PromptError as exc:
        return [str(exc)]
    cells = nb["cells"]
    lines = []
    for prompt in found:
        first = min(prompt.answers)
        for pattern in prompt.gives_away:
            regex = re.compile(pattern)
            if not any(regex.search(output_text(cells[a])) for a in prompt.answers):
                lines.append(f"cell {prompt.index}: no answer cell shows {pattern!r} (in the stored outputs)")
            for i, cell in enumerate(cells[:first]):
                shown = output_text(cell) if cell.get("cell_type") == "code" else _source(cell)
                if i != prompt.index and regex.search(shown):
                    lines.append(f"cell {prompt.index}: cell {i} (id {cell.get('id')}) shows {pattern!r} before "
                                 f"the answer (cell {first})")
    return lines
