"""A matmul's time: a library's (padded to a TPU's matrix units; in waves of tiles over a GPU's SMs) and a blocked
Pallas kernel's on a TPU, from its blocks' traffic and its grid's steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.validate import positive_int
from ..measuring import specs
from .arguments import _choice
from .costs import JAX_CALL, KERNEL_FLOOR, MATMUL_EFFICIENCY, Cost
from .roofs import Device, roofs
from .seconds import _calls, _combine, _compute_and_memory, _resolved, device_seconds, predict_seconds

#: The side of the matrix units XLA pads a TPU matmul to: 128 x 128 MXUs up to v5p, 256 x 256 on v6e.
MXU_SIDE = {"TPU v6e": 256}
DEFAULT_MXU_SIDE = 128


def mxu_side(device: Device) -> int:
    """The side of the device's matrix units (128, or 256 on a v6e); 1 for a device that pads nothing."""
    r = roofs(device)
    return MXU_SIDE.get(r.device, DEFAULT_MXU_SIDE) if r.kind == "tpu" else 1


def padded(size: int, side: int) -> int:
    """`size` rounded up to a multiple of `side`: the rows and columns a matrix unit really computes."""
    return -(-positive_int("size", size) // positive_int("side", side)) * side


#: Bytes per number of each dtype a matmul prediction takes ("tf32": float32 numbers on the TF32 roof).
ITEMSIZE = {"float64": 8, "float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2, "float16_acc16": 2, "int8": 1,
            "float8": 1}


def predict_matmul_seconds(device: Device, m: int, k: int, n: int, dtype: str = "bfloat16", *,
                           timed: str = "synced", bound: str = "upper", call_seconds: float | None = None) -> float:
    """One call of a jitted (m, k) @ (k, n) on `device`, as a learner times it end to end.

    On a TPU each side is padded to the MXU side (128, or 256 on v6e), and the padded work is what the MXUs do. On
    a GPU whose SM count is known, the output's tiles come in waves over the SMs (matmul_wave_seconds): a small
    product leaves SMs idle. dtype: the roof the arithmetic runs on ("float32" is full float32; pass "tf32" for
    JAX's default float32 precision on a GPU with TF32 tensor cores). Inputs and output are read and written once,
    in `dtype`'s size. bound: which end of a range, as predict_seconds. call_seconds: a call's cost measured on this
    host (helpers.measuring.host_calls), as predict_seconds.
    """
    m, k, n = (positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    device = _resolved(device)
    r, overhead = _calls(device, JAX_CALL.get(roofs(device).kind, "none"), timed, call_seconds)
    side = mxu_side(device)
    flops = 2 * padded(m, side) * padded(k, side) * padded(n, side)
    _choice("dtype", dtype, ITEMSIZE)
    itemsize = ITEMSIZE[dtype]
    nbytes = (m * k + k * n + m * n) * itemsize
    busy = max(device_seconds(device, flops=flops, bytes=nbytes, dtype=dtype, matmul=True),
               matmul_wave_seconds(device, m, k, n, dtype))
    return _combine(r, overhead, busy, timed, bound)


#: The side of the square tile of C one thread block of a library matmul computes (cuBLAS picks among several
#: sizes; 128 x 128 stands for them): a product whose tiles do not fill every SM waits on the ones that run.
MATMUL_TILE = Cost(128, "the side of the output tile one thread block of a library (cuBLAS) matmul computes",
                   "assumed, among the tile sizes NVIDIA's Matrix Multiplication Background User's Guide lists for "
                   "cuBLAS (section 2.3, https://docs.nvidia.com/deeplearning/performance/"
                   "dl-performance-matrix-multiplication/index.html); its section 3.2, wave quantization, is the rule")


def matmul_wave_seconds(device: Device, m: int, k: int, n: int, dtype: str) -> float:
    """A library matmul on a GPU as waves of MATMUL_TILE x MATMUL_TILE output tiles, one tile per SM at a time,
    each SM at its share of the peak (at MATMUL_EFFICIENCY), plus the kernel's floor; 0.0 where the SM count is
    not known (or for a CPU or a TPU). For a large product this is the roofline's own time, a few percent more."""
    if not isinstance(device, specs.DeviceSpec) or device.kind != "gpu" or not device.sms:
        return 0.0
    r, side = roofs(device), int(MATMUL_TILE.value)
    tiles = -(-m // side) * -(-n // side)
    waves = -(-tiles // device.sms)
    per_sm = r.roof(dtype).flops * MATMUL_EFFICIENCY["gpu"].value / device.sms
    return waves * 2 * side * side * k / per_sm + KERNEL_FLOOR["gpu"].value


def predict_range(predict: Callable[..., float], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """(lower, upper) seconds from `predict` (predict_seconds or predict_matmul_seconds) with these arguments:
    equal, except where the model has no single figure (a TPU's pipelined calls, TPU_PIPELINED_LEAST)."""
    if predict not in (predict_seconds, predict_matmul_seconds):
        raise ValueError(f"predict must be roofline.predict_seconds or roofline.predict_matmul_seconds; got "
                         f"{predict!r:.60}")
    return predict(*args, **kwargs, bound="lower"), predict(*args, **kwargs, bound="upper")


#: The guide every Pallas constant and check comes from: JAX's Pallas TPU matmul guide, its stored v5e outputs.
PALLAS_GUIDE = ("https://github.com/jax-ml/jax/blob/ee6cce5601fe1a81cec914bf50f3cbd9a72d69b1/docs/pallas/tpu/"
                "matmul.ipynb")
#: The cost of one step of a Pallas grid on a TPU, beyond its arithmetic and its HBM traffic: the pipeline's
#: bookkeeping, the DMA set-up of each block, the MXU filling and draining around a small block.
PALLAS_STEP = Cost(0.254e-6, "one step of a Pallas kernel's grid on a TPU, beyond its arithmetic and HBM traffic",
                   "fitted: JAX's Pallas TPU matmul guide times a 4096³ bf16 blocked matmul with 128 x 128 x 128 "
                   "blocks (32,768 grid steps) on a v5e at 11.77 ms end to end, of which the synced call, the "
                   "arithmetic and the HBM traffic the blocks cause account for 3.4 ms (" + PALLAS_GUIDE + "); no "
                   "published figure gives a step's cost, so the guide's other rows check it")


def pallas_traffic(m: int, k: int, n: int, bm: int, bk: int, bn: int, itemsize: int,
                   out_itemsize: int | None = None) -> float:
    """HBM bytes a blocked (m, k) @ (k, n) moves: each block of A is read once per column of output blocks (n / bn
    times), each block of B once per row (m / bm times), the output written once (the guide's own count)."""
    m, k, n, bm, bk, bn = (positive_int(name, v) for name, v in
                           (("m", m), ("k", k), ("n", n), ("bm", bm), ("bk", bk), ("bn", bn)))
    out = itemsize if out_itemsize is None else out_itemsize
    return (m * k * (n // bn) + k * n * (m // bm)) * itemsize + m * n * out


def pallas_steps(m: int, k: int, n: int, bm: int, bk: int, bn: int) -> int:
    """The grid's steps: (m / bm) x (n / bn) x (k / bk)."""
    return (m // bm) * (n // bn) * (k // bk)


def predict_pallas_matmul_seconds(device: Device, m: int, k: int, n: int, bm: int, bk: int, bn: int,
                                  dtype: str = "bfloat16", *, timed: str = "synced") -> float:
    """One call of a blocked Pallas matmul with (bm, bk) and (bk, bn) blocks on a TPU, as a learner times it.

    The arithmetic of each block, padded to the MXU side, at the matmul efficiency; the HBM traffic the blocks
    cause (pallas_traffic) at the memory efficiency; the larger of the two, plus PALLAS_STEP for each grid step,
    plus the call. The blocks must divide the matrix.
    """
    device = _resolved(device)
    r, overhead = _calls(device, JAX_CALL.get(roofs(device).kind, "none"), timed)
    if r.kind != "tpu":
        raise ValueError(f"device must be a TPU: a Pallas TPU kernel runs on a TPU; {r.device} is a "
                         f"{r.kind or 'device of unknown kind'}")
    for side, block in (("m", (m, bm)), ("k", (k, bk)), ("n", (n, bn))):
        if positive_int(side, block[0]) % positive_int(f"b{side}", block[1]):
            raise ValueError(f"b{side} = {block[1]} does not divide {side} = {block[0]}: the grid would leave the "
                             "last rows or columns out")
    _choice("dtype", dtype, ITEMSIZE)
    side = mxu_side(device)
    steps = pallas_steps(m, k, n, bm, bk, bn)
    flops = 2 * padded(bm, side) * padded(bk, side) * padded(bn, side) * steps
    compute, memory = _compute_and_memory(r, flops, pallas_traffic(m, k, n, bm, bk, bn, ITEMSIZE[dtype]), dtype,
                                          True)
    return _combine(r, overhead, max(compute, memory) + steps * PALLAS_STEP.value, timed)
