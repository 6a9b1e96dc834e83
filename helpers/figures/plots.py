"""Plotly figures for the series: speed-up bars, log-log scaling, and rate against size beside a prediction.

Every function returns a `go.Figure`; the notebook displays it. All figures share one small template and one
colour per backend, so "numpy" is the same blue in every chapter. The rooflines live in helpers.figures.rooflines
and are re-exported here (h.plots.roofline, h.plots.kernel_ladder); predictions are drawn as hollow markers so they
can never be mistaken for measurements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..core.style import BACKEND_COLOURS, PREDICTION_COLOUR, REFERENCE_COLOUR, ROOF_COLOUR, colour, figure
from ..measuring.timing import Timing, format_fraction, format_seconds

# The rooflines, re-exported: a chapter types h.plots.roofline beside h.plots.speedup_bars.
from .rooflines import kernel_ladder as kernel_ladder
from .rooflines import roofline as roofline
from .timings import Timings, format_flops, format_speedup, labelled, log_range, rate_lines

# --------------------------------------------------------------------------------------------------------------
# Speed-ups.


def speedup_bars(timings: Timings, horizontal: bool = True, title: str | None = None) -> go.Figure:
    """Bars of speed-up over the first timing on a log axis: one picture for "how many times faster"."""
    pairs = labelled(timings)
    base_label, base = pairs[0]
    speedups = [base.median / t.median for _, t in pairs]
    labels = [label for label, _ in pairs]
    text = [f"{format_speedup(s)} · {format_seconds(t.median)}" for s, (_, t) in zip(speedups, pairs, strict=True)]
    hover = []
    for (label, t), s in zip(pairs, speedups, strict=True):
        lines = [f"<b>{escape(label)}</b> [{escape(t.backend)}]", f"median {format_seconds(t.median)}",
                 f"{format_speedup(s)} the speed of {escape(base_label)}", *rate_lines(t)]
        hover.append("<br>".join(lines))
    bar = go.Bar(
        x=speedups if horizontal else labels, y=labels if horizontal else speedups,
        orientation="h" if horizontal else "v",
        marker=dict(color=[colour(t.backend) for _, t in pairs], line=dict(width=0)),
        text=text, textposition="outside", cliponaxis=False, name="speed-up",
        hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
    )
    fig = figure(title or f"Speed-up over {base_label} (median times)", height=max(300, 80 + 60 * len(pairs)))
    fig.add_trace(bar)
    lo, hi = log_range([*speedups, 1.0], pad=0)
    # Bars on a log axis start at the axis edge: start it half a decade below the slowest, so the baseline
    # (1x) still shows as a bar, and leave room on the right for the text outside the bars. Ticks at whole
    # decades only (0.1x, 1x, 10x, ...): the room for the text is not a scale the bars reach.
    value_axis = dict(type="log", title=dict(text=f"speed-up over {base_label} (log scale)"),
                      range=[lo - 0.5, hi + 0.9], dtick=1, tickformat="~g", ticksuffix="x")
    label_axis = dict(type="category", title=None, showgrid=False, automargin=True)  # room for long labels
    if horizontal:
        fig.update_layout(xaxis=value_axis, yaxis=dict(label_axis, autorange="reversed"))
    else:
        fig.update_layout(yaxis=value_axis, xaxis=label_axis)
    fig.update_layout(showlegend=False)
    return fig


def gflops_bars(timings: Timings, title: str | None = None) -> go.Figure:
    """Bars of achieved GFLOP/s on a log axis, each with its fraction of peak: how close each backend gets."""
    pairs = labelled(timings)
    for label, t in pairs:
        if t.gflops is None:
            raise ValueError(f"{label!r} has no FLOP count: pass flops= to helpers.benchmark() to plot GFLOP/s")
    values = [t.gflops for _, t in pairs]
    text = []
    for _, t in pairs:
        frac = f"<br>{format_fraction(t.fraction_of_peak)} of peak" if t.fraction_of_peak is not None else ""
        text.append(f"{t.gflops:,.3g} GFLOP/s{frac}")
    hover = ["<br>".join([f"<b>{escape(label)}</b> [{escape(t.backend)}, {escape(t.dtype or '?')}]",
                          f"median {format_seconds(t.median)}", *rate_lines(t)]) for label, t in pairs]
    fig = figure(title or "Achieved GFLOP/s (median time)", height=380)
    fig.add_trace(go.Bar(x=[label for label, _ in pairs], y=values, text=text, textposition="outside",
                         cliponaxis=False, marker=dict(color=[colour(t.backend) for _, t in pairs]),
                         hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", name="GFLOP/s"))
    lo, hi = log_range(values)
    fig.update_layout(showlegend=False, xaxis=dict(type="category", showgrid=False),
                      yaxis=dict(type="log", title=dict(text="GFLOP/s (log scale)"), range=[lo - 0.5, hi + 0.7]))
    return fig


# --------------------------------------------------------------------------------------------------------------
# Scaling.

_SUPERSCRIPTS = str.maketrans("0123456789-.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻·")


def power_label(k: float) -> str:
    """'∝ n³' for k=3, '∝ n' for k=1, '∝ n^1.5' for fractional k: the name of a reference slope."""
    if float(k) == 1:
        return "∝ n"
    if float(k).is_integer():
        return "∝ n" + str(int(k)).translate(_SUPERSCRIPTS)
    return f"∝ n^{k:g}"


def _series_points(label: str, data: Any) -> tuple[np.ndarray, np.ndarray, list[Timing] | None]:
    if isinstance(data, tuple) and len(data) == 2 and not isinstance(data[0], Timing):
        sizes, seconds = (np.asarray(v, dtype=float).ravel() for v in data)
        if len(sizes) != len(seconds):
            raise ValueError(f"series {label!r}: {len(sizes)} sizes but {len(seconds)} times")
        timings = None
    else:
        timings = list(data)
        for t in timings:
            if not isinstance(t, Timing):
                raise TypeError(f"series {label!r} must be a list of Timing or a (sizes, seconds) tuple; "
                                f"found {type(t).__name__}")
            if t.n is None:
                raise ValueError(f"series {label!r}: timing {t.label!r} has no size; pass n= to helpers.benchmark()")
        sizes = np.array([t.n for t in timings], dtype=float)
        seconds = np.array([t.median for t in timings], dtype=float)
    if len(sizes) == 0:
        raise ValueError(f"series {label!r} is empty")
    if np.any(~np.isfinite(sizes)) or np.any(sizes <= 0) or np.any(~np.isfinite(seconds)) or np.any(seconds <= 0):
        raise ValueError(f"series {label!r}: sizes and times must be positive numbers for a log-log plot")
    order = np.argsort(sizes, kind="stable")
    return sizes[order], seconds[order], [timings[i] for i in order] if timings is not None else None


#: How series of one colour (one backend: float32 and float64, say) are told apart: marker, then line dash.
SERIES_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross")
SERIES_DASHES = ("solid", "dot", "dash", "dashdot", "longdash")


def scaling(
    series: Mapping[str, Any],
    slopes: Sequence[float] = (1, 2, 3),
    error_bars: bool = True,
    anchor: str | None = None,
    title: str | None = None,
    x_title: str = "problem size n",
) -> go.Figure:
    """Log-log median time against size n, with dashed time ∝ n^k guides: the slope tells the algorithm's cost.

    series: label -> list of Timing (each with .n) or label -> (sizes, seconds). The reference lines pass
    through the largest-n point of the `anchor` series (default: the first), where overheads matter least.
    """
    if not isinstance(series, Mapping) or not series:
        raise ValueError("scaling() needs a dict: label -> list of Timing (with n=) or label -> (sizes, seconds)")
    points = {str(label): _series_points(str(label), data) for label, data in series.items()}
    if anchor is not None and anchor not in points:
        raise ValueError(f"anchor {anchor!r} is not a series; series: {', '.join(points)}")
    fig = figure(title or "Time against problem size (log-log)")
    shared: dict[str, int] = {}  # series already drawn in each colour: the next one gets another marker and dash
    for label, (_, _, timings) in points.items():
        backend = timings[0].backend if timings else label
        nth = shared[colour(backend)] = shared.get(colour(backend), -1) + 1
        fig.add_trace(_series_trace(label, backend, nth, points[label], error_bars))
    ref_sizes, ref_seconds, _ = points[anchor or next(iter(points))]
    all_sizes = np.concatenate([p[0] for p in points.values()])
    y_range = log_range(np.concatenate([p[1] for p in points.values()]), pad=0.4)
    for i, k in enumerate(slopes):
        fig.add_trace(_slope_trace(i, k, (float(ref_sizes[-1]), float(ref_seconds[-1])),
                                   (float(all_sizes.min()), float(all_sizes.max())), y_range))
    fig.update_layout(
        xaxis=dict(type="log", title=dict(text=x_title)),
        yaxis=dict(type="log", title=dict(text="time per call (median)"), exponentformat="SI", ticksuffix="s",
                   range=y_range),
    )
    return fig


def _series_trace(label: str, backend: str, nth: int, series: tuple[np.ndarray, np.ndarray, list[Timing] | None],
                  error_bars: bool) -> go.Scatter:
    """One series of scaling(): its backend's colour, the nth marker and dash of that colour, and the samples'
    interquartile range as error bars when the series holds Timings."""
    sizes, seconds, timings = series
    error_y = None
    custom = [[format_seconds(s), ""] for s in seconds]
    if timings:
        q25 = np.array([np.percentile(t.samples, 25) for t in timings])
        q75 = np.array([np.percentile(t.samples, 75) for t in timings])
        if error_bars:
            error_y = dict(type="data", symmetric=False, array=np.maximum(q75 - seconds, 0),
                           arrayminus=np.maximum(seconds - q25, 0), thickness=1.2, width=4)
        custom = [[format_seconds(t.median), f"<br>{t.gflops:,.3g} GFLOP/s" if t.gflops else ""] for t in timings]
    return go.Scatter(
        x=sizes, y=seconds, mode="lines+markers", name=label, error_y=error_y, customdata=custom,
        line=dict(color=colour(backend), width=2, dash=SERIES_DASHES[nth % len(SERIES_DASHES)]),
        marker=dict(size=8, color=colour(backend), symbol=SERIES_SYMBOLS[nth % len(SERIES_SYMBOLS)]),
        hovertemplate=f"<b>{escape(label)}</b><br>n = %{{x:,}}<br>median %{{customdata[0]}}%{{customdata[1]}}"
                      "<extra></extra>",
    )


def _slope_trace(i: int, k: float, anchor: tuple[float, float], x_range: tuple[float, float],
                 y_range: list[float]) -> go.Scatter:
    """The ith reference line of scaling(), time ∝ n^k through the anchor point (n, seconds), clipped to the
    visible times so that its label (at its left end) stays in view."""
    (n_anchor, t_anchor), (start, end) = anchor, x_range
    y_lo, y_hi = 10 ** y_range[0], 10 ** y_range[1]
    if float(k) > 0:
        start = max(start, n_anchor * (y_lo / t_anchor) ** (1 / float(k)))
        end = min(end, n_anchor * (y_hi / t_anchor) ** (1 / float(k)))
    xs = np.array([min(start, n_anchor), max(end, n_anchor)])
    ys = t_anchor * (xs / n_anchor) ** float(k)
    name = power_label(k)
    dashes = ("dash", "dot", "dashdot", "longdash", "longdashdot")
    return go.Scatter(
        x=xs, y=ys, mode="lines+text", name=f"{name} (reference)", text=[name, ""], textposition="top right",
        textfont=dict(color=REFERENCE_COLOUR, size=13), line=dict(color=REFERENCE_COLOUR, width=1.3,
                                                                  dash=dashes[i % len(dashes)]),
        hovertemplate=f"time {escape(name)}, through n = {n_anchor:,.0f}<extra></extra>",
    )

# --------------------------------------------------------------------------------------------------------------
# Rate against size, measured beside predicted.


#: Colours for measured series that name no backend: none of them near the orange of predictions.
_MEASURED_COLOURS = ("#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#000000")


def gflops_by_size(
    measured: Mapping[str, Sequence[Timing]],
    predicted: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    peaks: Mapping[str, float] | None = None,
    title: str | None = None,
    x_title: str = "matrix side n",
) -> go.Figure:
    """GFLOP/s against size, log-log: measured series (Timings with n= and flops=) as solid lines, predicted ones
    (label -> (sizes, FLOP/s)) as dashed lines with hollow markers, and peaks (label -> FLOP/s) as dotted roofs.

    Predictions are labelled "(predicted)" in the legend, so they can never be taken for measurements.
    """
    if not isinstance(measured, Mapping):
        raise TypeError("gflops_by_size() needs a dict: label -> list of Timing (each with n= and flops=)")
    fig = figure(title or "GFLOP/s against size", height=520)
    values: list[float] = []
    sizes_seen: set[float] = set()
    traces = [_measured_rates(i, str(label), timings) for i, (label, timings) in enumerate(measured.items())]
    traces += [_predicted_rates(i, str(label), p) for i, (label, p) in enumerate((predicted or {}).items())]
    for trace in traces:
        fig.add_trace(trace)
        values += list(trace.y)
        sizes_seen.update(trace.x)
    if not values:
        raise ValueError("nothing to plot: give at least one measured or predicted series")
    ticks = sorted(sizes_seen)
    for i, (label, flops_per_s) in enumerate((peaks or {}).items()):
        fig.add_trace(go.Scatter(
            x=[ticks[0], ticks[-1]], y=[flops_per_s / 1e9] * 2, mode="lines", name=str(label),
            line=dict(color=ROOF_COLOUR, width=1.3, dash=("dot", "dashdot")[i % 2]),
            hovertemplate=f"{escape(str(label))}: {format_flops(flops_per_s)}<extra></extra>"))
        values.append(flops_per_s / 1e9)
    fig.update_layout(
        xaxis=dict(type="log", title=dict(text=x_title), tickvals=ticks, ticktext=[f"{v:,.0f}" for v in ticks]),
        yaxis=dict(type="log", title=dict(text="GFLOP/s (log scale)"), range=log_range(values, 0.3)),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.18, yanchor="top"), margin=dict(b=150))
    return fig



def _measured_rates(i: int, label: str, timings: Sequence[Timing]) -> go.Scatter:
    """The ith measured series of gflops_by_size(), solid, in its backend's colour or one far from the predictions'."""
    sizes, _, ordered = _series_points(label, list(timings))
    missing = [t.label for t in ordered if t.gflops is None]
    if missing:
        raise ValueError(f"series {label!r}: {missing[0]!r} has no FLOP count; pass flops= to helpers.benchmark()")
    hover = [f"<b>{escape(label)}</b> (measured here)<br>n = {t.n:,}<br>median {format_seconds(t.median)}"
             f"<br>{'<br>'.join(rate_lines(t))}" for t in ordered]
    named = colour(label)  # a backend's colour if the label names one, else one far from the predictions'
    line_colour = named if named in BACKEND_COLOURS.values() else _MEASURED_COLOURS[i % len(_MEASURED_COLOURS)]
    return go.Scatter(x=sizes, y=[t.gflops for t in ordered], mode="lines+markers", name=f"{label} (measured here)",
                      line=dict(color=line_colour, width=2.2), marker=dict(size=8),
                      hovertext=hover, hovertemplate="%{hovertext}<extra></extra>")


def _predicted_rates(i: int, label: str, prediction: tuple[Sequence[float], Sequence[float]]) -> go.Scatter:
    """The ith predicted series of gflops_by_size(), (sizes, FLOP/s) checked, dashed with hollow markers."""
    sizes, flops_per_s = prediction
    sizes_arr, rates_arr = np.asarray(sizes, dtype=float), np.asarray(flops_per_s, dtype=float) / 1e9
    if sizes_arr.shape != rates_arr.shape or sizes_arr.ndim != 1 or not sizes_arr.size:
        raise ValueError(f"prediction {label!r}: give (sizes, FLOP/s) as two sequences of the same length")
    if np.any(~np.isfinite(rates_arr)) or np.any(rates_arr <= 0) or np.any(sizes_arr <= 0):
        raise ValueError(f"prediction {label!r}: sizes and FLOP/s must be positive numbers")
    dashes = ("dash", "dot", "dashdot", "longdash")
    return go.Scatter(
        x=sizes_arr, y=rates_arr, mode="lines+markers", name=f"{label} (predicted)",
        line=dict(color=PREDICTION_COLOUR, width=1.8, dash=dashes[i % len(dashes)]),
        marker=dict(symbol="circle-open", size=10, color=PREDICTION_COLOUR, line=dict(width=2)),
        hovertemplate=f"<b>{escape(label)}</b>: predicted, not measured<br>n = %{{x:,}}<br>"
                      "%{y:,.4g} GFLOP/s<extra></extra>")

__all__ = ["gflops_bars", "gflops_by_size", "power_label", "roofline", "scaling", "speedup_bars"]

