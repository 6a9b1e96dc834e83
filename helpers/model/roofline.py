"""The series' performance model: how long work should take on a device, from its roofs and the cost of each call.

    device time = max(FLOPs / (compute roof x efficiency), bytes / (bandwidth x efficiency)) + kernels x kernel floor
    one call    = host overhead + device time        (synced: the caller waits for every call)
                = max(host overhead, device time)    (pipelined: calls queue up, one wait at the end)

Every constant below says where it comes from. `docs/predictions.md` sets the model beside every published
end-to-end measurement on file (`helpers/data/published-measurements.json`); a test keeps each ratio within 2x.
This module is infrastructure: plots and chapter modules import it, it imports no chapter module and no plots.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.validate import available_memory, finite, flag, fraction, positive_int
from ..measuring import specs
from ..measuring.cpu import BLAS_BEST_EFFICIENCY, CPUInfo
from ..measuring.hardware import Hardware, Peak
from ..measuring.host_calls import numpy_call

#: What a roofline or a prediction can be made for: this machine's CPU, a published spec (or its name), or a Peak.
Device = CPUInfo | Hardware | specs.DeviceSpec | Peak | str


# --------------------------------------------------------------------------------------------------------------
# Roofs.


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


# --------------------------------------------------------------------------------------------------------------
# What the roofs leave out: the cost of a call, the fixed cost of a kernel, and how close real code gets.


@dataclass(frozen=True)
class Cost:
    """One constant of the model: its value, what it is, and where it comes from."""

    value: float
    what: str
    source: str


#: The host's cost of one call, by kind of call: the time before the device can start (and, synced, after it
#: ends). "none" is for code whose call costs nothing worth counting (a NumPy call on large arrays).
OVERHEADS: dict[str, Cost] = {
    "none": Cost(0.0, "no per-call cost counted", "the model counts none"),
    "cupy": Cost(10e-6, "one CuPy call from Python: argument checks, kernel cache lookup, launch",
                 "CuPy's benchmark of cp.abs on 100 elements: 'CPU: 9.908 us' per call "
                 "(https://github.com/cupy/cupy/pull/3298); PyTorch's eager calls cost 7.1 µs on an A100 "
                 "(https://github.com/flagos-ai/FlagGems/issues/4558) and 7.29 µs on an H100 "
                 "(https://github.com/pytorch/helion/pull/3009)"),
    "jax_cpu": Cost(6.81e-6, "one call of a jitted JAX function on the CPU (dispatch)",
                    "6.81 µs for a small jitted network on a MacBook CPU (https://github.com/jax-ml/jax/issues/5485)"),
    "jax_gpu": Cost(6.81e-6 + 3e-6, "one call of a jitted JAX function on a GPU: dispatch plus one launch",
                    "assumed: no published figure for JAX on a GPU was found; JAX's dispatch on a CPU, 6.81 µs "
                    "(https://github.com/jax-ml/jax/issues/5485), plus a CUDA launch, 'about 3 microseconds' "
                    "(https://forums.developer.nvidia.com/t/too-much-time-for-kernel-launch-latency/233645/3)"),
    "jax_tpu": Cost(100e-6, "one synced call of a jitted JAX function on a TPU: dispatch, launch, and the wait",
                    "set from one figure: JAX's TPU matmul guide times a 1024³ bf16 matmul on a v5e at 0.1194 ms "
                    "end to end, of which the roofline at 95% of the peak is 0.0115 ms, leaving 0.108 ms, rounded "
                    "to one significant figure since no second published figure checks it "
                    "(https://github.com/jax-ml/jax/blob/"
                    "ee6cce5601fe1a81cec914bf50f3cbd9a72d69b1/docs/pallas/tpu/matmul.ipynb); no published figure "
                    "separates dispatch from the wait, so pipelined calls on a TPU are predicted as a range: from the "
                    "host's dispatch alone, 6.81 µs (JAX's dispatch of a jitted call, measured on a CPU: "
                    "https://github.com/jax-ml/jax/issues/5485), to this whole cost"),
}

_GPU_BENCHES = "https://github.com/te42kyfo/gpu-benches/tree/1c36d509ee717dca9215c27135fa1e611bb03ed1/gpu-small-kernels"

#: The device's fixed cost of one kernel launched on its own, however small: the least time it takes after the
#: kernel before it on the same stream (a GPU must fill its SMs and drain them).
KERNEL_FLOOR: dict[str, Cost] = {
    "gpu": Cost(2.433e-6, "the least time a GPU kernel takes when it follows another on one stream",
                "te42kyfo/gpu-benches queues 10,000 calls of a small streaming kernel and fits T = V / (a + V / b): "
                f"'H200 ... fit: a= 2433 ns' (and 'A100_80 ... fit: a= 2555 ns') ({_GPU_BENCHES})"),
}

#: The device's cost of one kernel inside a compiled program: XLA replays a jitted program's kernels from a CUDA
#: graph (its "command buffers"), which starts each kernel sooner than a launch from the host does.
PROGRAM_KERNEL: dict[str, Cost] = {
    "gpu": Cost(1.26e-6, "the least time a kernel of a compiled program (a CUDA graph) takes after the one before",
                "te42kyfo/gpu-benches' H200 runs with its -graph option: 65,536 bytes a kernel at best 52 GB/s "
                f"(gpu-small-kernels/h200_graph.txt: '4096  64kB     48     49     51     51     52     50'), 1.26 µs "
                f"({_GPU_BENCHES}); XLA puts a program's fusions and cuBLAS calls in command buffers by default "
                "(xla/debug_options_flags.cc: FUSION, CUBLAS, CUBLASLT, CUSTOM_CALL, CUDNN, https://github.com/openxla/"
                "xla/blob/00ccad5d1736ed6fc9234ae7460407891be5fbe2/xla/debug_options_flags.cc)"),
}

#: One iteration of a loop compiled into a program (jax.lax.scan) on a GPU, with a body of one kernel: XLA's
#: runtime launches the body again from the host every iteration. Each further kernel of the body adds
#: PROGRAM_KERNEL. No figure for a TPU was found: there the model counts no cost per iteration (a lower bound).
LOOP_STEP: dict[str, Cost] = {
    "gpu": Cost(8.05e-6, "one iteration of a compiled loop (jax.lax.scan) on a GPU, with a body of one kernel",
                "derived from QuantEcon's published lax.scan of a scalar recurrence on a T4 (AWS g4dn.2xlarge, JAX "
                "0.8.1, jax[cuda13]), 100,000 iterations: 'Default device avg: 0.804787s', about '~8µs per "
                "iteration' (https://github.com/QuantEcon/lecture-python-programming/pull/437); XLA's while thunk "
                "runs the body's thunks from the host once per iteration (https://github.com/openxla/xla/blob/"
                "7eb882f5f905e7804479125541d701125eb39c2e/xla/backends/gpu/runtime/while_thunk.cc)"),
}

#: The fraction of the compute roof a large matmul reaches, by kind of device.
MATMUL_EFFICIENCY: dict[str, Cost] = {
    "gpu": Cost(0.75, "fraction of the published tensor-core or CUDA-core peak a large cuBLAS matmul reaches",
                "between the published bests: H100 bf16 4096³ 788.72 of 989 TFLOP/s (80%), A100 fp16 8192³ 253.7 "
                "of 312 (81%), T4 fp16 41.91 of 65 (64%), L4 fp16 53.02 of 121 (44%) "
                "(https://github.com/zzc0721/torch-performance-test-data, "
                "https://github.com/Azure/AI-benchmarking-guide); the T4 and L4 are power-limited cards"),
    "tpu": Cost(0.95, "fraction of the bf16 MXU peak a large XLA matmul reaches",
                "JAX's v5e timings: 16384³ in 46.953 ms, 95% of 197 TFLOP/s "
                "(https://github.com/jax-ml/jax/blob/"
                "ee6cce5601fe1a81cec914bf50f3cbd9a72d69b1/docs/pallas/tpu/sparse.ipynb)"),
    "cpu": Cost(BLAS_BEST_EFFICIENCY, "fraction of the SIMD peak a tuned BLAS reaches",
                "the rule the CPU peak is built on (helpers.measuring.cpu.BLAS_BEST_EFFICIENCY): OpenBLAS, MKL and "
                "Accelerate top out at 85-92%"),
}

#: The fraction of the memory roof a large streaming kernel reaches, by kind of device.
MEMORY_EFFICIENCY: dict[str, Cost] = {
    "gpu": Cost(0.8, "fraction of the published memory bandwidth a large copy or elementwise kernel reaches",
                "T4 copy_ 240 of 320 GB/s (75%, https://github.com/chsasank/device-benchmarks); A100 80GB "
                "BabelStream Triad 1.70 of 2.039 TB/s (83%) and H100 2.97 of 3.35 TB/s (89%) "
                "(https://github.com/Azure/AI-benchmarking-guide)"),
    "tpu": Cost(0.8, "fraction of the published HBM bandwidth an elementwise kernel reaches",
                "assumed as for GPUs: no published v5e bandwidth measurement was found"),
    "cpu": Cost(1.0, "the CPU's bandwidth roof is itself a measured copy", "measured here (helpers.measuring.cpu)"),
}

#: The fraction of the memory roof a kernel that gives each thread one 4-byte number at a time reaches (CuPy's
#: elementwise kernels: one element per thread, 128 threads a block), where a published measurement shows that it
#: falls short of MEMORY_EFFICIENCY: a memory as fast as an H200's needs more bytes in flight than such threads
#: keep (Little's law), where 16-byte loads and several elements a thread (PyTorch's kernels) keep enough.
NARROW_LOAD_EFFICIENCY: dict[str, Cost] = {
    "NVIDIA H200": Cost(2263 / 4800, "fraction of the H200's 4.8 TB/s a kernel with 4 bytes a thread in flight "
                        "reaches",
                        "derived from te42kyfo/gpu-benches' H200 stream rows (one 8-byte load a thread): the scale "
                        "kernel with 67,584 threads, as many bytes in flight as 135,168 threads of 4 bytes, "
                        "'512       67584   50.0 %  |  GB/s:        3670       1707       2263' (init, read, scale), "
                        "2,263 GB/s (https://github.com/te42kyfo/gpu-benches/blob/"
                        "1c36d509ee717dca9215c27135fa1e611bb03ed1/gpu-stream/h200.txt)"),
}

#: The call a device's work is assumed to come from when none is named.
DEFAULT_CALL = {"cpu": "none", "gpu": "cupy", "tpu": "jax_tpu", "": "none"}
#: The call a jitted JAX function makes on each kind of device.
JAX_CALL = {"cpu": "jax_cpu", "gpu": "jax_gpu", "tpu": "jax_tpu"}
#: How a learner times calls: "synced" waits for each one, "pipelined" queues them and waits once at the end
#: (h.benchmark, %timeit of an asynchronous call), "kernel" is device time alone (CUDA events, a profiler).
TIMINGS = ("synced", "pipelined", "kernel")


def _amount(name: str, value: object, positive: bool = False) -> float:
    """A finite number of FLOPs, bytes or seconds, zero or more (positive: more than zero)."""
    if isinstance(value, bool) or not finite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be a finite number, {'more than zero' if positive else 'zero or more'}; "
                         f"got {value!r:.40}")
    return float(value)  # type: ignore[arg-type]


def _choice(name: str, value: object, accepted: tuple[str, ...] | dict[str, object]) -> str:
    """`value` if it is one of the `accepted` names (a str: a list or an array is not a name); else a ValueError."""
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, accepted))}; got {value!r:.40}")
    return str(value)


def _constant(table: dict[str, Cost], kind: str, default: float) -> float:
    return table[kind].value if kind in table else default


def roofline_seconds(device: Device, *, flops: float, bytes: float, dtype: str = "float32") -> float:  # noqa: A002
    """What the roofline alone says: max(flops / peak, bytes / bandwidth); no efficiency, no cost of a call."""
    r = roofs(device)
    flops, nbytes = _amount("flops", flops), _amount("bytes", bytes)
    return max(flops / r.roof(dtype).flops, nbytes / r.bandwidth)


def device_seconds(device: Device, *, flops: float, bytes: float, dtype: str | None = "float32",  # noqa: A002
                   kernels: int = 1, matmul: bool = False, program: bool = False, loop_steps: int = 0,
                   narrow: bool = False) -> float:
    """Seconds the device itself is busy: the roofs at the efficiency real code reaches, plus each kernel's floor.

    matmul: whether the arithmetic is a matrix product (its efficiency is MATMUL_EFFICIENCY); otherwise the
    arithmetic is elementwise and the memory side is what decides. program: the kernels belong to one compiled
    program (a jitted call: PROGRAM_KERNEL each), rather than launched one by one (KERNEL_FLOOR each). loop_steps:
    iterations of a compiled loop among them (LOOP_STEP each, its first kernel included). narrow: the kernels keep
    one 4-byte number a thread in flight, as CuPy's elementwise kernels do (NARROW_LOAD_EFFICIENCY).
    """
    r = roofs(device)
    flops, nbytes = _amount("flops", flops), _amount("bytes", bytes)
    kernels, matmul = positive_int("kernels", kernels), flag("matmul", matmul)
    return max(_compute_and_memory(r, flops, nbytes, dtype, matmul, flag("narrow", narrow))) + fixed_device_seconds(
        r.kind, kernels, flag("program", program), loop_steps)


def fixed_device_seconds(kind: str, kernels: int, program: bool = False, loop_steps: int = 0) -> float:
    """The device's fixed costs of `kernels` kernels on a device of `kind`, however small their work: each a
    KERNEL_FLOOR, or a PROGRAM_KERNEL inside one compiled program; `loop_steps` of them start an iteration of a
    compiled loop instead (LOOP_STEP, its first kernel included)."""
    loop_steps = _count("loop_steps", loop_steps)
    if loop_steps > kernels:
        raise ValueError(f"loop_steps ({loop_steps:,}) cannot exceed kernels ({kernels:,}): each iteration runs at "
                         "least one kernel")
    each = _constant(PROGRAM_KERNEL if program or loop_steps else KERNEL_FLOOR, kind, 0.0)
    return loop_steps * _constant(LOOP_STEP, kind, 0.0) + (kernels - loop_steps) * each


def _count(name: str, value: object) -> int:
    """A whole number, zero or more."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be a whole number, zero or more; got {value!r:.40}")
    return int(value)


def _compute_and_memory(r: Roofs, flops: float, nbytes: float, dtype: str | None, matmul: bool,
                        narrow: bool = False) -> tuple[float, float]:
    """(seconds of arithmetic, seconds of memory traffic) at the efficiency real code reaches on these roofs;
    narrow: the kernel keeps one 4-byte number a thread in flight (NARROW_LOAD_EFFICIENCY, where published)."""
    rate = r.roof(dtype).flops * (_constant(MATMUL_EFFICIENCY, r.kind, 1.0) if matmul else 1.0) * r.held_share
    if matmul and r.blas_flops and dtype in (None, "float32"):  # a CPU: its BLAS may not reach the roof
        rate = min(rate, r.blas_flops)
    compute = flops / rate
    efficiency = _constant(MEMORY_EFFICIENCY, r.kind, 1.0)
    if narrow and r.device in NARROW_LOAD_EFFICIENCY:
        efficiency = NARROW_LOAD_EFFICIENCY[r.device].value
    return compute, nbytes / (r.bandwidth * efficiency)


def _calls(device: Device, call: str | None, timed: str, call_seconds: float | None = None) -> tuple[Roofs, float]:
    """The device's roofs and the host's cost of one call of kind `call` (measured here, when `call_seconds`)."""
    r = roofs(device)
    timed = _choice("timed", timed, TIMINGS)
    chosen = DEFAULT_CALL.get(r.kind, "none") if call is None else _choice("call", call, OVERHEADS)
    cost = OVERHEADS[chosen].value if call_seconds is None else _amount("call_seconds", call_seconds)
    return r, 0.0 if timed == "kernel" else cost


#: A TPU's cost per call when calls are pipelined. No published figure was found (OVERHEADS["jax_tpu"] is fitted
#: to synced calls), so the model gives a range: from this, the host's dispatch alone, which no queue hides, to
#: the synced cost, where pipelining hides nothing. predict_seconds(bound=...) picks an end; predict_range both.
TPU_PIPELINED_LEAST = Cost(OVERHEADS["jax_cpu"].value, "the least a pipelined call of a jitted JAX function on a "
                           "TPU costs: the host's dispatch",
                           "assumed: JAX's dispatch of a jitted call, measured on a CPU, 6.81 µs "
                           "(https://github.com/jax-ml/jax/issues/5485); no published figure for pipelined TPU "
                           "calls was found, so a TPU's pipelined calls are predicted as a range from this to the "
                           "synced cost")
#: Which end of a range a prediction gives ("upper": the slower; the two agree except for a TPU's pipelined calls).
BOUNDS = ("lower", "upper")


def _combine(r: Roofs, overhead: float, device: float, timed: str, bound: str = "upper") -> float:
    if timed == "pipelined" and r.kind != "tpu":
        return max(overhead, device)
    if timed == "pipelined" and _choice("bound", bound, BOUNDS) == "lower":  # a TPU: see TPU_PIPELINED_LEAST
        return max(TPU_PIPELINED_LEAST.value, device)
    return overhead + device


def predict_seconds(device: Device, *, flops: float, bytes: float, dtype: str | None = "float32",  # noqa: A002
                    calls: int = 1, call: str | None = None, kernels: int = 1, timed: str = "synced",
                    matmul: bool = False, bound: str = "upper", loop_steps: int = 0,
                    call_seconds: float | None = None, narrow: bool = False) -> float:
    """Seconds for work split over `calls` separate calls: device time plus each call's host overhead.

    flops, bytes: the work of all the calls together. call: the kind of call (a key of OVERHEADS; None: the
    device's usual one, DEFAULT_CALL); a jitted JAX call runs its kernels as one program (PROGRAM_KERNEL each).
    kernels: device kernels per call (XLA fuses a jitted step into a few). loop_steps: iterations of a compiled
    loop per call (jax.lax.scan: LOOP_STEP each). timed: "synced", "pipelined" or "kernel" (TIMINGS). dtype None:
    the highest roof (for work without FLOPs). bound: which end of a range (BOUNDS; a TPU's pipelined calls have
    one, TPU_PIPELINED_LEAST). call_seconds: the host's cost of one call measured on this machine
    (helpers.measuring.host_calls), for the device that is here; None: the published figure, OVERHEADS[call]. narrow:
    CuPy's own elementwise kernels, one 4-byte number a thread (NARROW_LOAD_EFFICIENCY).
    """
    calls = positive_int("calls", calls)
    r, overhead = _calls(device, call, timed, call_seconds)
    program = call is not None and call.startswith("jax")
    per_call = device_seconds(_resolved(device), flops=_amount("flops", flops) / calls,
                              bytes=_amount("bytes", bytes) / calls, dtype=dtype, kernels=kernels, matmul=matmul,
                              program=program, loop_steps=loop_steps, narrow=narrow)
    return calls * _combine(r, overhead, per_call, timed, bound)


def predict_range(predict: Callable[..., float], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """(lower, upper) seconds from `predict` (predict_seconds or predict_matmul_seconds) with these arguments:
    equal, except where the model has no single figure (a TPU's pipelined calls, TPU_PIPELINED_LEAST)."""
    if predict not in (predict_seconds, predict_matmul_seconds):
        raise ValueError(f"predict must be roofline.predict_seconds or roofline.predict_matmul_seconds; got "
                         f"{predict!r:.60}")
    return predict(*args, **kwargs, bound="lower"), predict(*args, **kwargs, bound="upper")


def _resolved(device: Device) -> Device:
    """`device` itself, with a spec name looked up once."""
    return published_spec(device) if isinstance(device, str) else device


#: The side of the matrix units XLA pads a TPU matmul to: 128 x 128 MXUs up to v5p, 256 x 256 on v6e.
MXU_SIDE = {"TPU v6e": 256}
DEFAULT_MXU_SIDE = 128


def mxu_side(device: Device) -> int:
    """The side of the device's matrix units (128, or 256 on a v6e); 1 for a device that pads nothing."""
    r = roofs(device)
    return MXU_SIDE.get(r.device, DEFAULT_MXU_SIDE) if r.kind == "tpu" else 1


def padded(size: int, side: int) -> int:
    """`size` rounded up to a multiple of `side`: the rows and columns a matrix unit really computes."""
    return -(-positive_int("size", size) // positive_int("side", side)) * side


#: Bytes per number of each dtype a matmul prediction takes ("tf32": float32 numbers on the TF32 roof).
ITEMSIZE = {"float64": 8, "float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2, "float16_acc16": 2, "int8": 1,
            "float8": 1}


def predict_matmul_seconds(device: Device, m: int, k: int, n: int, dtype: str = "bfloat16", *,
                           timed: str = "synced", bound: str = "upper", call_seconds: float | None = None) -> float:
    """One call of a jitted (m, k) @ (k, n) on `device`, as a learner times it end to end.

    On a TPU each side is padded to the MXU side (128, or 256 on v6e), and the padded work is what the MXUs do. On
    a GPU whose SM count is known, the output's tiles come in waves over the SMs (matmul_wave_seconds): a small
    product leaves SMs idle. dtype: the roof the arithmetic runs on ("float32" is full float32; pass "tf32" for
    JAX's default float32 precision on a GPU with TF32 tensor cores). Inputs and output are read and written once,
    in `dtype`'s size. bound: which end of a range, as predict_seconds. call_seconds: a call's cost measured on this
    host (helpers.measuring.host_calls), as predict_seconds.
    """
    m, k, n = (positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    device = _resolved(device)
    r, overhead = _calls(device, JAX_CALL.get(roofs(device).kind, "none"), timed, call_seconds)
    side = mxu_side(device)
    flops = 2 * padded(m, side) * padded(k, side) * padded(n, side)
    if not isinstance(dtype, str) or dtype not in ITEMSIZE:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, ITEMSIZE))}; got {dtype!r:.40}")
    itemsize = ITEMSIZE[dtype]
    nbytes = (m * k + k * n + m * n) * itemsize
    busy = max(device_seconds(device, flops=flops, bytes=nbytes, dtype=dtype, matmul=True),
               matmul_wave_seconds(device, m, k, n, dtype))
    return _combine(r, overhead, busy, timed, bound)


#: The side of the square tile of C one thread block of a library matmul computes (cuBLAS picks among several
#: sizes; 128 x 128 stands for them): a product whose tiles do not fill every SM waits on the ones that run.
MATMUL_TILE = Cost(128, "the side of the output tile one thread block of a library (cuBLAS) matmul computes",
                   "assumed, among the tile sizes NVIDIA's Matrix Multiplication Background User's Guide lists for "
                   "cuBLAS (section 2.3, https://docs.nvidia.com/deeplearning/performance/"
                   "dl-performance-matrix-multiplication/index.html); its section 3.2, wave quantization, is the rule")


def matmul_wave_seconds(device: Device, m: int, k: int, n: int, dtype: str) -> float:
    """A library matmul on a GPU as waves of MATMUL_TILE x MATMUL_TILE output tiles, one tile per SM at a time,
    each SM at its share of the peak (at MATMUL_EFFICIENCY), plus the kernel's floor; 0.0 where the SM count is
    not known (or for a CPU or a TPU). For a large product this is the roofline's own time, a few percent more."""
    if not isinstance(device, specs.DeviceSpec) or device.kind != "gpu" or not device.sms:
        return 0.0
    r, side = roofs(device), int(MATMUL_TILE.value)
    tiles = -(-m // side) * -(-n // side)
    waves = -(-tiles // device.sms)
    per_sm = r.roof(dtype).flops * MATMUL_EFFICIENCY["gpu"].value / device.sms
    return waves * 2 * side * side * k / per_sm + KERNEL_FLOOR["gpu"].value


#: The guide every Pallas constant and check comes from: JAX's Pallas TPU matmul guide, its stored v5e outputs.
PALLAS_GUIDE = ("https://github.com/jax-ml/jax/blob/ee6cce5601fe1a81cec914bf50f3cbd9a72d69b1/docs/pallas/tpu/"
                "matmul.ipynb")
#: The cost of one step of a Pallas grid on a TPU, beyond its arithmetic and its HBM traffic: the pipeline's
#: bookkeeping, the DMA set-up of each block, the MXU filling and draining around a small block.
PALLAS_STEP = Cost(0.254e-6, "one step of a Pallas kernel's grid on a TPU, beyond its arithmetic and HBM traffic",
                   "fitted: JAX's Pallas TPU matmul guide times a 4096³ bf16 blocked matmul with 128 x 128 x 128 "
                   "blocks (32,768 grid steps) on a v5e at 11.77 ms end to end, of which the synced call, the "
                   "arithmetic and the HBM traffic the blocks cause account for 3.4 ms (" + PALLAS_GUIDE + "); no "
                   "published figure gives a step's cost, so the guide's other rows check it")


def pallas_traffic(m: int, k: int, n: int, bm: int, bk: int, bn: int, itemsize: int,
                   out_itemsize: int | None = None) -> float:
    """HBM bytes a blocked (m, k) @ (k, n) moves: each block of A is read once per column of output blocks (n / bn
    times), each block of B once per row (m / bm times), the output written once (the guide's own count)."""
    m, k, n, bm, bk, bn = (positive_int(name, v) for name, v in
                           (("m", m), ("k", k), ("n", n), ("bm", bm), ("bk", bk), ("bn", bn)))
    out = itemsize if out_itemsize is None else out_itemsize
    return (m * k * (n // bn) + k * n * (m // bm)) * itemsize + m * n * out


def pallas_steps(m: int, k: int, n: int, bm: int, bk: int, bn: int) -> int:
    """The grid's steps: (m / bm) x (n / bn) x (k / bk)."""
    return (m // bm) * (n // bn) * (k // bk)


def predict_pallas_matmul_seconds(device: Device, m: int, k: int, n: int, bm: int, bk: int, bn: int,
                                  dtype: str = "bfloat16", *, timed: str = "synced") -> float:
    """One call of a blocked Pallas matmul with (bm, bk) and (bk, bn) blocks on a TPU, as a learner times it.

    The arithmetic of each block, padded to the MXU side, at the matmul efficiency; the HBM traffic the blocks
    cause (pallas_traffic) at the memory efficiency; the larger of the two, plus PALLAS_STEP for each grid step,
    plus the call. The blocks must divide the matrix.
    """
    device = _resolved(device)
    r, overhead = _calls(device, JAX_CALL.get(roofs(device).kind, "none"), timed)
    if r.kind != "tpu":
        raise ValueError(f"device must be a TPU: a Pallas TPU kernel runs on a TPU; {r.device} is a "
                         f"{r.kind or 'device of unknown kind'}")
    for side, block in (("m", (m, bm)), ("k", (k, bk)), ("n", (n, bn))):
        if positive_int(side, block[0]) % positive_int(f"b{side}", block[1]):
            raise ValueError(f"b{side} = {block[1]} does not divide {side} = {block[0]}: the grid would leave the "
                             "last rows or columns out")
    if not isinstance(dtype, str) or dtype not in ITEMSIZE:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, ITEMSIZE))}; got {dtype!r:.40}")
    side = mxu_side(device)
    steps = pallas_steps(m, k, n, bm, bk, bn)
    flops = 2 * padded(bm, side) * padded(bk, side) * padded(bn, side) * steps
    compute, memory = _compute_and_memory(r, flops, pallas_traffic(m, k, n, bm, bk, bn, ITEMSIZE[dtype]), dtype,
                                          True)
    return _combine(r, overhead, max(compute, memory) + steps * PALLAS_STEP.value, timed)


def host_link(device: Device) -> tuple[float, str]:
    """(bytes/s, source) of the link between the host and `device`; a ValueError if none is on file."""
    r = roofs(device)
    found = specs.host_link(r.device)
    if found is None:
        known = ", ".join(specs.HOST_LINKS)
        raise ValueError(f"no host link on file for {r.device}; known: {known}")
    return found


#: Ordinary host memory is *pageable*: the OS may move it, so the GPU cannot copy from it directly. CUDA (and
#: cupy.asarray, jax.device_put) first copies it into a pinned staging buffer, at a fraction of the link's rate.
PAGEABLE_FRACTION = Cost(0.27, "fraction of the pinned host-link bandwidth a copy from ordinary (pageable) host "
                         "memory reaches",
                         "fitted: the geometric mean of the two published ratios found, both A100 hosts, CUDA's "
                         "bandwidthTest, 32 MB host to device: a DGX A100, pageable 10.0 GB/s against pinned 25.7 "
                         "(0.39), and a Dell A100 80GB PCIe server, 3.3 against 17.3 (0.19) (https://github.com/gengwg/"
                         "gpu/blob/54e9b29dd04137191a140917917658bf216b1d74/nvda_gpu_benchmark.md); none was found "
                         "for a T4, and the ratio depends on the host's memory and CPU")
#: Where a copy's host-side data lives: ordinary NumPy arrays are "pageable"; "pinned" is page-locked memory
#: (cupyx.empty_pinned), which the GPU's copy engine reads directly, at the link's rate (HOST_LINKS).
MEMORIES = ("pageable", "pinned")


def predict_copy_seconds(device: Device, bytes: float, *, calls: int = 1, timed: str = "synced",  # noqa: A002
                         memory: str = "pageable", host_bandwidth: float | None = None) -> float:
    """Seconds to move `bytes` between host memory and `device` in `calls` copies: each a CuPy call plus the link
    (timed="kernel": the transfer alone, as CUDA's bandwidthTest times it), from `memory` (MEMORIES): a NumPy
    array is pageable, and crosses at PAGEABLE_FRACTION of the pinned rate. host_bandwidth: this host's own copy
    rate, measured (h.hardware().cpu.peak_bandwidth), for the GPU that is here: a pageable copy is first copied by
    the host into a pinned buffer, so it goes no faster than that (the H200 run's host, a virtual machine, moved
    5.7 GB/s, 0.13 of its link's rate, below both published hosts' 0.19 and 0.39)."""
    calls = positive_int("calls", calls)
    overhead = 0.0 if _choice("timed", timed, TIMINGS) == "kernel" else OVERHEADS["cupy"].value
    pageable = _choice("memory", memory, MEMORIES) == "pageable"
    rate = host_link(device)[0] * (PAGEABLE_FRACTION.value if pageable else 1.0)
    if pageable and host_bandwidth is not None:
        rate = min(rate, _amount("host_bandwidth", host_bandwidth, positive=True))
    return calls * overhead + _amount("bytes", bytes) / rate


__all__ = ["BOUNDS", "CALL_STYLES", "Cost", "DECIDE_DEVICES", "DEFAULT_CALL", "Decision", "Device", "Estimate",
           "ITEMSIZE", "JAX_CALL", "KERNEL_FLOOR", "LOOP_STEP", "MATMUL_EFFICIENCY", "MATMUL_TILE", "MEMORIES",
           "MEMORY_EFFICIENCY", "OVERHEADS", "PAGEABLE_FRACTION", "PALLAS_GUIDE", "PALLAS_STEP", "PROGRAM_KERNEL",
           "Roof", "Roofs", "TERMS", "TIMINGS", "TPU_PIPELINED_LEAST", "attainable", "decide", "device_seconds",
           "fixed_device_seconds", "host_link", "matmul_wave_seconds", "mxu_side", "padded", "pallas_steps",
           "pallas_traffic", "predict_copy_seconds", "predict_matmul_seconds", "predict_pallas_matmul_seconds",
           "predict_range", "predict_seconds", "published_spec", "roofline_seconds", "roofs"]


# --------------------------------------------------------------------------------------------------------------
# Which device? The same model, turned into a decision

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


# --------------------------------------------------------------------------------------------------------------
# A kernel from its counters (chapter 07): the passes each SM must make through its units, and whether it holds
# enough warps to keep them busy. docs/predictions.md writes out the assumptions; each constant names its source.

_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/"
#: Warp schedulers per SM: each issues one instruction of one warp per clock.
SCHEDULERS = Cost(4, "warp schedulers per SM, each issuing one warp instruction per clock",
                  f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Multiprocessor Level': '16 active warps per "
                  "multiprocessor (4 cycles, 4 warp schedulers)'; NVIDIA's Volta tuning guide: 'Each Volta SM includes "
                  "4 warp-scheduler units'")
#: Clocks before an arithmetic result can be used: a warp with one chain of multiply-adds waits this long each.
ARITHMETIC_LATENCY = Cost(4, "clocks from one arithmetic instruction to the next that needs its result",
                          f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Multiprocessor Level': 'On devices of "
                          "compute capability 7.x, for most arithmetic instructions, it is typically 4 clock cycles. "
                          "This means that 16 active warps per multiprocessor (4 cycles, 4 warp schedulers) are "
                          "required to hide arithmetic instruction latencies'")
#: Shared-memory passes (wavefronts) one SM serves per clock: 32 banks, 32 bits each.
SHARED_PASSES_PER_CLOCK = Cost(1, "shared-memory passes served per clock per SM (32 banks x 32 bits)",
                               f"NVIDIA's CUDA C++ Programming Guide ({_GUIDE}), 'Shared Memory' (5.x, and 7.x "
                               "'behaves the same way'): 'Shared memory has 32 banks ... Each bank has a bandwidth of "
                               "32 bits per clock cycle'")
#: 128-byte lines the L1 cache looks up per clock per SM: a request touching 32 lines takes 32 clocks.
L1_LINES_PER_CLOCK = Cost(1, "128-byte lines an SM's L1 cache looks up per clock",
                          "NVIDIA's Nsight Compute Kernel Profiling Guide (https://docs.nvidia.com/nsight-compute/"
                          "ProfilingGuide/): 'there is a notion of processing one wavefront per cycle in L1TEX', and "
                          "'If not all cache lines or sectors can be accessed in a single wavefront, multiple "
                          "wavefronts are created'; assumed: one 128-byte line per wavefront (no NVIDIA document found "
                          "says how many lines one wavefront holds)")
#: The share of an SM's float32 multiply-add slots a compiler-scheduled kernel fills, by compute capability: the
#: fastest hand-written float32 kernel on file for that architecture that is not a rung of chapter 07 (so no rung
#: is checked against the row that set it), over its peak at its clock. A 64-lane SM (7.x) starts a warp's FFMA every
#: other clock, a 128-lane one (8.6, 9.0) every clock, with no slot to spare for a stall.
FP32_ISSUE_RATE: dict[str, Cost] = {
    "7.0": Cost(0.865, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 64-lane SM (Volta)",
                "fitted, not checked against: a V100's fastest hand-written kernel on file, not a rung (A kept "
                "row-major in shared memory), 13,583.9 of 15,700 GFLOP/s (https://github.com/jhlee508/matmul-cuda)"),
    "7.5": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a T4 (Turing)",
                "assumed: the lower of the two rates on file (8.6's), so a hand-written rung is not predicted past "
                "cuBLAS on the power-capped T4. Left out, too weak to set it: a T4 kernel at 4,779.9 GFLOP/s (n = "
                "2,048, 128 x 128 tiles, https://github.com/aaron-ang/cuda-sgemm/blob/"
                "06d7a1cfecf366e8788e3b235018e5dacee99f65/docs/report/report.tex) names no clock, and beats the T4 "
                "cuBLAS rows on file, so its share of the held clock's peak (0.79) cannot be told from a higher "
                "clock"),
    "8.0": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on an A100",
                "assumed as for 8.6: no hand-written A100 kernel on file"),
    "8.6": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 128-lane SM whose "
                "half shares its path with integer instructions (GA102)",
                "fitted, not checked against: the fastest hand-written kernels on file, both warp-tiled (no rung): "
                "21,779.3 GFLOP/s on an RTX A6000, 56% of 38.71 TFLOP/s (https://github.com/siboehm/SGEMM_CUDA), "
                "and 20.1649 TFLOP/s on an RTX 3090, 57% of 35.6 (https://github.com/leimao/CUDA-GEMM-Optimization)"),
    "8.9": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on Ada",
                "assumed as for 8.6 (the same 128 lanes per SM): no hand-written Ada kernel on file"),
    "9.0": Cost(0.56, "share of the float32 peak a compiler-scheduled FFMA stream reaches on a 128-lane Hopper SM",
                "assumed as for 8.6 (128 lanes per SM, a warp FFMA every clock): no hand-written H100 or H200 kernel "
                "outside chapter 07's rungs on file"),
}
#: FLOPs a warp's multiply-add instruction does: 32 lanes, a multiply and an add each.
WARP_FMA_FLOPS = 64

_LATENCY = ("https://github.com/te42kyfo/gpu-benches/blob/1c36d509ee717dca9215c27135fa1e611bb03ed1/gpu-latency/"
            "{file}: one warp chasing pointers through a 1.5 GB buffer (the last row), {cycles} cycles at {mhz} MHz")
#: How long a load that misses the caches takes to come back from DRAM, by compute capability: te42kyfo's
#: gpu-latency rows (pointer chasing, the largest buffer), cycles over the clock they were counted at. A tile loop
#: waits this long at its barrier once a step (predict_kernel).
DRAM_LATENCY: dict[str, Cost] = {
    "7.0": Cost(437.0 / 1380e6, "seconds a load that misses the caches takes (V100)",
                _LATENCY.format(file="v100.txt", cycles="437.0", mhz="1,380")),
    "7.5": Cost(437.0 / 1380e6, "seconds a load that misses the caches takes (T4)",
                "assumed as for 7.0: no T4 row on file; Turing's memory hierarchy has Volta's depth (Jia et al., "
                "https://arxiv.org/abs/1903.07486)"),
    "8.0": Cost(574.6 / 1410e6, "seconds a load that misses the caches takes (A100)",
                _LATENCY.format(file="a100_40.txt", cycles="574.6", mhz="1,410")),
    "8.6": Cost(574.6 / 1410e6, "seconds a load that misses the caches takes (GA102: RTX 30, RTX A6000)",
                "assumed as for 8.0 (Ampere, the A100's row): no GA102 row on file"),
    "8.9": Cost(631.9 / 2490e6, "seconds a load that misses the caches takes (Ada)",
                _LATENCY.format(file="l40.txt", cycles="631.9", mhz="2,490")),
    "9.0": Cost(658.4 / 1755e6, "seconds a load that misses the caches takes (Hopper)",
                _LATENCY.format(file="h100_pcie.txt", cycles="658.4", mhz="1,755") + "; the H200 assumed as the H100"),
}


@dataclass(frozen=True)
class KernelWork:
    """What one launch of a kernel does, counted (chapter 07 counts it on the CPU executor and scales it up), and
    what the compiler made of it (registers; machine instructions beside the multiply-adds), where known."""

    flops: float
    shared_passes: float  # shared-memory wavefronts: requests times the passes each needs (bank conflicts)
    global_lines: float  # 128-byte lines the global requests touch (the L1's look-ups)
    requests: float  # global and shared load and store requests: each is one instruction a scheduler issues
    dram_bytes: float  # bytes that reach DRAM after the caches (matmul_dram_bytes: the cache model)
    threads_per_block: int
    shared_bytes_per_block: int
    sums_per_thread: int = 1  # independent chains of multiply-adds per thread (its outputs)
    registers_per_thread: int | None = None  # from the compiler (helpers.gpu.compiled); None: not counted
    #: Machine instructions the warps issue beside their multiply-adds (address arithmetic, loads, branches), from
    #: the compiler's machine code (helpers.gpu.compiled.Mix); None: only the source's requests are counted.
    other_instructions: float | None = None
    #: Times a block waits at a barrier for global loads it issued just before (a tile loop: once a step), summed
    #: over the launch's blocks, from the machine code (helpers.gpu.compiled.barrier_waits); 0: none counted.
    barrier_waits: float = 0.0
    #: FLOPs the tensor cores do (wmma::mma_sync; not in `flops`, the CUDA cores' share), and the roof they run at:
    #: "float16" (fp16 products, float32 sums), "float16_acc16" (fp16 sums) or "bfloat16".
    tensor_flops: float = 0.0
    tensor_dtype: str = "float16"


@dataclass(frozen=True)
class Occupancy:
    """How many of a kernel's blocks one SM holds at once, and what stops it holding more."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps: int
    limited_by: str  # "threads", "blocks", "shared memory" or "registers"

    @property
    def fraction(self) -> float:
        """Resident warps over the most the SM can hold: 1.0 is full occupancy."""
        return self.warps_per_sm / self.max_warps


def _gpu_spec(device: Device) -> tuple[specs.DeviceSpec, specs.SMLimits]:
    spec = published_spec(device if isinstance(device, str | specs.DeviceSpec) else str(device))
    return spec, specs.sm_limits(spec)


def occupancy(device: Device, threads_per_block: int, shared_bytes_per_block: int = 0,
              registers_per_thread: int | None = None) -> Occupancy:
    """Blocks of this size one SM of `device` holds at once (its threads, blocks, shared memory and, where given,
    registers limit it); a ValueError when one block cannot run at all."""
    spec, sm = _gpu_spec(device)
    threads = positive_int("threads_per_block", threads_per_block)
    shared = 0 if shared_bytes_per_block == 0 else positive_int("shared_bytes_per_block", shared_bytes_per_block)
    if threads > specs.MAX_BLOCK_THREADS:
        raise ValueError(f"{threads:,} threads per block: a block holds at most {specs.MAX_BLOCK_THREADS:,}")
    if shared > specs.MAX_STATIC_SHARED:
        raise ValueError(f"{shared:,} bytes of shared memory per block: a block's __shared__ arrays may hold at "
                         f"most {specs.MAX_STATIC_SHARED:,} bytes (48 KiB)")
    warps = -(-threads // 32)
    limits = {"threads": sm.max_threads // (warps * 32), "blocks": sm.max_blocks}
    if shared:
        limits["shared memory"] = sm.shared_bytes // shared
    if registers_per_thread:
        limits["registers"] = sm.registers // (positive_int("registers_per_thread", registers_per_thread) * warps * 32)
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = limits[limited_by]
    if blocks == 0:
        raise ValueError(f"one block of {threads:,} threads does not fit on an SM of the {spec.name}: "
                         f"{limited_by} run out")
    return Occupancy(blocks, blocks * warps, sm.max_threads // 32, limited_by)


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


def _by_capability(table: dict[str, Cost], device: Device, what: str) -> Cost:
    """The entry of `table` for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    spec, _ = _gpu_spec(device)
    if spec.compute_capability not in table:
        raise ValueError(f"{spec.name}: no {what} for compute capability {spec.compute_capability}; on file: "
                         f"{', '.join(table)}")
    return table[spec.compute_capability]  # type: ignore[index]


def dram_latency(device: Device) -> Cost:
    """DRAM_LATENCY for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    return _by_capability(DRAM_LATENCY, device, "DRAM latency")


def tensor_rate(device: Device, dtype: str = "float16") -> float:
    """FLOP/s the tensor cores of the GPU `device` do in `dtype` (its published dense peak: fp16 products with
    float32 sums for "float16", fp16 sums for "float16_acc16" where a card publishes that apart, else the
    float16 rate), at the share of its clock the card holds (held_share); a ValueError naming the roofs on file
    when it has none."""
    spec, _ = _gpu_spec(device)
    key = "float16" if dtype == "float16_acc16" and dtype not in spec.peak_flops else dtype
    if key not in ("float16", "float16_acc16", "bfloat16") or key not in spec.peak_flops:
        raise ValueError(f"{spec.name}: no tensor-core roof for dtype {dtype!r:.40} on file (its roofs: "
                         f"{', '.join(spec.peak_flops)}); tensor kernels run 'float16', 'float16_acc16' or 'bfloat16'")
    return spec.peak_flops[key] * held_share(spec)


def fp32_issue_rate(device: Device) -> Cost:
    """FP32_ISSUE_RATE for the GPU's compute capability (a ValueError naming those on file otherwise)."""
    return _by_capability(FP32_ISSUE_RATE, device, "float32 issue rate")


@dataclass(frozen=True)
class KernelTime:
    """A kernel's predicted time: each unit's share, the one that bounds it, and the occupancy behind it."""

    seconds: float
    terms: dict[str, float]
    occupancy: Occupancy
    hidden: float  # the share of arithmetic latency the resident warps hide (1.0: all of it)

    @property
    def bound(self) -> str:
        """The unit the kernel waits on: the largest term ("loads + issue" is named by the larger of its two)."""
        unit = max(self.terms, key=lambda k: self.terms[k])
        if unit == "loads + issue":
            return "L1 lines" if self.terms["L1 lines"] >= self.terms["arithmetic"] else "arithmetic"
        return unit


def predict_kernel(device: Device, work: KernelWork) -> KernelTime:
    """Seconds one launch of a kernel takes on the GPU `device` (a published spec), from what it does.

    Each SM's units work side by side, so the slowest sets the time, at the SM clock the card holds (sm_clock):
    - arithmetic: the schedulers (SCHEDULERS, one instruction each per clock). A warp's FFMA takes the float32
      pipe 128 / (lanes per SM) clocks, stretched by the share of slots real code fills (FP32_ISSUE_RATE); every
      other machine instruction (work.other_instructions, from the compiler) takes a slot of its own, fitted into
      the free clocks a 64-lane SM leaves between FFMAs, added on a 128-lane one, which leaves none;
    - shared memory, one pass per clock; the L1, one 128-byte line per clock; DRAM at MEMORY_EFFICIENCY;
    - loads + issue: a kernel that multiplies what it just loaded (no reuse in registers or shared memory) waits
      for its loads before it can issue on, so its L1 time and its arithmetic add.
    Too few warps to cover ARITHMETIC_LATENCY stretch the arithmetic.
    - tensor cores (work.tensor_flops): at the published dense peak for work.tensor_dtype (tensor_rate), at the
      held clock's share; they work beside the other units, so a tensor-core kernel whose loads are slower waits on
      its loads.
    A tile loop (work.barrier_waits) adds what no unit overlaps: its blocks start together and wait at each step's
    barrier for that step's tiles, so every step of every wave of resident blocks waits one DRAM_LATENCY ("barrier
    waits"); and where an SM holds a single block, nothing computes while its tiles stream in, so the DRAM time adds
    to the slowest unit's instead of hiding under it. Plus the kernel's floor.
    """
    if not isinstance(work, KernelWork):
        raise TypeError(f"work must be a roofline.KernelWork; got {type(work).__name__}")
    spec, sm = _gpu_spec(device)
    occ = occupancy(spec, work.threads_per_block, work.shared_bytes_per_block, work.registers_per_thread)
    clocks = spec.sms * sm_clock(spec)  # type: ignore[operator]
    needed = SCHEDULERS.value * ARITHMETIC_LATENCY.value
    hidden = min(1.0, occ.warps_per_sm * positive_int("sums_per_thread", work.sums_per_thread) / needed)
    fmas = _amount("flops", work.flops) / WARP_FMA_FLOPS
    other = _amount("requests", work.requests) if work.other_instructions is None else _amount(
        "other_instructions", work.other_instructions)
    pipe = SCHEDULERS.value * 32 / sm.fp32_lanes  # clocks a scheduler's float32 pipe takes per warp FFMA
    slots = fmas * pipe / fp32_issue_rate(spec).value + max(0.0, other - fmas * (pipe - 1))
    arithmetic = slots / (SCHEDULERS.value * clocks) / hidden
    lines = _amount("global_lines", work.global_lines) / (L1_LINES_PER_CLOCK.value * clocks)
    terms = {
        "arithmetic": arithmetic,
        "shared memory": _amount("shared_passes", work.shared_passes) / (SHARED_PASSES_PER_CLOCK.value * clocks),
        "L1 lines": lines,
        "loads + issue": lines + arithmetic if work.shared_passes == 0 else 0.0,
        "DRAM": _amount("dram_bytes", work.dram_bytes) / (spec.peak_bandwidth * MEMORY_EFFICIENCY["gpu"].value),
    }
    if work.tensor_flops:
        terms["tensor cores"] = _amount("tensor_flops", work.tensor_flops) / tensor_rate(spec, work.tensor_dtype)
    waits = _amount("barrier_waits", work.barrier_waits)
    terms["barrier waits"] = waits / (occ.blocks_per_sm * spec.sms) * dram_latency(spec).value if waits else 0.0
    alone = bool(waits) and occ.blocks_per_sm == 1  # one block an SM: its tiles' transfer is not overlapped
    busy = max(v for k, v in terms.items() if k != "barrier waits" and not (alone and k == "DRAM"))
    seconds = busy + terms["barrier waits"] + (terms["DRAM"] if alone else 0.0)
    return KernelTime(seconds + KERNEL_FLOOR["gpu"].value, terms, occ, hidden)


def matmul_wave(n: int, tile: tuple[int, int], resident_blocks: int, rows_first: bool = False) -> tuple[int, int]:
    """(rows of A, columns of B) the blocks resident at once read, for an n x n x n matmul kernel whose blocks each
    compute a tile (rows, cols) of C and start in the order of blockIdx.x (along rows of C when rows_first)."""
    n, resident = positive_int("n", n), positive_int("resident_blocks", resident_blocks)
    rows, cols = _tile(tile)
    down, across = -(-n // rows), -(-n // cols)  # tiles along each side of C
    first = down if rows_first else across
    along, deep = min(resident, first), -(-min(resident, down * across) // first)
    a_rows, b_cols = (along * rows, deep * cols) if rows_first else (deep * rows, along * cols)
    return min(a_rows, n), min(b_cols, n)  # a tile sticking out of C reads no rows or columns beyond it


def _tile(tile: object) -> tuple[int, int]:
    """(rows, cols) of a tile of C; a ValueError otherwise."""
    if not isinstance(tile, tuple | list) or len(tile) != 2:
        raise ValueError(f"tile must be (rows, cols) of C, two whole numbers; got {tile!r:.40}")
    return positive_int("tile rows", tile[0]), positive_int("tile cols", tile[1])


#: Bytes of one step along k: a 128-byte line of each row of A and each column of B a wave reads.
WAVE_STEP = 128


def matmul_dram_bytes(n: int, tile: tuple[int, int], resident_blocks: int, l2_bytes: int | None,
                      rows_first: bool = False, itemsize: int = 4) -> float:
    """Bytes an n x n x n matmul kernel moves between DRAM and the chip, by the cache model (CACHE_ASSUMPTIONS).

    A wave of resident blocks reads its rows of A and columns of B from DRAM once, shared through the L2, when the
    L2 holds a WAVE_STEP of each; otherwise (or with no L2 size on file) every block reads its own. C is written
    once.
    """
    a_rows, b_cols = matmul_wave(n, tile, resident_blocks, rows_first)
    rows, cols = _tile(tile)
    blocks = -(-n // rows) * -(-n // cols)
    if l2_bytes and (a_rows + b_cols) * WAVE_STEP <= l2_bytes:
        waves = blocks / min(resident_blocks, blocks)
        return waves * (a_rows + b_cols) * n * itemsize + n * n * itemsize
    return blocks * (min(rows, n) + min(cols, n)) * n * itemsize + n * n * itemsize


#: The cache model's assumptions, written down before any comparison with a published figure (docs/predictions.md
#: prints them with the numbers they give for each GPU on file).
CACHE_ASSUMPTIONS: tuple[str, ...] = (
    "The CPU executor counts every request a kernel makes and models no cache: at the sizes it runs (n = 128), an "
    "L1 and an L2 would hold everything, so nothing it counts says which bytes reach DRAM at n = 4,096.",
    "L1: each SM's L1 looks up every 128-byte line a request touches, hit or miss, one line per clock "
    "(L1_LINES_PER_CLOCK): that is the L1 term. Lines a block reuses (the naive kernel reads each line of a row of "
    "A 32 times, once per step along it) hit the L1 or the L2, and cost DRAM nothing more.",
    "L2: blocks start in the order of blockIdx.x, as many at once as occupancy lets each SM hold (threads, blocks "
    "and shared memory; registers are not counted), and move along k together. Such a wave reads the rows of A and "
    "the columns of B its tiles need from DRAM once, sharing them through the L2, provided the L2 holds what the "
    "wave reads in one 128-byte step along k: (its rows of A + its columns of B) x 128 bytes. Otherwise every "
    "block reads its own rows and columns from DRAM.",
    "C is written to DRAM once; DRAM is read and written at MEMORY_EFFICIENCY['gpu'] of its published bandwidth.",
    "The L2 sizes are the published ones in helpers.measuring.specs, each with its source; a GPU without one gets the "
    "no-reuse traffic. No constant of the kernel model was set from a worklog row it is checked against.",
)
