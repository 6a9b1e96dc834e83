"""CUDA's vector types (float2, float4, int2, ...): how their members, make_float4 and loads through a float4*
translate, and what the translated code calls. A vector's value is a tuple of its members (each one value per
lane); a float4 load is one 16-byte access per lane, as the GPU's ld.global.v4 makes it."""

from __future__ import annotations

from typing import Any

from pycparser import c_ast

from .c_types import DTYPES, VECTORS, CType
from .errors import CudaCError, UnsupportedSyntax

MEMBERS = "xyzw"


def element(ctype: CType) -> CType:
    """The type of a vector's members (float for a float4)."""
    return CType(VECTORS[ctype.name][0])


def width(ctype: CType) -> int:
    return VECTORS[ctype.name][1] if ctype.name in VECTORS else 1


def is_vector(ctype: CType) -> bool:
    return not ctype.dims and ctype.name in VECTORS


def unset(ctype: CType, name: str, line: int) -> str:
    """The code for a variable declared without a value (each member of a vector on its own)."""
    if is_vector(ctype) and not ctype.pointer:
        parts = ", ".join(f"_Unset({name + '.' + m!r}, {line})" for m in MEMBERS[:width(ctype)])
        return f"({parts})"
    return f"_Unset({name!r}, {line})"


def member_index(ctype: CType, field: str, line: int | None) -> int:
    """Which member `.x`, `.y`, `.z` or `.w` is, checked against the vector's width."""
    members = MEMBERS[:width(ctype)]
    if not is_vector(ctype) or ctype.pointer or field not in members:
        what = f"a {ctype.name} has members {', '.join('.' + m for m in members)}" if is_vector(ctype) \
            and not ctype.pointer else f"{ctype} is not a vector type (float2, float4, int2, ...)"
        raise CudaCError(f".{field}: {what}", line)
    return members.index(field)


def member(translator: Any, node: c_ast.StructRef, line: int | None) -> tuple[str, CType]:
    """`v.x`: a member of a vector variable, or of any vector expression (p4[i].y, make_float2(a, b).x)."""
    if node.type != ".":
        raise UnsupportedSyntax("-> (a pointer to a struct): kernels here have no structs", line)
    base = node.name
    if isinstance(base, c_ast.ID) and base.name not in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        var = translator.lookup(base.name, line)
        k = member_index(var.type, node.field.name, line)
        if var.cell:  # a vector whose address is taken: its members in local memory
            return f"_c.lda({var.py}, ({k},), {line}, {translator.mask})", element(var.type)
        if var.unset:
            return f"_rd(_c, {var.py}[{k}], {line}, {translator.mask})", element(var.type)
        return f"{var.py}[{k}]", element(var.type)
    code, ctype = translator.expr(base)
    return f"({code})[{member_index(ctype, node.field.name, line)}]", element(ctype)


def assign_member(translator: Any, target: c_ast.StructRef, rhs: str, line: int | None) -> str:
    """`v.x = value` for a vector variable v (its other members, and other lanes, keep their values)."""
    if not isinstance(target.name, c_ast.ID) or target.type != ".":
        raise UnsupportedSyntax("assigning to a member of a vector that is not a variable (p4[i].x = ...): load "
                                "it into a variable, set the member, and store the variable", line)
    var = translator.lookup(target.name.name, line)
    k = member_index(var.type, target.field.name, line)
    if var.cell:
        return f"_c.sta({var.py}, ({k},), {rhs}, {line}, {translator.mask})"
    return f"{var.py} = _vput({var.py}, {k}, _set({var.py}[{k}], {rhs}, {translator.mask}))"


def load_cell(py: str, ctype: CType, line: int | None, mask: str) -> str:
    """The value of a variable kept in local memory (a __shared__ scalar, or a variable whose address is taken)."""
    if is_vector(ctype):
        return f"_c.ldv(_c.decay({py}), 0, {width(ctype)}, {line}, {mask})"
    return f"_c.lda({py}, (0,), {line}, {mask})"


def store_cell(py: str, ctype: CType, value: str, line: int | None, mask: str) -> str:
    """The statement that sets a variable kept in local memory to `value`."""
    if is_vector(ctype):
        return f"_c.stv(_c.decay({py}), 0, {value}, {width(ctype)}, {line}, {mask})"
    return f"_c.sta({py}, (0,), {value}, {line}, {mask})"


def make(translator: Any, name: str, args: list[c_ast.Node], line: int | None) -> tuple[str, CType]:
    """make_float4(a, b, c, d) and the others: each argument converted to the member type."""
    ctype = CType(name[len("make_"):])
    n = width(ctype)
    if len(args) != n:
        raise CudaCError(f"{name}() takes {n} arguments; got {len(args)}", line)
    parts = [translator.convert(a, element(ctype), line) for a in args]
    return f"({', '.join(parts)},)", ctype


def scalar_only(ctype: CType, op: str, line: int | None) -> None:
    """Vectors have no operators in CUDA C (helper_math.h, which adds them, is not CUDA's own)."""
    if is_vector(ctype) and not ctype.pointer:
        raise CudaCError(f"{op} on a {ctype.name}: CUDA defines no operators on vector types; work on its members "
                         ".x, .y, .z, .w", line)


def pointer_cast(code: str, frm: CType, to: CType, line: int | None, mask: str) -> str:
    """A pointer cast (reinterpret_cast<float4*>(p), reinterpret_cast<float*>(bytes)): the same memory seen as
    other elements, which must fit their alignment (a float4 starts at a multiple of 16 bytes)."""
    base_from = element(frm).name if is_vector(frm) else frm.name
    base_to = element(to).name if is_vector(to) else to.name
    if base_from != base_to:
        if base_from not in DTYPES or base_to not in DTYPES:
            raise UnsupportedSyntax(f"the cast from {frm} to {to}: the executor reinterprets pointers to numbers "
                                    "and their vectors (unsigned char*, float*, float4*, ...), not void*", line)
        code = f"_retype(_c, {code}, {base_to!r}, {line}, {mask})"
    if width(to) <= (width(frm) if base_from == base_to else 1):
        return code
    return f"_vptr(_c, {code}, {width(to)}, {line}, {mask})"
