"""helpers.figures.plots: what the figures contain (from fixed Timings); the model itself is tested in test_roofline."""

from __future__ import annotations

import math
import sys

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from helpers.core import style
from helpers.figures import plots, rooflines
from helpers.measuring import specs
from helpers.measuring.hardware import Peak
from helpers.measuring.timing import Timing, compare

T4 = specs.get("NVIDIA T4")


PEAK = Peak("CPU (2 cores)", 160e9, 20e9, "estimated: test formula")


def timing(label: str, backend: str, median: float, flops: float | None = None, nbytes: float | None = None,
           n: int | None = None, peak: Peak | None = PEAK, dtype: str = "float32") -> Timing:
    samples = np.array([0.9, 0.95, 1.0, 1.05, 1.2]) * median
    return Timing(label, backend, dtype, samples=samples, number=1, compile_time=median, flops=flops,
                  bytes=nbytes, peak=peak, n=n)


def trace(fig: go.Figure, prefix: str) -> go.Scatter:
    found = [t for t in fig.data if t.name and t.name.startswith(prefix)]
    assert len(found) == 1, [t.name for t in fig.data]
    return found[0]


# --- roofline figure ------------------------------------------------------------------------------------------


def test_cpu_roofline_draws_both_roofs_the_ridge_and_the_points(cpu):
    axpby = timing("axpby", "numpy", 1e-3, flops=3e6, nbytes=12e6)  # 0.25 FLOP/B, 3 GFLOP/s
    matmul = timing("matmul 512", "numpy", 4e-3, flops=2 * 512**3, nbytes=3 * 512**2 * 4)
    fig = plots.roofline(cpu, [axpby, matmul])
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"

    memory = trace(fig, "memory")
    assert "measured here" in memory.name
    x, y = np.asarray(memory.x), np.asarray(memory.y)
    assert np.allclose(y, x * 20e9 / 1e9)  # GFLOP/s = intensity x GB/s
    assert x[-1] == pytest.approx(8.0) and y[-1] == pytest.approx(160.0)  # ends at the highest ridge

    fp32, fp64 = trace(fig, "fp32 peak"), trace(fig, "fp64 peak")
    assert list(fp32.y) == pytest.approx([160.0, 160.0]) and fp32.x[0] == pytest.approx(8.0)
    assert list(fp64.y) == pytest.approx([80.0, 80.0]) and fp64.x[0] == pytest.approx(4.0)
    assert "estimated" in fp32.name and "estimated" in fp64.name
    assert fp32.line.dash != fp64.line.dash

    ridge = trace(fig, "ridge")
    assert list(ridge.x) == pytest.approx([8.0, 4.0])
    assert any("ridge 8 FLOP/B" in text for text in ridge.text)

    points = trace(fig, "measured: numpy")
    assert list(points.x) == pytest.approx([0.25, 2 * 512 / 12])
    assert list(points.y) == pytest.approx([axpby.gflops, matmul.gflops])
    assert list(points.text) == ["axpby", "matmul 512"]
    sources = fig.layout.annotations[0].text
    assert "2 cores x 2.50 GHz" in sources and "measured here: test copy" in sources


def test_spec_roofline_says_published_and_where_from():
    fig = plots.roofline(T4)
    assert "published spec" in fig.layout.title.text and "NVIDIA T4" in fig.layout.title.text
    roofs = [t for t in fig.data if "peak" in (t.name or "")]
    assert {t.y[0] for t in roofs} == {8100.0, 65000.0}
    assert all("(published)" in t.name for t in roofs)
    assert "NVIDIA T4 datasheet" in fig.layout.annotations[0].text
    assert "not measured on this machine" in fig.layout.annotations[0].text


def test_predictions_are_hollow_labelled_and_sit_on_the_roof():
    measured = timing("numpy axpby", "numpy", 1e-3, flops=3e6, nbytes=12e6)
    fig = plots.roofline(T4, [measured], predictions=[("axpby", 0.25), ("matmul fp16", 500, "float16")])
    pred = trace(fig, "prediction")
    assert pred.name == "prediction (from published specs)"
    assert pred.marker.symbol.endswith("-open")
    assert list(pred.y) == pytest.approx([80.0, 65000.0])  # 0.25 x 320 GB/s; the fp16 peak
    assert all(text.endswith("(predicted)") for text in pred.text)
    point = trace(fig, "measured")
    assert not str(point.marker.symbol).endswith("-open")
    assert "predicted" not in " ".join(point.text)
    with pytest.raises(ValueError, match="intensity"):
        plots.roofline(T4, predictions=[("bad", -1)])


def test_cpu_predictions_do_not_claim_published_specs(cpu):
    pred = trace(plots.roofline(cpu, predictions=[("x", 1.0)]), "prediction")
    assert "published" not in pred.name and "estimated" in pred.name


def test_roofline_of_a_peak_and_its_errors(cpu):
    fig = plots.roofline(PEAK, {"mine": timing("t", "numpy", 1e-3, flops=1e6, nbytes=1e6)})
    assert trace(fig, "peak").y[0] == pytest.approx(160.0)
    assert list(trace(fig, "measured").text) == ["mine"]
    with pytest.raises(ValueError, match="bytes="):
        plots.roofline(cpu, [timing("no bytes", "numpy", 1e-3, flops=1e6)])
    with pytest.raises(ValueError, match="no roofline"):
        plots.roofline(Peak("GPU", None, None, "no published peaks on file"))


# --- speed-ups ------------------------------------------------------------------------------------------------


def test_speedup_bars_values_are_baseline_over_each_median():
    loops = timing("loops", "python", 2.0, flops=2e6)
    numpy = timing("numpy", "numpy", 1e-3, flops=2e6)
    jax = timing("jax", "jax", 4e-4, flops=2e6, peak=None)
    for given in ([loops, numpy, jax], {"loops": loops, "numpy": numpy, "jax": jax}, compare([loops, numpy, jax])):
        fig = plots.speedup_bars(given)
        bar = fig.data[0]
        expected = [loops.median / t.median for t in (loops, numpy, jax)]
        assert list(bar.x) == pytest.approx(expected)
        assert list(bar.y) == ["loops", "numpy", "jax"]
        assert fig.layout.xaxis.type == "log"
    assert bar.text[1].startswith("2,000x") and "1 ms" in bar.text[1]
    assert bar.text[0].startswith("1x")
    assert list(bar.marker.color) == [style.BACKEND_COLOURS[b] for b in ("python", "numpy", "jax")]
    assert "GFLOP/s" in bar.hovertext[1] and "of peak" in bar.hovertext[1]
    assert "of peak" not in bar.hovertext[2]  # no peak known: no fraction claimed
    vertical = plots.speedup_bars([loops, numpy], horizontal=False)
    assert list(vertical.data[0].y) == pytest.approx([1.0, 2000.0]) and vertical.layout.yaxis.type == "log"


def test_speedup_bars_tick_whole_decades_only_so_the_room_for_text_is_no_scale():
    slower = plots.speedup_bars([timing("numpy", "numpy", 1e-3), timing("jax", "jax", 3e-3)])
    axis = slower.layout.xaxis
    assert axis.dtick == 1 and axis.ticksuffix == "x"  # 0.1x, 1x: no 2..9 minor labels, no tick past the bars
    assert axis.range[0] < math.log10(1 / 3) and axis.range[1] > 0


def test_speedup_bars_rejects_empty_and_foreign_input():
    with pytest.raises(ValueError):
        plots.speedup_bars([])
    with pytest.raises(TypeError, match="Timing"):
        plots.speedup_bars({"a": 1.0})


def test_gflops_bars():
    ts = [timing("numpy", "numpy", 1e-4, flops=2e6), timing("jax", "jax", 5e-5, flops=2e6, peak=None)]
    fig = plots.gflops_bars(ts)
    assert list(fig.data[0].y) == pytest.approx([20.0, 40.0])
    assert fig.layout.yaxis.type == "log"
    assert fig.data[0].text[0] == "20 GFLOP/s<br>12.5% of peak"  # of the 160 GFLOP/s roof
    assert fig.data[0].text[1] == "40 GFLOP/s"  # no peak known: no fraction claimed
    with pytest.raises(ValueError, match="flops="):
        plots.gflops_bars([timing("x", "numpy", 1.0)])


# --- scaling --------------------------------------------------------------------------------------------------


def test_scaling_reference_slopes_go_through_the_anchor():
    sizes = [64, 128, 256, 512]
    numpy = [timing("numpy", "numpy", 1e-9 * n**3, n=n) for n in sizes]
    fig = plots.scaling({"numpy": numpy, "loops": ([16, 32], [0.01, 0.08])}, slopes=(1, 2, 3))
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    measured = trace(fig, "numpy")
    assert list(measured.x) == sizes and list(measured.y) == pytest.approx([t.median for t in numpy])
    assert measured.error_y.array is not None and trace(fig, "loops").error_y.array is None
    y_lo = 10 ** fig.layout.yaxis.range[0]
    for k, label in ((1, "∝ n"), (2, "∝ n²"), (3, "∝ n³")):
        ref = trace(fig, f"{label} (reference)")
        (x0, x1), (y0, y1) = ref.x, ref.y
        assert 16 <= x0 < x1 == 512  # within the measured sizes, ending at the anchor
        assert x0 == 16 or y0 == pytest.approx(y_lo)  # clipped where it leaves the visible times, not before
        assert math.log(y1 / y0) / math.log(x1 / x0) == pytest.approx(k)
        assert y1 == pytest.approx(numpy[-1].median)  # through the largest-n point of the first series
        assert ref.line.dash and label in ref.text
    assert trace(fig, "∝ n (reference)").x[0] == 16 and trace(fig, "∝ n³ (reference)").x[0] > 16
    assert trace(fig, "numpy").line.color == style.BACKEND_COLOURS["numpy"]
    assert trace(fig, "loops").line.color == style.BACKEND_COLOURS["python"]


def test_series_of_one_backend_get_their_own_marker_and_dash():
    sizes = [64, 128]
    fig = plots.scaling({"numpy, float32": [timing("numpy", "numpy", 1e-6 * n, n=n) for n in sizes],
                         "numpy, float64": [timing("numpy", "numpy", 2e-6 * n, n=n) for n in sizes],
                         "jax, float32": [timing("jax", "jax", 1e-6 * n, n=n) for n in sizes]}, slopes=())
    f32, f64, jax = (trace(fig, name) for name in ("numpy, float32", "numpy, float64", "jax, float32"))
    assert f32.line.color == f64.line.color and (f32.marker.symbol, f32.line.dash) != (f64.marker.symbol, f64.line.dash)
    assert jax.marker.symbol == f32.marker.symbol  # another colour: the first marker again


def test_scaling_errors():
    with pytest.raises(ValueError, match="n="):
        plots.scaling({"x": [timing("x", "numpy", 1.0)]})
    with pytest.raises(ValueError, match="anchor"):
        plots.scaling({"x": ([1, 2], [1.0, 2.0])}, anchor="y")
    with pytest.raises(ValueError, match="positive"):
        plots.scaling({"x": ([1, 2], [1.0, 0.0])})
    with pytest.raises(ValueError):
        plots.scaling({})


def test_power_label_and_colours():
    assert [plots.power_label(k) for k in (1, 2, 3, 1.5)] == ["∝ n", "∝ n²", "∝ n³", "∝ n^1.5"]
    assert style.colour("loops") == style.colour("python") == style.BACKEND_COLOURS["python"]
    assert style.colour("numpy, float64") == style.BACKEND_COLOURS["numpy"]
    assert style.colour("something else") == style.colour("something else")


# --- renderer -------------------------------------------------------------------------------------------------


@pytest.fixture
def renderer():
    saved = pio.renderers.default
    yield
    pio.renderers.default = saved


def test_offline_renderer_by_default_colab_in_colab_and_user_choice_kept(monkeypatch, renderer):
    monkeypatch.delenv("PLOTLY_RENDERER", raising=False)
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert style.use_offline_renderer() == "plotly_mimetype"
    monkeypatch.setitem(sys.modules, "google.colab", object())
    assert style.use_offline_renderer() == "colab"
    pio.renderers.default = "json"
    monkeypatch.setenv("PLOTLY_RENDERER", "json")
    assert style.use_offline_renderer() == "json"
    assert "connected" not in pio.renderers.default


def test_point_labels_at_the_same_intensity_go_left_and_right():
    from helpers.figures.rooflines import _label_positions

    # three axpby-like points share an intensity; two matmul-like points are apart
    points = [(0.25, 4.5), (0.25, 4.4), (0.25, 2.8), (85.0, 180.0), (170.0, 182.0)]
    pos = _label_positions(points)
    assert {pos[0], pos[1], pos[2]} == {"middle right", "middle left"}
    assert pos[1] != pos[0]  # the two nearly equal y values get opposite sides
    assert {pos[3], pos[4]} == {"bottom center", "top center"}
    # a falling pair (matmul 512 above matmul 1024, chapter 02): the higher one above, the lower one below
    falling = _label_positions([(5.3, 45.0), (21.0, 100.0), (85.0, 115.0), (170.0, 52.0)])
    assert falling == ["bottom center", "bottom center", "top center", "bottom center"]


def test_labels_of_points_close_under_a_roof_go_below_them_so_no_roof_line_crosses_them(cpu):
    near = timing("matmul 512", "numpy", 2 * 512**3 / 150e9, flops=2 * 512**3, nbytes=3 * 4 * 512**2)  # 94% of 160
    far = timing("matmul 128", "numpy", 2 * 128**3 / 20e9, flops=2 * 128**3, nbytes=3 * 4 * 128**2)  # 12%
    fig = plots.roofline(cpu, [near, far], predictions=[("matmul 4096", 341.0)])
    measured = trace(fig, "measured: numpy")
    positions = dict(zip(measured.text, measured.textposition, strict=True))
    assert positions["matmul 512"].startswith("bottom")
    unmoved = rooflines._label_positions([(near.intensity, near.gflops), (far.intensity, far.gflops)])[1]
    assert positions["matmul 128"] == unmoved  # far below its roof: placed as usual
    assert fig.data[-1].textposition == "bottom right"  # a prediction sits on its roof


# --- GFLOP/s against size, measured beside predicted ----------------------------------------------------------


def test_gflops_by_size_keeps_predictions_apart_from_measurements():
    measured = {"float32": [timing(f"f32 {n}", "jax", 2 * n**3 / 50e9, flops=2 * n**3, n=n) for n in (256, 128)]}
    fig = plots.gflops_by_size(measured, {"TPU v5e bf16": ([128, 256], [20e12, 40e12])}, {"CPU peak": 160e9})
    got = trace(fig, "float32")
    assert got.name == "float32 (measured here)" and list(got.x) == [128, 256]
    assert list(got.y) == pytest.approx([50.0, 50.0])  # GFLOP/s, sorted by size
    predicted = trace(fig, "TPU v5e")
    assert predicted.name == "TPU v5e bf16 (predicted)" and predicted.marker.symbol == "circle-open"
    assert list(predicted.y) == pytest.approx([20e3, 40e3]) and predicted.line.color == style.PREDICTION_COLOUR
    assert got.line.color != style.PREDICTION_COLOUR
    assert list(trace(fig, "CPU peak").y) == pytest.approx([160.0, 160.0])
    assert list(fig.layout.xaxis.tickvals) == [128, 256]


def test_gflops_by_size_refuses_what_it_cannot_plot():
    with pytest.raises(ValueError, match="has no FLOP count"):
        plots.gflops_by_size({"x": [timing("t", "jax", 1e-3, n=64)]})
    with pytest.raises(ValueError, match="same length"):
        plots.gflops_by_size({}, {"p": ([1, 2], [1e9])})
    with pytest.raises(ValueError, match="nothing to plot"):
        plots.gflops_by_size({})
    with pytest.raises(TypeError, match="needs a dict"):
        plots.gflops_by_size([timing("t", "jax", 1e-3, flops=1e6, n=64)])


def test_the_kernel_ladder_stacks_the_labels_of_points_that_sit_together() -> None:
    points = [("1 naive", 15.0, 88e9, None), ("2 coalesced", 15.0, 858e9, None),
              ("5 2D block tiling", 110.0, 3397e9, None), ("6 float4", 110.0, 3397e9, None),
              ("7 no bank conflicts", 111.0, 3410e9, 3300e9)]
    fig = plots.kernel_ladder(T4, points)
    predicted = next(t for t in fig.data if t.name == "predicted")
    assert list(predicted.text) == ["1 naive", "2 coalesced", "5 2D block tiling<br>6 float4<br>7 no bank conflicts",
                                    "", ""]
    assert len(predicted.x) == 5 and [t.name for t in fig.data].count("measured here") == 1
