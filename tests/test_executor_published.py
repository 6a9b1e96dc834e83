"""Issue 40 and 41: kernels written in the style of published ones (NVIDIA's samples and programming guide, llm.c's
dev kernels, reduction tutorials, a PMPP companion, SGEMM worklogs, WMMA tutorials; our own code, not copies), each
run on the CPU executor against NumPy, and each compared with the reference compile (NVRTC with CUDA's headers,
helpers.gpu.nvrtc) for sm_75 and sm_90: what the reference compiles, the executor runs right; planted faults are
caught."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.executor import CudaCError, KernelFault, Program
from helpers.gpu import nvrtc

RNG = np.random.default_rng(40)
needs_reference = pytest.mark.skipif(not nvrtc.available() or bool(nvrtc.missing_headers()),
                                     reason="NVRTC or CUDA's headers are absent (the nvrtc extra installs both)")


def reference_compiles(source: str, expressions: tuple[str, ...] = ()) -> None:
    """The reference compile accepts `source` for the T4 and Hopper (skipped, saying so, where it is absent)."""
    if not nvrtc.available() or nvrtc.missing_headers():
        return
    for arch in nvrtc.TARGET_ARCHS:
        nvrtc.compile_source(source, arch, name_expressions=expressions)


COOPERATIVE_SUM = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// one warp per row: the row's sum, as llm.c's dev kernels write it
extern "C" __global__ void row_sums(const float* inp, float* out, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) return;
    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < cols; i += warp.size()) sum += inp[row * cols + i];
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    if (warp.thread_rank() == 0) out[row] = sum;
}
"""

SAMPLE_REDUCTION = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define WARP_SIZE 32

// a block reduction in the style of NVIDIA's reduction sample: shared memory, then a tile's shuffles
template <unsigned int blockSize = 256>
__global__ void reduce(const float* g_idata, float* g_odata, unsigned int n) {
    cg::thread_block cta = cg::this_thread_block();
    __shared__ float sdata[blockSize / WARP_SIZE];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    float mySum = (i < n) ? g_idata[i] : 0.0f;
    cg::thread_block_tile<WARP_SIZE> tile32 = cg::tiled_partition<WARP_SIZE>(cta);
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
    if (tile32.thread_rank() == 0) sdata[tid / WARP_SIZE] = mySum;
    cg::sync(cta);
    if (tid < WARP_SIZE) {
        mySum = (tid < blockSize / WARP_SIZE) ? sdata[tid] : 0.0f;
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
        if (tid == 0) g_odata[blockIdx.x] = mySum;
    }
}
"""

CPP_FEATURES = r"""
#ifndef TILE
#define TILE 16
#endif
#if __CUDA_ARCH__ >= 700 && defined(__CUDACC__)
#define SCALE 2.0f
#else
#define SCALE -1.0f
#endif
typedef unsigned int uint;
namespace kernels {
const int NUM_THREADS = 128;
const int NUM_WARPS = (NUM_THREADS + 32 - 1) / 32;

__device__ float scaled(float v, float by = SCALE) { return v * by; }

__device__ void block_sum(float* part, float v) {
    part[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < NUM_THREADS; w++) s += part[w];
        part[0] = s;
    }
    __syncthreads();
}
}  // namespace kernels

extern "C" {
__global__ void features(const float* x, float* out, float* partial, int n) {
    __shared__ float part[kernels::NUM_THREADS];
    __shared__ float spare[kernels::NUM_WARPS * TILE / 16];
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v;
    if (i < n) {
        v.x = kernels::scaled(x[i]);
        v.y = 1.0f; v.z = 2.0f; v.w = 3.0f;
    } else {
        v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float* nothing = NULL;
    if (nothing == NULL && i < n) out[i] = v.x + v.y + v.z + v.w + sizeof(spare) / sizeof(float);
    kernels::block_sum(part, i < n ? x[i] : 0.0f);
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}
}
"""


@pytest.mark.parametrize("n", [200, 256])
def test_a_cooperative_groups_row_sum_runs_right(n):
    reference_compiles(COOPERATIVE_SUM)
    x = RNG.standard_normal((7, n)).astype(np.float32)
    out = np.zeros(7, np.float32)
    Program(COOPERATIVE_SUM).launch("row_sums", (2,), (128,), (x, out, 7, n))
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_a_sample_style_reduction_with_a_template_default_and_tile_shuffles_runs_right():
    reference_compiles(SAMPLE_REDUCTION, ("reduce<>", "reduce<128>"))
    program = Program(SAMPLE_REDUCTION, ["reduce<>", "reduce<128>"])
    x = RNG.standard_normal(1000).astype(np.float32)
    for name, block in (("reduce<>", 256), ("reduce<128>", 128)):
        blocks = -(-x.size // block)
        out = np.zeros(blocks, np.float32)
        program.launch(name, (blocks,), (block,), (x, out, np.uint32(x.size)))
        np.testing.assert_allclose(out.sum(), x.sum(), rtol=1e-4, atol=1e-3)


def test_the_cpp_that_published_kernels_write_runs_right():
    reference_compiles(CPP_FEATURES)
    x = RNG.standard_normal(300).astype(np.float32)
    out, partial = np.zeros(300, np.float32), np.zeros(3, np.float32)
    Program(CPP_FEATURES).launch("features", (3,), (128,), (x, out, partial, 300))
    np.testing.assert_allclose(out, 2.0 * x + 6 + 4, rtol=1e-6)  # __CUDA_ARCH__ is 750: SCALE is 2
    np.testing.assert_allclose(partial, [x[k * 128:(k + 1) * 128].sum() for k in range(3)], rtol=1e-4, atol=1e-4)


def test_a_tile_collective_some_lanes_skip_is_a_fault_naming_the_lane():
    source = COOPERATIVE_SUM.replace("sum = cg::reduce", "if (warp.thread_rank() < 16) sum = cg::reduce")
    reference_compiles(source)  # it compiles: the fault is at run time
    with pytest.raises(KernelFault, match=r"warp divergence.*calls cg::reduce.*lane 16") as caught:
        Program(source).launch("row_sums", (2,), (128,), (np.zeros((7, 64), np.float32), np.zeros(7, np.float32),
                                                            7, 64))
    assert caught.value.line == 14


@pytest.mark.parametrize(("source", "words"), [
    ("namespace cg = cooperative_groups;\nextern \"C\" __global__ void k(float* x) { cg::this_thread_block().sync(); }",
     "comes from <cooperative_groups.h>: #include it"),
    ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
     "extern \"C\" __global__ void k(float* x) { auto w = cg::tiled_partition<32>(cg::this_thread_block());\n"
     "x[0] = cg::reduce(w, x[0], cg::plus<float>()); }", "comes from <cooperative_groups/reduce.h>"),
    ("extern \"C\" __global__ void k(float* x) { x[0] = M_PI; }", "<math.h>.*3.14159265f"),
    ("#define TWO_PI (2.0f * M_PI)\nextern \"C\" __global__ void k(float* x) { x[0] = TWO_PI; }",
     "line 2: M_PI is not defined.*<math.h>"),
    ("extern \"C\" __global__ void k(float* x) { x[0] = FLT_MAX; }", "<float.h>.*3.402823466e\\+38f"),
    ("#if 1\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }\n", "never closed with #endif"),
    ("#error not for this GPU\nextern \"C\" __global__ void k(float* x) { }", "#error not for this GPU"),
])
def test_what_the_reference_compile_refuses_is_refused_naming_why(source, words):
    with pytest.raises(CudaCError, match=words):
        Program(source)
    if nvrtc.available() and not nvrtc.missing_headers():
        with pytest.raises(nvrtc.CompileError):
            nvrtc.compile_source(source)


def test_a_kernels_own_definitions_of_what_nvrtc_lacks_are_accepted():
    source = ("#define M_PI 3.14159265f\ntypedef unsigned char uchar;\n"
              "extern \"C\" __global__ void k(float* x, const uchar* c) { x[threadIdx.x] = M_PI * c[threadIdx.x]; }")
    reference_compiles(source)
    x = np.zeros(4, np.float32)
    Program(source).launch("k", (1,), (4,), (x, np.arange(4, dtype=np.uint8)))
    np.testing.assert_allclose(x, np.float32(3.14159265) * np.arange(4))


HISTOGRAM = r"""
#define NUM_BINS 16
extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NUM_BINS) bins[i] = 0;  // PLANT
    __syncthreads();
    if (i < n) atomicAdd(&bins[data[i] % NUM_BINS], 1u);
}
"""


def test_a_plain_store_racing_another_blocks_atomic_is_caught():
    reference_compiles(HISTOGRAM)
    data = RNG.integers(0, 256, 1000).astype(np.uint8)
    with pytest.raises(KernelFault, match=r"race at line 7: thread \(0,\) of block \(1,\) will atomically update "
                                          r"bins\[\d+\], which thread .* of block \(0,\) wrote at line 5") as caught:
        Program(HISTOGRAM).launch("histogram", (4,), (256,), (data, np.zeros(16, np.uint32), 1000))
    assert caught.value.kind == "race"
    bins = np.zeros(16, np.uint32)
    Program(HISTOGRAM.replace("if (i < NUM_BINS) bins[i] = 0;  // PLANT", "")).launch(
        "histogram", (4,), (256,), (data, bins, 1000))
    assert bins.tolist() == np.bincount(data % 16, minlength=16).tolist()


@pytest.mark.parametrize(("value", "words"), [(2.5, r"np.float32\(2.5\).*garbage"),
                                              (2**31, "does not fit a int")])
def test_launch_arguments_as_cupy_passes_them(value, words):
    source = 'extern "C" __global__ void k(float* x, float s, int n) { if (threadIdx.x < n) x[threadIdx.x] = s; }'
    x = np.zeros(4, np.float32)
    Program(source).launch("k", (1,), (4,), (x, np.float32(2.5), 3))  # a Python int into an int: its low bytes
    assert x.tolist() == [2.5, 2.5, 2.5, 0]
    with pytest.raises(TypeError, match=words):
        Program(source).launch("k", (1,), (4,), (x, value, 3) if isinstance(value, float) else
                               (x, np.float32(1), value))


# ------------------------------------------------------------------------------------------------ WMMA (issue 41)


GUIDE_WMMA = r"""
#include <mma.h>
using namespace nvcuda;

const int WMMA_M = 16, WMMA_N = 16, WMMA_K = 16;

// the programming guide's shape of a WMMA GEMM: a warp per 16 x 16 tile of C, a and b half, sums in float
extern "C" __global__ void wmma_gemm(const half* a, const half* b, float* c, int M, int N, int K, float alpha) {
    int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int warpN = blockIdx.y * blockDim.y + threadIdx.y;
    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc_frag;
    wmma::fill_fragment(acc_frag, 0.0f);
    for (int k = 0; k < K; k += WMMA_K) {
        int aRow = warpM * WMMA_M, bCol = warpN * WMMA_N;
        if (aRow < M && bCol < N) {
            wmma::load_matrix_sync(a_frag, a + aRow * K + k, K);
            wmma::load_matrix_sync(b_frag, b + bCol * K + k, K);
            wmma::mma_sync(acc_frag, a_frag, b_frag, acc_frag);
        }
    }
    for (int i = 0; i < acc_frag.num_elements; i++) acc_frag.x[i] = alpha * acc_frag.x[i];
    int cRow = warpM * WMMA_M, cCol = warpN * WMMA_N;
    if (cRow < M && cCol < N) wmma::store_matrix_sync(c + cRow * N + cCol, acc_frag, N, wmma::mem_row_major);
}
"""

SHARED_WMMA = r"""
#include <mma.h>
#include <cuda_fp16.h>

// a tutorial's shape: the block stages fp32 inputs as half in shared memory, one warp multiplies the tile
extern "C" __global__ void tile16(const float* a, const float* b, half* c) {
    __shared__ half as[16 * 16];
    __shared__ half bs[16 * 16];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        as[i] = __float2half(a[i]);
        bs[i] = __float2half(b[i]);
    }
    __syncthreads();
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, half, nvcuda::wmma::row_major> fb;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, half> fc;
    nvcuda::wmma::fill_fragment(fc, __float2half(0.0f));
    nvcuda::wmma::load_matrix_sync(fa, as, 16);
    nvcuda::wmma::load_matrix_sync(fb, bs, 16);
    nvcuda::wmma::mma_sync(fc, fa, fb, fc);
    nvcuda::wmma::store_matrix_sync(c, fc, 16, nvcuda::wmma::mem_col_major);
}
"""


def _gemm(source: str, m: int = 32, n: int = 48, k: int = 64) -> tuple[np.ndarray, np.ndarray]:
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b_t = RNG.standard_normal((n, k)).astype(np.float16)  # b column-major: its transpose row by row
    c = np.zeros((m, n), np.float32)
    run = Program(source).launch("wmma_gemm", (m // 16 * 32 // 64 + 1, n // 16), (64, 1), (a, b_t, c, m, n, k,
                                                                                          np.float32(0.5)))
    return c, 0.5 * (a.astype(np.float32) @ b_t.astype(np.float32).T), run


def test_the_programming_guides_wmma_gemm_runs_right_with_its_counters():
    reference_compiles(GUIDE_WMMA)
    c, want, run = _gemm(GUIDE_WMMA)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)  # fp16 products are exact in float32
    tiles = (32 // 16) * (48 // 16)
    assert run.counters.tensor_ops == tiles * 4 and run.counters.tensor_loads == tiles * 4 * 2
    assert run.counters.tensor_stores == tiles


def test_a_tutorials_shared_memory_wmma_tile_runs_right_in_half():
    reference_compiles(SHARED_WMMA)
    a, b = RNG.standard_normal((16, 16)).astype(np.float32), RNG.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros(256, np.float16)
    Program(SHARED_WMMA).launch("tile16", (1,), (32,), (a, b, c))  # one warp: two would race on c
    want = (a.astype(np.float16).astype(np.float32) @ b.astype(np.float16).astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(c.reshape(16, 16).T, want)  # stored column-major, rounded once to fp16


@pytest.mark.parametrize(("old", "new", "kind", "words"), [
    ("if (aRow < M && bCol < N) {", "if (aRow < M && bCol < N && threadIdx.x % 32 < 8) {", "warp divergence",
     "calls wmma::load_matrix_sync.*lane 8"),
    ("load_matrix_sync(a_frag, a + aRow * K + k, K)", "load_matrix_sync(a_frag, a + aRow * K + k, K - 1)",
     "bad leading dimension", "ldm = 63: the leading dimension must be a multiple of 16 bytes"),
    ("wmma::fill_fragment(acc_frag, 0.0f);", "", "unfilled fragment", "an accumulator fragment .* that nothing has"),
    ("acc_frag.x[i] = alpha * acc_frag.x[i]", "acc_frag.x[i] = alpha * i", "fragment mapping",
     "CUDA leaves which matrix element x\\[i\\] is unspecified"),
])
def test_planted_wmma_faults_are_caught(old, new, kind, words):
    source = GUIDE_WMMA.replace(old, new)
    assert source != GUIDE_WMMA
    reference_compiles(source)  # each compiles: the fault is at run time
    with pytest.raises(KernelFault, match=words) as caught:
        _gemm(source)
    assert caught.value.kind == kind


def test_a_wrong_leading_dimension_that_is_aligned_gives_a_wrong_product():
    c, want, _ = _gemm(GUIDE_WMMA.replace("load_matrix_sync(b_frag, b + bCol * K + k, K)",
                                          "load_matrix_sync(b_frag, b + bCol * K + k, 16)"))
    assert not np.allclose(c, want, rtol=1e-3, atol=1e-2)


def test_half_without_its_header_is_refused_as_nvrtc_refuses_it():
    source = 'extern "C" __global__ void k(half* x) { x[0] = __float2half(1.0f); }'
    with pytest.raises(CudaCError, match="half comes from <cuda_fp16.h>"):
        Program(source)
    if nvrtc.available():
        with pytest.raises(nvrtc.CompileError, match="undefined"):
            nvrtc.compile_source(source)


@needs_reference
def test_the_reference_compile_is_what_these_tests_compare_with():
    assert any("cuda_runtime" in str(f) or "cu13" in str(f) for f in nvrtc.header_folders())
    nvrtc.compile_source(GUIDE_WMMA, "sm_75")
