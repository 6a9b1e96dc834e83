"""Plotly figures for the series: speed-up bars, log-log scaling, rooflines, and roofline predictions.

Every function returns a `go.Figure`; the notebook displays it. All figures share one small template and one
colour per backend, so "numpy" is the same blue in every chapter. Roofs always say where they came from
(estimated from a formula, measured here, or published by the vendor), and predictions are drawn as hollow
markers so they can never be mistaken for measurements.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from numbers import Real
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go

from ..core.style import BACKEND_COLOURS, PREDICTION_COLOUR, REFERENCE_COLOUR, ROOF_COLOUR, colour, figure
from ..measuring.timing import Comparison, Timing, format_fraction, format_seconds
from ..model.roofline import Device, Roof, Roofs, roofs

# --------------------------------------------------------------------------------------------------------------
# Input normalisation.

Timings = Comparison | Mapping[str, Timing] | Iterable[Timing]


def _labelled(timings: Timings, allow_empty: bool = False) -> list[tuple[str, Timing]]:
    """(label, Timing) pairs from a Comparison, a dict label -> Timing, or a list; labels made unique."""
    if isinstance(timings, Comparison):
        pairs = [(t.label, t) for t in timings.timings]
    elif isinstance(timings, Mapping):
        pairs = [(str(k), t) for k, t in timings.items()]
    elif isinstance(timings, Timing):
        pairs = [(timings.label, timings)]
    elif isinstance(timings, Iterable) and not isinstance(timings, str | bytes):
        pairs = [(getattr(t, "label", ""), t) for t in timings]
    else:
        raise TypeError(f"timings must be Timing results from helpers.benchmark() (a Comparison, a dict label -> "
                        f"Timing, or a list); got {type(timings).__name__}")
    for label, t in pairs:
        if not isinstance(t, Timing):
            raise TypeError(f"timings must be Timing results from helpers.benchmark(); {label!r} is "
                            f"{type(t).__name__}")
    if not pairs and not allow_empty:
        raise ValueError("no timings to plot: pass a Comparison, a dict label -> Timing, or a list of Timing")
    seen: dict[str, int] = {}
    out = []
    for label, t in pairs:
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label} ({seen[label]})", t))
    return out


def _format_speedup(s: float) -> str:
    return f"{s:,.0f}x" if s >= 100 else f"{s:.3g}x"


def _format_flops(flops_per_s: float) -> str:
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:,.3g} {unit}"
    return f"{flops_per_s:,.3g} FLOP/s"


def _rate_lines(t: Timing) -> list[str]:
    lines = []
    if t.gflops is not None:
        lines.append(f"{t.gflops:,.3g} GFLOP/s")
    if t.gbps is not None:
        lines.append(f"{t.gbps:,.3g} GB/s")
    if t.fraction_of_peak is not None and t.peak is not None:
        lines.append(f"{format_fraction(t.fraction_of_peak)} of peak ({escape(t.peak.source)})")
    return lines


def _log_range(values: Iterable[float], pad: float = 0.25) -> list[float]:
    logs = [math.log10(v) for v in values if v and v > 0 and math.isfinite(v)]
    lo, hi = min(logs), max(logs)
    return [lo - pad, hi + pad]


# --------------------------------------------------------------------------------------------------------------
# Speed-ups.


def speedup_bars(timings: Timings, horizontal: bool = True, title: str | None = None) -> go.Figure:
    """Bars of speed-up over the first timing on a log axis: one picture for "how many times faster"."""
    pairs = _labelled(timings)
    base_label, base = pairs[0]
    speedups = [base.median / t.median for _, t in pairs]
    labels = [label for label, _ in pairs]
    text = [f"{_format_speedup(s)} · {format_seconds(t.median)}" for s, (_, t) in zip(speedups, pairs, strict=True)]
    hover = []
    for (label, t), s in zip(pairs, speedups, strict=True):
        lines = [f"<b>{escape(label)}</b> [{escape(t.backend)}]", f"median {format_seconds(t.median)}",
                 f"{_format_speedup(s)} the speed of {escape(base_label)}", *_rate_lines(t)]
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
    lo, hi = _log_range([*speedups, 1.0], pad=0)
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
    pairs = _labelled(timings)
    for label, t in pairs:
        if t.gflops is None:
            raise ValueError(f"{label!r} has no FLOP count: pass flops= to helpers.benchmark() to plot GFLOP/s")
    values = [t.gflops for _, t in pairs]
    text = []
    for _, t in pairs:
        frac = f"<br>{format_fraction(t.fraction_of_peak)} of peak" if t.fraction_of_peak is not None else ""
        text.append(f"{t.gflops:,.3g} GFLOP/s{frac}")
    hover = ["<br>".join([f"<b>{escape(label)}</b> [{escape(t.backend)}, {escape(t.dtype or '?')}]",
                          f"median {format_seconds(t.median)}", *_rate_lines(t)]) for label, t in pairs]
    fig = figure(title or "Achieved GFLOP/s (median time)", height=380)
    fig.add_trace(go.Bar(x=[label for label, _ in pairs], y=values, text=text, textposition="outside",
                         cliponaxis=False, marker=dict(color=[colour(t.backend) for _, t in pairs]),
                         hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", name="GFLOP/s"))
    lo, hi = _log_range(values)
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
    y_range = _log_range(np.concatenate([p[1] for p in points.values()]), pad=0.4)
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
# Rooflines.


#: A point at this fraction of its roof or more is labelled below itself: text above it would cross the roof line.
NEAR_ROOF = 0.4


def _below_roofs(positions: list[str], near_roof: Sequence[bool]) -> list[str]:
    """The label positions, with those of points close under a roof moved below the point."""
    return [p.replace("top", "bottom").replace("middle", "bottom") if near else p
            for p, near in zip(positions, near_roof, strict=True)]


def _label_positions(points: Sequence[tuple[float, float]]) -> list[str]:
    """Text positions that keep neighbouring point labels apart on a log-log plot.

    Points at (nearly) the same x get labels alternately right and left, in order of y. Each other point is
    labelled above itself when it is higher than its right-hand neighbour (its left-hand one, for the last), and
    below otherwise, so two neighbours' labels go opposite ways.
    """
    order = sorted(range(len(points)), key=lambda i: points[i])
    positions = [""] * len(points)
    clusters: list[list[int]] = []
    for i in order:
        if clusters and abs(math.log(points[i][0] / points[clusters[-1][0]][0])) <= 0.05:
            clusters[-1].append(i)
        else:
            clusters.append([i])
    singles = [c[0] for c in clusters if len(c) == 1]
    for cluster in (c for c in clusters if len(c) > 1):
        for rank, i in enumerate(sorted(cluster, key=lambda i: points[i][1])):
            positions[i] = ("middle right", "middle left")[rank % 2]
    for k, i in enumerate(singles):
        neighbour = singles[k + 1] if k + 1 < len(singles) else singles[k - 1] if k else None
        higher = neighbour is not None and points[i][1] > points[neighbour][1]
        positions[i] = "top center" if higher else "bottom center"
    return positions


def _short_dtype(dtype: str) -> str:
    return {"float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16"}.get(dtype, dtype)


def roofline(
    device: Device,
    timings: Timings = (),
    title: str | None = None,
    predictions: Iterable[tuple[Any, ...]] = (),
    dtype: str = "float32",
) -> go.Figure:
    """Log-log roofline (GFLOP/s against FLOP/byte) with measured points and hollow predicted ones.

    The roof min(peak, intensity x bandwidth) is the fastest any code can go at that intensity; a point far
    below it leaves speed on the table. predictions: (label, intensity) or (label, intensity, dtype) pairs, drawn
    on the roof as hollow markers: what the model predicts, never a measurement.
    """
    r = roofs(device)
    r.roof(dtype)  # a dtype the device has no roof for is refused here, as every prediction refuses it
    pairs = _with_intensity(timings)
    preds = _predictions(r, predictions, dtype)
    ridges = [c.flops / r.bandwidth for c in r.compute]
    xs_known = ridges + [t.intensity for _, t in pairs] + [p.intensity for p in preds]
    x_range = min(xs_known) / 30, max(xs_known) * 30
    published = r.bandwidth_origin == "published" and all(c.origin == "published" for c in r.compute)
    default_title = f"Roofline of {r.device}" + (" (published spec)" if published else "")
    fig = figure(title or default_title, height=560 + 18 * len(r.compute))
    _add_roofs(fig, r, ridges, x_range)
    for backend in dict.fromkeys(t.backend for _, t in pairs):
        fig.add_trace(_measured_points(r, backend, [(label, t) for label, t in pairs if t.backend == backend]))
    if preds:
        fig.add_trace(_predicted_points(r, preds))
    _roofline_layout(fig, r, pairs, published, x_range)
    return fig


class _Prediction(NamedTuple):
    """One point a roofline predicts: where it sits on which roof, and how fast that roof lets it go."""

    label: str
    intensity: float  # FLOP per byte
    roof: Roof  # the compute roof of its dtype
    flops: float  # FLOP/s the roofs allow at that intensity


def _with_intensity(timings: Timings) -> list[tuple[str, Timing]]:
    """The (label, Timing) pairs to place on a roofline: each must know its arithmetic intensity."""
    pairs = _labelled(timings, allow_empty=True)
    for label, t in pairs:
        if t.intensity is None:
            raise ValueError(f"{label!r} has no arithmetic intensity: pass both flops= and bytes= "
                             "to helpers.benchmark()")
    return pairs


def _predictions(r: Roofs, predictions: Iterable[tuple[Any, ...]], dtype: str) -> list[_Prediction]:
    """roofline's `predictions` checked, each placed on the roof of its dtype (`dtype` when it names none)."""
    preds = []
    for p in predictions:
        if not isinstance(p, (tuple, list)) or len(p) not in (2, 3):
            raise ValueError(f"a prediction is (label, intensity) or (label, intensity, dtype); got {p!r}")
        label, intensity, pdtype = (*p, dtype) if len(p) == 2 else p
        if isinstance(intensity, bool) or not isinstance(intensity, Real) or not intensity > 0:
            raise ValueError(f"prediction {label!r}: intensity must be a positive number, got {intensity!r}")
        preds.append(_Prediction(str(label), float(intensity), r.roof(pdtype), r.attainable(float(intensity), pdtype)))
    return preds


def _add_roofs(fig: go.Figure, r: Roofs, ridges: list[float], x_range: tuple[float, float]) -> None:
    """The roofs: memory's slanted line up to the highest ridge (beyond it every compute roof is lower), one flat
    line per compute roof from its ridge, and the ridge points, each with where its figure came from."""
    bw_x = np.array([x_range[0], max(ridges)])
    origin = {"measured": "measured here", "published": "published"}.get(r.bandwidth_origin, r.bandwidth_origin)
    fig.add_trace(go.Scatter(
        x=bw_x, y=bw_x * r.bandwidth / 1e9, mode="lines", line=dict(color=ROOF_COLOUR, width=2.5),
        name=f"memory {r.bandwidth / 1e9:,.3g} GB/s ({origin})", legendgroup="roofs",
        hovertemplate=f"memory roof: {r.bandwidth / 1e9:,.3g} GB/s x intensity<br>%{{x:.3g}} FLOP/B -> "
                      f"%{{y:,.4g}} GFLOP/s<br>{escape(r.bandwidth_source)}<extra></extra>",
    ))
    dashes = ("solid", "dash", "dot", "dashdot", "longdash")
    for i, (c, ridge) in enumerate(zip(r.compute, ridges, strict=True)):
        name = f"{_short_dtype(c.dtype)} peak" if c.dtype else "peak"
        fig.add_trace(go.Scatter(
            x=[ridge, x_range[1]], y=[c.flops / 1e9] * 2, mode="lines", legendgroup="roofs",
            line=dict(color=ROOF_COLOUR, width=2.5 if i == 0 else 1.8, dash=dashes[i % len(dashes)]),
            name=f"{name} {_format_flops(c.flops)} ({c.origin or 'source below'})",
            hovertemplate=f"{escape(name)}: {_format_flops(c.flops)}<br>{escape(c.source)}<extra></extra>",
        ))
    fig.add_trace(go.Scatter(
        x=ridges, y=[c.flops / 1e9 for c in r.compute], mode="markers+text", name="ridge point", legendgroup="roofs",
        marker=dict(symbol="diamond", size=9, color=ROOF_COLOUR),
        text=[f"ridge {x:.3g} FLOP/B" for x in ridges], textposition="top left", textfont=dict(size=11),
        hovertemplate="ridge: %{x:.3g} FLOP/B<br>below it memory limits speed, above it compute does<extra></extra>",
    ))


def _measured_points(r: Roofs, backend: str, group: list[tuple[str, Timing]]) -> go.Scatter:
    """The learner's timings on one backend, in its colour, each label kept off the roof above it."""
    hover, near_roof = [], []
    for label, t in group:
        roof_here = r.attainable(t.intensity, t.dtype if t.dtype in r.dtypes else None)
        near_roof.append(t.gflops * 1e9 >= NEAR_ROOF * roof_here)
        hover.append("<br>".join([f"<b>{escape(label)}</b> [{escape(backend)}, {escape(t.dtype or '?')}]",
                                  f"{t.intensity:.3g} FLOP/B, {t.gflops:,.4g} GFLOP/s (measured)",
                                  f"{format_fraction(t.gflops * 1e9 / roof_here)} of the roof at this intensity",
                                  f"median {format_seconds(t.median)}"]))
    return go.Scatter(
        x=[t.intensity for _, t in group], y=[t.gflops for _, t in group], mode="markers+text",
        name=f"measured: {backend}", text=[label for label, _ in group],
        textposition=_below_roofs(_label_positions([(t.intensity, t.gflops) for _, t in group]), near_roof),
        marker=dict(symbol="circle", size=12, color=colour(backend), line=dict(color="white", width=1)),
        hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
    )


def _predicted_points(r: Roofs, preds: list[_Prediction]) -> go.Scatter:
    """The predictions, hollow on their roofs, named by where the roofs' figures came from."""
    peak_origins = sorted({p.roof.origin or "unknown" for p in preds})
    if set(peak_origins) == {"published"} and r.bandwidth_origin == "published":
        what = "published specs"
    else:
        what = f"{'/'.join(peak_origins)} peak, {r.bandwidth_origin or 'unknown'} bandwidth"
    return go.Scatter(
        x=[p.intensity for p in preds], y=[p.flops / 1e9 for p in preds],
        mode="markers+text", name=f"prediction (from {what})",
        text=[f"{p.label} (predicted)" for p in preds],
        textposition="bottom right", textfont=dict(color=PREDICTION_COLOUR, size=12),  # under its roof
        marker=dict(symbol="circle-open", size=14, color=PREDICTION_COLOUR, line=dict(width=2.5)),
        hovertext=[f"<b>{escape(p.label)}</b>: predicted, not measured<br>{p.intensity:.3g} FLOP/B -> at most "
                   f"{_format_flops(p.flops)} on the {_short_dtype(p.roof.dtype) or ''} roof" for p in preds],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def _roofline_layout(fig: go.Figure, r: Roofs, pairs: list[tuple[str, Timing]], published: bool,
                     x_range: tuple[float, float]) -> None:
    """The sources of every roof under the plot, and log axes wide enough for every roof and point."""
    notes = [f"memory bandwidth: {r.bandwidth_source}"]
    notes += [f"{_short_dtype(c.dtype) + ' ' if c.dtype else ''}peak: {c.source}" for c in r.compute]
    if published:
        notes.append("published figures: not measured on this machine")
    y_vals = [c.flops / 1e9 for c in r.compute] + [x_range[0] * r.bandwidth / 1e9] + [t.gflops for _, t in pairs]
    fig.add_annotation(text="<br>".join(escape(n) for n in notes), xref="paper", yref="paper", x=0, y=0,
                       yshift=-60, xanchor="left", yanchor="top", showarrow=False, align="left",
                       font=dict(size=11, color="#555555"))
    fig.update_layout(
        xaxis=dict(type="log", title=dict(text="arithmetic intensity (FLOP per byte)"),
                   range=[math.log10(x_range[0]), math.log10(x_range[1])]),
        yaxis=dict(type="log", title=dict(text="GFLOP/s"), range=_log_range(y_vals, pad=0.35)),
        legend=dict(x=0.99, xanchor="right", y=0.02, yanchor="bottom"),
        margin=dict(b=110 + 16 * len(notes)),
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
            hovertemplate=f"{escape(str(label))}: {_format_flops(flops_per_s)}<extra></extra>"))
        values.append(flops_per_s / 1e9)
    fig.update_layout(
        xaxis=dict(type="log", title=dict(text=x_title), tickvals=ticks, ticktext=[f"{v:,.0f}" for v in ticks]),
        yaxis=dict(type="log", title=dict(text="GFLOP/s (log scale)"), range=_log_range(values, 0.3)),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.18, yanchor="top"), margin=dict(b=150))
    return fig



def _measured_rates(i: int, label: str, timings: Sequence[Timing]) -> go.Scatter:
    """The ith measured series of gflops_by_size(), solid, in its backend's colour or one far from the predictions'."""
    sizes, _, ordered = _series_points(label, list(timings))
    missing = [t.label for t in ordered if t.gflops is None]
    if missing:
        raise ValueError(f"series {label!r}: {missing[0]!r} has no FLOP count; pass flops= to helpers.benchmark()")
    hover = [f"<b>{escape(label)}</b> (measured here)<br>n = {t.n:,}<br>median {format_seconds(t.median)}"
             f"<br>{'<br>'.join(_rate_lines(t))}" for t in ordered]
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


# --------------------------------------------------------------------------------------------------------------
# Chapter 07: a ladder of kernels on one roofline.


def _positive(value: Any) -> bool:
    """Whether `value` is a finite real number above zero (not a bool), a point a log axis can draw."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _check_ladder(points: Any) -> None:
    """A ValueError unless `points` lists kernel_ladder's points: (label, intensity, predicted, measured or None)."""
    if not isinstance(points, Sequence) or isinstance(points, str) or not points or not all(
            isinstance(p, Sequence) and len(p) == 4 and isinstance(p[0], str) and _positive(p[1]) and _positive(p[2])
            and (p[3] is None or _positive(p[3])) for p in points):
        raise ValueError("points must list at least one (label, intensity, predicted FLOP/s, measured FLOP/s or "
                         f"None), the label a string and the numbers finite and above zero; got {points!r:.80}")
def _stacked_labels(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Text labels for points (label, x, y) on log axes: points within 5% of each other on both axes share one
    label, their names stacked line by line on the first of them, so no two labels print over each other."""
    texts = [""] * len(points)
    placed: list[tuple[int, float, float]] = []  # (index of the labelled point, x, y)
    for i, (label, x, y) in enumerate(points):
        near = next((j for j, px, py in placed if abs(math.log(x / px)) < 0.05 and abs(math.log(y / py)) < 0.05),
                    None)
        if near is None:
            placed.append((i, x, y))
            texts[i] = escape(label)
        else:
            texts[near] += "<br>" + escape(label)
    return texts


def kernel_ladder(device: Device, points: Sequence[tuple[str, float, float, float | None]],
                  title: str | None = None) -> go.Figure:
    """Kernels on the device's float32 roofline: each at its FLOPs per DRAM byte, hollow at its predicted rate and,
    where a GPU measured it, filled at the measured one. points: (label, intensity, predicted FLOP/s, measured
    FLOP/s or None). Far below the roofs means another unit (shared memory, the L1, issue) sets the speed."""
    full = roofs(device)
    r = dataclasses.replace(full, compute=(full.roof("float32"),))
    _check_ladder(points)
    ridges = [r.compute[0].flops / r.bandwidth]
    xs = ridges + [p[1] for p in points]
    x_range = min(xs) / 10, max(xs) * 10
    fig = figure(title or f"The ladder on the {r.device}'s float32 roofline", height=580)
    _add_roofs(fig, r, ridges, x_range)
    fig.add_trace(go.Scatter(
        x=[p[1] for p in points], y=[p[2] / 1e9 for p in points], mode="markers+text", name="predicted",
        text=_stacked_labels([(p[0], p[1], p[2]) for p in points]), textposition="bottom right",
        textfont=dict(color=PREDICTION_COLOUR, size=11),
        marker=dict(symbol="circle-open", size=13, color=PREDICTION_COLOUR, line=dict(width=2.5)),
        hovertext=[f"<b>{escape(p[0])}</b>: predicted {p[2] / 1e9:,.0f} GFLOP/s at {p[1]:.3g} FLOP per DRAM byte"
                   for p in points], hovertemplate="%{hovertext}<extra></extra>"))
    measured = [p for p in points if p[3] is not None]
    if measured:
        fig.add_trace(go.Scatter(
            x=[p[1] for p in measured], y=[p[3] / 1e9 for p in measured], mode="markers", name="measured here",
            marker=dict(symbol="circle", size=11, color=colour("cupy"), line=dict(color="white", width=1)),
            hovertext=[f"<b>{escape(p[0])}</b>: measured {p[3] / 1e9:,.0f} GFLOP/s" for p in measured],
            hovertemplate="%{hovertext}<extra></extra>"))
    _roofline_layout(fig, r, [], r.bandwidth_origin == "published", x_range)
    fig.update_layout(xaxis=dict(title=dict(text="FLOPs per byte from DRAM (the cache model)")),
                      yaxis=dict(range=_log_range([p[2] / 1e9 for p in points] + [p[3] / 1e9 for p in measured]
                                                  + [r.compute[0].flops / 1e9], pad=0.35)))
    return fig
