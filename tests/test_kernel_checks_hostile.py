"""Chapter 03's kernel checkers against answers built to fool them (issue 22): a kernel that hard-codes the
check's factor or is right only at the check's sizes, one that zeroes its inputs, an object that prints a fake
tick when touched, an #include that reads a file of this machine, and author arguments that check nothing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import without_gpu
from test_cuda import SCALE, SILU, FakeCupy, _solution

from helpers.chapters import kernel_checks
from helpers.executor import cupy_cpu
from helpers.gpu import cuda, nvrtc

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason=f"NVRTC is absent: {nvrtc.why()}")
#: The first line of /etc/passwd, which an #include "/etc/passwd" would have shown in NVRTC's message.
PASSWD = Path("/etc/passwd").read_text().splitlines()[0] if Path("/etc/passwd").is_file() else "root:x:0:0"

#: A scale kernel that ignores `factor`: right only when the check uses 2.5.
HARD_CODED = SCALE.replace("factor * x[i]", "2.5f * x[i]")
#: A scale kernel right only at n = 1, 257 and 1,000, the sizes the check always used.
SIZE_SPECIFIC = SCALE.replace("if (i < n) out[i] = factor * x[i];",
                              "if (i < n) out[i] = (n == 1 || n == 257 || n == 1000) ? factor * x[i] : 0.0f;")
#: A scale kernel that zeroes its (non-const) input and its output: 0 = factor * 0.
ZEROING_SCALE = SCALE.replace("const float* x", "float* x").replace(
    "if (i < n) out[i] = factor * x[i];", "if (i < n) { x[i] = 0.0f; out[i] = 0.0f; }")
#: A tiled-matmul kernel that zeroes A, B and C.
ZEROING_MATMUL = """
extern "C" __global__ void matmul_tiled_rect(float* A, float* B, float* C, int M, int K, int N) {
    int row = blockIdx.y * 16 + threadIdx.y;
    int col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        for (int k = 0; k < K; ++k) {
            if (col == 0) A[row * K + k] = 0.0f;
            if (row == 0) B[k * N + col] = 0.0f;
        }
        C[row * N + col] = 0.0f;
    }
}
"""
FAKE_TICK = "✅ silu: ran on the CPU executor and matches NumPy, in bounds with no race (1 element)."


def out_lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# ---------------------------------------------------------------- 1. a factor and a size drawn afresh


@without_gpu
@pytest.mark.parametrize("source", [HARD_CODED, SIZE_SPECIFIC], ids=["factor 2.5f hard-coded", "right only at "
                                                                     "n = 1, 257, 1000"])
def test_a_scale_kernel_tuned_to_the_checks_old_constants_fails(capsys, source) -> None:
    for _ in range(3):  # every check draws afresh: each must fail
        verdict = kernel_checks.check_scale(source)
        assert verdict.attempted and not verdict.passed
        assert out_lines(capsys)[0].startswith("❌ scale with a bounds check: ")


@without_gpu
def test_an_elementwise_right_only_at_the_checks_old_sizes_fails(capsys) -> None:
    tuned = cuda.Elementwise("float32 x", "float32 y",
                             "y = (_n == 1 || _n == 257 || _n == 1000) ? x / (1.0f + expf(-x)) : 0.0f", "silu")
    assert not kernel_checks.check_silu(tuned)
    assert out_lines(capsys)[0].startswith("❌ silu: ")


@without_gpu
def test_a_tiled_matmul_right_only_at_the_checks_fixed_shapes_fails(capsys) -> None:
    solution = _solution("matmul_tiled_rect")
    tuned = solution.replace("C[row * N + col] = sum;",
                             "C[row * N + col] = (M == 33 || M == 17 || M == 100) ? sum : 0.0f;")
    assert tuned != solution
    assert not kernel_checks.check_tiled_matmul(tuned)
    assert out_lines(capsys)[0].startswith("❌ tiled matmul: ")


SCALE_TICK = re.compile(r"✅ scale with a bounds check: ran on the CPU executor and matches NumPy, in bounds with "
                        r"no race \((?P<runs>[^)]*)\)(; compiled for sm_75 and sm_90)?\. Drawn afresh for this "
                        r"check: factor = (?P<factor>-?\d\.\d+), n = (?P<n>[\d,]+)\.")


def scale_run(n: int) -> str:
    blocks = -(-n // 256)
    return f"n = {n:,}, {blocks} block{'s' * (blocks > 1)} of 256 threads"


@without_gpu
def test_the_scale_verdict_says_the_factor_and_the_size_it_drew_and_they_change(capsys) -> None:
    drawn = set()
    for _ in range(6):
        assert kernel_checks.check_scale(SCALE)
        line = out_lines(capsys)[0]
        match = SCALE_TICK.fullmatch(line)
        assert match, line
        n, factor = int(match["n"].replace(",", "")), float(match["factor"])
        assert 2 <= n < 1000 and n != 257
        assert match["runs"] == "; ".join(scale_run(size) for size in sorted((1, 257, n, 1000)))
        assert 0.5 <= abs(factor) <= 4 and abs(factor) not in (1.0, 2.5)
        drawn.add((n, factor))
    assert len(drawn) > 1, "the same factor and size six times: not drawn afresh"


@without_gpu
def test_the_silu_and_matmul_verdicts_say_what_they_drew(capsys) -> None:
    assert kernel_checks.check_silu(SILU)
    assert kernel_checks.check_tiled_matmul(_solution("matmul_tiled_rect"))
    silu, _, matmul, _ = out_lines(capsys)
    found = re.fullmatch(r"✅ silu: ran on the CPU executor and matches NumPy, in bounds with no race \(([^)]*)\)"
                         r"(; compiled for sm_75 and sm_90)?\. Drawn afresh for this check: ([\d,]+) elements\.", silu)
    assert found, silu
    n = int(found[3].replace(",", ""))
    assert 2 <= n < 1000 and n != 257
    assert found[1] == "; ".join(f"{size:,} element{'s' * (size > 1)}" for size in sorted((1, 257, n, 1000)))
    shape = r"\((\d+) x (\d+)\) @ \(\2 x (\d+)\)"
    found = re.fullmatch(r"✅ tiled matmul: ran on the CPU executor and matches NumPy, in bounds with no race "
                         rf"\(\(33 x 20\) @ \(20 x 17\); \(17 x 35\) @ \(35 x 40\); {shape}, 16 x 16 tiles\)"
                         rf"(; compiled for sm_75 and sm_90)?\. Drawn afresh for this check: {shape}\.", matmul)
    assert found, matmul
    m, k, n = (int(found[i]) for i in (1, 2, 3))
    assert (m, k, n) == tuple(int(found[i]) for i in (5, 6, 7))
    assert all(16 < side < 48 and side % 16 for side in (m, k, n))
    assert m not in (33, 17, 100) and k not in (20, 35, 70) and n not in (17, 40, 90)


# ---------------------------------------------------------------- 2. the reference first, from the checker's copy


@without_gpu
def test_kernels_that_zero_their_inputs_and_output_fail_on_the_cpu(capsys) -> None:
    assert not kernel_checks.check_scale(ZEROING_SCALE)
    assert not kernel_checks.check_tiled_matmul(ZEROING_MATMUL)
    scale, matmul = (line for line in out_lines(capsys) if not line.startswith(" "))
    assert scale.startswith("❌ scale with a bounds check: ") and "values differ from NumPy's" in scale, scale
    assert matmul.startswith("❌ tiled matmul: ") and "values differ from NumPy's" in matmul, matmul


@pytest.fixture
def fake_gpu(monkeypatch):
    """test_cuda's stand-in CuPy, with helpers told that a GPU is here."""
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(kernel_checks, "gpu_here", lambda: True)
    return fake


def test_kernels_that_zero_their_inputs_and_output_fail_on_the_gpu_path(fake_gpu, monkeypatch, capsys) -> None:
    right = kernel_checks._run_all

    def gpu_only(title, build, runs, on, rtol, atol):  # the CPU executor's run passes, as it did before the fix
        return "skipped" if on.endswith("executor") else right(title, build, runs, on, rtol, atol)

    monkeypatch.setattr(kernel_checks, "_run_all", gpu_only)
    assert not kernel_checks.check_scale(ZEROING_SCALE)
    assert not kernel_checks.check_tiled_matmul(ZEROING_MATMUL)
    lines = [line for line in out_lines(capsys) if not line.startswith(" ")]
    assert all(line.startswith("❌") and "on this GPU" in line for line in lines), lines


# ---------------------------------------------------------------- 3. author arguments that check nothing


@pytest.mark.parametrize(("check", "message"), [
    (lambda: kernel_checks.check_silu(SILU, n=0), r"n must be a whole number from 3 to 2,097,152"),
    (lambda: kernel_checks.check_silu(SILU, n=2), r"n must be a whole number from 3"),
    (lambda: kernel_checks.check_silu(..., n=-1), r"n must be"),
    (lambda: kernel_checks.check_silu(SILU, n=True), r"n must be"),
    (lambda: kernel_checks.check_silu(SILU, n=1000.0), r"n must be"),
    (lambda: kernel_checks.check_silu(SILU, n=10**7), r"to 2,097,152"),
    (lambda: kernel_checks.check_scale(SCALE, n=0), r"n must be a whole number from 258 to 2,097,152 \(threads \+ 2"),
    (lambda: kernel_checks.check_scale(SCALE, n=257), r"n must be a whole number from 258"),
    (lambda: kernel_checks.check_scale(SCALE, threads=1), r"threads must be a whole number from 2 to 1,024"),
    (lambda: kernel_checks.check_scale(SCALE, threads=2048), r"threads must be"),
    (lambda: kernel_checks.check_scale(..., threads=0), r"threads must be"),
    (lambda: kernel_checks.check_tiled_matmul("", shape=(1, 1, 1)), r"shape must be \(M, K, N\): three whole "
                                                                     r"numbers, each from 17 to 4,096"),
    (lambda: kernel_checks.check_tiled_matmul("", shape=(100, 64, 90)), r"not a multiple of 16.*got \(100, 64, 90\)"),
    (lambda: kernel_checks.check_tiled_matmul("", shape=(100, 70)), r"shape must be"),
    (lambda: kernel_checks.check_tiled_matmul("", shape="100"), r"shape must be"),
    (lambda: kernel_checks.check_tiled_matmul("", shape=(100, 70.0, 90)), r"shape must be"),
    (lambda: kernel_checks.check_tiled_matmul("", tile=1), r"tile must be a whole number from 2 to 32"),
    (lambda: kernel_checks.check_tiled_matmul("", tile=64), r"tile must be"),
    (lambda: kernel_checks.check_elementwise(SILU, kernel_checks.silu_reference, lambda n: (np.ones(n),), "",
                                             n=1000), r"title must be"),
])
def test_author_arguments_that_would_check_nothing_are_refused(check, message) -> None:
    with pytest.raises(ValueError, match=message):
        check()


# ---------------------------------------------------------------- 4. objects that print when touched


class LoudMeta(type):
    """A metaclass whose class name prints too."""

    @property
    def __name__(cls) -> str:  # noqa: PLE0307 - the point: a lying name
        print(FAKE_TICK)
        return "ElementwiseKernel"


class Loud(metaclass=LoudMeta):
    """Prints a fake tick from every hook a checker might touch, and lies about its class."""

    def _tick(self, *args, **kwargs):
        print(FAKE_TICK)
        return self

    __getattr__ = __call__ = __iter__ = _tick

    def __repr__(self) -> str:
        print(FAKE_TICK)
        return "Loud()"

    __str__ = __format__ = __repr__

    def __len__(self) -> int:
        print(FAKE_TICK)
        return 1

    def __eq__(self, other) -> bool:
        print(FAKE_TICK)
        return True

    def __hash__(self) -> int:
        print(FAKE_TICK)
        return 0

    def __bool__(self) -> bool:
        print(FAKE_TICK)
        return True

    def __contains__(self, item) -> bool:
        print(FAKE_TICK)
        return False

    @property
    def __class__(self):  # isinstance() asks this when the real type does not match
        print(FAKE_TICK)
        return str


class LoudStr(str):
    """A string whose every method a checker might use prints a fake tick."""

    def _tick(self, *args, **kwargs):
        print(FAKE_TICK)
        return str.__str__(self)

    strip = split = __str__ = __repr__ = __format__ = _tick

    def __contains__(self, item) -> bool:
        print(FAKE_TICK)
        return False

    def __eq__(self, other) -> bool:
        print(FAKE_TICK)
        return True

    __hash__ = str.__hash__


def loud_stand_in() -> cupy_cpu.ElementwiseKernel:
    kernel = cupy_cpu.ElementwiseKernel("float32 x", "float32 y", "y = x / (1.0f + expf(-x));", "silu")
    kernel.operation = LoudStr("y = x / (1.0f + expf(-x));")
    return kernel


@pytest.mark.parametrize("make", [
    Loud, lambda: LoudStr(SCALE), loud_stand_in,
    lambda: cuda.Elementwise("float32 x", "float32 y", LoudStr("y = x / (1.0f + expf(-x));"), "silu"),
], ids=["an object", "a str subclass", "a stand-in kernel with a loud operation", "an Elementwise with one"])
def test_an_object_that_prints_a_tick_when_touched_gets_a_cross_and_no_tick(capsys, make) -> None:
    thing = make()
    capsys.readouterr()  # what it printed while being made is the learner's own cell, not the check
    verdicts = [kernel_checks.check_silu(thing), kernel_checks.check_scale(thing),
                kernel_checks.check_tiled_matmul(thing)]
    out = capsys.readouterr().out
    assert not any(v.passed for v in verdicts) and all(v.attempted for v in verdicts)
    assert "✅" not in out, out
    lines = out.splitlines()
    assert len(lines) == 3 and all(line.startswith("❌ ") for line in lines), lines
    if make is Loud:
        assert all(line.endswith("got Loud") for line in lines), lines


def test_what_is_printed_while_a_check_runs_is_shown_after_the_verdict_and_labelled(capsys) -> None:
    def loud_reference(x):
        print(FAKE_TICK)
        return kernel_checks.silu_reference(x)

    assert kernel_checks.check_elementwise(SILU, loud_reference, lambda n: (np.ones(n, np.float32),), "silu", n=3)
    lines = out_lines(capsys)
    assert lines[0].startswith("✅ silu: ") and lines[1].startswith("   Not checked: ")
    assert lines[2] == "   Printed while the check ran (not by the check):"
    assert lines[3:] == [f"   | {FAKE_TICK}"] * 3, lines
    assert not any(line.startswith(FAKE_TICK) for line in lines)


# ---------------------------------------------------------------- 5. #include of a file of this machine


INCLUDES = [
    '#include "/etc/passwd"', "#include </etc/passwd>", "# include \"/etc/passwd\"", '%:include "/etc/passwd"',
    '#/* a comment */include "/etc/passwd"', '#inc\\\nlude "/etc/passwd"', '#include_next "/etc/passwd"',
    '#import "/etc/passwd"', '#embed "/etc/passwd"', '??=include "/etc/passwd"',
    "#include <cuda/std/../../../etc/passwd>",
    '#define SECRET "/etc/passwd"\n#include SECRET', '#include "cuda_fp16.h"',
    'const float* s = R"x(" /*)x";\n#include "/etc/passwd"\n// */',
    'const float* s = "/*";\n#include "/etc/passwd"\n// */',
    '#include \\ \n"/etc/passwd"',
    'int n = 1\'0 + \'/*\';\n#include "/etc/passwd"\n// */',  # a digit separator, then a character literal
    'auto s = R""( /* )"";\n#include "/etc/passwd"\n// */',  # a raw string whose delimiter is a quote
    '#\\u0069nclude "/etc/passwd"',
]


@pytest.mark.parametrize("line", INCLUDES)
def test_an_include_of_anything_but_cudas_headers_is_refused_before_compiling(capsys, line) -> None:
    assert not kernel_checks.check_scale(line + "\n" + SCALE)
    out = capsys.readouterr().out
    assert out.startswith("❌ scale with a bounds check: #") and "is refused" in out, out
    assert "<cuda_fp16.h>" in out and PASSWD not in out, out
    assert nvrtc.refused_include(line + "\n" + SCALE)
    if nvrtc.available():
        with pytest.raises(nvrtc.RefusedInclude, match="is refused"):
            nvrtc.compile_source(line + "\n" + SCALE, "sm_75", "scale.cu")


def test_an_include_in_an_elementwise_or_a_tiled_matmul_is_refused_too(capsys) -> None:
    operation = cuda.Elementwise("float32 x", "float32 y", 'y = x;\n#include "/etc/passwd"', "silu")
    preamble = cuda.Elementwise("float32 x", "float32 y", "y = x;", "silu", preamble='#include "/etc/passwd"')
    verdicts = [kernel_checks.check_silu(operation), kernel_checks.check_silu(preamble),
                kernel_checks.check_tiled_matmul('#include "/etc/passwd"\n' + _solution("matmul_tiled_rect"))]
    lines = out_lines(capsys)
    assert not any(verdicts) and len(lines) == 3, lines
    assert all(line.startswith(("❌ silu: #include", "❌ tiled matmul: #include")) for line in lines), lines
    assert all('#include "/etc/passwd" is refused' in line and PASSWD not in line for line in lines)


@pytest.mark.parametrize("line", ["#include <cuda_fp16.h>", "#  include <cuda_bf16.h>  // half and bfloat16",
                                  "#include <cuda/std/cstdint>", "#include <cmath>",
                                  "#define TILE 16\n#pragma unroll",
                                  '// an #include "x" in a comment is only a comment'])
def test_cudas_own_headers_and_other_directives_are_not_refused(line) -> None:
    assert nvrtc.refused_include(line + "\n" + SCALE) is None


def test_compile_report_refuses_the_include_too(monkeypatch) -> None:
    monkeypatch.setattr(nvrtc, "available", lambda: True)
    with pytest.raises(nvrtc.RefusedInclude, match=r'#include "/etc/passwd" is refused: .*<cuda_fp16\.h>'):
        cuda.compile_report('#include "/etc/passwd"\n' + SCALE, "scale.cu")


def test_nvrtcs_messages_about_other_files_are_not_shown() -> None:
    log = ('/etc/hostname(1): error: this declaration has no storage class or type specifier\n  SECRET\n  ^\n\n'
           'scale.cu(2): error: expected a ";"\n  extern "C" __global__ void k(float* x){ x[0]=1; }\n  ^\n\n'
           'silu (operation)(1): warning: unused\n  y = x\n  ^\n\n'
           '2 errors detected in the compilation of "scale.cu".\n')
    shown = nvrtc.own_messages(log, {"scale.cu", "silu (operation)"})
    assert "SECRET" not in shown and "/etc/hostname" not in shown
    assert 'scale.cu(2): error: expected a ";"' in shown and "silu (operation)(1): warning" in shown
    assert "(1 message about another file not shown" in shown
    assert shown.rstrip().endswith('2 errors detected in the compilation of "scale.cu".')


@needs_nvrtc
def test_a_header_found_on_an_include_path_is_never_quoted(tmp_path) -> None:
    (tmp_path / "cuda_fp16.h").write_text("SECRET LINE OF A HEADER\n")
    with pytest.raises(nvrtc.CompileError) as info:
        nvrtc.compile_source("#include <cuda_fp16.h>\n" + SCALE, "sm_75", "scale.cu", options=(f"-I{tmp_path}",))
    assert "SECRET" not in str(info.value) and "SECRET" not in info.value.log
    assert "not shown" in str(info.value)


RUNAWAYS = {
    "an endless loop with a heavy body": "float acc = 0.0f;\n    while (true) { acc = acc * 1.0001f + x[0] * factor "
                                        "+ acc * acc * 0.5f - acc; }\n    if (i < n) out[i] = acc;",
    "a function that calls itself twice": "if (i < n) out[i] = factor * x[i] * twice(0) + 0.0f * twice(40);",
}


@pytest.mark.parametrize("body", RUNAWAYS.values(), ids=RUNAWAYS.keys())
def test_a_runaway_kernel_gets_a_cross_within_the_checks_time_limit(body, monkeypatch, capsys) -> None:
    monkeypatch.setattr(kernel_checks, "RUN_SECONDS", 0.5)  # the limit itself (5 s) is what a learner waits at most
    source = ("__device__ float twice(int n) { return n == 0 ? 1.0f : twice(n - 1) + twice(n - 1); }\n"
              'extern "C" __global__ void scale(const float *x, float *out, float factor, int n) {\n'
              f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {body}\n}}")
    verdict = kernel_checks.check_scale(source)
    assert not verdict and verdict.attempted
    assert "took longer than 0.5 s for one run" in capsys.readouterr().out
