"""The work every chapter and the bench command time: matrix multiply and an elementwise op, in each style.

Python-loop versions are written plainly on purpose (they are what chapter 01 shows); the whole-array versions
(axpby, matmul) live in operations, which the timer's busy-machine judge reads too. Each workload knows its FLOP
and byte counts so a timing can be turned into GFLOP/s, GB/s and a point on the roofline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..core.backend import array_module, check_name, require_usable, to_backend
from ..core.validate import fits_in_memory, positive_int
from ..core.validate import seed as valid_seed
from .budget import timing_budget
from .operations import axpby, matmul
from .record import Timing
from .timer import benchmark

DTYPES = ("float32", "float64")


def matmul_loops(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """C = A @ B with three nested Python loops: n*n*n multiply-adds, one at a time."""
    n, k, m = len(a), len(b), len(b[0])
    c = [[0.0] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            total = 0.0
            for p in range(k):
                total += a[i][p] * b[p][j]
            c[i][j] = total
    return c


def axpby_loops(alpha: float, x: list[float], beta: float, y: list[float]) -> list[float]:
    """z = alpha*x + beta*y, one element at a time: 3 FLOPs per element, 3 numbers moved."""
    return [alpha * xi + beta * yi for xi, yi in zip(x, y, strict=True)]


def matmul_flops(n: int) -> int:
    """FLOPs of an n x n by n x n product: n*n outputs, each n multiplies and n adds."""
    return 2 * positive_int("n (matrix side)", n) ** 3


def matmul_bytes(n: int, itemsize: int) -> int:
    """Bytes an ideal n x n matmul must move: read A and B, write C once."""
    n = positive_int("n (matrix side)", n)
    return 3 * n * n * positive_int("itemsize (bytes per number)", itemsize)


def axpby_flops(n: int) -> int:
    """FLOPs of alpha*x + beta*y on n elements: two multiplies and one add each."""
    return 3 * positive_int("n (vector length)", n)


def axpby_bytes(n: int, itemsize: int) -> int:
    """Bytes of alpha*x + beta*y on n elements: read x and y, write z."""
    return 3 * positive_int("n (vector length)", n) * positive_int("itemsize (bytes per number)", itemsize)


#: Numbers each implementation of alpha*x + beta*y moves per element. NumPy and CuPy run it as three passes
#: (alpha*x and beta*y into temporaries, then their sum: 2 + 2 + 3); a fused loop (JAX's jit, one CUDA kernel,
#: Python's loop) reads x and y and writes z: 3, the count axpby_bytes gives.
AXPBY_NUMBERS = {"python": 3, "numpy": 7, "cupy": 7, "jax": 3}


def axpby_traffic(n: int, itemsize: int, backend: str) -> int:
    """Bytes alpha*x + beta*y really moves on n elements as `backend` runs it (AXPBY_NUMBERS per element)."""
    return AXPBY_NUMBERS[check_name(backend)] * positive_int("n (vector length)", n) * positive_int(
        "itemsize (bytes per number)", itemsize)


def traffic(op: str, n: int, itemsize: int, backend: str) -> tuple[int, str]:
    """(bytes `op` moves at size n as `backend` runs it, which count that is): what measure() judges GB/s by."""
    if get(op).name == "matmul":
        return matmul_bytes(n, itemsize), "bytes: A and B read, C written, once"
    numbers = AXPBY_NUMBERS[check_name(backend)]
    how = "3 passes" if numbers == 7 else "fused"
    return axpby_traffic(n, itemsize, backend), f"bytes: {numbers} numbers per element ({how})"


@dataclass(frozen=True)
class Workload:
    """An operation the helpers can build inputs for, run in any style, and count FLOPs and bytes of."""

    name: str
    description: str
    flops: Callable[[int], int]
    bytes: Callable[[int, int], int]
    loops: Callable[..., Any]
    vectorised: Callable[..., Any]
    size_meaning: str  # what n means for this op


WORKLOADS: dict[str, Workload] = {
    "matmul": Workload("matmul", "C = A @ B, n x n matrices", matmul_flops, matmul_bytes, matmul_loops, matmul,
                       "matrix side n"),
    "axpby": Workload("axpby", "z = 2x + 3y, n elements", axpby_flops, axpby_bytes, axpby_loops, axpby,
                      "vector length n"),
}


def get(name: str) -> Workload:
    """The workload called `name`; a ValueError listing the accepted names otherwise."""
    if not isinstance(name, str) or name not in WORKLOADS:
        raise ValueError(f"unknown operation {name!r}; accepted: {', '.join(WORKLOADS)}")
    return WORKLOADS[name]


#: Memory one number takes in Python loops: a float object (24 bytes) and the list's pointer to it (8).
PYTHON_FLOAT_BYTES = 32


def bytes_per_element(backend: str, dtype: str) -> int:
    """Memory per element of n (or n x n) an op holds at its largest: two inputs and the result in `dtype`; for
    Python loops, two float64 arrays made into three lists of Python floats."""
    return 3 * PYTHON_FLOAT_BYTES + 2 * 8 if backend == "python" else 3 * np.dtype(dtype).itemsize


def make_inputs(op: str, n: int, dtype: str = "float32", backend: str = "numpy", seed: int = 0) -> tuple[Any, ...]:
    """Random inputs of size n for `op`, already on `backend` ('python' gives nested lists of floats)."""
    work = get(op)
    check_name(backend)
    n = positive_int(f"n ({work.size_meaning})", n)
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; accepted: {', '.join(DTYPES)}")
    shape = (n, n) if op == "matmul" else (n,)
    fits_in_memory(math.prod(shape) * bytes_per_element(backend, dtype), f"{op} at n = {n:,} in {dtype}")
    require_usable(backend)
    rng = np.random.default_rng(valid_seed(seed))
    arrays = [rng.standard_normal(shape, dtype=dtype) for _ in range(2)]  # no float64 copy first: memory is tight
    moved = [to_backend(x, backend) for x in arrays]
    return tuple(moved) if op == "matmul" else (2.0, moved[0], 3.0, moved[1])


def runner(op: str, backend: str) -> Callable[..., Any]:
    """The function that does `op` in `backend`'s style: Python loops for 'python', whole arrays otherwise.

    The JAX version is jit-compiled, as JAX code is meant to run; it is made once, so JAX compiles once per
    shape and dtype however often it is measured.
    """
    get(op)
    check_name(backend)
    return _runner(op, backend)


@cache
def _runner(op: str, backend: str) -> Callable[..., Any]:
    work = get(op)
    if backend == "python":
        return work.loops
    array_module(backend)  # raises, with the reason and the fix, if this backend cannot run here
    if backend == "jax":
        import jax

        return jax.jit(work.vectorised)
    return work.vectorised


@contextmanager
def precision(backend: str, dtype: str) -> Iterator[None]:
    """JAX computes in 32 bits unless told otherwise: switch on its 64-bit mode while a float64 case runs."""
    if backend != "jax" or dtype != "float64":
        yield
        return
    import jax

    x64 = getattr(jax, "enable_x64", None)  # JAX >= 0.8; older releases keep it in jax.experimental
    if x64 is None:
        from jax.experimental import enable_x64 as x64
    with x64():
        yield


def measure(op: str, backend: str, n: int, dtype: str = "float32", budget: float | None = None,
            **options: Any) -> Timing:
    """Time `op` at size n on `backend`: inputs made on the device first, FLOPs and bytes counted.

    Python loops always work in float64 (Python's float). `options` go to `benchmark` (label, max_time, ...).
    """
    work = get(op)
    dtype = "float64" if backend == "python" else dtype
    options.setdefault("label", f"{op} {backend}")
    budget = timing_budget() if budget is None else budget
    options.setdefault("max_time", max(10.0, 3 * budget))
    nbytes, counted = traffic(op, n, np.dtype(dtype).itemsize, backend)
    with precision(backend, dtype):
        args = make_inputs(op, n, dtype, backend)
        timing = benchmark(runner(op, backend), *args, backend=backend, flops=work.flops(n), bytes=nbytes, n=n,
                           budget=budget, **options)
    timing.extra["bytes_counted"] = counted
    return timing
