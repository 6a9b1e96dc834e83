"""Shared fixtures: a fake clock for deterministic timing, a hand-made CPU, and fresh backend probes; and the
--solutions option, without which the tests marked `solutions` (each a whole chapter run again) are left out."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

# Before anything can start JAX: on a GPU, JAX would otherwise take 75% of its memory for this test session and
# leave CuPy (the GPU suite, the chapters it runs) a quarter. Chapters 03 and 05 set the same for the same reason.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import pytest  # noqa: E402

from helpers.core import backend  # noqa: E402
from helpers.measuring.cpu import CPUInfo, Sourced


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--solutions", action="store_true",
                     help="also run every chapter with its exercises' solutions filled in (tests marked "
                          "`solutions`; CI runs them in tests/colab/run.py instead)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `solutions` run only with --solutions: each runs a whole chapter again, which CI's Colab run
    already does with the solutions filled in (nbval runs every chapter as stored)."""
    if config.getoption("--solutions"):
        return
    left_out = [item for item in items if item.get_closest_marker("solutions")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker("solutions")]


#: For tests of the real detection on a machine without an NVIDIA GPU (this project's CI: CuPy installed, no GPU).
without_gpu = pytest.mark.skipif(backend._nvidia_gpu_present(), reason="checks what happens without an NVIDIA GPU")


class FakeClock:
    """A clock that only moves when told to: benchmark(clock=...) reads it, the timed function advances it."""

    def __init__(self, events: list | None = None) -> None:
        self.now = 0.0
        self.reads = 0
        self.events = events  # when given, every read is logged there as ("clock", time)

    def __call__(self) -> float:
        self.reads += 1
        if self.events is not None:
            self.events.append(("clock", self.now))
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def scripted(clock: FakeClock, durations, then: float | None = None):
    """A function whose calls 'take' the given fake seconds in turn (then `then` each, or fail if None)."""
    script = iter(durations)
    calls: list[float] = []

    def fn(*args):
        seconds = next(script, then)
        if seconds is None:
            raise AssertionError(f"called more often than scripted ({len(calls) + 1} calls)")
        clock.advance(seconds)
        calls.append(seconds)

    fn.calls = calls
    return fn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_cpu() -> CPUInfo:
    """2 cores x 3 GHz x 2 FMA units x 8 fp32 lanes (AVX2) x 2 = 192 GFLOP/s, 20 GB/s."""
    return CPUInfo(
        model="Test CPU 9000", arch="x86_64", logical_cpus=4, cores=Sourced(2, "test cores"), simd="AVX2",
        simd_bits=256, fma_units=Sourced(2, "test FMA units"), clock_hz=Sourced(3e9, "test clock"),
        nominal_clock_hz=Sourced(2.5e9, "test nominal"), peak_bandwidth=Sourced(20e9, "test bandwidth"),
    )


@pytest.fixture
def cpu() -> CPUInfo:
    """Round numbers for roofline tests: 2 cores x 2.5 GHz x 2 FMA x 8 lanes x 2 = 160 GFLOP/s fp32, 80 fp64;
    20 GB/s: ridges at 8 and 4 FLOP/B."""
    return CPUInfo(
        model="Test CPU", arch="x86_64", logical_cpus=2, cores=Sourced(2, "test"), simd="AVX2", simd_bits=256,
        fma_units=Sourced(2, "test"), clock_hz=Sourced(2.5e9, "test"), nominal_clock_hz=None,
        peak_bandwidth=Sourced(20e9, "measured here: test copy"),
    )


@pytest.fixture
def fresh_backends():
    """backends() probed anew inside the test (after its monkeypatches) and again, unpatched, after it."""
    backend.backends.cache_clear()
    yield backend.backends
    backend.backends.cache_clear()


def python_only(cell_source: str) -> str:
    """A code cell's source with IPython's shell and magic lines (`!nvidia-smi`, `%timeit ...`) made `pass`, so
    the ast module can parse it."""
    return re.sub(r"^(\s*)[!%].*$", r"\1pass", cell_source, flags=re.M)


def chapter_kernel(notebook: str, name: str) -> str:
    """The CUDA C of kernel `name` as notebooks/`notebook` writes it in a code cell (an r\"\"\"...\"\"\" string)."""
    path = Path(__file__).resolve().parents[1] / "notebooks" / notebook
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            for found in re.findall(r'r"""(.*?)"""', "".join(cell["source"]), re.S):
                if f"void {name}(" in found:
                    return found
    raise AssertionError(f"no kernel {name} in {notebook}")
