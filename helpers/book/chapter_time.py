"""How long a chapter takes: one stated rule, applied to the stored notebook.

Reading and running: every word a learner reads (the text, the code and what the code prints; not the header, the
Colab set-up cell, the exercises or their solutions) at WORDS_PER_MINUTE, plus the time the chapter's code took in
its stored run (`python -m helpers notebooks execute` records it in the notebook's metadata), plus PROMPT_MINUTES
for each prediction prompt. Exercises, apart: for each, its statement and starting code at the same pace,
EXERCISE_MINUTES to run and check it, and MINUTES_PER_LINE for every line of its solution, which the learner
writes. Each total is rounded to the nearest ROUND_TO minutes.

helpers/core/project.py CHAPTERS holds the minutes; `notebooks sync` writes them into each chapter's header and the
README's chapter map, and tests/test_chapter_time.py keeps them equal to what this rule gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.project import ROOT
from ..learning import prompts, telling

#: Words read a minute: text, code and printed output, read with care. Chosen so that the rule, applied to the
#: whole series, gives what one learner's timed cold read of it took (about 515 minutes to read and run all eight
#: chapters, issue 39 of the project's tracker); a pace in the range usually quoted for technical reading.
WORDS_PER_MINUTE = 130
#: Minutes for each prediction prompt: to stop, think and write a guess down.
PROMPT_MINUTES = 1
#: Minutes for each exercise besides reading it and writing its solution: run it, read the check, try again.
EXERCISE_MINUTES = 3
#: Minutes for each line of an exercise's solution (not blank, not a comment).
MINUTES_PER_LINE = 1
ROUND_TO = 5
#: Notebook metadata key of what `notebooks execute` records about the stored run: {"run_seconds": ...}.
RUN_KEY = "loops_to_tpus"
SOLUTION = re.compile(r"```python\n(.*?)```", re.DOTALL)
#: Cells that are no part of the lesson's reading: the header and the Colab set-up cell that `notebooks sync` writes.
NOT_READ = ("header", "setup")


@dataclass(frozen=True)
class ChapterTime:
    """A chapter's minutes by the rule, and what they come from."""

    words: int  # read in the lesson: text, code, printed output
    run_seconds: float  # its code, in the stored run
    prompts: int
    exercises: int
    exercise_words: int
    solution_lines: int

    @property
    def reading(self) -> int:
        """Minutes to read and run the chapter, rounded to ROUND_TO."""
        return _rounded(self.words / WORDS_PER_MINUTE + self.run_seconds / 60 + self.prompts * PROMPT_MINUTES)

    @property
    def exercising(self) -> int:
        """Minutes for its exercises, rounded to ROUND_TO (0 without exercises)."""
        if not self.exercises:
            return 0
        return _rounded(self.exercise_words / WORDS_PER_MINUTE + self.exercises * EXERCISE_MINUTES
                        + self.solution_lines * MINUTES_PER_LINE)

    def __str__(self) -> str:
        return (f"{self.reading} min to read and run ({self.words:,} words at {WORDS_PER_MINUTE} a minute, "
                f"{self.run_seconds / 60:.1f} min of code in the stored run, {self.prompts} prompts at "
                f"{PROMPT_MINUTES} min); {self.exercising} min for {self.exercises} exercises ({self.exercise_words:,} "
                f"words, {self.exercises} x {EXERCISE_MINUTES} min, {self.solution_lines} lines of solution at "
                f"{MINUTES_PER_LINE} min)")


class NoStoredRun(ValueError):
    """A notebook without the run time of a stored run: execute it first."""


def _rounded(minutes: float) -> int:
    return max(ROUND_TO, ROUND_TO * round(minutes / ROUND_TO))


def _tags(cell: Any) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return tags if isinstance(tags, list) else []


def printed(cell: Any) -> str:
    """What a code cell prints for a learner to read: its text outputs (a displayed table's markdown rather than its
    placeholder), not its figures."""
    parts = []
    for output in cell.get("outputs", []) or []:
        parts.append(telling.source({"source": output.get("text", "")}))
        data = output.get("data", {})
        if isinstance(data, dict) and not any(key.startswith("application/vnd.plotly") for key in data):
            parts.append(telling.source({"source": data.get("text/markdown", data.get("text/plain", ""))}))
    return "\n".join(parts)


def _exercise_cells(cells: list[Any]) -> Iterator[tuple[list[int], int | None]]:
    """For each exercise: (its statement's and stub's cell indices, the index of its solution cell or None). The
    statement is the markdown just above the stub."""
    for i, cell in enumerate(cells):
        if "exercise" not in _tags(cell):
            continue
        statement = i
        while statement > 0 and cells[statement - 1].get("cell_type") == "markdown" \
                and "Solution</summary>" not in telling.source(cells[statement - 1]):
            statement -= 1
        after = [j for j in range(i + 1, min(i + 3, len(cells)))
                 if "<details><summary>Solution</summary>" in telling.source(cells[j])]
        yield list(range(statement, i + 1)), (after[0] if after else None)


def solution_lines(text: str) -> int:
    """Lines of a solution block's code: not blank, not a comment alone."""
    return sum(1 for block in SOLUTION.findall(text) for line in block.splitlines()
               if line.strip() and not line.strip().startswith(("#", "//")))


def chapter_time(nb: Any) -> ChapterTime:
    """The rule applied to the stored notebook `nb` (a dict or an nbformat node); NoStoredRun without a run time."""
    run = nb.get("metadata", {}).get(RUN_KEY, {})
    seconds = run.get("run_seconds") if isinstance(run, dict) else None
    if not isinstance(seconds, int | float) or seconds < 0:
        raise NoStoredRun(f"no run time in its metadata ('{RUN_KEY}'): run `python -m helpers notebooks execute` "
                          "on it, which records it")
    cells = nb["cells"]
    exercise, solutions = set(), set()
    for statement, solution in _exercise_cells(cells):
        exercise.update(statement)
        if solution is not None:
            solutions.add(solution)
    words = exercise_words = 0
    for i, cell in enumerate(cells):
        if any(tag in NOT_READ for tag in _tags(cell)) or i in solutions:
            continue
        text = telling.source(cell) + ("\n" + printed(cell) if cell.get("cell_type") == "code" else "")
        if i in exercise:
            exercise_words += len(text.split())
        else:
            words += len(text.split())
    return ChapterTime(words, float(seconds), sum(1 for cell in cells if prompts.is_prompt(cell)),
                       sum(1 for cell in cells if "exercise" in _tags(cell)), exercise_words,
                       sum(solution_lines(telling.source(cells[j])) for j in solutions))


def main() -> int:
    """`python -m helpers.book.chapter_time`: each stored chapter's minutes by the rule beside what CHAPTERS says;
    exit 1 when one differs (then change its minutes in helpers/core/project.py and run `notebooks sync`)."""
    import json

    from ..core.project import CHAPTERS

    root = ROOT / "notebooks"
    status = 0
    for chapter in CHAPTERS:
        try:
            found = chapter_time(json.loads((root / chapter.file).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError) as exc:
            print(f"{chapter.file}: {exc}")
            status = 1
            continue
        step = (found.reading, found.exercising) == (chapter.minutes, chapter.exercise_minutes)
        print(f"{chapter.file}: {found}" + ("" if step else f"; CHAPTERS says {chapter.time}: set minutes="
                                            f"{found.reading}, exercise_minutes={found.exercising}"))
        status = status or (0 if step else 1)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
