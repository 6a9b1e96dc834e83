"""The executor's second design (lock-step lanes): counters worked out by hand, memory as CUDA has it (slices
and aliases), masks that keep inactive lanes from loading, and launches at the sizes where tiling matters."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers.executor import KernelFault, Program, UnsupportedSyntax
from helpers.gpu import cuda

RNG = np.random.default_rng(1)


def kernel(body: str, params: str = "float* x, float* y, int n") -> Program:
    return Program(f'extern "C" __global__ void k({params}) {{\n{body}\n}}')


def counters(body: str, args: tuple, grid=(1,), block=(32,), params: str = "float* x, float* y, int n"):
    return kernel(body, params).launch("k", grid, block, args).counters


# ------------------------------------------------------------------------------------------------ counters


def test_a_coalesced_load_touches_four_sectors_a_strided_one_thirty_two():
    x, y = np.arange(32 * 32, dtype=np.float32), np.zeros(32, np.float32)
    coalesced = counters("int i = threadIdx.x; y[i] = x[i];", (x, y, np.int32(32)))
    assert (coalesced.global_load_requests, coalesced.global_load_sectors) == (1, 4)  # 32 x 4 B = 128 B
    assert (coalesced.global_store_requests, coalesced.global_store_sectors) == (1, 4)
    strided = counters("int i = threadIdx.x; y[i] = x[i * 32];", (x, y, np.int32(32)))
    assert (strided.global_load_requests, strided.global_load_sectors) == (1, 32)  # one float in each 128 B
    assert strided.sectors_per_request == pytest.approx((32 + 4) / 2)
    broadcast = counters("int i = threadIdx.x; y[i] = x[0];", (x, y, np.int32(32)))
    assert broadcast.global_load_sectors == 1
    assert coalesced.global_load_bytes == strided.global_load_bytes == 32 * 4


def test_shared_memory_bank_conflicts_are_counted_per_request():
    x, y = np.zeros(32, np.float32), np.zeros(32, np.float32)
    body = "__shared__ float s[1024];\n int t = threadIdx.x;\n s[%s] = 1.0f;\n __syncthreads();\n y[t] = s[%s];"
    free = counters(body % ("t", "t"), (x, y, np.int32(32)))
    assert (free.shared_store_requests, free.shared_load_requests, free.bank_conflicts) == (1, 1, 0)
    conflicted = counters(body % ("t * 32", "t * 32"), (x, y, np.int32(32)))  # every lane in bank 0
    assert conflicted.shared_wavefronts == 2 * 32 and conflicted.bank_conflicts == 2 * 31
    assert conflicted.ways_per_request == 32
    two_way = counters(body % ("t * 2", "t * 2"), (x, y, np.int32(32)))  # banks 0, 2, ..., 30, each twice
    assert two_way.ways_per_request == 2
    broadcast = counters("__shared__ float s[4];\n int t = threadIdx.x;\n if (t == 0) s[0] = 1.0f;\n"
                         " __syncthreads();\n y[t] = s[0];", (x, y, np.int32(32)))
    assert broadcast.shared_load_requests == 1 and broadcast.bank_conflicts == 0  # one word, read by all: one pass
    assert free.shared_bytes_per_block == 4096 and free.threads_per_block == 32 and free.barriers == 1


def test_flops_lanes_and_divergence_are_counted_for_the_lanes_that_run():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    axpy = counters("int i = threadIdx.x;\n if (i < n) y[i] = 2.0f * x[i] + y[i];", (x, y, np.int32(48)),
                    block=(64,))
    assert axpy.flops == 2 * 48
    assert axpy.flops_per_byte == pytest.approx(2 * 48 / (3 * 48 * 4))
    half = counters("int i = threadIdx.x;\n if (i % 2) y[i] = x[i];", (x, y, np.int32(64)), block=(64,))
    # a warp step per statement or condition: the declaration and the test, each 2 warps of 32 lanes, then the
    # store, 2 warps with 16 of their 32 lanes on the odd branch
    assert half.active_lanes == 64 + 64 + 32 and half.warp_steps == 2 + 2 + 2
    assert half.useful_lanes == pytest.approx((64 + 64 + 32) / (32 * 6))
    total = np.zeros(1, np.float32)
    atomics = counters("atomicAdd(&y[0], x[threadIdx.x]);", (x, total, np.int32(64)), block=(64,))
    assert atomics.atomics == 64 and total[0] == 64


def test_counters_of_the_tiled_matmul_follow_from_its_tile():
    n = 64
    a, b, c = (RNG.standard_normal((n, n)).astype(np.float32) for _ in range(3))
    run = Program(cuda.kernel_source("matmul.cu")).launch("matmul_tiled", (n // 16, n // 16), (16, 16),
                                                          (a, b, c, np.int32(n)))
    count = run.counters
    warps = (n // 16) ** 2 * 8
    assert count.flops == 2 * n**3
    assert count.global_load_requests == warps * (n // 16) * 2 and count.sectors_per_request == pytest.approx(4)
    assert count.shared_load_requests == warps * (n // 16) * 16 * 2 and count.bank_conflicts == 0
    assert count.flops_per_byte == pytest.approx(2 * n**3 / (4 * (2 * n**3 / 16 + n * n)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------ memory


STENCIL = kernel("int i = threadIdx.x;\n if (i < n) y[i] = x[i - 3] + x[i + 3];")


def test_a_launch_on_a_slice_reads_its_allocation_around_it():
    base = np.arange(16, dtype=np.float32)
    y = np.zeros(10, np.float32)
    STENCIL.launch("k", (1,), (32,), (base[3:], y, np.int32(10)))  # in[-3] is base[0]: inside the allocation
    np.testing.assert_array_equal(y, base[0:10] + base[6:16])
    with pytest.raises(KernelFault, match=re.escape("read x[-3], but that is element -1 of the allocation x points "
                                                    "into, which has 16 elements (0 to 15; x starts at its element "
                                                    "2)")):
        STENCIL.launch("k", (1,), (32,), (base[2:], y, np.int32(10)))


def test_one_array_passed_twice_is_one_allocation():
    shift = kernel("int i = threadIdx.x;\n if (i + 1 < n) y[i + 1] = x[i];")
    buffer = np.arange(8, dtype=np.float32)
    with pytest.raises(KernelFault, match=r"race at line 3: thread \(0,\) of block \(0,\) will write y\[1\], which "
                                          r"thread \(1,\) of the same block read at line 3"):
        shift.launch("k", (1,), (8,), (buffer, buffer, np.int32(8)))  # an in-place shift: a race on a GPU
    apart = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    shift.launch("k", (1,), (8,), (apart, out, np.int32(8)))
    assert out[1:].tolist() == apart[:-1].tolist()


# ------------------------------------------------------------------------------------------------ lock step


def test_inactive_lanes_never_load():
    x, y = np.full(10, 5, np.float32), np.zeros(32, np.float32)
    guarded = kernel("int i = threadIdx.x;\n y[i] = (i < n && x[i] > 0.0f) ? x[i] : -1.0f;")
    guarded.launch("k", (1,), (32,), (x, y, np.int32(10)))
    assert y.tolist() == [5.0] * 10 + [-1.0] * 22
    either = kernel("int i = threadIdx.x;\n if (i >= n || x[i] < 0.0f) { y[i] = 0.0f; return; }\n y[i] = x[i];")
    either.launch("k", (1,), (32,), (x, y, np.int32(10)))
    assert y.tolist() == [5.0] * 10 + [0.0] * 22


def test_divergent_loops_break_continue_and_return_per_lane():
    src = ("int i = threadIdx.x;\n float s = 0.0f;\n for (int j = 0; j < 100; j++) {\n"
           "  if (j == i) break;\n  if (j % 3 == 0) continue;\n  if (j > 20 && i == 31) return;\n"
           "  s += (float)j;\n }\n y[i] = s;")
    y = np.full(32, -1, np.float32)
    kernel(src).launch("k", (1,), (32,), (np.zeros(1, np.float32), y, np.int32(0)))
    want = [float(sum(j for j in range(i) if j % 3)) for i in range(31)] + [-1.0]
    assert y.tolist() == want


def test_a_device_function_returns_per_lane():
    src = ('__device__ int steps(int v) {\n int s = 0;\n while (v > 1) {\n  if (v % 2) return -s;\n'
           '  v /= 2;\n  s++;\n }\n return s;\n}\n'
           'extern "C" __global__ void k(int* out) { int i = threadIdx.x; out[i] = steps(i); }')
    out = np.zeros(40, np.int32)
    Program(src).launch("k", (1,), (40,), (out,))

    def steps(v):
        s = 0
        while v > 1:
            if v % 2:
                return -s
            v //= 2
            s += 1
        return s
    assert out.tolist() == [steps(i) for i in range(40)]


def test_a_variable_set_by_some_lanes_only_is_reported_where_another_reads_it():
    partly = kernel("float v;\n if (threadIdx.x < 4) v = 1.0f;\n y[threadIdx.x] = v;")
    with pytest.raises(KernelFault, match="uses the variable v .* before it is given one"):
        partly.launch("k", (1,), (8,), (np.zeros(8, np.float32), np.zeros(8, np.float32), np.int32(8)))
    partly.launch("k", (1,), (4,), (np.zeros(8, np.float32), np.zeros(8, np.float32), np.int32(8)))


def test_the_step_limit_counts_lock_step_rounds():
    loop = kernel("float s = 0.0f;\n for (int j = 0; j < n; j++) s += 1.0f;\n"
                  " y[blockIdx.x * blockDim.x + threadIdx.x] = s;")
    y = np.zeros(64 * 1024, np.float32)
    run = loop.launch("k", (64,), (1024,), (np.zeros(1, np.float32), y, np.int32(50)))
    assert (y == 50).all()
    assert run.steps == 51  # one batch of 64 blocks: 51 tests of j < n, each for all 65,536 threads at once
    with pytest.raises(KernelFault, match="loop rounds in all"):
        loop.launch("k", (1,), (32,), (np.zeros(1, np.float32), y, np.int32(50)), max_steps=10)


def test_a_million_thread_vector_add_and_a_256_tiled_matmul_run_checked():
    n = 1 << 20
    a, b, out = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32), \
        np.full(n, np.nan, np.float32)
    Program(cuda.kernel_source("vector_add.cu")).launch("vector_add", (n // 256,), (256,), (a, b, out, np.int32(n)))
    np.testing.assert_array_equal(out, a + b)
    m = 256
    A, B, C = (RNG.standard_normal((m, m)).astype(np.float32) for _ in range(3))
    Program(cuda.kernel_source("matmul.cu")).launch("matmul_tiled", (m // 16, m // 16), (16, 16),
                                                     (A, B, C, np.int32(m)))
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


NESTED = '''extern "C" __global__ void k(const int* x, int* out, int n) {
 int i = blockIdx.x * blockDim.x + threadIdx.x;
 if (i >= n) return;
 int acc = 0;
 for (int a = 0; a < x[i] % 7 + 3; a++) {
   if (a == 4 && i % 3 == 0) continue;
   int b = 0;
   while (1) { b++; if (b > a || b > x[i] % 5) break; if ((b + i) % 4 == 0) continue; acc += b * a; }
   if (acc > 200 && i % 2) break;
 }
 do { acc -= 3; } while (acc > 50 && i % 5 != 1);
 out[i] = acc;
}'''


def nested_twin(v: int, i: int) -> int:
    """NESTED for one thread, in Python (C's % keeps the sign of the dividend)."""
    def mod(a: int, b: int) -> int:
        return int(np.fmod(a, b))
    acc, a = 0, 0
    while a < mod(v, 7) + 3:
        if not (a == 4 and i % 3 == 0):
            b = 0
            while True:
                b += 1
                if b > a or b > mod(v, 5):
                    break
                if (b + i) % 4 == 0:
                    continue
                acc += b * a
            if acc > 200 and i % 2:
                break
        a += 1
    acc -= 3
    while acc > 50 and i % 5 != 1:
        acc -= 3
    return acc


def test_nested_divergent_loops_match_each_threads_own_run():
    n = 1000
    x = RNG.integers(-300, 300, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    Program(NESTED).launch("k", (16,), (64,), (x, out, np.int32(n)))
    assert out.tolist() == [nested_twin(int(v), i) for i, v in enumerate(x)]


# ------------------------------------------------------------------------------------------------ a review's finds


def test_a_pointer_into_different_arrays_in_different_threads_is_refused_not_followed_into_one():
    src = ('extern "C" __global__ void k(const float* a, const float* b, float* out) {\n'
           ' int i = threadIdx.x; const float* p = a; if (i & 1) p = b; out[i] = p[i]; }')
    with pytest.raises(UnsupportedSyntax, match="points into a in some threads and into b in others"):
        Program(src).launch("k", (1,), (32,), (np.zeros(32, np.float32), np.ones(32, np.float32),
                                                np.zeros(32, np.float32)))


def test_a_ternary_no_lane_runs_and_unsigned_pointer_steps_behave_as_on_a_gpu():
    skip = kernel("int i = threadIdx.x; float s = 0.0f;\n for (int j = 0; j < n; j++) {\n"
                  "  float v = x[j * 32 + i]; if (v < 0.0f) continue; s += v > 1.0f ? v : 0.5f;\n }\n y[i] = s;")
    x = np.concatenate([np.full(32, -1, np.float32), np.full(32, 2, np.float32)])
    y = np.zeros(32, np.float32)
    skip.launch("k", (1,), (32,), (x, y, np.int32(2)))  # round 1: every lane continues before the ?:
    assert (y == 2).all()
    stencil = kernel("const float* c = x + blockIdx.x * blockDim.x + threadIdx.x + 1;\n"
                     " y[threadIdx.x] = c[-1] + *(c - threadIdx.x);")
    x = np.arange(40, dtype=np.float32)
    stencil.launch("k", (1,), (32,), (x, y, np.int32(32)))
    assert y.tolist() == [float(i + 1) for i in range(32)]


def test_conversions_saturate_shared_arrays_are_per_declaration_and_64_bit_division_truncates():
    src = ('extern "C" __global__ void k(const float* a, int* i32, unsigned int* u32, long long* w) {\n'
           ' int t = threadIdx.x; i32[t] = (int)a[t]; u32[t] = (unsigned int)a[t];\n'
           ' long long lo = -9223372036854775807LL - 1; w[t] = t == 0 ? lo / 2 : lo % 3;\n'
           ' { __shared__ float s[32]; s[t] = 1.0f; __syncthreads(); i32[t] += (int)s[31 - t]; }\n'
           ' { __shared__ float s[32]; s[t] = 2.0f; __syncthreads(); i32[t] += (int)s[31 - t]; }\n}')
    a = np.zeros(32, np.float32)
    a[:4] = [3e9, -3e9, 5e9, np.nan]
    i32, u32, w = np.zeros(32, np.int32), np.zeros(32, np.uint32), np.zeros(32, np.int64)
    Program(src).launch("k", (1,), (32,), (a, i32, u32, w))  # two arrays named s: no race between them
    assert i32[:4].tolist() == [2**31 - 1 + 3 - 2**32, -2**31 + 3, 2**31 - 1 + 3 - 2**32, 3]  # saturated, then + 3
    assert u32[0] == 3_000_000_000 and u32[2] == 2**32 - 1 and u32[3] == 0
    assert w[0] == -2**62 and w[1] == -2


def test_math_functions_of_floats_call_the_float_overloads_as_cuda_cpp_does():
    src = ('extern "C" __global__ void k(const float* x, float* y, double* d) {\n int i = threadIdx.x;\n'
           ' y[i] = exp(x[i]) - expf(x[i]) + pow(x[i], 2.0f) - powf(x[i], 2.0f);\n d[i] = exp((double)x[i]); }')
    x = np.linspace(-3, 3, 32, dtype=np.float32)
    y, d = np.full(32, np.nan, np.float32), np.zeros(32)
    Program(src).launch("k", (1,), (32,), (x, y, d))
    assert (y == 0).all() and np.allclose(d, np.exp(x.astype(np.float64)), rtol=1e-15)
