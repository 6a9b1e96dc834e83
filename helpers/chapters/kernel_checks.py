"""Checkers for chapter 03's kernel exercises: one printed verdict, never an exception at the learner.

Every checker compiles the learner's CUDA C with NVRTC for the T4 and the H100 (a compile error is a ❌ with
NVRTC's message) and runs it through the CPU executor (helpers.executor) at several sizes that are not
multiples of the block size: a fault (out of bounds, a race, a barrier only part of a block reaches) is a ❌
with the first thread, element and line. On a GPU it then runs the kernel there too, at several shapes, each
array inside a NaN-poisoned guard region (a read outside an array then spoils the result, a write outside it
shows in the guard), synchronising before it looks. ✅ only when every run matches NumPy; what could not be
checked is said on a second line. A source that still holds its TODO is "not attempted".

What a kernel could be tuned to is drawn afresh for every check, from the operating system's entropy (no seed
a learner could know): one of the sizes (one of the shapes), and the scale exercise's factor; the verdict's
first line says what was drawn. NumPy's answer is computed first, from the checker's own copy of the inputs;
the kernel gets copies of its own. Only a kernel is looked into (a str of CUDA C; a cupy.ElementwiseKernel,
the CPU stand-in's or an h.cuda.Elementwise, made of plain strings): anything else is refused by the name of
its type alone, so none of a learner's code runs inside a check, and whatever is printed while a check runs
is shown after its verdict, labelled. A source that #includes anything but CUDA's own headers is refused
before it is compiled (helpers.gpu.nvrtc.refused_include). Author arguments under which nothing would be checked
(n=0, a 1 x 1 x 1 product), and a reference or inputs function that gives no answer or inputs to check with,
raise an error naming the argument: never a ❌ that blames the learner for the author's mistake.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
from collections.abc import Callable, Collection
from typing import Any, ParamSpec

import numpy as np

from .. import executor
from ..core.backend import to_numpy
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.validate import finite
from ..executor import CudaCError, cupy_cpu
from ..gpu import nvrtc
from ..gpu.cuda import MAX_BLOCK_THREADS, Elementwise, blocks_for, gpu_here
from ..learning.checks import TIME_LIMIT, Verdict

P = ParamSpec("P")
#: Seeds the inputs' values only: the sizes, shapes and factor a kernel could be tuned to are drawn afresh.
SEED = 3
#: Seconds the CPU executor may take for one exercise's check (its step limit usually stops a runaway first).
EXECUTOR_SECONDS = 30.0
#: Seconds one run (one size) may take, as the Python checkers promise a case (checks.TIME_LIMIT): a right answer
#: takes well under a second on the CPU executor, so a runaway ends here, long before the step limit.
RUN_SECONDS = TIME_LIMIT
#: Poisoned elements before and after every array a GPU check hands to the learner's kernel.
GUARD = 64
#: The most elements a check's n may ask for: the CPU executor checks every access, and runs at most
#: executor.MAX_LAUNCH_THREADS threads in one launch.
MAX_ELEMENTS = executor.MAX_LAUNCH_THREADS // 2
#: The longest side of the tiled-matmul check's product on a GPU.
MAX_SIDE = 4096
#: Scale factors a check may draw: hundredths from 0.5 to 4, either sign, never 1 (a kernel that copies x
#: would pass) nor 2.5 (the factor every check used before they were drawn).
FACTORS = tuple(sign * k / 100 for sign in (-1, 1) for k in range(50, 401) if k not in (100, 250))
#: What a run gives back: (where, run), run(kernel) -> (result, NumPy's answer).
Runs = list[tuple[str, Callable[[Any], tuple[Any, np.ndarray]]]]
#: How a run launches a kernel: (kernel, name, grid, block, {array's name: host array}, scalars) -> the arrays,
#: as the kernel left them (copies: the host arrays are never handed over).
Launcher = Callable[[Any, str, tuple[int, ...], tuple[int, ...], dict[str, np.ndarray], tuple[Any, ...]], list[Any]]


def _announced(check: Callable[P, Verdict]) -> Callable[P, Verdict]:
    """`check`, printing its verdict once it is over and then, apart and labelled, whatever was printed meanwhile."""
    @functools.wraps(check)
    def announced(*args: P.args, **kwargs: P.kwargs) -> Verdict:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            verdict = check(*args, **kwargs)
        print(verdict.message)
        if printed.getvalue().strip():
            lines = printed.getvalue().rstrip().split("\n")
            print("   Printed while the check ran (not by the check):")
            print("\n".join(f"   | {line}" for line in lines[:PRINTED_LINES]))
            if len(lines) > PRINTED_LINES:
                print(f"   | ... and {len(lines) - PRINTED_LINES:,} more lines, not shown")
        return verdict
    return announced


#: The most lines of what was printed while a check ran that its verdict shows (a printf in every thread of every
#: run would otherwise flood the notebook).
PRINTED_LINES = 40


def _type_name(thing: Any) -> str:
    """The name of `thing`'s type, read without running any of its code (a metaclass may lie about __name__)."""
    return str.__str__(type.__dict__["__name__"].__get__(type(thing)))


def _whole(name: str, value: Any, low: int, high: int, why: str) -> int:
    """`value` if it is a whole number from `low` to `high`; otherwise the author's ValueError, saying why."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low:,} to {high:,} ({why}); got {value!r:.40}")
    return int(value)


def _shape(shape: Any, tile: int) -> tuple[int, int, int]:
    """`shape` as (M, K, N) if every side ends in a partly filled tile; otherwise the author's ValueError."""
    if not isinstance(shape, tuple | list) or len(shape) != 3 or any(
            isinstance(s, bool) or not isinstance(s, int | np.integer) or not tile < s <= MAX_SIDE or s % tile == 0
            for s in shape):
        raise ValueError(f"shape must be (M, K, N): three whole numbers, each from {tile + 1} to {MAX_SIDE:,} and not "
                         f"a multiple of {tile} (the tile), so that every side ends in a partly filled tile and K "
                         f"spans more than one; got {shape!r:.60}")
    return int(shape[0]), int(shape[1]), int(shape[2])


def _fresh() -> np.random.Generator:
    """A generator seeded from the operating system's entropy: what it draws cannot be known before the check."""
    return np.random.default_rng()


def _drawn(rng: np.random.Generator, low: int, high: int, avoid: Collection[int], tile: int = 0) -> int:
    """A whole number from `low` to `high`, none of `avoid` nor (with a tile) a multiple of `tile`."""
    return int(rng.choice([k for k in range(low, high + 1) if k not in avoid and not (tile and k % tile == 0)]))


def _sizes(fixed: tuple[int, ...], n: int, rng: np.random.Generator) -> tuple[list[int], int]:
    """(the sizes a check runs: those of `fixed` below n, n, and one drawn from 2 to n - 1 that is none of them;
    the drawn one)."""
    drawn = _drawn(rng, 2, n - 1, fixed)
    return sorted({*(size for size in fixed if size < n), n, drawn}), drawn


def _noting(verdict: Verdict, drawn: str) -> Verdict:
    """`verdict` with what the check drew afresh said at the end of its first line."""
    first, *rest = verdict.message.split("\n", 1)
    first += f"{' ' if first.endswith(('.', '?', '!')) else '. '}Drawn afresh for this check: {drawn}."
    return Verdict(verdict.passed, verdict.attempted, "\n".join([first, *rest]))


def _not_source(title: str, source: Any) -> Verdict:
    """The ❌ for something other than a str of CUDA C, named by its type alone."""
    return Verdict(False, True, f"❌ {title}: expected the kernel's CUDA C as a string (r\"\"\"...\"\"\"), got "
                                f"{_type_name(source)}")


def _empty(title: str) -> Verdict:
    """The ❌ for a source string with nothing in it."""
    return Verdict(False, True, f"❌ {title}: the source is empty: write the kernel's CUDA C between the "
                                'r""" and """ quotes')


def _untouched(title: str, what: str) -> Verdict:
    """The ⏳ for an exercise still as it was handed out."""
    return Verdict(False, False, f"⏳ {title}: not attempted yet. Complete {what}, delete its TODO comment, run it, "
                                 "then run this check again.")


def _refused(title: str, *sources: str) -> Verdict | None:
    """The ❌ for CUDA C that #includes anything but CUDA's own headers (NVRTC would read any file), or None."""
    for source in sources:
        why = nvrtc.refused_include(source)
        if why:
            return Verdict(False, True, f"❌ {title}: {why}. Remove that line, then run both cells again.")
    return None


def _source_problem(title: str, source: Any, what: str) -> Verdict | None:
    """The verdict for a source that cannot be run (untouched, not a str, empty, a refused #include), or None."""
    if source is ...:
        return _untouched(title, what)
    if type(source) is not str:  # type(), not isinstance(): a proxy's __class__ may lie, and runs its code
        return _not_source(title, source)
    if "TODO" in source:
        return _untouched(title, what)
    if not source.strip():
        return _empty(title)
    return _refused(title, source)


def _compile_problem(title: str, compile_all: Callable[[], Any]) -> tuple[Verdict | None, bool]:
    """(a ❌ verdict if NVRTC rejects the source, else None; whether it was compiled at all)."""
    if not nvrtc.available():
        return None, False
    try:
        compile_all()
    except (nvrtc.CompileError, ValueError) as exc:  # NVRTC's message, or a source it was not given (empty)
        message = f"❌ {title}: NVRTC's compiler error (fix it, then run both cells again):\n{exc}"
        return Verdict(False, True, message), True
    return None, True


def _executor_only(title: str, compiled: bool, checked_here: str) -> Verdict:
    """✅ for a kernel the CPU executor ran right everywhere; what no CPU can check is said on a second line."""
    done = f"compiled for {' and '.join(nvrtc.TARGET_ARCHS)}" if compiled else ""
    lines = [f"✅ {title}: {checked_here}{done}".rstrip("; ") + "."]
    missing = ["how fast it runs (there is no GPU here)"]
    if not compiled:
        missing.append(f"NVIDIA's own compiler ({nvrtc.why()})")
    lines.append(f"   Not checked: {'; '.join(missing)}.")
    return Verdict(True, True, "\n".join(lines))


class _OutsideArrays(Exception):
    """A GPU run wrote into the poisoned guard around an array."""


def _run_all(title: str, build: Callable[[], Any], runs: Runs, on: str, rtol: float, atol: float) -> str | Verdict:
    """Build the kernel, then compare each run with NumPy. A ❌ Verdict at the first problem, else the runs' list.

    on: "on the CPU executor" or "on this GPU". On a GPU the executor is a bonus: CUDA C outside its subset
    skips it (returns why, starting with "not run") instead of failing the learner.
    """
    where, run_limit = "compiling it", None
    try:
        with time_limit(EXECUTOR_SECONDS, title) as limit:
            kernel = build()
            for where, run in runs:
                with time_limit(RUN_SECONDS, f"{title} ({where})") as run_limit:
                    got, want = run(kernel)
                got = to_numpy(got)
                bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
                if bad.any():
                    first = tuple(int(i) for i in np.argwhere(bad)[0])
                    return Verdict(False, True, f"❌ {title}: {int(bad.sum())} of {want.size} values differ from "
                                                f"NumPy's ({where}, {on}); first at index {first}: got "
                                                f"{got[first]:.6g}, expected {want[first]:.6g}")
    except CudaCError as exc:  # outside the executor's subset (or no C at all): on a GPU, CuPy's compiler decides
        if on.endswith("GPU") or not gpu_here():
            return Verdict(False, True, f"❌ {title}: {exc} ({on})")
        return f"not run on the CPU executor ({exc})"
    except TimeLimitExceeded as exc:
        if exc.limit is run_limit:
            return Verdict(False, True, f"❌ {title}: {on.removeprefix('on ')} took longer than {RUN_SECONDS:g} s "
                                        f"for one run ({where}): is there a loop that never ends, or a function "
                                        "that calls itself twice? (a right answer takes under a second)")
        if exc.limit is not limit:
            raise
        return Verdict(False, True, f"❌ {title}: {on.removeprefix('on ')} took longer than {EXECUTOR_SECONDS:g} s: "
                                    "is there a loop that never ends?")
    except (executor.KernelFault, TypeError, ValueError, _OutsideArrays) as exc:
        return Verdict(False, True, f"❌ {title}: {exc} ({where}, {on})")
    except Exception as exc:  # noqa: BLE001 - whatever CuPy, the driver or the executor raised: a verdict
        if not on.endswith("GPU"):
            return Verdict(False, True, f"❌ {title}: the CPU executor could not run it ({where}): "
                                        f"{type(exc).__name__}: {exc}")
        sticky = "illegal" in str(exc).lower() or "launch failure" in str(exc).lower()
        return Verdict(False, True, f"❌ {title}: the GPU run failed ({where}): {type(exc).__name__}: {exc}"
                       + (". After an illegal memory access CUDA refuses every later call: restart the runtime before "
                          "running more GPU cells." if sticky else ""))
    return "; ".join(where for where, _ in runs)


def _gpu_kernel(source: str, name: str) -> Any:
    """cupy.RawKernel for `name`, once the source is known to export it (else a launch fails obscurely)."""
    import cupy

    kernels, exported = executor.kernel_names(source)
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
    return Verdict(True, True, "\n".join(lines))


def _launch_on_cpu(program: executor.Program, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                   arrays: dict[str, np.ndarray], scalars: tuple[Any, ...]) -> list[Any]:
    """Launch `name` on the CPU executor with a copy of each of `arrays`; the copies, as the kernel left them."""
    copies = [np.array(array, copy=True) for array in arrays.values()]
    program.launch(name, grid, block, (*copies, *scalars))
    return copies


def _launch_on_gpu(kernel: Any, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                   arrays: dict[str, np.ndarray], scalars: tuple[Any, ...]) -> list[Any]:
    """Launch `kernel` on the GPU with each of `arrays` copied into a guarded buffer; the device views, once the
    GPU is done and no guard was written."""
    guarded = {label: _guarded(array) for label, array in arrays.items()}
    kernel(grid, block, (*(view for _, view in guarded.values()), *scalars))
    for label, (buffer, view) in guarded.items():
        _synchronized_guards(buffer, view.size, label)
    return [view for _, view in guarded.values()]


def _run_both(title: str, compiled: bool, plans: Callable[[str], tuple[Callable[[], Any], Runs]],
              tolerance: tuple[float, float], drawn: str, note: str = "") -> Verdict:
    """Run plans("cpu") on the CPU executor, then (on a GPU) plans("gpu") there: the first ❌, or the ✅; either
    saying what was drawn. `note` follows the list of runs (the tile size)."""
    cpu = _run_all(title, *plans("cpu"), "on the CPU executor", *tolerance)
    if isinstance(cpu, Verdict):
        return _noting(cpu, drawn)
    if not gpu_here():
        return _noting(_verdict(title, compiled, None, cpu + note), drawn)
    gpu = _run_all(title, *plans("gpu"), "on this GPU", *tolerance)
    return _noting(gpu if isinstance(gpu, Verdict) else _verdict(title, compiled, gpu + note, cpu), drawn)


# --------------------------------------------------------------------------------------------------------------
# ElementwiseKernel exercises

#: The parts of an ElementwiseKernel a check reads; each must be a plain str (CuPy's parameters: its own tuple).
_PARTS = ("in_params", "out_params", "operation", "name", "preamble")


def _cupys_elementwise() -> type | None:
    """CuPy's ElementwiseKernel class, if CuPy is imported (a kernel made with CuPy imported it); else None."""
    kind = getattr(sys.modules.get("cupy"), "ElementwiseKernel", None)
    return kind if isinstance(kind, type) else None


def _elementwise_parts(kernel: Any) -> Elementwise | str:
    """The kernel's parts, if it is an ElementwiseKernel made of plain strings; else what is wrong with it.

    Its type is checked first (type(), never isinstance(), whose fallback asks the object for its __class__),
    then the type of each part, so no method of a learner's own object or string runs.
    """
    kind, cupys = type(kernel), _cupys_elementwise()
    if kind is not Elementwise and kind is not cupy_cpu.ElementwiseKernel and (cupys is None or kind is not cupys):
        return ("expected an ElementwiseKernel (cupy.ElementwiseKernel(in_params, out_params, operation, name)); got "
                f"{_type_name(kernel)}")
    for part in _PARTS:
        value = getattr(kernel, part, "")  # a kernel's own attribute: no learner's code runs to read it
        if type(value) is not (tuple if kind is cupys and part.endswith("params") else str):
            return f"the kernel's {part} is a {_type_name(value)}; build the kernel from plain strings"
    try:
        return Elementwise.of(kernel)
    except (TypeError, ValueError) as exc:
        return str(exc)


def _elementwise_problem(kernel: Any, title: str, arity: int) -> Elementwise | Verdict:
    """The kernel's parts, or the verdict for a kernel that cannot be run (untouched, not one, wrong arity)."""
    if kernel is ... or kernel is None:
        return _untouched(title, "the operation")
    parts = _elementwise_parts(kernel)
    if isinstance(parts, str):
        return Verdict(False, True, f"❌ {title}: {parts}")
    if "TODO" in parts.operation:
        return _untouched(title, "the operation")
    if len(parts.inputs) != arity or len(parts.outputs) != 1:
        return Verdict(False, True, f"❌ {title}: the kernel must take {arity} input(s) and give 1 output; yours "
                                    f"takes {len(parts.inputs)} ({parts.in_params!r}) and gives "
                                    f"{len(parts.outputs)} ({parts.out_params!r})")
    refused = _refused(title, parts.source(), parts.preamble, parts.operation)
    return parts if refused is None else refused  # not `or`: a ❌ Verdict is falsy


def _stand_in(parts: Elementwise) -> cupy_cpu.ElementwiseKernel:
    """The CPU stand-in's ElementwiseKernel made of `parts`."""
    return cupy_cpu.ElementwiseKernel(parts.in_params, parts.out_params, parts.operation, parts.name,
                                      preamble=parts.preamble)


def _author_inputs(reference: Any, inputs: Any, n: int) -> tuple[Any, ...]:
    """inputs(n), once both functions are functions and it is what a check needs; else the author's error."""
    for name, fn in (("reference", reference), ("inputs", inputs)):
        if not callable(fn):
            raise TypeError(f"{name} must be a function (reference: NumPy's answer from the inputs; inputs: the "
                            f"kernel's inputs for n elements); got {_type_name(fn)}")
    args = inputs(n)
    if type(args) is not tuple or not args or not all(
            (type(a) is np.ndarray and a.shape == (n,) and a.dtype.kind in "biuf")
            or isinstance(a, int | float | np.number) for a in args):
        raise ValueError(f"inputs(n) must return a tuple of the kernel's inputs, each an array of n = {n:,} numbers "
                         f"or a number; got {_type_name(args)} {args!r:.60}")
    return args


def _answers(reference: Callable[..., Any], args: tuple[Any, ...], sizes: list[int]) -> dict[int, np.ndarray]:
    """NumPy's answer at each size, from the checker's own copies of the first `size` elements of each input,
    computed before any kernel runs; the author's ValueError for a reference that does not give one."""
    answers = {}
    for size in sizes:
        want = reference(*(a[:size].copy() if isinstance(a, np.ndarray) else a for a in args))
        if type(want) is not np.ndarray or want.shape != (size,) or want.dtype.kind not in "biuf":
            raise ValueError(f"reference must return NumPy's answer, an array of one number per element ({size:,} "
                             f"here); got {_type_name(want)} {want!r:.60}")
        answers[size] = want
    return answers


def _elementwise(kernel: Any, reference: Callable[..., np.ndarray], inputs: Callable[[int], tuple[Any, ...]],
                 title: str, n: int) -> Verdict:
    """check_elementwise's work; its verdict is printed by the public checker."""
    n = _whole("n", n, 3, MAX_ELEMENTS, "the check runs 1 element, n, and a size drawn afresh between them")
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title must be the exercise's name, a non-empty string; got {title!r:.40}")
    args = _author_inputs(reference, inputs, n)
    parts = _elementwise_problem(kernel, title, len(args))
    if isinstance(parts, Verdict):
        return parts
    failed, compiled = _compile_problem(title, parts.compile)
    if failed is not None:
        return failed
    sizes, drawn = _sizes((1, 257), n, _fresh())
    answers = _answers(reference, args, sizes)

    def run(size: int, to_device: Callable[[np.ndarray], Any]) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def go(front: Any) -> tuple[Any, np.ndarray]:
            got = front(*(to_device(a[:size].copy()) if isinstance(a, np.ndarray) else a for a in args))
            if gpu_here():
                import cupy

                cupy.cuda.get_current_stream().synchronize()
            return got, answers[size]
        return go

    def plans(where: str) -> tuple[Callable[[], Any], Runs]:
        if where == "cpu":
            build, to_device = functools.partial(_stand_in, parts), np.asarray
        else:
            import cupy

            build, to_device = parts.on_gpu, cupy.asarray
        return build, [(f"{size:,} element{'s' * (size > 1)}", run(size, to_device)) for size in sizes]

    return _run_both(title, compiled, plans, (1e-5, 1e-6), f"{drawn:,} elements")


@_announced
def check_elementwise(kernel: Any, reference: Callable[..., np.ndarray], inputs: Callable[[int], tuple[Any, ...]],
                      title: str, n: int = 1000) -> Verdict:
    """An ElementwiseKernel exercise (cupy.ElementwiseKernel, or h.cuda.Elementwise): compiled; run on the CPU
    executor and (on a GPU) by CuPy at 1, 257, n and a size drawn afresh below n elements of `inputs(n)`,
    against `reference`."""
    return _elementwise(kernel, reference, inputs, title, n)


def _floats(name: str, x: Any) -> np.ndarray:
    """`x` if it is a NumPy array of floats; otherwise a TypeError naming `name`."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        raise TypeError(f"{name} must be a NumPy array of floats, such as np.float32 ones; got {_type_name(x)} "
                        f"{x!r:.40}")
    return x


def silu_reference(x: np.ndarray) -> np.ndarray:
    """SiLU (swish), the activation of the Elementwise exercise: x * sigmoid(x) = x / (1 + exp(-x))."""
    x = _floats("x", x)
    return (x / (1 + np.exp(-x))).astype(x.dtype)


@_announced
def check_silu(kernel: Any, n: int = 1000) -> Verdict:
    """The SiLU exercise: an Elementwise with one float32 input and one float32 output."""
    rng = np.random.default_rng(SEED)
    return _elementwise(kernel, silu_reference, lambda size: (4 * rng.standard_normal(size, dtype=np.float32),),
                        "silu", n)


# --------------------------------------------------------------------------------------------------------------
# Raw CUDA C exercises


def scale_reference(x: np.ndarray, factor: float) -> np.ndarray:
    """What the bounds-check exercise's kernel computes: out = factor * x."""
    if not finite(factor):
        raise ValueError(f"factor must be a finite number; got {factor!r:.40}")
    return (np.float32(factor) * _floats("x", x)).astype(np.float32)


def _builds(source: str, name: str) -> Callable[[str], tuple[Callable[[], Any], Launcher]]:
    """For "cpu" or "gpu": (how to build the kernel `name` of `source` there, how to launch it there)."""
    def build(where: str) -> tuple[Callable[[], Any], Launcher]:
        if where == "cpu":
            return (lambda: executor.Program(source)), _launch_on_cpu
        return (lambda: _gpu_kernel(source, name)), _launch_on_gpu
    return build


@_announced
def check_scale(source: Any, n: int = 1000, threads: int = 256) -> Verdict:
    """The bounds-check exercise: the CUDA C compiled, run on the CPU executor and (on a GPU) on the GPU, at
    n = 1, threads + 1, n and a size drawn afresh below n, with a factor drawn afresh."""
    title = "scale with a bounds check"
    threads = _whole("threads", threads, 2, MAX_BLOCK_THREADS, "with 1 thread per block no thread is ever past "
                     "the end, so the bounds check is never tried; a block holds at most 1,024 threads")
    n = _whole("n", n, threads + 2, MAX_ELEMENTS, "threads + 2: a last block partly past the end, and a size drawn "
               "afresh below n")
    problem = _source_problem(title, source, "the kernel")
    if problem is not None:
        return problem
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "scale.cu"))
    if failed is not None:
        return failed
    rng = _fresh()
    factor = float(rng.choice(FACTORS))
    sizes, drawn = _sizes((1, threads + 1), n, rng)
    x = np.random.default_rng(SEED).standard_normal(n, dtype=np.float32)
    builds = _builds(source, "scale")

    def run(size: int, launch: Launcher) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def go(kernel: Any) -> tuple[Any, np.ndarray]:
            want = scale_reference(x[:size], factor)  # first, from the checker's own x
            _, out = launch(kernel, "scale", (blocks_for(size, threads),), (threads,),
                            {"x": x[:size], "out": np.full(size, np.nan, np.float32)},
                            (np.float32(factor), np.int32(size)))
            return out, want
        return go

    def plans(where: str) -> tuple[Callable[[], Any], Runs]:
        build, launch = builds(where)
        return build, [(f"n = {size:,}, {blocks_for(size, threads)} block{'s' * (size > threads)} of {threads} "
                        "threads", run(size, launch)) for size in sizes]

    return _run_both(title, compiled, plans, (1e-5, 1e-6), f"factor = {factor:.2f}, n = {drawn:,}")


#: Shapes (M, K, N) for the tiled-matmul check on the CPU executor: no side a multiple of 16, small enough to
#: take about a second each, and one where K spans three tiles. A third, drawn afresh, joins them every check.
CPU_SHAPES = [(33, 20, 17), (17, 35, 40)]


@_announced
def check_tiled_matmul(source: Any, shape: tuple[int, int, int] = (100, 70, 90), tile: int = 16) -> Verdict:
    """The tiled-matmul exercise: (M x K) @ (K x N), no side a multiple of the tile, against NumPy: on the CPU
    executor at CPU_SHAPES (those no larger than `shape`) and a shape drawn afresh (sides from tile + 1 to
    3 * tile - 1), and on a GPU at `shape` and those."""
    title = "tiled matmul"
    tile = _whole("tile", tile, 2, 32, "a tile x tile block holds at most 1,024 threads")
    shape = _shape(shape, tile)
    problem = _source_problem(title, source, "the kernel's tile loads")
    if problem is not None:
        return problem
    failed, compiled = _compile_problem(title, lambda: nvrtc.compile_for_targets(source, "matmul_tiled_rect.cu"))
    if failed is not None:
        return failed
    rng = _fresh()
    drawn = tuple(_drawn(rng, tile + 1, 3 * tile - 1, {s[i] for s in (*CPU_SHAPES, shape)}, tile) for i in range(3))
    small = [*(s for s in CPU_SHAPES if all(x <= y for x, y in zip(s, shape, strict=True))), drawn]
    big = tuple(max(sides) for sides in zip(shape, *small, strict=True))
    data = np.random.default_rng(SEED)
    a, b = data.standard_normal(big[:2], dtype=np.float32), data.standard_normal(big[1:], dtype=np.float32)
    builds = _builds(source, "matmul_tiled_rect")

    def run(m: int, k: int, n: int, launch: Launcher) -> Callable[[Any], tuple[Any, np.ndarray]]:
        def go(kernel: Any) -> tuple[Any, np.ndarray]:
            want = a[:m, :k] @ b[:k, :n]  # first, from the checker's own A and B
            *_, c = launch(kernel, "matmul_tiled_rect", (blocks_for(n, tile), blocks_for(m, tile)), (tile, tile),
                           {"A": a[:m, :k], "B": b[:k, :n], "C": np.full((m, n), np.nan, np.float32)},
                           (np.int32(m), np.int32(k), np.int32(n)))
            return c, want
        return go

    def plans(where: str) -> tuple[Callable[[], Any], Runs]:
        build, launch = builds(where)
        return build, [(_product(*s), run(*s, launch)) for s in (small if where == "cpu" else [shape, *small])]

    return _run_both(title, compiled, plans, (1e-4, 1e-4), _product(*drawn), f", {tile} x {tile} tiles")


def _product(m: int, k: int, n: int) -> str:
    """'(M x K) @ (K x N)'."""
    return f"({m} x {k}) @ ({k} x {n})"
