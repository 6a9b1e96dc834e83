"""A kernel from its counters (chapter 07): what one launch does, the passes each SM must make through its units,
and whether it holds enough warps to keep them busy. docs/predictions.md writes out the assumptions."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.validate import positive_int
from .arguments import _amount
from .costs import KERNEL_FLOOR, MEMORY_EFFICIENCY
from .multiprocessor import (
    ARITHMETIC_LATENCY,
    L1_LINES_PER_CLOCK,
    SCHEDULERS,
    SHARED_PASSES_PER_CLOCK,
    WARP_FMA_FLOPS,
    Occupancy,
    dram_latency,
    fp32_issue_rate,
    occupancy,
    tensor_rate,
)
from .roofs import Device, _gpu_spec, sm_clock


@dataclass(frozen=True)
class KernelWork:
    """What one launch of a kernel does, counted (chapter 07 counts it on the CPU executor and scales it up), and
    what the compiler made of it (registers; machine instructions beside the multiply-adds), where known."""

    flops: float
    shared_passes: float  # shared-memory wavefronts: requests times the passes each needs (bank conflicts)
    global_lines: float  # 128-byte lines the global requests touch (the L1's look-ups)
    requests: float  # global and shared load and store requests: each is one instruction a scheduler issues
    dram_bytes: float  # bytes that reach DRAM after the caches (matmul_dram_bytes: the cache model)
    threads_per_block: int
    shared_bytes_per_block: int
    sums_per_thread: int = 1  # independent chains of multiply-adds per thread (its outputs)
    registers_per_thread: int | None = None  # from the compiler (helpers.gpu.compiled); None: not counted
    #: Machine instructions the warps issue beside their multiply-adds (address arithmetic, loads, branches), from
    #: the compiler's machine code (helpers.gpu.compiled.Mix); None: only the source's requests are counted.
    other_instructions: float | None = None
    #: Times a block waits at a barrier for global loads it issued just before (a tile loop: once a step), summed
    #: over the launch's blocks, from the machine code (helpers.gpu.compiled.barrier_waits); 0: none counted.
    barrier_waits: float = 0.0
    #: FLOPs the tensor cores do (wmma::mma_sync; not in `flops`, the CUDA cores' share), and the roof they run at:
    #: "float16" (fp16 products, float32 sums), "float16_acc16" (fp16 sums) or "bfloat16".
    tensor_flops: float = 0.0
    tensor_dtype: str = "float16"


@dataclass(frozen=True)
class KernelTime:
    """A kernel's predicted time: each unit's share, the one that bounds it, and the occupancy behind it."""

    seconds: float
    terms: dict[str, float]
    occupancy: Occupancy
    hidden: float  # the share of arithmetic latency the resident warps hide (1.0: all of it)

    @property
    def bound(self) -> str:
        """The unit the kernel waits on: the largest term ("loads + issue" is named by the larger of its two)."""
        unit = max(self.terms, key=lambda k: self.terms[k])
        if unit == "loads + issue":
            return "L1 lines" if self.terms["L1 lines"] >= self.terms["arithmetic"] else "arithmetic"
        return unit


def predict_kernel(device: Device, work: KernelWork) -> KernelTime:
    """Seconds one launch of a kernel takes on the GPU `device` (a published spec), from what it does.

    Each SM's units work side by side, so the slowest sets the time, at the SM clock the card holds (sm_clock):
    - arithmetic: the schedulers (SCHEDULERS, one instruction each per clock). A warp's FFMA takes the float32
      pipe 128 / (lanes per SM) clocks, stretched by the share of slots real code fills (FP32_ISSUE_RATE); every
      other machine instruction (work.other_instructions, from the compiler) takes a slot of its own, fitted into
      the free clocks a 64-lane SM leaves between FFMAs, added on a 128-lane one, which leaves none;
    - shared memory, one pass per clock; the L1, one 128-byte line per clock; DRAM at MEMORY_EFFICIENCY;
    - loads + issue: a kernel that multiplies what it just loaded (no reuse in registers or shared memory) waits
      for its loads before it can issue on, so its L1 time and its arithmetic add.
    Too few warps to cover ARITHMETIC_LATENCY stretch the arithmetic.
    - tensor cores (work.tensor_flops): at the published dense peak for work.tensor_dtype (tensor_rate), at the
      held clock's share; they work beside the other units, so a tensor-core kernel whose loads are slower waits on
      its loads.
    A tile loop (work.barrier_waits) adds what no unit overlaps: its blocks start together and wait at each step's
    barrier for that step's tiles, so every step of every wave of resident blocks waits one DRAM_LATENCY ("barrier
    waits"); and where an SM holds a single block, nothing computes while its tiles stream in, so the DRAM time adds
    to the slowest unit's instead of hiding under it. Plus the kernel's floor.
    """
    if not isinstance(work, KernelWork):
        raise TypeError(f"work must be a roofline.KernelWork; got {type(work).__name__}")
    spec, sm = _gpu_spec(device)
    occ = occupancy(spec, work.threads_per_block, work.shared_bytes_per_block, work.registers_per_thread)
    clocks = spec.sms * sm_clock(spec)  # type: ignore[operator]
    needed = SCHEDULERS.value * ARITHMETIC_LATENCY.value
    hidden = min(1.0, occ.warps_per_sm * positive_int("sums_per_thread", work.sums_per_thread) / needed)
    fmas = _amount("flops", work.flops) / WARP_FMA_FLOPS
    other = _amount("requests", work.requests) if work.other_instructions is None else _amount(
        "other_instructions", work.other_instructions)
    pipe = SCHEDULERS.value * 32 / sm.fp32_lanes  # clocks a scheduler's float32 pipe takes per warp FFMA
    slots = fmas * pipe / fp32_issue_rate(spec).value + max(0.0, other - fmas * (pipe - 1))
    arithmetic = slots / (SCHEDULERS.value * clocks) / hidden
    lines = _amount("global_lines", work.global_lines) / (L1_LINES_PER_CLOCK.value * clocks)
    terms = {
        "arithmetic": arithmetic,
        "shared memory": _amount("shared_passes", work.shared_passes) / (SHARED_PASSES_PER_CLOCK.value * clocks),
        "L1 lines": lines,
        "loads + issue": lines + arithmetic if work.shared_passes == 0 else 0.0,
        "DRAM": _amount("dram_bytes", work.dram_bytes) / (spec.peak_bandwidth * MEMORY_EFFICIENCY["gpu"].value),
    }
    if work.tensor_flops:
        terms["tensor cores"] = _amount("tensor_flops", work.tensor_flops) / tensor_rate(spec, work.tensor_dtype)
    waits = _amount("barrier_waits", work.barrier_waits)
    terms["barrier waits"] = waits / (occ.blocks_per_sm * spec.sms) * dram_latency(spec).value if waits else 0.0
    alone = bool(waits) and occ.blocks_per_sm == 1  # one block an SM: its tiles' transfer is not overlapped
    busy = max(v for k, v in terms.items() if k != "barrier waits" and not (alone and k == "DRAM"))
    seconds = busy + terms["barrier waits"] + (terms["DRAM"] if alone else 0.0)
    return KernelTime(seconds + KERNEL_FLOOR["gpu"].value, terms, occ, hidden)
