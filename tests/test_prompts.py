"""Every prediction prompt names its answer cells, and nothing a learner sees before them gives the answer away."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers import prompts
from helpers.project import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("chapter", [c.file for c in CHAPTERS])
def test_every_prompt_names_its_answers_and_nothing_before_them_shows_the_answer(chapter) -> None:
    nb = nbformat.read(ROOT / "notebooks" / chapter, as_version=4)
    assert prompts.problems(nb) == []


def test_the_series_asks_for_predictions_in_every_chapter() -> None:
    counts = [len(prompts.prompts(nbformat.read(ROOT / "notebooks" / c.file, as_version=4))) for c in CHAPTERS]
    assert min(counts) >= 2 and sum(counts) >= 40


def _chapter(before: str, answer: str, pattern: str, between: str = "") -> nbformat.NotebookNode:
    """A small chapter: a cell showing `before`, a prompt, a text `between`, an answer cell showing `answer`."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("stream", text=before)]),
                nbformat.v4.new_markdown_cell(prompts.PROMPT + ":** how many lanes are useful?"),
                nbformat.v4.new_markdown_cell(between or "Run it."),
                nbformat.v4.new_code_cell("y", outputs=[nbformat.v4.new_output(
                    "display_data", data={"application/vnd.plotly.v1+json": {"data": [{"name": answer}]}})])]
    nb.cells[1].metadata["prompt"] = {"answers": [nb.cells[3].id], "gives_away": [pattern]}
    return nb


def test_a_quiet_chapter_passes_and_each_planted_give_away_fails() -> None:
    pattern = r"\d+% of lanes useful"
    assert prompts.problems(_chapter("sorted", "sorted: 86% of lanes useful", pattern)) == []
    early = prompts.problems(_chapter("sorted: 86% of lanes useful", "sorted: 86% of lanes useful", pattern))
    assert len(early) == 1 and "cell 0" in early[0] and "before the answer (cell 3)" in early[0]
    text = prompts.problems(_chapter("sorted", "sorted: 86% of lanes useful", pattern, between="86% of lanes useful"))
    assert len(text) == 1 and "cell 2" in text[0]
    never = prompts.problems(_chapter("sorted", "a picture", pattern))
    assert len(never) == 1 and "no answer cell shows" in never[0]


def test_a_prompt_that_names_no_answers_or_a_wrong_cell_fails() -> None:
    nb = _chapter("x", "86% of lanes useful", "lanes")
    nb.cells[1].metadata["prompt"]["answers"] = [nb.cells[2].id]  # a markdown cell
    assert "not ids of code cells after the prompt" in prompts.problems(nb)[0]
    nb.cells[1].metadata["prompt"]["answers"] = [nb.cells[0].id]  # before the prompt
    assert "not ids of code cells after the prompt" in prompts.problems(nb)[0]
    del nb.cells[1].metadata["prompt"]
    assert "does not name its answers" in prompts.problems(nb)[0]
    nb.cells[2].metadata["prompt"] = {"answers": [nb.cells[3].id], "gives_away": ["x"]}
    nb.cells[1].metadata["prompt"] = {"answers": [nb.cells[3].id], "gives_away": ["lanes"]}
    assert "does not ask for a prediction" in prompts.problems(nb)[0]
