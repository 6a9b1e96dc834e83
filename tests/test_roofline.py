"""helpers.model.roofline: the one performance model (roofs, overheads, padding) and the direction of imports."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from helpers.book import architecture
from helpers.measuring import specs
from helpers.measuring.cpu import Sourced
from helpers.measuring.hardware import Peak
from helpers.model import roofline

T4 = specs.get("NVIDIA T4")
V5E = specs.get("TPU v5e")


def test_attainable_below_and_above_the_ridge(cpu):
    assert roofline.roofs(cpu).ridge("float32") == pytest.approx(8.0)
    assert roofline.roofs(cpu).ridge("float64") == pytest.approx(4.0)
    assert roofline.attainable(cpu, 1.0) == pytest.approx(20e9)  # memory-bound: intensity x bandwidth
    assert roofline.attainable(cpu, 8.0) == pytest.approx(160e9)  # the ridge
    assert roofline.attainable(cpu, 100.0) == pytest.approx(160e9)  # compute-bound: the peak
    assert roofline.attainable(cpu, 100.0, "float64") == pytest.approx(80e9)
    assert roofline.attainable(T4, 0.25) == pytest.approx(80e9)
    assert roofline.attainable(T4, 1000.0, "float16") == pytest.approx(65e12)


def test_a_cpu_bf16_roof_only_where_a_bf16_unit_beats_fp32(cpu):
    plain = roofline.roofs(cpu)  # no bf16 unit: bf16 runs at the fp32 rate, and no second roof at the same height
    assert plain.dtypes == ["float32", "float64"]
    assert plain.roof("bfloat16") is plain.roof("float32")
    amx = roofline.roofs(dataclasses.replace(cpu, bf16_rate=Sourced(1024, "AMX test")))
    assert amx.dtypes[0] == "bfloat16" and amx.roof("bfloat16").flops == pytest.approx(1024 * 2.5e9 * 2)
    with pytest.raises(ValueError, match="available: bfloat16, float32, float64"):
        amx.roof("int8")


def test_roofline_seconds_against_hand_computed_t4_numbers():
    n = 4096
    # compute side 2 x 4096³ / 8.1e12 = 0.016968 s beats memory side 3 x 4096² x 4 / 320e9 = 0.000629 s
    assert roofline.roofline_seconds(T4, flops=2 * n**3, bytes=3 * n * n * 4) == pytest.approx(0.0169677720)
    # axpby on 1e8 fp32 elements: 3e8 FLOP / 8.1e12 = 37 µs, but 1.2e9 bytes / 320e9 = 3.75 ms: memory-bound
    assert roofline.roofline_seconds(T4, flops=3e8, bytes=1.2e9) == pytest.approx(3.75e-3)
    assert roofline.roofline_seconds("T4", flops=3e8, bytes=1.2e9) == roofline.roofline_seconds(T4, flops=3e8,
                                                                                                 bytes=1.2e9)
    assert roofline.roofline_seconds(Peak("x", 1e12, 1e11, "published: x"), flops=1e12, bytes=1e9) == 1.0
    assert roofline.roofline_seconds(V5E, flops=197e12, bytes=0) == pytest.approx(1.0)  # float32 on bf16 MXUs


def test_predict_seconds_adds_each_calls_overhead_and_kernel_floor():
    # 1.2 GB at 80% of 320 GB/s = 4.6875 ms, plus the 2.433 µs kernel floor, plus one CuPy call's 10 µs
    synced = roofline.predict_seconds(T4, flops=3e8, bytes=1.2e9)
    assert synced == pytest.approx(1.2e9 / 256e9 + 2.433e-6 + 10e-6)
    # the same work in three calls: three floors and three overheads
    assert roofline.predict_seconds(T4, flops=3e8, bytes=1.2e9, calls=3) == pytest.approx(
        1.2e9 / 256e9 + 3 * (2.433e-6 + 10e-6))
    # pipelined, host overhead hides behind the device's time; for tiny work the host's time is what is left
    assert roofline.predict_seconds(T4, flops=3e8, bytes=1.2e9, timed="pipelined") == pytest.approx(
        1.2e9 / 256e9 + 2.433e-6)
    assert roofline.predict_seconds(T4, flops=3, bytes=12, calls=4, timed="pipelined") == pytest.approx(40e-6)
    assert roofline.predict_seconds(T4, flops=3, bytes=12, timed="kernel") == pytest.approx(2.433e-6, rel=1e-3)
    # a jitted JAX step of 23 kernels: one dispatch, 23 kernels of one compiled program (a CUDA graph)
    assert roofline.predict_seconds(T4, flops=0, bytes=0, call="jax_gpu", kernels=23) == pytest.approx(
        roofline.OVERHEADS["jax_gpu"].value + 23 * 1.26e-6)
    # the same with the call's cost measured on this host (helpers.measuring.host_calls), for the GPU that is here
    assert roofline.predict_seconds(T4, flops=0, bytes=0, call="jax_gpu", kernels=23, call_seconds=150e-6,
                                    timed="pipelined") == pytest.approx(150e-6)
    # one jit per epoch: 42 iterations of a compiled loop, each of 14 kernels, in one call
    assert roofline.predict_seconds(T4, flops=0, bytes=0, call="jax_gpu", kernels=42 * 14, loop_steps=42,
                                    timed="kernel") == pytest.approx(42 * (8.05e-6 + 13 * 1.26e-6))


def test_the_call_and_kernel_model_fits_the_h200_runs_jit_per_step_per_epoch_and_scan():
    """../shared/gpu-runs/h200-2026-11-28: chapter 05 measured 8.51 ms (jit per step) and 1.11 ms (one jit per
    epoch) for 42 steps of 14 kernels, chapter 06 a 100,000-step scan at 14.2 µs a step; the old model predicted
    3.06 ms for both epochs (a 5.2 µs floor a kernel, a 9.81 µs call) and 5.2 µs a scan step."""
    h200, steps, kernels = "NVIDIA H200", 42, 14
    # a jitted call of the step's 6 arrays in and 5 out, as helpers.measuring.host_calls measures it on a host
    here = 180e-6
    per_step = roofline.predict_seconds(h200, flops=0, bytes=0, calls=steps, call="jax_gpu", kernels=kernels,
                                        timed="pipelined", call_seconds=here)
    per_epoch = roofline.predict_seconds(h200, flops=0, bytes=0, call="jax_gpu", kernels=steps * kernels,
                                         loop_steps=steps, timed="pipelined", call_seconds=here)
    scan = roofline.predict_seconds(h200, flops=0, bytes=0, call="jax_gpu", kernels=100_000, loop_steps=100_000)
    for predicted, measured in ((per_step, 8.51e-3), (per_epoch, 1.11e-3), (scan, 1.42)):
        assert 0.5 < measured / predicted < 2, (predicted, measured)
    assert per_epoch < per_step / 4, "one call per epoch removes the calls between steps: the run measured 7.7x"


def test_fixed_device_costs_refuse_more_loop_iterations_than_kernels():
    with pytest.raises(ValueError, match="loop_steps .* cannot exceed kernels"):
        roofline.fixed_device_seconds("gpu", 3, loop_steps=4)
    with pytest.raises(ValueError, match="loop_steps must be a whole number"):
        roofline.fixed_device_seconds("gpu", 3, loop_steps=-1)


def test_tpu_matmul_pads_to_the_mxu_and_pays_a_call():
    eff = roofline.MATMUL_EFFICIENCY["tpu"].value
    call = roofline.OVERHEADS["jax_tpu"].value
    assert roofline.predict_matmul_seconds(V5E, 1024, 1024, 1024) == pytest.approx(
        call + 2 * 1024**3 / (197e12 * eff))
    # 1025 computes as 1152 on 128 x 128 MXUs; on a v6e's 256 x 256 MXUs as 1280
    assert roofline.predict_matmul_seconds(V5E, 1025, 1025, 1025) == pytest.approx(
        call + 2 * 1152**3 / (197e12 * eff))
    assert roofline.mxu_side("TPU v6e") == 256 and roofline.mxu_side(V5E) == 128 and roofline.mxu_side(T4) == 1
    assert roofline.padded(1025, 256) == 1280
    # a small product is mostly the call: 1024³ is under 10% of the roofline alone
    small = roofline.predict_matmul_seconds(V5E, 1024, 1024, 1024)
    assert roofline.roofline_seconds(V5E, flops=2 * 1024**3, bytes=0) / small < 0.15
    # a GPU pads nothing, and float32 is judged by the CUDA cores unless tf32 is asked for
    gpu = roofline.predict_matmul_seconds("NVIDIA A100 40GB", 4096, 4096, 4096, "float32", timed="kernel")
    tf32 = roofline.predict_matmul_seconds("NVIDIA A100 40GB", 4096, 4096, 4096, "tf32", timed="kernel")
    assert gpu / tf32 == pytest.approx(156 / 19.5, rel=0.01)


def test_copies_cross_the_host_link():
    rate = specs.HOST_LINKS["NVIDIA T4"][0]
    assert roofline.predict_copy_seconds(T4, 1e9, memory="pinned") == pytest.approx(10e-6 + 1e9 / rate)
    assert roofline.predict_copy_seconds(T4, 0, calls=2) == pytest.approx(20e-6)
    with pytest.raises(ValueError, match="memory must be one of 'pageable', 'pinned'"):
        roofline.predict_copy_seconds(T4, 1e9, memory="page-locked")


def test_a_numpy_array_is_pageable_and_crosses_at_a_fraction_of_the_pinned_rate():
    """cupy.asarray(a NumPy array) stages it through a pinned buffer: the default, and the slower, copy."""
    rate = specs.HOST_LINKS["NVIDIA T4"][0]
    pageable = roofline.predict_copy_seconds(T4, 1e9, timed="kernel")
    assert pageable == pytest.approx(1e9 / (rate * roofline.PAGEABLE_FRACTION.value))
    assert pageable > 3 * roofline.predict_copy_seconds(T4, 1e9, timed="kernel", memory="pinned")
    with pytest.raises(ValueError, match="no host link on file for TPU v6e; known: NVIDIA T4"):
        roofline.host_link("TPU v6e")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: roofline.predict_seconds("Some GPU", flops=1, bytes=1), "no published specs for 'Some GPU'; known "
                                                                      "devices: NVIDIA T4"),
    (lambda: roofline.predict_seconds(T4, flops=-1, bytes=1), "flops must be a finite number, zero or more"),
    (lambda: roofline.predict_seconds(T4, flops=1, bytes=float("nan")), "bytes must be a finite number"),
    (lambda: roofline.predict_seconds(T4, flops=1, bytes=1, dtype="float64"), "dtype 'float64': NVIDIA T4 has no "
                                                                              "such roof on file; available: float16"),
    (lambda: roofline.predict_seconds(T4, flops=1, bytes=1, call="numba"), "call must be one of 'none', 'cupy'"),
    (lambda: roofline.predict_seconds(T4, flops=1, bytes=1, timed="roughly"), "timed must be one of 'synced'"),
    (lambda: roofline.predict_seconds(T4, flops=1, bytes=1, calls=0), "calls must be a positive integer"),
    (lambda: roofline.predict_matmul_seconds(V5E, 1024.5, 2, 2), "m must be a positive integer"),
    (lambda: roofline.predict_seconds(V5E, flops=1, bytes=1, dtype="float64"),
     "dtype 'float64': TPU v5e has no such roof on file; available: bfloat16"),
    (lambda: roofline.predict_matmul_seconds(V5E, 8, 8, 8, "complex64"), "dtype must be one of 'float64'"),
    (lambda: roofline.roofs(Peak("GPU", None, None, "no published peaks")), "no roofline for GPU"),
])
def test_bad_input_names_what_is_accepted(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


def test_a_spec_object_or_its_name_is_accepted_everywhere():
    assert roofline.published_spec("NVIDIA T4") is roofline.published_spec(T4) is T4
    from helpers.chapters import training

    by_name = training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=10).seconds
    assert training.predict_epoch(T4, batch=32, hidden=64, steps=10).seconds == by_name
    with pytest.raises(ValueError, match="no published specs for 'Some GPU'"):
        training.predict_epoch("Some GPU", batch=32, hidden=64, steps=10)


def test_every_constant_says_where_it_comes_from():
    for table in (roofline.OVERHEADS, roofline.KERNEL_FLOOR, roofline.MATMUL_EFFICIENCY, roofline.MEMORY_EFFICIENCY):
        for name, cost in table.items():
            assert cost.what and cost.source, name
            assert cost.source.startswith(("assumed", "fitted", "the ", "measured")) or "https://" in cost.source, name
            assert not ("https://" in cost.source and cost.source.startswith("assumed")) or "found" in cost.source



def test_a_printed_source_gives_values_and_meanings_not_the_models_internal_names():
    """Chapter 04 prints the TPU call's cost with its source: a learner reads '6.81 µs, JAX's dispatch', not the
    name of a constant in this module; the value it states is the constant's."""
    names = [name for name in roofline.__all__ if name.isupper() and "_" in name]  # its own, not imported
    tables = (roofline.OVERHEADS, roofline.KERNEL_FLOOR, roofline.MATMUL_EFFICIENCY, roofline.MEMORY_EFFICIENCY)
    costs = [*(c for table in tables for c in table.values()), roofline.TPU_PIPELINED_LEAST, roofline.PAGEABLE_FRACTION]
    assert "TPU_PIPELINED_LEAST" in names and len(costs) > 10
    for cost in costs:
        assert not [name for name in names if name in cost.source or name in cost.what], cost.source
    least = f"{roofline.TPU_PIPELINED_LEAST.value * 1e6:.3g} µs"
    assert f"from the host's dispatch alone, {least}" in roofline.OVERHEADS["jax_tpu"].source

# --- decide: the model as a choice between devices -------------------------------------------------------------


def test_decide_adds_the_terms_and_names_the_largest(cpu):
    d = roofline.decide(flops=0, bytes=320e9 * 0.8, calls=1, cpu=cpu, devices=("NVIDIA T4",), workload="copy")
    on_cpu, t4 = d.estimates
    assert on_cpu.terms["memory"] == pytest.approx(320e9 * 0.8 / 20e9) and on_cpu.decided_by == "memory"
    assert t4.terms["memory"] == pytest.approx(1.0)  # 80% of the T4's 320 GB/s
    assert t4.terms["calls"] == pytest.approx(roofline.OVERHEADS["cupy"].value + roofline.KERNEL_FLOOR["gpu"].value)
    assert t4.seconds == pytest.approx(1.0 + t4.terms["calls"]) and d.winner is t4
    assert "winner: NVIDIA T4" in str(d) and "copy" in str(d)


def test_decide_calls_the_host_link_and_the_serial_part(cpu):
    many = roofline.decide(flops=1e3, bytes=1e3, calls=10_000, cpu=cpu)
    assert many.winner.device.startswith("this CPU") and all(e.decided_by == "calls" for e in many.estimates[1:])
    link = roofline.decide(flops=0, bytes=1e9, host_bytes=11e9, cpu=cpu, devices=("NVIDIA T4",))
    assert link.estimates[1].terms["host link"] == pytest.approx(1.0 / roofline.PAGEABLE_FRACTION.value)  # NumPy's
    assert link.estimates[0].terms["host link"] == 0
    serial = roofline.decide(flops=1e12, bytes=0, serial_fraction=0.5, cpu=cpu, devices=("NVIDIA H100 SXM",))
    one_core = 160e9 / 2  # the fixture's float32 peak on one of its 2 cores
    assert all(e.terms["serial"] == pytest.approx(0.5e12 / one_core) for e in serial.estimates)
    assert serial.estimates[1].decided_by == "serial"


def test_decide_counts_calls_synced_or_pipelined_as_predict_seconds_does(cpu):
    """Pipelined, a call's cost hides behind the device's work; a jitted call on the CPU costs JAX's dispatch."""
    work = dict(flops=0, bytes=320e9 * 0.8, calls=10, cpu=cpu, devices=("NVIDIA T4",))
    synced, pipelined = (roofline.decide(**work, timed=t).estimates[1] for t in ("synced", "pipelined"))
    assert synced.terms["calls"] == pytest.approx(10 * (roofline.OVERHEADS["cupy"].value
                                                        + roofline.KERNEL_FLOOR["gpu"].value))
    # 0.1 s of device time a call hides its 10 µs
    assert pipelined.terms["calls"] == pytest.approx(10 * roofline.KERNEL_FLOOR["gpu"].value)
    assert pipelined.seconds == pytest.approx(roofline.predict_seconds("NVIDIA T4", flops=0, bytes=320e9 * 0.8,
                                                                       calls=10, timed="pipelined"))
    jitted = roofline.decide(flops=0, bytes=0, calls=1000, call="jax", cpu=cpu, devices=())
    assert jitted.estimates[0].terms["calls"] == pytest.approx(1000 * roofline.OVERHEADS["jax_cpu"].value)
    with pytest.raises(ValueError, match="timed must be one of 'synced', 'pipelined'"):
        roofline.decide(flops=1, bytes=1, timed="kernel", cpu=cpu)


def test_a_tpus_pipelined_calls_are_a_range_and_every_other_prediction_one_figure():
    work = dict(flops=2 * 1024**3, bytes=3 * 2 * 1024**2, dtype="bfloat16", matmul=True, call="jax_tpu")
    low, high = roofline.predict_range(roofline.predict_seconds, "TPU v5e", **work, timed="pipelined")
    assert high == roofline.predict_seconds("TPU v5e", **work, timed="synced")  # pipelining hides nothing
    busy = roofline.predict_seconds("TPU v5e", **work, timed="kernel")
    assert low == pytest.approx(max(busy, roofline.TPU_PIPELINED_LEAST.value))  # it hides all but dispatch
    assert roofline.predict_range(roofline.predict_matmul_seconds, "TPU v5e", 1024, 1024, 1024,
                                  timed="pipelined") == pytest.approx((low, high))
    for device, timed in (("NVIDIA T4", "pipelined"), ("TPU v5e", "synced")):
        one, other = roofline.predict_range(roofline.predict_matmul_seconds, device, 512, 512, 512, timed=timed)
        assert one == other
    with pytest.raises(ValueError, match="bound must be one of 'lower', 'upper'"):
        roofline.predict_seconds("TPU v5e", flops=1, bytes=1, timed="pipelined", bound="middle")
    with pytest.raises(ValueError, match="predict must be roofline.predict_seconds"):
        roofline.predict_range(roofline.roofline_seconds, "TPU v5e", flops=1, bytes=1)


def test_a_cpu_matmul_is_predicted_at_what_its_blas_reaches_when_that_is_below_the_roof(cpu):
    """AVX2 kernels on an AVX-512 core (NumPy's OpenBLAS on AMD's Zen 5, seen here) reach half the roof: the
    prediction takes the BLAS's own rate, its best on one core measured here, times the cores."""
    wide = dataclasses.replace(cpu, simd="AVX-512", simd_bits=512,
                               blas_fp32_per_core=Sourced(40e9, "NumPy's BLAS on one core: 40 GFLOP/s"))
    work = dict(flops=2 * 1024**3, bytes=3 * 4 * 1024**2, matmul=True)
    assert roofline.roofs(wide).blas_flops == 80e9  # 2 cores x 40 GFLOP/s, under the 320 GFLOP/s roof x 90%
    assert roofline.predict_seconds(wide, **work) == pytest.approx(2 * 1024**3 / 80e9)
    fast = dataclasses.replace(wide, blas_fp32_per_core=Sourced(500e9, "a matrix unit"))
    assert roofline.predict_seconds(fast, **work) == pytest.approx(2 * 1024**3 / (320e9 * roofline.MATMUL_EFFICIENCY[
        "cpu"].value))  # never above the roof at the BLAS's best efficiency
    elementwise = roofline.predict_seconds(wide, flops=1e9, bytes=0)
    assert elementwise == pytest.approx(1e9 / 320e9)  # the BLAS's rate is for matrix products alone


def test_decide_leaves_out_a_device_the_data_does_not_fit(cpu):
    d = roofline.decide(flops=1e9, bytes=1e9, footprint=20e9, cpu=cpu, devices=("NVIDIA T4", "NVIDIA H100 SXM"))
    t4 = d.estimates[1]
    assert not t4.fits and "needs 20 GB, holds 16 GB" in t4.why_not and d.winner.device == "NVIDIA H100 SXM"
    assert "needs 20 GB" in str(d)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"flops": -1, "bytes": 1}, "flops must be a finite number, zero or more"),
    ({"flops": 1, "bytes": float("inf")}, "bytes must be a finite number"),
    ({"flops": 1, "bytes": 1, "serial_fraction": 1.5}, "serial_fraction must be a number from 0 to 1"),
    ({"flops": 1, "bytes": 1, "calls": 0}, "calls must be a positive integer"),
    ({"flops": 1, "bytes": 1, "devices": ("GTX 280",)}, "no published specs for 'GTX 280'; known devices"),
    ({"flops": 1, "bytes": 1, "devices": "NVIDIA T4"}, "devices must be a tuple of spec names"),
    ({"flops": 1, "bytes": 1, "host_bytes": -5}, "host_bytes must be a finite number"),
])
def test_decide_refuses_what_it_cannot_judge(cpu, kwargs, message):
    with pytest.raises(ValueError, match=message):
        roofline.decide(**kwargs, cpu=cpu)


# --- a Pallas kernel's blocks -------------------------------------------------------------------------------------


def test_pallas_blocks_are_priced_by_their_traffic_and_their_steps():
    small = roofline.predict_pallas_matmul_seconds("TPU v5e", 4096, 4096, 4096, 128, 128, 128)
    large = roofline.predict_pallas_matmul_seconds("TPU v5e", 4096, 4096, 4096, 512, 1024, 1024)
    assert small > 10 * large  # the guide's finding: 128 blocks are more than ten times slower at 4096
    traffic = roofline.pallas_traffic(4096, 4096, 4096, 128, 128, 128, 2)
    assert traffic == (4096**3 // 128 * 2 + 4096**2) * 2  # A read n / bn times, B m / bm times, C written once
    hbm_only = traffic / roofs_of("TPU v5e").bandwidth
    assert 4 < 0.011771515250438824 / hbm_only < 5  # HBM traffic alone predicts the 128 blocks ~4.5x too fast
    assert roofline.pallas_steps(4096, 4096, 4096, 128, 128, 128) == 32**3
    fitted = roofline.PALLAS_STEP.value * 32**3
    assert small == pytest.approx(0.011771515250438824, rel=0.01) and fitted > small / 2  # steps decide it


def test_pallas_blocks_that_do_not_divide_or_a_device_that_is_no_tpu_are_refused():
    with pytest.raises(ValueError, match="bm = 384 does not divide m = 1024"):
        roofline.predict_pallas_matmul_seconds("TPU v5e", 1024, 1024, 1024, 384, 128, 128)
    with pytest.raises(ValueError, match="a Pallas TPU kernel runs on a TPU; NVIDIA T4 is a gpu"):
        roofline.predict_pallas_matmul_seconds("NVIDIA T4", 1024, 1024, 1024, 128, 128, 128)


def roofs_of(device: str) -> roofline.Roofs:
    return roofline.roofs(device)


def test_a_pageable_copy_goes_no_faster_than_the_host_copies_memory():
    """The H200 run: 64 MiB from pageable memory took 11.7 ms (the model said 5.53 ms, at 0.27 of a 45 GB/s link);
    its host's measured copy bandwidth was 13.5 GB/s, read and written, so 6.75 GB/s of data."""
    nbytes = 64 * 2**20
    published = roofline.predict_copy_seconds("NVIDIA H200", nbytes)
    here = roofline.predict_copy_seconds("NVIDIA H200", nbytes, host_bandwidth=13.5e9 / 2)
    assert 11.7e-3 / published > 2 and 1 / 1.5 < 11.7e-3 / here < 1.5
    fast_host = roofline.predict_copy_seconds("NVIDIA H200", nbytes, host_bandwidth=1e12)
    assert fast_host == published  # a host that copies faster than the link leaves the link's rate
    assert roofline.predict_copy_seconds("NVIDIA H200", nbytes, memory="pinned", host_bandwidth=1e9) == (
        roofline.predict_copy_seconds("NVIDIA H200", nbytes, memory="pinned"))  # pinned memory is not staged


# --- the surface and its parts: roofline re-exports every public name of the parts ---------------------------------

MODEL = Path(roofline.__file__).parent
PARTS = sorted(p.stem for p in MODEL.glob("*.py") if p.stem not in ("__init__", "roofline"))


def _defined(path: Path) -> set[str]:
    """The names a module binds at its top level by its own definitions (not by importing them)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_surface_holds_no_code_and_names_every_public_name_of_the_parts():
    surface = MODEL / "roofline.py"
    assert _defined(surface) == {"__all__"}, "roofline.py re-exports; the code lives in the parts"
    public = {name: part for part in PARTS for name in _defined(MODEL / f"{part}.py") if not name.startswith("_")}
    assert set(roofline.__all__) == set(public), "every public name of a part, and nothing else, is on the surface"
    assert len(roofline.__all__) == len(set(roofline.__all__))
    for name, part in public.items():
        module = importlib.import_module(f"helpers.model.{part}")
        assert getattr(roofline, name) is getattr(module, name), name


def test_every_roofline_name_the_notebooks_and_helpers_use_is_on_the_surface():
    root = MODEL.parents[1]
    sources = [*root.glob("notebooks/*.ipynb"), *(p for p in root.glob("helpers/**/*.py") if p.parent != MODEL)]
    used = {name for p in sources for name in re.findall(r"\broofline\.([A-Za-z_]\w*)", p.read_text())}
    assert {"predict_seconds", "decide", "predict_kernel", "OVERHEADS"} <= used  # the search finds them
    missing = sorted(name for name in used - {"py"} if not hasattr(roofline, name))
    assert not missing, f"h.roofline.{missing[0]} is used but no part of the model defines it"


def test_the_parts_never_import_the_surface():
    """The parts import each other (and core and measuring: tests/test_architecture.py holds the model to its
    rule); only code outside the model goes through roofline."""
    graph = architecture.graph()
    for part in PARTS:
        assert "helpers.model.roofline" not in graph[f"helpers.model.{part}"], part
