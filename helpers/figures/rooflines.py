"""Roofline figures: measured points under a device's roofs, predictions as hollow markers beside them, and
chapter 07's ladder of kernels on one roofline.

Roofs always say where they came from (estimated from a formula, measured here, or published by the vendor), and
predictions are drawn hollow so they can never be mistaken for measurements. helpers.figures.plots re-exports
`roofline` and `kernel_ladder`, so a chapter types h.plots.roofline.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from html import escape
from numbers import Real
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go

from ..core.style import PREDICTION_COLOUR, ROOF_COLOUR, colour, figure
from ..measuring.timing import Timing, format_fraction, format_seconds
from ..model.roofline import Device, Roof, Roofs, roofs
from .timings import Timings, format_flops, labelled, log_range

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
    pairs = labelled(timings, allow_empty=True)
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
            name=f"{name} {format_flops(c.flops)} ({c.origin or 'source below'})",
            hovertemplate=f"{escape(name)}: {format_flops(c.flops)}<br>{escape(c.source)}<extra></extra>",
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
                   f"{format_flops(p.flops)} on the {_short_dtype(p.roof.dtype) or ''} roof" for p in preds],
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
        yaxis=dict(type="log", title=dict(text="GFLOP/s"), range=log_range(y_vals, pad=0.35)),
        legend=dict(x=0.99, xanchor="right", y=0.02, yanchor="bottom"),
        margin=dict(b=110 + 16 * len(notes)),
    )


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
                      yaxis=dict(range=log_range([p[2] / 1e9 for p in points] + [p[3] / 1e9 for p in measured]
                                                  + [r.compute[0].flops / 1e9], pad=0.35)))
    return fig
