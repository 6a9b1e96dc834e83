"""The teacher guide's answers and minutes are written from the stored notebooks, and kept in step with them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from helpers.book import chapter_time, guide, upkeep
from helpers.core import project
from helpers.learning import prompts

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("number", range(len(project.CHAPTERS)))
def test_each_chapters_answers_in_the_guide_are_its_stored_runs(number: int) -> None:
    text = guide.GUIDE.read_text(encoding="utf-8")
    start, end = guide.markers(number)
    assert start in text and end in text, f"docs/teaching.md has no {start} ... {end} for its generated part"
    nb = json.loads((ROOT / "notebooks" / project.CHAPTERS[number].file).read_text(encoding="utf-8"))
    assert guide.synced(text, {number: nb}) == text, "run `python -m helpers notebooks sync`"


def _chapter(answer: str, figure: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={chapter_time.RUN_KEY: {"run_seconds": 30}})
    outputs = [nbformat.v4.new_output("stream", text=answer)]
    if figure:
        outputs.append(nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {}}))
    nb.cells = [nbformat.v4.new_markdown_cell("## 1. Lanes\n\nSome words about lanes."),
                nbformat.v4.new_markdown_cell(prompts.PROMPT + "run the next cell:** how many lanes\nare useful?"),
                nbformat.v4.new_code_cell("print(report)", outputs=outputs)]
    nb.cells[1].metadata["prompt"] = {"answers": [nb.cells[2].id]}
    return nb


def test_a_part_has_the_minutes_then_each_question_with_what_its_answer_printed() -> None:
    made = guide.block(_chapter("sorted: 86% of lanes useful\n\nshuffled: 30% of lanes useful\n", figure=True))
    assert made.startswith("**Suggested minutes** (5 to read and run,") and "1. Lanes 5." in made
    assert "- **P1** (1. Lanes): how many lanes are useful?" in made
    assert "  sorted: 86% of lanes useful\n  shuffled: 30% of lanes useful\n  (and 1 figure: see the notebook)" in made


def test_a_long_answer_is_cut_to_the_lines_that_tell() -> None:
    lines = [f"row {i}: nothing new" for i in range(guide.MOST_LINES)] + ["the answer: 86% of lanes useful"]
    made = guide.block(_chapter("\n".join(lines) + "\n"))
    assert "the answer: 86% of lanes useful" in made and "row 3: nothing new" not in made


def test_only_parts_with_markers_are_written_and_check_reports_a_stale_one(tmp_path: Path, monkeypatch) -> None:
    start, end = guide.markers(1)
    text = f"# Guide\n\n{start}\nold answers\n{end}\n\nBy hand.\n"
    made = guide.synced(text, {1: _chapter("86% of lanes useful\n"), 2: _chapter("30%\n")})
    assert "old answers" not in made and "how many lanes are useful?" in made and made.endswith("\n\nBy hand.\n")
    assert guide.markers(2)[0] not in made
    (tmp_path / "docs").mkdir()
    (tmp_path / "notebooks").mkdir()
    for chapter in project.CHAPTERS:
        shutil.copy(ROOT / "notebooks" / chapter.file, tmp_path / "notebooks" / chapter.file)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    guide_copy = tmp_path / "docs" / "teaching.md"
    stored = guide.GUIDE.read_text(encoding="utf-8")
    stale = stored.replace(guide.markers(1)[0], guide.markers(1)[0] + "\nA number typed in: 0.0466%")
    guide_copy.write_text(stale, encoding="utf-8")
    assert any("docs/teaching.md: answers or minutes out of step" in line for line in upkeep.problems(tmp_path))
    monkeypatch.setattr(upkeep, "ROOT", tmp_path)
    upkeep.main(["sync"])
    assert "A number typed in" not in guide_copy.read_text(encoding="utf-8")
