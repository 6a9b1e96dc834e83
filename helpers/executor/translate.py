"""CUDA C to lock-step Python: the executor's translation (helpers.executor.runtime runs what it makes).

Each function becomes Python that runs all the threads of a batch of blocks at once, as vectors of lanes (SIMT),
the way a GPU's warps run: a variable holds one value per lane, and a mask says which lanes are active. An `if`
runs its branch for the lanes whose condition holds, then the other branch for the rest; a loop runs while any
lane is still in it; `return`, `break` and `continue` take lanes out. Every expression gets its C type here, at
translation time, so `float` arithmetic stays float32, a `double` literal promotes to double and 32-bit
integers wrap. Memory goes through the runtime's loads and stores (bounds, races and counters are checked
there) with the mask of the lanes that make them, so `i < n && a[i] > 0` never reads a[i] where i >= n. Only
the subset the series teaches is accepted; anything else is an UnsupportedSyntax naming the construct and its
line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pycparser import c_ast

from . import groups, structs, vectors, warp, wmma
from .c_types import (
    BOOL,
    CONVERSIONS,
    DOUBLE,
    DTYPES,
    FLOAT,
    INT,
    INTEGERS,
    UINT,
    VECTORS,
    CType,
    arithmetic,
    is_float,
    is_int,
    promote,
    size_of,
    type_name,
)
from .front import CudaCError, UnsupportedSyntax, has_side_effects
from .printing import ESCAPES
from .runtime import namespace

#: CUDA's fast-math intrinsics of one and two floats (the GPU's approximate or explicitly rounded versions; here
#: NumPy's float32 functions, which are at least as accurate).
INTRINSICS = ("__expf", "__logf", "__log2f", "__log10f", "__sinf", "__cosf", "__tanf", "__fsqrt_rn", "__frcp_rn",
              "__saturatef")
INTRINSICS2 = ("__fdividef", "__powf", "__fdiv_rn", "__fmul_rn", "__fadd_rn", "__fsub_rn")
#: Math functions: C name -> (argument type, result type, runtime function). None: the argument's own type.
MATH = {
    **{f: (FLOAT, FLOAT, f"_m_{f}") for f in ("expf", "logf", "log2f", "sqrtf", "rsqrtf", "fabsf", "sinf",
                                             "cosf", "tanhf", "floorf", "ceilf", "roundf", "truncf", "exp2f",
                                             "log10f", "tanf", "asinf", "acosf", "atanf", "sinhf", "coshf",
                                             "expm1f", "log1pf", "cbrtf", "rintf", *INTRINSICS)},
    **{f: (DOUBLE, DOUBLE, f"_m_{f}") for f in ("exp", "log", "log2", "sqrt", "rsqrt", "fabs", "sin", "cos",
                                               "tanh", "floor", "ceil", "round", "trunc", "exp2", "log10", "tan",
                                               "asin", "acos", "atan", "sinh", "cosh", "expm1", "log1p", "cbrt",
                                               "rint")},
}
MATH2 = {**dict.fromkeys(("fmaxf", "fminf", "powf", "atan2f", "fmodf", "copysignf", "hypotf", *INTRINSICS2), FLOAT),
         **dict.fromkeys(("fmax", "fmin", "pow", "atan2", "fmod", "copysign", "hypot"), DOUBLE)}
#: Fused multiply-add, a * b + c rounded once: two FLOPs.
FMA = {"fmaf": FLOAT, "__fmaf_rn": FLOAT, "fma": DOUBLE}
#: Functions that read a value's bits as another type (__float_as_int(1.0f) == 0x3f800000).
BIT_CASTS = {"__float_as_int": (FLOAT, INT), "__int_as_float": (INT, FLOAT), "__float_as_uint": (FLOAT, UINT),
             "__uint_as_float": (UINT, FLOAT), "__double_as_longlong": (DOUBLE, CType("long long")),
             "__longlong_as_double": (CType("long long"), DOUBLE)}
#: CUDA's bit intrinsics: argument type, result type (__popc counts set bits, __clz leading zeros, __ffs the
#: position of the lowest set bit counting from 1, 0 for none, __brev reverses the bits).
BIT_INTRINSICS = {"__popc": (UINT, INT), "__popcll": (CType("unsigned long long"), INT), "__clz": (INT, INT),
                  "__clzll": (CType("long long"), INT), "__ffs": (INT, INT), "__ffsll": (CType("long long"), INT),
                  "__brev": (UINT, UINT), "__brevll": (CType("unsigned long long"), CType("unsigned long long"))}
ATOMICS = ("atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicExch", "atomicAnd", "atomicOr", "atomicXor",
           "atomicInc", "atomicDec", "atomicCAS")
_WHOLE = ("int", "unsigned int", "long long", "unsigned long long")
#: The element types each atomic has an overload for in CUDA (NVRTC for sm_75, checked in
#: tests/test_executor_cxx.py): no atomicMax of a float, no atomicAdd of a long long.
ATOMIC_TYPES = {"atomicAdd": ("int", "unsigned int", "unsigned long long", "float", "double"),
                "atomicSub": ("int", "unsigned int"), "atomicMax": _WHOLE, "atomicMin": _WHOLE,
                "atomicExch": ("int", "unsigned int", "unsigned long long", "float"), "atomicAnd": _WHOLE,
                "atomicOr": _WHOLE, "atomicXor": _WHOLE, "atomicInc": ("unsigned int",), "atomicDec": ("unsigned int",),
                "atomicCAS": ("int", "unsigned int", "unsigned long long", "unsigned short")}
BUILTINS = {"threadIdx": "t", "blockIdx": "b", "blockDim": "bd", "gridDim": "gd"}
#: Loads and stores with a cache hint (__ldg: through the read-only cache): on the executor, a plain *p and *p = v.
HINTED_LOADS = ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv")
HINTED_STORES = ("__stwb", "__stcg", "__stcs", "__stwt")


@dataclass
class Function:
    """A translated function: its parameters' C types and Python source; a kernel if __global__."""

    name: str
    params: list[tuple[str, CType]]
    python: str
    kernel: bool
    barriers: bool  # calls __syncthreads()
    returns: CType = field(default_factory=lambda: CType("void"))
    const: set[str] = field(default_factory=set)  # pointer parameters to const: the kernel only reads them
    py_name: str = ""  # the Python function it becomes


@dataclass
class Var:
    py: str
    type: CType
    unset: bool = False  # declared without a value: reads are checked
    cell: bool = False  # a __shared__ scalar, or a local whose address is taken (&x): an array of one element
    const: bool = False  # a template argument or a file-scope constant: never assigned


@dataclass
class _Loop:
    """What a break or continue in the innermost loop updates: the lanes that left it, and those that continue."""

    exits: str
    continues: str | None  # None in a do-while, where continue is not supported


#: The mask arguments of the runtime's calls at statement level: the active lanes and the frame's live ones.
MASK = "_m, _b"


class Translator:
    """Translates one function (or one instance of a template) of `unit` (a helpers.executor.unit.Unit: the
    functions so far, typedefs, file-scope constants, templates). Expressions come back as (Python source, C type).
    `bound`: a template instance's arguments, types by name (T -> float) and values (N -> 128)."""

    def __init__(self, unit: Any, kernel: bool, bound: dict[str, CType | int] | None = None) -> None:
        self.unit = unit
        self.functions: dict[str, Function] = unit.functions
        bound = bound or {}
        self.typedefs = {**unit.typedefs, **{k: v for k, v in bound.items() if isinstance(v, CType)}}
        self.kernel = kernel
        values = {k: Var(str(v), INT if -2**31 <= v < 2**31 else CType("long long"), const=True)
                  for k, v in bound.items() if isinstance(v, int)}
        self.scopes: list[dict[str, Var]] = [{**unit.globals, **values}, {}]
        self.names: set[str] = set()
        self.lines: list[str] = []
        self.loops: list[_Loop] = []
        self.barriers = False
        self.returns = CType("void")
        self.constants: dict[str, int] = {}  # const ints known at translation time, by Python name
        self.counter = 0  # for the names of masks and temporaries
        self.mask = MASK  # the mask arguments where the expression being translated runs
        self.lambdas = 0  # how deep in a ?: branch or the right side of && / ||: no assignments there
        self.flops = 0  # floating-point operations in the statement being translated
        self.volatile: set[str] = set()  # the names declared volatile (volatile float* s, volatile __shared__ ...)
        self.addressed: set[str] = set()  # the names whose address is taken (&x): they live in local memory

    # -------------------------------------------------------------------- scopes and output

    def declare(self, name: str, ctype: CType, line: int, unset: bool = False) -> str:
        if name in BUILTINS:
            raise UnsupportedSyntax(f"{name!r} is CUDA's own (threadIdx, blockIdx, blockDim, gridDim); choose "
                                    "another name", line)
        if name in self.scopes[-1] or (len(self.scopes) == 3 and name in self.scopes[1]):
            raise CudaCError(f"{name!r} is declared twice in the same block (a parameter counts)", line)
        py = f"{name}_" if f"{name}_" not in self.names else f"{name}_{len(self.names)}"
        self.names.add(py)
        self.scopes[-1][name] = Var(py, ctype, unset)
        return py

    def lookup(self, name: str, line: int) -> Var:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise CudaCError(f"{name!r} is not declared: declare it first (e.g. int {name} = ...;)", line)

    def emit(self, depth: int, code: str) -> None:
        self.lines.append("    " * depth + code)

    def tick(self, depth: int) -> None:
        """Count one warp step for the active lanes, with the FLOPs of the statement just translated."""
        self.emit(depth, f"_c.tick({self.flops}, {MASK})")
        self.flops = 0

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    # -------------------------------------------------------------------- types of declarations

    def ctype(self, node: c_ast.Node, line: int) -> CType:
        """The CType of a declaration's type node."""
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.Struct):
            return structs.define(self, node.type, line)
        if isinstance(node, c_ast.TypeDecl):
            if not isinstance(node.type, c_ast.IdentifierType):
                raise UnsupportedSyntax(f"the type {type(node.type).__name__}", line)
            words = [w for w in node.type.names]
            if len(words) == 1 and words[0] in self.typedefs:
                return self.typedefs[words[0]]
            if len(words) == 1 and (words[0] in (*VECTORS, "__auto") or words[0].startswith(("__cg_", "__wmma_"))):
                return CType(words[0])
            name = type_name(words)
            if name is None:
                raise UnsupportedSyntax(f"the type {' '.join(words)!r}: use bool, char, short, int, long long, "
                                        "size_t (each may be unsigned), float, double or float2/float4/int2/int4",
                                        line)
            return CType(name)
        if isinstance(node, c_ast.PtrDecl):
            inner = self.ctype(node.type, line)
            structs.refuse_in_memory(CType(inner.name, pointer=True), line)
            if inner.pointer or inner.dims:
                raise UnsupportedSyntax("a pointer to a pointer or to an array", line)
            return CType(inner.name, pointer=True, const="const" in (getattr(node.type, "quals", None) or []))
        if isinstance(node, c_ast.ArrayDecl):
            inner = self.ctype(node.type, line)
            if node.dim is None:
                raise UnsupportedSyntax("an array without a size", line)
            size = self.constant(node.dim, line)
            structs.refuse_in_memory(CType(inner.name, dims=(size,)), line)
            return CType(inner.name, dims=(size, *inner.dims))
        raise UnsupportedSyntax(f"the declaration {type(node).__name__}", line)

    def constant(self, node: c_ast.Node, line: int | None, positive: bool = True) -> int:
        """A compile-time integer (an array size, a template argument): literals and arithmetic on them."""
        code, ctype = self.expr(node)
        self.flops = 0
        what = "an array size" if positive else "a template argument"
        if not is_int(ctype):
            raise CudaCError(f"{what} must be a whole number known when the kernel compiles", line)
        value = self.known(code)
        if value is None:
            raise UnsupportedSyntax(f"{what} must be a constant (a number, a #define or a const int), not "
                                    "a variable", line)
        if positive and value <= 0:
            raise CudaCError(f"an array size must be positive; got {value}", line)
        return value

    def number(self, node: c_ast.Node, ctype: CType, line: int | None) -> int | float:
        """A constant initial value (of a __constant__ array), converted to `ctype`."""
        code = self.convert(node, ctype, line)
        self.flops = 0
        value = self.evaluate(code)
        if value is None:
            raise CudaCError("an initial value here must be a constant (a number or a const)", line)
        return value

    def known(self, code: str) -> int | None:
        """The value of translated code made only of numbers and const ints, else None."""
        value = self.evaluate(code)
        return int(value) if isinstance(value, int | np.integer) and not isinstance(value, bool) else None

    def evaluate(self, code: str) -> Any:
        """Translated code made only of numbers and constants, evaluated now (None if it needs a variable)."""
        try:
            with np.errstate(all="ignore"):
                return eval(code, {"__builtins__": {}}, {**_CONSTANT_NAMESPACE, **self.constants})  # noqa: S307
        except CudaCError:
            raise
        except Exception:  # noqa: BLE001 - it depends on a variable
            return None

    # -------------------------------------------------------------------- statements

    def function(self, node: c_ast.FuncDef, kernel: bool, name: str | None = None) -> Function:
        """The translated function; `name` names a template's instance (k<float, 128>)."""
        decl = node.decl
        name = name or decl.name
        line = decl.coord.line
        self.returns = self.ctype(decl.type.type, line)
        if kernel and self.returns.name != "void":
            raise CudaCError(f"the kernel {name} must return void", line)
        params, const = self.parameters(decl.type, line)
        py_name = f"fn_{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{len(self.functions)}"
        fn = Function(name, params, "", kernel, False, self.returns, const=const, py_name=py_name)
        self.functions[name] = fn  # recursion finds itself
        args = [self.declare(pname, ptype, line) for pname, ptype in params]
        self.volatile |= {p.name for p in (decl.type.args.params if decl.type.args else [])
                          if isinstance(p, c_ast.Decl) and _is_volatile(p)}
        self.addressed = _addressed(node.body)
        self.emit(0, f"def {py_name}(_c, _b{''.join(', ' + a for a in args)}):")
        self.emit(1, "_m = _rv = None")
        for (pname, ptype), py in zip(params, args, strict=True):
            if pname in self.addressed and not ptype.pointer and not structs.value(ptype):  # &param: in memory
                var = self.scopes[-1][pname]
                var.py, var.cell = self.local_cell(pname, ptype, py, 1, line), True
        self.block(node.body, 1)
        if self.returns.name != "void":
            self.emit(1, f"_fell_off(_c, {MASK})")
        self.emit(1, "return _rv")
        fn.python = "\n".join(self.lines)
        fn.barriers = self.barriers
        return fn

    def parameters(self, func: c_ast.FuncDecl, line: int) -> tuple[list[tuple[str, CType]], set[str]]:
        """A function's parameters with their C types, and the names of those that point to const."""
        params: list[tuple[str, CType]] = []
        const: set[str] = set()
        for p in func.args.params if func.args else []:
            if isinstance(p, c_ast.EllipsisParam) or not isinstance(p, c_ast.Decl):
                raise UnsupportedSyntax("a parameter list with ...", line)
            ptype = self.ctype(p.type, line)
            if ptype.name == "void" and not ptype.pointer:
                continue  # f(void)
            if ptype.dims:
                ptype = CType(ptype.name, pointer=True)
            if ptype.pointer and "const" in (getattr(p.type.type, "quals", None) or []):
                const.add(p.name)
            params.append((p.name, ptype))
        return params, const

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
            self.branch(node, depth, line)
        elif isinstance(node, c_ast.For | c_ast.While | c_ast.DoWhile):
            self.loop(node, depth, line)
        elif isinstance(node, c_ast.Continue | c_ast.Break | c_ast.Return):
            self.jump(node, depth, line)
        elif isinstance(node, c_ast.FuncCall) and _name(node.name) == "__syncthreads":
            if node.args is not None and node.args.exprs:
                raise CudaCError("__syncthreads() takes no arguments", line)
            self.barriers = True
            self.emit(depth, f"_c.barrier({line}, {MASK})")
        elif isinstance(node, c_ast.EmptyStatement | c_ast.Pragma):
            pass
        elif isinstance(node, c_ast.Node) and type(node).__name__ in _EXPRESSIONS:
            for code in self.side_effects(node, line):
                self.emit(depth, code)
            self.tick(depth)
        else:
            raise UnsupportedSyntax(f"the statement {type(node).__name__}", line)

    def rejoin(self, saved: str) -> str:
        """The mask after a branch or loop: the lanes active before it, less those that left the innermost
        loop (break, continue) or the function (return: the frame's live lanes, _b, shrank)."""
        exits = [self.loops[-1].exits] + ([self.loops[-1].continues] if self.loops[-1].continues else []) \
            if self.loops else []
        return f"_rejoin({saved}, _b{''.join(', ' + e for e in exits)})"

    def branch(self, node: c_ast.If, depth: int, line: int | None) -> None:
        """if/else as masks: the branch runs for the lanes whose condition holds, else for the others."""
        k = self.fresh()
        self.emit(depth, f"_s{k} = _m")
        self.test(depth, k, node.cond, line, loop=False)
        self.emit(depth, f"_m = _and(_s{k}, _b, _q{k})")
        self.emit(depth, "if _any(_m):")
        self.block(node.iftrue, depth + 1)
        if node.iffalse is not None:
            self.emit(depth, f"_m = _andnot({self.rejoin(f'_s{k}')}, _b, _q{k})")
            self.emit(depth, "if _any(_m):")
            self.block(node.iffalse, depth + 1)
        self.emit(depth, f"_m = {self.rejoin(f'_s{k}')}")

    def test(self, depth: int, k: int, node: c_ast.Node, line: int | None, loop: bool) -> None:
        """`_q{k}`: a branch's or loop's condition per lane, one warp step (with its FLOPs) for the active lanes."""
        cond = self.condition(node, line)
        self.tick(depth)
        self.emit(depth, f"_q{k} = _c.cond({line}, {cond}, {MASK}{', loop=True' if loop else ''})")

    def loop(self, node: c_ast.For | c_ast.While | c_ast.DoWhile, depth: int, line: int | None) -> None:
        """A for, while or do-while loop, run while any lane is still in it: a lane leaves when its condition
        fails or it breaks; one that continues waits for the next round (after a for loop's increment)."""
        k = self.fresh()
        self.scopes.append({})
        if isinstance(node, c_ast.For) and node.init is not None:
            self.statement(node.init, depth)
        self.emit(depth, f"_s{k} = _m")
        self.emit(depth, f"_x{k} = None")
        do = isinstance(node, c_ast.DoWhile)
        if do:
            self.emit(depth, f"_first{k} = True")
        self.emit(depth, "while True:")
        self.emit(depth + 1, f"_m = _rejoin(_s{k}, _b, _x{k})")
        test_depth = depth + 1
        if do:
            self.emit(depth + 1, f"if not _first{k}:")
            test_depth = depth + 2
        if node.cond is not None:
            self.test(test_depth, k, node.cond, line, loop=True)
            self.emit(test_depth, f"_x{k} = _leave(_x{k}, {MASK}, _q{k})")
            self.emit(test_depth, f"_m = _and(_m, _b, _q{k})")
        else:
            self.emit(test_depth, f"_c.cond({line}, True, {MASK}, loop=True)")
        if do:
            self.emit(depth + 1, f"_first{k} = False")
        self.emit(depth + 1, "if not _any(_m):")
        self.emit(depth + 2, "break")
        self.loops.append(_Loop(f"_x{k}", None if do else f"_n{k}"))
        if not do:
            self.emit(depth + 1, f"_n{k} = None")
        self.block(node.stmt, depth + 1)
        self.loops.pop()
        if isinstance(node, c_ast.For) and node.next is not None:
            self.emit(depth + 1, f"_m = _rejoin(_s{k}, _b, _x{k})")
            for code in self.side_effects(node.next, line):
                self.emit(depth + 1, code)
            self.tick(depth + 1)
        self.scopes.pop()
        self.emit(depth, f"_m = {self.rejoin(f'_s{k}')}")

    def jump(self, node: c_ast.Continue | c_ast.Break | c_ast.Return, depth: int, line: int | None) -> None:
        """continue and break take the active lanes out of this round or the loop; return out of the function
        (its value kept for them)."""
        if isinstance(node, c_ast.Continue | c_ast.Break):
            if not self.loops:
                raise (CudaCError("continue outside a loop", line) if isinstance(node, c_ast.Continue) else
                       UnsupportedSyntax("break outside a loop (switch is not supported)", line))
            loop = self.loops[-1]
            if isinstance(node, c_ast.Continue) and loop.continues is None:
                raise UnsupportedSyntax("continue inside do { ... } while: use a while loop", line)
            target = loop.continues if isinstance(node, c_ast.Continue) else loop.exits
            self.emit(depth, f"{target} = _join({target}, {MASK})")
            self.emit(depth, "_m = _c.none")
            return
        if node.expr is None:
            if self.returns.name != "void":
                raise CudaCError("return without a value in a function that returns one", line)
        else:
            if self.returns.name == "void":
                raise CudaCError("a kernel (or void function) returns no value: write return;", line)
            value = self.convert(node.expr, self.returns, line)
            self.tick(depth)
            setter = _setter(self.returns)
            self.emit(depth, f"_rv = {setter}(_rv, {value}, _eff({MASK}), None)")  # returned lanes keep theirs
        self.emit(depth, "_b = _kill(_m, _b)")
        if self.kernel:
            self.emit(depth, "_c.alive = _b")  # for warp primitives: a lane that has exited may be named
        self.emit(depth, "if not _any(_b):")
        self.emit(depth + 1, "return _rv")
        self.emit(depth, "_m = _c.none")

    def declaration(self, node: c_ast.Decl, depth: int) -> None:
        line = node.coord.line
        if _is_volatile(node):
            self.volatile.add(node.name)
        if isinstance(node.type, c_ast.FuncDecl):
            raise UnsupportedSyntax("a function declared inside a function", line)
        if "register" in (node.storage or []):
            raise UnsupportedSyntax("__constant__ inside a function: declare it at file scope", line)
        if isinstance(node.type, c_ast.ArrayDecl):
            self.array(node, depth, line)
            return
        ctype = self.declared_type(node, line)
        if self.in_memory(node, ctype, depth, line):
            return
        if node.init is None:
            py = self.declare(node.name, ctype, line, unset=True)
            unset = structs.unset(ctype, node.name, line) if structs.value(ctype) else \
                vectors.unset(ctype, node.name, line)
            self.emit(depth, f"{py} = {unset}")  # a read before a value: reported
            return
        value = self.initial_value(node.init, ctype, line)
        py = self.declare(node.name, ctype, line)
        if "const" in (node.quals or []) and not ctype.pointer:
            self.scopes[-1][node.name].const = True
        if "const" in (node.quals or []) and is_int(ctype):
            known = self.known(value)
            if known is not None:  # const int TILE = 16: usable as an array size, as in C++
                self.constants[py] = known
        self.emit(depth, f"{py} = {value}")  # a new variable: its inactive lanes are never read
        self.tick(depth)

    def in_memory(self, node: c_ast.Decl, ctype: CType, depth: int, line: int) -> bool:
        """Declares a variable that lives in memory: a WMMA fragment, a __shared__ scalar, or a local whose
        address is taken (&x); False for any other."""
        if wmma.is_fragment(ctype):
            ctype = wmma.bind(ctype, self.typedefs)  # fragment<accumulator, 16, 16, 16, T> in a template instance
            if node.init is not None:
                raise UnsupportedSyntax("a fragment declared with a value: declare it, then fill_fragment or "
                                        "load_matrix_sync", line)
            py = self.declare(node.name, ctype, line)
            self.emit(depth, f"{py} = {wmma.declare(self, ctype, line)}")
            return True
        if "static" in (node.storage or []):
            self.shared_cell(node, ctype, depth, line)
            return True
        if node.name in self.addressed and not ctype.pointer and not groups.is_group(ctype) and \
                not structs.value(ctype):
            value = None if node.init is None else self.convert(node.init, ctype, line)
            self.declare(node.name, ctype, line)
            self.scopes[-1][node.name].py = self.local_cell(node.name, ctype, value, depth, line)
            self.scopes[-1][node.name].cell = True
            return True
        return False

    def initial_value(self, init: c_ast.Node, ctype: CType, line: int) -> str:
        """A variable's initial value: an expression converted to its type, or a struct's { ... }."""
        if isinstance(init, c_ast.InitList) and structs.value(ctype):
            return structs.initial(self, init, ctype, line)
        if isinstance(init, c_ast.InitList):
            raise UnsupportedSyntax("an initializer list { ... } for a variable that is not an array or a struct",
                                    line)
        return self.convert(init, ctype, line)

    def local_cell(self, name: str, ctype: CType, value: str | None, depth: int, line: int) -> str:
        """A local variable whose address is taken (&x, as in reinterpret_cast<float*>(&v)): an array of one
        element (a vector's members) in the thread's local memory, given `value` if any. Its Python name."""
        py = f"{name}_cell{self.fresh()}"
        scalar = vectors.element(ctype) if vectors.is_vector(ctype) else ctype
        self.emit(depth, f"{py} = _c.local({name!r}, {scalar.name!r}, ({vectors.width(ctype)},))")
        if value is not None:
            self.emit(depth, vectors.store_cell(py, ctype, value, line, MASK))
            self.tick(depth)
        return py

    def shared_cell(self, node: c_ast.Decl, ctype: CType, depth: int, line: int) -> None:
        """`__shared__ float total;`: one element of shared memory the block's threads share, as an array of one
        that the variable's name reads and writes."""
        if ctype.pointer or vectors.is_vector(ctype):
            raise UnsupportedSyntax(f"a __shared__ {ctype}: the executor takes shared numbers and arrays of them",
                                    line)
        if node.init is not None:
            raise CudaCError("a __shared__ variable cannot have an initial value (NVRTC: initializer not allowed "
                             "for __shared__ variable): set it in one thread, then __syncthreads()", line)
        py = self.declare(node.name, ctype, line)
        self.scopes[-1][node.name].cell = True
        self.emit(depth, f"{py} = _c.shared({node.name!r}, {ctype.name!r}, (1,), {line})")

    def declared_type(self, node: c_ast.Decl, line: int) -> CType:
        """A variable's type: as written, or its value's for `auto`."""
        ctype = self.ctype(node.type, line)
        if ctype.name == "__auto":
            if node.init is None or isinstance(node.init, c_ast.InitList):
                raise CudaCError(f"auto {node.name} needs a value to take its type from (auto x = 1.0f;)", line)
            ctype = self.type_of(node.init)
        if ctype.name == "void" and not ctype.pointer:
            raise CudaCError(f"{node.name} cannot be void", line)
        return ctype

    def array(self, node: c_ast.Decl, depth: int, line: int) -> None:
        """A local or __shared__ array (extern __shared__: its size given at launch, shared_mem=)."""
        storage = node.storage or []
        shared = "static" in storage
        if "extern" in storage:
            if not shared or not isinstance(node.type, c_ast.ArrayDecl) or node.type.dim is not None:
                raise UnsupportedSyntax("extern in a function: the executor takes extern __shared__ T name[];", line)
            element = self.ctype(node.type.type, line)
            if element.pointer or element.dims or element.name in VECTORS:
                raise UnsupportedSyntax("an extern __shared__ array of pointers, arrays or vectors", line)
            ctype = CType(element.name, dims=(0,), shared=True)
            py = self.declare(node.name, ctype, line)
            self.emit(depth, f"{py} = _c.dynamic_shared({node.name!r}, {element.name!r}, {line})")
            return
        ctype = self.ctype(node.type, line)
        if ctype.name in VECTORS:
            raise UnsupportedSyntax(f"an array of {ctype.name}: load vectors through a pointer "
                                    "(reinterpret_cast<float4*>(p)[i])", line)
        ctype = CType(ctype.name, dims=ctype.dims, shared=shared)
        py = self.declare(node.name, ctype, line)
        kind = "shared" if shared else "local"
        where = f", {line}" if shared else ""  # one array per declaration, even of the same name and size
        self.emit(depth, f"{py} = _c.{kind}({node.name!r}, {ctype.name!r}, {ctype.dims!r}{where})")
        if node.init is None:
            return
        if shared:
            raise CudaCError("a __shared__ array cannot have an initial value (NVRTC: initializer not allowed for "
                             "__shared__ variable): set it in the kernel, then __syncthreads()", line)
        values = self.initial_values(node.init, ctype, line)
        self.emit(depth, f"_c.fill({py}, [{', '.join(values)}], {MASK})")
        self.tick(depth)

    def initial_values(self, init: c_ast.Node, ctype: CType, line: int) -> list[str]:
        """An array's initialiser ({1, 2, 3}, {{1, 2}, {3, 4}}, {0}) flattened, the rest zero as C has it."""
        if not isinstance(init, c_ast.InitList):
            raise CudaCError("an array is set with { ... }: float a[3] = {1.0f, 2.0f, 3.0f};", line)
        inner = ctype.dims[1:]
        if len(init.exprs) > ctype.dims[0]:
            raise CudaCError(f"{len(init.exprs)} initial values for an array of {ctype.dims[0]}", line)
        values: list[str] = []
        for item in init.exprs:
            if inner:
                values += self.initial_values(item, CType(ctype.name, dims=inner), line)
            else:
                values.append(self.convert(item, CType(ctype.name), line))
        return values + ["0"] * (math.prod(ctype.dims) - len(values))

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

    def assign_value(self, target: c_ast.Node, op: str, value: c_ast.Node, line: int | None) -> tuple[str, CType]:
        """The value `target op value` stores (op: =, +=, ...), converted to the target's type as C does."""
        ttype = self.type_of(target)
        if ttype.dims:
            raise CudaCError("an array cannot be assigned as a whole; assign its elements", line)
        if op == "=":
            return self.convert(value, ttype, line), ttype
        vectors.scalar_only(ttype, op, line)
        if has_side_effects(target):  # the target is read and then written: its index would run twice
            raise UnsupportedSyntax(f"a compound assignment ({op}) whose target changes something itself "
                                    "(such as x[i++] += 1): do the ++ on a line of its own", line)
        binary = c_ast.BinaryOp(op[:-1], target, value, target.coord)
        return self.convert(binary, ttype, line), ttype

    def assign(self, target: c_ast.Node, op: str, value: c_ast.Node, line: int | None) -> str:
        """One statement for `target op value`: a variable keeps its value in the inactive lanes."""
        if self.lambdas:
            raise UnsupportedSyntax("an assignment, ++ or -- inside ?:, && or ||: only some threads would run "
                                    "it; write an if", line)
        if isinstance(target, c_ast.ArrayRef) and (
                found := wmma.assign_element(self, target, value, op, line)) is not None:
            return found  # frag.x[i] = v
        self.writable(target, line)
        rhs, ttype = self.assign_value(target, op, value, line)
        if isinstance(target, c_ast.StructRef):
            found = structs.assign(self, target, rhs, line)
            return found if found is not None else vectors.assign_member(self, target, rhs, line)
        if isinstance(target, c_ast.ID):
            var = self.lookup(target.name, line)
            if var.cell:
                return vectors.store_cell(var.py, var.type, rhs, line, self.mask)
            setter = _setter(var.type)
            return f"{var.py} = {setter}({var.py}, {rhs}, {self.mask})"
        if isinstance(target, c_ast.ArrayRef | c_ast.UnaryOp):
            kind, base, index = self.address(target, line)
            if kind == "row":
                raise CudaCError("an array cannot be assigned as a whole; assign its elements", line)
            if vectors.is_vector(ttype):
                return f"_c.stv({base}, {index}, {rhs}, {vectors.width(ttype)}, {line}, {self.mask})"
            return f"_c.st{kind}({base}, {index}, {rhs}, {line}, {self.mask})"
        raise UnsupportedSyntax(f"assigning to {type(target).__name__}", line)

    def writable(self, target: c_ast.Node, line: int | None) -> None:
        """A CudaCError for an assignment to a constant: a template argument, a file-scope const, __constant__."""
        base = target
        while isinstance(base, c_ast.ArrayRef):
            base = base.name
        if isinstance(base, c_ast.UnaryOp) and base.op == "*":
            base = base.expr
        if base is not target and self.type_of(base).const:
            raise CudaCError("a write through a pointer to const (const float* x: the kernel promised only to read "
                             "it; NVRTC: expression must be a modifiable lvalue): drop the const, or write "
                             "elsewhere", line)
        if not isinstance(base, c_ast.ID):
            return
        var = self.lookup(base.name, line)
        if var.const and var.type.pointer:
            raise CudaCError(f"{base.name} is __constant__ memory: kernels only read it (NVRTC warns \"Cannot store "
                             "to pointer that points to constant memory space\"); the host fills it "
                             f"(RawModule.get_global('{base.name}'))", line)
        if var.const:
            raise CudaCError(f"{base.name} is const (a const variable, a template argument or a file-scope "
                             "constant): it cannot be assigned", line)

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
        if isinstance(base, c_ast.ID) and base.name in self.volatile and line:
            self.unit.volatile_lines.add(line)  # warp-synchronous code through it: told apart from plain code
        code, btype = self.expr(base)
        if btype.pointer:
            if len(indices) != 1:
                raise UnsupportedSyntax("p[i][j] on a pointer: index a flat array with p[i * width + j]", line)
            return "", code, self.index(indices[0], line)
        if btype.dims:
            if len(indices) > len(btype.dims):
                raise CudaCError(f"the array has {len(btype.dims)} dimension(s); got {len(indices)} indices", line)
            parts = [self.index(i, line) for i in indices] + ["0"] * (len(btype.dims) - len(indices))
            kind = "a" if len(indices) == len(btype.dims) else "row"  # tile[i] of tile[16][16]: a row
            return kind, code, f"({', '.join(parts)},)"
        raise CudaCError("[] on something that is neither a pointer nor an array", line)

    def index(self, node: c_ast.Node, line: int | None) -> str:
        code, ctype = self.expr(node)
        if not is_int(ctype):
            raise CudaCError(f"an index must be a whole number; this one is {ctype}", line)
        return code

    # -------------------------------------------------------------------- expressions

    def condition(self, node: c_ast.Node, line: int | None) -> str:
        """A branch's or loop's condition as a truth value per lane (bool; uniform where it can be)."""
        code, ctype = self.truth(node, line)
        if ctype.dims or ctype.name == "void" or ctype.pointer:
            raise CudaCError(f"a condition must be a number; got {ctype}", line)
        return code

    def truth(self, node: c_ast.Node, line: int | None) -> tuple[str, CType]:
        """`node` as C's truth value, per lane: comparisons and logic directly, anything else compared with 0."""
        if isinstance(node, c_ast.BinaryOp) and node.op in ("==", "!=") and "__nullptr" in (
                _name(node.left), _name(node.right)):
            other = node.right if _name(node.left) == "__nullptr" else node.left
            code, ctype = self.expr(other)
            if not ctype.pointer:
                raise CudaCError(f"comparing a {ctype} with nullptr: only pointers can be null", line)
            return f"{'' if node.op == '==' else '_not'}(_isnull({code}))", INT
        if isinstance(node, c_ast.BinaryOp) and node.op in _COMPARISONS:
            a, b, _ = self.operands(node, line)
            return f"({a} {node.op} {b})", INT
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            a, _ = self.truth(node.left, line)
            b = self.masked(lambda: self.truth(node.right, line))
            return f"_{'land' if node.op == '&&' else 'lor'}({a}, {b}, {self.mask})", INT
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            a, ctype = self.truth(node.expr, line)
            return f"_not({a})", ctype
        code, ctype = self.expr(node)
        return f"({code} != 0)", ctype

    def masked(self, make: object) -> str:
        """A lambda of a mask for code only some lanes run (the right side of && and ||)."""
        k, code, _, flops = self.under_mask(make)
        return _lambda(k, code, flops)

    def under_mask(self, make: object) -> tuple[int, str, CType, int]:
        """(mask number, code, C type, FLOPs) of what `make` translates for some lanes only."""
        k = self.fresh()
        outer, outer_flops = self.mask, self.flops
        self.mask, self.flops = f"_m{k}, _b", 0
        self.lambdas += 1
        try:
            code, ctype = make()  # type: ignore[operator]
        finally:
            self.lambdas -= 1
            flops, self.mask, self.flops = self.flops, outer, outer_flops
        return k, code, ctype, flops

    def convert(self, node: c_ast.Node, to: CType, line: int | None) -> str:
        code, ctype = self.expr(node)
        return self.cast(code, ctype, to, line)

    def cast(self, code: str, frm: CType, to: CType, line: int | None) -> str:
        """`code` of type `frm` converted to `to` as C converts it (implicitly: an explicit cast first drops a
        pointer's const, see expr)."""
        if frm.dims and to.pointer:  # an array used as a pointer: its first element's address
            frm, code = CType(frm.name, pointer=True), f"_c.decay({code})"
        if to.pointer or frm.pointer:
            return self.pointer_cast(code, frm, to, line)
        if groups.is_group(frm) or groups.is_group(to):
            if frm == to:
                return code
            raise UnsupportedSyntax(f"a {frm.name.removeprefix('__cg_')} where a {to.name.removeprefix('__cg_')} is "
                                    "wanted: the executor keeps each group its own type (cg::thread_block, "
                                    "cg::thread_block_tile<32>)", line)
        if structs.value(frm) or structs.value(to):
            if frm == to:
                return code
            raise CudaCError(f"converting {frm} to {to}: C++ converts a struct only to itself", line)
        if vectors.is_vector(frm) or vectors.is_vector(to):
            if frm == to:
                return code
            raise CudaCError(f"converting {frm} to {to}: CUDA has no such conversion; convert member by member",
                             line)
        if frm.dims:
            raise UnsupportedSyntax(f"using the array as a {to}", line)
        if to.name == "void":
            return code  # (void)x: the value is thrown away
        if frm.name == "void":
            raise CudaCError("a void value (a void function's result, or (void)x) has no value", line)
        if frm == to:
            return code
        return f"_to_{_id(to.name)}({code})"

    def pointer_cast(self, code: str, frm: CType, to: CType, line: int | None) -> str:
        """A pointer converted to another pointer type (nullptr to any; a float* to a float4*, checked at run
        time for alignment); a number to a pointer or back is refused."""
        if frm == NULLPTR and to.pointer:
            return code
        if not (to.pointer and frm.pointer):
            raise UnsupportedSyntax(f"converting {frm} to {to}", line)
        if frm.const and not to.const:
            raise CudaCError(f"a {frm.name} pointer to const (const {frm.name}*) where a {to} is wanted: "
                             "nothing may be written through it (NVRTC: a value of type \"const "
                             f"{frm.name} *\" cannot be used as \"{to.name} *\"); declare the other one "
                             "const too", line)
        if to.name == frm.name:
            return code
        return vectors.pointer_cast(code, frm, to, line, self.mask)

    def type_of(self, node: c_ast.Node) -> CType:
        flops = self.flops
        ctype = self.expr(node)[1]
        self.flops = flops
        return ctype

    def expr(self, node: c_ast.Node) -> tuple[str, CType]:  # noqa: C901, PLR0911 - one case per node
        line = node.coord.line if node.coord else None
        if isinstance(node, c_ast.Constant):
            return _constant(node, line)
        if isinstance(node, c_ast.ID):
            return self.identifier(node, line)
        if isinstance(node, c_ast.StructRef):
            return self.member(node, line)
        if isinstance(node, c_ast.ArrayRef) and (found := wmma.element(self, node, line)) is not None:
            return found  # frag.x[i]
        if isinstance(node, c_ast.ArrayRef) or (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
            return self.load(node, line)
        if isinstance(node, c_ast.Cast):
            return self.explicit_cast(node, line)
        if isinstance(node, c_ast.UnaryOp):
            return self.unary(node, line)
        if isinstance(node, c_ast.BinaryOp):
            return self.binary(node, line)
        if isinstance(node, c_ast.TernaryOp):
            return self.ternary(node, line)
        if isinstance(node, c_ast.FuncCall):
            return self.call(node, line)
        if isinstance(node, c_ast.Assignment):
            return self.assignment_value(node, line)
        if isinstance(node, c_ast.ExprList):
            raise UnsupportedSyntax("the comma operator (a, b): write two statements", line)
        if isinstance(node, c_ast.CompoundLiteral):
            raise UnsupportedSyntax("a { ... } value here: the executor takes { ... } as a struct variable's value or "
                                    "as a struct parameter's argument", line)
        raise UnsupportedSyntax(f"the expression {type(node).__name__}", line)

    def load(self, node: c_ast.ArrayRef | c_ast.UnaryOp, line: int | None) -> tuple[str, CType]:
        """a[i] or *p read from memory; a row of a 2-D array stays a pointer to its first element."""
        kind, base, index = self.address(node, line)
        if kind == "row":
            return f"_c.ref({base}, {index}, {line}, {self.mask})", CType(self.element_type(node).name, pointer=True)
        etype = self.element_type(node)
        if vectors.is_vector(etype):
            return f"_c.ldv({base}, {index}, {vectors.width(etype)}, {line}, {self.mask})", etype
        return f"_c.ld{kind}({base}, {index}, {line}, {self.mask})", etype

    def assignment_value(self, node: c_ast.Assignment, line: int | None) -> tuple[str, CType]:
        """x = v used as a value (while ((x = f()) > 0)): only a plain local variable may be assigned there."""
        if not isinstance(node.lvalue, c_ast.ID):
            raise UnsupportedSyntax("an assignment to an array element inside an expression: make it a "
                                    "statement of its own", line)
        var = self.lookup(node.lvalue.name, line)
        if var.cell:
            raise UnsupportedSyntax("an assignment to a __shared__ variable (or one whose address is taken, &x) "
                                    "inside an expression: make it a statement of its own", line)
        statement = self.assign(node.lvalue, node.op, node.rvalue, line)
        return f"({var.py} := {statement.split(' = ', 1)[1]})", var.type

    def explicit_cast(self, node: c_ast.Cast, line: int | None) -> tuple[str, CType]:
        """(T)x, and the C++ casts lowered to it: as an implicit conversion, except that it may drop a pointer's
        const, as C's cast and C++'s const_cast do."""
        to = self.ctype(node.to_type.type, line)
        code, frm = self.expr(node.expr)
        if frm.pointer and to.pointer and frm.const:
            frm = CType(frm.name, pointer=True)
        return self.cast(code, frm, to, line), to

    def member(self, node: c_ast.StructRef, line: int | None) -> tuple[str, CType]:
        """threadIdx.x and the other built-ins' members (block.group_index().x too), or a vector's (v.x)."""
        base = _name(node.name)
        if node.field.name == "num_elements" and isinstance(node.name, c_ast.ID) and \
                wmma.is_fragment(self.lookup(node.name.name, line).type):
            return str(wmma.num_elements(self.lookup(node.name.name, line).type, line)), INT
        call = node.name
        if isinstance(call, c_ast.FuncCall) and isinstance(call.name, c_ast.StructRef) and \
                call.name.field.name in groups.DIM3 and groups.is_group(self.type_of(call.name.name)):
            base = groups.DIM3[call.name.field.name]
        if base not in BUILTINS:
            found = structs.read(self, node, line)
            return found if found is not None else vectors.member(self, node, line)
        if node.type != "." or node.field.name not in ("x", "y", "z"):
            raise CudaCError(f"{base} has members .x, .y and .z", line)
        return f"_c.{BUILTINS[base]}{node.field.name}", UINT

    def identifier(self, node: c_ast.ID, line: int | None) -> tuple[str, CType]:
        if node.name in ("true", "false"):
            return ("1" if node.name == "true" else "0"), BOOL
        if node.name == "__nullptr":  # C++'s nullptr: a pointer to nothing
            return "None", NULLPTR
        if node.name in BUILTINS:
            raise CudaCError(f"{node.name} has parts .x, .y and .z: write {node.name}.x", line)
        var = self.lookup(node.name, line)
        if var.cell:
            return vectors.load_cell(var.py, var.type, line, self.mask), var.type
        if var.unset and structs.value(var.type):
            return f"_srd(_c, {var.py}, {line}, {self.mask})", var.type
        if var.unset and vectors.is_vector(var.type):  # each member read as set
            return f"_vrd(_c, {var.py}, {line}, {self.mask})", var.type
        if var.unset:
            return f"_rd(_c, {var.py}, {line}, {self.mask})", var.type
        return var.py, var.type

    def ternary(self, node: c_ast.TernaryOp, line: int | None) -> tuple[str, CType]:
        """c ? a : b, each side run only by the lanes that take it (a load on the other side is never made)."""
        cond, _ = self.truth(node.cond, line)
        ka, a, at, fa = self.under_mask(lambda: self.expr(node.iftrue))
        kb, b, bt, fb = self.under_mask(lambda: self.expr(node.iffalse))
        if at.pointer or bt.pointer:
            raise UnsupportedSyntax("a ternary that chooses between pointers", line)
        if structs.value(at) or structs.value(bt) or vectors.is_vector(at) or vectors.is_vector(bt):
            if at != bt:
                raise CudaCError(f"c ? a : b with a {at} and a {bt}: both sides must have one type", line)
            rt = at
        else:
            rt = arithmetic(at, bt)
        yes, no = _lambda(ka, self.cast(a, at, rt, line), fa), _lambda(kb, self.cast(b, bt, rt, line), fb)
        return f"_tern(_c, {cond}, {yes}, {no}, {self.mask})", rt

    def element_type(self, node: c_ast.Node) -> CType:
        base = node
        while isinstance(base, c_ast.ArrayRef):
            base = base.name
        if isinstance(base, c_ast.UnaryOp):
            base = base.expr
        return self.type_of(base).scalar

    def unary(self, node: c_ast.UnaryOp, line: int | None) -> tuple[str, CType]:  # noqa: C901
        op = node.op
        if op == "sizeof":
            ctype = self.ctype(node.expr.type, line) if isinstance(node.expr, c_ast.Typename) else \
                self.type_of(node.expr)
            if ctype.name in ("void", "__auto") and not ctype.pointer:
                raise CudaCError(f"sizeof({ctype.name}): it has no size (NVRTC: incomplete type)", line)
            if structs.value(ctype):
                return str(structs.layout(ctype)[0]), CType("unsigned long long")
            return str(8 if ctype.pointer else size_of(ctype.name) * math.prod(ctype.dims)), \
                CType("unsigned long long")
        if op == "&":
            return self.address_of(node.expr, line)
        if op in ("p++", "++", "p--", "--"):
            return self.increment(node, line)
        if op == "!":
            code, _ = self.truth(node, line)
            return f"_i({code})", INT
        code, ctype = self.expr(node.expr)
        if ctype.pointer or ctype.dims:
            raise UnsupportedSyntax(f"{op} on a pointer", line)
        if op == "+":
            return self.cast(code, ctype, promote(ctype), line), promote(ctype)
        if op == "-":
            rt = promote(ctype)
            return self.wrap(f"(-{self.cast(code, ctype, rt, line)})", rt), rt
        if op == "~":
            if not is_int(ctype):
                raise CudaCError("~ needs a whole number", line)
            rt = promote(ctype)
            return self.wrap(f"(~{self.cast(code, ctype, rt, line)})", rt), rt
        raise UnsupportedSyntax(f"the operator {op}", line)

    def address_of(self, node: c_ast.Node, line: int | None) -> tuple[str, CType]:
        """&a[i] (a pointer into global memory, or into a shared or local array), or &total of a __shared__
        variable (for atomicAdd)."""
        if isinstance(node, c_ast.ID) and self.lookup(node.name, line).cell:
            var = self.lookup(node.name, line)
            return f"_c.ref({var.py}, (0,), {line}, {self.mask})", CType(var.type.name, pointer=True)
        if isinstance(node, c_ast.ID) and self.lookup(node.name, line).type.dims:  # &tile: where the array starts
            var = self.lookup(node.name, line)
            return f"_c.decay({var.py})", CType(var.type.name, pointer=True)
        if isinstance(node, c_ast.ID):
            structs.refuse_in_memory(CType(self.lookup(node.name, line).type.name, pointer=True), line)
        if not isinstance(node, c_ast.ArrayRef):
            raise UnsupportedSyntax("& of anything but a variable, an array or an array element (&x, &a[i]): "
                                    "&p of a pointer makes a pointer to a pointer, which the executor does not "
                                    "follow", line)
        kind, base, index = self.address(node, line)
        ptype = CType(self.element_type(node).name, pointer=True, const=self.type_of(node.name).const)
        if kind:  # &tile[i][j]: a pointer into a shared or local array
            return f"_c.ref({base}, {index}, {line}, {self.mask})", ptype
        return f"_offset(_c, {base}, {_scaled(index, ptype)}, {line}, {self.mask})", ptype

    def increment(self, node: c_ast.UnaryOp, line: int | None) -> tuple[str, CType]:
        """++x, x++, --x, x-- inside an expression (on a variable)."""
        op = node.op
        if not isinstance(node.expr, c_ast.ID):
            raise UnsupportedSyntax(f"{op.strip('p')} on an array element inside an expression: make it a "
                                    "statement of its own", line)
        var = self.lookup(node.expr.name, line)
        if var.cell:
            raise UnsupportedSyntax(f"{op.strip('p')} on a __shared__ variable (or one whose address is taken, &x) "
                                    "inside an expression: make it a statement of its own", line)
        one = c_ast.Constant("int", "1", node.coord)
        new = self.assign(node.expr, "+=" if "++" in op else "-=", one, line).split(" = ", 1)[1]
        if op.startswith("p"):  # the old value
            return f"(_old := {var.py}, {var.py} := {new})[0]", var.type
        return f"({var.py} := {new})", var.type

    def operands(self, node: c_ast.BinaryOp, line: int | None) -> tuple[str, str, CType]:
        """Both operands of an arithmetic or comparison operator, converted to their common type."""
        return self.common(node.op, self.expr(node.left), self.expr(node.right), line)

    def common(self, op: str, left: tuple[str, CType], right: tuple[str, CType],
               line: int | None) -> tuple[str, str, CType]:
        (a, at), (b, bt) = left, right
        if "void" in (at.name, bt.name) and not (at.pointer or bt.pointer):
            raise CudaCError(f"{op} on a void value (a void function's result, or (void)x): it has no value", line)
        for t in (at, bt):
            vectors.scalar_only(t, op, line)
            structs.scalar_only(t, op, line)
        if at.pointer or bt.pointer:
            raise UnsupportedSyntax(f"the pointer arithmetic {op} (only pointer + or - a whole number)", line)
        if at.dims or bt.dims:
            raise CudaCError("arithmetic on a whole array: index its elements", line)
        rt = arithmetic(at, bt)
        return self.cast(a, at, rt, line), self.cast(b, bt, rt, line), rt

    def binary(self, node: c_ast.BinaryOp, line: int | None) -> tuple[str, CType]:  # noqa: C901
        op = node.op
        if op in ("&&", "||") or op in _COMPARISONS:
            code, _ = self.truth(node, line)
            return f"_i({code})", INT
        left, right = self.expr(node.left), self.expr(node.right)
        moved = self.pointer_arithmetic(op, left, right, line)
        if moved is not None:
            return moved
        if op in ("<<", ">>"):
            return self.shift(op, left, right, line)
        a, b, rt = self.common(op, left, right, line)
        if op in ("&", "|", "^"):
            if not is_int(rt):
                raise CudaCError(f"{op} needs whole numbers", line)
            return self.wrap(f"({a} {op} {b})", rt), rt
        if op in ("/", "%"):
            if is_int(rt):
                return f"_i{'div' if op == '/' else 'mod'}_{_id(rt.name)}(_c, {a}, {b}, {line}, {self.mask})", rt
            if op == "%":
                raise CudaCError("% needs whole numbers: use fmodf for floats", line)
            self.flops += 1
            return f"({a} / {b})", rt
        if op in ("+", "-", "*"):
            self.flops += is_float(rt)
            return self.wrap(f"({a} {op} {b})", rt), rt
        raise UnsupportedSyntax(f"the operator {op}", line)

    def pointer_arithmetic(self, op: str, left: tuple[str, CType], right: tuple[str, CType],
                           line: int | None) -> tuple[str, CType] | None:
        """p + i, i + p, p - i (an array as a pointer to its first element: tile + 16), or None for numbers."""
        (a, at), (b, bt) = left, right
        if at.dims and op in ("+", "-") and is_int(bt):
            a, at = f"_c.decay({a})", CType(at.name, pointer=True)
        if bt.dims and op == "+" and is_int(at):
            b, bt = f"_c.decay({b})", CType(bt.name, pointer=True)
        if op in ("+", "-") and at.pointer and is_int(bt):
            return f"_offset(_c, {a}, {_scaled(b, at)}, {line}, {self.mask}{', -1' if op == '-' else ''})", at
        if op == "+" and bt.pointer and is_int(at):
            return f"_offset(_c, {b}, {_scaled(a, bt)}, {line}, {self.mask})", bt
        return None

    def shift(self, op: str, left: tuple[str, CType], right: tuple[str, CType],
              line: int | None) -> tuple[str, CType]:
        """a << b, a >> b: the count is checked at run time (0 to the width less 1)."""
        (a, at), (b, bt) = left, right
        if at.pointer or bt.pointer or not (is_int(at) and is_int(bt)):
            raise CudaCError(f"{op} needs whole numbers", line)
        rt = promote(at)
        bits = INTEGERS[rt.name][0]
        code = f"_shift(_c, {self.cast(a, at, rt, line)}, {op!r}, {b}, {bits}, {line}, {self.mask})"
        return self.wrap(code, rt), rt

    def wrap(self, code: str, ctype: CType) -> str:
        """Integers wrap around as in C (32 or 64 bits); floats are NumPy values and round by themselves."""
        return f"_to_{_id(ctype.name)}({code})" if is_int(ctype) else code

    def call(self, node: c_ast.FuncCall, line: int | None) -> tuple[str, CType]:
        name = _name(node.name)
        args = node.args.exprs if node.args is not None else []
        library = self.library(node, name, args, line)
        if library is not None:
            return library
        if name == "__syncthreads":
            raise UnsupportedSyntax("__syncthreads() inside an expression: make it a statement of its own", line)
        if name in self.unit.calls:  # f<float, 4>(...)
            template, texts = self.unit.calls[name]
            arguments = self.unit.template_arguments(texts, self, line)
            return self.call_function(self.unit.instance(template, arguments, line), args, line)
        if name in self.unit.templates:  # f(x) of a template f: its arguments deduced from x
            return self.call_function(self.unit.instance(name, self.deduce(name, args, line), line), args, line)
        if name in self.functions:  # the learner's own __device__ max or expf is called, as nvcc calls it
            return self.call_function(self.functions[name], args, line)
        if name in warp.TRANSLATE:
            return warp.TRANSLATE[name](self, args, line)
        if name.startswith("make_") and name[5:] in VECTORS:
            return vectors.make(self, name, args, line)
        if name in BIT_CASTS or name in BIT_INTRINSICS or name in ("__mul24", "__umul24"):
            return self.bits(name, args, line)
        if name == "printf":
            return self.printf(args, line)
        if name == "assert":
            self.arity(name, args, 1, line)
            return f"_c.check({self.condition(args[0], line)}, {line}, {self.mask})", CType("void")
        if name in MATH or name in MATH2:
            return self.math(name, args, line)
        if name in FMA:
            return self.fma(name, args, line)
        if name in ("min", "max", "abs"):
            return self.min_max_abs(name, args, line)
        if name in ATOMICS:
            return self.atomic(name, args, line)
        raise UnsupportedSyntax(f"the function {name}(): the CPU executor knows the common math functions "
                                "(expf, sqrtf, fmaxf, ...), min, max, abs, atomicAdd and your __device__ "
                                "functions defined above it", line)

    def bits(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """__float_as_int and the other bit casts (the same bits read as another type), and __popc, __clz and the
        other bit intrinsics; __mul24(a, b): the low 24 bits of each (sign-extended; __umul24's not) multiplied, the
        product's low 32 bits."""
        if name in ("__mul24", "__umul24"):
            self.arity(name, args, 2, line)
            t = INT if name == "__mul24" else UINT
            a, b = (self.convert(x, t, line) for x in args)
            return f"_to_{_id(t.name)}(_mul24({a}, {b}, {name == '__mul24'}))", t
        self.arity(name, args, 1, line)
        if name in BIT_CASTS:
            frm, to = BIT_CASTS[name]
            return f"_bits({self.convert(args[0], frm, line)}, {DTYPES[frm.name]!r}, {DTYPES[to.name]!r})", to
        frm, to = BIT_INTRINSICS[name]
        bits = 64 if name.endswith("ll") else 32
        return self.wrap(f"_bit_{name.strip('_').rstrip('l')}({self.convert(args[0], frm, line)}, {bits})", to), to

    def fma(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """fmaf(a, b, c) and its kin: a * b + c rounded once, two FLOPs."""
        self.arity(name, args, 3, line)
        t = FMA[name]
        self.flops += 2
        a, b, c = (self.convert(x, t, line) for x in args)
        return f"_fma({a}, {b}, {c})", t

    def atomic(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """atomicAdd(&a[i], v) and the others, atomicCAS(&a[i], compare, v) too, on global, shared or local memory:
        the element's old value."""
        self.arity(name, args, 3 if name == "atomicCAS" else 2, line)
        ptr, ptype = self.expr(args[0])
        if ptype.dims:  # atomicAdd(s, 1) of an array s: its first element
            ptr, ptype = self.cast(ptr, ptype, CType(ptype.name, pointer=True), line), CType(ptype.name, pointer=True)
        if not ptype.pointer:
            raise CudaCError(f"{name}'s first argument is an address: &a[i]", line)
        if ptype.const:
            raise CudaCError(f"{name} on memory a pointer to const points to: it writes there (NVRTC: no "
                             f"instance of {name} matches)", line)
        etype = ptype.scalar
        if etype.name not in ATOMIC_TYPES[name]:
            hint = (" (for a float maximum or minimum: an atomicCAS loop on __float_as_int's bits, or atomicMax on "
                    "them for values that are never negative)" if name in ("atomicMax", "atomicMin") and
                    is_float(etype) else "")
            article = "an" if etype.name[0] in "aeiou" else "a"
            raise CudaCError(f"{name} on {article} {etype}: CUDA has {name} for {', '.join(ATOMIC_TYPES[name])} only "
                             f"(NVRTC: no instance of overloaded function \"{name}\" matches the argument list)"
                             f"{hint}", line)
        values = [self.convert(a, etype, line) for a in args[1:]]
        compare = f", compare={values[0]}" if name == "atomicCAS" else ""
        return f"_c.atomic({name!r}, {ptr}, {values[-1]}, {line}, {self.mask}{compare})", etype

    def library(self, node: c_ast.FuncCall, name: str, args: list[c_ast.Node],
                line: int | None) -> tuple[str, CType] | None:
        """A call into CUDA's headers (cooperative groups, WMMA, cuda_fp16.h, the cache-hinted loads), or None."""
        if isinstance(node.name, c_ast.StructRef):  # block.sync(), tile.shfl_down(v, 1): a group's method
            group = self.type_of(node.name.name)
            if not groups.is_group(group) or node.name.type != ".":
                raise UnsupportedSyntax(f"the method call .{node.name.field.name}(): only cooperative groups have "
                                        "methods here", line)
            return groups.method(self, node.name.field.name, group, args, line)
        if name.startswith("__cg_"):
            return groups.function(self, name, args, line)
        if name.startswith("__wmma_"):
            return wmma.call(self, name, args, line)
        if name in wmma.HALF_FUNCTIONS:
            return self.half_function(name, args, line)
        if name in HINTED_LOADS or name in HINTED_STORES:
            return self.hinted(name, args, line)
        return None

    def half_function(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """cuda_fp16.h's conversions and arithmetic: __float2half, __half2float, __hadd, __hmul, __hfma, ..."""
        wanted, result = wmma.HALF_FUNCTIONS[name]
        self.arity(name, args, len(wanted), line)
        values = [self.convert(a, t, line) for a, t in zip(args, wanted, strict=True)]
        if name in wmma.HALF_CODE:
            return wmma.HALF_CODE[name].format(*values), result
        return self.cast(values[0], wanted[0], result, line), result

    def hinted(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """__ldg(p) (a load through the read-only cache) and the other cache-hinted loads and stores: *p, *p = v."""
        self.arity(name, args, 1 if name in HINTED_LOADS else 2, line)
        if not self.type_of(args[0]).pointer:
            raise CudaCError(f"{name}'s first argument is an address: {name}(&a[i]) or {name}(a + i)", line)
        target = c_ast.UnaryOp("*", args[0], args[0].coord)
        if name in HINTED_LOADS:
            return self.expr(target)
        if self.type_of(args[0]).const:
            raise CudaCError(f"{name} through a pointer to const: it writes there", line)
        return self.assign(target, "=", args[1], line), CType("void")

    def printf(self, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """printf("format", values...): each active thread's line, in thread order (the format goes to the
        runtime as a Python string literal, never as code)."""
        if not args or not isinstance(args[0], c_ast.Constant) or args[0].type != "string":
            raise CudaCError("printf's first argument is a format in quotes: printf(\"%d\\n\", i);", line)
        values = []
        for arg in args[1:]:
            code, ctype = self.expr(arg)
            if ctype.pointer or ctype.dims or vectors.is_vector(ctype) or ctype.name == "void":
                raise UnsupportedSyntax(f"printing a {ctype}: the executor prints numbers", line)
            values.append(self.cast(code, ctype, DOUBLE, line) if ctype == FLOAT else code)
        return f"_c.printf({args[0].value!r}, ({''.join(v + ', ' for v in values)}), {line}, {self.mask})", INT

    def call_function(self, fn: Function, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """A call of one of the source's functions (or a template's instance)."""
        if fn.kernel:
            raise UnsupportedSyntax(f"calling the kernel {fn.name} from a kernel (dynamic parallelism)", line)
        if len(args) < len(fn.params):
            args = [*args, *self.unit.default_arguments(fn.name, len(args), len(fn.params), line)]
        self.arity(fn.name, args, len(fn.params), line)
        converted = [structs.initial(self, a.init, t, line) if isinstance(a, c_ast.CompoundLiteral) and
                     structs.value(t) else self.convert(a, t, line) for a, (_, t) in zip(args, fn.params, strict=True)]
        return f"{fn.py_name}(_c, _eff({self.mask}){''.join(', ' + c for c in converted)})", fn.returns

    def deduce(self, name: str, args: list[c_ast.Node], line: int | None) -> list[CType | int | None]:
        """Template `name`'s type arguments from the types of a call's arguments (f(x) with x a float: T = float)."""
        node, params = self.unit.templates[name]
        decls = node.decl.type.args.params if node.decl.type.args else []
        found: dict[str, CType] = {}
        for decl, arg in zip(decls, args, strict=False):
            inner, pointer = decl.type, False
            if isinstance(inner, c_ast.PtrDecl):
                inner, pointer = inner.type, True
            words = getattr(getattr(inner, "type", None), "names", [])
            if len(words) == 1 and words[0] not in found:
                atype = self.type_of(arg)
                found[words[0]] = CType(atype.name) if pointer or not atype.pointer else atype
        missing = [p.name for p in params if (p.name not in found or p.kind != "type") and not p.default]
        if missing:
            raise CudaCError(f"the template arguments of {name} ({', '.join(missing)}) cannot be told from the call: "
                             f"give them, {name}<...>(...)", line)
        return [found.get(p.name) if p.kind == "type" else None for p in params]

    def math(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        """A math function. CUDA compiles C++: exp(x), pow(x, y), ... of floats call the float overloads, as
        expf and powf do (C would promote them to double)."""
        self.arity(name, args, 1 if name in MATH else 2, line)
        floats = all(self.type_of(a) == FLOAT for a in args)
        if floats and f"{name}f" in (MATH if name in MATH else MATH2):
            name = f"{name}f"
        if name in MATH:
            arg_type, result, runtime_fn = MATH[name]
            return f"{runtime_fn}({self.convert(args[0], arg_type, line)})", result
        t = MATH2[name]
        return f"_m_{name}({self.convert(args[0], t, line)}, {self.convert(args[1], t, line)})", t

    def min_max_abs(self, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
        if name == "abs":
            self.arity(name, args, 1, line)
            code, ctype = self.expr(args[0])
            return self.wrap(f"_abs({code})", promote(ctype)), promote(ctype)
        self.arity(name, args, 2, line)
        (a, at), (b, bt) = self.expr(args[0]), self.expr(args[1])
        rt = arithmetic(at, bt)
        fn = f"_{name}" if is_int(rt) else f"_m_f{name}"
        return f"{fn}({self.cast(a, at, rt, line)}, {self.cast(b, bt, rt, line)})", rt

    @staticmethod
    def arity(name: str, args: list[c_ast.Node], n: int, line: int | None) -> None:
        if len(args) != n:
            raise CudaCError(f"{name}() takes {n} argument(s); got {len(args)}", line)


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
NULLPTR = CType("void", pointer=True)


def _scaled(index: str, ptype: CType) -> str:
    """A pointer offset in elements of the memory: p4 + i moves 4 floats per float4."""
    n = vectors.width(ptype)
    return index if n == 1 else f"({index}) * {n}"


def _lambda(k: int, code: str, flops: int) -> str:
    """The translated code of a mask's lanes as a lambda of that mask, counting its FLOPs for those lanes."""
    return f"lambda _m{k}: " + (f"_fl(_c, {flops}, _m{k}, _b, {code})" if flops else code)


_EXPRESSIONS = {"Assignment", "UnaryOp", "FuncCall", "BinaryOp", "ID", "Constant", "ArrayRef", "Cast",
                "TernaryOp", "ExprList", "StructRef"}


#: The longest number the executor reads: a double has 17 significant digits, a 64-bit integer 20; 60 leaves
#: room for leading zeros and exponents without letting a 5,000-digit constant reach Python's int().
MAX_DIGITS = 60


def _constant(node: c_ast.Constant, line: int | None) -> tuple[str, CType]:
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


def _is_volatile(decl: c_ast.Decl) -> bool:
    """Whether a declaration is volatile: volatile float* s (what it points to), volatile __shared__ float s[64]."""
    node = decl.type
    while isinstance(node, c_ast.PtrDecl | c_ast.ArrayDecl):
        node = node.type
    return "volatile" in (decl.quals or []) or "volatile" in (getattr(node, "quals", None) or [])


def _setter(ctype: CType) -> str:
    """The runtime's call that assigns a value of this type for the active lanes."""
    return "_sset" if structs.value(ctype) else "_vset" if vectors.is_vector(ctype) else "_set"


def _addressed(body: c_ast.Node) -> set[str]:
    """The names whose address the function takes (&x)."""
    found: set[str] = set()

    class _Visitor(c_ast.NodeVisitor):
        def visit_UnaryOp(self, node: c_ast.UnaryOp) -> None:  # noqa: N802 - pycparser's naming
            if node.op == "&" and isinstance(node.expr, c_ast.ID):
                found.add(node.expr.name)
            self.generic_visit(node)

    _Visitor().visit(body)
    return found


def _name(node: c_ast.Node) -> str:
    return node.name if isinstance(node, c_ast.ID) else type(node).__name__


def _id(type_name: str) -> str:
    return type_name.replace(" ", "_")


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
    runtime = namespace()
    for key in ("_i", "_not", "_land", "_lor", "_tern"):
        names[key] = runtime[key]
    for kind in ("int", "unsigned_int", "long_long", "unsigned_long_long"):
        names[f"_idiv_{kind}"], names[f"_imod_{kind}"] = _constant_division(runtime[f"_idiv_{kind}"],
                                                                            runtime[f"_imod_{kind}"])
    return names


_CONSTANT_NAMESPACE = _constant_namespace()


#: What a kernel nested past Python's limits is told (the parser, the translation and Python's compiler all
#: recurse once per level of nesting).
TOO_DEEP = ("this kernel nests deeper than the CPU executor can follow (Python's limits): an expression of more "
            "than about 100 terms or brackets, or blocks nested about 20 deep. Split the expression with "
            "temporary variables (float s1 = a + b + ...; float s2 = ...;), or move inner loops into a "
            "__device__ function")
