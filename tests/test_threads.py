"""helpers.measuring.threads: reading and capping NumPy's BLAS thread pool, timing a function at each thread count."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.measuring import threads
from helpers.measuring.timing import Timing


@pytest.mark.parametrize(("most", "counts"), [(1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (6, [1, 2, 4, 6]),
                                              (8, [1, 2, 4, 8])])
def test_default_thread_counts_double_and_end_at_the_most(most: int, counts: list[int]) -> None:
    assert threads.default_thread_counts(most) == counts


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", None])
def test_limit_rejects_what_is_not_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        with threads.limit_blas_threads(bad):  # type: ignore[arg-type]
            pass


def test_limit_caps_inside_the_block_and_restores_after() -> None:
    before = threads.blas_threads()
    with threads.limit_blas_threads(1) as in_force:
        assert in_force == 1
        assert threads.blas_threads() == 1
        assert all(lib.threads == 1 for lib in threads.blas_libraries())
    assert threads.blas_threads() == before


def test_numpy_blas_is_found_and_described() -> None:
    libs = threads.blas_libraries()
    assert libs, "NumPy's wheels ship a BLAS that threadpoolctl can see"
    assert all(lib.threads >= 1 and lib.name for lib in libs)
    text = threads.describe_blas()
    assert libs[0].name in text and "thread" in text


def test_describe_without_blas_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "threadpool_info", lambda: [{"user_api": "openmp", "num_threads": 4}])
    assert threads.blas_libraries() == []
    assert threads.blas_threads() == 1
    assert threads.describe_blas().startswith("no BLAS")


def test_library_text_names_version_kernels_and_threads() -> None:
    lib = threads.BlasLibrary("OpenBLAS", "0.3.27", 1, "Haswell", "pthreads")
    assert str(lib) == "OpenBLAS 0.3.27 (Haswell kernels), 1 thread (pthreads)"
    assert str(threads.BlasLibrary("Intel MKL", None, 8, None, None)) == "Intel MKL, 8 threads"


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")
def test_thread_sweep_times_each_count_under_its_cap() -> None:
    a = np.ones((64, 64), dtype=np.float32)
    seen: list[int] = []

    def matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        seen.append(threads.blas_threads())
        return x @ y

    out = threads.thread_sweep(matmul, a, a, threads=[1], flops=2 * 64**3, budget=0.01, n=64)
    assert list(out) == [1]
    t = out[1]
    assert isinstance(t, Timing) and t.label == "matmul, 1 thread" and t.n == 64 and t.gflops is not None
    assert t.extra["threads"] == 1
    assert set(seen) == {1}, "every call ran with the BLAS capped at one thread"


def test_thread_sweep_needs_a_count() -> None:
    with pytest.raises(ValueError, match="at least one thread count"):
        threads.thread_sweep(np.matmul, np.ones((2, 2)), np.ones((2, 2)), threads=[])
