"""One report of what this machine has: the CPU, CUDA GPUs (via CuPy), JAX devices, and where we run.

Every accelerator carries its published peaks from `helpers.specs` (with the source); the CPU carries the
peak estimated in `helpers.cpu` (with the formula). `peak(...)` gives the roof a measurement is judged by.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from typing import Any

from . import specs
from .backend import backends, check_name
from .cpu import CPUInfo, cpu_info

#: The dtypes a roof can be asked for (a device without a peak for one gives None as its FLOP/s).
PEAK_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class Accelerator:
    """A GPU or TPU this machine can use, with its published peaks when we know the model."""

    kind: str  # "gpu" or "tpu"
    name: str
    via: str  # "cupy" or "jax"
    memory_bytes: float | None = None
    multiprocessors: int | None = None  # SMs on a GPU, cores on a TPU chip
    spec: specs.DeviceSpec | None = None

    def summary(self) -> str:
        """One line: name, size, and the published peaks with their source."""
        parts = [f"{self.kind.upper()} {self.name} (via {self.via})"]
        if self.multiprocessors:
            parts.append(f"{self.multiprocessors} {'SMs' if self.kind == 'gpu' else 'cores'}")
        if self.memory_bytes:
            parts.append(f"{self.memory_bytes / 2**30:.0f} GiB")
        if self.spec:
            roofs = ", ".join(f"{d} {v / 1e12:g} TFLOP/s" for d, v in self.spec.peak_flops.items())
            parts.append(f"published peaks: {roofs}, {self.spec.peak_bandwidth / 1e9:g} GB/s [{self.spec.source}]")
        else:
            parts.append("no published peaks on file for this model")
        return "; ".join(parts)


@dataclass(frozen=True)
class Peak:
    """The roofs a measurement is judged by: FLOP/s for its dtype, bytes/s of the memory, and their source."""

    device: str
    flops: float | None
    bandwidth: float | None
    source: str


@dataclass(frozen=True)
class Hardware:
    """What this machine has. Shown as a table in a notebook and as plain text elsewhere."""

    cpu: CPUInfo
    accelerators: tuple[Accelerator, ...]
    jax_platform: str | None
    environment: str  # "Colab", "Binder", "Kaggle" or "local"
    notes: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> list[Accelerator]:
        """The CUDA GPUs CuPy can use (JAX's GPUs are the same cards, so they are not listed twice)."""
        return [a for a in self.accelerators if a.kind == "gpu"]

    @property
    def tpus(self) -> list[Accelerator]:
        """The TPU chips JAX can use."""
        return [a for a in self.accelerators if a.kind == "tpu"]

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) pairs: the content of both the text and the HTML report."""
        c = self.cpu
        rows = [
            ("running on", self.environment),
            ("CPU", f"{c.model} ({c.arch}), {c.logical_cpus} CPUs usable, {c.cores.value} cores, {c.simd}"),
            ("CPU peak FP32", c.formula()),
            ("CPU peak FP64", f"{c.peak_fp64 / 1e9:,.0f} GFLOP/s (half the FP32 lanes)"),
            ("CPU main-memory bandwidth", f"{c.peak_bandwidth.value / 1e9:,.1f} GB/s (measured)"),
        ]
        rows += [(f"{what} from", why) for what, why in c.sources().items()]
        rows += [(a.kind.upper(), a.summary()) for a in self.accelerators] or [("GPU / TPU", "none usable here")]
        rows.append(("JAX runs on", self.jax_platform.upper() if self.jax_platform else "JAX is not usable"))
        rows += [("note", n) for n in self.notes]
        return rows

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>"
                       f"{escape(v)}</td></tr>" for k, v in self.rows())
        return f"<table>{body}</table>"

    def peak(self, backend: str, dtype: str = "float32", device_kind: str | None = None) -> Peak:
        """The roofs for `backend` working in `dtype`, on the device its arrays live on."""
        check_name(backend)
        if dtype not in PEAK_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(PEAK_DTYPES)}; got {dtype!r}")
        if device_kind not in (None, "cpu", "gpu", "tpu"):
            raise ValueError(f"device_kind must be 'cpu', 'gpu', 'tpu' or None (the backend's device); "
                             f"got {device_kind!r}")
        kind = (device_kind or backends()[backend].device_kind) if backend in ("jax", "cupy") else "cpu"
        if kind == "cpu":
            source = f"estimated: {self.cpu.formula()}"
            if dtype == "float64":
                source += f"; FP64 is half: {self.cpu.peak_fp64 / 1e9:,.0f} GFLOP/s"
            return Peak(f"CPU ({self.cpu.cores.value} cores)", self.cpu.peak_flops(dtype),
                        float(self.cpu.peak_bandwidth.value), source)
        accel = next((a for a in self.accelerators if a.kind == kind), None)
        if accel is None or accel.spec is None:
            name = accel.name if accel else kind.upper()
            return Peak(name, None, None, f"no published peaks on file for {name}")
        spec = accel.spec
        if kind == "tpu":  # every float matmul on a TPU goes through the bf16 MXUs
            return Peak(spec.name, spec.peak_for("bfloat16"), spec.peak_bandwidth,
                        f"published bf16 MXU peak [{spec.source}]")
        key = dtype
        # float32 matmuls run on TF32 tensor cores where the GPU has them: for JAX unless its matmul precision
        # is set to full float32, and for CuPy only when CUPY_TF32=1.
        tf32 = _jax_float32_is_tf32() if backend == "jax" else os.environ.get("CUPY_TF32") == "1"
        if dtype == "float32" and spec.peak_for("tf32") and tf32:
            key = "tf32"
        return Peak(spec.name, spec.peak_for(key), spec.peak_bandwidth, f"published {key} peak [{spec.source}]")


def _jax_float32_is_tf32() -> bool:
    """Whether JAX rounds float32 matmuls to TF32 on a GPU: its default, unless the precision says full float32."""
    jax = sys.modules.get("jax")
    setting = jax.config.jax_default_matmul_precision if jax is not None else None
    return str(setting).lower() not in ("highest", "float32")


def where_we_run() -> str:
    """'Colab', 'Kaggle', 'Binder' or 'local'."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "Kaggle"
    if os.environ.get("BINDER_LAUNCH_HOST") or os.environ.get("BINDER_REPO_URL"):
        return "Binder"
    return "local"


def _cupy_gpus() -> list[Accelerator]:
    if not backends()["cupy"].usable:
        return []
    import cupy

    out = []
    for i in range(cupy.cuda.runtime.getDeviceCount()):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        out.append(Accelerator("gpu", name, "cupy", float(props["totalGlobalMem"]),
                               int(props["multiProcessorCount"]), specs.lookup(name)))
    return out


def _jax_accelerators() -> tuple[str | None, list[Accelerator]]:
    status = backends()["jax"]
    if not status.usable:
        return None, []
    import jax

    devices = jax.devices()
    platform = devices[0].platform
    if platform != "tpu":
        return platform, []
    return platform, [Accelerator("tpu", d.device_kind, "jax", None, getattr(d, "num_cores", None),
                                  specs.lookup(d.device_kind)) for d in devices]


@lru_cache(maxsize=1)
def hardware() -> Hardware:
    """Detect this machine once per process: CPU (with peak), GPUs, TPUs, JAX platform, environment."""
    cpu = cpu_info()  # first, while no other library's threads are busy: it calibrates the clock
    gpus = _cupy_gpus()
    platform, tpus = _jax_accelerators()
    notes = [s.fix for s in backends().values() if s.usable and s.fix]
    if gpus and platform == "gpu":
        notes.append("JAX and CuPy share the same GPU(s)")
    return Hardware(cpu, tuple(gpus + tpus), platform, where_we_run(), tuple(notes))
