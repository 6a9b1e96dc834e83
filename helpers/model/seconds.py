"""Seconds for work on a device: the roofs at the efficiency real code reaches, each kernel's fixed cost, and each
call's cost to the host, synced or pipelined."""

from __future__ import annotations

from ..core.validate import flag, positive_int
from .arguments import _amount, _choice, _count
from .costs import (
    BOUNDS,
    DEFAULT_CALL,
    KERNEL_FLOOR,
    LOOP_STEP,
    MATMUL_EFFICIENCY,
    MEMORY_EFFICIENCY,
    NARROW_LOAD_EFFICIENCY,
    OVERHEADS,
    PROGRAM_KERNEL,
    TIMINGS,
    TPU_PIPELINED_LEAST,
    _constant,
)
from .roofs import Device, Roofs, published_spec, roofs


def roofline_seconds(device: Device, *, flops: float, bytes: float, dtype: str = "float32") -> float:  # noqa: A002
    """What the roofline alone says: max(flops / peak, bytes / bandwidth); no efficiency, no cost of a call."""
    r = roofs(device)
    flops, nbytes = _amount("flops", flops), _amount("bytes", bytes)
    return max(flops / r.roof(dtype).flops, nbytes / r.bandwidth)


def device_seconds(device: Device, *, flops: float, bytes: float, dtype: str | None = "float32",  # noqa: A002
                   kernels: int = 1, matmul: bool = False, program: bool = False, loop_steps: int = 0,
                   narrow: bool = False) -> float:
    """Seconds the device itself is busy: the roofs at the efficiency real code reaches, plus each kernel's floor.

    matmul: whether the arithmetic is a matrix product (its efficiency is MATMUL_EFFICIENCY); otherwise the
    arithmetic is elementwise and the memory side is what decides. program: the kernels belong to one compiled
    program (a jitted call: PROGRAM_KERNEL each), rather than launched one by one (KERNEL_FLOOR each). loop_steps:
    iterations of a compiled loop among them (LOOP_STEP each, its first kernel included). narrow: the kernels keep
    one 4-byte number a thread in flight, as CuPy's elementwise kernels do (NARROW_LOAD_EFFICIENCY).
    """
    r = roofs(device)
    flops, nbytes = _amount("flops", flops), _amount("bytes", bytes)
    kernels, matmul = positive_int("kernels", kernels), flag("matmul", matmul)
    return max(_compute_and_memory(r, flops, nbytes, dtype, matmul, flag("narrow", narrow))) + fixed_device_seconds(
        r.kind, kernels, flag("program", program), loop_steps)


def fixed_device_seconds(kind: str, kernels: int, program: bool = False, loop_steps: int = 0) -> float:
    """The device's fixed costs of `kernels` kernels on a device of `kind`, however small their work: each a
    KERNEL_FLOOR, or a PROGRAM_KERNEL inside one compiled program; `loop_steps` of them start an iteration of a
    compiled loop instead (LOOP_STEP, its first kernel included)."""
    loop_steps = _count("loop_steps", loop_steps)
    if loop_steps > kernels:
        raise ValueError(f"loop_steps ({loop_steps:,}) cannot exceed kernels ({kernels:,}): each iteration runs at "
                         "least one kernel")
    each = _constant(PROGRAM_KERNEL if program or loop_steps else KERNEL_FLOOR, kind, 0.0)
    return loop_steps * _constant(LOOP_STEP, kind, 0.0) + (kernels - loop_steps) * each


def _compute_and_memory(r: Roofs, flops: float, nbytes: float, dtype: str | None, matmul: bool,
                        narrow: bool = False) -> tuple[float, float]:
    """(seconds of arithmetic, seconds of memory traffic) at the efficiency real code reaches on these roofs;
    narrow: the kernel keeps one 4-byte number a thread in flight (NARROW_LOAD_EFFICIENCY, where published)."""
    rate = r.roof(dtype).flops * (_constant(MATMUL_EFFICIENCY, r.kind, 1.0) if matmul else 1.0) * r.held_share
    if matmul and r.blas_flops and dtype in (None, "float32"):  # a CPU: its BLAS may not reach the roof
        rate = min(rate, r.blas_flops)
    compute = flops / rate
    efficiency = _constant(MEMORY_EFFICIENCY, r.kind, 1.0)
    if narrow and r.device in NARROW_LOAD_EFFICIENCY:
        efficiency = NARROW_LOAD_EFFICIENCY[r.device].value
    return compute, nbytes / (r.bandwidth * efficiency)


def _calls(device: Device, call: str | None, timed: str, call_seconds: float | None = None) -> tuple[Roofs, float]:
    """The device's roofs and the host's cost of one call of kind `call` (measured here, when `call_seconds`)."""
    r = roofs(device)
    timed = _choice("timed", timed, TIMINGS)
    chosen = DEFAULT_CALL.get(r.kind, "none") if call is None else _choice("call", call, OVERHEADS)
    cost = OVERHEADS[chosen].value if call_seconds is None else _amount("call_seconds", call_seconds)
    return r, 0.0 if timed == "kernel" else cost


def _combine(r: Roofs, overhead: float, device: float, timed: str, bound: str = "upper") -> float:
    if timed == "pipelined" and r.kind != "tpu":
        return max(overhead, device)
    if timed == "pipelined" and _choice("bound", bound, BOUNDS) == "lower":  # a TPU: see TPU_PIPELINED_LEAST
        return max(TPU_PIPELINED_LEAST.value, device)
    return overhead + device


def predict_seconds(device: Device, *, flops: float, bytes: float, dtype: str | None = "float32",  # noqa: A002
                    calls: int = 1, call: str | None = None, kernels: int = 1, timed: str = "synced",
                    matmul: bool = False, bound: str = "upper", loop_steps: int = 0,
                    call_seconds: float | None = None, narrow: bool = False) -> float:
    """Seconds for work split over `calls` separate calls: device time plus each call's host overhead.

    flops, bytes: the work of all the calls together. call: the kind of call (a key of OVERHEADS; None: the
    device's usual one, DEFAULT_CALL); a jitted JAX call runs its kernels as one program (PROGRAM_KERNEL each).
    kernels: device kernels per call (XLA fuses a jitted step into a few). loop_steps: iterations of a compiled
    loop per call (jax.lax.scan: LOOP_STEP each). timed: "synced", "pipelined" or "kernel" (TIMINGS). dtype None:
    the highest roof (for work without FLOPs). bound: which end of a range (BOUNDS; a TPU's pipelined calls have
    one, TPU_PIPELINED_LEAST). call_seconds: the host's cost of one call measured on this machine
    (helpers.measuring.host_calls), for the device that is here; None: the published figure, OVERHEADS[call]. narrow:
    CuPy's own elementwise kernels, one 4-byte number a thread (NARROW_LOAD_EFFICIENCY).
    """
    calls = positive_int("calls", calls)
    r, overhead = _calls(device, call, timed, call_seconds)
    program = call is not None and call.startswith("jax")
    per_call = device_seconds(_resolved(device), flops=_amount("flops", flops) / calls,
                              bytes=_amount("bytes", bytes) / calls, dtype=dtype, kernels=kernels, matmul=matmul,
                              program=program, loop_steps=loop_steps, narrow=narrow)
    return calls * _combine(r, overhead, per_call, timed, bound)


def _resolved(device: Device) -> Device:
    """`device` itself, with a spec name looked up once."""
    return published_spec(device) if isinstance(device, str) else device
