"""Chapter 05's exercise on the training loop: SGD with momentum, by hand in NumPy (the reference), and the check of
the learner's jitted step against it, step by step from the chapter's shared start on its batches.

Momentum keeps a velocity for every parameter: velocity = mu * velocity + gradient, then the parameter moves lr
times the velocity (PyTorch's SGD with momentum, dampening 0). Writing it as velocity = mu * velocity + lr *
gradient, then moving the parameter by the velocity, is the same method: the check compares parameters and losses,
never the velocity itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.validate import finite, positive_int
from ..learning import checks
from . import mlp

#: Steps the check runs: enough for momentum to pull far from plain SGD, few enough to take a second.
STEPS = 30
#: The largest difference allowed, relative to a parameter's largest value: float32 rounding over STEPS steps
#: (NumPy and JAX add up a product's terms in different orders) stays far below it; a wrong step does not.
TOLERANCE = 1e-4
#: Seconds the learner's step may take over all STEPS steps, its compilation included: a hang guard.
TIME_LIMIT = 120.0


def reference(data: mlp.Digits, params: mlp.Params, idx: Any, lr: float, mu: float,
              steps: int = STEPS) -> tuple[list[mlp.Params], list[float]]:
    """SGD with momentum by hand (NumPy, float32) from `params` on the batches `idx` (steps, batch): the
    parameters after each step, and each step's loss before its update."""
    lr, mu = _coefficient("lr", lr), _coefficient("mu", mu)
    _check_start(data, params)
    idx = _batches(idx, steps, len(data.y_train))
    p = {name: np.array(value, np.float32) for name, value in params.items()}
    v = {name: np.zeros_like(value) for name, value in p.items()}
    after, losses = [], []
    for rows in idx[:steps]:
        loss, grads = mlp.loss_and_grads(p, data.x_train[rows], data.y_train[rows], np)
        v = {name: np.float32(mu) * v[name] + grads[name] for name in mlp.PARAM_NAMES}
        p = {name: p[name] - np.float32(lr) * v[name] for name in mlp.PARAM_NAMES}
        after.append(p)
        losses.append(float(loss))
    return after, losses


def check(step: Callable[..., Any], data: mlp.Digits, params: mlp.Params, idx: Any, lr: float, mu: float,
          steps: int = STEPS) -> checks.Verdict:
    """Run the learner's `step(params, velocity, x, y) -> (params, velocity, loss)` for `steps` steps from `params`
    (the velocity starts at zero) on the batches `idx`, beside `reference`; print the verdict."""
    want, want_losses = reference(data, params, idx, lr, mu, steps)
    rows = _batches(idx, steps, len(data.y_train))
    what = f"momentum_step, {steps} steps against a NumPy reference"
    return checks.check_answer(step, lambda got: _problem(got, data, params, rows, want, want_losses), what,
                               time_limit=TIME_LIMIT)


def _problem(step: Any, data: mlp.Digits, params: mlp.Params, rows: np.ndarray, want: list[mlp.Params],
             want_losses: list[float]) -> str | None:
    """What is wrong with the learner's step, at the first step where it leaves the reference; None if nothing."""
    import jax.numpy as jnp

    if not callable(step):
        return f"expected a function, got {type(step).__name__}"
    x, y = jnp.asarray(data.x_train), jnp.asarray(data.y_train)
    p = {name: jnp.asarray(value) for name, value in params.items()}
    v = {name: jnp.zeros_like(value) for name, value in p.items()}
    for s, batch in enumerate(rows):
        out = step(p, v, x[batch], y[batch])
        if not isinstance(out, tuple) or len(out) != 3:
            got = f"a tuple of {len(out)}" if isinstance(out, tuple) else f"a {type(out).__name__}"
            return f"returned {got}; expected a tuple of 3: (new params, new velocity, loss)"
        p, v, loss = out
        shape = _shape_problem(p, "new params", params) or _shape_problem(v, "new velocity", params)
        if shape:
            return shape
        wrong = _first_difference(p, want[s], loss, want_losses[s])
        if wrong:
            return f"step {s + 1} of {len(rows)}: {wrong}. {_hint(s)}"
    return None


def _shape_problem(got: Any, what: str, params: mlp.Params) -> str | None:
    if not isinstance(got, dict) or set(got) != set(params):
        return (f"the {what} must be a dict with one array per parameter ({', '.join(params)}); got "
                f"{checks.describe(got)}")
    odd = [name for name in params if np.shape(got[name]) != np.shape(params[name])]
    return f"in the {what}, {', '.join(odd)} changed shape" if odd else None


def _first_difference(got: dict, want: mlp.Params, loss: Any, want_loss: float) -> str | None:
    """How far the learner's parameters or loss after one step are from the reference's, if beyond TOLERANCE."""
    for name in mlp.PARAM_NAMES:
        mine = np.asarray(got[name], np.float64)
        scale = max(float(np.max(np.abs(want[name]))), 1e-30)
        off = float(np.max(np.abs(mine - want[name]))) / scale
        if not off <= TOLERANCE:  # NaN too
            return f"{name} is off by {off:.1e} of its largest value (at most {TOLERANCE:.0e} allowed)"
    mine = float(np.asarray(loss))
    if not abs(mine - want_loss) <= TOLERANCE * abs(want_loss):
        return f"the loss it returned, {mine:.6g}, is not the loss before the update, {want_loss:.6g}"
    return None


def _hint(step: int) -> str:
    if step == 0:
        return ("On the first step the velocity is the gradient itself (it starts at zero), so the first step is plain "
                "SGD's")
    return ("The first steps matched: is the new velocity MU times the old one plus the gradient, and is it "
            "returned, so that the next step gets it back?")


def _check_start(data: Any, params: Any) -> None:
    """A clear error unless `data` is the chapter's digits and `params` a start for a network that fits them."""
    if not isinstance(data, mlp.Digits):
        raise ValueError(f"data must be the digits h.mlp.load_digits_split() gives; got {type(data).__name__}")
    n_in, _, n_out = mlp.check_params(params)
    if (n_in, n_out) != (data.n_features, data.n_classes):
        raise ValueError(f"params take {n_in} inputs and give {n_out} scores; the data has {data.n_features} "
                         f"features and {data.n_classes} classes")


def _coefficient(name: str, value: Any) -> float:
    if not finite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of at least 0; got {value!r:.40}")
    return float(value)


def _batches(idx: Any, steps: int, n_train: int) -> np.ndarray:
    """The first `steps` rows of an epoch's batch indices (steps, batch), checked against the training set."""
    steps = positive_int("steps", steps)
    try:
        rows = np.asarray(idx)
    except ValueError:  # ragged lists: no array at all
        raise ValueError("idx must be one epoch's batch indices, whole numbers of shape (steps, batch); got rows "
                         "of different lengths") from None
    if rows.ndim != 2 or rows.shape[0] < steps or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"idx must be one epoch's batch indices, whole numbers of shape (steps, batch) with at "
                         f"least {steps} steps; got shape {rows.shape} of {rows.dtype}")
    if rows.size and (rows.min() < 0 or rows.max() >= n_train):
        raise ValueError(f"idx must index the {n_train} training images; got values from {rows.min()} to {rows.max()}")
    return rows[:steps]
