"""Issue 22's hostile CUDA C for the CPU executor: each a clear CudaCError, UnsupportedSyntax or KernelFault
naming what is wrong (the traceback ending in helpers/), or the answer a GPU gives; never Python's own error."""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest

from helpers import executor

HELPERS = str(Path(executor.__file__).parent)
KERNEL = 'extern "C" __global__ void k(float *a, int n) {{ int i = threadIdx.x; {body} }}'


def _run(source: str, *args: object) -> np.ndarray:
    out = np.zeros(4, np.float32)
    executor.Program(source).launch("k", (1,), (4,), list(args) or [out, np.int32(4)])
    return out


def _refused(source: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as caught:
        _run(source)
    assert traceback.extract_tb(caught.value.__traceback__)[-1].filename.startswith(HELPERS)


@pytest.mark.parametrize(("body", "error", "match"), [
    ("int a$b = 1; if (i < n) a[i] = a$b;", executor.UnsupportedSyntax, r"'\$' in a name"),
    ("if (i < n) a[i] = " + "9" * 5000 + ";", executor.CudaCError, "5,000 digits.*too large"),
    ("if (i < n) a[i] = 1." + "5" * 5000 + "f;", executor.CudaCError, "a number of 5,00"),
    ("if (i < n) a[i] = " + " + ".join(["1.0f"] * 300) + ";", executor.CudaCError, "nests deeper.*temporary"),
    ("if (i < n) a[i] = " + " + ".join(["1.0f"] * 1000) + ";", executor.CudaCError, "nests deeper"),
    ("int s = " + " + ".join(["i"] * 128) + "; if (i < n) a[i] = s;", executor.CudaCError, "nests deeper"),
    ("if (i < n) a[i] = " + "(" * 200 + "1.0f" + ")" * 200 + ";", executor.CudaCError, "nests deeper"),
    ("".join(f"for (int j{d} = 0; j{d} < 1; j{d}++) " for d in range(21)) + "if (i < n) a[i] = 1.0f;",
     executor.CudaCError, "nests deeper"),
    ("float t[1 << 40];", executor.CudaCError, "1 << 40 shifts a 32-bit integer by 40; C allows 0 to 31"),
    ("float t[4294967297]; if (i < n) a[i] = 1.0f;", executor.CudaCError, "4,294,967,297 elements"),
])
def test_source_the_executor_cannot_follow_is_refused_with_the_reason(body: str, error: type[Exception],
                                                                     match: str) -> None:
    _refused(KERNEL.format(body=body), error, match)


@pytest.mark.parametrize(("body", "match"), [
    ("int s = -1; if (i < n) a[i] = (float)(1 << s);", "1 << -1, a shift of a 32-bit integer by -1"),
    ("int s = 32; if (i < n) a[i] = (float)(1 >> s);", "1 >> 32, a shift of a 32-bit integer by 32"),
    ("long long v = 1; int s = 1000000; if (i < n) a[i] = (float)(v << s);", "64-bit integer by 1000000"),
    ("int s; if (i < n) a[i] = (float)(1 << s);", "uses the variable s .* before it is given one"),
    ("int s; if (i < n) a[i] = (float)(1 & s);", "uses the variable s .* before it is given one"),
    ("int s; if (i < n) a[i] = (float)(s | 1);", "uses the variable s .* before it is given one"),
])
def test_undefined_arithmetic_is_a_fault_naming_the_line(body: str, match: str) -> None:
    with pytest.raises(executor.KernelFault, match=match) as caught:
        _run(KERNEL.format(body=body))
    assert caught.value.line == 1 and traceback.extract_tb(caught.value.__traceback__)[-1].filename.startswith(
        HELPERS)


def test_shifts_within_the_width_are_cs() -> None:
    body = "int s = 31; unsigned int u = 1u << s; if (i < n) a[i] = (float)((u >> s) + (1 << 4) + (-16 >> 2));"
    assert (_run(KERNEL.format(body=body)) == 1 + 16 - 4).all()


def test_a_hexadecimal_float_is_read_as_c_reads_it() -> None:
    assert (_run(KERNEL.format(body="if (i < n) a[i] = 0x1p3f + 0x1.8p1;")) == 11).all()


def test_a_learners_own_device_function_is_called_not_the_built_in_of_the_same_name() -> None:
    """NVRTC compiles this and calls the learner's max (checked with NVRTC 12)."""
    source = ('__device__ float max(float a, float b) { return a; }\n'
              + KERNEL.format(body="if (i < n) a[i] = max(1.0f, 2.0f);"))
    assert (_run(source) == 1).all()


def test_atomic_add_past_int_max_wraps_as_on_a_gpu() -> None:
    source = 'extern "C" __global__ void k(int *a) { atomicAdd(&a[0], 2147483647); }'
    total = np.zeros(1, np.int32)
    executor.Program(source).launch("k", (1,), (3,), [total])
    assert total[0] == np.int32(np.uint32(3 * 2147483647 % 2**32).view(np.int32))


def test_a_read_only_array_written_by_the_kernel_is_a_fault_naming_it() -> None:
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(executor.KernelFault, match="a is read-only .* a.copy()"):
        _run(KERNEL.format(body="if (i < n) a[i] = 1.0f;"), out, np.int32(4))
    source = ('extern "C" __global__ void k(const float *x, float *y, int n) '
              '{ int i = threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }')
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    x.flags.writeable = False  # only read: fine
    executor.Program(source).launch("k", (1,), (4,), [x, y, np.int32(4)])
    assert (y == 2).all()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself warns
def test_an_array_subclass_is_refused_with_the_plain_array_to_pass() -> None:
    with pytest.raises(TypeError, match=r"argument 1 \(float\* a\) of k: a matrix, not a plain NumPy array; "
                                        r"pass np.asarray\(a\)"):
        _run(KERNEL.format(body="if (i < n) a[i] = 1.0f;"), np.matrix(np.zeros((1, 4), np.float32)), np.int32(4))


def test_names_that_collide_in_python_run_as_c_reads_them() -> None:
    """A function and a variable of one name, Python keywords and the runtime's own names are plain C names."""
    source = ('__device__ float load(float lambda) { return lambda + 1.0f; }\n'
              + KERNEL.format(body="float store = 1.0f; int None = 2; int np = 3; float yield_ = load(store); "
                                   "if (i < n) a[i] = yield_ + None + np;"))
    assert (_run(source) == 2 + 2 + 3).all()


def test_a_backslash_in_a_define_stays_c_and_reaches_no_regular_expression() -> None:
    _refused('#define V 1.0f \\1\n' + KERNEL.format(body="if (i < n) a[i] = V;"), executor.CudaCError,
             "does not parse as CUDA C")


# ------------------------------------------------------------------------------------------------ issue 38


@pytest.mark.parametrize(("op", "ctype"), [("atomicMax", "float"), ("atomicMin", "double"), ("atomicAdd", "long long"),
                                           ("atomicSub", "float"), ("atomicCAS", "float")])
def test_an_atomic_cuda_has_no_overload_for_is_refused_as_nvrtc_refuses_it(op, ctype):
    args = "p, (T)1, (T)2" if op == "atomicCAS" else "p, (T)1"
    source = f'typedef {ctype} T;\nextern "C" __global__ void k(T* p) {{ {op}({args}); }}'
    with pytest.raises(executor.CudaCError, match=f'no instance of overloaded function "{op}"'):
        executor.Program(source)
    from helpers.gpu import nvrtc
    if nvrtc.available():
        with pytest.raises(nvrtc.CompileError, match=f'no instance of overloaded function "{op}"'):
            nvrtc.compile_source(source)


def test_ldg_and_the_cache_hinted_stores_are_loads_and_stores():
    source = ('extern "C" __global__ void k(const float* a, float* b) {\n    int i = threadIdx.x;\n'
              "    b[i] = __ldg(&a[i]) + __ldcs(a + i);\n    __stcs(b + i, b[i] * 2.0f);\n}\n")
    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    executor.Program(source).launch("k", (1,), (4,), (a, b))
    assert b.tolist() == [0, 4, 8, 12]
    with pytest.raises(executor.CudaCError, match="through a pointer to const"):
        executor.Program(source.replace("__stcs(b + i", "__stcs(a + i"))


def test_windows_line_endings_are_read_as_line_ends():
    source = ('extern "C" __global__ void k(float* a, int n) {\n    int i = threadIdx.x; \\\n'
              "    if (i < n) a[i] = 2.0f * i;\n    x = 1;\n}\n").replace("\n", "\r\n")
    with pytest.raises(executor.CudaCError, match="line 4: 'x' is not declared"):
        executor.Program(source)
    out = _run(source.replace("    x = 1;\r\n", ""))
    assert out.tolist() == [0, 2, 4, 6]
    assert executor.kernel_names(source) == (["k"], {"k"})


def test_a_spin_lock_by_the_lanes_of_one_warp_is_a_fault_that_says_why_not_a_hang():
    source = ('extern "C" __global__ void k(int* lock, float* total) {\n    while (atomicCAS(lock, 0, 1) != 0);\n'
              "    total[0] += 1.0f;\n    atomicExch(lock, 0);\n}\n")
    with pytest.raises(executor.KernelFault, match="spin lock at line 2.*a lane of the same warp.*Volta") as caught:
        executor.Program(source).launch("k", (1,), (32,), (np.zeros(1, np.int32), np.zeros(1, np.float32)))
    assert caught.value.kind == "spin lock"


def test_a_compare_and_swap_loop_with_contention_still_runs():
    source = ('extern "C" __global__ void k(float* best, const float* x) {\n    float v = x[threadIdx.x];\n'
              "    int* at = (int*)best;\n    int old = *at, assumed;\n    do {\n        assumed = old;\n"
              "        old = atomicCAS(at, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));\n"
              "    } while (assumed != old);\n}\n")
    best, x = np.zeros(1, np.float32), np.random.default_rng(1).random(256).astype(np.float32)
    executor.Program(source).launch("k", (1,), (256,), (best, x))  # a float* cast to an int*: the same bytes
    assert best[0] == x.max()


def test_a_traced_launch_too_big_to_record_is_refused_in_seconds():
    source = ('extern "C" __global__ void k(float* x) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
              "    float s = 0.0f;\n    for (int j = 0; j < 200; j++) { if (j % 2) s += j; }\n    x[i] = s;\n}\n")
    with pytest.raises(executor.CudaCError, match="trace a smaller launch"):
        executor.Program(source).launch("k", (1024,), (256,), (np.zeros(262_144, np.float32),), trace=True)


@pytest.mark.parametrize("expressions", [5, "k<float>", [3], {"k"}])
def test_name_expressions_that_are_not_a_list_of_strings_are_refused_in_one_line(expressions):
    from helpers.executor import cupy_cpu

    with pytest.raises(TypeError, match="name_expressions is a list of strings"):
        cupy_cpu.RawModule(code=KERNEL.format(body=""), name_expressions=expressions)
