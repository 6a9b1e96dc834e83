"""How fast the CPU executor for CUDA C runs, beside numba's CUDA simulator: threads per second, one table.

    python -m helpers.executor.benchmark            # full sizes, under a minute
    python -m helpers.executor.benchmark --quick    # smaller sizes, well under 30 s
    python -m helpers.executor.benchmark --json results.json

Both engines run the project's own kernels: helpers/kernels/vector_add.cu (`vector_add`, blocks of 256 threads)
and helpers/kernels/matmul.cu (`matmul_tiled`, 16 x 16 tiles in shared memory) on the executor, and the same two
kernels written in Python with numba.cuda.jit on numba's simulator (NUMBA_ENABLE_CUDASIM=1). The simulator must be
switched on before numba is imported, so its half runs in a subprocess that reports its rows back as JSON; it is
far slower, so it runs smaller sizes (the table says which), and the executor runs those sizes too: threads/s at
the same size is the number to compare (a tiled matmul thread loops over n / 16 tiles, so its rate falls with n).

Every run's result is checked against NumPy (vector add exactly, matmul within rtol = atol = 1e-4) before its time
counts; each time is the best of a few runs (time.perf_counter). The executor's rows at the full sizes say whether
they met their targets: the 1,048,576-thread vector add in at most 1 s, the 256 x 256 x 256 matmul in at most 3 s.
Without numba installed, one line says how to install it and the executor half runs alone.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from . import Program

TILE = 16  # matmul.cu's TILE: blocks of TILE x TILE threads, one per element of C
VECTOR_BLOCK = 256  # threads per block of the vector add
VECTOR_ADD, MATMUL = "vector_add", "matmul_tiled"
EXECUTOR, NUMBA = "executor", "numba-cudasim"
RTOL = ATOL = 1e-4
KERNEL_FILES = {VECTOR_ADD: "vector_add.cu", MATMUL: "matmul.cu"}
INSTALL_NUMBA = ("numba is not installed: `pip install numba` (into this Python: {python} -m pip install numba) "
                 "adds numba's CUDA simulator beside the executor; running the executor half only")


@dataclass(frozen=True)
class Sizes:
    """What one benchmark run launches: threads of the vector add, the matmul's side n, and the runs timed."""

    vector_add: int
    matmul: int
    repeats: int


#: The executor's sizes and targets (seconds, the best of `repeats` runs), and numba's simulator's own sizes.
EXECUTOR_SIZES = Sizes(vector_add=1_048_576, matmul=256, repeats=3)
EXECUTOR_QUICK = Sizes(vector_add=65_536, matmul=64, repeats=3)
NUMBA_SIZES = Sizes(vector_add=32_768, matmul=64, repeats=3)
NUMBA_QUICK = Sizes(vector_add=8_192, matmul=32, repeats=3)
TARGETS = {VECTOR_ADD: 1.0, MATMUL: 3.0}


@dataclass
class Row:
    """One timed launch size on one engine; `target_s` only for the executor's rows at the full sizes."""

    kernel: str
    engine: str
    size: str
    threads: int
    seconds: float
    repeats: int
    checked: bool
    target_s: float | None = None

    @property
    def threads_per_s(self) -> float:
        return self.threads / self.seconds if self.seconds > 0 else float("inf")

    @property
    def met(self) -> bool | None:
        return None if self.target_s is None else self.seconds <= self.target_s

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON can hold it, threads/s and the target's verdict included."""
        return {**asdict(self), "threads_per_s": self.threads_per_s, "met_target": self.met}


# ------------------------------------------------------------------------------------------------ inputs and checks


def kernel_source(file: str) -> str:
    """The CUDA C of helpers/kernels/`file`, read from the installed package."""
    return importlib.resources.files("helpers").joinpath("kernels", file).read_text(encoding="utf-8")


def kernel_paths() -> list[Path]:
    """The files this script reads: the two kernels and the script itself (a --json PATH may not be one of them)."""
    kernels = Path(__file__).resolve().parent.parent / "kernels"
    return [kernels / name for name in KERNEL_FILES.values()] + [Path(__file__).resolve()]


def vector_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b (random float32) and out (NaN, so a thread that never writes is caught) for an n-element add."""
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.full(n, np.nan, np.float32)


def matmul_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B (random float32 in [0, 1), n x n) and C (NaN) for C = A @ B."""
    rng = np.random.default_rng(seed)
    return (rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
            np.full((n, n), np.nan, np.float32))


def check_vector_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out == a + b exactly (float32 addition is exact to round the same on every engine); AssertionError if not."""
    np.testing.assert_array_equal(out, a + b, err_msg="vector_add: out differs from NumPy's a + b")


def check_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """c == a @ b within rtol = atol = 1e-4 (the reference in float64); AssertionError if not."""
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=RTOL, atol=ATOL, err_msg="matmul_tiled: C differs from NumPy's A @ B")


def best_time(launch: Callable[[], None], check: Callable[[], None], repeats: int) -> float:
    """The best of `repeats` timed launches, each result checked (outside the timing) before its time counts."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        launch()
        best = min(best, time.perf_counter() - start)
        check()
    return best


def matmul_grid(n: int) -> tuple[int, int]:
    """ceil(n / 16) x ceil(n / 16) blocks: one thread per element of C, the last tiles padded with zeros."""
    side = -(-n // TILE)
    return side, side


# ------------------------------------------------------------------------------------------------ the executor


def executor_vector_add(n: int, repeats: int, source: str | None = None, target_s: float | None = None) -> Row:
    """Time vector_add.cu's `vector_add` over n threads (blocks of 256) on the executor, checked every run."""
    program = Program(source if source is not None else kernel_source(KERNEL_FILES[VECTOR_ADD]))
    a, b, out = vector_inputs(n)
    grid = (-(-n // VECTOR_BLOCK),)

    def launch() -> None:
        out.fill(np.nan)
        program.launch(VECTOR_ADD, grid, (VECTOR_BLOCK,), (a, b, out, np.int32(n)))

    seconds = best_time(launch, lambda: check_vector_add(a, b, out), repeats)
    return Row(VECTOR_ADD, EXECUTOR, f"n={n:,}", grid[0] * VECTOR_BLOCK, seconds, repeats, True, target_s)


def executor_matmul(n: int, repeats: int, source: str | None = None, target_s: float | None = None) -> Row:
    """Time matmul.cu's `matmul_tiled` for n x n x n (16 x 16 blocks) on the executor, checked every run."""
    program = Program(source if source is not None else kernel_source(KERNEL_FILES[MATMUL]))
    a, b, c = matmul_inputs(n)
    grid = matmul_grid(n)

    def launch() -> None:
        c.fill(np.nan)
        program.launch(MATMUL, grid, (TILE, TILE), (a, b, c, np.int32(n)))

    seconds = best_time(launch, lambda: check_matmul(a, b, c), repeats)
    return Row(MATMUL, EXECUTOR, f"{n}x{n}x{n}", grid[0] * grid[1] * TILE * TILE, seconds, repeats, True, target_s)


def executor_rows(sizes: Sizes, targets: bool) -> list[Row]:
    """The executor's two rows; with `targets`, each says whether it met TARGETS."""
    return [executor_vector_add(sizes.vector_add, sizes.repeats, target_s=TARGETS[VECTOR_ADD] if targets else None),
            executor_matmul(sizes.matmul, sizes.repeats, target_s=TARGETS[MATMUL] if targets else None)]


# ------------------------------------------------------------------------------------------------ numba's simulator


#: numba.cuda and numba.float32 inside the kernels below, bound only in the copies numba_kernels() makes: this module
#: never imports numba itself (numba reads NUMBA_ENABLE_CUDASIM once, at its import).
cuda: Any = None
float32: Any = None


def _vector_add(a, b, out, n):
    """vector_add.cu's vector_add in numba's Python: one thread per element."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        out[i] = a[i] + b[i]


def _matmul_tiled(a, b, c, n):
    """matmul.cu's matmul_tiled in numba's Python: 16 x 16 tiles of A and B in shared memory, zeros padding them."""
    tile_a = cuda.shared.array((TILE, TILE), float32)
    tile_b = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for start in range(0, n, TILE):
        a_col, b_row = start + tx, start + ty  # each thread loads one number of each tile
        tile_a[ty, tx] = a[row, a_col] if row < n and a_col < n else float32(0.0)
        tile_b[ty, tx] = b[b_row, col] if b_row < n and col < n else float32(0.0)
        cuda.syncthreads()  # the whole tile loaded before anyone reads it
        for k in range(TILE):
            acc += tile_a[ty, k] * tile_b[k, tx]
        cuda.syncthreads()  # everyone done with this tile before it is overwritten
    if row < n and col < n:
        c[row, col] = acc


def numba_kernels(*functions: Callable[..., None]) -> list[Any]:
    """`functions` (by default vector_add and matmul_tiled, line for line as the .cu files have them) as
    numba.cuda.jit kernels, each seeing numba's cuda and float32 as its globals.

    Call it only where NUMBA_ENABLE_CUDASIM=1 was set before numba's import (numba_worker's subprocess). The
    simulator swaps the cuda module in a kernel's globals while it runs: these get a namespace of their own.
    """
    import numba
    from numba import cuda as numba_cuda

    namespace = {"cuda": numba_cuda, "float32": numba.float32, "TILE": TILE, "__builtins__": __builtins__}
    return [numba_cuda.jit(types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__))
            for f in functions or (_vector_add, _matmul_tiled)]


def numba_vector_add(kernel: Any, n: int, repeats: int) -> Row:
    """Time a numba vector add over n threads (blocks of 256) on the simulator, checked every run."""
    a, b, out = vector_inputs(n)
    blocks = -(-n // VECTOR_BLOCK)

    def launch() -> None:
        out.fill(np.nan)
        kernel[blocks, VECTOR_BLOCK](a, b, out, np.int32(n))

    seconds = best_time(launch, lambda: check_vector_add(a, b, out), repeats)
    return Row(VECTOR_ADD, NUMBA, f"n={n:,}", blocks * VECTOR_BLOCK, seconds, repeats, True)


def numba_matmul(kernel: Any, n: int, repeats: int) -> Row:
    """Time a numba tiled matmul for n x n x n (16 x 16 blocks) on the simulator, checked every run."""
    a, b, c = matmul_inputs(n)
    grid = matmul_grid(n)

    def launch() -> None:
        c.fill(np.nan)
        kernel[grid, (TILE, TILE)](a, b, c, np.int32(n))

    seconds = best_time(launch, lambda: check_matmul(a, b, c), repeats)
    return Row(MATMUL, NUMBA, f"{n}x{n}x{n}", grid[0] * grid[1] * TILE * TILE, seconds, repeats, True)


def numba_worker(vector_add: int, matmul: int, repeats: int) -> None:
    """The subprocess's work: both numba rows, printed as one JSON line (the last line of stdout)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("numba_worker runs numba's CUDA simulator: set NUMBA_ENABLE_CUDASIM=1 before starting")
    va_kernel, mm_kernel = numba_kernels()
    rows = [numba_vector_add(va_kernel, vector_add, repeats), numba_matmul(mm_kernel, matmul, repeats)]
    print(json.dumps([asdict(row) for row in rows]))


def numba_available() -> bool:
    """Whether numba can be imported here (found without importing it: the simulator switch must come first)."""
    return importlib.util.find_spec("numba") is not None


def numba_rows(sizes: Sizes, timeout_s: float = 600) -> list[Row]:
    """numba's two rows, measured in a subprocess started with NUMBA_ENABLE_CUDASIM=1; a RuntimeError if it fails."""
    package_parent = str(Path(__file__).resolve().parent.parent.parent)
    code = (f"import sys; sys.path.insert(0, {package_parent!r}); from helpers.executor.benchmark import numba_worker;"
            f" numba_worker({int(sizes.vector_add)}, {int(sizes.matmul)}, {int(sizes.repeats)})")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout_s)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"numba's simulator half failed (exit code {done.returncode}):\n{done.stderr[-3000:]}")
    return [Row(**row) for row in json.loads(lines[-1])]


# ------------------------------------------------------------------------------------------------ report


def format_table(rows: Sequence[Row]) -> str:
    """kernel, engine, size, threads, runs timed, best seconds, threads/s and the target's verdict, a line a row."""
    head = ("kernel", "engine", "size", "threads", "runs", "seconds", "threads/s", "target")
    body = [(r.kernel, r.engine, r.size, f"{r.threads:,}", str(r.repeats), f"{r.seconds:.4f}",
             f"{r.threads_per_s:,.0f}", _verdict(r)) for r in rows]
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths,
                                                                                                    strict=True)))
             for line in (head, *body)]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def _verdict(row: Row) -> str:
    if row.met is None:
        return "-"
    return f"{'met' if row.met else 'MISSED'} (<= {row.target_s:g} s)"


def speedups(rows: Sequence[Row]) -> list[str]:
    """One line per kernel and size both engines ran: how many times the simulator's threads/s the executor ran."""
    rate = {(r.kernel, r.size, r.engine): r.threads_per_s for r in rows}
    lines = []
    for (kernel, size, engine), theirs in rate.items():
        ours = rate.get((kernel, size, EXECUTOR))
        if engine == NUMBA and ours is not None:
            lines.append(f"{kernel} at {size}: the executor ran {ours / theirs:,.0f}x the threads/s of numba's "
                         "simulator")
    return lines


def json_path(text: str) -> Path:
    """A --json PATH that may be written, checked before the run: not a symbolic link, not a folder, not a device
    or a pipe (which the file renamed into place would replace), in a folder where a file can be made, and not one
    of this script's inputs."""
    path = Path(text)
    if path.is_symlink():
        raise argparse.ArgumentTypeError(f"{text!r} is a symbolic link (to {os.readlink(path)!r}): a link is not "
                                         "written through; give the file's own path")
    if path.is_dir() or text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a device, a pipe or a socket): --json "
                                         "writes a file of its own and never replaces one of those; give a file name")
    if not path.resolve().parent.is_dir():
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist (it is not created for you)")
    _can_make_a_file(path.resolve().parent, text)
    for source in kernel_paths():
        if path.resolve() == source or (path.exists() and source.exists() and os.path.samefile(path, source)):
            raise argparse.ArgumentTypeError(f"{text!r} is {source.name}, which this script reads: write elsewhere")
    return path


def _can_make_a_file(folder: Path, text: str) -> None:
    """An ArgumentTypeError unless a new file can be made in `folder` (as write_json makes one after the run)."""
    probe = folder / f".benchmark-check-{os.getpid()}.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: no file can be made in {str(folder)!r} "
                                         f"({exc.strerror or exc})") from None
    os.remove(probe)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (`prog: error: ...`, exit code 2), without the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def write_json(path: Path, rows: Sequence[Row], quick: bool) -> None:
    """The rows as JSON, written as a new file renamed into place (a link put there meanwhile is replaced)."""
    from ..core.files import replace_file

    data = {"quick": quick, "rows": [row.as_dict() for row in rows]}
    replace_file(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


# ------------------------------------------------------------------------------------------------ command line


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """--quick and --json PATH."""
    parser = _Parser(prog="python -m helpers.executor.benchmark",
                                     description="Threads/s of the CPU executor for CUDA C beside numba's CUDA "
                                                 "simulator, on vector_add.cu and matmul.cu's matmul_tiled.")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (well under 30 s); no targets")
    parser.add_argument("--json", type=json_path, metavar="PATH", help="also write the rows as JSON to PATH")
    return parser.parse_args(argv)


def run(quick: bool, with_numba: bool | None = None) -> list[Row]:
    """Both halves (numba's when it is installed, or as `with_numba` says), progress on stderr."""
    ours, theirs = (EXECUTOR_QUICK, NUMBA_QUICK) if quick else (EXECUTOR_SIZES, NUMBA_SIZES)
    with_numba = numba_available() if with_numba is None else with_numba
    if not with_numba:
        print(INSTALL_NUMBA.format(python=sys.executable))
    print(f"executor: vector add {ours.vector_add:,} threads, matmul {ours.matmul}^3; best of {ours.repeats} runs",
          file=sys.stderr, flush=True)
    rows = executor_rows(ours, targets=not quick)
    if with_numba:
        print(f"numba's simulator (and the executor again at its sizes): vector add {theirs.vector_add:,} threads, "
              f"matmul {theirs.matmul}^3; best of {theirs.repeats} runs", file=sys.stderr, flush=True)
        rows += executor_rows(theirs, targets=False)  # the same sizes on both: a matmul thread's work grows with n
        rows += numba_rows(theirs)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table (and write --json); 0 when every full-size target was met."""
    args = parse_args(argv)
    rows = run(args.quick)
    print(format_table(rows))
    print("seconds: the best of the `runs` timed (time.perf_counter), every run's result checked against NumPy")
    if any(row.engine == NUMBA for row in rows):
        print("numba's simulator runs smaller sizes (it is far slower); the executor runs them too, and the "
              "comparison below is at the same sizes (a matmul thread's work grows with n)")
    for line in speedups(rows):
        print(line)
    if args.json:
        write_json(args.json, rows, args.quick)
        print(f"wrote {args.json}")
    return 1 if any(row.met is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
