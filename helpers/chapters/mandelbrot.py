"""The graphics analogy: one small function applied to every pixel of an image, three ways.

A GPU was built to run the same short program for every pixel of a frame. The Mandelbrot set is such a
program: for the point c of each pixel, count the steps z -> z*z + c takes to leave the circle |z| = 2.

    mandelbrot_loops(120, 90)            # Python: escape_steps() for one pixel after another
    mandelbrot_array(640, 480, xp=np)    # the same maths on whole arrays (NumPy, or CuPy with xp=cupy)
    mandelbrot_gpu(640, 480)             # helpers/kernels/mandelbrot.cu, one GPU thread per pixel
    figure(counts)                       # the image
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from ..core.validate import fits_in_memory, positive_int

#: The rectangle of the complex plane drawn: (x0, x1, y0, y1), real parts then imaginary parts.
BOX = (-2.2, 1.0, -1.2, 1.2)
MAX_STEPS = 100
#: FLOPs per step as the kernel writes them: |z|² (3), the new real part (4) and imaginary part (3).
FLOPS_PER_STEP = 10


def _check(width: int, height: int, max_steps: int, box: Any = BOX, host_arrays: bool = True) -> None:
    """Refuse a size, step count or box that cannot make an image. host_arrays: the image is computed in this
    machine's memory (the loops and the arrays), so it must fit there; the GPU kernel's is the GPU's, and it is
    timed call by call: the check of free memory (hundreds of µs) would be part of every timing."""
    for name, value in (("width", width), ("height", height), ("max_steps", max_steps)):
        least = 2 if name != "max_steps" else 1
        if positive_int(name, value) < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    if host_arrays:  # the array version keeps about six float64 arrays of the image (c, z, their squares, counts)
        fits_in_memory(6 * 8 * width * height, f"a {width:,} x {height:,} image")
    try:
        x0, x1, y0, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"box must be four numbers (x0, x1, y0, y1), e.g. {BOX}; got {box!r}") from None
    if not (x0 < x1 and y0 < y1):
        raise ValueError(f"box (x0, x1, y0, y1) needs x0 < x1 and y0 < y1; got {box!r}")


def escape_steps(c_re: float, c_im: float, max_steps: int = MAX_STEPS) -> int:
    """The per-pixel function: steps of z -> z*z + c, from z = 0, while |z| <= 2 (at most max_steps)."""
    z_re = z_im = 0.0
    step = 0
    while step < max_steps and z_re * z_re + z_im * z_im <= 4.0:
        z_re, z_im = z_re * z_re - z_im * z_im + c_re, 2.0 * z_re * z_im + c_im
        step += 1
    return step


def mandelbrot_loops(width: int, height: int, box: tuple[float, ...] = BOX, max_steps: int = MAX_STEPS) -> np.ndarray:
    """escape_steps() for every pixel, one after another in Python (float64): rows of `height`, `width` wide."""
    _check(width, height, max_steps, box)
    x0, x1, y0, y1 = box
    counts = np.empty((height, width), dtype=np.int32)
    for py in range(height):
        c_im = y0 + (y1 - y0) * py / (height - 1)
        for px in range(width):
            counts[py, px] = escape_steps(x0 + (x1 - x0) * px / (width - 1), c_im, max_steps)
    return counts


def mandelbrot_array(width: int, height: int, box: tuple[float, ...] = BOX, max_steps: int = MAX_STEPS,
                     xp: Any = np, dtype: str = "float64") -> Any:
    """The same counts from whole arrays: every pixel takes each step at once; escaped pixels stay frozen.

    xp is numpy or cupy: the same code runs on the CPU and on a GPU.
    """
    _check(width, height, max_steps, box)
    x0, x1, y0, y1 = box
    c_re = (x0 + (x1 - x0) * xp.arange(width, dtype=dtype) / (width - 1)).astype(dtype)[None, :]
    c_im = (y0 + (y1 - y0) * xp.arange(height, dtype=dtype) / (height - 1)).astype(dtype)[:, None]
    z_re = xp.zeros((height, width), dtype=dtype)
    z_im = xp.zeros((height, width), dtype=dtype)
    counts = xp.zeros((height, width), dtype=xp.int32)
    for _ in range(max_steps):
        inside = z_re * z_re + z_im * z_im <= 4.0
        z_re, z_im = (xp.where(inside, z_re * z_re - z_im * z_im + c_re, z_re),
                      xp.where(inside, 2.0 * z_re * z_im + c_im, z_im))
        counts += inside
    return counts


def mandelbrot_gpu(width: int, height: int, box: tuple[float, ...] = BOX, max_steps: int = MAX_STEPS) -> Any:
    """The counts from helpers/kernels/mandelbrot.cu (float32), one GPU thread per pixel (GPU only)."""
    import cupy

    from ..gpu.cuda import blocks_for, file_kernel

    _check(width, height, max_steps, box, host_arrays=False)
    counts = cupy.empty((height, width), dtype=cupy.int32)
    x0, x1, y0, y1 = (np.float32(v) for v in box)
    file_kernel("mandelbrot.cu", "mandelbrot")(
        (blocks_for(width, 16), blocks_for(height, 16)), (16, 16),
        (counts, np.int32(width), np.int32(height), x0, x1, y0, y1, np.int32(max_steps)))
    return counts


#: The image the CUDA kernel is counted at on the CPU executor: the same rectangle of the plane as any image, so the
#: steps per pixel, and the counts per pixel, are those of a bigger one (a few tenths of a second).
COUNT_IMAGE = (320, 240)


@cache
def _kernel_counts(max_steps: int, box: tuple[float, ...]) -> Any:
    """What mandelbrot.cu does over COUNT_IMAGE on the CPU executor."""
    from .. import executor
    from ..gpu.cuda import blocks_for, kernel_source

    width, height = COUNT_IMAGE
    counts = np.zeros((height, width), np.int32)
    x0, x1, y0, y1 = (np.float32(v) for v in box)
    return executor.Program(kernel_source("mandelbrot.cu")).launch(
        "mandelbrot", (blocks_for(width, 16), blocks_for(height, 16)), (16, 16),
        (counts, np.int32(width), np.int32(height), x0, x1, y0, y1, np.int32(max_steps))).counters


def predict_gpu(device: Any, width: int, height: int, max_steps: int = MAX_STEPS, box: tuple[float, ...] = BOX) -> Any:
    """mandelbrot_gpu's launch on `device` (a GPU spec or its name) by chapter 07's kernel model: what the executor
    counted over COUNT_IMAGE, scaled by the pixels, a warp paying for its slowest pixel's steps as the executor
    counts it; the counts written to DRAM once. A roofline.KernelTime."""
    from ..gpu.cuda import kernel_source, price_kernel

    _check(width, height, max_steps, box, host_arrays=False)
    counted = _kernel_counts(int(max_steps), tuple(float(v) for v in box))
    scale = width * height / (COUNT_IMAGE[0] * COUNT_IMAGE[1])
    return price_kernel(device, kernel_source("mandelbrot.cu"), "mandelbrot.cu", "mandelbrot", counted,
                   4.0 * width * height, scale)


def flops(counts: Any) -> float:
    """FLOPs an image took: FLOPS_PER_STEP for every step of every pixel."""
    if not hasattr(counts, "sum") or not hasattr(counts, "dtype") or np.dtype(counts.dtype).kind not in "iuf":
        raise ValueError(f"counts must be an array of escape steps (from mandelbrot_array), got {counts!r:.40}")
    return float(FLOPS_PER_STEP * int(counts.sum()))


def figure(counts: Any, title: str = "Mandelbrot set: escape steps per pixel") -> Any:
    """The counts as an image (plotly heatmap), pixel (0, 0) at the bottom left as in the complex plane."""
    import plotly.graph_objects as go

    from ..core.backend import to_numpy
    from ..core.style import TEMPLATE

    counts = to_numpy(counts)
    height, width = counts.shape
    small = np.uint8 if counts.max(initial=0) <= 255 else np.uint16  # stored in the notebook: keep it small
    fig = go.Figure(go.Heatmap(z=np.log1p(counts).astype(np.float32), colorscale="Magma", showscale=False,
                               customdata=counts.astype(small),
                               hovertemplate="pixel (%{x}, %{y}): %{customdata} steps<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=title, height=min(520, 120 + 400 * height // width),
                      xaxis=dict(title=f"{width} pixels", showgrid=False, showticklabels=False),
                      yaxis=dict(title=f"{height} pixels", showgrid=False, showticklabels=False, scaleanchor="x"))
    return fig
