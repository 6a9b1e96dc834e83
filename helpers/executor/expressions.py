"""C's expressions to lock-step Python: each expression of the translated function as (Python source, C type).

Every expression gets its C type here, at translation time, so `float` arithmetic stays float32, a `double`
literal promotes to double and 32-bit integers wrap. Memory goes through the runtime's loads and stores (bounds,
races and counters are checked there) with the mask of the lanes that make them, so `i < n && a[i] > 0` never
reads a[i] where i >= n: the right side of && and ||, and each side of ?:, runs under a mask of its own. The
types of declarations and the compile-time constants (array sizes) are read here too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pycparser import c_ast

from . import groups, structs, vectors, wmma
from .c_types import (
    BOOL,
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
from .errors import CudaCError, UnsupportedSyntax
from .literals import CONSTANT_NAMESPACE, literal
from .scopes import BUILTINS, Scopes


class Expressions(Scopes):
    """The expressions of one function: `expr(node)` is (Python source, C type). A call is translated by
    helpers.executor.calls and an assignment inside an expression (x = f(), i++) by the statements'
    `assign` (helpers.executor.translate): the Translator has all three."""

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
                return eval(code, {"__builtins__": {}}, {**CONSTANT_NAMESPACE, **self.constants})  # noqa: S307
        except CudaCError:
            raise
        except Exception:  # noqa: BLE001 - it depends on a variable
            return None

    # -------------------------------------------------------------------- places in memory

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
                node_name(node.left), node_name(node.right)):
            other = node.right if node_name(node.left) == "__nullptr" else node.left
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
        return f"_to_{type_id(to.name)}({code})"

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
            return literal(node, line)
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
        base = node_name(node.name)
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
                return f"_i{'div' if op == '/' else 'mod'}_{type_id(rt.name)}(_c, {a}, {b}, {line}, {self.mask})", rt
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
        return f"_to_{type_id(ctype.name)}({code})" if is_int(ctype) else code


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
NULLPTR = CType("void", pointer=True)


def _scaled(index: str, ptype: CType) -> str:
    """A pointer offset in elements of the memory: p4 + i moves 4 floats per float4."""
    n = vectors.width(ptype)
    return index if n == 1 else f"({index}) * {n}"


def _lambda(k: int, code: str, flops: int) -> str:
    """The translated code of a mask's lanes as a lambda of that mask, counting its FLOPs for those lanes."""
    return f"lambda _m{k}: " + (f"_fl(_c, {flops}, _m{k}, _b, {code})" if flops else code)



def node_name(node: c_ast.Node) -> str:
    """The name of an identifier node (a called function's, a variable's); its node type's name for any other."""
    return node.name if isinstance(node, c_ast.ID) else type(node).__name__


def type_id(type_name: str) -> str:
    """A C type's name as part of a Python name (unsigned int: unsigned_int, as in _to_unsigned_int)."""
    return type_name.replace(" ", "_")
