"""What a GPU (or TPU) we may not have would do with one epoch of chapter 05's training: predict_epoch, a sum of
helpers.model.roofline.predict_seconds calls for each way of running the step (CuPy, JAX jit per step, one jit
per epoch, Keras), from the device's published specs; the chapter's report of those predictions; and the same
epoch as roofline.decide's arguments for chapter 06.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.validate import finite, positive_int
from ..measuring import host_calls, specs
from ..measuring.formats import format_seconds
from ..measuring.record import Timing
from ..model import roofline
from .step_trace import StepWork, trace_step
from .xla_step import xla_kernels

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
