"""cupy.ReductionKernel on the CPU executor: CuPy's user-defined reduction, run as CUDA C the executor checks.

    l2norm = cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    l2norm(x, axis=1)

As in CuPy: each element is mapped (map_expr, over the inputs by name), the mapped values are reduced two at a
time (reduce_expr, over a and b, starting from identity) along `axis` (every axis when None), and each result
is mapped to the outputs (post_map_expr, over the reduced value a). The generated kernel gives each output a
block: its threads reduce a stride of the elements each, then combine their values in shared memory. Beyond this
stand-in, and refused saying so: raw parameters (CuPy's _in_ind/_out_ind indexers) and a reduction without an
identity (identity=None).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..core.cupy_params import C_TYPES
from ..core.validate import flag
from .arguments import MAX_LAUNCH_THREADS as MAX_ELEMENTS
from .cupy_elementwise import ElementwiseKernel
from .program import Program
from .runtime import MAX_STEPS

#: The most threads a block reduces with, and the most threads a launch has in all (ElementwiseKernel's).
BLOCK_THREADS, LAUNCH_THREADS = 256, 128 * 1024
Parts = dict[str, range | tuple[range, ...]]


class ReductionKernel:
    """cupy.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name)."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
                 identity: str | None, name: str = "reduce_kernel", reduce_type: str | None = None,
                 reduce_dims: bool = True, preamble: str = "", options: tuple[str, ...] = ()) -> None:
        exprs = {"map_expr": map_expr, "reduce_expr": reduce_expr, "post_map_expr": post_map_expr,
                 "identity": identity}
        for what, text in exprs.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{what} must be a non-empty string of CUDA C, as in CuPy's l2norm example "
                                 "ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = sqrt(a)', '0', 'l2norm'); "
                                 f"got {text!r:.40}")
        self._kernel = ElementwiseKernel(in_params, out_params, post_map_expr, name, preamble=preamble)
        self.inputs, self.outputs, self.name = self._kernel.inputs, self._kernel.outputs, self._kernel.name
        raw = [p.name for p in self.inputs + self.outputs if p.raw]
        clash = [p.name for p in self.inputs + self.outputs if p.name in ("a", "b")]
        if raw or clash or not self.outputs:
            raise ValueError(f"{self.name}: " + (
                f"{', '.join(raw)} is raw; the CPU stand-in's ReductionKernel takes arrays and scalars, not raw "
                "parameters (use an ElementwiseKernel or RawKernel to index whole arrays)" if raw else
                f"{', '.join(clash)}: a and b are the reduce_expr's own names; rename the parameter" if clash else
                "out_params names no output; write one such as 'T y'"))
        placeholders = {p.type for p in self.inputs + self.outputs} - set(C_TYPES)
        known = {*C_TYPES, *C_TYPES.values(), *placeholders}
        if reduce_type is not None and reduce_type not in known:
            raise ValueError(f"{self.name}: reduce_type must be a C type (such as float or double), a dtype name "
                             f"(such as float64) or one of the parameters' type placeholders "
                             f"({', '.join(sorted(placeholders)) or 'none'}); got {reduce_type!r:.40}")
        self.in_params, self.out_params, self.identity = in_params, out_params, identity
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.reduce_type = self.outputs[0].type if reduce_type is None else reduce_type
        self.preamble, self.reduce_dims, self.options = preamble, flag("reduce_dims", reduce_dims), options
        self._programs: dict[str, tuple[Program, Parts]] = {}

    def __call__(self, *args: Any, out: Any = None, axis: int | tuple[int, ...] | None = None,
                 keepdims: bool = False, stream: Any = None) -> Any:
        """Reduce along `axis` (every axis when None); the output (a tuple of them if there are several)."""
        n_in, n_out = len(self.inputs), len(self.outputs)
        given = list(args[n_in:]) + ([] if out is None else [out])
        if len(args) not in (n_in, n_in + n_out) or (out is not None and (n_out != 1 or len(args) != n_in)):
            raise TypeError(f"{self.name} takes {n_in} input(s) ({self.in_params}), then optionally its {n_out} "
                            f"output(s) ({self.out_params}), or out= for a kernel of one output; got {len(args)} "
                            f"argument(s){' and out=' if out is not None else ''}")
        kernel, keepdims = self._kernel, flag("keepdims", keepdims)
        params = self.inputs + self.outputs[: len(given)]
        types = kernel._types(params, [*args[:n_in], *given])
        shape = kernel._shape(self.inputs, args, None) if any(isinstance(a, np.ndarray) for a in args) else ()
        if int(np.prod(shape)) > MAX_ELEMENTS:
            raise ValueError(f"{self.name}: {int(np.prod(shape)):,} elements; the CPU executor reduces at most "
                             f"{MAX_ELEMENTS:,} (it checks every access): use a smaller array here")
        order, out_shape, count = _layout(self.name, shape, axis, keepdims)
        moved = tuple(shape[d] for d in order)
        values = [kernel._input(p, np.broadcast_to(a, shape).transpose(order) if isinstance(a, np.ndarray) else a,
                                types, moved) for p, a in zip(self.inputs, args, strict=False)]
        outs = kernel._outputs(given, types, out_shape)
        self._reduce(types, values, outs, count)
        return tuple(outs) if n_out > 1 else outs[0]

    def _reduce(self, types: dict[str, np.dtype], values: list[Any], outs: list[np.ndarray], count: int) -> None:
        """One block per output (grid-stride over them), each reducing its `count` elements."""
        n = int(np.prod(outs[0].shape))
        if not n:
            return
        threads = min(BLOCK_THREADS, 1 << max(count - 1, 0).bit_length())
        source, parts = self._source(types, [not isinstance(v, np.ndarray) for v in values], threads)
        if source not in self._programs:
            self._programs[source] = (self._kernel._compile(source, parts), parts)
        program, parts = self._programs[source]
        grid = min(n, LAUNCH_THREADS // threads)
        rounds = (-(-n // grid)) * (-(-count // threads) + threads.bit_length())  # the loops' rounds, at least
        self._kernel._run(program, parts, (grid,), (threads,),
                          [*values, *(o.reshape(-1) for o in outs), np.int64(count), np.int64(n)],
                          max_steps=MAX_STEPS + 64 * rounds)  # a long reduction is not an endless loop

    def _source(self, types: dict[str, np.dtype], scalars: list[bool], threads: int) -> tuple[str, Parts]:
        """The whole kernel for the executor, and the lines of it that are each expression the learner wrote."""
        kernel = self._kernel
        reduce_c = C_TYPES[types[self.reduce_type].name] if self.reduce_type in types else C_TYPES.get(
            self.reduce_type, self.reduce_type)
        *head, signature = kernel._opening(types, scalars, ["long long _m", "long long _n"])
        lines = [*head, f"typedef {reduce_c} _type_reduce;", signature, f"__shared__ _type_reduce _s[{threads}];",
                 "for (long long _j = blockIdx.x; _j < _n; _j += gridDim.x) {", "_type_reduce a = (_type_reduce)("]
        identity = kernel._append(lines, self.identity, "")
        lines += [");", "_type_reduce b = a;", "for (long long _k = threadIdx.x; _k < _m; _k += blockDim.x) {",
                  *kernel._bindings(types, scalars, "_j * _m + _k"), "b = (_type_reduce)("]
        mapped = kernel._append(lines, self.map_expr, "")
        lines += [");", "a = ("]
        first = kernel._append(lines, self.reduce_expr, "")
        lines += [");", "}", "_s[threadIdx.x] = a;", "__syncthreads();",
                  "for (int _w = blockDim.x / 2; _w > 0; _w /= 2) {", "if (threadIdx.x < _w) {",
                  "a = _s[threadIdx.x];", "b = _s[threadIdx.x + _w];", "_s[threadIdx.x] = ("]
        second = kernel._append(lines, self.reduce_expr, "")
        lines += [");", "}", "__syncthreads();", "}", "if (threadIdx.x == 0) {", "a = _s[0];"]
        lines += [f"{kernel._c_type(types, p)} {p.name};" for p in self.outputs]
        lines += [f"const {kernel._c_type(types, p)} {p.name} = _in_{p.name};"  # scalars: seen by post_map_expr too
                  for p, scalar in zip(kernel.inputs, scalars, strict=True) if scalar and not p.raw]
        post = kernel._append(lines, self.post_map_expr)
        lines += [f"_out_{p.name}[_j] = {p.name};" for p in self.outputs]
        lines += ["}", "__syncthreads();", "}", "}"]
        parts: Parts = {"identity": identity, "map_expr": mapped, "reduce_expr": (first, second),
                        "post_map_expr": post}
        return "\n".join(lines) + "\n", parts


def _layout(name: str, shape: tuple[int, ...], axis: Any, keepdims: bool
            ) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """How a reduction of arrays of `shape` along `axis` runs: the axes in the order that puts the kept ones first
    (each output's elements then lie together), the output's shape, and how many elements each output reduces."""
    reduced = _axes(name, axis, len(shape))
    kept = [d for d in range(len(shape)) if d not in reduced]
    out_shape = tuple(1 if d in reduced else shape[d] for d in range(len(shape))) if keepdims else tuple(
        shape[d] for d in kept)
    return (*kept, *reduced), out_shape, int(np.prod([shape[d] for d in reduced]))


def _axes(name: str, axis: Any, ndim: int) -> list[int]:
    """The axes `axis` names (None: all), each from 0 to ndim - 1, in order; a ValueError saying what is accepted."""
    if axis is None:
        return list(range(ndim))
    many = axis if isinstance(axis, tuple) else (axis,)
    if not all(isinstance(a, Integral) and not isinstance(a, bool) and -ndim <= a < ndim for a in many):
        raise ValueError(f"{name}: axis must be None, an int or a tuple of ints from {-ndim} to {ndim - 1} (the "
                         f"arrays have {ndim} dimension(s)); got {axis!r:.40}")
    axes = sorted(int(a) % ndim for a in many)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axis {axis!r} names an axis twice")
    return axes
