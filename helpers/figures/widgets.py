"""explorer(): controls that re-measure an operation on this machine at every change and redraw the result.

Drag the size, switch the dtype, tick backends: each change runs helpers.benchmark() on fresh inputs from
helpers.measuring.workloads and redraws a GFLOP/s bar per backend and a log-log chart of every point measured so far.
The figures go into an ipywidgets.Output, so any front end that shows plotly figures shows the explorer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from html import escape
from numbers import Real
from typing import Any

import ipywidgets as widgets
import numpy as np

from ..core.backend import NAMES
from ..core.backend import backends as _backends
from ..core.project import SNAPSHOT, STATIC_ENV
from ..measuring import workloads
from ..measuring.timing import Timing, format_fraction, format_seconds, spread_shown
from . import plots

#: Sizes offered when the caller gives none.
DEFAULT_SIZES: dict[str, tuple[int, ...]] = {
    "matmul": (32, 64, 128, 256, 512, 1024),
    "axpby": (1_000, 10_000, 100_000, 1_000_000, 10_000_000),
}
#: Largest n at which Python loops are run: beyond it one call takes seconds to minutes.
LOOPS_MAX_N: dict[str, int] = {"matmul": 128, "axpby": 200_000}
#: Size at which the loops' rate is measured when an estimate is needed and none was measured yet.
LOOPS_PROBE_N: dict[str, int] = {"matmul": 32, "axpby": 20_000}
#: The cap on the probe's timing: a hang guard, long enough for one call of the loops on a slow machine.
LOOPS_PROBE_MAX_TIME = 5.0
#: The time ∝ n^k guide drawn in the running chart: what the operation's FLOP count grows as.
SLOPES: dict[str, tuple[int, ...]] = {"matmul": (3,), "axpby": (1,)}
LOOPS_LABEL = "python (loops)"
RUN_TO_USE = "run this cell to use the controls"


def _display_data(fig: Any) -> dict[str, Any]:
    """A plotly figure as one display_data output, in the bundle `display(fig)` would send (the current renderer)."""
    return {"output_type": "display_data", "data": fig._repr_mimebundle_(), "metadata": {}}


def _backend_label(backend: str) -> str:
    return LOOPS_LABEL if backend == "python" else backend


def _check_names(kind: str, given: Any, accepted: Iterable[str]) -> list[str]:
    accepted = list(accepted)
    names = [given] if isinstance(given, str) else list(given)
    if not names:
        raise ValueError(f"{kind} is empty; accepted: {', '.join(accepted)}")
    for name in names:
        if name not in accepted:
            raise ValueError(f"unknown {kind[:-1] if kind.endswith('s') else kind} {name!r}; "
                             f"accepted: {', '.join(accepted)}")
    return list(dict.fromkeys(names))


class Explorer(widgets.VBox):
    """The explorer's widget: controls, a line of numbers, and the figures; `measure()` redoes the work."""

    def __init__(self, op: str, backends: list[str], sizes: list[int], dtypes: list[str], budget: float,
                 size: int) -> None:
        self.op = op
        self.workload = workloads.get(op)
        self.budget = budget
        self.timings: list[Timing] = []  # every point measured so far, the latest per (backend, dtype, n)
        self.latest: dict[str, Timing] = {}  # backend -> what the last update measured
        self.figures: tuple[Any, ...] = ()  # the plotly figures the last update drew
        self.notes: list[str] = []  # what the last update skipped or could not do

        usable = set(_backends().usable()) | {"python"}
        offered = [b for b in NAMES if b in usable]
        self._unusable = [f"{b} is not usable here ({_backends()[b].detail})" for b in backends if b not in usable]
        self.backend_boxes = {b: widgets.Checkbox(value=b in backends, description=_backend_label(b), indent=False,
                                                  layout=widgets.Layout(width="auto", margin="0 16px 0 0"))
                              for b in offered}
        self.size_slider = widgets.SelectionSlider(
            options=[(f"{n:,}", n) for n in sizes], value=size, description="n", continuous_update=False,
            layout=widgets.Layout(width="420px"),
        )
        self.dtype_toggle = widgets.ToggleButtons(options=dtypes, value=dtypes[0], description="dtype",
                                                  style={"button_width": "80px"})
        self.message = widgets.HTML()
        self.plot_output = widgets.Output()
        header = widgets.HTML(f"<b>{escape(self.workload.description)}</b> &mdash; slider: the "
                              f"{escape(self.workload.size_meaning)}. Every change re-measures on this machine "
                              f"(about {budget:g} s of timing).")
        super().__init__([header, widgets.HBox([self.size_slider, self.dtype_toggle]),
                          widgets.HBox([widgets.Label("backends:"), *self.backend_boxes.values()]),
                          self.message, self.plot_output])
        for control in (self.size_slider, self.dtype_toggle, *self.backend_boxes.values()):
            control.observe(self.measure, names="value")
        self.measure()

    def __repr__(self) -> str:
        # Stable text (no measured numbers): it is what a notebook saves as text/plain, and what shows where
        # widgets cannot (a static render on GitHub).
        sizes = [v for _, v in self.size_slider.options]
        return (f"<explorer: {self.op}, n {sizes[0]:,} to {sizes[-1]:,}, {'/'.join(self.dtype_toggle.options)}, "
                f"{'/'.join(self.backend_boxes)}: {RUN_TO_USE}>")

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, and, where the stored outputs are made (STATIC_ENV), its figures for a static snapshot."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if os.environ.get(STATIC_ENV) and isinstance(bundle, dict) and self.figures:
            bundle[SNAPSHOT] = {"text": RUN_TO_USE, "figures": [json.loads(f.to_json()) for f in self.figures]}
        return bundle

    # -- measuring ---------------------------------------------------------------------------------------------

    def _measure_one(self, backend: str, n: int, dtype: str, budget: float, max_time: float | None = None) -> Timing:
        with spread_shown():  # a one-off explorer point: noise is shown, not warned
            t = workloads.measure(self.op, backend, n, dtype, budget, label=_backend_label(backend),
                                  max_time=max_time or max(3 * budget, 0.05), min_repeats=3)
        self.timings = [p for p in self.timings if (p.backend, p.dtype, p.n) != (t.backend, t.dtype, t.n)] + [t]
        return t

    def _loops_rate(self) -> tuple[float, int]:
        """FLOP/s of the Python loops at the largest n measured so far (where call overhead matters least)."""
        done = [t for t in self.timings if t.backend == "python"]
        # a probe at a small size: a short budget, and a cap that a slow machine's first call still fits in
        t = max(done, key=lambda t: t.n) if done else self._measure_one("python", LOOPS_PROBE_N[self.op], "float64",
                                                                          0.02, max_time=LOOPS_PROBE_MAX_TIME)
        return t.flops / t.median, int(t.n)

    def measure(self, change: Any = None) -> None:
        """Re-measure every ticked backend at the current size and dtype, then redraw (called on every change)."""
        n, dtype = self.size_slider.value, self.dtype_toggle.value
        chosen = [b for b, box in self.backend_boxes.items() if box.value]
        too_big = n > LOOPS_MAX_N[self.op]
        runnable = [b for b in chosen if not (b == "python" and too_big)]
        notes: list[str] = []
        latest: dict[str, Timing] = {}
        for b in chosen:
            try:
                if b not in runnable:
                    rate, at = self._loops_rate()
                    guess = format_seconds(self.workload.flops(n) / rate)
                    notes.append(f"loops skipped at this size: would take ~{guess} per call (from the "
                                 f"{rate / 1e6:,.3g} MFLOP/s they reached at n={at:,})")
                    continue
                latest[b] = self._measure_one(b, n, dtype, self.budget / len(runnable))
            except Exception as exc:  # show it in the explorer rather than break the notebook's widget
                notes.append(f"{_backend_label(b)} failed: {type(exc).__name__}: {exc}")
        if not chosen:
            notes.append("tick at least one backend to measure")
        self.latest, self.notes = latest, notes + self._unusable
        self.message.value = self._summary(n, dtype)
        self._redraw(n, dtype)

    # -- showing -----------------------------------------------------------------------------------------------

    def _summary(self, n: int, dtype: str) -> str:
        parts = []
        for t in self.latest.values():
            frac = f" ({format_fraction(t.fraction_of_peak)} of peak)" if t.fraction_of_peak is not None else ""
            dt = f", {t.dtype}" if t.dtype != dtype else ""
            noisy = " (noisy)" if t.noisy else ""
            parts.append(f"<b>{escape(t.label)}</b>{escape(dt)}: {format_seconds(t.median)}, "
                         f"{t.gflops:,.3g} GFLOP/s{frac}{noisy}")
        line = f"n={n:,}, {dtype}: " + (" &middot; ".join(parts) if parts else "nothing measured")
        if self.notes:
            line += "<br><small>" + "<br>".join(escape(x) for x in self.notes) + "</small>"
        return line

    def _redraw(self, n: int, dtype: str) -> None:
        figures = []
        if self.latest:
            bars = plots.gflops_bars(list(self.latest.values()), title=f"{self.op}, n={n:,}, {dtype}")
            figures.append(bars.update_layout(height=340))
        series: dict[str, list[Timing]] = {}
        for t in sorted(self.timings, key=lambda t: t.n):
            series.setdefault(f"{t.label}, {t.dtype}", []).append(t)
        if series:  # the guide goes through the series with the most points (then the largest n)
            anchor = max(series, key=lambda k: (len(series[k]), series[k][-1].n))
            chart = plots.scaling(series, slopes=SLOPES[self.op], anchor=anchor, title="every point measured so far",
                                  x_title=self.workload.size_meaning)
            figures.append(chart.update_layout(height=380))
        self.figures = tuple(figures)
        # Replace the Output widget's outputs in one state update rather than `with self.plot_output: display()`.
        # Captured display messages make a client that mimics Output widgets (nbclient, so `notebooks execute`
        # and the notebook tests) echo the widget's state back on the shell channel while it waits there for the
        # cell's execute_reply; that send can swallow the reply's wake-up, and the run then stalls until the cell
        # timeout (300 s) before carrying on as if nothing happened.
        self.plot_output.outputs = tuple(_display_data(fig) for fig in figures)


def explorer(
    op: str = "matmul",
    backends: Iterable[str] | str = ("numpy",),
    sizes: Iterable[int] | None = None,
    dtypes: Iterable[str] | str = ("float32", "float64"),
    budget: float = 0.2,
    size: int | None = None,
) -> Explorer:
    """Sliders that re-measure `op` on this machine and redraw its GFLOP/s: see how size and dtype change speed.

    backends: ticked at start ('python' means plain loops, run only at small n); the others usable here are
    offered unticked. sizes: the slider's stops (default per op); size: the first one measured (default: the
    middle stop). budget: seconds of timing per update, shared by the ticked backends.
    """
    if op not in workloads.WORKLOADS:
        raise ValueError(f"unknown op {op!r}; accepted: {', '.join(workloads.WORKLOADS)}")
    chosen = _check_names("backends", backends, NAMES)
    dtype_list = _check_names("dtypes", dtypes, workloads.DTYPES)
    stops = list(DEFAULT_SIZES[op] if sizes is None else sizes)
    if not stops:
        raise ValueError("sizes is empty; give the slider's stops as positive integers, e.g. sizes=(64, 128, 256)")
    for n in stops:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise ValueError(f"sizes must be positive integers ({workloads.get(op).size_meaning}); got {n!r}")
    stops = sorted({int(n) for n in stops})
    if isinstance(budget, bool) or not isinstance(budget, Real) or not 0 < budget <= 60:
        raise ValueError(f"budget must be seconds of timing per update, between 0 and 60; got {budget!r}")
    if size is None:
        size = stops[(len(stops) - 1) // 2]
    elif size not in stops:
        raise ValueError(f"size {size!r} is not one of the sizes: {', '.join(map(str, stops))}")
    return Explorer(op, chosen, stops, dtype_list, float(budget), int(size))


__all__ = ["DEFAULT_SIZES", "LOOPS_MAX_N", "RUN_TO_USE", "Explorer", "explorer"]
