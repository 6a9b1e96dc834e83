"""Sweeps: one epoch of several trainers timed as the batch or the hidden width grows, beside each way of running
the step predicted on a GPU, and the report of from which size each beats each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.validate import positive_int
from ..measuring.comparison import crossover
from ..measuring.disturbed import spread_shown
from ..measuring.formats import format_seconds
from ..measuring.record import Timing
from . import mlp
from .epoch_predictions import PREDICTED, Prediction, predict_epoch
from .epochs import time_epoch
from .trainers import Trainer


@dataclass(frozen=True)
class Sweep:
    """Seconds per epoch measured on several trainers, and predicted on a GPU for each way of running the step
    (CuPy, JAX, ...), as one size is varied."""

    vary: str  # "batch" or "hidden"
    values: tuple[int, ...]
    batch: int  # the batch size when hidden varies
    hidden: int  # the hidden width when batch varies
    timings: dict[str, list[Timing]]  # trainer label -> one Timing per value
    kinds: dict[str, str]  # trainer label -> its kind (KINDS)
    predictions: dict[str, tuple[Prediction, ...]]  # predicted kind (PREDICTED) -> one Prediction per value

    def _timings(self, label: str) -> list[Timing]:
        if label not in self.timings:
            raise KeyError(f"no trainer labelled {label!r} in this sweep; it timed: {', '.join(self.timings)}")
        return self.timings[label]

    def _predictions(self, kind: str) -> tuple[Prediction, ...]:
        if kind not in self.predictions:
            raise KeyError(f"no prediction of kind {kind!r} in this sweep; it predicted: {', '.join(self.predictions)}")
        return self.predictions[kind]

    def seconds(self, label: str) -> np.ndarray:
        """Median seconds per epoch of one trainer, per value."""
        return np.array([t.median for t in self._timings(label)])

    def predicted(self, kind: str) -> np.ndarray:
        """Predicted seconds per epoch of one kind ('cupy', 'jax', ...), per value."""
        return np.array([p.seconds for p in self._predictions(kind)])

    def crossover(self, label: str, kind: str = "cupy") -> int | None:
        """The first value from which `kind`'s prediction beats the measured trainer `label` at every larger value
        too, or None if it never does."""
        return crossover(self.values, self.seconds(label), self.predicted(kind))

    def wins_from(self, label: str, kind: str = "cupy") -> str:
        """Where `kind`'s prediction starts to beat `label`, in words that name only sizes measured: 'from between
        hidden 256 and 1,024' (the crossover lies somewhere in that gap), 'from the smallest hidden measured, 16'
        or 'at no hidden measured'."""
        return self._where(self.crossover(label, kind))

    def _where(self, cross: int | None) -> str:
        if cross is None:
            return f"at no {self.vary} measured"
        below = [v for v in self.values if v < cross]
        if not below:
            return f"from the smallest {self.vary} measured, {cross:,}"
        return f"from between {self.vary} {max(below):,} and {cross:,}"

    @property
    def device(self) -> str:
        """The device the predictions are for."""
        return next(iter(self.predictions.values()))[0].device

    def on_device(self, label: str) -> bool:
        """Whether trainer `label` was measured on the device the predictions are for (judged by its peak's name)."""
        return all(t.peak is not None and t.peak.device == self.device for t in self._timings(label))

    def measured_as(self, kind: str) -> str | None:
        """The trainer measured on the predicted device that runs the step as `kind` predicts it, if any."""
        return next((label for label, k in self.kinds.items() if k == kind and self.on_device(label)), None)


def _report_lines(sw: Sweep, label: str) -> list[str]:
    """Under trainer `label`'s line: on the predicted device, its own prediction beside its measurement; elsewhere,
    from which size each way of running the step on that device beats it, measured there when it was."""
    if sw.on_device(label):
        kind = sw.kinds[label]
        if kind not in sw.predictions:
            return []
        pairs = [f"{v:,}: {format_seconds(p)} / {format_seconds(m)} = {m / p:.2f}x" for v, p, m in
                 zip(sw.values, sw.predicted(kind), sw.seconds(label), strict=True)]
        return [f"  on the {sw.device}, where it ran: predicted / measured per {sw.vary}: " + "; ".join(pairs)]
    lines = []
    for kind, preds in sw.predictions.items():
        other = sw.measured_as(kind)
        if other is None:
            lines.append(f"  {preds[0].label} beats {label} here {sw.wins_from(label, kind)}")
        else:
            cross = crossover(sw.values, sw.seconds(label), sw.seconds(other))
            lines.append(f"  {other} on the {sw.device} (measured) beats {label} here {sw._where(cross)}")
    return lines


def sweep(trainers: Sequence[Trainer], data: mlp.Digits, vary: str, values: Sequence[int], batch: int = 32,
          hidden: int = 64, device: str = "NVIDIA T4", budget: float | None = None, seed: int = 0,
          host_seconds: float | None = None) -> Sweep:
    """Time one epoch of every trainer at each value of `vary` ('batch' or 'hidden'), and predict `device`.

    Predicted: CuPy always, and each JAX or Keras kind among the trainers (a Keras trainer needs `host_seconds`, as
    predict_epoch does). budget: seconds of timing per epoch timed (None: the chapter's, h.set_timing_budget).
    Quick timings vary; NoisyTimingWarning is silenced here (rerun, or raise the budget, for steadier numbers).
    """
    if vary not in ("batch", "hidden"):
        raise ValueError(f"vary must be 'batch' or 'hidden', got {vary!r}")
    values = tuple(positive_int(vary, v) for v in values)
    if not values or not trainers:
        raise ValueError("sweep() needs at least one trainer and one value")
    swept = {tr.kind for tr in trainers}
    kinds = ["cupy"] + [kind for kind in PREDICTED if kind != "cupy" and kind in swept]
    if ("keras" in kinds) != (host_seconds is not None):
        raise ValueError("host_seconds (Keras's own seconds per step, measured here) goes with a Keras trainer: "
                         "give both or neither")
    timings: dict[str, list[Timing]] = {tr.label: [] for tr in trainers}
    predictions: dict[str, list[Prediction]] = {kind: [] for kind in kinds}
    for value in values:
        b, hd = (value, hidden) if vary == "batch" else (batch, value)
        params = mlp.init_params(data.n_features, hd, data.n_classes, seed)
        idx = mlp.batch_order(len(data.y_train), b, 1, seed)[0]
        with spread_shown():
            for tr in trainers:
                timings[tr.label].append(time_epoch(tr, data, params, idx, budget, f"{tr.label}, {vary} {value}",
                                                      min_repeats=3))
        for kind in kinds:
            predictions[kind].append(predict_epoch(device, b, hd, idx.shape[0], data.n_features, data.n_classes,
                                                   kind, host_seconds if kind == "keras" else None))
    return Sweep(vary, values, batch, hidden, timings, {tr.label: tr.kind for tr in trainers},
                 {kind: tuple(preds) for kind, preds in predictions.items()})


def sweep_report(sw: Sweep) -> str:
    """Per measured trainer: its speed at the largest size; then, for one that ran on the predicted device, its
    prediction beside its measurement (a device's prediction is never raced against its own measurement), and for
    the others, from which size each way of running the step on that device beats it (measured there if it was)."""
    lines = []
    for label, timings in sw.timings.items():
        big = timings[-1]
        rate = "" if big.gflops is None else f", {big.gflops:,.1f} GFLOP/s"
        share = "" if big.fraction_of_peak is None else f" ({big.fraction_of_peak:.0%} of the {big.peak.device} peak)"
        lines.append(f"{label}, measured here: {format_seconds(big.median)} per epoch at {sw.vary} "
                     f"{sw.values[-1]:,}{rate}{share}")
        lines += _report_lines(sw, label)
    return "\n".join(lines)
