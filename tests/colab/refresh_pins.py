"""Rewrite tests/colab/pins-tpu.txt and pins-gpu.txt from Google's published lists of what Colab's runtimes have.

    git clone https://github.com/googlecolab/backend-info /tmp/backend-info
    python tests/colab/refresh_pins.py /tmp/backend-info

pins-tpu.txt keeps every pin of the TPU runtime exactly, less the lines that cannot be installed from PyPI on a
plain Linux machine (each named in the file with its reason). The TPU list is the harshest: no TensorFlow, no
CuPy, no NVRTC. pins-gpu.txt holds, at the GPU runtime's versions, the packages both runtimes have (the same
base) and, of the GPU runtime's own, only those the series imports and what their wheels require (GPU_SERIES);
the other GPU-only packages (TensorFlow, RAPIDS, NVIDIA's CUDA libraries but NVRTC, ...) are named as left out.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINS = HERE / "pins-tpu.txt"
GPU_PINS = HERE / "pins-gpu.txt"
SOURCE = "https://github.com/googlecolab/backend-info"
#: Pinned packages that are on PyPI but cannot be installed on a plain Linux machine, and why.
NOT_INSTALLABLE = {
    "libtpu": "the TPU runtime library; without it JAX runs on the CPU, as on a CPU runtime",
    "python-apt": "Ubuntu's own package, not on PyPI",
    "gdal": "builds only against the system GDAL library of Colab's image",
    "pygobject": "builds only against the system GObject libraries of Colab's image",
    "dbus-python": "builds only against the system D-Bus library of Colab's image",
    "rpy2": "builds only against the R that Colab's image has",
}
#: The GPU runtime's own packages that the series uses, and the ones their wheels require (Requires-Dist).
GPU_SERIES = {
    "cupy-cuda12x": "CuPy: chapters 03, 05, 06 and 07",
    "cuda-pathfinder": "required by cupy-cuda12x 14",
    "jax-cuda12-plugin": "JAX's CUDA backend; without a GPU JAX runs on the CPU",
    "jax-cuda12-pjrt": "required by jax-cuda12-plugin",
    "nvidia-cuda-nvrtc-cu12": "NVIDIA's runtime compiler: chapter 03 compiles CUDA C with it",
    "nvidia-cuda-runtime-cu12": "CUDA's headers NVRTC compiles with: cuda_fp16.h, cooperative groups, mma.h",
    "nvidia-cuda-cccl-cu12": "CCCL's headers (nv/target) that CUDA's headers include",
    "nvidia-cuda-nvcc-cu12": "crt/mma.h, which WMMA's mma.h includes",
}


def _name(line: str) -> str:
    return re.split(r"[=@ ]", line, maxsplit=1)[0].strip().lower().replace("_", "-")


def _lines(freeze: str) -> list[str]:
    """The requirement lines of a `pip freeze` listing (no comments, no blank lines)."""
    return [line for line in (raw.strip() for raw in freeze.splitlines()) if line and not line.startswith("#")]


def _why_not(line: str) -> str | None:
    """Why `line` cannot be installed from PyPI on a plain Linux machine, or None if it can."""
    if " @ " in line:
        return f"installed on Colab from {line.split(' @ ')[1].split('#')[0]}"
    if _name(line) in NOT_INSTALLABLE:
        return NOT_INSTALLABLE[_name(line)]
    if "+" in line.partition("==")[2]:
        return f"a build from its maker's own index, +{line.partition('+')[2]}, not on PyPI"
    return None


def _split(lines: list[str]) -> tuple[list[str], list[str]]:
    """`lines` as (installable pins, 'pin (why not)' for the others)."""
    kept = [line for line in lines if _why_not(line) is None]
    left_out = [f"{line.split(' @ ')[0]} ({_why_not(line)})" for line in lines if _why_not(line) is not None]
    return kept, left_out


def _header(image: str, python: str, commit: str, date: str) -> list[str]:
    return [
        f"# Colab's {image.upper()} runtime, as Google publishes it: pip-freeze.{image}.txt of",
        f"# {SOURCE} at commit {commit} ({date}).",
        "# Refresh: git clone https://github.com/googlecolab/backend-info /tmp/backend-info && "
        "python tests/colab/refresh_pins.py /tmp/backend-info",
        f"# python: {python}",
    ]


def _not_installable(left_out: list[str]) -> list[str]:
    return ["# Left out, because they cannot be installed from PyPI on a plain Linux machine:",
            *(f"#   {item}" for item in left_out)]


def pins(freeze: str, python: str, commit: str, date: str) -> str:
    """The pins file's text for the TPU runtime's `pip freeze` listing."""
    kept, left_out = _split(_lines(freeze))
    return "\n".join(_header("tpu", python, commit, date) + _not_installable(left_out) + kept) + "\n"


def gpu_pins(freeze: str, tpu_freeze: str, python: str, commit: str, date: str) -> str:
    """The pins file's text for the GPU runtime's `pip freeze` listing: the base it shares with the TPU runtime's
    `tpu_freeze` and the GPU_SERIES packages, at the GPU runtime's versions; every other package named."""
    shared = {_name(line) for line in _lines(tpu_freeze)}
    lines = _lines(freeze)
    kept, left_out = _split([line for line in lines if _name(line) in shared or _name(line) in GPU_SERIES])
    unused = sorted((line.split(" @ ")[0].split("==")[0] for line in lines
                     if _name(line) not in shared and _name(line) not in GPU_SERIES), key=str.lower)
    missing = sorted(set(GPU_SERIES) - {_name(line) for line in kept})
    if missing:
        raise ValueError(f"pip-freeze.gpu.txt has no installable {', '.join(missing)}: update GPU_SERIES")
    header = _header("gpu", python, commit, date) + [
        "# Only what the series runs on: every package the TPU runtime has too (the base of pins-tpu.txt), at the",
        "# GPU runtime's versions, and of the GPU runtime's own packages those the series uses:",
        *(f"#   {name} ({why})" for name, why in GPU_SERIES.items()),
        *_not_installable(left_out),
        f"# Left out, the GPU runtime's other {len(unused)} packages: the series imports none of them (among them",
        "# TensorFlow, RAPIDS and NVIDIA's CUDA libraries but NVRTC):",
        *textwrap.wrap(", ".join(unused), 116, initial_indent="#   ", subsequent_indent="#   ",
                       break_on_hyphens=False),
    ]
    return "\n".join(header + kept) + "\n"


def _show(repo: Path, path: str) -> str:
    """A file of the repository's newest commit (the clone may be bare or have a work tree)."""
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout


def _python(repo: Path, image: str) -> str:
    """The Python version (3.13) that the repository's os-info-<image>.txt names."""
    found = re.search(r"^Python (\d+\.\d+)", _show(repo, f"os-info-{image}.txt"), re.MULTILINE)
    if not found:
        raise ValueError(f"{repo}/os-info-{image}.txt names no Python version")
    return found.group(1)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    repo = Path(argv[0])
    commit, date = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%H %cs"], capture_output=True,
                                  text=True, check=True).stdout.split()
    try:
        tpu, gpu = _show(repo, "pip-freeze.tpu.txt"), _show(repo, "pip-freeze.gpu.txt")
        texts = {PINS: pins(tpu, _python(repo, "tpu"), commit, date),
                 GPU_PINS: gpu_pins(gpu, tpu, _python(repo, "gpu"), commit, date)}
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
        python = re.search(r"^# python: (.*)$", text, re.MULTILINE).group(1)
        print(f"wrote {path} from {SOURCE} at {commit[:12]} ({date}), Python {python}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
