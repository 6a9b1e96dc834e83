"""Which array libraries (NumPy, CuPy, JAX) are usable here, and how to move and synchronise their arrays.

A backend is "usable" only once it has really run an operation: CuPy, for one, imports fine on a machine
with no GPU and fails at its first array. Every reason a backend is unusable comes with what to do about it.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Any

import numpy as np

#: Backend names `benchmark`, `to_backend` and the bench command accept. "python" is plain CPU code with
#: no array library (loops over lists or over NumPy arrays element by element).
NAMES = ("python", "numpy", "jax", "cupy")
ARRAY_BACKENDS = ("numpy", "jax", "cupy")


class BackendUnavailable(RuntimeError):
    """Raised when code asks for a backend this machine cannot run; the message says why and what to do."""


#: The call that switches on JAX's 64-bit mode, the same on every JAX we allow (0.6 and newer); error messages
#: quote it, and a test runs it.
JAX_X64_ON = 'jax.config.update("jax_enable_x64", True)'


@dataclass(frozen=True)
class BackendStatus:
    """Whether one backend is usable here: on which device, or why not and how to fix it."""

    name: str
    usable: bool
    detail: str  # the device it runs on, or the reason it cannot run
    fix: str = ""  # what to do when it is not usable (or to use an accelerator it ignores)
    device_kind: str = "cpu"  # "cpu", "gpu" or "tpu": where its arrays live

    def __str__(self) -> str:
        text = f"{self.name}: {'yes' if self.usable else 'no'} - {self.detail}"
        return f"{text} -> {self.fix}" if self.fix else text


class Backends(dict):
    """name -> BackendStatus for numpy, jax and cupy, readable as text and as an HTML table."""

    def usable(self) -> list[str]:
        """Names of the backends that can run here."""
        return [name for name, status in self.items() if status.usable]

    def __str__(self) -> str:
        return "\n".join(str(status) for status in self.values())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><b>{escape(s.name)}</b></td><td>{'&#9989;' if s.usable else '&#10060;'}</td>"
            f"<td>{escape(s.detail)}</td><td>{escape(s.fix)}</td></tr>"
            for s in self.values()
        )
        return ("<table><thead><tr><th>backend</th><th>usable</th><th>runs on / why not</th><th>what to do</th>"
                f"</tr></thead><tbody>{rows}</tbody></table>")


def _numpy_status() -> BackendStatus:
    return BackendStatus("numpy", True, f"CPU, NumPy {np.__version__}")


def _cupy_status() -> BackendStatus:
    try:
        import cupy
    except ImportError:
        return BackendStatus("cupy", False, "CuPy is not installed",
                             "on a machine with an NVIDIA GPU: pip install cupy-cuda12x (CUDA 12 driver) or "
                             "cupy-cuda13x (CUDA 13); nvidia-smi shows the driver's CUDA version", "gpu")
    except Exception as exc:  # a broken install raises all sorts at import
        return BackendStatus("cupy", False, f"CuPy failed to import: {type(exc).__name__}: {exc}",
                             "reinstall the CuPy that matches your CUDA driver (nvidia-smi shows it): "
                             "cupy-cuda12x for CUDA 12, cupy-cuda13x for CUDA 13", "gpu")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        if not _nvidia_gpu_present():  # no driver at all: CUDA's error names a version, the plain fact is simpler
            return BackendStatus("cupy", False, "no NVIDIA GPU here (no NVIDIA driver found)", _GPU_FIX, "gpu")
        return BackendStatus("cupy", False, f"no CUDA GPU found ({_first_line(exc)})", _GPU_FIX, "gpu")
    if count == 0:
        return BackendStatus("cupy", False, "no CUDA GPU found (0 devices)", _GPU_FIX, "gpu")
    try:  # the first real operation: this is where a CUDA/CuPy version mismatch shows up
        assert int((cupy.arange(4) * 2).sum()) == 12
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name
    except Exception as exc:
        return BackendStatus("cupy", False, f"a GPU is present but CuPy's first operation failed: {_first_line(exc)}",
                             "install the CuPy that matches the driver's CUDA version: nvidia-smi shows it; "
                             "CUDA 12.x needs cupy-cuda12x, CUDA 13.x cupy-cuda13x", "gpu")
    return BackendStatus("cupy", True, f"GPU: {name} ({count} device{'s' * (count > 1)})", device_kind="gpu")


def _jax_status() -> BackendStatus:
    try:
        import jax
    except ImportError:
        return BackendStatus("jax", False, "JAX is not installed", "pip install jax")
    except Exception as exc:
        return BackendStatus("jax", False, f"JAX failed to import: {_first_line(exc)}",
                             "pip install --upgrade jax jaxlib")
    try:
        devices = jax.devices()
        float(jax.numpy.arange(4.0).sum())
    except Exception as exc:
        return BackendStatus("jax", False, f"JAX could not run: {_first_line(exc)}", "pip install --upgrade jax jaxlib")
    platform = devices[0].platform
    kinds = sorted({d.device_kind for d in devices})
    detail = f"{platform.upper()}: {len(devices)} x {', '.join(kinds)} (JAX {jax.__version__})"
    fix = ""
    if platform == "cpu":
        if _tpu_runtime_expected():
            fix = "this looks like a TPU machine but JAX sees none: pip install -U 'jax[tpu]', then restart"
        elif _nvidia_gpu_present():
            fix = "JAX is using the CPU though a GPU is here: pip install -U 'jax[cuda12]', then restart"
    return BackendStatus("jax", True, detail, fix, device_kind=platform)


_GPU_FIX = ("in Colab: Runtime > Change runtime type > T4 GPU > Save; elsewhere you need an NVIDIA GPU "
            "and its driver")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _nvidia_gpu_present() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia/version")


def _tpu_runtime_expected() -> bool:
    return any(os.environ.get(v) for v in ("TPU_ACCELERATOR_TYPE", "COLAB_TPU_ADDR", "TPU_NAME"))


@lru_cache(maxsize=1)
def backends() -> Backends:
    """Probe numpy, jax and cupy once: which are usable here, on what, and if not, why and what to do."""
    return Backends((s.name, s) for s in (_numpy_status(), _jax_status(), _cupy_status()))


def check_name(name: str) -> str:
    """`name` if it is a known backend name; a ValueError listing the accepted names otherwise."""
    if not isinstance(name, str) or name not in NAMES:
        raise ValueError(f"unknown backend {name!r}; accepted: {', '.join(NAMES)}")
    return name


def require_usable(name: str) -> None:
    """Raise BackendUnavailable, with the reason and the fix, unless backend `name` can run here."""
    check_name(name)
    if name == "python":
        return
    status = backends()[name]
    if not status.usable:
        raise BackendUnavailable(f"backend {name!r} is not usable here: {status.detail}. {status.fix}".strip())


def leaves(tree: Any) -> Iterator[Any]:
    if isinstance(tree, (list, tuple)):
        for item in tree:
            yield from leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from leaves(item)
    else:
        yield tree


def backend_of(x: Any) -> str | None:
    """The backend that owns array `x` ('numpy', 'jax', 'cupy'), or None if `x` is not an array."""
    if isinstance(x, (np.ndarray, np.generic)):
        return "numpy"
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.Array):
        return "jax"
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return "cupy"
    return None


def where(x: Any) -> str:
    """The device array `x` lives on, in words for a label: 'this CPU', 'GPU 0 (Tesla T4)', 'TPU 0 (TPU v5 lite)'.

    A label says where the numbers were measured: a JAX array lives on JAX's default device (on a GPU runtime, the
    GPU) unless it was put elsewhere, so 'JAX (this CPU)' is only true when its arrays are on the CPU.
    """
    owner = backend_of(x)
    if owner in (None, "numpy"):
        if owner is None:
            raise TypeError(f"where() takes a NumPy, JAX or CuPy array, got {type(x).__name__}")
        return "this CPU"
    if owner == "cupy":
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(x.device.id)["name"]
        return f"GPU {x.device.id} ({name.decode() if isinstance(name, bytes) else name})"
    devices = sorted(x.devices(), key=lambda d: d.id)
    if all(d.platform == "cpu" for d in devices):
        return "this CPU"
    first = devices[0]
    count = f" and {len(devices) - 1} more" if len(devices) > 1 else ""
    return f"{first.platform.upper()} {first.id} ({first.device_kind}){count}"


def backends_in(tree: Any, limit: int = 10_000) -> set[str]:
    """The backends owning arrays among the first `limit` leaves of `tree` (a cap: loops return huge lists)."""
    return {b for b in map(backend_of, itertools.islice(leaves(tree), limit)) if b is not None}


def sync_each(tree: Any, names: Iterable[str]) -> None:
    """Wait for the work of every backend in `names` (those that hold arrays of `tree`, or may be busy)."""
    for name in sorted(names):
        SYNCS[name](tree)


def detect(*args: Any) -> str:
    """The single backend the arrays in `args` (searched through lists, tuples and dicts) belong to.

    'python' when there are no arrays; a ValueError when arrays of two backends are mixed. A NumPy scalar
    (np.float32(2.0), as a kernel's C parameter wants) goes with arrays of any backend: CuPy and JAX take them.
    """
    items = list(leaves(args))
    found = {b for b in map(backend_of, (x for x in items if not isinstance(x, np.generic))) if b is not None}
    if not found and any(isinstance(x, np.generic) for x in items):
        found = {"numpy"}
    if len(found) > 1:
        raise ValueError(f"arguments mix arrays of {' and '.join(sorted(found))}; move them to one backend "
                         "with helpers.to_backend(x, name)")
    return found.pop() if found else "python"


def to_backend(x: Any, name: str) -> Any:
    """Array `x` (or a list/tuple/dict of arrays) copied to backend `name`'s device, synchronised."""
    check_name(name)
    if isinstance(x, (list, tuple)) and any(backend_of(i) for i in leaves(x)):
        return type(x)(to_backend(i, name) for i in x)
    if isinstance(x, dict):
        return {k: to_backend(v, name) for k, v in x.items()}
    host = to_numpy(x)
    if name == "python":
        return host.tolist()
    require_usable(name)
    if name == "numpy":
        return host
    if name == "jax":
        import jax

        if host.dtype == np.float64 and not jax.config.read("jax_enable_x64"):
            raise ValueError("JAX stores float64 arrays as float32 unless its 64-bit mode is on: run "
                             f"`{JAX_X64_ON}` before making JAX arrays, or use float32")
        return jax.block_until_ready(jax.device_put(host))
    import cupy

    out = cupy.asarray(host)
    cupy.cuda.get_current_stream().synchronize()
    return out


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of an array of any backend (the device-to-host transfer, where there is one).

    `x` may also be a number or (nested) lists of numbers; anything else is a ValueError saying what came.
    """
    owner = backend_of(x)
    if owner == "cupy":
        return x.get()
    try:
        host = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists, objects NumPy cannot read
        raise ValueError(f"expected an array or (nested) lists of numbers of one shape; got {type(x).__name__} "
                         f"{x!r:.60} ({str(exc).splitlines()[0][:80]})") from None
    if host.dtype.kind not in "biufc":
        raise ValueError(f"expected an array of numbers; got {type(x).__name__} {x!r:.60} (NumPy reads it as "
                         f"{host.dtype})")
    return host


def array_module(name: str) -> Any:
    """The NumPy-like module of backend `name`: numpy, jax.numpy or cupy."""
    check_name(name)
    if name in ("python", "numpy"):
        return np
    require_usable(name)
    if name == "jax":
        import jax.numpy as jnp

        return jnp
    import cupy

    return cupy


def _sync_jax(tree: Any) -> None:
    import jax

    jax.block_until_ready(tree)


def _sync_cupy(tree: Any) -> None:
    import cupy

    cupy.cuda.get_current_stream().synchronize()


#: How to wait until a backend's queued work is done. Asynchronous backends return before the device
#: finishes; reading the clock before this returns would time the launch, not the work.
SYNCS: dict[str, Callable[[Any], None]] = {
    "python": lambda tree: None,
    "numpy": lambda tree: None,
    "jax": _sync_jax,
    "cupy": _sync_cupy,
}


def sync(tree: Any, name: str | None = None) -> None:
    """Block until the work that produced `tree` (any pytree of arrays) has finished on its device."""
    SYNCS[check_name(name) if name else detect(tree)](tree)
