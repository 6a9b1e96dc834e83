"""From Loops to TPUs: hardware detection, honest timing and plotting for every notebook of the series.

    import helpers as h
    h.hardware()                      # what this machine has, with peak FLOP/s and their sources
    h.backends()                      # which of numpy / jax / cupy can run here, and why not
    t = h.benchmark(fn, *args, flops=2 * n**3)
    h.compare({"loops": t0, "numpy": t1})
"""

from .backend import BackendUnavailable, array_module, backends, sync, to_backend, to_numpy, where
from .claims import claim
from .hardware import hardware
from .notice import accelerator_backend
from .timing import (
    BusyMachineWarning,
    NoisyTimingWarning,
    Timing,
    benchmark,
    compare,
    format_fraction,
    format_seconds,
    set_timing_budget,
)

__all__ = [
    "BackendUnavailable", "BusyMachineWarning", "NoisyTimingWarning", "Timing", "accelerator_backend",
    "array_module", "backends", "benchmark", "claim", "compare", "format_fraction", "format_seconds", "hardware",
    "set_timing_budget", "sync", "to_backend", "to_numpy", "where",
]

#: Submodules reachable as `h.<name>` without importing them up front: plotly and ipywidgets are slow to
#: import (seconds on a small machine) and the command line never needs them.
_LAZY = ("asynchrony", "checks", "choosing", "counter_checks", "cpu", "cuda", "evidence", "glossary", "grid",
         "kernel_checks", "lessons", "make_it_fast", "mandelbrot", "mlp", "momentum", "nvrtc", "pallas", "plots",
         "precision", "project", "roofline", "sharding", "specs", "systolic", "tensor_checks", "tensor_cores",
         "threads", "training", "widgets", "workloads")


def __getattr__(name: str) -> object:
    """Import `h.plots`, `h.widgets`, `h.checks`, ... on first use."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
