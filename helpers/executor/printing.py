"""printf in a kernel: C's format as Python's % formatting (%d, %i, %u, %ld, %lld, %f, %e, %g, %x, %c, %%, with
flags, width and precision), checked against the number of values; escapes as C reads them."""

from __future__ import annotations

import re

from .errors import CudaCError, UnsupportedSyntax

#: The most printf lines one launch prints (a GPU's printf buffer, 1 MB by default, also drops the rest).
MAX_PRINTED = 1000
_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z)?([diuxXfFeEgGcs%])")
#: C's simple escapes (the letter after the backslash) and the characters they stand for.
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
           "f": "\f", "v": "\v"}


def python_format(literal: str, count: int, line: int) -> str:
    """The C string literal `literal` ("...", with its quotes) as a Python format for `count` values."""
    text = re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), literal[1:-1]).split("\0")[0]
    specs = 0
    out, last = [], 0
    for match in _SPEC.finditer(text):
        out.append(text[last:match.start()].replace("%", "%%"))
        last = match.end()
        flags, width, precision, _, kind = match.groups()
        if kind == "%":
            out.append("%%")
            continue
        if kind == "s":
            raise UnsupportedSyntax("printf's %s: the executor prints numbers (put the text in the format)", line)
        specs += 1
        kind = "d" if kind in "iu" else kind
        out.append(f"%{flags}{width}{'.' + precision if precision else ''}{kind}")
    out.append(text[last:].replace("%", "%%"))
    if specs != count:
        raise CudaCError(f"printf's format asks for {specs} value(s); {count} given", line)
    return "".join(out)
