"""NVRTC through ctypes: compiles without a GPU, errors carry file:line, bad architectures are refused."""

from __future__ import annotations

import pytest

from helpers.gpu import nvrtc

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")

GOOD = """
extern "C" __global__ void twice(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i];
}
"""


@needs_nvrtc
def test_a_good_kernel_compiles_for_the_t4_and_hopper() -> None:
    built = nvrtc.compile_for_targets(GOOD, "twice.cu")
    assert [c.arch for c in built] == ["sm_75", "sm_90"]
    assert all(c.cubin_bytes > 100 and c.name == "twice.cu" for c in built)
    assert "compiled for sm_75" in str(built[0])


@needs_nvrtc
def test_a_compile_error_carries_file_line_and_nvrtc_log() -> None:
    broken = GOOD.replace("out[i] = 2.0f * x[i]", "out[i] = 2.0f * y[i]")
    with pytest.raises(nvrtc.CompileError) as info:
        nvrtc.compile_source(broken, "sm_75", "twice.cu")
    message = str(info.value)
    assert message.startswith("twice.cu does not compile for sm_75:")
    assert 'twice.cu:4: error: identifier "y" is undefined' in message
    assert "twice.cu(4)" in info.value.log and info.value.arch == "sm_75"


@needs_nvrtc
def test_warnings_are_kept_in_the_log() -> None:
    built = nvrtc.compile_source('extern "C" __global__ void k(float* x) { int unused; }', "sm_90", "w.cu")
    assert "declared but never referenced" in built.log and "w.cu:1: warning" in str(built)


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_30", "75", "compute_75", "", None])
def test_a_bad_architecture_is_refused_with_what_is_accepted(arch) -> None:
    with pytest.raises(ValueError, match="sm_75") as info:
        nvrtc.compile_source(GOOD, arch)
    if arch == "sm_30":
        assert "cannot compile for sm_30; it accepts" in str(info.value) and "sm_90" in str(info.value)


@needs_nvrtc
def test_version_and_supported_archs() -> None:
    major, minor = nvrtc.version().split(".")
    assert int(major) >= 11 and minor.isdigit()
    assert {"sm_75", "sm_90"} <= set(nvrtc.supported_archs())


@pytest.mark.parametrize("source", ["", "   ", None, 42])
def test_an_empty_or_non_string_source_is_refused(source) -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        nvrtc.compile_source(source)


def test_readable_log_rewrites_nvrtc_line_markers() -> None:
    log = 'a.cu(12): error: expected a ";"\n  int x\n      ^\n\nb (operation)(3): warning: unused'
    assert nvrtc.readable_log(log) == ('a.cu:12: error: expected a ";"\n  int x\n      ^\n\n'
                                       "b (operation):3: warning: unused")


def test_without_nvrtc_everything_says_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(nvrtc, "_library", lambda: "NVRTC (NVIDIA's CUDA C compiler library) was not found")
    assert not nvrtc.available()
    assert "pip install nvidia-cuda-nvrtc-cu12" in nvrtc.why()
    with pytest.raises(nvrtc.NvrtcUnavailable, match="pip install nvidia-cuda-nvrtc-cu12"):
        nvrtc.compile_source(GOOD)
    with pytest.raises(nvrtc.NvrtcUnavailable):
        nvrtc.version()


def test_the_pip_package_is_searched_first() -> None:
    pytest.importorskip("nvidia.cuda_nvrtc", reason="the pip package nvidia-cuda-nvrtc-cu12 is not installed")
    first = nvrtc._candidates()[0]
    assert "cuda_nvrtc" in first and "builtins" not in first


def test_cuda_13s_wheel_is_searched_after_cuda_12s(monkeypatch, tmp_path) -> None:
    nvidia = pytest.importorskip("nvidia", reason="no NVIDIA pip wheel here: nothing to search")

    for folder, name in (("cuda_nvrtc", "libnvrtc.so.12"), ("cu13", "libnvrtc.so.13")):
        (tmp_path / folder / "lib").mkdir(parents=True)
        (tmp_path / folder / "lib" / name).touch()
        (tmp_path / folder / "lib" / "libnvrtc-builtins.so.13.5").touch()
    monkeypatch.setattr(nvidia, "__path__", [str(tmp_path)])
    found = nvrtc._candidates()
    assert found[:2] == [str(tmp_path / "cuda_nvrtc/lib/libnvrtc.so.12"), str(tmp_path / "cu13/lib/libnvrtc.so.13")]
    assert "libnvrtc.so.13" in found[2:]  # and the system loader's name for it


COOPERATIVE = """
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void total(const float* x, float* out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int i = block.group_index().x * block.size() + block.thread_rank();
    float v = cg::reduce(warp, i < n ? x[i] : 0.0f, cg::plus<float>());
    if (warp.thread_rank() == 0) atomicAdd(out, v);
}
"""
WMMA = """
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void tile(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}
"""
needs_headers = pytest.mark.skipif(not nvrtc.available() or bool(nvrtc.missing_headers()),
                                   reason="NVRTC or CUDA's headers are absent (the nvrtc extra installs both)")


@needs_headers
@pytest.mark.parametrize("source", [COOPERATIVE, WMMA], ids=["cooperative groups", "wmma"])
def test_the_reference_compile_has_cudas_headers_for_the_t4_and_hopper(source) -> None:
    assert [c.arch for c in nvrtc.compile_for_targets(source, "k.cu")] == ["sm_75", "sm_90"]


@needs_headers
def test_the_reference_compile_makes_an_unmarked_function_a_device_function_as_cupy_does() -> None:
    source = 'float twice(float v) { return 2 * v; }\nextern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }'
    nvrtc.compile_source(source)
    assert "--device-as-default-execution-space" in nvrtc.reference_options()
    assert all(f"-I{folder}" in nvrtc.reference_options() for folder in nvrtc.header_folders())


def test_the_header_folders_come_from_nvidias_wheels(monkeypatch, tmp_path) -> None:
    for folder, marker in (("cuda_runtime/include", "cuda_runtime.h"), ("cuda_cccl/include", "nv/target"),
                           ("cu13/include", "crt/mma.h")):
        (tmp_path / folder / marker).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / marker).touch()
    monkeypatch.setattr(nvrtc, "_nvidia_roots", lambda: [tmp_path])
    monkeypatch.setattr(nvrtc, "_major", lambda: 12)
    nvrtc._headers.cache_clear()
    try:
        assert nvrtc.header_folders() == (tmp_path / "cuda_runtime/include", tmp_path / "cuda_cccl/include",
                                          tmp_path / "cu13/include")
        assert nvrtc.missing_headers() == ""
        (tmp_path / "cuda_cccl/include/nv/target").unlink()
        nvrtc._headers.cache_clear()
        assert nvrtc.missing_headers().endswith("pip install nvidia-cuda-cccl-cu12")
    finally:
        nvrtc._headers.cache_clear()


@pytest.mark.parametrize("line", ["#include <mma.h>", "#include <cooperative_groups/reduce.h>",
                                  "#include <cuda/atomic>", "#include <device_launch_parameters.h>"])
def test_cudas_own_headers_may_be_included(line) -> None:
    assert nvrtc.refused_include(line + "\n" + GOOD) is None


@pytest.mark.parametrize("line", ["#include <cooperative_groups/../x.h>", "#include <cuda/../../etc/passwd>",
                                  "#include <mma.hpp>"])
def test_other_paths_beside_cudas_headers_are_refused(line) -> None:
    assert "is refused" in nvrtc.refused_include(line + "\n" + GOOD)
