"""What a prediction prompt's answer tells, and where a learner could read it before running the answer.

A prompt's **telling values** are found, not written by hand: every number its answer cells print (their stored
outputs, figure labels included) that is not common, and the verdict words its metadata names (`"words"`, literal
text, each printed by an answer). A number is common when it is a given of the question, not its answer: a single
digit, a power of two or of ten, a whole number below 100 printed without a unit (a count or an index), a literal
in the notebook's code up to the answer, a number the prompt itself
states, a number shown by a cell tagged `givens` above the prompt (the machine's report: its peak, clock and
bandwidth are facts every later prompt may repeat), or a number shown by a cell the prompt names as its context
(`"context"`: cells above it whose numbers are not its answer: a table a figure redraws, the same operation measured
again). `give_aways` lists every place a learner sees a telling value before the answer runs: text, outputs, figure
labels and code comments above the prompt or between it and its first answer, the answer cells' own comments, and
the prompt itself (its words; its numbers are givens).

Words are matched as literal text (case and line breaks aside), never as a regular expression a notebook supplies,
so a notebook cannot make the check slow.
"""

from __future__ import annotations

import html
import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

#: A number as the chapters print it: digits with thousands commas, a decimal part, an exponent. Not part of a name
#: or a word (`sm_75`, `float32`, `AVX-512`), never one of a date's parts (`2026-11-28`).
NUMBER = re.compile(r"(?<![\w.\-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\d\-]|\.\d)")
#: Units of measure, as the chapters print them after a number ("12x", "35.2%", "146 µs", "101 GFLOP/s"): a number
#: is the same quantity only in the same unit, or with no unit of this list on either side ("101" in a table column
#: is another printing than "101 GFLOP/s", and a count of 43 is not 43%).
UNITS = ("x", "times", "%", "ns", "µs", "us", "ms", "s", "seconds", "min", "minutes", "h", "hours", "days", "GHz",
         "MHz", "FLOP/s", "GFLOP/s", "TFLOP/s", "FLOP", "FLOPs", "GFLOP", "TFLOP", "GB/s", "TB/s", "MB/s", "B", "KB",
         "MB", "GB", "TB", "KiB", "MiB", "GiB", "bytes", "W")
#: Units written out, as the short form they mean.
SPELLED = {"times": "x", "seconds": "s", "minutes": "min", "hours": "h"}
#: "x" counts as a unit only right after the number ("12x", not the "x" of "64 x 64").
_GLUED = ("x",)
UNIT = re.compile(r"(?P<glued>x)(?![\w])|\s?(?P<unit>" + "|".join(
    re.escape(unit) for unit in sorted(set(UNITS) - set(_GLUED), key=len, reverse=True)) + r")(?![\w/])")
#: Text that looks like numbers but is an address or a commit: left out before numbers are read.
NOT_NUMBERS = re.compile(r"https?://\S+|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b")
#: The keys of a plotly figure whose strings a learner reads: names, titles, labels, hover and annotation text.
FIGURE_TEXT = frozenset({"text", "name", "title", "hovertext", "hovertemplate", "texttemplate", "customdata",
                         "ticktext", "label", "prefix", "suffix", "x", "y"})
PLOTLY = "application/vnd.plotly.v1+json"
#: Cell tags whose cells are no lesson text: the header that `notebooks sync` writes (title, links, time).
NOT_LESSON = ("header",)
#: The tag of a cell whose numbers are facts of the machine (its report), given to every prompt below it.
GIVENS = "givens"


@dataclass(frozen=True)
class Telling:
    """What an answer tells: the numbers it prints (as printed, thousands commas dropped) and its verdict words."""

    numbers: frozenset[tuple[str, str | None]]  # (number, its unit of UNITS, or None)
    words: tuple[str, ...]

    def shown_in(self, text: str) -> list[str]:
        """The telling numbers that `text` shows: the same number in the same unit (or both without one)."""
        return sorted(number + (unit or "") for number, unit in self.numbers & measures(text))


def source(cell: Any) -> str:
    """A cell's source as one string (a stored notebook may keep it as a list of lines)."""
    text = cell.get("source", "")
    return text if isinstance(text, str) else "".join(text)


def _joined(value: Any) -> str:
    """An output's text, kept as one string or as a list of lines."""
    if isinstance(value, str):
        return value
    return "".join(part for part in value if isinstance(part, str)) if isinstance(value, list) else ""


def figure_labels(figure: Any) -> list[str]:
    """The strings a learner reads on a plotly figure (its JSON): trace names, titles, axis and hover text."""
    found: list[str] = []

    def walk(value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for name, inner in value.items():
                if name != "template":  # the theme: colours and fonts, nothing a learner reads
                    walk(inner, str(name))
        elif isinstance(value, list):
            for inner in value:
                walk(inner, key)
        elif isinstance(value, str) and key in FIGURE_TEXT:
            found.append(value)

    walk(figure, None)
    return found


def shown(cell: Any) -> str:
    """Everything a code cell shows once run: stream text, text, markdown and HTML (tags dropped), figure labels
    and error text; images and widgets' model ids are left out."""
    parts: list[str] = []
    for output in cell.get("outputs", []) or []:
        if not isinstance(output, dict):
            continue
        parts.append(_joined(output.get("text", "")))
        data = output.get("data", {})
        for mime, value in (data.items() if isinstance(data, dict) else ()):
            if mime == PLOTLY:
                parts += figure_labels(value)
            elif mime in ("text/plain", "text/markdown", "text/latex"):
                parts.append(_joined(value))
            elif mime == "text/html":
                parts.append(html.unescape(re.sub(r"<[^>]*>", " ", _joined(value))))
        if output.get("output_type") == "error":
            parts += [str(output.get("ename", "")), str(output.get("evalue", ""))]
    return "\n".join(parts)


def _python(code: str) -> str:
    """Code as Python's tokenizer can read it: IPython's `%magic` and `!shell` lines blanked."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())


def _tokens(code: str) -> list[tokenize.TokenInfo] | None:
    try:
        return list(tokenize.generate_tokens(io.StringIO(_python(code)).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def comments(code: str) -> str:
    """The comments a learner reads in a code cell: Python's `#` comments, and the `//` and `/* */` comments of
    any CUDA C the cell holds in a string."""
    tokens = _tokens(code)
    if tokens is None:  # not Python: every line's comment, as far as a `#` or `//` shows one
        return "\n".join(re.findall(r"(?:#|//)(.*)", code))
    found = [token.string.lstrip("#") for token in tokens if token.type == tokenize.COMMENT]
    for token in tokens:
        if token.type == tokenize.STRING:
            found += re.findall(r"(?m)(?:^|\s)//(.*)$", token.string)
            found += re.findall(r"/\*(.*?)\*/", token.string, flags=re.DOTALL)
    return "\n".join(found)


def literals(code: str) -> set[str]:
    """The numbers written in a code cell's code (not its comments or strings), as `numbers` reads them."""
    tokens = _tokens(code)
    if tokens is None:
        return numbers(re.sub(r"#.*", "", code))
    return {number for token in tokens if token.type == tokenize.NUMBER
            for number in numbers(token.string.replace("_", ""))}


def measures(text: str) -> set[tuple[str, str | None]]:
    """Every number in `text` with its unit: (the number as printed less its thousands commas, the unit of UNITS
    right after it or None): "1,361x faster" gives ("1361", "x")."""
    found = set()
    text = NOT_NUMBERS.sub(" ", text)
    for match in NUMBER.finditer(text):
        unit = UNIT.match(text, match.end())
        found.add((match.group().replace(",", ""), unit and (unit.group("glued") or unit.group("unit"))))
    return {(number, SPELLED.get(unit, unit) if unit else None) for number, unit in found}


def numbers(text: str) -> set[str]:
    """Every number in `text`, as printed less its thousands commas ("1,361x" gives "1361")."""
    return {number for number, _ in measures(text)}


def is_common(number: str) -> bool:
    """A number that answers nothing: a single digit, or a power of two or of ten written as a whole number (sizes,
    widths, counts of lanes)."""
    if not number.isdigit():
        return False
    value = int(number)
    return value < 10 or value & (value - 1) == 0 or number.rstrip("0") == "1"


def _small_count(number: str) -> bool:
    """A whole number below 100 printed without a unit: a count or an index (a thread, a step, a row), too like
    the many other small counts a chapter prints to tell an answer by; a verdict word names one that matters."""
    return number.isdigit() and int(number) < 100


def word_pattern(word: str) -> re.Pattern[str]:
    """A literal word or phrase as a pattern: its characters escaped, any white space for a space, and no letter or
    digit glued to either end. Built from escaped text only, it matches in time linear in the text."""
    body = r"\s+".join(re.escape(part) for part in word.split())
    start = r"(?<!\w)" if re.match(r"\w", word.strip()) else ""
    end = r"(?!\w)" if re.search(r"\w$", word.strip()) else ""
    return re.compile(start + body + end, re.IGNORECASE)


def _tags(cell: Any) -> list:
    tags = cell.get("metadata", {}).get("tags", [])
    return tags if isinstance(tags, list) else []


def lesson(cell: Any) -> bool:
    """Whether a cell is part of the lesson a learner reads (not the header `notebooks sync` writes)."""
    return not any(tag in NOT_LESSON for tag in _tags(cell))


def visible(cell: Any) -> str:
    """All a learner reads of a cell before and after running it: a markdown cell's text; a code cell's comments
    and what it shows."""
    if cell.get("cell_type") == "code":
        return comments(source(cell)) + "\n" + shown(cell)
    return source(cell)


def telling(cells: list[Any], index: int, answers: Iterable[int], words: Iterable[str],
            context: Iterable[int] = ()) -> Telling:
    """The telling values of the prompt in cell `index` of `cells`, answered by the cells `answers`, with its verdict
    `words` and the `context` cells whose numbers the answer may repeat."""
    answers = sorted(answers)
    givens = set(numbers(source(cells[index])))
    for at, cell in enumerate(cells[:answers[-1] + 1]):
        if cell.get("cell_type") == "code":
            givens |= literals(source(cell))
        if at < index and GIVENS in _tags(cell):
            givens |= numbers(visible(cell))
    for at in context:
        givens |= numbers(visible(cells[at]))
    printed = set().union(*(measures(shown(cells[at])) for at in answers))
    return Telling(frozenset((n, unit) for n, unit in printed
                             if n not in givens and not is_common(n) and not (unit is None and _small_count(n))),
                   tuple(words))


def places(cells: list[Any], index: int, answers: Iterable[int]) -> Iterator[tuple[int, str, str]]:
    """(cell index, where, text) for every text a learner sees before the prompt's first answer runs: the cells
    above it and between, the prompt itself, and the answer cells' own comments."""
    answers = sorted(answers)
    for at, cell in enumerate(cells[:answers[0]]):
        if lesson(cell):
            where = "the prompt itself" if at == index else ("above" if at < index else "between it and its answer")
            yield at, where, visible(cell)
    for at in answers:
        yield at, "its answer's code comments", comments(source(cells[at]))


def give_aways(cells: list[Any], index: int, answers: Iterable[int], tells: Telling,
               context: Iterable[int] = ()) -> list[str]:
    """One line for each place where a learner sees one of `tells` before the prompt in cell `index` is answered."""
    lines = []
    patterns = {word: word_pattern(word) for word in tells.words}
    exempt = {index, *context}
    for at, where, text in places(cells, index, answers):
        cell = f"cell {at} (id {cells[at].get('id')}, {where})"
        shown_numbers = tells.shown_in(text) if at not in exempt else []
        if shown_numbers:
            lines.append(f"{cell} shows {', '.join(shown_numbers)}, which the answer prints")
        lines += [f"{cell} shows {word!r}, a verdict word of the answer" for word, pattern in patterns.items()
                  if pattern.search(text)]
    return lines


def unprinted_words(cells: list[Any], answers: Iterable[int], words: Iterable[str]) -> list[str]:
    """The verdict words that no answer cell prints (a word no answer prints can catch nothing)."""
    printed = "\n".join(shown(cells[at]) for at in answers)
    return [word for word in words if not word_pattern(word).search(printed)]
