"""The missing-accelerator notice: loud, once per kind, and the CPU stand-in is returned."""

import pytest

from helpers.core import backend, notice
from helpers.core.backend import Backends, BackendStatus


@pytest.fixture
def no_accelerators(monkeypatch):
    """A machine where CuPy has no GPU and JAX runs on the CPU, with a fresh 'already announced' set."""
    fake = Backends(
        numpy=BackendStatus("numpy", True, "CPU"),
        jax=BackendStatus("jax", True, "CPU: 1 x cpu", device_kind="cpu"),
        cupy=BackendStatus("cupy", False, "no CUDA GPU found", "pick a GPU runtime", "gpu"),
    )
    monkeypatch.setattr(notice, "backends", lambda: fake)
    monkeypatch.setattr(notice, "_announced", set())
    return fake


def test_missing_gpu_is_announced_once_with_how_to(no_accelerators, capsys):
    assert notice.accelerator_backend("gpu") == "numpy"
    first = capsys.readouterr().err
    assert "No GPU here" in first and "T4 GPU" in first and "no CUDA GPU found" in first
    assert notice.accelerator_backend("gpu") == "numpy"
    assert capsys.readouterr().err == ""


def test_missing_tpu_falls_back_to_jax_on_cpu(no_accelerators, capsys):
    assert notice.accelerator_backend("tpu") == "jax"
    err = capsys.readouterr().err
    assert "No TPU here" in err and "TPU" in err and "JAX sees no TPU" in err


def test_present_accelerators_are_used_silently(monkeypatch, capsys):
    fake = Backends(
        numpy=BackendStatus("numpy", True, "CPU"),
        jax=BackendStatus("jax", True, "TPU: 1 x TPU v5 lite", device_kind="tpu"),
        cupy=BackendStatus("cupy", True, "GPU: Tesla T4", device_kind="gpu"),
    )
    monkeypatch.setattr(notice, "backends", lambda: fake)
    monkeypatch.setattr(notice, "_announced", set())
    assert notice.accelerator_backend("gpu") == "cupy"
    assert notice.accelerator_backend("tpu") == "jax"
    assert capsys.readouterr().err == ""


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="accepted: gpu, tpu"):
        notice.accelerator_backend("fpga")


def test_real_machine_without_gpu_gets_the_stand_in(monkeypatch):
    monkeypatch.setattr(notice, "_announced", {"gpu"})  # keep test output quiet
    expected = "cupy" if backend.backends()["cupy"].usable else "numpy"
    assert notice.accelerator_backend("gpu") == expected
