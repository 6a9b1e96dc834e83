"""From Loops to TPUs: hardware detection, honest timing and plotting for every notebook of the series.

    import helpers as h
    h.hardware()                      # what this machine has, with peak FLOP/s and their sources
    h.backends()                      # which of numpy / jax / cupy can run here, and why not
    t = h.benchmark(fn, *args, flops=2 * n**3)
    h.compare({"loops": t0, "numpy": t1})
"""

from .core.backend import BackendUnavailable, array_module, backends, sync, to_backend, to_numpy, where
from .core.notice import accelerator_backend
from .learning.claims import claim
from .measuring.hardware import hardware
from .measuring.timing import (
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

#: Modules a chapter reaches as `h.<name>`, and the sub-package each lives in: imported on first use, because
#: plotly and ipywidgets are slow to import (seconds on a small machine) and the command line never needs them.
_LAZY = {"asynchrony": "chapters", "checks": "learning", "choosing": "chapters", "counter_checks": "chapters",
         "cpu": "measuring", "cuda": "gpu", "evidence": "book", "glossary": "learning", "grid": "gpu",
         "host_calls": "measuring", "kernel_checks": "chapters", "lessons": "learning", "make_it_fast": "chapters",
         "mandelbrot": "chapters", "mlp": "chapters", "momentum": "chapters", "nvrtc": "gpu", "pallas": "tpu",
         "plots": "figures", "precision": "measuring", "project": "core", "roofline": "model", "sharding": "tpu",
         "specs": "measuring", "systolic": "tpu", "tensor_checks": "chapters", "tensor_cores": "chapters",
         "threads": "measuring", "timing": "measuring", "training": "chapters", "widgets": "figures",
         "workloads": "measuring"}


def __getattr__(name: str) -> object:
    """Import `h.plots`, `h.widgets`, `h.checks`, ... on first use, from the sub-package that holds it."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{_LAZY[name]}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
