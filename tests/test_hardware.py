"""hardware(): the report of this machine, and the roofs `peak()` judges a measurement by."""

from __future__ import annotations

import importlib
import sys
from html import escape

import pytest

from helpers import specs
from helpers.backend import Backends, BackendStatus
from helpers.cpu import cpu_info
from helpers.hardware import Accelerator, Hardware, hardware, where_we_run

hardware_mod = importlib.import_module("helpers.hardware")  # `helpers.hardware` is also the function's name

# --- this machine --------------------------------------------------------------------------------------------


def test_report_shows_the_cpu_and_its_peak_formula():
    hw = hardware()
    cpu = cpu_info()
    assert hw.cpu is cpu
    text = str(hw)
    assert cpu.model in text and cpu.formula() in text
    assert "clock from" in text and cpu.clock_hz.source in text
    html = hw._repr_html_()
    assert html.startswith("<table>") and escape(cpu.model) in html and escape(cpu.formula()) in html


def test_hardware_is_detected_once():
    assert hardware() is hardware()


def test_no_accelerator_here():
    hw = hardware()
    if hw.accelerators:
        pytest.skip("this machine has a GPU or TPU")
    assert hw.gpus == [] and hw.tpus == []
    assert ("GPU / TPU", "none usable here") in hw.rows()
    assert hw.jax_platform == "cpu"


def test_numpy_peaks():
    hw = hardware()
    fp32, fp64 = hw.peak("numpy", "float32"), hw.peak("numpy", "float64")
    assert fp32.flops == pytest.approx(cpu_info().peak_fp32)
    assert fp64.flops == pytest.approx(fp32.flops / 2)
    assert fp32.bandwidth == cpu_info().peak_bandwidth.value
    assert fp32.device.startswith("CPU") and cpu_info().formula() in fp32.source
    assert hw.peak("python", "float64") == fp64
    assert hw.peak("numpy", "float16").flops is None


def test_jax_on_the_cpu_is_judged_by_the_cpu():
    hw = hardware()
    if hw.jax_platform != "cpu":
        pytest.skip("JAX runs on an accelerator here")
    assert hw.peak("jax", "float32") == hw.peak("numpy", "float32")
    assert hw.peak("jax", "float32", device_kind="cpu") == hw.peak("numpy", "float32")


# --- where we run ------------------------------------------------------------------------------------------


@pytest.fixture
def plain_env(monkeypatch):
    for name in ("COLAB_RELEASE_TAG", "KAGGLE_KERNEL_RUN_TYPE", "BINDER_LAUNCH_HOST", "BINDER_REPO_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    return monkeypatch


@pytest.mark.parametrize(("var", "expected"), [
    ("COLAB_RELEASE_TAG", "Colab"), ("KAGGLE_KERNEL_RUN_TYPE", "Kaggle"),
    ("BINDER_LAUNCH_HOST", "Binder"), ("BINDER_REPO_URL", "Binder"),
])
def test_where_we_run(plain_env, var, expected):
    assert where_we_run() == "local"
    plain_env.setenv(var, "x")
    assert where_we_run() == expected


def test_colab_module_means_colab(plain_env):
    plain_env.setitem(sys.modules, "google.colab", object())
    assert where_we_run() == "Colab"


# --- roofs of accelerators, on machines made by hand ----------------------------------------------------------


def _with(fake_cpu, *accelerators) -> Hardware:
    return Hardware(fake_cpu, tuple(accelerators), "cpu", "local")


def _gpu(name: str) -> Accelerator:
    return Accelerator("gpu", name, "cupy", 16e9, 40, spec=specs.lookup(name))


def test_t4_roofs(fake_cpu, monkeypatch):
    monkeypatch.delenv("CUPY_TF32", raising=False)
    hw = _with(fake_cpu, _gpu("Tesla T4"))
    peak = hw.peak("cupy", "float32")
    assert peak.flops == 8.1e12 and peak.bandwidth == 320e9
    assert peak.device == "NVIDIA T4" and "NVIDIA T4 datasheet" in peak.source
    assert hw.peak("cupy", "float16").flops == 65e12
    assert hw.peak("cupy", "bfloat16").flops is None  # no BF16 on a T4
    assert hw.peak("cupy", "float64").flops is None
    monkeypatch.setenv("CUPY_TF32", "1")
    assert hw.peak("cupy", "float32").flops == 8.1e12  # a T4 has no TF32 roof to switch to


def test_tf32_roof_when_cupy_uses_it(fake_cpu, monkeypatch):
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    monkeypatch.delenv("CUPY_TF32", raising=False)
    assert hw.peak("cupy", "float32").flops == pytest.approx(19.5e12)
    monkeypatch.setenv("CUPY_TF32", "1")
    peak = hw.peak("cupy", "float32")
    assert peak.flops == pytest.approx(156e12) and "tf32" in peak.source
    assert hw.peak("cupy", "float16").flops == pytest.approx(312e12)


def test_jax_float32_on_a_gpu_is_judged_by_tf32(fake_cpu, monkeypatch):
    monkeypatch.delenv("CUPY_TF32", raising=False)
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(156e12)  # JAX's default precision
    assert hw.peak("jax", "float16", device_kind="gpu").flops == pytest.approx(312e12)
    t4 = _with(fake_cpu, _gpu("Tesla T4"))
    assert t4.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(8.1e12)  # no TF32 on a T4


def test_tpu_roof_is_bf16(fake_cpu, monkeypatch):
    tpu = Accelerator("tpu", "TPU v5 lite", "jax", None, 1, spec=specs.lookup("TPU v5 lite"))
    hw = _with(fake_cpu, tpu)
    for dtype in ("float32", "bfloat16"):
        peak = hw.peak("jax", dtype, device_kind="tpu")
        assert peak.flops == pytest.approx(197e12) and peak.bandwidth == pytest.approx(819e9)
        assert "bf16" in peak.source
    # without device_kind, the roof follows the device JAX runs on
    on_tpu = Backends(jax=BackendStatus("jax", True, "TPU: 1 x TPU v5 lite", device_kind="tpu"))
    monkeypatch.setattr(hardware_mod, "backends", lambda: on_tpu)
    assert hw.peak("jax", "float32").flops == pytest.approx(197e12)
    assert hw.peak("numpy", "float32").flops == pytest.approx(fake_cpu.peak_fp32)


def test_unknown_accelerator_has_no_roof(fake_cpu):
    hw = _with(fake_cpu, Accelerator("gpu", "NVIDIA GeForce RTX 4090", "cupy"))
    peak = hw.peak("cupy", "float32", device_kind="gpu")
    assert peak.flops is None and peak.bandwidth is None
    assert "no published peaks" in peak.source and "RTX 4090" in peak.source
    assert _with(fake_cpu).peak("cupy", "float32", device_kind="gpu").flops is None


def test_fake_cpu_roof(fake_cpu):
    peak = _with(fake_cpu).peak("numpy")
    assert peak.flops == pytest.approx(192e9) and peak.bandwidth == 20e9
    assert peak.device == "CPU (2 cores)"


def test_report_lists_accelerators(fake_cpu):
    t4 = _gpu("Tesla T4")
    tpu = Accelerator("tpu", "TPU v4", "jax", None, 2, spec=specs.lookup("TPU v4"))
    hw = Hardware(fake_cpu, (t4, tpu), "tpu", "Colab", ("a note",))
    assert hw.gpus == [t4] and hw.tpus == [tpu]
    text = str(hw)
    assert "Test CPU 9000" in text and fake_cpu.formula() in text and "Colab" in text
    assert "GPU / TPU" not in text and "JAX runs on" in text and "TPU" in text and "a note" in text
    assert "40 SMs" in t4.summary() and "15 GiB" in t4.summary() and "NVIDIA T4 datasheet" in t4.summary()
    assert "2 cores" in tpu.summary() and "bfloat16 275 TFLOP/s" in tpu.summary()
    assert "no published peaks" in Accelerator("gpu", "Mystery", "cupy").summary()
    assert "JAX is not usable" in str(Hardware(fake_cpu, (), None, "local"))


@pytest.mark.parametrize("setting", ["highest", "float32"])
def test_jax_float32_at_full_precision_is_judged_by_the_float32_roof(fake_cpu, setting):
    import jax

    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    with jax.default_matmul_precision(setting):
        assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(19.5e12)
    assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(156e12)  # back to the default
