"""The kernels of XLA's compiled training step: the real jitted step compiled for given shapes, and the kernels
its compiled program's ENTRY computation launches counted by instruction.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..core.validate import positive_int
from . import mlp

#: Instructions of a compiled XLA program that launch no kernel: arguments, constants, tuples and views of them,
#: ordering tokens, and the second halves of asynchronous pairs (each pair is counted at its start).
NOT_KERNELS = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
                         "add-dependency", "opt-barrier", "partition-id", "replica-id", "domain", "async-update",
                         "async-done", "copy-done"})
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")  # '%fused_computation.2 (p: f32[2]) -> ... {'
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-]*)\((.*)$")  # '  %d = f32[] dot(..'
_CALLED = re.compile(r"\b(?:to_apply|calls)=%?([\w.\-]+)")


def _kernels_in(hlo_text: str) -> Counter[str]:
    """The kernels the ENTRY computation of a compiled HLO module launches, by opcode.

    A `call` or `async-start` counts the kernels of the computation it runs (XLA:GPU wraps runs of kernels in
    command buffers this way); a fusion is one kernel, whatever it fuses.
    """
    computations: dict[str, list[tuple[str, str]]] = {}
    entry, current = None, None
    for line in hlo_text.splitlines():
        head = _COMPUTATION.match(line)
        if head:
            current = computations.setdefault(head[2], [])
            entry = head[2] if head[1] else entry
            continue
        op = _INSTRUCTION.match(line)
        if op and current is not None:
            called = _CALLED.search(op[2])
            current.append((op[1], called[1] if called else ""))
    if entry is None:
        raise ValueError("no ENTRY computation in this text: pass XLA's compiled program, "
                         "jax.jit(f).lower(...).compile().as_text()")

    def count(name: str) -> Counter[str]:
        found: Counter[str] = Counter()
        for opcode, called in computations[name]:
            if opcode in ("call", "async-start") and called in computations:
                found.update(count(called))
            elif opcode not in NOT_KERNELS:
                found[opcode] += 1
        return found

    return count(entry)


@dataclass(frozen=True)
class KernelCount:
    """The kernels of XLA's compiled program for one training step, by instruction, and which XLA compiled it."""

    platform: str  # "cpu", "gpu" or "tpu": the device JAX compiled for
    by_op: tuple[tuple[str, int], ...]  # (opcode, kernels), most first: ("fusion", 21), ("dot", 2)

    @property
    def total(self) -> int:
        """Kernels per step."""
        return sum(n for _, n in self.by_op)

    def __str__(self) -> str:
        return f"{self.total} kernels (XLA:{self.platform.upper()}: {', '.join(f'{n} {op}' for op, n in self.by_op)})"


def xla_kernels(batch: int, n_in: int = 64, hidden: int = 64, n_out: int = 10) -> KernelCount:
    """The kernels XLA compiles one jitted float32 training step (`mlp.jax_step`) into, on this JAX's device.

    The rule: compile the real step for these shapes, then count the instructions of the compiled program's ENTRY
    computation that do work (a fusion, a dot, a custom-call such as cuBLAS, a reduce, a copy, ...), one kernel
    each; arguments, constants, tuples and bitcasts (NOT_KERNELS) launch nothing. On a CPU this is XLA:CPU's count,
    a proxy for XLA:GPU's: both fuse each chain of elementwise operations into one kernel, and the GPU may call
    cuBLAS where the CPU runs a dot. When JAX runs on a GPU, this counts XLA:GPU's own program. Each shape is
    compiled once (a fraction of a second) and its count kept.
    """
    return _xla_kernels(*(positive_int(name, value) for name, value in
                          (("batch", batch), ("n_in", n_in), ("hidden", hidden), ("n_out", n_out))))


@lru_cache(maxsize=256)
def _xla_kernels(batch: int, n_in: int, hidden: int, n_out: int) -> KernelCount:
    import jax
    import jax.numpy as jnp

    shapes = {"W1": (n_in, hidden), "b1": (hidden,), "W2": (hidden, n_out), "b2": (n_out,)}
    params = {name: jax.ShapeDtypeStruct(shapes[name], jnp.float32) for name in mlp.PARAM_NAMES}
    x, y = jax.ShapeDtypeStruct((batch, n_in), jnp.float32), jax.ShapeDtypeStruct((batch,), jnp.int32)
    text = mlp.jax_step(0.1).lower(params, x, y).compile().as_text()  # the learning rate changes no kernel
    return KernelCount(jax.default_backend(), tuple(_kernels_in(text).most_common()))
