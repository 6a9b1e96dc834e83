"""Chapter 03's kernels run: on CuPy where there is a GPU, on the CPU executor where there is not, and priced.

The same source serves both machines. Without a GPU, `compile_report` compiles it with NVRTC (`helpers.gpu.nvrtc`)
for the T4 and the H100, so a learner still gets NVIDIA's real error messages. On a GPU, `raw_kernel` and
`Elementwise.on_gpu` hand it to CuPy, which compiles it with its own NVRTC and launches it.

    h.cuda.show("vector_add.cu")                         # the source, as the notebook shows it
    h.cuda.compile_report(h.cuda.kernel_source("matmul.cu"), "matmul.cu")
    k = h.cuda.Elementwise("float32 x", "float32 y", "y = x > 0 ? x : 0", "relu")
    print(k.source())                                    # the whole CUDA C kernel the snippet becomes

Every `Elementwise(...)` with literal arguments and every string holding `__global__` in a notebook is
compiled by tests/test_cuda_sources.py, as are the .cu files in helpers/kernels/.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..core.backend import backends
from ..core.validate import finite, flag, positive_int
from ..measuring import specs, workloads
from ..measuring.timing import Timing, benchmark, format_seconds
from ..model import roofline
from . import nvrtc

# The chapter's sources, re-exported: a learner types h.cuda.show, h.cuda.kernel_source, h.cuda.compile_report and
# h.cuda.Elementwise beside the launches below.
from .sources import Elementwise as Elementwise
from .sources import compile_report as compile_report
from .sources import kernel_files as kernel_files
from .sources import kernel_source as kernel_source
from .sources import show as show

# --------------------------------------------------------------------------------------------------------------
# Running on a GPU (thin on purpose: everything before the launch is shared with the CPU path and tested there)


def gpu_here() -> bool:
    """True when CuPy can run on a GPU in this session."""
    return backends()["cupy"].usable


def cupy() -> Any:
    """CuPy itself on a GPU (its RawKernel and ReductionKernel launches checked first: helpers.gpu.cupy_checked);
    without one, helpers.cupy_cpu, the same interface run by the CPU executor. The same lines run on both:

        cupy = h.cuda.cupy()
        kernel = cupy.RawKernel(source, "vector_add")
    """
    if gpu_here():
        import cupy as real

        from .cupy_checked import CheckedCupy

        return CheckedCupy(real)
    from ..executor import cupy_cpu

    return cupy_cpu


def profiler() -> Any:
    """cupyx.profiler on a GPU; without one, a stand-in whose benchmark(func, args, n_repeat=...) times the CPU
    side of each call, as CuPy's does, and says there is no GPU time to show."""
    if gpu_here():
        import cupyx.profiler

        return cupyx.profiler
    from ..executor import cupy_cpu

    return cupy_cpu.profiler


def cupyx() -> Any:
    """CuPy's extras, cupyx, on a GPU (pinned host memory, the profiler); without one, the stand-in's
    (helpers.cupy_cpu.cupyx): the same lines run on both, as with h.cuda.cupy()."""
    if gpu_here():
        import cupyx as real

        return real
    from ..executor import cupy_cpu

    return cupy_cpu.cupyx


def blocks_for(n: int, threads: int) -> int:
    """Blocks of `threads` threads needed to give each of n elements a thread: ceil(n / threads)."""
    n, threads = positive_int("n", n), positive_int("threads", threads)
    return (n + threads - 1) // threads


@cache
def raw_kernel(source: str, name: str) -> Any:
    """cupy.RawKernel for the function `name` of `source` (GPU only); CuPy compiles it on first launch."""
    import cupy

    return cupy.RawKernel(source, name)


def file_kernel(file: str, name: str) -> Any:
    """cupy.RawKernel for the function `name` in helpers/kernels/`file` (GPU only)."""
    return raw_kernel(kernel_source(file), name)


#: The most threads a CUDA block may have, on every GPU since 2010.
MAX_BLOCK_THREADS = 1024
#: Kernels index with C `int`: arrays must have fewer elements than this.
MAX_INT_ELEMENTS = 2**31 - 1


def device_arrays(what: str, **arrays: Any) -> None:
    """Refuse what a float32 kernel would misread: host arrays, other dtypes, strided views, too many elements.

    A kernel sees only a raw pointer, so a float64 array, or a view with gaps, gives silently wrong numbers
    rather than an error. Checked before every launch by the functions below.
    """
    import cupy

    for name, x in arrays.items():
        if not isinstance(x, cupy.ndarray):
            raise TypeError(f"{what}: {name} is a {type(x).__module__}.{type(x).__name__}, not an array on the GPU; "
                            f"copy it there first: {name} = cupy.asarray({name})")
        if x.dtype != np.float32:
            raise TypeError(f"{what}: {name} is {x.dtype}, but the kernel reads float32 (C float); "
                            f"convert it: {name}.astype(cupy.float32)")
        if not x.flags.c_contiguous:
            raise ValueError(f"{what}: {name} is a strided view; the kernel needs contiguous memory: "
                             f"cupy.ascontiguousarray({name})")
        if x.size > MAX_INT_ELEMENTS:
            raise ValueError(f"{what}: {name} has {x.size:,} elements; these kernels index with int (at most "
                             f"{MAX_INT_ELEMENTS:,})")


def _threads(threads: int) -> int:
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 0 < threads <= MAX_BLOCK_THREADS:
        raise ValueError(f"threads per block must be an integer from 1 to {MAX_BLOCK_THREADS}, got {threads!r}")
    return int(threads)


def vector_add(a: Any, b: Any, threads: int = 256, grid_stride_blocks: int | None = None) -> Any:
    """a + b by vector_add.cu on the GPU: one thread per element, or a grid-stride loop over fewer blocks."""
    import cupy

    device_arrays("vector_add", a=a, b=b)
    if a.shape != b.shape:
        raise ValueError(f"vector_add: a has shape {a.shape} and b {b.shape}; they must match")
    threads, n = _threads(threads), a.size
    out = cupy.empty_like(a)
    if grid_stride_blocks is None:
        file_kernel("vector_add.cu", "vector_add")((blocks_for(n, threads),), (threads,), (a, b, out, np.int32(n)))
    else:
        blocks = positive_int("grid_stride_blocks", grid_stride_blocks)
        file_kernel("vector_add.cu", "vector_add_grid_stride")((blocks,), (threads,),
                                                               (a, b, out, np.int32(n)))
    return out


MATMUL_TILE = 16
MATMUL_KERNELS = ("matmul_naive", "matmul_tiled")


def matmul_kernel(a: Any, b: Any, kernel: str = "matmul_tiled") -> Any:
    """A @ B for square float32 matrices by matmul.cu's `kernel` ('matmul_naive' or 'matmul_tiled'), GPU only."""
    import cupy

    if kernel not in MATMUL_KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(MATMUL_KERNELS)}; got {kernel!r}")
    device_arrays(kernel, a=a, b=b)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape != b.shape:
        raise ValueError(f"{kernel} multiplies two square matrices of the same size; got {a.shape} and {b.shape}")
    n = a.shape[0]
    out = cupy.empty_like(a)
    blocks = blocks_for(n, MATMUL_TILE)
    file_kernel("matmul.cu", kernel)((blocks, blocks), (MATMUL_TILE, MATMUL_TILE), (a, b, out, np.int32(n)))
    return out


REDUCE_THREADS = 256


def reduce_sum(x: Any, blocks: int = 1024) -> Any:
    """sum(x) by reduce_sum.cu on the GPU: `blocks` partial sums, then one block adds them (a 0-d array)."""
    import cupy

    device_arrays("reduce_sum", x=x)
    blocks = min(positive_int("blocks", blocks), blocks_for(x.size, REDUCE_THREADS))
    partial = cupy.empty(blocks, dtype=cupy.float32)
    total = cupy.empty(1, dtype=cupy.float32)
    kernel = file_kernel("reduce_sum.cu", "block_sum")
    kernel((blocks,), (REDUCE_THREADS,), (x, partial, np.int32(x.size)))
    kernel((1,), (REDUCE_THREADS,), (partial, total, np.int32(blocks)))
    return total[0]


# --------------------------------------------------------------------------------------------------------------
# Predictions for the GPU that is not here


@dataclass(frozen=True)
class GPU:
    """The GPU the chapter's numbers are judged by: the one here (measured), else the reference T4 (predicted).

    spec: the published roofs; those of the T4 when there is no GPU, or one whose specs are not on file
    (own_specs is then False, and `note` says so).
    """

    name: str
    spec: specs.DeviceSpec
    here: bool
    own_specs: bool = True

    @property
    def label(self) -> str:
        """How plots and text name this GPU's numbers: measured on it, or predicted from its specs."""
        return f"{self.name} (measured)" if self.here else f"prediction ({self.spec.name} published specs)"

    @property
    def note(self) -> str:
        """'' or, for a GPU whose model has no published specs on file, which card's roofs stand in for its own."""
        return "" if self.own_specs else (f"No published specs on file for the {self.name}: the {self.spec.name}'s "
                                           "roofs and host link stand in for its own in the plots and predictions.")

    def pick(self, on_gpu: int, on_cpu: int) -> int:
        """A size for this chapter: `on_gpu` when a GPU runs the kernels, `on_cpu` when the CPU executor does (it
        checks every access, so it runs small sizes only)."""
        return positive_int("on_gpu", on_gpu) if self.here else positive_int("on_cpu", on_cpu)

    def only(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs) when the GPU is here; None without one (nothing runs: the prediction stands alone)."""
        return fn(*args, **kwargs) if self.here else None

    def measure(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Timing | None:
        """h.benchmark(fn, *args, backend="cupy", ...) on this GPU (synchronised); None without one."""
        return self.only(benchmark, fn, *args, backend="cupy", **kwargs)

    def side_by_side(self, rows: dict[str, tuple[float, Timing | None]]) -> dict[str, float]:
        """Print each row's prediction beside its measurement here (or that there is no GPU to measure on).

        rows: label -> (predicted seconds, the Timing measured on this GPU or None). Returns label -> the seconds
        to quote: measured where there is a measurement, else predicted.
        """
        if not isinstance(rows, dict) or not rows:
            raise ValueError("rows must be a non-empty dict: label -> (predicted seconds, Timing or None)")
        width = max(len(label) for label in rows) + 2
        measured_head = f"measured, {self.name}" if self.here else "measured here"
        print(f"{'':<{width}}{'predicted, ' + self.spec.name:>30}{measured_head:>30}{'measured/predicted':>20}")
        quoted = {}
        for label, (predicted, timing) in rows.items():
            if not finite(predicted) or predicted <= 0:
                raise ValueError(f"{label}: the predicted seconds must be a finite number above zero; got "
                                 f"{predicted!r:.40}")
            if timing is not None and not isinstance(timing, Timing):
                raise TypeError(f"{label}: the measurement must be a Timing (h.benchmark's) or None; got "
                                f"{type(timing).__name__}")
            got = "no GPU here" if timing is None else format_seconds(timing.median)
            ratio = "" if timing is None else f"{timing.median / predicted:.2f}x"
            print(f"{label:<{width}}{format_seconds(predicted):>30}{got:>30}{ratio:>20}")
            quoted[label] = predicted if timing is None else timing.median
        return quoted

    def host_link(self) -> tuple[float, str]:
        """(bytes/s, source) of the PCIe link between this GPU and the host."""
        return roofline.host_link(self.spec)

    def l2_bytes(self) -> int | None:
        """The size of this GPU's L2 cache: read from the card here (CuPy), else its published size (or None)."""
        if self.here:
            import cupy

            return int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
        return self.spec.l2_bytes

    def beyond_l2(self, at_least: int, bytes_per_element: int) -> int:
        """A size n >= `at_least` whose arrays (`bytes_per_element` bytes per element in all) hold at least
        L2_MULTIPLE times this GPU's L2 cache, rounded up to a whole million: a memory-bound timing then measures
        the card's memory, not its cache (an L4's or H100's 48-50 MB L2 holds a 10-million-float array whole)."""
        at_least, bytes_per_element = positive_int("at_least", at_least), positive_int("bytes_per_element",
                                                                                        bytes_per_element)
        l2 = self.l2_bytes()
        need = -(-L2_MULTIPLE * l2 // bytes_per_element) if l2 else 0
        return max(at_least, -(-need // 1_000_000) * 1_000_000)

    def predict_seconds(self, flops: float, bytes: float, dtype: str = "float32",  # noqa: A002
                        copies: float = 0.0, launches: int = 1, matmul: bool = False,
                        narrow: bool | None = None) -> float:
        """Seconds for `launches` CuPy calls doing this work, timed back to back as h.benchmark times them,
        plus `copies` bytes over the host link (helpers.model.roofline: the one model). matmul: the work is a tuned
        library matrix product (cuBLAS), whose arithmetic reaches roofline.MATMUL_EFFICIENCY of the roof; otherwise
        CuPy's own kernels, one element a thread (roofline.NARROW_LOAD_EFFICIENCY, where published); narrow=False
        for a kernel of your own that loads 16 bytes at a time."""
        narrow = not matmul if narrow is None else flag("narrow", narrow)
        seconds = roofline.predict_seconds(self.spec, flops=flops, bytes=bytes, dtype=dtype,
                                           calls=positive_int("launches", launches), call="cupy", timed="pipelined",
                                           matmul=matmul, narrow=narrow)
        if not finite(copies) or copies < 0:
            raise ValueError(f"copies (bytes over the host link) must be a finite number, zero or more, got "
                             f"{copies!r:.40}")
        return seconds + (self.predict_copy_seconds(copies) if copies else 0.0)

    def predict_copy_seconds(self, nbytes: float, memory: str = "pageable") -> float:
        """One copy of `nbytes` between the host and this GPU (roofline.predict_copy_seconds); with the GPU here, a
        pageable copy goes no faster than this host copies memory, measured (h.hardware()'s bandwidth counts the
        bytes read and written, so a copy moves half of it in data)."""
        host = None
        if self.here and memory == "pageable":
            from ..measuring.hardware import hardware

            host = float(hardware().cpu.peak_bandwidth.value) / 2
        return roofline.predict_copy_seconds(self.spec, nbytes, memory=memory, host_bandwidth=host)

    def predict_cupy_axpby(self, n: int, copies: float = 0.0) -> float:
        """Roofline seconds for alpha * x + beta * y (n elements) as CuPy runs it: three kernels, 7 numbers each.

        A size whose arrays (x, y, two temporaries and z, float32) would not fit in the GPU's memory is refused.
        """
        n = positive_int("n", n)
        if 5 * 4 * n > self.spec.memory_bytes:
            raise ValueError(f"n = {n:,} does not fit on the {self.spec.name}: CuPy's axpby holds five float32 arrays "
                             f"of n ({5 * 4 * n / 1e9:,.1f} GB), the card has {self.spec.memory_bytes / 1e9:,.0f} GB")
        return self.predict_seconds(3 * n, CUPY_AXPBY_NUMBERS * 4 * n, copies=copies, launches=CUPY_AXPBY_KERNELS)


#: The size chapter 03's matmul kernels are counted at on the CPU executor (a multiple of their 16 x 16 tiles);
#: a kernel's loads, shared passes and FLOPs grow as n³, so the counts are scaled to the size predicted.
MATMUL_COUNT_N = 64


@cache
def _matmul_counts(kernel: str) -> Any:
    """What matmul.cu's `kernel` does at MATMUL_COUNT_N on the executor (checked against NumPy first)."""
    from .. import executor

    n = MATMUL_COUNT_N
    a, b = workloads.make_inputs("matmul", n, "float32", "numpy")
    c = np.zeros((n, n), np.float32)
    blocks = blocks_for(n, MATMUL_TILE)
    launch = executor.Program(kernel_source("matmul.cu")).launch(kernel, (blocks, blocks), (MATMUL_TILE, MATMUL_TILE),
                                                                  (a, b, c, np.int32(n)))
    if not np.allclose(c, a @ b, rtol=1e-4, atol=1e-3):
        raise AssertionError(f"matmul.cu's {kernel} differs from A @ B at n = {n}")
    return launch.counters


def predict_matmul_kernel(device: str | specs.DeviceSpec, kernel: str, n: int) -> roofline.KernelTime:
    """Chapter 03's `kernel` of matmul.cu ('matmul_naive' or 'matmul_tiled') at n x n on `device`, priced as chapter
    07 prices its ladder: the executor's counts scaled to n, the compiler's registers and instructions where NVRTC
    (and NVIDIA's disassembler) are here, the bytes that reach DRAM by the cache model (the caches serve most of
    the naive kernel's repeated loads), and roofline.predict_kernel."""
    if kernel not in ("matmul_naive", "matmul_tiled"):
        raise ValueError(f"kernel must be 'matmul_naive' or 'matmul_tiled'; got {kernel!r:.40}")
    spec, n = roofline.published_spec(device), positive_int("n", n)
    counts = _matmul_counts(kernel)
    occupancy = roofline.occupancy(spec, counts.threads_per_block, counts.shared_bytes_per_block)
    dram = roofline.matmul_dram_bytes(n, (MATMUL_TILE, MATMUL_TILE), occupancy.blocks_per_sm * spec.sms,
                                      spec.l2_bytes)
    return price_kernel(spec, kernel_source("matmul.cu"), "matmul.cu", kernel, counts, dram, (n / MATMUL_COUNT_N) ** 3,
                        block=(MATMUL_TILE, MATMUL_TILE))


def price_kernel(device: str | specs.DeviceSpec, source: str, file: str, kernel: str, counts: Any, dram_bytes: float,
                 scale: float, block: tuple[int, ...] | None = None) -> roofline.KernelTime:
    """One launch of a kernel of helpers/kernels/`file` priced by roofline.predict_kernel: the executor's counts
    times `scale`, the compiler's registers and instructions where NVRTC is here (otherwise the source's requests
    alone, registers not counted). `block`: the launch's threads along x, y, z (all along x by default)."""
    from . import compiled

    spec = roofline.published_spec(device)
    try:
        work = compiled.kernel_work(counts, spec, source, kernel, dram_bytes=dram_bytes, scale=scale, name=file,
                                    block=block)
    except nvrtc.NvrtcUnavailable:
        work = roofline.KernelWork(
            flops=counts.flops * scale, shared_passes=counts.shared_wavefronts * scale,
            global_lines=(counts.global_load_lines + counts.global_store_lines) * scale,
            requests=(counts.global_load_requests + counts.global_store_requests + counts.shared_load_requests
                      + counts.shared_store_requests) * scale,
            dram_bytes=dram_bytes, threads_per_block=counts.threads_per_block,
            shared_bytes_per_block=counts.shared_bytes_per_block)
    return roofline.predict_kernel(spec, work)


#: The blocks reduce_sum.cu's first launch is counted with on the executor; each thread's share of the array is the
#: same as at the size priced, so every count grows with the blocks.
REDUCE_COUNT_BLOCKS = 4


@cache
def _reduce_counts(blocks: int, per_thread: int) -> tuple[Any, Any]:
    """The executor's counts of reduce_sum.cu's two launches: `blocks` blocks of REDUCE_THREADS threads, each thread
    adding `per_thread` numbers, then one block adding the `blocks` partial sums (checked against NumPy)."""
    from .. import executor

    n = blocks * REDUCE_THREADS * per_thread
    x = np.random.default_rng(5).random(n, dtype=np.float32)
    partial, total = np.zeros(blocks, np.float32), np.zeros(1, np.float32)
    program = executor.Program(kernel_source("reduce_sum.cu"))
    first = program.launch("block_sum", (blocks,), (REDUCE_THREADS,), (x, partial, np.int32(n))).counters
    second = program.launch("block_sum", (1,), (REDUCE_THREADS,), (partial, total, np.int32(blocks))).counters
    if not np.isclose(total[0], x.sum(dtype=np.float64), rtol=1e-4):
        raise AssertionError("reduce_sum.cu's two launches differ from NumPy's sum")
    return first, second


def predict_reduce_sum(device: str | specs.DeviceSpec, n: int, blocks: int = 1024) -> float:
    """Seconds for reduce_sum's two launches over n float32 numbers on `device` (as reduce_sum launches them), by
    chapter 07's kernel model: the first launch's counts made at REDUCE_COUNT_BLOCKS blocks with the same share
    per thread, scaled to `blocks`; its array read from DRAM once; the second launch counted as it is."""
    n, blocks = positive_int("n", n), positive_int("blocks", blocks)
    blocks = min(blocks, blocks_for(n, REDUCE_THREADS))
    per_thread = -(-n // (blocks * REDUCE_THREADS))
    counted = min(blocks, REDUCE_COUNT_BLOCKS)
    first, second = _reduce_counts(counted, per_thread)
    source = kernel_source("reduce_sum.cu")
    busy = (price_kernel(device, source, "reduce_sum.cu", "block_sum", first, 4.0 * n + 4 * blocks,
                         blocks / counted).seconds
            + price_kernel(device, source, "reduce_sum.cu", "block_sum", second, 4.0 * blocks + 4, 1.0).seconds)
    return pipelined(busy, launches=2)


def pipelined(device_seconds: float, launches: int = 1) -> float:
    """A call of `launches` CuPy launches whose kernels keep the GPU busy `device_seconds`, timed as h.benchmark
    times calls back to back: the host's cost of the launches (OVERHEADS['cupy'] each) hides behind the GPU's
    work, or the GPU waits for it."""
    return max(device_seconds, positive_int("launches", launches) * roofline.OVERHEADS["cupy"].value)


def matmul_ways(n: int, tile: int = MATMUL_TILE) -> dict[str, tuple[float, bool]]:
    """Chapter 03's three products of n x n float32 matrices: the FLOP per byte of main memory each reaches, and
    whether it is cuBLAS (a tuned matmul: GPU.predict_seconds(..., matmul=True) prices it so, in every place)."""
    n, tile = positive_int("n", n), positive_int("tile", tile)
    return {"naive kernel": (2 / 8, False), f"tiled kernel ({tile} x {tile})": (2 * tile / 8, False),
            "cuBLAS (a @ b)": (workloads.matmul_flops(n) / workloads.matmul_bytes(n, 4), True)}


#: How many times a GPU's L2 cache a memory-bound measurement's arrays must hold, so the cache cannot serve it.
L2_MULTIPLE = 4

#: CuPy runs alpha * x + beta * y as three kernels (alpha * x, beta * y, their sum), each a pass over memory:
#: 2 + 2 + 3 = 7 float32 numbers move per element (workloads.AXPBY_NUMBERS), where a fused kernel moves 3.
CUPY_AXPBY_KERNELS, CUPY_AXPBY_NUMBERS = 3, workloads.AXPBY_NUMBERS["cupy"]


def gpu() -> GPU:
    """The GPU here when CuPy can use one (measured); otherwise the T4, whose published specs give predictions."""
    reference = specs.get(specs.REFERENCE_GPU)
    if gpu_here():
        from ..measuring.hardware import hardware

        card = next(iter(hardware().gpus), None)
        if card is not None:
            return GPU(card.name, card.spec or reference, True, own_specs=card.spec is not None)
    return GPU(reference.name, reference, False)



# --------------------------------------------------------------------------------------------------------------
# Section 6: what, besides the bytes, a fusion ratio measured on the CPU shows


#: Cores busy (CPU time over wall time) above this mean the work was split over several cores (one busy core
#: reads about 1.0; a little more is the interpreter's and the OS's own threads).
SPLIT_CORES = 1.2
#: A rate this many times the main-memory roof means a cache served part of the bytes. Less can be the roof's own
#: error: it is the rate of one copy, and a loop that reads more than it writes can draw a little more.
ABOVE_ROOF = 1.25
#: Page faults per call above this mean the call's new arrays got fresh memory (a few come from Python itself).
FEW_FAULTS = 10


@dataclass(frozen=True)
class LoopSigns:
    """What chapter 03's table measured of one version of a loop: cores busy, page faults per call (None where the
    OS does not count them) and the GB/s it moved."""

    label: str
    cores: float
    faults: float | None
    gbps: float


def fusion_signs(loops: Sequence[LoopSigns], roof_gbps: float) -> list[str]:
    """Why a measured ratio of passes can differ from the byte count's, as the numbers show it: one line for each
    sign found (several cores, a rate ABOVE_ROOF times the main-memory roof `roof_gbps` or more, fresh memory
    every call), or one line saying that none was found. Printed, so the explanation follows the run."""
    if not finite(roof_gbps) or roof_gbps <= 0:
        raise ValueError(f"roof_gbps must be a finite number above zero, got {roof_gbps!r:.40}")
    signs = []
    for loop in loops:
        if loop.cores > SPLIT_CORES:
            signs.append(f"{loop.label}: {loop.cores:.1f} cores busy, so its loop was split over the cores (one core "
                         "alone may not draw all of the memory's bandwidth)")
        if loop.gbps > ABOVE_ROOF * roof_gbps:
            signs.append(f"{loop.label}: {loop.gbps:,.1f} GB/s, {loop.gbps / roof_gbps:.1f}x the {roof_gbps:,.1f} GB/s "
                         "main-memory roof, so a cache served part of its bytes: main memory's roof is the wrong one "
                         "for it")
        if loop.faults is not None and loop.faults > FEW_FAULTS:
            signs.append(f"{loop.label}: {loop.faults:,.0f} page faults a call, so its new arrays got fresh memory "
                         "every call, a cost the byte count leaves out")
    return signs or [f"none of these: {', '.join(loop.label for loop in loops)} each kept one core busy, none ran "
                     f"well above the {roof_gbps:,.1f} GB/s memory roof, and no page faults were counted: the byte "
                     "count is the model's whole account"]
