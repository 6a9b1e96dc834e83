"""The roofs a timing is judged by: the peak of the device its arrays live on, in its dtype; for a JAX call on a
GPU with TF32 tensor cores, the roofs its matmuls run on, read from the call's jaxpr.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..core import backend as _backends
from ..core.limits import TimeLimitExceeded, time_limit
from .hardware import PEAK_DTYPES, Hardware, Peak, hardware, jax_dot_roof


def judging_peak(fn: Callable[..., Any], args: tuple[Any, ...], out: Any, chosen: str, judged: str,
                 seconds: float) -> Peak:
    """The roofs a timing of `fn` on `chosen` in dtype `judged` is judged by, on the device its arrays live on.
    Integer or complex work has no FLOP roof on file: bandwidth only. seconds: what reading a JAX call may take."""
    hw, kind = hardware(), _device_kind(chosen, (args, out))
    matmuls, note = None, ""
    if chosen == "jax" and kind == "gpu" and judged == "float32" and _tf32_gpu(hw):  # only there does it matter
        matmuls, note = _jax_matmul_roofs(fn, args, seconds)
    peak = hw.peak(chosen, judged if judged in PEAK_DTYPES else "float64", kind, float32_matmuls=matmuls)
    if note:
        peak = replace(peak, source=f"{peak.source}; {note}")
    if judged not in PEAK_DTYPES:
        peak = replace(peak, flops=None, source=f"{peak.source}; no FLOP/s roof for {judged}")
    return peak


def _device_kind(backend: str, tree: Any) -> str:
    """The kind of device ("cpu", "gpu", "tpu") the arrays of `tree` live on, as `backend` runs them."""
    if backend == "jax":
        for leaf in _backends.leaves(tree):
            if _backends.backend_of(leaf) == "jax":
                return next(iter(leaf.devices())).platform
        return _backends.backends()["jax"].device_kind
    return "gpu" if backend == "cupy" else "cpu"


def _tf32_gpu(hw: Hardware) -> bool:
    """Whether the GPU that `hw.peak` judges by has TF32 tensor cores, where float32 matmuls may run."""
    gpu = next((a for a in hw.accelerators if a.kind == "gpu"), None)
    return bool(gpu and gpu.spec and gpu.spec.peak_for("tf32"))


def _equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr and of the jaxprs inside it (jit, cond branches, scan and remat bodies, ...)."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for inner in param if isinstance(param, tuple | list) else (param,):
                if hasattr(inner, "eqns"):  # a Jaxpr, or a ClosedJaxpr
                    yield from _equations(inner)


def _jax_matmul_roofs(fn: Callable[..., Any], args: tuple[Any, ...],
                      seconds: float) -> tuple[frozenset[str] | None, str]:
    """Where the matmuls of the JAX call `fn(*args)` run on a GPU with TF32 tensor cores (hardware.jax_dot_roof),
    read from its jaxpr, and a note for the peak's source.

    The jaxpr holds each dot's own precision: a `precision=` given to the call, else the default precision in
    force when it was traced (as now). Dots of bf16 or f16 arrays (with preferred_element_type=float32 or not) run
    on those tensor cores; a precision or arrays not known here give 'unknown' (judged by the highest roof). None
    when the call cannot be traced within `seconds`: the peak then follows JAX's default matmul precision, as the
    note says.
    """
    import jax

    limit = None
    try:
        with time_limit(seconds, "tracing the call for its matmul precisions") as limit:
            jaxpr = jax.make_jaxpr(lambda: fn(*args))()
    except TimeLimitExceeded as exc:
        if limit is None or exc.limit is not limit:
            raise
        return None, f"tracing the call took over {seconds:g} s: judged by JAX's default matmul precision"
    except Exception as exc:  # noqa: BLE001 - any failure to trace: judge by the setting instead, and say so
        return None, f"the call could not be traced ({type(exc).__name__}): judged by JAX's default matmul precision"
    roofs: set[str] = set()
    dots = 0
    for eqn in _equations(jaxpr):
        if "precision" not in eqn.params:  # dot_general, conv_general_dilated, ...: work for the tensor cores
            continue
        dots += 1
        dtypes = {str(v.aval.dtype) for v in eqn.invars[:2]}
        if dtypes <= {"float32", "complex64"}:
            try:
                roofs.add(jax_dot_roof(eqn.params["precision"]))
            except ValueError:
                roofs.add("unknown")
        elif len(dtypes) == 1 and dtypes <= {"bfloat16", "float16", "float64"}:
            roofs |= dtypes  # a precision changes float32 work only
        else:
            roofs.add("unknown")
    if not dots:
        return frozenset(), "no matmul in the traced call: the CUDA cores' float32 roof"
    return frozenset(roofs), f"{dots} matmul{'s' * (dots > 1)} in the traced call, on {', '.join(sorted(roofs))}"
