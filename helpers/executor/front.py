"""The executor's front end: a kernel's CUDA C as text (comments, #define, the subset's words) and as pycparser's
tree, with errors that name the line. Any CUDA C can be asked for its kernels' names (kernel_names)."""

from __future__ import annotations

import re

from pycparser import c_ast, c_parser


class CudaCError(ValueError):
    """CUDA C the executor cannot run: `line` (1-based, in the kernel's source) says where, when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line else message)


class UnsupportedSyntax(CudaCError):
    """Valid CUDA C, but outside the subset the CPU executor runs."""


# ------------------------------------------------------------------------------------------------ source text

#: Declared before the kernel so that pycparser knows these type names (kept on line 1: lines stay the same).
_PRELUDE = "typedef unsigned long long size_t; typedef _Bool bool; typedef int int32_t; " \
           "typedef unsigned int uint32_t; typedef long long int64_t; typedef unsigned long long uint64_t; "
PRELUDE_TYPES = {"size_t", "bool", "int32_t", "uint32_t", "int64_t", "uint64_t"}
_KEYWORDS = {"__global__": "inline", "__device__": "", "__host__": "", "__forceinline__": "",
             "__restrict__": "restrict", "__shared__": "static"}
_UNSUPPORTED_WORDS = ("template", "class", "struct", "union", "typename", "namespace", "goto", "switch",
                      "__launch_bounds__", "__constant__", "__managed__", "asm", "cooperative_groups",
                      "__shfl_sync", "__shfl_down_sync", "__syncwarp", "extern __shared__", "static", "printf",
                      "char", "short", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "auto",
                      "nullptr", "__shfl_xor_sync", "__ballot_sync")
#: Types outside the subset; only a declaration (`half x`) counts, since `half` may also be a variable's name.
_UNSUPPORTED_TYPES = ("float2", "float3", "float4", "int2", "int3", "int4", "half", "__half", "dim3", "uint3",
                      "long double")


#: The largest source the executor takes: the series' kernels are under 5,000 characters, so a larger one is a
#: mistake (a file pasted twice, a huge comment), and translating it would take minutes.
MAX_SOURCE, MAX_LINES = 100_000, 5_000


def _strip_comments(source: str) -> str:
    """Comments replaced by spaces (newlines kept, so line numbers stay)."""
    def blank(match: re.Match[str]) -> str:
        text = match.group(0)
        return text if text.startswith('"') else re.sub(r"[^\n]", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', blank, source, flags=re.S)


def preprocess(source: str) -> tuple[str, list[str], set[str]]:
    """(C that pycparser parses, the names of the __global__ functions, those of them declared extern "C").
    A #define of a constant is expanded."""
    if not isinstance(source, str) or not source.strip():
        raise CudaCError(f"a kernel's source is a string of CUDA C; got {source!r:.60}")
    if len(source) > MAX_SOURCE or source.count("\n") > MAX_LINES:
        raise CudaCError(f"the source is {len(source):,} characters on {source.count(chr(10)) + 1:,} lines; the CPU "
                         f"executor takes at most {MAX_SOURCE:,} characters and {MAX_LINES:,} lines (was something "
                         "pasted in twice?)")
    text, defines = _directives(_strip_comments(source))
    for number, line in enumerate(text.split("\n"), 1):
        _refuse_outside_the_subset(line, number)
    text = _expand(text, defines)
    kernels, exported = kernel_names(text)
    text = re.sub(r'extern\s+"C"\s*(\{)?', lambda m: " " * len(m.group(0)) if not m.group(1) else _no_block(),
                  text)
    for word, replacement in _KEYWORDS.items():
        text = re.sub(rf"(?<!\w){word}(?!\w)", replacement, text)
    return _PRELUDE + text, kernels, exported


def _directives(text: str) -> tuple[str, dict[str, str]]:
    """The text with its # lines blanked (lines keep their numbers), and the constants it #defines."""
    defines: dict[str, str] = {"warpSize": "32"}  # CUDA's built-in warpSize: 32 on every NVIDIA GPU
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped.startswith("#"):
            continue
        match = re.fullmatch(r"#\s*define\s+([A-Za-z_]\w*)(\(?)\s*(.*)", stripped)
        if match and match.group(2):
            raise UnsupportedSyntax(f"the macro {match.group(1)}(...) takes arguments: the CPU executor expands "
                                    "only constants (#define TILE 16); write a __device__ function instead", number)
        if match:
            defines[match.group(1)] = match.group(3).strip() or "1"
        elif not re.fullmatch(r"#\s*(pragma|include|line)\b.*", stripped):
            raise UnsupportedSyntax(f"the directive {stripped.split()[0]}: only #define of a constant, "
                                    "#include, #line and #pragma are accepted", number)
        lines[number - 1] = ""
    return "\n".join(lines), defines


def _refuse_outside_the_subset(line: str, number: int) -> None:
    """An UnsupportedSyntax for a word or type on this line that the executor does not run."""
    if "$" in line:
        raise UnsupportedSyntax("'$' in a name: the CPU executor takes names of letters, digits and _ (some "
                                "compilers accept $, C and CUDA do not promise it)", number)
    for word in _UNSUPPORTED_WORDS:
        if re.search(rf"(?<![\w.]){re.escape(word)}(?!\w)", line):
            if word == "static" and "__shared__" in line:
                continue
            hint = " (declare a shared array with a size: __shared__ float tile[16][16];)" \
                if word == "extern __shared__" else ""
            raise UnsupportedSyntax(f"{word!r} is not in the subset the CPU executor runs{hint}", number)
    for word in _UNSUPPORTED_TYPES:
        if re.search(rf"(?<![\w.]){word}\s*\*?\s+[A-Za-z_]", line):
            raise UnsupportedSyntax(f"the type {word}: the CPU executor runs int, unsigned, long long, size_t, "
                                    "float, double and bool", number)


def _expand(text: str, defines: dict[str, str]) -> str:
    """Every #define'd name replaced by its value in brackets (a #define may use another)."""
    for _ in range(10):
        before = text
        for name, value in defines.items():  # a function as the replacement: a backslash in `value` stays C's
            text = re.sub(rf"(?<![\w.]){name}(?!\w)", lambda _, v=value: f"({v})", text)
            if len(text) > MAX_SOURCE * 4:
                raise UnsupportedSyntax(f"expanding #define {name} makes the source over {MAX_SOURCE * 4:,} "
                                        "characters: does a macro use itself, or another that uses it, twice?")
        if text == before:
            break
    return text


def has_side_effects(node: c_ast.Node) -> bool:
    """Whether evaluating `node` changes something (++, --, an assignment or a call)."""
    if isinstance(node, c_ast.Assignment | c_ast.FuncCall) or (
            isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--")):
        return True
    return any(has_side_effects(child) for _, child in node.children())


def kernel_names(source: str) -> tuple[list[str], set[str]]:
    """The names of the __global__ functions in `source`, and of those declared extern "C" (the ones CuPy's
    RawKernel finds by name: C++ renames the others). Any CUDA C, not only the executor's subset."""
    text = _strip_comments(source)
    kernels = re.findall(r"__global__\s+void\s+([A-Za-z_]\w*)\s*\(", text)
    return kernels, set(re.findall(r'extern\s+"C"\s+__global__\s+void\s+([A-Za-z_]\w*)\s*\(', text))


def _no_block() -> str:
    raise UnsupportedSyntax('an extern "C" { ... } block: write extern "C" before each __global__ function')


def parse(source: str) -> tuple[c_ast.FileAST, list[str], set[str]]:
    """The parsed translation unit, the names of its kernels and of those declared extern "C"; a CudaCError
    naming the line otherwise."""
    text, kernels, exported = preprocess(source)
    try:
        tree = c_parser.CParser().parse(text, "kernel.cu")
    except c_parser.ParseError as exc:  # 'kernel.cu:3:14: before: x'
        match = re.match(r"[^:]*:(\d+):\d+:\s*(.*)", str(exc))
        line, what = (int(match.group(1)), match.group(2)) if match else (None, str(exc))
        raise CudaCError(f"this does not parse as CUDA C ({what}): a missing ';', bracket or type?", line) \
            from None
    return tree, kernels, exported


# ------------------------------------------------------------------------------------------------ translation
