"""Which device? The same model turned into a decision: a workload on this CPU and on published devices, term by
term, the winner and the term that decided it."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.validate import available_memory, flag, fraction, positive_int
from ..measuring.cpu import CPUInfo
from ..measuring.hardware import Hardware
from ..measuring.host_calls import numpy_call
from .arguments import _amount, _choice
from .copies import predict_copy_seconds
from .costs import DEFAULT_CALL, JAX_CALL, OVERHEADS
from .roofs import Device, published_spec, roofs
from .seconds import _combine, _compute_and_memory, fixed_device_seconds

#: The devices `decide` sets beside this CPU: Colab's free GPU, a large GPU and Colab's TPU.
DECIDE_DEVICES = ("NVIDIA T4", "NVIDIA H100 SXM", "TPU v5e")
#: The terms of an estimate, in the order a table shows them.
TERMS = ("compute", "memory", "calls", "host link", "serial")


@dataclass(frozen=True)
class Estimate:
    """One device's predicted time for a workload, term by term (seconds), and whether its data fits there."""

    device: str
    terms: dict[str, float]
    fits: bool = True
    why_not: str = ""

    @property
    def seconds(self) -> float:
        """max(compute, memory) + the calls' fixed costs + the host link + the serial part."""
        t = self.terms
        return max(t["compute"], t["memory"]) + t["calls"] + t["host link"] + t["serial"]

    @property
    def decided_by(self) -> str:
        """The term that costs the most: what to change to make this device faster."""
        return max(TERMS, key=self.terms.__getitem__)


@dataclass(frozen=True)
class Decision:
    """What `decide` predicts for one workload on each device, and the winner."""

    workload: str
    estimates: tuple[Estimate, ...]

    @property
    def winner(self) -> Estimate | None:
        """The fastest device whose memory holds the data (None when it fits on none of them)."""
        return min((e for e in self.estimates if e.fits), key=lambda e: e.seconds, default=None)

    def __str__(self) -> str:
        from ..measuring.timing import format_seconds

        head = f"{self.workload or 'workload'}: {'device':<22}{'predicted':>11}  decided by"
        rows = [head] + [f"{'':<{len(self.workload or 'workload') + 2}}{e.device:<22}"
                         + (f"{format_seconds(e.seconds):>11}  {e.decided_by}" if e.fits else
                            f"{'-':>11}  {e.why_not}") for e in self.estimates]
        w = self.winner
        rows.append(f"winner: {w.device}, {format_seconds(w.seconds)} (decided by {w.decided_by})" if w else
                    "winner: none: the data fits in the memory of none of these devices")
        return "\n".join(rows)

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(str(self))  # type: ignore[attr-defined]


#: How `decide` counts an accelerator's calls: each device's usual kind (DEFAULT_CALL: a CuPy call on a GPU, a JAX
#: call on a TPU), or a jitted JAX function's on every device (JAX_CALL).
CALL_STYLES = ("default", "jax")


def decide(*, flops: float, bytes: float, calls: int = 1, kernels: int = 1, host_bytes: float = 0.0,  # noqa: A002
           serial_fraction: float = 0.0, footprint: float = 0.0, dtype: str = "float32", matmul: bool = False,
           call: str = "default", timed: str = "synced", cpu: CPUInfo | Hardware | None = None,
           devices: tuple[str, ...] = DECIDE_DEVICES, workload: str = "") -> Decision:
    """Predict a workload on this CPU and on each of `devices`, name the winner and the term that decided it.

    flops, bytes: the whole workload's arithmetic and memory traffic. calls: separate calls it takes (a loop of
    dependent steps is one call per step), each of `kernels` kernels on a GPU, counted as `call` says
    (CALL_STYLES). host_bytes: bytes that cross the host link (an accelerator only). serial_fraction: the share
    of the work (its FLOPs and bytes) that cannot run in parallel: it runs on one core of this CPU whatever the
    device (Amdahl's law). footprint: bytes the device must hold at once (a device with less memory is out; for
    this CPU, the memory free now). timed: "synced" (each call waits for the last) or "pipelined" (calls queue
    up, their cost hidden behind the device's work), as predict_seconds counts them.
    """
    flops, nbytes = _amount("flops", flops), _amount("bytes", bytes)
    host_bytes, footprint = _amount("host_bytes", host_bytes), _amount("footprint (bytes)", footprint)
    calls, kernels = positive_int("calls", calls), positive_int("kernels", kernels)
    call, matmul = _choice("call", call, CALL_STYLES), flag("matmul", matmul)
    timed = _choice("timed", timed, ("synced", "pipelined"))
    serial_fraction = fraction("serial_fraction", serial_fraction, "the share of the work that stays serial")
    if isinstance(devices, str) or not isinstance(devices, tuple | list):
        raise ValueError(f"devices must be a tuple of spec names such as {DECIDE_DEVICES} (or () for this CPU "
                         f"alone); got {devices!r:.60}")
    if cpu is None:
        from ..measuring.hardware import hardware

        cpu = hardware().cpu
    host = cpu.cpu if isinstance(cpu, Hardware) else cpu
    if not isinstance(host, CPUInfo):
        raise TypeError(f"cpu must be a CPUInfo or Hardware (h.hardware()); got {type(cpu).__name__}")
    # its bandwidth roof is a one-thread copy (helpers.measuring.cpu): one core's, as wanted here
    host_roofs = roofs(host)
    core_flops = host_roofs.roof(dtype).flops / max(1, int(host.cores.value))
    serial = max(serial_fraction * flops / core_flops, serial_fraction * nbytes / host_roofs.bandwidth)
    work = dict(flops=(1 - serial_fraction) * flops, nbytes=(1 - serial_fraction) * nbytes, calls=calls,
                kernels=kernels, serial=serial, dtype=dtype, matmul=matmul, footprint=footprint, call=call,
                timed=timed)
    estimates = [_estimate(host, f"this CPU ({host.model})", host_bytes=0.0, **work)]
    for name in devices:
        spec = published_spec(name)
        estimates.append(_estimate(spec, spec.name, host_bytes=host_bytes, **work))
    return Decision(str(workload), tuple(estimates))


def _estimate(device: Device, name: str, *, flops: float, nbytes: float, calls: int, kernels: int,
              host_bytes: float, serial: float, dtype: str, matmul: bool, footprint: float, call: str,
              timed: str) -> Estimate:
    r = roofs(device)
    compute, memory = _compute_and_memory(r, flops, nbytes, dtype, matmul)
    kind_of_call = (JAX_CALL if call == "jax" else DEFAULT_CALL).get(r.kind, "none")
    if r.kind == "cpu" and call != "jax":
        overhead = numpy_call()  # a NumPy call, measured here
    else:
        overhead = OVERHEADS[kind_of_call].value
    floors = fixed_device_seconds(r.kind, kernels, program=kind_of_call.startswith("jax"))
    # the calls' term: what they add to the roofs, counted as predict_seconds counts it (synced or pipelined)
    busy = max(compute, memory)
    added = calls * _combine(r, overhead, busy / calls + floors, timed) - busy
    link = predict_copy_seconds(device, host_bytes, timed="kernel") if host_bytes and r.kind != "cpu" else 0.0
    terms = {"compute": compute, "memory": memory, "calls": max(added, 0.0), "host link": link, "serial": serial}
    if r.kind == "cpu":
        capacity, holds = available_memory(), "has free"
    else:
        capacity, holds = getattr(device, "memory_bytes", None), "holds"
    if capacity and footprint > capacity:
        return Estimate(name, terms, False, f"needs {footprint / 1e9:,.0f} GB, {holds} {capacity / 1e9:,.0f} GB")
    return Estimate(name, terms)
