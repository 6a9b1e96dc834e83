"""What this machine's CPU is and how fast it could possibly go: model, cores, SIMD, clock and peak FLOP/s.

Peak FP32 = cores x clock x FMA units x SIMD lanes x 2 (an FMA is two FLOPs). Each input records where it
came from, so a learner can check the arithmetic. A published clock (cpufreq's maximum, the "@ 2.20GHz" in an
Intel CPU's name, Apple's published clocks) is preferred. Virtual machines often report a clock below the one
the cores really sustain, so a short one-core BLAS calibration puts a floor under the clock: the peak we report
is never below what the machine demonstrably reaches. Where that floor has to raise the clock, the raised clock
is set with a margin, rounded up to 0.1 GHz and kept per CPU model in the user's cache directory, so the same
machine reports the same peak on every run. The bf16 peak counts AMX-BF16 and AVX512_BF16 where the CPU has them.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from threadpoolctl import threadpool_limits

#: The best fraction of peak a tuned BLAS single-precision matmul reaches on a CPU (OpenBLAS, MKL and
#: Accelerate top out at about 85-92%). Used only to turn a measured GFLOP/s into a lower bound on the clock.
BLAS_BEST_EFFICIENCY = 0.9
#: How far above a trusted maximum clock the BLAS-implied clock must be before we conclude a matrix unit did the work.
MATRIX_UNIT_FACTOR = 1.5
#: A clock inferred from BLAS is set this far above the least clock the BLAS rate allows (and a base or reported
#: clock is used only with this much to spare), so that a later calibration a few % faster than this one, which is
#: noise, finds the clock already high enough and leaves the peak alone.
INFERRED_MARGIN = 1.05
#: The step an inferred clock is rounded up to, in Hz.
CLOCK_STEP_HZ = 100_000_000
_MATRIX_STEP_FLOPS = 1_000_000_000  # the step an inferred matrix-unit peak per core is rounded up to
_CALIBRATION_CPUS = 4  # the one-core calibration is pinned to at most this many CPUs in turn ...
_CALIBRATION_BUDGET_S = 0.12  # ... which share this much CPU time (3x that where nothing is kept yet)

# bf16 FLOPs per cycle per core. AMX-BF16: Intel's solution brief "Accelerate AI Workloads with Intel AMX", p. 4
# (https://www.intel.com/content/www/us/en/products/docs/accelerator-engines/advanced-matrix-extensions/ai-solution-brief.html,
# quoted in PyTorch's AMX recipe, https://pytorch.org/tutorials/recipes/amx.html): 4th Gen Xeon Scalable processors
# with AMX "can also perform 1,024 BF16 operations per cycle, as compared to 64 FP32 operations per cycle". The
# 64 FP32 operations are AVX-512's 2 FMA units x 16 lanes x 2 FLOP, so Intel counts FLOPs: 1,024 bf16 FLOP per
# cycle per core, 512 multiply-adds (one 16x32 by 32x16 tile product, TDPBF16PS, is 8,192 multiply-adds).
AMX_BF16_FLOPS_PER_CYCLE = 1024
_AMX_BF16 = ("AMX-BF16 (amx_bf16 in the CPU flags): each core's tile unit (TMUL) does 1,024 bf16 FLOP per cycle "
             "(512 multiply-adds), Intel: \"1,024 BF16 operations per cycle, as compared to 64 FP32 operations per "
             "cycle\" [Accelerate AI Workloads with Intel AMX, p. 4, https://www.intel.com/content/www/us/en/products/"
             "docs/accelerator-engines/advanced-matrix-extensions/ai-solution-brief.html]")
# AVX512_BF16: VDPBF16PS "performs a SIMD dot-product of two BF16 pairs and accumulates into a packed single
# precision register" (Intel SDM vol. 2, https://www.intel.com/content/www/us/en/developer/articles/technical/
# intel-sdm.html; the entry online: https://www.felixcloutier.com/x86/vdpbf16ps): 2 multiply-adds per fp32 lane.
_AVX512_BF16 = ("AVX512_BF16 (avx512_bf16 in the CPU flags): VDPBF16PS does a dot product of two bf16 pairs in each "
                "fp32 lane, twice the fp32 SIMD rate [Intel SDM vol. 2, VDPBF16PS, "
                "https://www.felixcloutier.com/x86/vdpbf16ps]")
_APPLE_BF16 = ("Apple publishes no bf16 rate for its cores or its matrix unit, so bf16 is counted like fp32 "
               "(XLA:CPU and NumPy-style libraries convert bf16 to fp32 and compute in fp32)")
_NO_BF16 = ("no bf16 units counted for this CPU (its flags have neither amx_bf16 nor avx512_bf16): XLA:CPU and "
            "NumPy-style libraries convert bf16 to fp32 and compute in fp32")

#: How far a stated clock is trusted: a maximum boost clock (cpufreq, Apple's published clocks), a published base
#: clock that cores boost above (an Intel CPU's name), or what the OS or a VM reports it runs at.
ClockKind = Literal["max", "base", "reported"]


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from (a file, a command, a rule of thumb or a measurement)."""

    value: float | int | str
    source: str


@dataclass(frozen=True)
class CPUInfo:
    """This machine's CPU, with peak FLOP/s estimates whose every input is sourced."""

    model: str
    arch: str
    logical_cpus: int  # hardware threads this process may run on
    cores: Sourced  # physical cores behind those threads (what the peak counts)
    simd: str  # "AVX-512", "AVX2", "AVX", "SSE2", "NEON", ...
    simd_bits: int
    fma_units: Sourced  # vector FMA pipes per core
    clock_hz: Sourced  # the clock used for the peak
    nominal_clock_hz: Sourced | None  # what the OS or the vendor states, if anything
    peak_bandwidth: Sourced  # bytes/s of main memory, measured by a large NumPy copy
    blas_fp32_per_core: Sourced | None = None  # the best FP32 FLOP/s one core reached in NumPy's BLAS here
    matrix_fp32_per_core: Sourced | None = None  # FP32 peak per core of a matrix unit beside the lanes (Apple AMX)
    bf16_rate: Sourced | None = None  # bf16 FLOP per cycle per core of bf16 units, and why; None: computed in fp32
    blas_fp32_this_run: float | None = None  # the FP32 FLOP/s one core reached in this process's calibration
    blas_fp32_per_cycle: Sourced | None = None  # the FP32 FLOP a cycle one core can show in NumPy's BLAS, and why

    @property
    def matrix_unit(self) -> bool:
        """Whether NumPy's BLAS runs on a matrix unit beside the SIMD lanes (it beat them by far, as on Apple's AMX)."""
        return self.matrix_fp32_per_core is not None

    @property
    def flops_per_cycle_fp32(self) -> int:
        """FP32 FLOPs one core can finish per cycle: FMA units x lanes x 2."""
        return int(self.fma_units.value) * (self.simd_bits // 32) * 2

    @property
    def peak_fp32_per_core(self) -> float:
        """Peak FP32 FLOP/s of one core (at least what its BLAS demonstrated, where a matrix unit does the work)."""
        simd = self.flops_per_cycle_fp32 * float(self.clock_hz.value)
        if self.matrix_fp32_per_core is not None:
            return max(simd, float(self.matrix_fp32_per_core.value))
        return simd

    @property
    def peak_fp32(self) -> float:
        """Peak FP32 FLOP/s of all the cores this process can use."""
        return self.peak_fp32_per_core * int(self.cores.value)

    @property
    def peak_fp64(self) -> float:
        """Peak FP64 FLOP/s: half the lanes of FP32."""
        return self.peak_fp32 / 2

    @property
    def bf16_flops_per_cycle(self) -> Sourced:
        """bf16 FLOPs one core finishes per cycle, and why: the fp32 rate where the CPU has no bf16 units."""
        return self.bf16_rate or Sourced(self.flops_per_cycle_fp32, _NO_BF16)

    @property
    def peak_bf16(self) -> float:
        """Peak bf16 FLOP/s: the bf16 units' rate where there are any, never below the FP32 peak (bf16 work can
        always run in fp32, as XLA:CPU and NumPy-style libraries run it), so no bf16 measurement exceeds it."""
        units = float(self.bf16_flops_per_cycle.value) * float(self.clock_hz.value) * int(self.cores.value)
        return max(self.peak_fp32, units)

    def peak_flops(self, dtype: str = "float32") -> float | None:
        """Peak FLOP/s for a dtype name; None for dtypes the CPU has no fast path for."""
        return {"float32": self.peak_fp32, "float64": self.peak_fp64, "bfloat16": self.peak_bf16}.get(dtype)

    def formula(self, dtype: str = "float32") -> str:
        """The peak arithmetic for 'float32', 'float64' or 'bfloat16', spelled out with this machine's numbers."""
        if dtype not in ("float32", "float64", "bfloat16"):
            raise ValueError(f"dtype must be 'float32', 'float64' or 'bfloat16' (the CPU peaks we estimate); "
                             f"got {dtype!r:.40}")
        lanes = self.simd_bits // 32
        cores = int(self.cores.value)
        ghz = float(self.clock_hz.value) / 1e9
        simd = self.flops_per_cycle_fp32 * float(self.clock_hz.value) * cores
        text = (f"{cores} cores x {ghz:.2f} GHz x {self.fma_units.value} FMA units x "
                f"{lanes} fp32 lanes ({self.simd}) x 2 FLOP/FMA = {simd / 1e9:,.0f} GFLOP/s")
        if self.peak_fp32 > simd:
            text += (f"; NumPy's BLAS beat that on a matrix unit beside the SIMD lanes (such as Apple's AMX), so the "
                     f"peak is set from it: {self.peak_fp32 / 1e9:,.0f} GFLOP/s")
        if dtype == "float64":
            return f"{text}; FP64 is half: {self.peak_fp64 / 1e9:,.0f} GFLOP/s"
        if dtype == "bfloat16":
            bf16 = self.bf16_flops_per_cycle
            if self.peak_bf16 > self.peak_fp32:
                return (f"{cores} cores x {ghz:.2f} GHz x {int(bf16.value):,} bf16 FLOP/cycle = "
                        f"{self.peak_bf16 / 1e9:,.0f} GFLOP/s ({bf16.source})")
            return f"bf16 at the FP32 peak ({bf16.source}): {text}"
        return text

    def sources(self) -> dict[str, str]:
        """Where each input of the peak formulas came from."""
        out = {
            "cores": self.cores.source,
            "FMA units": self.fma_units.source,
            "clock": self.clock_hz.source,
            "bf16": self.bf16_flops_per_cycle.source,
            "memory bandwidth": self.peak_bandwidth.source,
        }
        if self.nominal_clock_hz is not None:
            nominal = self.nominal_clock_hz
            out["nominal clock"] = f"{float(nominal.value) / 1e9:.2f} GHz ({nominal.source})"
        return out


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _sysctl(name: str) -> str:
    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor block of /proc/cpuinfo as a dict."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _cgroup_cpu_limit() -> int | None:
    """CPUs a container's quota allows (Binder, Kubernetes), rounded up; None when there is no quota."""
    quota, period = (_read("/sys/fs/cgroup/cpu.max").split() + ["", ""])[:2]  # cgroup v2: "150000 100000"
    if not quota.isdigit():  # cgroup v1; a quota of -1 means none
        quota = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").strip()
        period = _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us").strip()
    if quota.isdigit() and period.isdigit() and int(period) > 0:
        return max(1, -(-int(quota) // int(period)))
    return None


def _logical_cpus() -> int:
    """CPUs this process may run on: its affinity mask, capped by a container's CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        count = os.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    return min(count, limit) if limit else count


def detect_simd(flags: set[str], arch: str) -> tuple[str, int]:
    """The widest SIMD extension the CPU reports and its width in bits."""
    if arch in ("arm64", "aarch64"):
        return "NEON", 128
    for flag, name, bits in (("avx512f", "AVX-512", 512), ("avx2", "AVX2", 256), ("avx", "AVX", 256)):
        if flag in flags:
            return name, bits
    return "SSE2", 128


def detect_fma_units(
    vendor: str, family: int, model: int, flags: set[str], simd_bits: int, brand: str
) -> tuple[int, int, str]:
    """(vector FMA units per core, their width in bits, why), from the microarchitecture's published layout."""
    if "Apple" in brand:
        return 4, 128, "Apple M-series cores have four 128-bit FMA pipes"
    if simd_bits == 128 and not flags:  # Arm server cores (Neoverse N1/N2, Graviton): two 128-bit pipes
        return 2, 128, "Arm Neoverse-class cores have two 128-bit FMA pipes (rule of thumb)"
    if vendor == "AuthenticAMD":
        if family == 23 and model < 0x30:
            return 2, 128, "AMD Zen 1 splits 256-bit ops into two 128-bit FMA pipes"
        if family >= 26 and simd_bits == 512 and "Ryzen AI" not in brand:
            return 2, 512, ("AMD Zen 5 (family 1Ah) server and desktop cores have two 512-bit FMA pipes (the mobile "
                            "Ryzen AI parts run AVX-512 on 256-bit ones)")
        return 2, 256, "AMD Zen 2/3/4 have two 256-bit FMA pipes per core (AVX-512 runs on them in halves)"
    if "fma" not in flags:
        return 1, simd_bits, "no FMA: one vector add and one vector multiply per cycle, counted as one FMA"
    if simd_bits == 512:
        return 2, 512, "Intel Xeon cores with AVX-512 have two 512-bit FMA units (server parts, as on Colab)"
    return 2, 256, "Intel cores since Haswell have two 256-bit FMA units"


def _bf16_rate(flags: set[str], brand: str, fp32_per_cycle: int) -> Sourced:
    """bf16 FLOPs per cycle per core, and the published reason: AMX-BF16, AVX512_BF16, or like fp32 without them."""
    if "amx_bf16" in flags:
        return Sourced(AMX_BF16_FLOPS_PER_CYCLE, _AMX_BF16)
    if "avx512_bf16" in flags:
        return Sourced(2 * fp32_per_cycle, _AVX512_BF16)
    return Sourced(fp32_per_cycle, _APPLE_BF16 if "Apple" in brand else _NO_BF16)


_APPLE_CLOCKS_GHZ = {"M1": 3.2, "M2": 3.5, "M3": 4.05, "M4": 4.4}


def _nominal_clock(cpuinfo: dict[str, str], brand: str) -> tuple[Sourced, ClockKind] | None:
    """The clock the system or the vendor states, and how far it is trusted (see ClockKind); None if none is."""
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").strip()
    if khz.isdigit():
        return Sourced(int(khz) * 1e3, "cpufreq cpuinfo_max_freq (maximum boost clock)"), "max"
    match = re.search(r"@\s*(\d+(?:\.\d+)?)\s*GHz", brand)
    if match:
        return Sourced(float(match.group(1)) * 1e9, f"the base clock in the CPU's name, '{brand}'"), "base"
    mhz = cpuinfo.get("cpu MHz")
    if mhz:
        return Sourced(float(mhz) * 1e6, "/proc/cpuinfo 'cpu MHz' (the clock the OS reports)"), "reported"
    hz = _sysctl("hw.cpufrequency_max")
    if hz.isdigit():  # an Intel Mac's nominal clock
        return Sourced(float(hz), "sysctl hw.cpufrequency_max (the nominal clock)"), "base"
    match = re.search(r"Apple (M\d)", brand)
    if match and match.group(1) in _APPLE_CLOCKS_GHZ:
        chip = match.group(1)
        return Sourced(_APPLE_CLOCKS_GHZ[chip] * 1e9, f"Apple {chip} published performance-core clock"), "max"
    return None


def calibrate_matmul_flops(n: int = 768, budget_s: float = 0.06, most: int = 40) -> float:
    """Best FP32 FLOP/s one core reaches in NumPy's BLAS on an n x n matmul (one BLAS thread), from the fastest of
    the runs that fit in `budget_s` of CPU time (at least two; the first also warms the core up).

    Each run is timed by this thread's CPU time: while another process shares the core, that clock stops too, so a
    busy neighbour does not make the core look slower. Where the CPU time is under a quarter of the wall time, it is
    too coarse to trust or the work ran on other threads, and the wall time counts. The wall clock caps the whole at
    4x the budget.
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty_like(a)
    best, runs = float("inf"), 0
    with threadpool_limits(limits=1, user_api="blas"):
        cpu_start, wall_end = time.thread_time(), time.perf_counter() + 4 * budget_s
        while runs < 2 or (runs < most and time.thread_time() - cpu_start < budget_s
                           and time.perf_counter() < wall_end):
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            np.matmul(a, b, out=out)
            cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
            best = min(best, cpu if cpu >= wall / 4 else wall)
            runs += 1
    return 2 * n**3 / best


#: OpenBLAS kernel families (threadpoolctl's "architecture") that use 256-bit vectors, even on an AVX-512 CPU.
_OPENBLAS_256_BIT = ("haswell", "zen", "sandybridge", "skylake")


def blas_vector_bits() -> tuple[int | None, str]:
    """(the vector width NumPy's BLAS kernels use, which kernels): OpenBLAS may run its 256-bit Haswell kernels
    on an AVX-512 CPU (OPENBLAS_CORETYPE, or an older OpenBLAS), and then shows at most half the core's rate.
    None when not known (assume the CPU's full width)."""
    try:
        from threadpoolctl import threadpool_info

        found = [i for i in threadpool_info() if i.get("internal_api") == "openblas" and i.get("architecture")]
    except Exception:  # noqa: BLE001 - threadpoolctl cannot look: assume the full width
        return None, ""
    if not found:
        return None, ""
    arch = str(found[0]["architecture"])
    return (256 if arch.lower() in _OPENBLAS_256_BIT else None), f"OpenBLAS's {arch} kernels"


def _one_core_flops(budget_s: float) -> tuple[float, str]:
    """The best one-core calibration, and how it ran: pinned to each of a few allowed CPUs in turn where the OS lets
    us, so that one core slowed by a busy SMT sibling (or a slower kind of core) cannot lower the best."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows: the OS places the thread
        allowed = []
    count = min(_CALIBRATION_CPUS, len(allowed))
    pinned: list[int] = []
    best = 0.0
    try:
        for cpu in (allowed[i * len(allowed) // count] for i in range(count)):
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:  # a CPU this container may not use after all
                continue
            pinned.append(cpu)
            best = max(best, calibrate_matmul_flops(budget_s=budget_s / count))
    finally:
        if allowed:
            os.sched_setaffinity(0, allowed)
    if not pinned:
        return calibrate_matmul_flops(budget_s=budget_s), "one BLAS thread, timed by its CPU time"
    where = f"CPU {pinned[0]}" if len(pinned) == 1 else f"CPUs {', '.join(map(str, pinned))} in turn"
    return best, f"one BLAS thread pinned to {where}, timed by its CPU time"


def cache_file() -> Path | None:
    """Where what earlier runs inferred is kept: $XDG_CACHE_HOME (or ~/.cache)/loops-to-tpus/cpu-peak.json."""
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no home directory to be found
        return None
    return base / "loops-to-tpus" / "cpu-peak.json"


def _load_kept() -> dict[str, dict[str, float]]:
    """Every CPU model's kept figures (empty where there is no file or it cannot be read)."""
    path = cache_file()
    try:
        data = json.loads(path.read_text()) if path else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _kept(key: str) -> dict[str, float]:
    """What earlier runs kept for this CPU model: its best BLAS rate per core, clock, matrix-unit peak."""
    entry = _load_kept().get(key)
    if not isinstance(entry, dict):
        return {}
    return {name: float(v) for name, v in entry.items() if isinstance(v, (int, float)) and math.isfinite(v)}


def _keep(key: str, values: dict[str, float]) -> None:
    """Keep this CPU model's figures for later runs (written whole, then renamed; skipped where it cannot be)."""
    path = cache_file()
    if path is None:
        return
    data = _load_kept()
    data[key] = values
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f"{path.name}.{os.getpid()}")
        scratch.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(scratch, path)
    except OSError:
        pass


def _kept_or_raised(needed: float, kept: float | None, step: int) -> float:
    """`kept` while it still covers `needed`; otherwise `needed` plus INFERRED_MARGIN, rounded up to `step`."""
    if kept is not None and needed <= kept:
        return kept
    return float(math.ceil(needed * INFERRED_MARGIN / step) * step)


def measure_bandwidth(megabytes: int = 64, repeats: int = 3) -> float:
    """Best bytes/s of a large NumPy copy (read + write counted), a STREAM-like memory bandwidth."""
    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best


def _bandwidth(kept: float | None) -> Sourced:
    """The memory roof: this run's best copy, or a better one an earlier run on this CPU model kept. A roof is the
    best the machine has shown: one busy moment of a shared machine must not lower it below what code then reaches."""
    fresh = measure_bandwidth()
    source = (f"main memory, measured here: best of 3 NumPy copies of 64 MiB (read + write, one thread), "
              f"{fresh / 1e9:,.1f} GB/s this run")
    if kept is not None and kept > fresh:
        return Sourced(kept, f"{source}; {kept / 1e9:,.1f} GB/s at best in an earlier run on this CPU model")
    return Sourced(fresh, source)


def _physical_cores(cpuinfo: dict[str, str], logical: int) -> Sourced:
    siblings, per_socket = cpuinfo.get("siblings"), cpuinfo.get("cpu cores")
    if siblings and per_socket and siblings.isdigit() and per_socket.isdigit() and int(per_socket):
        threads_per_core = max(1, int(siblings) // int(per_socket))
        cores = max(1, -(-logical // threads_per_core))
        if threads_per_core > 1:
            why = f"{logical} hardware threads / {threads_per_core} per core (SMT shares one core's FMA units)"
        else:
            why = f"{logical} CPUs this process may use, one thread per core (/proc/cpuinfo)"
        return Sourced(cores, why)
    perf = _sysctl("hw.perflevel0.physicalcpu")
    if perf.isdigit():
        return Sourced(int(perf), "sysctl hw.perflevel0.physicalcpu (performance cores)")
    return Sourced(logical, "os.cpu_count() (SMT unknown, each counted as a core)")


def _blas_per_cycle(per_core_cycle: int, simd_bits: int, blas_bits: int | None, kernels: str) -> Sourced:
    """The FP32 FLOP per cycle one core can show in NumPy's BLAS, and why: the width of its kernels' vectors where
    known (blas_vector_bits: OpenBLAS's 256-bit Haswell kernels show half an AVX-512 core's rate), else the CPU's."""
    if blas_bits and blas_bits < simd_bits:
        per_cycle = per_core_cycle * blas_bits // simd_bits
        return Sourced(per_cycle, f"from {kernels} at {per_cycle} FP32 FLOP a cycle ({blas_bits}-bit vectors, "
                                  f"where the core's {simd_bits}-bit ones do {per_core_cycle})")
    width = (f"{blas_bits}-bit vectors, as wide as the CPU's" if blas_bits == simd_bits
             else f"taken to use the CPU's full {simd_bits}-bit vectors")
    return Sourced(per_core_cycle, f"from {kernels or 'BLAS'} at {per_core_cycle} FP32 FLOP a cycle ({width})")


def _clock_and_matrix_unit(
    stated: tuple[Sourced, ClockKind] | None, per_core: float, per_cycle: Sourced, kept: dict[str, float]
) -> tuple[Sourced, Sourced | None, dict[str, float]]:
    """The clock for the peak, a matrix unit's FP32 peak per core (None without one), and what to keep for later runs.

    per_cycle is the FP32 FLOP per cycle one core can show in BLAS, and its source (_blas_per_cycle): the clock
    source names it, so that the least clock can be checked from the line.
    The clock must leave one core's best BLAS rate at most BLAS_BEST_EFFICIENCY of the peak. A stated maximum clock
    is used when it does; far below that rate (MATRIX_UNIT_FACTOR) a matrix unit did the work. A stated base or
    reported clock is used only with INFERRED_MARGIN to spare. Otherwise the clock is inferred: the least clock plus
    the margin, rounded up to CLOCK_STEP_HZ. Whichever is chosen is kept, and used by later runs while it still
    covers their rate, so noise in the calibration does not move the peak from run to run.
    """
    floor_hz = per_core / (float(per_cycle.value) * BLAS_BEST_EFFICIENCY)
    needs = (f"{per_core / 1e9:,.1f} GFLOP/s on one core, {per_cycle.source}, needs at least "
             f"{floor_hz / 1e9:.2f} GHz at {BLAS_BEST_EFFICIENCY:.0%} efficiency")
    path = cache_file()
    kept_in = f"kept for this CPU model in {path}" if path else "not kept (no cache directory)"
    margin = f"{INFERRED_MARGIN - 1:.0%}"
    clock, kind = stated if stated else (None, None)
    if clock and kind == "max" and floor_hz > MATRIX_UNIT_FACTOR * float(clock.value):
        peak = _kept_or_raised(per_core / BLAS_BEST_EFFICIENCY, kept.get("matrix_fp32_per_core"), _MATRIX_STEP_FLOPS)
        why = (f"NumPy's BLAS: {needs}, over {MATRIX_UNIT_FACTOR}x the published {float(clock.value) / 1e9:.2f} GHz, "
               f"so a matrix unit beside the SIMD lanes did the work (Apple's AMX): its FP32 peak per core is that "
               f"rate / {BLAS_BEST_EFFICIENCY}, plus {margin}, rounded up to 1 GFLOP/s and {kept_in}")
        return clock, Sourced(peak, why), {"matrix_fp32_per_core": peak}
    first_choice = kept.get("clock_hz")
    if first_choice is None and clock and floor_hz * (1 if kind == "max" else INFERRED_MARGIN) <= float(clock.value):
        first_choice = float(clock.value)
    hz = _kept_or_raised(floor_hz, first_choice, CLOCK_STEP_HZ)
    if clock and hz == float(clock.value):
        return clock, None, {"clock_hz": hz}
    if clock is None:
        why = "no clock is stated"
    elif kind == "max":
        why = f"that is above the stated {float(clock.value) / 1e9:.2f} GHz ({clock.source})"
    else:
        why = f"the stated {float(clock.value) / 1e9:.2f} GHz ({clock.source}) does not cover it with {margin} to spare"
    return Sourced(hz, f"inferred from NumPy's BLAS: {needs}, and {why}; set {margin} above that least clock and "
                       f"rounded up to {CLOCK_STEP_HZ / 1e9:.1f} GHz, {kept_in}: later runs keep it while it covers "
                       "their BLAS rate"), None, {"clock_hz": hz}


@lru_cache(maxsize=1)
def cpu_info() -> CPUInfo:
    """Detect this machine's CPU once per process (a few tenths of a second: one-core calibrations and a copy)."""
    arch = platform.machine().lower()
    text = _read("/proc/cpuinfo")
    info = _cpuinfo_fields(text)
    brand = info.get("model name") or _sysctl("machdep.cpu.brand_string") or platform.processor() or arch
    flags = set(info.get("flags", "").split())
    if not flags and arch in ("x86_64", "amd64"):  # Intel Macs report their ISA extensions through sysctl
        flags = set(f"{_sysctl('machdep.cpu.features')} {_sysctl('machdep.cpu.leaf7_features')}".lower().split())
    vendor = info.get("vendor_id", "")
    family = int(info["cpu family"]) if info.get("cpu family", "").isdigit() else 0
    model = int(info["model"]) if info.get("model", "").isdigit() else 0
    logical = _logical_cpus()
    cores = _physical_cores(info, logical)
    simd, simd_bits = detect_simd(flags, arch)
    units, unit_bits, why_units = detect_fma_units(vendor, family, model, flags, simd_bits, brand)
    # Zen 1 and Zen 4 run wide vectors on narrower pipes: count FMAs at the ISA's width.
    fma = Sourced(max(1, units * unit_bits // simd_bits), why_units)
    per_core_cycle = int(fma.value) * (simd_bits // 32) * 2

    stated = _nominal_clock(info, brand)
    key = (f"{brand} | {simd}, {per_core_cycle} FP32 FLOP/cycle | stated clock "
           + (f"{float(stated[0].value):.0f} Hz ({stated[1]})" if stated else "none"))
    kept = _kept(key)
    # One core alone, at its best: it may boost above all cores together, and threads that share a core (SMT)
    # share its FMA units, so per core no multi-threaded BLAS run beats it by more than the efficiency margin.
    # The first run on a CPU model sets what later runs keep: it calibrates longer, to get nearer the core's best.
    fresh, how = _one_core_flops(_CALIBRATION_BUDGET_S * (1 if kept else 3))
    per_core = max(fresh, kept.get("blas_fp32_per_core", 0.0))
    demonstrated = f"NumPy's BLAS on one core: {fresh / 1e9:,.1f} GFLOP/s this run ({how})"
    if per_core > fresh:
        demonstrated += f"; {per_core / 1e9:,.1f} GFLOP/s at best in an earlier run on this CPU model"
    blas_bits, kernels = blas_vector_bits()
    blas_cycle = _blas_per_cycle(per_core_cycle, simd_bits, blas_bits, kernels)  # what BLAS can show per cycle, why
    if blas_cycle.value < per_core_cycle:
        demonstrated += f"; {kernels} use {blas_bits}-bit vectors: at most {blas_cycle.value} of the core's " \
                        f"{per_core_cycle} FP32 FLOP/cycle"
    clock, matrix, keep = _clock_and_matrix_unit(stated, per_core, blas_cycle, kept)
    keep["blas_fp32_per_core"] = per_core
    bandwidth = _bandwidth(kept.get("bandwidth"))
    keep["bandwidth"] = bandwidth.value
    if keep != kept:
        _keep(key, keep)
    return CPUInfo(
        model=brand, arch=arch, logical_cpus=logical, cores=cores, simd=simd, simd_bits=simd_bits,
        fma_units=fma, clock_hz=clock, nominal_clock_hz=stated[0] if stated else None, peak_bandwidth=bandwidth,
        blas_fp32_per_core=Sourced(per_core, demonstrated), matrix_fp32_per_core=matrix,
        bf16_rate=_bf16_rate(flags, brand, per_core_cycle), blas_fp32_this_run=fresh, blas_fp32_per_cycle=blas_cycle,
    )


def calibrated_blas_flops() -> float | None:
    """The FP32 FLOP/s one core reached in NumPy's BLAS when this process detected its CPU, or None before it did:
    a later timing of the same work is judged by it (timing.benchmark) without a calibration of its own."""
    return cpu_info().blas_fp32_this_run if cpu_info.cache_info().currsize else None
