"""Classroom tools: hand-out copies of the chapters, and every learner's machine side by side.

    python -m helpers classroom copies DIR [--force]     # hand-outs: the predictions' answers cleared, and a zip
    python -m helpers classroom merge a.json b.json ... --html class.html   # `bench --json` files in one page

A mistake gets one line on stderr and exit code 2 (a bad command line, a folder that is not empty, no notebooks, no
usable JSON file); a JSON file that cannot be used is named and skipped with the reason.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from .project import CHAPTERS

#: The notebooks of a clone of the repository (an installed package has none).
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PROMPT = "**Before you run the next cell:**"
#: Cells whose outputs depend on the machine: measurements, device lists, plots of timings.
MEASURED_TAG = "nbval-ignore-output"
ZIP_NAME = "loops-to-tpus-chapters.zip"


class ClassroomError(Exception):
    """A problem the command reports in one line (exit code 2)."""


# --------------------------------------------------------------------------------------------------------------
# Learner copies


def output_folder(folder: Path, force: bool, forbidden: Path, forbidden_what: str, what: str) -> None:
    """Make `folder` ready for `what`: never `forbidden` or inside it, an empty folder unless `force`."""
    where = folder.resolve()
    if where == forbidden.resolve() or forbidden.resolve() in where.parents:
        raise ClassroomError(f"{folder} is {forbidden_what}: write {what} somewhere else")
    if folder.exists() and not folder.is_dir():
        raise ClassroomError(f"{folder} is a file, not a folder")
    if folder.exists() and any(folder.iterdir()) and not force:
        raise ClassroomError(f"{folder} is not empty: add --force to write {what} into it anyway")
    folder.mkdir(parents=True, exist_ok=True)


def learner_copy(nb: Any) -> Any:
    """A hand-out of the chapter `nb` (an nbformat notebook, changed in place and returned): the outputs of the
    code cells after each prediction prompt (up to the next text, which would explain the answer), and of every
    measurement cell, cleared; everything else as it is."""
    answering = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            answering = PROMPT in cell.source
            continue
        if cell.cell_type == "code" and (answering or MEASURED_TAG in cell.get("metadata", {}).get("tags", [])):
            cell.outputs = []
            cell.execution_count = None
    return nb


def write_copies(folder: str | Path, force: bool = False, source: Path = NOTEBOOKS) -> list[Path]:
    """Write a learner copy of every chapter into `folder`, and a zip of them; returns the files written.

    Refuses the repository's own notebooks folder, and a folder that is not empty unless `force` (the copies
    written there before are then replaced). Writing twice gives the same files, byte for byte.
    """
    import nbformat

    folder = Path(folder)
    missing = [c.file for c in CHAPTERS if not (source / c.file).is_file()]
    if missing:
        raise ClassroomError(f"notebooks not found in {source}: {', '.join(missing)} (run this in a clone of the "
                             "repository)")
    output_folder(folder, force, source, "the series' own notebooks folder", "the copies")
    written = []
    for chapter in CHAPTERS:
        nb = learner_copy(nbformat.read(source / chapter.file, as_version=4))
        path = folder / chapter.file
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        written.append(path)
    archive = folder / ZIP_NAME
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in written:
            info = zipfile.ZipInfo(f"loops-to-tpus/{path.name}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    return [*written, archive]


# --------------------------------------------------------------------------------------------------------------
# Class results


@dataclass(frozen=True)
class Machine:
    """One learner's `bench --json` file: the machine's name, its facts and its results."""

    name: str
    hardware: dict[str, Any]
    results: list[dict[str, Any]]


#: What every result of a bench JSON file must hold to be shown.
RESULT_KEYS = ("op", "backend", "n", "dtype", "median_s", "gflops")


def read_machine(path: str | Path) -> Machine:
    """A bench JSON file as a Machine; a ValueError saying what is wrong with it otherwise."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError("it is not text (a bench --json file is JSON)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("hardware"), dict) or not isinstance(
            data.get("results"), list):
        raise ValueError("it is not a bench --json file (expected 'hardware' and 'results')")
    results = [r for r in data["results"] if isinstance(r, dict) and all(k in r for k in RESULT_KEYS)
               and _number(r["median_s"]) and (r["gflops"] is None or _number(r["gflops"]))]
    if not results:
        raise ValueError("it holds no results with op, backend, n, dtype, median_s and gflops")
    name = data.get("name") if isinstance(data.get("name"), str) and data["name"].strip() else None
    model = data["hardware"].get("cpu_model") if isinstance(data["hardware"].get("cpu_model"), str) else "?"
    return Machine(name or f"{path.stem} ({model})", data["hardware"], results)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def read_machines(paths: Sequence[str | Path]) -> tuple[list[Machine], list[str]]:
    """(the machines of the files that can be used, one line for each file skipped, with the reason)."""
    machines, skipped = [], []
    for path in paths:
        try:
            machines.append(read_machine(path))
        except ValueError as exc:
            skipped.append(f"skipped {path}: {exc}")
    names = [m.name for m in machines]
    return [Machine(f"{m.name} #{i + 1}" if names.count(m.name) > 1 else m.name, m.hardware, m.results)
            for i, m in enumerate(machines)], skipped


def class_page(machines: Sequence[Machine]) -> str:
    """One self-contained HTML page (plotly.js inlined: it opens offline): every result in a table, matmul and
    axpby GFLOP/s per machine and backend, and each machine's points under its own roofs."""
    import plotly.io as pio

    if not machines:
        raise ValueError("no machine to show")
    heads = ("machine", "op", "backend", "n", "dtype", "median", "GFLOP/s", "GB/s", "of peak")
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in (
            m.name, r["op"], r["backend"], f"{r['n']:,}" if isinstance(r["n"], int) else r["n"], r["dtype"],
            _seconds(r["median_s"]), _num(r.get("gflops")), _num(r.get("gbps")), _fraction(r.get("fraction_of_peak"))))
        + "</tr>" for m in machines for r in m.results)
    charts = [pio.to_html(bars_figure(machines), include_plotlyjs=True, full_html=False)]
    charts += [pio.to_html(roofline_figure(m), include_plotlyjs=False, full_html=False) for m in machines]
    table = (f"<table><thead><tr>{''.join(f'<th>{h}</th>' for h in heads)}</tr></thead><tbody>{rows}</tbody>"
             "</table>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Our machines side by side</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}</style>"
            f"</head><body><h1>Our machines side by side</h1><p>{len(machines)} machine(s), each measured by "
            "<code>python -m helpers bench --json</code>.</p><h2>Every result</h2>" + table
            + "<h2>GFLOP/s by machine and backend</h2>" + charts[0]
            + "<h2>Each machine under its own roofs</h2><p>The flat roof is the machine's peak (the CPU's estimated "
              "from its cores, clock and vector units; an accelerator's published). The slanted one is main memory's "
              "bandwidth, measured by bench with one thread: a point above it read its data from the caches, or on "
              "several cores at once.</p>" + "".join(charts[1:]) + "</body></html>")


def bars_figure(machines: Sequence[Machine]) -> Any:
    """GFLOP/s of matmul and of axpby, a bar per machine and backend (log scale)."""
    from plotly.subplots import make_subplots

    from .style import TEMPLATE, colour

    fig = make_subplots(rows=1, cols=2, subplot_titles=("matmul", "axpby"), horizontal_spacing=0.3)
    backends = sorted({r["backend"] for m in machines for r in m.results})
    for col, op in enumerate(("matmul", "axpby"), 1):
        for backend in backends:
            found = [(m.name, r["gflops"]) for m in machines for r in m.results
                     if r["op"] == op and r["backend"] == backend and r["gflops"]]
            if found:
                fig.add_bar(y=[n for n, _ in found], x=[g for _, g in found], orientation="h", name=backend,
                            marker_color=colour(backend), legendgroup=backend, showlegend=col == 1, row=1, col=col)
        fig.update_xaxes(type="log", dtick=1, title_text="GFLOP/s (log scale)", row=1, col=col)
        fig.update_yaxes(automargin=True, row=1, col=col)
    fig.update_layout(template=TEMPLATE, barmode="group", height=200 + 60 * len(machines))
    return fig


def roofline_figure(machine: Machine) -> Any:
    """The machine's measured points under its roofs: the CPU's (from its facts) and each accelerator's that
    has published peaks. A point's intensity is its GFLOP/s over its GB/s."""
    import numpy as np
    import plotly.graph_objects as go

    from .style import ROOF_COLOUR, TEMPLATE, colour

    fig = go.Figure()
    roofs = []
    hw = machine.hardware
    if _number(hw.get("peak_fp32")) and _number(hw.get("bandwidth")):
        roofs.append((f"CPU ({hw.get('cpu_model', '?')})", hw["peak_fp32"], hw["bandwidth"]))
    for accel in hw.get("accelerators") or []:
        peaks = accel.get("peak_flops") if isinstance(accel, dict) else None
        if isinstance(peaks, dict) and peaks and _number(accel.get("peak_bandwidth")):
            roofs.append((str(accel.get("name", "accelerator")), max(peaks.values()), accel["peak_bandwidth"]))
    intensity = np.logspace(-2, 3, 100)
    for name, peak, bandwidth in roofs:
        fig.add_scatter(x=intensity, y=np.minimum(peak, intensity * bandwidth) / 1e9, mode="lines", name=name,
                        line={"color": ROOF_COLOUR, "dash": "solid" if name.startswith("CPU") else "dash"})
    for r in machine.results:
        if r.get("gflops") and r.get("gbps"):
            fig.add_scatter(x=[r["gflops"] / r["gbps"]], y=[r["gflops"]], mode="markers",
                            marker={"size": 11, "color": colour(r["backend"])},
                            name=f"{r['op']} {r['backend']}")
    fig.update_layout(template=TEMPLATE, title=machine.name, height=380,
                      xaxis={"type": "log", "dtick": 1, "title": "FLOP per byte"},
                      yaxis={"type": "log", "dtick": 1, "title": "GFLOP/s"})
    return fig


def _seconds(s: float) -> str:
    from .timing import format_seconds

    return format_seconds(s)


def _num(x: Any) -> str:
    return "-" if not _number(x) else f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _fraction(x: Any) -> str:
    return "-" if not _number(x) else f"{x:.1%}"
