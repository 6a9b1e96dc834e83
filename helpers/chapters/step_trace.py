"""The work of one training step, operation by operation: `mlp.numpy_step` run once at small probe sizes on
arrays that log what they do, then scaled to any size, so the counts are of the code that runs (the NumPy code is
the CuPy code), not of a formula for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..core.validate import positive_int
from . import mlp


@dataclass(frozen=True)
class Kernel:
    """One array operation of the hand-written step: on a GPU, one kernel launch (or one cuBLAS call)."""

    name: str  # the NumPy ufunc ('matmul', 'add', 'add.reduce', ...), 'eye' or 'gather'
    shapes: str  # the shapes it works on, e.g. '(32, 64) @ (64, 64)'
    flops: int  # floating-point operations (a matmul: 2mkn; elementwise: one per output; reduction: one per input)
    bytes: int  # bytes read and written, if every input is read and the output written once
    written: int = 0  # bytes of the array it makes (its output)

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class StepWork:
    """Every array operation one training step does, in order, as traced from `mlp.numpy_step`."""

    kernels: tuple[Kernel, ...]
    #: Bytes of device memory one step needs at most: parameters and a batch, and every array the step makes (an
    #: upper bound: a real run frees temporaries as it goes).
    memory: int = 0
    #: Bytes of the parameters (weights and biases), which the SGD update reads and writes once.
    parameters: int = 0

    @property
    def launches(self) -> int:
        """Array operations per step: kernel launches, if each ran as one GPU kernel (as in CuPy)."""
        return len(self.kernels)

    @property
    def flops(self) -> int:
        """FLOPs of one step."""
        return sum(k.flops for k in self.kernels)

    @property
    def bytes(self) -> int:
        """Bytes one step moves, operation by operation (nothing is fused)."""
        return sum(k.bytes for k in self.kernels)

    @property
    def matmuls(self) -> list[Kernel]:
        """The matrix products: nearly all the FLOPs."""
        return [k for k in self.kernels if k.name == "matmul"]


@dataclass(frozen=True)
class _Op:
    """One array operation as traced: its kind and the shapes and item sizes it reads and writes."""

    name: str
    inputs: tuple[tuple[tuple[int, ...], int], ...]  # (shape, itemsize) of each array read
    output: tuple[tuple[int, ...], int]  # (shape, itemsize) written
    reduce: bool = False

    def kernel(self, size: Callable[[int], int]) -> Kernel:
        """This operation at other sizes: `size` maps each traced dimension to the real one."""
        shapes = [tuple(size(d) for d in shape) for shape, _ in self.inputs]
        out = tuple(size(d) for d in self.output[0])
        count = math.prod
        if self.name == "matmul":
            (m, k), n = shapes[0], shapes[1][1]
            flops, text = 2 * m * k * n, f"{shapes[0]} @ {shapes[1]}"
        else:
            flops = (count(shapes[0]) if self.reduce else count(out)) if self.name not in ("eye", "gather") else 0
            text = " , ".join(str(shape) for shape in shapes) if self.name != "eye" else str(out)
            if self.name == "gather":
                text = f"{shapes[0]}[{shapes[1]}]"
        moved = sum(count(shape) * item for shape, (_, item) in zip(shapes, self.inputs, strict=True))
        if self.name == "gather":  # reads only the gathered elements and the index, not the whole array
            moved = count(shapes[1]) * self.inputs[1][1]
        return Kernel(self.name, text, flops, moved + count(out) * self.output[1], count(out) * self.output[1])


class _Traced(np.ndarray):
    """A NumPy array that logs every operation done with it (ufuncs, reductions, gathers) as an _Op."""

    log: list[_Op] = []

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [x.view(np.ndarray) if isinstance(x, _Traced) else x for x in inputs]
        out = np.asarray(getattr(ufunc, method)(*plain, **kwargs))
        arrays = [x for x in plain if isinstance(x, np.ndarray)]
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        _Traced.log.append(_Op(name, tuple((x.shape, x.itemsize) for x in arrays), (out.shape, out.itemsize),
                               method == "reduce"))
        return out.view(_Traced)

    def __getitem__(self, key: Any) -> Any:
        out = np.asarray(self.view(np.ndarray)[key.view(np.ndarray) if isinstance(key, _Traced) else key])
        if isinstance(key, np.ndarray):  # a gather: a kernel on a GPU (basic slicing is a free view)
            _Traced.log.append(_Op("gather", ((self.shape, self.itemsize), (key.shape, key.itemsize)),
                                   (out.shape, out.itemsize)))
        return out.view(_Traced)


def _traced_eye(n: int, dtype: Any = None) -> _Traced:
    out = np.eye(n, dtype=dtype)
    _Traced.log.append(_Op("eye", (), (out.shape, out.itemsize)))
    return out.view(_Traced)


#: The sizes the step is traced at: small, and distinct from each other and from 1, so that every dimension of
#: every traced shape says which size it is (batch, n_in, hidden, n_out).
_PROBE = {"batch": 11, "n_in": 13, "hidden": 17, "n_out": 19}


@lru_cache(maxsize=1)
def _traced_ops() -> tuple[_Op, ...]:
    """Every operation of `mlp.numpy_step`, run once at the probe sizes on arrays that log what they do."""
    params = {k: v.view(_Traced) for k, v in mlp.init_params(_PROBE["n_in"], _PROBE["hidden"],
                                                              _PROBE["n_out"]).items()}
    x = np.zeros((_PROBE["batch"], _PROBE["n_in"]), np.float32).view(_Traced)
    y = (np.arange(_PROBE["batch"], dtype=np.int32) % _PROBE["n_out"]).view(_Traced)
    xp = SimpleNamespace(log=np.log, exp=np.exp, eye=_traced_eye)  # the module functions the step calls
    _Traced.log = []
    try:
        mlp.numpy_step(params, x, y, 0.1, xp)
        return tuple(_Traced.log)
    finally:
        _Traced.log = []


def trace_step(batch: int, n_in: int = 64, hidden: int = 64, n_out: int = 10) -> StepWork:
    """Every array operation of `mlp.numpy_step` at these sizes, with its FLOPs and bytes, without computing.

    The step really runs once, at small probe sizes, on arrays that log each operation: this counts the code
    that runs (the NumPy code is the CuPy code), not a formula for it. Each logged shape is then scaled to the
    sizes asked for, so any size is counted in microseconds.
    """
    sizes = {name: positive_int(name, value) for name, value in
             (("batch", batch), ("n_in", n_in), ("hidden", hidden), ("n_out", n_out))}
    scale = {probe: sizes[name] for name, probe in _PROBE.items()} | {1: 1}

    def size(dim: int) -> int:
        if dim not in scale:
            raise RuntimeError(f"trace_step: a traced shape has a dimension {dim} that is not one of the probe sizes "
                               f"{_PROBE}: the step computes a size of its own; count it here")
        return scale[dim]

    kernels = tuple(op.kernel(size) for op in _traced_ops())
    b, i, h, o = sizes["batch"], sizes["n_in"], sizes["hidden"], sizes["n_out"]
    parameters = 4 * (i * h + h + h * o + o)  # float32
    given = parameters + 4 * b * i + 4 * b  # the parameters, float32 x and int32 labels
    return StepWork(kernels, given + sum(k.written for k in kernels), parameters)
