"""Issue 40, item 5: a kernel's own structs, & of a local variable, and byte buffers carved into typed arrays
(reinterpret_cast<float*>(smem)), on the CPU executor against NumPy, each compared with the reference compile
(helpers.gpu.nvrtc, CUDA's headers, sm_75 and sm_90); planted faults in each are caught, and what the executor cannot
run is refused naming the construct and what to write instead."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.executor import CudaCError, KernelFault, Program, UnsupportedSyntax
from helpers.gpu import nvrtc

RNG = np.random.default_rng(405)


def reference_compiles(source: str) -> None:
    """The reference compile accepts `source` for the T4 and Hopper (nothing to compare where it is absent)."""
    if not nvrtc.available() or nvrtc.missing_headers():
        pytest.skip("NVRTC or CUDA's headers are absent (the nvrtc extra installs both)")
    for arch in nvrtc.TARGET_ARCHS:
        nvrtc.compile_source(source, arch)


# ------------------------------------------------------------------------------------------------ structs

ONLINE_SOFTMAX = r"""
struct __align__(8) MaxSum { float m; float s; };

// one running (max, sum of exp) pair per thread, merged as online softmax merges two
__device__ MaxSum merge(MaxSum a, MaxSum b) {
    MaxSum out;
    out.m = fmaxf(a.m, b.m);
    out.s = a.s * expf(a.m - out.m) + b.s * expf(b.m - out.m);
    return out;
}

extern "C" __global__ void row_norm(const float* x, float* out, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    MaxSum acc = {-3.0e38f, 0.0f};
    for (int j = 0; j < cols; j++) {
        MaxSum one;
        one.m = x[row * cols + j];
        one.s = 1.0f;
        acc = merge(acc, one);
    }
    struct MaxSum copy = acc;
    out[row] = copy.m + logf(copy.s);
}
"""


def test_a_struct_of_the_kernel_s_own_runs_as_locals_parameters_and_return_values():
    reference_compiles(ONLINE_SOFTMAX)
    x = RNG.standard_normal((37, 19)).astype(np.float32)
    out = np.zeros(37, np.float32)
    Program(ONLINE_SOFTMAX).launch("row_norm", 2, 32, (x, out, np.int32(37), np.int32(19)))
    expected = np.log(np.exp(x.astype(np.float64)).sum(axis=1))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


NESTED = r"""
struct Range { int lo; int hi; };
struct Job { Range r; float scale; float2 shift; };

extern "C" __global__ void apply(Job job, const float* x, float* y) {
    int i = job.r.lo + blockIdx.x * blockDim.x + threadIdx.x;
    Job mine = job;
    mine.r.hi -= 1;
    if (i <= mine.r.hi) y[i] = x[i] * mine.scale + mine.shift.x - mine.shift.y + (float)sizeof(Job);
}
"""

#: struct Job as C lays it out: the float2 at a multiple of 8 bytes, 16, and 24 bytes in all
JOB = np.dtype({"names": ["lo", "hi", "scale", "sx", "sy"], "formats": ["i4", "i4", "f4", "f4", "f4"],
                "offsets": [0, 4, 8, 16, 20], "itemsize": 24})


def test_a_struct_passed_by_value_to_a_kernel_is_read_with_c_s_layout():
    reference_compiles(NESTED)
    x, y = RNG.random(100).astype(np.float32), np.zeros(100, np.float32)
    job = np.array((10, 90, 2.0, 1.5, 0.5), dtype=JOB)[()]  # as CuPy passes a struct: a structured scalar
    Program(NESTED).launch("apply", 3, 32, (job, x, y))
    expected = np.zeros(100, np.float32)
    expected[10:90] = x[10:90] * 2 + 1.0 + 24  # sizeof(Job): 2 ints, a float, a float2 at offset 16: 24 bytes
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_a_struct_argument_of_the_wrong_size_or_kind_is_refused_before_the_launch():
    program = Program(NESTED)
    naive = np.dtype([(n, JOB.fields[n][0]) for n in JOB.names], align=True)  # NumPy aligns a float2's floats to 4
    packed = np.array((10, 90, 2.0, 1.5, 0.5), dtype=naive)[()]
    with pytest.raises(TypeError, match="20 bytes, but struct Job has 24"):
        program.launch("apply", 1, 32, (packed, np.zeros(4, np.float32), np.zeros(4, np.float32)))
    with pytest.raises(TypeError, match="structured scalar"):
        program.launch("apply", 1, 32, (np.int32(3), np.zeros(4, np.float32), np.zeros(4, np.float32)))


@pytest.mark.parametrize(("body", "fault", "words"), [
    ("Pair p; p.a = 1.0f; y[0] = p.a + p.b;", KernelFault, "uses the variable p.b"),
    ("Pair p = {1.0f, 2}; y[0] = p.c;", CudaCError, r"struct Pair has members \.a, \.b"),
    ("Pair p = {1.0f, 2}; Pair q = p + p;", CudaCError, "no operators"),
    ("Pair p = {1.0f, 2}; float f = p;", CudaCError, "converting struct Pair to float"),
])
def test_struct_mistakes_are_named(body, fault, words):
    source = f'struct Pair {{ float a; int b; }};\nextern "C" __global__ void k(float* y) {{\n {body}\n}}'
    with pytest.raises(fault, match=words):
        Program(source).launch("k", 1, 1, (np.zeros(4, np.float32),))


def test_structs_in_memory_are_refused_naming_what_to_write_instead():
    source = ('struct Pair { float a; int b; };\n'
              'extern "C" __global__ void k(Pair* p, float* y) {\n  y[threadIdx.x] = p[threadIdx.x].a;\n}')
    reference_compiles(source)  # CUDA runs it: the executor cannot, and says so
    with pytest.raises(UnsupportedSyntax, match="a pointer to a struct.*struct of arrays"):
        Program(source)
    shared = ('struct Pair { float a; int b; };\n'
              'extern "C" __global__ void k(float* y) {\n  __shared__ Pair s[32];\n  y[0] = 0.0f;\n}')
    reference_compiles(shared)
    with pytest.raises(UnsupportedSyntax, match="an array of structs"):
        Program(shared)


# ------------------------------------------------------------------------------------------------ & of a local

ADDRESS_OF_LOCAL = r"""
__device__ void bump(float* v) { *v += 1.0f; }

extern "C" __global__ void reverse4(const float* x, float* y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float v[4];
    reinterpret_cast<float4*>(&v)[0] = reinterpret_cast<const float4*>(x)[i];   // a local array, as a float4
    float4 w;
    float* lanes = reinterpret_cast<float*>(&w);                                // a float4, as floats
    for (int k = 0; k < 4; k++) lanes[k] = v[3 - k];
    float t = w.x;
    bump(&t);
    w.x = t;
    reinterpret_cast<float4*>(y)[i] = w;
}
"""


def test_the_address_of_a_local_variable_or_array_can_be_reinterpreted():
    reference_compiles(ADDRESS_OF_LOCAL)
    x, y = RNG.random(96).astype(np.float32), np.zeros(96, np.float32)
    Program(ADDRESS_OF_LOCAL).launch("reverse4", 1, 32, (x, y, np.int32(24)))
    expected = x.reshape(-1, 4)[:, ::-1].copy()
    expected[:, 0] += 1
    np.testing.assert_array_equal(y, expected.reshape(-1))


def test_a_local_whose_address_is_taken_is_still_checked_for_a_value():
    source = ('extern "C" __global__ void k(float* y) {\n  float4 w;\n  float* p = reinterpret_cast<float*>(&w);\n'
              '  p[0] = 1.0f; p[1] = 2.0f; p[2] = 3.0f;\n  y[threadIdx.x] = w.w;\n}')
    reference_compiles(source)
    with pytest.raises(KernelFault, match="uninitialised read at line 5.*w\\[3\\]"):
        Program(source).launch("k", 1, 32, (np.zeros(32, np.float32),))


def test_the_address_of_a_pointer_is_refused():
    source = 'extern "C" __global__ void k(float* y) {\n  float* p = y;\n  float** q = &p;\n}'
    with pytest.raises(UnsupportedSyntax, match="pointer to a pointer"):
        Program(source)


# ------------------------------------------------------------------------------------------------ byte buffers

CARVED = r"""
extern "C" __global__ void carve(const float* x, const int* keys, float* out, int n) {
    extern __shared__ unsigned char smem[];
    float* vals = reinterpret_cast<float*>(smem);
    int* ids = reinterpret_cast<int*>(smem + blockDim.x * sizeof(float));
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    vals[t] = i < n ? x[i] : 0.0f;
    ids[t] = i < n ? keys[i] : -1;
    __syncthreads();
    int j = blockDim.x - 1 - t;
    if (i < n) out[i] = vals[j] * (float)ids[t];
}
"""


def test_a_byte_buffer_in_dynamic_shared_memory_is_carved_into_typed_arrays():
    reference_compiles(CARVED)
    n, block = 100, 32
    x, keys = RNG.random(128).astype(np.float32), RNG.integers(0, 9, 128).astype(np.int32)
    out = np.zeros(n, np.float32)
    Program(CARVED).launch("carve", 4, block, (x[:n], keys[:n], out, np.int32(n)), shared_mem=block * 8)
    padded = np.where(np.arange(128) < n, x, 0).reshape(4, block)[:, ::-1].reshape(-1)
    np.testing.assert_allclose(out, (padded * keys)[:n], rtol=1e-6)


def test_faults_through_a_carved_buffer_are_caught():
    program = Program(CARVED)
    args = (RNG.random(64).astype(np.float32), np.zeros(64, np.int32), np.zeros(64, np.float32), np.int32(64))
    with pytest.raises(KernelFault, match="out-of-bounds write"):  # room for the floats only
        program.launch("carve", 2, 32, args, shared_mem=32 * 4)
    racy = CARVED.replace("__syncthreads();", "")
    with pytest.raises(KernelFault, match="race"):
        Program(racy).launch("carve", 2, 32, args, shared_mem=32 * 8)


def test_a_misaligned_cast_of_a_byte_buffer_is_the_gpu_s_misaligned_address():
    source = ('extern "C" __global__ void k(float* y) {\n  extern __shared__ unsigned char smem[];\n'
              '  float* f = reinterpret_cast<float*>(smem + 2);\n  f[threadIdx.x] = 1.0f;\n'
              '  y[threadIdx.x] = f[threadIdx.x];\n}')
    reference_compiles(source)
    with pytest.raises(KernelFault, match="misaligned address at line 3.*byte 2 of smem.*multiple of 4 bytes"):
        Program(source).launch("k", 1, 32, (np.zeros(32, np.float32),), shared_mem=256)


def test_bytes_written_as_one_type_read_as_another_are_not_garbage():
    source = ('extern "C" __global__ void k(const float* x, unsigned int* y) {\n'
              '  extern __shared__ float s[];\n  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n'
              '  const unsigned char* b = reinterpret_cast<const unsigned char*>(s);\n'
              '  y[threadIdx.x] = b[4 * threadIdx.x + 3];\n}')
    reference_compiles(source)
    x, y = RNG.random(32).astype(np.float32), np.zeros(32, np.uint32)
    Program(source).launch("k", 1, 32, (x, y), shared_mem=128)
    np.testing.assert_array_equal(y, x.view(np.uint8).reshape(-1, 4)[:, 3])


# ------------------------------------------------------------------------------------------------ what published
# kernels around these use: a struct merged by cg::reduce, braced arguments, reference parameters, NVIDIA's
# SharedMemory<T> idiom, __mul24, a typedef as a template parameter's type, a type's name used as a variable's

WARP_MERGE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
struct MaxSum { float m; float s; };

__device__ MaxSum merge(MaxSum a, MaxSum b) {
    bool a_bigger = a.m > b.m;
    MaxSum big = a_bigger ? a : b;
    MaxSum small = a_bigger ? b : a;
    MaxSum out;
    out.m = big.m;
    out.s = big.s + small.s * expf(small.m - big.m);
    return out;
}

// one warp per row: log-sum-exp of the row, each lane's partial pairs merged across the warp by cg::reduce
extern "C" __global__ void row_lse(const float* x, float* out, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) return;
    MaxSum acc = {-3.0e38f, 0.0f};
    for (int j = warp.thread_rank(); j < cols; j += warp.size()) acc = merge(acc, {x[row * cols + j], 1.0f});
    MaxSum all = cg::reduce(warp, acc, merge);
    if (warp.thread_rank() == 0) out[row] = all.m + logf(all.s);
}
"""


def test_cg_reduce_merges_structs_with_the_kernel_s_own_function():
    reference_compiles(WARP_MERGE)
    x, out = RNG.standard_normal((11, 45)).astype(np.float32), np.zeros(11, np.float32)
    Program(WARP_MERGE).launch("row_lse", 3, 128, (x, out, np.int32(11), np.int32(45)))
    np.testing.assert_allclose(out, np.log(np.exp(x.astype(np.float64)).sum(axis=1)), rtol=1e-5)


REFERENCES = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <class T> struct SharedMemory {
    __device__ inline operator T*() { extern __shared__ int __smem[]; return (T*)__smem; }
    __device__ inline operator const T*() const { extern __shared__ int __smem[]; return (T*)__smem; }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double*() { extern __shared__ double __smem_d[]; return (double*)__smem_d; }
};
typedef unsigned int uint;

__device__ float scaled(const float& v, cg::thread_block& block, float s) { return v * s + block.size() * 0.0f; }

template <class T, const uint BLOCK>
__global__ void block_sums(const T* x, T* out, int n, int dim3) {
    cg::thread_block cta = cg::this_thread_block();
    T* s = SharedMemory<T>();
    unsigned int i = __umul24(blockIdx.x, BLOCK) + threadIdx.x;
    s[threadIdx.x] = i < n ? scaled(x[i], cta, (float)dim3) : 0;
    cg::sync(cta);
    for (unsigned int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        cg::sync(cta);
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] + __mul24(-3, dim3 * 0);
}
"""


def test_references_nvidia_s_shared_memory_idiom_mul24_and_typedef_template_parameters():
    reference_compiles(REFERENCES)
    program = Program(REFERENCES, ("block_sums<float, 64>",))
    x, out = RNG.random(300).astype(np.float32), np.zeros(5, np.float32)
    program.launch("block_sums<float, 64>", 5, 64, (x, out, np.int32(300), np.int32(2)), shared_mem=64 * 4)
    np.testing.assert_allclose(out, 2 * np.pad(x, (0, 20)).reshape(5, 64).sum(axis=1), rtol=1e-5)
    racy = REFERENCES.replace("        cg::sync(cta);\n    }", "    }")
    with pytest.raises(KernelFault, match="race"):
        Program(racy, ("block_sums<float, 64>",)).launch("block_sums<float, 64>", 5, 64,
                                                           (x, out, np.int32(300), np.int32(2)), shared_mem=64 * 4)


def test_a_reference_parameter_the_function_writes_is_refused():
    source = ('__device__ void bump(float& v) { v += 1.0f; }\n'
              'extern "C" __global__ void k(float* y) {\n  float t = y[0];\n  bump(t);\n  y[0] = t;\n}')
    reference_compiles(source)  # CUDA runs it: the executor, which passes values, cannot
    with pytest.raises(UnsupportedSyntax, match="reference parameter v .*return the new value, or pass a pointer"):
        Program(source)


@pytest.mark.parametrize("space", ["shared", "global"])
def test_lanes_of_one_store_writing_the_same_value_do_not_race_and_different_values_do(space):
    store = "s[threadIdx.x / 32] = VALUE;\n  __syncthreads();\n  y[threadIdx.x] = s[threadIdx.x / 32];" \
        if space == "shared" else "y[blockIdx.x] = VALUE;"
    source = ('extern "C" __global__ void k(const float* x, float* y) {\n  __shared__ float s[4];\n  '
              + store + "\n}")
    same = source.replace("VALUE", "x[threadIdx.x / 32]" if space == "shared" else "x[blockIdx.x]")
    reference_compiles(same)
    x, y = RNG.random(128).astype(np.float32), np.zeros(128, np.float32)
    Program(same).launch("k", 1, 128, (x, y))
    assert y[0] == x[0]
    with pytest.raises(KernelFault, match="race at line 3"):
        Program(source.replace("VALUE", "x[threadIdx.x]")).launch("k", 1, 128, (x, y))
