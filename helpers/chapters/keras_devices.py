"""The same Keras model's epoch on the host CPU and on the accelerator, both measured in one run; without an
accelerator, the CPU's measured epoch beside the reference accelerator's predicted one, labelled so. Once at
chapter 05's width (keras_cpu_vs_accelerator), and across hidden widths (keras_widths).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.validate import positive_int
from ..measuring import specs
from ..measuring.comparison import crossover
from ..measuring.formats import format_seconds
from ..measuring.record import Timing
from . import mlp
from .epoch_predictions import Prediction, predict_epoch
from .epochs import time_epoch
from .trainers import trainer


def accelerator(devices: Sequence[Any] | None = None) -> Any | None:
    """The first GPU or TPU among JAX's `devices` (None: jax.devices()), or None when all are CPUs."""
    if devices is None:
        import jax

        devices = jax.devices()
    return next((d for d in devices if d.platform != "cpu"), None)


def _faster(speedup: float) -> str:
    """'2.31x faster' or '1.52x slower': a speed-up in words, read from the number."""
    return f"{speedup:,.2f}x faster" if speedup >= 1 else f"{1 / speedup:,.2f}x slower"


@dataclass(frozen=True)
class KerasOnDevices:
    """The same Keras model's epoch on the host CPU and on the accelerator, both measured in one run; without an
    accelerator, the CPU's measured epoch beside the accelerator's predicted one (h.roofline)."""

    cpu: Timing  # measured on the host CPU (JAX's CPU device)
    accelerator: Timing | None  # measured on the GPU or TPU; None when there is none here
    prediction: Prediction | None = None  # the reference accelerator's epoch, used only when none is here

    def __post_init__(self) -> None:
        if self.accelerator is None and self.prediction is None:
            raise ValueError("KerasOnDevices needs the accelerator's measured epoch or, without one, a prediction")

    @property
    def measured(self) -> bool:
        """True when both epochs were measured here (an accelerator is present)."""
        return self.accelerator is not None

    @property
    def speedup(self) -> float:
        """The accelerator's speed-up over the host CPU: CPU seconds per epoch / accelerator seconds per epoch."""
        other = self.accelerator.median if self.accelerator is not None else self.prediction.seconds
        return self.cpu.median / other

    def __str__(self) -> str:
        cpu_where = self.cpu.extra.get("where", "this CPU")
        cpu = f"{cpu_where}: {format_seconds(self.cpu.median)} per epoch (measured in this run)"
        if self.accelerator is not None:
            where_acc = self.accelerator.extra.get("where", self.accelerator.label)
            return (f"Keras, the same model and batches on each device:\n  {cpu}\n  {where_acc}: "
                    f"{format_seconds(self.accelerator.median)} per epoch (measured in this run)\n"
                    f"speed-up of {where_acc} over {cpu_where}, from these two measurements: {self.speedup:,.2f}x "
                    f"({_faster(self.speedup)})")
        p = self.prediction
        return (f"Keras, the same model and batches:\n  {cpu}\n  no GPU or TPU here: {p.label}: "
                f"{format_seconds(p.seconds)} per epoch\n    source: h.roofline's model through "
                f"h.training.predict_epoch, from the {p.device}'s published specs and Keras's host time per step "
                f"measured here\nPREDICTED speed-up of the {p.device} over {cpu_where}: {self.speedup:,.2f}x "
                f"({_faster(self.speedup)}, by the prediction)")


def keras_cpu_vs_accelerator(data: mlp.Digits, params: mlp.Params, idx: Any, lr: float, prediction: Prediction,
                             devices: Sequence[Any] | None = None, place: Callable[[Any], Any] | None = None,
                             timer: Callable[..., Timing] = time_epoch) -> KerasOnDevices:
    """Time one epoch of the same Keras model on the host CPU and, when there is one, on the accelerator.

    Each is timed by `timer` (time_epoch) inside `place(device)` (jax.default_device): Keras 3 on JAX makes its
    weights and takes its data on JAX's default device, and runs every step where they are, so both the model and
    the batches are made on that device. Without an accelerator, `prediction` (predict_epoch, kind "keras") stands
    beside the CPU's epoch, labelled. devices: JAX's devices (None: jax.devices(), then jax.devices("cpu")).
    """
    cpu, fast, place = _devices(devices, place)
    on_cpu = _keras_epoch(cpu, HOST_CPU, place, timer, data, params, idx, lr)
    if fast is None:
        return KerasOnDevices(on_cpu, None, prediction)
    return KerasOnDevices(on_cpu, _keras_epoch(fast, "the accelerator", place, timer, data, params, idx, lr))


def _devices(devices: Sequence[Any] | None, place: Callable[[Any], Any] | None) -> tuple[Any, Any, Any]:
    """(the host CPU, the accelerator or None, how to place work on a device) among JAX's `devices`."""
    import jax

    found = list(jax.devices()) + list(jax.devices("cpu")) if devices is None else list(devices)
    cpu = next((d for d in found if d.platform == "cpu"), None)
    if cpu is None:
        raise ValueError(f"no CPU among the devices given: {found}")
    return cpu, accelerator(found), place or jax.default_device


#: What the host CPU's timings of Keras are labelled: the one name whose epoch must have its data on the CPU.
HOST_CPU = "the host CPU"


def _keras_epoch(device: Any, name: str, place: Callable[[Any], Any], timer: Callable[..., Timing],
                 data: mlp.Digits, params: mlp.Params, idx: Any, lr: float) -> Timing:
    """One Keras epoch timed on `device`: the model, its weights and the batches are made there, so the steps run
    there; a RuntimeError when the data ended up elsewhere (the CPU for an accelerator, or the other way)."""
    with place(device):
        timing = timer(trainer("keras", lr), data, params, idx, label=f"Keras on {name}")
    on_cpu = timing.extra.get("where") == "this CPU"
    if on_cpu != (name == HOST_CPU):
        raise RuntimeError(f"Keras's epoch meant for {name} ran with its data on {timing.extra.get('where')}")
    return timing


#: The hidden widths at which chapter 05 times Keras on the host CPU and on the accelerator, and the batch: at
#: 256 the matrix products grow with the width while Keras's own host time per step stays the same.
KERAS_WIDTHS = (64, 1024, 4096, 16384)
KERAS_WIDTHS_BATCH = 256


@dataclass(frozen=True)
class KerasWidths:
    """Keras's epoch by hidden width on the host CPU (measured) and on the accelerator (measured in the same run;
    without one, predicted for the reference GPU and labelled so), and from which width the accelerator wins."""

    widths: tuple[int, ...]
    batch: int
    cpu: tuple[Timing, ...]
    accelerator: tuple[Timing, ...] | None
    predictions: tuple[Prediction, ...] | None
    name: str  # the accelerator's name, or the predicted device's

    @property
    def other(self) -> np.ndarray:
        """The accelerator's seconds per epoch at each width: measured, or predicted where none is here."""
        if self.accelerator is not None:
            return np.array([t.median for t in self.accelerator])
        return np.array([p.seconds for p in self.predictions or ()])

    @property
    def crossover(self) -> int | None:
        """The first width from which the accelerator's epoch beats the CPU's at every larger width too, or None."""
        return crossover(self.widths, [t.median for t in self.cpu], self.other)

    def __str__(self) -> str:
        kind = "measured" if self.accelerator is not None else "PREDICTED"
        lines = [f"Keras by hidden width, batch {self.batch}: this CPU (measured) against the {self.name} ({kind})",
                 f"{'hidden':>8}{'this CPU':>12}{self.name[:22]:>24}{'speed-up':>10}"]
        for width, cpu, other in zip(self.widths, self.cpu, self.other, strict=True):
            lines.append(f"{width:>8,}{format_seconds(cpu.median):>12}{format_seconds(other):>24}"
                         f"{cpu.median / other:>9.2f}x")
        cross, below = self.crossover, [w for w in self.widths if self.crossover and w < self.crossover]
        verb = "wins" if self.accelerator is not None else "is predicted to win"
        where = (f"at no width measured (up to {self.widths[-1]:,})" if cross is None
                 else f"from the smallest width measured, {cross:,}" if not below
                 else f"from between hidden {max(below):,} and {cross:,}")
        lines.append(f"the {self.name} {verb} {where}")
        return "\n".join(lines)


def keras_widths(data: mlp.Digits, lr: float, prediction_device: str = specs.REFERENCE_GPU,
                 host_seconds: float = 0.0, widths: Sequence[int] = KERAS_WIDTHS, batch: int = KERAS_WIDTHS_BATCH,
                 devices: Sequence[Any] | None = None, place: Callable[[Any], Any] | None = None,
                 timer: Callable[..., Timing] = time_epoch, seed: int = 0) -> KerasWidths:
    """Time one Keras epoch at each hidden width (batch `batch`) on the host CPU and on the accelerator, in one
    run; without an accelerator, predict `prediction_device` (predict_epoch, kind "keras", with `host_seconds`,
    Keras's own host time per step measured here) beside the CPU's epochs."""
    if not isinstance(data, mlp.Digits):
        raise TypeError(f"data must be the digits of h.mlp.load_digits_split(); got {type(data).__name__}")
    lr, batch = mlp._check_lr(lr), positive_int("batch", batch)
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence) or not widths:
        raise ValueError(f"widths must be a non-empty list of hidden widths, e.g. (64, 1024); got {widths!r:.40}")
    widths = tuple(positive_int("width", w) for w in widths)
    cpu, fast, place = _devices(devices, place)
    idx = mlp.batch_order(len(data.y_train), batch, 1, seed)[0]
    on_cpu, on_fast, predicted = [], [], []
    for width in widths:
        params = mlp.init_params(data.n_features, width, data.n_classes, seed)
        on_cpu.append(_keras_epoch(cpu, HOST_CPU, place, timer, data, params, idx, lr))
        if fast is not None:
            on_fast.append(_keras_epoch(fast, "the accelerator", place, timer, data, params, idx, lr))
        else:
            predicted.append(predict_epoch(prediction_device, batch, width, idx.shape[0], data.n_features,
                                           data.n_classes, kind="keras", host_seconds=host_seconds))
    name = str(getattr(fast, "device_kind", fast)) if fast is not None else predicted[0].device
    return KerasWidths(widths, batch, tuple(on_cpu), tuple(on_fast) if fast is not None else None,
                       tuple(predicted) if fast is None else None, name)
