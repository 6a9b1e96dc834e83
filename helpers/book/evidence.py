"""The model beside the evidence: every published measurement on file, what helpers.model.roofline predicts, the ratio.

    python -m helpers.book.evidence     # rewrites docs/predictions.md from helpers/data/published-measurements.json
                                   # and the docs/gpu-report-*.json files of runs on a GPU or a TPU

A test keeps every ratio within RATIO_LIMIT and the page in step with the data. Rows left out of that check (no
device named, a figure the model does not cover, one judged unrepresentative) are listed apart, each with its reason
and, where the model can price the work (the row's `as_if`), its ratio, held to no limit. The rows
of every gpu-report file committed under docs/ (`python -m helpers gpu-report --json`, run on a GPU or a TPU) are
listed as measured by this project, each beside its prediction.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import project
from ..measuring import specs
from ..model import roofline
from .gpu_report import PAGE, load_reports

#: The published measurements: in the package, so chapter 07 reads them wherever the helpers are installed.
DATA = project.DATA / "published-measurements.json"
#: How far a prediction may be from a published measurement, either way.
RATIO_LIMIT = 2.0
#: Chapter 07's kernel model is held closer: each published rung within this, but the rows in RUNG_MISSES.
RUNG_RATIO_LIMIT = 1.5
#: The published rungs beyond RUNG_RATIO_LIMIT (still within RATIO_LIMIT), by library, with why. A test keeps each
#: one beyond the limit, so the list cannot outlive the miss.
RUNG_MISSES = {
    "leimao/CUDA-GEMM-Optimization: Custom GEMM Kernel V01": (
        "not the machine code of chapter 07's rung 2: leimao's kernel indexes with 64-bit size_t, and NVRTC 12.9 "
        "compiles its loop for sm_86 (from the source at the row's commit) to 31 instructions per 4 multiply-adds, "
        "7.75 a multiply-add, where rung 2 issues 4.57; priced with its own count, the same model gives 1.25. The "
        "model prices chapter 07's kernel, so the row stays checked against it, and missed"),
}

#: A GitHub file address that can drift: a branch (main, master) where a commit belongs.
UNPINNED = re.compile(r"github\.com/[^/\s]+/[^/\s]+/blob/(?:main|master)/")

_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_RATES = {"TFLOP/s": 1e12, "GFLOP/s": 1e9, "FLOP/s": 1.0, "GB/s": 1e9, "TB/s": 1e12, "GiB/s": 2**30}


@dataclass(frozen=True)
class Check:
    """One published measurement, in seconds per call, beside the model's prediction for the same work."""

    row: dict[str, Any]
    measured: float
    predicted: float

    @property
    def ratio(self) -> float:
        """Measured over predicted: above 1, the real device was slower than the model says."""
        return self.measured / self.predicted


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The published measurements on file, each with the `model` entry that says how the model is checked on it."""
    return json.loads(path.read_text())


def _work(model: dict[str, Any]) -> float:
    """FLOPs (a matmul) or bytes (anything else) the source's rate counts per call."""
    matmul = model["op"] in ("matmul", "pallas_matmul", "sgemm_rung", "wmma_rung")
    return 2.0 * model["m"] * model["k"] * model["n"] if matmul else float(model["bytes"])


def measured_seconds(row: dict[str, Any]) -> float:
    """The row's figure as seconds per call: a time as stated, or the work it counts over its rate."""
    value, unit = float(row["measured"]), row["unit"]
    if unit in _SECONDS:
        return value * _SECONDS[unit]
    if unit in _RATES:
        return _work(row["model"]) / (value * _RATES[unit])
    raise ValueError(f"row {row['device']!r}: unit {unit!r} is not one of {', '.join([*_SECONDS, *_RATES])}")


def predicted_seconds(model: dict[str, Any]) -> float:
    """What helpers.model.roofline predicts for the work a row describes, timed as the row was timed."""
    if model["op"] == "call":  # the fixed cost of `calls` calls of one kind, whatever the device
        return model.get("calls", 1) * roofline.OVERHEADS[model["call"]].value
    if model["op"] == "kernels":  # the device's fixed costs of kernels that do next to nothing
        return roofline.fixed_device_seconds(roofline.roofs(model["spec"]).kind, model["kernels"],
                                             model.get("program", False), model.get("loop_steps", 0))
    spec, timed = model["spec"], model["timed"]
    if model["op"] == "matmul":
        return roofline.predict_matmul_seconds(spec, model["m"], model["k"], model["n"], model["dtype"], timed=timed)
    if model["op"] == "pallas_matmul":
        return roofline.predict_pallas_matmul_seconds(spec, model["m"], model["k"], model["n"], model["bm"],
                                                      model["bk"], model["bn"], model["dtype"], timed=timed)
    if model["op"] == "sgemm_rung":  # chapter 07's kernel of that rung, counted on the CPU executor
        from ..chapters import make_it_fast

        if not model["m"] == model["k"] == model["n"]:
            raise ValueError(f"sgemm_rung rows are square products; got {_sizes(model)}")
        return make_it_fast.predict(model["rung"], spec, model["n"]).seconds
    if model["op"] == "wmma_rung":  # chapter 07's tensor-core kernel of that rung, counted on the CPU executor
        from ..chapters import tensor_cores

        if not model["m"] == model["k"] == model["n"]:
            raise ValueError(f"wmma_rung rows are square products; got {_sizes(model)}")
        return tensor_cores.predict(model["rung"], spec, model["n"], model.get("accumulate", "float")).seconds
    if model["op"] == "elementwise":
        return roofline.predict_seconds(spec, flops=0, bytes=model["bytes"], dtype=None, call="cupy", timed=timed)
    if model["op"] == "copy":
        return roofline.predict_copy_seconds(spec, model["bytes"], timed=timed, memory=model["memory"])
    raise ValueError(f"model op {model['op']!r} is not one of matmul, pallas_matmul, sgemm_rung, wmma_rung, "
                     "elementwise, copy, call, kernels")


def checks(rows: list[dict[str, Any]] | None = None) -> list[Check]:
    """Every row the model is checked against, with its measured and predicted seconds."""
    return [Check(r, measured_seconds(r), predicted_seconds(r["model"]))
            for r in (load() if rows is None else rows) if "op" in r["model"]]


def rung_checks() -> tuple[list[Check], list[LeftOut]]:
    """Chapter 07's rows: the published SGEMM rungs checked against the kernel model, and those left out (why)."""
    rung_rows = [r for r in load() if r["operation"] == "sgemm"]
    return checks(rung_rows), left_out(rung_rows)


@dataclass(frozen=True)
class LeftOut:
    """A published row left out of the check: why, and its ratio where the model can price the work (else None)."""

    row: dict[str, Any]
    why: str
    ratio: float | None


def left_out(rows: list[dict[str, Any]] | None = None) -> list[LeftOut]:
    """Every row the check leaves out, with its reason and the ratio its `as_if` model gives (None without one)."""
    out = []
    for r in load() if rows is None else rows:
        model = r["model"]
        if "op" in model:
            continue
        why = model.get("excluded") or f"source of {model['source_of']}"
        as_if = model.get("as_if")
        ratio = (measured_seconds({**r, "model": as_if}) / predicted_seconds(as_if)) if as_if else None
        out.append(LeftOut(r, why, ratio))
    return out


def unpinned(text: str) -> list[str]:
    """The GitHub file addresses in `text` that name a branch, not a commit: what they show can change."""
    return [m.group(0) for m in UNPINNED.finditer(text)]


def _seconds(s: float) -> str:
    unit, name = next(((u, n) for u, n in ((1.0, "s"), (1e-3, "ms")) if s >= u), (1e-6, "µs"))
    return f"{s / unit:.4g} {name}"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _sizes(model: dict[str, Any]) -> str:
    if model["op"] == "matmul":
        return f"({model['m']}, {model['k']}) @ ({model['k']}, {model['n']}) {model['dtype']}"
    if model["op"] == "pallas_matmul":
        return (f"({model['m']}, {model['k']}) @ ({model['k']}, {model['n']}) {model['dtype']}, blocks "
                f"{model['bm']} x {model['bk']} x {model['bn']}")
    if model["op"] == "sgemm_rung":
        return f"({model['m']}, {model['k']}) @ ({model['k']}, {model['n']}) float32, chapter 07's rung {model['rung']}"
    if model["op"] == "wmma_rung":
        sums = model.get("accumulate", "float")
        shape = f"({model['m']}, {model['k']}) @ ({model['k']}, {model['n']})"
        return f"{shape} float16, {sums} sums, chapter 07's rung {model['rung']}"
    if model["op"] == "kernels":
        loop = f", {model['loop_steps']:,} of them loop iterations" if model.get("loop_steps") else ""
        where = " in one compiled program (a CUDA graph)" if model.get("program") else ""
        return f"{model['kernels']:,} kernel{'s' * (model['kernels'] > 1)} doing next to nothing{where}{loop}"
    return f"{model['bytes'] / 1e6:,.4g} MB moved"


#: Figures the model needs that no public source gave, as of 2026-11-26: (what, where it was looked for, what the
#: model does instead). A row that turns up moves to helpers/data/published-measurements.json.
NOT_FOUND = (
    ("A TPU's cost per call when calls are pipelined (queued, one wait at the end)",
     "JAX's documentation (async dispatch, benchmarking, Pallas TPU guides), JAX's issues and discussions, the "
     "scaling book (https://jax-ml.github.io/scaling-book/)",
     "a range, from TPU_PIPELINED_LEAST (JAX's dispatch) to OVERHEADS['jax_tpu'] (the synced cost), "
     "`roofline.predict_range`"),
    ("The cost of each step of a loop compiled for a TPU (lax.scan, fori_loop, while_loop)",
     "the same, and the Pallas TPU pipelining guide; the one figure found times a loop with a collective "
     "(ppermute) inside, an upper bound from an exploratory issue, not the loop's own cost",
     "none counted: `choosing.predict_recurrence` marks a TPU's scan as a lower bound (≥)"),
    ("A copy from pageable (ordinary) host memory to a T4",
     "CUDA's bandwidthTest outputs, CuPy's and JAX's issues, NVIDIA's forums; the T4 rows found are pinned only",
     "PAGEABLE_FRACTION, fitted to the two A100 hosts whose pageable and pinned rows are above"),
)


def page(rows: list[dict[str, Any]] | None = None, reports: list[tuple[str, dict[str, Any]]] | None = None) -> str:
    """docs/predictions.md, written from the data file, the model and the gpu-report files (None: those in docs/)."""
    rows = load() if rows is None else rows
    done = checks(rows)
    out = ["# Predictions beside published measurements", "",
           "Generated by `python -m helpers.book.evidence` from `helpers/data/published-measurements.json`; do not "
           "edit by hand. Each row is a measurement someone published, with its address, the figure as the source "
           "states it and how it was timed, beside what `helpers.model.roofline` predicts for the same work timed the "
           "same way. "
           f"Ratio = measured / predicted; a test keeps every ratio between 1/{RATIO_LIMIT:g} and {RATIO_LIMIT:g}. "
           "A row marked *sets a constant* is where one of the model's constants comes from (see the constants at "
           "the end): it checks nothing on its own.", "",
           f"{len(done)} rows checked; ratios from {min(c.ratio for c in done):.2f} to "
           f"{max(c.ratio for c in done):.2f}. {_left_out_summary(left_out(rows))}", "",
           *kernel_model_section(), ""]
    for spec in dict.fromkeys(c.row["model"]["spec"] for c in done):
        out += [f"## {spec}", "", "| operation | work | timed | published (as stated) | measured | predicted | "
                "ratio | source |", "|---|---|---|---|---|---|---|---|"]
        for c in (c for c in done if c.row["model"]["spec"] == spec):
            r, m = c.row, c.row["model"]
            sets = f" *sets a constant: {m['sets']}*" if m.get("sets") else ""
            out.append(f"| {_cell(r['operation'])}: {_cell(r['library'])} | {_cell(_sizes(m))} | {m['timed']} | "
                       f"{_cell(r['measured'])} {_cell(r['unit'])} ({_cell(r['device'])}) | {_seconds(c.measured)} | "
                       f"{_seconds(c.predicted)} | {c.ratio:.2f}{sets} | <{r['url']}> |")
        out.append("")
    out += _left_out_section(left_out(rows))
    out += ["", "## Searched for and not found", "",
            "Published measurements the model would be checked against, had anyone published them. Where none "
            "was found, the model says what it does instead:", "",
            *(f"- **{what}.** Searched: {where}. Instead: {instead}" for what, where, instead in NOT_FOUND),
            "", *measured_section(load_reports() if reports is None else reports),
            "", "## The model's constants", "", "| constant | value | what | source |", "|---|---|---|---|"]
    for name, table in (("OVERHEADS", roofline.OVERHEADS), ("KERNEL_FLOOR", roofline.KERNEL_FLOOR),
                        ("PROGRAM_KERNEL", roofline.PROGRAM_KERNEL), ("LOOP_STEP", roofline.LOOP_STEP),
                        ("MATMUL_EFFICIENCY", roofline.MATMUL_EFFICIENCY),
                        ("MEMORY_EFFICIENCY", roofline.MEMORY_EFFICIENCY)):
        for key, cost in table.items():
            value = f"{cost.value:.3g}" if "EFFICIENCY" in name else _seconds(cost.value)
            out.append(f"| {name}[{key!r}] | {value} | {_cell(cost.what)} | {_cell(cost.source)} |")
    pageable, least = roofline.PAGEABLE_FRACTION, roofline.TPU_PIPELINED_LEAST
    for name, cost, value in (("PAGEABLE_FRACTION", pageable, f"{pageable.value:.3g}"),
                              ("MATMUL_TILE", roofline.MATMUL_TILE, f"{roofline.MATMUL_TILE.value:g}"),
                              ("TPU_PIPELINED_LEAST", least, _seconds(least.value)),
                              *((name, getattr(roofline, name), f"{getattr(roofline, name).value:g}")
                                for name in KERNEL_CONSTANTS)):
        out.append(f"| {name} | {value} | {_cell(cost.what)} | {_cell(cost.source)} |")
    out += _kernel_rates()
    out.append(f"| specs.SM_LIMITS | per compute capability | what one SM holds and does per clock | "
               f"{_cell(specs.SM_LIMITS_SOURCE)} |")
    return "\n".join(out) + "\n"


def _kernel_rates() -> list[str]:
    """The constants page's rows for the kernel model's rates: the float32 issue rate per compute capability and
    the clocks cards hold under load."""
    from ..gpu import shared_passes

    out = [f"| FP32_ISSUE_RATE[{cc!r}] | {cost.value:g} | {_cell(cost.what)} | {_cell(cost.source)} |"
           for cc, cost in roofline.FP32_ISSUE_RATE.items()]
    out += [f"| DRAM_LATENCY[{cc!r}] | {_seconds(cost.value)} | {_cell(cost.what)} | {_cell(cost.source)} |"
            for cc, cost in roofline.DRAM_LATENCY.items()]
    out.append("| shared_passes.passes_of | per shared load | the passes one LDS, LDS.64 or LDS.128 takes for its 32 "
               f"addresses (worked out from the machine code) | {_cell(shared_passes.RULE_SOURCE)} |")
    return out + [f"| specs: {spec.name} held_clock | {spec.held_clock / 1e6:,.0f} MHz | the SM clock the card holds "  # type: ignore[operator]
                  f"under load (predictions run it there; its roofs stay the published peaks) | "
                  f"{_cell(spec.held_clock_source)} |" for spec in specs.GPUS if spec.held_clock]


#: Chapter 07's kernel model's own constants (helpers.model.roofline), listed with the others.
KERNEL_CONSTANTS = ("SCHEDULERS", "ARITHMETIC_LATENCY", "SHARED_PASSES_PER_CLOCK",
                    "L1_LINES_PER_CLOCK")
#: The GPUs chapter 07 predicts for: the reference T4, an H100, and those the published worklogs used.
LADDER_GPUS = ("NVIDIA T4", "NVIDIA H100 SXM", "NVIDIA H200", "NVIDIA RTX A6000", "NVIDIA GeForce RTX 3090",
               "NVIDIA V100 SXM2 32GB")


def kernel_model_section() -> list[str]:
    """Chapter 07's kernel model: its cache assumptions (written before the comparison below), what they give on
    each GPU, and every rung's predicted GFLOP/s there."""
    from ..chapters import make_it_fast

    n = make_it_fast.BIG_N
    out = ["## Chapter 07: a kernel from its counters", "",
           "`roofline.predict_kernel` turns the CPU executor's counts of a kernel (scaled from n = "
           f"{make_it_fast.COUNT_N} to {n:,}) into a time: the slowest of arithmetic, issue, shared memory, the L1 "
           "and DRAM, plus a tile loop's barrier waits (and its DRAM time where an SM holds one block), with what the "
           "compiler made of each rung (registers, machine instructions and shared-memory passes per multiply-add: "
           f"`helpers/data/sgemm-compiled.json`, NVRTC {make_it_fast.stored()['nvrtc']}, nvdisasm "
           f"{make_it_fast.stored()['nvdisasm']}). Its cache assumptions, written down before any comparison with a "
           "published figure:", "",
           *(f"- {line}" for line in roofline.CACHE_ASSUMPTIONS), "",
           f"What they give at n = {n:,}, per GPU: the L2 (published, with its source), and per rung the blocks "
           "resident at once, the bytes a wave reads in one step along k, whether the L2 holds them, the DRAM "
           "traffic, the unit that bounds the rung and its predicted GFLOP/s.", ""]
    for name in LADDER_GPUS:
        spec = roofline.published_spec(name)
        out += [f"### {spec.name}", "", f"{spec.sms} SMs, compute capability {spec.compute_capability} "
                f"({spec.sms_source}); L2 {f'{spec.l2_bytes / 2**20:g} MiB' if spec.l2_bytes else 'not on file'} "
                f"({spec.l2_source})", "",
                "| rung | registers | blocks at once | wave step | L2 holds it | DRAM | bound by | predicted GFLOP/s |",
                "|---|---|---|---|---|---|---|---|"]
        for row in make_it_fast.table(spec, n):
            resident = row.occupancy.blocks_per_sm * spec.sms
            step = sum(roofline.matmul_wave(n, row.rung.tile, resident, row.rung.rows_first)) * roofline.WAVE_STEP
            held = "yes" if spec.l2_bytes and step <= spec.l2_bytes else "no"
            work = make_it_fast.work(row.rung, row.counted, spec, n)
            made = make_it_fast.built(row.rung.label, make_it_fast.arch_of(spec)) or {}
            out.append(f"| {row.rung.label} | {made.get('registers', '?')} | {resident:,} | {step / 1024:,.0f} KiB | "
                       f"{held} | "
                       f"{work.dram_bytes / 1e9:,.2f} GB | {row.predicted.bound} | "
                       f"{make_it_fast.gflops(n, row.predicted.seconds):,.0f} |")
        out.append("")
    return out


def _ratio_cell(item: LeftOut) -> str:
    return "none" if item.ratio is None else f"{item.ratio:.2f}"


def _left_out_summary(items: list[LeftOut]) -> str:
    """One sentence: how many rows are left out, how many have a ratio, how many of those are beyond the limit."""
    priced = [i.ratio for i in items if i.ratio is not None]
    beyond = sum(not 1 / RATIO_LIMIT <= r <= RATIO_LIMIT for r in priced)
    return (f"{len(items)} published rows are left out of that check and listed below with their reasons; "
            f"{len(priced)} of them have a ratio, {beyond} beyond {RATIO_LIMIT:g}x.")


def _left_out_section(items: list[LeftOut]) -> list[str]:
    """The page's table of left-out rows: device, work, figure, ratio (or none), why, source."""
    out = ["## Published rows left out of the check", "",
           "Each with its reason, and its ratio where the model can price the work (held to no limit; 'none' "
           "where it cannot, the reason says why).", "",
           "| device | operation | figure | ratio | why | source |", "|---|---|---|---|---|---|"]
    out += [f"| {_cell(i.row['device'])} | {_cell(i.row['operation'])}: {_cell(i.row['library'])} | "
            f"{_cell(i.row['measured'])} {_cell(i.row['unit'])} | {_ratio_cell(i)} | {_cell(i.why)} | "
            f"<{i.row['url']}> |" for i in items]
    return out



_HOW_TO_RUN = ("On a GPU or a TPU (in Colab: Runtime > Change runtime type > T4 GPU, or a TPU), run "
               "`python -m helpers gpu-report --json docs/gpu-report-<device>-<date>.json`, commit the file and run "
               "`python -m helpers.book.evidence`.")


def measured_section(reports: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The page's section of rows measured by this project: each gpu-report file's facts and rows, or 'None yet'."""
    out = ["## Measured by this project on a GPU or a TPU", "",
           "The rows of `python -m helpers gpu-report`: every measurement chapters 03 to 06 set beside a "
           "prediction, made with the chapters' own helpers at their sizes on a GPU or a TPU, beside what "
           "`helpers.model.roofline` predicts for it through the chapter's helper. Ratio = measured (median) / "
           "predicted; these ratios are evidence, held to no limit.", ""]
    if not reports:
        return [*out, f"None yet: no gpu-report file has been committed under docs/. {_HOW_TO_RUN}"]
    for name, data in reports:
        out += _report_lines(name, data)
    return [*out, _HOW_TO_RUN]


def _report_lines(name: str, data: dict[str, Any]) -> list[str]:
    """One gpu-report file on the page: a heading, its facts, its rows and what it could not measure."""
    f, rows = data["facts"], data["rows"]
    devices = ", ".join(f"{d['name']} via {d['via']}" for d in f["devices"])
    versions = ", ".join(f"{k.replace('_', ' ')} {v}" for k in ("nvidia_driver", "cuda_driver", "cuda_runtime")
                         if (v := f.get(k)))
    helpers = f.get("helpers") or {}
    commit = (f"helpers commit {helpers['commit'][:12]}" + (" with changes" if helpers.get("changed") else "")
              if helpers else "helpers outside a git checkout")
    settings = data.get("settings", {})
    ratios = [r["ratio"] for r in rows]
    out = [f"### {_cell(devices)}, {f['date'][:10]}", "",
           f"`docs/{name}`: {_cell(versions) or 'no CUDA'}; Python {f['python']}; "
           + ", ".join(f"{k} {v}" for k, v in f["packages"].items()) + f"; {commit}; {f['environment']}; sizes: "
           f"{settings.get('sizes', '?')}, {settings.get('budget_s', '?')} s of timing per measurement. "
           f"{len(rows)} row{'s' * (len(rows) > 1)}; ratios from {min(ratios):.2f} to {max(ratios):.2f}.", "",
           "| chapter | measurement | work | device | measured | ± IQR | predicted | ratio | predicted by |",
           "|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {r['chapter']} | {_cell(r['label'])} | {_cell(r['work'])} | {_cell(r['device'])} | "
            f"{_seconds(r['measured_s'])} | {_seconds(r['iqr_s'])} | {_seconds(r['predicted_s'])} | {r['ratio']:.2f} | "
            f"{_cell(r['model'])} ({_cell(r['spec'])}) |" for r in rows]
    out += [f"- not measured: chapter {s['chapter']}, {_cell(s['label'])} ({_cell(s['work'])}): {_cell(s['why'])}"
            for s in data.get("skipped", [])]
    out += [f"- left out: {_cell(note)}" for note in settings.get("left_out", [])]
    if settings.get("complete") is False:  # the file a run writes after every case, kept when it was interrupted
        out.append(f"- interrupted: {len(rows) + len(data.get('skipped', []))} of {settings.get('cases', '?')} "
                   "cases run")
    return [*out, ""]


def main() -> int:
    """Rewrite docs/predictions.md; exit 1 with the rows out of bounds if any ratio is beyond RATIO_LIMIT."""
    PAGE.write_text(page())
    bad = [c for c in checks() if not 1 / RATIO_LIMIT <= c.ratio <= RATIO_LIMIT]
    for c in bad:
        print(f"out of bounds: {c.row['device']} {c.row['operation']} ratio {c.ratio:.2f}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
