"""backends(): what is usable here and why not; moving, detecting and synchronising arrays of each backend."""

from __future__ import annotations

import re
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import without_gpu

from helpers.core import backend
from helpers.core.backend import (
    JAX_X64_ON,
    BackendUnavailable,
    array_module,
    backend_of,
    backends,
    check_name,
    detect,
    require_usable,
    sync,
    to_backend,
    to_numpy,
)
from helpers.measuring import workloads

# --- what this machine has (2 CPU cores, CuPy installed, no GPU) -------------------------------------------


def test_numpy_is_usable():
    status = backends()["numpy"]
    assert status.usable and status.device_kind == "cpu" and np.__version__ in status.detail


def test_jax_is_usable_where_its_devices_are():
    status = backends()["jax"]
    platform = jax.devices()[0].platform  # "cpu" here
    assert status.usable and status.device_kind == platform
    assert status.detail.startswith(platform.upper()) and jax.__version__ in status.detail


def test_without_an_nvidia_driver_cupy_says_so_plainly(monkeypatch, fresh_backends):
    """CUDA's own words on a machine with no driver ('cudaErrorInsufficientDriver: CUDA driver version is
    insufficient ...') read as a version problem; the plain fact is that there is no NVIDIA GPU here."""
    monkeypatch.setattr(backend, "_nvidia_gpu_present", lambda: False)
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count=RuntimeError(
        "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")))
    status = fresh_backends()["cupy"]
    assert status.detail == "no NVIDIA GPU here (no NVIDIA driver found)" and "T4 GPU" in status.fix


@without_gpu
def test_cupy_is_installed_but_not_usable_without_a_gpu():
    pytest.importorskip("cupy")  # the dev extra installs it: CI checks "CuPy installed, no GPU"
    status = backends()["cupy"]
    assert not status.usable
    assert status.device_kind == "gpu"
    assert status.detail == "no NVIDIA GPU here (no NVIDIA driver found)"
    assert "Runtime > Change runtime type" in status.fix


@without_gpu
def test_usable_lists_the_runnable_backends_and_reports_render():
    found = backends()
    assert found.usable() == ["numpy", "jax"]
    text = str(found)
    assert "numpy: yes" in text and "jax: yes" in text and "cupy: no" in text
    html = found._repr_html_()
    assert html.count("<tr>") == 4 and "&#10060;" in html  # header + 3 rows; cupy gets a cross


def test_backends_is_probed_once():
    assert backends() is backends()


# --- CuPy detection, each way it can fail (a fake cupy module stands in) -----------------------------------


def _fake_cupy(count=1, first_op=None, name=b"Tesla T4"):
    """A stand-in for the cupy module: `count` GPUs (or an exception), NumPy doing the arithmetic."""

    def get_count():
        if isinstance(count, Exception):
            raise count
        return count

    runtime = types.SimpleNamespace(getDeviceCount=get_count, getDeviceProperties=lambda i: {"name": name})

    def arange(n):
        if first_op is not None:
            raise first_op
        return np.arange(n)

    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime), arange=arange)


def test_cupy_not_installed(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    status = fresh_backends()["cupy"]
    assert not status.usable
    assert status.detail == "CuPy is not installed"
    assert "pip install cupy-cuda12x" in status.fix


def test_cupy_without_devices(monkeypatch, fresh_backends):
    monkeypatch.setattr(backend, "_nvidia_gpu_present", lambda: True)  # a driver, but CUDA finds no device
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count=RuntimeError("cudaErrorNoDevice: no device\nmore")))
    status = fresh_backends()["cupy"]
    assert not status.usable
    assert status.detail == "no CUDA GPU found (RuntimeError: cudaErrorNoDevice: no device)"
    assert "T4 GPU" in status.fix
    backend.backends.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count=0))
    assert fresh_backends()["cupy"].detail == "no CUDA GPU found (0 devices)"


def test_cupy_whose_first_operation_fails(monkeypatch, fresh_backends):
    error = RuntimeError("CUDA driver version is insufficient for CUDA runtime version")
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(first_op=error))
    status = fresh_backends()["cupy"]
    assert not status.usable
    assert "first operation failed" in status.detail and "driver version is insufficient" in status.detail
    assert "cupy-cuda12x" in status.fix and "nvidia-smi" in status.fix


def test_cupy_that_works(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count=2))
    status = fresh_backends()["cupy"]
    assert status.usable and status.device_kind == "gpu"
    assert status.detail == "GPU: Tesla T4 (2 devices)"


def test_jax_on_the_cpu_of_a_tpu_machine_says_how_to_fix(monkeypatch, fresh_backends):
    monkeypatch.setenv("TPU_NAME", "local")
    status = fresh_backends()["jax"]
    assert status.usable and "jax[tpu]" in status.fix


def test_jax_on_the_cpu_of_a_gpu_machine_says_how_to_fix(monkeypatch, fresh_backends):
    for name in ("TPU_ACCELERATOR_TYPE", "COLAB_TPU_ADDR", "TPU_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(backend, "_nvidia_gpu_present", lambda: True)
    status = fresh_backends()["jax"]
    assert "jax[cuda12]" in status.fix
    assert str(status).endswith(f"-> {status.fix}")


def test_jax_not_installed(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "jax", None)
    status = fresh_backends()["jax"]
    assert not status.usable and status.detail == "JAX is not installed" and status.fix == "pip install jax"


# --- names ---------------------------------------------------------------------------------------------------


def test_check_name():
    assert check_name("jax") == "jax"
    with pytest.raises(ValueError, match="unknown backend 'torch'; accepted: python, numpy, jax, cupy"):
        check_name("torch")


@without_gpu
def test_require_usable():
    require_usable("python")
    require_usable("numpy")
    require_usable("jax")
    with pytest.raises(BackendUnavailable, match="backend 'cupy' is not usable here"):
        require_usable("cupy")
    with pytest.raises(ValueError):
        require_usable("tensorflow")


# --- detection, moving, syncing --------------------------------------------------------------------------------


def test_backend_of():
    assert backend_of(np.ones(2)) == "numpy"
    assert backend_of(np.float32(1)) == "numpy"
    assert backend_of(jnp.ones(2)) == "jax"
    assert backend_of([1.0]) is None and backend_of(2.0) is None


def test_detect_searches_containers():
    assert detect() == "python"
    assert detect([1.0, 2.0], 3) == "python"
    assert detect(np.ones(2), 2.0) == "numpy"
    assert detect({"w": [jnp.ones(2), (jnp.zeros(1),)]}) == "jax"
    assert detect(np.float32(2.0), jnp.ones(2), np.float32(3.0)) == "jax"  # a kernel's scalars go with any arrays
    assert detect(np.float32(2.0)) == "numpy"
    with pytest.raises(ValueError, match="mix arrays of jax and numpy.*to_backend"):
        detect([np.ones(2)], {"b": jnp.ones(2)})


def test_numpy_jax_round_trip():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    on_jax = to_backend(x, "jax")
    assert isinstance(on_jax, jax.Array) and on_jax.dtype == jnp.float32
    back = to_numpy(on_jax)
    assert isinstance(back, np.ndarray) and back.dtype == np.float32
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(to_backend(on_jax, "numpy"), x)


def test_python_gives_lists():
    x = np.arange(4.0).reshape(2, 2)
    assert to_backend(x, "python") == [[0.0, 1.0], [2.0, 3.0]]
    assert to_backend(jnp.arange(3.0), "python") == [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(to_backend([[1.0, 2.0]], "numpy"), np.array([[1.0, 2.0]]))


def test_float64_to_jax_without_64_bit_mode_is_refused_not_silently_halved():
    with pytest.raises(ValueError, match=re.escape(f"`{JAX_X64_ON}`")):
        to_backend(np.ones(2), "jax")
    with workloads.precision("jax", "float64"):  # jax.enable_x64, wherever this JAX keeps it
        assert to_backend(np.ones(2), "jax").dtype == np.float64


def test_containers_are_moved_whole():
    moved = to_backend((np.ones(2, np.float32), [np.zeros(1, np.float32)], {"k": np.ones(3, np.float32)}), "jax")
    assert isinstance(moved, tuple) and isinstance(moved[1], list) and isinstance(moved[2], dict)
    assert detect(moved) == "jax"
    assert moved[2]["k"].shape == (3,)


@without_gpu
def test_to_backend_refuses_what_cannot_run():
    with pytest.raises(BackendUnavailable, match="no NVIDIA GPU"):
        to_backend(np.ones(2), "cupy")
    with pytest.raises(ValueError, match="accepted"):
        to_backend(np.ones(2), "torch")


def test_array_module():
    assert array_module("numpy") is np and array_module("python") is np
    assert array_module("jax") is jnp
    with pytest.raises(ValueError):
        array_module("mlx")


@without_gpu
def test_array_module_of_cupy_without_a_gpu():
    with pytest.raises(BackendUnavailable, match="no NVIDIA GPU"):
        array_module("cupy")


def test_sync_waits_on_the_detected_backend(monkeypatch):
    seen = []
    monkeypatch.setitem(backend.SYNCS, "jax", lambda tree: seen.append(("jax", tree)))
    monkeypatch.setitem(backend.SYNCS, "numpy", lambda tree: seen.append(("numpy", tree)))
    x = jnp.ones(2)
    sync([x])
    sync(np.ones(1), "numpy")
    sync(x, "jax")
    assert [name for name, _ in seen] == ["jax", "numpy", "jax"]
    assert seen[0][1][0] is x


def test_real_sync_returns_once_jax_is_done():
    y = jnp.ones((64, 64)) @ jnp.ones((64, 64))
    sync(y)
    sync({"a": y, "b": [y]})
    sync(np.ones(3))
    sync([1.0, 2.0])
    assert float(y[0, 0]) == 64.0


def test_the_hinted_64_bit_switch_works_on_this_jax():
    """Error messages tell learners to run JAX_X64_ON: it must work on the JAX installed here (CI runs this test on
    the oldest JAX pyproject admits, on Colab's, and on the newest)."""
    program = (f"import jax, jax.numpy as jnp\n{JAX_X64_ON}\n"
               "assert jnp.ones(2, dtype='float64').dtype == 'float64', 'still 32-bit'")
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_benchmark_dtype_error_quotes_the_same_switch():
    from helpers import benchmark

    with pytest.raises(ValueError, match=re.escape(JAX_X64_ON)):
        benchmark(lambda x: x + 1, jnp.ones(4, jnp.float32), dtype="float64", budget=0.01)
