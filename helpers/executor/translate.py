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

import re
from dataclasses import dataclass, field

from pycparser import c_ast

from .c_types import (
    BOOL,
    CONVERSIONS,
    DOUBLE,
    FLOAT,
    INT,
    INTEGERS,
    UINT,
    CType,
    arithmetic,
    is_float,
    is_int,
    promote,
    type_name,
)
from .front import PRELUDE_TYPES, CudaCError, UnsupportedSyntax, has_side_effects, parse

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
    barriers: bool  # calls __syncthreads()
    returns: CType = field(default_factory=lambda: CType("void"))
    exported: bool = True  # a kernel declared extern "C": CuPy finds it by its name
    const: set[str] = field(default_factory=set)  # pointer parameters to const: the kernel only reads them


@dataclass
class _Var:
    py: str
    type: CType
    unset: bool = False  # declared without a value: reads are checked


@dataclass
class _Loop:
    """What a break or continue in the innermost loop updates: the lanes that left it, and those that continue."""

    exits: str
    continues: str | None  # None in a do-while, where continue is not supported


#: The mask arguments of the runtime's calls at statement level: the active lanes and the frame's live ones.
MASK = "_m, _b"


class _Translator:
    """Translates one function. Expressions come back as (Python source, C type)."""

    def __init__(self, functions: dict[str, Function], kernel: bool, typedefs: dict[str, CType]) -> None:
        self.functions = functions
        self.typedefs = typedefs
        self.kernel = kernel
        self.scopes: list[dict[str, _Var]] = [{}]
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

    # -------------------------------------------------------------------- scopes and output

    def declare(self, name: str, ctype: CType, line: int, unset: bool = False) -> str:
        if name in BUILTINS:
            raise UnsupportedSyntax(f"{name!r} is CUDA's own (threadIdx, blockIdx, blockDim, gridDim); choose "
                                    "another name", line)
        if name in self.scopes[-1]:
            raise CudaCError(f"{name!r} is declared twice in the same block", line)
        py = f"{name}_" if f"{name}_" not in self.names else f"{name}_{len(self.names)}"
        self.names.add(py)
        self.scopes[-1][name] = _Var(py, ctype, unset)
        return py

    def lookup(self, name: str, line: int) -> _Var:
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
            name = type_name(words)
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
        self.flops = 0
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
        fn = Function(name, params, "", kernel, False, self.returns, const=const)
        self.functions[name] = fn  # recursion finds itself
        args = [self.declare(pname, ptype, line) for pname, ptype in params]
        self.emit(0, f"def {fn_name(name)}(_c, _b{''.join(', ' + a for a in args)}):")
        self.emit(1, "_m = _rv = None")
        self.block(node.body, 1)
        if self.returns.name != "void":
            self.emit(1, f"_fell_off(_c, {MASK})")
        self.emit(1, "return _rv")
        if self.barriers and not kernel:
            raise UnsupportedSyntax(f"__syncthreads() in the __device__ function {name}: call it in the kernel "
                                    "itself", line)
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
            self.emit(depth, f"_rv = _set(_rv, {value}, _eff({MASK}), None)")  # returned lanes keep theirs
        self.emit(depth, "_b = _kill(_m, _b)")
        self.emit(depth, "if not _any(_b):")
        self.emit(depth + 1, "return _rv")
        self.emit(depth, "_m = _c.none")

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
            kind = "shared" if shared else "local"
            where = f", {line}" if shared else ""  # one array per declaration, even of the same name and size
            self.emit(depth, f"{py} = _c.{kind}({node.name!r}, {ctype.name!r}, {ctype.dims!r}{where})")
            return
        if shared:
            raise UnsupportedSyntax("a __shared__ variable that is not an array: declare an array of one "
                                    f"(__shared__ {ctype} {node.name}[1];)", line)
        if node.init is None:
            py = self.declare(node.name, ctype, line, unset=True)
            self.emit(depth, f"{py} = _Unset({node.name!r}, {line})")  # using it before a value is reported
            return
        if isinstance(node.init, c_ast.InitList):
            raise UnsupportedSyntax("an initializer list { ... }", line)
        value = self.convert(node.init, ctype, line)
        py = self.declare(node.name, ctype, line)
        if "const" in (node.quals or []) and is_int(ctype):
            known = self.known(value)
            if known is not None:  # const int TILE = 16: usable as an array size, as in C++
                self.constants[py] = known
        self.emit(depth, f"{py} = {value}")  # a new variable: its inactive lanes are never read
        self.tick(depth)

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
        rhs, _ = self.assign_value(target, op, value, line)
        if isinstance(target, c_ast.ID):
            var = self.lookup(target.name, line)
            return f"{var.py} = _set({var.py}, {rhs}, {self.mask})"
        if isinstance(target, c_ast.ArrayRef | c_ast.UnaryOp):
            kind, base, index = self.address(target, line)
            return f"_c.st{kind}({base}, {index}, {rhs}, {line}, {self.mask})"
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

    def condition(self, node: c_ast.Node, line: int | None) -> str:
        """A branch's or loop's condition as a truth value per lane (bool; uniform where it can be)."""
        code, ctype = self.truth(node, line)
        if ctype.dims or ctype.name == "void" or ctype.pointer:
            raise CudaCError(f"a condition must be a number; got {ctype}", line)
        return code

    def truth(self, node: c_ast.Node, line: int | None) -> tuple[str, CType]:
        """`node` as C's truth value, per lane: comparisons and logic directly, anything else compared with 0."""
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
            base = _name(node.name)
            if base not in BUILTINS or node.type != "." or node.field.name not in ("x", "y", "z"):
                raise UnsupportedSyntax("members other than threadIdx / blockIdx / blockDim / gridDim .x .y .z",
                                        line)
            return f"_c.{BUILTINS[base]}{node.field.name}", UINT
        if isinstance(node, c_ast.ArrayRef) or (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
            kind, base, index = self.address(node, line)
            return f"_c.ld{kind}({base}, {index}, {line}, {self.mask})", self.element_type(node)
        if isinstance(node, c_ast.Cast):
            to = self.ctype(node.to_type.type, line)
            return self.convert(node.expr, to, line), to
        if isinstance(node, c_ast.UnaryOp):
            return self.unary(node, line)
        if isinstance(node, c_ast.BinaryOp):
            return self.binary(node, line)
        if isinstance(node, c_ast.TernaryOp):
            return self.ternary(node, line)
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

    def identifier(self, node: c_ast.ID, line: int | None) -> tuple[str, CType]:
        if node.name in ("true", "false"):
            return ("1" if node.name == "true" else "0"), BOOL
        if node.name in BUILTINS:
            raise CudaCError(f"{node.name} has parts .x, .y and .z: write {node.name}.x", line)
        var = self.lookup(node.name, line)
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
            return f"_offset(_c, {base}, {index}, {line}, {self.mask})", \
                CType(self.element_type(node.expr).name, pointer=True)
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

    def increment(self, node: c_ast.UnaryOp, line: int | None) -> tuple[str, CType]:
        """++x, x++, --x, x-- inside an expression (on a variable)."""
        op = node.op
        if not isinstance(node.expr, c_ast.ID):
            raise UnsupportedSyntax(f"{op.strip('p')} on an array element inside an expression: make it a "
                                    "statement of its own", line)
        var = self.lookup(node.expr.name, line)
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
        (a, at), (b, bt) = left, right = self.expr(node.left), self.expr(node.right)
        if op in ("+", "-") and at.pointer and is_int(bt):
            return f"_offset(_c, {a}, {b}, {line}, {self.mask}{', -1' if op == '-' else ''})", at
        if op == "+" and bt.pointer and is_int(at):
            return f"_offset(_c, {b}, {a}, {line}, {self.mask})", bt
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
        if name == "__syncthreads":
            raise UnsupportedSyntax("__syncthreads() inside an expression: make it a statement of its own", line)
        if name in self.functions:  # the learner's own __device__ max or expf is called, as nvcc calls it
            fn = self.functions[name]
            if fn.kernel:
                raise UnsupportedSyntax(f"calling the kernel {name} from a kernel (dynamic parallelism)", line)
            self.arity(name, args, len(fn.params), line)
            converted = [self.convert(a, t, line) for a, (_, t) in zip(args, fn.params, strict=True)]
            return f"{fn_name(name)}(_c, _eff({self.mask}){''.join(', ' + c for c in converted)})", fn.returns
        if name in MATH or name in MATH2:
            return self.math(name, args, line)
        if name in ("min", "max", "abs"):
            return self.min_max_abs(name, args, line)
        if name in ATOMICS:
            self.arity(name, args, 2, line)
            ptr, ptype = self.expr(args[0])
            if not ptype.pointer:
                raise CudaCError(f"{name}'s first argument is an address: &a[i]", line)
            value = self.convert(args[1], ptype.scalar, line)
            return f"_c.atomic({name!r}, {ptr}, {value}, {line}, {self.mask})", ptype.scalar
        raise UnsupportedSyntax(f"the function {name}(): the CPU executor knows the common math functions "
                                "(expf, sqrtf, fmaxf, ...), min, max, abs, atomicAdd and your __device__ "
                                "functions defined above it", line)

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


def fn_name(name: str) -> str:
    return f"fn_{name}"


def _id(type_name: str) -> str:
    return type_name.replace(" ", "_")


def _constant_shift(_c: None, a: int, op: str, b: int, bits: int, line: int, *_: None) -> int:
    """A shift in a constant (an array size), with the runtime's rule: a count from 0 to the width less 1."""
    if not 0 <= b < bits:
        raise CudaCError(f"{a} {op} {b} shifts a {bits}-bit integer by {b}; C allows 0 to {bits - 1}", line)
    return a << b if op == "<<" else a >> b


#: What a constant array size may refer to while it is evaluated at translation time.
_CONSTANT_NAMESPACE: dict[str, object] = {**CONVERSIONS, "_shift": _constant_shift, "_c": None, "_m": None,
                                          "_b": None}


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
            if line != 1 or item.name not in PRELUDE_TYPES:  # typedef float T; (a type placeholder)
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
