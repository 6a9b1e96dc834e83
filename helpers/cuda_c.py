"""CUDA C to Python: the compiler half of the CPU executor (helpers.cuda_sim runs what it makes).

A kernel's CUDA C is parsed with pycparser and translated, function by function, into Python source that keeps
C's rules: every expression gets its C type here, at translation time, so `float` arithmetic stays float32, a
`double` literal promotes to double and 32-bit integers wrap. Memory goes through the runtime's load and store
functions (bounds and races are checked there), `__syncthreads()` becomes a `yield` (each thread is a
generator the runtime steps from barrier to barrier), and every branch and loop reports to the runtime (for
divergence pictures and the step limit). Only the subset the series teaches is accepted; anything else is an
UnsupportedSyntax naming the construct and its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pycparser import c_ast, c_parser

# ------------------------------------------------------------------------------------------------ C types


@dataclass(frozen=True)
class CType:
    """A scalar C type (`name` as in C), a pointer to one (`pointer`), or an array of one (`dims`)."""

    name: str
    pointer: bool = False
    dims: tuple[int, ...] = ()
    shared: bool = False

    @property
    def scalar(self) -> CType:
        return CType(self.name)

    def __str__(self) -> str:
        return self.name + ("*" if self.pointer else "") + "".join(f"[{d}]" for d in self.dims)


#: Integer types: bits and signedness. `long` is 64 bits, as on Linux and macOS (LP64), where CUDA runs.
INTEGERS = {"bool": (1, False), "int": (32, True), "unsigned int": (32, False),
            "long long": (64, True), "unsigned long long": (64, False)}
FLOATS = {"float": 32, "double": 64}
#: The NumPy dtype of each scalar type: what an array argument for a pointer to it must hold.
DTYPES = {"bool": "bool", "int": "int32", "unsigned int": "uint32", "long long": "int64",
          "unsigned long long": "uint64", "float": "float32", "double": "float64"}
_RANK = {"bool": 0, "int": 1, "unsigned int": 1, "long long": 2, "unsigned long long": 2}
INT, UINT, FLOAT, DOUBLE, BOOL = (CType(n) for n in ("int", "unsigned int", "float", "double", "bool"))


def _type_name(words: list[str]) -> str | None:
    """Our name for a C type spelled with these words ('unsigned long int' -> 'unsigned long long'), or None."""
    if words in (["_Bool"], ["float"], ["double"], ["void"]):
        return "bool" if words == ["_Bool"] else words[0]
    if set(words) - {"unsigned", "signed", "long", "int"} or ("unsigned" in words and "signed" in words):
        return None
    return ("unsigned " if "unsigned" in words else "") + ("long long" if "long" in words else "int")


def is_float(t: CType) -> bool:
    return not t.pointer and not t.dims and t.name in FLOATS


def is_int(t: CType) -> bool:
    return not t.pointer and not t.dims and t.name in INTEGERS


def arithmetic(a: CType, b: CType) -> CType:
    """C's usual arithmetic conversions: the type both operands of a binary operator are converted to."""
    if "double" in (a.name, b.name):
        return DOUBLE
    if "float" in (a.name, b.name):
        return FLOAT
    a, b = promote(a), promote(b)
    if a == b:
        return a
    a_signed, b_signed = INTEGERS[a.name][1], INTEGERS[b.name][1]
    if a_signed == b_signed:
        return a if _RANK[a.name] >= _RANK[b.name] else b
    signed, unsigned = (a, b) if a_signed else (b, a)
    if _RANK[unsigned.name] >= _RANK[signed.name]:
        return unsigned
    return signed  # long long holds every unsigned int


def promote(t: CType) -> CType:
    """Integer promotion: bool (like char and short) becomes int in arithmetic."""
    return INT if t.name == "bool" else t


def _integer(bits: int, signed: bool) -> Callable[[Any], int]:
    """C's conversion to an integer type: whole numbers wrap around; floats truncate toward zero, NaN gives 0
    and values out of range saturate (as the GPU's cvt.rzi instruction does)."""
    mask, half = (1 << bits) - 1, 1 << (bits - 1)
    low, high = (-half, half - 1) if signed else (0, mask)

    def convert(x: Any) -> int:
        if type(x) is int:
            return ((x + half) & mask) - half if signed else x & mask
        if isinstance(x, np.integer | bool):
            return convert(int(x))
        value = float(x)
        if value != value:
            return 0
        return int(min(max(value, low), high))
    return convert


def _to_bool(x: Any) -> int:
    return 1 if x else 0


#: The conversion to each scalar type, by the name the translated code calls: _to_int, _to_float, ...
CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "_to_bool": _to_bool, "_to_int": _integer(32, True), "_to_unsigned_int": _integer(32, False),
    "_to_long_long": _integer(64, True), "_to_unsigned_long_long": _integer(64, False),
    "_to_float": np.float32, "_to_double": np.float64, "_f32": np.float32, "_f64": np.float64,
}


# ------------------------------------------------------------------------------------------------ errors


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
_PRELUDE_TYPES = {"size_t", "bool", "int32_t", "uint32_t", "int64_t", "uint64_t"}
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
    text = _strip_comments(source)
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
    text = "\n".join(lines)
    for number, line in enumerate(text.split("\n"), 1):
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
    for _ in range(10):  # a #define may use another
        before = text
        for name, value in defines.items():  # a function as the replacement: a backslash in `value` stays C's
            text = re.sub(rf"(?<![\w.]){name}(?!\w)", lambda _, v=value: f"({v})", text)
            if len(text) > MAX_SOURCE * 4:
                raise UnsupportedSyntax(f"expanding #define {name} makes the source over {MAX_SOURCE * 4:,} "
                                        "characters: does a macro use itself, or another that uses it, twice?")
        if text == before:
            break
    kernels, exported = kernel_names(text)
    text = re.sub(r'extern\s+"C"\s*(\{)?', lambda m: " " * len(m.group(0)) if not m.group(1) else _no_block(),
                  text)
    for word, replacement in _KEYWORDS.items():
        text = re.sub(rf"(?<!\w){word}(?!\w)", replacement, text)
    return _PRELUDE + text, kernels, exported


def _has_side_effects(node: c_ast.Node) -> bool:
    """Whether evaluating `node` changes something (++, --, an assignment or a call)."""
    if isinstance(node, c_ast.Assignment | c_ast.FuncCall) or (
            isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--")):
        return True
    return any(_has_side_effects(child) for _, child in node.children())


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

#: Math functions: C name -> (argument type, result type, runtime function). None: the argument's own type.
MATH = {
    **{f: (FLOAT, FLOAT, f"_m_{f}") for f in ("expf", "logf", "log2f", "sqrtf", "rsqrtf", "fabsf", "sinf",
                                             "cosf", "tanhf", "floorf", "ceilf", "roundf", "truncf", "__expf",
                                             "exp2f", "log10f")},
    **{f: (DOUBLE, DOUBLE, f"_m_{f}") for f in ("exp", "log", "log2", "sqrt", "rsqrt", "fabs", "sin", "cos",
                                               "tanh", "floor", "ceil", "round", "trunc", "exp2", "log10")},
}
MATH2 = {"fmaxf": FLOAT, "fminf": FLOAT, "powf": FLOAT, "__fdividef": FLOAT, "fmax": DOUBLE, "fmin": DOUBLE,
         "pow": DOUBLE, "atan2f": FLOAT, "atan2": DOUBLE, "fmodf": FLOAT, "fmod": DOUBLE}
ATOMICS = ("atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicExch")
BUILTINS = {"threadIdx": "t", "blockIdx": "b", "blockDim": "bd", "gridDim": "gd"}


@dataclass
class Function:
    """A translated function: its parameters' C types and Python source; a kernel if __global__."""

    name: str
    params: list[tuple[str, CType]]
    python: str
    kernel: bool
    barriers: bool  # calls __syncthreads(): the runtime steps it as a generator
    returns: CType = field(default_factory=lambda: CType("void"))
    exported: bool = True  # a kernel declared extern "C": CuPy finds it by its name


@dataclass
class _Var:
    py: str
    type: CType


class _Translator:
    """Translates one function. Expressions come back as (Python source, C type)."""

    def __init__(self, functions: dict[str, Function], kernel: bool, typedefs: dict[str, CType]) -> None:
        self.functions = functions
        self.typedefs = typedefs
        self.kernel = kernel
        self.scopes: list[dict[str, _Var]] = [{}]
        self.names: set[str] = set()
        self.lines: list[str] = []
        self.loops: list[list[str] | None] = []  # the increment code `continue` must run, per enclosing loop
        self.barriers = False
        self.returns = CType("void")
        self.constants: dict[str, int] = {}  # const ints known at translation time, by Python name

    # -------------------------------------------------------------------- scopes and output

    def declare(self, name: str, ctype: CType, line: int) -> str:
        if name in BUILTINS:
            raise UnsupportedSyntax(f"{name!r} is CUDA's own (threadIdx, blockIdx, blockDim, gridDim); choose "
                                    "another name", line)
        if name in self.scopes[-1]:
            raise CudaCError(f"{name!r} is declared twice in the same block", line)
        py = f"{name}_" if f"{name}_" not in self.names else f"{name}_{len(self.names)}"
        self.names.add(py)
        self.scopes[-1][name] = _Var(py, ctype)
        return py

    def lookup(self, name: str, line: int) -> _Var:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise CudaCError(f"{name!r} is not declared: declare it first (e.g. int {name} = ...;)", line)

    def emit(self, depth: int, code: str) -> None:
        self.lines.append("    " * depth + code)

    # -------------------------------------------------------------------- types of declarations

    def ctype(self, node: c_ast.Node, line: int) -> CType:
        """The CType of a declaration's type node."""
        if isinstance(node, c_ast.TypeDecl):
            if not isinstance(node.type, c_ast.IdentifierType):
                raise UnsupportedSyntax(f"the type {type(node.type).__name__}", line)
            words = [w for w in node.type.names]
            typedefs = {"size_t": "unsigned long long", "bool": "bool", "int32_t": "int",
                        "uint32_t": "unsigned int", "int64_t": "long long", "uint64_t": "unsigned long long"}
            if len(words) == 1 and words[0] in typedefs:
                return CType(typedefs[words[0]])
            if len(words) == 1 and words[0] in self.typedefs:
                return self.typedefs[words[0]]
            name = _type_name(words)
            if name is None:
                raise UnsupportedSyntax(f"the type {' '.join(words)!r}: use int, unsigned, long long, size_t, "
                                        "float, double or bool", line)
            return CType(name)
        if isinstance(node, c_ast.PtrDecl):
            inner = self.ctype(node.type, line)
            if inner.pointer or inner.dims:
                raise UnsupportedSyntax("a pointer to a pointer or to an array", line)
            return CType(inner.name, pointer=True)
        if isinstance(node, c_ast.ArrayDecl):
            inner = self.ctype(node.type, line)
            if node.dim is None:
                raise UnsupportedSyntax("an array without a size", line)
            size = self.constant(node.dim, line)
            return CType(inner.name, dims=(size, *inner.dims))
        raise UnsupportedSyntax(f"the declaration {type(node).__name__}", line)

    def constant(self, node: c_ast.Node, line: int) -> int:
        """A compile-time integer (an array size): literals and arithmetic on them."""
        code, ctype = self.expr(node)
        if not is_int(ctype):
            raise CudaCError("an array size must be a whole number known when the kernel compiles", line)
        value = self.known(code)
        if value is None:
            raise UnsupportedSyntax("an array size must be a constant (a number, a #define or a const int), not "
                                    "a variable", line)
        if not isinstance(value, int) or value <= 0:
            raise CudaCError(f"an array size must be positive; got {value}", line)
        return value

    def known(self, code: str) -> int | None:
        """The value of translated code made only of numbers and const ints, else None."""
        try:
            value = eval(code, {"__builtins__": {}}, {**_CONSTANT_NAMESPACE, **self.constants})  # noqa: S307
        except CudaCError:
            raise
        except Exception:  # noqa: BLE001 - it depends on a variable
            return None
        return value if isinstance(value, int) else None

    # -------------------------------------------------------------------- statements

    def function(self, node: c_ast.FuncDef, kernel: bool) -> Function:
        decl = node.decl
        name = decl.name
        line = decl.coord.line
        func = decl.type
        self.returns = self.ctype(func.type, line)
        if kernel and self.returns.name != "void":
            raise CudaCError(f"the kernel {name} must return void", line)
        params: list[tuple[str, CType]] = []
        for p in func.args.params if func.args else []:
            if isinstance(p, c_ast.EllipsisParam) or not isinstance(p, c_ast.Decl):
                raise UnsupportedSyntax("a parameter list with ...", line)
            ptype = self.ctype(p.type, line)
            if ptype.name == "void" and not ptype.pointer:
                continue  # f(void)
            if ptype.dims:
                ptype = CType(ptype.name, pointer=True)
            params.append((p.name, ptype))
        fn = Function(name, params, "", kernel, False, self.returns)
        self.functions[name] = fn  # recursion finds itself
        args = [self.declare(pname, ptype, line) for pname, ptype in params]
        self.emit(0, f"def {_fn(name)}(_c, {', '.join(args)}):" if args else f"def {_fn(name)}(_c):")
        self.block(node.body, 1)
        self.emit(1, "return" if kernel else "_fell_off()" if self.returns.name != "void" else "return")
        if self.barriers and not kernel:
            raise UnsupportedSyntax(f"__syncthreads() in the __device__ function {name}: call it in the kernel "
                                    "itself", line)
        if self.barriers:
            self.lines.append("    if False:\n        yield")  # a generator even if no barrier is reached
        fn.python = "\n".join(self.lines)
        fn.barriers = self.barriers
        return fn

    def block(self, node: c_ast.Node | None, depth: int) -> None:
        self.scopes.append({})
        before = len(self.lines)
        items = node.block_items or [] if isinstance(node, c_ast.Compound) else [node] if node else []
        for item in items:
            self.statement(item, depth)
        if len(self.lines) == before:
            self.emit(depth, "pass")
        self.scopes.pop()

    def statement(self, node: c_ast.Node, depth: int) -> None:
        line = node.coord.line if node.coord else None
        if isinstance(node, c_ast.Compound):
            self.block(node, depth)
        elif isinstance(node, c_ast.Decl):
            self.declaration(node, depth)
        elif isinstance(node, c_ast.DeclList):
            for decl in node.decls:
                self.declaration(decl, depth)
        elif isinstance(node, c_ast.If):
            cond = self.condition(node.cond, line)
            self.emit(depth, f"if {cond}:")
            self.block(node.iftrue, depth + 1)
            if node.iffalse is not None:
                self.emit(depth, "else:")
                self.block(node.iffalse, depth + 1)
        elif isinstance(node, c_ast.For | c_ast.While | c_ast.DoWhile):
            self.loop(node, depth, line)
        elif isinstance(node, c_ast.Continue | c_ast.Break | c_ast.Return):
            self.jump(node, depth, line)
        elif isinstance(node, c_ast.FuncCall) and _name(node.name) == "__syncthreads":
            if node.args is not None and node.args.exprs:
                raise CudaCError("__syncthreads() takes no arguments", line)
            self.barriers = True
            self.emit(depth, f"yield {line}")
        elif isinstance(node, c_ast.EmptyStatement):
            self.emit(depth, "pass")
        elif isinstance(node, c_ast.Pragma):
            pass
        elif isinstance(node, c_ast.Node) and type(node).__name__ in _EXPRESSIONS:
            for code in self.side_effects(node, line):
                self.emit(depth, code)
        else:
            raise UnsupportedSyntax(f"the statement {type(node).__name__}", line)

    def loop(self, node: c_ast.For | c_ast.While | c_ast.DoWhile, depth: int, line: int | None) -> None:
        """A for, while or do-while loop as a Python while loop that reports each test to the runtime."""
        if isinstance(node, c_ast.For):
            self.scopes.append({})
            if node.init is not None:
                self.statement(node.init, depth)
            increment = self.side_effects(node.next, line) if node.next is not None else []
            cond = self.condition(node.cond, line, loop=True) if node.cond is not None else f"_loop(_c, {line}, 1)"
            self.emit(depth, "while True:")
            self.emit(depth + 1, f"if not {cond}:")
            self.emit(depth + 2, "break")
            self.loops.append(increment)
            self.block(node.stmt, depth + 1)
            self.loops.pop()
            for code in increment:
                self.emit(depth + 1, code)
            self.scopes.pop()
        elif isinstance(node, c_ast.While):
            self.emit(depth, f"while {self.condition(node.cond, line, loop=True)}:")
            self.loops.append([])
            self.block(node.stmt, depth + 1)
            self.loops.pop()
        else:
            self.emit(depth, "while True:")
            self.loops.append(None)
            self.block(node.stmt, depth + 1)
            self.loops.pop()
            self.emit(depth + 1, f"if not {self.condition(node.cond, line, loop=True)}:")
            self.emit(depth + 2, "break")

    def jump(self, node: c_ast.Continue | c_ast.Break | c_ast.Return, depth: int, line: int | None) -> None:
        """continue (after the for loop's increment), break, or return (its value converted to the return type)."""
        if isinstance(node, c_ast.Continue):
            if not self.loops:
                raise CudaCError("continue outside a loop", line)
            if self.loops[-1] is None:
                raise UnsupportedSyntax("continue inside do { ... } while: use a while loop", line)
            for code in self.loops[-1]:
                self.emit(depth, code)
            self.emit(depth, "continue")
        elif isinstance(node, c_ast.Break):
            if not self.loops:
                raise UnsupportedSyntax("break outside a loop (switch is not supported)", line)
            self.emit(depth, "break")
        elif node.expr is None:
            if self.returns.name != "void":
                raise CudaCError("return without a value in a function that returns one", line)
            self.emit(depth, "return")
        else:
            if self.returns.name == "void":
                raise CudaCError("a kernel (or void function) returns no value: write return;", line)
            self.emit(depth, f"return {self.convert(node.expr, self.returns, line)}")

    def declaration(self, node: c_ast.Decl, depth: int) -> None:
        line = node.coord.line
        if isinstance(node.type, c_ast.FuncDecl):
            raise UnsupportedSyntax("a function declared inside a function", line)
        ctype = self.ctype(node.type, line)
        if ctype.name == "void" and not ctype.pointer:
            raise CudaCError(f"{node.name} cannot be void", line)
        shared = "static" in (node.storage or [])
        if ctype.dims:
            if node.init is not None:
                raise UnsupportedSyntax("an array with an initializer", line)
            ctype = CType(ctype.name, dims=ctype.dims, shared=shared)
            py = self.declare(node.name, ctype, line)
            kind = "_shared" if shared else "_local"
            self.emit(depth, f"{py} = {kind}(_c, {node.name!r}, {ctype.name!r}, {ctype.dims!r})")
            return
        if shared:
            raise UnsupportedSyntax("a __shared__ variable that is not an array: declare an array of one "
                                    f"(__shared__ {ctype} {node.name}[1];)", line)
        if node.init is None:
            value = f"_Unset({node.name!r}, {line})"  # using it before a value is set is reported
        else:
            if isinstance(node.init, c_ast.InitList):
                raise UnsupportedSyntax("an initializer list { ... }", line)
            value = self.convert(node.init, ctype, line)
        py = self.declare(node.name, ctype, line)
        if "const" in (node.quals or []) and is_int(ctype) and node.init is not None:
            known = self.known(value)
            if known is not None:  # const int TILE = 16: usable as an array size, as in C++
                self.constants[py] = known
        self.emit(depth, f"{py} = {value}")

    # -------------------------------------------------------------------- expressions with side effects

    def side_effects(self, node: c_ast.Node, line: int | None) -> list[str]:
        """Statements for an expression evaluated for its effect (an assignment, ++, a call)."""
        if isinstance(node, c_ast.ExprList):
            return [code for expr in node.exprs for code in self.side_effects(expr, line)]
        if isinstance(node, c_ast.Assignment):
            return [self.assign(node.lvalue, node.op, node.rvalue, line)]
        if isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--"):
            one = c_ast.Constant("int", "1", node.coord)
            return [self.assign(node.expr, "+=" if "++" in node.op else "-=", one, line)]
        code, _ = self.expr(node)
        return [code]

    def assign(self, target: c_ast.Node, op: str, value: c_ast.Node, line: int | None) -> str:
        """One statement for `target op value` (op: =, +=, ...), converting to the target's type as C does."""
        ttype = self.type_of(target)
        if ttype.dims:
            raise CudaCError("an array cannot be assigned as a whole; assign its elements", line)
        if op == "=":
            rhs = self.convert(value, ttype, line)
        else:
            if _has_side_effects(target):  # the target is read and then written: its index would run twice
                raise UnsupportedSyntax(f"a compound assignment ({op}) whose target changes something itself "
                                        "(such as x[i++] += 1): do the ++ on a line of its own", line)
            binary = c_ast.BinaryOp(op[:-1], target, value, target.coord)
            rhs = self.convert(binary, ttype, line)
        if isinstance(target, c_ast.ID):
            return f"{self.lookup(target.name, line).py} = {rhs}"
        if isinstance(target, c_ast.ArrayRef | c_ast.UnaryOp):
            kind, base, index = self.address(target, line)
            return f"_st{kind}(_c, {base}, {index}, {rhs}, {line})"
        raise UnsupportedSyntax(f"assigning to {type(target).__name__}", line)

    def address(self, node: c_ast.Node, line: int | None) -> tuple[str, str, str]:
        """('' for a pointer, 'a' for an array; the pointer or array; the index) of p[i], tile[y][x] or *p."""
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            ptr, ptype = self.expr(node.expr)
            if not ptype.pointer:
                raise CudaCError("* of something that is not a pointer", line)
            return "", ptr, "0"
        indices: list[c_ast.Node] = []
        base = node
        while isinstance(base, c_ast.ArrayRef):
            indices.insert(0, base.subscript)
            base = base.name
        code, btype = self.expr(base)
        if btype.pointer:
            if len(indices) != 1:
                raise UnsupportedSyntax("p[i][j] on a pointer: index a flat array with p[i * width + j]", line)
            return "", code, self.index(indices[0], line)
        if btype.dims:
            if len(indices) != len(btype.dims):
                raise CudaCError(f"the array has {len(btype.dims)} dimension(s); index all of them", line)
            parts = ", ".join(self.index(i, line) for i in indices)
            return "a", code, f"({parts},)"
        raise CudaCError("[] on something that is neither a pointer nor an array", line)

    def index(self, node: c_ast.Node, line: int | None) -> str:
        code, ctype = self.expr(node)
        if not is_int(ctype):
            raise CudaCError(f"an index must be a whole number; this one is {ctype}", line)
        return code

    # -------------------------------------------------------------------- expressions

    def condition(self, node: c_ast.Node, line: int | None, loop: bool = False) -> str:
        """A branch's or loop's condition: the runtime records the way each thread goes (and counts loop steps)."""
        code, ctype = self.expr(node)
        if ctype.dims or ctype.name == "void" or ctype.pointer:
            raise CudaCError(f"a condition must be a number; got {ctype}", line)
        return f"_{'loop' if loop else 'branch'}(_c, {line}, {code})"

    def convert(self, node: c_ast.Node, to: CType, line: int | None) -> str:
        code, ctype = self.expr(node)
        return self.cast(code, ctype, to, line)

    def cast(self, code: str, frm: CType, to: CType, line: int | None) -> str:
        if to.pointer or frm.pointer:
            if to.pointer and frm.pointer and to.name == frm.name:
                return code
            raise UnsupportedSyntax(f"converting {frm} to {to}", line)
        if frm.dims:
            raise UnsupportedSyntax(f"using the array as a {to}", line)
        if frm.name == "void":
            raise CudaCError("a void function's result has no value", line)
        if frm == to:
            return code
        return f"_to_{_id(to.name)}({code})"

    def type_of(self, node: c_ast.Node) -> CType:
        return self.expr(node)[1]

    def expr(self, node: c_ast.Node) -> tuple[str, CType]:  # noqa: C901, PLR0911, PLR0912 - one case per node
        line = node.coord.line if node.coord else None
        if isinstance(node, c_ast.Constant):
            return _constant(node, line)
        if isinstance(node, c_ast.ID):
            if node.name in ("true", "false"):
                return ("1" if node.name == "true" else "0"), BOOL
            if node.name in BUILTINS:
                raise CudaCError(f"{node.name} has parts .x, .y and .z: write {node.name}.x", line)
            var = self.lookup(node.name, line)
            return var.py, var.type
        if isinstance(node, c_ast.StructRef):
            base = _name(node.name)
            if base not in BUILTINS or node.type != "." or node.field.name not in ("x", "y", "z"):
                raise UnsupportedSyntax("members other than threadIdx / blockIdx / blockDim / gridDim .x .y .z",
                                        line)
            return f"_c.{BUILTINS[base]}{node.field.name}", UINT
        if isinstance(node, c_ast.ArrayRef) or (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
            kind, base, index = self.address(node, line)
            return f"_ld{kind}(_c, {base}, {index}, {line})", self.element_type(node)
        if isinstance(node, c_ast.Cast):
            to = self.ctype(node.to_type.type, line)
            return self.convert(node.expr, to, line), to
        if isinstance(node, c_ast.UnaryOp):
            return self.unary(node, line)
        if isinstance(node, c_ast.BinaryOp):
            return self.binary(node, line)
        if isinstance(node, c_ast.TernaryOp):
            cond = self.condition(node.cond, line)
            (a, at), (b, bt) = self.expr(node.iftrue), self.expr(node.iffalse)
            if at.pointer or bt.pointer:
                raise UnsupportedSyntax("a ternary that chooses between pointers", line)
            rt = arithmetic(at, bt)
            return f"({self.cast(a, at, rt, line)} if {cond} else {self.cast(b, bt, rt, line)})", rt
        if isinstance(node, c_ast.FuncCall):
            return self.call(node, line)
        if isinstance(node, c_ast.Assignment):
            if not isinstance(node.lvalue, c_ast.ID):
                raise UnsupportedSyntax("an assignment to an array element inside an expression: make it a "
                                        "statement of its own", line)
            var = self.lookup(node.lvalue.name, line)
            statement = self.assign(node.lvalue, node.op, node.rvalue, line)
            return f"({var.py} := {statement.split(' = ', 1)[1]})", var.type
        if isinstance(node, c_ast.ExprList):
            raise UnsupportedSyntax("the comma operator (a, b): write two statements", line)
        raise UnsupportedSyntax(f"the expression {type(node).__name__}", line)

    def element_type(self, node: c_ast.Node) -> CType:
        base = node
        while isinstance(base, c_ast.ArrayRef):
            base = base.name
        if isinstance(base, c_ast.UnaryOp):
            base = base.expr
        return self.type_of(base).scalar

    def unary(self, node: c_ast.UnaryOp, line: int | None) -> tuple[str, CType]:
        op = node.op
        if op == "sizeof":
            ctype = self.ctype(node.expr.type, line) if isinstance(node.expr, c_ast.Typename) else None
            if ctype is None:
                raise UnsupportedSyntax("sizeof of an expression: write sizeof(float)", line)
            size = {"bool": 1, "int": 4, "unsigned int": 4, "long long": 8, "unsigned long long": 8, "float": 4,
                    "double": 8}[ctype.name]
            return str(size), CType("unsigned long long")
        if op == "&":
            if not isinstance(node.expr, c_ast.ArrayRef):
                raise UnsupportedSyntax("& of anything but an array element (&a[i])", line)
            kind, base, index = self.address(node.expr, line)
            if kind:
                raise UnsupportedSyntax("& of a shared or local array's element: use atomicAdd on global memory",
                                        line)
            return f"_offset(_c, {base}, {index}, {line})", CType(self.element_type(node.expr).name, pointer=True)
        if op in ("p++", "++", "p--", "--"):
            if not isinstance(node.expr, c_ast.ID):
                raise UnsupportedSyntax(f"{op.strip('p')} on an array element inside an expression: make it a "
                                        "statement of its own", line)
            var = self.lookup(node.expr.name, line)
            one = c_ast.Constant("int", "1", node.coord)
            new = self.assign(node.expr, "+=" if "++" in op else "-=", one, line).split(" = ", 1)[1]
            if op.startswith("p"):  # the old value
                return f"(_old := {var.py}, {var.py} := {new})[0]", var.type
            return f"({var.py} := {new})", var.type
        code, ctype = self.expr(node.expr)
        if ctype.pointer or ctype.dims:
            raise UnsupportedSyntax(f"{op} on a pointer", line)
        if op == "!":
            return f"(0 if {code} else 1)", INT
        if op == "+":
            return self.cast(code, ctype, promote(ctype), line), promote(ctype)
        if op == "-":
            rt = promote(ctype)
            return self.wrap(f"-{self.cast(code, ctype, rt, line)}", rt), rt
        if op == "~":
            if not is_int(ctype):
                raise CudaCError("~ needs a whole number", line)
            rt = promote(ctype)
            return self.wrap(f"~{self.cast(code, ctype, rt, line)}", rt), rt
        raise UnsupportedSyntax(f"the operator {op}", line)

    def binary(self, node: c_ast.BinaryOp, line: int | None) -> tuple[str, CType]:
        op = node.op
        (a, at), (b, bt) = self.expr(node.left), self.expr(node.right)
        if op in ("&&", "||"):
            return f"(1 if ({a}) {'and' if op == '&&' else 'or'} ({b}) else 0)", INT
        if at.pointer or bt.pointer:
            if op in ("+", "-") and at.pointer and is_int(bt):
                return f"_offset(_c, {a}, {'-' if op == '-' else ''}({b}), {line})", at
            if op == "+" and bt.pointer and is_int(at):
                return f"_offset(_c, {b}, {a}, {line})", bt
            raise UnsupportedSyntax(f"the pointer arithmetic {op} (only pointer + or - a whole number)", line)
        if at.dims or bt.dims:
            raise CudaCError("arithmetic on a whole array: index its elements", line)
        if op in ("<<", ">>"):
            if not (is_int(at) and is_int(bt)):
                raise CudaCError(f"{op} needs whole numbers", line)
            rt = promote(at)
            bits = INTEGERS[rt.name][0]
            return self.wrap(f"_shift(_c, {self.cast(a, at, rt, line)}, {op!r}, {b}, {bits}, {line})", rt), rt
        rt = arithmetic(at, bt)
        a, b = self.cast(a, at, rt, line), self.cast(b, bt, rt, line)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return f"(1 if {a} {op} {b} else 0)", INT
        if op in ("&", "|", "^"):
            if not is_int(rt):
                raise CudaCError(f"{op} needs whole numbers", line)
            return self.wrap(f"({a} {op} {b})", rt), rt
        if op in ("/", "%"):
            if is_int(rt):
                return f"_i{'div' if op == '/' else 'mod'}_{_id(rt.name)}({a}, {b}, {line})", rt
            if op == "%":
                raise CudaCError("% needs whole numbers: use fmodf for floats", line)
            return f"({a} / {b})", rt
        if op in ("+", "-", "*"):
            return self.wrap(f"({a} {op} {b})", rt), rt
        raise UnsupportedSyntax(f"the operator {op}", line)

    def wrap(self, code: str, ctype: CType) -> str:
        """Integers wrap around as in C (32 or 64 bits); floats are NumPy scalars and round by themselves."""
        return f"_to_{_id(ctype.name)}({code})" if is_int(ctype) else code

    def call(self, node: c_ast.FuncCall, line: int | None) -> tuple[str, CType]:
        name = _name(node.name)
        args = node.args.exprs if node.args is not None else []
        if name == "__syncthreads":
            raise UnsupportedSyntax("__syncthreads() inside an expression: make it a statement of its own", line)
        if name in self.functions:  # the learner's own __device__ max or expf is called, as nvcc calls it
            fn = self.functions[name]
            if fn.kernel:
                raise UnsupportedSyntax(f"calling the kernel {name} from a kernel (dynamic parallelism)", line)
            self.arity(name, args, len(fn.params), line)
            converted = [self.convert(a, t, line) for a, (_, t) in zip(args, fn.params, strict=True)]
            return f"{_fn(name)}(_c{''.join(', ' + c for c in converted)})", fn.returns
        if name in MATH:
            arg_type, result, fn = MATH[name]
            self.arity(name, args, 1, line)
            return f"{fn}({self.convert(args[0], arg_type, line)})", result
        if name in MATH2:
            self.arity(name, args, 2, line)
            t = MATH2[name]
            return f"_m_{name}({self.convert(args[0], t, line)}, {self.convert(args[1], t, line)})", t
        if name in ("min", "max", "abs"):
            if name == "abs":
                self.arity(name, args, 1, line)
                code, ctype = self.expr(args[0])
                return self.wrap(f"abs({code})", promote(ctype)), promote(ctype)
            self.arity(name, args, 2, line)
            (a, at), (b, bt) = self.expr(args[0]), self.expr(args[1])
            rt = arithmetic(at, bt)
            fn = name if is_int(rt) else f"_m_f{name}"
            return f"{fn}({self.cast(a, at, rt, line)}, {self.cast(b, bt, rt, line)})", rt
        if name in ATOMICS:
            self.arity(name, args, 2, line)
            ptr, ptype = self.expr(args[0])
            if not ptype.pointer:
                raise CudaCError(f"{name}'s first argument is an address: &a[i]", line)
            value = self.convert(args[1], ptype.scalar, line)
            return f"_atomic(_c, {name!r}, {ptr}, {value}, {line})", ptype.scalar
        raise UnsupportedSyntax(f"the function {name}(): the CPU executor knows the common math functions "
                                "(expf, sqrtf, fmaxf, ...), min, max, abs, atomicAdd and your __device__ "
                                "functions defined above it", line)

    @staticmethod
    def arity(name: str, args: list[c_ast.Node], n: int, line: int | None) -> None:
        if len(args) != n:
            raise CudaCError(f"{name}() takes {n} argument(s); got {len(args)}", line)


_EXPRESSIONS = {"Assignment", "UnaryOp", "FuncCall", "BinaryOp", "ID", "Constant", "ArrayRef", "Cast",
                "TernaryOp", "ExprList", "StructRef"}


#: The longest number the executor reads: a double has 17 significant digits, a 64-bit integer 20; 60 leaves
#: room for leading zeros and exponents without letting a 5,000-digit constant reach Python's int().
MAX_DIGITS = 60


def _constant(node: c_ast.Constant, line: int | None) -> tuple[str, CType]:
    text = node.value
    if node.type in ("float", "double"):
        digits = text.rstrip("fF" if node.type == "float" else "lL")
        if len(digits) > MAX_DIGITS:
            raise CudaCError(f"a number of {len(digits):,} characters: write at most {MAX_DIGITS}", line)
        if digits.lower().startswith("0x"):  # a hexadecimal float, 0x1p3f = 8.0f
            digits = repr(float.fromhex(digits))
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
    if node.type == "char":
        raise UnsupportedSyntax("characters ('a'): the executor runs numbers only", line)
    raise UnsupportedSyntax(f"the constant {text}", line)


def _name(node: c_ast.Node) -> str:
    return node.name if isinstance(node, c_ast.ID) else type(node).__name__


def _fn(name: str) -> str:
    return f"fn_{name}"


def _id(type_name: str) -> str:
    return type_name.replace(" ", "_")


def _constant_shift(_c: None, a: int, op: str, b: int, bits: int, line: int) -> int:
    """A shift in a constant (an array size), with the runtime's rule: a count from 0 to the width less 1."""
    if not 0 <= b < bits:
        raise CudaCError(f"{a} {op} {b} shifts a {bits}-bit integer by {b}; C allows 0 to {bits - 1}", line)
    return a << b if op == "<<" else a >> b


#: What a constant array size may refer to while it is evaluated at translation time.
_CONSTANT_NAMESPACE: dict[str, object] = {**CONVERSIONS, "_shift": _constant_shift, "_c": None}


#: What a kernel nested past Python's limits is told (the parser, the translation and Python's compiler all
#: recurse once per level of nesting).
TOO_DEEP = ("this kernel nests deeper than the CPU executor can follow (Python's limits): an expression of more "
            "than about 100 terms or brackets, or blocks nested about 20 deep. Split the expression with "
            "temporary variables (float s1 = a + b + ...; float s2 = ...;), or move inner loops into a "
            "__device__ function")


def translate(source: str) -> tuple[dict[str, Function], list[str]]:
    """Every function of `source` translated, in order, and the names of its kernels (__global__)."""
    try:
        return _translate(source)
    except RecursionError:
        raise CudaCError(TOO_DEEP) from None


def _translate(source: str) -> tuple[dict[str, Function], list[str]]:
    tree, kernels, exported = parse(source)
    functions: dict[str, Function] = {}
    typedefs: dict[str, CType] = {}
    for item in tree.ext:
        line = item.coord.line if item.coord else None
        if isinstance(item, c_ast.Typedef):
            if line != 1 or item.name not in _PRELUDE_TYPES:  # typedef float T; (a type placeholder)
                ctype = _Translator(functions, False, typedefs).ctype(item.type, line)
                if ctype.pointer or ctype.dims:
                    raise UnsupportedSyntax("a typedef of a pointer or an array", line)
                typedefs[item.name] = ctype
            continue
        if isinstance(item, c_ast.FuncDef):
            name = item.decl.name
            if name in functions:
                raise CudaCError(f"the function {name} is defined twice", line)
            functions[name] = _Translator(functions, name in kernels, typedefs).function(item, name in kernels)
            functions[name].exported = name in exported
        elif isinstance(item, c_ast.Decl) and isinstance(item.type, c_ast.FuncDecl):
            continue  # a prototype
        elif isinstance(item, c_ast.Pragma):
            continue
        else:
            raise UnsupportedSyntax(f"{type(item).__name__} outside a function (global variables): pass the "
                                    "value as a kernel argument or #define it", line)
    if not kernels:
        raise CudaCError("no kernel found: a kernel starts with extern \"C\" __global__ void name(...)")
    return functions, kernels
