"""CUDA C to lock-step Python: the executor's translation of a function, statement by statement
(helpers.executor.runtime runs what it makes).

Each function becomes Python that runs all the threads of a batch of blocks at once, as vectors of lanes (SIMT),
the way a GPU's warps run: a variable holds one value per lane, and a mask says which lanes are active. An `if`
runs its branch for the lanes whose condition holds, then the other branch for the rest; a loop runs while any
lane is still in it; `return`, `break` and `continue` take lanes out; an assignment changes a variable for the
active lanes only. The Translator builds on its bases, one module each: `scopes` (variables and output),
`expressions` (each expression with its C type) and `calls` (functions, intrinsics, libraries). Only the subset
the series teaches is accepted; anything else is an UnsupportedSyntax naming the construct and its line.
"""

from __future__ import annotations

import math
import re

from pycparser import c_ast

from . import groups, structs, vectors, wmma
from .c_types import VECTORS, CType, is_int
from .calls import Calls
from .errors import CudaCError, UnsupportedSyntax
from .expressions import node_name
from .front import has_side_effects
from .scopes import MASK, Function, Loop


class Translator(Calls):
    """Translates one function (or one instance of a template) of `unit` (a helpers.executor.unit.Unit: the
    functions so far, typedefs, file-scope constants, templates), statement by statement, on the expressions and
    calls of its bases (helpers.executor.expressions, helpers.executor.calls). `bound`: a template instance's
    arguments, types by name (T -> float) and values (N -> 128)."""

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
        elif isinstance(node, c_ast.FuncCall) and node_name(node.name) == "__syncthreads":
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
        self.loops.append(Loop(f"_x{k}", None if do else f"_n{k}"))
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

    # -------------------------------------------------------------------- assignments

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


_EXPRESSIONS = {"Assignment", "UnaryOp", "FuncCall", "BinaryOp", "ID", "Constant", "ArrayRef", "Cast",
                "TernaryOp", "ExprList", "StructRef"}


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


#: What a kernel nested past Python's limits is told (the parser, the translation and Python's compiler all
#: recurse once per level of nesting).
TOO_DEEP = ("this kernel nests deeper than the CPU executor can follow (Python's limits): an expression of more "
            "than about 100 terms or brackets, or blocks nested about 20 deep. Split the expression with "
            "temporary variables (float s1 = a + b + ...; float s2 = ...;), or move inner loops into a "
            "__device__ function")

