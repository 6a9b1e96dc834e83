"""How exact a float32 matrix product is on the device that ran it, so a claim of agreement uses its tolerance.

At JAX's DEFAULT matmul precision a TPU rounds a float32 product's inputs to bfloat16 and makes one pass of its
matrix unit; a GPU with TF32 tensor cores (A100, H100, L4, ...) rounds them to TF32; a CPU, and a GPU without
TF32 (a T4), multiply float32 as float32. The same `np.allclose(..., atol=1e-6)` that holds on a CPU is False
on a TPU. JAX documents the levels: https://docs.jax.dev/en/latest/201/precision.html
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import specs
from .hardware import JAX_PRECISION_DOCS, jax_dot_roof, jax_level

#: float32's unit roundoff: the largest relative error of rounding to float32 (24-bit significands).
FLOAT32_UNIT = 2.0**-24


@dataclass(frozen=True)
class Rounding:
    """What a float32 product's inputs are rounded to before they are multiplied, and why, on one device.

    unit: the largest relative error that rounding makes in one input (2**-8 for bfloat16's 8-bit significands).
    """

    name: str
    unit: float
    why: str

    def tolerance(self, a: Any, b: Any) -> float:
        """The largest error a @ b can have here, against NumPy's float32 product: each input rounded (relative
        error `unit`, so a product 2u + u^2), and both sides' float32 sums of k terms (k * 2**-24 each),
        times the largest sum of |a| |b| (a bound, not an estimate: an error above it is a wrong answer)."""
        a64, b64 = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
        if a64.ndim != 2 or b64.ndim != 2 or a64.shape[1] != b64.shape[0]:
            raise ValueError(f"tolerance(a, b) takes the two matrices of a product a @ b; got shapes "
                             f"{a64.shape} and {b64.shape}")
        scale = float(np.max(a64 @ b64, initial=0.0))
        return (2 * self.unit + self.unit**2 + 2 * a64.shape[1] * FLOAT32_UNIT) * scale

    def __str__(self) -> str:
        return f"float32 products here: inputs rounded to {self.name} (up to {self.unit:.1e} of each), {self.why}"


FLOAT32 = Rounding("float32", FLOAT32_UNIT, "as NumPy does")
#: bfloat16 rounds to nearest, keeping 8 significant bits. One DEFAULT pass of a TPU's MXU.
BFLOAT16 = Rounding("bfloat16", 2.0**-8, "one pass of a TPU's bf16 matrix unit (JAX's DEFAULT precision there)")
#: TF32 keeps 11 significant bits; the unit allows for truncation (2**-10) as well as rounding (2**-11).
TF32 = Rounding("TF32", 2.0**-10, "on the GPU's TF32 tensor cores (JAX's DEFAULT and HIGH precisions)")
FLOAT16 = Rounding("float16", 2.0**-11, "on the GPU's float16 tensor cores (a dot algorithm asked for it)")
#: HIGH on a TPU: each input split into two bf16 pieces and three passes (bf16_3x), about 16 significant bits.
BFLOAT16_3X = Rounding("bfloat16 x 3", 2.0**-16, "three passes of the TPU's bf16 matrix unit (precision HIGH)")
TPU_HIGHEST = Rounding("float32", FLOAT32_UNIT, "six passes of the TPU's bf16 matrix unit (precision HIGHEST)")
#: A dot algorithm this page does not know the rounding of: judged as float8 (4 significant bits), the coarsest.
FLOAT8 = Rounding("float8", 2.0**-4, f"a dot algorithm judged as the coarsest JAX takes, see {JAX_PRECISION_DOCS}")
#: The rounding of each roof helpers.measuring.hardware.jax_dot_roof names.
_BY_ROOF = {"float32": FLOAT32, "float64": FLOAT32, "tf32": TF32, "bfloat16": BFLOAT16, "float16": FLOAT16}


def rounding(where: Any = None, precision: Any = "setting") -> Rounding:
    """The rounding of a float32 JAX matmul on the device of `where` (a JAX array or device; None: JAX's first
    device) at `precision` (a jax.lax.Precision or its name; 'setting': jax_default_matmul_precision now)."""
    import jax

    device = _device(where)
    if precision == "setting":
        precision = jax.config.jax_default_matmul_precision
    if device.platform == "cpu":
        return FLOAT32
    if device.platform == "tpu":
        level = jax.lax.Precision.DEFAULT if precision is None else jax_level(precision)
        if level is None:  # a dot algorithm: it names what the inputs are rounded to
            return _BY_ROOF.get(jax_dot_roof(precision), FLOAT8)
        return {jax.lax.Precision.HIGHEST: TPU_HIGHEST, jax.lax.Precision.HIGH: BFLOAT16_3X}.get(level, BFLOAT16)
    spec = specs.lookup(getattr(device, "device_kind", ""))
    if spec is None or not spec.peak_for("tf32"):
        return FLOAT32 if spec is not None else Rounding(
            "float32", FLOAT32_UNIT, f"assumed: no specs on file for {device.device_kind} (TF32 is not known)")
    return _BY_ROOF.get(jax_dot_roof(precision), FLOAT8)


def _device(where: Any) -> Any:
    """The JAX device of an array (its only device), a device itself, or JAX's first device."""
    import jax

    if where is None:
        return jax.devices()[0]
    devices = getattr(where, "devices", None)
    if callable(devices):  # an array
        found = devices()
        if len(found) == 1:
            return next(iter(found))
        raise ValueError(f"the array lives on {len(found)} devices: pass one of them")
    if hasattr(where, "platform") and hasattr(where, "device_kind"):  # a device
        return where
    raise TypeError(f"rounding() takes a JAX array or device (or None), got {type(where).__name__}")
