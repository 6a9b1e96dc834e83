"""What this machine's CPU is and how fast it could possibly go: model, cores, SIMD, clock and peak FLOP/s.

Peak FP32 = cores x clock x FMA units x SIMD lanes x 2 (an FMA is two FLOPs). Each input records where it
came from, so a learner can check the arithmetic. Virtual machines often report a nominal clock below the
clock the cores really sustain; a short BLAS calibration puts a floor under the clock so the peak we report
is never below what the machine demonstrably reaches.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

#: The best fraction of peak a tuned BLAS single-precision matmul reaches on a CPU (OpenBLAS, MKL and
#: Accelerate top out at about 85-92%). Used only to turn a measured GFLOP/s into a lower bound on the clock.
BLAS_BEST_EFFICIENCY = 0.9
#: How far above a trusted clock the BLAS-implied clock must be before we conclude a matrix unit did the work.
MATRIX_UNIT_FACTOR = 1.5
_NEEDS_CLOCK = f", which needs at least this clock at {BLAS_BEST_EFFICIENCY:.0%} efficiency"


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from (a file, a command, a rule of thumb or a measurement)."""

    value: float | int | str
    source: str


@dataclass(frozen=True)
class CPUInfo:
    """This machine's CPU, with a peak FLOP/s estimate whose every input is sourced."""

    model: str
    arch: str
    logical_cpus: int  # hardware threads this process may run on
    cores: Sourced  # physical cores behind those threads (what the peak counts)
    simd: str  # "AVX-512", "AVX2", "AVX", "SSE2", "NEON", ...
    simd_bits: int
    fma_units: Sourced  # vector FMA pipes per core
    clock_hz: Sourced  # the clock used for the peak
    nominal_clock_hz: Sourced | None  # what the OS reports, if anything
    peak_bandwidth: Sourced  # bytes/s of main memory, measured by a large NumPy copy
    blas_fp32_per_core: Sourced | None = None  # the best FP32 FLOP/s per core NumPy's BLAS reached here
    matrix_unit: bool = False  # the BLAS beats the SIMD formula by far: it runs on a matrix unit (Apple AMX)

    @property
    def flops_per_cycle_fp32(self) -> int:
        """FP32 FLOPs one core can finish per cycle: FMA units x lanes x 2."""
        return int(self.fma_units.value) * (self.simd_bits // 32) * 2

    @property
    def peak_fp32_per_core(self) -> float:
        """Peak FP32 FLOP/s of one core (at least what its BLAS demonstrated, where a matrix unit does the work)."""
        simd = self.flops_per_cycle_fp32 * float(self.clock_hz.value)
        if self.matrix_unit and self.blas_fp32_per_core is not None:
            return max(simd, float(self.blas_fp32_per_core.value) / BLAS_BEST_EFFICIENCY)
        return simd

    @property
    def peak_fp32(self) -> float:
        """Peak FP32 FLOP/s of all the cores this process can use."""
        return self.peak_fp32_per_core * int(self.cores.value)

    @property
    def peak_fp64(self) -> float:
        """Peak FP64 FLOP/s: half the lanes of FP32."""
        return self.peak_fp32 / 2

    def peak_flops(self, dtype: str = "float32") -> float | None:
        """Peak FLOP/s for a dtype name; None for dtypes the CPU has no fast path for."""
        return {"float32": self.peak_fp32, "float64": self.peak_fp64}.get(dtype)

    def formula(self) -> str:
        """The peak FP32 arithmetic, spelled out with this machine's numbers."""
        lanes = self.simd_bits // 32
        cores = int(self.cores.value)
        simd = self.flops_per_cycle_fp32 * float(self.clock_hz.value) * cores
        text = (f"{cores} cores x {float(self.clock_hz.value) / 1e9:.2f} GHz x {self.fma_units.value} FMA units x "
                f"{lanes} fp32 lanes ({self.simd}) x 2 FLOP/FMA = {simd / 1e9:,.0f} GFLOP/s")
        if self.peak_fp32 > simd:
            text += (f"; NumPy's BLAS beat that on a matrix unit beside the SIMD lanes (such as Apple's AMX), so the "
                     f"peak is set from it: {self.peak_fp32 / 1e9:,.0f} GFLOP/s")
        return text

    def sources(self) -> dict[str, str]:
        """Where each input of the peak formula came from."""
        out = {
            "cores": self.cores.source,
            "FMA units": self.fma_units.source,
            "clock": self.clock_hz.source,
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
        return 2, 256, "AMD Zen 2/3/4 have two 256-bit FMA pipes per core (AVX-512 runs on them in halves)"
    if "fma" not in flags:
        return 1, simd_bits, "no FMA: one vector add and one vector multiply per cycle, counted as one FMA"
    if simd_bits == 512:
        return 2, 512, "Intel Xeon cores with AVX-512 have two 512-bit FMA units (server parts, as on Colab)"
    return 2, 256, "Intel cores since Haswell have two 256-bit FMA units"


_APPLE_CLOCKS_GHZ = {"M1": 3.2, "M2": 3.5, "M3": 4.05, "M4": 4.4}


def _nominal_clock(cpuinfo: dict[str, str], brand: str) -> Sourced | None:
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").strip()
    if khz.isdigit():
        return Sourced(int(khz) * 1e3, "cpufreq cpuinfo_max_freq (maximum boost clock)")
    mhz = cpuinfo.get("cpu MHz")
    if mhz:
        return Sourced(float(mhz) * 1e6, "/proc/cpuinfo 'cpu MHz' (the clock the OS reports)")
    hz = _sysctl("hw.cpufrequency_max")
    if hz.isdigit():
        return Sourced(float(hz), "sysctl hw.cpufrequency_max")
    match = re.search(r"Apple (M\d)", brand)
    if match and match.group(1) in _APPLE_CLOCKS_GHZ:
        chip = match.group(1)
        return Sourced(_APPLE_CLOCKS_GHZ[chip] * 1e9, f"Apple {chip} published performance-core clock")
    return None


def calibrate_matmul_flops(
    n: int = 1024, warmup_s: float = 0.1, budget_s: float = 0.25, most: int = 40, threads: int | None = None
) -> float:
    """Best FP32 FLOP/s NumPy's BLAS reaches on an n x n matmul (on `threads` threads; None: all of them).

    Warm up first (threads start, pages fault in, the clock ramps up), then keep the fastest of the runs
    that fit in the budget: the best run is the one least disturbed by anything else on the machine.
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        start = time.perf_counter()
        while time.perf_counter() - start < warmup_s:
            a @ b
        best, start = float("inf"), time.perf_counter()
        for _ in range(most):
            t0 = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t0)
            if t0 - start > budget_s:
                break
    return 2 * n**3 / best


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


@lru_cache(maxsize=1)
def cpu_info() -> CPUInfo:
    """Detect this machine's CPU once per process (takes about a tenth of a second: two calibrations)."""
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

    nominal = _nominal_clock(info, brand)
    # All cores, and one core alone: a lone core may boost higher than all of them together, and the peak
    # must cover both (chapter 02 times BLAS on one thread against one core's peak).
    all_cores = calibrate_matmul_flops()
    one_core = calibrate_matmul_flops(threads=1) if int(cores.value) > 1 else all_cores
    per_core = max(all_cores / int(cores.value), one_core)
    floor_hz = per_core / (per_core_cycle * BLAS_BEST_EFFICIENCY)
    evidence = (f"NumPy's BLAS measured {per_core / 1e9:,.1f} GFLOP/s per core here (best of all cores together and "
                f"one alone){_NEEDS_CLOCK}")
    # A clock the vendor publishes (or cpufreq's maximum) is trusted; a VM's 'cpu MHz' is not. Far above a
    # trusted clock, the BLAS is not running on the SIMD lanes at all but on a matrix unit (Apple's AMX).
    trusted = nominal is not None and not nominal.source.startswith("/proc/cpuinfo")
    matrix_unit = trusted and floor_hz > MATRIX_UNIT_FACTOR * float(nominal.value)
    if matrix_unit:
        clock = Sourced(float(nominal.value), nominal.source)
    elif nominal is None:
        clock = Sourced(floor_hz, f"no clock reported; lower bound: {evidence}")
    elif floor_hz > float(nominal.value):
        clock = Sourced(floor_hz, f"raised from the reported {float(nominal.value) / 1e9:.2f} GHz: {evidence} "
                                  "(cores boost above the nominal clock)")
    else:
        clock = Sourced(float(nominal.value), nominal.source)
    bandwidth = Sourced(measure_bandwidth(), "main memory, measured here: best of 3 NumPy copies of 64 MiB "
                                             "(read + write, one thread)")
    return CPUInfo(
        model=brand, arch=arch, logical_cpus=logical, cores=cores, simd=simd, simd_bits=simd_bits,
        fma_units=fma, clock_hz=clock, nominal_clock_hz=nominal, peak_bandwidth=bandwidth,
        blas_fp32_per_core=Sourced(per_core, evidence.removesuffix(_NEEDS_CLOCK)), matrix_unit=matrix_unit,
    )
