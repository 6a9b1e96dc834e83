"""A CUDA C source as one translation unit: its file-scope constants and __constant__ arrays, its functions
translated in order, and its templates, each instance translated when a call or a name expression asks for it
(`k<float, 128>`, as CuPy's RawModule(name_expressions=...) names them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pycparser import c_ast, c_parser

from .c_types import DTYPES, CType, is_int, type_name
from .cxx import TemplateParam, split_arguments
from .errors import CudaCError, UnsupportedSyntax
from .front import PRELUDE_TYPES, parse
from .scopes import Function, Var
from .translate import TOO_DEEP, Translator

#: The constant memory a kernel may use: 64 KB on every NVIDIA GPU (CUDA C++ Programming Guide, "Device Memory
#: Accesses", and the compute capabilities' table).
CONSTANT_BYTES = 64 * 1024


@dataclass
class Unit:
    """What the functions of one source share while they are translated, and what the source gives a launch."""

    functions: dict[str, Function] = field(default_factory=dict)
    typedefs: dict[str, CType] = field(default_factory=dict)
    globals: dict[str, Var] = field(default_factory=dict)
    constant_arrays: dict[str, np.ndarray] = field(default_factory=dict)  # __constant__ memory, by name
    templates: dict[str, tuple[c_ast.FuncDef, list[TemplateParam]]] = field(default_factory=dict)
    calls: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # placeholder -> (template, arguments)
    defaults: dict[str, dict[int, str]] = field(default_factory=dict)  # function -> its default arguments' text
    kernels: list[str] = field(default_factory=list)  # what a launch may name
    exported: set[str] = field(default_factory=set)
    syncwarp: bool = False  # whether any function calls __syncwarp()
    volatile_lines: set[int] = field(default_factory=set)  # lines that index an array through a volatile name
    wmma: bool = False  # whether any function makes a WMMA call
    fragment_elements: bool = False  # whether any function reads or writes a fragment's x[i]

    def instance(self, name: str, given: list[CType | int | None], line: int | None) -> Function:
        """The translated instance of template `name` for these arguments (translated once); an argument not given
        (or None: not deduced) takes its parameter's default."""
        node, params = self.templates[name]
        if len(given) > len(params):
            raise CudaCError(f"{name} takes {len(params)} template argument(s); got {len(given)}", line)
        arguments: list[CType | int] = []
        for param, value in zip(params, [*given, *[None] * (len(params) - len(given))], strict=True):
            if value is None and not param.default:
                wanted = sum(1 for p in params if not p.default)
                raise CudaCError(f"{name} takes {len(params)} template argument(s) ({wanted} without a default); "
                                 f"{param.name} has no default and is not given", line)
            if value is None:
                bound = {p.name: a for p, a in zip(params, arguments, strict=False)}
                value = self.template_arguments([param.default], Translator(self, False, bound), line)[0]
            arguments.append(value)
        for param, value in zip(params, arguments, strict=True):
            if (param.kind == "type") != isinstance(value, CType):
                want = "a type" if param.kind == "type" else "a whole number"
                raise CudaCError(f"{name}'s template parameter {param.name} is {want}; got {value}", line)
        key = f"{name}<{', '.join(str(a) for a in arguments)}>"
        if key not in self.functions:
            bound = {p.name: a for p, a in zip(params, arguments, strict=True)}
            kernel = "inline" in (node.decl.funcspec or [])
            fn = Translator(self, kernel, bound).function(node, kernel, key)
            self.functions[key] = fn
        return self.functions[key]

    def template_arguments(self, texts: list[str], translator: Translator, line: int | None) -> list[CType | int]:
        """Template arguments written as text (`float`, `T`, `BM * 2`), in `translator`'s scope."""
        values: list[CType | int] = []
        for text in texts:
            words = text.replace("*", " * ").split()
            if len(words) == 1 and words[0] in translator.typedefs:
                values.append(translator.typedefs[words[0]])
            elif type_name(words) is not None:
                values.append(CType(type_name(words) or ""))
            else:
                values.append(translator.constant(_expression(text, line), line, positive=False))
        return values

    def default_arguments(self, name: str, given: int, wanted: int, line: int | None) -> list[c_ast.Node]:
        """The default arguments of function `name` for its parameters from `given` on (as expressions at `line`)."""
        defaults = self.defaults.get(name.partition("<")[0], {})
        missing = [k for k in range(given, wanted) if k not in defaults]
        if missing:
            raise CudaCError(f"{name}() takes {wanted} argument(s); got {given}" +
                             (f" (parameter {missing[0] + 1} has no default)" if defaults else ""), line)
        return [_expression(defaults[k], line) for k in range(given, wanted)]


def _expression(text: str, line: int | None) -> c_ast.Node:
    """A template argument's text as an expression tree (its line set to `line`)."""
    try:
        tree = c_parser.CParser().parse(f"int __x = ({text});")
    except c_parser.ParseError:
        raise CudaCError(f"the template argument {text!r} is neither a type nor a constant", line) from None
    node = tree.ext[0].init

    def relined(tree: c_ast.Node) -> None:
        if tree.coord is not None:
            tree.coord.line = line or 0
        for _, child in tree.children():
            relined(child)
    relined(node)
    return node


def translate_unit(source: str, name_expressions: Sequence[str] = ()) -> Unit:
    """Every function of `source` translated, in order; each name expression's kernel too."""
    try:
        return _translate(source, name_expressions)
    except RecursionError:
        raise CudaCError(TOO_DEEP) from None


def _translate(source: str, name_expressions: Sequence[str]) -> Unit:
    tree, pre = parse(source)
    unit = Unit(calls=pre.lowered.calls, defaults=pre.lowered.defaults)
    skip = set(PRELUDE_TYPES) | pre.lowered.type_names
    for item in tree.ext:
        line = item.coord.line if item.coord else None
        if isinstance(item, c_ast.Typedef):
            if line != 1 or (item.name not in skip and not item.name.startswith(("__cg_", "__wmma_"))
                             and item.name not in ("half", "__half")):
                ctype = Translator(unit, False).ctype(item.type, line)
                if ctype.pointer or ctype.dims:
                    raise UnsupportedSyntax("a typedef of a pointer or an array", line)
                unit.typedefs[item.name] = ctype
        elif isinstance(item, c_ast.FuncDef):
            _function(unit, item, pre.kernels, pre.exported, pre.lowered.templates)
        elif isinstance(item, c_ast.Decl) and not isinstance(item.type, c_ast.FuncDecl):
            _file_scope(unit, item, line)
        elif not isinstance(item, c_ast.Decl | c_ast.Pragma):  # a prototype, a #pragma
            raise UnsupportedSyntax(f"{type(item).__name__} outside a function", line)
    unit.kernels = [k for k in pre.kernels if k in unit.functions]
    unit.exported = {k for k in pre.exported if k in unit.functions}
    for expression in name_expressions:
        _name_expression(unit, expression)
    if not pre.kernels:
        raise CudaCError("no kernel found: a kernel starts with extern \"C\" __global__ void name(...)")
    return unit


def _function(unit: Unit, item: c_ast.FuncDef, kernels: list[str], exported: set[str],
              templates: dict[str, list[TemplateParam]]) -> None:
    name = item.decl.name
    line = item.coord.line if item.coord else None
    if name in unit.functions or name in unit.templates:
        raise CudaCError(f"the function {name} is defined twice", line)
    if name in templates:
        if name in exported:
            raise CudaCError(f'the template {name} is declared extern "C" (NVRTC: a template cannot have C '
                             "linkage): drop extern \"C\" and name its instances with RawModule(..., "
                             f"name_expressions=['{name}<float>'])", line)
        unit.templates[name] = (item, templates[name])
        return
    unit.functions[name] = Translator(unit, name in kernels).function(item, name in kernels)


def _file_scope(unit: Unit, item: c_ast.Decl, line: int | None) -> None:
    """A file-scope `const`/`constexpr` number (a constant every function sees) or a __constant__ array."""
    translator = Translator(unit, False)
    ctype = translator.ctype(item.type, line)
    if "register" in (item.storage or []):
        _constant_array(unit, translator, item, ctype, line)
        return
    if "const" not in (item.quals or []) or ctype.pointer or ctype.dims or item.init is None:
        raise UnsupportedSyntax(f"the file-scope variable {item.name}: the executor takes file-scope constants "
                                "(const int N = 256;) and __constant__ arrays; pass anything else as a kernel "
                                "argument", line)
    code = translator.convert(item.init, ctype, line)
    value = translator.known(code) if is_int(ctype) else None
    if is_int(ctype) and value is None:
        raise CudaCError(f"the file-scope constant {item.name} must be set from numbers known when the kernel "
                         "compiles", line)
    unit.globals[item.name] = Var(str(value) if value is not None else code, ctype, const=True)


def _constant_array(unit: Unit, translator: Translator, item: c_ast.Decl, ctype: CType, line: int | None) -> None:
    """`__constant__ float w[16];`: memory every thread reads, that the host fills (RawModule.get_global)."""
    if len(ctype.dims) != 1 or ctype.name not in DTYPES:
        raise UnsupportedSyntax(f"the __constant__ variable {item.name}: the executor takes one-dimensional "
                                "__constant__ arrays of numbers (__constant__ float w[16];)", line)
    used = sum(a.nbytes for a in unit.constant_arrays.values())
    size = ctype.dims[0] * np.dtype(DTYPES[ctype.name]).itemsize
    if used + size > CONSTANT_BYTES:
        raise CudaCError(f"__constant__ {item.name} ({size:,} bytes, {used:,} already declared): a GPU has "
                         f"{CONSTANT_BYTES:,} bytes (64 KB) of constant memory", line)
    data = np.zeros(ctype.dims[0], DTYPES[ctype.name])
    if isinstance(item.init, c_ast.InitList):
        values = [translator.number(e, CType(ctype.name), line) for e in item.init.exprs]
        if len(values) > data.size:
            raise CudaCError(f"{len(values)} initial values for {item.name}[{data.size}]", line)
        data[:len(values)] = values
    elif item.init is not None:
        raise CudaCError(f"a __constant__ array is set with {{...}}: __constant__ {ctype.name} {item.name}"
                         f"[{data.size}] = {{1, 2, 3}};", line)
    unit.constant_arrays[item.name] = data
    unit.globals[item.name] = Var(f"__constant_{item.name}", CType(ctype.name, pointer=True), const=True)


def _name_expression(unit: Unit, expression: str) -> None:
    """A kernel a RawModule's name expression names: `k<float, 128>` (an instance) or `k` (any kernel)."""
    if not isinstance(expression, str):
        raise CudaCError(f"a name expression is a string such as 'k<float, 128>'; got {expression!r:.40}")
    name, _, rest = expression.partition("<")
    name = name.strip()
    if not rest:
        if name not in unit.kernels:
            raise CudaCError(f"the name expression {expression!r} names no kernel of this source")
        unit.exported.add(name)
        return
    if name not in unit.templates or not rest.rstrip().endswith(">"):
        raise CudaCError(f"the name expression {expression!r} names no template kernel of this source "
                         f"(its templates: {', '.join(unit.templates) or 'none'})")
    texts = split_arguments(rest.rstrip()[:-1])
    instance = unit.instance(name, unit.template_arguments(texts, Translator(unit, False), None), None)
    if not instance.kernel:
        raise CudaCError(f"{name} is a __device__ function, not a kernel: a name expression names a __global__ one")
    unit.functions[expression] = instance
    unit.kernels.append(expression)
    unit.exported.add(expression)
