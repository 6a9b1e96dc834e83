"""One record of a real run: every measurement the chapters set beside a prediction, made on the GPU or TPU here.

    python -m helpers gpu-report --json docs/gpu-report-tesla-t4-2025-06-01.json   # on a GPU or a TPU
    python -m helpers gpu-report --quick                                            # smaller sizes: a smoke test

Each row is one of the chapters' measurements (helpers.book.report_chapters builds them), made with the same
helpers functions at the same sizes (helpers.book.report_case: CHAPTER_SIZES and TRAINING hold the sizes that live
only in a chapter's source), beside what helpers.model.roofline
predicts for it through the chapter's own helper (GPU.predict_cupy_axpby, training.predict_epoch, ...): the
median and IQR measured, the seconds predicted, and measured / predicted. The header says on what: the devices,
the driver and CUDA versions, the package versions, Python, the helpers' commit and the date. Rows come only for
the accelerators present: CuPy's when CuPy can use a GPU, JAX's when JAX's default backend is a GPU or a TPU.
docs/predictions.md lists the rows of every docs/gpu-report-*.json committed (python -m helpers.book.evidence).

A run streams: each row is printed, and the JSON file rewritten, as soon as it is measured (an interrupted run
keeps its rows), with how far the run is and about how long is left before each case (helpers.core.progress). It
stops beginning cases after DEFAULT_TIME_LIMIT (160 s, --time-limit) and lists those left as not measured, so a
default run ends within 3 minutes on a GPU like the H200; left_out says what it does not time, and why.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from ..core.files import write_output
from ..core.limits import TimeLimitExceeded, time_limit
from ..core.place import where_we_run
from ..core.progress import Progress
from ..core.project import ROOT
from ..gpu import cuda
from ..measuring.hardware import hardware
from ..measuring.timing import format_seconds, set_timing_budget, spread_shown
from .report_case import CHAPTER_SIZES, QUICK, Case, Here, Row, Sizes, accelerators, capped_note
from .report_chapters import CHAPTERS, left_out

#: What the JSON file says it is, and the version of its layout (raise it when a field changes meaning).
KIND, VERSION = "loops-to-tpus gpu-report", 1
#: The page that lists every report committed to docs/ (python -m helpers.book.evidence writes it), and the
#: report files it lists as measured by this project: docs/gpu-report-<device>-<date>.json.
PAGE = ROOT / "docs" / "predictions.md"
REPORTS = "gpu-report-*.json"
#: Seconds of repeated timing per measurement: a record, so steadier than a chapter's 0.2 s; --quick: a smoke test.
DEFAULT_BUDGET, QUICK_BUDGET = 0.5, 0.05


# --------------------------------------------------------------------------------------------------------------
# Facts about the run


def _command(*args: str, cwd: Path | None = None) -> str | None:
    """The output of a command, stripped; None when it is missing, fails or takes over 30 s."""
    if shutil.which(args[0]) is None:
        return None
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, cwd=cwd, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def helpers_commit() -> dict[str, Any] | None:
    """The helpers' git commit and whether the checkout has changes; None outside a git checkout."""
    if not (ROOT / ".git").exists():
        return None
    commit = _command("git", "rev-parse", "HEAD", cwd=ROOT)
    if not commit:
        return None
    changes = _command("git", "status", "--porcelain", "--untracked-files=no", cwd=ROOT)
    return {"commit": commit, "changed": bool(changes)}


#: The distributions whose versions a report records, when installed.
PACKAGES = ("numpy", "cupy-cuda12x", "cupy-cuda13x", "cupy", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt",
            "jax-cuda13-plugin", "jax-cuda13-pjrt", "libtpu", "libtpu-nightly", "keras", "loops-to-tpus")


def package_versions() -> dict[str, str]:
    """Installed version of each of PACKAGES that is installed."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _cuda_version(code: int) -> str:
    """CUDA's version number as text: 12040 -> '12.4'."""
    return f"{code // 1000}.{code % 1000 // 10}"


def cuda_versions(here: Here) -> dict[str, str | None]:
    """The NVIDIA driver (nvidia-smi), the CUDA version it supports and CuPy's CUDA runtime (None where unknown)."""
    out: dict[str, str | None] = {"nvidia_driver": None, "cuda_driver": None, "cuda_runtime": None}
    smi = _command("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    if smi:
        out["nvidia_driver"] = smi.splitlines()[0].strip()
    if here.gpu is not None:
        import cupy

        out["cuda_driver"] = _cuda_version(int(cupy.cuda.runtime.driverGetVersion()))
        out["cuda_runtime"] = _cuda_version(int(cupy.cuda.runtime.runtimeGetVersion()))
    return out


def devices(here: Here) -> list[dict[str, Any]]:
    """The GPUs CuPy uses and JAX's devices, each with the published specs its predictions use."""
    out = [{"kind": a.kind, "name": a.name, "via": a.via, "memory_bytes": a.memory_bytes,
            "spec": a.spec.name if a.spec else None} for a in hardware().gpus]
    if here.gpu is not None and not out:
        out.append({"kind": "gpu", "name": here.gpu.name, "via": "cupy", "memory_bytes": None,
                    "spec": here.gpu.spec.name})
    if here.jax_kind is not None:
        import jax

        out.append({"kind": here.jax_kind, "name": here.jax_name, "via": "jax", "count": len(jax.devices()),
                    "spec": here.jax_spec.name if here.jax_spec else None})
    return out


def facts(here: Here) -> dict[str, Any]:
    """Where and when the report ran: devices, driver and CUDA, packages, Python, the helpers' commit, the date."""
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "devices": devices(here),
            **cuda_versions(here), "packages": package_versions(), "python": platform.python_version(),
            "platform": platform.platform(), "environment": where_we_run(), "helpers": helpers_commit()}


# --------------------------------------------------------------------------------------------------------------
# The run and the report


@dataclass(frozen=True)
class Report:
    """What a run measured: its facts, its rows, the cases that could not be measured (and why), its settings, and
    how long each case took (wall_s, by chapter and label)."""

    facts: dict[str, Any]
    rows: list[Row]
    skipped: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    wall_s: dict[tuple[str, str], float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The whole report as plain data for the JSON file (each row with the seconds its case took)."""
        rows = [{**row.as_json(), **({"wall_s": round(self.wall_s[key], 3)} if (key := (row.chapter, row.label))
                                     in self.wall_s else {})} for row in self.rows]
        return {"kind": KIND, "version": VERSION, "facts": self.facts, "settings": self.settings, "rows": rows,
                "skipped": self.skipped}

    def to_json(self) -> str:
        """as_json() as strict JSON text (no NaN)."""
        return json.dumps(self.as_json(), indent=2, allow_nan=False) + "\n"

    def header(self) -> list[str]:
        """The facts, a few lines of text."""
        f = self.facts
        names = "; ".join(f"{d['name']} via {d['via']} (predicted from the {d['spec']})" for d in f["devices"])
        cuda_text = ", ".join(f"{k.replace('_', ' ')} {v}" for k in ("nvidia_driver", "cuda_driver", "cuda_runtime")
                              if (v := f.get(k)))
        commit = f["helpers"]["commit"][:12] + (" with changes" if f["helpers"]["changed"] else "") \
            if f.get("helpers") else "not a git checkout"
        return [f"gpu-report, {f['date']}: {names}",
                f"{cuda_text or 'no CUDA'}; Python {f['python']}; helpers {commit}",
                "packages: " + ", ".join(f"{k} {v}" for k, v in f["packages"].items())]

    def footer(self) -> list[str]:
        """What was not measured (and why), and the range of the ratios."""
        lines = [skipped_line(s) for s in self.skipped]
        lines += [f"left out: {note}" for note in self.settings.get("left_out", [])]
        if self.rows:
            ratios = [r.ratio for r in self.rows]
            lines.append(f"{len(self.rows)} row{'s' * (len(self.rows) > 1)}; measured/predicted from "
                         f"{min(ratios):.2f} to {max(ratios):.2f}")
        return lines

    def __str__(self) -> str:
        width = table_width(self.rows)
        return "\n".join([*self.header(), "", table_head(width), *(row_line(r, width) for r in self.rows),
                          *self.footer()])


def table_width(found: list[Case] | list[Row]) -> int:
    """The width of the table's measurement column for these cases (or rows)."""
    return max((len(f"{r.label} ({r.work})") for r in found), default=20) + 2


def table_head(width: int) -> str:
    """The table's column heads."""
    return f"ch  {'measurement':<{width}}{'predicted':>11}{'measured':>11}{'± IQR':>8}{'measured/predicted':>20}"


def row_line(r: Row, width: int) -> str:
    """One row of the table, saying when max_time capped its timing."""
    return (f"{r.chapter:<4}{r.label + ' (' + r.work + ')':<{width}}{format_seconds(r.predicted):>11}"
            f"{format_seconds(r.timing.median):>11}{r.timing.spread:>8.0%}{r.ratio:>19.2f}x" + capped_note(r.timing))


def skipped_line(s: dict[str, str]) -> str:
    """A case that was not measured, and why."""
    return f"not measured: ch{s['chapter']} {s['label']}: {s['why']}"


def cases(here: Here, sizes: Sizes = CHAPTER_SIZES) -> list[Case]:
    """Every chapter's cases for the accelerators here, in the chapters' order."""
    return [case for build in CHAPTERS.values() for case in build(here, sizes)]


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _free_gpu_memory() -> None:
    """Give the memory a finished case held in CuPy's pool back to the GPU, so JAX and later cases can have it."""
    pool = getattr(sys.modules.get("cupy"), "get_default_memory_pool", None)
    if pool is not None and cuda.gpu_here():
        pool().free_all_blocks()


#: The longest one case may take, first call and data included: a guard against a case that hangs, not a cap on a
#: measurement (each timing has its own max_time and says when it capped it).
CASE_LIMIT = 60.0
#: How long a default run may take, set-up included, before the cases left are listed as not measured: with
#: LAST_CASE_GRACE for a case begun just before it, the run ends within 3 minutes; --time-limit changes it.
DEFAULT_TIME_LIMIT, LAST_CASE_GRACE = 160.0, 15.0


def _measure(case: Case, seconds: float) -> Row:
    """The case's row, within `seconds` (TimeLimitExceeded past it)."""
    with time_limit(seconds, f"ch{case.chapter} {case.label}"):
        return case.run()


def measure_all(todo: list[Case], say: Callable[..., None], budget: float = DEFAULT_BUDGET,
                time_limit_s: float | None = None, on_case: Callable[[Report], None] | None = None,
                clock: Callable[[], float] = time.perf_counter) -> Report:
    """Run every case: its row, or, when it fails (out of memory, too slow, ...), why, so the others still run;
    the rows, the cases not measured and each case's seconds, as a Report without facts. Before each case, `say`
    gets how far the run is and about how long is left; after each, `on_case` gets the report so far. Once
    `time_limit_s` is spent, the cases left are listed as not measured, saying so; a case begun before then gets
    at most LAST_CASE_GRACE seconds beyond it."""
    progress, partial = Progress(len(todo), budget, time_limit_s, clock), Report({}, [], [])
    with spread_shown():  # every row records its spread
        for case in todo:
            if progress.out_of_time():
                partial.skipped.append(_skipped(case, f"the report's time limit of {time_limit_s:g} s was spent "
                                                      "before it began (--time-limit SECONDS gives more)"))
                progress.done(0.0)
                continue
            say(f"{progress.line()} ch{case.chapter} {case.label} ({case.work}) ... ", end="")
            began = clock()
            cap = CASE_LIMIT if time_limit_s is None else min(
                CASE_LIMIT, time_limit_s - progress.elapsed() + LAST_CASE_GRACE)
            try:
                row = _measure(case, cap)
            except (Exception, TimeLimitExceeded) as exc:  # noqa: BLE001 - one case failing must not lose the others
                partial.skipped.append(_skipped(case, _one_line(exc)))
                say(f"not measured: {_one_line(exc)}")
            else:
                partial.rows.append(row)
                say(f"{format_seconds(row.timing.median)} (predicted {format_seconds(row.predicted)})"
                    + capped_note(row.timing))
            finally:
                _free_gpu_memory()
            partial.wall_s[(case.chapter, case.label)] = clock() - began
            progress.done(clock() - began)
            if on_case is not None:
                on_case(partial)
    return partial


def _skipped(case: Case, why: str) -> dict[str, str]:
    return {"chapter": case.chapter, "label": case.label, "work": case.work, "why": why}


def run(sizes: Sizes = CHAPTER_SIZES, budget: float = DEFAULT_BUDGET, progress: TextIO | None = None,
        table: TextIO | None = None, json_path: str | None = None, time_limit_s: float | None = None) -> Report:
    """Measure every case for the accelerators here; NoAccelerator before anything runs when there is neither a
    GPU CuPy can use nor JAX on a GPU or TPU. As it goes: progress lines (how far, about how long left) to
    `progress`; the table's header, then each row as it is measured, to `table`; the report so far rewritten to
    `json_path` after every case, so an interrupted run keeps what it measured ('complete' says whether it ran
    through). Cases not begun within `time_limit_s` seconds are listed as not measured."""
    began = time.perf_counter()  # the time limit counts the set-up (JAX and CuPy starting, the cases' data) too
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before JAX starts: leave CuPy its share
    here = accelerators()

    def say(text: str, end: str = "\n", to: TextIO | None = progress) -> None:
        if to is not None:
            print(text, end=end, file=to, flush=True)

    todo, about = cases(here, sizes), facts(here)
    settings = {"sizes": "chapters" if sizes == CHAPTER_SIZES else "quick" if sizes == QUICK else "other",
                "budget_s": budget, "time_limit_s": time_limit_s, "cases": len(todo),
                "left_out": left_out(here, sizes), "complete": False}
    width, printed = table_width(todo), [0, 0]

    def on_case(partial: Report) -> None:
        for row in partial.rows[printed[0]:]:
            say(row_line(row, width), to=table)
        for skipped in partial.skipped[printed[1]:]:
            say(skipped_line(skipped), to=table)
        printed[:] = [len(partial.rows), len(partial.skipped)]
        if json_path is not None:
            write(json_path, Report(about, partial.rows, partial.skipped, settings, partial.wall_s))

    for line in [*Report(about, []).header(), "", table_head(width)]:
        say(line, to=table)
    old = set_timing_budget(budget)
    try:
        left = None if time_limit_s is None else max(time_limit_s - (time.perf_counter() - began), 0.0)
        measured = measure_all(todo, say, budget, left, on_case)
    finally:
        set_timing_budget(old)
    return Report(about, measured.rows, measured.skipped, {**settings, "complete": True}, measured.wall_s)


def write(path: str, report: Report) -> None:
    """The report as JSON at `path`: a new file put in place (a link there is replaced, never written through), or
    fed to a named pipe or a device (files.write_output)."""
    write_output(path, report.to_json())


def suggested_name(report: Report) -> str:
    """A file name for docs/ that python -m helpers.book.evidence picks up: gpu-report-<device>-<date>.json."""
    device = report.facts["devices"][0]["name"] if report.facts["devices"] else "device"
    slug = "".join(c if c.isalnum() else "-" for c in device.lower())
    return f"gpu-report-{'-'.join(filter(None, slug.split('-')))}-{report.facts['date'][:10]}.json"


def next_step(path: str, report: Report) -> str:
    """What to do with the file written at `path` so that docs/predictions.md lists it."""
    from fnmatch import fnmatch

    written = Path(path).resolve()
    if written.parent == PAGE.parent and fnmatch(written.name, REPORTS):
        return "commit it and run python -m helpers.book.evidence: docs/predictions.md then lists its rows"
    return (f"to list it in docs/predictions.md, commit it as docs/{suggested_name(report)} and run "
            "python -m helpers.book.evidence")


def load_reports(folder: Path = ROOT / "docs") -> list[tuple[str, dict[str, Any]]]:
    """Every gpu-report file in `folder` (REPORTS), as (file name, content) in name order; a ValueError naming a
    file that is not one, so a broken file stops the page rather than vanishing from it."""
    found = []
    for path in sorted(folder.glob(REPORTS)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path.name}: not a readable JSON file ({exc})") from None
        if not isinstance(data, dict) or data.get("kind") != KIND or data.get("version") != VERSION:
            raise ValueError(f"{path.name}: not a version {VERSION} gpu-report file (python -m helpers gpu-report "
                             "--json writes them)")
        if not data.get("rows"):
            raise ValueError(f"{path.name}: a gpu-report file without a measurement: nothing to list")
        found.append((path.name, data))
    return found
