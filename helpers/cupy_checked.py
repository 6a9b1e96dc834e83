"""CuPy itself, with RawKernel and RawModule launches checked first, as the CPU executor checks them.

On a GPU, `cupy = h.cuda.cupy()` gives this: every name is CuPy's own (`cupy.asarray`, `cupy.ElementwiseKernel`,
`cupy.cuda`, ...), except that a launch of a `RawKernel`, or of a function a `RawModule` gives, whose arguments
the kernel would misread is refused with the
same message the CPU executor gives (a Python int where the kernel takes an int, an array of the wrong dtype, a
block over 1024 threads): CuPy passes the first two on, and the GPU reads wrong numbers without an error.

The check is Python (20-30 µs a launch), so it runs once per kernel and launch signature (grid, block, and each
argument's kind, dtype and layout), and never while a timer is timing repeated calls (timing.in_timed_region):
a GPU timing measures the GPU, not the check. The first call of a benchmark checks what it launches.
"""

from __future__ import annotations

import types
from typing import Any

from . import executor, timing


def signature(grid: Any, block: Any, args: Any) -> tuple[Any, ...]:
    """What check_launch judges a launch by: the shape of the launch and each argument's type, dtype and layout
    (values apart: a launch with other data but the same signature passes or fails alike)."""

    def kind(arg: Any) -> tuple[Any, ...]:
        if hasattr(arg, "dtype") and hasattr(arg, "shape"):
            flags = getattr(arg, "flags", None)
            return type(arg), str(arg.dtype), len(arg.shape), getattr(flags, "c_contiguous", None)
        return (type(arg),)

    return grid, block, tuple(kind(arg) for arg in args) if isinstance(args, tuple) else ("not a tuple", type(args))


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


class CheckedCupy(types.ModuleType):
    """The cupy module, RawKernel and RawModule apart."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__("cupy", real.__doc__)
        self._real = real

    def RawKernel(self, code: str, name: str, *args: Any, **kwargs: Any) -> RawKernel:  # noqa: N802 - CuPy's name
        return RawKernel(self._real.RawKernel(code, name, *args, **kwargs), code, name)

    def RawModule(self, *args: Any, **kwargs: Any) -> RawModule:  # noqa: N802 - CuPy's name
        return RawModule(self._real, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)
