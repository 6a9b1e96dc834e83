"""Chapter 07's ladder of SGEMM kernels (helpers/kernels/sgemm.cu): how each rung is launched, what the CPU
executor counts of it, and what helpers.model.roofline predicts it takes on a GPU.

The counts are made at a small size (COUNT_N), where the executor is quick, and scaled to the size predicted: a
rung's loads, shared-memory passes and FLOPs grow as n³, its stores as n². The caches are not counted by the
executor; roofline.matmul_dram_bytes is the written-down assumption about them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from numbers import Integral
from typing import Any

import numpy as np

from .. import executor
from ..core.project import DATA
from ..core.validate import positive_int, positive_number
from ..executor import Counters
from ..gpu import compiled
from ..gpu.cuda import GPU, kernel_source
from ..measuring import specs, workloads
from ..measuring.timing import format_seconds as h_seconds
from ..model import roofline

SOURCE = "sgemm.cu"
#: The template arguments rungs 5 to 7 are instantiated with: BM, BN, BK, TM, TN (the worklogs' 128, 128, 8, 8, 8).
TILES = (128, 128, 8, 8, 8)
#: The size the executor counts each rung at (a multiple of every rung's tile, and quick: about 2 s for all seven).
COUNT_N = 128
#: The size the chapter predicts and, on a GPU, measures: the published worklogs' size.
BIG_N = 4096


def template(kernel: str, tiles: Sequence[int] = TILES) -> str:
    """The name expression of a template kernel of sgemm.cu: 'sgemm_2d<128, 128, 8, 8, 8>'; a ValueError for a
    kernel that is not one of its templates, or tiles that are not one whole number for each of its parameters."""
    parameters = templates()
    if not isinstance(kernel, str) or kernel not in parameters:
        raise ValueError(f"kernel must be a template kernel of {SOURCE}: one of {', '.join(parameters)}; got "
                         f"{kernel!r:.40}")
    wanted = parameters[kernel]
    if not isinstance(tiles, tuple | list) or len(tiles) != len(wanted):
        raise ValueError(f"tiles must be {len(wanted)} whole numbers, {kernel}'s {', '.join(wanted)}; got "
                         f"{tiles!r:.60}")
    sizes = (str(positive_int(name, t, "a tile size")) for name, t in zip(wanted, tiles, strict=True))
    return f"{kernel}<{', '.join(sizes)}>"


@cache
def templates() -> dict[str, tuple[str, ...]]:
    """The template kernels of sgemm.cu, each with the names of its template parameters."""
    found = re.findall(r"template\s*<([^>]*)>\s*__global__\s+void\s+(\w+)", kernel_source(SOURCE))
    return {name: tuple(p.split()[-1] for p in params.split(",")) for params, name in found}


@dataclass(frozen=True)
class Rung:
    """One kernel of the ladder: its name, what changed, and the shape of its launch."""

    label: str
    kernel: str  # the kernel's name in sgemm.cu, or a template's name expression
    changed: str  # one line: what this rung does differently
    tile: tuple[int, int]  # the (rows, columns) of C one block computes
    block: tuple[int, ...]  # threads per block
    sums_per_thread: int  # outputs (independent sums) per thread
    rows_first: bool = False  # blockIdx.x runs down the rows of C (the naive kernel) rather than along columns
    any_n: bool = False  # bounds-checked: any n; otherwise n must be a multiple of the tile

    @property
    def threads(self) -> int:
        """Threads per block."""
        return int(np.prod(self.block))

    def launch(self, n: int) -> tuple[tuple[int, int], tuple[int, ...]]:
        """(grid, block) for an n x n product; a ValueError naming the tile when n is not a multiple of it."""
        n = positive_int("n", n)
        rows, cols = self.tile
        if not self.any_n and (n % rows or n % cols):
            raise ValueError(f"{self.label}: n = {n:,} is not a multiple of its {rows} x {cols} tile; this kernel has "
                             f"no bounds checks (as the published worklogs' kernels): use n = {rows * -(-n // rows):,}")
        down, across = -(-n // rows), -(-n // cols)
        return ((down, across) if self.rows_first else (across, down)), self.block


_BM, _BN, _BK, _TM, _TN = TILES
_TILED = dict(tile=(_BM, _BN), block=((_BM // _TM) * (_BN // _TN),), sums_per_thread=_TM * _TN)

RUNGS: tuple[Rung, ...] = (
    Rung("1 naive", "sgemm_naive", "one thread per element of C; a warp walks down a column of C",
         (32, 32), (32, 32), 1, rows_first=True, any_n=True),
    Rung("2 coalesced", "sgemm_coalesced", "a warp walks along a row of C: neighbouring threads, neighbouring loads",
         (32, 32), (32, 32), 1, any_n=True),
    Rung("3 shared tiles", "sgemm_shared", "32 x 32 tiles of A and B in shared memory, each number loaded once",
         (32, 32), (32, 32), 1, any_n=True),
    Rung("4 1D block tiling", "sgemm_1d", "8 outputs per thread: one shared read of B serves 8 multiply-adds",
         (64, 64), (512,), 8),
    Rung("5 2D block tiling", template("sgemm_2d"), "8 x 8 outputs per thread, from 8 + 8 numbers in registers",
         **_TILED),
    Rung("6 float4", template("sgemm_vectorized"), "16-byte loads; A transposed in shared memory", **_TILED),
    Rung("7 no bank conflicts", template("sgemm_conflict_free"),
         "padded A tile, spread float4 columns of B: one pass per shared read", **_TILED),
)


def rung(label: str | int) -> Rung:
    """The rung whose label starts with `label` (1, '1', 'naive', '5 2D'...); a ValueError listing them otherwise."""
    if isinstance(label, Integral) and not isinstance(label, bool | np.bool_):
        label = str(int(label))
    if not isinstance(label, str) or not label.strip():
        found = []
    elif label.strip().isdigit():
        found = [r for r in RUNGS if r.label.split(" ", 1)[0] == label.strip()]
    else:
        found = [r for r in RUNGS if r.label.startswith(label) or r.label.split(" ", 1)[1].startswith(label)]
    if len(found) != 1:
        raise ValueError(f"no single rung called {label!r:.40}; the rungs: {', '.join(r.label for r in RUNGS)}")
    return found[0]


def kernel_text(label: str) -> str:
    """The part of sgemm.cu that is rung `label`: its comment, its #defines and its kernel."""
    number = rung(label).label.split(" ", 1)[0]
    parts = re.split(r"(?m)^(?=// \d+\. )", kernel_source(SOURCE))
    return next(part for part in parts if part.startswith(f"// {number}. ")).strip()


def name_expressions() -> list[str]:
    """The template instances the ladder launches, for cupy.RawModule(code=..., name_expressions=...)."""
    return [r.kernel for r in RUNGS if "<" in r.kernel]


@cache
def _program() -> executor.Program:
    return executor.Program(kernel_source(SOURCE), name_expressions=name_expressions())


def run_on_executor(r: Rung, a: np.ndarray, b: np.ndarray,
                    name_expressions: Sequence[str] = ()) -> tuple[np.ndarray, Counters]:
    """C = A @ B by rung `r` on the CPU executor, and what the launch counted. name_expressions: template
    instances beyond the ladder's (a tile size of your own). A and B: two n x n float32 NumPy arrays, n at most
    MAX_COUNT_N."""
    n = _square_pair(_a_rung(r) and a, b)
    if type(name_expressions) not in (tuple, list) or not all(type(e) is str for e in name_expressions):
        raise TypeError(f"name_expressions must be a list of template instances such as {RUNGS[4].kernel!r}; got "
                        f"{name_expressions!r:.60}")
    grid, block = r.launch(n)
    c = np.zeros((n, n), np.float32)
    program = executor.Program(kernel_source(SOURCE), name_expressions) if name_expressions else _program()
    launch = program.launch(r.kernel, grid, block, (a, b, c, np.int32(n)))
    return c, launch.counters


def _a_rung(r: Any) -> Rung:
    """`r` if it is a Rung; otherwise a TypeError saying how to get one."""
    if not isinstance(r, Rung):
        raise TypeError(f"r must be a rung, as make_it_fast.rung(label) gives; got {type(r).__name__} {r!r:.40}")
    return r


def _a_gpu(gpu: Any) -> Any:
    """`gpu` if it is what h.cuda.gpu() gives; otherwise a TypeError saying so."""
    if not isinstance(gpu, GPU):
        raise TypeError(f"gpu must be what h.cuda.gpu() gives; got {type(gpu).__name__} {gpu!r:.40}")
    return gpu


def _square_pair(a: Any, b: Any) -> int:
    """n, for two n x n float32 NumPy arrays of which the executor can run a product; a ValueError otherwise."""
    shapes = [getattr(x, "shape", None) for x in (a, b)]
    if not all(type(x) is np.ndarray and x.dtype == np.float32 for x in (a, b)) or len(shapes[0]) != 2 \
            or shapes[0][0] != shapes[0][1] or shapes[1] != shapes[0] or not shapes[0][0]:
        raise ValueError(f"a and b must be two n x n float32 NumPy arrays (the rungs multiply square matrices of one "
                         f"size); got {_described(a)} and {_described(b)}")
    return _count_size(shapes[0][0])


def _described(x: Any) -> str:
    """'float64 array of shape (2, 3)', or the type's name."""
    return f"{x.dtype} array of shape {x.shape}" if type(x) is np.ndarray else type(x).__name__


def _count_size(n: Any) -> int:
    """`n` if the executor can run a product of that side (1 to MAX_COUNT_N); a ValueError otherwise."""
    n = positive_int("n", n)
    if n > MAX_COUNT_N:
        raise ValueError(f"n = {n:,}: the CPU executor counts at most n = {MAX_COUNT_N} (it checks every access of "
                         f"every thread); the counts per multiply-add are the same at {COUNT_N}")
    return n


def counts(label: str | int, n: int = COUNT_N) -> Counters:
    """What rung `label` does at n x n on the executor (checked against NumPy first: a wrong kernel's counts are
    worth nothing). At most MAX_COUNT_N: the executor checks every access."""
    r = rung(label)
    n = _count_size(n)
    r.launch(n)  # a size the rung cannot run is refused here, by name
    return _counts(r.label, n)


#: The largest n counts() and run_on_executor run: 256³ multiply-adds take the executor a few seconds a rung.
MAX_COUNT_N = 256


@cache
def _counts(label: str, n: int) -> Counters:
    r = rung(label)
    a, b = workloads.make_inputs("matmul", n, "float32", "numpy")
    c, counted = run_on_executor(r, a, b)
    if not np.allclose(c, a @ b, rtol=1e-4, atol=1e-3 * np.sqrt(n)):
        raise AssertionError(f"{r.label}: C differs from A @ B at n = {n}")
    return counted


def work(r: Rung, counted: Counters, device: specs.DeviceSpec | str, n: int = BIG_N,
         counted_at: int = COUNT_N, made: dict[str, Any] | None = None) -> roofline.KernelWork:
    """What rung `r` does at n x n on `device`: the executor's counts at `counted_at`, scaled (n³ for loads,
    shared passes and FLOPs, n² for stores), the DRAM bytes of the cache model, and what the compiler made of it
    (`made`, as compile_rung gives it; by default the stored facts for the device's architecture, if any)."""
    _a_rung(r).launch(positive_int("n", n))  # a size the rung cannot run has no time
    if not isinstance(counted, Counters):
        raise TypeError(f"counted must be a rung's Counters, as make_it_fast.counts(label) gives; got "
                        f"{type(counted).__name__}")
    grow, spread = (n / positive_int("counted_at", counted_at)) ** 3, (n / counted_at) ** 2
    c = counted
    spec = roofline.published_spec(device)
    specs.sm_limits(spec)  # a GPU without its SMs on file is refused here, naming those with them
    made = made if made is not None else built(r.label, arch_of(spec))
    registers = made["registers"] if made else None
    occ = roofline.occupancy(spec, c.threads_per_block, c.shared_bytes_per_block, registers)
    resident = occ.blocks_per_sm * spec.sms  # type: ignore[operator]
    fmas = c.flops * grow / roofline.WARP_FMA_FLOPS  # warp multiply-adds at n
    loads = made["lds_passes_per_fma"] * fmas if made and "lds_passes_per_fma" in made else None
    warps_per_block = -(-c.threads_per_block // 32)
    return roofline.KernelWork(
        flops=c.flops * grow,
        shared_passes=(c.shared_wavefronts - c.shared_load_wavefronts) * grow + loads if loads is not None
        else c.shared_wavefronts * grow,
        barrier_waits=(made["waits_per_fma"] * fmas / warps_per_block if made and "waits_per_fma" in made
                       else c.barriers / 2 * grow),  # no machine code: a rung waits once a step, 2 barriers
        global_lines=c.global_load_lines * grow + c.global_store_lines * spread,
        requests=(c.global_load_requests + c.shared_load_requests + c.shared_store_requests) * grow
        + c.global_store_requests * spread,
        dram_bytes=roofline.matmul_dram_bytes(n, r.tile, resident, spec.l2_bytes, r.rows_first),
        threads_per_block=c.threads_per_block, shared_bytes_per_block=c.shared_bytes_per_block,
        sums_per_thread=r.sums_per_thread, registers_per_thread=registers,
        other_instructions=(made["other_per_fma"] * c.flops * grow / roofline.WARP_FMA_FLOPS
                            if made and "other_per_fma" in made else None))  # no disassembler: registers alone


#: What NVRTC and nvdisasm made of every rung, per architecture (python -m helpers.chapters.make_it_fast writes it):
#: stored, so every machine (a Mac, Colab's CPU runtime) predicts from the same compiled facts, labelled with their
#: versions.
COMPILED = DATA / "sgemm-compiled.json"
#: The architectures on file: Volta (V100), Turing (T4), Ampere (A100, RTX 30), Ada (L4), Hopper (H100, H200).
COMPILED_ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
#: nvdisasm 13 no longer reads Volta's code: a V100's machine code is read from Turing's, the same instruction
#: encoding ('We map Turing's instruction space, finding the same encoding as Volta', Jia et al.,
#: https://arxiv.org/abs/1903.07486); its registers are Volta's own (the assembler's report).
SASS_STAND_IN = {"sm_70": "sm_75"}


def arch_of(spec: specs.DeviceSpec) -> str:
    """The architecture NVRTC compiles for a GPU spec: compute capability 7.5 is 'sm_75'."""
    return "sm_" + str(spec.compute_capability).replace(".", "")


@cache
def stored() -> dict[str, Any]:
    """The stored compiled facts (COMPILED): {"nvrtc", "nvdisasm", "archs": {arch: {rung label: facts}}}."""
    return json.loads(COMPILED.read_text())


def built(label: str, arch: str) -> dict[str, Any] | None:
    """What the compiler made of rung `label` (its full label, '5 2D block tiling') for `arch` ('sm_75'):
    registers, spills, shared bytes, the mix, from COMPILED; None for a kernel or an architecture not on file."""
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d+", arch):
        raise ValueError(f"arch must look like 'sm_75' (T4) or 'sm_90' (H100); got {arch!r:.40}")
    if not isinstance(label, str):
        raise ValueError(f"label must be a rung's label such as '5 2D block tiling'; got {label!r:.40}")
    return stored()["archs"].get(arch, {}).get(label)


def compile_rung(r: Rung, arch: str, counted: Counters | None = None) -> dict[str, Any]:
    """Rung `r` (or a tile size of your own: a Rung of sgemm.cu's templates) compiled here for `arch` by NVRTC: its
    registers, spills and shared bytes, and, where nvdisasm is installed, its machine instructions per multiply-add,
    each loop weighted by the executor's counts of the same kernel (`counted`; the ladder's own by default)."""
    names = tuple(dict.fromkeys([*name_expressions(), *([r.kernel] if "<" in r.kernel else [])]))
    made = compiled.facts(kernel_source(SOURCE), arch, SOURCE, names)[r.kernel]
    facts = {"registers": made.registers, "spill_stores": made.spill_stores, "spill_loads": made.spill_loads,
             "shared_bytes": made.shared_bytes, "barriers": made.barriers, "nvrtc": made.nvrtc}
    if not compiled.disassembles(SASS_STAND_IN.get(arch, arch)):
        return facts
    sass = SASS_STAND_IN.get(arch, arch)
    code, found = compiled.loops_of(kernel_source(SOURCE), sass, r.kernel, SOURCE, names)
    counted = counted if counted is not None else counts(r.label)
    mix = compiled.weigh(code, found, counted)
    fmas = counted.flops / roofline.WARP_FMA_FLOPS / (counted.blocks * -(-counted.threads_per_block // 32))  # a warp's
    n = COUNT_N  # the arguments the counts were made with: A, B, C and n
    passes = compiled.load_passes(code, found, counted, r.block, sass, (np.zeros(1, np.float32),) * 3 + (np.int32(n),))
    per_fma = {k: round(v, 6) for k, v in sorted(mix.per_fma.items())}
    return {**facts, "sass_of": sass, "step": mix.step, "per_fma": per_fma,
            "issued_per_fma": round(mix.issued_per_fma, 6), "other_per_fma": round(mix.other_per_fma, 6),
            "lds_per_fma": round(mix.lds_per_fma, 6),
            **({"lds_passes_per_fma": round(passes / fmas, 6)} if passes is not None else {}),
            "waits_per_fma": round(compiled.barrier_waits(code, found, counted) / fmas, 9)}


#: The kinds a compiled step is shown by: the multiply-adds, shared loads (4 and 16 bytes), global loads, barriers.
STEP_KINDS = ("FFMA", "LDS", "LDS.128", "LDG", "LDG.128", "BAR")


def show_compiled(device: specs.DeviceSpec | str) -> None:
    """Print what the compiler made of every rung for `device`'s architecture (the stored facts): registers,
    spills, shared memory, the warps an SM holds with those registers, one step of the hottest loop by kind, the
    instructions issued per multiply-add with every loop weighted, and the passes its shared loads take per
    multiply-add (helpers.gpu.shared_passes)."""
    spec = roofline.published_spec(device)
    arch, data = arch_of(spec), stored()
    if arch not in data["archs"]:
        print(f"{spec.name} ({arch}): no compiled facts on file (on file: {', '.join(data['archs'])})")
        return
    sass = SASS_STAND_IN.get(arch, arch)
    print(f"{spec.name}: compiled for {arch} by NVRTC {data['nvrtc']}, machine code read by nvdisasm "
          f"{data['nvdisasm']}" + (f" from {sass} (the same instructions)" if sass != arch else "") +
          " (stored in helpers/data/sgemm-compiled.json)")
    print(f"{'rung':<22}{'registers':>10}{'spills':>7}{'shared B':>9}{'warps/SM':>9}{'instr./FFMA':>12}"
          f"{'passes/FFMA':>12}   one step of the hottest loop")
    for r in RUNGS:
        f = data["archs"][arch][r.label]
        counted = counts(r.label)
        occ = roofline.occupancy(spec, counted.threads_per_block, counted.shared_bytes_per_block, f["registers"])
        step = ", ".join(f"{f['step'][k]} {k}" for k in STEP_KINDS if f["step"].get(k))
        other = sum(v for k, v in f["step"].items() if k not in STEP_KINDS)
        passes = f"{f['lds_passes_per_fma']:.2f}" if "lds_passes_per_fma" in f else "?"
        print(f"{r.label:<22}{f['registers']:>10}{f['spill_stores'] + f['spill_loads']:>7}{f['shared_bytes']:>9,}"
              f"{occ.warps_per_sm:>9}{f['issued_per_fma']:>12.2f}{passes:>12}   {step}, {other} other")


def compiled_here(device: specs.DeviceSpec | str, label: str) -> str:
    """One line: rung `label` compiled on this machine for `device`'s architecture just now (NVRTC's version, the
    registers), or why it cannot be (no NVRTC; no disassembler: registers alone)."""
    from ..gpu import nvrtc

    spec, r = roofline.published_spec(device), rung(label)
    if not nvrtc.available():
        return f"NVRTC is missing here, so nothing was compiled: the stored facts above stand. {nvrtc.why()}"
    made = compile_rung(r, arch_of(spec))
    line = (f"Compiled here just now by NVRTC {made['nvrtc']} for {arch_of(spec)}: {r.label} uses {made['registers']} "
            "registers a thread")
    if "step" not in made:
        return line + f"; NVIDIA's disassembler is not here, so registers alone ({compiled.INSTALL_HINT})."
    return line + (f", and one step of its hottest loop issues "
                   f"{', '.join(f'{v} {k}' for k, v in made['step'].items() if k in STEP_KINDS)}.")


def sm_limits_text(device: specs.DeviceSpec | str) -> str:
    """What one SM of `device` holds (registers, threads, blocks, shared memory), for exercise 3."""
    spec = roofline.published_spec(device)
    sm = specs.sm_limits(spec)
    return (f"An SM of the {spec.name} (compute capability {spec.compute_capability}) holds {sm.registers:,} "
            f"registers, {sm.max_threads:,} threads ({sm.max_threads // 32} warps), {sm.max_blocks} blocks and "
            f"{sm.shared_bytes // 1024} KiB of shared memory, shared by the blocks it runs at once.")


def compile_ladder() -> dict[str, Any]:
    """Every rung for every architecture in COMPILED_ARCHS, with the NVRTC and nvdisasm versions that made them."""
    from ..gpu import nvrtc

    return {"nvrtc": nvrtc.version(), "nvdisasm": compiled.disassembler_version(),
            "archs": {arch: {r.label: compile_rung(r, arch) for r in RUNGS} for arch in COMPILED_ARCHS}}


def predict(label: str, device: specs.DeviceSpec | str, n: int = BIG_N) -> roofline.KernelTime:
    """The predicted time of rung `label` at n x n on `device` (helpers.model.roofline.predict_kernel)."""
    r = rung(label)
    return roofline.predict_kernel(device, work(r, counts(r.label), device, n))


def chapter_gpu(gpu: Any) -> Any:
    """h.cuda.gpu() with device_spec's spec: its predictions, and the label they are printed under, are for the card
    the model can describe (the T4 where it knows nothing of the card here; the note then says so)."""
    device = device_spec(_a_gpu(gpu))
    return dataclasses.replace(gpu, spec=device, own_specs=gpu.own_specs and device.name == gpu.spec.name)


def device_spec(gpu: Any) -> specs.DeviceSpec:
    """The spec chapter 07 predicts for: the GPU here (h.cuda.gpu()) with the SM count and compute capability its
    driver reports, when its published specs are on file and the model knows its SMs; otherwise the T4's."""
    reference = specs.get(specs.REFERENCE_GPU)
    if not _a_gpu(gpu).here or not gpu.own_specs:
        return reference
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    capability = f"{props['major']}.{props['minor']}"
    if capability not in specs.SM_LIMITS:
        return reference
    return dataclasses.replace(gpu.spec, sms=int(props["multiProcessorCount"]), compute_capability=capability,
                               sms_source="read from the card here (cupy.cuda.runtime.getDeviceProperties)")


def gflops(n: int, seconds: float) -> float:
    """GFLOP/s of an n x n x n matmul done in `seconds` (a positive, finite time)."""
    rate = workloads.matmul_flops(n) / positive_number("seconds", seconds, "the time the matmul took") / 1e9
    if not math.isfinite(rate):
        raise ValueError(f"seconds must be a positive, finite number (the time the matmul took), got {seconds!r:.40}: "
                         "too small for any rate")
    return rate


@dataclass(frozen=True)
class Row:
    """One rung's line of the chapter's table: its counters at COUNT_N and what they allow on a device."""

    rung: Rung
    counted: Counters
    predicted: roofline.KernelTime

    @property
    def occupancy(self) -> roofline.Occupancy:
        """The blocks and warps one SM holds of this rung (threads and shared memory; registers not counted)."""
        return self.predicted.occupancy


def table(device: specs.DeviceSpec | str, n: int = BIG_N) -> list[Row]:
    """Every rung's counters and prediction on `device`."""
    spec = roofline.published_spec(device)
    return [Row(r, counts(r.label), predict(r.label, spec, n)) for r in RUNGS]


def explain(row: Row, device: specs.DeviceSpec | str, n: int = BIG_N) -> str:
    """One rung's predicted time unit by unit: each unit's count at n, the rate it is served at on `device`, and the
    time the model gives it, so the table of times (its terms) can be rebuilt by hand from the counts."""
    if not isinstance(row, Row):
        raise ValueError(f"explain() takes one row of h.make_it_fast.table(); got {row!r:.60}")
    spec = roofline.published_spec(device)
    w, terms = work(row.rung, row.counted, spec, n), row.predicted.terms
    clock, sms = roofline.sm_clock(spec), spec.sms
    per_second = f"{sms} SMs x {clock / 1e6:,.0f} MHz = {sms * clock:.3g} SM-clocks a second"  # type: ignore[operator]
    memory = roofline.MEMORY_EFFICIENCY["gpu"].value
    lanes = specs.sm_limits(spec).fp32_lanes
    pipe, rate = roofline.SCHEDULERS.value * 32 / lanes, roofline.fp32_issue_rate(spec).value
    other = "" if w.other_instructions is None else f" and {w.other_instructions:.3g} other instructions"
    lines = [
        f"{row.rung.label} on the {spec.name}, n = {n:,}: every unit runs on {per_second}",
        f"- arithmetic: {w.flops / roofline.WARP_FMA_FLOPS:.3g} warp FFMAs (FLOPs / {roofline.WARP_FMA_FLOPS}){other}, "
        f"issued by {roofline.SCHEDULERS.value} schedulers per SM, one a clock each. An FFMA holds the float32 pipe "
        f"{pipe:g} clocks ({lanes} lanes per SM), compiled code fills {rate:.0%} of those slots, and the other "
        f"instructions fill the clocks an FFMA leaves free ({pipe - 1:g} each), then slots of their own: "
        f"{h_seconds(terms['arithmetic'])}",
        f"- shared memory: {w.shared_passes:.3g} passes at {roofline.SHARED_PASSES_PER_CLOCK.value:g} a clock per SM: "
        f"{h_seconds(terms['shared memory'])}",
        f"- L1 lines: {w.global_lines:.3g} lines of 128 bytes at {roofline.L1_LINES_PER_CLOCK.value:g} a clock per SM: "
        f"{h_seconds(terms['L1 lines'])}",
        "- loads + issue: " + (f"L1 lines + arithmetic (it multiplies what it just loaded): "
                               f"{h_seconds(terms['loads + issue'])}" if terms["loads + issue"]
                               else "0 (it multiplies numbers it keeps in shared memory or registers)"),
        f"- DRAM: {w.dram_bytes:.3g} bytes (the cache model) at {spec.peak_bandwidth / 1e9:,.0f} GB/s x {memory:g}: "
        f"{h_seconds(terms['DRAM'])}",
        f"The slowest unit, {row.predicted.bound}, sets the time: {h_seconds(row.predicted.seconds)} with the "
        "kernel's fixed floor.",
    ]
    return "\n".join(lines)


def show_table(rows: Sequence[Row], n: int = BIG_N) -> None:
    """Print the counters table: one line per rung."""
    if type(rows) not in (list, tuple) or not all(isinstance(row, Row) for row in rows):
        raise TypeError(f"rows must be the list make_it_fast.table(device) gives; got {type(rows).__name__} "
                        f"{rows!r:.40}")
    n = positive_int("n", n)
    head = (f"{'rung':<22}{'sectors/load':>13}{'bank ways':>10}{'FLOP/B':>10}{'outputs':>8}{'threads':>8}"
            f"{'shared B':>9}{'warps/SM':>9}{'bound by':>15}{'GFLOP/s':>9}")
    print(head)
    for row in rows:
        c, p = row.counted, row.predicted
        ways = f"{c.ways_per_request:.2f}" if c.shared_phases else "-"
        print(f"{row.rung.label:<22}{c.load_sectors_per_request:>13.2f}{ways:>10}{c.flops_per_byte:>10.2f}"
              f"{row.rung.sums_per_thread:>8}{c.threads_per_block:>8}{c.shared_bytes_per_block:>9,}"
              f"{row.occupancy.warps_per_sm:>9}{p.bound:>15}{gflops(n, p.seconds):>9,.0f}")


def gpu_kernels(cupy: Any) -> dict[str, Any]:
    """Every rung's kernel, compiled by CuPy as one cupy.RawModule: rung label -> kernel."""
    module = cupy.RawModule(code=kernel_source(SOURCE), name_expressions=name_expressions())
    return {r.label: module.get_function(r.kernel) for r in RUNGS}


def measure(gpu: Any, r: Rung, n: int, kernel: Any) -> Any:
    """Rung `r` at n x n timed on the GPU (h.benchmark, synchronised) on fresh random inputs; None without one."""
    grid, block = _a_rung(r).launch(n)  # a size the rung cannot run is refused with or without a GPU
    if not _a_gpu(gpu).here:
        return None
    import cupy

    a, b = workloads.make_inputs("matmul", n, "float32", "cupy")
    c = cupy.empty((n, n), dtype=cupy.float32)
    return gpu.measure(lambda: kernel(grid, block, (a, b, c, np.int32(n))), flops=workloads.matmul_flops(n),
                       label=r.label)


# python -m helpers.chapters.make_it_fast: rewrite the stored compiled facts (needs NVRTC, nvdisasm)
if __name__ == "__main__":
    COMPILED.write_text(json.dumps(compile_ladder(), indent=1) + "\n")
    print(f"wrote {COMPILED}")
