"""Published accelerator specs: names as CuPy and JAX report them, sources, roofs and ridge points."""

from __future__ import annotations

import re

import pytest

from helpers.book import evidence
from helpers.measuring import specs

#: Device names as CUDA reports them (CuPy's getDeviceProperties(0)["name"]; JAX's device_kind on a GPU is the
#: same string), each with the spec it must find.
CUDA_NAMES = [
    ("Tesla T4", "NVIDIA T4"),  # Colab's free GPU
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"),  # Colab's A100
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB"),
    ("NVIDIA A100-SXM-80GB", "NVIDIA A100 80GB"),  # DGX A100 80GB
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
    ("NVIDIA H200", "NVIDIA H200"),
    ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
]


def _spellings(reported: str) -> list[str | bytes]:
    """The ways a name reaches lookup: str (JAX) and bytes (CuPy), with and without NVIDIA's prefix, any case."""
    bare = reported.removeprefix("NVIDIA ").removeprefix("Tesla ")
    return [reported, reported.encode(), bare, bare.encode(), reported.upper(), f"  {reported.lower()}  "]


@pytest.mark.parametrize(("reported", "expected"), CUDA_NAMES)
def test_real_gpu_names_find_their_spec(reported, expected):
    for spelling in _spellings(reported):
        spec = specs.lookup(spelling)
        assert spec is not None and spec.name == expected, spelling
        assert specs.get(spelling) is spec


@pytest.mark.parametrize(("reported", "expected"), [
    ("NVIDIA T4", "NVIDIA T4"),
    ("TPU v2", "TPU v2"),  # JAX's device_kind
    ("TPU v4", "TPU v4"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5", "TPU v5p"),
    ("TPU v6 lite", "TPU v6e"),
    ("  tpu   V5   LITE ", "TPU v5e"),  # case and spacing do not matter
    (b"TPU v6 lite", "TPU v6e"),
    (b"Tesla T4\x00\x00", "NVIDIA T4"),  # a C string's padding
    ("NVIDIA A100 40GB", "NVIDIA A100 40GB"),  # the spec names the rest of the project uses
    ("NVIDIA A100 80GB", "NVIDIA A100 80GB"),
    ("NVIDIA H100 SXM", "NVIDIA H100 SXM"),
])
def test_lookup_names_as_reported(reported, expected):
    spec = specs.lookup(reported)
    assert spec is not None and spec.name == expected


@pytest.mark.parametrize("reported", [
    "NVIDIA GeForce RTX 5090", "NVIDIA L40S", "NVIDIA GH200 480GB", "TPU v7", "cpu", "", "   ", None, 42, b"", b"\x00",
    "NVIDIA A100 PCIe",  # no memory size: which A100 is unknown, and no SXM figures for a PCIe card
])
def test_lookup_unknown_is_none(reported):
    assert specs.lookup(reported) is None  # L40S is not an L4, GH200 is not an H200


@pytest.mark.parametrize(("sxm", "pcie"), [
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL"),
    ("NVIDIA H200", "NVIDIA H200 NVL"),
])
def test_pcie_and_nvl_cards_have_their_own_figures(sxm, pcie):
    a, b = specs.get(sxm), specs.get(pcie)
    assert a is not b
    assert (a.peak_bandwidth, a.peak_flops) != (b.peak_bandwidth, b.peak_flops)


def test_the_datasheet_figures_of_the_variants():
    gb = 1e9
    assert specs.get("NVIDIA A100-SXM4-80GB").peak_bandwidth == 2039 * gb
    assert specs.get("NVIDIA A100 80GB PCIe").peak_bandwidth == 1935 * gb
    # the 40GB cards: the datasheet gives both the same peaks and 1,555 GB/s
    sxm40, pcie40 = specs.get("NVIDIA A100-SXM4-40GB"), specs.get("NVIDIA A100-PCIE-40GB")
    assert sxm40 is not pcie40 and sxm40.peak_flops == pcie40.peak_flops
    assert sxm40.peak_bandwidth == pcie40.peak_bandwidth == 1555 * gb
    h100, pcie, nvl = (specs.get(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"))
    assert (h100.peak_bandwidth, pcie.peak_bandwidth, nvl.peak_bandwidth) == (3350 * gb, 2000 * gb, 3900 * gb)
    assert pcie.peak_for("float32") == 51e12 < nvl.peak_for("float32") == 60e12 < h100.peak_for("float32")
    assert pcie.peak_for("bfloat16") < nvl.peak_for("bfloat16") < h100.peak_for("bfloat16")
    assert nvl.memory_bytes == 94e9 and specs.get("NVIDIA H200 NVL").memory_bytes == 141e9
    assert specs.get("NVIDIA H200 NVL").peak_bandwidth == specs.get("NVIDIA H200").peak_bandwidth == 4800 * gb


@pytest.mark.parametrize("spec", specs.GPUS, ids=lambda s: s.name)
def test_every_gpu_has_an_l2_size_with_its_source(spec):
    assert spec.l2_source.strip()
    if spec.l2_bytes is None:  # left out where no public source gives it, and the source says so
        assert spec.l2_source.startswith("not published")
    else:
        assert "https://" in spec.l2_source
        assert 1 * 2**20 <= spec.l2_bytes <= 256 * 2**20 and spec.l2_bytes % 2**20 == 0
    assert spec.urls and all(u.startswith("https://") for u in spec.urls)


def test_l2_sizes():
    mib = 2**20
    l2 = {name: specs.get(name).l2_bytes for name in (n for n, _ in CUDA_NAMES)}
    assert l2["Tesla T4"] == 4 * mib and l2["NVIDIA L4"] == 48 * mib  # the T4's: a published deviceQuery
    assert {l2[n] for n in l2 if "A100" in n} == {40 * mib}
    assert l2["NVIDIA H100 80GB HBM3"] == l2["NVIDIA H100 PCIe"] == 50 * mib
    assert l2["NVIDIA H100 NVL"] is None and l2["NVIDIA H200"] is None  # no public source found


def test_dense_figures_are_half_the_sparse_ones_nvidia_prints():
    # NVIDIA prints these with sparsity: H100 PCIe TF32 756, BF16 1,513; H100 NVL and H200 NVL TF32 835, BF16 1,671
    for name, tf32, bf16 in (("NVIDIA H100 PCIe", 756, 1513), ("NVIDIA H100 NVL", 835, 1671),
                             ("NVIDIA H200 NVL", 835, 1671)):
        spec = specs.get(name)
        assert spec.peak_for("tf32") == pytest.approx(tf32 / 2 * 1e12)
        assert spec.peak_for("bfloat16") == spec.peak_for("float16") == pytest.approx(bf16 / 2 * 1e12)
        assert "sparsity" in spec.notes and "dense" in spec.notes


def test_every_gpu_has_a_host_link():
    for spec in specs.GPUS:
        rate, source = specs.host_link(spec.name)
        assert rate > 1e9 and source.startswith("PCIe Gen")


def test_get_known_and_unknown():
    assert specs.get("Tesla T4") is specs.lookup("NVIDIA T4")
    with pytest.raises(KeyError, match="no published specs for 'Radeon 7900'") as info:
        specs.get("Radeon 7900")
    for spec in specs.ALL:
        assert spec.name in str(info.value)


def test_reference_devices_exist():
    assert specs.get(specs.REFERENCE_GPU).kind == "gpu"
    assert specs.get(specs.REFERENCE_TPU).kind == "tpu"


@pytest.mark.parametrize("spec", specs.ALL, ids=lambda s: s.name)
def test_every_spec_is_sourced_and_sane(spec):
    assert spec.source.strip()
    assert spec.kind in ("gpu", "tpu") and spec in (specs.GPUS if spec.kind == "gpu" else specs.TPUS)
    assert spec.peak_flops and all(v > 1e12 for v in spec.peak_flops.values())
    assert set(spec.peak_flops) <= {"float32", "tf32", "float16", "bfloat16", "float16_acc16"}
    if "float16_acc16" in spec.peak_flops:  # fp16 sums published apart: faster than float32 sums, else not apart
        assert spec.peak_flops["float16_acc16"] > spec.peak_flops["float16"]
    if any(dtype in spec.peak_flops for dtype in ("float16", "bfloat16")) and spec.kind == "gpu":
        assert spec.tensor_source.strip(), spec.name  # the tensor-core peaks say where they come from
    assert 1e11 < spec.peak_bandwidth < 1e13 and spec.memory_bytes > 1e9
    assert specs.lookup(spec.name) is spec  # every spec can be found by its own name
    if spec.kind == "tpu":
        assert "bfloat16" in spec.peak_flops  # the TPU roof is the bf16 MXU peak
    else:
        assert "float32" in spec.peak_flops


def test_names_are_unique():
    names = [s.name for s in specs.ALL]
    assert len(names) == len(set(names))


def test_t4_roofs():
    t4 = specs.get("Tesla T4")
    assert t4.peak_for("float32") == pytest.approx(8.1e12)
    assert t4.peak_for("float16") == pytest.approx(65e12)
    assert t4.peak_for("bfloat16") is None  # no BF16 tensor cores on Turing
    assert t4.peak_for("tf32") is None
    assert t4.peak_bandwidth == pytest.approx(320e9)


def test_critical_intensity():
    # the ridge of the roofline: fastest published FLOP/s over bytes/s
    assert specs.get("Tesla T4").critical_intensity == pytest.approx(200, rel=0.05)  # 65 TFLOP/s / 320 GB/s
    assert specs.get("TPU v5 lite").critical_intensity == pytest.approx(240, rel=0.05)  # 197 TFLOP/s / 819 GB/s
    a100 = specs.get("NVIDIA A100-SXM4-40GB")
    assert a100.critical_intensity == pytest.approx(312e12 / 1555e9)


def _sources() -> list[str]:
    """Every source text in specs: each device's source, notes, addresses and L2 source, each host link's source."""
    texts = [t for spec in specs.ALL for t in (spec.source, spec.notes, spec.l2_source, *spec.urls)]
    return texts + [source for _, source in specs.HOST_LINKS.values()]


def test_no_source_address_can_drift():
    """A GitHub file cited at a branch (blob/main) can change under the figure: each names its commit."""
    assert [a for text in _sources() for a in evidence.unpinned(text)] == []


@pytest.mark.parametrize("name", list(specs.HOST_LINKS))
def test_every_host_link_is_measured_with_an_address_or_says_it_is_assumed(name):
    rate, source = specs.HOST_LINKS[name]
    assert rate > 0 and ("https://" in source or source.split(": ")[1].startswith("assumed")), source


@pytest.mark.parametrize("spec", specs.GPUS, ids=lambda s: s.name)
def test_an_l2_figure_is_stated_only_beside_an_address(spec):
    """A size in bytes or MB in an L2 source (a deviceQuery reading, a datasheet) comes with where it was read."""
    if re.search(r"\d+ (?:MB|bytes)", spec.l2_source):
        assert "https://" in spec.l2_source, spec.l2_source

