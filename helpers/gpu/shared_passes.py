"""Shared-memory passes from the machine code: the 32 addresses each shared load (LDS, LDS.64, LDS.128) of a kernel's
machine code reads, worked out lane by lane from the integer instructions before it, and the passes (wavefronts)
NVIDIA's rule gives them.

Why: the CPU executor counts the source's loads, but the compiler merges four neighbouring 4-byte reads into one
16-byte LDS.128, and the shared memory serves an instruction, not a source line:
- its return path carries one 4-byte register per lane per clock (128 bytes), so an LDS.128 takes at least 4 passes,
  an LDS.64 at least 2; a 16-byte load is served a quarter-warp (8 lanes) at a time, an 8-byte one a half-warp;
- within those lanes, a bank (4-byte words modulo 32) holding n distinct words takes n passes (a bank conflict);
  the same word read by many lanes is one (a broadcast);
- a wide load whose lanes pair up on one address (lane n and lane n^1, or n and n^2, read the same) packs two
  registers per pass: half the passes.
Sources (RULE_SOURCE): NVIDIA's answer on its developer forum for compute capability 7.x, and Nsight Compute
counts on compute capability 8.6 and 9.0 published on the same forum.

The evaluation follows the code in order, once, for warp 0 of block 0 (the first run of each loop): a loop's later
runs shift every lane's address alike, so its passes stay the same. A register whose value is not a known integer
(a load's result, an instruction not modelled here) makes the addresses it feeds unknown: `passes` then answers
None and the caller keeps the executor's count.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .machine_code import Instruction, Loop

RULE_SOURCE = ("NVIDIA's developer forum, 'Unexpected shared memory bank conflict' "
               "(https://forums.developer.nvidia.com/t/unexpected-shared-memory-bank-conflict/77228/2), for compute "
               "capability 7.0-7.5: 'The return bandwidth of L1 and shared memory is 128 bytes/cycle == 1 "
               "register/cycle. The uniform access can achieve 2x the performance by packing the return registers. "
               "... LDS.128 requires 4 requests per instruction as it returns 4 registers. If the guidelines are met "
               "the requests/instruction should reduce from 4 to 2' (the guidelines: lanes n and n^1, or n and n^2, "
               "read one address); Nsight Compute on an A10 (8.6) and an H100 (9.0) "
               "(https://forums.developer.nvidia.com/t/discrepancy-in-lds-128-wavefronts-does-smem-broadcast-across-"
               "quarter-warps/373160): an LDS.128 whose lanes 0-15 read one address and 16-31 another takes 2 "
               "wavefronts; one whose lanes n and n+16 share an address, neighbours 32 bytes apart, takes 8 "
               "(2 per quarter-warp: no broadcast across quarter-warps)")

_MASK = (1 << 32) - 1
WARP = 32
_REG = re.compile(r"^(?P<neg>[-~]?)(?P<name>U?R(?:\d+|Z)|U?PT|SRZ)(?:\.(?:reuse|H0|H1|B\d|X\d))*$")
_CONST = re.compile(r"^c\[(0x[0-9a-f]+)\]\[(0x[0-9a-f]+)\]$")


def _words(text: str) -> tuple[str, list[str]]:
    """An instruction's opcode and its operands, a predicate guard (@P0) dropped."""
    text = re.sub(r"^@!?U?P[T\d]+\s+", "", text.strip())
    opcode, _, rest = text.partition(" ")
    return opcode, [w.strip() for w in rest.split(",")] if rest else []


class Lanes:
    """Registers of one warp, each a 32-lane array of unsigned 32-bit values, or absent where unknown."""

    def __init__(self, block: tuple[int, int, int], constants: dict[int, int]) -> None:
        tid = np.arange(WARP)
        bx, by, _ = block
        self.special = {"SR_TID.X": tid % bx, "SR_TID.Y": (tid // bx) % by, "SR_TID.Z": tid // (bx * by),
                        "SR_LANEID": tid}
        self.constants = constants
        self.regs: dict[str, np.ndarray] = {}

    def value(self, operand: str) -> np.ndarray | None:
        """An operand's 32 values (a register, an immediate, a constant-bank word); None where unknown."""
        m = _REG.match(operand)
        if m:
            name = m["name"]
            if name in ("RZ", "URZ", "SRZ"):
                v: np.ndarray | None = np.zeros(WARP, np.int64)
            else:
                v = self.regs.get(name)
            if v is None:
                return None
            return (-v if m["neg"] == "-" else ~v if m["neg"] == "~" else v) & _MASK
        c = _CONST.match(operand)
        if c:  # a word the table lacks (another bank: the shared arrays' bases) is the same for every lane: 0
            word = int(c[2], 16) if int(c[1], 16) == 0 else -1
            return np.full(WARP, self.constants.get(word, 0), np.int64)
        try:
            return np.full(WARP, int(operand, 16) if operand.lower().startswith(("0x", "-0x")) else int(operand),
                           np.int64) & _MASK
        except ValueError:
            return None

    def set(self, name: str, v: np.ndarray | None, width: int = 1) -> None:
        """Write a register (and the `width` - 1 after it, for a wide destination); None marks them unknown."""
        base = re.match(r"(U?R)(\d+)$", name)
        names = [name] if base is None else [f"{base[1]}{int(base[2]) + i}" for i in range(width)]
        for i, n in enumerate(names):
            if v is None or i > 0:
                self.regs.pop(n, None)
            else:
                self.regs[n] = v & _MASK


def _lop3(a: np.ndarray, b: np.ndarray, c: np.ndarray, lut: int) -> np.ndarray:
    """LOP3.LUT: any function of three inputs, bit by bit, by its 8-entry truth table."""
    out = np.zeros(WARP, np.int64)
    for i in range(8):
        if lut >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out & _MASK


def _shf(mods: list[str], x: list[np.ndarray]) -> np.ndarray | None:
    """SHF: a funnel shift, modelled for the two forms addresses use (right of the high word, left of a U32)."""
    if "HI" in mods and "R" in mods:
        shift, value = int(x[1][0]) & 31, x[2]
        if "S32" in mods:
            value = np.where(value >= 1 << 31, value - (1 << 32), value)
        return value >> shift
    if "L" in mods and "U32" in mods and "HI" not in mods:
        return x[0] << (int(x[1][0]) & 31)
    return None


#: Integer instructions the evaluation runs, by base opcode: each takes the modifiers and the known operands and
#: gives the result, or None for a form it does not model (the high word, the carry, a wide result).
_ARITH = {
    "MOV": lambda mods, x: x[0],
    "UMOV": lambda mods, x: x[0],
    "IADD3": lambda mods, x: None if "X" in mods else x[-3] + x[-2] + x[-1],
    "IADD": lambda mods, x: x[-2] + x[-1],
    "VIADD": lambda mods, x: x[-2] + x[-1],
    "IMAD": lambda mods, x: None if {"HI", "X", "WIDE"} & set(mods) else x[0] * x[1] + x[2],
    "LEA": lambda mods, x: None if {"HI", "X"} & set(mods) else (x[-3] << int(x[-1][0])) + x[-2],
    "SHF": _shf,
    "LOP3": lambda mods, x: _lop3(x[0], x[1], x[2], int(x[3][0])) if "LUT" in mods else None,
}


def _arith(op: str, v: list[np.ndarray | None]) -> np.ndarray | None:
    """The 32-bit result of an integer instruction on known operands; None where it is not modelled."""
    if not v or any(x is None for x in v):
        return None
    base, *mods = op.split(".")
    base = base[1:] if base.startswith("U") and base != "UMOV" and len(base) > 3 else base
    rule = _ARITH.get(base)
    return rule(mods, v) if rule else None


#: Opcodes that write no register the evaluation follows (branches, barriers, predicates, stores, the math the
#: addresses never read): skipped. Any other opcode it cannot evaluate makes its destination unknown.
_NO_DEST = ("BRA", "BAR", "EXIT", "NOP", "ISETP", "UISETP", "PLOP3", "STS", "STG", "BSSY", "BSYNC", "BMOV", "CALL",
            "RET", "WARPSYNC", "DEPBAR", "MEMBAR", "FSETP", "RED", "ATOMS", "YIELD")


def _special(lanes: Lanes, base: str, dest: str, src: list[str]) -> None:
    """S2R / S2UR read a special register (the thread's index...); CS2R zeroes a register pair."""
    if base == "CS2R":
        lanes.set(dest, np.zeros(WARP, np.int64), 2)
    else:
        lanes.set(dest, lanes.special.get(src[0], np.zeros(WARP, np.int64)), 1)


def _constant_load(lanes: Lanes, opcode: str, dest: str, src: list[str]) -> None:
    """LDC / ULDC: a word of the constant bank (the kernel's arguments, blockDim); .64 loads the next word too."""
    word = _CONST.match(src[0])
    lanes.set(dest, lanes.value(src[0]), 1)
    if ".64" in opcode and word:
        hi_name = re.sub(r"\d+$", lambda m: str(int(m[0]) + 1), dest)
        lanes.set(hi_name, lanes.value(f"c[{word[1]}][{hex(int(word[2], 16) + 4)}]"))


def _half_pair(lanes: Lanes, dest: str, src: list[str]) -> bool:
    """HFMA2 -RZ, RZ, h1, h2: the compiler's way of writing a constant (0 * 0 + two float16 halves). False if
    this HFMA2 is not that form."""
    if src[:2] != ["-RZ", "RZ"] or len(src) != 4:
        return False
    try:
        halves = [int(np.float16(float(h)).view(np.uint16)) for h in src[2:]]
    except ValueError:  # a half the listing spells otherwise (INF, NAN): not an address
        lanes.set(dest, None)
        return True
    lanes.set(dest, np.full(WARP, halves[0] << 16 | halves[1], np.int64))
    return True


def _step(lanes: Lanes, ins: Instruction) -> None:
    """Run one instruction on the warp's registers (as far as addresses need it)."""
    opcode, ops = _words(ins.text)
    base = opcode.split(".")[0]
    if not ops or base in _NO_DEST or (base == "LOP3" and ops[0].startswith("P")):
        return
    dest, src = ops[0], [o for o in ops[1:] if not re.fullmatch(r"!?U?P[T\d]+", o)]
    if base in ("S2R", "S2UR", "CS2R"):
        _special(lanes, base, dest, src)
    elif base in ("ULDC", "LDC"):
        _constant_load(lanes, opcode, dest, src)
    elif not (base == "HFMA2" and _half_pair(lanes, dest, src)):
        width = 4 if ".128" in opcode else 2 if ".64" in opcode or ".WIDE" in opcode else 1
        lanes.set(dest, _arith(opcode, [lanes.value(s) for s in src]), width)


def address(lanes: Lanes, ins: Instruction) -> np.ndarray | None:
    """The 32 byte addresses a shared load reads: [Ra + URb + offset] (Ra.X8: Ra times 8) summed lane by lane;
    None where unknown."""
    found = re.search(r"\[([^\]]+)\]", ins.text)
    if found is None:
        return None
    total = np.zeros(WARP, np.int64)
    for part in found[1].replace("-", "+-").split("+"):
        part = part.strip()
        if not part:
            continue
        scaled = re.fullmatch(r"(.+)\.X(\d+)", part.removesuffix(".64"))  # [R0.X8]: the register times 8
        v = lanes.value(scaled[1] if scaled else part.removesuffix(".64"))
        if v is None:
            return None
        v = v * (int(scaled[2]) if scaled else 1)
        total = total + np.where(v >= 1 << 31, v - (1 << 32), v) if part.startswith("-") else total + v
    return total & _MASK


def passes_of(addresses: np.ndarray, width: int) -> int:
    """The passes one shared load of `width` bits takes for these 32 byte addresses (NVIDIA's rule, above)."""
    words = width // 32
    group = WARP // words  # lanes served together: 32, 16 (LDS.64) or 8 (LDS.128)
    total = 0
    for start in range(0, WARP, group):
        first = addresses[start:start + group] >> 2
        every = (first[:, None] + np.arange(words)).reshape(-1)
        banks: dict[int, set[int]] = {}
        for w in np.unique(every).tolist():
            banks.setdefault(w % 32, set()).add(w)
        total += max(len(s) for s in banks.values())
    paired = any((addresses == addresses[np.arange(WARP) ^ k]).all() for k in (1, 2))
    return max(1, total // 2) if words > 1 and paired else total


def load_passes(code: tuple[Instruction, ...], block: tuple[int, int, int],
                constants: dict[int, int]) -> dict[int, int] | None:
    """{index of each shared load in `code`: its passes}, evaluated for warp 0 of a block of `block` threads, with
    the constant bank's words `constants` (the kernel's arguments, blockDim); None if any address is unknown."""
    lanes = Lanes(block, constants)
    out = {}
    for i, ins in enumerate(code):
        if ins.kind == "LDS":
            where = address(lanes, ins)
            if where is None:
                return None
            out[i] = passes_of(where, ins.width)
        _step(lanes, ins)
    return out


def per_warp(code: tuple[Instruction, ...], found: list[Loop], runs: dict[Loop, float], own: dict[Loop, list[int]],
             each: dict[int, int]) -> float:
    """Shared-load passes one warp makes in a launch: each loop's own loads times its runs, the rest once."""
    inside = {i for lp in found for i in range(lp.start, lp.end + 1)}
    total = sum(runs[lp] * each[i] for lp in found for i in own[lp] if i in each)
    return total + sum(p for i, p in each.items() if i not in inside)


def constant_bank(arch: str, block: tuple[int, int, int], arguments: tuple[Any, ...]) -> dict[int, int]:
    """The constant-bank words a kernel reads, as far as addresses need them: blockDim at 0x0-0x8, then each
    argument from the parameter base (0x210 on sm_90 and newer, 0x160 before), 8 bytes a pointer, 4 an int."""
    words = {0x0: block[0], 0x4: block[1], 0x8: block[2]}
    offset = 0x210 if int(arch.removeprefix("sm_").rstrip("a")) >= 90 else 0x160
    for arg in arguments:
        size = 8 if isinstance(arg, np.ndarray) else 4
        offset += -offset % size
        value = 0x7F0000000000 + offset * 0x100000 if size == 8 else int(arg) & _MASK
        words[offset] = value & _MASK
        if size == 8:
            words[offset + 4] = value >> 32
        offset += size
    return words
