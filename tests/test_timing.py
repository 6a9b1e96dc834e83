"""benchmark(): statistics on a fake clock, budgets and caps, device sync, bad input; Timing, compare, formats."""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import re
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FakeClock, scripted, without_gpu

from helpers.core import backend
from helpers.core.backend import BackendUnavailable
from helpers.measuring import disturbed, judging_peak, specs, timing, workloads
from helpers.measuring.hardware import Accelerator, Hardware, Peak
from helpers.measuring.timing import NoisyTimingWarning, Timing, benchmark, compare, format_fraction, format_seconds

ROOF = Peak("fake device", 1e11, 5e10, "test roof")


class _FakeHardware:
    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def peak(self, backend_name, dtype="float32", device_kind=None, float32_matmuls=None):
        self.asked.append((backend_name, dtype, device_kind))
        return ROOF


@pytest.fixture
def fake_roof(monkeypatch):
    """benchmark() judges against a known roof (100 GFLOP/s, 50 GB/s) instead of this machine's CPU."""
    hw = _FakeHardware()
    monkeypatch.setattr(judging_peak, "hardware", lambda: hw)
    return hw


def _timing(samples, flops=None, nbytes=None, peak=ROOF, **kw) -> Timing:
    return Timing("t", "numpy", "float32", np.asarray(samples, dtype=float), 1, 0.5, flops, nbytes, peak, **kw)


# --- statistics against hand-computed numbers -------------------------------------------------------------


def test_statistics_from_scripted_durations(clock, fake_roof):
    fn = scripted(clock, [3.0, 0.2, 0.20, 0.21, 0.19, 0.22, 0.18])  # first call (compiles), warm call, 5 samples
    t = benchmark(fn, flops=4e9, bytes=1e9, budget=0.9, min_repeats=5, max_time=100, clock=clock)
    assert len(fn.calls) == 7
    assert t.number == 1
    assert t.compile_time == pytest.approx(3.0)
    assert t.samples == pytest.approx([0.20, 0.21, 0.19, 0.22, 0.18])
    assert t.median == pytest.approx(0.20)
    assert t.min == pytest.approx(0.18)
    assert t.mean == pytest.approx(0.20)
    assert t.iqr == pytest.approx(0.21 - 0.19)  # numpy percentiles of 0.18..0.22: q75 = 0.21, q25 = 0.19
    assert t.spread == pytest.approx(0.1)
    assert t.gflops == pytest.approx(4e9 / 0.20 / 1e9)  # 20
    assert t.gbps == pytest.approx(1e9 / 0.20 / 1e9)  # 5
    assert t.intensity == pytest.approx(4.0)
    assert t.fraction_of_peak == pytest.approx(20e9 / 1e11)  # 0.2
    assert t.peak is ROOF
    assert not t.capped and not t.noisy
    assert t.backend == "python" and t.label == "fn"


def test_first_call_is_timed_apart_and_warmup_sets_calls_per_sample(clock, fake_roof):
    # Binary-exact durations: first 0.25 s (compiling), warm-up 2**-11 s, so each sample loops
    # int(2 ms / 2**-11 s) = 4 calls; every later call takes 2**-4 s.
    fn = scripted(clock, [0.25, 2**-11], then=2**-4)
    t = benchmark(fn, warmup=1, budget=1.0, min_repeats=3, max_time=100, clock=clock)
    assert t.compile_time == 0.25
    assert t.number == 4
    assert t.median == 2**-4  # neither the compile nor the warm-up call is in the samples
    # warm-up (2**-11 s) + k samples of 4 x 2**-4 s reach the 1 s budget at k = 4
    assert len(t.samples) == 4
    assert len(fn.calls) == 1 + 1 + 4 * 4


def test_a_warm_call_sizes_the_samples_even_when_the_first_call_spent_the_budget(clock, fake_roof):
    # A 2 s first call (an XLA compile, say) spends the 1 s budget, but the samples are still sized by a warm call:
    # 2**-11 s, so 4 calls a sample, not 1 call as the first call's time would give.
    fn = scripted(clock, [2.0, 2**-11], then=2**-4)
    t = benchmark(fn, budget=1.0, min_repeats=2, clock=clock)
    assert t.compile_time == 2.0 and t.number == 4
    assert t.samples.tolist() == [2**-4] * 4  # warm call + 4 samples of 4 x 2**-4 s reach the budget
    assert len(fn.calls) == 1 + 1 + 4 * 4


def test_extra_warm_calls_stop_at_the_budget(clock, fake_roof):
    fn = scripted(clock, [0.1], then=0.4)
    t = benchmark(fn, warmup=5, budget=1.0, min_repeats=2, clock=clock)
    assert len(fn.calls) == 1 + 3 + 2  # warm calls until 1.2 s > budget (the first call not counted), 2 samples
    assert t.number == 1 and len(t.samples) == 2


def test_the_fastest_warm_call_sizes_the_samples(clock, fake_roof):
    fn = scripted(clock, [1.0, 2**-8, 2**-11, 2**-9], then=2**-11)
    t = benchmark(fn, warmup=3, budget=0.01, min_repeats=2, clock=clock)
    assert t.number == 4  # int(2 ms / 2**-11 s): the fastest of the three warm calls, not the first or the last


@pytest.mark.parametrize(("budget", "expected"), [(1.0, 3), (2.0, 7), (0.3, 2)])
def test_repeats_stop_once_the_budget_is_spent(clock, fake_roof, budget, expected):
    fn = scripted(clock, [], then=0.25)
    t = benchmark(fn, budget=budget, min_repeats=2, max_time=100, clock=clock)
    assert len(t.samples) == expected  # 0.25 s each, with the warm call; the first call not counted
    assert len(fn.calls) == expected + 2
    assert not t.capped


def test_min_repeats_are_taken_even_past_the_budget(clock, fake_roof):
    fn = scripted(clock, [], then=1.0)
    t = benchmark(fn, budget=0.1, min_repeats=6, max_time=100, clock=clock)
    assert len(t.samples) == 6


def test_max_repeats_caps_the_samples(clock, fake_roof):
    fn = scripted(clock, [], then=1.0)
    t = benchmark(fn, budget=1e6, max_repeats=7, max_time=1e9, clock=clock)
    assert len(t.samples) == 7


def test_max_time_caps_a_slow_function(clock, fake_roof):
    fn = scripted(clock, [], then=3.0)  # 3 s per call, 10 s allowed
    t = benchmark(fn, max_time=10, clock=clock)
    assert len(fn.calls) == 4  # first (3 s), warm call (6 s), samples at 9 s, 12 s: stops at the first past 10 s
    assert len(t.samples) == 2
    assert clock.now < 10 + 3  # never more than one call past the cap
    assert t.capped  # fewer than min_repeats samples


def test_a_first_call_longer_than_max_time_ends_the_benchmark(clock, fake_roof):
    fn = scripted(clock, [], then=20.0)  # one call is already twice max_time
    with pytest.raises(timing.TooSlow, match=r"benchmark of 'fn': the first call took 20 s, longer than "
                                             r"max_time=10 s; raise max_time or use a smaller size"):
        benchmark(fn, max_time=10, clock=clock, label="fn")
    assert len(fn.calls) == 1


def test_a_first_and_a_warm_call_past_max_time_end_the_benchmark(clock, fake_roof):
    fn = scripted(clock, [], then=6.0)  # each call fits in max_time, the first and the warm call together do not
    with pytest.raises(timing.TooSlow, match=r"ran past max_time=10 s before one repeated call was timed \(the "
                                             r"first call took 6 s\)"):
        benchmark(fn, max_time=10, clock=clock)
    assert len(fn.calls) == 2


def test_a_call_that_never_returns_ends_at_max_time():
    import time

    def hangs(x):
        while True:
            pass

    start = time.monotonic()
    with pytest.raises(timing.TooSlow, match="benchmark of 'hangs' ran past max_time=0.5 s in its first call"):
        benchmark(hangs, 1.0, max_time=0.5)
    assert time.monotonic() - start < 10  # a hang guard, not a speed test: the call never returns


def test_a_call_that_hangs_after_some_samples_keeps_them_as_a_capped_timing(fake_roof):
    import time

    calls = []

    def fine_then_hangs():
        calls.append(1)
        time.sleep(0.01)  # long enough for one call per sample
        while len(calls) > 8:
            pass
        return 1.0

    t = benchmark(fine_then_hangs, max_time=0.5, min_repeats=20, budget=0.4)
    assert 1 <= len(t.samples) < 20 and t.capped


@pytest.mark.parametrize(("kwargs", "message"), [({"min_repeats": 10**6}, "at most 100,000"),
                                                 ({"max_repeats": 10**9}, "at most 100,000")])
def test_repeat_counts_are_capped(kwargs, message):
    with pytest.raises(ValueError, match=message):
        benchmark(lambda: 1.0, **kwargs)


def test_noisy_samples_warn(clock, fake_roof):
    fn = scripted(clock, [1.0, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5])  # first call, warm call, 5 samples
    with pytest.warns(NoisyTimingWarning, match="spread"):
        t = benchmark(fn, budget=1.0, min_repeats=5, clock=clock)
    assert t.iqr == pytest.approx(0.2) and t.median == pytest.approx(0.3)
    assert t.noisy
    assert "noisy" in str(t) and "noisy" in t._repr_html_()


def test_tight_samples_do_not_warn(clock, fake_roof):
    fn = scripted(clock, [1.0, 1.0, 1.00, 1.01, 0.99, 1.00, 1.02])  # first call, warm call, 5 samples
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyTimingWarning)
        t = benchmark(fn, budget=4.5, min_repeats=5, clock=clock)
    assert not t.noisy
    assert "noisy" not in str(t)


def test_noisy_needs_four_samples():
    assert not _timing([0.1, 1.0, 10.0]).noisy
    assert _timing([0.1, 1.0, 10.0, 0.5]).noisy


def test_two_tight_modes_are_the_works_own_not_noise():
    """NumPy's 2x + 3y on 4 million floats alternates between about 2 ms and 4 ms here (every other call finds
    fresh memory): two modes are reported as such, and no other program is blamed."""
    rng = np.random.default_rng(0)
    two = np.concatenate([2e-3 * (1 + 0.01 * rng.standard_normal(30)), 4e-3 * (1 + 0.01 * rng.standard_normal(20))])
    t = _timing(rng.permutation(two))
    fast, slow, share = t.modes
    assert fast == pytest.approx(2e-3, rel=0.02) and slow == pytest.approx(4e-3, rel=0.02) and share == 0.4
    assert t.spread > 0.25 and not t.noisy
    assert re.search(r"two modes: 2(\.0\d)? ms for 60% of calls, 4(\.0\d)? ms for 40%", str(t))
    assert "noisy" not in str(t)
    smeared = _timing(np.linspace(1e-3, 4e-3, 50))  # no gap: noise
    assert smeared.modes is None and smeared.noisy
    rare = _timing([2e-3] * 45 + [4e-3] * 5)  # a tenth of the calls slow: outliers, not a mode
    assert rare.modes is None
    loose = _timing(np.concatenate([np.linspace(1e-3, 2e-3, 25), np.linspace(3e-3, 6e-3, 25)]))  # wide groups
    assert loose.modes is None and loose.noisy
    # measured on a 2-core VM (chapter 02's float32 axpby at 2**22, ms): two modes with a few calls between them
    between = 1e-3 * np.array([2.1, 2.14, 2.15, 2.16, 2.17, 2.17, 2.21, 2.25, 2.28, 2.29, 2.35, 2.37, 2.38, 2.4, 2.4,
                               2.42, 2.43, 2.52, 2.54, 2.63, 2.64, 2.93, 2.97, 3.02, 3.29, 3.7, 4.19, 4.21, 4.29, 4.3,
                               4.33, 4.35, 4.4, 4.42, 4.42, 4.43, 4.45, 4.48, 4.49, 4.51, 4.52, 4.52, 4.52, 4.56,
                               4.57, 4.66, 4.87, 4.89, 4.96, 5.14, 5.2, 5.61, 5.9, 6.15])
    assert _timing(rng.permutation(between)).modes is not None and not _timing(between).noisy
    tail = _timing(np.concatenate([np.full(35, 2e-3), np.linspace(3e-3, 9e-3, 15)]))  # a busy stretch: a long tail
    assert tail.modes is None and tail.noisy


def test_fraction_of_peak_falls_back_to_bandwidth_without_flops():
    t = _timing([0.2] * 5, nbytes=1e9)
    assert t.gflops is None and t.intensity is None
    assert t.fraction_of_peak == pytest.approx(1e9 / 0.2 / 5e10)
    assert _timing([0.2] * 5, flops=1e9, peak=None).fraction_of_peak is None
    assert _timing([0.2] * 5, flops=1e9, peak=Peak("x", None, None, "none")).fraction_of_peak is None


def test_as_dict_holds_plain_numbers():
    d = _timing([0.1, 0.2, 0.3], flops=6e8, n=64).as_dict()
    assert d["median_s"] == pytest.approx(0.2) and d["min_s"] == pytest.approx(0.1)
    assert d["gflops"] == pytest.approx(3.0) and d["samples"] == 3 and d["n"] == 64
    assert d["fraction_of_peak"] == pytest.approx(3e9 / 1e11) and d["peak_source"] == "test roof"
    quiet = _timing([0.2] * 5, flops=6e8, n=64)
    assert quiet.as_dict()["busy"] is False and quiet.as_dict()["noisy"] is False
    quiet.busy = True  # what a steady timing far below this machine's calibration is marked (bench --json keeps it)
    assert quiet.as_dict()["busy"] is True


def test_benchmark_passes_dtype_and_device_to_the_roof(clock, fake_roof):
    a = np.ones((2, 2), np.float32)
    fn = scripted(clock, [], then=0.5)
    t = benchmark(fn, a, budget=1, n=2, clock=clock)
    assert t.backend == "numpy" and t.dtype == "float32" and t.n == 2
    assert fake_roof.asked == [("numpy", "float32", "cpu")]


# --- the chapter's timing budget ------------------------------------------------------------------------


@pytest.fixture
def chapter_budget():
    """Each test may set the default budget; it is back at the default (0.5 s) after it."""
    assert timing.timing_budget() == 0.5
    yield
    timing.set_timing_budget(0.5)


def test_the_chapter_budget_is_used_when_budget_is_none(clock, fake_roof, chapter_budget):
    assert timing.set_timing_budget(1.0) == 0.5  # the old budget comes back
    assert timing.timing_budget() == 1.0
    fn = scripted(clock, [], then=0.25)
    assert len(benchmark(fn, min_repeats=2, max_time=100, clock=clock).samples) == 3  # as budget=1.0
    assert len(benchmark(fn, budget=2.0, min_repeats=2, max_time=100, clock=clock).samples) == 7  # budget= wins
    assert timing.set_timing_budget(0.25) == 1.0


def test_the_default_budget_is_half_a_second(clock, fake_roof, chapter_budget):
    fn = scripted(clock, [], then=0.25)
    assert len(benchmark(fn, min_repeats=1, max_time=100, clock=clock).samples) == 1  # warm call + 1 sample: 0.5 s


@pytest.mark.parametrize(("bad", "message"), [
    (0, "seconds \\(timing budget\\) must be a positive, finite number"), (-1.0, "positive, finite"),
    (math.nan, "positive, finite"), (math.inf, "positive, finite"), (True, "positive, finite"),
    ("1", "positive, finite"), (None, "positive, finite"), (61, "at most 60; got 61"),
])
def test_a_bad_timing_budget_is_refused(chapter_budget, bad, message):
    with pytest.raises(ValueError, match=message):
        timing.set_timing_budget(bad)
    assert timing.timing_budget() == 0.5  # unchanged


# --- synchronisation: JAX must not be timed at dispatch speed ---------------------------------------------


def test_sync_happens_after_the_call_and_before_the_clock_read(monkeypatch, fake_roof):
    events: list[tuple] = []
    clock = FakeClock(events)
    monkeypatch.setitem(backend.SYNCS, "jax", lambda tree: events.append(("sync", tree)))

    def fn(x):
        out = object()  # a fresh result per call, so we can tell which call the sync waited for
        events.append(("call", out))
        clock.advance(0.1)
        return out

    x = jnp.ones(4, jnp.float32)
    t = benchmark(fn, x, budget=0.5, min_repeats=3, clock=clock)
    assert t.backend == "jax"
    assert events[0][0] == "sync" and events[0][1][0] is x  # work queued before the benchmark is waited for
    reads = [i for i, e in enumerate(events) if e[0] == "clock"]
    assert len(reads) == 2 * (1 + 1 + len(t.samples))  # first call, warm-up, samples: a start and an end each
    for start, end in zip(reads[::2], reads[1::2], strict=True):
        inside = events[start + 1:end]
        assert [e[0] for e in inside[:-1]] == ["call"] * (len(inside) - 1) and len(inside) >= 2
        assert inside[-1][0] == "sync", "the clock was read before the device finished"
        assert inside[-1][1] is inside[-2][1], "the sync must wait for the output of the last call"


def _async_device(monkeypatch, clock: FakeClock, seconds: float):
    """A fake asynchronous JAX: a call only queues work; the clock moves when the work is waited for."""
    queued = []
    result = jnp.zeros(1)

    def wait(tree):
        clock.advance(sum(queued))
        queued.clear()

    monkeypatch.setitem(backend.SYNCS, "jax", wait)

    def launch(*args):
        queued.append(seconds)
        return result

    return launch


def test_asynchronous_work_is_waited_for(monkeypatch, clock, fake_roof):
    launch = _async_device(monkeypatch, clock, 0.05)
    t = benchmark(launch, jnp.ones(3), budget=0.5, clock=clock)
    assert t.median == pytest.approx(0.05)
    assert t.compile_time == pytest.approx(0.05)


def test_without_the_sync_the_fake_device_looks_free(monkeypatch, clock, fake_roof):
    # The control for the test above: with the sync removed, the same benchmark times only the launch.
    launch = _async_device(monkeypatch, clock, 0.05)
    monkeypatch.setitem(backend.SYNCS, "jax", lambda tree: None)
    assert benchmark(launch, jnp.ones(3), budget=0.5, max_repeats=20, clock=clock).median == 0


def test_closure_returning_jax_arrays_is_synced(monkeypatch, clock, fake_roof):
    launch = _async_device(monkeypatch, clock, 0.05)
    t = benchmark(lambda: launch(), budget=0.5, clock=clock)  # no arguments: the output says it is JAX
    assert t.backend == "jax"
    assert t.median == pytest.approx(0.05) and t.compile_time == pytest.approx(0.05)


def test_jax_output_from_numpy_arguments_is_synced(monkeypatch, clock, fake_roof):
    launch = _async_device(monkeypatch, clock, 0.05)
    t = benchmark(launch, np.ones(3), budget=0.5, clock=clock)  # a jitted function fed NumPy arrays
    assert t.backend == "jax"  # labelled (and judged) by where the work ran, not where the inputs came from
    assert t.median == pytest.approx(0.05)


@pytest.fixture(scope="module")
def heavy_function():
    """A jitted function doing three 800 x 800 float32 matmuls (about 3 GFLOP: tens of ms on 2 cores)."""
    f = jax.jit(lambda a: ((a @ a) @ a) @ a)
    x = jnp.full((800, 800), 1 / 800, jnp.float32)
    jax.block_until_ready(f(x))  # compile
    return f, x


@pytest.fixture
def heavy_jax(heavy_function):
    """The function, its input, and its honest seconds per call: the best of a manual, synchronised loop."""
    f, x = heavy_function
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - t0)
    return f, x, min(times)


def _loop_count_saw_the_work(t: Timing, reference: float) -> bool:
    # benchmark loops a call until a sample lasts 2 ms, judged by the timed warm-up call: a synced call of
    # `reference` seconds gives about 2 ms / reference calls; a dispatch-speed one about 100 times more.
    return t.number <= 1 + timing.MIN_SAMPLE_SECONDS / (0.3 * reference)


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")  # spread is not what is tested here
def test_real_jax_is_timed_with_its_work(heavy_jax):
    f, x, reference = heavy_jax
    t = benchmark(f, x, budget=0.2)
    assert t.backend == "jax"
    # Unsynced, the dispatch alone would read about 100x less (until JAX's queue of ~30 calls fills).
    assert t.median >= 0.3 * reference
    assert t.compile_time >= 0.3 * reference  # the first call is synced too
    assert _loop_count_saw_the_work(t, reference)


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")
def test_real_jax_closure_is_timed_with_its_work(heavy_jax):
    f, x, reference = heavy_jax
    t = benchmark(lambda: f(x), budget=0.2)  # no arguments: the JAX output is what tells us to sync
    assert t.backend == "jax"
    assert t.median >= 0.3 * reference
    assert t.compile_time >= 0.3 * reference
    assert _loop_count_saw_the_work(t, reference)


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")
def test_real_jax_fed_numpy_is_timed_with_its_work(heavy_jax):
    f, x, reference = heavy_jax
    t = benchmark(f, np.asarray(x), budget=0.2)  # each call also copies the input to JAX's device
    assert t.median >= 0.3 * reference
    assert _loop_count_saw_the_work(t, reference)


@pytest.mark.filterwarnings("ignore::helpers.measuring.timing.NoisyTimingWarning")
def test_real_numpy_and_python_benchmarks():
    a, b = workloads.make_inputs("matmul", 8)
    t = benchmark(np.matmul, a, b, budget=0.01, flops=workloads.matmul_flops(8))
    assert t.backend == "numpy" and t.dtype == "float32" and t.label == "matmul"
    assert t.peak.device.startswith("CPU") and t.fraction_of_peak > 0
    la, lb = workloads.make_inputs("matmul", 4, backend="python")
    t = benchmark(workloads.matmul_loops, la, lb, budget=0.01, label="loops")
    assert t.backend == "python" and t.dtype == "float64" and t.label == "loops"


# --- float32 JAX work on a GPU with TF32: the roof follows the precision of each call ------------------------


@pytest.fixture
def on_an_a100(monkeypatch, fake_cpu):
    """benchmark() judges JAX work as if it had run on an A100 (float32 19.5, TF32 156, BF16 312 TFLOP/s)."""
    a100 = Accelerator("gpu", "NVIDIA A100-SXM4-40GB", "cupy", 40e9, 108, specs.lookup("NVIDIA A100-SXM4-40GB"))
    monkeypatch.setattr(judging_peak, "hardware", lambda: Hardware(fake_cpu, (a100,), "gpu", "local"))
    monkeypatch.setattr(judging_peak, "_device_kind", lambda backend, tree: "gpu" if backend == "jax" else "cpu")


A = jnp.full((16, 16), 0.5, jnp.float32)


def _roof(fn, *args) -> Peak:
    return benchmark(fn, *args, budget=0.01, max_repeats=3).peak


def test_a_jitted_float32_matmul_is_judged_by_tf32(on_an_a100):
    peak = _roof(jax.jit(lambda a: (a @ a) @ a), A)
    assert peak.flops == pytest.approx(156e12)
    assert "published tf32 peak" in peak.source and "2 matmuls in the traced call, on tf32" in peak.source


def test_a_per_call_highest_precision_is_honoured(on_an_a100):
    peak = _roof(jax.jit(lambda a: jnp.matmul(a, a, precision=jax.lax.Precision.HIGHEST)), A)
    assert peak.flops == pytest.approx(19.5e12)  # full float32 on the CUDA cores, under JAX's default setting
    assert "on float32" in peak.source
    assert _roof(lambda a: jnp.dot(a, a, precision="highest"), A).flops == pytest.approx(19.5e12)
    assert _roof(lambda a: jnp.dot(a, a, precision=jax.lax.Precision.DEFAULT), A).flops == pytest.approx(156e12)


def test_the_default_precision_in_force_is_honoured(on_an_a100):
    f = jax.jit(lambda a: a @ a)
    with jax.default_matmul_precision("highest"):
        assert _roof(f, A).flops == pytest.approx(19.5e12)
    assert _roof(f, A).flops == pytest.approx(156e12)  # the same function, traced again at the default


def test_the_highest_roof_of_several_matmuls_judges(on_an_a100):
    def two(a):
        return jnp.dot(a, a, precision="highest") + jnp.dot(a, a)

    peak = _roof(two, A)
    assert peak.flops == pytest.approx(156e12) and "on float32, tf32" in peak.source


def test_bf16_matmuls_inside_float32_work_are_judged_by_bf16(on_an_a100):
    def one_pass(a):
        b = a.astype(jnp.bfloat16)
        return jnp.matmul(b, b, preferred_element_type=jnp.float32)

    assert _roof(one_pass, A).flops == pytest.approx(312e12)
    assert _roof(lambda a: jnp.dot(a, a, precision="BF16_BF16_F32"), A).flops == pytest.approx(312e12)


def test_matmuls_in_nested_jaxprs_are_found(on_an_a100):
    def scanned(a):
        return jax.lax.scan(lambda c, _: (jnp.dot(c, a, precision="highest"), None), a, None, length=2)[0]

    peak = _roof(jax.jit(lambda a: jax.lax.cond(a[0, 0] > 0, scanned, lambda b: b, a)), A)
    assert peak.flops == pytest.approx(19.5e12) and "1 matmul in the traced call, on float32" in peak.source


def test_work_without_a_matmul_is_judged_by_the_cuda_cores(on_an_a100):
    peak = _roof(jax.jit(lambda a: 2.0 * a + 1.0), A)
    assert peak.flops == pytest.approx(19.5e12) and "no matmul" in peak.source


def test_a_call_that_cannot_be_traced_is_judged_by_the_setting_and_says_so(on_an_a100):
    def untraceable(a):
        return jnp.asarray(float((a @ a).sum()))  # float() of a traced value fails

    peak = _roof(untraceable, A)
    assert peak.flops == pytest.approx(156e12)
    assert "could not be traced (ConcretizationTypeError)" in peak.source
    assert "JAX's default matmul precision is None" in peak.source
    with jax.default_matmul_precision("float32"):
        assert _roof(untraceable, A).flops == pytest.approx(19.5e12)


def test_tracing_is_bounded_by_max_time_too(on_an_a100):
    def slow_to_trace(a):
        b = a @ a
        while isinstance(b, jax.core.Tracer):  # runs only while the call is traced, never when it is timed
            pass
        return b

    start = time.monotonic()
    peak = benchmark(slow_to_trace, A, budget=0.01, max_repeats=3, max_time=0.5).peak
    assert time.monotonic() - start < 10  # a hang guard: the trace gets what is left of max_time, at least 1 s
    assert "tracing the call took over 1 s: judged by JAX's default matmul precision" in peak.source
    assert peak.flops == pytest.approx(156e12)


def test_a_precision_not_known_here_is_judged_by_the_highest_roof(on_an_a100, monkeypatch):
    def unknown(precision):
        raise ValueError("not known")

    monkeypatch.setattr(judging_peak, "jax_dot_roof", unknown)
    peak = _roof(lambda a: a @ a, A)
    assert peak.flops == pytest.approx(312e12)  # never a lower roof than the matmul may reach
    assert "no roof on file for unknown: judged by the highest" in peak.source


def test_the_call_is_traced_only_where_the_roof_depends_on_it(monkeypatch, fake_cpu, on_an_a100):
    def must_not_trace(fn, args):
        raise AssertionError("traced")

    monkeypatch.setattr(judging_peak, "_jax_matmul_roofs", must_not_trace)
    assert benchmark(np.matmul, np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), budget=0.01).peak
    assert _roof(lambda a: a @ a, A.astype(jnp.bfloat16)).flops == pytest.approx(312e12)  # bf16: no TF32 question
    t4 = Accelerator("gpu", "Tesla T4", "cupy", 16e9, 40, specs.lookup("Tesla T4"))
    monkeypatch.setattr(judging_peak, "hardware", lambda: Hardware(fake_cpu, (t4,), "gpu", "local"))
    assert _roof(lambda a: a @ a, A).flops == pytest.approx(8.1e12)  # no TF32 on a T4


# --- bad input ------------------------------------------------------------------------------------------


def test_not_callable_is_a_type_error():
    with pytest.raises(TypeError, match="must be callable") as info:
        benchmark(np.ones(3))
    assert "lambda" in str(info.value)


def test_unknown_backend_lists_the_accepted_ones():
    with pytest.raises(ValueError, match="python, numpy, jax, cupy"):
        benchmark(lambda: None, backend="torch")


def test_arrays_of_another_backend_are_refused():
    with pytest.raises(ValueError, match="to_backend"):
        benchmark(np.sum, np.ones(3), backend="jax")
    with pytest.raises(ValueError, match="numpy"):
        benchmark(lambda a: a, jnp.ones(3), backend="numpy")


def test_mixed_arrays_are_refused():
    with pytest.raises(ValueError, match="mix arrays of jax and numpy"):
        benchmark(lambda a, b: a, np.ones(3), jnp.ones(3))


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "1e9"])
@pytest.mark.parametrize("name", ["flops", "bytes", "budget", "max_time"])
def test_non_positive_amounts_are_refused(name, bad):
    with pytest.raises(ValueError, match=name):
        benchmark(lambda: None, **{name: bad})


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, math.nan])
def test_bad_problem_size_is_refused(bad):
    with pytest.raises(ValueError, match="n \\(problem size\\)"):
        benchmark(lambda: None, n=bad)


@pytest.mark.parametrize(("name", "bad"), [("min_repeats", 0), ("max_repeats", 1.5), ("warmup", -1), ("warmup", 0),
                                         ("warmup", 10**6)])
def test_bad_repeat_counts_are_refused(name, bad):
    with pytest.raises(ValueError, match=name):
        benchmark(lambda: None, **{name: bad})


def test_numpy_integer_problem_size_is_accepted(clock, fake_roof):
    t = benchmark(scripted(clock, [], then=1.0), n=np.int64(64), budget=1, clock=clock)
    assert t.n == 64 and type(t.n) is int


@without_gpu
def test_cupy_without_a_gpu_says_why_and_what_to_do():
    status = backend.backends()["cupy"]
    assert not status.usable
    with pytest.raises(BackendUnavailable) as info:
        benchmark(lambda: None, backend="cupy")
    message = str(info.value)
    assert status.detail in message and status.fix in message
    assert "Runtime > Change runtime type" in message


# --- compare and formatting -----------------------------------------------------------------------------


def test_compare_speedups_against_the_first():
    slow, fast = _timing([2.0] * 3, flops=1e9), _timing([0.5] * 3, flops=1e9)
    table = compare({"loops": slow, "numpy": fast})
    assert table.baseline.label == "loops" and table.timings[1].label == "numpy"
    assert table.baseline.median == slow.median
    assert slow.label == fast.label == "t"  # the caller's timings are not relabelled

    same = compare({"x": fast, "y": fast})  # one timing under two names keeps both names
    assert [t.label for t in same.timings] == ["x", "y"]
    assert table.speedups == {"loops": pytest.approx(1.0), "numpy": pytest.approx(4.0)}
    rows = table.rows()
    assert rows[1]["speed-up"] == "4x" and rows[1]["GFLOP/s"] == "2"
    assert "GB/s" not in rows[0]  # a column empty for every timing is left out
    assert "speed-ups against 'loops'" in str(table) and "<table>" in table._repr_html_()
    listed = compare([dataclasses.replace(slow, label="a"), dataclasses.replace(fast, label="b")])
    assert listed.speedups["b"] == pytest.approx(4.0)


def test_compare_refuses_what_is_not_a_timing():
    with pytest.raises(TypeError, match="'numpy' is float"):
        compare({"loops": _timing([1.0]), "numpy": 0.5})
    with pytest.raises(TypeError):
        compare([_timing([1.0]), 0.5])
    with pytest.raises(ValueError, match="at least one"):
        compare({})


@pytest.mark.parametrize(("seconds", "text"), [
    (812e-9, "812 ns"), (4.2e-3, "4.2 ms"), (1.5, "1.5 s"), (12.5e-6, "12.5 µs"), (300, "5 min"),
    (3 * 3600, "3 h"), (5 * 86400, "5 days"), (10 * 365.25 * 86400, "10 years"), (math.nan, "-"), (None, "-"),
])
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(("fraction", "text"), [
    (0.873, "87.3%"), (0.000134, "0.0134%"), (0.0, "0.0%"), (None, "-"), (math.inf, "-"),
])
def test_format_fraction(fraction, text):
    assert format_fraction(fraction) == text


def test_a_dtype_that_disagrees_with_the_arrays_is_refused():
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="arrays are float32"):
        benchmark(np.matmul, a, a, dtype="float64", budget=0.01)
    t = benchmark(np.matmul, a, a, dtype=np.float32, budget=0.01)  # a NumPy dtype is accepted too
    assert t.dtype == "float32"
    with pytest.raises(ValueError, match="dtype name"):
        benchmark(np.matmul, a, a, dtype=object(), budget=0.01)


def test_bandwidth_above_the_memory_roof_is_not_called_impossible(recwarn):
    x = np.ones(2_000, np.float32)  # 8 kB: lives in cache, faster than main memory
    out = np.empty_like(x)
    benchmark(np.add, x, x, out, bytes=3 * x.nbytes, budget=0.01)
    assert not [w for w in recwarn if "impossible" in str(w.message)]


def test_time_without_sync_reads_the_clock_before_waiting(monkeypatch):
    events: list = []
    clock = FakeClock(events)
    monkeypatch.setattr(backend, "SYNCS", {**backend.SYNCS, "jax": lambda tree: events.append(("sync", clock.now))})
    x = jnp.ones(3)

    def launch(x):
        clock.advance(1e-5)  # the launch; the work itself is only waited for by the sync
        return x

    seconds = timing.time_without_sync(launch, x, repeats=3, clock=clock)
    assert seconds == pytest.approx(1e-5)
    # an untimed first call (it may compile), then each result waited for after the clock is read
    assert [kind for kind, _ in events] == ["sync"] + ["clock", "clock", "sync"] * 3
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        timing.time_without_sync(launch, x, repeats=0)
    with pytest.raises(ValueError, match="at most 1,000"):
        timing.time_without_sync(launch, x, repeats=10**9)
    with pytest.raises(TypeError, match="times a function"):
        timing.time_without_sync(x)


@pytest.mark.parametrize(("other", "expected"), [
    ([5, 5, 2, 1], 30),  # loses, loses, wins, wins
    ([0, 5, 2, 1], 30),  # a lucky early win does not count
    ([0, 0, 0, 0], 10),
    ([0, 0, 0, 9], None),  # loses at the largest size
])
def test_crossover_is_where_the_other_wins_from_then_on(other, expected) -> None:
    assert timing.crossover([10, 20, 30, 40], [1, 2, 3, 4], other) == expected
    assert timing.crossover([40, 30, 20, 10], [4, 3, 2, 1], other[::-1]) == expected, "sizes in any order"


def test_crossover_refuses_mismatched_lists() -> None:
    with pytest.raises(ValueError, match="same length"):
        timing.crossover([1, 2], [1], [1, 2])
    with pytest.raises(ValueError, match="non-empty"):
        timing.crossover([], [], [])


def test_a_range_shows_both_ends_or_one_figure_where_they_agree():
    assert timing.format_range(12.1e-6, 112e-6) == "12.1 µs to 112 µs"
    assert timing.format_range(1e-3, 1.0004e-3) == "1 ms"
    with pytest.raises(ValueError, match="a range runs from low to high"):
        timing.format_range(2.0, 1.0)


def test_spread_shown_silences_only_the_noise_warning_inside_it(clock, fake_roof):
    """Where a plot or a table shows every timing's spread, one warning per timing would repeat it."""
    noisy = [1.0, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with timing.spread_shown():
            benchmark(scripted(clock, list(noisy)), budget=1.0, min_repeats=5, clock=clock)
        assert not any(issubclass(w.category, NoisyTimingWarning) for w in caught)
        benchmark(scripted(clock, list(noisy)), budget=1.0, min_repeats=5, clock=clock)
        assert any(issubclass(w.category, NoisyTimingWarning) for w in caught)  # outside it, the warning is back


# --- a steady timing far below this machine's own calibration ------------------------------------------------

#: The case from a busy 2-core VM: a 512 float32 matmul at 11 GFLOP/s, one core calibrated at 135 GFLOP/s.
BUSY_N, BUSY_RATE, ONE_CORE = 512, 11e9, 135e9


def _clock_for(durations):
    """A clock under which the calls benchmark times take `durations` seconds in turn, then the last one again and
    again (benchmark reads the clock before and after each timed call): real work, at a speed the test chooses."""
    steps = itertools.chain(durations, itertools.repeat(durations[-1]))
    state = {"now": 0.0, "reads": 0}

    def clock() -> float:
        if state["reads"] % 2:  # the end of a timed call
            state["now"] += next(steps)
        state["reads"] += 1
        return state["now"]
    return clock


def _matmul_inputs(shape_a=(BUSY_N, BUSY_N), shape_b=(BUSY_N, BUSY_N), dtype="float32"):
    rng = np.random.default_rng(0)
    return rng.standard_normal(shape_a, dtype=dtype), rng.standard_normal(shape_b, dtype=dtype)


def _at_rate(rate, flops=2 * BUSY_N**3):
    """Every timed call takes flops / rate seconds: steady samples."""
    return _clock_for([flops / rate])


@pytest.fixture
def calibrated(monkeypatch, fake_roof):
    """This process calibrated one core at ONE_CORE FLOP/s and has not warned of a busy machine yet."""
    monkeypatch.setattr(disturbed, "calibrated_blas_flops", lambda: ONE_CORE)
    monkeypatch.setattr(disturbed, "_busy_warned", False)


def _busy_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, timing.BusyMachineWarning)]


@pytest.mark.parametrize("fn", [np.matmul, np.dot, workloads.matmul, operator.matmul],
                         ids=["np.matmul", "np.dot", "workloads.matmul", "operator.matmul"])
def test_a_steady_matmul_far_below_one_cores_calibration_warns_that_the_machine_is_busy(calibrated, fn):
    a, b = _matmul_inputs()
    with pytest.warns(timing.BusyMachineWarning) as caught:
        t = benchmark(fn, a, b, label="matmul 512", budget=0.1, clock=_at_rate(BUSY_RATE))
    assert not t.noisy and t.busy and t.median == pytest.approx(2 * BUSY_N**3 / BUSY_RATE)
    message = _busy_warnings(caught)[0]
    assert message.startswith("matmul 512: 11 GFLOP/s for a float32 matrix product, 8% of the 135 GFLOP/s ONE core")
    # the same product once more with the BLAS on one thread, at the same (fake) rate: no faster, another program
    assert "with the BLAS on one thread it ran at 11 GFLOP/s, no faster, so another program held the cores" in message
    assert re.search(r"\(this (process runs \d+ threads on|machine has) \d+ CPUs\)", message)
    assert "busy" in str(t) and "busy" in t._repr_html_()


def test_a_busy_matmul_that_one_blas_thread_runs_faster_is_blamed_on_the_blas_threads(calibrated, monkeypatch):
    """The H200 run's chapter 06 timed NumPy's 1024 matmul at 7.16 GFLOP/s, 5% of one core, on a 16-core host whose
    process also ran JAX's runtime: the warning measures which cause it was."""
    import threadpoolctl

    capped = {"on": False}
    real_limits = threadpoolctl.threadpool_limits

    def limits(*args, **kwargs):
        capped["on"] = True
        return real_limits(*args, **kwargs)

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", limits)
    busy, alone = _at_rate(BUSY_RATE), _at_rate(ONE_CORE)
    clock = lambda: alone() if capped["on"] else busy()  # noqa: E731 - one clock, two rates
    a, b = _matmul_inputs()
    with pytest.warns(timing.BusyMachineWarning) as caught:
        benchmark(np.matmul, a, b, label="matmul 1024", budget=0.1, clock=clock)
    message = _busy_warnings(caught)[0]
    assert "with the BLAS on one thread the same product ran at 135 GFLOP/s, 12x faster" in message
    assert "the BLAS's threads were fighting for the cores" in message and "limit_blas_threads(k)" in message


def test_the_busy_warning_is_shown_once_per_process_and_later_slow_timings_are_marked(calibrated):
    a, b = _matmul_inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(BUSY_RATE))
        second = benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(BUSY_RATE / 2))
    assert len(_busy_warnings(caught)) == 1
    assert first.busy and second.busy and "busy" in second.caveat()


def test_a_matmul_near_one_cores_calibration_is_not_busy(calibrated):
    a, b = _matmul_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", timing.BusyMachineWarning)
        t = benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(timing.BUSY_SHARE * ONE_CORE * 1.01))
    assert not t.busy and "busy" not in str(t)


@pytest.mark.parametrize(("fn", "inputs"), [
    (lambda a, b: np.einsum("ij,jk->ik", a, b, optimize=False), _matmul_inputs()),  # the same sums, without BLAS
    (np.matmul, _matmul_inputs(dtype="float64")),  # another dtype than the calibration's
    (np.matmul, _matmul_inputs((128, 128), (128, 128))),  # too small to be compute bound
    (np.matmul, _matmul_inputs((BUSY_N, 64), (64, BUSY_N))),  # a thin product: memory bound
], ids=["einsum", "float64", "n=128", "thin"])
def test_only_the_calibrated_work_is_judged_by_the_calibration(calibrated, fn, inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", timing.BusyMachineWarning)
        t = benchmark(fn, *inputs, budget=0.1, clock=_at_rate(BUSY_RATE / 10))  # slower than the busy case
    assert not t.busy


def test_a_noisy_slow_matmul_gets_the_noise_warning_only(calibrated):
    a, b = _matmul_inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = benchmark(np.matmul, a, b, budget=1.0, clock=_clock_for([1.0, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5]))
    assert t.noisy and not t.busy
    assert not _busy_warnings(caught) and any(issubclass(w.category, NoisyTimingWarning) for w in caught)


def test_spread_shown_does_not_hide_a_busy_machine(calibrated):
    """A steady slow timing has tight error bars: a plot of its spread would not show that the machine was busy."""
    a, b = _matmul_inputs()
    with pytest.warns(timing.BusyMachineWarning), timing.spread_shown():
        benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(BUSY_RATE))


def test_without_a_calibration_in_this_process_nothing_is_judged_or_calibrated(monkeypatch, fake_roof, fake_cpu):
    """benchmark reads the calibration cpu_info made, and makes none: cpu_info not yet run means no verdict."""
    from functools import lru_cache

    from helpers.measuring import cpu

    detections = []
    fake = dataclasses.replace(fake_cpu, blas_fp32_this_run=ONE_CORE)
    monkeypatch.setattr(cpu, "cpu_info", lru_cache(maxsize=1)(lambda: detections.append(1) or fake))
    monkeypatch.setattr(disturbed, "_busy_warned", False)
    a, b = _matmul_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", timing.BusyMachineWarning)
        t = benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(BUSY_RATE))
    assert not t.busy and detections == [] and cpu.calibrated_blas_flops() is None
    assert cpu.cpu_info() is fake and cpu.calibrated_blas_flops() == ONE_CORE
    with pytest.warns(timing.BusyMachineWarning):
        assert benchmark(np.matmul, a, b, budget=0.1, clock=_at_rate(BUSY_RATE)).busy


def test_the_calibration_this_process_made_is_one_cores_rate_in_this_run():
    from helpers.measuring import cpu

    info = cpu.cpu_info()
    assert cpu.calibrated_blas_flops() == info.blas_fp32_this_run
    assert 0 < info.blas_fp32_this_run <= float(info.blas_fp32_per_core.value)  # the best kept may be an earlier run's
    assert f"{info.blas_fp32_this_run / 1e9:,.1f} GFLOP/s this run" in info.blas_fp32_per_core.source
