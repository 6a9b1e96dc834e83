"""The CPU model of CUDA's thread grid: coverage, idle threads, out-of-bounds accesses, grid-stride loops."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.gpu import grid


def arrays(n: int):
    a = np.arange(n, dtype=np.float32)
    return a, np.full(n, 100, dtype=np.float32), np.zeros(n, dtype=np.float32)


def test_one_thread_per_element_covers_everything_and_leaves_the_spare_threads_idle() -> None:
    a, b, out = arrays(20)
    run = grid.launch(grid.vector_add, 3, 8, a, b, out, 20)
    assert np.array_equal(out, a + b)
    assert run.threads == 24 and run.arrays == {"a": 20, "b": 20, "out": 20}
    assert run.idle_threads() == [20, 21, 22, 23] and run.out_of_bounds() == []
    assert run.writers("out") == {i: [i] for i in range(20)}
    assert run.writers("out")[17] == [run.global_id(2, 1)]
    assert "every one exactly once" in run.summary() and "global ids 20..23" in run.summary()


def test_a_missing_bounds_check_is_caught_not_raised() -> None:
    a, b, out = arrays(20)
    run = grid.launch(grid.vector_add_unchecked, 3, 8, a, b, out, 20)
    assert np.array_equal(out, a + b), "in-bounds results are still right: that is what hides the bug"
    bad = run.out_of_bounds()
    assert {(x.array, x.write) for x in bad} == {("a", False), ("b", False), ("out", True)}
    assert sorted({x.index for x in bad}) == [20, 21, 22, 23] and run.idle_threads() == []
    assert "OUT OF BOUNDS: 4 reads of a[20..23], 4 reads of b[20..23], 4 writes of out[20..23]" in run.summary()


def test_negative_indices_are_out_of_bounds_not_wrapped_around() -> None:
    out = np.zeros(4)

    def backwards(t, out, n):
        out[t.threadIdx.x - 1] = 1.0

    run = grid.launch(backwards, 1, 4, out, 4)
    assert [x.index for x in run.out_of_bounds()] == [-1]
    assert out.tolist() == [1.0, 1.0, 1.0, 0.0], "Python would have written out[-1], the last element"


def test_out_of_bounds_reads_give_nan() -> None:
    x, out = np.ones(3), np.zeros(4)

    def copy(t, x, out):
        out[t.threadIdx.x] = x[t.threadIdx.x]

    grid.launch(copy, 1, 4, x, out)
    assert out[:3].tolist() == [1.0, 1.0, 1.0] and np.isnan(out[3])


@pytest.mark.parametrize(("blocks", "threads"), [(1, 1), (2, 4), (3, 7), (5, 32)])
def test_the_grid_stride_loop_covers_any_n_with_any_grid(blocks: int, threads: int) -> None:
    a, b, out = arrays(101)
    run = grid.launch(grid.vector_add_grid_stride, blocks, threads, a, b, out, 101)
    assert np.array_equal(out, a + b) and run.out_of_bounds() == []
    stride = blocks * threads  # thread g writes g, g + stride, g + 2 stride, ...
    assert run.writers("out") == {i: [i % stride] for i in range(101)}


def test_elements_written_twice_are_reported() -> None:
    out = np.zeros(4)

    def everyone_writes_zero(t, out):
        out[0] = t.threadIdx.x

    run = grid.launch(everyone_writes_zero, 1, 3, out)
    assert run.writers("out") == {0: [0, 1, 2]}
    assert "never written: 1..3; written more than once: 0" in run.summary()


def test_the_thread_sees_cuda_names() -> None:
    seen = []
    grid.launch(lambda t: seen.append((t.blockIdx.x, t.threadIdx.x, t.blockDim.x, t.gridDim.x)), 2, 2)
    assert seen == [(0, 0, 2, 2), (0, 1, 2, 2), (1, 0, 2, 2), (1, 1, 2, 2)]


@pytest.mark.parametrize(("blocks", "threads", "message"), [
    (0, 8, "grid"), (2, -1, "block"), (1.5, 8, "grid"), (True, 8, "grid"), (1000, 1000, "too many"),
])
def test_bad_launch_shapes_are_refused(blocks, threads, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        grid.launch(grid.vector_add, blocks, threads, *arrays(4), 4)


def test_bad_arrays_and_indices_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="1-D arrays"):
        grid.launch(grid.vector_add, 1, 4, np.zeros((2, 2)), np.zeros(4), np.zeros(4), 4)
    with pytest.raises(TypeError, match="one integer"):
        grid.launch(lambda t, out: out.__setitem__(0.5, 1.0), 1, 1, np.zeros(2))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        grid.launch(grid.vector_add, 1, 4, *arrays(4), 4, 5)
    with pytest.raises(ValueError, match="no array called 'c'"):
        grid.launch(grid.vector_add, 1, 4, *arrays(4), 4).writers("c")


def test_the_figure_draws_threads_elements_and_spills() -> None:
    run = grid.launch(grid.vector_add_unchecked, 3, 8, *arrays(20), 20)
    fig = run.figure()
    names = [trace.name for trace in fig.data if trace.name]
    assert names == ["block 0", "block 1", "block 2", "out[0..19]", "past the end (out of bounds)"]
    assert list(fig.data[-1].x) == [20, 21, 22, 23]
    lines = [trace for trace in fig.data if trace.mode == "lines"]
    assert len(lines) == 24 and sum(trace.line.color == "#D55E00" for trace in lines) == 4


def test_the_figure_refuses_what_it_cannot_draw_legibly() -> None:
    run = grid.launch(grid.vector_add, 4, 256, *arrays(1000), 1000)
    with pytest.raises(ValueError, match="too many to draw"):
        run.figure()


def test_ranges() -> None:
    assert grid._ranges([5, 1, 2, 3, 9, 10]) == "1..3, 5, 9..10" and grid._ranges([]) == ""
