"""How many threads NumPy's BLAS uses, running it with fewer, and timing a function at each thread count.

NumPy hands matrix products to a BLAS library (OpenBLAS, MKL or Apple Accelerate) that splits the work over
the cores with its own pool of threads. threadpoolctl can read and cap that pool while a block of code runs:

    with h.threads.limit_blas_threads(1):
        t1 = h.benchmark(np.matmul, a, b)       # one core
    h.threads.thread_sweep(np.matmul, a, b)     # {1: Timing, 2: Timing, ...}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from threadpoolctl import threadpool_info, threadpool_limits

from ..core.validate import positive_int
from .record import Timing
from .timer import benchmark

_NAMES = {"openblas": "OpenBLAS", "mkl": "Intel MKL", "blis": "BLIS", "accelerate": "Apple Accelerate"}


@dataclass(frozen=True)
class BlasLibrary:
    """One BLAS library loaded in this process, as threadpoolctl reports it."""

    name: str  # "OpenBLAS", "Intel MKL", ...
    version: str | None
    threads: int  # threads it will use for the next call
    architecture: str | None  # the CPU kernels it picked (OpenBLAS: "Haswell", "SkylakeX", ...)
    threading_layer: str | None  # "pthreads", "openmp", "tbb", ...

    def __str__(self) -> str:
        text = self.name + (f" {self.version}" if self.version else "")
        if self.architecture:
            text += f" ({self.architecture} kernels)"
        text += f", {self.threads} thread{'s' if self.threads != 1 else ''}"
        return text + (f" ({self.threading_layer})" if self.threading_layer else "")


def blas_libraries() -> list[BlasLibrary]:
    """The BLAS libraries NumPy has loaded (usually exactly one), with their thread counts."""
    import numpy  # noqa: F401 - loading NumPy loads its BLAS, which is what threadpoolctl inspects

    out = []
    for lib in threadpool_info():
        if lib.get("user_api") != "blas":
            continue
        api = str(lib.get("internal_api", "blas"))
        out.append(BlasLibrary(_NAMES.get(api, api), lib.get("version"), int(lib.get("num_threads") or 1),
                               lib.get("architecture"), lib.get("threading_layer")))
    return out


def blas_threads() -> int:
    """Threads NumPy's BLAS uses right now (1 when no BLAS with a thread pool is found)."""
    libs = blas_libraries()
    return max((lib.threads for lib in libs), default=1)


def describe_blas() -> str:
    """One line: which BLAS NumPy calls for matrix products, and with how many threads."""
    libs = blas_libraries()
    if not libs:
        return "no BLAS with a thread pool found (NumPy's matrix products run on one thread)"
    return "; ".join(str(lib) for lib in libs)


@contextmanager
def limit_blas_threads(threads: int) -> Iterator[int]:
    """Within the block, NumPy's BLAS uses at most `threads` threads; yields the count really in force."""
    threads = positive_int("threads", threads)
    with threadpool_limits(limits=threads, user_api="blas"):
        yield blas_threads()


def default_thread_counts(most: int | None = None) -> list[int]:
    """1, 2, 4, ... up to `most` (default: the BLAS's current thread count), always ending at `most`."""
    most = blas_threads() if most is None else positive_int("most", most)
    counts, k = [], 1
    while k < most:
        counts.append(k)
        k *= 2
    return counts + [most]


def thread_sweep(
    fn: Callable[..., Any],
    *args: Any,
    threads: Sequence[int] | None = None,
    label: str | None = None,
    **benchmark_kwargs: Any,
) -> dict[int, Timing]:
    """Benchmark `fn(*args)` with the BLAS capped at each thread count: {threads: Timing}.

    threads: the counts to try (default 1, 2, 4, ... up to all the BLAS's threads). Other keyword arguments
    (flops=, bytes=, budget=, n=, ...) go to benchmark(). Each Timing's label says its thread count and its
    `extra["threads"]` holds the count in force while it ran.
    """
    if threads is not None and (isinstance(threads, str) or not isinstance(threads, Sequence)):
        raise ValueError(f"threads must be a list of thread counts such as [1, 2], got {threads!r:.60}")
    counts = [positive_int("threads", k) for k in threads] if threads is not None else default_thread_counts()
    if not counts:
        raise ValueError("thread_sweep() needs at least one thread count")
    name = label or getattr(fn, "__name__", "fn")
    out: dict[int, Timing] = {}
    for k in counts:
        with limit_blas_threads(k) as in_force:
            asked = f" (asked for {k})" if in_force != k else ""  # the BLAS may have fewer threads than asked
            t = benchmark(fn, *args, label=f"{name}, {in_force} thread{'s' if in_force != 1 else ''}{asked}",
                          **benchmark_kwargs)
        t.extra["threads"] = in_force
        out[k] = t
    return out
