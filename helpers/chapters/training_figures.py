"""Chapter 05's pictures and closing table: the loss at every step of several runs, seconds per epoch of a sweep
against the varied size (measured solid, predicted dashed), and the table of backends, devices, accuracy and speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from numbers import Real
from typing import Any

import numpy as np

from ..measuring.formats import format_seconds
from ..measuring.record import Timing
from .epochs import Run
from .sweeps import Sweep


def _kind_colour(kind: str) -> str:
    """The series colour of a way of running the step: its backend's, or one of style.OTHER_COLOURS for the two
    that share JAX with the jit-per-step trainer (jit per epoch, Keras)."""
    from ..core.style import OTHER_COLOURS, colour

    return {"jax-scan": OTHER_COLOURS[0], "keras": OTHER_COLOURS[1]}.get(kind) or colour(kind)


def loss_figure(runs: Sequence[Run], title: str | None = None) -> Any:
    """The loss at every training step, one line per run: runs from the same start should lie on top of each other."""
    import plotly.graph_objects as go

    from ..core.style import TEMPLATE, colour

    if not runs:
        raise ValueError("loss_figure() needs at least one Run from training.train()")
    fig = go.Figure()
    dashes = ("solid", "dash", "dot", "dashdot", "longdash")
    for i, run in enumerate(runs):
        losses = run.losses.ravel()
        fig.add_trace(go.Scatter(x=np.arange(1, len(losses) + 1), y=losses, mode="lines", name=run.label,
                                 line=dict(color=colour(run.label.split()[0]), width=max(1.5, 4 - 1.2 * i),
                                           dash=dashes[i % len(dashes)]),
                                 hovertemplate=f"{escape(run.label)}<br>step %{{x}}: loss %{{y:.5f}}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=title or "Training loss at every step (same start, same batches)",
                      xaxis_title="step", yaxis=dict(type="log", title="loss (log scale)"), height=420)
    return fig


def sweep_figure(sw: Sweep, title: str | None = None) -> Any:
    """Seconds per epoch against the varied size (log-log): measured lines solid, each backend's GPU prediction
    dashed with hollow markers, in the colour of the backend it is for."""
    import plotly.graph_objects as go

    from ..core.style import TEMPLATE

    fig = go.Figure()
    xs = np.array(sw.values)
    for label, timings in sw.timings.items():
        fig.add_trace(go.Scatter(
            x=xs, y=sw.seconds(label), mode="lines+markers", name=f"{label}, measured here{_on(timings[0])}",
            line=dict(color=_kind_colour(sw.kinds[label]), width=2.5),
            customdata=[[format_seconds(t.median), f"{t.gflops:,.3g}"] for t in timings],
            hovertemplate=f"{escape(label)}<br>{sw.vary} %{{x}}: %{{customdata[0]}} per epoch, "
                          "%{customdata[1]} GFLOP/s<extra></extra>"))
    for kind, preds in sw.predictions.items():
        fig.add_trace(go.Scatter(
            x=xs, y=sw.predicted(kind), mode="lines+markers", name=preds[0].label,
            line=dict(color=_kind_colour(kind), dash="dash", width=2),
            marker=dict(symbol="circle-open", size=11, line=dict(width=2.5)),
            customdata=[[format_seconds(p.seconds), p.kernels, f"{p.fixed / p.seconds:.0%}"] for p in preds],
            hovertemplate=f"{escape(preds[0].label)}<br>{sw.vary} %{{x}}: %{{customdata[0]}} per epoch<br>"
                          "%{customdata[1]} kernels per step; fixed costs %{customdata[2]} of it<extra></extra>"))
    fixed = f"hidden {sw.hidden}" if sw.vary == "batch" else f"batch {sw.batch}"
    x_title = "batch size (samples per step)" if sw.vary == "batch" else "hidden width (units)"
    fig.update_layout(template=TEMPLATE, height=460,
                      title=title or f"Seconds per epoch against {sw.vary} ({fixed}), log-log",
                      xaxis=dict(type="log", title=x_title),
                      yaxis=dict(type="log", title="seconds per epoch (median)", exponentformat="SI", ticksuffix="s"))
    return fig


def _on(t: Timing) -> str:
    """' on CPU (2 cores)' or ' on NVIDIA T4': where a timing ran, from the peak it was judged by."""
    return f" on {t.peak.device}" if t.peak is not None else ""

@dataclass(frozen=True)
class Row:
    """One line of the closing table: a backend, where it ran (or what was predicted), accuracy and speed."""

    backend: str
    device: str  # where it ran, or "NVIDIA T4 (prediction)"
    accuracy: float | None  # on the test set; None when it was not trained here
    seconds: float  # per epoch


def summary_table(rows: Sequence[Row]) -> Any:
    """The closing table as Markdown: backend, device, accuracy, seconds per epoch, speed-up over the first row."""
    if not rows:
        raise ValueError("summary_table() needs at least one Row")
    bad = [r.backend for r in rows if not (isinstance(r.seconds, Real) and r.seconds > 0)]
    if bad:
        raise ValueError(f"every Row needs a positive number of seconds per epoch; these do not: {', '.join(bad)}")
    base = rows[0].seconds
    lines = ["| backend | device | test accuracy | seconds per epoch | speed-up over " + escape(rows[0].backend) + " |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        acc = "-" if r.accuracy is None else f"{r.accuracy:.1%}"
        lines.append(f"| {escape(r.backend)} | {escape(r.device)} | {acc} | {format_seconds(r.seconds)} | "
                     f"{base / r.seconds:,.2f}x |")
    from ..learning.lessons import _markdown

    return _markdown("\n".join(lines))
