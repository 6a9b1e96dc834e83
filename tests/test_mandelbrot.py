"""The per-pixel function three ways: loops and arrays agree pixel for pixel; bad sizes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.chapters import mandelbrot as mb


@pytest.mark.parametrize(("c", "steps"), [((0.0, 0.0), 100), ((2.0, 0.0), 2), ((-1.0, 0.0), 100), ((1.0, 1.0), 2),
                                          ((3.0, 0.0), 1)])
def test_escape_steps(c: tuple[float, float], steps: int) -> None:
    assert mb.escape_steps(*c, max_steps=100) == steps


def test_loops_and_arrays_agree_pixel_for_pixel_in_float64() -> None:
    loops = mb.mandelbrot_loops(31, 17, max_steps=40)
    arrays = mb.mandelbrot_array(31, 17, max_steps=40)
    assert loops.shape == (17, 31) and loops.dtype == np.int32
    assert np.array_equal(loops, arrays)
    assert loops[8, 0] == mb.escape_steps(mb.BOX[0], (mb.BOX[2] + mb.BOX[3]) / 2, 40)  # left edge, middle row


def test_float32_arrays_differ_only_at_the_edge_of_the_set() -> None:
    exact, rounded = mb.mandelbrot_array(64, 48), mb.mandelbrot_array(64, 48, dtype="float32")
    assert (exact == rounded).mean() > 0.99


def test_flops_count_every_step() -> None:
    assert mb.flops(np.array([[1, 2], [3, 4]])) == 10 * mb.FLOPS_PER_STEP


@pytest.mark.parametrize(("width", "height", "steps"), [(1, 10, 5), (10, 0, 5), (10, 10, 0), (2.5, 10, 5)])
def test_bad_sizes_are_refused(width, height, steps) -> None:
    with pytest.raises(ValueError, match="must be (a positive|an) integer"):
        mb.mandelbrot_loops(width, height, max_steps=steps)


@pytest.mark.parametrize("box", [(0, 1), (1.0, 0.0, -1.0, 1.0), "abcd", None])
def test_a_bad_box_is_refused(box) -> None:
    with pytest.raises(ValueError, match=r"box"):
        mb.mandelbrot_array(10, 10, box=box)


def test_the_figure_is_an_image_of_the_counts() -> None:
    counts = mb.mandelbrot_array(40, 30, max_steps=20)
    heatmap = mb.figure(counts).data[0]
    assert heatmap.type == "heatmap" and np.array_equal(heatmap.customdata, counts)


def test_the_gpu_kernels_call_does_no_host_work_beyond_its_launch(monkeypatch) -> None:
    """gpu-report timed mandelbrot_gpu at 174 µs a call on an H200 where chapter 03's own launch took 22 µs: each call
    checked this machine's free memory and read the kernel's file. A call must do neither."""
    import sys

    from test_cuda import FakeCupy

    from helpers.gpu import cuda, sources

    fake = FakeCupy()
    fake.emulations["mandelbrot"] = lambda grid, block, counts, *rest: counts.fill(1)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    cuda.raw_kernel.cache_clear()
    mb.mandelbrot_gpu(64, 48)  # the first call may read the file
    monkeypatch.setattr(mb, "fits_in_memory", lambda *a: pytest.fail("a memory check in a GPU call"))
    monkeypatch.setattr(sources, "KERNELS", sources.KERNELS / "nowhere")  # a file read would now fail
    counts = mb.mandelbrot_gpu(64, 48)
    assert counts.shape == (48, 64) and (counts == 1).all()
    cuda.raw_kernel.cache_clear()
