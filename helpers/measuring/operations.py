"""The whole-array operations every chapter times, written once for NumPy, CuPy and JAX alike.

workloads builds their inputs and times them; the timer's busy-machine judge (disturbed) recognises `matmul` as
the work cpu.py calibrates. Both import it from here, so neither imports the other.
"""

from __future__ import annotations

from typing import Any


def axpby(alpha: float, x: Any, beta: float, y: Any) -> Any:
    """z = alpha*x + beta*y on whole arrays (NumPy, CuPy or JAX): memory-bound, 1/4 FLOP per byte in fp32."""
    return alpha * x + beta * y


def matmul(a: Any, b: Any) -> Any:
    """C = A @ B on whole arrays: compute-bound for large n (about n/6 FLOP per byte in fp32)."""
    return a @ b
