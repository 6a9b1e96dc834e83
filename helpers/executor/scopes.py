"""What the translation of one function keeps: its variables in scopes, the Python lines it emits, and the records
it makes of each function (`Function`) and variable (`Var`). `Scopes` is the base of the executor's translator
(helpers.executor.translate), which builds on it in layers: expressions, calls, then statements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .c_types import INT, CType
from .errors import CudaCError, UnsupportedSyntax

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
    const: set[str] = field(default_factory=set)  # pointer parameters to const: the kernel only reads them
    py_name: str = ""  # the Python function it becomes


@dataclass
class Var:
    """A variable of the translated function: its Python name, its C type, and how it is read and written."""

    py: str
    type: CType
    unset: bool = False  # declared without a value: reads are checked
    cell: bool = False  # a __shared__ scalar, or a local whose address is taken (&x): an array of one element
    const: bool = False  # a template argument or a file-scope constant: never assigned


@dataclass
class Loop:
    """What a break or continue in the innermost loop updates: the lanes that left it, and those that continue."""

    exits: str
    continues: str | None  # None in a do-while, where continue is not supported


#: The mask arguments of the runtime's calls at statement level: the active lanes and the frame's live ones.
MASK = "_m, _b"


class Scopes:
    """The state of one function's translation: the scopes of its variables (file-scope constants and a template
    instance's `bound` arguments outermost), the Python lines emitted so far, the loops it is in, the counters
    that name its masks and temporaries, and the FLOPs of the statement being translated."""

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
        self.loops: list[Loop] = []
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
