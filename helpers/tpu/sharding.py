"""Many devices for chapter 04: 8 simulated CPU devices where there are not 8 chips, and how arrays are laid out.

XLA can split the host CPU into several "devices" (the host platform device count). It must be told before
JAX starts its backends, which happens at the first JAX operation, and it cannot be changed afterwards. A
notebook kernel that already ran JAX would silently keep 1 device, so `use_host_devices` refuses loudly
instead, and says to restart the kernel.

    h.sharding.use_host_devices(8)      # first code cell, before anything runs JAX
    choice = h.sharding.devices(8)      # 8 TPU/GPU chips if there are, else the 8 CPU devices, and why
    mesh = jax.sharding.Mesh(np.array(choice.devices), ("batch",))
    print(h.sharding.layout(x))         # which rows and columns each device holds
    h.sharding.collectives(jax.jit(f).lower(x).compile().as_text())  # ['all-reduce']: where devices talk
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ..core.validate import positive_int

#: The device count the chapter shards over: a TPU v5e-8 slice, or 8 simulated CPU devices.
DEVICES = 8
_RESTART = ("Restart the kernel (Jupyter: Kernel > Restart; Colab: Runtime > Restart session), then run the cell "
            "with h.sharding.use_host_devices({count}) first, before anything else uses JAX (h.hardware(), "
            "h.backends() and h.accelerator_backend() all do).")


class HostDevicesError(RuntimeError):
    """JAX already started with fewer CPU devices than asked for; only a fresh process can change that."""


def _count(count: object) -> int:
    return positive_int("count", count, "how many CPU devices")


def _already_started(count: int) -> str:
    have = len(jax.devices("cpu"))
    if have >= count:
        return f"JAX already runs with {have} CPU devices: nothing to change."
    raise HostDevicesError(f"JAX has already started with {have} CPU device{'s' * (have != 1)}, and the number "
                           f"cannot change now, so it cannot be split into {count}. " + _RESTART.format(count=count))


def _backends_started() -> bool:
    """Whether JAX has started its backends (False if this JAX cannot say: the config update then refuses)."""
    try:
        from jax._src import xla_bridge  # no public way to ask without starting the backends

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return False


def use_host_devices(count: int = DEVICES) -> str:
    """Ask XLA to split the host CPU into `count` devices; returns what was done, as a sentence.

    Must run before any JAX operation. If JAX has already started with fewer CPU devices, raises
    HostDevicesError saying to restart the kernel, rather than carry on silently with one device.
    """
    count = _count(count)
    if _backends_started():
        return _already_started(count)
    try:
        # JAX's option for XLA's host device count (it overrides --xla_force_host_platform_device_count in
        # XLA_FLAGS); it refuses once the backends run
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:
        return _already_started(count)
    return f"JAX will split this machine's CPU into {count} devices (set before JAX started)."


@dataclass(frozen=True)
class DeviceChoice:
    """The devices to shard over, whether they are simulated CPU devices, and why these."""

    devices: tuple[Any, ...]
    platform: str  # "tpu", "gpu" or "cpu"
    simulated: bool  # True: CPU devices that share this machine's cores, not separate chips
    reason: str

    def __str__(self) -> str:
        return self.reason

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.reason)


def devices(count: int = DEVICES) -> DeviceChoice:
    """`count` devices to shard over: JAX's accelerators if it has that many, otherwise `count` CPU devices.

    A Colab v5e-1 has one TPU chip, so there the chapter shards over simulated CPU devices, and says so.
    """
    count = _count(count)
    accelerators = jax.devices()
    platform = accelerators[0].platform
    if platform != "cpu" and len(accelerators) >= count:
        return DeviceChoice(tuple(accelerators[:count]), platform, False,
                            f"{count} {platform.upper()} devices ({accelerators[0].device_kind}): real hardware, not "
                            "simulated.")
    cpus = jax.devices("cpu")
    if len(cpus) < count:
        raise HostDevicesError(f"JAX has {len(cpus)} CPU device{'s' * (len(cpus) != 1)}, fewer than the {count} "
                               "asked for. " + _RESTART.format(count=count))
    found = "" if platform == "cpu" else \
        f"JAX sees {len(accelerators)} {platform.upper()} device{'s' * (len(accelerators) != 1)}, fewer than {count}: "
    return DeviceChoice(tuple(cpus[:count]), "cpu", True,
                        f"{found}{count} simulated CPU devices. They share this machine's cores: the same code and "
                        f"the same layouts as on {count} chips, but no speed-up to expect.")


def _span(index: slice, size: int) -> str:
    start, stop, _ = index.indices(size)
    return f"{start}:{stop}"


def layout(array: Any) -> str:
    """Which part of `array` each device holds, by the device's position in the mesh (not its id or kind).

    The same text on TPUs, GPUs and CPU devices, so a notebook can compare it between machines.
    """
    sharding = getattr(array, "sharding", None)
    if sharding is None or not hasattr(array, "addressable_shards"):
        raise TypeError(f"layout() describes a JAX array placed with jax.device_put; got {type(array).__name__}")
    order = list(sharding.mesh.devices.flat) if hasattr(sharding, "mesh") else sorted(sharding.device_set,
                                                                                       key=lambda d: d.id)
    shards = sorted(array.addressable_shards, key=lambda s: order.index(s.device))
    shapes = {tuple(s.data.shape) for s in shards}
    kind = "copies" if all(s.data.shape == array.shape for s in shards) else "pieces"
    head = (f"{array.shape} over {len(shards)} devices: {len(shards)} {kind}"
            + (f" of shape {shapes.pop()}" if len(shapes) == 1 else ""))
    lines = [head]
    for position, shard in enumerate(shards):
        parts = [f"{name} {_span(index, size)}" for name, index, size in
                 zip(("rows", "columns", "axis 2", "axis 3"), shard.index, array.shape, strict=False)]
        lines.append(f"  device {position}: {', '.join(parts) or 'the whole (scalar) array'}")
    return "\n".join(lines)


#: The HLO operations by which devices exchange data. On GPUs and TPUs XLA splits most into an asynchronous
#: pair, e.g. all-reduce-start ... all-reduce-done; `collectives` reports either form by its plain name.
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "collective-permute")
_COLLECTIVE = re.compile(rf"\b({'|'.join(COLLECTIVES)})(?:-start)?\(")


def collectives(hlo_text: str) -> list[str]:
    """The cross-device operations in a compiled program's text, in order, e.g. ['all-reduce'].

    Pass `jax.jit(f).lower(*args).compile().as_text()`: the communication XLA inserted for sharded inputs.
    """
    if not isinstance(hlo_text, str):
        raise TypeError("collectives() reads the compiled program's text: pass "
                        f"jax.jit(f).lower(*args).compile().as_text(), got {type(hlo_text).__name__}")
    return [match.group(1) for line in hlo_text.splitlines() if (match := _COLLECTIVE.search(line))]


def row_sharding_problem(result: Any, expected: np.ndarray, count: int = DEVICES, rtol: float = 1e-5) -> str | None:
    """What is wrong with `result` as `expected` computed with its rows spread over `count` devices; None if right.

    Values must agree to `rtol` times the largest expected value (devices may add in another order). For the
    chapter's sharding exercise (used with h.checks.check_answer).
    """
    if not isinstance(result, jax.Array):
        return f"expected a JAX array, got {type(result).__name__}: return the result of the jitted function"
    if result.shape != expected.shape:
        return f"the result has shape {result.shape}, expected {expected.shape}"
    got, expected = np.asarray(result, np.float64), np.asarray(expected, np.float64)
    worst = float(np.max(np.abs(got - expected), initial=0))
    if not worst <= rtol * float(np.max(np.abs(expected), initial=0)):  # float32 rounding, relative to the scale
        return f"the values differ from the single-device result (largest difference {worst:.3g})"
    held = len(result.sharding.device_set)
    if held != count:
        return f"the result lives on {held} device{'s' * (held != 1)}, expected all {count}: shard the input first"
    rows = {s.data.shape[0] for s in result.addressable_shards}
    if rows != {expected.shape[0] // count}:
        return (f"the devices hold {sorted(rows)} rows each, expected {expected.shape[0] // count}: "
                "shard along the rows (the batch), e.g. PartitionSpec('batch', None)")
    return None


__all__ = ["COLLECTIVES", "DEVICES", "DeviceChoice", "HostDevicesError", "collectives", "devices", "layout",
           "row_sharding_problem", "use_host_devices"]
