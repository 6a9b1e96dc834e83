"""A device's roofs: its memory bandwidth and its compute peaks (with their sources), and the clock a GPU holds."""

from __future__ import annotations

from dataclasses import dataclass

from ..measuring import specs
from ..measuring.cpu import CPUInfo
from ..measuring.hardware import Hardware, Peak
from .arguments import _amount

#: What a roofline or a prediction can be made for: this machine's CPU, a published spec (or its name), or a Peak.
Device = CPUInfo | Hardware | specs.DeviceSpec | Peak | str


@dataclass(frozen=True)
class Roof:
    """One compute roof: its dtype, FLOP/s, and where the number comes from."""

    dtype: str  # "float32", "bfloat16", ... ("" for a Peak, which is already for one dtype)
    flops: float  # FLOP/s
    origin: str  # "estimated", "measured" or "published"
    source: str


@dataclass(frozen=True)
class Roofs:
    """A device's roofline: one memory-bandwidth roof and one or more compute roofs (highest first)."""

    device: str
    bandwidth: float  # bytes/s
    bandwidth_origin: str
    bandwidth_source: str
    compute: tuple[Roof, ...]
    kind: str  # "cpu", "gpu", "tpu" or "" when unknown
    #: FP32 FLOP/s NumPy's BLAS reaches on all of this CPU's cores (its best on one core, measured here, times the
    #: cores); None for a published spec. A BLAS built for narrower vectors than the CPU has (AVX2 kernels on an
    #: AVX-512 core) tops out below the roof, so CPU matmul predictions take the lower of the two.
    blas_flops: float | None = None
    #: The share of its peaks a card's compute reaches at the clock it holds under load (specs.held_clock over the
    #: clock the peak implies): below 1 for a power-capped T4. Predictions use it; the roofs stay the published peaks.
    held_share: float = 1.0

    @property
    def dtypes(self) -> list[str]:
        """The dtypes with a compute roof."""
        return [r.dtype for r in self.compute]

    def roof(self, dtype: str | None = None) -> Roof:
        """The compute roof for `dtype` (None: the highest); a ValueError listing the dtypes on file otherwise."""
        if dtype is not None and not isinstance(dtype, str):
            raise TypeError(f"dtype must be a dtype name such as 'float32' (or None: the highest roof); got "
                            f"{type(dtype).__name__} {dtype!r:.40}")
        if dtype is None or (len(self.compute) == 1 and not self.compute[0].dtype):
            return self.compute[0]
        for r in self.compute:
            if r.dtype == dtype:
                return r
        stand_in = specs.stand_in_roof(self.kind, dtype, self.dtypes)  # the rule hardware.peak follows too
        if stand_in is not None:
            return self.roof(stand_in[0])
        raise ValueError(f"dtype {dtype!r}: {self.device} has no such roof on file; available: "
                         f"{', '.join(self.dtypes)}")

    def ridge(self, dtype: str | None = None) -> float:
        """FLOP per byte where the compute roof meets the bandwidth roof: below it, memory limits speed."""
        return self.roof(dtype).flops / self.bandwidth

    def attainable(self, intensity: float, dtype: str | None = None) -> float:
        """FLOP/s the roofline allows at `intensity` FLOP/byte: min(peak, intensity x bandwidth)."""
        return min(self.roof(dtype).flops, _amount("intensity (FLOP per byte)", intensity) * self.bandwidth)


def _origin(source: str) -> str:
    lowered = source.lower()
    for origin in ("estimated", "measured", "published"):
        if lowered.startswith(origin):
            return origin
    return ""


def published_spec(device: str | specs.DeviceSpec) -> specs.DeviceSpec:
    """The published spec called `device` (or `device` itself); a ValueError naming the known devices otherwise."""
    if isinstance(device, specs.DeviceSpec):
        return device
    if not isinstance(device, str) or not device.strip():
        raise TypeError(f"device must be a spec name or object, got {device!r:.60}")
    spec = specs.named(device)
    if spec is None:
        raise ValueError(f"no published specs for {device!r:.80}; known devices: "
                         f"{', '.join(s.name for s in specs.ALL)} (or an alias such as 'T4', 'H100 SXM', 'TPU v5e')")
    return spec


def roofs(device: Device) -> Roofs:
    """The roofs of a CPUInfo (or Hardware: its CPU), a published DeviceSpec (or its name), or a Peak."""
    if isinstance(device, Hardware):
        device = device.cpu
    if isinstance(device, str):
        device = published_spec(device)
    if isinstance(device, CPUInfo):
        bw = float(device.peak_bandwidth.value)
        compute = [Roof("float32", device.peak_fp32, "estimated", f"estimated: {device.formula()}"),
                   Roof("float64", device.peak_fp64, "estimated", "estimated: half the fp32 SIMD lanes")]
        bf16 = device.peak_flops("bfloat16")
        if bf16 and bf16 > device.peak_fp32:  # a bf16 unit (AMX, AVX512_BF16); otherwise bf16 runs at fp32 speed
            compute.append(Roof("bfloat16", bf16, "estimated", f"estimated: {device.sources().get('bf16', '')}"))
        blas = device.blas_fp32_per_core
        return Roofs(f"CPU: {device.model}", bw, _origin(device.peak_bandwidth.source) or "measured",
                     device.peak_bandwidth.source, tuple(sorted(compute, key=lambda r: -r.flops)), "cpu",
                     float(blas.value) * int(device.cores.value) if blas is not None else None)
    if isinstance(device, specs.DeviceSpec):
        src = f"published: {device.source}"
        compute = tuple(Roof(d, v, "published", src)
                        for d, v in sorted(device.peak_flops.items(), key=lambda kv: -kv[1]))
        return Roofs(device.name, float(device.peak_bandwidth), "published", src, compute, device.kind,
                     held_share=held_share(device))
    if isinstance(device, Peak):
        if not device.flops or not device.bandwidth:
            raise ValueError(f"no roofline for {device.device}: {device.source}")
        cpu = device.device.startswith("CPU")
        bw_origin = "measured" if cpu else _origin(device.source)
        bw_source = "measured here (see hardware())" if cpu else device.source
        return Roofs(device.device, float(device.bandwidth), bw_origin, bw_source,
                     (Roof("", float(device.flops), _origin(device.source), device.source),), "cpu" if cpu else "")
    raise TypeError("the device must be a CPUInfo, Hardware, specs.DeviceSpec, Peak or spec name (e.g. "
                    f"{specs.REFERENCE_GPU!r}); got {type(device).__name__}")


def attainable(device: Device, intensity: float, dtype: str = "float32") -> float:
    """FLOP/s the roofline allows at `intensity` FLOP/byte on `device`: min(peak, intensity x bandwidth)."""
    return roofs(device).attainable(_amount("intensity (FLOP per byte)", intensity, positive=True), dtype)


def _gpu_spec(device: Device) -> tuple[specs.DeviceSpec, specs.SMLimits]:
    """The published spec of a GPU (or of its name) and the limits of one of its SMs."""
    spec = published_spec(device if isinstance(device, str | specs.DeviceSpec) else str(device))
    return spec, specs.sm_limits(spec)


def peak_clock(device: Device) -> float:
    """An SM's clock (Hz) as the published float32 peak implies it: peak / (2 x SMs x float32 lanes per SM)."""
    spec, sm = _gpu_spec(device)
    return spec.peak_flops["float32"] / (2 * spec.sms * sm.fp32_lanes)  # type: ignore[operator]


def sm_clock(device: Device) -> float:
    """The SM clock (Hz) the model runs a GPU at: the one it holds under load where a measurement is on file
    (specs.held_clock: a power-capped T4), otherwise the clock its published float32 peak implies."""
    spec, _ = _gpu_spec(device)
    return spec.held_clock or peak_clock(spec)


def held_share(spec: specs.DeviceSpec) -> float:
    """The held clock over the peak's clock (1.0 where none is on file): the share of its peaks a card reaches."""
    if not spec.held_clock:
        return 1.0
    return spec.held_clock / peak_clock(spec)
