"""Every prediction prompt names its answer cells, and nothing a learner sees before them gives the answer away."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

from helpers.core.project import CHAPTERS
from helpers.learning import prompts, telling

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("chapter", [c.file for c in CHAPTERS])
def test_every_prompt_names_its_answers_and_nothing_before_them_shows_the_answer(chapter) -> None:
    nb = nbformat.read(ROOT / "notebooks" / chapter, as_version=4)
    assert prompts.problems(nb) == []


def test_the_series_asks_for_predictions_in_every_chapter() -> None:
    counts = [len(prompts.prompts(nbformat.read(ROOT / "notebooks" / c.file, as_version=4))) for c in CHAPTERS]
    assert min(counts) >= 2 and sum(counts) >= 40


def _printed(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _figure(label: str) -> nbformat.NotebookNode:
    """A plotly figure output whose only readable text is one trace's name (its numbers are data, not labels)."""
    figure = {"data": [{"name": label, "x": [1.5, 2.5], "y": {"dtype": "f8", "bdata": "AAAAAAAA"}}],
              "layout": {"template": {"layout": {"font": {"size": 13.37}}}}}
    return nbformat.v4.new_output("display_data", data={telling.PLOTLY: figure, "image/png": "iVBORw0KGgo1234"})


def _chapter(answer: str = "sorted: 86% of lanes useful, 2.8x the steps\n", *, above: str = "sorted",
             above_code: str = "x = 1", between: str = "Run it.", prompt: str = "how many lanes are useful?",
             answer_code: str = "print(report)", words: tuple[str, ...] = (), answer_output=None):
    """A small chapter: a header, a text cell and a code cell above a prompt, a text between, one answer cell."""
    nb = nbformat.v4.new_notebook()
    header = nbformat.v4.new_markdown_cell("# 99 · A chapter\n\nTime: 86 minutes", metadata={"tags": ["header"]})
    nb.cells = [header,
                nbformat.v4.new_markdown_cell(above),
                nbformat.v4.new_code_cell(above_code, outputs=[_printed("ready\n")]),
                nbformat.v4.new_markdown_cell(prompts.PROMPT + "run the next cell:** " + prompt),
                nbformat.v4.new_markdown_cell(between),
                nbformat.v4.new_code_cell(answer_code, outputs=[answer_output or _printed(answer)])]
    nb.cells[3].metadata["prompt"] = {"answers": [nb.cells[5].id], **({"words": list(words)} if words else {})}
    return nb


def test_the_telling_values_are_the_numbers_the_answer_prints_less_the_givens() -> None:
    nb = _chapter("n = 4,096: 1,361x faster, 35.2% of peak at 5.10 GHz on 2026-11-28 (sm_75, float32, AVX-512, "
                  "16 lanes, 1000 steps, 8 cores, size 250)\n", answer_code="print(report(250))",
                  prompt="at n = 4,096 and 12 cores, how much faster?")
    found = prompts.prompts(nb)[0]
    tells = telling.telling(nb.cells, found.index, found.answers, found.words)
    assert tells.numbers == {("1361", "x"), ("35.2", "%"), ("5.10", "GHz")}


@pytest.mark.parametrize(("where", "build"), [
    ("above", lambda v: _chapter(above=f"Earlier runs reached {v} of their lanes.")),
    ("above", lambda v: _chapter(above_code=f"x = 1  # about {v} of the lanes")),
    ("above", lambda v: _chapter(above_code="kernel = r'''\nint i = 0;  // " + v + " useful\n'''")),
    ("between", lambda v: _chapter(between=f"Hint: {v}.")),
    ("its answer's code comments", lambda v: _chapter(answer_code=f"print(report)  # expect {v}")),
])
def test_a_telling_number_shown_before_the_answer_fails_wherever_it_is(where, build) -> None:
    assert prompts.problems(_chapter()) == []
    found = prompts.problems(build("86%"))
    assert len(found) == 1 and where in found[0] and "shows 86%" in found[0], found


def test_a_number_in_an_output_or_a_figure_label_above_fails_and_context_excuses_a_repeated_one() -> None:
    nb = _chapter()
    nb.cells[2].outputs = [_printed("last run: 2.8x the steps\n")]
    assert "cell 2" in prompts.problems(nb)[0] and "shows 2.8x" in prompts.problems(nb)[0]
    nb.cells[2].outputs = [_figure("warp 7: 2.8x the steps")]
    assert "shows 2.8x" in prompts.problems(nb)[0]
    nb.cells[3].metadata["prompt"]["context"] = [nb.cells[2].id]  # the answer repeats cell 2's numbers on purpose
    assert prompts.problems(nb) == []


def test_the_same_number_is_the_same_quantity_only_in_the_same_unit() -> None:
    assert prompts.problems(_chapter(above="The whole run takes 86 minutes and 2.8 GB.")) == []
    assert prompts.problems(_chapter(above="| sorted | 86 | 2.8 |")) == []  # a table's bare numbers: other printings
    assert "shows 2.8x, 86%" in prompts.problems(_chapter(above="86 % of its lanes, 2.8 times the steps"))[0]


def test_a_figure_as_the_answer_is_read_by_its_labels() -> None:
    answer = _figure("shuffled: 30% of lanes useful")
    assert prompts.problems(_chapter(answer_output=answer)) == []
    assert "shows 30%" in prompts.problems(_chapter(above="Expect 30%.", answer_output=answer))[0]


def test_verdict_words_are_checked_everywhere_the_prompt_included_whatever_the_numbers_look_like() -> None:
    answer = "1 naive: predicted 88 GFLOP/s, bound by L1 lines\n"
    assert prompts.problems(_chapter(answer, words=("bound by L1 lines",))) == []
    # the same verdict printed in another format above: found, where a pattern of the answer's format missed it
    nb = _chapter(answer, words=("bound by L1 lines",))
    nb.cells[2].outputs = [_printed("rung | 1 naive  | 0.25 |      Bound by\nL1 lines\n")]
    assert "'bound by L1 lines', a verdict word" in prompts.problems(nb)[0]
    in_prompt = prompts.problems(_chapter(answer, words=("bound by L1 lines",), prompt="is it bound by L1 lines?"))
    assert "the prompt itself" in in_prompt[0]
    assert prompts.problems(_chapter(answer, words=("bound by L1 lines",), above="the L1's lines are unbound")) == []


def test_a_prompt_that_can_catch_nothing_fails() -> None:
    assert "no answer prints the verdict word 'wins'" in prompts.problems(_chapter(words=("wins",)))[0]
    blank = prompts.problems(_chapter("sorted: 4 of 8 lanes useful\n"))
    assert len(blank) == 1 and "nothing could catch a give-away" in blank[0]
    assert prompts.problems(_chapter("sorted: 4 of 8 lanes useful: the loop wins\n", words=("the loop wins",))) == []


def test_a_regex_in_a_word_is_literal_text_and_hostile_text_is_read_quickly() -> None:
    words = ("(a+)+$", "x.*y")
    assert "no answer prints the verdict word" in prompts.problems(_chapter("aaaa done", words=words))[0]
    assert prompts.problems(_chapter("ran (a+)+$ and x.*y: 12x\n", words=words)) == []
    hostile = "a" * 50_000 + "!" + "1," * 20_000 + "9" * 5_000
    started = time.process_time()
    prompts.problems(_chapter(above=hostile, words=("a" * 30 + "b",)))
    assert time.process_time() - started < 30  # a hang guard: linear work is a fraction of a second


def test_a_prompt_that_names_no_answers_or_a_wrong_cell_fails() -> None:
    nb = _chapter()
    nb.cells[3].metadata["prompt"]["answers"] = [nb.cells[4].id]  # a markdown cell
    assert "not ids of code cells after the prompt" in prompts.problems(nb)[0]
    nb.cells[3].metadata["prompt"]["answers"] = [nb.cells[2].id]  # before the prompt
    assert "not ids of code cells after the prompt" in prompts.problems(nb)[0]
    nb.cells[3].metadata["prompt"] = {"answers": [nb.cells[5].id], "context": [nb.cells[4].id]}  # below it
    assert "not ids of cells above the prompt" in prompts.problems(nb)[0]
    nb.cells[3].metadata["prompt"] = {"answers": [nb.cells[5].id], "words": [""]}
    assert "words must be non-empty strings" in prompts.problems(nb)[0]
    nb.cells[3].metadata["prompt"] = {"answers": [nb.cells[5].id], "gives_away": ["86%"]}
    assert "holds ['gives_away'], which nothing reads" in prompts.problems(nb)[0]
    del nb.cells[3].metadata["prompt"]
    assert "does not name its answers" in prompts.problems(nb)[0]
    nb.cells[4].metadata["prompt"] = {"answers": [nb.cells[5].id]}
    nb.cells[3].metadata["prompt"] = {"answers": [nb.cells[5].id]}
    assert "does not ask for a prediction" in prompts.problems(nb)[0]
