"""Published accelerator specs: names as CuPy and JAX report them, sources, roofs and ridge points."""

from __future__ import annotations

import pytest

from helpers import specs


@pytest.mark.parametrize(("reported", "expected"), [
    ("Tesla T4", "NVIDIA T4"),  # CuPy on Colab's free GPU
    ("NVIDIA T4", "NVIDIA T4"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H200", "NVIDIA H200"),
    ("TPU v2", "TPU v2"),  # JAX's device_kind
    ("TPU v4", "TPU v4"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5", "TPU v5p"),
    ("TPU v6 lite", "TPU v6e"),
    ("  tpu   V5   LITE ", "TPU v5e"),  # case and spacing do not matter
])
def test_lookup_names_as_reported(reported, expected):
    spec = specs.lookup(reported)
    assert spec is not None and spec.name == expected


@pytest.mark.parametrize("reported", [
    "NVIDIA GeForce RTX 4090", "NVIDIA L40S", "NVIDIA GH200 480GB", "TPU v7", "cpu", "", "   ", None, 42,
])
def test_lookup_unknown_is_none(reported):
    assert specs.lookup(reported) is None  # L40S is not an L4, GH200 is not an H200


def test_get_known_and_unknown():
    assert specs.get("Tesla T4") is specs.lookup("NVIDIA T4")
    with pytest.raises(KeyError, match="no published specs for 'Radeon 7900'") as info:
        specs.get("Radeon 7900")
    for spec in specs.ALL:
        assert spec.name in str(info.value)


def test_reference_devices_exist():
    assert specs.get(specs.REFERENCE_GPU).kind == "gpu"
    assert specs.get(specs.REFERENCE_TPU).kind == "tpu"


@pytest.mark.parametrize("spec", specs.ALL, ids=lambda s: s.name)
def test_every_spec_is_sourced_and_sane(spec):
    assert spec.source.strip()
    assert spec.kind in ("gpu", "tpu") and spec in (specs.GPUS if spec.kind == "gpu" else specs.TPUS)
    assert spec.peak_flops and all(v > 1e12 for v in spec.peak_flops.values())
    assert set(spec.peak_flops) <= {"float32", "tf32", "float16", "bfloat16"}
    assert 1e11 < spec.peak_bandwidth < 1e13 and spec.memory_bytes > 1e9
    assert specs.lookup(spec.name) is spec  # every spec can be found by its own name
    if spec.kind == "tpu":
        assert "bfloat16" in spec.peak_flops  # the TPU roof is the bf16 MXU peak
    else:
        assert "float32" in spec.peak_flops


def test_names_are_unique():
    names = [s.name for s in specs.ALL]
    assert len(names) == len(set(names))


def test_t4_roofs():
    t4 = specs.get("Tesla T4")
    assert t4.peak_for("float32") == pytest.approx(8.1e12)
    assert t4.peak_for("float16") == pytest.approx(65e12)
    assert t4.peak_for("bfloat16") is None  # no BF16 tensor cores on Turing
    assert t4.peak_for("tf32") is None
    assert t4.peak_bandwidth == pytest.approx(320e9)


def test_critical_intensity():
    # the ridge of the roofline: fastest published FLOP/s over bytes/s
    assert specs.get("Tesla T4").critical_intensity == pytest.approx(200, rel=0.05)  # 65 TFLOP/s / 320 GB/s
    assert specs.get("TPU v5 lite").critical_intensity == pytest.approx(240, rel=0.05)  # 197 TFLOP/s / 819 GB/s
    a100 = specs.get("NVIDIA A100-SXM4-40GB")
    assert a100.critical_intensity == pytest.approx(312e12 / 1555e9)
