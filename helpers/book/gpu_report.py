"""One record of a real run: every measurement the chapters set beside a prediction, made on the GPU or TPU here.

    python -m helpers gpu-report --json docs/gpu-report-tesla-t4-2025-06-01.json   # on a GPU or a TPU
    python -m helpers gpu-report --quick                                            # smaller sizes: a smoke test

Each row is one of the chapters' measurements, made with the same helpers functions at the same sizes
(CHAPTER_SIZES and TRAINING hold the sizes that live only in a chapter's source), beside what helpers.model.roofline
predicts for it through the chapter's own helper (GPU.predict_cupy_axpby, training.predict_epoch, ...): the
median and IQR measured, the seconds predicted, and measured / predicted. The header says on what: the devices,
the driver and CUDA versions, the package versions, Python, the helpers' commit and the date. Rows come only for
the accelerators present: CuPy's when CuPy can use a GPU, JAX's when JAX's default backend is a GPU or a TPU.
docs/predictions.md lists the rows of every docs/gpu-report-*.json committed (python -m helpers.book.evidence).

A run streams: each row is printed, and the JSON file rewritten, as soon as it is measured (an interrupted run
keeps its rows), with how far the run is and about how long is left before each case (helpers.core.progress). It
stops beginning cases after DEFAULT_TIME_LIMIT (160 s, --time-limit) and lists those left as not measured, so a
default run ends within 3 minutes on a GPU like the H200; left_out says what it does not time, and why.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..chapters import mandelbrot, mlp
from ..core.backend import backends, to_backend
from ..core.files import write_output
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.place import where_we_run
from ..core.progress import Progress
from ..core.project import ROOT
from ..gpu import cuda
from ..measuring import host_calls, specs, workloads
from ..measuring.hardware import hardware, jax_matmul_roof
from ..measuring.timing import Timing, benchmark, format_seconds, set_timing_budget, spread_shown
from ..model import roofline

#: What the JSON file says it is, and the version of its layout (raise it when a field changes meaning).
KIND, VERSION = "loops-to-tpus gpu-report", 1
#: Seconds of repeated timing per measurement: a record, so steadier than a chapter's 0.2 s; --quick: a smoke test.
DEFAULT_BUDGET, QUICK_BUDGET = 0.5, 0.05


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


def _case(chapter: str, label: str, work: str, device: str, spec: specs.DeviceSpec, model: str,
          measure: Callable[[], Timing], predict: Callable[[], float]) -> Case:
    """A Case, the spec given by its name."""
    return Case(chapter, label, work, device, spec.name, model, measure, predict)


# --------------------------------------------------------------------------------------------------------------
# Chapter 03: CuPy on the GPU


def round_trip(cupy: Any, alpha: float, x_host: np.ndarray, beta: float, y_host: np.ndarray) -> np.ndarray:
    """axpby with its inputs copied to the GPU and its answer copied back, every call (chapter 03)."""
    return cupy.asnumpy(workloads.axpby(alpha, cupy.asarray(x_host), beta, cupy.asarray(y_host)))


def chapter03(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 03's GPU measurements with a prediction beside them (none without a GPU CuPy can use)."""
    if here.gpu is None:
        return []
    return [*_copies(here.gpu, sizes), *_sweep(here.gpu, sizes), *_roofline_points(here.gpu, sizes),
            *_fusion(here.gpu, sizes), *_matmul_kernels(here.gpu, sizes), *_reductions(here.gpu, sizes),
            _mandelbrot(here.gpu, sizes)]


def _copies(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """A copy to the GPU; axpby with its data on the GPU, and copied in and out every call."""
    cupy, nbytes, n = cuda.cupy(), sizes.copy_mib * 2**20, sizes.axpby

    def copy() -> Timing:
        host = np.ones(nbytes // 4, dtype=np.float32)
        return gpu.measure(lambda: cupy.asarray(host), bytes=nbytes, label="copy to the GPU")

    def pinned_copy() -> Timing:
        pinned = cuda.cupyx().empty_pinned(nbytes // 4, np.float32)
        pinned[...] = 1.0
        on_gpu = cupy.empty(pinned.shape, pinned.dtype)
        return gpu.measure(lambda: on_gpu.set(pinned), bytes=nbytes, label="copy from pinned memory")

    def stays() -> Timing:
        return gpu.measure(workloads.axpby, *workloads.make_inputs("axpby", n, "float32", "cupy"))

    def trip() -> Timing:
        alpha, x, beta, y = workloads.make_inputs("axpby", n, "float32", "numpy")
        return gpu.measure(lambda: round_trip(cupy, alpha, x, beta, y))

    on = (gpu.name, gpu.spec)
    return [
        _case("03", f"host -> GPU, {sizes.copy_mib} MiB", f"{nbytes:,} bytes, one cupy.asarray", *on,
              "GPU.predict_copy_seconds (pageable NumPy memory, at most the host's copy rate)", copy,
              lambda: gpu.predict_copy_seconds(nbytes)),
        _case("03", f"host -> GPU, {sizes.copy_mib} MiB, from pinned memory",
              f"{nbytes:,} bytes, cupyx.empty_pinned then .set", *on, "roofline.predict_copy_seconds (pinned)",
              pinned_copy, lambda: gpu.predict_copy_seconds(nbytes, memory="pinned")),
        _case("03", "axpby, data stays on the GPU", f"n = {n:,} float32, 3 CuPy kernels", *on,
              "GPU.predict_cupy_axpby", stays, lambda: gpu.predict_cupy_axpby(n)),
        _case("03", "axpby, copied in and out every call", f"n = {n:,} float32, x and y in, z out", *on,
              "GPU.predict_cupy_axpby(copies=12 n)", trip, lambda: gpu.predict_cupy_axpby(n, copies=3 * n * 4)),
    ]


def _sweep(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """axpby on the GPU against size: where the launches' fixed cost gives way to memory."""
    return [_case("03", f"axpby sweep, n = {n:,}", f"n = {n:,} float32, 3 CuPy kernels", gpu.name, gpu.spec,
                  "GPU.predict_cupy_axpby", lambda n=n: workloads.measure("axpby", "cupy", n, label=f"axpby {n:,}"),
                  lambda n=n: gpu.predict_cupy_axpby(n))
            for n in sizes.sweep]


def _roofline_points(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """The two points chapter 03 puts on the GPU's roofline, beside the roofline's bound for each."""
    n_axpby, n_mm = gpu.beyond_l2(sizes.stream, bytes_per_element=12), sizes.roof_matmul
    work = {"axpby": (n_axpby, workloads.axpby_flops(n_axpby), workloads.axpby_traffic(n_axpby, 4, "cupy")),
            "matmul": (n_mm, workloads.matmul_flops(n_mm), workloads.matmul_bytes(n_mm, 4))}
    return [_case("03", f"roofline point: {op} {n:,}", f"{flops:,} FLOPs, {nbytes:,} bytes, float32", gpu.name,
                  gpu.spec, "roofline.roofline_seconds (the roofline's bound: FLOPs / attainable)",
                  lambda op=op, n=n: workloads.measure(op, "cupy", n, label=f"{op} {n:,}"),
                  lambda flops=flops, nbytes=nbytes: roofline.roofline_seconds(gpu.spec, flops=flops, bytes=nbytes))
            for op, (n, flops, nbytes) in work.items()]


def _fusion_inputs(n: int) -> tuple[Any, ...]:
    """Chapter 03's inputs of the fused kernel: float32 scalars (its C types) and x, y on the GPU."""
    cupy = cuda.cupy()
    x = cupy.asarray(np.random.default_rng(1).standard_normal(n, dtype=np.float32))
    y = cupy.asarray(np.random.default_rng(2).standard_normal(n, dtype=np.float32))
    return np.float32(2.0), x, np.float32(3.0), y


def _fusion(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """CuPy's three passes against one ElementwiseKernel, on arrays 4x the L2 or more."""
    n = gpu.beyond_l2(sizes.stream, bytes_per_element=12)
    return [
        _case("03", "fusion: CuPy, 3 passes", f"n = {n:,} float32", gpu.name, gpu.spec, "GPU.predict_cupy_axpby",
              lambda: gpu.measure(workloads.axpby, *_fusion_inputs(n)), lambda: gpu.predict_cupy_axpby(n)),
        _case("03", "fusion: ElementwiseKernel, 1 pass", f"n = {n:,} float32", gpu.name, gpu.spec,
              "GPU.predict_seconds(3 n FLOPs, 12 n bytes)",
              lambda: gpu.measure(AXPBY_FUSED.on_gpu(), *_fusion_inputs(n)),
              lambda: gpu.predict_seconds(3 * n, 3 * 4 * n)),
    ]


def _matmul_kernels(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """matmul.cu's naive and tiled kernels (priced by chapter 07's kernel model) and cuBLAS (a tuned matmul)."""
    n, tile = sizes.matmul_kernels, cuda.MATMUL_TILE
    flops = workloads.matmul_flops(n)
    runs: list[Callable[[Any, Any], Any]] = [lambda a, b: cuda.matmul_kernel(a, b, "matmul_naive"),
                                             lambda a, b: cuda.matmul_kernel(a, b, "matmul_tiled"), workloads.matmul]

    def measure(label: str, fn: Callable[[Any, Any], Any]) -> Timing:
        return gpu.measure(fn, *workloads.make_inputs("matmul", n, "float32", "cupy"), flops=flops, label=label)

    kernels = ("matmul_naive", "matmul_tiled", None)  # None: cuBLAS, priced as a tuned matmul

    def predict(intensity: float, kernel: str | None) -> float:
        if kernel is None:
            return gpu.predict_seconds(flops, flops / intensity, matmul=True)
        return cuda.pipelined(cuda.predict_matmul_kernel(gpu.spec, kernel, n).seconds)

    return [_case("03", f"matmul: {label}", f"n = {n:,} float32, {intensity:.3g} FLOP/byte", gpu.name, gpu.spec,
                  "GPU.predict_seconds(FLOPs, FLOPs / intensity, matmul=True)" if kernel is None else
                  f"cuda.predict_matmul_kernel({kernel!r}): chapter 07's kernel model",
                  lambda label=label, fn=fn: measure(label, fn),
                  lambda intensity=intensity, kernel=kernel: predict(intensity, kernel))
            for (label, (intensity, _)), fn, kernel in zip(cuda.matmul_ways(n, tile).items(), runs, kernels,
                                                           strict=True)]


def _reductions(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """cupy.sum against reduce_sum.cu's two launches, on an array 4x the L2 or more."""
    n = gpu.beyond_l2(sizes.stream, bytes_per_element=4)
    nbytes = 4 * n

    def measure(fn: Callable[[Any], Any]) -> Timing:
        x = cuda.cupy().asarray(np.random.default_rng(5).random(n, dtype=np.float32))
        return gpu.measure(fn, x, bytes=nbytes)

    return [
        _case("03", "sum: cupy.sum", f"n = {n:,} float32", gpu.name, gpu.spec, "GPU.predict_seconds(n, 4 n)",
              lambda: measure(lambda x: x.sum()), lambda: gpu.predict_seconds(n, nbytes)),
        _case("03", "sum: our block_sum kernel, 2 launches", f"n = {n:,} float32", gpu.name, gpu.spec,
              "cuda.predict_reduce_sum: chapter 07's kernel model", lambda: measure(cuda.reduce_sum),
              lambda: cuda.predict_reduce_sum(gpu.spec, n)),
    ]


def _mandelbrot(gpu: cuda.GPU, sizes: Sizes) -> Case:
    """mandelbrot.cu over the chapter's image: compute-bound, its FLOPs counted from the escape steps."""
    width, height = sizes.image

    def predict() -> float:
        return cuda.pipelined(mandelbrot.predict_gpu(gpu.spec, width, height).seconds)

    return _case("03", "Mandelbrot: CUDA kernel", f"{width} x {height} pixels, float32", gpu.name, gpu.spec,
                 "mandelbrot.predict_gpu: chapter 07's kernel model",
                 lambda: gpu.measure(mandelbrot.mandelbrot_gpu, width, height, label="CUDA kernel"), predict)


# --------------------------------------------------------------------------------------------------------------
# Chapter 04: JAX on the TPU (or the GPU)


def _jax_matmul(n: int, dtype: str) -> Timing:
    """Chapter 04's timing of the jitted matmul: inputs made on JAX's device in float32, then cast to `dtype`."""
    import jax

    a, b = (x.astype(dtype) for x in workloads.make_inputs("matmul", n, "float32", "jax"))
    return benchmark(jax.jit(workloads.matmul), a, b, flops=workloads.matmul_flops(n),
                     bytes=workloads.matmul_bytes(n, a.dtype.itemsize), n=n, label=f"{dtype}, n = {n}")


def chapter04(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 04's jitted matmuls by size and dtype; on a TPU also padding to the MXU and the precisions."""
    if here.jax_kind is None or here.jax_spec is None:
        return []
    spec = here.jax_spec
    roofs = {dtype: jax_matmul_roof(spec, dtype) for dtype in ("float32", "bfloat16")}
    def predict(n: int, roof: str) -> float:
        if here.jax_kind != "gpu":  # a TPU's calls: the model's fitted synced cost (OVERHEADS['jax_tpu'])
            return roofline.predict_matmul_seconds(spec, n, n, n, roof)
        # benchmark queues the calls: each costs the larger of the host's dispatch (measured here) and the work
        return roofline.predict_matmul_seconds(spec, n, n, n, roof, timed="pipelined",
                                               call_seconds=here.calls(2, 1).jax)

    model = "roofline.predict_matmul_seconds(dtype={!r}" + (", a call's cost measured here)" if here.jax_kind == "gpu"
                                                             else ")")
    cases = [_case("04", f"jit matmul {dtype}, n = {n:,}", f"({n}, {n}) @ ({n}, {n}) {dtype}", here.jax_name, spec,
                   model.format(roof), lambda n=n, dtype=dtype: _jax_matmul(n, dtype),
                   lambda n=n, roof=roof: predict(n, roof))
             for dtype, roof in roofs.items() for n in sizes.jax_matmul]
    if here.jax_kind == "tpu":
        cases += [*_padding(here, sizes), *_precisions(here, sizes)]
    return cases


def _padding(here: Here, sizes: Sizes) -> list[Case]:
    """bf16 matmuls at a multiple of the MXU side, one more, and the next multiple: the MXUs compute padded sides."""
    spec, base = here.jax_spec, sizes.pad_base
    assert spec is not None
    side = roofline.mxu_side(spec)
    return [_case("04", f"padding: bf16 matmul, n = {n:,}", f"({n}, {n}) @ ({n}, {n}) bfloat16, MXU side {side}",
                  here.jax_name, spec, "roofline.predict_matmul_seconds (each side padded to the MXU's)",
                  lambda n=n: _jax_matmul(n, "bfloat16"),
                  lambda n=n: roofline.predict_matmul_seconds(spec, n, n, n, "bfloat16"))
            for n in (base, base + 1, base + side)]


def _precision_versions() -> dict[str, tuple[Callable[..., Any], str]]:
    """Chapter 04's three float32 products: label -> (the function, the dtype of its inputs)."""
    import jax
    import jax.numpy as jnp

    return {
        "float32, precision DEFAULT": (lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.DEFAULT),
                                       "float32"),
        "float32, precision HIGHEST": (lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST),
                                       "float32"),
        "bf16 inputs, float32 sums (one MXU pass)": (
            lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32), "bfloat16"),
    }


def _precisions(here: Here, sizes: Sizes) -> list[Case]:
    """DEFAULT, HIGHEST (6 bf16 passes) and one bf16 pass, each predicted at its MXU passes."""
    spec, n = here.jax_spec, sizes.precision
    assert spec is not None
    flops = workloads.matmul_flops(n)

    def measure(label: str) -> Timing:
        import jax

        fn, dtype = _precision_versions()[label]
        a, b = (x.astype(dtype) for x in workloads.make_inputs("matmul", n, "float32", "jax"))
        return benchmark(jax.jit(fn), a, b, flops=flops, label=label)

    def predict(label: str) -> float:
        nbytes = workloads.matmul_bytes(n, 2 if label.startswith("bf16") else 4)
        return roofline.predict_seconds(spec, flops=MXU_PASSES[label] * flops, bytes=nbytes, dtype="bfloat16",
                                        call="jax_tpu", matmul=True)

    return [_case("04", f"precision: {label}", f"({n}, {n}) @ ({n}, {n}), {passes} bf16 MXU pass(es)", here.jax_name,
                  spec, "roofline.predict_seconds(passes x FLOPs, bf16 roof, call='jax_tpu')",
                  lambda label=label: measure(label), lambda label=label: predict(label))
            for label, passes in MXU_PASSES.items()]


# --------------------------------------------------------------------------------------------------------------
# Chapter 05: one epoch per backend


def chapter05(here: Here, sizes: Sizes) -> list[Case]:
    """One epoch of chapter 05's training with CuPy (on a GPU) and JAX and Keras (on JAX's GPU or TPU), and the
    epoch against the hidden width and against the batch, each beside training.predict_epoch for the device."""
    on = ([("cupy", here.gpu.name, here.gpu.spec)] if here.gpu is not None else []) + (
        [("jax", here.jax_name, here.jax_spec)] if here.jax_spec is not None else [])
    if not on:
        return []
    data = mlp.load_digits_split(test_fraction=0.25, seed=0)
    cfg, extra = TRAINING, []
    if here.jax_spec is not None:
        extra = [(kind, here.jax_name, here.jax_spec) for kind in ("jax-scan", "keras")
                 if kind != "keras" or _keras_installed()]
    measured: dict[str, Timing] = {}  # the chapter's epochs by kind: Keras's prediction takes its host time from them
    cases = [_epoch(data, kind, device, spec, cfg.hidden, cfg.batch, f"one epoch: {_EPOCH_LABELS[kind]}", here,
                    measured) for kind, device, spec in on + extra]
    cases += [_epoch(data, kind, device, spec, hidden, cfg.batch, f"epoch by width: {_EPOCH_LABELS[kind]}, "
                     f"hidden {hidden:,}", here) for kind, device, spec in on for hidden in sizes.widths]
    return cases + [_epoch(data, kind, device, spec, cfg.wide, batch, f"epoch by batch: {_EPOCH_LABELS[kind]}, "
                           f"batch {batch:,}", here) for kind, device, spec in on for batch in sizes.batch_sweep]


def _epoch(data: mlp.Digits, kind: str, device: str, spec: specs.DeviceSpec, hidden: int, batch: int, label: str,
           here: Here, measured: dict[str, Timing] | None = None) -> Case:
    """One epoch (the first of chapter 05's batch order) timed by training.time_epoch, predicted by predict_epoch."""
    from ..chapters import training

    params = mlp.init_params(data.n_features, hidden, data.n_classes, seed=0)
    idx = mlp.batch_order(len(data.y_train), batch, TRAINING.epochs, seed=0)[0]
    steps = idx.shape[0]
    kept = {} if measured is None else measured

    def measure() -> Timing:
        with _highest_precision():  # as the chapter sets it: float32 means float32 on a TF32 GPU too
            kept[kind] = training.time_epoch(training.trainer(kind, TRAINING.lr), data, params, idx, label=label)
        return kept[kind]

    def predict() -> float:
        host = max(kept["keras"].median - kept["jax"].median, 0.0) / steps if kind == "keras" else None
        calls = here.calls(6, 5) if spec.kind == "gpu" else None  # this host's call costs, for the GPU here
        return training.predict_epoch(spec, batch, hidden, steps, data.n_features, data.n_classes, kind=kind,
                                      host_seconds=host, calls=calls).seconds

    model = "training.predict_epoch" + (" (Keras's own host time per step measured here)" if kind == "keras" else "")
    model += ", with this host's call costs" if spec.kind == "gpu" else ""
    return _case("05", label, f"{steps} steps of {batch}, {data.n_features}-{hidden}-{data.n_classes} network, "
                 "float32", device, spec, model, measure, predict)


_EPOCH_LABELS = {"cupy": "CuPy", "jax": "JAX, jit per step", "jax-scan": "JAX, one jit per epoch", "keras": "Keras"}


def _keras_installed() -> bool:
    """Whether Keras can be imported (chapter 05's Keras row needs it)."""
    import importlib.util

    return importlib.util.find_spec("keras") is not None


def _highest_precision() -> Any:
    """A context in which JAX's float32 matmuls are true float32 (chapter 05's setting)."""
    import jax

    return jax.default_matmul_precision("highest")


# --------------------------------------------------------------------------------------------------------------
# Chapter 06: a recurrence, and one sample through a small network


def ema_scan(x: Any) -> Any:
    """Chapter 06's moving average inside one compiled program: jax.lax.scan carries the state."""
    import jax
    import jax.numpy as jnp

    def step(state: Any, value: Any) -> tuple[Any, Any]:
        state = (1 - EMA_ALPHA) * state + EMA_ALPHA * value
        return state, state

    return jax.lax.scan(step, jnp.zeros((), x.dtype), x)[1]


def ema_associative(x: Any) -> Any:
    """The same average as a tree of combines: about 2 log2(n) rounds, each over many pairs at once."""
    import jax
    import jax.numpy as jnp

    def combine(left: tuple[Any, Any], right: tuple[Any, Any]) -> tuple[Any, Any]:
        (a1, b1), (a2, b2) = left, right
        return a1 * a2, a2 * b1 + b2

    return jax.lax.associative_scan(combine, (jnp.full_like(x, 1 - EMA_ALPHA), EMA_ALPHA * x))[1]


def chapter06(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 06's JAX measurements on JAX's GPU or TPU: the recurrence by scan and associative scan, inference."""
    if here.jax_spec is None:
        return []
    from ..chapters import choosing

    spec, name = here.jax_spec, here.jax_name
    methods = {"scan": ema_scan, "associative scan": ema_associative}

    def recurrence(method: str, n: int) -> Timing:
        import jax

        x = to_backend(np.random.default_rng(1).standard_normal(n, dtype=np.float32), "jax")
        return benchmark(jax.jit(methods[method]), x, n=n, label=method, max_time=30)

    def inference(batch: int) -> Timing:
        import jax

        x = np.random.default_rng(5).standard_normal((batch, 64), dtype=np.float32)
        return benchmark(jax.jit(mlp.logits), to_backend(mlp.init_params(), "jax"), to_backend(x, "jax"), n=batch,
                         label="JAX jit")

    cases = [_case("06", f"recurrence: {method}, n = {n:,}", f"{n:,} steps, float32", name, spec,
                   "choosing.predict_recurrence" + (" (a lower bound)" if choosing.is_lower_bound(spec.name, method)
                                                    else ""), lambda m=method, n=n: recurrence(m, n),
                   lambda m=method, n=n: choosing.predict_recurrence(spec.name, n, m))
             for method in methods for n in sizes.steps if method != "scan" or n <= sizes.longest_scan]
    return cases + [_case("06", f"inference: batch {b:,}", f"64-64-10 forward pass, a batch of {b:,}, float32", name,
                          spec, "choosing.predict_inference (pipelined; a TPU's: the slow end of its range)",
                          lambda b=b: inference(b),
                          lambda b=b: choosing.predict_inference(spec.name, b))
                    for b in sizes.batches]


def left_out(here: Here, sizes: Sizes) -> list[str]:
    """The chapters' measurements the report leaves out at these sizes, each with why."""
    if here.jax_spec is None:
        return []
    return [f"ch06 recurrence: scan, n = {n:,}: a scan's steps run one after another, so its time grows in "
            f"proportion to n; n = {sizes.longest_scan:,} gives the same cost per step in a tenth of the time or "
            "less (chapter 06 times it)" for n in sizes.steps if n > sizes.longest_scan]


def chapter07(here: Here, sizes: Sizes) -> list[Case]:
    """Every rung of chapter 07's SGEMM ladder at its size, beside roofline.predict_kernel's time for it."""
    if here.gpu is None:
        return []
    from ..chapters import make_it_fast  # the CPU executor's translator (pycparser) loads only when a GPU is here

    gpu, n = here.gpu, sizes.ladder
    spec = make_it_fast.device_spec(gpu)
    kernels = make_it_fast.gpu_kernels(cuda.cupy())
    return [_case("07", f"SGEMM rung {r.label}", f"n = {n:,} float32, {r.kernel}", gpu.name, spec,
                  "make_it_fast.predict (roofline.predict_kernel, from the executor's counts)",
                  lambda r=r: make_it_fast.measure(gpu, r, n, kernels[r.label]),
                  lambda r=r: make_it_fast.predict(r.label, spec, n).seconds)
            for r in make_it_fast.RUNGS]


#: Every chapter's cases, in the order they run; each gives none when its accelerator is not here.
CHAPTERS: dict[str, Callable[[Here, Sizes], list[Case]]] = {
    "03": chapter03, "04": chapter04, "05": chapter05, "06": chapter06, "07": chapter07}


# --------------------------------------------------------------------------------------------------------------
# Facts about the run


def _command(*args: str, cwd: Path | None = None) -> str | None:
    """The output of a command, stripped; None when it is missing, fails or takes over 30 s."""
    if shutil.which(args[0]) is None:
        return None
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, cwd=cwd, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def helpers_commit() -> dict[str, Any] | None:
    """The helpers' git commit and whether the checkout has changes; None outside a git checkout."""
    if not (ROOT / ".git").exists():
        return None
    commit = _command("git", "rev-parse", "HEAD", cwd=ROOT)
    if not commit:
        return None
    changes = _command("git", "status", "--porcelain", "--untracked-files=no", cwd=ROOT)
    return {"commit": commit, "changed": bool(changes)}


#: The distributions whose versions a report records, when installed.
PACKAGES = ("numpy", "cupy-cuda12x", "cupy-cuda13x", "cupy", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt",
            "jax-cuda13-plugin", "jax-cuda13-pjrt", "libtpu", "libtpu-nightly", "keras", "loops-to-tpus")


def package_versions() -> dict[str, str]:
    """Installed version of each of PACKAGES that is installed."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _cuda_version(code: int) -> str:
    """CUDA's version number as text: 12040 -> '12.4'."""
    return f"{code // 1000}.{code % 1000 // 10}"


def cuda_versions(here: Here) -> dict[str, str | None]:
    """The NVIDIA driver (nvidia-smi), the CUDA version it supports and CuPy's CUDA runtime (None where unknown)."""
    out: dict[str, str | None] = {"nvidia_driver": None, "cuda_driver": None, "cuda_runtime": None}
    smi = _command("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    if smi:
        out["nvidia_driver"] = smi.splitlines()[0].strip()
    if here.gpu is not None:
        import cupy

        out["cuda_driver"] = _cuda_version(int(cupy.cuda.runtime.driverGetVersion()))
        out["cuda_runtime"] = _cuda_version(int(cupy.cuda.runtime.runtimeGetVersion()))
    return out


def devices(here: Here) -> list[dict[str, Any]]:
    """The GPUs CuPy uses and JAX's devices, each with the published specs its predictions use."""
    out = [{"kind": a.kind, "name": a.name, "via": a.via, "memory_bytes": a.memory_bytes,
            "spec": a.spec.name if a.spec else None} for a in hardware().gpus]
    if here.gpu is not None and not out:
        out.append({"kind": "gpu", "name": here.gpu.name, "via": "cupy", "memory_bytes": None,
                    "spec": here.gpu.spec.name})
    if here.jax_kind is not None:
        import jax

        out.append({"kind": here.jax_kind, "name": here.jax_name, "via": "jax", "count": len(jax.devices()),
                    "spec": here.jax_spec.name if here.jax_spec else None})
    return out


def facts(here: Here) -> dict[str, Any]:
    """Where and when the report ran: devices, driver and CUDA, packages, Python, the helpers' commit, the date."""
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "devices": devices(here),
            **cuda_versions(here), "packages": package_versions(), "python": platform.python_version(),
            "platform": platform.platform(), "environment": where_we_run(), "helpers": helpers_commit()}


# --------------------------------------------------------------------------------------------------------------
# The run and the report


@dataclass(frozen=True)
class Report:
    """What a run measured: its facts, its rows, the cases that could not be measured (and why), its settings, and
    how long each case took (wall_s, by chapter and label)."""

    facts: dict[str, Any]
    rows: list[Row]
    skipped: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    wall_s: dict[tuple[str, str], float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The whole report as plain data for the JSON file (each row with the seconds its case took)."""
        rows = [{**row.as_json(), **({"wall_s": round(self.wall_s[key], 3)} if (key := (row.chapter, row.label))
                                     in self.wall_s else {})} for row in self.rows]
        return {"kind": KIND, "version": VERSION, "facts": self.facts, "settings": self.settings, "rows": rows,
                "skipped": self.skipped}

    def to_json(self) -> str:
        """as_json() as strict JSON text (no NaN)."""
        return json.dumps(self.as_json(), indent=2, allow_nan=False) + "\n"

    def header(self) -> list[str]:
        """The facts, a few lines of text."""
        f = self.facts
        names = "; ".join(f"{d['name']} via {d['via']} (predicted from the {d['spec']})" for d in f["devices"])
        cuda_text = ", ".join(f"{k.replace('_', ' ')} {v}" for k in ("nvidia_driver", "cuda_driver", "cuda_runtime")
                              if (v := f.get(k)))
        commit = f["helpers"]["commit"][:12] + (" with changes" if f["helpers"]["changed"] else "") \
            if f.get("helpers") else "not a git checkout"
        return [f"gpu-report, {f['date']}: {names}",
                f"{cuda_text or 'no CUDA'}; Python {f['python']}; helpers {commit}",
                "packages: " + ", ".join(f"{k} {v}" for k, v in f["packages"].items())]

    def footer(self) -> list[str]:
        """What was not measured (and why), and the range of the ratios."""
        lines = [skipped_line(s) for s in self.skipped]
        lines += [f"left out: {note}" for note in self.settings.get("left_out", [])]
        if self.rows:
            ratios = [r.ratio for r in self.rows]
            lines.append(f"{len(self.rows)} row{'s' * (len(self.rows) > 1)}; measured/predicted from "
                         f"{min(ratios):.2f} to {max(ratios):.2f}")
        return lines

    def __str__(self) -> str:
        width = table_width(self.rows)
        return "\n".join([*self.header(), "", table_head(width), *(row_line(r, width) for r in self.rows),
                          *self.footer()])


def table_width(found: list[Case] | list[Row]) -> int:
    """The width of the table's measurement column for these cases (or rows)."""
    return max((len(f"{r.label} ({r.work})") for r in found), default=20) + 2


def table_head(width: int) -> str:
    """The table's column heads."""
    return f"ch  {'measurement':<{width}}{'predicted':>11}{'measured':>11}{'± IQR':>8}{'measured/predicted':>20}"


def row_line(r: Row, width: int) -> str:
    """One row of the table, saying when max_time capped its timing."""
    return (f"{r.chapter:<4}{r.label + ' (' + r.work + ')':<{width}}{format_seconds(r.predicted):>11}"
            f"{format_seconds(r.timing.median):>11}{r.timing.spread:>8.0%}{r.ratio:>19.2f}x" + capped_note(r.timing))


def skipped_line(s: dict[str, str]) -> str:
    """A case that was not measured, and why."""
    return f"not measured: ch{s['chapter']} {s['label']}: {s['why']}"


def cases(here: Here, sizes: Sizes = CHAPTER_SIZES) -> list[Case]:
    """Every chapter's cases for the accelerators here, in the chapters' order."""
    return [case for build in CHAPTERS.values() for case in build(here, sizes)]


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _free_gpu_memory() -> None:
    """Give the memory a finished case held in CuPy's pool back to the GPU, so JAX and later cases can have it."""
    pool = getattr(sys.modules.get("cupy"), "get_default_memory_pool", None)
    if pool is not None and cuda.gpu_here():
        pool().free_all_blocks()


#: The longest one case may take, first call and data included: a guard against a case that hangs, not a cap on a
#: measurement (each timing has its own max_time and says when it capped it).
CASE_LIMIT = 60.0
#: How long a default run may take, set-up included, before the cases left are listed as not measured: with
#: LAST_CASE_GRACE for a case begun just before it, the run ends within 3 minutes; --time-limit changes it.
DEFAULT_TIME_LIMIT, LAST_CASE_GRACE = 160.0, 15.0


def _measure(case: Case, seconds: float) -> Row:
    """The case's row, within `seconds` (TimeLimitExceeded past it)."""
    with time_limit(seconds, f"ch{case.chapter} {case.label}"):
        return case.run()


def measure_all(todo: list[Case], say: Callable[..., None], budget: float = DEFAULT_BUDGET,
                time_limit_s: float | None = None, on_case: Callable[[Report], None] | None = None,
                clock: Callable[[], float] = time.perf_counter) -> Report:
    """Run every case: its row, or, when it fails (out of memory, too slow, ...), why, so the others still run;
    the rows, the cases not measured and each case's seconds, as a Report without facts. Before each case, `say`
    gets how far the run is and about how long is left; after each, `on_case` gets the report so far. Once
    `time_limit_s` is spent, the cases left are listed as not measured, saying so; a case begun before then gets
    at most LAST_CASE_GRACE seconds beyond it."""
    progress, partial = Progress(len(todo), budget, time_limit_s, clock), Report({}, [], [])
    with spread_shown():  # every row records its spread
        for case in todo:
            if progress.out_of_time():
                partial.skipped.append(_skipped(case, f"the report's time limit of {time_limit_s:g} s was spent "
                                                      "before it began (--time-limit SECONDS gives more)"))
                progress.done(0.0)
                continue
            say(f"{progress.line()} ch{case.chapter} {case.label} ({case.work}) ... ", end="")
            began = clock()
            cap = CASE_LIMIT if time_limit_s is None else min(
                CASE_LIMIT, time_limit_s - progress.elapsed() + LAST_CASE_GRACE)
            try:
                row = _measure(case, cap)
            except (Exception, TimeLimitExceeded) as exc:  # noqa: BLE001 - one case failing must not lose the others
                partial.skipped.append(_skipped(case, _one_line(exc)))
                say(f"not measured: {_one_line(exc)}")
            else:
                partial.rows.append(row)
                say(f"{format_seconds(row.timing.median)} (predicted {format_seconds(row.predicted)})"
                    + capped_note(row.timing))
            finally:
                _free_gpu_memory()
            partial.wall_s[(case.chapter, case.label)] = clock() - began
            progress.done(clock() - began)
            if on_case is not None:
                on_case(partial)
    return partial


def _skipped(case: Case, why: str) -> dict[str, str]:
    return {"chapter": case.chapter, "label": case.label, "work": case.work, "why": why}


def run(sizes: Sizes = CHAPTER_SIZES, budget: float = DEFAULT_BUDGET, progress: TextIO | None = None,
        table: TextIO | None = None, json_path: str | None = None, time_limit_s: float | None = None) -> Report:
    """Measure every case for the accelerators here; NoAccelerator before anything runs when there is neither a
    GPU CuPy can use nor JAX on a GPU or TPU. As it goes: progress lines (how far, about how long left) to
    `progress`; the table's header, then each row as it is measured, to `table`; the report so far rewritten to
    `json_path` after every case, so an interrupted run keeps what it measured ('complete' says whether it ran
    through). Cases not begun within `time_limit_s` seconds are listed as not measured."""
    began = time.perf_counter()  # the time limit counts the set-up (JAX and CuPy starting, the cases' data) too
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before JAX starts: leave CuPy its share
    here = accelerators()

    def say(text: str, end: str = "\n", to: TextIO | None = progress) -> None:
        if to is not None:
            print(text, end=end, file=to, flush=True)

    todo, about = cases(here, sizes), facts(here)
    settings = {"sizes": "chapters" if sizes == CHAPTER_SIZES else "quick" if sizes == QUICK else "other",
                "budget_s": budget, "time_limit_s": time_limit_s, "cases": len(todo),
                "left_out": left_out(here, sizes), "complete": False}
    width, printed = table_width(todo), [0, 0]

    def on_case(partial: Report) -> None:
        for row in partial.rows[printed[0]:]:
            say(row_line(row, width), to=table)
        for skipped in partial.skipped[printed[1]:]:
            say(skipped_line(skipped), to=table)
        printed[:] = [len(partial.rows), len(partial.skipped)]
        if json_path is not None:
            write(json_path, Report(about, partial.rows, partial.skipped, settings, partial.wall_s))

    for line in [*Report(about, []).header(), "", table_head(width)]:
        say(line, to=table)
    old = set_timing_budget(budget)
    try:
        left = None if time_limit_s is None else max(time_limit_s - (time.perf_counter() - began), 0.0)
        measured = measure_all(todo, say, budget, left, on_case)
    finally:
        set_timing_budget(old)
    return Report(about, measured.rows, measured.skipped, {**settings, "complete": True}, measured.wall_s)


def write(path: str, report: Report) -> None:
    """The report as JSON at `path`: a new file put in place (a link there is replaced, never written through), or
    fed to a named pipe or a device (files.write_output)."""
    write_output(path, report.to_json())


def suggested_name(report: Report) -> str:
    """A file name for docs/ that python -m helpers.book.evidence picks up: gpu-report-<device>-<date>.json."""
    device = report.facts["devices"][0]["name"] if report.facts["devices"] else "device"
    slug = "".join(c if c.isalnum() else "-" for c in device.lower())
    return f"gpu-report-{'-'.join(filter(None, slug.split('-')))}-{report.facts['date'][:10]}.json"


def next_step(path: str, report: Report) -> str:
    """What to do with the file written at `path` so that docs/predictions.md lists it."""
    from fnmatch import fnmatch

    from .evidence import PAGE, REPORTS

    written = Path(path).resolve()
    if written.parent == PAGE.parent and fnmatch(written.name, REPORTS):
        return "commit it and run python -m helpers.book.evidence: docs/predictions.md then lists its rows"
    return (f"to list it in docs/predictions.md, commit it as docs/{suggested_name(report)} and run "
            "python -m helpers.book.evidence")
