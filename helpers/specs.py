"""Published peak FLOP/s and memory bandwidth of the accelerators learners meet, each with its source.

These are *published* figures (dense, no sparsity), used to label predictions and to turn a
measurement into a fraction of peak. They are never shown as if measured on this machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class DeviceSpec:
    """One accelerator's published peaks (FLOP/s per dtype, bytes/s) and where they come from."""

    name: str
    kind: str  # "gpu" or "tpu"
    peak_flops: dict[str, float]  # dtype name -> FLOP/s; float32 on a GPU means the CUDA cores
    peak_bandwidth: float  # bytes/s of device memory
    memory_bytes: float
    where: str  # where learners meet it
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = field(default=(), repr=False)
    #: What does the arithmetic, in words, and how many multiply-adds the chip starts per clock cycle.
    mac_units: tuple[str, int] | None = None

    def peak_for(self, dtype: str) -> float | None:
        """Peak FLOP/s for `dtype` ('float32', 'tf32', 'float16', 'bfloat16'), or None if not published."""
        return self.peak_flops.get(dtype)

    @property
    def critical_intensity(self) -> float:
        """FLOP per byte at which the fastest published roof meets the bandwidth roof (the roofline's ridge)."""
        return max(self.peak_flops.values()) / self.peak_bandwidth


GPUS: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "NVIDIA T4", "gpu",
        {"float32": 8.1 * TERA, "float16": 65 * TERA},
        320 * GIGA, 16e9, "Colab free GPU", "NVIDIA T4 datasheet",
        notes="FP16 tensor cores only; no BF16 or TF32 tensor cores.",
        aliases=("tesla t4", "t4"),
        mac_units=("2,560 CUDA cores, each one FP32 multiply-add per cycle", 2560),
    ),
    DeviceSpec(
        "NVIDIA L4", "gpu",
        {"float32": 30.3 * TERA, "tf32": 60 * TERA, "float16": 121 * TERA, "bfloat16": 121 * TERA},
        300 * GIGA, 24e9, "Colab", "NVIDIA L4 datasheet", aliases=("l4",),
    ),
    DeviceSpec(
        "NVIDIA A100 40GB", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        1555 * GIGA, 40e9, "Colab", "NVIDIA A100 datasheet",
        aliases=("a100-sxm4-40gb", "a100-pcie-40gb", "a100 40gb"),
    ),
    DeviceSpec(
        "NVIDIA A100 80GB", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        2039 * GIGA, 80e9, "cloud", "NVIDIA A100 datasheet",
        aliases=("a100-sxm4-80gb", "a100 80gb", "a100-pcie-80gb"),
    ),
    DeviceSpec(
        "NVIDIA H100 SXM", "gpu",
        {"float32": 67 * TERA, "tf32": 495 * TERA, "float16": 989 * TERA, "bfloat16": 989 * TERA},
        3350 * GIGA, 80e9, "Colab (limited), cloud", "NVIDIA H100 datasheet; jax-ml/scaling-book gpus.md",
        aliases=("h100 80gb hbm3", "h100 sxm", "h100 sxm5"),
    ),
    DeviceSpec(
        "NVIDIA H200", "gpu",
        {"float32": 67 * TERA, "tf32": 495 * TERA, "float16": 989 * TERA, "bfloat16": 989 * TERA},
        4800 * GIGA, 141e9, "cloud", "NVIDIA H200 datasheet", aliases=("h200",),
    ),
)

TPUS: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "TPU v2", "tpu", {"bfloat16": 45 * TERA}, 700 * GIGA, 16e9, "Colab until 2025",
        "arXiv 1907.10701", notes="128x128 MXU", aliases=("tpu v2",),
    ),
    DeviceSpec(
        "TPU v4", "tpu", {"bfloat16": 275 * TERA}, 1200 * GIGA, 32 * 2**30, "cloud",
        "cloud.google.com/tpu/docs/v4", notes="2 cores x 4 MXU, 128x128", aliases=("tpu v4",),
    ),
    DeviceSpec(
        "TPU v5e", "tpu", {"bfloat16": 197 * TERA}, 819 * GIGA, 16e9, "Colab TPU runtime (v5e-1)",
        "cloud.google.com/tpu/docs/v5e", notes="4 MXU, 128x128", aliases=("tpu v5 lite", "tpu v5e", "v5litepod"),
        mac_units=("4 MXUs, each a 128 x 128 grid of multiply-accumulators (systolic array)", 4 * 128 * 128),
    ),
    DeviceSpec(
        "TPU v5p", "tpu", {"bfloat16": 459 * TERA}, 2765 * GIGA, 95e9, "cloud",
        "cloud.google.com/tpu/docs/v5p", notes="2 cores x 4 MXU, 128x128", aliases=("tpu v5p", "tpu v5"),
    ),
    DeviceSpec(
        "TPU v6e", "tpu", {"bfloat16": 918 * TERA}, 1638 * GIGA, 32e9, "Colab (v6e-1), cloud",
        "cloud.google.com/tpu/docs/v6e", notes="2 MXU, 256x256", aliases=("tpu v6 lite", "tpu v6e"),
    ),
)

#: The devices the notebooks use for "what the roofline model predicts" when the real one is missing.
REFERENCE_GPU = "NVIDIA T4"
REFERENCE_TPU = "TPU v5e"

ALL: tuple[DeviceSpec, ...] = GPUS + TPUS


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("nvidia", "").replace("tesla", "")).strip()


def lookup(name: str) -> DeviceSpec | None:
    """The spec whose name or alias best matches a device name as CuPy or JAX reports it, else None.

    >>> lookup("Tesla T4").name
    'NVIDIA T4'
    >>> lookup("TPU v5 lite").name
    'TPU v5e'
    """
    if not isinstance(name, str) or not name.strip():
        return None
    wanted = _norm(name)
    best: tuple[int, DeviceSpec] | None = None
    for spec in ALL:
        for candidate in (spec.name, *spec.aliases):
            key = _norm(candidate)
            if key and (key == wanted or re.search(rf"(^|[\s-]){re.escape(key)}($|[\s-])", wanted)):
                if best is None or len(key) > best[0]:
                    best = (len(key), spec)
    return best[1] if best else None


def get(name: str) -> DeviceSpec:
    """The spec named `name`; a clear KeyError listing the known devices otherwise."""
    spec = lookup(name)
    if spec is None:
        known = ", ".join(s.name for s in ALL)
        raise KeyError(f"no published specs for {name!r}; known devices: {known}")
    return spec


#: The host <-> device link of each accelerator: bytes/s one way, and the source. Every copy between NumPy (host
#: memory) and the chip crosses it, at a small fraction of the device memory's bandwidth. Published measurements
#: (pinned host memory, CUDA's bandwidthTest or nvbandwidth) vary with the host: the figure is within them.
HOST_LINKS: dict[str, tuple[float, str]] = {
    "NVIDIA T4": (11 * GIGA, "PCIe Gen3 x16: measured 9.7 GB/s to and 11.1 GB/s from a T4 (bandwidthTest, pinned, "
                             "https://github.com/router-gao/cuda-demo/blob/main/cuda-samples/02-cuda-bandwidth.md)"),
    "NVIDIA L4": (20 * GIGA, "PCIe Gen4 x16: assumed as on A100 hosts; no published L4 measurement was found"),
    "NVIDIA A100 40GB": (20 * GIGA, "PCIe Gen4 x16: measured 12.3 to 26.3 GB/s on different hosts "
                                    "(https://github.com/router-gao/cuda-demo, https://github.com/jdh4/della-gpu-A100, "
                                    "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA A100 80GB": (20 * GIGA, "PCIe Gen4 x16: measured 12.3 to 26.3 GB/s on different hosts "
                                    "(https://github.com/router-gao/cuda-demo, https://github.com/jdh4/della-gpu-A100, "
                                    "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA H100 SXM": (45 * GIGA, "PCIe Gen5 x16: measured 35.2 to 52.8 GB/s (nvbandwidth, "
                                   "https://github.com/NVIDIA/nvbandwidth/issues/24, "
                                   "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA H200": (45 * GIGA, "PCIe Gen5 x16: assumed as for the H100; no published H200 measurement was found"),
    "TPU v5e": (15 * GIGA, "published spec, 1.5e10 to 1.6e10 bytes/s of PCIe per chip (https://github.com/jax-ml/"
                           "scaling-book); no published v5e measurement was found"),
}


def host_link(name: str) -> tuple[float, str] | None:
    """(bytes/s, source) of the host link of the device called `name`, or None when none is on file."""
    spec = lookup(name)
    return HOST_LINKS.get(spec.name) if spec else None
