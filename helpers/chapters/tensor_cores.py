"""Chapter 07's tensor-core rungs (helpers/kernels/hgemm.cu): fp16 inputs with float32 sums through WMMA, how each
is launched, what the CPU executor counts of it, what helpers.model.roofline predicts beside cuBLAS's own fp16 product,
and what the fp16 inputs cost in precision.

As for the SGEMM ladder (helpers.chapters.make_it_fast), the counts are made at a small size (COUNT_N) and scaled:
loads, shared-memory passes and tensor-core FLOPs grow as n³, stores as n². The executor counts a fragment's load or
store as the compiled code moves it (helpers/executor/wmma.py says how, tests/test_tensor_cores.py checks it against
the machine code).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from .. import executor
from ..core.project import DATA
from ..core.validate import positive_int
from ..executor import Counters
from ..gpu import compiled
from ..gpu.cuda import kernel_source
from ..measuring import specs, workloads
from ..model import roofline
from .make_it_fast import BIG_N, arch_of, gflops

SOURCE = "hgemm.cu"
#: The size the executor counts each rung at: a multiple of every rung's tile (about a second for both).
COUNT_N = 128
#: The largest n counts() runs (the executor checks every access of every thread).
MAX_COUNT_N = 256
#: The sums' C type in the kernels, and the tensor-core roof each runs at (roofline.tensor_rate).
ACCUMULATORS = {"float": ("float16", np.float32), "half": ("float16_acc16", np.float16)}
#: A float32 sum of K terms, rounded at each addition (to nearest or toward zero), is within K x 2^-23 of the sum
#: of their sizes; the check allows twice that.
SUM_ROUNDING = 2.0**-22
#: fp16 keeps 11 significant bits: rounding a number to fp16 moves it by at most 2^-11 of itself.
FP16_ROUNDING = 2.0**-11


@dataclass(frozen=True)
class TensorRung:
    """One tensor-core kernel of hgemm.cu: its name, what it changes, its launch, and the type of its sums."""

    label: str
    kernel: str  # the kernel's name, or the template's name without its <accumulator>
    changed: str
    tile: tuple[int, int]  # (rows, cols) of C one block computes
    block: tuple[int, int]  # threads: 32 lanes by warps
    accumulate: str = "float"

    @property
    def name(self) -> str:
        """What CuPy and the executor launch: 'hgemm_wmma', or a template instance 'hgemm_shared<float>'."""
        return self.kernel if self.kernel == "hgemm_wmma" else f"{self.kernel}<{self.accumulate}>"

    @property
    def tensor_dtype(self) -> str:
        """The tensor-core roof its sums run at."""
        return ACCUMULATORS[self.accumulate][0]

    def with_sums(self, accumulate: str) -> TensorRung:
        """The same rung with `accumulate` sums ('float' or 'half'; only the template takes half)."""
        if accumulate not in ACCUMULATORS or (accumulate == "half" and self.kernel == "hgemm_wmma"):
            raise ValueError(f"{self.label}: sums are one of {', '.join(ACCUMULATORS)} ('half' needs the template "
                             f"rung, 9); got {accumulate!r:.20}")
        return dataclasses.replace(self, accumulate=accumulate)

    def launch(self, n: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """(grid, block) for an n x n product; a ValueError when n is not a multiple of the block's tile."""
        n = positive_int("n", n)
        rows, cols = self.tile
        if n % rows or n % cols:
            raise ValueError(f"{self.label}: n = {n:,} is not a multiple of its {rows} x {cols} tile of C (the kernel "
                             f"has no bounds checks): use n = {64 * -(-n // 64):,}")
        return (n // cols, n // rows), self.block


RUNGS: tuple[TensorRung, ...] = (
    TensorRung("8 tensor cores", "hgemm_wmma", "a warp per 16 x 16 tile of C: each step, two 16 x 16 fp16 tiles "
               "straight from global memory into one mma_sync", (16, 64), (32, 4)),
    TensorRung("9 tensor cores + shared", "hgemm_shared", "a block of 8 warps shares its tiles of A and B through "
               "shared memory: each number copied from global memory once per block", (64, 32), (32, 8)),
)


def rung(label: str | int) -> TensorRung:
    """The tensor rung whose label starts with `label` (8, '9', 'tensor cores + shared'); a ValueError otherwise."""
    text = str(label).strip() if isinstance(label, int | str) and not isinstance(label, bool) else ""
    found = [r for r in RUNGS if text and text in (r.label, *r.label.split(" ", 1))]
    if len(found) != 1:
        raise ValueError(f"no tensor rung called {label!r:.40}; they are: {', '.join(r.label for r in RUNGS)}")
    return found[0]


def kernel_text(label: str | int) -> str:
    """The part of hgemm.cu that is rung `label`: its comment and its kernel."""
    number = rung(label).label.split(" ", 1)[0]
    text = kernel_source(SOURCE)
    start = text.index(f"// {number}. ")
    end = text.find("\n// ", text.index("\n}\n", start))
    return text[start:end if end > 0 else len(text)].strip()


def name_expressions() -> list[str]:
    """The template instances for cupy.RawModule(code=..., name_expressions=...): float and half sums."""
    return [f"hgemm_shared<{acc}>" for acc in ACCUMULATORS]


@cache
def _program() -> executor.Program:
    return executor.Program(kernel_source(SOURCE), name_expressions=name_expressions())


def inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A and B for an n x n product: float32 normals, rounded to fp16 (what the tensor cores take)."""
    a, b = workloads.make_inputs("matmul", positive_int("n", n), "float32", "numpy", seed=seed)
    return a.astype(np.float16), b.astype(np.float16)


def run_on_executor(r: TensorRung, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, Counters]:
    """C = A @ B by rung `r` on the CPU executor (A and B fp16), and what the launch counted."""
    n = a.shape[0]
    grid, block = r.launch(n)
    c = np.zeros((n, n), ACCUMULATORS[r.accumulate][1])
    launch = _program().launch(r.name, grid, block, (a, b, c, np.int32(n)))
    return c, launch.counters


def sum_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How far float32 sums of A @ B's exact products may be from the exact product, element by element:
    K x SUM_ROUNDING x (|A| @ |B|) (the products of two fp16 numbers are exact in float32)."""
    return a.shape[1] * SUM_ROUNDING * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def fp16_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How far A @ B with A and B rounded to fp16 (float32 sums) may be from the float32 inputs' exact product:
    each product moves by at most 2 x FP16_ROUNDING (+ its square) of itself, plus sum_bound."""
    size = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return (2 * FP16_ROUNDING + FP16_ROUNDING**2) * size + sum_bound(a, b)


def agrees(c: Any, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether C is A @ B (A, B fp16) to float32 sums: every element within sum_bound of the exact product."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return bool(np.all(np.abs(np.asarray(c, np.float64) - exact) <= sum_bound(a, b)))


def counts(label: str | int, n: int = COUNT_N, accumulate: str = "float") -> Counters:
    """What tensor rung `label` does at n x n on the executor, checked against NumPy first (float32 sums: within
    sum_bound; fp16 sums: within what rounding each to fp16 adds)."""
    r = rung(label).with_sums(accumulate)
    n = positive_int("n", n)
    if n > MAX_COUNT_N:
        raise ValueError(f"n = {n:,}: the CPU executor counts at most n = {MAX_COUNT_N} (it checks every access); the "
                         f"counts per multiply-add are the same at {COUNT_N}")
    r.launch(n)
    return _counts(r, n)


@cache
def _counts(r: TensorRung, n: int) -> Counters:
    a, b = inputs(n)
    c, counted = run_on_executor(r, a, b)
    right = agrees(c, a, b) if r.accumulate == "float" else np.allclose(
        c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=n * FP16_ROUNDING * 4)
    if not right:
        raise AssertionError(f"{r.label} ({r.accumulate} sums): C differs from A @ B at n = {n}")
    return counted


# --------------------------------------------------------------------------------------------------------------
# What the compiler made of each rung (registers), stored so every machine predicts from the same facts.

COMPILED = DATA / "hgemm-compiled.json"
#: Turing (T4), Ampere (A100), Ada (RTX 4090, L4), Hopper (H100, H200): WMMA needs sm_70 or later.
COMPILED_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")


@cache
def stored() -> dict[str, Any]:
    """The stored compiled facts: {"nvrtc", "archs": {arch: {kernel name: {registers, shared_bytes, spills}}}}."""
    return json.loads(COMPILED.read_text())


def compile_all() -> dict[str, Any]:
    """Every rung (float and half sums) compiled by NVRTC for each of COMPILED_ARCHS: registers, shared bytes,
    spills (python -m helpers.chapters.tensor_cores writes them to COMPILED)."""
    from ..gpu import nvrtc

    names = tuple(name_expressions())
    archs: dict[str, Any] = {}
    for arch in COMPILED_ARCHS:
        made = compiled.facts(kernel_source(SOURCE), arch, SOURCE, names)
        archs[arch] = {name: {"registers": k.registers, "shared_bytes": k.shared_bytes,
                              "spills": k.spill_stores + k.spill_loads} for name, k in sorted(made.items())}
    return {"nvrtc": nvrtc.version(), "archs": archs}


def registers(r: TensorRung, spec: specs.DeviceSpec) -> int | None:
    """The registers a thread of rung `r` uses as compiled for `spec`'s architecture (None: not on file)."""
    return stored()["archs"].get(arch_of(spec), {}).get(r.name, {}).get("registers")


# --------------------------------------------------------------------------------------------------------------
# The model


def work(r: TensorRung, counted: Counters, device: specs.DeviceSpec | str, n: int = BIG_N,
         counted_at: int = COUNT_N) -> roofline.KernelWork:
    """What tensor rung `r` does at n x n on `device`: the executor's counts at `counted_at`, scaled (n³ for loads,
    shared passes and tensor FLOPs, n² for stores), the DRAM bytes of the cache model (fp16 inputs, C in the sums'
    type), the registers the compiler gave it, and one barrier wait a step for a tile loop (two barriers a step)."""
    r.launch(positive_int("n", n))
    grow, spread = (n / positive_int("counted_at", counted_at)) ** 3, (n / counted_at) ** 2
    c = counted
    spec = roofline.published_spec(device)
    specs.sm_limits(spec)  # a GPU without its SMs on file is refused here, naming those with them
    regs = registers(r, spec)
    occ = roofline.occupancy(spec, c.threads_per_block, c.shared_bytes_per_block, regs)
    out_size = np.dtype(ACCUMULATORS[r.accumulate][1]).itemsize
    dram = roofline.matmul_dram_bytes(n, r.tile, occ.blocks_per_sm * spec.sms, spec.l2_bytes,  # type: ignore[operator]
                                      itemsize=2) + n * n * (out_size - 2)
    return roofline.KernelWork(
        flops=(c.flops - c.tensor_flops) * grow, shared_passes=c.shared_wavefronts * grow,
        global_lines=c.global_load_lines * grow + c.global_store_lines * spread,
        requests=(c.global_load_requests + c.shared_load_requests + c.shared_store_requests) * grow
        + c.global_store_requests * spread,
        dram_bytes=dram, threads_per_block=c.threads_per_block, shared_bytes_per_block=c.shared_bytes_per_block,
        sums_per_thread=16 * 16 // 32, registers_per_thread=regs, barrier_waits=c.barriers / 2 * grow,
        tensor_flops=c.tensor_flops * grow, tensor_dtype=r.tensor_dtype)


def predict(label: str | int, device: specs.DeviceSpec | str, n: int = BIG_N,
            accumulate: str = "float") -> roofline.KernelTime:
    """The predicted time of tensor rung `label` at n x n on `device` (helpers.model.roofline.predict_kernel)."""
    r = rung(label).with_sums(accumulate)
    return roofline.predict_kernel(device, work(r, counts(r.label, accumulate=accumulate), device, n))


def predict_cublas(device: specs.DeviceSpec | str, n: int = BIG_N) -> float:
    """cuBLAS's fp16 product (float32 sums) at n x n on `device`, timed as the chapter times cuBLAS (pipelined)."""
    return roofline.predict_matmul_seconds(device, n, n, n, "float16", timed="pipelined")


def show_table(device: specs.DeviceSpec | str, n: int = BIG_N, sgemm_best: float | None = None) -> None:
    """Print each tensor rung's counters at COUNT_N and its prediction at n on `device`, beside cuBLAS's fp16
    product (and the best float32 rung's predicted seconds, when given)."""
    spec = roofline.published_spec(device)
    print(f"{'kernel':<26}{'mma/warp':>9}{'loads/mma':>10}{'L1 lines/mma':>13}{'passes/mma':>11}{'warps/SM':>9}"
          f"{'bound by':>14}{'TFLOP/s':>9}")
    for r in RUNGS:
        c, p = counts(r.label), predict(r.label, spec, n)
        mma = c.tensor_ops
        print(f"{r.label:<26}{mma / (c.blocks * r.block[1]):>9.0f}{c.tensor_loads / mma:>10.2f}"
              f"{c.global_load_lines / mma:>13.1f}{c.shared_wavefronts / mma:>11.1f}{p.occupancy.warps_per_sm:>9}"
              f"{p.bound:>14}{gflops(n, p.seconds) / 1e3:>9.1f}")
    if sgemm_best is not None:
        print(f"{'best float32 rung (7)':<26}{'':>66}{gflops(n, sgemm_best) / 1e3:>9.1f}")
    print(f"{'cuBLAS, fp16 (a @ b)':<26}{'':>52}{'tensor cores':>14}{gflops(n, predict_cublas(spec, n)) / 1e3:>9.1f}")
    print(f"(predicted for the {spec.name} at n = {n:,}; counts per mma_sync at n = {COUNT_N} on the CPU executor)")


# --------------------------------------------------------------------------------------------------------------
# What fp16 costs: precision and range


def formats() -> list[tuple[str, int, float, float]]:
    """(name, significant bits, largest finite, smallest normal) of float32, bfloat16 and float16."""
    out = []
    for name, kind in (("float32", np.float32), ("bfloat16", None), ("float16", np.float16)):
        if kind is None:
            try:
                import ml_dtypes
            except ImportError:
                continue
            info: Any = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = np.finfo(kind)
        out.append((name, int(info.nmant) + 1, float(info.max), float(info.smallest_normal)))
    return out


def digits(c: Any, exact: np.ndarray) -> float:
    """Correct significant digits of C against the exact product: -log10 of its largest error over the largest
    value (an error of 1e-3 of the largest value: about 3 digits)."""
    c64 = np.asarray(c, np.float64)
    return float(-np.log10(np.max(np.abs(c64 - exact)) / np.max(np.abs(exact))))


# --------------------------------------------------------------------------------------------------------------
# On a GPU


def gpu_kernels(cupy: Any) -> dict[str, Any]:
    """Every tensor rung (float sums) compiled by CuPy as one cupy.RawModule: rung label -> kernel."""
    module = cupy.RawModule(code=kernel_source(SOURCE), name_expressions=name_expressions())
    return {r.label: module.get_function(r.name) for r in RUNGS}


def measure(gpu: Any, r: TensorRung, n: int, kernel: Any, a: Any, b: Any) -> Any:
    """Rung `r` at n x n timed on the GPU (h.benchmark, synchronised) on the fp16 device arrays a and b, judged by
    the fp16 roof; None without a GPU."""
    if not gpu.here:
        return None
    import cupy

    c = cupy.empty((n, n), dtype=ACCUMULATORS[r.accumulate][1])
    grid, block = r.launch(n)
    return gpu.measure(lambda: kernel(grid, block, (a, b, c, np.int32(n))), flops=workloads.matmul_flops(n),
                       dtype="float16", label=r.label)


def run_on_gpu(r: TensorRung, kernel: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B by rung `r` on the GPU (A, B fp16 host arrays), copied back to the host."""
    import cupy

    n = a.shape[0]
    c = cupy.empty((n, n), dtype=ACCUMULATORS[r.accumulate][1])
    grid, block = r.launch(n)
    kernel(grid, block, (cupy.asarray(a), cupy.asarray(b), c, np.int32(n)))
    return cupy.asnumpy(c)


if __name__ == "__main__":  # python -m helpers.chapters.tensor_cores: rewrite the stored compiled facts (needs NVRTC)
    COMPILED.write_text(json.dumps(compile_all(), indent=1) + "\n")
    print(f"wrote {COMPILED}")
