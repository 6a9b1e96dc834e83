"""Prediction prompts and their answers: which cells answer a prompt, and whether anything shows it too early.

A prompt is a markdown cell that asks the learner to guess before running ("**Before you run the next cell:**").
Its cell metadata names the code cells that answer it and how the answer looks:

    "prompt": {"answers": ["<cell id>", ...], "gives_away": ["<regex>", ...]}

Hand-outs (`classroom.learner_copy`) clear every code cell from a prompt to its last answer. `problems(nb)` is
the rule tests/test_prompts.py holds every chapter to: each pattern shows in an answer's output, and in nothing a
learner sees before the first answer runs. A notebook that is not one, metadata of the wrong shape, and a pattern
that is no regular expression are each one line; the patterns run through the `regex` module with a time limit,
so one that backtracks without end, such as '(a+)+$', is named instead of hanging the check.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import regex

from .notebook_file import notebook_problem

#: The words that open every prediction prompt ("**Before you run the next cell:**", "... the next cells:**",
#: "**Before you look at the plot:**").
PROMPT = "**Before you "
#: The cell metadata key that holds a prompt's answers.
KEY = "prompt"
#: Seconds one pattern may take to search everything it is searched in: a pattern of the chapters takes
#: milliseconds; one that backtracks without end is stopped here and named.
PATTERN_SECONDS = 2.0


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


def _strings(value: Any) -> bool:
    """Whether `value` is a non-empty list of strings (as prompt metadata lists its answers and patterns)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def prompts(nb: Any) -> list[Prompt]:
    """Every prompt of the notebook `nb` with its answer cells, or a PromptError naming the first one that does
    not say which code cells after it answer it (or the notebook's own fault, when it is not one)."""
    problem = notebook_problem(nb)
    if problem:
        raise PromptError(f"the prompts cannot be read: {problem}")
    cells = nb["cells"]
    index_of = {cell.get("id"): i for i, cell in enumerate(cells)}
    found = []
    for i, cell in enumerate(cells):
        meta = cell["metadata"].get(KEY)
        if not is_prompt(cell) and meta is None:
            continue
        where = f"cell {i} (id {cell.get('id')!r:.40})"
        if not is_prompt(cell):
            raise PromptError(f"{where} has '{KEY}' metadata but does not ask for a prediction ({PROMPT!r})")
        if not isinstance(meta, dict) or not _strings(meta.get("answers")) or not _strings(meta.get("gives_away")):
            raise PromptError(f"{where} asks for a prediction but its metadata does not name its answers: give it "
                              f'"{KEY}": {{"answers": [ids of the code cells that answer it], "gives_away": '
                              "[regexes of the answer as shown]}, each a list of strings")
        answers = tuple(index_of.get(a, -1) for a in meta["answers"])
        wrong = [a for a, at in zip(meta["answers"], answers, strict=True)
                 if at <= i or cells[at].get("cell_type") != "code"]
        if wrong:
            raise PromptError(f"{where}: answers {wrong!r:.80} are not ids of code cells after the prompt")
        for pattern in meta["gives_away"]:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise PromptError(f"{where}: gives_away {pattern!r:.60} is not a regular expression ({exc})") from None
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
    lines = []
    for prompt in found:
        for pattern in prompt.gives_away:
            try:
                lines += _pattern_problems(nb["cells"], prompt, pattern, time.monotonic() + PATTERN_SECONDS)
            except TimeoutError:
                lines.append(f"cell {prompt.index}: gives_away {pattern!r:.60} took over {PATTERN_SECONDS:g} s to "
                             "search the chapter (it backtracks, as '(a+)+$' does): write it without a repetition "
                             "inside a repetition")
    return lines


def _pattern_problems(cells: list[Any], prompt: Prompt, pattern: str, deadline: float) -> list[str]:
    """What is wrong with one of `prompt`'s patterns: no answer shows it, or a cell before the first answer does.
    A TimeoutError once the search runs past `deadline` (time.monotonic())."""
    compiled, first = regex.compile(pattern), min(prompt.answers)

    def shows(text: str) -> bool:
        return compiled.search(text, timeout=max(deadline - time.monotonic(), 0.001)) is not None

    lines = []
    if not any(shows(output_text(cells[a])) for a in prompt.answers):
        lines.append(f"cell {prompt.index}: no answer cell shows {pattern!r} (in the stored outputs)")
    for i, cell in enumerate(cells[:first]):
        shown = output_text(cell) if cell.get("cell_type") == "code" else _source(cell)
        if i != prompt.index and shows(shown):
            lines.append(f"cell {prompt.index}: cell {i} (id {cell.get('id')}) shows {pattern!r} before the answer "
                         f"(cell {first})")
    return lines
