"""The series' performance model, its public surface: how long work should take on a device, from its roofs and
the cost of each call.

    device time = max(FLOPs / (compute roof x efficiency), bytes / (bandwidth x efficiency)) + kernels x kernel floor
    one call    = host overhead + device time        (synced: the caller waits for every call)
                = max(host overhead, device time)    (pipelined: calls queue up, one wait at the end)

This module holds no code of its own: it names the model's public parts, as jax.numpy does over jax/_src. The code
lives in the parts of helpers.model (listed in its docstring); chapters, figures and the other helpers reach the
model here (h.roofline.X, `from ..model import roofline`), and the parts import one another, never this module.
Every constant says where it comes from. `docs/predictions.md` sets the model beside every published end-to-end
measurement on file (`helpers/data/published-measurements.json`); a test keeps each ratio within 2x.
"""

from __future__ import annotations

from .caches import CACHE_ASSUMPTIONS, WAVE_STEP, matmul_dram_bytes, matmul_wave
from .copies import MEMORIES, PAGEABLE_FRACTION, host_link, predict_copy_seconds
from .costs import (
    BOUNDS,
    DEFAULT_CALL,
    JAX_CALL,
    KERNEL_FLOOR,
    LOOP_STEP,
    MATMUL_EFFICIENCY,
    MEMORY_EFFICIENCY,
    NARROW_LOAD_EFFICIENCY,
    OVERHEADS,
    PROGRAM_KERNEL,
    TIMINGS,
    TPU_PIPELINED_LEAST,
    Cost,
)
from .decision import CALL_STYLES, DECIDE_DEVICES, TERMS, Decision, Estimate, decide
from .kernels import KernelTime, KernelWork, predict_kernel
from .matmuls import (
    DEFAULT_MXU_SIDE,
    ITEMSIZE,
    MATMUL_TILE,
    MXU_SIDE,
    PALLAS_GUIDE,
    PALLAS_STEP,
    matmul_wave_seconds,
    mxu_side,
    padded,
    pallas_steps,
    pallas_traffic,
    predict_matmul_seconds,
    predict_pallas_matmul_seconds,
    predict_range,
)
from .multiprocessor import (
    ARITHMETIC_LATENCY,
    DRAM_LATENCY,
    FP32_ISSUE_RATE,
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
from .roofs import Device, Roof, Roofs, attainable, held_share, peak_clock, published_spec, roofs, sm_clock
from .seconds import device_seconds, fixed_device_seconds, predict_seconds, roofline_seconds

__all__ = [
    "ARITHMETIC_LATENCY", "BOUNDS", "CACHE_ASSUMPTIONS", "CALL_STYLES", "Cost", "DECIDE_DEVICES", "DEFAULT_CALL",
    "DEFAULT_MXU_SIDE", "DRAM_LATENCY", "Decision", "Device", "Estimate", "FP32_ISSUE_RATE", "ITEMSIZE", "JAX_CALL",
    "KERNEL_FLOOR", "KernelTime", "KernelWork", "L1_LINES_PER_CLOCK", "LOOP_STEP", "MATMUL_EFFICIENCY", "MATMUL_TILE",
    "MEMORIES", "MEMORY_EFFICIENCY", "MXU_SIDE", "NARROW_LOAD_EFFICIENCY", "OVERHEADS", "Occupancy",
    "PAGEABLE_FRACTION", "PALLAS_GUIDE", "PALLAS_STEP", "PROGRAM_KERNEL", "Roof", "Roofs", "SCHEDULERS",
    "SHARED_PASSES_PER_CLOCK", "TERMS", "TIMINGS", "TPU_PIPELINED_LEAST", "WARP_FMA_FLOPS", "WAVE_STEP", "attainable",
    "decide", "device_seconds", "dram_latency", "fixed_device_seconds", "fp32_issue_rate", "held_share", "host_link",
    "matmul_dram_bytes", "matmul_wave", "matmul_wave_seconds", "mxu_side", "occupancy", "padded", "pallas_steps",
    "pallas_traffic", "peak_clock", "predict_copy_seconds", "predict_kernel", "predict_matmul_seconds",
    "predict_pallas_matmul_seconds", "predict_range", "predict_seconds", "published_spec", "roofline_seconds", "roofs",
    "sm_clock", "tensor_rate",
]
