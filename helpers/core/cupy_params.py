"""CuPy's ElementwiseKernel parameters ('float32 x, raw T y') as CuPy reads them: shared by helpers.gpu.sources,
which builds whole kernels from them, and the CPU executor's CuPy front, which runs them.

In core because both read it, and importing helpers.executor loads pycparser, which showing a kernel never needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: NumPy dtype names ElementwiseKernel parameters may use, and their CUDA C types.
C_TYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long",
    "float32": "float", "float64": "double",
}
NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Param:
    """One ElementwiseKernel parameter: 'float32 x', 'T x' (a type placeholder) or 'raw T x' (whole array)."""

    type: str
    name: str
    raw: bool = False


def parse_params(text: str, what: str = "params") -> list[Param]:
    """'float32 a, raw T x' -> [Param('float32', 'a'), Param('T', 'x', raw=True)], as CuPy reads them."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string such as 'float32 x, float32 y'; got {type(text).__name__}")
    out = []
    for part in (p.strip() for p in text.split(",")):
        words = part.split()
        raw = bool(words) and words[0] == "raw"
        words = words[1:] if raw else words
        if len(words) != 2 or not all(NAME.fullmatch(word) for word in words):
            raise ValueError(f"cannot read {part!r} in {what} {text!r}: write each parameter as 'type name', "
                             "e.g. 'float32 x', 'T x' or 'raw T x', separated by commas")
        if len(words[0]) > 1 and words[0] not in C_TYPES:  # CuPy: one letter is a placeholder, else a dtype name
            raise ValueError(f"unknown type {words[0]!r} in {what} {text!r}: a type is a dtype name "
                             f"({', '.join(C_TYPES)}) or one letter, a type placeholder such as T")
        out.append(Param(words[0], words[1], raw))
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{what} {text!r} uses a name twice")
    return out
