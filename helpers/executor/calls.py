"""Calls to lock-step Python: the learner's __device__ functions and template instances, the math library, CUDA's
intrinsics (fast math, bits, fused multiply-add), atomics, printf and assert, and the libraries of CUDA's headers
(cooperative groups, WMMA and cuda_fp16.h, the cache-hinted loads), each checked as NVRTC checks it.
"""

from __future__ import annotations

from pycparser import c_ast

from . import groups, structs, vectors, warp, wmma
from .c_types import DOUBLE, DTYPES, FLOAT, INT, UINT, VECTORS, CType, arithmetic, is_float, is_int, promote
from .errors import CudaCError, UnsupportedSyntax
from .expressions import Expressions, node_name, type_id
from .scopes import Function

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
#: Loads and stores with a cache hint (__ldg: through the read-only cache): on the executor, a plain *p and *p = v.
HINTED_LOADS = ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv")
HINTED_STORES = ("__stwb", "__stcg", "__stcs", "__stwt")


class Calls(Expressions):
    """The calls of one function: `call(node, line)` is (Python source, C type) of a function call."""

    def call(self, node: c_ast.FuncCall, line: int | None) -> tuple[str, CType]:
        name = node_name(node.name)
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
            return f"_to_{type_id(t.name)}(_mul24({a}, {b}, {name == '__mul24'}))", t
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
