"""CuPy itself, with every RawKernel launch checked first, as the CPU executor checks it.

On a GPU, `cupy = h.cuda.cupy()` gives this: every name is CuPy's own (`cupy.asarray`, `cupy.ElementwiseKernel`,
`cupy.cuda`, ...), except that a `RawKernel` launch whose arguments the kernel would misread is refused with the
same message the CPU executor gives (a Python int where the kernel takes an int, an array of the wrong dtype, a
block over 1024 threads): CuPy passes the first two on, and the GPU reads wrong numbers without an error.
"""

from __future__ import annotations

import types
from typing import Any

from . import cuda_sim


class RawKernel:
    """cupy.RawKernel(code, name), its launch checked by helpers.cuda_sim.check_launch before CuPy's own."""

    def __init__(self, real: Any, code: str, name: str, *args: Any, **kwargs: Any) -> None:
        self._kernel = real.RawKernel(code, name, *args, **kwargs)
        self._code, self._name = code, name

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], **kwargs: Any) -> Any:
        cuda_sim.check_launch(self._code, self._name, grid, block, args)
        return self._kernel(grid, block, args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._kernel, attribute)


class CheckedCupy(types.ModuleType):
    """The cupy module, RawKernel apart."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__("cupy", real.__doc__)
        self._real = real

    def RawKernel(self, code: str, name: str, *args: Any, **kwargs: Any) -> RawKernel:  # noqa: N802 - CuPy's name
        return RawKernel(self._real, code, name, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)
