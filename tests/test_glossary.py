"""The glossary: every term's first use in the chapters' prose is defined on the spot, and the page is current."""

from __future__ import annotations

import contextlib
import io

import pytest

from helpers.learning import glossary


def test_every_term_is_defined_where_the_series_first_uses_it() -> None:
    problems = glossary.undefined(glossary.chapter_prose())
    assert problems == [], "\n".join(problems)


def test_the_glossary_page_is_written_from_the_terms() -> None:
    assert glossary.PAGE.read_text(encoding="utf-8") == glossary.page(), "run: python -m helpers.learning.glossary"


def test_each_term_has_forms_that_find_it_and_a_definition() -> None:
    names = [t.name for t in glossary.TERMS]
    assert len(names) == len(set(names)) and len(names) >= 40
    for term in glossary.TERMS:
        assert term.forms and term.definition.endswith((".", ")")), term.name
        assert term.pattern().search(glossary.page()), term.name  # its own entry uses it


def _first(*cells: str) -> dict[str, tuple[str, int, bool]]:
    return glossary.first_uses([(f"cell {i}", text) for i, text in enumerate(cells)])


def test_a_first_use_counts_only_in_bold_or_as_a_glossary_link() -> None:
    assert _first("Threads run in groups of 32, **warps**, in lock step.")["warp"][2]
    assert _first("A [warp](../docs/glossary.md#warp) is 32 threads.")["warp"][2]
    assert not _first("Threads run in groups of 32, *warps*, in lock step.")["warp"][2]
    later = _first("A warp is 32 threads.", "A **warp** is 32 threads.")["warp"]
    assert later[0] == "cell 0" and not later[2]  # bold in a later cell is too late


def test_code_headings_and_fenced_blocks_are_not_prose() -> None:
    found = _first("## Warps", "```c\nint warp = 0;\n```", "Call `warp_size()`.", "The **warp** runs.")
    assert found["warp"][0] == "cell 3"
    # a name used in code counts for terms that are names in code, bold around the code span included
    assert _first("Each thread reads **`blockIdx.x`**, its block's number.")["blockIdx"][2]
    assert not _first("Each thread reads `blockIdx.x`.")["blockIdx"][2]


def test_an_undefined_or_unused_term_is_reported_with_where_and_what_to_do() -> None:
    lines = glossary.undefined([("chapter 03 cell 7", "Threads run in warps of 32.")])
    warp = next(line for line in lines if line.startswith("warp:"))
    assert "chapter 03 cell 7" in warp and "#warp" in warp
    assert any(line.startswith("FLOP: never used") for line in lines)


def test_define_prints_one_entry_and_a_wrong_name_lists_the_terms() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        glossary.define("Warp")
    assert out.getvalue().startswith("warp: 32 GPU threads")
    with pytest.raises(ValueError, match="no glossary term 'wrap'.*warp"):
        glossary.define("wrap")
