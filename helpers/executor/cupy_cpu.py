"""CuPy's interface as the series uses it, run on the CPU by the CUDA C executor (helpers.executor.program).

Without a GPU, `cupy = h.cuda.cupy()` gives this module, so a chapter's lines run unchanged and are real CuPy
code on a GPU:

    kernel = cupy.RawKernel(source, "vector_add")
    kernel((blocks,), (threads,), (a, b, out, np.int32(n)))
    relu = cupy.ElementwiseKernel("float32 x", "float32 y", "y = x > 0 ? x : 0", "relu")
    cupy.cuda.get_current_stream().synchronize()

Arrays are NumPy arrays in this machine's memory; `cupy.empty` fills them with NaN (or -1), the way a GPU's
fresh memory holds garbage. A launch runs the grid's threads in lock step on NumPy vectors, checking every
access (bounds, races, barriers): a million-thread vector add takes about a second on a 2-core machine.
`synchronize()` has nothing to wait for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .cupy_arrays import MAX_ELEMENTS, asarray, asnumpy, empty, empty_like
from .cupy_elementwise import ElementwiseKernel
from .cupy_reduction import ReductionKernel
from .front import CudaCError
from .program import Program

#: The most seconds profiler.benchmark spends here, warm-up included, whatever it is asked for.
STAND_IN_SECONDS = 10.0

ndarray = np.ndarray
bool_, int32, int64, uint32, uint64, float32, float64 = (np.bool_, np.int32, np.int64, np.uint32, np.uint64,
                                                         np.float32, np.float64)
zeros, ones, full, arange = np.zeros, np.ones, np.full, np.arange


class RawKernel:
    """cupy.RawKernel(code, name): the function `name` of the CUDA C `code`, compiled at its first launch."""

    def __init__(self, code: str, name: str, options: tuple[str, ...] = ()) -> None:
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("RawKernel(code, name) takes the CUDA C source and the kernel's name, both strings")
        self.code, self.name, self.options = code, name, _options(options)
        self._program: Program | None = None

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], *,
                 shared_mem: int = 0) -> None:
        """Launch: `grid` blocks of `block` threads, as kernel<<<grid, block, shared_mem>>>(args...) in CUDA C."""
        if self._program is None:
            self._program = Program(self.code)
        _launch(self._program, self.name, grid, block, args, shared_mem)


def _launch(program: Program, name: str, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...],
            shared_mem: int) -> None:
    for what, dims in (("grid", grid), ("block", block)):
        if not isinstance(dims, tuple):
            raise TypeError(f"{what} must be a tuple such as (4,) or (8, 8), as CuPy wants; got {dims!r:.40}")
    program.launch(name, grid, block, args, shared_mem=shared_mem)


class _Function:
    """A kernel a RawModule gives (get_function): launched as a RawKernel is."""

    def __init__(self, program: Program, name: str) -> None:
        program.kernel(name)  # an unknown name fails here, as CuPy's get_function does
        self.program, self.name = program, name

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], *,
                 shared_mem: int = 0) -> None:
        _launch(self.program, self.name, grid, block, args, shared_mem)


def _options(options: Any) -> tuple[str, ...]:
    if isinstance(options, str) or not isinstance(options, tuple | list) or not all(
            isinstance(o, str) for o in options):
        raise TypeError(f"options must be a tuple of compiler option strings such as ('-std=c++17',); got "
                        f"{options!r:.40}")
    return tuple(options)


class RawModule:
    """cupy.RawModule(code=..., name_expressions=[...]): its kernels by name (get_function, templates by their
    name expressions, 'k<float, 128>') and its __constant__ arrays (get_global), compiled at the first use."""

    def __init__(self, code: str | None = None, *, path: str | None = None, options: tuple[str, ...] = (),
                 name_expressions: Sequence[str] | None = None, **_: Any) -> None:
        if path is not None:
            raise ValueError("RawModule(path=...) loads a compiled file; the CPU executor runs CUDA C source only: "
                             "pass code=open(path).read() of the .cu file instead")
        if not isinstance(code, str):
            raise TypeError(f"RawModule(code=...) takes the CUDA C source, a string; got {code!r:.40}")
        if name_expressions is not None and (not isinstance(name_expressions, list | tuple) or not all(
                isinstance(e, str) for e in name_expressions)):
            raise TypeError("name_expressions is a list of strings such as ['kernel<float, 128>']; got "
                            f"{name_expressions!r:.60}")
        self.code, self.options = code, _options(options)
        self.name_expressions = tuple(name_expressions or ())
        self._program: Program | None = None

    def _compiled(self) -> Program:
        if self._program is None:
            self._program = Program(self.code, self.name_expressions)
        return self._program

    def get_function(self, name: str) -> _Function:
        """The kernel `name` (extern "C"), or a template's instance by its name expression."""
        return _Function(self._compiled(), name)

    def get_global(self, name: str) -> np.ndarray:
        """The bytes of __constant__ array `name`, to wrap as CuPy does: cupy.ndarray((16,), cupy.float32, ptr)."""
        arrays = self._compiled().constant_arrays
        if name not in arrays:
            raise CudaCError(f"no __constant__ array called {name!r} in this module; it has: "
                             f"{', '.join(arrays) or 'none'}")
        return arrays[name].view(np.uint8)


class _Stream:
    def synchronize(self) -> None:
        """Nothing to wait for: every launch on the CPU executor has finished when it returns."""


class _Device:
    def __init__(self, device: int = 0) -> None:
        self.id = device

    def synchronize(self) -> None:
        """Nothing to wait for (see _Stream.synchronize)."""


class _Runtime:
    @staticmethod
    def deviceSynchronize() -> None:  # noqa: N802 - CuPy's name
        """Nothing to wait for (see _Stream.synchronize)."""

    @staticmethod
    def getDeviceCount() -> int:  # noqa: N802 - CuPy's name
        """No GPU: the CPU executor stands in for one."""
        return 0


class cuda:  # noqa: N801 - cupy.cuda, as CuPy spells it
    """The parts of cupy.cuda the series uses."""

    Device = _Device
    runtime = _Runtime

    @staticmethod
    def get_current_stream() -> _Stream:
        return _Stream()


class _PerfCaseResult:
    """What cupyx.profiler.benchmark returns, CPU times only: there is no GPU to time with CUDA events."""

    def __init__(self, name: str, cpu_times: np.ndarray, capped: bool = False) -> None:
        self.name, self.cpu_times, self.capped = name, cpu_times, capped
        self.gpu_times = np.zeros((0, cpu_times.size))

    def __str__(self) -> str:
        us = self.cpu_times * 1e6
        cap = (f" (stopped after {self.cpu_times.size:,} repeats: the stand-in times at most {STAND_IN_SECONDS:g} s)"
               if self.capped else "")
        return (f"{self.name:<20}:    CPU: {us.mean():>10.3f} us   +/- {us.std():.3f} (min: {us.min():.3f} / max: "
                f"{us.max():.3f}) us     GPU: none here (the CPU stand-in for CuPy times the CPU only){cap}")

    __repr__ = __str__


class profiler:  # noqa: N801 - cupyx.profiler, as CuPy spells it
    """cupyx.profiler.benchmark without a GPU: the same call, timing the CPU side of each call."""

    @staticmethod
    def benchmark(func: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None, *,
                  n_repeat: int = 10_000, name: str | None = None, n_warmup: int = 10,
                  max_duration: float = float("inf")) -> _PerfCaseResult:
        """n_warmup calls, then up to n_repeat timed ones (stopping after max_duration seconds), as CuPy's; on this
        CPU at most STAND_IN_SECONDS in all (CuPy's 10,000 default repeats of a kernel the executor runs would take
        hours), which the result then says."""
        if not callable(func) or not isinstance(args, tuple):
            raise TypeError("benchmark(func, args=(...)) takes a function and a tuple of its arguments, as "
                            "cupyx.profiler.benchmark does")
        for count, what in ((n_repeat, "n_repeat"), (n_warmup, "n_warmup")):
            if isinstance(count, bool) or not isinstance(count, int) or count < (1 if what == "n_repeat" else 0):
                raise ValueError(f"{what} must be a whole number ({'1' if what == 'n_repeat' else '0'} or more); "
                                 f"got {count!r:.40}")
        kwargs, started = kwargs or {}, time.perf_counter()
        for _ in range(n_warmup):
            func(*args, **kwargs)
            if time.perf_counter() - started >= STAND_IN_SECONDS:
                break
        times = []
        for _ in range(n_repeat):
            start = time.perf_counter()
            func(*args, **kwargs)
            times.append(time.perf_counter() - start)
            spent = time.perf_counter() - started
            if spent >= min(max_duration, STAND_IN_SECONDS) or len(times) == n_repeat:
                break
        capped = len(times) < n_repeat and spent >= STAND_IN_SECONDS and max_duration > STAND_IN_SECONDS
        return _PerfCaseResult(name or getattr(func, "__name__", "function"), np.array(times), capped)


class cupyx:  # noqa: N801 - CuPy's extras module, as CuPy spells it
    """cupyx without a GPU: the parts the series uses (h.cuda.cupyx() gives the real one on a GPU)."""

    profiler = profiler

    @staticmethod
    def empty_pinned(shape: int | Sequence[int], dtype: Any = float) -> np.ndarray:
        """On a GPU machine, page-locked (pinned) host memory, which the GPU's copy engine reads directly; here,
        host memory like any other, uninitialised as cupyx.empty_pinned's is."""
        return empty(shape, dtype)


#: CuPy's names this module gives, whichever module of the executor defines them.
__all__ = ["MAX_ELEMENTS", "ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel", "arange", "asarray",
           "asnumpy", "bool_", "cuda", "cupyx", "empty", "empty_like", "float32", "float64", "full", "int32", "int64",
           "ndarray", "ones", "profiler", "uint32", "uint64", "zeros"]
