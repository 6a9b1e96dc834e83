"""Checkers for chapter 03's kernel exercises: one printed verdict, never an exception at the learner.

On a GPU a checker runs the learner's kernel at sizes that are not multiples of the block size and compares
with NumPy. Without one it compiles the kernel with NVRTC for the T4 and the H100 (a compile error is a ❌
with NVRTC's message) and runs the learner's CUDA C through the CPU executor (helpers.cuda_sim) at several
awkward sizes: ✅ only when every result matches NumPy with no access out of bounds and no race, otherwise ❌
with the first faulty thread, element and line. What it could not check is said plainly on a second line.
A source that still holds its TODO is "not attempted".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import cuda_sim, grid, nvrtc
from .checks import Verdict
from .cuda import Elementwise, blocks_for, gpu_here
from .cuda_c import CudaCError
from .limits import TimeLimitExceeded, time_limit

SEED = 3
#: Seconds the CPU executor may take for one exercise's check (its step limit usually stops a runaway first).
EXECUTOR_SECONDS = 30.0


def _say(passed: bool, attempted: bool, message: str) -> Verdict:
    print(message)
    return Verdict(passed, attempted, message)


def _not_source(title: str, source: Any) -> Verdict:
    return _say(False, True, f"❌ {title}: expected the kernel's CUDA C as a string (r\"\"\"...\"\"\"), got "
                             f"{type(source).__name__}")


def _untouched(title: str, what: str) -> Verdict:
    return _say(False, False, f"⏳ {title}: not attempted yet. Complete {what}, delete its TODO comment, run it, "
                              "then run this check again.")


def _compile_problem(title: str, compile_all: Callable[[], Any]) -> tuple[Verdict | None, bool]:
    """(a ❌ verdict if NVRTC rejects the source, else None; whether it was compiled at all)."""
    if not nvrtc.available():
        return None, False
    try:
        compile_all()
    except nvrtc.CompileError as exc:
        message = f"❌ {title}: NVRTC's compiler error (fix it, then run both cells again):\n{exc}"
        return _say(False, True, message), True
    return None, True


def _compare(title: str, got: Any, want: np.ndarray, where: str, rtol: float = 1e-5, atol: float = 1e-6) -> Verdict:
    from .backend import to_numpy

    got = to_numpy(got)
    if got.shape != want.shape:
        return _say(False, True, f"❌ {title}: result of shape {got.shape}, expected {want.shape} ({where})")
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        return _say(False, True, f"❌ {title}: {int(bad.sum())} of {want.size} values differ from NumPy's ({where}); "
                                 f"first at index {first}: got {got[first]:.6g}, expected {want[first]:.6g}")
    return _say(True, True, f"✅ {title}: ran on this GPU and matches NumPy ({where}).")


def _compiled_only(title: str, compiled: bool, checked_here: str, not_run: str) -> Verdict:
    done = f"compiled for {' and '.join(nvrtc.TARGET_ARCHS)}" if compiled else \
        f"not compiled: {nvrtc.why()}"
    lines = [f"✅ {title}: {checked_here}{done}." if compiled else f"⚠️ {title}: {checked_here}{done}."]
    lines.append(f"   Not checked: {not_run}")
    return _say(compiled, True, "\n".join(lines))


def _on_cpu(title: str, build: Callable[[], Any], runs: list[tuple[str, Callable[[Any], tuple[Any, np.ndarray]]]],
            rtol: float = 1e-5, atol: float = 1e-6) -> str | Verdict:
    """Build the learner's kernel for the CPU executor, then for each (description, run): run(kernel) gives
    (result, NumPy's answer). A ❌ Verdict at the first problem, else a description of what was checked."""
    where = "compiling it"
    try:
        with time_limit(EXECUTOR_SECONDS, title) as limit:
            kernel = build()
            for where, run in runs:
                got, want = run(kernel)
                bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
                if bad.any():
                    first = tuple(int(i) for i in np.argwhere(bad)[0])
                    return _say(False, True, f"❌ {title}: {int(bad.sum())} of {want.size} values differ from "
                                             f"NumPy's ({where}, on the CPU executor); first at index {first}: "
                                             f"got {got[first]:.6g}, expected {want[first]:.6g}")
    except (cuda_sim.KernelFault, CudaCError, TypeError, ValueError) as exc:
        return _say(False, True, f"❌ {title}: {exc} ({where}, on the CPU executor)")
    except TimeLimitExceeded as exc:
        if exc.limit is not limit:
            raise
        return _say(False, True, f"❌ {title}: the CPU executor took longer than {EXECUTOR_SECONDS:g} s: is there a "
                                 "loop that never ends?")
    return "; ".join(where for where, _ in runs)


def _gpu_failure(title: str, exc: Exception) -> Verdict:
    return _say(False, True, f"❌ {title}: the GPU run failed: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------------------------------------------


def check_elementwise(kernel: Any, reference: Callable[..., np.ndarray], inputs: Callable[[int], tuple[Any, ...]],
                      title: str, n: int = 1000) -> Verdict:
    """An Elementwise exercise: compiled for the targets; on a GPU, run on `inputs(n)` against `reference`."""
    if kernel is ... or kernel is None or (isinstance(kernel, Elementwise) and "TODO" in kernel.operation):
        return _untouched(title, "the operation")
    if not isinstance(kernel, Elementwise):
        return _say(False, True, f"❌ {title}: expected h.cuda.Elementwise(in_params, out_params, operation, name), "
                                 f"got {type(kernel).__name__}")
    args = inputs(n)
    if len(kernel.inputs) != len(args) or len(kernel.outputs) != 1:
        return _say(False, True, f"❌ {title}: the kernel must take {len(args)} input(s) and give 1 output; yours "
                                 f"takes {len(kernel.inputs)} ({kernel.in_params!r}) and gives {len(kernel.outputs)} "
                                 f"({kernel.out_params!r})")
    failed, compiled = _compile_problem(title, kernel.compile)
    if failed is not None:
        return failed
    if gpu_here():
        import cupy

        try:
            got = kernel.on_gpu()(*(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
        except Exception as exc:
            return _gpu_failure(title, exc)
        return _compare(title, got, reference(*args), f"{n:,} elements")
    def elementwise_run(size: int) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def run(front: Any) -> tuple[Any, np.ndarray]:
            some = tuple(a[:size] if isinstance(a, np.ndarray) else a for a in args)
            return front(*some), reference(*some)
        return run

    from . import cupy_cpu

    ran = _on_cpu(title, lambda: cupy_cpu.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation,
                                                            kernel.name, preamble=kernel.preamble),
                  [(f"{size:,} element{'s' * (size > 1)}", elementwise_run(size)) for size in (1, 257, n) if size <= n])
    if isinstance(ran, Verdict):
        return ran
    return _compiled_only(title, compiled, f"ran on the CPU executor and matches NumPy ({ran}); ",
                          "how fast it runs: there is no GPU here.")


def scale_reference(x: np.ndarray, factor: float) -> np.ndarray:
    """What the bounds-check exercise's kernel computes: out = factor * x."""
    return (np.float32(factor) * x).astype(np.float32)


def check_scale(source: Any, twin: Callable[..., Any], n: int = 1000, threads: int = 256) -> Verdict:
    """The bounds-check exercise: the Python twin runs in the grid model here; the CUDA C compiles (and runs)."""
    title = "scale with a bounds check"
    if source is ... or (isinstance(source, str) and "TODO" in source):
        return _untouched(title, "the kernel (and its Python twin)")
    if not isinstance(source, str):
        return _not_source(title, source)
    blocks = blocks_for(n, threads)
    x = np.random.default_rng(SEED).standard_normal(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    shape = f"n = {n:,}: {blocks} blocks of {threads} threads"
    try:
        run = grid.launch(twin, blocks, threads, x, out, 2.5, n)
    except Exception as exc:
        return _say(False, True, f"❌ {title}: your Python twin raised {type(exc).__name__}: {exc}")
    if run.out_of_bounds():
        return _say(False, True, f"❌ {title}: your Python twin goes out of bounds ({shape}):\n"
                                 + run.summary().splitlines()[-1])
    if not np.allclose(out, scale_reference(x, 2.5)):
        return _say(False, True, f"❌ {title}: your Python twin stays in bounds but its values differ from "
                                 f"2.5 * x ({shape})")
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "scale.cu"))
    if failed is not None:
        return failed
    twin_ok = f"the Python twin stays in bounds and is right ({shape}); the CUDA C "
    if gpu_here():
        import cupy

        pad = threads  # room past the end: a kernel without the check writes there, and we look
        x_gpu = cupy.asarray(np.concatenate([x, np.zeros(pad, np.float32)]))
        out_gpu = cupy.full(n + pad, -7.0, dtype=cupy.float32)
        try:
            cupy.RawKernel(source, "scale")((blocks,), (threads,), (x_gpu, out_gpu, np.float32(2.5), np.int32(n)))
            cupy.cuda.get_current_stream().synchronize()
        except Exception as exc:
            return _gpu_failure(title, exc)
        spill = int((out_gpu[n:] != -7.0).sum())
        if spill:
            return _say(False, True, f"❌ {title}: on this GPU your kernel wrote {spill} values past the end of out "
                                     f"({shape}): the bounds check is missing or wrong")
        return _compare(title, out_gpu[:n], scale_reference(x, 2.5), shape)
    def scale_run(size: int) -> Callable[[cuda_sim.Program], tuple[Any, np.ndarray]]:
        def run(program: cuda_sim.Program) -> tuple[Any, np.ndarray]:
            xs, outs = x[:size].copy(), np.full(size, np.nan, np.float32)
            program.launch("scale", (blocks_for(size, threads),), (threads,), (xs, outs, np.float32(2.5),
                                                                               np.int32(size)))
            return outs, scale_reference(xs, 2.5)
        return run

    sizes = [size for size in (1, threads + 1, n) if size <= n]
    ran = _on_cpu(title, lambda: cuda_sim.Program(source),
                  [(f"n = {size:,}, {threads} threads per block", scale_run(size)) for size in sizes])
    if isinstance(ran, Verdict):
        return ran
    return _compiled_only(title, compiled, twin_ok.replace("; the CUDA C ", "; ") +
                          f"the CUDA C ran on the CPU executor, in bounds and right ({ran}), and is ",
                          "how fast it runs, and anything the executor does not model: there is no GPU here.")


def check_tiled_matmul(source: Any, shape: tuple[int, int, int] = (100, 70, 90), tile: int = 16) -> Verdict:
    """The tiled-matmul exercise: (M x K) @ (K x N) with M, K, N not multiples of the tile, against NumPy."""
    title = "tiled matmul"
    if source is ... or (isinstance(source, str) and "TODO" in source):
        return _untouched(title, "the kernel's tile loads")
    if not isinstance(source, str):
        return _not_source(title, source)
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "matmul_tiled_rect.cu"))
    if failed is not None:
        return failed
    m, k, n = shape
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    where = f"({m} x {k}) @ ({k} x {n}), {tile} x {tile} tiles"
    if gpu_here():
        import cupy

        c = cupy.zeros((m, n), dtype=cupy.float32)
        try:
            cupy.RawKernel(source, "matmul_tiled_rect")(
                (blocks_for(n, tile), blocks_for(m, tile)), (tile, tile),
                (cupy.asarray(a), cupy.asarray(b), c, np.int32(m), np.int32(k), np.int32(n)))
        except Exception as exc:
            return _gpu_failure(title, exc)
        return _compare(title, c, a @ b, where, rtol=1e-4, atol=1e-4)
    def tiled_run(m: int, k: int, n: int) -> Callable[[cuda_sim.Program], tuple[Any, np.ndarray]]:
        def run(program: cuda_sim.Program) -> tuple[Any, np.ndarray]:
            am, bm, cm = a[:m, :k].copy(), b[:k, :n].copy(), np.full((m, n), np.nan, np.float32)
            program.launch("matmul_tiled_rect", (blocks_for(n, tile), blocks_for(m, tile)), (tile, tile),
                           (am, bm, cm, np.int32(m), np.int32(k), np.int32(n)))
            return cm, am @ bm
        return run

    small = [s for s in CPU_SHAPES if all(x <= y for x, y in zip(s, shape, strict=True))] or [shape]
    ran = _on_cpu(title, lambda: cuda_sim.Program(source),
                  [(f"({m} x {k}) @ ({k} x {n})", tiled_run(m, k, n)) for m, k, n in small], rtol=1e-4, atol=1e-4)
    if isinstance(ran, Verdict):
        return ran
    return _compiled_only(title, compiled, f"ran on the CPU executor with no race and in bounds, and matches NumPy "
                                           f"({ran}, {tile} x {tile} tiles); ",
                          f"how fast it runs: there is no GPU here. On a GPU this check multiplies {where}.")


#: Shapes (M, K, N) for the tiled-matmul check on the CPU executor: no side a multiple of 16, small enough to
#: take about a second each, and one where K spans three tiles.
CPU_SHAPES = [(33, 20, 17), (17, 35, 40)]


def silu_reference(x: np.ndarray) -> np.ndarray:
    """SiLU (swish), the activation of the Elementwise exercise: x * sigmoid(x) = x / (1 + exp(-x))."""
    return (x / (1 + np.exp(-x))).astype(x.dtype)


def check_silu(kernel: Any, n: int = 1000) -> Verdict:
    """The SiLU exercise: an Elementwise with one float32 input and one float32 output."""
    rng = np.random.default_rng(SEED)
    return check_elementwise(kernel, silu_reference, lambda size: (4 * rng.standard_normal(size, dtype=np.float32),),
                             "silu", n)
