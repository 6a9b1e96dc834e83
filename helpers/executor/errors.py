"""The errors the executor's front end raises for CUDA C it cannot run, with the line they are about."""

from __future__ import annotations


class CudaCError(ValueError):
    """CUDA C the executor cannot run: `line` (1-based, in the kernel's source) says where, when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line else message)


class UnsupportedSyntax(CudaCError):
    """Valid CUDA C, but outside the subset the CPU executor runs."""
