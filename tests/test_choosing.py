"""Chapter 06's helpers: the work of a recurrence, warps that diverge (run on the CPU executor), Amdahl's bound,
published prices, the winner quiz; and the chapter's TensorFlow cell, run against a stand-in module (a real
TensorFlow install would add minutes and hundreds of MB to CI, so the test records the call instead)."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import types
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from conftest import chapter_kernel

from helpers.book import evidence
from helpers.chapters import choosing
from helpers.model import roofline

KERNEL = chapter_kernel("06_when_to_use_which.ipynb", "decay_steps")
CHAPTER = Path(__file__).resolve().parents[1] / "notebooks" / "06_when_to_use_which.ipynb"


def test_a_loop_is_one_call_per_step_and_a_tree_is_log_n_levels_of_all_the_work():
    loop, scan, tree = (choosing.recurrence_work(1024, m) for m in choosing.RECURRENCE_METHODS)
    assert (loop.calls, loop.kernels) == (1024, 1) and (scan.calls, scan.kernels) == (1, 1024)
    assert tree.calls == 1 and tree.kernels == 20  # 2 log2(1024) rounds
    assert tree.flops == 3 * 2 * 1024  # about 2n combines in all: work-efficient, O(n)
    assert loop.flops == scan.flops == 2 * 1024


def test_on_a_gpu_a_python_loop_is_a_launch_per_step_and_the_tree_wins():
    n = 100_000
    loop, scan, tree = (choosing.predict_recurrence("NVIDIA T4", n, m) for m in choosing.RECURRENCE_METHODS)
    per_call = roofline.OVERHEADS["jax_gpu"].value
    assert loop > n * per_call and scan > n * roofline.LOOP_STEP["gpu"].value
    assert tree < scan < loop


def test_a_tpu_scan_is_shown_as_the_lower_bound_it_is():
    """No published per-step cost of a loop inside a TPU program: the model's figure is a floor, and says so."""
    assert choosing.is_lower_bound("TPU v5e", "scan")
    assert not any(choosing.is_lower_bound("TPU v5e", m) for m in ("loop", "associative scan"))
    assert not choosing.is_lower_bound("NVIDIA T4", "scan")  # a GPU pays its kernel floor per step
    assert choosing.format_recurrence("TPU v5e", 1000, "scan").startswith("≥ ")
    assert not choosing.format_recurrence("NVIDIA T4", 1000, "scan").startswith("≥")
    with pytest.raises(ValueError, match="method must be one of"):
        choosing.is_lower_bound("TPU v5e", "fori_loop")


def test_inference_is_predicted_pipelined_as_measured_and_a_tpus_as_a_range():
    """h.benchmark queues its calls: on a GPU one call's host cost hides behind another's work; a TPU's pipelined
    cost has no published figure, so its prediction is a range with the synced time as its slow end."""
    t4 = choosing.predict_inference("NVIDIA T4", 1)
    weights = choosing.inference_weights()
    busy = roofline.device_seconds("NVIDIA T4", flops=2 * weights, bytes=4 * (weights + 138), kernels=2)
    assert t4 == pytest.approx(max(roofline.OVERHEADS["jax_gpu"].value, busy))  # the larger hides the other
    low, high = (choosing.predict_inference("TPU v5e", 1, bound=b) for b in roofline.BOUNDS)
    assert low < high and high == pytest.approx(roofline.OVERHEADS["jax_tpu"].value, rel=0.01)
    assert low == pytest.approx(roofline.TPU_PIPELINED_LEAST.value, rel=0.01)


def test_one_sample_is_decided_by_the_fixed_cost_of_a_call_on_every_device(cpu):
    """Chapter 06's section 7 counts one sample through chapter 05's network as section 4 measures it (one jitted
    call): the fixed cost of that call must be what decides it everywhere, this CPU included, as section 4 says.
    (Before JAX's dispatch was counted on the CPU, a tiny NumPy call's cost was, and the weights' bytes decided.)"""
    weights = choosing.inference_weights()
    one = roofline.decide(flops=2 * weights, bytes=4 * weights, call="jax", kernels=2, cpu=cpu)
    assert [e.decided_by for e in one.estimates] == ["calls"] * 4
    assert one.winner.device.startswith("this CPU") and "(decided by calls)" in str(one)


def test_the_winner_judged_by_this_cpus_measurement_follows_the_measurement(cpu):
    """Section 5 prints two verdicts: the prediction's, and the one with this CPU's measured time in its place."""
    n = 10_000_000
    copied = roofline.decide(flops=3 * n, bytes=12 * n, host_bytes=12 * n, cpu=cpu, workload="axpby, copied")
    predicted = copied.winner
    assert choosing.winner_judged_by(copied, predicted.seconds) == (predicted.device, predicted.seconds)
    fastest_other = min(copied.estimates[1:], key=lambda e: e.seconds)
    assert choosing.winner_judged_by(copied, 1e3) == (fastest_other.device, fastest_other.seconds)
    device, seconds = choosing.winner_judged_by(copied, 1e-9)
    assert device.startswith("this CPU") and seconds == 1e-9
    nowhere = roofline.Decision("too big", tuple(roofline.Estimate(e.device, e.terms, False, "needs more")
                                                 for e in copied.estimates))
    with pytest.raises(ValueError, match="fits in the memory of none"):
        choosing.winner_judged_by(nowhere, 1e-3)
    with pytest.raises(ValueError, match="this CPU first"):
        choosing.winner_judged_by(roofline.Decision("no CPU", copied.estimates[1:]), 1e-3)
    with pytest.raises(ValueError, match="cpu_measured must be a positive, finite number"):
        choosing.winner_judged_by(copied, 0.0)


def test_crossovers_are_read_from_the_batches_measured():
    batches = [1, 16, 256, 4_096]
    slow = choosing.inference_crossovers(batches, [1.0] * 4, ("NVIDIA T4",))  # a CPU taking a second a call
    fast = choosing.inference_crossovers(batches, [1e-9] * 4, ("NVIDIA T4",))  # a nanosecond: never beaten
    assert slow == {"NVIDIA T4": 1} and fast == {"NVIDIA T4": None}
    t4 = [choosing.predict_inference("NVIDIA T4", b) for b in batches]
    between = choosing.inference_crossovers(batches, [t4[0] / 2, t4[1] / 2, t4[2] * 2, t4[3] * 2], ("NVIDIA T4",))
    assert between == {"NVIDIA T4": 256}
    assert choosing.from_batch(batches, 256) == "from a batch between 16 and 256"
    assert choosing.from_batch(batches, 1) == "from the smallest batch measured, 1"
    assert choosing.from_batch(batches, None) == "never, up to a batch of 4,096"


@pytest.mark.parametrize(("wins", "said"), [
    ({"NVIDIA T4": 256, "TPU v5e": 4_096}, "the NVIDIA T4 (predicted) beats this CPU (measured) first, from a batch "
                                           "between 16 and 256: below that, the fixed cost of a call outweighs"),
    ({"NVIDIA T4": 16, "NVIDIA H100 SXM": 16, "TPU v5e": None},
     "the NVIDIA T4 and the NVIDIA H100 SXM (predicted) beat this CPU (measured) first, from a batch between 1 and 16"),
    ({"NVIDIA T4": 1}, "the NVIDIA T4 (predicted) beats this CPU (measured) at every batch measured, even 1"),
    ({"NVIDIA T4": 16, "NVIDIA H100 SXM": 16, "TPU v5e": 16}, "the NVIDIA T4, the NVIDIA H100 SXM and the TPU v5e "
                                                              "(predicted) beat this CPU (measured) first"),
    ({"NVIDIA T4": None, "TPU v5e": None}, "no accelerator beats this CPU, up to a batch of 4,096"),
])
def test_the_crossover_sentence_follows_the_numbers(wins, said):
    assert said in choosing.first_win([1, 16, 256, 4_096], wins)


def test_warp_steps_counts_each_threads_loop_on_the_executor():
    x = np.array([0.5, 1.0, 1.01, 2.0] * 8 + [100.0] * 8, dtype=np.float32)  # 40 threads: a warp and a part
    steps = choosing.warp_steps(KERNEL, "decay_steps", x, threads=64)
    assert steps.shape == (2, 32)
    want = [0, 0, 1, 69] * 8  # 1.01 needs 1 step of 0.99; 2.0 needs 69 (0.99**69 < 0.5 < 0.99**68)
    assert steps[0].tolist() == want and steps[1, :8].tolist() == [459] * 8 and not steps[1, 8:].any()


def test_sorted_data_keeps_a_warp_together_and_shuffled_data_does_not():
    values = (np.random.default_rng(2).pareto(1.0, 256) * 4).astype(np.float32)
    ordered = choosing.Divergence(choosing.warp_steps(KERNEL, "decay_steps", np.sort(values)))
    shuffled = np.random.default_rng(3).permutation(values)
    mixed = choosing.Divergence(choosing.warp_steps(KERNEL, "decay_steps", shuffled))
    assert ordered.useful == mixed.useful
    assert mixed.lock_step > 2 * ordered.lock_step and mixed.efficiency < ordered.efficiency <= 1
    one = choosing.Divergence(np.array([[5] + [1] * 31]))
    assert one.useful == 36 and one.lock_step == 160 and one.efficiency == pytest.approx(36 / 160)


def test_the_divergence_figure_has_a_panel_per_run_and_leaves_the_cost_to_predict():
    """Shown before the chapter asks what shuffling costs: its titles name the runs, not their share of lanes."""
    fig = choosing.divergence_figure({"sorted": np.ones((2, 32)), "shuffled": np.arange(64).reshape(2, 32)})
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
    assert [a.text for a in fig.layout.annotations] == ["sorted", "shuffled"]
    assert "%" not in fig.to_json().replace("%{", "")  # hover fields (%{z}) aside, no percentage anywhere


@pytest.mark.parametrize(("s", "p", "want"), [(0, 8, 8), (0.1, 1e12, 10), (0.5, 2, 4 / 3), (1, 100, 1), (0.2, 1, 1)])
def test_amdahl(s, p, want):
    assert choosing.amdahl(s, p) == pytest.approx(want, rel=1e-9)


def test_amdahl_figure_marks_the_measured_fraction():
    fig = choosing.amdahl_figure(0.3)
    assert any("s = 0.3 (measured here)" == t.name for t in fig.data)
    assert max(fig.data[-2].y) < 1 / 0.25 + 1e-9  # s = 0.25 never passes 4x


@pytest.mark.parametrize(("call", "message"), [
    (lambda: choosing.amdahl(1.5, 2), "serial_fraction must be a number from 0 to 1"),
    (lambda: choosing.amdahl(0.5, 0.5), "parallel_speedup must be a finite number, 1 or more"),
    (lambda: choosing.recurrence_work(10, "while"), "method must be one of 'loop', 'scan', 'associative scan'"),
    (lambda: choosing.warp_steps(KERNEL, "decay_steps", np.ones(8), threads=48), "a multiple of the warp size"),
    (lambda: choosing.warp_steps('extern "C" __global__ void f(const float* x, int* out, int n) { }', "f",
                                 np.ones(8)), "has no loop"),
    (lambda: choosing.warp_steps(KERNEL, "decay_steps", np.array([np.inf])), "finite numbers"),
    (lambda: choosing.price("TPU v6e"), "no published price on file for 'TPU v6e'; on file: cpu"),
    (lambda: choosing.format_dollars(-1), "amount must be a finite number of dollars"),
    (lambda: choosing.from_batch([1, 16], 8), r"wins must be one of the batches \[1, 16\] or None; got 8"),
    (lambda: choosing.from_batch([], None), "batches must be the batch sizes measured"),
    (lambda: choosing.first_win([1, 0], {}), r"batches must be a positive integer \(each a batch size\)"),
    (lambda: choosing.first_win([1, 16], {"NVIDIA T4": 8}), r"one of the batches \[1, 16\], or to None"),
    (lambda: choosing.inference_crossovers([1, 16], [1e-5]), "cpu_seconds must be this CPU's measured seconds"),
    (lambda: choosing.inference_crossovers([1], [1e-5], "NVIDIA T4"), "devices must be spec names"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_every_price_is_the_whole_vm_from_one_pinned_catalogue_read_on_one_date_in_one_region():
    """One basis for every device (issue 29): the VM a learner would rent, on-demand, in PRICE_REGION, each row read
    from PRICE_SOURCE at one commit on one date, and each row's own Price field is the figure used."""
    assert {p.device for p in choosing.PRICES} == {"cpu", *roofline.DECIDE_DEVICES}
    assert {p.source for p in choosing.PRICES} == {choosing.PRICE_SOURCE}
    assert evidence.unpinned(choosing.PRICE_SOURCE) == [] and "read 2026-11-26" in choosing.PRICE_SOURCE
    for p in choosing.PRICES:
        assert p.machine.endswith(choosing.PRICE_REGION) and p.dollars_per_hour > 0
        for row in p.rows:
            *_, region, zone, on_demand, _spot = row.quoted.split(",")
            assert region == choosing.PRICE_REGION and zone.startswith(region), row.quoted
            assert float(on_demand) == row.dollars_per_hour and row.quoted in p.quoted


def test_a_gpu_vm_is_its_host_row_plus_its_accelerator_row_and_is_labelled_derived():
    """The catalogue prices a GPU machine's host and its GPUs on separate rows: the VM is their sum, said to be
    derived; a CPU machine and a TPU slice are one row each, quoted as published."""
    t4, h100 = choosing.price("NVIDIA T4"), choosing.price("NVIDIA H100 SXM")
    assert t4.derived and h100.derived and not choosing.price("cpu").derived and not choosing.price("TPU v5e").derived
    assert (t4.dollars_per_hour, h100.dollars_per_hour) == (0.58398, 10.97906)  # 0.21398 + 0.37, 1.18251 + 9.79655
    assert t4.quoted.startswith("derived, not one published figure: n1-standard-4 $0.21398 + 1 x T4 $0.37 = $0.58398")
    assert not any(choosing.price(d).quoted.startswith("derived") for d in ("cpu", "TPU v5e"))
    host, gpu = (row.quoted.split(",") for row in h100.rows)
    assert host[0] == "a3-highgpu-1g" and gpu[0] == "" and gpu[3:5] == ["H100", "1"]  # a host row, one H100's row
    tenths = choosing.Price("cpu", "m", (choosing.Row("a", 0.1, "a"), choosing.Row("b", 0.2, "b")))
    assert tenths.dollars_per_hour == 0.3  # the sum to the catalogue's decimals, not 0.30000000000000004


@pytest.mark.parametrize(("amount", "shown"), [(508750.51, "$508,751"), (999.994, "$999.99"), (15.8414, "$15.84"),
                                               (0.0123, "$0.01"), (0.0042, "$0.0042"), (1.6e-5, "$1.6e-05"),
                                               (0, "$0.00"), (-0.0, "$0.00")])
def test_dollars_read_as_people_write_them(amount, shown):
    assert choosing.format_dollars(amount) == shown


def test_the_winner_quiz_is_judged_by_the_model():
    right = {"3 x 3 filter on a 4K image in device memory": "NVIDIA H100 SXM", "one 32 x 32 matrix product": "CPU",
             "sum of 10 billion floats in device memory": "NVIDIA H100 SXM"}
    assert choosing.wrong_winners(right) is None
    wrong = choosing.wrong_winners({**right, "3 x 3 filter on a 4K image in device memory": "TPU v5e"})
    assert wrong == "3 x 3 filter on a 4K image in device memory: the model says NVIDIA H100 SXM (decided by memory)"
    assert "each answer is one of 'CPU'" in choosing.wrong_winners({**right, "one 32 x 32 matrix product": "GPU"})
    assert "expected a dict with the keys" in choosing.wrong_winners(["TPU v5e"])
    with pytest.raises(NotImplementedError):
        choosing.wrong_winners({**right, "one 32 x 32 matrix product": ...})
    sum_big = roofline.decide(**choosing.WINNER_QUIZ["sum of 10 billion floats in device memory"])
    assert [e.fits for e in sum_big.estimates[1:]] == [False, True, False]  # 40 GB: only the H100's 80 GB hold it


# ---------------------------------------------------------------- the chapter's TensorFlow cell


def _tensorflow_cell() -> str:
    cells = json.loads(CHAPTER.read_text())["cells"]
    found = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"
             and "tf.config.list_physical_devices" in "".join(c["source"])]
    assert len(found) == 1, "chapter 06 asks TensorFlow for its devices in one cell"
    return found[0]


def _run(cell: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        # the chapter's cell, after its imports cell (import importlib.util)
        exec(compile(cell, "<chapter 06 cell>", "exec"), {"__name__": "__main__", "importlib": importlib})  # noqa: S102
    return out.getvalue()


def test_the_tensorflow_cell_asks_tensorflow_for_its_devices(monkeypatch):
    asked = []
    device = types.SimpleNamespace(device_type="GPU", name="/physical_device:GPU:0")
    tf = types.ModuleType("tensorflow")
    tf.config = types.SimpleNamespace(list_physical_devices=lambda *kind: asked.append(kind) or [device])
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "tensorflow" else real_find_spec(name, *a))
    printed = _run(_tensorflow_cell())
    assert asked == [()] and "TensorFlow sees:" in printed and "GPU" in printed


def test_without_tensorflow_the_cell_says_so_in_one_line(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real_find_spec(name, *a))
    printed = _run(_tensorflow_cell())
    assert printed.count("\n") == 1 and "TensorFlow is not installed here" in printed
    assert "tf.config.list_physical_devices('GPU')" in printed



def test_the_device_here_is_predicted_beside_the_reference_ones(monkeypatch) -> None:
    """The H200 run's recurrence table predicted a T4, an H100 and a v5e, not the H200 it measured on."""
    from types import SimpleNamespace

    import jax

    assert choosing.devices_here() == roofline.DECIDE_DEVICES  # JAX on this CPU: nothing to add
    for kind, platform, expected in (("NVIDIA H200", "gpu", "NVIDIA H200"), ("TPU v5 lite", "tpu", None),
                                     ("Some GPU 9000", "gpu", None)):
        monkeypatch.setattr(jax, "devices", lambda *a, kind=kind, platform=platform: [
            SimpleNamespace(platform=platform, device_kind=kind)])
        found = choosing.devices_here()
        assert found == (*roofline.DECIDE_DEVICES, expected) if expected else found == roofline.DECIDE_DEVICES
