"""cupy.ElementwiseKernel on the CPU executor: CuPy's user-defined elementwise kernel, generated as the CUDA C of a
grid-stride loop over the elements and run as CUDA C the executor checks (helpers.executor.cupy_reduction builds
its reductions on it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from ..core.cupy_params import C_TYPES, Param, parse_params
from ..core.validate import flag
from .arguments import MAX_BLOCK_THREADS
from .cupy_arrays import MAX_ELEMENTS, describe, empty
from .errors import KernelFault
from .front import CudaCError
from .program import Program
from .runtime import MAX_STEPS


class ElementwiseKernel:
    """cupy.ElementwiseKernel(in_params, out_params, operation, name): `operation` runs for every index i.

    As in CuPy: array arguments are broadcast together; a type placeholder (such as T) takes the dtype of the
    arrays passed for it (a Python int gives int64, a float float64); an input of a declared type gets arrays
    cast to it where NumPy casts safely within a kind ('same_kind'); outputs not passed are allocated; a raw
    parameter is the whole array, indexed by the operation itself (with i, the element's index, and _ind.size(),
    the number of elements: the non-raw arrays' broadcast size, or size= when every array is raw).
    """

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, **kwargs: Any) -> None:
        self.inputs = parse_params(in_params, "in_params")
        no_outputs = isinstance(out_params, str) and not out_params.strip()
        self.outputs = [] if no_outputs else parse_params(out_params, "out_params")
        if not isinstance(operation, str) or not operation.strip():
            raise ValueError("operation must be a non-empty string of CUDA C, e.g. 'y = 2 * x'")
        sides = (("in_params", self.inputs), ("out_params", self.outputs))
        reserved = [f"{p.name} (in {what})" for what, params in sides for p in params
                    if p.name in ("i", "n") or p.name.startswith("_")]
        if reserved:
            raise ValueError(f"{', '.join(reserved)}: the names i, n and names starting with _ are CuPy's own")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name, re.ASCII):
            raise ValueError(f"name must be the kernel's name, a C identifier such as 'relu'; got {name!r:.40}")
        if not isinstance(preamble, str):
            raise TypeError(f"preamble must be a string of CUDA C (or ''); got {describe(preamble)}")
        self.in_params, self.out_params, self.operation, self.name = in_params, out_params, operation, name
        self.preamble = preamble
        self._body = self._index_size(operation, "operation")
        self.no_return, self.return_tuple = flag("no_return", no_return), flag("return_tuple", return_tuple)
        self._programs: dict[str, tuple[Program, range]] = {}

    def __call__(self, *args: Any, size: int | None = None, block_size: int | None = None) -> Any:
        """Run the operation for every element; returns the output (a tuple of them if there are several)."""
        n_in, n_out = len(self.inputs), len(self.outputs)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"{self.name} takes {n_in} input(s) ({self.in_params}), then optionally its "
                            f"{n_out} output(s) ({self.out_params}); got {len(args)} argument(s)")
        params = self.inputs + self.outputs[: len(args) - n_in]
        types = self._types(params, args)
        shape = self._shape(params, args, size)
        values = [self._input(p, a, types, shape) for p, a in zip(self.inputs, args, strict=False)]
        outs = self._outputs(list(args[n_in:]), types, shape)
        source, operation = self._source(types, [not isinstance(v, np.ndarray) for v in values])
        if source not in self._programs:
            self._programs[source] = (self._compile(source, operation), operation)
        program, operation = self._programs[source]
        self._launch(program, operation, [*values, *(o.reshape(-1) for o in outs)], int(np.prod(shape)),
                     block_size)
        if self.no_return:
            return None
        return tuple(outs) if self.return_tuple or len(outs) > 1 else outs[0]

    # ------------------------------------------------------------------------ the steps of a call

    def _outputs(self, given: list[Any], types: dict[str, np.dtype], shape: tuple[int, ...]) -> list[np.ndarray]:
        """The outputs given, checked, and new arrays (garbage-filled, as on a GPU) for the rest."""
        outs = given + [empty(shape, types[p.type] if p.type in types else p.type) for p in self.outputs[len(given):]]
        for p, out in zip(self.outputs, outs, strict=True):
            if not isinstance(out, np.ndarray) or (not p.raw and out.shape != shape) or not out.flags.c_contiguous:
                raise ValueError(f"output {p.name} must be a contiguous array of shape {shape}; got {describe(out)}")
            if out.dtype != types.get(p.type, np.dtype(p.type) if p.type in C_TYPES else None):
                raise TypeError(f"{self.name}: output {p.name} is declared {p.type} but got an array of {out.dtype}")
        return outs

    def _launch(self, program: Program, operation: range, args: list[Any], count: int,
                block_size: int | None) -> None:
        """One grid-stride launch over `count` elements; a fault names the line of the learner's operation."""
        if count > MAX_ELEMENTS:
            raise ValueError(f"{self.name}: {count:,} elements; the CPU executor runs at most {MAX_ELEMENTS:,} (it "
                             "checks every access): use a smaller size here")
        threads = 128 if block_size is None else _block_size(block_size)
        if not count:
            return
        self._run(program, {"operation": operation}, (min(-(-count // threads), 1024),), (threads,),
                  [*args, np.int64(count)])

    def _run(self, program: Program, parts: dict[str, range | tuple[range, ...]], grid: tuple[int, ...],
             block: tuple[int, ...], args: list[Any], max_steps: int = MAX_STEPS) -> None:
        """Launch the generated kernel; a fault names the line of the learner's code (`parts`, see _lines)."""
        try:
            program.launch(self.name, grid, block, args, max_steps=max_steps)
        except KernelFault as fault:
            raise KernelFault(fault.kind, self._lines(str(fault), parts), thread=fault.thread,
                              block=fault.block, line=fault.line) from None

    def _types(self, params: list[Param], args: Sequence[Any]) -> dict[str, np.dtype]:
        """The dtype each type placeholder stands for: from the arrays first, then from the scalars."""
        types: dict[str, np.dtype] = {}
        for array_pass in (True, False):
            for p, a in zip(params, args, strict=False):
                if p.type in C_TYPES or p.type in types and not array_pass:
                    continue
                if isinstance(a, np.ndarray) != array_pass:
                    continue
                dtype = a.dtype if array_pass else _scalar_dtype(p, a)
                if p.type in types and types[p.type] != dtype:
                    raise TypeError(f"{self.name}: type {p.type} is {types[p.type]} from an earlier argument but "
                                    f"{dtype} for {p.name}; pass arrays of one dtype for {p.type}")
                types[p.type] = dtype
        missing = sorted({p.type for p in self.inputs + self.outputs if p.type not in C_TYPES} - set(types))
        if missing:
            raise TypeError(f"{self.name}: cannot tell which dtype {', '.join(missing)} is: pass an array for it "
                            "(e.g. the output)")
        for placeholder, dtype in types.items():
            if dtype.name not in C_TYPES:
                raise TypeError(f"{self.name}: {placeholder} would be {dtype}; accepted: {', '.join(C_TYPES)}")
        return types

    def _shape(self, params: list[Param], args: Sequence[Any], size: int | None) -> tuple[int, ...]:
        arrays = {p.name: a for p, a in zip(params, args, strict=False) if isinstance(a, np.ndarray) and not p.raw}
        if not arrays:
            if size is None:
                raise ValueError(f"{self.name}: with no array argument (only scalars and raw arrays), give the "
                                 "number of elements: size=n")
            if isinstance(size, bool) or not isinstance(size, Integral) or not 0 <= size <= MAX_ELEMENTS:
                raise ValueError(f"{self.name}: size must be a whole number of elements from 0 to {MAX_ELEMENTS:,} "
                                 f"(the CPU executor's limit), got {size!r:.40}")
            return (int(size),)
        if size is not None:
            raise ValueError(f"{self.name}: size= is for calls without array arguments; the arrays give the size")
        try:
            return tuple(np.broadcast_shapes(*(a.shape for a in arrays.values())))
        except ValueError:
            shapes = ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
            raise ValueError(f"{self.name}: the arrays' shapes ({shapes}) do not broadcast together") from None

    def _input(self, p: Param, a: Any, types: dict[str, np.dtype], shape: tuple[int, ...]) -> Any:
        want = types.get(p.type, np.dtype(p.type) if p.type in C_TYPES else None)
        if p.raw:
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{self.name}: {p.name} is raw, so it must be an array; got {describe(a)}")
            return np.ascontiguousarray(self._cast(p, a, want)).reshape(-1)
        if isinstance(a, np.ndarray):
            return np.ascontiguousarray(np.broadcast_to(self._cast(p, a, want), shape)).reshape(-1)
        if not isinstance(a, int | float | bool | np.generic):
            raise TypeError(f"{self.name}: {p.name} must be an array or a number; got {describe(a)}")
        try:
            return want.type(a)
        except (OverflowError, ValueError):  # 2**2000 in any type, 10**30 or NaN in an integer
            raise ValueError(f"{self.name}: {p.name} does not fit in {want}; got {describe(a)}") from None

    def _cast(self, p: Param, a: np.ndarray, want: np.dtype) -> np.ndarray:
        if a.dtype == want:
            return a
        if not np.can_cast(a.dtype, want, "same_kind"):
            raise TypeError(f"{self.name}: {p.name} is declared {want} but got an array of {a.dtype}, which does "
                            f"not cast safely: pass a.astype(np.{want})")
        return a.astype(want)

    def _source(self, types: dict[str, np.dtype], scalars: list[bool]) -> tuple[str, range]:
        """The whole kernel for the executor, CuPy's grid-stride loop over i with each parameter bound to its
        element, and the lines of it that are the operation."""
        lines = self._opening(types, scalars, ["long long _n"])
        if re.search(r"\b_ind_size\b", self._body):
            lines.append("const long long _ind_size = _n;")
        lines.append("for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < _n; "
                     "i += (long long)blockDim.x * gridDim.x) {")
        lines += self._bindings(types, scalars, "i")
        for p in self.outputs:
            lines.append(f"{self._c_type(types, p)}* {p.name} = _out_{p.name};" if p.raw else
                         f"{self._c_type(types, p)} {p.name} = _out_{p.name}[i];")
        operation = self._append(lines, self._body)
        lines += [f"_out_{p.name}[i] = {p.name};" for p in self.outputs if not p.raw]
        lines += ["}", "}"]
        return "\n".join(lines) + "\n", operation

    @staticmethod
    def _c_type(types: dict[str, np.dtype], p: Param) -> str:
        """The C type of parameter `p`: its dtype's, or the dtype its placeholder stands for in this call."""
        return C_TYPES[types[p.type].name if p.type in types else p.type]

    def _opening(self, types: dict[str, np.dtype], scalars: list[bool], extra: list[str]) -> list[str]:
        """The typedefs of the placeholders, the preamble, and the kernel's first line: its inputs (a value for a
        scalar, a pointer for an array), its outputs, then the `extra` parameters."""
        lines = [f"typedef {C_TYPES[d.name]} {t};" for t, d in types.items()]
        if self.preamble.strip():
            lines.append(self.preamble.rstrip())
        args = [f"const {self._c_type(types, p)}{'' if scalar else '*'} _in_{p.name}"
                for p, scalar in zip(self.inputs, scalars, strict=True)]
        args += [f"{self._c_type(types, p)}* _out_{p.name}" for p in self.outputs]
        lines.append(f'extern "C" __global__ void {self.name}({", ".join([*args, *extra])}) {{')
        return lines

    def _bindings(self, types: dict[str, np.dtype], scalars: list[bool], index: str) -> list[str]:
        """Each input bound to its name: a raw one to the whole array, an array's to its element `index`."""
        return [f"const {self._c_type(types, p)}* {p.name} = _in_{p.name};" if p.raw else
                f"const {self._c_type(types, p)} {p.name} = _in_{p.name}{'' if scalar else f'[{index}]'};"
                for p, scalar in zip(self.inputs, scalars, strict=True)]

    @staticmethod
    def _append(lines: list[str], code: str, end: str = ";") -> range:
        """Add the learner's `code` (then `end`) to `lines`; the line numbers it takes there."""
        first = len(lines) + 1
        lines += code.rstrip().split("\n")
        lines[-1] += end
        return range(first, len(lines) + 1)

    def _index_size(self, code: str, what: str) -> str:
        """`code` with CuPy's _ind.size() (the number of elements the kernel runs over) as a generated C
        variable; a ValueError for any other use of _ind, which this stand-in does not have."""
        code = re.sub(r"\b_ind\s*\.\s*size\s*\(\s*\)", "_ind_size", code)
        for number, line in enumerate(code.split("\n"), 1):
            found = re.search(r"\b_ind\b(\s*\.\s*\w+)?", line)
            if found:
                raise ValueError(f"{self.name}: line {number} of the {what} uses {found.group(0).strip()!r}; of "
                                 "CuPy's _ind the CPU stand-in has _ind.size() (the number of elements the kernel "
                                 "runs over), with i for this element's index: write e.g. x[_ind.size() - i - 1]")
        return code

    def _compile(self, source: str, operation: range | dict[str, range | tuple[range, ...]]) -> Program:
        parts = operation if isinstance(operation, dict) else {"operation": operation}
        try:
            return Program(source)
        except CudaCError as exc:
            raise type(exc)(self._lines(str(exc), parts)) from None

    def _lines(self, message: str, parts: dict[str, range | tuple[range, ...]]) -> str:
        """The generated kernel's line numbers told as lines of what the learner wrote: `parts` names the lines
        of each piece (the operation; a ReductionKernel's map_expr, reduce_expr, ...)."""
        def line(match: re.Match[str]) -> str:
            number = int(match.group(1))
            for part, spans in parts.items():
                for span in spans if isinstance(spans, tuple) else (spans,):
                    if number in span:
                        return f"line {number - span.start + 1} of the {part} of {self.name}"
            return f"line {number} of the kernel {self.name} builds around its {', '.join(parts)}"
        message = re.sub(r"line (\d+)", line, message).replace("_ind_size", "_ind.size()")
        return message.replace("_in_", "").replace("_out_", "")


def _block_size(block_size: Any) -> int:
    """`block_size` if it is a whole number of threads a block can hold; otherwise a ValueError saying so."""
    if isinstance(block_size, bool) or not isinstance(block_size, Integral) or not 1 <= block_size <= MAX_BLOCK_THREADS:
        raise ValueError(f"block_size must be a whole number of threads from 1 to {MAX_BLOCK_THREADS:,}, or None "
                         f"(128); got {block_size!r:.40}")
    return int(block_size)


def _scalar_dtype(p: Param, a: Any) -> np.dtype:
    if isinstance(a, np.generic):
        return a.dtype
    if isinstance(a, bool):
        return np.dtype(bool)
    if isinstance(a, int):
        return np.dtype(np.int64)
    if isinstance(a, float):
        return np.dtype(np.float64)
    raise TypeError(f"{p.name} must be an array or a number; got {describe(a)}")
