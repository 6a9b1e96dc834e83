"""CuPy itself, with RawKernel and RawModule launches checked first, as the CPU executor checks them.

On a GPU, `cupy = h.cuda.cupy()` gives this: every name is CuPy's own (`cupy.asarray`, `cupy.ElementwiseKernel`,
`cupy.cuda`, ...), except that a launch of a `RawKernel`, or of a function a `RawModule` gives, whose arguments
the kernel would misread is refused with the
same message the CPU executor gives (a Python int where the kernel takes an int, an array of the wrong dtype, a
block over 1024 threads): CuPy passes the first two on, and the GPU reads wrong numbers without an error.

The check is Python (20-30 µs a launch), so it runs once per kernel and launch signature (grid, block, and each
argument's kind, dtype and layout), and never while a timer is timing repeated calls (timing.in_timed_region):
a GPU timing measures the GPU, not the check. The first call of a benchmark checks what it launches.

A `ReductionKernel`'s first call with each signature (each argument's dtype and shape, axis, keepdims) also runs on
the CPU executor, on host copies, so a fault the GPU would not report is refused with the executor's message.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from .. import executor
from ..executor import cupy_reduction
from ..measuring import timing


def signature(grid: Any, block: Any, args: Any) -> tuple[Any, ...]:
    """What check_launch judges a launch by: the shape of the launch and each argument's type, dtype and layout
    (values apart: a launch with other data but the same signature passes or fails alike)."""

    return grid, block, tuple(_kind(arg) for arg in args) if isinstance(args, tuple) else ("not a tuple", type(args))


def _kind(arg: Any, shape: bool = False) -> tuple[Any, ...]:
    """An argument's type, dtype, number of dimensions (or, with `shape`, its shape) and contiguity."""
    if hasattr(arg, "dtype") and hasattr(arg, "shape"):
        flags = getattr(arg, "flags", None)
        return (type(arg), str(arg.dtype), tuple(arg.shape) if shape else len(arg.shape),
                getattr(flags, "c_contiguous", None))
    return (type(arg),)


class RawKernel:
    """cupy.RawKernel(code, name), or a RawModule's function: each new launch signature checked by
    helpers.executor.check_launch first."""

    def __init__(self, kernel: Any, code: str, name: str, name_expressions: tuple[str, ...] = ()) -> None:
        self._kernel = kernel
        self._code, self._name, self._expressions = code, name, name_expressions
        self._checked: set[tuple[Any, ...]] = set()

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], **kwargs: Any) -> Any:
        if not timing.in_timed_region():
            try:
                key = signature(grid, block, args)
                hash(key)
            except TypeError:  # something unhashable in the launch: check it every time, as it cannot be remembered
                key = None
            if key is None or key not in self._checked:
                executor.check_launch(self._code, self._name, grid, block, args, self._expressions)
                if key is not None:
                    self._checked.add(key)
        return self._kernel(grid, block, args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._kernel, attribute)


class RawModule:
    """cupy.RawModule(code=...): its get_function(name) launches are checked as a RawKernel's are."""

    def __init__(self, real: Any, *args: Any, **kwargs: Any) -> None:
        self._module = real.RawModule(*args, **kwargs)
        self._code = kwargs.get("code", args[0] if args else None)
        expressions = kwargs.get("name_expressions") or ()
        self._expressions = tuple(expressions) if isinstance(expressions, list | tuple) else ()

    def get_function(self, name: str) -> RawKernel | Any:
        function = self._module.get_function(name)
        if not isinstance(self._code, str):  # a module loaded from a file (path=...): no source to check
            return function
        return RawKernel(function, self._code, name, self._expressions)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._module, attribute)


class ReductionKernel:
    """cupy.ReductionKernel(...): each new call signature run first by the CPU executor's ReductionKernel on host
    copies, raising a KernelFault (a read outside an array, an integer division by zero) there. What the stand-in
    cannot build or run (raw parameters, a dtype it lacks, more elements than it runs, C++ its translator lacks)
    goes to CuPy unchecked: CuPy and its compiler judge it, as they do without this wrapper."""

    def __init__(self, real: Any, *args: Any, **kwargs: Any) -> None:
        self._kernel = real.ReductionKernel(*args, **kwargs)
        try:
            self._on_cpu: cupy_reduction.ReductionKernel | None = cupy_reduction.ReductionKernel(*args, **kwargs)
        except (TypeError, ValueError):  # beyond the stand-in (raw parameters, float16, ...): CuPy judges it
            self._on_cpu = None
        self._checked: set[tuple[Any, ...]] = set()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """CuPy's call (args, out=, axis=, keepdims=, stream=), its first of each signature checked first."""
        if self._on_cpu is not None and not timing.in_timed_region():
            key = self._signature(args, kwargs)
            if key is None or key not in self._checked:
                self._check(self._on_cpu, args, kwargs)
                if key is not None:
                    self._checked.add(key)
        return self._kernel(*args, **kwargs)

    @staticmethod
    def _signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
        """Each argument's type, dtype and shape, then axis and keepdims; None if something cannot be hashed."""
        axis = kwargs.get("axis")
        axis = tuple(axis) if isinstance(axis, list) else axis  # CuPy takes any sequence
        key = (tuple(_kind(a, shape=True) for a in (*args, kwargs.get("out"))), axis, kwargs.get("keepdims"))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    @staticmethod
    def _check(on_cpu: cupy_reduction.ReductionKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Run the call on the CPU executor on host copies: a KernelFault is raised; anything the stand-in refuses
        (its arguments, its limits, C++ it lacks) is left for CuPy to judge."""
        def host(arg: Any) -> Any:
            return arg.get() if hasattr(arg, "dtype") and hasattr(arg, "get") else arg

        arrays = [a for a in (*args, kwargs.get("out")) if hasattr(a, "dtype") and hasattr(a, "shape")]
        if any(type(a) is np.ndarray for a in arrays) or sum(int(np.prod(a.shape)) for a in arrays) > \
                cupy_reduction.MAX_ELEMENTS:  # CuPy refuses NumPy arrays itself; a huge one is not copied back
            return
        wanted = {k: host(v) for k, v in kwargs.items() if k in ("out", "axis", "keepdims")}
        try:
            on_cpu(*map(host, args), **wanted)
        except executor.KernelFault as fault:
            if fault.kind != "step limit":  # a long loop is not a fault the GPU would hide
                raise
        except Exception:  # noqa: BLE001 - beyond the stand-in (its arguments, limits, C++): CuPy judges it
            return

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._kernel, attribute)


class CheckedCupy(types.ModuleType):
    """The cupy module, RawKernel, RawModule and ReductionKernel apart."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__("cupy", real.__doc__)
        self._real = real

    def RawKernel(self, code: str, name: str, *args: Any, **kwargs: Any) -> RawKernel:  # noqa: N802 - CuPy's name
        return RawKernel(self._real.RawKernel(code, name, *args, **kwargs), code, name)

    def RawModule(self, *args: Any, **kwargs: Any) -> RawModule:  # noqa: N802 - CuPy's name
        return RawModule(self._real, *args, **kwargs)

    def ReductionKernel(self, *args: Any, **kwargs: Any) -> ReductionKernel:  # noqa: N802 - CuPy's name
        """cupy.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, ...)."""
        return ReductionKernel(self._real, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)
