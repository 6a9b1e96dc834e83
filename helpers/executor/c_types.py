"""C's scalar types for the CPU executor: their names, NumPy dtypes, C's conversion rules, and the conversions
the translated code calls (each works on one value or on a whole vector of lanes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# ------------------------------------------------------------------------------------------------ C types


@dataclass(frozen=True)
class CType:
    """A scalar C type (`name` as in C), a pointer to one (`pointer`), or an array of one (`dims`)."""

    name: str
    pointer: bool = False
    dims: tuple[int, ...] = ()
    shared: bool = False
    const: bool = False  # a pointer to const (const float* x): nothing is written through it
    fields: tuple[tuple[str, CType], ...] = ()  # a struct's members, in order (its name is "struct NAME")

    @property
    def scalar(self) -> CType:
        return CType(self.name, fields=self.fields)

    def __str__(self) -> str:
        return self.name + ("*" if self.pointer else "") + "".join(f"[{d}]" for d in self.dims)


#: Integer types: bits and signedness. `long` is 64 bits, as on Linux and macOS (LP64), where CUDA runs.
INTEGERS = {"bool": (1, False), "char": (8, True), "unsigned char": (8, False), "short": (16, True),
            "unsigned short": (16, False), "int": (32, True), "unsigned int": (32, False),
            "long long": (64, True), "unsigned long long": (64, False)}
FLOATS = {"half": 16, "float": 32, "double": 64}
#: The NumPy dtype of each scalar type: what an array argument for a pointer to it must hold.
DTYPES = {"bool": "bool", "char": "int8", "unsigned char": "uint8", "short": "int16", "unsigned short": "uint16",
          "int": "int32", "unsigned int": "uint32", "long long": "int64",
          "unsigned long long": "uint64", "half": "float16", "float": "float32", "double": "float64"}
_RANK = {"bool": 0, "char": 0, "unsigned char": 0, "short": 0, "unsigned short": 0, "int": 1, "unsigned int": 1,
         "long long": 2, "unsigned long long": 2}
#: Byte sizes (sizeof) of the scalar types.
SIZES = {**{name: max(bits, 8) // 8 for name, (bits, _) in INTEGERS.items()}, "half": 2, "float": 4, "double": 8}
#: CUDA's vector types: their element type and how many (members x, y, z, w). A float4 is 16 bytes.
VECTORS = {f"{base}{n}": (c_name, n) for base, c_name in (("float", "float"), ("double", "double"), ("int", "int"),
                                                          ("uint", "unsigned int")) for n in (2, 3, 4)}
#: Type names that stand for another: size_t, and bool as C spells it.
ALIASES = {"size_t": "unsigned long long", "bool": "bool", "_Bool": "bool", "__half": "half", "half": "half"}
INT, UINT, FLOAT, DOUBLE, BOOL = (CType(n) for n in ("int", "unsigned int", "float", "double", "bool"))


def type_name(words: list[str]) -> str | None:
    """Our name for a C type spelled with these words ('unsigned long int' -> 'unsigned long long'), or None."""
    if len(words) == 1 and (words[0] in ("float", "double", "void") or words[0] in ALIASES):
        return ALIASES.get(words[0], words[0])
    if set(words) - {"unsigned", "signed", "long", "int", "short", "char"} or (
            "unsigned" in words and "signed" in words):
        return None
    size = "char" if "char" in words else "short" if "short" in words else "long long" if "long" in words else "int"
    if size in ("char", "short") and ({"long", "int"} & set(words) if size == "char" else "long" in words):
        return None
    return ("unsigned " if "unsigned" in words else "") + size


def size_of(name: str) -> int:
    """sizeof of a scalar or vector type (a float4 is 16 bytes; a float3, 12)."""
    if name in VECTORS:
        element, count = VECTORS[name]
        return SIZES[element] * count
    return SIZES[name]


def is_float(t: CType) -> bool:
    return not t.pointer and not t.dims and t.name in FLOATS


def is_int(t: CType) -> bool:
    return not t.pointer and not t.dims and t.name in INTEGERS


def arithmetic(a: CType, b: CType) -> CType:
    """C's usual arithmetic conversions: the type both operands of a binary operator are converted to."""
    if "double" in (a.name, b.name):
        return DOUBLE
    if a.name == b.name == "half":  # cuda_fp16.h's operators on two halves: a half, rounded to float16
        return a
    if "half" in (a.name, b.name):  # a half with anything else converts to float first
        return FLOAT
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
    """Integer promotion: bool, char and short become int in arithmetic."""
    return INT if not t.pointer and not t.dims and _RANK.get(t.name) == 0 else t


def _integer(bits: int, signed: bool) -> Callable[[Any], Any]:
    """C's conversion to an integer type, on one value or on every lane at once: whole numbers wrap around;
    floats truncate toward zero, NaN gives 0 and values out of range saturate (as the GPU's cvt.rzi does)."""
    mask, half = (1 << bits) - 1, 1 << (bits - 1)
    low, high = (-half, half - 1) if signed else (0, mask)
    dtype = np.dtype(f"{'i' if signed else 'u'}{bits // 8}")

    def convert(x: Any) -> Any:
        if type(x) is int:
            return ((x + half) & mask) - half if signed else x & mask
        if isinstance(x, np.ndarray):
            if x.dtype == dtype:
                return x
            if x.dtype.kind == "f":
                wide = np.trunc(x.astype(np.float64))  # in float64, where the bounds are exact enough to saturate
                return np.where(np.isnan(wide), 0, np.clip(wide, low, high)).astype(dtype)
            return x.astype(dtype)
        if isinstance(x, np.integer | bool | np.bool_):
            return convert(int(x))
        value = float(x)
        if value != value:
            return 0
        return int(min(max(value, low), high))
    return convert


def _to_bool(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return (x != 0).astype(np.int32)
    return 1 if x else 0


def _float(dtype: type) -> Callable[[Any], Any]:
    """C's conversion to float or double, on one value or every lane."""
    def convert(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return x if x.dtype == dtype else x.astype(dtype)
        return dtype(x)
    return convert


#: The conversion to each scalar type, by the name the translated code calls: _to_int, _to_float, ...
CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "_to_bool": _to_bool, "_to_char": _integer(8, True), "_to_unsigned_char": _integer(8, False),
    "_to_short": _integer(16, True), "_to_unsigned_short": _integer(16, False), "_to_int": _integer(32, True),
    "_to_unsigned_int": _integer(32, False),
    "_to_long_long": _integer(64, True), "_to_unsigned_long_long": _integer(64, False),
    "_to_float": _float(np.float32), "_to_double": _float(np.float64), "_f32": np.float32, "_f64": np.float64,
    "_to_half": _float(np.float16),
}


# ------------------------------------------------------------------------------------------------ errors
