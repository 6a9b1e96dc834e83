"""The CPU's peak FLOP/s: SIMD and FMA layout per microarchitecture, /proc/cpuinfo parsing, cores, the clock (which
one, its source, and the same on every run), the floor BLAS puts under it, and the bf16 peak."""

from __future__ import annotations

import math
import os

import pytest

from helpers.measuring import cpu
from helpers.measuring.cpu import (
    AMX_BF16_FLOPS_PER_CYCLE,
    BLAS_BEST_EFFICIENCY,
    INFERRED_MARGIN,
    Sourced,
    cpu_info,
    detect_fma_units,
    detect_simd,
)

INTEL_AVX512 = {"sse2", "avx", "avx2", "fma", "avx512f", "avx512dq"}
INTEL_AVX2 = {"sse2", "avx", "avx2", "fma"}
AMD_ZEN = {"sse2", "avx", "avx2", "fma", "sse4a"}

# The first two processor blocks of a Ryzen 7 1700 (Zen 1): 8 cores, 16 threads.
ZEN1_CPUINFO = """
processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 1
model name\t: AMD Ryzen 7 1700 Eight-Core Processor
cpu MHz\t\t: 3000.000
siblings\t: 16
cpu cores\t: 8
flags\t\t: fpu sse2 avx avx2 fma sse4a
address sizes\t: 48 bits physical, 48 bits virtual

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: something else
cpu MHz\t\t: 1550.000
"""

# An Arm server (Graviton-like): no model name, "Features" instead of "flags", no clock.
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


# --- SIMD width and FMA units per microarchitecture ----------------------------------------------------------


@pytest.mark.parametrize(("flags", "arch", "expected"), [
    (INTEL_AVX512, "x86_64", ("AVX-512", 512)),
    (INTEL_AVX2, "x86_64", ("AVX2", 256)),
    ({"sse2", "avx"}, "x86_64", ("AVX", 256)),
    ({"sse2"}, "x86_64", ("SSE2", 128)),
    (set(), "amd64", ("SSE2", 128)),
    (set(), "arm64", ("NEON", 128)),
    ({"fp", "asimd"}, "aarch64", ("NEON", 128)),
])
def test_detect_simd(flags, arch, expected):
    assert detect_simd(flags, arch) == expected


@pytest.mark.parametrize(("vendor", "family", "model", "flags", "bits", "brand", "units", "unit_bits", "why"), [
    ("GenuineIntel", 6, 85, INTEL_AVX512, 512, "Intel(R) Xeon(R) CPU @ 2.20GHz", 2, 512, "AVX-512"),
    ("GenuineIntel", 6, 158, INTEL_AVX2, 256, "Intel(R) Core(TM) i7-8700", 2, 256, "Haswell"),
    ("GenuineIntel", 6, 42, {"sse2", "avx"}, 256, "Intel(R) Core(TM) i7-2600", 1, 256, "no FMA"),
    ("AuthenticAMD", 23, 1, AMD_ZEN, 256, "AMD Ryzen 7 1700", 2, 128, "Zen 1"),
    ("AuthenticAMD", 23, 0x31, AMD_ZEN, 256, "AMD EPYC 7B12", 2, 256, "Zen 2/3/4"),  # Zen 2
    ("AuthenticAMD", 25, 0x21, AMD_ZEN, 256, "AMD Ryzen 9 5950X", 2, 256, "Zen 2/3/4"),  # Zen 3
    ("AuthenticAMD", 25, 0x61, AMD_ZEN | {"avx512f"}, 512, "AMD Ryzen 9 7950X", 2, 256, "halves"),  # Zen 4
    ("", 0, 0, set(), 128, "Apple M2", 4, 128, "Apple"),
    ("", 0, 0, set(), 128, "aarch64", 2, 128, "Neoverse"),
])
def test_detect_fma_units(vendor, family, model, flags, bits, brand, units, unit_bits, why):
    got_units, got_bits, reason = detect_fma_units(vendor, family, model, flags, bits, brand)
    assert (got_units, got_bits) == (units, unit_bits)
    assert why in reason


# --- /proc/cpuinfo, cores and clock ----------------------------------------------------------------------------


def test_cpuinfo_fields_reads_the_first_block():
    fields = cpu._cpuinfo_fields(ZEN1_CPUINFO)
    assert fields["processor"] == "0"
    assert fields["model name"] == "AMD Ryzen 7 1700 Eight-Core Processor"
    assert fields["cpu MHz"] == "3000.000" and fields["siblings"] == "16" and fields["cpu cores"] == "8"
    assert fields["flags"].split() == ["fpu", "sse2", "avx", "avx2", "fma", "sse4a"]
    assert fields["address sizes"] == "48 bits physical, 48 bits virtual"
    assert "something else" not in fields.values()
    assert cpu._cpuinfo_fields("") == {}
    assert cpu._cpuinfo_fields("model name : A: B\n")["model name"] == "A: B"


@pytest.mark.parametrize(("siblings", "per_socket", "logical", "cores", "why"), [
    ("16", "8", 16, 8, "2 per core"),  # SMT: two threads share one core's FMA units
    ("4", "2", 3, 2, "2 per core"),  # an odd affinity mask rounds up
    ("2", "2", 2, 2, "one thread per core"),
    ("8", "8", 4, 4, "one thread per core"),  # a container allowed 4 of 8 cores
])
def test_physical_cores_from_cpuinfo(siblings, per_socket, logical, cores, why):
    found = cpu._physical_cores({"siblings": siblings, "cpu cores": per_socket}, logical)
    assert found.value == cores and why in found.source


def test_physical_cores_without_cpuinfo(monkeypatch):
    monkeypatch.setattr(cpu, "_sysctl", lambda name: "")
    found = cpu._physical_cores({}, 6)
    assert found.value == 6 and "SMT unknown" in found.source
    monkeypatch.setattr(cpu, "_sysctl", lambda name: "8" if name == "hw.perflevel0.physicalcpu" else "")
    found = cpu._physical_cores({"siblings": "x", "cpu cores": "0"}, 12)
    assert found.value == 8 and "performance cores" in found.source


def test_nominal_clock_sources_and_how_far_each_is_trusted(monkeypatch):
    files = {"/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "3500000\n"}
    sysctl = {}
    monkeypatch.setattr(cpu, "_read", lambda path: files.get(path, ""))
    monkeypatch.setattr(cpu, "_sysctl", lambda name: sysctl.get(name, ""))
    clock, kind = cpu._nominal_clock({"cpu MHz": "2445.430"}, "Intel(R) Xeon(R) CPU @ 2.20GHz")
    assert clock.value == pytest.approx(3.5e9) and "cpuinfo_max_freq" in clock.source and kind == "max"
    files.clear()
    clock, kind = cpu._nominal_clock({"cpu MHz": "2199.998"}, "Intel(R) Xeon(R) CPU @ 2.20GHz")
    assert clock.value == pytest.approx(2.2e9) and "base clock in the CPU's name" in clock.source and kind == "base"
    clock, kind = cpu._nominal_clock({"cpu MHz": "2445.430"}, "AMD EPYC 7B12")
    assert clock.value == pytest.approx(2.44543e9) and "cpu MHz" in clock.source and kind == "reported"
    sysctl["hw.cpufrequency_max"] = "3200000000"
    clock, kind = cpu._nominal_clock({}, "x")
    assert clock.value == pytest.approx(3.2e9) and kind == "base"  # an Intel Mac's nominal clock
    sysctl.clear()
    clock, kind = cpu._nominal_clock({}, "Apple M3 Pro")
    assert clock.value == pytest.approx(4.05e9) and "Apple M3" in clock.source and kind == "max"
    assert cpu._nominal_clock({}, "Apple M9") is None
    assert cpu._nominal_clock({}, "Some CPU") is None


# --- the whole detection on made-up machines (no calibration runs) -------------------------------------------

ZEN1_PER_CYCLE = 16  # FP32 FLOP per cycle per core of ZEN1_CPUINFO: one 256-bit FMA x 8 lanes x 2
XEON_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz
cpu MHz\t\t: 2200.152
siblings\t: 2
cpu cores\t: 1
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq {extra}
"""


def xeon(extra: str = "") -> dict[str, str]:
    """/proc/cpuinfo of a Colab-like Xeon (1 core, 2 threads, AVX-512: 64 FP32 FLOP/cycle) with extra flags."""
    return {"/proc/cpuinfo": XEON_CPUINFO.format(extra=extra)}


VM_CLOCK = (Sourced(2e9, "/proc/cpuinfo 'cpu MHz' (test)"), "reported")  # a VM's clock, far below its cores'


def inferred_hz(per_core_flops: float, per_cycle: int) -> float:
    """The clock rule by hand: the least clock at 90% efficiency, plus 5%, rounded up to 0.1 GHz."""
    return math.ceil(per_core_flops / (per_cycle * BLAS_BEST_EFFICIENCY) * INFERRED_MARGIN / 1e8) * 1e8


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """Make cpu_info's inputs up: /proc files, sysctl, arch, usable CPUs, the cache directory and the one-core
    calibrations (one per pinned CPU, in turn). Every call is a new run of the same machine (same cache)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pinned: list[set[int]] = []
    budgets: list[float] = []
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(cpu.os, "sched_setaffinity", lambda pid, cpus: pinned.append(set(cpus)))

    def make(files=None, sysctl=None, arch="x86_64", logical=4, calibrated=(1e9,), nominal=..., blas_bits=None,
             copied=12.5e9):
        runs = iter(calibrated)

        def calibrate(budget_s=0.06, **_):
            budgets.append(budget_s)
            return next(runs)

        monkeypatch.setattr(cpu, "_read", lambda path: (files or {}).get(path, ""))
        monkeypatch.setattr(cpu, "_sysctl", lambda name: (sysctl or {}).get(name, ""))
        monkeypatch.setattr(cpu.platform, "machine", lambda: arch)
        monkeypatch.setattr(cpu.platform, "processor", lambda: "")
        monkeypatch.setattr(cpu, "_logical_cpus", lambda: logical)
        monkeypatch.setattr(cpu, "calibrate_matmul_flops", calibrate)
        monkeypatch.setattr(cpu, "measure_bandwidth", lambda *a, **k: copied)  # bytes/s of this run's copy
        monkeypatch.setattr(cpu, "blas_vector_bits",
                            lambda: (blas_bits, "OpenBLAS's Haswell kernels" if blas_bits else ""))
        if nominal is not ...:
            monkeypatch.setattr(cpu, "_nominal_clock", lambda info, brand: nominal)
        pinned.clear()
        budgets.clear()
        return cpu.cpu_info.__wrapped__()  # the uncached detection: the process-wide cache is left alone

    make.pinned, make.budgets = pinned, budgets
    return make


def once(value: float) -> tuple[float, ...]:
    """The same calibration on each of the 4 CPUs the machine fixture lets a run pin to."""
    return (value,) * 4


def test_zen1_desktop(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16, calibrated=once(1e9))
    assert info.model == "AMD Ryzen 7 1700 Eight-Core Processor" and info.arch == "x86_64"
    assert info.cores.value == 8 and info.simd == "AVX2" and info.simd_bits == 256
    assert info.fma_units.value == 1  # two 128-bit pipes = one 256-bit FMA per cycle
    assert info.clock_hz.value == pytest.approx(3e9) and "cpu MHz" in info.clock_hz.source
    assert info.flops_per_cycle_fp32 == ZEN1_PER_CYCLE
    assert info.peak_fp32 == pytest.approx(8 * 3e9 * 1 * 8 * 2)
    assert info.peak_fp64 == pytest.approx(info.peak_fp32 / 2)
    assert info.formula() == ("8 cores x 3.00 GHz x 1 FMA units x 8 fp32 lanes (AVX2) x 2 FLOP/FMA "
                              "= 384 GFLOP/s")
    assert info.formula("float64") == info.formula() + "; FP64 is half: 192 GFLOP/s"
    assert info.peak_bandwidth.value == 12.5e9


def test_the_calibration_is_pinned_to_each_cpu_in_turn_and_the_affinity_restored(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, calibrated=(20e9, 40e9, 30e9, 10e9))
    assert machine.pinned == [{0}, {1}, {2}, {3}, {0, 1, 2, 3}]
    assert info.blas_fp32_per_core.value == 40e9  # the best of the four
    assert "pinned to CPUs 0, 1, 2, 3 in turn" in info.blas_fp32_per_core.source


# --- the clock: which one, and where it came from --------------------------------------------------------------


def test_a_stated_maximum_clock_is_kept_while_blas_stays_within_90_percent(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "3000000"}
    at_89_percent = 0.89 * ZEN1_PER_CYCLE * 3e9  # no margin asked of a maximum clock: it is trusted
    info = machine(files, calibrated=once(at_89_percent))
    assert info.clock_hz == Sourced(3e9, "cpufreq cpuinfo_max_freq (maximum boost clock)")
    assert not info.matrix_unit


def test_a_stated_maximum_clock_below_the_blas_rate_is_raised(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "3000000"}
    info = machine(files, calibrated=once(0.95 * ZEN1_PER_CYCLE * 3e9))  # beyond 90% of the peak at 3 GHz
    assert info.clock_hz.value == pytest.approx(inferred_hz(0.95 * ZEN1_PER_CYCLE * 3e9, ZEN1_PER_CYCLE))
    assert "inferred from NumPy's BLAS" in info.clock_hz.source
    assert "above the stated 3.00 GHz (cpufreq cpuinfo_max_freq" in info.clock_hz.source
    assert not info.matrix_unit


def test_the_base_clock_in_an_intel_name_is_used_with_5_percent_to_spare(machine):
    needs_2_ghz = 2.0e9 * 64 * BLAS_BEST_EFFICIENCY  # one core's BLAS rate that needs 2.0 GHz at 90%
    info = machine(xeon(), logical=2, calibrated=once(needs_2_ghz))
    assert info.cores.value == 1 and info.flops_per_cycle_fp32 == 64
    assert info.clock_hz.value == pytest.approx(2.2e9)
    assert "base clock in the CPU's name, 'Intel(R) Xeon(R) CPU @ 2.20GHz'" in info.clock_hz.source


def test_blas_kernels_narrower_than_the_cpu_show_only_their_width(machine):
    needs_2_ghz = 2.0e9 * 64 * BLAS_BEST_EFFICIENCY  # at 512 bits; at 256 bits the same rate needs 4 GHz
    info = machine(xeon(), logical=2, calibrated=once(needs_2_ghz), blas_bits=256)
    assert info.flops_per_cycle_fp32 == 64
    assert info.clock_hz.value == pytest.approx(4.2e9)  # 4.0 GHz needed at 32 FLOP/cycle, plus 5%
    assert "OpenBLAS's Haswell kernels use 256-bit vectors: at most 32 of the core's 64" in \
        info.blas_fp32_per_core.source
    # the clock's source names the FLOP per cycle it divided by, so that 4.00 GHz can be checked from the line
    assert ("on one core, from OpenBLAS's Haswell kernels at 32 FP32 FLOP a cycle (256-bit vectors, where the core's "
            "512-bit ones do 64), needs at least 4.00 GHz at 90% efficiency") in info.clock_hz.source


def test_blas_kernels_as_wide_as_the_cpu_show_its_full_rate(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=2, calibrated=once(36.2e9), nominal=VM_CLOCK,
                   blas_bits=256)  # 256-bit kernels on an AVX2 core: no narrower than its vectors
    assert info.clock_hz.value == pytest.approx(inferred_hz(36.2e9, ZEN1_PER_CYCLE))
    assert (f"from OpenBLAS's Haswell kernels at {ZEN1_PER_CYCLE} FP32 FLOP a cycle (256-bit vectors, as wide as "
            "the CPU's), needs at least") in info.clock_hz.source
    assert "at most" not in info.blas_fp32_per_core.source


def test_zen5_counts_two_512_bit_fma_pipes():
    assert cpu.detect_fma_units("AuthenticAMD", 26, 2, {"avx512f"}, 512, "AMD EPYC")[:2] == (2, 512)
    assert cpu.detect_fma_units("AuthenticAMD", 26, 36, {"avx512f"}, 512, "AMD Ryzen AI 9 HX 370")[:2] == (2, 256)
    assert cpu.detect_fma_units("AuthenticAMD", 25, 17, {"avx512f"}, 512, "AMD EPYC 9654")[:2] == (2, 256)


def test_a_base_clock_without_5_percent_to_spare_gives_way_to_an_inferred_one(machine):
    needs = 2.15e9 * 64 * BLAS_BEST_EFFICIENCY  # 2.15 GHz needed: under 2.20, but not with 5% to spare
    info = machine(xeon(), logical=2, calibrated=once(needs))
    assert info.clock_hz.value == pytest.approx(2.3e9)  # 2.15 x 1.05 = 2.26 -> 2.3 GHz
    source = info.clock_hz.source
    assert source.startswith("inferred from NumPy's BLAS") and "needs at least 2.15 GHz at 90% efficiency" in source
    assert ("on one core, from BLAS at 64 FP32 FLOP a cycle (taken to use the CPU's full 512-bit vectors), needs "
            "at least 2.15 GHz") in source  # kernels not named: the CPU's full width is assumed, and said
    assert "the stated 2.20 GHz (the base clock in the CPU's name" in source and "rounded up to 0.1 GHz" in source
    assert "cpu-peak.json" in source
    assert info.nominal_clock_hz.value == pytest.approx(2.2e9)


def test_a_vm_clock_below_the_blas_rate_is_replaced_by_an_inferred_one(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=2, calibrated=once(36.2e9), nominal=VM_CLOCK)
    assert info.clock_hz.value == pytest.approx(2.7e9) == inferred_hz(36.2e9, ZEN1_PER_CYCLE)
    assert "the stated 2.00 GHz (/proc/cpuinfo 'cpu MHz' (test)) does not cover it" in info.clock_hz.source
    assert info.sources()["nominal clock"] == "2.00 GHz (/proc/cpuinfo 'cpu MHz' (test))"
    assert info.sources()["clock"] == info.clock_hz.source and "2.70 GHz" in info.formula()
    assert not info.matrix_unit  # far above a VM's clock is a wrong clock, not a matrix unit


def test_arm_server_without_a_stated_clock(machine):
    info = machine({"/proc/cpuinfo": ARM_CPUINFO}, arch="aarch64", logical=4, calibrated=once(72e9))
    assert info.model == "aarch64" and info.simd == "NEON" and info.fma_units.value == 2
    assert info.nominal_clock_hz is None and "no clock is stated" in info.clock_hz.source
    # 72 GFLOP/s on one core of 16 FLOP/cycle needs 5 GHz at 90%; plus 5% is 5.25 GHz, rounded up: 5.3 GHz
    assert info.clock_hz.value == pytest.approx(5.3e9)
    assert "nominal clock" not in info.sources()


def test_apple_silicon_uses_the_published_clock(machine):
    sysctl = {"machdep.cpu.brand_string": "Apple M2", "hw.perflevel0.physicalcpu": "4"}
    info = machine(sysctl=sysctl, arch="arm64", logical=8, calibrated=once(50e9))
    assert info.model == "Apple M2" and info.simd == "NEON"
    assert info.cores.value == 4 and info.fma_units.value == 4
    assert info.clock_hz.value == pytest.approx(3.5e9) and "Apple M2 published" in info.clock_hz.source
    assert info.peak_fp32 == pytest.approx(4 * 3.5e9 * 4 * 4 * 2)


def test_apple_blas_on_a_matrix_unit_keeps_the_published_clock(machine):
    # Accelerate's sgemm runs on AMX: far more than one P-core's NEON lanes could do at 3.5 GHz (112 GFLOP/s)
    sysctl = {"machdep.cpu.brand_string": "Apple M2", "hw.perflevel0.physicalcpu": "4"}
    info = machine(sysctl=sysctl, arch="arm64", logical=8, calibrated=once(1.5e12))
    assert info.matrix_unit and info.clock_hz.value == pytest.approx(3.5e9)
    # its peak per core is 1.5 TFLOP/s / 0.9, plus 5%, rounded up to 1 GFLOP/s
    assert info.peak_fp32_per_core == pytest.approx(math.ceil(1.5e12 / BLAS_BEST_EFFICIENCY * 1.05 / 1e9) * 1e9)
    assert info.peak_fp32 >= 4 * 1.5e12 and "matrix unit" in info.formula()
    assert "Apple's AMX" in info.matrix_fp32_per_core.source


# --- the same machine gives the same peak on every run ------------------------------------------------------------


def test_calibrations_that_differ_by_noise_give_the_same_peak(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    # 35.3 and 36.2 GFLOP/s straddle a 0.1 GHz step when each is rounded on its own (2.6 and 2.7 GHz)
    assert inferred_hz(35.3e9, ZEN1_PER_CYCLE) != inferred_hz(36.2e9, ZEN1_PER_CYCLE)
    first = machine(files, logical=2, calibrated=once(35.3e9), nominal=VM_CLOCK)
    assert first.clock_hz.value == pytest.approx(2.6e9)
    for noisy in (36.2e9, 35.9e9, 34.1e9, 36.6e9):
        again = machine(files, logical=2, calibrated=once(noisy), nominal=VM_CLOCK)
        assert again.peak_fp32 == first.peak_fp32 and again.clock_hz.value == first.clock_hz.value
    assert again.blas_fp32_per_core.value == 36.6e9 and "earlier run" not in again.blas_fp32_per_core.source


def test_a_busy_core_does_not_lower_the_peak(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    quiet = machine(files, calibrated=once(36e9), nominal=VM_CLOCK)
    busy = machine(files, calibrated=once(18e9), nominal=VM_CLOCK)  # every core shared: half the rate
    assert busy.peak_fp32 == quiet.peak_fp32
    assert "36.0 GFLOP/s at best in an earlier run" in busy.blas_fp32_per_core.source


def test_one_busy_cpu_is_outrun_by_the_others_on_a_first_run(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    busy = machine(files, calibrated=(18e9, 36e9, 9e9, 36e9), nominal=VM_CLOCK)
    assert busy.clock_hz.value == pytest.approx(inferred_hz(36e9, ZEN1_PER_CYCLE))
    assert busy.peak_fp32 == machine(files, calibrated=once(36e9), nominal=VM_CLOCK).peak_fp32


def test_the_first_run_calibrates_longer_and_later_runs_do_not_rewrite_the_cache(machine, tmp_path):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    machine(files, calibrated=once(36e9), nominal=VM_CLOCK)
    first_budget = sum(machine.budgets)
    kept = tmp_path / "cache" / "loops-to-tpus" / "cpu-peak.json"
    written = kept.stat().st_mtime_ns, kept.read_text()
    machine(files, calibrated=once(35e9), nominal=VM_CLOCK)
    assert sum(machine.budgets) == pytest.approx(first_budget / 3)
    assert (kept.stat().st_mtime_ns, kept.read_text()) == written  # nothing new to keep


def test_the_memory_roof_is_the_best_copy_any_run_on_this_cpu_model_showed(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    quiet = machine(files, calibrated=once(36e9), nominal=VM_CLOCK)
    assert quiet.peak_bandwidth.value == 12.5e9 and "12.5 GB/s this run" in quiet.peak_bandwidth.source
    busy = machine(files, calibrated=once(36e9), nominal=VM_CLOCK, copied=6e9)  # a busy moment: half the rate
    assert busy.peak_bandwidth.value == 12.5e9, "a roof never drops below what this machine has shown"
    assert "6.0 GB/s this run; 12.5 GB/s at best in an earlier run" in busy.peak_bandwidth.source
    assert machine(files, calibrated=once(36e9), nominal=VM_CLOCK, copied=15e9).peak_bandwidth.value == 15e9


def test_the_clock_rises_when_blas_clearly_needs_more(machine):
    files = {"/proc/cpuinfo": ZEN1_CPUINFO}
    first = machine(files, calibrated=once(36e9), nominal=VM_CLOCK)
    faster = machine(files, calibrated=once(42e9), nominal=VM_CLOCK)  # needs 2.92 GHz: more than the kept 2.7
    assert faster.clock_hz.value == pytest.approx(inferred_hz(42e9, ZEN1_PER_CYCLE))
    assert faster.clock_hz.value > first.clock_hz.value
    assert machine(files, calibrated=once(36e9), nominal=VM_CLOCK).clock_hz.value == faster.clock_hz.value


def test_an_unreadable_or_unwritable_cache_still_gives_a_peak(machine, monkeypatch, tmp_path):
    (tmp_path / "cache").write_text("not a directory")
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, calibrated=once(36e9), nominal=VM_CLOCK)
    assert info.clock_hz.value == pytest.approx(inferred_hz(36e9, ZEN1_PER_CYCLE))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh"))
    (tmp_path / "fresh" / "loops-to-tpus").mkdir(parents=True)
    (tmp_path / "fresh" / "loops-to-tpus" / "cpu-peak.json").write_text("[1, 2")  # broken JSON
    again = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, calibrated=once(36e9), nominal=VM_CLOCK)
    assert again.clock_hz.value == info.clock_hz.value


@pytest.mark.parametrize("calibrated", [1e6, 20e9, 35.66e9, 36.2e9, 44e9, 47.52e9, 1e12])
@pytest.mark.parametrize("nominal", [
    None, (Sourced(3e9, "cpufreq (test)"), "max"), (Sourced(3e9, "name (test)"), "base"),
    (Sourced(2e9, "cpu MHz (test)"), "reported"),
])
def test_the_peak_is_never_below_what_blas_demonstrated(machine, calibrated, nominal):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=2, calibrated=once(calibrated), nominal=nominal)
    assert info.blas_fp32_per_core.value == calibrated
    assert info.peak_fp32_per_core >= calibrated / BLAS_BEST_EFFICIENCY
    assert info.peak_bf16 >= info.peak_fp32 >= int(info.cores.value) * calibrated


# --- bf16 ---------------------------------------------------------------------------------------------------------


def test_amx_bf16_counts_the_tile_unit(machine):
    info = machine(xeon("avx512_bf16 amx_bf16 amx_tile amx_int8"), logical=2, calibrated=once(1e9))
    assert info.bf16_flops_per_cycle.value == AMX_BF16_FLOPS_PER_CYCLE == 1024
    assert info.peak_bf16 == pytest.approx(1 * 2.2e9 * 1024)
    assert info.peak_flops("bfloat16") == info.peak_bf16 > 10 * info.peak_fp32
    source = info.sources()["bf16"]
    assert "AMX-BF16" in source and "1,024 BF16 operations per cycle" in source and "intel.com" in source
    assert info.formula("bfloat16") == (f"1 cores x 2.20 GHz x 1,024 bf16 FLOP/cycle = 2,253 GFLOP/s ({source})")


def test_avx512_bf16_doubles_the_fp32_simd_rate(machine):
    info = machine(xeon("avx512_bf16"), logical=2, calibrated=once(1e9))
    assert info.bf16_flops_per_cycle.value == 2 * info.flops_per_cycle_fp32 == 128
    assert info.peak_bf16 == pytest.approx(2 * info.peak_fp32)
    assert "VDPBF16PS" in info.sources()["bf16"] and "felixcloutier.com/x86/vdpbf16ps" in info.sources()["bf16"]
    assert "128 bf16 FLOP/cycle" in info.formula("bfloat16")


def test_without_bf16_units_bf16_runs_at_the_fp32_peak(machine):
    info = machine(xeon(), logical=2, calibrated=once(1e9))
    assert info.peak_bf16 == info.peak_fp32 == info.peak_flops("bfloat16")
    assert "convert bf16 to fp32 and compute in fp32" in info.sources()["bf16"]
    assert info.formula("bfloat16") == f"bf16 at the FP32 peak ({info.sources()['bf16']}): {info.formula()}"


def test_apple_bf16_is_counted_like_fp32_with_its_matrix_unit(machine):
    sysctl = {"machdep.cpu.brand_string": "Apple M2", "hw.perflevel0.physicalcpu": "4"}
    plain = machine(sysctl=sysctl, arch="arm64", logical=8, calibrated=once(50e9))
    assert plain.peak_bf16 == plain.peak_fp32 and "Apple publishes no bf16 rate" in plain.sources()["bf16"]
    amx = machine(sysctl=sysctl, arch="arm64", logical=8, calibrated=once(1.5e12))
    assert amx.matrix_unit and amx.peak_bf16 == amx.peak_fp32 > 4 * 1.5e12


def test_a_hand_made_cpu_without_a_bf16_rate_runs_bf16_in_fp32(fake_cpu):
    assert fake_cpu.bf16_rate is None and fake_cpu.peak_bf16 == fake_cpu.peak_fp32
    assert "convert bf16 to fp32" in fake_cpu.sources()["bf16"]


@pytest.mark.parametrize("dtype", ["float16", "int8", None])
def test_formula_names_the_dtypes_it_has(fake_cpu, dtype):
    with pytest.raises(ValueError, match="dtype must be 'float32', 'float64' or 'bfloat16'"):
        fake_cpu.formula(dtype)


# --- this machine -------------------------------------------------------------------------------------------------


def test_peak_is_the_product_of_its_inputs():
    info = cpu_info()
    lanes = info.simd_bits // 32
    expected = int(info.cores.value) * float(info.clock_hz.value) * int(info.fma_units.value) * lanes * 2
    if not info.matrix_unit:
        assert info.peak_fp32 == pytest.approx(expected)
    assert info.peak_flops("float32") == info.peak_fp32
    assert info.peak_flops("float64") == pytest.approx(info.peak_fp32 / 2)
    assert info.peak_flops("bfloat16") == info.peak_bf16 >= info.peak_fp32
    assert info.peak_flops("float16") is None
    assert f"{info.peak_fp32 / 1e9:,.0f} GFLOP/s" in info.formula()
    assert f"{info.peak_bf16 / 1e9:,.0f} GFLOP/s" in info.formula("bfloat16")
    assert set(info.sources()) >= {"cores", "FMA units", "clock", "bf16", "memory bandwidth"}
    assert 1 <= int(info.cores.value) <= info.logical_cpus
    assert info.peak_bandwidth.value > 1e8


def test_cpu_info_is_detected_once():
    assert cpu_info() is cpu_info()


def test_peak_is_never_below_what_numpy_demonstrably_reached():
    info = cpu_info()  # the real detection: its own BLAS calibration is the demonstration
    assert info.blas_fp32_per_core is not None
    assert info.peak_fp32_per_core >= float(info.blas_fp32_per_core.value) / BLAS_BEST_EFFICIENCY
    assert info.peak_fp32 >= float(info.blas_fp32_per_core.value) * int(info.cores.value)


class TickingClocks:
    """This thread's CPU clock and the wall clock, each moving by a fixed step at every read: a run between two
    reads 'takes' one step of each, so a core shared half-and-half has a CPU step half its wall step."""

    def __init__(self, cpu_step: float, wall_step: float) -> None:
        self.cpu_step, self.wall_step, self.cpu, self.wall = cpu_step, wall_step, 0.0, 0.0

    def thread_time(self) -> float:
        self.cpu += self.cpu_step
        return self.cpu

    def perf_counter(self) -> float:
        self.wall += self.wall_step
        return self.wall


@pytest.mark.parametrize(("cpu_step", "wall_step", "seconds"), [
    (1e-3, 1e-3, 1e-3),  # a core of its own
    (1e-3, 2e-3, 1e-3),  # a core shared with a busy process: its CPU time is the core's speed
    (1e-4, 1e-3, 1e-3),  # CPU time under a quarter of the wall time: too coarse, or the work ran elsewhere
])
def test_a_calibration_is_timed_by_its_threads_cpu_time(monkeypatch, cpu_step, wall_step, seconds):
    monkeypatch.setattr(cpu, "time", TickingClocks(cpu_step, wall_step))
    assert cpu.calibrate_matmul_flops(n=8, budget_s=0.01) == pytest.approx(2 * 8**3 / seconds)


def test_calibrations_measure_something():
    assert cpu.calibrate_matmul_flops(n=64, budget_s=0.01) > 1e6
    assert cpu.measure_bandwidth(megabytes=1, repeats=1) > 1e6


def test_the_real_calibration_leaves_this_threads_cpus_as_they_were():
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    flops, how = cpu._one_core_flops(0.02)
    assert flops > 1e6 and "timed by its CPU time" in how
    assert (os.sched_getaffinity(0) if before is not None else None) == before


@pytest.mark.parametrize("files, expected", [
    ({"/sys/fs/cgroup/cpu.max": "150000 100000\n"}, 2),
    ({"/sys/fs/cgroup/cpu.max": "100000 100000\n"}, 1),
    ({"/sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 1),
    ({}, None),
])
def test_container_cpu_quota(monkeypatch, files, expected):
    monkeypatch.setattr(cpu, "_read", lambda path: files.get(path, ""))
    assert cpu._cgroup_cpu_limit() == expected


def test_cores_are_capped_by_a_container_quota(monkeypatch):
    monkeypatch.setattr(cpu, "_cgroup_cpu_limit", lambda: 1)
    assert cpu._logical_cpus() == 1
