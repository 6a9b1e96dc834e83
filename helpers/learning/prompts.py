"""Prediction prompts and their answers: which cells answer a prompt, and whether anything shows it too early.

A prompt is a markdown cell that asks the learner to guess before running ("**Before you run the next cell:**").
Its cell metadata names the code cells that answer it, and may name the answer's verdict words and the cells above
whose numbers are not its answer (a table a figure redraws, the same operation measured again):

    "prompt": {"answers": ["<cell id>", ...], "words": ["<verdict as printed>", ...], "context": ["<cell id>", ...]}

Hand-outs (`classroom.learner_copy`) clear every code cell from a prompt to its last answer. `problems(nb)` is the
rule tests/test_prompts.py holds every chapter to: the answer's telling values (`telling.py`: every number its
answer prints that is not a given, and its verdict words) show nowhere a learner looks before the answer runs.
A notebook that is not one and metadata of the wrong shape are each one line; no pattern from a notebook is ever
run, so nothing a notebook holds can make the check hang.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.notebook_file import notebook_problem
from . import telling

#: The words that open every prediction prompt ("**Before you run the next cell:**", "... the next cells:**",
#: "**Before you look at the plot:**").
PROMPT = "**Before you "
#: The cell metadata key that holds a prompt's answers.
KEY = "prompt"
#: The keys a prompt's metadata may hold.
FIELDS = ("answers", "words", "context")


@dataclass(frozen=True)
class Prompt:
    """One prompt in a notebook: its cell's index, the indices of its answer cells, the verdict words its answer
    prints, and the indices of the cells above it whose numbers the answer repeats."""

    index: int
    answers: tuple[int, ...]
    words: tuple[str, ...] = ()
    context: tuple[int, ...] = ()

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
    return telling.source(cell)


def _ids(meta: dict, key: str) -> list:
    """The ids (or words) a prompt's metadata lists under `key`: a lone string counts as a list of one."""
    value = meta.get(key, [])
    return value if isinstance(value, list) else [value]


def _strings(value: list) -> bool:
    """Whether every item of `value` is a non-empty string (as cell ids and verdict words are)."""
    return all(isinstance(v, str) and v.strip() for v in value)


def _prompt(cells: list[Any], i: int, meta: Any, index_of: dict[Any, int]) -> Prompt:
    """The prompt in cell `i` read from its metadata `meta`, or a PromptError naming what is wrong with it."""
    where = f"cell {i} (id {cells[i].get('id')!r:.40})"
    if not is_prompt(cells[i]):
        raise PromptError(f"{where} has '{KEY}' metadata but does not ask for a prediction ({PROMPT!r})")
    if not isinstance(meta, dict) or not meta.get("answers") or not _strings(_ids(meta, "answers")):
        raise PromptError(f"{where} asks for a prediction but its metadata does not name its answers: give it "
                          f'"{KEY}": {{"answers": [ids of the code cells that answer it]}}')
    answers = tuple(index_of.get(a, -1) for a in _ids(meta, "answers"))
    wrong = [a for a, at in zip(_ids(meta, "answers"), answers, strict=True)
             if at <= i or cells[at].get("cell_type") != "code"]
    if wrong:
        raise PromptError(f"{where}: answers {wrong!r:.80} are not ids of code cells after the prompt")
    for key, what in (("context", "ids of cells above the prompt"), ("words", "the answer's verdicts as printed")):
        if not _strings(_ids(meta, key)):
            raise PromptError(f"{where}: {key} must be non-empty strings, {what}")
    context = tuple(index_of.get(c, -1) for c in _ids(meta, "context"))
    above = [c for c, at in zip(_ids(meta, "context"), context, strict=True) if not 0 <= at < i]
    if above:
        raise PromptError(f"{where}: context {above!r:.80} are not ids of cells above the prompt")
    return Prompt(i, answers, tuple(_ids(meta, "words")), context)


def prompts(nb: Any) -> list[Prompt]:
    """Every prompt of the notebook `nb` with its answer cells, or a PromptError naming the first one that does
    not say which code cells after it answer it (or the notebook's own fault, when it is not one)."""
    problem = notebook_problem(nb)
    if problem:
        raise PromptError(f"the prompts cannot be read: {problem}")
    cells = nb["cells"]
    index_of = {cell.get("id"): i for i, cell in enumerate(cells)}
    return [_prompt(cells, i, cell.get("metadata", {}).get(KEY), index_of) for i, cell in enumerate(cells)
            if is_prompt(cell) or cell.get("metadata", {}).get(KEY) is not None]


def _unknown_fields(nb: Any) -> list[str]:
    """A line for each prompt whose metadata holds a key this module does not read (a typo would check nothing)."""
    lines = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.get("metadata", {}).get(KEY)
        extra = sorted(map(str, set(meta) - set(FIELDS))) if isinstance(meta, dict) else []
        if extra:
            lines.append(f"cell {i}: '{KEY}' metadata holds {extra!r:.80}, which nothing reads: use only "
                         f"{list(FIELDS)} (the telling numbers are found in the answer's outputs; name its verdicts "
                         "in 'words')")
    return lines


def give_aways(nb: Any, prompt: Prompt) -> list[str]:
    """What is wrong with one prompt of the stored notebook `nb`: a verdict word no answer prints, no telling value
    at all, or a telling value a learner sees before the answer runs."""
    cells = nb["cells"]
    tells = telling.telling(cells, prompt.index, prompt.answers, prompt.words, prompt.context)
    lines = [f"cell {prompt.index}: no answer prints the verdict word {word!r} (in the stored outputs)"
             for word in telling.unprinted_words(cells, prompt.answers, prompt.words)]
    if not tells.numbers and not tells.words:
        lines.append(f"cell {prompt.index}: its answers print no number that is not a given and it names no verdict "
                     "words: nothing could catch a give-away (name the answer's verdicts in 'words')")
    lines += [f"cell {prompt.index}: {line} before the answer runs (cell {min(prompt.answers)}): reword or move it; "
              "a number the answer only repeats from a cell above belongs in the prompt's 'context'"
              for line in telling.give_aways(cells, prompt.index, prompt.answers, tells, prompt.context)]
    return lines


def problems(nb: Any) -> list[str]:
    """What is wrong with the prompts of the stored notebook `nb`, one line each (see give_aways)."""
    try:
        found = prompts(nb)
    except PromptError as exc:
        return [str(exc)]
    return _unknown_fields(nb) + [line for prompt in found for line in give_aways(nb, prompt)]
