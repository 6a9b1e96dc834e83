"""The executor's errors: CUDA C it cannot run (with the line they are about), and a kernel that went wrong as
it ran."""

from __future__ import annotations


class CudaCError(ValueError):
    """CUDA C the executor cannot run: `line` (1-based, in the kernel's source) says where, when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line else message)


class UnsupportedSyntax(CudaCError):
    """Valid CUDA C, but outside the subset the CPU executor runs."""


class KernelFault(RuntimeError):
    """A kernel did something wrong while it ran: `kind` says what ('out-of-bounds read', 'race', ...)."""

    def __init__(self, kind: str, message: str, *, thread: tuple[int, ...] | None = None,
                 block: tuple[int, ...] | None = None, line: int | None = None) -> None:
        self.kind, self.thread, self.block, self.line = kind, thread, block, line
        super().__init__(message)
