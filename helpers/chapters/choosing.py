"""Chapter 06: when to use which device. The work of a recurrence, warps that diverge, Amdahl's bound, and what a
run costs.

Every prediction comes from helpers.model.roofline; every price is the on-demand price of the whole VM a learner would
rent, in one region, from one pinned catalogue (PRICE_SOURCE), a host's and its accelerator's rows summed where the
catalogue splits them.

    steps = h.choosing.warp_steps(BRANCHY, "halvings", x)      # each thread's loop steps, from the CPU executor
    h.choosing.divergence_figure({"sorted": steps_sorted, "shuffled": steps_shuffled})
    h.choosing.amdahl(serial_fraction=0.1, parallel_speedup=1000)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import executor
from ..core.style import PREDICTION_COLOUR, REFERENCE_COLOUR, figure
from ..core.validate import LARGEST, finite, fraction, positive_int, positive_number
from ..executor import CudaCError
from ..gpu.cuda import blocks_for
from ..measuring import specs
from ..measuring.timing import crossover, format_seconds
from ..model import roofline

# --------------------------------------------------------------------------------------------------------------
# Sequential dependence: a recurrence, three ways

#: How a linear recurrence h[t] = a * h[t-1] + b[t] can run: a loop of dependent steps (one call each), one
#: jax.lax.scan (one call, the steps in sequence on the device), or jax.lax.associative_scan (one call, about
#: 2 log2(n) rounds, each over half as many elements as the one before, then back up).
RECURRENCE_METHODS = ("loop", "scan", "associative scan")


@dataclass(frozen=True)
class Work:
    """What a method costs in the model's terms: FLOPs, bytes, calls from the host, and kernels per call."""

    flops: float
    bytes: float
    calls: int
    kernels: int


def devices_here(devices: tuple[str, ...] = roofline.DECIDE_DEVICES) -> tuple[str, ...]:
    """The devices chapter 06 predicts for: `devices` (a T4, an H100 and a v5e), and the GPU or TPU JAX runs on here
    when its published specs are on file, so that its prediction stands beside its own measurement."""
    import jax

    found = jax.devices()[0]
    spec = specs.lookup(str(found.device_kind)) if found.platform in ("gpu", "tpu") else None
    return devices if spec is None or spec.name in devices else (*devices, spec.name)


def recurrence_work(n: int, method: str) -> Work:
    """The work of an n-step float32 linear recurrence (2 FLOPs a step) run by `method` (RECURRENCE_METHODS).

    The associative scan combines pairs (a, b) as a tree: JAX's combines neighbours, recurses on the half as
    many results, then fills in the rest on the way back, so about 2n combines in all (3 FLOPs each; each reads
    two pairs and writes one, 24 bytes) in about 2 log2(n) rounds: O(n) work, O(log n) steps.
    """
    n = positive_int("n", n)
    if method not in RECURRENCE_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, RECURRENCE_METHODS))}; got {method!r:.40}")
    if method == "loop":
        return Work(2.0 * n, 8.0 * n, n, 1)
    if method == "scan":
        return Work(2.0 * n, 8.0 * n, 1, n)  # one call; on a GPU each step of XLA's loop relaunches its body
    levels = 2 * max(1, math.ceil(math.log2(n)))
    return Work(3.0 * 2 * n, 24.0 * 2 * n, 1, levels)


def predict_recurrence(device: str, n: int, method: str) -> float:
    """Seconds for the recurrence on a device (a spec name), from helpers.model.roofline: each call a synced JAX call,
    each kernel at least the device's kernel floor, each step of a scan an iteration of a compiled loop (LOOP_STEP;
    no published per-step cost of a loop inside a TPU program was found, so on a TPU the model counts none: a lower
    bound, see is_lower_bound)."""
    work = recurrence_work(n, method)
    kind = roofline.roofs(device).kind
    call = roofline.JAX_CALL.get(kind, "none")
    return roofline.predict_seconds(device, flops=work.flops, bytes=work.bytes, calls=work.calls, call=call,
                                    kernels=work.kernels if work.calls == 1 else 1,
                                    loop_steps=n if method == "scan" else 0)


def is_lower_bound(device: str, method: str) -> bool:
    """Whether predict_recurrence(device, n, method) is only a lower bound: a TPU's compiled loop (scan) pays a
    cost for every step that no published figure gives, and the model leaves it out."""
    recurrence_work(1, method)  # the method's name checked
    return method == "scan" and roofline.roofs(device).kind == "tpu"


def format_recurrence(device: str, n: int, method: str) -> str:
    """predict_recurrence as a table shows it: '≥ 101 µs' where it is a lower bound, else the time."""
    seconds = format_seconds(predict_recurrence(device, n, method))
    return f"≥ {seconds}" if is_lower_bound(device, method) else seconds


def inference_weights() -> int:
    """Numbers in chapter 05's 64-64-10 network (mlp.init_params): what one forward pass reads."""
    from .mlp import init_params

    return sum(int(np.size(p)) for p in init_params().values())


def predict_inference(device: str, batch: int, bound: str = "upper") -> float:
    """One jitted call of chapter 05's forward pass on `device` (a spec name), timed as h.benchmark times it
    (pipelined): its FLOPs, the weights and activations read and written once, 2 kernels (the two dense layers;
    XLA fuses the biases and the ReLU into them). bound: which end of a range (a TPU's, roofline.BOUNDS)."""
    weights, batch = inference_weights(), positive_int("batch", batch)
    kind = roofline.roofs(device).kind
    return roofline.predict_seconds(device, flops=2 * batch * weights, bytes=4 * (weights + batch * (64 + 64 + 10)),
                                    kernels=2, call=roofline.JAX_CALL.get(kind, "none"), timed="pipelined",
                                    bound=bound)


def inference_crossovers(batches: Sequence[int], cpu_seconds: Sequence[float],
                         devices: Sequence[str] = roofline.DECIDE_DEVICES) -> dict[str, int | None]:
    """Each device's crossover: the smallest of `batches` from which its predicted forward pass (predict_inference)
    beats `cpu_seconds`, this CPU's measured time at each batch, at every larger batch too (None: never)."""
    _batches(batches)
    if (isinstance(cpu_seconds, str | bytes) or not isinstance(cpu_seconds, Sequence)
            or len(cpu_seconds) != len(batches) or not all(finite(s) and s > 0 for s in cpu_seconds)):
        raise ValueError(f"cpu_seconds must be this CPU's measured seconds, one for each of the {len(batches)} "
                         f"batches; got {cpu_seconds!r:.60}")
    if (isinstance(devices, str | bytes) or not isinstance(devices, Sequence) or not devices
            or not all(isinstance(d, str) for d in devices)):
        raise ValueError(f"devices must be spec names such as {roofline.DECIDE_DEVICES}; got {devices!r:.60}")
    return {device: crossover(batches, cpu_seconds, [predict_inference(device, b) for b in batches])
            for device in devices}


def _batches(batches: Sequence[int]) -> list[int]:
    """The batch sizes measured, in order; a ValueError for anything else."""
    if isinstance(batches, str | bytes) or not isinstance(batches, Sequence) or not batches:
        raise ValueError(f"batches must be the batch sizes measured, such as [1, 16, 256]; got {batches!r:.40}")
    return sorted(positive_int("batches", b, "each a batch size") for b in batches)


def from_batch(batches: Sequence[int], wins: int | None) -> str:
    """Where a crossover lies, in words, from the batches measured: 'from a batch between 16 and 256', 'from the
    smallest batch measured, 1' or 'never, up to a batch of 65,536'."""
    ordered = _batches(batches)
    if wins is None:
        return f"never, up to a batch of {ordered[-1]:,}"
    if wins not in ordered:
        raise ValueError(f"wins must be one of the batches {ordered} or None; got {wins!r:.40}")
    where = ordered.index(wins)
    if not where:
        return f"from the smallest batch measured, {wins:,}"
    return f"from a batch between {ordered[where - 1]:,} and {wins:,}"


def first_win(batches: Sequence[int], wins: Mapping[str, int | None]) -> str:
    """One sentence from this run's crossovers (inference_crossovers): which device beats this CPU first, from
    what batch, and what that means; or that none does. Printed, so it cannot contradict the numbers."""
    ordered = _batches(batches)
    if not isinstance(wins, Mapping) or not all(w is None or w in ordered for w in wins.values()):
        raise ValueError(f"wins must map each device to the batch from which it wins, one of the batches {ordered}, "
                         f"or to None, as inference_crossovers gives it; got {wins!r:.60}")
    won = {device: w for device, w in wins.items() if w is not None}
    if not won:
        return (f"So for this network no accelerator beats this CPU, up to a batch of {ordered[-1]:,}: at every "
                "batch measured, the fixed cost of a call outweighs the arithmetic an accelerator saves.")
    first = min(won.values())
    firsts = [device for device, w in won.items() if w == first]
    names = ", the ".join(firsts[:-1]) + " and the " + firsts[-1] if len(firsts) > 1 else firsts[0]
    who = f"the {names} (predicted) {'beat' if len(firsts) > 1 else 'beats'} this CPU (measured)"
    if first == ordered[0]:
        return (f"So for this network {who} at every batch measured, even {first:,}: here this CPU's time for "
                "one call is above an accelerator's fixed cost of a call.")
    return (f"So for this network {who} first, {from_batch(batches, first)}: below that, the fixed cost of a call "
            "outweighs the arithmetic an accelerator saves.")


# --------------------------------------------------------------------------------------------------------------
# Branchy code: 32 threads of a warp run in lock step

WARP = executor.WARP_SIZE


def warp_steps(source: str, name: str, x: np.ndarray, threads: int = 128) -> np.ndarray:
    """How many times each thread took its kernel's first loop, running `name` of `source` on the CPU executor
    with one thread per element of x (float32), `threads` per block. Shape (warps, 32); a missing thread is 0.

    The kernel takes (const float* x, int* out, int n); the executor records each thread's path through the
    branches, and a loop taken k times leaves k 'taken' marks on its line.
    """
    if not isinstance(source, str) or not isinstance(name, str):
        raise TypeError(f"source and name are the kernel's CUDA C and its name, both strings; got "
                        f"{type(source).__name__} and {type(name).__name__}")
    try:
        x = np.ascontiguousarray(x, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"x must be a 1-D array of numbers; got {x!r:.40}") from None
    if x.ndim != 1 or not x.size or not np.isfinite(x).all():
        raise ValueError(f"x must be a non-empty 1-D array of finite numbers; got shape {np.shape(x)}")
    threads = positive_int("threads", threads)
    if threads % WARP:
        raise ValueError(f"threads per block must be a multiple of the warp size, {WARP}; got {threads}")
    loops = [number for number, line in enumerate(source.splitlines(), 1) if re.search(r"\b(while|for)\s*\(", line)]
    if not loops:
        raise ValueError("the kernel's source has no loop (while or for) whose steps could be counted")
    out = np.zeros(x.size, dtype=np.int32)
    blocks = blocks_for(x.size, threads)
    try:
        program = executor.Program(source)
    except CudaCError as exc:
        raise CudaCError(f"the kernel's source: {exc}") from None
    run = program.launch(name, (blocks,), (threads,), (x, out, np.int32(x.size)), trace=True)
    steps = [sum(1 for line, taken in path if line == loops[0] and taken)
             for block in range(blocks) for warp in run.warps((block, 0, 0)) for path in warp]
    return np.array(steps, dtype=np.int64)[: blocks_for(x.size, WARP) * WARP].reshape(-1, WARP)


def _steps(name: str, steps: Any) -> np.ndarray:
    """`steps` as whole numbers of shape (warps, 32), as warp_steps returns them; else a ValueError naming `name`."""
    try:
        array = np.asarray(steps, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        array = np.full((0, 0), np.nan)
    if array.ndim != 2 or not array.shape[0] or array.shape[1] != WARP or not (
            np.isfinite(array).all() and (array >= 0).all() and (array <= LARGEST).all()
            and (array == np.round(array)).all()):
        raise ValueError(f"{name} must be each thread's loop steps, as warp_steps returns them: whole numbers >= 0 "
                         f"of shape (warps, {WARP}), at least one warp; got {type(steps).__name__} {steps!r:.60}")
    return array.astype(np.int64)


@dataclass(frozen=True)
class Divergence:
    """Loop steps of a kernel's threads, warp by warp, and what they cost run in lock step or one by one."""

    steps: np.ndarray  # (warps, 32)

    def __post_init__(self) -> None:
        """Refuse steps of any other shape or kind now, rather than answer with a wrong cost later."""
        object.__setattr__(self, "steps", _steps("steps", self.steps))

    @property
    def useful(self) -> int:
        """Steps the threads need: what a CPU core, skipping each element's work once it is done, pays."""
        return int(self.steps.sum())

    @property
    def lock_step(self) -> int:
        """Thread-steps a GPU spends: every warp runs until its slowest thread is done, all 32 lanes busy."""
        return int(WARP * self.steps.max(axis=1).sum())

    @property
    def efficiency(self) -> float:
        """useful / lock_step: the fraction of the warps' lanes doing work that counts."""
        return self.useful / self.lock_step if self.lock_step else 1.0


def divergence_figure(runs: Mapping[str, np.ndarray]) -> Any:
    """Heatmaps of each thread's steps (a row per warp, a column per lane), one panel per run, titled by its label
    alone: the picture shows the steps, not what they cost, so a learner can predict the cost before it is
    printed (Divergence gives it)."""
    from plotly.subplots import make_subplots

    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("runs must be a dict: label -> steps of shape (warps, 32) (from warp_steps)")
    runs = {label: _steps(f"runs[{label!r:.40}]", s) for label, s in runs.items()}
    fig = make_subplots(rows=1, cols=len(runs), subplot_titles=list(runs))
    top = max(int(np.max(s)) for s in runs.values())
    for col, steps in enumerate(runs.values(), 1):
        fig.add_heatmap(z=steps, zmin=0, zmax=top, colorscale="Viridis", showscale=col == 1, row=1, col=col,
                        colorbar={"title": "steps"}, hovertemplate="warp %{y}, lane %{x}: %{z} steps<extra></extra>")
        fig.update_xaxes(title_text="lane (thread of the warp)", row=1, col=col)
        fig.update_yaxes(title_text="warp" if col == 1 else None, autorange="reversed", row=1, col=col)
    base = figure("Loop steps per thread: each warp waits for its slowest lane", height=420)
    fig.update_layout(template=base.layout.template, title=base.layout.title, height=420)
    return fig


# --------------------------------------------------------------------------------------------------------------
# Data that lives elsewhere: the prediction's winner, and the winner with this CPU's own measurement


def winner_judged_by(decision: roofline.Decision, cpu_measured: float) -> tuple[str, float]:
    """(device, seconds): the fastest device that holds the data when this CPU (decide's first estimate) is judged
    by `cpu_measured`, its time measured here, and every other device by its prediction. A prediction for this
    CPU can be far from its measurement: this says whether the verdict survives it."""
    cpu_measured = positive_number("cpu_measured", cpu_measured, "this CPU's measured seconds")
    if not isinstance(decision, roofline.Decision) or not decision.estimates \
            or not decision.estimates[0].device.startswith("this CPU"):
        raise ValueError(f"decision must be what h.roofline.decide returns, this CPU first; got {decision!r:.60}")
    cpu, *others = decision.estimates
    times = {e.device: e.seconds for e in others if e.fits}
    if cpu.fits:
        times[cpu.device] = cpu_measured
    if not times:
        raise ValueError(f"the data of {decision.workload!r} fits in the memory of none of these devices")
    best = min(times, key=times.__getitem__)
    return best, times[best]


# --------------------------------------------------------------------------------------------------------------
# Amdahl's law


def amdahl(serial_fraction: float, parallel_speedup: float) -> float:
    """The whole job's speed-up when only its parallel part, 1 - serial_fraction of the time, runs
    `parallel_speedup` times faster: 1 / (s + (1 - s) / p)."""
    serial_fraction = fraction("serial_fraction", serial_fraction)
    if not finite(parallel_speedup) or parallel_speedup < 1:
        raise ValueError(f"parallel_speedup must be a finite number, 1 or more; got {parallel_speedup!r:.40}")
    return 1.0 / (serial_fraction + (1.0 - serial_fraction) / parallel_speedup)


def amdahl_figure(measured_serial: float, fractions: tuple[float, ...] = (0.01, 0.05, 0.25)) -> Any:
    """Speed-up of the whole job against the speed-up of its parallel part, for a few serial fractions and the
    one measured here: each curve flattens at 1 / s."""
    measured_serial = fraction("measured_serial", measured_serial, "the share of the work measured serial")
    if not isinstance(fractions, tuple | list) or not fractions:
        raise ValueError(f"fractions must be a tuple of serial shares such as (0.01, 0.05); got {fractions!r:.40}")
    fractions = tuple(fraction("fractions", f, "a serial share") for f in fractions)
    p = np.logspace(0, 4, 60)
    fig = figure("Amdahl's law: the serial part sets the ceiling", height=420)
    for s in sorted({*fractions, measured_serial}):
        here = s == measured_serial
        fig.add_scatter(x=p, y=[amdahl(s, v) for v in p], mode="lines",
                        name=f"s = {s:.3g}" + (" (measured here)" if here else ""),
                        line={"width": 3 if here else 1.5, "color": PREDICTION_COLOUR if here else None})
    fig.add_scatter(x=p, y=p, mode="lines", name="no serial part", line={"dash": "dot", "color": REFERENCE_COLOUR})
    fig.update_xaxes(type="log", title_text="speed-up of the parallel part (cores, a GPU, a TPU)")
    fig.update_yaxes(type="log", title_text="speed-up of the whole job")
    return fig


# --------------------------------------------------------------------------------------------------------------
# What a run costs: the whole VM, one catalogue, one region, one date

#: Where every price is read: SkyPilot's catalogue of Google Cloud prices, pinned to a commit. Its columns are
#: InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice;
#: a GPU machine is a host row plus an accelerator row (its InstanceType empty), a TPU slice one row.
PRICE_SOURCE = ("Google Cloud's on-demand prices as compiled by SkyPilot's catalogue, read 2026-11-26 at commit "
                "006059e0f18acb1341e22a27751e9f80df6ba92f (the file itself states no date; the commit's date is on "
                "GitHub): https://github.com/skypilot-org/skypilot-catalog/blob/"
                "006059e0f18acb1341e22a27751e9f80df6ba92f/catalogs/v8/gcp/vms.csv")
#: The one region priced. Not us-central1: there, at this commit, the catalogue's H100 row (4.20076) is under half
#: its own us-east4 row (9.79655) and under half of what Cyclenerd's compilation implies for the GPU there
#: (a3-highgpu-1g $11.06125, file generated Thu Jul 30 2026, address below). In us-east4 the two agree within 1%:
#: host + H100 here is $10.97906, Cyclenerd's a3-highgpu-1g $11.06947, which adds the 750 GB of local SSD that an A3
#: machine comes with (its build/pricing.pl); these rows leave that SSD out.
#: https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml
PRICE_REGION = "us-east4"
_SPOT_NOTE = "(each row's last two fields: its on-demand and its spot price, dollars an hour)"


@dataclass(frozen=True)
class Row:
    """One row of the price catalogue (PRICE_SOURCE): what it prices, its on-demand dollars an hour, the row."""

    what: str
    dollars_per_hour: float
    quoted: str  # the row as the catalogue has it


@dataclass(frozen=True)
class Price:
    """The on-demand price of the whole VM a learner would rent for a device, in PRICE_REGION: one catalogue row,
    or (where the catalogue prices host and accelerator apart) the sum of their rows, derived here."""

    device: str  # a roofline device: "cpu" (this CPU stands in) or a spec name
    machine: str
    rows: tuple[Row, ...]
    source: str = PRICE_SOURCE

    @property
    def dollars_per_hour(self) -> float:
        """The VM's price: its one row's, or the sum of its rows' to the catalogue's 5 decimals (derived)."""
        return round(math.fsum(row.dollars_per_hour for row in self.rows), 5)

    @property
    def derived(self) -> bool:
        """Whether the price is a sum computed here rather than one published figure."""
        return len(self.rows) > 1

    @property
    def quoted(self) -> str:
        """The rows as the catalogue states them; a sum is labelled derived, with its terms."""
        rows = "; ".join(row.quoted for row in self.rows)
        if not self.derived:
            return f"{rows} {_SPOT_NOTE}"
        terms = " + ".join(f"{row.what} ${row.dollars_per_hour}" for row in self.rows)
        return (f"derived, not one published figure: {terms} = ${self.dollars_per_hour}, "
                f"each row from the source below: {rows} {_SPOT_NOTE}")


PRICES: tuple[Price, ...] = (
    Price("cpu", f"e2-standard-2 (2 vCPUs, 8 GB), {PRICE_REGION}", (
        Row("e2-standard-2", 0.07547, "e2-standard-2,2.0,8.0,,,,us-east4,us-east4-a,0.07547,0.03633"),)),
    Price("NVIDIA T4", f"n1-standard-4 (4 vCPUs, 15 GB) with 1 x T4, {PRICE_REGION}", (
        Row("n1-standard-4", 0.21398, "n1-standard-4,4.0,15.0,,,,us-east4,us-east4-a,0.21398,0.0452"),
        Row("1 x T4", 0.37, ",,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},us-east4,us-east4-a,"
                            "0.37,0.1644"))),
    Price("NVIDIA H100 SXM", f"a3-highgpu-1g (26 vCPUs, 234 GB) with its 1 x H100 80GB, {PRICE_REGION}", (
        Row("a3-highgpu-1g", 1.18251, "a3-highgpu-1g,26.0,234.0,,,,us-east4,us-east4-a,1.18251,0.26996"),
        Row("1 x H100", 9.79655, ",,,H100,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-east4,us-east4-a,"
                                 "9.79655,2.2356"))),
    Price("TPU v5e", f"tpu-v5litepod-1 (a TPU VM with one v5e chip), {PRICE_REGION}", (
        Row("tpu-v5litepod-1", 1.2, ",,,tpu-v5litepod-1,1,tpu-v5litepod-1,us-east4,us-east4-b,1.2,0.6"),)),
)


def price(device: str) -> Price:
    """The price on file for `device` ('cpu' or a spec name in PRICES): the whole VM, on-demand, per hour."""
    for p in PRICES:
        if p.device == device:
            return p
    raise ValueError(f"no published price on file for {device!r}; on file: {', '.join(p.device for p in PRICES)}")


# --------------------------------------------------------------------------------------------------------------
# Exercise 2: predict the winner

#: The workloads of the exercise, as helpers.model.roofline.decide counts them.
WINNER_QUIZ: dict[str, dict[str, Any]] = {  # none of them is one of section 7's workloads, whose winners it prints
    "3 x 3 filter on a 4K image in device memory": dict(flops=18 * 3840 * 2160, bytes=8 * 3840 * 2160),
    "one 32 x 32 matrix product": dict(flops=2 * 32**3, bytes=3 * 4 * 32**2, matmul=True),
    "sum of 10 billion floats in device memory": dict(flops=1e10, bytes=4e10, footprint=4e10),
}
#: The names an answer may use.
ANSWERS = ("CPU", *roofline.DECIDE_DEVICES)


def wrong_winners(answers: Any) -> str | None:
    """What is wrong with a dict of predicted winners (WINNER_QUIZ's keys -> one of ANSWERS), or None. An answer
    still `...` is not attempted (NotImplementedError, as the checks read it)."""
    if isinstance(answers, Mapping) and any(v is ... for v in answers.values()):
        raise NotImplementedError("replace every ... with a device's name")
    if not isinstance(answers, Mapping) or set(answers) != set(WINNER_QUIZ):
        return f"expected a dict with the keys {', '.join(map(repr, WINNER_QUIZ))}"
    unknown = [f"{k!r}: {v!r:.40}" for k, v in answers.items() if v not in ANSWERS]
    if unknown:
        return f"{'; '.join(unknown)}: each answer is one of {', '.join(map(repr, ANSWERS))}"
    wrong = []
    for name, work in WINNER_QUIZ.items():
        winner = roofline.decide(**work, workload=name, devices=roofline.DECIDE_DEVICES).winner
        expected = "none" if winner is None else "CPU" if winner.device.startswith("this CPU") else winner.device
        if answers[name] != expected:
            wrong.append(f"{name}: the model says {expected}"
                         + (f" (decided by {winner.decided_by})" if winner else ""))
    return "; ".join(wrong) or None


def format_dollars(amount: float) -> str:
    """Dollars as a reader wants them: '$508,751' from a thousand on, '$15.84', '$0.012', or '$1.6e-05' for less
    than a tenth of a cent."""
    if not finite(amount) or amount < 0:
        raise ValueError(f"amount must be a finite number of dollars, zero or more; got {amount!r:.40}")
    amount = float(amount) + 0.0  # -0.0 + 0.0 is 0.0: no "$-0.00"
    if amount >= 1000:
        return f"${amount:,.0f}"
    if amount >= 0.01 or amount == 0:
        return f"${amount:,.2f}"
    return f"${amount:.2g}" if amount >= 0.001 else f"${amount:.1e}"
