"""CuPy's other kernel APIs on the CPU stand-in, as CuPy's user guide writes them
(https://docs.cupy.dev/en/stable/user_guide/kernel.html): ElementwiseKernel with raw parameters, i and
_ind.size(); ReductionKernel with axis and keepdims; and CheckedCupy's check of a ReductionKernel on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import FakeCupy, on_device

from helpers.executor import CudaCError, KernelFault, cupy_cpu
from helpers.gpu import cuda, cupy_checked, nvrtc
from helpers.measuring import timing

RNG = np.random.default_rng(26)
L2NORM = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def l2norm() -> cupy_cpu.ReductionKernel:
    return cupy_cpu.ReductionKernel(*L2NORM)


# ------------------------------------------------------------------------------------ ElementwiseKernel, raw


def test_the_user_guides_raw_reverse_runs_over_size_elements() -> None:
    x = np.arange(10, dtype=np.float32)
    reverse = cupy_cpu.ElementwiseKernel("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse")
    np.testing.assert_array_equal(reverse(x, size=10), x[::-1])
    np.testing.assert_array_equal(reverse(x, size=4), x[3::-1])  # _ind.size() is the size asked for, not x's


def test_the_user_guides_add_reverse_broadcasts_the_non_raw_argument() -> None:
    add_reverse = cupy_cpu.ElementwiseKernel("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]",
                                             "add_reverse")
    x = np.arange(5, dtype=np.float32)
    y = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(add_reverse(x, x), x + x[::-1])
    # i runs over the broadcast shape of the non-raw arguments (here x's 5 elements); y is indexed as it is
    np.testing.assert_array_equal(add_reverse(x, y), x + y.reshape(-1)[4::-1])


def test_a_raw_only_kernel_needs_size_and_size_is_refused_beside_arrays() -> None:
    reverse = cupy_cpu.ElementwiseKernel("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse")
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(ValueError, match=r"with no array argument .* give the number of elements: size=n"):
        reverse(x)
    scaled = cupy_cpu.ElementwiseKernel("T x", "T y", "y = 2 * x", "scaled")
    with pytest.raises(ValueError, match="size= is for calls without array arguments"):
        scaled(x, size=4)


def test_an_off_by_one_in_a_raw_kernel_is_an_out_of_bounds_read_on_the_operations_line() -> None:
    shifted = cupy_cpu.ElementwiseKernel("raw T x", "T y", "T last = x[_ind.size() - i];\ny = last", "shifted")
    with pytest.raises(KernelFault, match=r"out-of-bounds read at line 1 of the operation of shifted: .* read "
                                          r"x\[8\], but x has 8 elements"):
        shifted(np.arange(8, dtype=np.float32), size=8)


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC is not installed")
def test_the_whole_kernel_helpers_cuda_builds_for_nvrtc_has_ind_size_too() -> None:
    kernel = cuda.Elementwise("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse")
    assert all(not compiled.log for compiled in kernel.compile("sm_75"))  # not even a warning


def test_other_uses_of_ind_are_refused_naming_what_is_supported() -> None:
    with pytest.raises(ValueError, match=r"line 2 of the operation uses '_ind.get'.*_ind.size\(\)"):
        cupy_cpu.ElementwiseKernel("raw T x", "T y", "T v = 0;\ny = x[_ind.get()[0]] + v", "k")


def test_an_unknown_parameter_type_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown type 'flot32' in in_params 'flot32 x'.*one letter"):
        cupy_cpu.ElementwiseKernel("flot32 x", "float32 y", "y = x", "k")
    with pytest.raises(ValueError, match="unknown type 'TT'"):
        cupy_cpu.ReductionKernel("TT x", "T y", "x", "a + b", "y = a", "0", "k")


# ------------------------------------------------------------------------------------ ReductionKernel


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, (0, 2), (1, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_the_user_guides_l2norm_matches_numpy(axis, keepdims) -> None:
    x = RNG.standard_normal((3, 5, 7)).astype(np.float32)
    got = l2norm()(x, axis=axis, keepdims=keepdims)
    want = np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_l2norm_of_many_rows_and_of_one_long_vector() -> None:
    rows = RNG.standard_normal((2000, 3))
    np.testing.assert_allclose(l2norm()(rows, axis=1), np.sqrt((rows * rows).sum(axis=1)), rtol=1e-12)
    long = RNG.standard_normal(100_000).astype(np.float32)
    assert l2norm()(long) == pytest.approx(float(np.sqrt((long.astype(np.float64) ** 2).sum())), rel=1e-5)


def test_a_max_reduction_starts_from_its_identity() -> None:
    largest = cupy_cpu.ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "-2147483648", "largest")
    x = RNG.integers(-1000, 1000, (6, 300)).astype(np.int32)
    np.testing.assert_array_equal(largest(x, axis=1), x.max(axis=1))
    assert largest(x) == x.max()
    empty_rows = np.zeros((3, 0), np.int32)
    np.testing.assert_array_equal(largest(empty_rows, axis=1), np.full(3, np.iinfo(np.int32).min))


def test_the_output_type_comes_from_out_params_and_out_may_be_given() -> None:
    count_positive = cupy_cpu.ReductionKernel("float32 x", "int64 y", "x > 0 ? 1 : 0", "a + b", "y = a", "0",
                                              "count_positive")
    x = RNG.standard_normal((4, 50)).astype(np.float32)
    got = count_positive(x, axis=1)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, (x > 0).sum(axis=1))
    out = np.empty(4, np.int64)
    assert count_positive(x, out=out, axis=1) is out
    np.testing.assert_array_equal(out, (x > 0).sum(axis=1))
    with pytest.raises(ValueError, match=r"output y must be a contiguous array of shape \(4,\)"):
        count_positive(x, np.empty(5, np.int64), axis=1)


def test_two_inputs_broadcast_before_the_reduction() -> None:
    dot = cupy_cpu.ReductionKernel("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "weighted",
                                   reduce_type="double")
    x, w = RNG.standard_normal((5, 8)), RNG.standard_normal(8)
    np.testing.assert_allclose(dot(x, w, axis=1), x @ w, rtol=1e-12)
    np.testing.assert_allclose(dot(x, 2.0, axis=0), 2 * x.sum(axis=0), rtol=1e-12)


def test_a_wrong_reduce_expression_is_named_by_its_line() -> None:
    bad = cupy_cpu.ReductionKernel("T x", "T y", "x", "a + c", "y = a", "0", "bad")
    with pytest.raises(CudaCError, match="line 1 of the reduce_expr of bad: 'c' is not declared"):
        bad(np.ones(4, np.float32))
    misspelt = cupy_cpu.ReductionKernel("T x", "T y", "x", "a + b", "y = sqrtt(a)", "0", "misspelt")
    with pytest.raises(CudaCError, match="line 1 of the post_map_expr of misspelt"):
        misspelt(np.ones(4, np.float32))


def test_a_fault_in_the_map_expression_names_its_line() -> None:
    lookup = cupy_cpu.ReductionKernel("int32 x", "int32 y", "table[x]", "a + b", "y = a", "0", "lookup",
                                      preamble="__constant__ int table[4] = {1, 2, 3, 4};")
    assert lookup(np.arange(4, dtype=np.int32)) == 10
    with pytest.raises(KernelFault, match=r"out-of-bounds read at line 1 of the map_expr of lookup: .* table\[4\]"):
        lookup(np.arange(5, dtype=np.int32))


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), [
    ((np.ones(3, np.float32),), {"axis": 1}, ValueError, r"axis must be None, an int or a tuple of ints from -1 to 0"),
    ((np.ones((3, 2), np.float32),), {"axis": (0, -2)}, ValueError, "names an axis twice"),
    ((np.ones(3, np.float32),), {"axis": 0.5}, ValueError, "axis must be None"),
    ((), {}, TypeError, r"l2norm takes 1 input\(s\) \(T x\)"),
    ((np.ones(3, np.float32), np.ones(1, np.float32)), {"out": np.ones(1, np.float32)}, TypeError, "out="),
    ((np.array(["a"]),), {}, TypeError, "would be <U1"),
])
def test_bad_calls_say_what_is_accepted(args, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        l2norm()(*args, **kwargs)


@pytest.mark.parametrize(("params", "kwargs", "message"), [
    (("raw T x", "T y", "x[0]", "a + b", "y = a", "0", "k"), {}, "x is raw; the CPU stand-in's ReductionKernel"),
    (("T a", "T y", "a", "a + b", "y = a", "0", "k"), {}, "a and b are the reduce_expr's own names"),
    (("T x", "T y", "x", "", "y = a", "0", "k"), {}, "reduce_expr must be a non-empty string"),
    (("T x", "T y", "x", "a + b", "y = a", None, "k"), {}, "identity must be a non-empty string"),
    (("T x", "T y", "x", "a + b", "y = a", "0", "k"), {"reduce_type": "real"}, "reduce_type must be a C type"),
    (("T x", "", "x", "a + b", "y = a", "0", "k"), {}, "out_params names no output"),
])
def test_bad_kernels_are_refused_when_made(params, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        cupy_cpu.ReductionKernel(*params, **kwargs)


# ------------------------------------------------------------------------------------ on a GPU: CheckedCupy


class FakeReductionCupy(FakeCupy):
    """FakeCupy with a ReductionKernel (the CPU stand-in's, on the fake device arrays), counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.reductions: list[str] = []
        fake = self

        class ReductionKernel:
            def __init__(self, *args, **kwargs) -> None:
                self.name, self.made = args[6], (args, kwargs)

            def __call__(self, *args, **kwargs):
                fake.reductions.append(self.name)
                run = cupy_cpu.ReductionKernel(*self.made[0], **self.made[1])
                return on_device(run(*map(np.asarray, args), **kwargs))

        self.ReductionKernel = ReductionKernel


@pytest.fixture
def checked(monkeypatch):
    """CheckedCupy over the fake, and its checks (each logs whether a timer was timing repeated calls then)."""
    fake, calls = FakeReductionCupy(), []
    real_check = cupy_checked.ReductionKernel._check

    def counted(*args):
        calls.append(timing.in_timed_region())
        return real_check(*args)

    monkeypatch.setattr(cupy_checked.ReductionKernel, "_check", staticmethod(counted))
    return cupy_checked.CheckedCupy(fake), fake, calls


def test_checked_cupy_checks_a_reduction_once_per_signature(checked) -> None:
    cupy, fake, calls = checked
    kernel = cupy.ReductionKernel(*L2NORM)
    x = on_device(RNG.standard_normal((4, 6)).astype(np.float32))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(kernel(x, axis=1)), np.sqrt((np.asarray(x) ** 2).sum(axis=1)),
                                   rtol=1e-5)
    assert calls == [False] and fake.reductions == ["l2norm"] * 3
    kernel(x, axis=0)  # a new signature
    kernel(on_device(np.ones((2, 6), np.float32)), axis=0)  # another shape
    assert len(calls) == 3
    timing.time_without_sync(lambda: kernel(x, axis=None), repeats=3)
    assert calls == [False] * 4 and len(fake.reductions) > 6  # the untimed first call checked; the timed did not


def test_checked_cupy_refuses_a_reduction_that_faults_before_the_gpu_runs_it(checked) -> None:
    cupy, fake, _ = checked
    lookup = cupy.ReductionKernel("int32 x", "int32 y", "table[x]", "a + b", "y = a", "0", "lookup",
                                  preamble="__constant__ int table[4] = {1, 2, 3, 4};")
    with pytest.raises(KernelFault, match=r"line 1 of the map_expr of lookup"):
        lookup(on_device(np.arange(5, dtype=np.int32)))
    assert fake.reductions == []


def test_checked_cupy_leaves_what_the_stand_in_cannot_run_to_cupy(checked) -> None:
    cupy, fake, calls = checked
    assert cupy.ReductionKernel("raw T x", "T y", "x[0]", "a + b", "y = a", "0", "raw_sum")._on_cpu is None
    kernel = cupy.ReductionKernel(*L2NORM)
    with pytest.raises(ValueError, match="axis must be None"):  # the stand-in declines; CuPy (here the fake) judges
        kernel(on_device(np.ones(3, np.float32)), axis=3)
    assert calls == [False] and fake.reductions == ["l2norm"]


def test_unsigned_outputs_are_allocated_and_summed():
    total = cupy_cpu.ReductionKernel("T x", "uint32 y", "x", "a + b", "y = a", "0", "usum")
    assert int(total(np.arange(10, dtype=np.uint32))) == 45
    assert cupy_cpu.empty(2, np.uint8).tolist() == [255, 255]  # never written: the largest value, as -1 is for int


def test_checked_cupy_leaves_numpy_arguments_to_cupy_s_own_error(checked) -> None:
    cupy, fake, _ = checked
    kernel = cupy.ReductionKernel(*L2NORM)
    kernel(np.ones(3, np.float32))  # not checked on the executor: CuPy itself refuses a NumPy array
    assert fake.reductions == ["l2norm"]


def test_a_scalar_argument_is_seen_by_post_map_expr_as_by_map_expr():
    mean_over = cupy_cpu.ReductionKernel("T x, T d", "T y", "x", "a + b", "y = a / d", "0", "mean_over")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(mean_over(x, np.float32(4), axis=1), x.mean(axis=1))
