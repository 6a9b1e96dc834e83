"""The CPU executor for CUDA C: the series' own kernels (the .cu files and every kernel string in the notebooks)
run and match NumPy; planted bugs (a missing bounds check, barrier or zero padding, a wrong index) fail; C's
arithmetic rules hold; bad kernels and bad launches get a clear message."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import python_only

from helpers.chapters import make_it_fast, tensor_cores
from helpers.executor import Counters, CudaCError, KernelFault, Program, UnsupportedSyntax, cupy_cpu
from helpers.gpu import cuda

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "helpers" / "kernels"
RNG = np.random.default_rng(0)


def source(name: str) -> str:
    return (KERNELS / name).read_text()


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def blocks(n: int, threads: int) -> int:
    return (n + threads - 1) // threads


# ------------------------------------------------------------------------------------ how each kernel is run
# Each runner launches through `launch(source, name, grid, block, args)`: the CPU executor here, CuPy on a GPU
# (tests/test_gpu.py passes its own), writing the kernel's outputs into the NumPy arrays in args.


def executor_launch(src: str, name: str, grid: tuple[int, ...], block: tuple[int, ...], args: tuple) -> Counters:
    """Launch on the CPU executor; what it counted (a GPU's launcher returns None: it counts nothing)."""
    return Program(src).launch(name, grid, block, args).counters


def run_vector_add(src: str, name: str = "vector_add", n: int = 1000, grid: int | None = None,
                   launch=executor_launch) -> None:
    a, b, out = floats(n), floats(n), np.full(n, np.nan, np.float32)
    launch(src, name, (grid or blocks(n, 128),), (128,), (a, b, out, np.int32(n)))
    np.testing.assert_array_equal(out, a + b)


def run_matmul(src: str, name: str, m: int, k: int | None = None, n: int | None = None,
               launch=executor_launch) -> None:
    square = k is None
    k, n = (m, m) if square else (k, n)
    a, b, c = floats(m, k), floats(k, n), np.full((m, n), np.nan, np.float32)
    sizes = (np.int32(m),) if square else (np.int32(m), np.int32(k), np.int32(n))
    launch(src, name, (blocks(n, 16), blocks(m, 16)), (16, 16), (a, b, c, *sizes))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)  # the order of the sums differs from BLAS


def run_block_sum(src: str, n: int = 3001, grid: int = 5, launch=executor_launch) -> None:
    x, partial, total = floats(n), np.zeros(grid, np.float32), np.zeros(1, np.float32)
    launch(src, "block_sum", (grid,), (256,), (x, partial, np.int32(n)))
    launch(src, "block_sum", (1,), (256,), (partial, total, np.int32(grid)))
    assert total[0] == pytest.approx(float(x.sum(dtype=np.float64)), rel=1e-4, abs=1e-3)


def mandelbrot_reference(width: int, height: int, box: tuple[float, ...], steps: int) -> np.ndarray:
    """The same float32 operations, in the same order, as mandelbrot.cu."""
    x0, x1, y0, y1 = (np.float32(v) for v in box)
    px, py = np.meshgrid(np.arange(width), np.arange(height))
    c_re = x0 + (x1 - x0) * px.astype(np.float32) / np.float32(width - 1)
    c_im = y0 + (y1 - y0) * py.astype(np.float32) / np.float32(height - 1)
    z_re, z_im = np.zeros_like(c_re), np.zeros_like(c_im)
    counts = np.zeros(c_re.shape, np.int32)
    for _ in range(steps):
        inside = z_re * z_re + z_im * z_im <= np.float32(4)
        next_re = np.where(inside, z_re * z_re - z_im * z_im + c_re, z_re)
        z_im = np.where(inside, np.float32(2) * z_re * z_im + c_im, z_im)
        z_re = next_re
        counts += inside
    return counts


def run_mandelbrot(src: str, width: int = 37, height: int = 21, steps: int = 40, launch=executor_launch,
                   exact: bool = True) -> None:
    """exact=False (on a GPU): the GPU may fuse a multiply and an add (one rounding), so a point on the edge of
    the set can take a step more or less; nearly every count must still agree."""
    counts = np.full(width * height, -1, np.int32)
    box = (-2.0, 0.6, -1.1, 1.1)
    launch(src, "mandelbrot", (blocks(width, 16), blocks(height, 16)), (16, 16),
           (counts, np.int32(width), np.int32(height), *(np.float32(v) for v in box), np.int32(steps)))
    want = mandelbrot_reference(width, height, box, steps)
    got = counts.reshape(height, width)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        assert (got >= 0).all() and np.mean(got != want) < 0.02 and np.abs(got - want).max() <= steps


def run_scale(src: str, n: int = 1000, launch=executor_launch) -> None:
    x, out = floats(n), np.full(n, np.nan, np.float32)
    launch(src, "scale", (blocks(n, 256),), (256,), (x, out, np.float32(2.5), np.int32(n)))
    np.testing.assert_array_equal(out, np.float32(2.5) * x)


def decay_steps_reference(x: np.ndarray) -> np.ndarray:
    """How many times each float32 value shrinks by 1% before it is 1 or less (chapter 06's branchy kernel)."""
    steps = np.zeros(x.size, np.int32)
    v = x.astype(np.float32).copy()
    while (v > 1).any():
        more = v > 1
        v = np.where(more, v * np.float32(0.99), v)
        steps += more
    return steps


def run_decay_steps(src: str, n: int = 200, launch=executor_launch) -> None:
    x = (np.random.default_rng(4).pareto(1.0, n) * 4).astype(np.float32)
    out = np.full(n, -1, np.int32)
    launch(src, "decay_steps", (blocks(n, 128),), (128,), (x, out, np.int32(n)))
    np.testing.assert_array_equal(out, decay_steps_reference(x))


def run_sgemm(src: str, name: str, n: int, launch=executor_launch) -> None:
    """One of sgemm.cu's extern "C" rungs (chapter 07), launched as helpers.chapters.make_it_fast launches it."""
    grid, block = next(r for r in make_it_fast.RUNGS if r.kernel == name).launch(n)
    a, b, c = floats(n, n), floats(n, n), np.full((n, n), np.nan, np.float32)
    launch(src, name, grid, block, (a, b, c, np.int32(n)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


def run_hgemm(src: str, name: str, n: int = 64, launch=executor_launch) -> None:
    """One of hgemm.cu's tensor-core rungs (chapter 07), fp16 in, float32 sums, launched as
    helpers.chapters.tensor_cores launches it: within float32 rounding of the exact product of the fp16 inputs."""
    grid, block = next(r for r in tensor_cores.RUNGS if r.kernel == name).launch(n)
    a, b = tensor_cores.inputs(n, seed=1)
    c = np.full((n, n), np.nan, np.float32)
    launch(src, name, grid, block, (a, b, c, np.int32(n)))
    assert tensor_cores.agrees(c, a, b)


def run_wmma_tile(src: str, n: int = 32, launch=executor_launch) -> None:
    """Chapter 07's tensor-core exercise: a warp (one block) per 16 x 16 tile of C, fp16 in, float32 sums."""
    a, b = tensor_cores.inputs(n, seed=2)
    c = np.full((n, n), np.nan, np.float32)
    launch(src, "wmma_tile", (n // 16, n // 16), (32, 1), (a, b, c, np.int32(n)))
    assert tensor_cores.agrees(c, a, b)


def run_add_matrices(src: str, n: int = 64, launch=executor_launch) -> None:
    """Chapter 07's first exercise: C = A + B, and on the executor coalesced (4 sectors a request, as the check
    asks): its strided starting point is right but not yet fast."""
    a, b, c = floats(n, n), floats(n, n), np.full((n, n), np.nan, np.float32)
    counted = launch(src, "add_matrices", (blocks(n, 32), blocks(n, 32)), (32, 32), (a, b, c, np.int32(n)))
    np.testing.assert_array_equal(c, a + b)
    assert counted is None or counted.sectors_per_request <= 4, f"{counted.sectors_per_request} sectors a request"


def run_transpose(src: str, n: int = 64, launch=executor_launch) -> None:
    """Chapter 07's second exercise: the transpose, and on the executor free of bank conflicts (as the check
    asks): its unpadded starting point is right but 32-way."""
    x, out = floats(n, n), np.full((n, n), np.nan, np.float32)
    counted = launch(src, "transpose", (blocks(n, 32), blocks(n, 32)), (32, 32), (x, out, np.int32(n)))
    np.testing.assert_array_equal(out, x.T)
    assert counted is None or counted.bank_conflicts == 0, f"{counted.ways_per_request}-way shared requests"


def run_axpby4(src: str, n: int = 1000, launch=executor_launch) -> None:
    """Chapter 03's float4 axpby: four elements a thread, each input read in one 16-byte load (n a multiple of 4)."""
    x, y, z = floats(n), floats(n) + 1, np.full(n, np.nan, np.float32)
    launch(src, "axpby4", (blocks(n // 4, 256),), (256,), (x, y, z, np.float32(2), np.float32(3), np.int64(n)))
    np.testing.assert_allclose(z, np.float32(2) * x + np.float32(3) * y, rtol=1e-6)


RUNS = {
    "axpby4": run_axpby4,
    "vector_add": lambda src, **kw: run_vector_add(src, **kw),
    "vector_add_grid_stride": lambda src, **kw: run_vector_add(src, "vector_add_grid_stride", grid=3, **kw),
    "matmul_naive": lambda src, **kw: run_matmul(src, "matmul_naive", 37, **kw),
    "matmul_tiled": lambda src, **kw: run_matmul(src, "matmul_tiled", 37, **kw),
    "matmul_tiled_rect": lambda src, **kw: run_matmul(src, "matmul_tiled_rect", 21, 35, 18, **kw),
    "block_sum": run_block_sum,
    "mandelbrot": run_mandelbrot,
    "scale": run_scale,
    "decay_steps": run_decay_steps,
    "sgemm_naive": lambda src, **kw: run_sgemm(src, "sgemm_naive", 70, **kw),
    "sgemm_coalesced": lambda src, **kw: run_sgemm(src, "sgemm_coalesced", 70, **kw),
    "sgemm_shared": lambda src, **kw: run_sgemm(src, "sgemm_shared", 70, **kw),
    "sgemm_1d": lambda src, **kw: run_sgemm(src, "sgemm_1d", 128, **kw),
    "add_matrices": run_add_matrices,
    "transpose": run_transpose,
    "hgemm_wmma": lambda src, **kw: run_hgemm(src, "hgemm_wmma", **kw),
    "wmma_tile": run_wmma_tile,
}


# ------------------------------------------------------------------------------------ the series' own kernels


@pytest.mark.parametrize("file", sorted(p.name for p in KERNELS.glob("*.cu")))
def test_every_kernel_file_matches_numpy(file):
    src = source(file)
    names = Program(src).kernels
    assert names, file
    for name in names:
        RUNS[name](src)


def notebook_kernels() -> list[tuple[str, str, bool]]:
    """(notebook, kernel source, is it an exercise's starter) for every r\"\"\"...\"\"\" string with __global__ in
    the chapters: code cells, and the solutions in markdown."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"])
            for match in re.finditer(r'r"""(.*?)"""', text, re.S):
                if "__global__" in match.group(1):
                    starter = "exercise" in cell.get("metadata", {}).get("tags", [])
                    found.append((path.name, match.group(1), starter))
    return found


def test_the_notebooks_have_kernels_to_test():
    assert sum(not starter for _, _, starter in notebook_kernels()) >= 2  # the solutions of chapter 03


@pytest.mark.parametrize(("notebook", "src", "starter"), notebook_kernels(),
                         ids=lambda v: v if isinstance(v, str) and v.endswith("ipynb") else None)
def test_every_kernel_in_the_notebooks_runs_and_a_starter_is_not_yet_right(notebook, src, starter):
    for name in Program(src).kernels:
        if starter:  # an exercise's starting point compiles, and is wrong until the learner completes it
            with pytest.raises((AssertionError, KernelFault)):
                RUNS[name](src)
        else:
            RUNS[name](src)


def notebook_elementwise() -> list[tuple[str, cuda.Elementwise, bool]]:
    """(notebook, kernel, is it an exercise's starter) for every literal Elementwise(...) call in the chapters."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"])
            blocks = [text] if cell["cell_type"] == "code" else re.findall(r"```python\n(.*?)```", text, re.S)
            for block in blocks:
                for node in ast.walk(ast.parse(python_only(block))):
                    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("Elementwise",
                                                                                            "ElementwiseKernel"):
                        kernel = cuda.Elementwise(*(ast.literal_eval(a) for a in node.args))
                        found.append((path.name, kernel, "TODO" in kernel.operation))
    return found


ELEMENTWISE_REFERENCES = {
    "axpby_fused": lambda a, x, b, y: a * x + b * y,
    "silu": lambda x: x / (np.float32(1) + np.exp(-x)),
}


@pytest.mark.parametrize(("notebook", "kernel", "starter"), notebook_elementwise(),
                         ids=lambda v: v.name if isinstance(v, cuda.Elementwise) else None)
def test_every_elementwise_kernel_in_the_notebooks_matches_numpy(notebook, kernel, starter):
    front = cupy_cpu.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation, kernel.name)
    args = [np.float32(2.5) if "a" == p.name or "b" == p.name else floats(301) for p in kernel.inputs]
    got, want = front(*args), ELEMENTWISE_REFERENCES[kernel.name](*args)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6) != starter


# ------------------------------------------------------------------------------------ planted bugs fail


def _without(text: str, old: str, new: str = "", nth: int = 0) -> str:
    """`text` with the nth occurrence of `old` replaced (the test fails if there is none)."""
    starts = [m.start() for m in re.finditer(re.escape(old), text)]
    assert len(starts) > nth, f"{old!r} not in the kernel"
    at = starts[nth]
    return text[:at] + new + text[at + len(old):]


MATMUL = source("matmul.cu")
PLANTED = [
    ("no bounds check", lambda: run_vector_add(_without(source("vector_add.cu"), "if (i < n)")),
     "out-of-bounds read"),
    ("off by one", lambda: run_vector_add(_without(source("vector_add.cu"), "if (i < n)", "if (i <= n)")),
     "out-of-bounds read"),
    # in lock step every thread has stored its tile element before any thread reads: a read of another thread's
    # element with no barrier between is a race (a GPU may or may not have stored it yet)
    ("no first barrier", lambda: run_matmul(_without(MATMUL, "__syncthreads();"), "matmul_tiled", 37), "race"),
    ("no second barrier", lambda: run_matmul(_without(MATMUL, "__syncthreads();", nth=1), "matmul_tiled", 37),
     "race"),
    ("no zero padding", lambda: run_matmul(
        _without(MATMUL, "(row < n && a_col < n) ? A[row * n + a_col] : 0.0f", "A[row * n + a_col]"),
        "matmul_tiled", 37), "out-of-bounds read"),
    ("no tree barrier", lambda: run_block_sum(_without(source("reduce_sum.cu"), "__syncthreads();", nth=1)),
     "race"),
    ("no pixel bounds", lambda: run_mandelbrot(_without(source("mandelbrot.cu"), "if (px >= width || py >= height)",
                                                        "if (0)")), "race"),  # a pixel past the row's end
    # lands on the next row's pixel, which another thread writes
]


@pytest.mark.parametrize(("what", "run", "kind"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_fault_is_caught_with_thread_element_and_line(what, run, kind):
    with pytest.raises(KernelFault) as fault:
        run()
    assert fault.value.kind == kind
    assert re.search(r"at line \d+: thread \([\d, ]+\) of block \([\d, ]+\)", str(fault.value))
    assert fault.value.line and fault.value.thread is not None


@pytest.mark.parametrize(("what", "run"), [
    ("transposed B", lambda: run_matmul(_without(MATMUL, "B[k * n + col]", "B[col * n + k]"), "matmul_naive", 19)),
    ("row for column", lambda: run_matmul(_without(MATMUL, "C[row * n + col] = sum", "C[col * n + row] = sum"),
                                          "matmul_naive", 19)),
    ("a minus", lambda: run_vector_add(_without(source("vector_add.cu"), "a[i] + b[i];", "a[i] - b[i];"))),
    ("one step short", lambda: run_mandelbrot(_without(source("mandelbrot.cu"), "step < max_steps",
                                                       "step < max_steps - 1"))),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_planted_wrong_answer_does_not_match_numpy(what, run):
    with pytest.raises(AssertionError):
        run()


def test_threads_adding_into_one_global_element_race_unless_atomic():
    total = 'extern "C" __global__ void total(const float* x, float* out, int n) {\n' \
            ' int i = blockIdx.x * blockDim.x + threadIdx.x;\n if (i < n) {\n %s\n }\n}'
    x, out = np.ones(300, np.float32), np.zeros(1, np.float32)
    # in lock step every thread reads out[0], then every thread writes it (the same value, 1: no two writes
    # disagree), so thread 0's write follows the other threads' reads
    with pytest.raises(KernelFault, match=r"race at line 4: thread \(0,\) of block \(0,\) will write out\[0\], "
                                          r"which other threads of other blocks read at line 4.*atomicAdd") as fault:
        Program(total % "out[0] += x[i];").launch("total", (2,), (256,), (x, out, np.int32(300)))
    assert fault.value.kind == "race"
    with pytest.raises(KernelFault, match=r"race at line 4: thread \(1,\) of block \(0,\) will write out\[0\], "
                                          r"which thread \(0,\) of the same block wrote at line 4"):  # values differ
        Program(total % "out[0] += x[i];").launch("total", (2,), (256,), (np.arange(300, dtype=np.float32), out,
                                                                            np.int32(300)))
    out[:] = 0
    Program(total % "atomicAdd(&out[0], x[i]);").launch("total", (2,), (256,), (x, out, np.int32(300)))
    assert out[0] == 300


def test_a_barrier_orders_global_memory_within_a_block_but_not_across_blocks():
    shift = 'extern "C" __global__ void shift(float* x) {\n int i = blockIdx.x * blockDim.x + threadIdx.x;\n' \
            ' x[i] = 1.0f;\n __syncthreads();\n float left = x[i > 0 ? i - 1 : 0];\n}'
    Program(shift).launch("shift", (1,), (64,), (np.zeros(64, np.float32),))  # one block: the barrier orders it
    with pytest.raises(KernelFault, match=r"block \(1,\) will read x\[31\], which thread \(31,\) of block \(0,\)"):
        Program(shift).launch("shift", (2,), (32,), (np.zeros(64, np.float32),))


def test_a_barrier_only_part_of_the_block_reaches_is_reported():
    early = Program('extern "C" __global__ void f(int* x) {\n int i = threadIdx.x;\n if (i >= 4) return;\n'
                    ' __syncthreads();\n x[i] = 1;\n}')
    with pytest.raises(KernelFault, match="4 of the block's 8 threads reached") as fault:
        early.launch("f", (1,), (8,), (np.zeros(8, np.int32),))
    assert fault.value.kind == "barrier divergence" and fault.value.line == 4
    split = Program('extern "C" __global__ void f(int* x) {\n if (threadIdx.x < 2) {\n __syncthreads();\n'
                    ' } else {\n __syncthreads();\n }\n}')
    with pytest.raises(KernelFault, match="lines? 3|line 5"):
        split.launch("f", (1,), (4,), (np.zeros(4, np.int32),))


def test_a_loop_that_never_ends_stops_at_the_step_limit():
    forever = Program('extern "C" __global__ void f(int* x) { while (x[0] >= 0) { x[0] = 1; } }')
    with pytest.raises(KernelFault, match="loop that never ends") as fault:
        forever.launch("f", (1,), (1,), (np.zeros(1, np.int32),), max_steps=10_000)
    assert fault.value.kind == "step limit"


# ------------------------------------------------------------------------------------ C's rules


SEMANTICS = r"""
extern "C" __global__ void f(double* d, float* s, int* k, unsigned int* u, long long* w) {
    float third = 1.0f / 3.0f;
    d[0] = third * 3.0;        // a double literal promotes to double
    s[0] = third * 3.0f;       // float stays float32
    int big = 2147483647;
    k[0] = big + 1;            // 32-bit integers wrap
    k[1] = -7 / 2;             // division truncates toward zero
    k[2] = -7 % 2;
    unsigned int zero = 0;
    u[0] = zero - 1;           // unsigned wraps to 2^32 - 1
    k[3] = -1 < 0u;            // -1 becomes unsigned: false
    k[4] = (long long)(-1) < 0u;  // long long holds every unsigned int: true
    k[5] = (int)-3.9f;
    d[1] = 7 / 2;              // integer division, then converted
    d[2] = roundf(2.5f);       // halves away from zero
    w[0] = (long long)big * 4;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    w[1] = i - 1;              // size_t is 64-bit unsigned
    int total = 0;
    for (int j = 0; j < 10; j++) {
        if (j == 2) continue;  // continue still runs j++
        if (j == 5) break;
        total += j;
    }
    k[6] = total;
    k[7] = min(3, -4) + max(2u, 1u) + abs(-5);
    s[1] = fmaxf(1.0f, -2.0f);
}
"""


def test_c_arithmetic_rules():
    src = SEMANTICS
    d, s, k = np.zeros(3), np.zeros(2, np.float32), np.zeros(8, np.int32)
    u, w = np.zeros(1, np.uint32), np.zeros(2, np.int64)
    Program(src).launch("f", (1,), (1,), (d, s, k, u, w))
    third = np.float32(1) / np.float32(3)
    assert d[0] == float(third) * 3.0 != 1.0 and s[0] == third * np.float32(3) == 1.0
    assert k.tolist() == [-2**31, -3, -1, 0, 1, -3, 8, -4 + 2 + 5]
    assert u[0] == 2**32 - 1 and d[1] == 3.0 and d[2] == 3.0
    assert w.tolist() == [4 * (2**31 - 1), -1] and s[1] == 1.0


def test_a_const_int_sizes_a_shared_array_as_in_cpp():
    reverse = Program('extern "C" __global__ void f(float* x) {\n const int T = 8;\n const int S = T * 2;\n'
                      ' __shared__ float t[S];\n t[threadIdx.x] = x[threadIdx.x];\n __syncthreads();\n'
                      ' x[threadIdx.x] = t[S - 1 - threadIdx.x];\n}')
    x = np.arange(16, dtype=np.float32)
    reverse.launch("f", (1,), (16,), (x,))
    assert x.tolist() == list(range(15, -1, -1))


def test_paths_are_recorded_per_thread_and_grouped_in_warps():
    branchy = Program('extern "C" __global__ void f(const int* x, int* out) {\n int i = threadIdx.x;\n'
                      ' if (x[i] > 0) {\n out[i] = 1;\n } else {\n out[i] = 2;\n }\n}')
    x = np.array([1, -1] * 32, np.int32)
    run = branchy.launch("f", (1,), (64,), (x, np.zeros(64, np.int32)), trace=True)
    warps = run.warps()
    assert len(warps) == 2 and len(warps[0]) == 32
    assert warps[0][0] == [(3, True)] and warps[0][1] == [(3, False)]
    assert not branchy.launch("f", (1,), (64,), (x, np.zeros(64, np.int32))).paths  # only when asked


# ------------------------------------------------------------------------------------ bad kernels and launches


@pytest.mark.parametrize(("src", "error", "message"), [
    ('extern "C" __global__ void f(int* x) {\n int i = threadIdx.x x[i] = 1;\n}', CudaCError,
     "line 2: this does not parse"),
    ('extern "C" __global__ void f(int* x) {\n switch (x[0]) { default: break; }\n}', UnsupportedSyntax,
     "line 2: 'switch'"),
    ('extern "C" __global__ void f(float* x) {\n x[0] = foo(1.0f);\n}', UnsupportedSyntax,
     "the function foo()"),
    ('extern "C" __global__ void f(float* x) {\n x[0] = y;\n}', CudaCError, "'y' is not declared"),
    ('extern "C" __global__ void f(float* x) {\n dim3 d;\n}', UnsupportedSyntax, "line 2: the type dim3"),
    ("#define STR(x) #x\n" 'extern "C" __global__ void f(float* x) { }', UnsupportedSyntax,
     "the macro STR: the CPU executor expands macros whose parameters are names and whose body has no #"),
    ("__device__ float g(float v) { return v; }", CudaCError, "no kernel found"),
    ("", CudaCError, "a string of CUDA C"),
    ('extern "C" __global__ void f(int* x) {\n int i = 1;\n int i = 2;\n}', CudaCError,
     "line 3: 'i' is declared twice in the same block"),
    ('extern "C" __global__ void f(int* x) {\n x[0] = (1, 2);\n}', UnsupportedSyntax, "the comma operator"),
    ('extern "C" __global__ void f(float* x, int n) {\n __shared__ float t[n];\n}', CudaCError,
     "line 2: an array size must be a constant"),
    ('extern "C" __global__ void f(float* x) {\n x[0] = dynamic_cast<float>(1);\n}', UnsupportedSyntax,
     "line 2: dynamic_cast"),
    ('extern "C" __global__ void f(uint* x) {\n}', UnsupportedSyntax,
     'line 1: uint is not defined in CUDA C as NVRTC (CuPy\'s compiler) reads it (NVRTC: identifier "uint" is '
     "undefined): write unsigned int"),
    ('extern "C" __global__ void f(float* x) {\n int i = 0;\n x[i++] += 1.0f;\n}', UnsupportedSyntax,
     "line 3: a compound assignment (+=) whose target changes something itself"),
    ('extern "C" __global__ void f(float* x) {\n x[0] = INFINITY;\n}', UnsupportedSyntax,
     'line 2: INFINITY is not defined in CUDA C as NVRTC'),
])
def test_a_kernel_the_executor_cannot_run_is_named_with_its_line(src, error, message):
    with pytest.raises(error, match=re.escape(message)):
        Program(src)


VECTOR_ADD = source("vector_add.cu")


@pytest.mark.parametrize(("grid", "block", "args", "message"), [
    ((1,), (32, 64), None, "32 x 64 = 2,048 threads: a block has at most 1024 threads"),
    ((1,), (2048,), None, "block x = 2,048: at most 1,024"),
    ((1,), (0,), None, "positive whole numbers"),
    ((1, 1, 1, 1), (32,), None, "1 to 3"),
    ((1,), (32,), "python int", "the Python int 8589934592 does not fit a int"),
    ((1,), (32,), "float64", "an array of float64, but the kernel reads float32"),
    ((1,), (32,), "three", "takes 4 arguments"),
    ((1,), (32,), "strided", "not contiguous"),
])
def test_a_bad_launch_says_what_is_accepted(grid, block, args, message):
    a = np.zeros(8, np.float32)
    values = {None: (a, a, a, np.int32(8)), "python int": (a, a, a, 2**33), "float64": (a, a.astype(np.float64), a,
              np.int32(8)), "three": (a, a, a), "strided": (np.zeros(16, np.float32)[::2], a, a, np.int32(8))}[args]
    with pytest.raises((TypeError, ValueError), match=re.escape(message)):
        Program(VECTOR_ADD).launch("vector_add", grid, block, values)


def test_an_unknown_kernel_name_lists_the_kernels():
    with pytest.raises(CudaCError, match="its kernels: vector_add, vector_add_grid_stride"):
        Program(VECTOR_ADD).launch("vectoradd", (1,), (32,), ())



def test_warp_size_is_cudas_32():
    out = np.zeros(1, dtype=np.int32)
    Program('extern "C" __global__ void f(int* out) { out[0] = warpSize; }').launch("f", (1,), (1,), (out,))
    assert out[0] == 32
