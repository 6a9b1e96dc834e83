"""Train the network of `helpers.mlp` on any backend, time its epochs honestly, and predict a missing GPU.

Every backend gets the same start, the same mini-batches in the same order and the same learning rate, so
loss curves and accuracies can be compared; speed is one epoch timed with `benchmark` (first call, with any
compilation, apart). What a GPU would do is a prediction from published specs: every array operation of the
hand-written step is traced with its FLOPs and bytes, and costs at least one kernel launch.

    tr = training.trainer("jax", lr=0.2)               # or "numpy", "cupy", "jax-scan", "keras"
    run = training.train(tr, data, params, order)      # losses per step, test accuracy, final weights
    t = training.time_epoch(tr, data, params, order[0])   # a Timing of one epoch
    training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=42)   # roofline + launch floor
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from numbers import Real
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import mlp
from .backend import array_module, backends, check_name, to_backend, to_numpy
from .specs import LAUNCH_SECONDS
from .timing import NoisyTimingWarning, Timing, benchmark, crossover, format_seconds
from .validate import positive_int

#: What `trainer()` can build: the hand-written step on NumPy or CuPy, JAX one jitted step at a time or a
#: whole epoch per call (lax.scan), and Keras 3 on the JAX backend.
KINDS = ("numpy", "cupy", "jax", "jax-scan", "keras")
#: Seconds one kernel launch costs at least: the low end of "roughly 10 to 50 microseconds" per CuPy call
#: (helpers.specs.LAUNCH_SECONDS, from the CuPy and JAX docs; chapter 03 measures it). The low end favours the GPU.
LAUNCH_FLOOR = LAUNCH_SECONDS[0]


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


# -------------------------------------------------------------------------------------------------- training


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


def time_epoch(tr: Trainer, data: mlp.Digits, params: mlp.Params, idx: Any, budget: float = 0.3,
               label: str | None = None, min_repeats: int = 5) -> Timing:
    """Time one epoch (the batches `idx`, shape (steps, batch)) with `benchmark`: the first call, which compiles
    on JAX, apart; FLOPs and bytes counted from the hand-written step, so GFLOP/s and fraction of peak show.

    Every call starts from the same `params` (Keras goes on training its model: the work is the same).
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
                       budget=budget, min_repeats=min_repeats)
    timing.extra.update(samples=steps * batch, steps=steps, hidden=hidden)
    return timing


def samples_per_second(t: Timing) -> float:
    """Training samples per second of an epoch timed by `time_epoch` (median time)."""
    if "samples" not in t.extra:
        raise ValueError(f"{t.label!r} was not timed by training.time_epoch: it does not know its samples per epoch")
    return t.extra["samples"] / t.median


# ------------------------------------------------------------------------- the work of one step, op by op


@dataclass(frozen=True)
class Kernel:
    """One array operation of the hand-written step: on a GPU, one kernel launch (or one cuBLAS call)."""

    name: str  # the NumPy ufunc ('matmul', 'add', 'add.reduce', ...), 'eye' or 'gather'
    shapes: str  # the shapes it works on, e.g. '(32, 64) @ (64, 64)'
    flops: int  # floating-point operations (a matmul: 2mkn; elementwise: one per output; reduction: one per input)
    bytes: int  # bytes read and written, if every input is read and the output written once
    written: int = 0  # bytes of the array it makes (its output)

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class StepWork:
    """Every array operation one training step does, in order, as traced from `mlp.numpy_step`."""

    kernels: tuple[Kernel, ...]
    #: Bytes of device memory one step needs at most: parameters and a batch, and every array the step makes (an
    #: upper bound: a real run frees temporaries as it goes).
    memory: int = 0

    @property
    def launches(self) -> int:
        """Array operations per step: kernel launches, if each ran as one GPU kernel (as in CuPy)."""
        return len(self.kernels)

    @property
    def flops(self) -> int:
        """FLOPs of one step."""
        return sum(k.flops for k in self.kernels)

    @property
    def bytes(self) -> int:
        """Bytes one step moves, operation by operation (nothing is fused)."""
        return sum(k.bytes for k in self.kernels)

    @property
    def matmuls(self) -> list[Kernel]:
        """The matrix products: nearly all the FLOPs."""
        return [k for k in self.kernels if k.name == "matmul"]


@dataclass(frozen=True)
class _Op:
    """One array operation as traced: its kind and the shapes and item sizes it reads and writes."""

    name: str
    inputs: tuple[tuple[tuple[int, ...], int], ...]  # (shape, itemsize) of each array read
    output: tuple[tuple[int, ...], int]  # (shape, itemsize) written
    reduce: bool = False

    def kernel(self, size: Callable[[int], int]) -> Kernel:
        """This operation at other sizes: `size` maps each traced dimension to the real one."""
        shapes = [tuple(size(d) for d in shape) for shape, _ in self.inputs]
        out = tuple(size(d) for d in self.output[0])
        count = math.prod
        if self.name == "matmul":
            (m, k), n = shapes[0], shapes[1][1]
            flops, text = 2 * m * k * n, f"{shapes[0]} @ {shapes[1]}"
        else:
            flops = (count(shapes[0]) if self.reduce else count(out)) if self.name not in ("eye", "gather") else 0
            text = " , ".join(str(shape) for shape in shapes) if self.name != "eye" else str(out)
            if self.name == "gather":
                text = f"{shapes[0]}[{shapes[1]}]"
        moved = sum(count(shape) * item for shape, (_, item) in zip(shapes, self.inputs, strict=True))
        if self.name == "gather":  # reads only the gathered elements and the index, not the whole array
            moved = count(shapes[1]) * self.inputs[1][1]
        return Kernel(self.name, text, flops, moved + count(out) * self.output[1], count(out) * self.output[1])


class _Traced(np.ndarray):
    """A NumPy array that logs every operation done with it (ufuncs, reductions, gathers) as an _Op."""

    log: list[_Op] = []

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [x.view(np.ndarray) if isinstance(x, _Traced) else x for x in inputs]
        out = np.asarray(getattr(ufunc, method)(*plain, **kwargs))
        arrays = [x for x in plain if isinstance(x, np.ndarray)]
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        _Traced.log.append(_Op(name, tuple((x.shape, x.itemsize) for x in arrays), (out.shape, out.itemsize),
                               method == "reduce"))
        return out.view(_Traced)

    def __getitem__(self, key: Any) -> Any:
        out = np.asarray(self.view(np.ndarray)[key.view(np.ndarray) if isinstance(key, _Traced) else key])
        if isinstance(key, np.ndarray):  # a gather: a kernel on a GPU (basic slicing is a free view)
            _Traced.log.append(_Op("gather", ((self.shape, self.itemsize), (key.shape, key.itemsize)),
                                   (out.shape, out.itemsize)))
        return out.view(_Traced)


def _traced_eye(n: int, dtype: Any = None) -> _Traced:
    out = np.eye(n, dtype=dtype)
    _Traced.log.append(_Op("eye", (), (out.shape, out.itemsize)))
    return out.view(_Traced)


#: The sizes the step is traced at: small, and distinct from each other and from 1, so that every dimension of
#: every traced shape says which size it is (batch, n_in, hidden, n_out).
_PROBE = {"batch": 11, "n_in": 13, "hidden": 17, "n_out": 19}


@lru_cache(maxsize=1)
def _traced_ops() -> tuple[_Op, ...]:
    """Every operation of `mlp.numpy_step`, run once at the probe sizes on arrays that log what they do."""
    params = {k: v.view(_Traced) for k, v in mlp.init_params(_PROBE["n_in"], _PROBE["hidden"],
                                                              _PROBE["n_out"]).items()}
    x = np.zeros((_PROBE["batch"], _PROBE["n_in"]), np.float32).view(_Traced)
    y = (np.arange(_PROBE["batch"], dtype=np.int32) % _PROBE["n_out"]).view(_Traced)
    xp = SimpleNamespace(log=np.log, exp=np.exp, eye=_traced_eye)  # the module functions the step calls
    _Traced.log = []
    try:
        mlp.numpy_step(params, x, y, 0.1, xp)
        return tuple(_Traced.log)
    finally:
        _Traced.log = []


def trace_step(batch: int, n_in: int = 64, hidden: int = 64, n_out: int = 10) -> StepWork:
    """Every array operation of `mlp.numpy_step` at these sizes, with its FLOPs and bytes, without computing.

    The step really runs once, at small probe sizes, on arrays that log each operation: this counts the code
    that runs (the NumPy code is the CuPy code), not a formula for it. Each logged shape is then scaled to the
    sizes asked for, so any size is counted in microseconds.
    """
    sizes = {name: positive_int(name, value) for name, value in
             (("batch", batch), ("n_in", n_in), ("hidden", hidden), ("n_out", n_out))}
    scale = {probe: sizes[name] for name, probe in _PROBE.items()} | {1: 1}

    def size(dim: int) -> int:
        if dim not in scale:
            raise RuntimeError(f"trace_step: a traced shape has a dimension {dim} that is not one of the probe sizes "
                               f"{_PROBE}: the step computes a size of its own; count it here")
        return scale[dim]

    kernels = tuple(op.kernel(size) for op in _traced_ops())
    b, i, h, o = sizes["batch"], sizes["n_in"], sizes["hidden"], sizes["n_out"]
    given = 4 * (i * h + h + h * o + o) + 4 * b * i + 4 * b  # float32 parameters and x, int32 labels
    return StepWork(kernels, given + sum(k.written for k in kernels))


# ---------------------------------------------------------------------------- predictions from published specs


@dataclass(frozen=True)
class Prediction:
    """What published specs predict for one epoch of the hand-written step on a device we do not have here.

    Each array operation costs its roofline time, max(FLOPs / peak, bytes / bandwidth), but never less than
    one kernel launch (`floor`): a step of many tiny operations is bound by launches, not by the chip.
    """

    device: str
    steps: int
    batch: int
    hidden: int
    launches: int  # per step
    floor: float  # seconds per launch
    roofline_step: float  # seconds per step if launches were free
    seconds: float  # per epoch: steps x sum over operations of max(roofline time, floor)
    launch_bound: int  # operations per step whose launch costs more than their roofline time
    memory: int = 0  # bytes of device memory a step needs (an upper bound, StepWork.memory)
    device_memory: float = 0.0  # bytes the device has (published)

    @property
    def fits(self) -> bool:
        """Whether a step fits in the device's memory (False: the prediction is for a run that cannot happen)."""
        return not self.device_memory or self.memory <= self.device_memory

    @property
    def label(self) -> str:
        """'NVIDIA T4 (prediction)': never to be read as a measurement."""
        return f"{self.device} (prediction)"

    @property
    def launch_step(self) -> float:
        """Seconds per step the launches alone cost."""
        return self.launches * self.floor

    def __str__(self) -> str:
        return (f"{self.label}: {format_seconds(self.seconds)} per epoch of {self.steps} steps (batch {self.batch}, "
                f"hidden {self.hidden}); per step: launches {self.launches} x {format_seconds(self.floor)} = "
                f"{format_seconds(self.launch_step)}, roofline {format_seconds(self.roofline_step)}; "
                f"{self.launch_bound} of {self.launches} operations bound by their launch"
                + ("" if self.fits else f"; DOES NOT FIT: a step needs up to {self.memory / 1e9:,.1f} GB, the "
                   f"device has {self.device_memory / 1e9:,.0f} GB"))


def predict_epoch(device: str, batch: int, hidden: int, steps: int, n_in: int = 64, n_out: int = 10,
                  floor: float = LAUNCH_FLOOR) -> Prediction:
    """Predict one float32 epoch of the hand-written step on `device` (a name in helpers.specs).

    Its published float32 peak and bandwidth give each operation's roofline time (the traced bytes are float32
    bytes: the CuPy step trains in float32); `floor` is the least one kernel launch costs.
    """
    from . import specs
    from .plots import predict_time

    spec = specs.get(device)
    steps = positive_int("steps", steps)
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor >= 0:
        raise ValueError(f"floor (seconds per kernel launch) must be a non-negative number, got {floor!r}")
    work = trace_step(positive_int("batch", batch), n_in, positive_int("hidden", hidden), n_out)
    times = [predict_time(spec, k.flops, k.bytes, "float32") for k in work.kernels]
    per_step = sum(max(t, floor) for t in times)
    return Prediction(spec.name, steps, batch, hidden, work.launches, float(floor), sum(times), steps * per_step,
                      sum(t < floor for t in times), work.memory, spec.memory_bytes)


# ------------------------------------------------------------------------------------------------------ sweeps


@dataclass(frozen=True)
class Sweep:
    """Seconds per epoch measured on several trainers, and predicted for a device, as one size is varied."""

    vary: str  # "batch" or "hidden"
    values: tuple[int, ...]
    batch: int  # the batch size when hidden varies
    hidden: int  # the hidden width when batch varies
    timings: dict[str, list[Timing]]  # trainer label -> one Timing per value
    predictions: tuple[Prediction, ...]

    def _timings(self, label: str) -> list[Timing]:
        if label not in self.timings:
            raise KeyError(f"no trainer labelled {label!r} in this sweep; it timed: {', '.join(self.timings)}")
        return self.timings[label]

    def seconds(self, label: str) -> np.ndarray:
        """Median seconds per epoch of one trainer, per value."""
        return np.array([t.median for t in self._timings(label)])

    def crossover(self, label: str) -> int | None:
        """The first value from which the prediction beats the measured trainer `label`, or None if it never does."""
        return crossover(self.values, self.seconds(label), [p.seconds for p in self.predictions])


def sweep(trainers: Sequence[Trainer], data: mlp.Digits, vary: str, values: Sequence[int], batch: int = 32,
          hidden: int = 64, device: str = "NVIDIA T4", budget: float = 0.1, seed: int = 0) -> Sweep:
    """Time one epoch of every trainer at each value of `vary` ('batch' or 'hidden'), and predict `device`.

    Quick timings vary; NoisyTimingWarning is silenced here (rerun, or raise budget, for steadier numbers).
    """
    if vary not in ("batch", "hidden"):
        raise ValueError(f"vary must be 'batch' or 'hidden', got {vary!r}")
    values = tuple(positive_int(vary, v) for v in values)
    if not values or not trainers:
        raise ValueError("sweep() needs at least one trainer and one value")
    timings: dict[str, list[Timing]] = {tr.label: [] for tr in trainers}
    predictions = []
    for value in values:
        b, hd = (value, hidden) if vary == "batch" else (batch, value)
        params = mlp.init_params(data.n_features, hd, data.n_classes, seed)
        idx = mlp.batch_order(len(data.y_train), b, 1, seed)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoisyTimingWarning)
            for tr in trainers:
                timings[tr.label].append(time_epoch(tr, data, params, idx, budget, f"{tr.label}, {vary} {value}",
                                                      min_repeats=3))
        predictions.append(predict_epoch(device, b, hd, idx.shape[0], data.n_features, data.n_classes))
    return Sweep(vary, values, batch, hidden, timings, tuple(predictions))


def sweep_report(sw: Sweep) -> str:
    """One line per measured trainer: from which size on the prediction beats it, and its speed at the largest."""
    device = sw.predictions[0].label
    lines = []
    for label, timings in sw.timings.items():
        cross = sw.crossover(label)
        where = f"from {sw.vary} {cross:,} on" if cross else f"at no {sw.vary} measured"
        big = timings[-1]
        rate = "" if big.gflops is None else f", {big.gflops:,.1f} GFLOP/s"
        share = "" if big.fraction_of_peak is None else f" ({big.fraction_of_peak:.0%} of the {big.peak.device} peak)"
        lines.append(f"{label}: {device} is faster {where}; at {sw.vary} {sw.values[-1]:,}: "
                     f"{format_seconds(big.median)} per epoch{rate}{share}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------- figures


def loss_figure(runs: Sequence[Run], title: str | None = None) -> Any:
    """The loss at every training step, one line per run: runs from the same start should lie on top of each other."""
    import plotly.graph_objects as go

    from .plots import TEMPLATE, colour

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
    """Seconds per epoch against the varied size (log-log): measured lines, and the prediction as hollow markers."""
    import plotly.graph_objects as go

    from .plots import PREDICTION_COLOUR, REFERENCE_COLOUR, TEMPLATE, colour

    fig = go.Figure()
    xs = np.array(sw.values)
    for label, timings in sw.timings.items():
        fig.add_trace(go.Scatter(
            x=xs, y=sw.seconds(label), mode="lines+markers", name=f"{label}, measured here{_on(timings[0])}",
            line=dict(color=colour(timings[0].backend), width=2.5),
            customdata=[[format_seconds(t.median), f"{t.gflops:,.3g}"] for t in timings],
            hovertemplate=f"{escape(label)}<br>{sw.vary} %{{x}}: %{{customdata[0]}} per epoch, "
                          "%{customdata[1]} GFLOP/s<extra></extra>"))
    device = sw.predictions[0].label
    fig.add_trace(go.Scatter(
        x=xs, y=[p.seconds for p in sw.predictions], mode="lines+markers", name=device,
        line=dict(color=PREDICTION_COLOUR, dash="dash", width=2),
        marker=dict(symbol="circle-open", size=11, line=dict(width=2.5)),
        customdata=[[p.launch_bound, p.launches] for p in sw.predictions],
        hovertemplate=f"{escape(device)}: %{{y:.3s}}s per epoch<br>%{{customdata[0]}} of %{{customdata[1]}} "
                      "operations launch-bound<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=xs, y=[p.steps * p.launch_step for p in sw.predictions], mode="lines",
        name=f"its kernel launches alone ({format_seconds(sw.predictions[0].floor)} each)",
        line=dict(color=REFERENCE_COLOUR, dash="dot", width=1.5), hoverinfo="skip"))
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


# ------------------------------------------------------------------------------------------------------- table


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
    from .lessons import _markdown

    return _markdown("\n".join(lines))


__all__ = ["KINDS", "LAUNCH_FLOOR", "Kernel", "Prediction", "Row", "Run", "StepWork", "Sweep", "Trainer",
           "accuracy", "device_name", "loss_figure", "predict_epoch", "samples_per_second", "summary_table", "sweep",
           "sweep_figure", "sweep_report", "time_epoch", "trace_step", "train", "trainer"]
