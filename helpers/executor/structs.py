"""A kernel's own structs (struct Pair { float a; int b; };, made C's typedefs by cxx.lower_structs): their layout
as C has it, and how struct values, their members and struct arguments translate. A struct's value is a tuple of
its members' values (a vector or a struct inside it, a tuple too), each one value per lane, as a vector's is;
structs live in variables, function parameters and return values, and a kernel takes one by value as CuPy passes
it (a NumPy structured scalar)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pycparser import c_ast

from . import vectors
from .c_types import DTYPES, SIZES, VECTORS, CType
from .errors import CudaCError, UnsupportedSyntax

#: Where structs live on the executor, and what to write instead for the rest.
ONLY_VARIABLES = ("the CPU executor keeps structs in variables, parameters and return values only; keep an array "
                  "of each member instead (a struct of arrays: float* a, int* b), which also coalesces better")


def is_struct(ctype: CType) -> bool:
    return ctype.name.startswith("struct ")


def value(ctype: CType) -> bool:
    """A struct value (not a pointer to one, nor an array)."""
    return is_struct(ctype) and not ctype.pointer and not ctype.dims


def refuse_in_memory(ctype: CType, line: int | None) -> None:
    """An UnsupportedSyntax for a pointer to a struct or an array of structs."""
    if is_struct(ctype) and (ctype.pointer or ctype.dims):
        what = "a pointer to a struct" if ctype.pointer else "an array of structs"
        raise UnsupportedSyntax(f"{what} ({ctype}): {ONLY_VARIABLES}", line)


def define(translator: Any, node: c_ast.Struct, line: int | None) -> CType:
    """The CType of a struct definition's members (struct NAME { float a; int b; }), or of a struct defined
    before (struct NAME n;)."""
    known = translator.typedefs.get(node.name)
    if node.decls is None and known is not None and is_struct(known):
        return known
    if node.decls is None:
        raise CudaCError(f"struct {node.name} is used before it is defined (NVRTC: incomplete type)", line)
    fields = []
    for decl in node.decls:
        if not isinstance(decl, c_ast.Decl) or decl.name is None or decl.bitsize is not None:
            raise UnsupportedSyntax(f"this member of struct {node.name}: the executor takes members that are "
                                    "numbers, vectors or structs (no bit fields, unions or functions)", line)
        member = translator.ctype(decl.type, line)
        if member.pointer or member.dims:
            raise UnsupportedSyntax(f"the member {decl.name} of struct {node.name} is a pointer or an array: the "
                                    "executor's structs hold numbers, vectors and structs; pass the pointer as a "
                                    "kernel parameter of its own", line)
        if decl.name in dict(fields):
            raise CudaCError(f"struct {node.name} has two members called {decl.name}", line)
        fields.append((decl.name, member))
    if not fields:
        raise UnsupportedSyntax(f"struct {node.name} has no members", line)
    return CType(f"struct {node.name}", fields=tuple(fields))


def layout(ctype: CType) -> tuple[int, int, list[int]]:
    """(sizeof, alignment, each member's offset) as C lays a struct out: each member at a multiple of its
    alignment, the whole padded to a multiple of the largest."""
    offsets, at, align = [], 0, 1
    for _, member in ctype.fields:
        size, alignment = _size_align(member)
        at = -(-at // alignment) * alignment
        offsets.append(at)
        at += size
        align = max(align, alignment)
    return -(-at // align) * align, align, offsets


def _size_align(ctype: CType) -> tuple[int, int]:
    if is_struct(ctype):
        size, align, _ = layout(ctype)
        return size, align
    if ctype.name in VECTORS:
        element, count = VECTORS[ctype.name]
        size = SIZES[element] * count
        return size, size if count in (2, 4) else SIZES[element]
    return SIZES[ctype.name], SIZES[ctype.name]


def member(ctype: CType, field: str, line: int | None) -> tuple[int, CType]:
    """Which member `field` is, and its type."""
    names = [name for name, _ in ctype.fields]
    if field not in names:
        raise CudaCError(f".{field}: {ctype.name} has members {', '.join('.' + n for n in names)}", line)
    k = names.index(field)
    return k, ctype.fields[k][1]


def path(translator: Any, node: c_ast.StructRef, line: int | None) -> tuple[Any, tuple[int, ...], CType] | None:
    """For s.a or s.in.x with s a struct variable: the variable, the members' positions, the member's type;
    None when the expression is not a member of a struct variable."""
    if node.type != ".":
        return None
    base = node.name
    if isinstance(base, c_ast.StructRef):
        found = path(translator, base, line)
        if found is None:
            return None
        var, where, ctype = found
    elif isinstance(base, c_ast.ID) and base.name not in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        var = translator.lookup(base.name, line)
        where, ctype = (), var.type
    else:
        return None
    if not value(ctype):
        return None
    k, mtype = member(ctype, node.field.name, line)
    return var, (*where, k), mtype


def read(translator: Any, node: c_ast.StructRef, line: int | None) -> tuple[str, CType] | None:
    """s.a (or a member of any struct expression, f().a); None where the base is not a struct."""
    found = path(translator, node, line)
    if found is not None:
        var, where, mtype = found
        code = var.py + "".join(f"[{k}]" for k in where)
        if var.unset:
            reader = "_srd" if isinstance(mtype, CType) and (value(mtype) or mtype.name in VECTORS) else "_rd"
            return f"{reader}(_c, {code}, {line}, {translator.mask})", mtype
        return code, mtype
    if node.type == "." and not isinstance(node.name, c_ast.ID) and value(translator.type_of(node.name)):
        code, ctype = translator.expr(node.name)
        k, mtype = member(ctype, node.field.name, line)
        return f"({code})[{k}]", mtype
    if node.type == "->":
        ctype = translator.type_of(node.name)
        if is_struct(ctype):
            refuse_in_memory(ctype, line)
    return None


def assign(translator: Any, target: c_ast.StructRef, rhs: str, line: int | None) -> str | None:
    """`s.a = value` (s.in.x = value) for a struct variable s; None where the target is not such a member."""
    found = path(translator, target, line)
    if found is None:
        return None
    var, where, _ = found
    return f"{var.py} = _sput({var.py}, {where!r}, {rhs}, {translator.mask})"


def scalar_only(ctype: CType, op: str, line: int | None) -> None:
    """A struct has no operators in C (a C++ operator would be a function the executor does not read)."""
    if value(ctype):
        raise CudaCError(f"{op} on a {ctype.name}: it has no operators; work on its members", line)


def unset(ctype: CType, name: str, line: int) -> str:
    """A struct variable declared without a value: each member's reads are checked."""
    parts = []
    for field, mtype in ctype.fields:
        if value(mtype):
            parts.append(unset(mtype, f"{name}.{field}", line))
        elif mtype.name in VECTORS:
            parts.append(vectors.unset(mtype, f"{name}.{field}", line))
        else:
            parts.append(f"_Unset({name + '.' + field!r}, {line})")
    return "(" + "".join(p + ", " for p in parts) + ")"


def initial(translator: Any, init: c_ast.InitList, ctype: CType, line: int | None) -> str:
    """Pair p = {1.0f, 2}; (nested braces for a member struct or vector; members left out are zero)."""
    if len(init.exprs) > len(ctype.fields):
        raise CudaCError(f"{len(init.exprs)} values for {ctype.name}, which has {len(ctype.fields)} members", line)
    parts = []
    for k, (_, mtype) in enumerate(ctype.fields):
        item = init.exprs[k] if k < len(init.exprs) else None
        if value(mtype):
            item = item if item is not None else c_ast.InitList([], init.coord)
            if not isinstance(item, c_ast.InitList):
                parts.append(translator.convert(item, mtype, line))
            else:
                parts.append(initial(translator, item, mtype, line))
        elif mtype.name in VECTORS:
            if isinstance(item, c_ast.InitList):
                raise UnsupportedSyntax("a vector member set with { ... }: use make_float4(...)", line)
            parts.append(translator.convert(item, mtype, line) if item is not None else
                         "(" + "0, " * VECTORS[mtype.name][1] + ")")
        else:
            parts.append(translator.convert(item, mtype, line) if item is not None else
                         translator.cast("0", CType("int"), mtype, line))
    return "(" + "".join(p + ", " for p in parts) + ")"


def argument(where: str, ctype: CType, arg: Any) -> tuple[Any, ...]:
    """A struct passed by value to a kernel, as CuPy passes it: a NumPy structured scalar (np.void) whose bytes
    the GPU reads with the struct's layout; its members' values."""
    size, _, offsets = layout(ctype)
    if not isinstance(arg, np.void) or arg.dtype.fields is None:
        raise TypeError(f"{where}: pass a NumPy structured scalar with the struct's layout, e.g. "
                        f"np.array(({', '.join('...' for _ in ctype.fields)}), dtype=np.dtype([...], align=True))[()] "
                        f"({size} bytes); got {type(arg).__name__}")
    if arg.dtype.itemsize != size:
        raise TypeError(f"{where}: the structured scalar has {arg.dtype.itemsize} bytes, but {ctype.name} has "
                        f"{size} (members at byte offsets {offsets}): build its dtype with align=True and the "
                        "members in the struct's order, or the GPU reads the members from the wrong bytes")
    raw = arg.tobytes()
    return _unpack(ctype, raw, 0)


def _unpack(ctype: CType, raw: bytes, at: int) -> tuple[Any, ...]:
    _, _, offsets = layout(ctype)
    values: list[Any] = []
    for (_, mtype), offset in zip(ctype.fields, offsets, strict=True):
        if value(mtype):
            values.append(_unpack(mtype, raw, at + offset))
        elif mtype.name in VECTORS:
            element, count = VECTORS[mtype.name]
            items = np.frombuffer(raw, DTYPES[element], count, at + offset)
            values.append(tuple(_scalar(x) for x in items))
        else:
            values.append(_scalar(np.frombuffer(raw, DTYPES[mtype.name], 1, at + offset)[0]))
    return tuple(values)


def _scalar(x: np.generic) -> Any:
    return int(x) if x.dtype.kind in "iub" else x
