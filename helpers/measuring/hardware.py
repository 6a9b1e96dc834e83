"""One report of what this machine has: the CPU, CUDA GPUs (via CuPy), JAX devices, and where we run.

Every accelerator carries its published peaks from `helpers.measuring.specs` (with the source); the CPU carries the
peak estimated in `helpers.measuring.cpu` (with the formula). `peak(...)` gives the roof a measurement is judged by.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from typing import Any

from ..core.backend import backends, check_name
from ..core.place import where_we_run
from . import specs
from .cpu import CPUInfo, cpu_info

#: Labels of the report for the entries of CPUInfo.sources() that "how we know the <entry>" would not fit: each
#: label reads with its value as a label and its answer ("how we know the clock: inferred from NumPy's BLAS ...").
_SOURCE_LABELS = {"bf16": "how we know the bf16 rate", "nominal clock": "nominal clock"}

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
        rows += [(_SOURCE_LABELS.get(what, f"how we know the {what}"), why) for what, why in c.sources().items()]
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

    def peak(self, backend: str, dtype: str = "float32", device_kind: str | None = None,
             float32_matmuls: Collection[str] | None = None) -> Peak:
        """The roofs for `backend` working in `dtype`, on the device its arrays live on.

        float32_matmuls: where float32 work on a GPU with TF32 tensor cores runs its matmuls, when the caller read
        it from the work itself (benchmark reads a JAX call's jaxpr): roof names such as {'tf32'} (the highest
        judges), empty for work without a matmul (the CUDA cores' float32 roof). None: as the settings in force
        say (JAX's default matmul precision, CuPy's compute type), with the reason in the source.
        """
        check_name(backend)
        if dtype not in PEAK_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(PEAK_DTYPES)}; got {dtype!r}")
        if device_kind not in (None, "cpu", "gpu", "tpu"):
            raise ValueError(f"device_kind must be 'cpu', 'gpu', 'tpu' or None (the backend's device); "
                             f"got {device_kind!r}")
        kind = (device_kind or backends()[backend].device_kind) if backend in ("jax", "cupy") else "cpu"
        if kind == "cpu":
            flops = self.cpu.peak_flops(dtype)  # float32, float64 and bfloat16 (bf16 units, or run in fp32)
            source = f"estimated: {self.cpu.formula(dtype if flops is not None else 'float32')}"
            return Peak(f"CPU ({self.cpu.cores.value} cores)", flops, float(self.cpu.peak_bandwidth.value), source)
        accel = next((a for a in self.accelerators if a.kind == kind), None)
        if accel is None or accel.spec is None:
            name = accel.name if accel else kind.upper()
            return Peak(name, None, None, f"no published peaks on file for {name}")
        return _accelerator_peak(accel.spec, kind, backend, dtype, float32_matmuls)


def _accelerator_peak(spec: specs.DeviceSpec, kind: str, backend: str, dtype: str,
                      float32_matmuls: Collection[str] | None) -> Peak:
    """The published roofs of a GPU or TPU for `backend` in `dtype`: a stand-in roof where it has no units for the
    dtype, and float32 work on TF32 tensor cores judged by where its matmuls run (Hardware.peak says how)."""
    if kind == "tpu":  # every float matmul on a TPU goes through the bf16 MXUs
        return Peak(spec.name, spec.peak_for("bfloat16"), spec.peak_bandwidth,
                    f"published bf16 MXU peak [{spec.source}]")
    key, why = dtype, ""
    stand_in = None if spec.peak_for(dtype) else specs.stand_in_roof(kind, dtype, list(spec.peak_flops))
    if stand_in is not None:  # e.g. a T4 has no bf16 units: the rule roofline predicts with
        key, why = stand_in[0], f"{stand_in[1]} ({spec.name})"
    if dtype == "float32" and spec.peak_for("tf32"):  # float32 matmuls may run on the tensor cores
        key, why = _float32_roof(spec, backend, float32_matmuls, why)
    return Peak(spec.name, spec.peak_for(key), spec.peak_bandwidth,
                f"published {key} peak [{spec.source}]" + (f"; {why}" if why else ""))


def _float32_roof(spec: specs.DeviceSpec, backend: str, float32_matmuls: Collection[str] | None,
                  why: str) -> tuple[str, str]:
    """The roof float32 work on a GPU with TF32 tensor cores is judged by, and why: the highest of the roofs its
    matmuls run on (read from the work, else from the settings in force), never a lower one than it may reach."""
    if float32_matmuls is None:
        roof, why = _jax_settings_roof() if backend == "jax" else _cupy_settings_roof()
        roofs = {roof}
    elif isinstance(float32_matmuls, str) or not all(isinstance(r, str) for r in float32_matmuls):
        raise ValueError(f"float32_matmuls must be a set of roof names such as {{'tf32'}}, or None; got "
                         f"{float32_matmuls!r:.60}")
    else:
        roofs = set(float32_matmuls) or {"float32"}  # no matmul: the CUDA cores do the work
    missing = sorted(r for r in roofs if not spec.peak_for(r))
    key = max(roofs, key=lambda r: spec.peak_for(r) or 0.0)
    if missing:  # float8, or a precision not known here: never judge by a lower roof than it may reach
        key = max(spec.peak_flops, key=spec.peak_flops.__getitem__)
        why = "; ".join(filter(None, (why, f"no roof on file for {', '.join(missing)}: judged by the highest")))
    return key, why

#: Where JAX documents its matmul precisions (the rule below follows it).
JAX_PRECISION_DOCS = "https://docs.jax.dev/en/latest/201/precision.html"
#: Where a float32 dot runs on a GPU with TF32 tensor cores, for each jax.lax.Precision level.
_JAX_LEVEL_ROOFS = {"DEFAULT": "tf32", "HIGH": "tf32", "HIGHEST": "float32"}
#: ... and for each jax.lax.DotAlgorithmPreset, by the type its inputs are rounded to (its name's first part).
_JAX_PRESET_ROOFS = {"DEFAULT": "tf32", "F32": "float32", "TF32": "tf32", "BF16": "bfloat16", "F16": "float16",
                     "F64": "float64", "ANY": "float8"}


def jax_level(value: Any) -> Any:
    """The jax.lax.Precision that `value` is or names ('highest', 'tensorfloat32', ...), or None."""
    from jax import lax

    if isinstance(value, lax.Precision):
        return value
    try:
        return lax.Precision(value) if isinstance(value, str) else None
    except ValueError:
        return None


def jax_dot_roof(precision: Any) -> str:
    """Where a JAX dot of float32 arrays runs at `precision`, on an NVIDIA GPU with TF32 tensor cores: 'float32'
    (the CUDA cores), 'tf32', 'bfloat16', 'float16', 'float64' or 'float8': the roof it is judged by.

    `precision` is what jnp.matmul, lax.dot_general, ... take, or the jax_default_matmul_precision setting.
    JAX documents (https://docs.jax.dev/en/latest/201/precision.html, and the jax.lax.Precision docstring):
    DEFAULT (None, 'default', 'fastest', 'bfloat16') and HIGH ('high', 'bfloat16_3x', 'tensorfloat32') use TF32
    on a GPU that has it; HIGHEST ('highest', 'float32') is true float32. (XLA's Triton fusions may run HIGH in
    float32: the TF32 roof, the higher, then never overstates the fraction.) A pair (lhs, rhs) runs at the higher
    of the two, as XLA's cuBLAS path takes the largest (GemmConfig::For in xla/service/gpu/matmul_utils.cc). A dot
    algorithm (a lax.DotAlgorithmPreset or its name, a lax.DotAlgorithm) names the type its inputs are rounded
    to: 'TF32_TF32_F32' -> 'tf32', 'BF16_BF16_F32_X3' -> 'bfloat16' (3 passes of those units), 'F32_F32_F32' ->
    'float32', 'DEFAULT' -> 'tf32'. A value JAX does not take is a ValueError.
    """
    import numpy as np
    from jax import lax

    if precision is None:
        precision = lax.Precision.DEFAULT
    if isinstance(precision, str) and precision in lax.DotAlgorithmPreset.__members__:
        precision = lax.DotAlgorithmPreset[precision]
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        pair = [jax_level(p) for p in precision]
        if None not in pair:
            return _JAX_LEVEL_ROOFS[max(pair, key=lambda p: p.value).name]
    elif isinstance(precision, lax.DotAlgorithmPreset):
        if precision.name.split("_")[0] in _JAX_PRESET_ROOFS:
            return _JAX_PRESET_ROOFS[precision.name.split("_")[0]]
    elif isinstance(precision, lax.DotAlgorithm):
        name = np.dtype(precision.lhs_precision_type).name
        if name in ("float32", "bfloat16", "float16", "float64") or name.startswith("float8"):
            return "float8" if name.startswith("float8") else name
    elif (level := jax_level(precision)) is not None:
        return _JAX_LEVEL_ROOFS[level.name]
    raise ValueError(f"precision {precision!r:.60} is not a JAX matmul precision: use None, 'default', 'high', "
                     "'highest' (or another name of a jax.lax.Precision), a jax.lax.Precision or a pair of them, or "
                     f"a jax.lax.DotAlgorithmPreset or its name [{JAX_PRECISION_DOCS}]")


def jax_matmul_roof(spec: specs.DeviceSpec, dtype: str) -> str:
    """The roof a jitted matmul of `dtype` runs on: float32 on a GPU with TF32 goes by JAX's default precision."""
    if dtype != "float32" or spec.kind != "gpu":
        return dtype
    import jax

    roof = jax_dot_roof(jax.config.jax_default_matmul_precision)
    return roof if spec.peak_for(roof) else "float32"


def _jax_settings_roof() -> tuple[str, str]:
    """Where JAX runs float32 matmuls that set no precision of their own, on a TF32 GPU, and why (for the source)."""
    jax = sys.modules.get("jax")
    setting = jax.config.jax_default_matmul_precision if jax is not None else None
    why = f"JAX's default matmul precision is {setting!r}"
    try:
        return jax_dot_roof(setting), why
    except ValueError:
        return "unknown", f"{why}, not known here"


def _cupy_settings_roof() -> tuple[str, str]:
    """Where CuPy runs float32 matmuls, as CuPy decides it, and why (for the source).

    CuPy reads CUPY_TF32 once per process, at its first float32 matmul, as int(os.getenv('CUPY_TF32', '0')) > 0,
    and keeps the compute type it chose from then on (get_compute_type in cupy/_core/_routines_linalg.pyx,
    https://github.com/cupy/cupy/blob/main/cupy/_core/_routines_linalg.pyx; documented at
    https://docs.cupy.dev/en/stable/reference/environment.html). So we ask CuPy the same question, once it is
    loaded: a CUPY_TF32 changed after that first matmul changes nothing, here as in CuPy. Where no float32 matmul
    has run yet, asking settles CuPy's choice now, from the environment as it is, as that matmul would have.
    Without CuPy loaded, or where it cannot answer (no GPU), the same rule reads the environment; a value CuPy
    would refuse (not a whole number) is judged by the TF32 roof, the higher one.
    """
    linalg = sys.modules.get("cupy._core._routines_linalg")
    if linalg is not None:
        try:
            chosen = linalg.get_compute_type("float32")
            roofs = {linalg.COMPUTE_TYPE_TF32: "tf32", linalg.COMPUTE_TYPE_BF16: "bfloat16",
                     linalg.COMPUTE_TYPE_FP16: "float16"}
            return roofs.get(chosen, "float32"), f"CuPy's float32 compute type is {linalg.compute_type_to_str(chosen)}"
        except Exception:  # noqa: BLE001 - without a GPU CuPy cannot settle TF32: read the environment as it would
            pass
    value = os.environ.get("CUPY_TF32", "0")
    try:
        return ("tf32" if int(value) > 0 else "float32"), f"CUPY_TF32={value!r}"
    except ValueError:
        return "tf32", f"CUPY_TF32={value!r} is not a whole number (CuPy refuses it): judged by the higher TF32 roof"


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
