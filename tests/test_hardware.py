"""hardware(): the report of this machine, and the roofs `peak()` judges a measurement by."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from html import escape
from types import SimpleNamespace

import numpy as np
import pytest

from helpers.core.backend import Backends, BackendStatus
from helpers.measuring import specs
from helpers.measuring.cpu import Sourced, cpu_info
from helpers.measuring.hardware import Accelerator, Hardware, hardware, where_we_run
from helpers.model import roofline

# `helpers.measuring.hardware` is also the function's name
hardware_mod = importlib.import_module("helpers.measuring.hardware")

# --- this machine --------------------------------------------------------------------------------------------


def test_report_shows_the_cpu_and_its_peak_formula():
    hw = hardware()
    cpu = cpu_info()
    assert hw.cpu is cpu
    text = str(hw)
    assert cpu.model in text and cpu.formula() in text
    assert ("how we know the clock", cpu.clock_hz.source) in hw.rows()
    assert ("how we know the bf16 rate", cpu.bf16_flops_per_cycle.source) in hw.rows()
    html = hw._repr_html_()
    assert html.startswith("<table>") and escape(cpu.model) in html and escape(cpu.formula()) in html


def test_each_source_line_reads_as_a_label_and_its_answer():
    """A label ending in 'from' read with a value that starts 'inferred from' as 'clock from inferred from'."""
    rows = dict(hardware().rows())
    assert not [label for label in rows if label.endswith(" from")]
    assert {"how we know the cores", "how we know the FMA units", "how we know the memory bandwidth"} <= set(rows)
    nominal = cpu_info().nominal_clock_hz
    if nominal is not None:  # the clock the OS states, shown as a value beside the one the peak uses
        assert rows["nominal clock"].startswith(f"{float(nominal.value) / 1e9:.2f} GHz (")


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


def test_bf16_on_this_cpu_is_judged_by_its_bf16_peak():
    hw = hardware()
    peak = hw.peak("jax", "bfloat16", device_kind="cpu")
    assert peak.flops == cpu_info().peak_bf16 >= cpu_info().peak_fp32
    assert peak.source == f"estimated: {cpu_info().formula('bfloat16')}"
    assert cpu_info().sources()["bf16"] in peak.source


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


@pytest.fixture
def cupy_unloaded(monkeypatch):
    """CuPy not loaded: its TF32 choice is read from CUPY_TF32 as CuPy would read it (the real CuPy keeps its
    first answer for the whole process, so the tests must not ask it)."""
    monkeypatch.delitem(sys.modules, "cupy._core._routines_linalg", raising=False)
    return monkeypatch


def test_t4_roofs(fake_cpu, cupy_unloaded, monkeypatch):
    monkeypatch.delenv("CUPY_TF32", raising=False)
    hw = _with(fake_cpu, _gpu("Tesla T4"))
    peak = hw.peak("cupy", "float32")
    assert peak.flops == 8.1e12 and peak.bandwidth == 320e9
    assert peak.device == "NVIDIA T4" and "NVIDIA T4 datasheet" in peak.source
    assert hw.peak("cupy", "float16").flops == 65e12
    assert hw.peak("cupy", "bfloat16").flops == 8.1e12  # no BF16 units on a T4: the float32 rate
    assert hw.peak("cupy", "float64").flops is None
    monkeypatch.setenv("CUPY_TF32", "1")
    assert hw.peak("cupy", "float32").flops == 8.1e12  # a T4 has no TF32 roof to switch to


def test_tf32_roof_when_cupy_uses_it(fake_cpu, cupy_unloaded, monkeypatch):
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


def test_bf16_on_a_gpu_without_bf16_units_is_judged_and_predicted_by_one_roof(fake_cpu):
    t4 = _with(fake_cpu, _gpu("Tesla T4"))  # Turing: fp16 tensor cores, no bf16 ones
    peak = t4.peak("jax", "bfloat16", device_kind="gpu")
    assert peak.flops == pytest.approx(specs.lookup("Tesla T4").peak_for("float32"))
    assert "no bfloat16 units on file" in peak.source and "float32 rate" in peak.source
    assert peak.flops == roofline.roofs("NVIDIA T4").roof("bfloat16").flops  # the roof the predictions use
    a100 = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    assert a100.peak("jax", "bfloat16", device_kind="gpu").flops == pytest.approx(312e12)  # its own bf16 roof


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


def test_cpu_bf16_roofs(fake_cpu):
    # without bf16 units, bf16 runs in fp32: the FP32 peak, and the source says so
    plain = _with(fake_cpu).peak("jax", "bfloat16", device_kind="cpu")
    assert plain.flops == pytest.approx(192e9) and plain.device == "CPU (2 cores)"
    assert "convert bf16 to fp32" in plain.source and fake_cpu.formula() in plain.source
    # AMX-BF16: 2 cores x 3 GHz x 1,024 bf16 FLOP/cycle
    amx = dataclasses.replace(fake_cpu, bf16_rate=Sourced(1024, "test AMX-BF16 tile unit"))
    peak = _with(amx).peak("jax", "bfloat16", device_kind="cpu")
    assert peak.flops == pytest.approx(2 * 3e9 * 1024) and peak.bandwidth == 20e9
    assert peak.source == ("estimated: 2 cores x 3.00 GHz x 1,024 bf16 FLOP/cycle = 6,144 GFLOP/s "
                           "(test AMX-BF16 tile unit)")
    assert _with(amx).peak("numpy", "float32").flops == pytest.approx(192e9)  # float32 keeps its own roof
    fp64 = _with(amx).peak("numpy", "float64")
    assert fp64.flops == pytest.approx(96e9) and fp64.source.endswith("; FP64 is half: 96 GFLOP/s")
    assert _with(amx).peak("numpy", "float16").flops is None


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


@pytest.mark.parametrize("setting", ["highest", "float32", "F32_F32_F32"])
def test_jax_float32_at_full_precision_is_judged_by_the_float32_roof(fake_cpu, setting):
    import jax

    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    with jax.default_matmul_precision(setting):
        assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(19.5e12)
    assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(156e12)  # back to the default


# --- which roof a JAX precision means on a TF32 GPU (https://docs.jax.dev/en/latest/201/precision.html) -------

A100_ROOFS = {"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12, "float16": 312e12}


def _precisions():
    from jax import lax

    P = lax.Precision
    return [
        (None, "tf32"), ("default", "tf32"), ("fastest", "tf32"), ("bfloat16", "tf32"), (P.DEFAULT, "tf32"),
        ("high", "tf32"), ("bfloat16_3x", "tf32"), ("tensorfloat32", "tf32"), (P.HIGH, "tf32"),
        ("highest", "float32"), ("float32", "float32"), (P.HIGHEST, "float32"),
        ((P.DEFAULT, P.HIGHEST), "float32"), ((P.HIGH, P.DEFAULT), "tf32"), (("highest", "default"), "float32"),
        ("DEFAULT", "tf32"), ("F32_F32_F32", "float32"), ("TF32_TF32_F32", "tf32"), ("TF32_TF32_F32_X3", "tf32"),
        ("BF16_BF16_F32", "bfloat16"), ("BF16_BF16_F32_X6", "bfloat16"), ("BF16_BF16_BF16", "bfloat16"),
        ("F16_F16_F32", "float16"), ("F64_F64_F64", "float64"), ("ANY_F8_ANY_F8_F32", "float8"),
        (lax.DotAlgorithmPreset.TF32_TF32_F32, "tf32"), (lax.DotAlgorithmPreset.F32_F32_F32, "float32"),
        (lax.DotAlgorithm(np.float16, np.float16, np.float32), "float16"),
    ]


def test_jax_dot_roof_follows_the_documented_precisions():
    for precision, roof in _precisions():
        assert hardware_mod.jax_dot_roof(precision) == roof, precision


@pytest.mark.parametrize("bad", ["tensorfloat32_3x", "HIGHEST", "fp32", "", 0, 2, True, 1.5, ("highest",),
                                 ("highest", "bogus"), ("highest", None), [], {}, object(), b"highest"])
def test_a_precision_jax_does_not_take_is_refused(bad):
    with pytest.raises(ValueError, match=r"is not a JAX matmul precision.*docs.jax.dev/en/latest/201/precision"):
        hardware_mod.jax_dot_roof(bad)


def test_every_default_matmul_precision_jax_accepts_has_a_roof(fake_cpu):
    import jax

    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    settings = ["default", "high", "highest", "bfloat16", "tensorfloat32", "float32"]
    presets = [name for name in jax.lax.DotAlgorithmPreset.__members__ if name != "DEFAULT"]  # not a setting
    for setting in settings + presets:
        with jax.default_matmul_precision(setting):  # JAX refuses a value it does not know, here as elsewhere
            roof = hardware_mod.jax_dot_roof(setting)
            peak = hw.peak("jax", "float32", device_kind="gpu")
        assert f"JAX's default matmul precision is {setting!r}" in peak.source
        # a roof on file judges; one not on file (float8, float64 here) is never judged by a lower one
        assert peak.flops == pytest.approx(A100_ROOFS.get(roof, max(A100_ROOFS.values()))), setting


@pytest.fixture
def matmul_precision():
    """Set jax_default_matmul_precision in a test; it is back to what it was after it."""
    import jax

    before = jax.config.jax_default_matmul_precision
    yield lambda value: jax.config.update("jax_default_matmul_precision", value)
    jax.config.update("jax_default_matmul_precision", before)


@pytest.mark.parametrize(("setting", "flops"), [
    (None, 156e12), ("tensorfloat32", 156e12), ("bfloat16", 156e12),  # 'bfloat16' names DEFAULT: TF32 on a GPU
    ("float32", 19.5e12), ("BF16_BF16_F32", 312e12),
])
def test_the_config_setting_chooses_the_roof(fake_cpu, matmul_precision, setting, flops):
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    matmul_precision(setting)
    assert hw.peak("jax", "float32", device_kind="gpu").flops == pytest.approx(flops)


def test_a_float8_setting_is_judged_by_the_highest_roof(fake_cpu, matmul_precision):
    hw = _with(fake_cpu, _gpu("NVIDIA H100 SXM"))
    matmul_precision("ANY_F8_ANY_F8_F32")
    peak = hw.peak("jax", "float32", device_kind="gpu")
    assert peak.flops == pytest.approx(989e12) and "no roof on file for float8: judged by the highest" in peak.source


@pytest.mark.parametrize(("matmuls", "flops"), [
    ({"float32"}, 19.5e12), ({"tf32"}, 156e12), ({"float32", "tf32"}, 156e12), (set(), 19.5e12),
    (frozenset({"bfloat16"}), 312e12), (["float8"], 312e12), ({"unknown"}, 312e12),
])
def test_matmuls_read_from_the_work_choose_the_roof(fake_cpu, matmuls, flops):
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    peak = hw.peak("jax", "float32", device_kind="gpu", float32_matmuls=matmuls)
    assert peak.flops == pytest.approx(flops)
    assert "default matmul precision" not in peak.source  # the work said, not the setting
    t4 = _with(fake_cpu, _gpu("Tesla T4"))  # no tensor cores for float32: the question does not arise
    assert t4.peak("jax", "float32", device_kind="gpu", float32_matmuls=matmuls).flops == pytest.approx(8.1e12)


@pytest.mark.parametrize("bad", ["tf32", [1], {None}])
def test_float32_matmuls_must_be_roof_names(fake_cpu, bad):
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    with pytest.raises(ValueError, match="float32_matmuls must be a set of roof names"):
        hw.peak("jax", "float32", device_kind="gpu", float32_matmuls=bad)


# --- CuPy reads CUPY_TF32 once, at its first float32 matmul (cupy/_core/_routines_linalg.pyx) ----------------


def _cupy_that_chose(monkeypatch, chosen):
    """A loaded CuPy whose float32 compute type is `chosen` (the constants are CuPy's own)."""
    names = {1: "COMPUTE_TYPE_DEFAULT", 3: "COMPUTE_TYPE_FP16", 6: "COMPUTE_TYPE_BF16", 7: "COMPUTE_TYPE_TF32"}

    def get_compute_type(dtype):
        assert dtype == "float32"
        if isinstance(chosen, Exception):
            raise chosen
        return chosen

    fake = SimpleNamespace(get_compute_type=get_compute_type, compute_type_to_str=names.get, COMPUTE_TYPE_DEFAULT=1,
                           COMPUTE_TYPE_FP16=3, COMPUTE_TYPE_BF16=6, COMPUTE_TYPE_TF32=7)
    monkeypatch.setitem(sys.modules, "cupy._core._routines_linalg", fake)


@pytest.mark.parametrize(("chosen", "env", "flops", "said"), [
    (7, None, 156e12, "COMPUTE_TYPE_TF32"),  # TF32 chosen at the first matmul; CUPY_TF32 unset since: still TF32
    (1, "1", 19.5e12, "COMPUTE_TYPE_DEFAULT"),  # CUPY_TF32=1 set after CuPy chose: CuPy ignores it, and so do we
    (3, None, 312e12, "COMPUTE_TYPE_FP16"),  # set_compute_type(float32, FP16): the fp16 tensor cores
])
def test_cupy_is_judged_by_the_compute_type_cupy_chose(fake_cpu, monkeypatch, chosen, env, flops, said):
    _cupy_that_chose(monkeypatch, chosen)
    if env is None:
        monkeypatch.delenv("CUPY_TF32", raising=False)
    else:
        monkeypatch.setenv("CUPY_TF32", env)
    peak = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB")).peak("cupy", "float32")
    assert peak.flops == pytest.approx(flops) and f"CuPy's float32 compute type is {said}" in peak.source


@pytest.mark.parametrize(("env", "flops", "said"), [
    (None, 19.5e12, "CUPY_TF32='0'"), ("0", 19.5e12, "CUPY_TF32='0'"), ("1", 156e12, "CUPY_TF32='1'"),
    ("2", 156e12, "CUPY_TF32='2'"),  # CuPy's test is int(value) > 0
    ("yes", 156e12, "not a whole number (CuPy refuses it): judged by the higher TF32 roof"),
])
def test_cupy_tf32_is_read_as_cupy_reads_it(fake_cpu, monkeypatch, env, flops, said):
    _cupy_that_chose(monkeypatch, RuntimeError("no CUDA GPU"))  # CuPy cannot answer: the environment says
    if env is None:
        monkeypatch.delenv("CUPY_TF32", raising=False)
    else:
        monkeypatch.setenv("CUPY_TF32", env)
    hw = _with(fake_cpu, _gpu("NVIDIA A100-SXM4-40GB"))
    peak = hw.peak("cupy", "float32")
    assert peak.flops == pytest.approx(flops) and said in peak.source
    monkeypatch.delitem(sys.modules, "cupy._core._routines_linalg")  # CuPy not loaded: the same rule
    assert hw.peak("cupy", "float32") == peak
