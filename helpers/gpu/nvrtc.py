"""Compile CUDA C with NVIDIA's runtime compiler (NVRTC), with or without a GPU.

NVRTC is a plain shared library: it needs no GPU and no driver, so every machine that has it (the pip package
nvidia-cuda-nvrtc-cu12 for CUDA 12 or nvidia-cuda-nvrtc for CUDA 13, on Linux and Windows) can compile a
learner's kernel and show NVIDIA's own error messages. We call it through ctypes; on a GPU, CuPy compiles the
same sources with its own copy of NVRTC.

    result = compile_source(source, arch="sm_75", name="vector_add.cu")   # raises CompileError with the log
    available()                                                           # False, with why(), when absent

A source may #include only CUDA's own headers (ALLOWED_INCLUDES): anything else is refused before NVRTC runs
(RefusedInclude), since NVRTC would read any file of this machine and quote it in its messages. The messages
NVRTC gives about any file but the source itself are left out of the log.

Every compile is the reference compile, what CuPy compiles on a GPU: CUDA's headers (the runtime's, cooperative
groups, cuda_fp16.h, CCCL's nv/target, crt/mma.h) from NVIDIA's pip wheels on the include path
(`header_folders()`), and the flag CuPy adds for NVRTC 12 and later, --device-as-default-execution-space
(`reference_options()`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The architectures every kernel of the series is compiled for: the T4 (Colab's free GPU) and Hopper (H100).
TARGET_ARCHS = ("sm_75", "sm_90")
INSTALL_HINT = ("pip install nvidia-cuda-nvrtc-cu12 (or nvidia-cuda-nvrtc for CUDA 13; Linux or Windows, NVIDIA "
                "publishes no macOS build), then restart")


class NvrtcUnavailable(RuntimeError):
    """NVRTC could not be loaded here; the message says what was tried and how to install it."""


class CompileError(RuntimeError):
    """NVRTC rejected a source. `log` is NVRTC's log (its messages about the source's own lines); the message
    shows its errors as `file:line: text`."""

    def __init__(self, name: str, arch: str, log: str) -> None:
        self.name, self.arch, self.log = name, arch, log
        super().__init__(f"{name} does not compile for {arch}:\n{readable_log(log)}")


class RefusedInclude(CompileError):
    """The source #includes something other than CUDA's own headers: refused before NVRTC could read it."""

    def __init__(self, name: str, why: str) -> None:
        RuntimeError.__init__(self, f"{name} is not compiled: {why}")
        self.name, self.arch, self.log = name, "", why


@dataclass(frozen=True)
class Compiled:
    """A source NVRTC compiled: the architecture, the machine code's size and the log (warnings, if any)."""

    name: str
    arch: str
    cubin_bytes: int
    log: str

    def __str__(self) -> str:
        warned = f", with warnings:\n{readable_log(self.log)}" if self.log.strip() else ""
        return f"{self.name}: compiled for {self.arch} ({self.cubin_bytes:,} bytes of machine code){warned}"


_LOG_LINE = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\): ", re.MULTILINE)


def readable_log(log: str) -> str:
    """NVRTC's log with `file(12): error: ...` rewritten as `file:12: error: ...`, the form editors link to."""
    return _LOG_LINE.sub(lambda m: f"{m['file']}:{m['line']}: ", log).strip()


# --------------------------------------------------------------------------------------------------------------
# What a source may #include, and what of NVRTC's log is shown

#: The headers a source may #include: CUDA's own (half and bfloat16 types, the runtime's declarations,
#: cooperative groups, WMMA's mma.h) and C's maths and fixed-width integers (NVRTC has no copy of those: it says
#: so), plus <cooperative_groups/NAME.h>, libcu++'s <cuda/NAME> and <cuda/std/NAME>. The series' own sources
#: include none of them.
ALLOWED_INCLUDES = ("cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h", "cuda_runtime_api.h",
                    "device_launch_parameters.h", "cooperative_groups.h", "mma.h", "math.h", "cmath", "stdint.h",
                    "cstdint")
_ALLOWED_TARGET = re.compile(rf"<(?:{'|'.join(map(re.escape, ALLOWED_INCLUDES))}"
                             r"|cooperative_groups/[A-Za-z_]\w*\.h|cuda/(?:std/)?[A-Za-z_]\w*)>")
#: Directives that read a file: #include and its relatives (the digraph %: is a #), and a name spelt with a
#: universal character name (\\u0069nclude), which no header of CUDA's needs.
_READS_A_FILE = re.compile(r"(?:#|%:)[ \t\f\v\r]*((?:include_next|include|import|embed)(?!\w)|\\[uU])(.*)")
#: What the preprocessor skips when it looks for directives: comments (a space), and the tokens that may hold
#: "/*", "//" or a quote without starting a comment or a literal: raw strings (their lines become empty ones),
#: numbers (1'000 has a digit separator, not a character literal), strings and character literals.
_LEXEMES = re.compile(r'''(?<!\w)(?:u8|[uUL])?R"([^()\\\s]{0,16})\((.*?)\)\1"'''  # a raw string literal
                      r"|//[^\n]*"  # a line comment
                      r"|/\*.*?(?:\*/|\Z)"  # a block comment
                      r"|(?<!\w)\.?\d(?:[eEpP][+-]|'?[\w.])*"  # a number
                      r'''|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?''', re.S)  # a string or character literal


def _directive_text(source: str, trigraphs: bool, spaced_splices: bool) -> list[str]:
    """The source's lines as the preprocessor reads its directives: ??= and ??/ read as # and \\ (if
    `trigraphs`), lines joined at a backslash before the newline (also with spaces between, if
    `spaced_splices`), each comment one space."""
    if trigraphs:
        source = source.replace("??=", "#").replace("??/", "\\")
    source = re.sub(r"\\[ \t]*\r?\n" if spaced_splices else r"\\\r?\n", "", source)

    def skip(match: re.Match[str]) -> str:
        text = match.group(0)
        if text.startswith(("//", "/*")):
            return " "
        return '""' + "\n" * text.count("\n") if match.group(2) is not None else text
    return _LEXEMES.sub(skip, source).split("\n")


def refused_include(source: str) -> str | None:
    """Why `source` may not be compiled (an #include of anything but ALLOWED_INCLUDES), or None.

    Read as every compiler might read it (with and without trigraphs, backslash-space-newline joining lines or
    not), an #include anywhere on a line counts, even one in a string: refusing too much is the safe side.
    """
    for trigraphs in (False, True):
        for spaced in (False, True):
            for line in _directive_text(source, trigraphs, spaced):
                found = _READS_A_FILE.search(line)
                if found and not (found[1] == "include" and _ALLOWED_TARGET.fullmatch(found[2].strip())):
                    shown = "#" + found[0].lstrip("#%:").strip()  # as written, the digraph %: shown as #
                    return (f"{shown[:80]} is refused: a kernel may include only CUDA's own headers: "
                            f"{', '.join(f'<{h}>' for h in ALLOWED_INCLUDES)}, <cooperative_groups/...>, "
                            "<cuda/...> and <cuda/std/...>")
    return None


def _own_files(source: str, name: str) -> set[str]:
    """The file names NVRTC gives the source's own lines: `name`, and those its #line directives set."""
    return {name, *re.findall(r'^[ \t]*#[ \t]*line[ \t]+\d+[ \t]+"([^"\n]*)"', source, re.M)}


def own_messages(log: str, own: set[str]) -> str:
    """NVRTC's log without its messages about any file but `own` ones: those quote that file's lines."""
    kept: list[str] = []
    hidden, showing = 0, True
    for line in log.split("\n"):
        header = _LOG_LINE.match(line)
        if header and not line[:1].isspace():
            showing = header["file"] in own
            hidden += not showing
        elif line and not line[:1].isspace():
            showing = True  # NVRTC's summary ("2 errors detected in the compilation of ...")
        if showing:
            kept.append(line)
    if hidden:
        kept.insert(0, f"({hidden} message{'s' * (hidden > 1)} about another file not shown: only your own "
                       "source's lines are quoted)")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept))


#: Where NVIDIA's pip wheels put NVRTC under the `nvidia` namespace package: CUDA 12's nvidia-cuda-nvrtc-cu12
#: in cuda_nvrtc/, CUDA 13's nvidia-cuda-nvrtc in cu13/.
WHEEL_FOLDERS = ("cuda_nvrtc", "cu13")


#: CUDA's headers that the reference compile puts on NVRTC's include path, from NVIDIA's pip wheels, by NVRTC's
#: major version: what each part holds (a file that marks it), the folders under the `nvidia` namespace package
#: where a wheel puts it (first found wins), and the wheels. CUDA 12's crt/mma.h comes with nvidia-cuda-nvcc-cu12
#: (40 MB, preinstalled on Colab's GPU runtime) or, failing that, CUDA 13's 166 KB nvidia-cuda-crt, whose mma.h
#: NVRTC 12 compiles too (tests/test_nvrtc.py compiles WMMA kernels with it).
HEADER_WHEELS: dict[int, tuple[tuple[str, tuple[str, ...], str], ...]] = {
    12: (("cuda_runtime.h", ("cuda_runtime/include",), "nvidia-cuda-runtime-cu12"),
         ("nv/target", ("cuda_cccl/include",), "nvidia-cuda-cccl-cu12"),
         ("crt/mma.h", ("cuda_nvcc/include", "cu13/include"), "nvidia-cuda-crt")),
    13: (("cuda_runtime.h", ("cu13/include",), "nvidia-cuda-runtime"),
         ("nv/target", ("cu13/include/cccl", "cu13/include"), "nvidia-cuda-cccl"),
         ("crt/mma.h", ("cu13/include",), "nvidia-cuda-crt")),
}
#: The flag CuPy adds when it compiles with NVRTC 12 or later: a function with no __device__ or __host__ is a
#: device function (cupy/cuda/compiler.py, compile_using_nvrtc).
CUPY_FLAGS = ("--device-as-default-execution-space",)


def _nvidia_roots() -> list[Path]:
    """The folders of the `nvidia` namespace package that NVIDIA's pip wheels install into."""
    try:
        import nvidia  # a namespace package: no __file__, only __path__
    except ImportError:
        return []
    return [Path(path) for path in nvidia.__path__]


def _major() -> int:
    """NVRTC's major version here (12 when it is absent: the headers then serve no compile)."""
    return int(version().split(".")[0]) if available() else 12


@lru_cache(maxsize=1)
def _headers() -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The header folders found for this NVRTC's CUDA version, and the wheels of the parts not found."""
    parts = HEADER_WHEELS.get(_major(), HEADER_WHEELS[12])
    found: list[Path] = []
    missing = []
    for marker, folders, wheel in parts:
        place = next((root / folder for folder in folders for root in _nvidia_roots()
                      if (root / folder / marker).exists()), None)
        if place is None:
            missing.append(wheel)
        elif place not in found:
            found.append(place)
    return tuple(found), tuple(missing)


def header_folders() -> tuple[Path, ...]:
    """The folders of CUDA's headers the reference compile includes: the runtime's, CCCL's and crt's."""
    return _headers()[0]


def missing_headers() -> str:
    """What of CUDA's headers is missing here and how to install it, or '' when every part is there."""
    missing = _headers()[1]
    return f"CUDA's headers are not all installed here: pip install {' '.join(missing)}" if missing else ""


def reference_options() -> tuple[str, ...]:
    """NVRTC's options for the reference compile: CuPy's flag and an -I for each of CUDA's header folders."""
    return (*CUPY_FLAGS, *(f"-I{folder}" for folder in header_folders()))


def _candidates() -> list[str]:
    """Where libnvrtc may be: NVIDIA's pip wheels (CUDA 12, then 13) first, then the system loader's names."""
    found: list[str] = []
    roots = [path / folder for folder in WHEEL_FOLDERS for path in _nvidia_roots()]
    patterns = ("nvrtc64_*.dll",) if sys.platform == "win32" else ("libnvrtc.so*",)
    for root in roots:
        for folder in (root / "lib", root / "bin"):
            found += [str(p) for pattern in patterns for p in sorted(folder.glob(pattern))
                      if "builtins" not in p.name and ".alt." not in p.name]
    system = ctypes.util.find_library("nvrtc")
    found += [system] if system else []
    found += ["libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so"] if sys.platform != "win32" else []
    return found


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | str:
    """The loaded NVRTC, or a string saying why it could not be loaded."""
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append(f"{path} ({exc})")
            continue
        _declare(lib)
        return lib
    return "NVRTC (NVIDIA's CUDA C compiler library) was not found" + (f"; tried {', '.join(tried)}" if tried else "")


def _declare(lib: ctypes.CDLL) -> None:
    p, size, integer, text = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
    signatures = {
        "nvrtcVersion": [ctypes.POINTER(integer), ctypes.POINTER(integer)],
        "nvrtcCreateProgram": [ctypes.POINTER(p), text, text, integer, p, p],
        "nvrtcCompileProgram": [p, integer, ctypes.POINTER(text)],
        "nvrtcAddNameExpression": [p, text],
        "nvrtcGetProgramLogSize": [p, ctypes.POINTER(size)],
        "nvrtcGetProgramLog": [p, ctypes.c_char_p],
        "nvrtcGetCUBINSize": [p, ctypes.POINTER(size)],
        "nvrtcGetCUBIN": [p, ctypes.c_char_p],
        "nvrtcDestroyProgram": [ctypes.POINTER(p)],
        "nvrtcGetNumSupportedArchs": [ctypes.POINTER(integer)],
        "nvrtcGetSupportedArchs": [ctypes.POINTER(integer)],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, integer
    lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [integer], text


def available() -> bool:
    """True when NVRTC can be loaded here."""
    return not isinstance(_library(), str)


def why() -> str:
    """Why NVRTC is unavailable and how to install it, or '' when it is available."""
    lib = _library()
    return f"{lib}. To get it: {INSTALL_HINT}" if isinstance(lib, str) else ""


_told_why: list[bool] = []  # whether missing_note() has said why() in this session


def missing_note() -> str:
    """why() the first time it is asked in a session, then a short pointer back to it (a chapter says it once)."""
    if _told_why:
        return "NVRTC is missing here (see above)."
    _told_why.append(True)
    return why()


def _lib() -> ctypes.CDLL:
    lib = _library()
    if isinstance(lib, str):
        raise NvrtcUnavailable(why())
    return lib


def _check(lib: ctypes.CDLL, code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(code).decode()} (code {code})")


def version() -> str:
    """NVRTC's version, e.g. '12.9'; raises NvrtcUnavailable (with how to install it) when it is missing."""
    lib = _lib()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
    return f"{major.value}.{minor.value}"


@lru_cache(maxsize=1)
def supported_archs() -> tuple[str, ...]:
    """The GPU architectures this NVRTC compiles for, as 'sm_75', 'sm_90', ..."""
    lib = _lib()
    count = ctypes.c_int()
    _check(lib, lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)), "list of architectures")
    archs = (ctypes.c_int * count.value)()
    _check(lib, lib.nvrtcGetSupportedArchs(archs), "list of architectures")
    return tuple(f"sm_{a}" for a in archs)


def check_arch(arch: str) -> str:
    """`arch` if this NVRTC compiles for it; a ValueError listing what it accepts otherwise."""
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"archs: each arch must look like 'sm_75' (T4) or 'sm_90' (H100); got {arch!r}")
    accepted = supported_archs()
    if arch.rstrip("abcdefghijklmnopqrstuvwxyz") not in accepted:
        raise ValueError(f"NVRTC {version()} cannot compile for {arch}; it accepts {', '.join(accepted)}")
    return arch


def compile_source(source: str, arch: str = "sm_75", name: str = "kernel.cu",
                   options: tuple[str, ...] = (), name_expressions: tuple[str, ...] = ()) -> Compiled:
    """Compile CUDA C `source` to machine code for `arch`; raise CompileError carrying NVRTC's log if it fails.

    `name` is the file name NVRTC puts in front of each message (`name:12: error: ...`). An #include of anything
    but ALLOWED_INCLUDES raises RefusedInclude before NVRTC runs. `name_expressions` instantiate templates as
    CuPy's RawModule(name_expressions=[...]) does ('scale<float, 128>'). `options` come before the reference
    compile's own (reference_options()), so an -I of the caller's is searched first.
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source must be a non-empty string of CUDA C to compile; got {type(source).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a file name such as 'kernel.cu' (NVRTC puts it in its messages); got "
                         f"{name!r:.40}")
    with _program(source, arch, name, name_expressions, options) as (lib, program, log):
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "machine code size")
        return Compiled(name, arch, int(size.value), log)


@contextmanager
def _program(source: str, arch: str, name: str, expressions: Sequence[str],
             options: Sequence[str]) -> Iterator[tuple[Any, Any, str]]:
    """NVRTC's program for `source`, compiled for `arch` (`options` before the reference compile's own, each name
    expression instantiated): yields (the library, the program, its log) and destroys the program on leaving. A
    refused #include raises RefusedInclude before NVRTC runs; a failed compile raises CompileError with the log."""
    refused = refused_include(source)
    if refused:
        raise RefusedInclude(name, refused)
    lib = _lib()
    check_arch(arch)
    program = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None),
           "create program")
    try:
        for expression in expressions:
            _check(lib, lib.nvrtcAddNameExpression(program, expression.encode()), f"name expression {expression}")
        flags = [f"--gpu-architecture={arch}", *options, *reference_options()]
        status = lib.nvrtcCompileProgram(program, len(flags), (ctypes.c_char_p * len(flags))(*map(str.encode, flags)))
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "log size")
        text = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetProgramLog(program, text), "log")
        log = own_messages(text.value.decode(errors="replace"), _own_files(source, name))
        if status != 0:
            if "cannot open source file" in log and missing_headers():
                log += f"\n({missing_headers()}, then restart)"
            raise CompileError(name, arch, log or lib.nvrtcGetErrorString(status).decode())
        yield lib, program, log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def compile_for_targets(source: str, name: str = "kernel.cu",
                        archs: str | tuple[str, ...] = TARGET_ARCHS) -> list[Compiled]:
    """Compile `source` for every architecture in `archs` (the T4's and the H100's by default; one may be a str)."""
    return [compile_source(source, arch, name) for arch in ((archs,) if isinstance(archs, str) else archs)]


@dataclass(frozen=True)
class Build:
    """What NVRTC made of a source for one architecture: the machine code (cubin), the log of its assembler
    (`-Xptxas -v`: registers, spills and shared memory per kernel) and each name expression's mangled name."""

    arch: str
    version: str
    cubin: bytes
    log: str
    lowered: dict[str, str]


def build(source: str, arch: str = "sm_75", name: str = "kernel.cu", names: tuple[str, ...] = ()) -> Build:
    """Compile `source` for `arch` with the assembler's report on (-Xptxas -v) and keep the cubin: what
    helpers.gpu.compiled reads registers and machine instructions from. `names`: template instances to make, as
    compile_source's name_expressions. Refuses what compile_source refuses; raises CompileError with the log."""
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source must be a non-empty string of CUDA C to compile; got {type(source).__name__}")
    with _program(source, arch, name, names, ("-Xptxas", "-v")) as (lib, program, log):  # as CuPy compiles it
        lib.nvrtcGetLoweredName.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        lib.nvrtcGetLoweredName.restype = ctypes.c_int
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "machine code size")
        cubin = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetCUBIN(program, cubin), "machine code")
        lowered = {}
        for expression in names:
            mangled = ctypes.c_char_p()
            _check(lib, lib.nvrtcGetLoweredName(program, expression.encode(), ctypes.byref(mangled)), "lowered name")
            lowered[expression] = (mangled.value or b"").decode()
        return Build(arch, version(), cubin.raw, log, lowered)
