"""Train the network of `helpers.chapters.mlp` on any backend, time its epochs honestly, and predict a missing GPU.

Every backend gets the same start, the same mini-batches in the same order and the same learning rate, so
loss curves and accuracies can be compared; speed is one epoch timed with `benchmark` (first call, with any
compilation, apart). What a GPU would do is a prediction by `helpers.model.roofline`, the series' one performance
model, for each way of running the step: CuPy (every traced array operation is one call and one kernel), JAX
(XLA's compiled step, its kernels counted from the compiled program), one jit per epoch, and Keras.

    tr = h.training.trainer("jax", lr=0.2)             # or "numpy", "cupy", "jax-scan", "keras"
    run = h.training.train(tr, data, params, order)    # losses per step, test accuracy, final weights
    t = h.training.time_epoch(tr, data, params, order[0])   # a Timing of one epoch
    h.training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=42, kind="jax")   # helpers.model.roofline
    h.training.keras_cpu_vs_accelerator(data, params, order[0], 0.2, prediction)   # the same Keras on both
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from numbers import Real
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..core.backend import array_module, backends, check_name, to_backend, to_numpy, where
from ..core.validate import finite, positive_int
from ..measuring import host_calls, specs
from ..measuring.timing import Timing, benchmark, crossover, format_seconds, spread_shown
from ..model import roofline
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


# -------------------------------------------------------------------------------------------------- training

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
    #: Bytes of the parameters (weights and biases), which the SGD update reads and writes once.
    parameters: int = 0

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
    parameters = 4 * (i * h + h + h * o + o)  # float32
    given = parameters + 4 * b * i + 4 * b  # the parameters, float32 x and int32 labels
    return StepWork(kernels, given + sum(k.written for k in kernels), parameters)


# ------------------------------------------------------------------------ the kernels of XLA's compiled step


#: Instructions of a compiled XLA program that launch no kernel: arguments, constants, tuples and views of them,
#: ordering tokens, and the second halves of asynchronous pairs (each pair is counted at its start).
NOT_KERNELS = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
                         "add-dependency", "opt-barrier", "partition-id", "replica-id", "domain", "async-update",
                         "async-done", "copy-done"})
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")  # '%fused_computation.2 (p: f32[2]) -> ... {'
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-]*)\((.*)$")  # '  %d = f32[] dot(..'
_CALLED = re.compile(r"\b(?:to_apply|calls)=%?([\w.\-]+)")


def _kernels_in(hlo_text: str) -> Counter[str]:
    """The kernels the ENTRY computation of a compiled HLO module launches, by opcode.

    A `call` or `async-start` counts the kernels of the computation it runs (XLA:GPU wraps runs of kernels in
    command buffers this way); a fusion is one kernel, whatever it fuses.
    """
    computations: dict[str, list[tuple[str, str]]] = {}
    entry, current = None, None
    for line in hlo_text.splitlines():
        head = _COMPUTATION.match(line)
        if head:
            current = computations.setdefault(head[2], [])
            entry = head[2] if head[1] else entry
            continue
        op = _INSTRUCTION.match(line)
        if op and current is not None:
            called = _CALLED.search(op[2])
            current.append((op[1], called[1] if called else ""))
    if entry is None:
        raise ValueError("no ENTRY computation in this text: pass XLA's compiled program, "
                         "jax.jit(f).lower(...).compile().as_text()")

    def count(name: str) -> Counter[str]:
        found: Counter[str] = Counter()
        for opcode, called in computations[name]:
            if opcode in ("call", "async-start") and called in computations:
                found.update(count(called))
            elif opcode not in NOT_KERNELS:
                found[opcode] += 1
        return found

    return count(entry)


@dataclass(frozen=True)
class KernelCount:
    """The kernels of XLA's compiled program for one training step, by instruction, and which XLA compiled it."""

    platform: str  # "cpu", "gpu" or "tpu": the device JAX compiled for
    by_op: tuple[tuple[str, int], ...]  # (opcode, kernels), most first: ("fusion", 21), ("dot", 2)

    @property
    def total(self) -> int:
        """Kernels per step."""
        return sum(n for _, n in self.by_op)

    def __str__(self) -> str:
        return f"{self.total} kernels (XLA:{self.platform.upper()}: {', '.join(f'{n} {op}' for op, n in self.by_op)})"


def xla_kernels(batch: int, n_in: int = 64, hidden: int = 64, n_out: int = 10) -> KernelCount:
    """The kernels XLA compiles one jitted float32 training step (`mlp.jax_step`) into, on this JAX's device.

    The rule: compile the real step for these shapes, then count the instructions of the compiled program's ENTRY
    computation that do work (a fusion, a dot, a custom-call such as cuBLAS, a reduce, a copy, ...), one kernel
    each; arguments, constants, tuples and bitcasts (NOT_KERNELS) launch nothing. On a CPU this is XLA:CPU's count,
    a proxy for XLA:GPU's: both fuse each chain of elementwise operations into one kernel, and the GPU may call
    cuBLAS where the CPU runs a dot. When JAX runs on a GPU, this counts XLA:GPU's own program. Each shape is
    compiled once (a fraction of a second) and its count kept.
    """
    return _xla_kernels(*(positive_int(name, value) for name, value in
                          (("batch", batch), ("n_in", n_in), ("hidden", hidden), ("n_out", n_out))))


@lru_cache(maxsize=256)
def _xla_kernels(batch: int, n_in: int, hidden: int, n_out: int) -> KernelCount:
    import jax
    import jax.numpy as jnp

    shapes = {"W1": (n_in, hidden), "b1": (hidden,), "W2": (hidden, n_out), "b2": (n_out,)}
    params = {name: jax.ShapeDtypeStruct(shapes[name], jnp.float32) for name in mlp.PARAM_NAMES}
    x, y = jax.ShapeDtypeStruct((batch, n_in), jnp.float32), jax.ShapeDtypeStruct((batch,), jnp.int32)
    text = mlp.jax_step(0.1).lower(params, x, y).compile().as_text()  # the learning rate changes no kernel
    return KernelCount(jax.default_backend(), tuple(_kernels_in(text).most_common()))


# ---------------------------------------------------------------------------- predictions from published specs


#: The ways of running the step that `predict_epoch` predicts on a GPU, in words.
PREDICTED = {"cupy": "CuPy", "jax": "JAX jit per step", "jax-scan": "JAX jit per epoch", "keras": "Keras"}


@dataclass(frozen=True)
class Prediction:
    """What helpers.model.roofline predicts for one epoch of training on a device we do not have here, run as `kind`."""

    device: str
    kind: str  # a key of PREDICTED
    steps: int
    batch: int
    hidden: int
    kernels: int  # device kernels per step: traced operations (CuPy), or XLA's compiled step (xla_kernels)
    calls: int  # host calls per epoch
    seconds: float  # per epoch
    fixed: float  # per epoch, the same model with no FLOPs and no bytes: the calls' overheads and the kernel floors
    roofs: float  # per epoch, the roofs alone (FLOPs / peak or bytes / bandwidth, the larger): no fixed cost
    host_seconds: float = 0.0  # Keras: its own Python time per step, measured on this machine
    memory: int = 0  # bytes of device memory a step needs (an upper bound, StepWork.memory)
    device_memory: float = 0.0  # bytes the device has (published)

    @property
    def fits(self) -> bool:
        """Whether a step fits in the device's memory (False: the prediction is for a run that cannot happen)."""
        return not self.device_memory or self.memory <= self.device_memory

    @property
    def backend(self) -> str:
        """How the step runs: 'CuPy', 'JAX jit per step', 'JAX jit per epoch' or 'Keras'."""
        return PREDICTED[self.kind]

    @property
    def label(self) -> str:
        """'JAX jit per step on the NVIDIA T4 (prediction)': which backend, and never to be read as a measurement."""
        return f"{self.backend} on the {self.device} (prediction)"

    @property
    def where(self) -> str:
        """'NVIDIA T4 (prediction)': the device column of the closing table."""
        return f"{self.device} (prediction)"

    def __str__(self) -> str:
        host = f"; Keras's own host time {format_seconds(self.host_seconds)} per step" if self.kind == "keras" else ""
        calls = f"{self.calls:,} call{'s' * (self.calls != 1)}"
        return (f"{self.label}: {format_seconds(self.seconds)} per epoch of {self.steps} steps (batch {self.batch}, "
                f"hidden {self.hidden}); {self.kernels} kernels per step in {calls} per epoch; fixed costs alone "
                f"{format_seconds(self.fixed)}, the roofs alone {format_seconds(self.roofs)}{host}"
                + ("" if self.fits else f"; DOES NOT FIT: a step needs up to {self.memory / 1e9:,.1f} GB, the "
                   f"device has {self.device_memory / 1e9:,.0f} GB"))


def fused_bytes(work: StepWork) -> int:
    """Bytes a fused step moves, by rule: each matmul reads its inputs and writes its output once, and the update
    reads and writes the parameters once; the elementwise work rides inside those kernels and moves nothing more."""
    return sum(k.bytes for k in work.matmuls) + 2 * work.parameters


def cupy_kind(op: str) -> str:
    """Which of host_calls.CUPY_KINDS the CuPy call of a traced operation is ('matmul', 'add.reduce', 'gather'...)."""
    if op == "matmul":
        return "matmul"
    if op.endswith(".reduce"):
        return "reduction"
    return "gather" if op == "gather" else "elementwise"


def _check_prediction(kind: object, host_seconds: object, calls: object) -> None:
    """predict_epoch's kind, Keras's host time (for Keras only) and the measured call costs, or a ValueError."""
    if not isinstance(kind, str) or kind not in PREDICTED:
        raise ValueError(f"kind must be one of {', '.join(map(repr, PREDICTED))}; got {kind!r:.40}")
    if kind != "keras" and host_seconds is not None:
        raise ValueError(f"host_seconds is Keras's own time per step; kind {kind!r} has none: leave it out")
    if kind == "keras" and (host_seconds is None or not finite(host_seconds) or host_seconds < 0):
        raise ValueError("host_seconds (Keras's own seconds per step, measured here: Keras minus JAX) must be a "
                         f"finite number, zero or more; got {host_seconds!r:.40}")
    if calls is not None and not isinstance(calls, host_calls.HostCalls):
        raise TypeError("calls must be helpers.measuring.host_calls.here(...)'s HostCalls or None; got "
                        f"{type(calls).__name__}")


def predict_epoch(device: str | specs.DeviceSpec, batch: int, hidden: int, steps: int, n_in: int = 64,
                  n_out: int = 10, kind: str = "cupy", host_seconds: float | None = None,
                  calls: host_calls.HostCalls | None = None) -> Prediction:
    """Predict one float32 epoch on `device` (a name in helpers.measuring.specs, or its spec), run as `kind`, as a sum
    of helpers.model.roofline.predict_seconds calls, each timed "pipelined" (the loop queues its calls and waits once):

    - "cupy": every array operation of trace_step is one CuPy call of one kernel (a matmul at cuBLAS's efficiency).
    - "jax": one "jax_gpu" call per step, of xla_kernels() kernels run as one program; the step's FLOPs, and
      fused_bytes().
    - "jax-scan": the same work in one call per epoch: an iteration of a compiled loop per step (LOOP_STEP).
    - "keras": "jax" plus `host_seconds` per step: Keras's own Python bookkeeping per train_on_batch, host time a
      GPU does not shorten, and which does not hide behind it (train_on_batch waits for each step's loss).
      Measure it on this machine (Keras's seconds per step minus JAX's) and pass it in.

    calls: the per-call host costs measured here (helpers.measuring.host_calls.here, for the GPU that is here); None:
    the published figures (roofline.OVERHEADS), for a GPU that is not.
    """
    _check_prediction(kind, host_seconds, calls)
    spec = roofline.published_spec(device)
    steps = positive_int("steps", steps)
    work = trace_step(positive_int("batch", batch), n_in, positive_int("hidden", hidden), n_out)
    device_kind = roofline.roofs(spec).kind
    if kind == "cupy" and device_kind != "gpu":
        raise ValueError(f"CuPy runs on GPUs, and the {spec.name} is not one: predict kind 'jax' for it")
    kernels = work.launches if kind == "cupy" else xla_kernels(batch, n_in, hidden, n_out).total
    n_calls = steps * work.launches if kind == "cupy" else 1 if kind == "jax-scan" else steps
    host = float(host_seconds or 0.0)
    measured = calls
    moved = work.bytes if kind == "cupy" else fused_bytes(work)

    jax_cost = None if measured is None else measured.jax

    def cupy_cost(op: str) -> float | None:
        """The host's cost of the CuPy call an operation of the step makes: measured here by its kind, or None
        (the published figure for a small call, roofline.OVERHEADS['cupy'])."""
        return None if measured is None else measured.cupy_call(cupy_kind(op))

    def epoch(scale: int) -> float:
        """Seconds per epoch by the definitions above; scale 0 keeps the fixed costs alone."""
        if kind == "cupy":
            return steps * sum(roofline.predict_seconds(spec, flops=scale * k.flops, bytes=scale * k.bytes,
                                                        call="cupy", timed="pipelined", matmul=k.name == "matmul",
                                                        call_seconds=cupy_cost(k.name), narrow=k.name != "matmul")
                               for k in work.kernels)
        return steps * host + roofline.predict_seconds(
            spec, flops=scale * steps * work.flops, bytes=scale * steps * moved, calls=n_calls,
            call=roofline.JAX_CALL[device_kind], kernels=steps * kernels // n_calls, timed="pipelined", matmul=True,
            loop_steps=steps if kind == "jax-scan" else 0, call_seconds=jax_cost)

    if kind == "cupy":
        roofs = steps * sum(roofline.roofline_seconds(spec, flops=k.flops, bytes=k.bytes) for k in work.kernels)
    else:
        roofs = roofline.roofline_seconds(spec, flops=steps * work.flops, bytes=steps * moved)
    return Prediction(spec.name, kind, steps, batch, hidden, kernels, n_calls, epoch(1), epoch(0), roofs, host,
                      work.memory, spec.memory_bytes)


#: The label chapter 05 times each predicted way of running the step under (section 3's table).
MEASURED_AS = {"cupy": "CuPy", "jax": "JAX, jit per step", "jax-scan": "JAX, one jit per epoch", "keras": "Keras"}


def predictions_report(predicted: dict[str, Prediction], measured: dict[str, Timing], baseline: Timing) -> str:
    """One line per prediction: its epoch, kernels and calls, its fixed costs' share, its time against `baseline`
    (NumPy measured here); and, where the same way of running the step was measured on the predicted device in
    this run (`measured`, by MEASURED_AS), the measurement beside it, never a winner between the two."""
    lines = []
    for kind, p in predicted.items():
        line = (f"  {p.backend:>17}: {format_seconds(p.seconds):>8}; {p.kernels} kernels per step; host calls per "
                f"epoch: {p.calls:>5,}; fixed costs {p.fixed / p.seconds:4.0%} of it; "
                f"{p.seconds / baseline.median:.2f}x NumPy's time here")
        timing = measured.get(MEASURED_AS[kind])
        if timing is not None and timing.peak is not None and timing.peak.device == p.device:
            line += (f"\n  {'':>17}  measured on the {p.device} in this run: {format_seconds(timing.median)}, "
                     f"{timing.median / p.seconds:.2f}x the prediction")
        lines.append(line)
    return "\n".join(lines)


def epoch_workload(batch: int, hidden: int, steps: int, n_in: int = 64, n_out: int = 10) -> dict[str, Any]:
    """One epoch of JAX, jitted per step, as roofline.decide's arguments: the same counts and call timing as
    predict_epoch(kind="jax"), so chapter 06's decision and chapter 05's prediction are one prediction."""
    steps = positive_int("steps", steps)
    work = trace_step(positive_int("batch", batch), n_in, positive_int("hidden", hidden), n_out)
    return dict(flops=steps * work.flops, bytes=steps * fused_bytes(work), calls=steps,
                kernels=xla_kernels(batch, n_in, hidden, n_out).total, call="jax", matmul=True, timed="pipelined")


# ------------------------------------------------------------------- Keras on the host CPU and on the accelerator


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


# ------------------------------------------------------------------------------------------------------ sweeps


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


# ----------------------------------------------------------------------------------------------------- figures


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
    from ..learning.lessons import _markdown

    return _markdown("\n".join(lines))


__all__ = ["KERAS_WIDTHS", "KINDS", "KerasOnDevices", "KerasWidths", "Kernel", "KernelCount", "MEASURED_AS",
           "NOT_KERNELS", "PREDICTED", "Prediction", "Row", "Run", "StepWork", "Sweep", "Trainer", "accelerator",
           "accuracy", "cupy_kind", "device_name", "fused_bytes", "keras_cpu_vs_accelerator", "keras_widths",
           "loss_figure", "predict_epoch", "predictions_report", "samples_per_second", "summary_table", "sweep",
           "sweep_figure", "sweep_report", "time_epoch", "trace_step", "train", "trainer", "xla_kernels"]
