"""What the compiler made of a kernel: its registers, spills and shared memory (the assembler's own report,
NVRTC's `-Xptxas -v`), and the machine instructions (SASS) a GPU issues, read from the cubin by NVIDIA's
disassembler (the pip wheel nvidia-cuda-nvdisasm, CUDA 13; Linux and Windows, no macOS build).

The CPU executor counts what the CUDA source asks for; this says what the GPU runs. They differ: the compiler
merges neighbouring shared-memory reads into 16-byte ones (LDS.128), adds integer instructions to compute
addresses, and unrolls loops. A loop of machine code is found by its backward branch; how often each loop runs is
read from the executor's counts of the same launch (`weigh`), so a per-step mix is exact for unrolled code too.

    kernels = facts(source, "sm_75", names=("sgemm_2d<128, 128, 8, 8, 8>",))   # registers, spills, SASS
    mix = weigh(kernels["sgemm_naive"].sass, counters)                          # instructions per multiply-add
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import nvrtc, shared_passes
from .machine_code import Instruction, Loop, loops, parse

#: The classes of machine instruction the model tells apart, and how each is recognised (the opcode's first word).
MEMORY = ("LDG", "STG", "LDS", "STS")
#: Nsight Compute's names for what each count here corresponds to, so a learner with a GPU can check it.
NCU_METRICS = {
    "registers": "launch__registers_per_thread",
    "FFMA": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum (thread-level; / 32 for warp instructions)",
    "LDS": "sass__inst_executed_shared_loads (smsp__inst_executed_op_shared_ld.sum)",
    "LDG": "smsp__inst_executed_op_global_ld.sum",
    "instructions": "smsp__inst_executed.sum",
    "barriers": "smsp__inst_executed_op_barrier.sum",
}
INSTALL_HINT = "pip install nvidia-cuda-nvdisasm (NVIDIA's disassembler, CUDA 13; Linux or Windows, no macOS build)"


@dataclass(frozen=True)
class Kernel:
    """One kernel as compiled for one architecture: what the assembler reported, and its machine code."""

    name: str
    arch: str
    nvrtc: str  # the NVRTC version that compiled it
    registers: int
    spill_stores: int  # bytes
    spill_loads: int
    stack: int
    shared_bytes: int  # static __shared__ bytes per block
    barriers: int
    sass: tuple[Instruction, ...] = field(default=(), repr=False)  # empty where the disassembler is missing


_FUNCTION = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>sm_\d+\w?)'")
_USED = re.compile(r"Used (?P<registers>\d+) registers(?:, used (?P<barriers>\d+) barriers)?"
                   r"(?:, (?P<shared>\d+) bytes smem)?")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes "
                    r"spill loads")


def assembler_report(log: str) -> dict[str, dict[str, int]]:
    """The assembler's -v report per mangled kernel name: registers, barriers, shared bytes, stack and spills."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        if (m := _FUNCTION.search(line)) is not None:
            current = m["name"]
            found[current] = {"registers": 0, "barriers": 0, "shared": 0, "stack": 0, "stores": 0, "loads": 0}
        elif current and (m := _FRAME.search(line)) is not None:
            found[current].update({k: int(m[k]) for k in ("stack", "stores", "loads")})
        elif current and (m := _USED.search(line)) is not None:
            found[current].update({k: int(m[k] or 0) for k in ("registers", "barriers", "shared")})
    return found


def disassembler() -> str | None:
    """The path of NVIDIA's nvdisasm: the pip wheel's (nvidia/cu13/bin), else one on the PATH; None if absent."""
    try:
        import nvidia

        for root in nvidia.__path__:
            for exe in ("nvdisasm.exe", "nvdisasm") if sys.platform == "win32" else ("nvdisasm",):
                path = Path(root) / "cu13" / "bin" / exe
                if path.is_file():
                    return str(path)
    except ImportError:
        pass
    return shutil.which("nvdisasm")


def disassembler_version() -> str | None:
    """nvdisasm's release ('13.5'), or None without it."""
    tool = disassembler()
    if tool is None:
        return None
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    found = re.search(r"release (\d+\.\d+)", out)
    return found[1] if found else None


#: Architectures nvdisasm 13 no longer reads ("CUDA architecture SM70 is deprecated"): their registers come from
#: the assembler's report, their machine code from nowhere.
NOT_DISASSEMBLED = ("sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72")


def disassembles(arch: str) -> bool:
    """Whether this machine can disassemble code for `arch`: nvdisasm is installed and still reads it."""
    return disassembler() is not None and arch not in NOT_DISASSEMBLED


def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of a cubin (written to a fresh temporary folder, removed after); a RuntimeError saying
    how to install the disassembler when it is missing."""
    tool = disassembler()
    if tool is None:
        raise RuntimeError(f"NVIDIA's disassembler is not installed here: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([tool, "-c", str(path)], capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm could not read the cubin: {done.stderr.strip()[:300]}")
    return done.stdout  # its warnings (an older cubin's ELF format) go to stderr and are not the listing


def facts(source: str, arch: str, name: str = "kernel.cu", names: tuple[str, ...] = ()) -> dict[str, Kernel]:
    """Every kernel of `source` compiled for `arch`, by the name it is launched by (a template's name expression
    for its instances): registers, spills, shared memory, and its machine code where nvdisasm is installed."""
    built = _build(source, arch, name, tuple(names))
    report = assembler_report(built.log)
    listing = parse(disassemble(built.cubin)) if disassembles(arch) else {}
    launch_name = {mangled: expression for expression, mangled in built.lowered.items()}
    out = {}
    for mangled, r in report.items():
        shown = launch_name.get(mangled, mangled)
        out[shown] = Kernel(shown, arch, built.version, r["registers"], r["stores"], r["loads"], r["stack"],
                            r["shared"], r["barriers"], listing.get(mangled, ((), {}))[0])
    return out


@lru_cache(maxsize=32)
def _build(source: str, arch: str, name: str, names: tuple[str, ...]) -> nvrtc.Build:
    return nvrtc.build(source, arch, name, names)


def loops_of(source: str, arch: str, kernel: str, name: str = "kernel.cu",
             names: tuple[str, ...] = ()) -> tuple[tuple[Instruction, ...], list[Loop]]:
    """A kernel's machine code and its loops (for weigh), compiled for `arch`."""
    built = _build(source, arch, name, tuple(names))
    mangled = built.lowered.get(kernel, kernel)
    code, labels = parse(disassemble(built.cubin)).get(mangled, ((), {}))
    if not code:
        raise ValueError(f"no kernel called {kernel!r} in the machine code; kernels: "
                         f"{', '.join(built.lowered.get(k, k) for k in assembler_report(built.log))}")
    return code, loops(code, labels)


# --------------------------------------------------------------------------------------------------------------
# How often each loop runs: from the executor's counts of the same launch.


@dataclass(frozen=True)
class Mix:
    """Machine instructions one warp issues per warp multiply-add (FFMA) in a kernel's loops, weighted by how often
    each loop runs; `step` is one pass of the hottest loop as compiled (its own instructions, inner loops apart)."""

    per_fma: dict[str, float]  # kind (FFMA, LDS, LDS.128, LDG, STS, BAR, other...) -> per warp FFMA
    step: dict[str, int]  # the hottest loop's instructions by kind, one pass
    issued_per_fma: float  # every instruction per FFMA: what the schedulers issue
    lds_per_fma: float  # shared loads of any width
    lds_words_per_fma: float  # 32-bit words per lane the shared loads return (LDS.128: 4): their data passes

    @property
    def other_per_fma(self) -> float:
        """Instructions beside the multiply-adds, per multiply-add."""
        return self.issued_per_fma - self.per_fma.get("FFMA", 0.0)


def label(ins: Instruction) -> str:
    """The kind a mix counts an instruction under: FFMA, LDS / LDS.64 / LDS.128 (and LDG, STS, STG alike), BAR,
    or the opcode's first word."""
    if ins.kind in MEMORY:
        return ins.kind if ins.width == 32 else f"{ins.kind}.{ins.width}"
    return ins.kind


#: The dynamic counts the executor gives per warp, in the order they fix a loop's count: FLOPs (FFMA 2, FADD and
#: FMUL 1), global loads and stores, shared stores, barriers. Shared loads come last: the compiler merges them.
_ANCHORS = ("flops", "LDG", "STG", "STS", "BAR", "LDS")


def _anchor_count(code: tuple[Instruction, ...], members: list[int], anchor: str) -> int:
    if anchor == "flops":
        return sum({"FFMA": 2, "FADD": 1, "FMUL": 1}.get(code[i].kind, 0) for i in members)
    return sum(code[i].kind == anchor for i in members)


def per_warp(counters: Any) -> dict[str, float]:
    """What one warp does in a launch the executor counted: FLOP units (a warp FFMA is 2 of them), global loads and
    stores, shared loads and stores, barriers (one per warp per __syncthreads)."""
    warps = counters.blocks * -(-counters.threads_per_block // 32)
    return {"flops": counters.flops / 32 / warps, "LDG": counters.global_load_requests / warps,
            "STG": counters.global_store_requests / warps, "STS": counters.shared_store_requests / warps,
            "BAR": counters.barriers / counters.blocks if counters.blocks else 0.0,
            "LDS": counters.shared_load_requests / warps}


def _own(found: list[Loop]) -> dict[Loop, list[int]]:
    """Each loop's own instructions: its body without the inner loops'."""
    return {lp: [i for i in range(lp.start, lp.end + 1)
                 if not any(lp.contains(q) and q.start <= i <= q.end for q in found)] for lp in found}


def _runs(code: tuple[Instruction, ...], found: list[Loop], own: dict[Loop, list[int]],
          counters: Any) -> dict[Loop, float]:
    """How often each loop's own instructions run per warp, fixed by the executor's counts (see weigh)."""
    wanted, runs = per_warp(counters), {}
    for anchor in _ANCHORS:
        left = wanted[anchor] - sum(runs[lp] * _anchor_count(code, own[lp], anchor) for lp in runs)
        open_loops = [lp for lp in found if lp not in runs and _anchor_count(code, own[lp], anchor)]
        if not open_loops:
            continue
        top = max(_anchor_count(code, own[lp], anchor) for lp in open_loops)
        hot = [lp for lp in open_loops if _anchor_count(code, own[lp], anchor) == top]
        for lp in open_loops:
            runs[lp] = max(left, 0.0) / (top * len(hot)) if lp in hot else 0.0
    for lp in sorted(found, key=lambda q: q.start - q.end):  # outermost first: a loop without anchor
        if lp not in runs:
            around = [q for q in found if q.contains(lp) and q in runs]
            runs[lp] = runs[min(around, key=lambda q: q.end - q.start)] if around else 1.0
    return runs


def per_warp_issued(code: tuple[Instruction, ...], found: list[Loop], counters: Any,
                    outside: bool = True) -> Counter[str]:
    """The machine instructions one warp issues in the launch `counters` describes, by kind: each loop's own
    instructions times its runs (see weigh), and (if `outside`, or the kernel has no loop) the code outside any
    loop once."""
    found = sorted(found, key=lambda lp: lp.end - lp.start)  # innermost first
    own = _own(found)
    runs = _runs(code, found, own, counters)
    counted: Counter[str] = Counter()
    inside = {i for lp in found for i in range(lp.start, lp.end + 1)}
    for lp in found:
        for i in own[lp]:
            counted[label(code[i])] += runs[lp]
    if outside or not found:
        counted.update(label(ins) for i, ins in enumerate(code) if i not in inside and ins.kind != "EXIT")
    return counted


def weigh(code: tuple[Instruction, ...], found: list[Loop], counters: Any) -> Mix:
    """The machine instructions per warp multiply-add, each loop weighted so that the FLOPs, loads, stores and
    barriers the machine code issues equal what the executor counted for the launch (`counters`).

    Each loop's own instructions (its inner loops apart) run as often as its first anchor says: the loops holding
    the most FFMAs take the FLOPs, then loads, stores and barriers fix the rest (a loop holding fewer of an anchor
    than another, such as the remainder of an unrolled loop, runs no more once the big one has them all). A loop
    with no anchor runs as often as the loop around it. Code outside any loop (set-up, the final store) is left
    out where there are loops: it runs once per warp, nothing beside them at the sizes predicted."""
    counted = per_warp_issued(code, found, counters, outside=False)
    fma = counted.get("FFMA", 0.0)
    if not fma:
        raise ValueError("no multiply-add (FFMA) in this kernel: a mix per multiply-add needs one (per_warp_issued "
                         "counts any kernel)")
    own = _own(found)
    runs = _runs(code, found, own, counters)
    hottest = max(found, key=lambda lp: _anchor_count(code, own[lp], "flops") * runs[lp]) if found else None
    step = Counter(label(code[i]) for i in own[hottest]) if hottest else Counter(label(i) for i in code)
    lds = {k: v for k, v in counted.items() if k.split(".")[0] == "LDS"}
    words = sum(v * (int(k.split(".")[1]) // 32 if "." in k else 1) for k, v in lds.items())
    return Mix({k: v / fma for k, v in counted.items()}, dict(step), sum(counted.values()) / fma,
               sum(lds.values()) / fma, words / fma)


def barrier_waits(code: tuple[Instruction, ...], found: list[Loop], counters: Any) -> float:
    """Times one warp waits at a barrier for global loads (LDG) it issued just before: each run of a loop whose own
    instructions hold both (a tile loop: once a step), and once for code outside the loops that holds both. A
    loop's runs are read from the executor's barrier count (the barriers of the launch shared among the loops by
    the barrier instructions each holds), which a tile loop's inner load loops cannot blur."""
    own = _own(found)
    bars = {lp: sum(code[i].kind == "BAR" for i in own[lp]) for lp in found}
    inside = {i for lp in found for i in range(lp.start, lp.end + 1)}
    outside = {ins.kind for i, ins in enumerate(code) if i not in inside}
    waits = float({"LDG", "BAR"} <= outside)
    looped = per_warp(counters)["BAR"] - outside_count(code, inside, "BAR")
    tiles = [lp for lp in found if bars[lp] and any(code[i].kind == "LDG" for i in own[lp])]
    return waits + sum(max(looped, 0.0) / sum(bars.values()) for _ in tiles)


def outside_count(code: tuple[Instruction, ...], inside: set[int], kind: str) -> int:
    """Instructions of `kind` outside every loop (they run once)."""
    return sum(ins.kind == kind for i, ins in enumerate(code) if i not in inside)


def load_passes(code: tuple[Instruction, ...], found: list[Loop], counters: Any, block: tuple[int, ...],
                arch: str, arguments: tuple[Any, ...] = ()) -> float | None:
    """Shared-memory passes one warp's loads take in the launch `counters` describes, from the machine code
    (helpers.gpu.shared_passes: each load's 32 addresses and NVIDIA's rule), each loop weighted by its runs; None where
    an address cannot be worked out from the code."""
    dims = (tuple(block) + (1, 1))[:3]
    each = shared_passes.load_passes(code, dims, shared_passes.constant_bank(arch, dims, arguments))  # type: ignore[arg-type]
    if each is None:
        return None
    found = sorted(found, key=lambda lp: lp.end - lp.start)
    own = _own(found)
    return shared_passes.per_warp(code, found, _runs(code, found, own, counters), own, each)


def kernel_work(counters: Any, device: Any, source: str, kernel: str, *, dram_bytes: float, scale: float = 1.0,
                name: str = "kernel.cu", names: tuple[str, ...] = (), sums_per_thread: int = 1,
                block: tuple[int, ...] | None = None, arguments: tuple[Any, ...] = ()) -> Any:
    """A hand-written kernel's roofline.KernelWork on `device` (a GPU spec or its name), for predict_kernel:
    the executor's counts of one launch (`counters`, from executor.Program(...).launch(...).counters), times
    `scale` (counted at a small size, priced at a larger one whose counts grow in proportion), with the
    registers and machine instructions NVRTC and nvdisasm make of `kernel` for the device's architecture.
    `dram_bytes`: what reaches DRAM at the priced size (a streaming kernel: its arrays once each). Without the
    disassembler, the instructions are the source's requests (registers still count) and no barrier waits are
    counted. `block` (threads per block
    along x, y, z; by default all along x) and `arguments` (the launch's, for the constant bank) let the machine
    code's shared loads be worked out lane by lane; shared stores keep the executor's passes."""
    from ..model import roofline

    spec = roofline.published_spec(device)
    arch = "sm_" + str(spec.compute_capability).replace(".", "")
    made = facts(source, arch, name, names)[kernel]
    warps = counters.blocks * -(-counters.threads_per_block // 32)
    other, passes, waits = None, float(counters.shared_wavefronts), 0.0
    if disassembles(arch):
        code, found = loops_of(source, arch, kernel, name, names)
        issued = per_warp_issued(code, found, counters)
        other = max(0.0, sum(issued.values()) * warps - counters.flops / roofline.WARP_FMA_FLOPS) * scale
        loads = load_passes(code, found, counters, block or (counters.threads_per_block,), arch, arguments)
        if loads is not None:
            passes += loads * warps - counters.shared_load_wavefronts
        waits = barrier_waits(code, found, counters) * counters.blocks * scale
    return roofline.KernelWork(
        flops=counters.flops * scale, shared_passes=passes * scale, barrier_waits=waits,
        global_lines=(counters.global_load_lines + counters.global_store_lines) * scale,
        requests=(counters.global_load_requests + counters.global_store_requests + counters.shared_load_requests
                  + counters.shared_store_requests) * scale,
        dram_bytes=dram_bytes, threads_per_block=counters.threads_per_block,
        shared_bytes_per_block=counters.shared_bytes_per_block, sums_per_thread=sums_per_thread,
        registers_per_thread=made.registers, other_instructions=other)
