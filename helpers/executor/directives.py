"""The preprocessor's directives as NVRTC reads a kernel: #define, #undef, #if/#ifdef/#ifndef/#elif/#else/#endif
(with NVRTC's own macros for the T4: __CUDACC__, __CUDACC_RTC__, __CUDA_ARCH__ = 750), #include of CUDA's own
headers (each one named, so the C++ it declares may be used), #pragma, #line and #error. Every directive line and
every line an #if leaves out becomes empty, so later lines keep their numbers."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import CudaCError, UnsupportedSyntax

#: The macros NVRTC defines itself when it compiles for the T4 (sm_75), the GPU the series' reference compile
#: targets first; warpSize is CUDA's built-in 32.
PREDEFINED = {"warpSize": "32", "__CUDACC__": "1", "__CUDACC_RTC__": "1", "__CUDA_ARCH__": "750",
              "NULL": "__nullptr"}
#: Headers NVRTC has no copy of (it reports "could not open source file"): CUDA C needs none of them.
NO_SUCH_HEADER = ("stdio.h", "cstdio", "stdlib.h", "cstdlib", "assert.h", "cassert", "iostream", "math.h",
                  "cmath", "stdint.h", "cstdint", "float.h", "cfloat", "limits.h", "climits", "algorithm",
                  "vector", "string.h", "cstring", "cuda.h")
#: CUDA's headers the executor knows what they declare: the runtime's (nothing a kernel needs that is not built
#: in), cooperative groups, WMMA (mma.h) and half precision (cuda_fp16.h, which mma.h includes too).
KNOWN_HEADERS = ("cuda_runtime.h", "device_launch_parameters.h", "cuda_runtime_api.h", "cooperative_groups.h",
                 "cooperative_groups/reduce.h", "mma.h", "cuda_fp16.h")


@dataclass
class Directives:
    """What a source's directives say: the text with them blanked, its #defines, and the headers it includes."""

    text: str
    defines: dict[str, object]
    includes: set[str] = field(default_factory=set)


def directives(text: str, macro: Callable[[str, str, int], object]) -> Directives:
    """Read every directive of `text` in order (`macro` reads a #define with parameters)."""
    defines: dict[str, object] = dict(PREDEFINED)
    includes: set[str] = set()
    lines = text.split("\n")
    stack: list[tuple[bool, bool]] = []  # per open #if: (this branch is taken, some branch was taken)
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        active = all(taken for taken, _ in stack)
        if stripped.startswith("#"):
            lines[number - 1] = ""
            word = re.match(r"#\s*(\w*)", stripped).group(1)  # type: ignore[union-attr]
            if word in ("if", "ifdef", "ifndef", "elif", "else", "endif"):
                _conditional(word, stripped, stack, defines, number, active)
            elif active:
                _directive(word, stripped, defines, includes, macro, number)
        elif not active:
            lines[number - 1] = ""
    if stack:
        raise CudaCError("an #if, #ifdef or #ifndef is never closed with #endif (NVRTC: expected an #endif)")
    return Directives("\n".join(lines), defines, includes)


def _directive(word: str, stripped: str, defines: dict[str, object], includes: set[str],
               macro: Callable[[str, str, int], object], number: int) -> None:
    """One directive outside the conditionals, in a part of the source that is compiled."""
    match = re.fullmatch(r"#\s*define\s+([A-Za-z_]\w*)(\(?)\s*(.*)", stripped)
    if match and match.group(2):
        defines[match.group(1)] = macro(match.group(1), match.group(3), number)
    elif match:
        defines[match.group(1)] = match.group(3).strip() or "1"
    elif word == "undef":
        defines.pop(stripped.split()[-1], None)
    elif word == "include":
        includes.add(include(stripped, number))
    elif word == "error":
        raise CudaCError(f"{stripped[:120]} (NVRTC stops here: the source asks it to)", number)
    elif word not in ("pragma", "line"):
        raise UnsupportedSyntax(f"the directive {stripped.split()[0][:30]}: the executor reads #define, "
                                "#undef, #if, #ifdef, #ifndef, #elif, #else, #endif, #include, #line, #pragma and "
                                "#error", number)


def _conditional(word: str, stripped: str, stack: list[tuple[bool, bool]], defines: dict[str, object],
                 number: int, active: bool) -> None:
    """#if, #ifdef, #ifndef, #elif, #else or #endif: the stack of open conditionals updated."""
    rest = re.sub(rf"^#\s*{word}", "", stripped).strip()
    if word in ("if", "ifdef", "ifndef"):
        if not active:
            stack.append((False, True))  # nothing inside an excluded part is taken
            return
        taken = (rest.split()[0] in defines if rest else False) if word != "if" else _true(rest, defines, number)
        taken = not taken if word == "ifndef" else taken
        stack.append((taken, taken))
        return
    if not stack:
        raise CudaCError(f"#{word} without an #if before it", number)
    _, done = stack.pop()
    outer = all(taken for taken, _ in stack)
    if word == "endif":
        return
    taken = not done and outer and (word == "else" or _true(rest, defines, number))
    stack.append((taken, done or taken))


_OPERATORS = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Constant, ast.And,
              ast.Or, ast.Not, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift,
              ast.BitAnd, ast.BitOr, ast.BitXor, ast.Invert, ast.USub, ast.UAdd, ast.Eq, ast.NotEq, ast.Lt,
              ast.LtE, ast.Gt, ast.GtE)


def _true(expression: str, defines: dict[str, object], number: int) -> bool:
    """An #if's or #elif's condition: defined(X), the macros so far, any other name 0, C's integer operators."""
    text = re.sub(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in defines else "0", expression)
    for _ in range(32):
        expanded = re.sub(r"[A-Za-z_]\w*", lambda m: f" {defines[m.group(0)]} " if isinstance(
            defines.get(m.group(0)), str) else m.group(0), text)
        if expanded == text:
            break
        text = expanded
    text = re.sub(r"(?<=\d)[uUlL]+\b", "", text)
    text = re.sub(r"[A-Za-z_]\w*", "0", text)  # a name no #define gives is 0, as C's preprocessor has it
    text = text.replace("&&", " and ").replace("||", " or ").replace("/", "//")
    text = re.sub(r"!(?!=)", " not ", text)
    text = re.sub(r"(.+?)\?(.+?):(.+)", r"(\2) if (\1) else (\3)", text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
        if not all(isinstance(node, _OPERATORS) for node in ast.walk(tree)):
            raise ValueError(text)
        return bool(eval(compile(tree, "#if", "eval"), {"__builtins__": {}}))  # noqa: S307 - numbers only
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError):
        raise CudaCError(f"the condition of #if {expression[:60]} is not an integer expression the preprocessor "
                         "can evaluate", number) from None


def include(directive: str, number: int) -> str:
    """The header an #include names, if the executor knows it; refused with NVRTC's reason otherwise."""
    match = re.fullmatch(r'#\s*include\s*[<"]([^>"]*)[>"]', directive)
    header = match.group(1).strip() if match else directive
    if header == "cuda.h":
        raise UnsupportedSyntax("#include <cuda.h>: the driver API's header, for host code; NVRTC cannot compile it "
                                "(it includes <stdlib.h>) and a kernel needs nothing from it: delete the line",
                                number)
    if header in NO_SUCH_HEADER:
        raise UnsupportedSyntax(f"#include <{header}>: NVRTC, which CuPy compiles kernels with, has no copy of it "
                                "(\"could not open source file\"); CUDA C needs no #include for printf, assert or "
                                "the maths functions: delete the line", number)
    if header not in KNOWN_HEADERS:
        raise UnsupportedSyntax(f"#include {directive.split('include', 1)[1].strip()[:60]}: the CPU executor knows "
                                f"only these of CUDA's headers: {', '.join(f'<{h}>' for h in KNOWN_HEADERS)}; paste "
                                "what you need into the source", number)
    return header
