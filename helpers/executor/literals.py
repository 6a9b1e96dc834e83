"""C's constants at translation time: a literal (a number or a character) as Python code of its C type, and what
a constant expression (an array size, a template argument: N / 32, 1 << K) may use while it is evaluated then.
"""

from __future__ import annotations

import re
from typing import Any

from pycparser import c_ast

from . import operators
from .c_types import CONVERSIONS, DOUBLE, FLOAT, INTEGERS, CType
from .errors import CudaCError, UnsupportedSyntax
from .printing import ESCAPES

#: The longest number the executor reads: a double has 17 significant digits, a 64-bit integer 20; 60 leaves
#: room for leading zeros and exponents without letting a 5,000-digit constant reach Python's int().
MAX_DIGITS = 60


def literal(node: c_ast.Constant, line: int | None) -> tuple[str, CType]:
    """A number or character literal as Python code, with its C type (as C++ types it: 1 is an int, 1.0f a
    float, 3000000000 a long long, 'A' a char)."""
    text = node.value
    if node.type == "char" or text.startswith("'"):
        return _character(text, line)
    if node.type in ("float", "double"):
        digits = text.rstrip("fF" if node.type == "float" else "lL")
        if len(digits) > MAX_DIGITS:
            raise CudaCError(f"a number of {len(digits):,} characters: write at most {MAX_DIGITS}", line)
        if digits.lower().startswith("0x"):  # a hexadecimal float, 0x1p3f = 8.0f
            try:
                digits = repr(float.fromhex(digits))
            except OverflowError:
                raise CudaCError(f"the number {text[:30]} is out of range for a {node.type} (NVRTC: floating "
                                 "constant is out of range)", line) from None
        return (f"_f32({digits!r})", FLOAT) if node.type == "float" else (f"_f64({digits!r})", DOUBLE)
    if node.type in ("int", "unsigned int", "long int", "unsigned long int", "long long int",
                     "unsigned long long int"):
        digits = text.rstrip("uUlL")
        if len(digits) > MAX_DIGITS:
            raise CudaCError(f"the number {text[:20]}... ({len(digits):,} digits) is too large for any integer "
                             "type (unsigned long long holds 20 digits)", line)
        value = int(digits, 0) if not re.fullmatch(r"0\d+", digits) else int(digits, 8)
        suffix = text[len(digits):].lower()
        candidates = ["int", "long long"] if "u" not in suffix else ["unsigned int", "unsigned long long"]
        if "l" in suffix:
            candidates = candidates[1:]
        if digits.lower().startswith("0x") and "u" not in suffix:
            candidates = ["int", "unsigned int", "long long", "unsigned long long"][2 * ("l" in suffix):]
        for name in candidates:
            bits, signed = INTEGERS[name]
            if (-(2 ** (bits - 1)) if signed else 0) <= value < 2 ** (bits - (1 if signed else 0)):
                return str(value), CType(name)
        raise CudaCError(f"the number {text} is too large for any integer type", line)
    raise UnsupportedSyntax(f"the constant {text}", line)


def _character(text: str, line: int | None) -> tuple[str, CType]:
    """A character constant ('A', '\\n') as its code, of type char (as in C++)."""
    body = text[1:-1]
    escaped = ESCAPES.get(body[1:]) if len(body) == 2 and body[0] == "\\" else None
    value = ord(escaped) if escaped is not None else ord(body) if len(body) == 1 and body != "\\" else None
    if value is None or value > 127:
        raise UnsupportedSyntax(f"the character {text[:12]}: the executor reads one ASCII character or a simple "
                                "escape ('\\n', '\\0')", line)
    return str(value), CType("char")



def _constant_shift(_c: None, a: int, op: str, b: int, bits: int, line: int, *_: None) -> int:
    """A shift in a constant (an array size), with the runtime's rule: a count from 0 to the width less 1."""
    if not 0 <= b < bits:
        raise CudaCError(f"{a} {op} {b} shifts a {bits}-bit integer by {b}; C allows 0 to {bits - 1}", line)
    return a << b if op == "<<" else a >> b


def _constant_division(quotient: Any, remainder: Any) -> tuple[Any, Any]:
    """Integer / and % in a constant (N / 32 as an array size): C's, with a division by zero named."""
    def checked(fn: Any, op: str) -> Any:
        def run(_c: None, a: int, d: int, line: int, *_: None) -> Any:
            if d == 0:
                raise CudaCError(f"{a} {op} 0 in a constant: a division by zero (NVRTC: integer division by zero)",
                                 line)
            return fn(_c, a, d, line, None, None)
        return run
    return checked(quotient, "/"), checked(remainder, "%")


def _constant_namespace() -> dict[str, object]:
    """What a constant (an array size, a template argument) may use while it is evaluated at translation time:
    every integer operator, comparisons, &&, ||, !, ?:, min, max and abs."""
    names: dict[str, object] = {**CONVERSIONS, "_shift": _constant_shift, "_c": None, "_m": None, "_b": None,
                                "_min": min, "_max": max, "_abs": abs}
    runtime = operators.RUNTIME
    for key in ("_i", "_not", "_land", "_lor", "_tern"):
        names[key] = runtime[key]
    for kind in ("int", "unsigned_int", "long_long", "unsigned_long_long"):
        names[f"_idiv_{kind}"], names[f"_imod_{kind}"] = _constant_division(runtime[f"_idiv_{kind}"],
                                                                            runtime[f"_imod_{kind}"])
    return names


CONSTANT_NAMESPACE = _constant_namespace()
