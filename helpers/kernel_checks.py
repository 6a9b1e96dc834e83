"""Checkers for chapter 03's kernel exercises: one printed verdict, never an exception at the learner.

Every checker compiles the learner's CUDA C with NVRTC for the T4 and the H100 (a compile error is a ❌ with
NVRTC's message) and runs it through the CPU executor (helpers.cuda_sim) at several sizes that are not
multiples of the block size: a fault (out of bounds, a race, a barrier only part of a block reaches) is a ❌
with the first thread, element and line. On a GPU it then runs the kernel there too, at several shapes, each
array inside a NaN-poisoned guard region (a read outside an array then spoils the result, a write outside it
shows in the guard), synchronising before it looks. ✅ only when every run matches NumPy; what could not be
checked is said on a second line. A source that still holds its TODO is "not attempted".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import cuda_c, cuda_sim, nvrtc
from .backend import to_numpy
from .checks import Verdict
from .cuda import Elementwise, blocks_for, gpu_here
from .cuda_c import CudaCError
from .limits import TimeLimitExceeded, time_limit

SEED = 3
#: Seconds the CPU executor may take for one exercise's check (its step limit usually stops a runaway first).
EXECUTOR_SECONDS = 30.0
#: Poisoned elements before and after every array a GPU check hands to the learner's kernel.
GUARD = 64
#: What a run gives back: (where, run), run(kernel) -> (result, NumPy's answer).
Runs = list[tuple[str, Callable[[Any], tuple[Any, np.ndarray]]]]


def _say(passed: bool, attempted: bool, message: str) -> Verdict:
    print(message)
    return Verdict(passed, attempted, message)


def _not_source(title: str, source: Any) -> Verdict:
    return _say(False, True, f"❌ {title}: expected the kernel's CUDA C as a string (r\"\"\"...\"\"\"), got "
                             f"{type(source).__name__}")


def _empty(title: str) -> Verdict:
    """The ❌ for a source string with nothing in it."""
    return _say(False, True, f"❌ {title}: the source is empty: write the kernel's CUDA C between the "
                             'r""" and """ quotes')


def _untouched(title: str, what: str) -> Verdict:
    return _say(False, False, f"⏳ {title}: not attempted yet. Complete {what}, delete its TODO comment, run it, "
                              "then run this check again.")


def _compile_problem(title: str, compile_all: Callable[[], Any]) -> tuple[Verdict | None, bool]:
    """(a ❌ verdict if NVRTC rejects the source, else None; whether it was compiled at all)."""
    if not nvrtc.available():
        return None, False
    try:
        compile_all()
    except (nvrtc.CompileError, ValueError) as exc:  # NVRTC's message, or a source it was not given (empty)
        message = f"❌ {title}: NVRTC's compiler error (fix it, then run both cells again):\n{exc}"
        return _say(False, True, message), True
    return None, True


def _executor_only(title: str, compiled: bool, checked_here: str) -> Verdict:
    """✅ for a kernel the CPU executor ran right everywhere; what no CPU can check is said on a second line."""
    done = f"compiled for {' and '.join(nvrtc.TARGET_ARCHS)}" if compiled else ""
    lines = [f"✅ {title}: {checked_here}{done}".rstrip("; ") + "."]
    missing = ["how fast it runs (there is no GPU here)"]
    if not compiled:
        missing.append(f"NVIDIA's own compiler ({nvrtc.why()})")
    lines.append(f"   Not checked: {'; '.join(missing)}.")
    return _say(True, True, "\n".join(lines))


class _OutsideArrays(Exception):
    """A GPU run wrote into the poisoned guard around an array."""


def _run_all(title: str, build: Callable[[], Any], runs: Runs, on: str, rtol: float, atol: float) -> str | Verdict:
    """Build the kernel, then compare each run with NumPy. A ❌ Verdict at the first problem, else the runs' list.

    on: "on the CPU executor" or "on this GPU". On a GPU the executor is a bonus: CUDA C outside its subset
    skips it (returns why, starting with "not run") instead of failing the learner.
    """
    where = "compiling it"
    try:
        with time_limit(EXECUTOR_SECONDS, title) as limit:
            kernel = build()
            for where, run in runs:
                got, want = run(kernel)
                got = to_numpy(got)
                bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
                if bad.any():
                    first = tuple(int(i) for i in np.argwhere(bad)[0])
                    return _say(False, True, f"❌ {title}: {int(bad.sum())} of {want.size} values differ from "
                                             f"NumPy's ({where}, {on}); first at index {first}: got "
                                             f"{got[first]:.6g}, expected {want[first]:.6g}")
    except CudaCError as exc:  # outside the executor's subset (or no C at all): on a GPU, CuPy's compiler decides
        if on.endswith("GPU") or not gpu_here():
            return _say(False, True, f"❌ {title}: {exc} ({on})")
        return f"not run on the CPU executor ({exc})"
    except TimeLimitExceeded as exc:
        if exc.limit is not limit:
            raise
        return _say(False, True, f"❌ {title}: {on.removeprefix('on ')} took longer than {EXECUTOR_SECONDS:g} s: "
                                 "is there a loop that never ends?")
    except (cuda_sim.KernelFault, TypeError, ValueError, _OutsideArrays) as exc:
        return _say(False, True, f"❌ {title}: {exc} ({where}, {on})")
    except Exception as exc:  # noqa: BLE001 - whatever CuPy, the driver or the executor raised: a verdict
        if not on.endswith("GPU"):
            return _say(False, True, f"❌ {title}: the CPU executor could not run it ({where}): "
                                     f"{type(exc).__name__}: {exc}")
        sticky = "illegal" in str(exc).lower() or "launch failure" in str(exc).lower()
        return _say(False, True, f"❌ {title}: the GPU run failed ({where}): {type(exc).__name__}: {exc}"
                    + (". After an illegal memory access CUDA refuses every later call: restart the runtime before "
                       "running more GPU cells." if sticky else ""))
    return "; ".join(where for where, _ in runs)


def _gpu_kernel(source: str, name: str) -> Any:
    """cupy.RawKernel for `name`, once the source is known to export it (else a launch fails obscurely)."""
    import cupy

    kernels, exported = cuda_c.kernel_names(source)
    if name not in exported:
        why = 'it is not declared extern "C" (C++ renames it)' if name in kernels else \
            f"the source defines {', '.join(kernels) or 'no __global__ function'}"
        raise CudaCError(f"CuPy cannot find a kernel called {name}: {why}")
    return cupy.RawKernel(source, name)


def _guarded(host: np.ndarray) -> tuple[Any, Any]:
    """(buffer, view): a device copy of `host` with GUARD NaN (or -1) elements before and after it."""
    import cupy

    poison = np.nan if host.dtype.kind == "f" else -1
    buffer = cupy.full(host.size + 2 * GUARD, poison, dtype=host.dtype)
    view = buffer[GUARD:GUARD + host.size]
    view[...] = cupy.asarray(host.reshape(-1))
    return buffer, view.reshape(host.shape)


def _synchronized_guards(buffer: Any, size: int, name: str) -> None:
    """Wait for the GPU, then check that nothing was written into `buffer`'s guard regions."""
    import cupy

    cupy.cuda.get_current_stream().synchronize()
    host = to_numpy(buffer)
    guard = np.concatenate([host[:GUARD], host[GUARD + size:]])
    touched = int((~np.isnan(guard)).sum() if guard.dtype.kind == "f" else (guard != -1).sum())
    if touched:
        raise _OutsideArrays(f"your kernel wrote {touched} values outside {name} (past its end or before its "
                             "start): the bounds check is missing or wrong")


def _verdict(title: str, compiled: bool, gpu: str | None, cpu: str) -> Verdict:
    """✅ (or ⚠️ without NVRTC) with what ran where, and what was not checked."""
    if gpu is None:
        return _executor_only(title, compiled, "ran on the CPU executor and matches NumPy, in bounds with "
                                               f"no race ({cpu}); ")
    executor = cpu if cpu.startswith("not run") else f"on the CPU executor in bounds with no race ({cpu})"
    lines = [f"✅ {title}: ran on this GPU and matches NumPy ({gpu}), writing nothing outside its "
             f"arrays; {executor}."]
    if cpu.startswith("not run"):
        lines.append("   Not checked: races between threads (one GPU run rarely shows them): compute-sanitizer "
                     "--tool racecheck python your_script.py finds them.")
    else:
        lines.append("   In your own programs, compute-sanitizer --tool racecheck python your_script.py finds races "
                     "on a GPU.")
    return _say(True, True, "\n".join(lines))


# --------------------------------------------------------------------------------------------------------------


def check_elementwise(kernel: Any, reference: Callable[..., np.ndarray], inputs: Callable[[int], tuple[Any, ...]],
                      title: str, n: int = 1000) -> Verdict:
    """An ElementwiseKernel exercise (cupy.ElementwiseKernel, or h.cuda.Elementwise): compiled; run on the CPU
    executor and (on a GPU) by CuPy at 1, 257 and n elements of `inputs(n)`, against `reference`."""
    if kernel is ... or kernel is None:
        return _untouched(title, "the operation")
    try:
        kernel = Elementwise.of(kernel)  # cupy.ElementwiseKernel (CuPy's or the CPU stand-in's), or its parts
    except (TypeError, ValueError) as exc:
        return _say(False, True, f"❌ {title}: {exc}")
    if "TODO" in kernel.operation:
        return _untouched(title, "the operation")
    args = inputs(n)
    if len(kernel.inputs) != len(args) or len(kernel.outputs) != 1:
        return _say(False, True, f"❌ {title}: the kernel must take {len(args)} input(s) and give 1 output; yours "
                                 f"takes {len(kernel.inputs)} ({kernel.in_params!r}) and gives {len(kernel.outputs)} "
                                 f"({kernel.out_params!r})")
    failed, compiled = _compile_problem(title, kernel.compile)
    if failed is not None:
        return failed
    sizes = [size for size in (1, 257, n) if size <= n]

    def runs(to_device: Callable[[np.ndarray], Any]) -> Runs:
        def run(size: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
            def go(front: Any) -> tuple[Any, np.ndarray]:
                some = tuple(a[:size] if isinstance(a, np.ndarray) else a for a in args)
                got = front(*(to_device(a) if isinstance(a, np.ndarray) else a for a in some))
                if gpu_here():
                    import cupy

                    cupy.cuda.get_current_stream().synchronize()
                return got, reference(*some)
            return go
        return [(f"{size:,} element{'s' * (size > 1)}", run(size)) for size in sizes]

    from . import cupy_cpu

    cpu = _run_all(title, lambda: cupy_cpu.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation,
                                                             kernel.name, preamble=kernel.preamble),
                   runs(np.asarray), "on the CPU executor", 1e-5, 1e-6)
    if isinstance(cpu, Verdict):
        return cpu
    if not gpu_here():
        return _verdict(title, compiled, None, cpu)
    import cupy

    gpu = _run_all(title, kernel.on_gpu, runs(cupy.asarray), "on this GPU", 1e-5, 1e-6)
    return gpu if isinstance(gpu, Verdict) else _verdict(title, compiled, gpu, cpu)


def scale_reference(x: np.ndarray, factor: float) -> np.ndarray:
    """What the bounds-check exercise's kernel computes: out = factor * x."""
    return (np.float32(factor) * x).astype(np.float32)


def check_scale(source: Any, n: int = 1000, threads: int = 256) -> Verdict:
    """The bounds-check exercise: the CUDA C compiled, run on the CPU executor and (on a GPU) on the GPU, at
    n = 1, threads + 1 and n."""
    title = "scale with a bounds check"
    if source is ... or (isinstance(source, str) and "TODO" in source):
        return _untouched(title, "the kernel")
    if not isinstance(source, str):
        return _not_source(title, source)
    if not source.strip():
        return _empty(title)
    x = np.random.default_rng(SEED).standard_normal(n, dtype=np.float32)
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "scale.cu"))
    if failed is not None:
        return failed
    sizes = [size for size in (1, threads + 1, n) if size <= n]

    def on_cpu(size: int) -> Callable[[cuda_sim.Program], tuple[Any, np.ndarray]]:
        def run(program: cuda_sim.Program) -> tuple[Any, np.ndarray]:
            xs, outs = x[:size].copy(), np.full(size, np.nan, np.float32)
            program.launch("scale", (blocks_for(size, threads),), (threads,), (xs, outs, np.float32(2.5),
                                                                               np.int32(size)))
            return outs, scale_reference(xs, 2.5)
        return run

    def on_gpu(size: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def run(kernel: Any) -> tuple[Any, np.ndarray]:
            _, x_dev = _guarded(x[:size])
            out_buffer, out_dev = _guarded(np.full(size, np.nan, np.float32))
            kernel((blocks_for(size, threads),), (threads,), (x_dev, out_dev, np.float32(2.5), np.int32(size)))
            _synchronized_guards(out_buffer, size, "out")
            return out_dev, scale_reference(x[:size], 2.5)
        return run

    def where(size: int) -> str:
        return f"n = {size:,}, {blocks_for(size, threads)} block{'s' * (size > threads)} of {threads} threads"

    cpu = _run_all(title, lambda: cuda_sim.Program(source), [(where(size), on_cpu(size)) for size in sizes],
                   "on the CPU executor", 1e-5, 1e-6)
    if isinstance(cpu, Verdict):
        return cpu
    if not gpu_here():
        return _verdict(title, compiled, None, cpu)
    gpu = _run_all(title, lambda: _gpu_kernel(source, "scale"), [(where(size), on_gpu(size)) for size in sizes],
                   "on this GPU", 1e-5, 1e-6)
    return gpu if isinstance(gpu, Verdict) else _verdict(title, compiled, gpu, cpu)


#: Shapes (M, K, N) for the tiled-matmul check on the CPU executor: no side a multiple of 16, small enough to
#: take about a second each, and one where K spans three tiles.
CPU_SHAPES = [(33, 20, 17), (17, 35, 40)]


def check_tiled_matmul(source: Any, shape: tuple[int, int, int] = (100, 70, 90), tile: int = 16) -> Verdict:
    """The tiled-matmul exercise: (M x K) @ (K x N), no side a multiple of the tile, against NumPy: on the CPU
    executor at CPU_SHAPES, and on a GPU at `shape` and CPU_SHAPES."""
    title = "tiled matmul"
    if source is ... or (isinstance(source, str) and "TODO" in source):
        return _untouched(title, "the kernel's tile loads")
    if not isinstance(source, str):
        return _not_source(title, source)
    if not source.strip():
        return _empty(title)
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "matmul_tiled_rect.cu"))
    if failed is not None:
        return failed
    rng = np.random.default_rng(SEED)
    big = tuple(max(sizes) for sizes in zip(shape, *CPU_SHAPES, strict=True))
    a, b = rng.standard_normal(big[:2], dtype=np.float32), rng.standard_normal(big[1:], dtype=np.float32)

    def launch(kernel: Any, m: int, k: int, n: int, args: tuple[Any, ...]) -> None:
        kernel((blocks_for(n, tile), blocks_for(m, tile)), (tile, tile), (*args, np.int32(m), np.int32(k),
                                                                          np.int32(n)))

    def on_cpu(m: int, k: int, n: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def run(program: cuda_sim.Program) -> tuple[Any, np.ndarray]:
            am, bm, cm = a[:m, :k].copy(), b[:k, :n].copy(), np.full((m, n), np.nan, np.float32)
            launch(lambda g, t, args: program.launch("matmul_tiled_rect", g, t, args), m, k, n, (am, bm, cm))
            return cm, am @ bm
        return run

    def on_gpu(m: int, k: int, n: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def run(kernel: Any) -> tuple[Any, np.ndarray]:
            am, bm = a[:m, :k].copy(), b[:k, :n].copy()
            (_, a_dev), (_, b_dev) = _guarded(am), _guarded(bm)
            c_buffer, c_dev = _guarded(np.full((m, n), np.nan, np.float32))
            launch(kernel, m, k, n, (a_dev, b_dev, c_dev))
            _synchronized_guards(c_buffer, m * n, "C")
            return c_dev, am @ bm
        return run

    def where(m: int, k: int, n: int) -> str:
        return f"({m} x {k}) @ ({k} x {n})"

    small = [s for s in CPU_SHAPES if all(x <= y for x, y in zip(s, shape, strict=True))] or [shape]
    cpu = _run_all(title, lambda: cuda_sim.Program(source), [(where(*s), on_cpu(*s)) for s in small],
                   "on the CPU executor", 1e-4, 1e-4)
    if isinstance(cpu, Verdict):
        return cpu
    if not gpu_here():
        return _verdict(title, compiled, None, f"{cpu}, {tile} x {tile} tiles")
    gpu = _run_all(title, lambda: _gpu_kernel(source, "matmul_tiled_rect"),
                   [(where(*s), on_gpu(*s)) for s in [shape, *small]], "on this GPU", 1e-4, 1e-4)
    return gpu if isinstance(gpu, Verdict) else _verdict(title, compiled, f"{gpu}, {tile} x {tile} tiles", cpu)


def silu_reference(x: np.ndarray) -> np.ndarray:
    """SiLU (swish), the activation of the Elementwise exercise: x * sigmoid(x) = x / (1 + exp(-x))."""
    return (x / (1 + np.exp(-x))).astype(x.dtype)


def check_silu(kernel: Any, n: int = 1000) -> Verdict:
    """The SiLU exercise: an Elementwise with one float32 input and one float32 output."""
    rng = np.random.default_rng(SEED)
    return check_elementwise(kernel, silu_reference, lambda size: (4 * rng.standard_normal(size, dtype=np.float32),),
                             "silu", n)
