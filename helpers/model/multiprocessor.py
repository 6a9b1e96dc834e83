"""One SM of a GPU, as chapter 07's kernel model sees it: its units' rates and latencies (each constant with its
source), how many blocks it holds at once (occupancy), and the rates looked up by compute capability."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.validate import positive_int
from ..measuring import specs
from .costs import Cost
from .roofs import Device, _gpu_spec, held_share

_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/"
#: Warp schedulers per SM: each issues one instruction of one warp per clock.
SCHEDULERS = Cost(4, "warp schedulers per SM, each issuing one warp instruction per clock",
                  f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Multiprocessor Level': '16 active warps per "
                  "multiprocessor (4 cycles, 4 warp schedulers)'; NVIDIA's Volta tuning guide: 'Each Volta SM includes "
                  "4 warp-scheduler units'")
#: Clocks before an arithmetic result can be used: a warp with one chain of multiply-adds waits this long each.
ARITHMETIC_LATENCY = Cost(4, "clocks from one arithmetic instruction to the next that needs its result",
                          f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Multiprocessor Level': 'On devices of "
                          "compute capability 7.x, for most arithmetic instructions, it is typically 4 clock cycles. "
                          "This means that 16 active warps per multiprocessor (4 cycles, 4 warp schedulers) are "
                          "required to hide arithmetic instruction latencies'")
#: Shared-memory passes (wavefronts) one SM serves per clock: 32 banks, 32 bits each.
SHARED_PASSES_PER_CLOCK = Cost(1, "shared-memory passes served per clock per SM (32 banks x 32 bits)",
                               f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Shared Memory' (5.x, and 7.x "
                               "'behaves the same way'): 'Shared memory has 32 banks ... Each bank has a bandwidth of "
                               "32 bits per clock cycle'")
#: 128-byte lines the L1 cache looks up per clock per SM: a request touching 32 lines takes 32 clocks.
L1_LINES_PER_CLOCK = Cost(1, "128-byte lines an SM's L1 cache looks up per clock",
                          "NVIDIA's Nsight Compute Kernel Profiling Guide (https://docs.nvidia.com/nsight-compute/"
                          "ProfilingGuide/): 'there is a notion of processing one wavefront per cycle in L1TEX', and "
                          "'If not all cache lines or sectors can be accessed in a single wavefront, multiple "
                          "wavefronts are created'; assumed: one 128-byte line per wavefront (no NVIDIA document found "
                          "says how many lines one wavefront holds)")
#: The share of an SM's float32 multiply-add slots a compiler-scheduled kernel fills, by compute capability: the
#: fastest hand-written float32 kernel on file for that architecture that is not a rung of chapter 07 (so no rung
#: is checked against the row that set it), over its peak at its clock. A 64-lane SM (7.x) starts a warp's FFMA every
#: other clock, a 128-lane one (8.6, 9.0) every clock, with no slot to spare for a stall.
FP32_ISSUE_RATE: dict[str, Cost] = {
    "7.0": Cost(0.865, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 64-lane SM (Volta)",
                "fitted, not checked against: a V100's fastest hand-written kernel on file, not a rung (A kept "
                "row-major in shared memory), 13,583.9 of 15,700 GFLOP/s (https://github.com/jhlee508/matmul-cuda)"),
    "7.5": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a T4 (Turing)",
                "assumed: the lower of the two rates on file (8.6's), so a hand-written rung is not predicted past "
                "cuBLAS on the power-capped T4. Left out, too weak to set it: a T4 kernel at 4,779.9 GFLOP/s (n = "
                "2,048, 128 x 128 tiles, https://github.com/aaron-ang/cuda-sgemm/blob/"
                "06d7a1cfecf366e8788e3b235018e5dacee99f65/docs/report/report.tex) names no clock, and beats the T4 "
                "cuBLAS rows on file, so its share of the held clock's peak (0.79) cannot be told from a higher "
                "clock"),
    "8.0": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on an A100",
                "assumed as for 8.6: no hand-written A100 kernel on file"),
    "8.6": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 128-lane SM whose "
                "half shares its path with integer instructions (GA102)",
                "fitted, not checked against: the fastest hand-written kernels on file, both warp-tiled (no rung): "
                "21,779.3 GFLOP/s on an RTX A6000, 56% of 38.71 TFLOP/s (https://github.com/siboehm/SGEMM_CUDA), "
                "and 20.1649 TFLOP/s on an RTX 3090, 57% of 35.6 (https://github.com/leimao/CUDA-GEMM-Optimization)"),
    "8.9": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on Ada",
                "assumed as for 8.6 (the same 128 lanes per SM): no hand-written Ada kernel on file"),
    "9.0": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 128-lane Hopper SM",
                "assumed as for 8.6 (128 lanes per SM, a warp FFMA every clock): no hand-written H100 or H200 kernel "
                "outside chapter 07's rungs on file"),
}
#: FLOPs a warp's multiply-add instruction does: 32 lanes, a multiply and an add each.
WARP_FMA_FLOPS = 64

_LATENCY = ("https://github.com/te42kyfo/gpu-benches/blob/1c36d509ee717dca9215c27135fa1e611bb03ed1/gpu-latency/"
            "{file}: one warp chasing pointers through a 1.5 GB buffer (the last row), {cycles} cycles at {mhz} MHz")
#: How long a load that misses the caches takes to come back from DRAM, by compute capability: te42kyfo's
#: gpu-latency rows (pointer chasing, the largest buffer), cycles over the clock they were counted at. A tile loop
#: waits this long at its barrier once a step (predict_kernel).
DRAM_LATENCY: dict[str, Cost] = {
    "7.0": Cost(437.0 / 1380e6, "seconds a load that misses the caches takes (V100)",
                _LATENCY.format(file="v100.txt", cycles="437.0", mhz="1,380")),
    "7.5": Cost(437.0 / 1380e6, "seconds a load that misses the caches takes (T4)",
                "assumed as for 7.0: no T4 row on file; Turing's memory hierarchy has Volta's depth (Jia et al., "
                "https://arxiv.org/abs/1903.07486)"),
    "8.0": Cost(574.6 / 1410e6, "seconds a load that misses the caches takes (A100)",
                _LATENCY.format(file="a100_40.txt", cycles="574.6", mhz="1,410")),
    "8.6": Cost(574.6 / 1410e6, "seconds a load that misses the caches takes (GA102: RTX 30, RTX A6000)",
                "assumed as for 8.0 (Ampere, the A100's row): no GA102 row on file"),
    "8.9": Cost(631.9 / 2490e6, "seconds a load that misses the caches takes (Ada)",
                _LATENCY.format(file="l40.txt", cycles="631.9", mhz="2,490")),
    "9.0": Cost(658.4 / 1755e6, "seconds a load that misses the caches takes (Hopper)",
                _LATENCY.format(file="h100_pcie.txt", cycles="658.4", mhz="1,755") + "; the H200 assumed as the H100"),
}


@dataclass(frozen=True)
class Occupancy:
    """How many of a kernel's blocks one SM holds at once, and what stops it holding more."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps: int
    limited_by: str  # "threads", "blocks", "shared memory" or "registers"

    @property
    def fraction(self) -> float:
        """Resident warps over the most the SM can hold: 1.0 is full occupancy."""
        return self.warps_per_sm / self.max_warps


def occupancy(device: Device, threads_per_block: int, shared_bytes_per_block: int = 0,
              registers_per_thread: int | None = None) -> Occupancy:
    """Blocks of this size one SM of `device` holds at once (its threads, blocks, shared memory and, where given,
    registers limit it); a ValueError when one block cannot run at all."""
    spec, sm = _gpu_spec(device)
    threads = positive_int("threads_per_block", threads_per_block)
    shared = 0 if shared_bytes_per_block == 0 else positive_int("shared_bytes_per_block", shared_bytes_per_block)
    if threads > specs.MAX_BLOCK_THREADS:
        raise ValueError(f"{threads:,} threads per block: a block holds at most {specs.MAX_BLOCK_THREADS:,}")
    if shared > specs.MAX_STATIC_SHARED:
        raise ValueError(f"{shared:,} bytes of shared memory per block: a block's __shared__ arrays may hold at "
                         f"most {specs.MAX_STATIC_SHARED:,} bytes (48 KiB)")
    warps = -(-threads // 32)
    limits = {"threads": sm.max_threads // (warps * 32), "blocks": sm.max_blocks}
    if shared:
        limits["shared memory"] = sm.shared_bytes // shared
    if registers_per_thread:
        limits["registers"] = sm.registers // (positive_int("registers_per_thread", registers_per_thread) * warps * 32)
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = limits[limited_by]
    if blocks == 0:
        raise ValueError(f"one block of {threads:,} threads does not fit on an SM of the {spec.name}: "
                         f"{limited_by} run out")
    return Occupancy(blocks, blocks * warps, sm.max_threads // 32, limited_by)


def _by_capability(table: dict[str, Cost], device: Device, what: str) -> Cost:
    """The entry of `table` for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    spec, _ = _gpu_spec(device)
    if spec.compute_capability not in table:
        raise ValueError(f"{spec.name}: no {what} for compute capability {spec.compute_capability}; on file: "
                         f"{', '.join(table)}")
    return table[spec.compute_capability]  # type: ignore[index]


def dram_latency(device: Device) -> Cost:
    """DRAM_LATENCY for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    return _by_capability(DRAM_LATENCY, device, "DRAM latency")


def tensor_rate(device: Device, dtype: str = "float16") -> float:
    """FLOP/s the tensor cores of the GPU `device` do in `dtype` (its published dense peak: fp16 products with
    float32 sums for "float16", fp16 sums for "float16_acc16" where a card publishes that apart, else the
    float16 rate), at the share of its clock the card holds (held_share); a ValueError naming the roofs on file
    when it has none."""
    spec, _ = _gpu_spec(device)
    key = "float16" if dtype == "float16_acc16" and dtype not in spec.peak_flops else dtype
    if key not in ("float16", "float16_acc16", "bfloat16") or key not in spec.peak_flops:
        raise ValueError(f"{spec.name}: no tensor-core roof for dtype {dtype!r:.40} on file (its roofs: "
                         f"{', '.join(spec.peak_flops)}); tensor kernels run 'float16', 'float16_acc16' or 'bfloat16'")
    return spec.peak_flops[key] * held_share(spec)


def fp32_issue_rate(device: Device) -> Cost:
    """FP32_ISSUE_RATE for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    return _by_capability(FP32_ISSUE_RATE, device, "float32 issue rate")
