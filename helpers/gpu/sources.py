"""Chapter 03's CUDA C as text: the kernel files, showing a source, NVRTC's report on it, and an ElementwiseKernel's
snippets made whole (Elementwise).

Nothing here runs a kernel: helpers.gpu.cuda launches them (and re-exports these names, so a chapter types
h.cuda.show, h.cuda.compile_report and h.cuda.Elementwise). Every `Elementwise(...)` with literal arguments and
every string holding `__global__` in a notebook is compiled by tests/test_cuda_sources.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..core.cupy_params import C_TYPES, NAME, Param, parse_params
from ..core.project import KERNELS
from . import nvrtc

# --------------------------------------------------------------------------------------------------------------
# Sources


def kernel_files() -> list[str]:
    """The .cu files shipped in helpers/kernels/."""
    return sorted(p.name for p in KERNELS.glob("*.cu"))


def kernel_source(file: str) -> str:
    """The CUDA C in helpers/kernels/`file` (e.g. 'vector_add.cu'); a clear error naming the files otherwise."""
    if not isinstance(file, str) or not file.endswith(".cu"):
        raise FileNotFoundError(f"no kernel file {file!r:.60}; the files are {', '.join(kernel_files())}")
    return _kernel_text(file)


@cache
def _kernel_text(file: str) -> str:
    """A kernel file's text, read once: a launch timed call by call must not read a file each call (on the H200 of
    2026-11-28, gpu-report's Mandelbrot call spent about 150 µs a call on a file read and a memory check)."""
    if not (KERNELS / file).is_file():
        raise FileNotFoundError(f"no kernel file {file!r:.60}; the files are {', '.join(kernel_files())}")
    return (KERNELS / file).read_text(encoding="utf-8")


def show(source_or_file: str) -> Any:
    """A CUDA C source (or a .cu file of helpers/kernels/) as a Markdown code block: what runs is what you read."""
    if not isinstance(source_or_file, str):
        raise TypeError(f"show() takes CUDA C source or a file name such as 'vector_add.cu'; "
                        f"got {type(source_or_file).__name__}")
    text = kernel_source(source_or_file) if source_or_file.endswith(".cu") else source_or_file
    block = f"```cuda\n{text.strip()}\n```"
    try:
        from IPython.display import Markdown
    except ImportError:
        return block
    return Markdown(block)


# --------------------------------------------------------------------------------------------------------------
# Compiling without a GPU


def _archs(archs: str | Sequence[str]) -> tuple[str, ...]:
    """('sm_75',) for 'sm_75': one architecture may be given as a plain string."""
    if isinstance(archs, str):
        return (archs,)
    if not isinstance(archs, Sequence) or not archs or not all(isinstance(a, str) for a in archs):
        raise ValueError(f"archs must be an architecture such as 'sm_75' or a list of them, got {archs!r:.40}")
    return tuple(archs)


def compile_report(source: str, name: str, archs: str | Sequence[str] = nvrtc.TARGET_ARCHS) -> list[nvrtc.Compiled]:
    """Compile `source` with NVRTC for each of `archs` and print one line per result; [] when NVRTC is missing.

    A compile error is raised (CompileError, with NVRTC's log): in a notebook, that is the message to read.
    Without NVRTC it says so: why and how to get it the first time in a session, a short line after that.
    """
    archs = _archs(archs)
    if not nvrtc.available():
        print(f"{name}: not compiled. {nvrtc.missing_note()}")
        return []
    done = [nvrtc.compile_source(source, arch, name) for arch in archs]
    print(f"{name}: compiled by NVRTC {nvrtc.version()} for " +
          ", ".join(f"{c.arch} ({c.cubin_bytes:,} bytes of machine code)" for c in done))
    for c in done:
        if c.log.strip():
            print(nvrtc.readable_log(c.log))
    return done


# --------------------------------------------------------------------------------------------------------------
# ElementwiseKernel snippets, made into whole kernels

@dataclass(frozen=True)
class Elementwise:
    """A CuPy ElementwiseKernel, kept as its parts so it can be compiled without a GPU and run on one.

    in_params / out_params: 'float32 x, float32 y' (CuPy's syntax); operation: the CUDA C run for every index
    `i`, with each parameter already bound to its element; name: the kernel's name.
    """

    in_params: str
    out_params: str
    operation: str
    name: str = "kernel"
    preamble: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.operation, str) or not self.operation.strip():
            raise ValueError("operation must be a non-empty string of CUDA C, e.g. 'y = 2 * x'")
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(f"name must be a C identifier such as 'saxpy'; got {self.name!r}")
        clash = {p.name for p in self.inputs} & {p.name for p in self.outputs}
        if clash:
            raise ValueError(f"{', '.join(sorted(clash))} is both an input and an output; give them different names")

    @property
    def inputs(self) -> list[Param]:
        """The input parameters, parsed."""
        return parse_params(self.in_params, "in_params")

    @property
    def outputs(self) -> list[Param]:
        """The output parameters, parsed."""
        if isinstance(self.out_params, str) and not self.out_params.strip():
            return []
        return parse_params(self.out_params, "out_params")

    def placeholders(self) -> list[str]:
        """Type placeholders (such as T) the parameters use: CuPy infers them from the arrays passed."""
        return sorted({p.type for p in self.inputs + self.outputs if p.type not in C_TYPES})

    def source(self, types: dict[str, str] | None = None) -> str:
        """The whole CUDA C kernel the snippet becomes, as CuPy builds it: a grid-stride loop over `i`.

        types binds each placeholder to a dtype name (default float32 for all). Errors in the operation are
        reported by NVRTC at its own line numbers, in a file named '<name> (operation)'. One difference from
        CuPy's own kernel: a raw parameter is a plain pointer here (CuPy's CArray also has .size() and
        multi-dimensional indexing), and CuPy's indexer `_ind` has only _ind.size(), the number of elements.
        """
        bound = self._bound(types)

        def c_type(param: Param) -> str:
            return C_TYPES[param.type] if param.type in C_TYPES else param.type

        lines = [f"// The whole kernel CuPy's ElementwiseKernel makes of '{self.name}' (as helpers.gpu.cuda builds it)"]
        lines += [f"typedef {C_TYPES[dtype]} {placeholder};" for placeholder, dtype in bound.items()]
        if self.preamble.strip():
            lines += [f'#line 1 "{self.name} (preamble)"', self.preamble.rstrip()]
            so_far = sum(line.count("\n") + 1 for line in lines)
            lines.append(f'#line {so_far + 2} "{self.name}.cu"')  # back to this file's own line numbers
        args = [f"const {c_type(p)}* _in_{p.name}" for p in self.inputs]
        args += [f"{c_type(p)}* _out_{p.name}" for p in self.outputs]
        lines.append(f'extern "C" __global__ void {self.name}({", ".join([*args, "long long _n"])}) {{')
        if re.search(r"(?<!\w)_ind(?!\w)", self.operation):  # CuPy's indexer: here only its size()
            lines.append("    const struct { long long n; __device__ long long size() const { return n; } } "
                         "_ind = {_n};")
        lines.append("    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < _n;"
                     " i += (long long)blockDim.x * gridDim.x) {")
        for p in self.inputs:
            lines.append(f"        const {c_type(p)}* {p.name} = _in_{p.name};" if p.raw else
                         f"        const {c_type(p)} {p.name} = _in_{p.name}[i];")
        for p in self.outputs:
            lines.append(f"        {c_type(p)}* {p.name} = _out_{p.name};" if p.raw else
                         f"        {c_type(p)}& {p.name} = _out_{p.name}[i];")
        lines += [f'#line 1 "{self.name} (operation)"', self.operation.rstrip(), ";"]
        lines += ["    }", "}"]
        return "\n".join(lines) + "\n"

    def _bound(self, types: dict[str, str] | None) -> dict[str, str]:
        """Each type placeholder's dtype name: `types`' or float32, checked."""
        stray = sorted(set(types or {}) - set(self.placeholders()))
        if stray:
            raise ValueError(f"{', '.join(stray)} is not a type placeholder of {self.name!r}; its placeholders: "
                             f"{', '.join(self.placeholders()) or 'none (every parameter has a dtype)'}")
        bound = {t: "float32" for t in self.placeholders()} | dict(types or {})
        for placeholder, dtype in bound.items():
            if dtype not in C_TYPES:
                raise ValueError(f"type {placeholder} bound to {dtype!r}; accepted: {', '.join(C_TYPES)}")
        return bound

    @classmethod
    def of(cls, kernel: Any) -> Elementwise:
        """The four parts of an ElementwiseKernel: CuPy's own (its parsed parameters), the CPU stand-in's, or an
        Elementwise (returned as it is), so one kernel object can be compiled with NVRTC and checked anywhere."""
        if isinstance(kernel, cls):
            return kernel
        missing = [a for a in ("in_params", "out_params", "operation", "name") if not hasattr(kernel, a)]
        if missing:
            raise TypeError(f"expected an ElementwiseKernel (cupy.ElementwiseKernel(in_params, out_params, operation, "
                            f"name)); got {type(kernel).__name__}")

        def text(params: Any) -> str:
            if isinstance(params, str):
                return params
            # CuPy's ParameterInfo: name, raw, dtype (None for a type placeholder, whose name is then ctype; a
            # NumPy type such as numpy.float32 before CuPy 14.1, an np.dtype from then on)
            return ", ".join(f"{'raw ' if p.raw else ''}{np.dtype(p.dtype).name if p.dtype is not None else p.ctype} "
                             f"{p.name}" for p in params)
        return cls(text(kernel.in_params), text(kernel.out_params), kernel.operation, kernel.name,
                   getattr(kernel, "preamble", "") or "")

    def compile(self, archs: str | Sequence[str] = nvrtc.TARGET_ARCHS, types: dict[str, str] | None = None
                ) -> list[nvrtc.Compiled]:
        """Compile the whole kernel with NVRTC for each of `archs`; CompileError points into the operation."""
        return [nvrtc.compile_source(self.source(types), arch, f"{self.name}.cu") for arch in _archs(archs)]

    def on_gpu(self) -> Any:
        """The cupy.ElementwiseKernel itself (GPU only): CuPy builds and compiles its own version of source()."""
        import cupy

        return cupy.ElementwiseKernel(self.in_params, self.out_params, self.operation, self.name,
                                      preamble=self.preamble)
