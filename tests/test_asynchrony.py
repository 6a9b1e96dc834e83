"""Chapter 03's asynchronous-launch trap: the size that shows it on every device, and the verdict from the clocks."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.chapters import asynchrony
from helpers.measuring import specs
from helpers.measuring.timing import Timing
from helpers.model import roofline

H200, T4 = specs.get("NVIDIA H200"), specs.get("NVIDIA T4")


def _synced(seconds: float, flops: float | None = 2 * 2048**3) -> Timing:
    return Timing("JAX matmul", "jax", "float32", np.full(5, seconds), 1, 0.1, flops)


def test_on_the_h200_run_the_naive_clock_was_larger_and_the_verdict_says_so() -> None:
    # ../shared/gpu-runs/h200-2026-11-28/03_gpu_cupy.ipynb, cell 19: 109 µs unsynced, 72.1 µs synced, at n = 2,048
    text = asynchrony.verdict(109e-6, 45e-6, _synced(72.1e-6))
    assert "too small" not in text and "GFLOP/s" not in text
    assert text.startswith("Here the naive clock came out 1.5x the synced time") and "109 µs" in text


def test_when_the_naive_clock_is_smaller_the_verdict_gives_the_factor_and_the_face_value_rate() -> None:
    text = asynchrony.verdict(15.5e-6, 8e-6, _synced(603e-6, flops=2 * 512**3))
    assert text.startswith("The naive number is 39x too small") and "8 µs" in text
    assert f"{2 * 512**3 / 15.5e-6 / 1e9:,.0f} GFLOP/s" in text


@pytest.mark.parametrize("bad", [0, -1e-6, float("nan"), None])
def test_the_verdict_refuses_clocks_that_are_not_times(bad) -> None:
    with pytest.raises(ValueError, match="naive"):
        asynchrony.verdict(bad, 1e-6, _synced(1e-3))


def test_the_size_grows_until_the_work_outlasts_the_queueing_on_the_device_here() -> None:
    # on the H200 a 2,048 matmul (TF32) is predicted at tens of µs: the H200 run's 109 µs queueing needs n = 8,192
    n = asynchrony.trap_size(H200, "tf32", 109e-6)
    assert n == 8192
    assert roofline.predict_matmul_seconds(H200, n, n, n, "tf32", timed="kernel") >= asynchrony.MARGIN * 109e-6
    smaller = n // 2
    assert roofline.predict_matmul_seconds(H200, smaller, smaller, smaller, "tf32", timed="kernel") < (
        asynchrony.MARGIN * 109e-6)
    # a T4 does float32 on its CUDA cores: far fewer FLOP/s, so a smaller matmul outlasts the same queueing
    t4 = asynchrony.trap_size(T4, "float32", 109e-6)
    assert t4 < n and roofline.predict_matmul_seconds(T4, t4, t4, t4, "float32", timed="kernel") >= (
        asynchrony.MARGIN * 109e-6)
    assert asynchrony.trap_size(T4, "float32", 1.0) == 8192  # nothing is long enough: the largest that fits


def test_the_rate_verdict_calls_a_rate_above_the_peak_impossible_and_one_below_it_still_wrong() -> None:
    above = asynchrony.rate_verdict(1.5e12, 2.1e11)
    assert above.startswith("The first rate is 714% of the peak: impossible, so that clock was wrong.")
    below = asynchrony.rate_verdict(1e11, 2e11)
    assert below.startswith("The first rate is 50% of the peak: it looks possible, and it is still wrong.")
    assert "impossible" not in below
    assert asynchrony.rate_verdict(1e11, None).startswith("No peak is known here")
    for bad in (0, -1.0, float("nan"), "fast"):
        with pytest.raises(ValueError, match="rate"):
            asynchrony.rate_verdict(bad, 2e11)
