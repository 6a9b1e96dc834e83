"""Each chapter's minutes are what the stated rule gives for its stored notebook, and the headers say them."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from helpers.book import chapter_time, upkeep
from helpers.core import project

ROOT = Path(__file__).resolve().parents[1]


def _stored(file: str) -> dict:
    return json.loads((ROOT / "notebooks" / file).read_text(encoding="utf-8"))


@pytest.mark.parametrize("chapter", project.CHAPTERS, ids=lambda c: c.file)
def test_each_chapters_minutes_are_the_rules_for_its_stored_notebook(chapter: project.Chapter) -> None:
    found = chapter_time.chapter_time(_stored(chapter.file))
    assert (chapter.minutes, chapter.exercise_minutes) == (found.reading, found.exercising), (
        f"{chapter.file}: {found}; set minutes={found.reading}, exercise_minutes={found.exercising} in "
        "helpers/core/project.py CHAPTERS, then run `python -m helpers notebooks sync`")


def _notebook(text_words: int, run_seconds: float | None = 60.0) -> nbformat.NotebookNode:
    """A chapter of `text_words` words of text, one prompt, one exercise with a 4-line solution."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 99 · Header words " * 50, metadata={"tags": ["header"]}),
        nbformat.v4.new_code_cell("import sys  " * 40, metadata={"tags": ["setup"]}),
        nbformat.v4.new_markdown_cell("word " * text_words),
        nbformat.v4.new_markdown_cell("**Before you run the next cell:** guess"),  # 6 words
        nbformat.v4.new_code_cell("print(42)", outputs=[nbformat.v4.new_output("stream", text="the answer is 42\n")]),
        nbformat.v4.new_markdown_cell("### Exercise 1: write it\n\n" + "word " * 120),  # 125 words
        nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError", metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell("h.checks.check_function(f, g, [(1,)])", metadata={"tags": ["check"]}),
        nbformat.v4.new_markdown_cell("<details><summary>Solution</summary>\n\n```python\ndef f():\n    # a comment\n"
                                      "    x = 1\n\n    y = 2\n    return x + y\n```\n</details>"),
    ]
    if run_seconds is not None:
        nb.metadata[chapter_time.RUN_KEY] = {"run_seconds": run_seconds}
    return nb


def test_the_rule_counts_words_run_time_prompts_and_exercises_apart() -> None:
    found = chapter_time.chapter_time(_notebook(1_200))
    # 1,200 + 7 (the prompt) + 1 (code) + 4 (its output) + 3 (the check's code) words; the header, the set-up cell,
    # the exercise and its solution left out
    assert (found.words, found.run_seconds, found.prompts) == (1_215, 60.0, 1)
    assert (found.exercises, found.exercise_words, found.solution_lines) == (1, 129, 4)
    assert found.reading == 10  # 1,215 / 130 + 1 min of code + 1 prompt = 11.3, to the nearest 5
    assert found.exercising == 10  # 129 / 130 + 3 + 4 lines = 8.0
    assert "10 min to read and run" in str(found) and "10 min for 1 exercises" in str(found)


def test_more_to_read_or_to_run_moves_the_minutes() -> None:
    assert chapter_time.chapter_time(_notebook(1_200 + 130 * 8)).reading == 20  # 19.3 minutes
    assert chapter_time.chapter_time(_notebook(1_200, run_seconds=60 * 10)).reading == 20  # 20.3 minutes


def test_a_notebook_without_a_stored_run_says_to_execute_it() -> None:
    with pytest.raises(chapter_time.NoStoredRun, match="notebooks execute"):
        chapter_time.chapter_time(_notebook(100, run_seconds=None))


def test_sync_keeps_the_stored_runs_time_and_writes_the_minutes_into_the_header() -> None:
    nb = _notebook(100, run_seconds=123)
    chapter = project.Chapter("99_x.ipynb", "X", "Nothing.", 25, None, exercise_minutes=10)
    synced = upkeep.synced(nb, 99, chapter)
    assert synced.metadata[chapter_time.RUN_KEY] == {"run_seconds": 123}
    assert synced.cells[0].source.endswith("Time: about 25 minutes to read and run, plus 10 for the exercises "
                                           f"([how we count]({upkeep.TIME_RULE}))")
    made = upkeep.chapter_map()
    assert project.TIME_NOTE in made and all(f"| {c.time}" in made for c in project.CHAPTERS)


def test_the_teacher_guide_states_the_rules_numbers() -> None:
    text = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    section = text[text.index("### How long each chapter takes"):]
    for said in (f"{chapter_time.WORDS_PER_MINUTE} words a minute", f"{chapter_time.PROMPT_MINUTES} minute for each "
                 f"prediction prompt", f"{chapter_time.EXERCISE_MINUTES} minutes to run it",
                 f"{chapter_time.MINUTES_PER_LINE} minute for each line", f"nearest {chapter_time.ROUND_TO} minutes"):
        assert said in " ".join(section.split()), said
