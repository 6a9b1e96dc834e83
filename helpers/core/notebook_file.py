"""Reading a notebook file: the one way the commands read a chapter (classroom copies, site build, notebooks sync,
check and execute, the glossary's check), so that any malformed file is one line naming the file and what is
wrong with it, never nbformat's, jsonschema's or Python's traceback, and a symbolic link is never followed (a
"chapter" that links to /etc/passwd is refused unread, and nothing of it is shown).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .files import read_small_file

#: The most bytes a notebook may have: the largest chapter is under 2 MB with its figures.
MAX_BYTES = 100 * 2**20
#: The notebook format the series reads and writes (nbformat 4, any minor version nbformat knows).
NBFORMAT = 4
#: What a notebook's cells may be, and what each kind must hold besides its source and metadata.
CELL_TYPES = {"markdown": (), "raw": (), "code": ("outputs",)}


class NotebookFileError(ValueError):
    """A file that is not a notebook the series can use; the message names the file and what is wrong (`problem`)."""

    def __init__(self, path: str | Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.problem = problem


def read_notebook(path: str | Path) -> Any:
    """The notebook at `path` (an nbformat NotebookNode), or a NotebookFileError naming the file and what is wrong."""
    return read_notebook_text(path)[1]


def read_notebook_text(path: str | Path) -> tuple[str, Any]:
    """(the file's text, the notebook): read_notebook, with the text as it is on disk (to compare layouts)."""
    import nbformat

    try:
        raw = read_small_file(Path(path), MAX_BYTES, "a notebook is a file of its own",
                              "a notebook may have here (the largest chapter is under 2 MB)", follow_links=False)
        text = _text(raw)
        data = _json(text)
        problem = notebook_problem(data)
        if problem is None:
            return text, nbformat.reads(text, as_version=NBFORMAT)  # as nbformat reads it: each source one string
    except ValueError as exc:
        problem = str(exc)
    except RecursionError:
        problem = "it is nested too deeply to be a notebook"
    raise NotebookFileError(path, problem)


def _text(raw: bytes) -> str:
    """`raw` as UTF-8 text; a ValueError saying where it is not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start:,}): a notebook is "
                         "JSON text") from None
    if not text.strip():
        raise ValueError("it is empty: a notebook is JSON text with cells, metadata and nbformat")
    return text


class _NotJson(ValueError):
    """NaN or Infinity, which Python's json module reads but JSON does not have."""


def _refused_constant(name: str) -> None:
    raise _NotJson(f"it holds {name}, which JSON does not allow (a notebook never does)")


def _json(text: str) -> Any:
    """`text` parsed as JSON; a ValueError saying what is wrong (cut short, not JSON, a number JSON has not)."""
    try:
        return json.loads(text, parse_constant=_refused_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not JSON ({exc.msg}: line {exc.lineno:,}, column {exc.colno:,}): cut short, or "
                         "not a notebook") from None
    except _NotJson:
        raise
    except ValueError:  # Python's limit on the digits of an int (4,300)
        raise ValueError("it holds a number of thousands of digits: not a notebook") from None


def notebook_problem(data: Any) -> str | None:
    """What keeps `data` (parsed JSON, or a notebook in memory) from being an nbformat 4 notebook, in words; None if
    nothing does."""
    if not isinstance(data, dict):
        return f"it is {type(data).__name__}, not a notebook (an object with cells, metadata and nbformat)"
    version = data.get("nbformat")
    if version is None:
        return "it has no nbformat version: not a notebook (an object with cells, metadata and nbformat)"
    if type(version) is not int or version != NBFORMAT:
        return f"it is nbformat {version!r:.20}, not {NBFORMAT}: the series reads nbformat {NBFORMAT} notebooks"
    cells = data.get("cells")
    if not isinstance(cells, list):
        return f"its cells are {type(cells).__name__}, not a list"
    for index, cell in enumerate(cells):
        problem = _cell_problem(cell)
        if problem:
            return f"cell {index}: {problem}"
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"it holds a lone surrogate ({exc.object[exc.start]!r}), which is not a character of any text"
    return _schema_problem(data)


def _cell_problem(cell: Any) -> str | None:
    """What is wrong with one cell, in words; None if nothing the series reads is."""
    if not isinstance(cell, dict):
        return f"it is {type(cell).__name__}, not an object"
    kind = cell.get("cell_type")
    if kind not in CELL_TYPES:
        return f"its cell_type is {kind!r:.30}; a cell is one of {', '.join(CELL_TYPES)}"
    source = cell.get("source")
    if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
        return f"its source is {type(source).__name__}, not text (a string, or a list of lines)"
    if not isinstance(cell.get("metadata"), dict):
        return f"its metadata is {type(cell.get('metadata')).__name__}, not an object"
    missing = [key for key in CELL_TYPES[kind] if not isinstance(cell.get(key), list)]
    return f"a {kind} cell's {missing[0]} must be a list; it is {type(cell.get(missing[0])).__name__}" if missing \
        else None


def _schema_problem(data: dict[str, Any]) -> str | None:
    """The first way `data` breaks nbformat's own schema for its version, or None."""
    from nbformat.validator import get_validator

    minor = data.get("nbformat_minor")
    validator = get_validator(version=NBFORMAT, version_minor=minor if type(minor) is int else None)
    error = next(iter(validator.iter_errors(data)), None)
    if error is None:
        return None
    return f"it is not a valid notebook ({' '.join(str(error.message).split())[:200]})"


__all__ = ["MAX_BYTES", "NotebookFileError", "notebook_problem", "read_notebook", "read_notebook_text"]
