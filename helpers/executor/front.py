"""The executor's front end: a kernel's CUDA C as text (comments, #define, the subset's words) and as pycparser's
tree, with errors that name the line. Any CUDA C can be asked for its kernels' names (kernel_names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast, c_parser

from .c_types import VECTORS
from .cxx import Lowered, closing, line_of, lower, lower_structs, shared_memory_wrappers, split_arguments
from .directives import directives
from .errors import CudaCError, UnsupportedSyntax
from .names import instances, lower_names

# ------------------------------------------------------------------------------------------------ source text

#: Type names declared before the kernel so that pycparser knows them (all on line 1: lines keep their numbers).
#: Vector types are opaque here; the translator gives them their members. `__auto` stands for C++'s `auto`.
PRELUDE_TYPES = ("size_t", "bool", "__auto", *VECTORS)
_PRELUDE = "typedef unsigned long long size_t; typedef _Bool bool; " + \
    "".join(f"typedef int {name}; " for name in PRELUDE_TYPES[2:])
_KEYWORDS = {"__global__": "inline", "__device__": "", "__host__": "", "__shared__": "static",
             "__constant__": "register"}
_UNSUPPORTED_WORDS = ("union", "namespace", "goto", "switch", "__managed__", "asm", "static", "std::",
                      "operator", "new", "delete", "throw", "try", "virtual", "this", "using")
#: Types outside the subset; only a declaration (`half x`) counts, since `half` may also be a variable's name.
_UNSUPPORTED_TYPES = ("half", "__half", "__nv_bfloat16", "dim3", "uint3", "long double")
#: Names NVRTC (CuPy's compiler) does not define with no #include: what it says, and what to write instead.
_NVRTC_UNDEFINED = {
    **{name: "write unsigned int" for name in ("uint", "u_int")},
    "ushort": "write unsigned short", "uchar": "write unsigned char", "ulong": "write unsigned long long",
    **{name: "write int, unsigned int, long long or unsigned long long" for name in (
        "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t")},
    **{name: "it comes from <math.h>; write __int_as_float(0x7f800000) for infinity (0x7fc00000: NaN)"
       for name in ("INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF")},
    **{name: f"it comes from <{header}>, which NVRTC has no copy of; write the number, {value}" for header, values in (
        ("math.h", {"M_PI": "3.14159265f", "M_PI_2": "1.57079633f", "M_PI_4": "0.785398163f", "M_E": "2.71828183f",
                    "M_SQRT2": "1.41421356f", "M_LN2": "0.693147181f", "M_1_PI": "0.318309886f",
                    "M_2_PI": "0.636619772f"}),
        ("float.h", {"FLT_MAX": "3.402823466e+38f", "FLT_MIN": "1.175494351e-38f", "FLT_EPSILON": "1.192092896e-07f",
                     "DBL_MAX": "1.7976931348623157e+308"}),
        ("limits.h", {"INT_MAX": "2147483647", "INT_MIN": "(-2147483647 - 1)", "UINT_MAX": "4294967295u"}))
       for name, value in values.items()},
}


#: The largest source the executor takes: the series' kernels are under 5,000 characters, so a larger one is a
#: mistake (a file pasted twice, a huge comment), and translating it would take minutes.
MAX_SOURCE, MAX_LINES = 100_000, 5_000


def _splice(source: str) -> str:
    """Lines ending in a backslash joined to the next, as C's preprocessor does first (blank lines added after
    the joined one, so later lines keep their numbers)."""
    out, pending, joined = [], 0, ""
    for line in source.split("\n"):
        if line.endswith("\\"):
            joined += line[:-1]
            pending += 1
            continue
        out.append(joined + line)
        out.extend([""] * pending)
        joined, pending = "", 0
    if joined:
        out.append(joined)
    return "\n".join(out)


def _digit_separators(text: str) -> str:
    """C++14's digit separators (1'000'000) removed from numbers, outside string literals."""
    def number(match: re.Match[str]) -> str:
        return match.group(0) if match.group(0).startswith('"') else match.group(0).replace("'", "")
    return re.sub(r'"(?:\\.|[^"\\])*"|(?<![A-Za-z_\'])\d[\d\']*\d', number, text)


def _strip_comments(source: str) -> str:
    """Comments replaced by spaces (newlines kept, so line numbers stay)."""
    def blank(match: re.Match[str]) -> str:
        text = match.group(0)
        return text if text.startswith('"') else re.sub(r"[^\n]", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', blank, source, flags=re.S)


@dataclass
class Preprocessed:
    """The C pycparser reads; the kernels' names and those declared extern "C"; what C++ lowering found."""

    text: str
    kernels: list[str]
    exported: set[str]
    lowered: Lowered
    includes: set[str]


def preprocess(source: str) -> Preprocessed:
    """The source as C that pycparser parses: comments gone, each #define of a constant expanded, C++ lowered."""
    if not isinstance(source, str) or not source.strip():
        raise CudaCError(f"a kernel's source is a string of CUDA C; got {source!r:.60}")
    source = source.replace("\r\n", "\n").replace("\r", " ")  # Windows line endings; a stray CR is a space
    if len(source) > MAX_SOURCE or source.count("\n") > MAX_LINES:
        raise CudaCError(f"the source is {len(source):,} characters on {source.count(chr(10)) + 1:,} lines; the CPU "
                         f"executor takes at most {MAX_SOURCE:,} characters and {MAX_LINES:,} lines (was something "
                         "pasted in twice?)")
    read = directives(_digit_separators(_strip_comments(_splice(source))), _macro)
    text = re.sub(r"(?<![\w.])static(?=\s+(?:__device__|__forceinline__|__inline__|inline|__host__|__global__)"
                  r"(?!\w))", "      ", read.text)  # a static function: static only limits where its name is seen
    text = re.sub(r"(?<![\w.])static(?=\s+(?:const|constexpr)\s)", "      ", text)  # a file-scope constant
    text = shared_memory_wrappers(lower_names(text, read.includes))
    half = ("half", "__half") if {"cuda_fp16.h", "mma.h"} & read.includes else ()
    names = tuple(set(re.findall(r"(?<![\w.])(?:int|float|double|unsigned|long|short|char|bool|size_t|const)\s+("
                                 + "|".join(_UNSUPPORTED_TYPES[:-1]) + r")\s*[,;)=\[]", text)))  # int dim3: a name
    for number, line in enumerate(text.split("\n"), 1):
        _refuse_outside_the_subset(line, number, half + names)
    own = _own_names(text, read.defines)
    text = _expand(text, read.defines)
    for number, line in enumerate(text.split("\n"), 1):
        _refuse_undefined(line, number, own)
    text = _extern_blocks(text)
    kernels, exported = kernel_names(text)
    text = re.sub(r'extern\s+"C"', lambda m: " " * len(m.group(0)), text)
    text, made = instances(text)
    lowered = lower(lower_structs(text))
    text = lowered.text
    for word, replacement in _KEYWORDS.items():
        text = re.sub(rf"(?<!\w){word}(?!\w)", replacement, text)
    types = "".join(f"typedef int {name}; " for name in sorted((lowered.type_names | made | set(half))
                                                                 - set(PRELUDE_TYPES)))
    return Preprocessed(_PRELUDE + types + text, kernels, exported, lowered, read.includes)


def _own_names(text: str, defines: dict[str, object]) -> set[str]:
    """The names the source gives a meaning itself: its #defines and typedefs (typedef unsigned int uint;)."""
    typedefs = re.findall(r"(?<!\w)typedef\s[^;{}]*?([A-Za-z_]\w*)\s*;", text)
    return set(defines) | set(typedefs)


def _extern_blocks(text: str) -> str:
    """Each extern "C" { ... } block opened up, with extern "C" put before each __global__ function in it."""
    while match := re.search(r'extern\s+"C"\s*\{', text):
        end = closing(text.replace("{", "(").replace("}", ")"), match.end() - 1, line_of(text, match.start()))
        inner = re.sub(r'(?<!")(?<![\w"]\s)(__global__)', r'extern "C" \1', text[match.end():end - 1])
        text = text[:match.start()] + re.sub(r"[^\n]", " ", text[match.start():match.end()]) + inner + " " + \
            text[end:]
    return text


def _refuse_outside_the_subset(line: str, number: int, half: tuple[str, ...] = ()) -> None:
    """An UnsupportedSyntax for a word on this line that the executor does not run, or NVRTC does not define
    (`half`: the type names allowed here, as types or as variables' names)."""
    if "$" in line:
        raise UnsupportedSyntax("'$' in a name: the CPU executor takes names of letters, digits and _ (some "
                                "compilers accept $, C and CUDA do not promise it)", number)
    for word in _UNSUPPORTED_WORDS:
        if re.search(rf"(?<![\w.]){re.escape(word)}" + (r"(?!\w)" if word[-1] != ":" else ""), line):
            if word == "static" and "__shared__" in line:
                continue
            raise UnsupportedSyntax(f"{word!r} is not in the subset the CPU executor runs", number)
    for word in _UNSUPPORTED_TYPES:
        if word in half:  # half with its header, or a type's name used as a variable's (int dim3)
            continue
        if re.search(rf"(?<![\w.]){word}\s*\*?\s+[A-Za-z_]", line):
            if word in ("half", "__half"):
                raise UnsupportedSyntax(f"the type {word} comes from <cuda_fp16.h> (or <mma.h>): #include it first "
                                        f"(NVRTC: identifier \"{word}\" is undefined)", number)
            raise UnsupportedSyntax(f"the type {word}: the CPU executor runs bool, char, short, int, long long, "
                                    "float, double (each integer may be unsigned) and float2/float4/int2/int4",
                                    number)


def _refuse_undefined(line: str, number: int, own: set[str]) -> None:
    """An UnsupportedSyntax for a name NVRTC does not define without a header (and the source does not define)."""
    for word, instead in _NVRTC_UNDEFINED.items():
        if word not in own and re.search(rf"(?<![\w.]){word}(?!\w)", line):
            raise UnsupportedSyntax(f"{word} is not defined in CUDA C as NVRTC (CuPy's compiler) reads it (NVRTC: "
                                    f"identifier \"{word}\" is undefined): {instead}", number)


@dataclass(frozen=True)
class Macro:
    """A #define with parameters, #define IDX(i, j, n) ((i) * (n) + (j)): its parameters and body."""

    params: tuple[str, ...]
    body: str

    def expand(self, text: str, name: str) -> str:
        """`text` with each use NAME(a, b) replaced by the body, each parameter by its argument as written."""
        pattern = re.compile(rf"(?<![\w.]){name}\s*\(")
        start = 0
        while match := pattern.search(text, start):
            end = closing(text, match.end() - 1, line_of(text, match.start()))
            args = split_arguments(text[match.end():end - 1])
            if len(args) != len(self.params) and not (args == [] and self.params == ("",)):
                raise UnsupportedSyntax(f"the macro {name} takes {len(self.params)} argument(s); got {len(args)}",
                                        line_of(text, match.start()))
            values = dict(zip(self.params, args, strict=False))
            body = re.sub(r"[A-Za-z_]\w*", lambda m, v=values: f" {v[m.group(0)]} " if m.group(0) in v
                          else m.group(0), self.body)
            newlines = "\n" * text.count("\n", match.start(), end)
            text = f"{text[:match.start()]} {body} {newlines}{text[end:]}"  # spaces: tokens stay apart, as in C
            start = match.start() + len(body) + 2
        return text


def _macro(name: str, rest: str, number: int) -> Macro:
    """#define NAME(a, b) body, read."""
    params, _, body = rest.partition(")")
    names = tuple(p.strip() for p in params.split(","))
    if "#" in body or not all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in names if p) or "..." in params:
        raise UnsupportedSyntax(f"the macro {name}: the CPU executor expands macros whose parameters are names and "
                                "whose body has no # or ## (write a __device__ function instead)", number)
    return Macro(names, body.strip())


#: How many rounds of #define expansion the executor makes (a #define that uses another is one more).
MAX_DEFINE_DEPTH = 64


def _expand(text: str, defines: dict[str, str | Macro]) -> str:
    """Every #define'd name replaced by its value, and each macro's use by its body, as C's preprocessor does:
    no brackets are added (#define N 1+1 makes N*2 three), only spaces, so tokens stay apart."""
    constants = {name: value for name, value in defines.items() if isinstance(value, str)}
    pattern = re.compile(rf"(?<![\w.])({'|'.join(map(re.escape, constants))})(?!\w)") if constants else None
    for _ in range(MAX_DEFINE_DEPTH):
        before = text
        for name, value in defines.items():
            if isinstance(value, Macro):
                text = value.expand(text, name)
        if pattern is not None:  # a function as the replacement: a backslash in a value stays C's
            text = pattern.sub(lambda m: f" {constants[m.group(1)]} ", text)  # no brackets: C adds none
        if len(text) > MAX_SOURCE * 4:
            raise UnsupportedSyntax(f"expanding the #defines makes the source over {MAX_SOURCE * 4:,} characters: "
                                    "does a macro use itself, or another that uses it, twice?")
        if text == before:
            return text
    raise UnsupportedSyntax(f"the #defines still change the source after {MAX_DEFINE_DEPTH} rounds of expansion: does "
                            "a macro use itself?")


def has_side_effects(node: c_ast.Node) -> bool:
    """Whether evaluating `node` changes something (++, --, an assignment or a call)."""
    if isinstance(node, c_ast.Assignment | c_ast.FuncCall) or (
            isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--")):
        return True
    return any(has_side_effects(child) for _, child in node.children())


def kernel_names(source: str) -> tuple[list[str], set[str]]:
    """The names of the __global__ functions in `source`, and of those declared extern "C" (the ones CuPy's
    RawKernel finds by name: C++ renames the others). Any CUDA C, not only the executor's subset."""
    text = _extern_blocks(_strip_comments(source.replace("\r\n", "\n").replace("\r", " ")))
    bounds = r"(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
    kernels = re.findall(rf"__global__\s+void\s+{bounds}([A-Za-z_]\w*)\s*\(", text)
    return kernels, set(re.findall(rf'extern\s+"C"\s+__global__\s+void\s+{bounds}([A-Za-z_]\w*)\s*\(', text))


def parse(source: str) -> tuple[c_ast.FileAST, Preprocessed]:
    """The parsed translation unit and what preprocessing found; a CudaCError naming the line otherwise."""
    pre = preprocess(source)
    try:
        tree = c_parser.CParser().parse(pre.text, "kernel.cu")
    except c_parser.ParseError as exc:  # 'kernel.cu:3:14: before: x'
        match = re.match(r"[^:]*:(\d+):\d+:\s*(?:before:\s*)?(.*)", str(exc))
        line, token = (int(match.group(1)), match.group(2).strip()) if match else (None, "")
        lines = source.split("\n")
        text = lines[line - 1].strip() if line and line <= len(lines) else ""
        where = (f" at {token[:30]!r}" if token else "") + (f", in `{text[:80]}`" if text else "")
        raise CudaCError(f"this does not parse as CUDA C{where}: a missing ';', bracket or "
                         "type, or C++ the CPU executor does not read (docs/architecture.md lists what it reads)",
                         line) from None
    return tree, pre


# ------------------------------------------------------------------------------------------------ translation
