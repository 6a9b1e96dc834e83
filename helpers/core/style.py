"""The series' look, defined once: the offline renderer, one colour per backend, and the figure template.

Every figure of the series (plots, the explorer, the chapters' own pictures) takes its colours and layout from
here, so "numpy" is the same blue in every chapter.
"""

from __future__ import annotations

import os

import plotly.graph_objects as go
import plotly.io as pio

from .place import where_we_run

# --------------------------------------------------------------------------------------------------------------
# Renderer: figures must show offline (Binder, a laptop on a train), so never a CDN-loading renderer.


def use_offline_renderer() -> str:
    """Pick a plotly renderer that needs no network, unless the user chose one with PLOTLY_RENDERER; returns it."""
    if os.environ.get("PLOTLY_RENDERER"):
        return pio.renderers.default  # plotly already applied the user's explicit choice at import: keep it
    if where_we_run() == "Colab":
        # Colab's front end has no renderer for plotly's own mimetype: a figure shown that way is an empty
        # cell. The 'colab' renderer emits self-contained HTML that Colab can display (Colab is online anyway).
        pio.renderers.default = "colab"
    else:
        # JupyterLab, Notebook 7 and VS Code render this mimetype with the plotly.js bundled in their
        # extension: no CDN, and the notebook stays small (the 'notebook' renderer embeds 4 MB of JS per file).
        pio.renderers.default = "plotly_mimetype"
    return pio.renderers.default


use_offline_renderer()

# --------------------------------------------------------------------------------------------------------------
# Styling, defined once.

#: One colour per backend in every figure of the series (Okabe-Ito, readable by colour-blind learners).
BACKEND_COLOURS: dict[str, str] = {
    "python": "#E69F00",  # orange: Python loops
    "numpy": "#0072B2",  # blue
    "jax": "#009E73",  # green
    "cupy": "#CC79A7",  # purple
}
#: Aliases learners use as labels for the same backends.
_ALIASES = {"loops": "python", "python loops": "python", "np": "numpy", "jnp": "jax", "cp": "cupy"}
OTHER_COLOURS = ("#56B4E9", "#D55E00", "#F0E442", "#000000", "#999999")
ROOF_COLOUR = "#333333"
PREDICTION_COLOUR = "#D55E00"
REFERENCE_COLOUR = "#8C8C8C"

_AXIS = dict(showgrid=True, gridcolor="#E6E6E6", zeroline=False, showline=True, linecolor="#444444", ticks="outside",
             mirror=False, title=dict(standoff=8))
TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family="Helvetica Neue, Helvetica, Arial, sans-serif", size=14, color="#222222"),
        title=dict(font=dict(size=17), x=0.02, xanchor="left"),
        paper_bgcolor="white", plot_bgcolor="white",
        colorway=list(BACKEND_COLOURS.values()) + list(OTHER_COLOURS),
        xaxis=_AXIS, yaxis=_AXIS,
        legend=dict(bgcolor="rgba(255,255,255,0.85)", bordercolor="#DDDDDD", borderwidth=1, font=dict(size=12)),
        hoverlabel=dict(font=dict(size=13), bgcolor="white"),
        margin=dict(l=70, r=30, t=60, b=60),
    )
)
pio.templates["loops_to_tpus"] = TEMPLATE  # registered by name for learners' own figures; never made the default


def colour(name: str | None) -> str:
    """The series colour of a backend ('numpy', 'loops', ...) or of a label that names one ('numpy float32')."""
    key = (name or "").strip().lower()
    key = _ALIASES.get(key, key)
    if key in BACKEND_COLOURS:
        return BACKEND_COLOURS[key]
    for word in key.replace("(", " ").replace(")", " ").replace(",", " ").split():
        word = _ALIASES.get(word, word)
        if word in BACKEND_COLOURS:
            return BACKEND_COLOURS[word]
    return OTHER_COLOURS[sum(map(ord, key)) % len(OTHER_COLOURS)]


def figure(title: str | None, height: int = 460) -> go.Figure:
    """An empty figure in the series' style, with `title` and `height` pixels."""
    fig = go.Figure()
    fig.update_layout(template=TEMPLATE, title=dict(text=title) if title else None, height=height)
    return fig


__all__ = [
    "BACKEND_COLOURS", "OTHER_COLOURS", "PREDICTION_COLOUR", "REFERENCE_COLOUR", "ROOF_COLOUR", "TEMPLATE", "colour",
    "figure", "use_offline_renderer",
]
