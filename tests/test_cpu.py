"""The CPU's peak FLOP/s: SIMD and FMA layout per microarchitecture, /proc/cpuinfo parsing, cores, clock floor."""

from __future__ import annotations

import pytest

from helpers import cpu
from helpers.cpu import BLAS_BEST_EFFICIENCY, Sourced, cpu_info, detect_fma_units, detect_simd

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


def test_nominal_clock_sources(monkeypatch):
    files = {"/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "3500000\n"}
    sysctl = {}
    monkeypatch.setattr(cpu, "_read", lambda path: files.get(path, ""))
    monkeypatch.setattr(cpu, "_sysctl", lambda name: sysctl.get(name, ""))
    clock = cpu._nominal_clock({"cpu MHz": "2445.430"}, "x")
    assert clock.value == pytest.approx(3.5e9) and "cpuinfo_max_freq" in clock.source
    files.clear()
    clock = cpu._nominal_clock({"cpu MHz": "2445.430"}, "x")
    assert clock.value == pytest.approx(2.44543e9) and "cpu MHz" in clock.source
    sysctl["hw.cpufrequency_max"] = "3200000000"
    assert cpu._nominal_clock({}, "x").value == pytest.approx(3.2e9)
    sysctl.clear()
    clock = cpu._nominal_clock({}, "Apple M3 Pro")
    assert clock.value == pytest.approx(4.05e9) and "Apple M3" in clock.source
    assert cpu._nominal_clock({}, "Apple M9") is None
    assert cpu._nominal_clock({}, "Some CPU") is None


# --- the whole detection on made-up machines (no calibration runs) -------------------------------------------


@pytest.fixture
def machine(monkeypatch):
    """Make cpu_info's inputs up: /proc files, sysctl, arch, usable CPUs and the two measurements."""

    def make(files=None, sysctl=None, arch="x86_64", logical=4, calibrated=1e9, nominal=..., one_core=0.0):
        monkeypatch.setattr(cpu, "_read", lambda path: (files or {}).get(path, ""))
        monkeypatch.setattr(cpu, "_sysctl", lambda name: (sysctl or {}).get(name, ""))
        monkeypatch.setattr(cpu.platform, "machine", lambda: arch)
        monkeypatch.setattr(cpu.platform, "processor", lambda: "")
        monkeypatch.setattr(cpu, "_logical_cpus", lambda: logical)
        monkeypatch.setattr(cpu, "calibrate_matmul_flops",
                            lambda *a, threads=None, **k: calibrated if threads is None else one_core)
        monkeypatch.setattr(cpu, "measure_bandwidth", lambda *a, **k: 12.5e9)
        if nominal is not ...:
            monkeypatch.setattr(cpu, "_nominal_clock", lambda info, brand: nominal)
        return cpu.cpu_info.__wrapped__()  # the uncached detection: the process-wide cache is left alone

    return make


def test_a_lone_core_boosting_higher_raises_the_clock_floor(machine):
    # 8 Zen 1 cores together: 8 x 40 GFLOP/s; one core alone: 60 GFLOP/s (it boosts higher).
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16, calibrated=320e9, one_core=60e9,
                   nominal=Sourced(1e9, "/proc/cpuinfo 'cpu MHz' (test)"))
    assert info.clock_hz.value == pytest.approx(60e9 / (16 * cpu.BLAS_BEST_EFFICIENCY))
    assert info.peak_fp32_per_core >= 60e9 and info.peak_fp32 >= 320e9
    assert "one alone" in info.clock_hz.source


def test_zen1_desktop(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16)
    assert info.model == "AMD Ryzen 7 1700 Eight-Core Processor" and info.arch == "x86_64"
    assert info.cores.value == 8 and info.simd == "AVX2" and info.simd_bits == 256
    assert info.fma_units.value == 1  # two 128-bit pipes = one 256-bit FMA per cycle
    assert info.clock_hz.value == pytest.approx(3e9) and "cpu MHz" in info.clock_hz.source
    assert info.flops_per_cycle_fp32 == 16
    assert info.peak_fp32 == pytest.approx(8 * 3e9 * 1 * 8 * 2)
    assert info.peak_fp64 == pytest.approx(info.peak_fp32 / 2)
    assert info.formula() == ("8 cores x 3.00 GHz x 1 FMA units x 8 fp32 lanes (AVX2) x 2 FLOP/FMA "
                              "= 384 GFLOP/s")
    assert info.peak_bandwidth.value == 12.5e9


def test_apple_silicon(machine):
    sysctl = {"machdep.cpu.brand_string": "Apple M2", "hw.perflevel0.physicalcpu": "4"}
    info = machine(sysctl=sysctl, arch="arm64", logical=8)
    assert info.model == "Apple M2" and info.simd == "NEON"
    assert info.cores.value == 4 and info.fma_units.value == 4
    assert info.clock_hz.value == pytest.approx(3.5e9)
    assert info.peak_fp32 == pytest.approx(4 * 3.5e9 * 4 * 4 * 2)


def test_arm_server_without_a_reported_clock(machine):
    info = machine({"/proc/cpuinfo": ARM_CPUINFO}, arch="aarch64", logical=4, calibrated=288e9)
    assert info.model == "aarch64" and info.simd == "NEON" and info.fma_units.value == 2
    assert info.nominal_clock_hz is None and "no clock reported" in info.clock_hz.source
    # the clock is the lowest at which 288 GFLOP/s is 90% of peak: 288e9 / (4 cores x 16 FLOP/cycle x 0.9)
    assert info.clock_hz.value == pytest.approx(5e9)
    assert info.peak_fp32 == pytest.approx(288e9 / BLAS_BEST_EFFICIENCY)
    assert "nominal clock" not in info.sources()


def test_clock_is_raised_to_what_the_machine_demonstrably_does(machine):
    vm_clock = Sourced(1e9, "/proc/cpuinfo 'cpu MHz' (test)")  # a VM's reported clock, not trusted
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16, calibrated=1e15, nominal=vm_clock)
    assert info.clock_hz.value > 1e9
    assert "raised from the reported 1.00 GHz" in info.clock_hz.source
    assert info.peak_fp32 == pytest.approx(1e15 / BLAS_BEST_EFFICIENCY)
    assert info.nominal_clock_hz.value == 1e9
    assert info.sources()["nominal clock"] == "1.00 GHz (/proc/cpuinfo 'cpu MHz' (test))"


def test_reported_clock_is_kept_when_it_suffices(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16, calibrated=1.0, nominal=Sourced(2e9, "test"))
    assert info.clock_hz == Sourced(2e9, "test")


# --- this machine -------------------------------------------------------------------------------------------------


def test_peak_is_the_product_of_its_inputs():
    info = cpu_info()
    lanes = info.simd_bits // 32
    expected = int(info.cores.value) * float(info.clock_hz.value) * int(info.fma_units.value) * lanes * 2
    assert info.peak_fp32 == pytest.approx(expected)
    assert info.peak_flops("float32") == info.peak_fp32
    assert info.peak_flops("float64") == pytest.approx(info.peak_fp32 / 2)
    assert info.peak_flops("float16") is None
    assert f"{info.peak_fp32 / 1e9:,.0f} GFLOP/s" in info.formula()
    assert set(info.sources()) >= {"cores", "FMA units", "clock", "memory bandwidth"}
    assert 1 <= int(info.cores.value) <= info.logical_cpus
    assert info.peak_bandwidth.value > 1e8


def test_cpu_info_is_detected_once():
    assert cpu_info() is cpu_info()


def test_peak_is_never_below_what_numpy_demonstrably_reached():
    info = cpu_info()  # the real detection: its own BLAS calibration is the demonstration
    assert info.blas_fp32_per_core is not None
    assert info.peak_fp32_per_core >= float(info.blas_fp32_per_core.value)
    assert info.peak_fp32 >= float(info.blas_fp32_per_core.value) * int(info.cores.value)


def test_calibrations_measure_something():
    assert cpu.calibrate_matmul_flops(n=64, warmup_s=0.01, budget_s=0.01) > 1e6
    assert cpu.measure_bandwidth(megabytes=1, repeats=1) > 1e6


def test_apple_blas_on_a_matrix_unit_keeps_the_published_clock(machine):
    # Accelerate's sgemm runs on AMX: far more than 4 P-cores' NEON lanes could do at 3.5 GHz
    sysctl = {"machdep.cpu.brand_string": "Apple M2", "hw.perflevel0.physicalcpu": "4"}
    info = machine(sysctl=sysctl, arch="arm64", logical=8, calibrated=4 * 1.5e12)
    assert info.matrix_unit and info.clock_hz.value == pytest.approx(3.5e9)
    assert info.peak_fp32 >= 6e12 and "matrix unit" in info.formula()


def test_a_vm_clock_far_below_the_blas_rate_is_raised_not_called_a_matrix_unit(machine):
    info = machine({"/proc/cpuinfo": ZEN1_CPUINFO}, logical=16, calibrated=1e15)  # 'cpu MHz' is not trusted
    assert not info.matrix_unit and "raised from" in info.clock_hz.source


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
