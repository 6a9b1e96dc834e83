"""Classroom tools: hand-out copies of the chapters, and every learner's machine side by side.

    python -m helpers classroom copies DIR [--force]     # hand-outs: the predictions' answers cleared, and a zip
    python -m helpers classroom merge a.json b.json ... --html class.html   # `bench --json` files in one page

A mistake gets one line on stderr and exit code 2 (a bad command line, a folder that is not empty, no notebooks, no
usable JSON file, a page that would replace an input); a JSON file that cannot be used (not a regular file of at most
1 MB, not JSON, not the shape bench --json writes) is named and skipped with the reason. Files are written as new
files put in place: a link found where one goes is replaced, never written through.
"""

from __future__ import annotations

import io
import json
import os
import reprlib
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from ..core.files import OutputError, output_folder, read_small_file, replace_file
from ..core.notebook_file import NotebookFileError, read_notebook
from ..core.project import CHAPTERS, PACKAGE, ROOT
from ..core.validate import LARGEST, finite
from ..learning import prompts
from ..measuring import specs
from ..measuring.hardware import Peak
from ..measuring.timing import Timing, format_fraction, format_seconds

#: The helpers package, and the notebooks of a clone of the repository around it (an installed package has none).
NOTEBOOKS = ROOT / "notebooks"
#: Cells whose outputs depend on the machine: measurements, device lists, plots of timings.
MEASURED_TAG = "nbval-ignore-output"
ZIP_NAME = "loops-to-tpus-chapters.zip"


#: A problem the command reports in one line (exit code 2): files.OutputError, which `python -m helpers` catches
#: under this name, so that a folder files.output_folder refuses is one line too.
ClassroomError = OutputError


# --------------------------------------------------------------------------------------------------------------
# Learner copies


def learner_copy(nb: Any) -> Any:
    """A hand-out of the chapter `nb` (an nbformat notebook, changed in place and returned): the outputs of every
    code cell from each prediction prompt to its last answer cell (`prompts`), and of every measurement cell,
    cleared; everything else as it is. A prompt that names no answers is a ClassroomError."""
    try:
        spans = [(p.index, p.last) for p in prompts.prompts(nb)]
    except prompts.PromptError as exc:
        raise ClassroomError(f"cannot make a hand-out: {exc}") from None
    for index, cell in enumerate(nb.cells):
        answering = any(first < index <= last for first, last in spans)
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
    missing = [c.file for c in CHAPTERS if not os.path.lexists(source / c.file)]
    if missing:
        raise ClassroomError(f"notebooks not found in {source}: {', '.join(missing)} (run this in a clone of the "
                             "repository)")
    output_folder(folder, force, {source: "the series' own notebooks folder",
                                  PACKAGE: f"inside the helpers package ({PACKAGE})"}, "the copies")
    contents = {chapter.file: (nbformat.writes(_hand_out(source / chapter.file)) + "\n").encode("utf-8")
                for chapter in CHAPTERS}  # every chapter read and made before the first is written
    for name, content in contents.items():
        replace_file(folder / name, content)
    written = [folder / name for name in contents]
    archive = folder / ZIP_NAME
    replace_file(archive, _zipped(contents))
    return [*written, archive]


def _hand_out(path: Path) -> Any:
    """The hand-out of the chapter at `path`; a ClassroomError, one line naming it and what is wrong, for a
    malformed file or prompt."""
    try:
        nb = read_notebook(path)
    except NotebookFileError as exc:
        raise ClassroomError(f"cannot make a hand-out of {exc}") from None
    try:
        return learner_copy(nb)
    except ClassroomError as exc:
        raise ClassroomError(f"{path}: {exc}") from None


def _zipped(contents: dict[str, bytes]) -> bytes:
    """A zip of the files `contents` names, in a folder loops-to-tpus/, the same bytes every time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in contents.items():
            info = zipfile.ZipInfo(f"loops-to-tpus/{name}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------------------------
# Class results


@dataclass(frozen=True)
class Machine:
    """One learner's `bench --json` file: the machine's name, its facts and its results."""

    name: str
    hardware: dict[str, Any]
    results: list[dict[str, Any]]


#: The most bytes a bench --json file may have (one is a few KB): a larger file is skipped unread.
MAX_JSON_BYTES = 1_000_000
#: What every result of a bench JSON file must hold to be shown.
RESULT_KEYS = ("op", "backend", "n", "dtype", "median_s", "gflops")

Check = tuple[Callable[[Any], bool], str]
#: How a value is shown in a message: a few levels and items, 40 characters of a string or a number.
SHORT = reprlib.Repr()
SHORT.maxlevel, SHORT.maxstring, SHORT.maxlong, SHORT.maxother = 3, 40, 40, 40


def _number(value: Any) -> bool:
    """Whether `value` is a finite number >= 0 (not a bool; an int too large for a float is not)."""
    return finite(value) and value >= 0


def _nullable(check: Check) -> Check:
    """`check` that also accepts null (None)."""
    return (lambda value: value is None or check[0](value)), f"{check[1]} or null"


def _peaks(value: Any) -> bool:
    """Whether `value` is an object whose values are numbers >= 0 (an accelerator's peak_flops)."""
    return isinstance(value, dict) and all(_number(v) for v in value.values())


TEXT: Check = ((lambda value: isinstance(value, str)), "a string")
NUMBER: Check = (_number, "a number >= 0")
COUNT: Check = ((lambda value: isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= LARGEST),
                "a whole number from 1 to 2**53")
#: The fields of a bench --json file the page reads, and what each must be (any other field is not read).
TOP_FIELDS = {"name": _nullable(TEXT)}
HARDWARE_FIELDS = {"cpu_model": _nullable(TEXT), "peak_fp32": _nullable(NUMBER), "peak_formula": _nullable(TEXT),
                   "bandwidth": _nullable(NUMBER), "jax_platform": _nullable(TEXT),
                   "accelerators": ((lambda value: value is None or isinstance(value, list)), "a list or null")}
ACCELERATOR_FIELDS = {"kind": _nullable(TEXT), "name": _nullable(TEXT),
                      "peak_flops": _nullable((_peaks, "an object of numbers >= 0")),
                      "peak_bandwidth": _nullable(NUMBER), "source": _nullable(TEXT)}
RESULT_FIELDS = {"op": TEXT, "backend": TEXT, "n": COUNT, "dtype": TEXT, "median_s": NUMBER,
                 "gflops": _nullable(NUMBER), "gbps": _nullable(NUMBER), "fraction_of_peak": _nullable(NUMBER)}


def read_machine(path: str | Path) -> Machine:
    """A bench JSON file as a Machine; a ValueError saying what is wrong with it otherwise."""
    path = Path(path)
    raw = read_small_file(path, MAX_JSON_BYTES, "what bench --json writes",
                          "a bench --json file may have (one is a few KB)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("it is not text (a bench --json file is JSON)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ValueError("it is nested too deeply to be a bench --json file") from None
    except ValueError:  # Python's limit on the digits of an int (4,300)
        raise ValueError("it holds a number of thousands of digits: not a bench --json file") from None
    problem = bench_file_problem(data)
    if problem:
        raise ValueError(problem)
    model = data["hardware"].get("cpu_model") or "?"
    name = data["name"] if (data.get("name") or "").strip() else f"{path.stem} ({model})"
    return Machine(name, data["hardware"], data["results"])


def bench_file_problem(data: Any) -> str | None:
    """What makes `data`, a parsed JSON file, unusable as a bench --json file; None if nothing does."""
    if not isinstance(data, dict) or not isinstance(data.get("hardware"), dict) or not isinstance(
            data.get("results"), list):
        return "it is not a bench --json file (expected 'hardware' and 'results')"
    if not data["results"]:
        return "it holds no results with op, backend, n, dtype, median_s and gflops"
    for where, record, fields, required in _records(data):
        problem = _record_problem(where, record, fields, required)
        if problem:
            return problem
    return None


def _records(data: dict[str, Any]) -> Iterator[tuple[str, Any, dict[str, Check], Sequence[str]]]:
    """Each part of a bench file to check: (where, the part, its fields, those it must have), in order."""
    yield "", data, TOP_FIELDS, ()
    yield "hardware", data["hardware"], HARDWARE_FIELDS, ()
    for i, accelerator in enumerate(data["hardware"].get("accelerators") or []):  # a list: checked just before
        yield f"hardware.accelerators[{i}]", accelerator, ACCELERATOR_FIELDS, ()
    for i, result in enumerate(data["results"]):
        yield f"results[{i}]", result, RESULT_FIELDS, RESULT_KEYS


def _record_problem(where: str, record: Any, fields: dict[str, Check], required: Sequence[str]) -> str | None:
    """The first of `record`'s fields that is missing (of `required`) or not what `fields` says; None if none."""
    if not isinstance(record, dict):
        return f"{where} is {_shown(record)}, not an object"
    for key, (check, expected) in fields.items():
        if key not in record and key in required:
            return f"{where} has no {key!r}"
        if key in record and not check(record[key]):
            return f"{where + '.' if where else ''}{key} is {_shown(record[key])}, not {expected}"
    return None


#: The most characters a value takes in a message, however many keys or items it has.
SHOWN_CHARS = 80


def _shown(value: Any) -> str:
    """`value` in a message, cut short: a few levels and items of a list or an object, 40 characters of the rest,
    SHOWN_CHARS in all, so that the line a skipped file gets stays one readable line."""
    text = SHORT.repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS - 3]}..."


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
    axpby GFLOP/s per machine and backend, and each machine's points under its own roofs (`roofline_figures`)."""
    import plotly.io as pio

    if not machines:
        raise ValueError("no machine to show")
    heads = ("machine", "op", "backend", "n", "dtype", "median", "GFLOP/s", "GB/s", "of peak")
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in (
            m.name, r["op"], r["backend"], f"{r['n']:,}" if isinstance(r["n"], int) else r["n"], r["dtype"],
            format_seconds(r["median_s"]), _num(r.get("gflops")), _num(r.get("gbps")),
            format_fraction(r.get("fraction_of_peak"))))
        + "</tr>" for m in machines for r in m.results)
    charts = [pio.to_html(bars_figure(machines), include_plotlyjs=True, full_html=False)]
    charts += [pio.to_html(fig, include_plotlyjs=False, full_html=False)
               for m in machines for fig in roofline_figures(m)]
    table = (f"<table><thead><tr>{''.join(f'<th>{h}</th>' for h in heads)}</tr></thead><tbody>{rows}</tbody>"
             "</table>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Our machines side by side</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}</style>"
            f"</head><body><h1>Our machines side by side</h1><p>{len(machines)} machine(s), each measured by "
            "<code>python -m helpers bench --json</code>.</p><h2>Every result</h2>" + table
            + "<h2>GFLOP/s by machine and backend</h2>" + charts[0]
            + "<h2>Each machine under its own roofs</h2><p>One roofline for each device of a machine with roofs on "
              "file, with the points measured on it: Python loops and NumPy on the CPU, CuPy on the GPU, JAX where its "
              "platform was. The flat roofs are the device's peaks (the CPU's estimated from its cores, clock and "
              "vector units; an accelerator's published, one per dtype). The slanted one is its memory's bandwidth "
              "(the CPU's measured by bench with one thread: a point above it read its data from the caches, or on "
              "several cores at once).</p>" + "".join(charts[1:]) + "</body></html>")


def bars_figure(machines: Sequence[Machine]) -> Any:
    """GFLOP/s of matmul and of axpby, a bar per machine and backend (log scale)."""
    from plotly.subplots import make_subplots

    from ..core.style import TEMPLATE, colour

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


#: The kind of device each backend of bench runs on ("loops" and "numpy" the CPU, "cupy" the first GPU); JAX runs on
#: its platform (hardware.jax_platform: "cpu", "gpu" or "tpu"), on the first device of that kind.
BACKEND_DEVICES = {"loops": "cpu", "numpy": "cpu", "cupy": "gpu"}


def roofline_figures(machine: Machine) -> list[Any]:
    """One `plots.roofline` for each of the machine's devices with roofs on file (its CPU, its first GPU and TPU
    with published peaks), with the points of the backends that ran on it."""
    from ..figures.plots import roofline
    from ..model.roofline import roofs

    figures = []
    for kind, device in _devices(machine.hardware):
        points = [_timing(r) for r in machine.results if _ran_on(r["backend"], machine.hardware) == kind
                  and _drawable(r)]
        drawn = roofs(device)
        figures.append(roofline(device, points, title=f"{machine.name}: {drawn.device}",
                                dtype=drawn.compute[0].dtype))
    return figures


def _devices(hardware: dict[str, Any]) -> list[tuple[str, Peak | specs.DeviceSpec]]:
    """(kind, device) for the CPU of a bench file's `hardware` and its first GPU and TPU, those with roofs on file."""
    devices = [("cpu", cpu)] if (cpu := _cpu(hardware)) else []
    for accelerator in hardware.get("accelerators") or []:
        spec = _published(accelerator)
        if spec and spec.kind not in dict(devices):
            devices.append((spec.kind, spec))
    return devices


def _cpu(hardware: dict[str, Any]) -> Peak | None:
    """The CPU of a bench file's `hardware`: its estimated peak and measured bandwidth; None without both."""
    if not _roofed(hardware.get("peak_fp32"), hardware.get("bandwidth")):
        return None
    formula = hardware.get("peak_formula") or "from its cores, clock and vector units"
    return Peak(f"CPU: {hardware.get('cpu_model') or '?'}", hardware["peak_fp32"], hardware["bandwidth"],
                f"estimated: {formula}")


def _published(accelerator: dict[str, Any]) -> specs.DeviceSpec | None:
    """A GPU or TPU of a bench file as the published spec it was written from: its peaks (FLOP/s per dtype) that make
    a roof, bandwidth and source, memory not read here (NaN); None for another kind or without a roof."""
    kind, bandwidth = accelerator.get("kind"), accelerator.get("peak_bandwidth")
    peaks = {dtype: flops for dtype, flops in (accelerator.get("peak_flops") or {}).items()
             if _roofed(flops, bandwidth)}
    if kind not in ("gpu", "tpu") or not peaks:
        return None
    return specs.DeviceSpec(accelerator.get("name") or kind.upper(), kind, peaks, bandwidth, memory_bytes=float("nan"),
                            where="", source=accelerator.get("source") or "not named in the file")


def _roofed(peak: Any, bandwidth: Any) -> bool:
    """Whether a peak and a bandwidth from a bench file make a roof: both, and their ridge, numbers to draw."""
    return _drawn(peak, bandwidth) and _drawn(peak / bandwidth)


#: What a number of a bench file may be to be drawn on a log-log roofline: far from a float's limits, so that the
#: plot's margins around it (a factor of 30) neither underflow nor overflow. Real figures are far inside.
DRAWN = (1e-100, 1e100)


def _drawn(*values: Any) -> bool:
    """Whether every value is a number inside DRAWN (None, 0 and infinity are not)."""
    return all(_number(value) and DRAWN[0] < value < DRAWN[1] for value in values)


def _ran_on(backend: str, hardware: dict[str, Any]) -> str | None:
    """The kind of device `backend` ran on in bench ('cpu', 'gpu', 'tpu'); None when the file does not say."""
    return hardware.get("jax_platform") if backend == "jax" else BACKEND_DEVICES.get(backend)


def _drawable(result: dict[str, Any]) -> bool:
    """Whether a result has a point on a roofline: its time and rates, its FLOPs and bytes per call (as `_timing`
    takes them) and their ratio, the intensity, all numbers to draw."""
    if not _drawn(result.get("median_s"), result.get("gflops"), result.get("gbps")):
        return False
    flops, moved = (result[key] * 1e9 * result["median_s"] for key in ("gflops", "gbps"))
    return _drawn(flops, moved, flops / moved)


def _timing(result: dict[str, Any]) -> Timing:
    """A result of a bench file as the Timing plots draw: its median the one sample, its FLOPs and bytes per call
    from its rates (bench's own: FLOPs / median / 1e9 is its GFLOP/s)."""
    median = result["median_s"]
    return Timing(f"{result['op']} {result['backend']}", result["backend"], result["dtype"], np.array([median]), 1,
                  float("nan"), flops=result["gflops"] * 1e9 * median, bytes=result["gbps"] * 1e9 * median,
                  n=result["n"])


def _num(x: Any) -> str:
    """A rate (GFLOP/s, GB/s) of a bench file: 3 significant digits, thousands separated; '-' for none."""
    return "-" if not _number(x) else f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
