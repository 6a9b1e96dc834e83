"""Training and timing epochs with a Trainer: train() from a start on the batches an order names (losses, test
accuracy, final weights), and time_epoch(), one epoch timed with `benchmark` (the first call, which compiles on
JAX, apart), its FLOPs and bytes counted from the traced step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.backend import backends, check_name, to_backend, to_numpy, where
from ..measuring.record import Timing
from ..measuring.timer import benchmark
from . import mlp
from .step_trace import trace_step
from .trainers import Trainer

#: The cap on timing one epoch on JAX, whose first call compiles each new shape. Chapter 05's first timed epoch
#: of a batch-64 jitted step ran past 10 s on an H200 (JAX 0.11.2, 2026-11-26) although compiling that step alone
#: took 1.4 s there (cause not found); 60 s still ends a call that never returns.
COMPILE_SECONDS = 60.0
#: The same cap where nothing compiles (NumPy, CuPy): benchmark's own default.
NO_COMPILE_SECONDS = 10.0


@dataclass(frozen=True)
class Run:
    """One training run: the loss at every step, the test accuracy at the end, and the final weights."""

    label: str
    device: str
    losses: np.ndarray  # (epochs, steps)
    accuracy: float  # on the test set, 0 to 1
    params: mlp.Params

    def __str__(self) -> str:
        epochs, steps = self.losses.shape
        return (f"{self.label} on {self.device}: {epochs} epochs of {steps} steps, loss {self.losses[0, 0]:.3f} -> "
                f"{self.losses[-1].mean():.3f} (last epoch's mean), test accuracy {self.accuracy:.1%}")


def device_name(backend: str) -> str:
    """Where a backend's arrays live, in words: 'CPU', 'GPU: Tesla T4', 'TPU v5 lite'."""
    status = backends()[check_name(backend)]
    if backend == "cupy":
        return status.detail.split(" (")[0]
    if backend == "jax" and status.device_kind != "cpu":
        import jax

        return f"{status.device_kind.upper()}: {jax.devices()[0].device_kind}"
    return "CPU"


def _check_order(order: Any, n_train: int) -> np.ndarray:
    order = np.asarray(order)
    if order.ndim == 2:
        order = order[None]
    if order.ndim != 3 or order.size == 0 or not np.issubdtype(order.dtype, np.integer):
        raise ValueError(f"order must be integer indices of shape (epochs, steps, batch) or (steps, batch), as "
                         f"mlp.batch_order makes; got {order.dtype} {order.shape}")
    if order.min() < 0 or order.max() >= n_train:
        raise ValueError(f"order has indices outside 0..{n_train - 1}: was it made for another data set?")
    return order


def _on_device(data: mlp.Digits, backend: str) -> tuple[Any, Any]:
    return to_backend(data.x_train, backend), to_backend(data.y_train, backend)


def accuracy(tr: Trainer, state: Any, data: mlp.Digits) -> float:
    """The fraction of test images whose highest score is the right digit."""
    scores = to_numpy(tr.logits(state, to_backend(data.x_test, tr.backend)))
    return float(np.mean(np.argmax(scores, axis=1) == data.y_test))


def train(tr: Trainer, data: mlp.Digits, params: mlp.Params, order: Any) -> Run:
    """Train from `params` on the batches `order` names (epochs, steps, batch); the data moves to the device once."""
    n_in, _, n_out = mlp.check_params(params)
    if (n_in, n_out) != (data.n_features, data.n_classes):
        raise ValueError(f"the network takes {n_in} inputs and gives {n_out} scores, but the data has "
                         f"{data.n_features} features and {data.n_classes} classes")
    order = _check_order(order, len(data.y_train))
    x, y = _on_device(data, tr.backend)
    state = tr.start(params)
    losses = []
    for idx in order:
        state, step_losses = tr.epoch(state, tr.batches(x, y, idx))
        losses.append(to_numpy(step_losses))
    return Run(tr.label, device_name(tr.backend), np.stack(losses).astype(np.float64), accuracy(tr, state, data),
               tr.weights(state))


def time_epoch(tr: Trainer, data: mlp.Digits, params: mlp.Params, idx: Any, budget: float | None = None,
               label: str | None = None, min_repeats: int = 5) -> Timing:
    """Time one epoch (the batches `idx`, shape (steps, batch)) with `benchmark`: the first call, which compiles
    on JAX, apart; FLOPs and bytes counted from the hand-written step, so GFLOP/s and fraction of peak show.

    Every call starts from the same `params` (Keras goes on training its model: the work is the same).
    budget: seconds of repeated timing (None: the chapter's, h.set_timing_budget).
    """
    idx = _check_order(idx, len(data.y_train))
    if len(idx) != 1:
        raise ValueError(f"time_epoch times one epoch: give indices of shape (steps, batch), got {idx.shape}")
    idx = idx[0]
    steps, batch = idx.shape
    n_in, hidden, n_out = mlp.check_params(params)
    work = trace_step(batch, n_in, hidden, n_out)
    x, y = _on_device(data, tr.backend)
    timing = benchmark(tr.epoch, tr.start(params), tr.batches(x, y, idx), backend=tr.backend,
                       flops=steps * work.flops, bytes=steps * work.bytes, n=batch, label=label or tr.label,
                       budget=budget, min_repeats=min_repeats,
                       max_time=COMPILE_SECONDS if tr.backend == "jax" else NO_COMPILE_SECONDS)
    timing.extra.update(samples=steps * batch, steps=steps, hidden=hidden, where=where(x))  # where the data lived
    return timing


def samples_per_second(t: Timing) -> float:
    """Training samples per second of an epoch timed by `time_epoch` (median time)."""
    if "samples" not in t.extra:
        raise ValueError(f"{t.label!r} was not timed by training.time_epoch: it does not know its samples per epoch")
    return t.extra["samples"] / t.median
