"""The CUDA C++ that tutorials write, on the CPU executor (issue 26): templates launched by name expression, C++
casts, auto, nullptr, __restrict__, __launch_bounds__, file-scope constants, #pragma unroll, assert, array
initialisers, small integer types, float4 loads, __constant__ memory, extern __shared__, shared arrays passed to
__device__ functions. Each kernel runs against NumPy; each is also compiled by NVRTC where it is installed, so the
executor accepts what CuPy's compiler accepts, and refuses, with NVRTC's reason, what it rejects."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.executor import CudaCError, KernelFault, Program, UnsupportedSyntax
from helpers.executor import cupy_cpu as cp
from helpers.gpu import nvrtc


def nvrtc_accepts(source: str, name_expressions: tuple[str, ...] = ()) -> None:
    """NVRTC compiles `source` (skipped, saying so, where NVRTC is not installed)."""
    if not nvrtc.available():
        pytest.skip(f"NVRTC is not installed here: {nvrtc.why()}")
    nvrtc.compile_source(source, options=("--std=c++17",), name_expressions=name_expressions)


def nvrtc_rejects(source: str, words: str, name_expressions: tuple[str, ...] = ()) -> None:
    """NVRTC refuses `source` saying `words` (skipped where NVRTC is not installed)."""
    if not nvrtc.available():
        pytest.skip(f"NVRTC is not installed here: {nvrtc.why()}")
    with pytest.raises((nvrtc.CompileError, RuntimeError), match=words):
        nvrtc.compile_source(source, options=("--std=c++17",), name_expressions=name_expressions)


TEMPLATE = r"""
constexpr int K = 3;
const float HALF = 0.5f;

template <typename T>
__device__ T square(T v) { return v * v; }

template <typename T, int N>
__global__ void __launch_bounds__(256) scale(const T* __restrict__ x, T* __restrict y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        auto v = x[i];
        T acc[4] = {0};
        #pragma unroll
        for (int k = 0; k < 4; k++) acc[k] = static_cast<T>(k);
        y[i] = static_cast<T>(N) * v + acc[3] + square(v) + square<T>(HALF) + K;
    }
}
"""


def test_template_kernels_run_by_name_expression_as_cupy_rawmodule_names_them():
    nvrtc_accepts(TEMPLATE, ("scale<float, 3>", "scale<double, 2>"))
    module = cp.RawModule(code=TEMPLATE, options=("-std=c++17",), name_expressions=["scale<float, 3>",
                                                                                    "scale<double, 2>"])
    x = np.arange(40, dtype=np.float32)
    y = np.zeros_like(x)
    module.get_function("scale<float, 3>")((2,), (32,), (x, y, np.int32(40)))
    np.testing.assert_allclose(y, 3 * x + 3 + x * x + 0.25 + 3)
    xd, yd = x.astype(np.float64), np.zeros(40)
    module.get_function("scale<double, 2>")((2,), (32,), (xd, yd, np.int32(40)))
    np.testing.assert_allclose(yd, 2 * xd + 3 + xd * xd + 0.25 + 3)


def test_a_template_instance_checks_its_arguments_types():
    program = Program(TEMPLATE, ["scale<double, 2>"])
    with pytest.raises(TypeError, match="an array of float32, but the kernel reads float64"):
        program.launch("scale<double, 2>", 1, 32, (np.zeros(4, np.float32), np.zeros(4), np.int32(4)))


def test_nvrtc_refuses_a_name_expression_of_no_template():
    nvrtc_rejects(TEMPLATE, "errors detected", ("scale<no_such_type, 1>",))


@pytest.mark.parametrize(("expressions", "words"), [
    (["scale"], "names no kernel"),
    (["scale<float>"], "scale takes 2 template argument"),
    (["scale<3, float>"], "template parameter T is a type"),
    (["square<float>"], "__device__ function, not a kernel"),
    (["nothing<float>"], "names no template kernel"),
])
def test_a_wrong_name_expression_says_what_is_wrong(expressions, words):
    with pytest.raises(CudaCError, match=words):
        Program(TEMPLATE, expressions)


def test_a_template_kernel_without_a_name_expression_cannot_be_found():
    with pytest.raises(CudaCError, match="no kernel called 'scale'"):
        cp.RawModule(code=TEMPLATE).get_function("scale")


def test_a_template_declared_extern_c_is_refused_with_nvrtc_s_reason():
    source = 'template <typename T> extern "C" __global__ void k(T* x) { x[0] = 1; }'
    with pytest.raises(CudaCError, match="cannot have C linkage"):
        Program(source)


TYPES = r"""
extern "C" __global__ void types(const signed char* a, const unsigned char* b, short* c, long long* d, bool* e,
                                 unsigned short* f, size_t n) {
    size_t i = threadIdx.x;
    char letter = 'A';
    if (i < n) {
        c[i] = a[i] * b[i] + letter;
        d[i] = (long long)a[i] << 40;
        e[i] = a[i] > 0;
        f[i] = (unsigned short)(b[i] * 300);
        assert(i < n);
    }
}
"""


def test_small_integer_types_promote_and_wrap_as_in_c():
    nvrtc_accepts(TYPES)
    a, b = np.array([-3, 1, 127], np.int8), np.array([200, 2, 255], np.uint8)
    c, d, e, f = np.zeros(3, np.int16), np.zeros(3, np.int64), np.zeros(3, bool), np.zeros(3, np.uint16)
    Program(TYPES).launch("types", 1, 32, (a, b, c, d, e, f, np.uint64(3)))
    assert c.tolist() == [-535, 67, 127 * 255 + 65]  # in int, then stored as a 16-bit short
    assert d.tolist() == [-3 << 40, 1 << 40, 127 << 40]
    assert e.tolist() == [False, True, True]
    assert f.tolist() == [(200 * 300) % 65536, 600, (255 * 300) % 65536]


def test_a_failing_assert_names_the_thread_and_line():
    source = 'extern "C" __global__ void k(const float* x) {\n  assert(x[threadIdx.x] >= 0.0f);\n}'
    nvrtc_accepts(source)
    x = np.ones(64, np.float32)
    Program(source).launch("k", 1, 64, (x,))
    x[37] = -1
    with pytest.raises(KernelFault, match=r"assertion failed at line 2: thread \(37,\)"):
        Program(source).launch("k", 1, 64, (x,))


VECTORS = r"""
extern "C" __global__ void double_x(const float* __restrict__ x, float* __restrict__ y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x *= 2.0f;
        reinterpret_cast<float4*>(y)[i] = make_float4(v.x, v.y, v.z, v.w);
    }
}
extern "C" __global__ void scalar_copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""


def test_float4_loads_are_one_16_byte_request_per_lane():
    nvrtc_accepts(VECTORS)
    program = Program(VECTORS)
    x, y = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    run = program.launch("double_x", 2, 32, (x, y, np.int32(64)))
    expected = x.copy()
    expected[::4] *= 2
    np.testing.assert_array_equal(y, expected)
    scalar = program.launch("scalar_copy", 8, 32, (x, np.zeros(256, np.float32), np.int32(256))).counters
    vector = run.counters
    assert vector.global_load_requests == 2 and scalar.global_load_requests == 8  # a quarter of the instructions
    assert vector.global_load_sectors == scalar.global_load_sectors == 32  # the same 1 KiB
    assert vector.global_load_bytes == scalar.global_load_bytes == 1024


def test_a_misaligned_float4_load_is_the_gpu_s_misaligned_address():
    x = np.arange(260, dtype=np.float32)
    with pytest.raises(KernelFault, match="misaligned address"):
        Program(VECTORS).launch("double_x", 2, 32, (x[1:257], np.zeros(256, np.float32), np.int32(64)))


def test_a_float4_past_the_end_is_out_of_bounds():
    with pytest.raises(KernelFault, match="out-of-bounds read"):
        Program(VECTORS).launch("double_x", 2, 32, (np.zeros(252, np.float32), np.zeros(256, np.float32),
                                                    np.int32(64)))


@pytest.mark.parametrize(("body", "words"), [
    ("float4 v = make_float4(1, 2, 3, 4); float4 w = v + v;", "CUDA defines no operators on vector types"),
    ("float4 v = make_float4(1, 2, 3, 4); y[0] = v.q;", "a float4 has members .x, .y, .z, .w"),
    ("float2 v = make_float2(1, 2); y[0] = v.z;", "a float2 has members .x, .y"),
    ("float4 v = make_float4(1, 2, 3);", r"make_float4\(\) takes 4 arguments"),
    ("float4 v; y[0] = v.x;", "uses the variable v.x"),
])
def test_vector_mistakes_are_named(body, words):
    source = f'extern "C" __global__ void k(float* y) {{\n {body}\n}}'
    with pytest.raises((CudaCError, KernelFault), match=words):
        Program(source).launch("k", 1, 1, (np.zeros(4, np.float32),))


REDUCE_DYNAMIC = r"""
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    extern __shared__ float partial[];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partial[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
"""


def test_dynamic_shared_memory_takes_its_size_from_shared_mem():
    nvrtc_accepts(REDUCE_DYNAMIC)
    kernel = cp.RawKernel(REDUCE_DYNAMIC, "block_sum")
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(4, np.float32)
    kernel((4,), (256,), (x, out, np.int32(1000)), shared_mem=256 * 4)
    np.testing.assert_allclose(out, x.reshape(4, 250).sum(axis=1) if False else
                               [x[k * 256:(k + 1) * 256].sum() for k in range(4)])


@pytest.mark.parametrize(("shared_mem", "words"), [
    (0, "partial is extern __shared__: its size is the launch's shared_mem= \\(0 bytes here\\)"),
    (128 * 4, r"partial\[128\], but dimension 1 of partial has 128 elements"),
])
def test_too_little_dynamic_shared_memory_is_an_out_of_bounds_write(shared_mem, words):
    kernel = cp.RawKernel(REDUCE_DYNAMIC, "block_sum")
    with pytest.raises(KernelFault, match=words):
        kernel((4,), (256,), (np.zeros(1000, np.float32), np.zeros(4, np.float32), np.int32(1000)),
               shared_mem=shared_mem)


@pytest.mark.parametrize(("shared_mem", "words"), [(-1, "a number of bytes"), (64 * 1024, "at most 49,152 bytes"),
                                                   (1.5, "a number of bytes")])
def test_a_bad_shared_mem_is_refused(shared_mem, words):
    with pytest.raises(CudaCError, match=words):
        Program(REDUCE_DYNAMIC).launch("block_sum", 1, 32, (np.zeros(4, np.float32), np.zeros(1, np.float32),
                                                             np.int32(4)), shared_mem=shared_mem)


def test_dynamic_shared_memory_without_its_barrier_is_a_race():
    racy = REDUCE_DYNAMIC.replace("        __syncthreads();\n    }", "    }")
    with pytest.raises(KernelFault, match="race"):
        cp.RawKernel(racy, "block_sum")((1,), (64,), (np.ones(64, np.float32), np.zeros(1, np.float32),
                                                     np.int32(64)), shared_mem=64 * 4)


SHARED_POINTERS = r"""
__constant__ float weights[4] = {1.0f, 2.0f};

__device__ float total(const float* s, int n) {
    float t = 0.0f;
    for (int k = 0; k < n; k++) t += s[k];
    return t;
}

__device__ void put(float* s, int i, float v) { s[i] = v; }

extern "C" __global__ void weighted(const float* x, float* out) {
    __shared__ float tile[2][32];
    put(&tile[1][0], threadIdx.x, x[threadIdx.x] * weights[threadIdx.x % 4]);
    __syncthreads();
    volatile float* row = tile[1];
    if (threadIdx.x == 0) out[0] = total(tile[1], 32) + row[1];
}
"""


def test_shared_arrays_pass_to_device_functions_and_constant_memory_is_filled_as_cupy_fills_it():
    nvrtc_accepts(SHARED_POINTERS)
    module = cp.RawModule(code=SHARED_POINTERS)
    weights = cp.ndarray((4,), np.float32, module.get_global("weights"))  # CuPy's own idiom
    assert weights.tolist() == [1, 2, 0, 0]  # the initialiser, the rest zero
    weights[2:] = [3, 4]
    out = np.zeros(1, np.float32)
    module.get_function("weighted")((1,), (32,), (np.ones(32, np.float32), out))
    assert out[0] == 8 * (1 + 2 + 3 + 4) + 2


def test_a_shared_pointer_past_its_array_is_out_of_bounds():
    source = SHARED_POINTERS.replace("total(tile[1], 32)", "total(tile[1], 33)")
    with pytest.raises(KernelFault, match=r"read tile\[2\]\[0\], but dimension 1 of tile has 2 elements"):
        cp.RawModule(code=source).get_function("weighted")((1,), (32,), (np.ones(32, np.float32),
                                                                          np.zeros(1, np.float32)))


@pytest.mark.parametrize(("source", "words"), [
    ('__constant__ float w[4];\nextern "C" __global__ void k(float* x) {\n w[0] = x[0];\n}',
     "line 3: w is __constant__ memory: kernels only read it"),
    ('constexpr int N = 4;\nextern "C" __global__ void k(float* x) {\n N = 5;\n}', "N is const"),
    ('float g = 1.0f;\nextern "C" __global__ void k(float* x) {\n x[0] = g;\n}', "the file-scope variable g"),
    ('extern "C" __global__ void k(float* x) {\n __shared__ float s[2] = {1, 2};\n}',
     "initializer not allowed for __shared__ variable"),
])
def test_constants_stay_constant(source, words):
    with pytest.raises(CudaCError, match=words):
        Program(source)


def test_get_global_of_an_unknown_name_lists_the_module_s():
    with pytest.raises(CudaCError, match="no __constant__ array called 'w' in this module; it has: weights"):
        cp.RawModule(code=SHARED_POINTERS).get_global("w")


NULL = r"""
extern "C" __global__ void k(float* x, int use) {
    float* p = nullptr;
    if (use) p = x;
    if (p != nullptr) p[threadIdx.x] = 1.0f;
}
"""


def test_nullptr_is_a_pointer_to_nothing():
    nvrtc_accepts(NULL)
    x = np.zeros(32, np.float32)
    Program(NULL).launch("k", 1, 32, (x, np.int32(0)))
    assert x.sum() == 0
    Program(NULL).launch("k", 1, 32, (x, np.int32(1)))
    assert x.sum() == 32
    with pytest.raises(KernelFault, match="points nowhere"):
        Program(NULL.replace("if (p != nullptr) ", "")).launch("k", 1, 32, (x, np.int32(0)))


def test_bit_casts_and_fast_math_intrinsics():
    source = r"""
extern "C" __global__ void k(float* y, int* bits) {
    y[0] = __int_as_float(0x7f800000);
    bits[0] = __float_as_int(1.0f);
    y[1] = __expf(1.0f) + __fdividef(1.0f, 4.0f) + rsqrtf(4.0f) + __saturatef(3.0f) + fmaf(2.0f, 3.0f, 1.0f);
    y[2] = __sinf(0.0f) + __logf(1.0f) + __powf(2.0f, 3.0f) + copysignf(1.0f, -2.0f) + hypotf(3.0f, 4.0f);
}
"""
    nvrtc_accepts(source)
    y, bits = np.zeros(3, np.float32), np.zeros(1, np.int32)
    Program(source).launch("k", 1, 1, (y, bits))
    assert np.isinf(y[0]) and bits[0] == 0x3F800000
    np.testing.assert_allclose(y[1:], [np.e + 0.25 + 0.5 + 1 + 7, 8 - 1 + 5], rtol=1e-6)


@pytest.mark.parametrize(("source", "words", "nvrtc_words"), [
    ('extern "C" __global__ void k(uint* x) { x[0] = 1; }', 'identifier "uint" is undefined', "uint"),
    ('extern "C" __global__ void k(float* x) { x[0] = INFINITY; }', 'identifier "INFINITY" is undefined',
     "INFINITY"),
    ('extern "C" __global__ void k(float* x) { x[0] = M_PI; }', 'identifier "M_PI" is undefined', "M_PI"),
    ('extern "C" __global__ void k(int32_t* x) { x[0] = 1; }', 'identifier "int32_t" is undefined', "int32_t"),
    ('#include <cmath>\nextern "C" __global__ void k(float* x) { x[0] = 1; }', "NVRTC.*has no copy of it",
     "could not open source file"),
    ('extern "C" __global__ void k(float* x) { x[0] = std::min(x[0], 1.0f); }', "'std::'", "std"),
])
def test_what_nvrtc_rejects_is_refused_with_its_reason(source, words, nvrtc_words):
    with pytest.raises(UnsupportedSyntax, match=words):
        Program(source)
    if "#include" not in source:  # helpers.gpu.nvrtc refuses the #include itself before NVRTC could read a file
        nvrtc_rejects(source, nvrtc_words)


HELLO = r"""
static __device__ __inline__ float twice(float v) { return 2.0f * v; }

extern "C" __global__ void hello(const float* x) {
    printf("thread %d of block %u: %.2f (100%%)\n", threadIdx.x, blockIdx.x, twice(x[threadIdx.x]));
}
"""


def test_printf_prints_each_thread_s_line_in_thread_order(capsys):
    nvrtc_accepts(HELLO)
    Program(HELLO).launch("hello", 2, 2, (np.array([1.5, 2.0], np.float32),))
    assert capsys.readouterr().out.splitlines() == [
        "thread 0 of block 0: 3.00 (100%)", "thread 1 of block 0: 4.00 (100%)",
        "thread 0 of block 1: 3.00 (100%)", "thread 1 of block 1: 4.00 (100%)"]


@pytest.mark.parametrize(("call", "words"), [
    ('printf("%d %d\\n", threadIdx.x);', r"asks for 2 value\(s\); 1 given"),
    ('printf("%s\\n", x);', "printing a float\\*"),
    ("printf(x);", "a format in quotes"),
])
def test_a_wrong_printf_is_named(call, words):
    with pytest.raises(CudaCError, match=words):
        Program(f'extern "C" __global__ void k(const float* x) {{\n {call}\n}}').launch(
            "k", 1, 1, (np.zeros(1, np.float32),))


#: The last-warp unrolling of NVIDIA's classic reduction (Harris, "Optimizing Parallel Reduction in CUDA", kernel 6):
#: it relied on a warp's lanes running in step, which Volta's independent thread scheduling no longer promises.
WARP_SYNCHRONOUS = r"""
__device__ void warpReduce(volatile float* sdata, unsigned int tid) {
    sdata[tid] += sdata[tid + 32];
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}
extern "C" __global__ void reduce(const float* x, float* out) {
    __shared__ float sdata[128];
    unsigned int tid = threadIdx.x;
    sdata[tid] = x[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) warpReduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
"""


def test_warp_synchronous_code_without_syncwarp_is_a_race_that_names_syncwarp():
    nvrtc_accepts(WARP_SYNCHRONOUS)
    with pytest.raises(KernelFault, match=r"race at line 4: thread \(0,\) of block \(0,\) will read sdata\[16\], "
                       r"which thread \(16,\) of the block wrote at line 3 .*same warp, but since Volta \(independent "
                       r"thread scheduling\).*put __syncwarp\(\) between the write and the read"):
        Program(WARP_SYNCHRONOUS).launch("reduce", 2, 128, (np.ones(256, np.float32), np.zeros(2, np.float32)))


MACROS = r"""
#define D(x) x*2
#define N 1+1
#define H(x) x+1
#define NEG -1
#define IDX(row, col, width) ((row) * (width) + (col))
#define CEIL_DIV(a, b) \
    (((a) + (b) - 1) / (b))
extern "C" __global__ void k(int* a) {
    a[0] = D(1+1);  /* 1+1*2: C adds no brackets */
    a[1] = N*2;
    a[2] = H(1)*2;
    a[3] = 5-NEG;   /* two tokens, - and -1: not -- */
    a[IDX(1, 0, 4)] = CEIL_DIV(7,
                               2);
}
"""


def test_macros_expand_as_c_s_preprocessor_does_unbracketed():
    nvrtc_accepts(MACROS)
    a = np.zeros(8, np.int32)
    Program(MACROS).launch("k", 1, 1, (a,))
    assert a[:5].tolist() == [3, 3, 3, 6, 4]


@pytest.mark.parametrize(("source", "words"), [
    ('#define STR(x) #x\nextern "C" __global__ void k(int* a) {}', "the macro STR"),
    ('#define F(a, b) a\nextern "C" __global__ void k(int* a) {\n a[0] = F(1);\n}', r"line 3: the macro F takes 2"),
    ('#define A A + 1\nextern "C" __global__ void k(int* a) {\n a[0] = A;\n}', "64 rounds"),
])
def test_a_macro_the_executor_cannot_expand_is_named(source, words):
    with pytest.raises(UnsupportedSyntax, match=words):
        Program(source)


def test_an_instance_not_named_in_name_expressions_says_how_to_name_it():
    module = cp.RawModule(code=TEMPLATE, name_expressions=["scale<float,3>"])
    with pytest.raises(CudaCError, match=r"no template instance called 'scale<float, 3>'.*exactly as there; "
                                         r"given: 'scale<float,3>'"):
        module.get_function("scale<float, 3>")
    module.get_function("scale<float,3>")  # CuPy matches the string as given


SHARED_VECTORS = r"""
extern "C" __global__ void k(float* out) {
    __shared__ float s[128];
    float* upper = s + 64;
    upper[threadIdx.x] = 1.0f;
    s[threadIdx.x] = 2.0f;
    s[threadIdx.x + 32] = 3.0f;
    s[threadIdx.x + 96] = 4.0f;
    __syncthreads();
    float4 v = reinterpret_cast<float4*>(s)[threadIdx.x];
    out[threadIdx.x] = v.x + v.w;
}
"""


def test_a_float4_load_from_shared_memory_is_one_request_in_four_passes():
    nvrtc_accepts(SHARED_VECTORS)
    out = np.zeros(32, np.float32)
    counters = Program(SHARED_VECTORS).launch("k", 1, 32, (out,)).counters
    assert out.tolist() == [4.0] * 8 + [6.0] * 8 + [2.0] * 8 + [8.0] * 8
    assert counters.shared_load_requests == 1 and counters.shared_store_requests == 4
    assert counters.shared_wavefronts == 4 + 4  # LDS.128: four phases of 8 lanes; four conflict-free stores


SHARED_SCALAR = r"""
extern "C" __global__ void mean(const float* x, float* out, int n) {
    __shared__ float total;
    __shared__ int count;
    if (threadIdx.x == 0) { total = 0.0f; count = 0; }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { atomicAdd(&total, x[i]); atomicAdd(&count, 1); }
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = total / count;
}
"""


def test_a_shared_scalar_is_one_element_every_thread_of_the_block_sees():
    nvrtc_accepts(SHARED_SCALAR)
    x, out = np.arange(100, dtype=np.float32), np.zeros(2, np.float32)
    Program(SHARED_SCALAR).launch("mean", 2, 64, (x, out, np.int32(100)))
    assert out.tolist() == [x[:64].mean(), x[64:].mean()]
    racy = SHARED_SCALAR.replace("    __syncthreads();\n    int i", "    int i")
    with pytest.raises(KernelFault, match=r"race at line 7: .*update total.*wrote at line 5"):
        Program(racy).launch("mean", 2, 64, (x, out, np.int32(100)))


def test_bit_intrinsics():
    source = r"""
extern "C" __global__ void k(const unsigned int* x, int* out, unsigned int* reversed) {
    int i = threadIdx.x;
    out[3 * i] = __popc(x[i]);
    out[3 * i + 1] = __clz(x[i]);
    out[3 * i + 2] = __ffs(x[i]);
    reversed[i] = __brev(x[i]);
}
"""
    nvrtc_accepts(source)
    x = np.array([0, 1, 0x80000000, 0xF0, 0xFFFFFFFF, 12], np.uint32)
    out, reversed_ = np.zeros(18, np.int32), np.zeros(6, np.uint32)
    Program(source).launch("k", 1, 6, (x, out, reversed_))
    assert out.reshape(6, 3).tolist() == [[0, 32, 0], [1, 31, 1], [1, 0, 32], [4, 24, 5], [32, 0, 1], [2, 28, 3]]
    assert reversed_.tolist() == [0, 0x80000000, 1, 0x0F000000, 0xFFFFFFFF, 0x30000000]


def test_const_cast_and_c_style_casts_of_pointers():
    source = r"""
extern "C" __global__ void k(const float* x, float* y) {
    float* writable = const_cast<float*>(x);
    y[threadIdx.x] = static_cast<float>(static_cast<int>(writable[threadIdx.x])) + (float)(int)2.9f;
}
"""
    nvrtc_accepts(source)
    y = np.zeros(4, np.float32)
    Program(source).launch("k", 1, 4, (np.array([1.5, -1.5, 2.0, 7.9], np.float32), y))
    assert y.tolist() == [3.0, 1.0, 4.0, 9.0]


@pytest.mark.parametrize(("source", "words"), [
    ('extern "C" __global__ void k(const float* x) {\n x[0] = 1.0f;\n}', "line 2: a write through a pointer to const"),
    ('extern "C" __global__ void k(const float* x) {\n const float* q = x + 1;\n *q = 1.0f;\n}',
     "line 3: a write through a pointer to const"),
    ('__device__ void f(float* p) { p[0] = 1; }\nextern "C" __global__ void k(const float* x) {\n f(x);\n}',
     r'line 3: a float pointer to const \(const float\*\) where a float\* is wanted'),
    ('extern "C" __global__ void k(const int* x) {\n atomicAdd(&x[0], 1);\n}', "line 2: atomicAdd on memory a "
     "pointer to const points to"),
])
def test_const_pointers_stay_read_only_as_nvrtc_has_them(source, words):
    nvrtc_rejects(source, "error")
    with pytest.raises(CudaCError, match=words):
        Program(source)


def test_an_explicit_cast_may_drop_const_as_in_c():
    source = 'extern "C" __global__ void k(const float* x) {\n float* p = const_cast<float*>(x);\n p[0] = 2.0f;\n}'
    nvrtc_accepts(source)
    x = np.zeros(1, np.float32)
    Program(source).launch("k", 1, 1, (x,))
    assert x[0] == 2
