"""One case of a gpu-report: the sizes it measures at, the accelerators here, a measurement beside its
prediction (Case) and what it gave (Row).

helpers.book.report_chapters builds each chapter's cases from these; helpers.book.gpu_report runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.backend import backends
from ..gpu import cuda
from ..measuring import host_calls, specs
from ..measuring.hardware import hardware
from ..measuring.timing import Timing


class NoAccelerator(RuntimeError):
    """There is no GPU that CuPy can use and JAX runs on no GPU or TPU: nothing for the report to measure."""


# --------------------------------------------------------------------------------------------------------------
# The sizes: the chapters' own, kept here once


@dataclass(frozen=True)
class Sizes:
    """The sizes of every measurement; CHAPTER_SIZES are the chapters' own (on a GPU or TPU), QUICK smaller ones."""

    copy_mib: int  # ch03 COPY_MIB: one copy of this many MiB to the GPU
    axpby: int  # ch03 N: axpby with its data on the GPU, and copied in and out every call
    sweep: tuple[int, ...]  # ch03 SWEEP: axpby against size
    stream: int  # ch03 GPU_FUSE, N_ROOF_AXPBY, N_SUM_GPU: at least this n, raised to 4x the GPU's L2 (beyond_l2)
    matmul_kernels: int  # ch03 N_MM_GPU: the naive and tiled kernels and cuBLAS
    roof_matmul: int  # ch03 GPU_MATMUL: the matmul point on the GPU's roofline
    image: tuple[int, int]  # ch03 BIG_IMAGE on a GPU: (width, height) of the Mandelbrot kernel's image
    jax_matmul: tuple[int, ...]  # ch04 SIZES on an accelerator: the jitted matmul, float32 and bfloat16
    pad_base: int  # ch04 BASE on a TPU: BASE, BASE + 1 and BASE + the MXU side
    precision: int  # ch04 N_PRECISION on an accelerator: DEFAULT, HIGHEST and one bf16 pass
    widths: tuple[int, ...]  # ch05 HIDDEN_SWEEP on a GPU: one epoch against the hidden width
    batch_sweep: tuple[int, ...]  # ch05 BATCH_SWEEP: one epoch against the batch, at Training.wide
    steps: tuple[int, ...]  # ch06 N_STEPS: the recurrence by jax.lax.scan and associative_scan
    batches: tuple[int, ...]  # ch06 BATCHES: the 64-64-10 network's jitted forward pass
    ladder: int  # ch07 BIG (make_it_fast.BIG_N): every rung of the SGEMM ladder
    #: The most steps the report times jax.lax.scan for. A scan's steps run one after another, so its time grows in
    #: proportion to n and a smaller n gives the same cost per step: on the H200 of 2026-11-28, 100,000 steps took
    #: 1.42 s a call (chapter 06's recorded run), over 10 s for one measurement of 7 calls, and the report was cut
    #: off there. Chapter 06 times its largest n itself; the report says which n it left out (left_out).
    longest_scan: int = 10_000


CHAPTER_SIZES = Sizes(
    copy_mib=64, axpby=1_000_000,
    sweep=(1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000),
    stream=10_000_000, matmul_kernels=2048, roof_matmul=4096, image=(1280, 960),
    jax_matmul=(512, 1024, 2048, 4096, 8192), pad_base=4096, precision=2048,
    widths=(16, 64, 256, 1024, 4096, 16384), batch_sweep=(16, 64, 256, 1024),
    steps=(1_000, 10_000, 100_000), batches=(1, 16, 256, 4_096, 65_536), ladder=4096)
QUICK = Sizes(copy_mib=8, axpby=100_000, sweep=(1_000, 100_000, 1_000_000), stream=1_000_000, matmul_kernels=256,
              roof_matmul=512, image=(320, 240), jax_matmul=(512, 1024), pad_base=1024, precision=512,
              widths=(16, 1024), batch_sweep=(16, 1024), steps=(1_000, 10_000), batches=(1, 256), ladder=512)


@dataclass(frozen=True)
class Training:
    """Chapter 05's network and SGD run: hidden width, batch, epochs (of which one is timed), learning rate, and the
    hidden width of its sweep over batch sizes."""

    hidden: int = 64  # HIDDEN
    batch: int = 32  # BATCH
    epochs: int = 15  # EPOCHS
    lr: float = 0.2  # LR
    wide: int = 512  # HIDDEN_WIDE


TRAINING = Training()
#: Chapter 03's fused axpby: one pass over x, y and z, where CuPy's a * x + b * y makes three.
AXPBY_FUSED = cuda.Elementwise("float32 a, float32 x, float32 b, float32 y", "float32 z", "z = a * x + b * y",
                               "axpby_fused")
#: Chapter 04: bf16 passes of the MXU per product of each precision (jax.lax.Precision's docs).
MXU_PASSES = {"float32, precision DEFAULT": 1, "float32, precision HIGHEST": 6,
              "bf16 inputs, float32 sums (one MXU pass)": 1}
#: Chapter 06's moving average: h[t] = (1 - EMA_ALPHA) * h[t-1] + EMA_ALPHA * x[t].
EMA_ALPHA = np.float32(0.1)


# --------------------------------------------------------------------------------------------------------------
# What is here


@dataclass(frozen=True)
class Here:
    """The accelerators a report measures: the GPU CuPy uses (or None), and JAX's device when it is a GPU or TPU."""

    gpu: cuda.GPU | None
    jax_kind: str | None  # "gpu" or "tpu"; None when JAX runs on the CPU (or not at all)
    jax_name: str = ""
    jax_spec: specs.DeviceSpec | None = None
    measured: dict[tuple[int, int], host_calls.HostCalls] = field(default_factory=dict, compare=False)

    def calls(self, arrays_in: int, arrays_out: int) -> host_calls.HostCalls:
        """This host's call costs (CuPy's by kind, a jitted JAX call with these arrays), measured once a report."""
        if (arrays_in, arrays_out) not in self.measured:
            self.measured[arrays_in, arrays_out] = host_calls.here(arrays_in, arrays_out)
        return self.measured[arrays_in, arrays_out]


#: What gpu-report is for, as its error says when there is nothing to measure.
PURPOSE = "gpu-report records every measurement the chapters make beside its prediction, on a GPU or a TPU"


def accelerators(purpose: str = PURPOSE) -> Here:
    """What this machine offers; NoAccelerator, saying what the command (`purpose`) needs and how to get a GPU or
    TPU, when it has neither."""
    gpu = cuda.gpu() if cuda.gpu_here() else None
    status = backends()["jax"]
    kind = status.device_kind if status.usable and status.device_kind in ("gpu", "tpu") else None
    if gpu is None and kind is None:
        cupy = backends()["cupy"].detail
        jax = f"JAX runs on the {status.device_kind.upper()}" if status.usable else status.detail
        raise NoAccelerator(f"no GPU or TPU here (CuPy: {cupy}; {jax}): {purpose}. In Colab: Runtime > Change "
                            "runtime type > T4 GPU (or a TPU) > Save, then run it again")
    if kind is None:
        return Here(gpu, None)
    name, spec = _jax_device(kind, gpu)
    return Here(gpu, kind, name, spec)


def _jax_device(kind: str, gpu: cuda.GPU | None) -> tuple[str, specs.DeviceSpec]:
    """JAX's device here and the published specs its predictions use (as chapter 04 picks them)."""
    if kind == "tpu":
        tpu = next(iter(hardware().tpus), None)
        if tpu is not None:
            return tpu.name, tpu.spec or specs.get(specs.REFERENCE_TPU)
    import jax

    name = jax.devices()[0].device_kind
    reference = specs.REFERENCE_TPU if kind == "tpu" else specs.REFERENCE_GPU
    return name, specs.lookup(name) or (gpu.spec if gpu is not None and kind == "gpu" else specs.get(reference))


# --------------------------------------------------------------------------------------------------------------
# Cases and rows


@dataclass(frozen=True)
class Case:
    """One measurement a chapter makes, with how to measure it here and how the model predicts it."""

    chapter: str
    label: str
    work: str
    device: str
    spec: str  # the published specs the prediction uses
    model: str  # the helper that predicts it
    measure: Callable[[], Timing]
    predict: Callable[[], float]  # called after measure (chapter 05's Keras prediction needs a measurement)

    def run(self) -> Row:
        """Measure, then predict: the row, or a ValueError when the prediction is not a positive number."""
        timing = self.measure()
        predicted = self.predict()
        if not (math.isfinite(predicted) and predicted > 0):
            raise ValueError(f"the prediction is {predicted!r}, not a positive number of seconds")
        return Row(self.chapter, self.label, self.work, self.device, self.spec, self.model, predicted, timing)


@dataclass(frozen=True)
class Row:
    """One measurement made here beside its prediction."""

    chapter: str
    label: str
    work: str
    device: str
    spec: str
    model: str
    predicted: float  # seconds
    timing: Timing

    @property
    def ratio(self) -> float:
        """Measured (median) over predicted: above 1, this device was slower than the model says."""
        return self.timing.median / self.predicted

    def as_json(self) -> dict[str, Any]:
        """The row for the JSON file: what, on what, predicted and measured seconds, the ratio, the whole timing."""
        t = self.timing
        return {"chapter": self.chapter, "label": self.label, "work": self.work, "device": self.device,
                "spec": self.spec, "model": self.model, "predicted_s": self.predicted, "measured_s": t.median,
                "iqr_s": t.iqr, "min_s": t.min, "ratio": self.ratio, "timing": _finite(t.as_dict())}


def capped_note(timing: Timing) -> str:
    """'' for a full timing; else how many samples max_time left, so a reader knows the median is of few."""
    count = len(timing.samples)
    return f"  capped: {count} sample{'s' * (count > 1)} in max_time" if timing.capped else ""


def _finite(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with NaN and infinities as None, so the JSON file is strict JSON."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()}


def make_case(chapter: str, label: str, work: str, device: str, spec: specs.DeviceSpec, model: str,
              measure: Callable[[], Timing], predict: Callable[[], float]) -> Case:
    """A Case, the spec given by its name."""
    return Case(chapter, label, work, device, spec.name, model, measure, predict)


