"""What one call costs this host, measured here: a small NumPy call, a CuPy call on the GPU here, and a jitted JAX
call with a given number of arrays in and out on JAX's device.

A call's fixed cost is host work (Python, argument checks, a launch), so it depends on the host as much as on the
device: the H200 of the recorded run (a virtual machine, 2026-11-28) took 41.5 µs per pipelined call of a jitted
512 x 512 matmul and 145-203 µs per call of chapter 05's jitted step, where JAX's published dispatch on a laptop is
6.81 µs. So the model prices the GPU that is here with the costs measured here, and a GPU that is not here with
the published figures in `roofline.OVERHEADS`.

    h.host_calls.numpy_call()        # seconds of one small NumPy call
    h.host_calls.here(6, 5)          # HostCalls: CuPy's calls by kind and a jitted JAX call, measured here
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..core.backend import backends
from ..core.validate import positive_int
from .formats import format_seconds

#: Calls in one timed batch, and batches (the best one counts: the least disturbed).
CALLS, BATCHES = 500, 5
#: The most arrays a measured JAX call takes or returns (a training step's parameters and batch are a dozen).
MAX_ARRAYS = 64


def _best(run_batch: Any) -> float:
    """The least seconds per call over BATCHES batches of CALLS calls, `run_batch()` timing one batch."""
    return min(run_batch() for _ in range(BATCHES)) / CALLS


@cache
def numpy_call() -> float:
    """One small NumPy call from Python on this machine (np.add of 8 floats into an array made once): the fixed
    cost a CPU pays per call, as a launch is an accelerator's."""
    a = np.ones(8, dtype=np.float32)
    out = np.empty_like(a)

    def batch() -> float:
        start = time.perf_counter()
        for _ in range(CALLS):
            np.add(a, a, out=out)
        return time.perf_counter() - start

    return _best(batch)


#: The kinds of CuPy call whose host cost differs, each timed on tiny arrays: an elementwise ufunc, a reduction
#: along an axis, a matrix product (cuBLAS), and an index by an array (a gather).
CUPY_KINDS = ("elementwise", "reduction", "matmul", "gather")


def _cupy_kind_calls(cupy: Any) -> dict[str, Any]:
    """One tiny call of each of CUPY_KINDS, as a function of no arguments."""
    m = cupy.ones((8, 8), dtype=cupy.float32)
    rows, cols = cupy.arange(8), cupy.zeros(8, dtype=cupy.int64)
    return {"elementwise": lambda: m + m, "reduction": lambda: m.sum(axis=1), "matmul": lambda: m @ m,
            "gather": lambda: m[rows, cols]}


def cupy_calls() -> dict[str, float] | None:
    """The host cost of one CuPy call of each kind (CUPY_KINDS) on the GPU here, calls queued and the GPU waited for
    once per batch, as a loop of CuPy calls runs. None without a GPU CuPy can use."""
    if not backends()["cupy"].usable:
        return None
    import cupy

    stream = cupy.cuda.get_current_stream()
    costs = {}
    for kind, call in _cupy_kind_calls(cupy).items():

        def batch(call: Any = call) -> float:
            stream.synchronize()
            start = time.perf_counter()
            for _ in range(CALLS):
                call()
            stream.synchronize()
            return time.perf_counter() - start

        batch()  # the first call compiles the kernel
        costs[kind] = _best(batch)
    return costs


def cupy_call() -> float | None:
    """One small elementwise CuPy call on the GPU here: its host cost (None without a GPU CuPy can use)."""
    costs = cupy_calls()
    return None if costs is None else costs["elementwise"]


def jax_call(arrays_in: int, arrays_out: int) -> float:
    """One call of a jitted JAX function taking `arrays_in` small arrays and returning `arrays_out`, on JAX's
    default device, calls queued and waited for once per batch: the host's cost of dispatching such a call (its
    device work is one tiny kernel)."""
    import jax
    import jax.numpy as jnp

    arrays_in = positive_int("arrays_in", arrays_in)
    arrays_out = positive_int("arrays_out", arrays_out)
    if max(arrays_in, arrays_out) > MAX_ARRAYS:
        raise ValueError(f"arrays_in and arrays_out must be at most {MAX_ARRAYS}; got {arrays_in} and {arrays_out}")
    step = jax.jit(lambda *xs: tuple(xs[i % arrays_in] + 1 for i in range(arrays_out)))
    args = [jnp.full(8, i, jnp.float32) for i in range(arrays_in)]

    def batch() -> float:
        jax.block_until_ready(args)
        start = time.perf_counter()
        out = None
        for _ in range(CALLS):
            out = step(*args)
        jax.block_until_ready(out)
        return time.perf_counter() - start

    jax.block_until_ready(step(*args))  # the first call compiles
    return _best(batch)


@dataclass(frozen=True)
class HostCalls:
    """The per-call host costs measured on this machine for the GPU here, for the model to price that GPU with."""

    cupy: dict[str, float] | None  # seconds per CuPy call of each kind (CUPY_KINDS; None: CuPy has no GPU here)
    jax: float  # seconds per jitted JAX call with `arrays` arrays in and out
    arrays: tuple[int, int]  # (in, out) of the measured JAX call
    device: str  # where JAX's calls ran

    def cupy_call(self, kind: str) -> float | None:
        """The measured cost of a CuPy call of `kind` (one of CUPY_KINDS), or None without a GPU for CuPy."""
        if kind not in CUPY_KINDS:
            raise ValueError(f"kind must be one of {', '.join(CUPY_KINDS)}; got {kind!r:.40}")
        return None if self.cupy is None else self.cupy[kind]

    def __str__(self) -> str:
        cupy = "no GPU for CuPy" if self.cupy is None else "CuPy calls " + ", ".join(
            f"{kind} {format_seconds(seconds)}" for kind, seconds in self.cupy.items())
        return (f"measured on this host: {cupy}; a jitted JAX call with {self.arrays[0]} arrays in and "
                f"{self.arrays[1]} out, on {self.device}, {format_seconds(self.jax)}")


def here(arrays_in: int, arrays_out: int) -> HostCalls:
    """CuPy's and JAX's per-call cost on this host (JAX's for a call with these many arrays in and out)."""
    import jax

    return HostCalls(cupy_calls(), jax_call(arrays_in, arrays_out), (arrays_in, arrays_out),
                     str(jax.devices()[0].device_kind))
