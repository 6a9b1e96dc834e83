"""Rewrite tests/colab/pins-tpu.txt from Google's published list of what Colab's TPU runtime has installed.

    git clone https://github.com/googlecolab/backend-info /tmp/backend-info
    python tests/colab/refresh_pins.py /tmp/backend-info

Every pin is kept exactly, less the lines that cannot be installed from PyPI on a plain Linux machine (each
named in the file with its reason). The TPU list is the harshest: no TensorFlow, no CuPy, no NVRTC.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PINS = Path(__file__).resolve().parent / "pins-tpu.txt"
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


def _name(line: str) -> str:
    return re.split(r"[=@ ]", line, maxsplit=1)[0].strip().lower().replace("_", "-")


def _show(repo: Path, path: str) -> str:
    """A file of the repository's newest commit (the clone may be bare or have a work tree)."""
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout


def pins(freeze: str, python: str, commit: str, date: str) -> str:
    """The pins file's text for a `pip freeze` listing."""
    kept, left_out = [], []
    for line in (raw.strip() for raw in freeze.splitlines()):
        if not line or line.startswith("#"):
            continue
        if " @ " in line:
            left_out.append(f"{line.split(' @ ')[0]} (installed on Colab from {line.split(' @ ')[1].split('#')[0]})")
        elif _name(line) in NOT_INSTALLABLE:
            left_out.append(f"{line} ({NOT_INSTALLABLE[_name(line)]})")
        else:
            kept.append(line)
    header = [
        "# Colab's TPU runtime, as Google publishes it: pip-freeze.tpu.txt of",
        f"# {SOURCE} at commit {commit} ({date}).",
        "# Refresh: git clone https://github.com/googlecolab/backend-info /tmp/backend-info && "
        "python tests/colab/refresh_pins.py /tmp/backend-info",
        f"# python: {python}",
        "# Left out, because they cannot be installed from PyPI on a plain Linux machine:",
        *(f"#   {item}" for item in left_out),
    ]
    return "\n".join(header + kept) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    repo = Path(argv[0])
    commit, date = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%H %cs"], capture_output=True,
                                  text=True, check=True).stdout.split()
    found = re.search(r"^Python (\d+\.\d+)", _show(repo, "os-info-tpu.txt"), re.MULTILINE)
    if not found:
        print(f"{repo}/os-info-tpu.txt names no Python version", file=sys.stderr)
        return 1
    PINS.write_text(pins(_show(repo, "pip-freeze.tpu.txt"), found.group(1), commit, date), encoding="utf-8")
    print(f"wrote {PINS} from {SOURCE} at {commit[:12]} ({date}), Python {found.group(1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
