"""The trainers of chapter 05: the same network (helpers.chapters.mlp) trained by plain SGD on each backend, the
hand-written step on NumPy or CuPy, JAX one jitted step at a time or a whole epoch per call, and Keras on JAX.

A Trainer moves the start to its device, cuts an epoch's batches there and runs an epoch; epochs.train and
epochs.time_epoch drive any of them the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.backend import array_module, to_backend, to_numpy
from . import mlp

#: What `trainer()` can build: the hand-written step on NumPy or CuPy, JAX one jitted step at a time or a
#: whole epoch per call (lax.scan), and Keras 3 on the JAX backend.
KINDS = ("numpy", "cupy", "jax", "jax-scan", "keras")


@dataclass(frozen=True)
class Trainer:
    """How one backend trains: move the start there, cut an epoch's batches there, run an epoch, predict."""

    kind: str
    label: str
    backend: str  # where its arrays live: "numpy", "cupy" or "jax" (Keras runs on JAX)
    compute_dtype: str
    start: Callable[[mlp.Params], Any]  # NumPy parameters -> the backend's state (parameters, or a Keras model)
    batches: Callable[[Any, Any, np.ndarray], Any]  # (x, y on the device, indices (steps, batch)) -> batches
    epoch: Callable[[Any, Any], tuple[Any, Any]]  # (state, batches) -> (state, loss of every step)
    logits: Callable[[Any, Any], Any]  # (state, x on the device) -> scores
    weights: Callable[[Any], mlp.Params]  # state -> NumPy parameters


def _steps_of(x: Any, y: Any, idx: np.ndarray, backend: str) -> list[tuple[Any, Any]]:
    """The batches of one epoch as a list of (x, y), gathered on the device once, before any timing."""
    idx = to_backend(np.asarray(idx, dtype=np.int32), backend)
    xs, ys = x[idx], y[idx]
    return list(zip(xs, ys, strict=True))  # JAX: slicing inside the timed loop would cost a dispatch per step


def _to_numpy_params(params: mlp.Params) -> mlp.Params:
    return {k: to_numpy(v) for k, v in params.items()}


def _to_jax(params: mlp.Params) -> mlp.Params:
    return to_backend(params, "jax")


def trainer(kind: str, lr: float, compute_dtype: str = "float32") -> Trainer:
    """A Trainer for `kind` (one of KINDS) with plain SGD at learning rate `lr`.

    compute_dtype 'bfloat16' (JAX kinds only): matrix products in bfloat16, weights and loss in float32.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown trainer kind {kind!r}; accepted: {', '.join(KINDS)}")
    lr = mlp._check_lr(lr)
    mlp._check_compute_dtype(compute_dtype)
    if compute_dtype != "float32" and not kind.startswith("jax"):
        raise ValueError(f"compute_dtype={compute_dtype!r} is only for the JAX trainers; {kind!r} trains in float32")
    suffix = "" if compute_dtype == "float32" else f", {compute_dtype}"

    if kind in ("numpy", "cupy"):
        xp = array_module(kind)  # raises, with the reason and the fix, when CuPy cannot run here

        def epoch(params: mlp.Params, steps: list[tuple[Any, Any]]) -> tuple[mlp.Params, Any]:
            losses = []
            for x, y in steps:
                params, loss = mlp.numpy_step(params, x, y, lr, xp)
                losses.append(loss)
            return params, xp.stack(losses)

        return Trainer(kind, {"numpy": "NumPy", "cupy": "CuPy"}[kind], kind, compute_dtype,
                       lambda params: to_backend(params, kind), lambda x, y, idx: _steps_of(x, y, idx, kind),
                       epoch, mlp.logits, _to_numpy_params)

    if kind == "keras":
        keras = mlp.keras_jax()

        def keras_step(model: Any, x: Any, y: Any) -> float:
            # Some Keras 3 releases (Colab's 3.13.2 among them) return the running mean of the loss since the last
            # reset of the metrics, not this batch's loss; resetting first gives this batch's loss on every release.
            model.reset_metrics()
            return model.train_on_batch(x, y)

        def keras_epoch(model: Any, steps: list[tuple[Any, Any]]) -> tuple[Any, Any]:
            return model, np.array([keras_step(model, x, y) for x, y in steps], dtype=np.float32)

        return Trainer(kind, "Keras (JAX backend)", "jax", compute_dtype, lambda params: mlp.keras_model(params, lr),
                       lambda x, y, idx: _steps_of(x, y, idx, "jax"), keras_epoch,
                       lambda model, x: keras.ops.convert_to_numpy(model(x)), mlp.keras_params)

    import jax.numpy as jnp

    if kind == "jax":
        step = mlp.jax_step(lr, compute_dtype)

        def jax_epoch(params: mlp.Params, steps: list[tuple[Any, Any]]) -> tuple[mlp.Params, Any]:
            losses = []
            for x, y in steps:
                params, loss = step(params, x, y)
                losses.append(loss)
            return params, jnp.stack(losses)

        return Trainer(kind, f"JAX (jit per step{suffix})", "jax", compute_dtype, _to_jax,
                       lambda x, y, idx: _steps_of(x, y, idx, "jax"), jax_epoch, mlp.logits, _to_numpy_params)

    scan = mlp.jax_epoch(lr, compute_dtype)

    def stacked(x: Any, y: Any, idx: np.ndarray) -> tuple[Any, Any]:
        idx = to_backend(np.asarray(idx, dtype=np.int32), "jax")
        return x[idx], y[idx]

    return Trainer(kind, f"JAX (one jit per epoch{suffix})", "jax", compute_dtype, _to_jax, stacked,
                   lambda params, batches: scan(params, *batches), mlp.logits, _to_numpy_params)
