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
    #: dtype name -> FLOP/s; float32 on a GPU means the CUDA cores; float16 and bfloat16 the tensor cores with
    #: float32 sums, float16_acc16 with fp16 sums where that rate differs (GeForce cards: twice the float16 rate)
    peak_flops: dict[str, float]
    peak_bandwidth: float  # bytes/s of device memory
    memory_bytes: float
    where: str  # where learners meet it
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = field(default=(), repr=False)
    #: What does the arithmetic, in words, and how many multiply-adds the chip starts per clock cycle.
    mac_units: tuple[str, int] | None = None
    #: Bytes of L2 cache, or None where no public source for it was found (see `l2_source`). NVIDIA's "MB" here
    #: is 2**20 bytes: published deviceQuery outputs read 'L2 Cache Size: 4194304 bytes' on a T4 and 41943040 on
    #: an A100-SXM4-40GB (_DEVICEQUERY_T4_A100), 52428800 on an H100 80GB HBM3 (_DEVICEQUERY_H100).
    l2_bytes: int | None = None
    l2_source: str = ""  # where the L2 size was published, with its address; or why there is none
    #: Public addresses of the documents the peaks, bandwidth and memory come from (`source` names them).
    urls: tuple[str, ...] = field(default=(), repr=False)
    #: Streaming multiprocessors (SMs) and the compute capability, where published (GPUs; None otherwise): with
    #: SM_LIMITS they say what one SM holds and does per clock, which chapter 07's kernel model needs.
    sms: int | None = None
    compute_capability: str | None = None
    sms_source: str = ""
    #: The SM clock (Hz) the card holds under sustained load where a published measurement shows it below the clock
    #: its peak implies (a power-capped card), with that measurement; None: it holds the peak's clock.
    held_clock: float | None = None
    held_clock_source: str = ""
    #: The tensor-core peaks (float16, bfloat16; float16_acc16 where a card publishes fp16 sums apart): NVIDIA's
    #: wording and where it was read. Chapter 07's tensor-core rungs and cuBLAS's half products are priced on them.
    tensor_source: str = ""

    def peak_for(self, dtype: str) -> float | None:
        """Peak FLOP/s for `dtype` ('float32', 'tf32', 'float16', 'bfloat16'), or None if not published."""
        return self.peak_flops.get(dtype)

    @property
    def critical_intensity(self) -> float:
        """FLOP per byte at which the fastest published roof meets the bandwidth roof (the roofline's ridge)."""
        return max(self.peak_flops.values()) / self.peak_bandwidth


MIB = 2**20

# The documents the GPU figures come from. NVIDIA prints the TF32, FP16 and BF16 tensor-core peaks of Ampere,
# Ada and Hopper cards "with sparsity" (marked *) and says the dense figures are half those: the dense ones are
# used here. The FP32 figure is the CUDA cores' and has no sparsity.
_T4_SHEET = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
_L4_PAGE = "https://www.nvidia.com/en-us/data-center/l4/"
_A100_40_SHEET = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet.pdf"
_A100_80_SHEET = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                  "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_A100_TABLE = "https://www.thundercompute.com/blog/nvidia-a100-specs-full-guide"  # all four A100s side by side
_AMPERE_BLOG = "https://developer.nvidia.com/blog/nvidia-ampere-architecture-in-depth/"
_H100_PAGE = "https://www.nvidia.com/en-us/data-center/h100/"  # H100 SXM and H100 NVL columns
_H100_PCIE_BRIEF = "https://manuals.plus/m/56b0c3ef7d0a1c470c0af8f05a0bd1f29a778007472ba941201fbbb185c9bccd"
_H100_TABLE = "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"  # NVIDIA's SXM / PCIe table, L2 too
_HOPPER_PAPER = "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
_HOPPER_BLOG = "https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"
_H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"  # H200 SXM and H200 NVL columns

#: Published deviceQuery outputs (CUDA samples), pinned at the commit they were read at.
_DEVICEQUERY_T4_A100 = ("https://github.com/router-gao/cuda-demo/blob/bc767ff2b0f7d5294e2b40de0b93454fae4158ac/"
                        "cuda-samples/01-cuda-deviceQuery.md")
_DEVICEQUERY_H100 = ("https://github.com/thamada/nvidia-smi/blob/03fbe6e68c0bb4c28b72d5da786a9712a33cf408/"
                     "nvsim/H100SXMx8_deviceQuery.py")
#: CUDA's bandwidthTest on a T4 and an A100-SXM4-40GB (Alibaba Cloud VMs), pinned.
_BANDWIDTHTEST_T4_A100 = ("https://github.com/router-gao/cuda-demo/blob/dca1c6b28a29b06f1468d2e1bdc2fc3054d7c6a2/"
                          "cuda-samples/02-cuda-bandwidth.md")

_A100_L2 = (f"40 MB L2 cache (NVIDIA, A100: {_AMPERE_BLOG}); the same 40 MB on every A100, 40GB or 80GB, SXM "
            f"or PCIe ({_A100_TABLE})")
_H100_L2 = (f"50 MB L2 cache on H100 SXM5 and H100 PCIe (NVIDIA's H100 table, {_H100_TABLE}; {_HOPPER_BLOG}: "
            "'A 50 MB L2 cache in H100 is 1.25x larger than the A100 40 MB L2')")
#: The H100 NVL's and H200 NVL's published peaks per GPU (the same in both columns), dense: half NVIDIA's
#: "with sparsity" figures, as the note says.
_NVL_PEAKS = {"float32": 60 * TERA, "tf32": 417.5 * TERA, "float16": 835.5 * TERA, "bfloat16": 835.5 * TERA}
_NVL_DENSE = "NVIDIA states TF32 835 and FP16/BF16 1,671 TFLOPS with sparsity; these are the dense halves. "
_SYSRQMTS_A6000 = "https://sysrqmts.com/es/gpus/compare/nvidia-rtx-a6000-vs-nvidia-tesla-p40"
_RTX3090_TABLE = "https://holynerdvana.blogspot.com/2022/10/nvidia-geforce-rtx-3090-specifications.html"
_SUMMIT_V100 = "https://www.olcf.ornl.gov/for-users/system-user-guides/summit/nvidia-v100-gpus/"
_A100_SMS = ("6,912 FP32 cores at 64 per SM: 108 SMs (NVIDIA's V100/A100 table, 'FP32 Cores / SM 64', 'FP32 Cores / "
             "GPU ... 6912', as republished at https://www.hardwaretimes.com/nvidia-ampere-architectural-analysis-a-look-"
             "at-the-a100-tensor-core-gpu/); compute capability 8.0: NVIDIA's Ampere tuning guide, 'compute capability "
             "8.0 (i.e., A100 GPUs)'")
_H100_SMS = ("'132' SMs, 'Compute capability 9.0' for the H100 SXM5 (NVIDIA, Hopper Architecture In-Depth, table 3, "
             f"{_HOPPER_BLOG})")
#: No public source gives the H200's SM count: this project's own run on one measured it.
_H200_SMS = ("measured, not published: CuPy's getDeviceProperties(0) on an NVIDIA H200 read multiProcessorCount 132 "
             "and compute capability 9.0 (this project's run of 2026-11-28, shared/gpu-runs/h200-2026-11-28: "
             "'NVIDIA H200 (132 SMs, compute capability 9.0)')")
#: A free-tier Colab T4's SM clock read during a matmul probe, as published; NVIDIA's forum on why it is low.
_T4_HELD_CLOCK = ("measured, published: a free-tier Colab T4 'forecast ... (from 2.20 TFLOPS measured on this card @ "
                  "1185 MHz)', the SM clock nvidia-smi (clocks.sm) read right after 3 x 8 matmuls of 4096 x 4096 "
                  "(https://github.com/MakazhanAlpamys/Soup/blob/42b1899be64eb1b2a9beadfeb20d9e466138f360/benchmarks/"
                  "run-t4-colab-free-tier.md); one reading of one card, against the 1,590 MHz the 8.1 TFLOP/s peak "
                  "implies. Why: 'power capping of the GPU ... to make sure the GPU stays within its stated power "
                  "limit, which in the case of the T4 is about 70W. It is expected behavior for approximately "
                  "continuous matrix multiply operations on a T4' (NVIDIA's forum, "
                  "https://forums.developer.nvidia.com/t/about-gpu-peak-performance/264462)")
_AMPERE_PAPER = "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
_HOPPER_PAPER_V104 = "https://nvdam.widen.net/s/95bdhpsgrs/nvidia_h100_tensor_core_gpu_architecture_whitepaper_v1.03"
_ADA_PAPER = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_RTX4090_TABLE = "https://holynerdvana.blogspot.com/2022/10/nvidia-geforce-rtx-4090-specifications.html"
_A100_TENSOR = (f"NVIDIA's A100 whitepaper ({_AMPERE_PAPER}), Table 1, A100 column: 'Peak FP16 Tensor TFLOPS with "
                "FP32 Accumulate | ... | 312/624', 'Peak BF16 Tensor TFLOPS with FP32 Accumulate | ... | 312/624' (the "
                "second figure with sparsity; read in a third-party copy of the table, not the PDF); the datasheets "
                "give the same 312 for the 40GB and 80GB, SXM and PCIe cards")
_HOPPER_TENSOR = (f"NVIDIA's H100 whitepaper V1.04 ({_HOPPER_PAPER_V104}), Table 3: 'Peak BF16 Tensor TFLOPS with FP32 "
                  "Accumulate 312/624 | 989.4/1978.9 | 756/1513' (A100 | H100 SXM5 | H100 PCIe; the second figure "
                  "with sparsity), FP16 the same (read in a third-party quote, not the PDF)")
#: For cards whose tensor-core peaks were taken with their other peaks and not read again on their own.
_WITH_THE_OTHERS = ("the dense halves of NVIDIA's figures 'with sparsity', from the same document as this card's "
                    "other peaks (`source`); not read again for the tensor cores alone")
_HOPPER_NO_L2 = ("not published: NVIDIA's {card} pages give no L2 size and no public deviceQuery of this card was "
                 "found, so none is assumed (on the card itself, CuPy's getDeviceProperties(0)['l2CacheSize'] "
                 "reads it)")

GPUS: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "NVIDIA T4", "gpu",
        {"float32": 8.1 * TERA, "float16": 65 * TERA},
        320 * GIGA, 16e9, "Colab free GPU", "NVIDIA T4 datasheet",
        notes="FP16 tensor cores only; no BF16 or TF32 tensor cores.",
        aliases=("tesla t4", "t4"),
        mac_units=("2,560 CUDA cores, each one FP32 multiply-add per cycle", 2560),
        l2_bytes=4 * MIB,
        l2_source=("4 MB: a published deviceQuery on a Tesla T4 reads 'L2 Cache Size: 4194304 bytes' "
                   f"({_DEVICEQUERY_T4_A100}); the T4 datasheet gives no L2 size"),
        urls=(_T4_SHEET,),
        sms=40, compute_capability="7.5",
        sms_source=("third-party: 'SM count 40', 'CUDA 7.5' (https://sysrqmts.com/en/gpus/nvidia/tesla/t4); NVIDIA's "
                    "T4 datasheet gives 2,560 CUDA cores, and Turing has 64 FP32 cores per SM (CUDA C++ Programming "
                    "Guide)"),
        held_clock=1185e6, held_clock_source=_T4_HELD_CLOCK,
        tensor_source=(f"NVIDIA's T4 datasheet ({_T4_SHEET}): 'Mixed-Precision (FP16/FP32) 65 TFLOPS', fp16 products "
                       "with float32 sums (read in a third-party quote with the PDF's hash, not the PDF); NVIDIA's "
                       "Turing blog (https://developer.nvidia.com/blog/nvidia-turing-architecture-in-depth/): 'Eight "
                       "Tensor Cores in an SM perform a total of 512 FP16 multiply and accumulate operations per "
                       "clock'; no bf16 or TF32"),
    ),
    DeviceSpec(
        "NVIDIA L4", "gpu",
        {"float32": 30.3 * TERA, "tf32": 60 * TERA, "float16": 121 * TERA, "bfloat16": 121 * TERA},
        300 * GIGA, 24e9, "Colab", "NVIDIA L4 datasheet", aliases=("l4",),
        l2_bytes=48 * MIB,
        l2_source=("48 MB L2 (third-party GPU database, https://fpsbench.com/compare/gpu/nvidia-l4-vs-nvidia-tesla-m40"
                   "); no NVIDIA document and no public deviceQuery of an L4 with its address were found"),
        urls=(_L4_PAGE,),
        tensor_source=_WITH_THE_OTHERS,
    ),
    DeviceSpec(
        "NVIDIA A100 40GB", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        1555 * GIGA, 40e9, "Colab", "NVIDIA A100 datasheet",
        aliases=("a100-sxm4-40gb", "a100 40gb", "a100 40gb sxm", "a100-sxm-40gb"),
        l2_bytes=40 * MIB, l2_source=_A100_L2, urls=(_A100_40_SHEET, _AMPERE_BLOG, _A100_TABLE),
        sms=108, compute_capability="8.0", sms_source=_A100_SMS,
        tensor_source=_A100_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA A100 40GB PCIe", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        1555 * GIGA, 40e9, "cloud", "NVIDIA A100 datasheet (A100 40GB PCIe column)",
        notes="Same published peaks and 1,555 GB/s as the 40GB SXM card; a lower power limit (250 W against 400 W).",
        aliases=("a100-pcie-40gb", "a100 pcie 40gb"),
        l2_bytes=40 * MIB, l2_source=_A100_L2, urls=(_A100_40_SHEET, _A100_TABLE),
        sms=108, compute_capability="8.0", sms_source=_A100_SMS,
        tensor_source=_A100_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA A100 80GB", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        2039 * GIGA, 80e9, "cloud", "NVIDIA A100 datasheet",
        aliases=("a100-sxm4-80gb", "a100 80gb", "a100-sxm-80gb", "a100 80gb sxm"),
        l2_bytes=40 * MIB, l2_source=_A100_L2, urls=(_A100_80_SHEET, _A100_TABLE),
        sms=108, compute_capability="8.0", sms_source=_A100_SMS,
        tensor_source=_A100_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA A100 80GB PCIe", "gpu",
        {"float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        1935 * GIGA, 80e9, "cloud", "NVIDIA A100 datasheet (A100 80GB PCIe column)",
        notes="Same published peaks as the SXM card; 1,935 GB/s against the SXM's 2,039 GB/s.",
        aliases=("a100-pcie-80gb", "a100 pcie 80gb"),
        l2_bytes=40 * MIB, l2_source=_A100_L2, urls=(_A100_80_SHEET, _A100_TABLE),
        sms=108, compute_capability="8.0", sms_source=_A100_SMS,
        tensor_source=_A100_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA H100 SXM", "gpu",
        {"float32": 67 * TERA, "tf32": 495 * TERA, "float16": 989 * TERA, "bfloat16": 989 * TERA},
        3350 * GIGA, 80e9, "Colab (limited), cloud", "NVIDIA H100 datasheet; jax-ml/scaling-book gpus.md",
        aliases=("h100 80gb hbm3", "h100 sxm", "h100 sxm5"),
        l2_bytes=50 * MIB, l2_source=_H100_L2, urls=(_H100_PAGE, _HOPPER_PAPER),
        sms=132, compute_capability="9.0", sms_source=_H100_SMS,
        tensor_source=_HOPPER_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA H100 PCIe", "gpu",
        {"float32": 51 * TERA, "tf32": 378 * TERA, "float16": 756.5 * TERA, "bfloat16": 756.5 * TERA},
        2000 * GIGA, 80e9, "cloud", "NVIDIA H100 datasheet (H100 PCIe column); NVIDIA H100 PCIe product brief",
        notes=("NVIDIA states TF32 756 and FP16/BF16 1,513 TFLOPS with sparsity; these are the dense halves. "
               "Memory bandwidth 2,000 GB/s (HBM2e), against 3,350 GB/s on the SXM card."),
        aliases=("h100 pcie", "h100 pcie 80gb"),
        l2_bytes=50 * MIB, l2_source=_H100_L2, urls=(_H100_TABLE, _H100_PCIE_BRIEF, _HOPPER_PAPER),
        tensor_source=_HOPPER_TENSOR,
    ),
    DeviceSpec(
        "NVIDIA H100 NVL", "gpu",
        _NVL_PEAKS,
        3900 * GIGA, 94e9, "cloud", "NVIDIA H100 datasheet (H100 NVL column, per GPU)",
        notes=(_NVL_DENSE +
               "Per GPU: 94 GB at 3.9 TB/s (a pair joined by NVLink bridges is sold together)."),
        aliases=("h100 nvl",),
        l2_source=_HOPPER_NO_L2.format(card="H100 NVL"), urls=(_H100_PAGE,),
        tensor_source=_WITH_THE_OTHERS,
    ),
    DeviceSpec(
        "NVIDIA H200", "gpu",
        {"float32": 67 * TERA, "tf32": 495 * TERA, "float16": 989 * TERA, "bfloat16": 989 * TERA},
        4800 * GIGA, 141e9, "cloud", "NVIDIA H200 datasheet", aliases=("h200", "h200 sxm"),
        l2_source=_HOPPER_NO_L2.format(card="H200"), urls=(_H200_PAGE,),
        sms=132, compute_capability="9.0", sms_source=_H200_SMS,
        tensor_source=(f"assumed as the H100 SXM's ({_HOPPER_TENSOR}): NVIDIA's H200 page ({_H200_PAGE}) prints "
                       "'1,979' TFLOPS for FP16 and BF16 'With sparsity', whose dense half is 989; no NVIDIA copy of "
                       "the page was read here"),
    ),
    DeviceSpec(
        "NVIDIA H200 NVL", "gpu",
        _NVL_PEAKS,
        4800 * GIGA, 141e9, "cloud", "NVIDIA H200 datasheet (H200 NVL column)",
        notes=(_NVL_DENSE +
               "Same 141 GB at 4.8 TB/s as the H200 SXM, lower peaks."),
        aliases=("h200 nvl",),
        l2_source=_HOPPER_NO_L2.format(card="H200 NVL"), urls=(_H200_PAGE,),
        tensor_source=_WITH_THE_OTHERS,
    ),
    DeviceSpec(
        "NVIDIA RTX A6000", "gpu", {"float32": 38.71 * TERA},
        768 * GIGA, 48e9, "workstations; Simon Boehm's SGEMM worklog",
        "third-party: sysrqmts.com's RTX A6000 column ('Desempeño FP32 (flotante) | 38.71 TFLOPS', 'Ancho de banda | "
        "768.0 GB/s', 'Conteo SM | 84', 'Caché L2 | 6 MB'); NVIDIA's datasheet was not read",
        notes="Only the float32 (CUDA-core) peak is on file: chapter 07's SGEMM ladder needs no other.",
        aliases=("rtx a6000", "a6000"),
        l2_bytes=6 * MIB, l2_source=f"'Caché L2 | 6 MB' (third-party, {_SYSRQMTS_A6000})",
        urls=(_SYSRQMTS_A6000,),
        sms=84, compute_capability="8.6",
        sms_source=(f"'Conteo SM | 84' (third-party, {_SYSRQMTS_A6000}); compute capability 8.6: the device query "
                    "Simon Boehm quotes, 'Compute Capability | 8.6' (https://siboehm.com/articles/22/CUDA-MMM)"),
    ),
    DeviceSpec(
        "NVIDIA GeForce RTX 3090", "gpu", {"float32": 35.6 * TERA},
        936 * GIGA, 24e9, "desktops; two published SGEMM worklogs",
        "third-party: Tom's Hardware's table as republished ('FP32 TFLOPS (Single-Precision)35.6', 'Bandwidth "
        "(GB/s)936', 'Streaming Multiprocessors82', 'L2 Cache6'); NVIDIA's GA102 whitepaper was not read",
        notes="Only the float32 (CUDA-core) peak is on file: chapter 07's SGEMM ladder needs no other.",
        aliases=("geforce rtx 3090", "rtx 3090"),
        l2_bytes=6 * MIB, l2_source=f"'L2 Cache6' [MB] (third-party, {_RTX3090_TABLE})",
        urls=(_RTX3090_TABLE,),
        sms=82, compute_capability="8.6",
        sms_source=(f"'Streaming Multiprocessors82' (third-party, {_RTX3090_TABLE}); compute capability 8.6 for the "
                    "GeForce 30 series (https://en.wikipedia.org/wiki/Ampere_(microarchitecture))"),
    ),
    DeviceSpec(
        "NVIDIA GeForce RTX 4090", "gpu",
        {"float32": 82.6 * TERA, "float16": 165.2 * TERA, "bfloat16": 165.2 * TERA, "float16_acc16": 330.3 * TERA},
        1008 * GIGA, 24e9, "desktops; a published WMMA worklog",
        "third-party: Tom's Hardware's table as republished ('Streaming Multiprocessors128', 'FP32 TFLOPS "
        "(Single-Precision)82.6', 'Bandwidth (GB/s)1008', 'L2 Cache72'); NVIDIA's Ada whitepaper was not read",
        notes="A GeForce card: float32 sums run at half the rate of fp16 sums on its tensor cores.",
        aliases=("geforce rtx 4090", "rtx 4090"),
        l2_bytes=72 * MIB, l2_source=f"'L2 Cache72' [MB] (third-party, {_RTX4090_TABLE})",
        urls=(_RTX4090_TABLE,),
        sms=128, compute_capability="8.9",
        sms_source=(f"'Streaming Multiprocessors128' (third-party, {_RTX4090_TABLE}); compute capability 8.9: the Ada "
                    "architecture's (NVIDIA's Ada tuning guide, https://docs.nvidia.com/cuda/ada-tuning-guide/)"),
        tensor_source=(f"NVIDIA's Ada whitepaper ({_ADA_PAPER}), Appendix A, GeForce RTX 4090: 'Peak FP16 Tensor "
                       "TFLOPS with FP16 Accumulate 330.3/660.6', 'Peak FP16 Tensor TFLOPS with FP32 Accumulate "
                       "165.2/330.4', 'Peak BF16 Tensor TFLOPS with FP32 Accumulate 165.2/330.4' (the second figure "
                       "with sparsity; read in third-party quotes, not the PDF); the same table republished: 'FP16 "
                       f"TFLOPS with Sparsity (FP8)661 (1321)' ({_RTX4090_TABLE})"),
    ),
    DeviceSpec(
        "NVIDIA V100 SXM2 32GB", "gpu", {"float32": 15.7 * TERA},
        900 * GIGA, 32e9, "cloud (older); a published SGEMM worklog",
        "FP32 'Peak FP32 GFLOPS: 15700' as the worklog's author states it (https://github.com/jhlee508/matmul-cuda); "
        "bandwidth 'from 900 GB/s on Volta V100' (NVIDIA's Ampere tuning guide, "
        "https://docs.nvidia.com/cuda/ampere-tuning-guide/); NVIDIA's V100 datasheet was not read",
        notes="Only the float32 (CUDA-core) peak is on file: chapter 07's SGEMM ladder needs no other.",
        aliases=("tesla v100-sxm2-32gb", "v100-sxm2-32gb", "v100 sxm2 32gb", "tesla v100 32gb", "v100 32gb"),
        l2_bytes=6 * MIB, l2_source=f"'a 6 MB L2 cache' (third-party, ORNL's Summit guide, {_SUMMIT_V100})",
        urls=(_SUMMIT_V100,),
        sms=80, compute_capability="7.0",
        sms_source=(f"'Each V100 contains 80 streaming multiprocessors (SMs)' (ORNL, {_SUMMIT_V100}); 'V100 ... "
                    f"Compute capability 7.0' (NVIDIA, {_HOPPER_BLOG})"),
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


_FORM_FACTOR = re.compile(r"(?:^|[\s-])(pcie|nvl|sxm)\d*(?=$|[\s-])")


def _forms(text: str) -> set[str]:
    """The board form factors a (normalised) name states: 'pcie', 'nvl', 'sxm'."""
    return set(_FORM_FACTOR.findall(text))


#: The longest device name looked up: real names are under 60 characters (a longer one is a mistake, not a GPU).
MAX_NAME = 200


def lookup(name: str | bytes) -> DeviceSpec | None:
    """The spec whose name or alias best matches a device name as CuPy or JAX reports it, else None.

    CuPy's getDeviceProperties(0)["name"] may be bytes (b"Tesla T4"); JAX's device_kind is a str, for a GPU the same
    string as CUDA's name. A name that states a form factor (PCIe, NVL, SXM) only matches a spec or alias stating
    the same one, so an "A100 80GB PCIe" never falls back to the SXM card's figures.

    >>> lookup("Tesla T4").name
    'NVIDIA T4'
    >>> lookup(b"NVIDIA A100 80GB PCIe").name
    'NVIDIA A100 80GB PCIe'
    >>> lookup("TPU v5 lite").name
    'TPU v5e'
    """
    if isinstance(name, bytes):
        name = name.decode("utf-8", errors="replace")
    if not isinstance(name, str) or not name.replace("\x00", "").strip() or len(name) > MAX_NAME:
        return None
    wanted = _norm(name.replace("\x00", ""))
    stated = _forms(wanted)
    best: tuple[int, DeviceSpec] | None = None
    for spec in ALL:
        for candidate in (spec.name, *spec.aliases):
            key = _norm(candidate)
            if not key or not stated <= _forms(key):
                continue
            if key == wanted or re.search(rf"(^|[\s-]){re.escape(key)}($|[\s-])", wanted):
                if best is None or len(key) > best[0]:
                    best = (len(key), spec)
    return best[1] if best else None


def named(name: str) -> DeviceSpec | None:
    """The spec whose name or alias is exactly `name` (case, spacing and NVIDIA's "NVIDIA"/"Tesla" apart), else
    None. For names a person types ("NVIDIA T4", "t4", "TPU v5e"): lookup() also finds a card inside a longer
    hardware name, so "definitely not a T4" would find the T4."""
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return None
    wanted = _norm(name)
    return next((spec for spec in ALL if wanted and wanted in {_norm(n) for n in (spec.name, *spec.aliases)}), None)


def get(name: str | bytes) -> DeviceSpec:
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
                             f"{_BANDWIDTHTEST_T4_A100})"),
    "NVIDIA L4": (20 * GIGA, "PCIe Gen4 x16: assumed as on A100 hosts; no published L4 measurement was found"),
    "NVIDIA A100 40GB": (20 * GIGA, "PCIe Gen4 x16: measured 12.3 to 26.3 GB/s on different hosts "
                                    "(https://github.com/router-gao/cuda-demo, https://github.com/jdh4/della-gpu-A100, "
                                    "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA A100 80GB": (20 * GIGA, "PCIe Gen4 x16: measured 12.3 to 26.3 GB/s on different hosts "
                                    "(https://github.com/router-gao/cuda-demo, https://github.com/jdh4/della-gpu-A100, "
                                    "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA A100 40GB PCIe": (20 * GIGA, "PCIe Gen4 x16, as on the other A100s: measured 12.3 to 26.3 GB/s on "
                                         "different A100 hosts (https://github.com/router-gao/cuda-demo, "
                                         "https://github.com/jdh4/della-gpu-A100, "
                                         "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA A100 80GB PCIe": (20 * GIGA, "PCIe Gen4 x16, as on the other A100s: measured 12.3 to 26.3 GB/s on "
                                         "different A100 hosts (https://github.com/router-gao/cuda-demo, "
                                         "https://github.com/jdh4/della-gpu-A100, "
                                         "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA H100 SXM": (45 * GIGA, "PCIe Gen5 x16: measured 35.2 to 52.8 GB/s (nvbandwidth, "
                                   "https://github.com/NVIDIA/nvbandwidth/issues/24, "
                                   "https://github.com/Azure/AI-benchmarking-guide)"),
    "NVIDIA H100 PCIe": (45 * GIGA, "PCIe Gen5 x16: assumed as for the H100 SXM (same link); no published H100 PCIe "
                                    "measurement was found"),
    "NVIDIA H100 NVL": (45 * GIGA, "PCIe Gen5 x16: assumed as for the H100 SXM (same link); no published H100 NVL "
                                   "measurement was found"),
    "NVIDIA H200": (45 * GIGA, "PCIe Gen5 x16: assumed as for the H100; no published H200 measurement was found"),
    "NVIDIA H200 NVL": (45 * GIGA, "PCIe Gen5 x16: assumed as for the H100; no published H200 NVL measurement was "
                                   "found"),
    "NVIDIA RTX A6000": (20 * GIGA, "PCIe Gen4 x16: assumed as on A100 hosts; no published RTX A6000 measurement was "
                                    "found"),
    "NVIDIA GeForce RTX 3090": (20 * GIGA, "PCIe Gen4 x16: assumed as on A100 hosts; no published RTX 3090 "
                                           "measurement was found"),
    "NVIDIA GeForce RTX 4090": (20 * GIGA, "PCIe Gen4 x16: assumed as on A100 hosts; no published RTX 4090 "
                                           "measurement was found"),
    "NVIDIA V100 SXM2 32GB": (11 * GIGA, "PCIe Gen3 x16: assumed as measured on a T4 (the same link); no published "
                                         "V100 measurement was found"),
    "TPU v5e": (15 * GIGA, "published spec, 1.5e10 to 1.6e10 bytes/s of PCIe per chip (https://github.com/jax-ml/"
                           "scaling-book); no published v5e measurement was found"),
}


def host_link(name: str | bytes) -> tuple[float, str] | None:
    """(bytes/s, source) of the host link of the device called `name`, or None when none is on file."""
    spec = lookup(name)
    return HOST_LINKS.get(spec.name) if spec else None


def stand_in_roof(kind: str, dtype: str, on_file: set[str] | list[str]) -> tuple[str, str] | None:
    """The roof that judges and predicts `dtype` arithmetic on a device of `kind` ('cpu', 'gpu', 'tpu') with no
    roof of its own for it: (roof name, why), or None. The one rule; hardware.peak and roofline both use it."""
    if kind == "tpu" and dtype in ("float16", "float32") and "bfloat16" in on_file:
        return "bfloat16", f"a TPU runs {dtype} matmuls through its bfloat16 matrix units (MXUs)"
    if kind in ("cpu", "gpu") and dtype in ("bfloat16", "float16") and "float32" in on_file:
        return "float32", (f"no {dtype} units on file: the numbers are converted and multiplied at the float32 "
                           "rate (bfloat16 cannot use float16 units: its exponent is wider)")
    return None


#: The most threads a block may have (every NVIDIA GPU since 2010).
MAX_BLOCK_THREADS = 1024
#: The shared memory a block may use without opting in (cudaFuncAttributeMaxDynamicSharedMemorySize): 48 KiB on
#: every GPU since Kepler (CUDA C++ Programming Guide, "Shared Memory"); static __shared__ arrays never more.
MAX_STATIC_SHARED = 48 * 1024


@dataclass(frozen=True)
class SMLimits:
    """What one SM of a compute capability holds at once and does per clock (SM_LIMITS_SOURCE)."""

    fp32_lanes: int  # float32 multiply-adds per clock (the guide's "results per clock cycle per multiprocessor")
    max_threads: int  # resident threads per SM
    max_blocks: int  # resident blocks per SM
    shared_bytes: int  # shared memory per SM, all resident blocks together (the largest carve-out)
    registers: int = 65536  # 32-bit registers per SM


KIB = 1024
#: Per compute capability (SM_LIMITS_SOURCE): resident warps (threads / 32), blocks, registers and shared memory per
#: SM from NVIDIA's tuning guide for each architecture; float32 cores per SM from the CUDA C++ Programming Guide.
SM_LIMITS: dict[str, SMLimits] = {
    "7.0": SMLimits(64, 2048, 32, 96 * KIB),
    "7.5": SMLimits(64, 1024, 16, 64 * KIB),
    "8.0": SMLimits(64, 2048, 32, 164 * KIB),
    "8.6": SMLimits(128, 1536, 16, 100 * KIB),
    "8.9": SMLimits(128, 1536, 24, 100 * KIB),
    "9.0": SMLimits(128, 2048, 32, 228 * KIB),
}
SM_LIMITS_SOURCE = (
    "NVIDIA's tuning guides, 'Occupancy': Volta (7.0: 'maximum number of concurrent warps per SM ... 64', 'thread "
    "blocks per SM is 32', 'Shared memory capacity per SM is 96KB'; https://docs.nvidia.com/cuda/volta-tuning-guide/), "
    "Turing (7.5: warps 32, blocks 16, 64KB; https://docs.nvidia.com/cuda/turing-tuning-guide/), Ampere (8.0: "
    "warps 64, blocks 32, 164 KB; 8.6: warps 48, blocks 16, 100 KB; https://docs.nvidia.com/cuda/ampere-tuning-guide/"
    "), Ada (8.9: warps 48, blocks 24, 100 KB; https://docs.nvidia.com/cuda/ada-tuning-guide/), Hopper (9.0: warps "
    "64, blocks 32, 228 KB; https://docs.nvidia.com/cuda/hopper-tuning-guide/), each with 'register file size is 64K "
    "32-bit registers per SM'; the CUDA C++ Programming Guide (https://docs.nvidia.com/cuda/cuda-c-programming-guide/"
    "): '64 FP32 cores' per SM for 7.x and 8.0, '128 FP32 cores in devices of compute capability 8.6, 8.7 and 8.9' "
    "and for 9.0. Read in verbatim copies of those pages (docs/research/sgemm-specs.md)")


def sm_limits(spec: DeviceSpec) -> SMLimits:
    """The per-SM limits of a GPU spec's compute capability; a ValueError when its SMs or capability are not on
    file (a TPU, or a GPU whose SM count no public source gives)."""
    if spec.kind != "gpu" or not spec.sms or spec.compute_capability not in SM_LIMITS:
        on_file = ", ".join(s.name for s in GPUS if s.sms and s.compute_capability in SM_LIMITS)
        raise ValueError(f"{spec.name}: no SM count and compute capability on file, so no per-SM model; GPUs with "
                         f"them: {on_file}")
    return SM_LIMITS[spec.compute_capability]
