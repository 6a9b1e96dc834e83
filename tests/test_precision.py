"""helpers.measuring.precision: a claim of agreement takes the tolerance of the rounding in effect where the product
ran.

No TPU or TF32 GPU here, so the tests build the condition they create: a matmul that rounds its inputs to
bfloat16 (a TPU at JAX's DEFAULT precision) or truncates them to TF32 (an A100, H100 or L4), and JAX's
device reported as such a chip.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import jax
import ml_dtypes
import numpy as np
import pytest

import helpers as h
from helpers.measuring import precision

ROOT = Path(__file__).resolve().parents[1]


def as_tpu(x: np.ndarray) -> np.ndarray:
    """Inputs as one DEFAULT pass of a TPU's MXU takes them: rounded to the nearest bfloat16."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def as_tf32(x: np.ndarray) -> np.ndarray:
    """Inputs as TF32 tensor cores may take them: the float32 significand truncated to 10 stored bits."""
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


def device(platform: str, kind: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(platform=platform, device_kind=kind)


@pytest.mark.parametrize(("where", "setting", "expected"), [
    (device("tpu", "TPU v5 lite"), None, precision.BFLOAT16),
    (device("tpu", "TPU v5 lite"), "high", precision.BFLOAT16_3X),
    (device("tpu", "TPU v5 lite"), "highest", precision.TPU_HIGHEST),
    (device("gpu", "NVIDIA H100 80GB HBM3"), None, precision.TF32),
    (device("gpu", "NVIDIA H100 80GB HBM3"), "highest", precision.FLOAT32),
    (device("gpu", "NVIDIA H100 80GB HBM3"), "BF16_BF16_F32", precision.BFLOAT16),
    (device("gpu", "Tesla T4"), None, precision.FLOAT32),  # no TF32 units
    (device("cpu", "cpu"), None, precision.FLOAT32),
])
def test_the_rounding_is_the_one_in_effect_on_the_device(where, setting, expected) -> None:
    assert precision.rounding(where, setting) == expected


def test_the_rounding_follows_jaxs_setting_and_finds_an_arrays_device() -> None:
    tpu = device("tpu", "TPU v5 lite")
    with jax.default_matmul_precision("highest"):
        assert precision.rounding(tpu).unit == precision.FLOAT32_UNIT
    assert precision.rounding(tpu) == precision.BFLOAT16
    assert precision.rounding(jax.numpy.ones(3)) == precision.FLOAT32  # this machine's CPU
    with pytest.raises(TypeError, match="JAX array or device"):
        precision.rounding(np.ones(3))
    with pytest.raises(ValueError, match="a @ b"):
        precision.FLOAT32.tolerance(np.ones((2, 3)), np.ones((2, 3)))


@pytest.mark.parametrize(("rounding", "round_inputs"), [(precision.BFLOAT16, as_tpu), (precision.TF32, as_tf32)])
def test_the_tolerance_bounds_the_rounded_product_and_a_fixed_one_does_not(rounding, round_inputs) -> None:
    rng = np.random.default_rng(0)
    exceeded_1e6 = 0
    for k in (1, 3, 17, 256, 1024):
        a = rng.standard_normal((8, k), dtype=np.float32)
        b = rng.uniform(-1, 3, (k, 5)).astype(np.float32)  # not centred: sums grow with k
        by_device = round_inputs(a) @ round_inputs(b)
        error = np.max(np.abs(by_device.astype(np.float64) - (a @ b)))
        assert error <= rounding.tolerance(a, b), (k, error, rounding.tolerance(a, b))
        exceeded_1e6 += not np.allclose(by_device, a @ b, atol=1e-6)
    assert exceeded_1e6 == 5, "the old fixed tolerance fails on this device: the condition the fix is for"


def test_a_wrong_product_is_outside_the_tolerance_even_of_bfloat16() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 16), dtype=np.float32)
    tolerance = precision.BFLOAT16.tolerance(a, b)  # a bound: it grows with k, so a 1% error hides at large k
    for wrong in (a[:, :-1] @ b[:-1], a @ b * 1.05, a @ np.roll(b, 1, axis=1), (a @ b).T):  # off-by-one, formula
        assert not np.allclose(wrong, a @ b, rtol=0, atol=tolerance)


# ---------------------------------------------------------------- chapter 04's claim, on a stand-in TPU

class TpuArray(np.ndarray):
    """An 'array on a TPU': a float32 product rounds its inputs to bfloat16, as DEFAULT precision does there."""

    products = 0

    def __matmul__(self, other):
        TpuArray.products += 1
        return (as_tpu(np.asarray(self)) @ as_tpu(np.asarray(other))).view(TpuArray)


def _chapter_04_layer_cells() -> str:
    cells = json.loads((ROOT / "notebooks" / "04_tpu_jax.ipynb").read_text())["cells"]
    start = next(i for i, c in enumerate(cells) if "def layer(" in "".join(c["source"]))
    claim = next(i for i in range(start, len(cells)) if "JAX and NumPy agree" in "".join(cells[i]["source"]))
    return "\n".join("".join(c["source"]) for c in cells[start:claim + 1] if c["cell_type"] == "code")


@pytest.mark.parametrize(("body", "holds"), [
    ("", True),
    ("def layer(x, weights):\n    return jnp.tanh(x[:, :-1] @ weights[:-1])\n", False),  # one term short
    ("def layer(x, weights):\n    return x @ weights\n", False),  # tanh forgotten
])
def test_chapter_04s_agreement_claim_runs_jax_and_holds_on_a_tpu_only_for_the_right_layer(
        body, holds, monkeypatch, capsys) -> None:
    code = _chapter_04_layer_cells()
    if body:
        code = code.replace("by_numpy = ", body + "by_numpy = ", 1)
    stand_in = types.SimpleNamespace(asarray=lambda x: np.asarray(x, np.float32).view(TpuArray), tanh=np.tanh)
    monkeypatch.setattr(precision, "rounding", lambda where=None, setting="setting": precision.BFLOAT16)
    TpuArray.products = 0
    exec(compile(code, "chapter 04", "exec"), {"np": np, "jnp": stand_in, "h": h})
    assert TpuArray.products == 1, "the layer's product must run on JAX's device, not in NumPy"
    claims = [line for line in capsys.readouterr().out.splitlines() if "JAX and NumPy agree" in line]
    assert claims == [f"JAX and NumPy agree, to the rounding of this device's products: {holds}"]
