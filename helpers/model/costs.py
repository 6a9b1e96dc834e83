"""What the roofs leave out: the host's cost of a call, the device's fixed cost of a kernel, and how close real
code gets to each roof; every constant with its source."""

from __future__ import annotations

from dataclasses import dataclass

from ..measuring.cpu import BLAS_BEST_EFFICIENCY


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


def _constant(table: dict[str, Cost], kind: str, default: float) -> float:
    """The value `table` holds for a device of `kind`, or `default` where it holds none."""
    return table[kind].value if kind in table else default
