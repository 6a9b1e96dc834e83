"""Machine code as data: the instructions nvdisasm lists for each kernel, and the loops among them.

helpers.gpu.compiled reads a kernel's registers and instructions from the compiler, and helpers.gpu.shared_passes
follows each shared-memory load's addresses; both read the code through these few types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Instruction:
    """One machine instruction: its opcode (LDS.U.128, FFMA, ...) and the whole line as the disassembler wrote it."""

    opcode: str
    text: str

    @property
    def kind(self) -> str:
        """The opcode's first word: FFMA, LDS, LDG, BAR, IMAD..."""
        return self.opcode.split(".", 1)[0]

    @property
    def width(self) -> int:
        """Bits a memory instruction moves per thread: 32, 64 or 128 (LDS.U.128 is 128)."""
        for bits in (128, 64):
            if f".{bits}" in self.opcode:
                return bits
        return 32


@dataclass(frozen=True)
class Loop:
    """A loop of machine code: the instructions from its label to its backward branch (inner loops included)."""

    start: int
    end: int  # index of the backward branch

    def contains(self, other: Loop) -> bool:
        """Whether `other` lies inside this loop (and is not this loop)."""
        return self.start <= other.start and other.end <= self.end and other != self


_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?P<text>[^;]*);")
_LABEL = re.compile(r"^(?P<label>\.L_x_\d+):")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.(?P<name>[^,\s]+)", re.M)


def parse(listing: str) -> dict[str, tuple[tuple[Instruction, ...], dict[str, int]]]:
    """nvdisasm's listing as {kernel: (instructions, {label: index of the instruction it stands before})}."""
    kernels: dict[str, tuple[tuple[Instruction, ...], dict[str, int]]] = {}
    parts = _SECTION.split(listing)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        code: list[Instruction] = []
        labels: dict[str, int] = {}
        for line in body.splitlines():
            if (m := _LABEL.match(line.strip())) is not None:
                labels[m["label"]] = len(code)
            elif (m := _LINE.search(line)) is not None:
                text = " ".join(m["text"].split())
                words = re.sub(r"^@!?U?P[T\d]+\s+", "", text).split()
                code.append(Instruction(words[0] if words else "", text))
        kernels[name] = (tuple(code), labels)
    return kernels


def loops(code: tuple[Instruction, ...], labels: dict[str, int]) -> list[Loop]:
    """Every loop: a branch back to a label at or before it."""
    found = []
    for i, ins in enumerate(code):
        target = re.search(r"\bBRA\b.*?(\.L_x_\d+)", ins.text) if ins.kind == "BRA" else None
        if target and labels.get(target[1], i + 1) <= i:
            found.append(Loop(labels[target[1]], i))
    return found
