"""Chapter 03's asynchronous-launch trap, on whatever device JAX runs on: a size at which the work of one call
outlasts the queueing of one call there, and the verdict printed from the two clocks, whichever is larger.

    device, roof = h.asynchrony.jax_device()              # JAX's default device as the model knows it
    n = h.asynchrony.trap_size(device, roof, queueing)    # queueing: a tiny call's unsynced clock, measured here
    print(h.asynchrony.verdict(naive, queueing, synced))  # naive: the unsynced clock of the big call

Why a size from the model: on a T4 a 2,048 float32 matmul takes milliseconds, far longer than the queueing, so
the naive clock is far too small. On an H200 (2026-11-28) the same matmul took 72 µs while one call took 109 µs
to return, and the naive clock came out larger: the trap needs work that outlasts the queueing on the device
that is here.
"""

from __future__ import annotations

from typing import Any

from ..core.validate import positive_number
from ..measuring import specs
from ..measuring.cpu import CPUInfo, cpu_info
from ..measuring.hardware import jax_matmul_roof
from ..measuring.timing import Timing, format_seconds
from ..model import roofline

#: How many times a tiny call's queueing the model's time for the matmul must be: the naive clock is then off by
#: about this much or more, which no noise hides.
MARGIN = 20
#: The sizes tried, smallest first (an 8,192 float32 matmul holds 805 MB of arrays: a GPU's, not a small CPU's).
SIZES = (512, 1024, 2048, 4096, 8192)


def jax_device() -> tuple[CPUInfo | specs.DeviceSpec, str]:
    """JAX's default device as the model knows it: this CPU, or the published specs of its GPU or TPU (the reference
    T4 or v5e when its own are not on file), and the roof a float32 matmul runs on there (TF32 on a GPU that has
    it, at JAX's default precision)."""
    import jax

    found = jax.devices()[0]
    if found.platform == "cpu":
        return cpu_info(), "float32"
    reference = specs.REFERENCE_TPU if found.platform == "tpu" else specs.REFERENCE_GPU
    spec = specs.lookup(str(found.device_kind)) or specs.get(reference)
    return spec, jax_matmul_roof(spec, "float32")


def _fits(device: CPUInfo | specs.DeviceSpec, n: int) -> bool:
    """Whether three n x n float32 arrays take at most half of the device's memory (the CPU's: what is free)."""
    need = 3 * 4 * n * n
    if isinstance(device, specs.DeviceSpec):
        return 2 * need <= device.memory_bytes
    from ..core.validate import available_memory

    free = available_memory()
    return free is None or 2 * need <= free


def trap_size(device: CPUInfo | specs.DeviceSpec, roof: str, queueing: float) -> int:
    """The smallest of SIZES whose jitted float32 matmul the model times (device time alone) at MARGIN x `queueing`
    or more, among those that fit in the device's memory; the largest that fits when none is that long."""
    queueing = positive_number("queueing (seconds a tiny call takes to return)", queueing)
    fitting = [n for n in SIZES if _fits(device, n)] or [SIZES[0]]
    for n in fitting:
        if roofline.predict_matmul_seconds(device, n, n, n, roof, timed="kernel") >= MARGIN * queueing:
            return n
    return fitting[-1]


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def verdict(naive: float, queueing: float, synced: Timing) -> str:
    """What the two clocks say, from their numbers: the naive clock too small (and what it would claim taken at
    face value), or, where it came out no smaller, that queueing one call outlasted its work here."""
    naive, queueing = positive_number("naive (seconds)", naive), positive_number("queueing (seconds)", queueing)
    if not isinstance(synced, Timing):
        raise TypeError(f"synced must be h.benchmark's Timing; got {type(synced).__name__}")
    if naive >= synced.median:
        return (f"Here the naive clock came out {_times(naive / synced.median)} the synced time: queueing one call "
                f"({format_seconds(naive)}) took longer than its work, so the clock hid the trap. A bigger n shows "
                "it: the work grows as n³, the queueing does not.")
    text = (f"The naive number is {_times(synced.median / naive)} too small: it timed the queueing (a tiny call took "
            f"{format_seconds(queueing)} to return), not the work.")
    if synced.flops:
        rate = synced.flops / naive
        peak: Any = synced.peak.flops if synced.peak else None
        text += f" Taken at face value it would mean {rate / 1e9:,.0f} GFLOP/s" + (
            f", {rate / peak:.0%} of this device's peak." if peak else ".")
    return text


def rate_verdict(rate: float, peak: float | None) -> str:
    """What a rate from a clock read without waiting says (chapter 04): above the device's peak it is
    impossible; below it, it only looks possible. Either way it timed the dispatch."""
    rate = positive_number("rate (FLOP/s)", rate)
    if not peak:
        return "No peak is known here to judge the first rate by; it timed the dispatch all the same."
    peak = positive_number("peak (FLOP/s)", peak)
    if rate > peak:
        return (f"The first rate is {rate / peak:.0%} of the peak: impossible, so that clock was wrong. It timed the "
                "dispatch, not the matrix product.")
    return (f"The first rate is {rate / peak:.0%} of the peak: it looks possible, and it is still wrong. It timed "
            "the dispatch, not the matrix product.")
