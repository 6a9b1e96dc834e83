"""Small pieces the chapters share: the chapter map, showing the code that runs, CPU vs GPU vs TPU in
numbers, and the reference answers the exercise checks compare against.

    h.lessons.chapter_map()                 # the series as a Markdown table, from helpers.core.project.CHAPTERS
    h.lessons.show_source(h.workloads.matmul_loops)   # the code the notebook runs, not a copy of it
    h.lessons.arithmetic_units()            # this CPU, an NVIDIA T4 and a TPU v5e: multiply-adds per cycle
    h.lessons.peak_ratios(units)            # each accelerator's peak over this CPU's: width x clock
    h.lessons.line_bytecode(fn, "total +=") # the bytecode the interpreter runs for one line of fn
    h.lessons.page_faults(fn, *args)        # page faults per call: fresh memory touched for the first time
    h.lessons.cores_busy(fn, *args)         # CPU time over wall time: how many cores a call keeps busy

The chapter map here is for readers inside notebooks/ (links relative to it, planned chapters marked
"coming"); helpers.book.upkeep writes the README's map, with badges, for maintainers.
"""

from __future__ import annotations

import dis
import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.project import CHAPTERS, TIME_NOTE
from ..core.validate import positive_int, positive_number
from ..measuring import specs
from ..measuring.cpu import BLAS_BEST_EFFICIENCY, CPUInfo, cpu_info


def chapter_map() -> Any:
    """The series as a Markdown table (a plain string outside IPython), each chapter linked."""
    rows = ["| | chapter | what you get | time | runtime |", "|---|---|---|---|---|"]
    for c in CHAPTERS:
        rows.append(f"| {c.file[:2]} | [{c.title}]({c.file}) | {c.promise} | {c.time} | "
                    f"{c.accelerator or 'any (CPU is enough)'} |")
    rows.append(f"\n{TIME_NOTE}")
    return _markdown("\n".join(rows))


def show_source(obj: Callable[..., Any] | type) -> Any:
    """The source code of `obj` as a Markdown code block: what the learner reads is exactly what runs."""
    return _markdown(f"```python\n{textwrap.dedent(_source_lines(obj, 'show_source')[0]).rstrip()}\n```")


def _source_lines(obj: Any, caller: str) -> tuple[str, int]:
    """The source of a Python function or class and its first line, or a ValueError saying why there is none."""
    if not (inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isclass(obj)):
        raise ValueError(f"{caller}() shows a Python function or class; got {type(obj).__name__} {obj!r:.60}")
    try:
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        raise ValueError(f"{caller}(): the source of {obj!r:.60} is not available (defined in a compiled module or "
                         "typed at an interactive prompt)") from None
    return "".join(lines), start


def line_bytecode(fn: Callable[..., Any], text: str) -> list[dis.Instruction]:
    """The bytecode instructions CPython runs for the first source line of `fn` that contains `text`."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"line_bytecode() needs the text of a line of the function, got {text!r}")
    source, start = _source_lines(fn, "line_bytecode")
    lines = source.splitlines(keepends=True)
    target = next((start + i for i, line in enumerate(lines) if text in line), None)
    if target is None:
        raise ValueError(f"text {text!r} is on no line of {fn.__name__}")
    found, line = [], None
    for ins in dis.get_instructions(fn):
        positions = getattr(ins, "positions", None)  # Python 3.11+: every instruction knows its line
        if positions is not None:
            line = positions.lineno
        elif isinstance(ins.starts_line, int) and not isinstance(ins.starts_line, bool):
            line = ins.starts_line  # Python 3.10: only the first instruction of a line says so
        if line == target:
            found.append(ins)
    return found


#: The most calls page_faults and cores_busy make: each one runs the function.
MOST_CALLS = 1000


def _calls(fn: Any, calls: int, name: str) -> int:
    """`calls`, checked, after checking that `fn` can be called."""
    if not callable(fn):
        raise TypeError(f"{name}() measures a function: its first argument must be callable, got "
                        f"{type(fn).__name__} {fn!r:.60}. Pass the function and its arguments, e.g. "
                        f"{name}(np.add, x, y), or wrap an expression: {name}(lambda: 2 * x + 3 * y)")
    calls = positive_int("calls", calls)
    if calls > MOST_CALLS:
        raise ValueError(f"calls must be at most {MOST_CALLS:,} (each one runs the function); got {calls:,}")
    return calls


def page_faults(fn: Callable[..., Any], *args: Any, calls: int = 5) -> float | None:
    """Page faults per call of `fn(*args)`, after one call to warm up; None where the OS does not count them.

    A page fault here is the first touch of a fresh page of memory: the OS stops the program, finds a page and
    fills it with zeros. Counted for the whole process (every thread) with getrusage (Linux and macOS).
    """
    calls = _calls(fn, calls, "page_faults")
    try:
        import resource
    except ImportError:  # Windows
        return None
    from ..core.backend import sync

    sync(fn(*args))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        sync(fn(*args))
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def cores_busy(fn: Callable[..., Any], *args: Any, calls: int = 5) -> float:
    """How many cores `fn(*args)` keeps busy on average: CPU time of the whole process (every thread) over the
    wall-clock time of `calls` calls, after one call to warm up. Threads that spin while they wait count too."""
    import time

    from ..core.backend import sync

    calls = _calls(fn, calls, "cores_busy")
    sync(fn(*args))
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        sync(fn(*args))
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def _markdown(text: str) -> Any:
    try:
        from IPython.display import Markdown
    except ImportError:  # plain Python: the text itself
        return text
    return Markdown(text)


@dataclass(frozen=True)
class ArithmeticUnits:
    """How a device gets its peak: how many multiply-adds it starts per clock cycle, and at what peak."""

    device: str
    design: str  # the hardware that does the arithmetic, in words
    macs_per_cycle: int  # multiply-adds (2 FLOPs each) the whole chip starts per clock cycle
    peak_flops: float  # FLOP/s at that rate
    dtype: str  # the number format of that peak
    source: str  # where the numbers come from

    @property
    def clock_hz(self) -> float:
        """The clock the peak implies: peak / (2 FLOPs x multiply-adds per cycle)."""
        return self.peak_flops / (2 * self.macs_per_cycle)


REFERENCE_DEVICES = (specs.REFERENCE_GPU, specs.REFERENCE_TPU)


def arithmetic_units(cpu: CPUInfo | None = None, devices: Sequence[str] = REFERENCE_DEVICES) -> list[ArithmeticUnits]:
    """This CPU (estimated, FP32) next to published accelerators (their headline dtype), in multiply-adds per cycle."""
    if isinstance(devices, str) or not isinstance(devices, Sequence):
        raise ValueError(f"devices must be a list of device names such as ['NVIDIA T4'], got {devices!r:.40}")
    cpu = cpu or cpu_info()
    lanes = cpu.simd_bits // 32
    cores, units = int(cpu.cores.value), int(cpu.fma_units.value)
    out = [ArithmeticUnits(
        f"this CPU ({cpu.model})",
        f"{cores} cores x {units} FMA units x {lanes} fp32 lanes ({cpu.simd})",
        cores * units * lanes, cpu.peak_fp32, "float32", "estimated here (h.hardware().cpu)")]
    for name in devices:
        spec = specs.get(name)
        if spec.mac_units is None:
            raise ValueError(f"no published count of multiply-add units for {spec.name}")
        design, count = spec.mac_units
        dtype = "float32" if spec.kind == "gpu" else "bfloat16"
        out.append(ArithmeticUnits(spec.name, design, count, spec.peak_for(dtype), dtype, f"published: {spec.source}"))
    return out


def units_table(units: Sequence[ArithmeticUnits]) -> Any:
    """A Markdown table of `arithmetic_units()` without their peaks: design, multiply-adds per cycle, clock, source.

    The peaks are left out so that the table can come before a prompt that asks for their ratio (`peak_ratios`
    answers it).
    """
    rows = ["| device | what does the arithmetic | multiply-adds per cycle | clock | source |",
            "|---|---|---:|---:|---|"]
    rows += [f"| {u.device} | {u.design} | {u.macs_per_cycle:,} | {u.clock_hz / 1e9:.2f} GHz | {u.source} |"
             for u in units]
    return _markdown("\n".join(rows))


def peak_ratios(units: Sequence[ArithmeticUnits]) -> str:
    """Each device's peak over the first one's (this CPU's) = its width (multiply-adds per cycle) x its clock, and
    a last line on which of the two made the difference: printed from these numbers, so it holds on any CPU."""
    if isinstance(units, str) or not all(isinstance(u, ArithmeticUnits) for u in units):
        raise ValueError(f"peak_ratios() takes the list h.lessons.arithmetic_units() returns; got {units!r:.60}")
    if len(units) < 2:
        raise ValueError(f"peak_ratios() compares devices with the first one: it needs at least 2, got {len(units)}")
    base, *others = units
    lines, widths, clocks = [], [], []
    for u in others:
        widths.append(u.macs_per_cycle / base.macs_per_cycle)
        clocks.append(u.clock_hz / base.clock_hz)
        lines.append(f"{u.device}: {_times(u.peak_flops / base.peak_flops)}x this CPU's estimated FP32 peak = "
                     f"{_times(widths[-1])}x its multiply-adds per cycle x {clocks[-1]:.2f}x its clock "
                     f"({u.dtype} peak, {u.source})")
    faster = [u.device for u, c in zip(others, clocks, strict=True) if c > 1]
    span = (f"Against this CPU: {_times(min(widths))}x to {_times(max(widths))}x the multiply-adds per cycle, at "
            f"{min(clocks):.2f}x to {max(clocks):.2f}x its clock.")
    if faster:
        span += f" {' and '.join(faster)} {'tick' if len(faster) > 1 else 'ticks'} faster than this CPU."
    elif min(widths) > 1:
        span += " None of them ticks faster than this CPU: they win by starting more multiply-adds on every tick."
    lines.append(span)
    return "\n".join(lines)


def clock_story(cpu: CPUInfo) -> str:
    """Which clock this CPU's peak uses, and why, in short lines from its numbers: the stated clock, one core's
    BLAS rate, the least clock that rate needs, and the clock chosen (the report's clock line, unpacked)."""
    if not isinstance(cpu, CPUInfo):
        raise ValueError(f"clock_story() takes h.hardware().cpu; got {cpu!r:.60}")
    clock = float(cpu.clock_hz.value) / 1e9
    stated = cpu.nominal_clock_hz
    lines = [f"The operating system states {float(stated.value) / 1e9:.2f} GHz ({stated.source})." if stated
             else "No clock is stated for this CPU."]
    rate, per_cycle = cpu.blas_fp32_per_core, cpu.blas_fp32_per_cycle
    if rate is None or per_cycle is None or cpu.matrix_unit:
        return "\n".join([*lines, f"The peak uses {clock:.2f} GHz: {cpu.clock_hz.source}."])
    least = float(rate.value) / (float(per_cycle.value) * BLAS_BEST_EFFICIENCY) / 1e9
    lines += [f"One core ran NumPy's BLAS at {float(rate.value) / 1e9:,.1f} GFLOP/s. Its kernels can start "
              f"{per_cycle.value} FP32 FLOP a cycle, and a tuned BLAS reaches at most {BLAS_BEST_EFFICIENCY:.0%} "
              "of that.",
              f"So that rate needs a clock of at least {least:.2f} GHz."]
    if cpu.clock_hz.source.startswith("inferred"):
        lines.append(f"The stated clock is too low for it, so the peak uses {clock:.2f} GHz: inferred, a little "
                     "above that least clock, not stated by anyone.")
    else:
        lines.append(f"The stated clock covers it, so the peak uses {clock:.2f} GHz.")
    lines.append("Every '% of peak' in the series is judged against the peak this clock gives: an estimate.")
    return "\n".join(lines)


def _times(ratio: float) -> str:
    """A ratio for 'Nx': whole numbers from 10 up (1,024), two significant digits below (3.2, 0.83)."""
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"


def peaks_figure(cpu: CPUInfo | None = None, devices: Sequence[str] = REFERENCE_DEVICES) -> Any:
    """Bars of peak TFLOP/s on a log axis: this CPU (estimated here) beside published accelerator peaks."""
    import plotly.graph_objects as go

    from ..core.style import BACKEND_COLOURS, TEMPLATE

    cpu = cpu or cpu_info()
    labels, values, notes, colours = [], [], [], []

    def bar(label: str, flops: float, note: str, colour: str) -> None:
        labels.append(label)
        values.append(flops / 1e12)
        notes.append(note)
        colours.append(colour)

    cpu_colour = BACKEND_COLOURS["numpy"]  # the series' colours: NumPy (CPU), CuPy (GPU), JAX (TPU)
    bar("this CPU, FP64", cpu.peak_fp64, "estimated here (half the FP32 lanes)", cpu_colour)
    bar("this CPU, FP32", cpu.peak_fp32, f"estimated here: {cpu.formula()}", cpu_colour)
    for name in devices:
        spec = specs.get(name)
        colour = BACKEND_COLOURS["cupy" if spec.kind == "gpu" else "jax"]
        for dtype, flops in spec.peak_flops.items():
            what = {"float32": "FP32", "tf32": "TF32 tensor", "float16": "FP16 tensor",
                    "bfloat16": "BF16 MXU" if spec.kind == "tpu" else "BF16 tensor"}[dtype]
            bar(f"{spec.name}, {what}", flops, f"published: {spec.source}", colour)
    fig = go.Figure(go.Bar(x=labels, y=values, marker_color=colours, customdata=notes,
                           text=[f"{v:,.3g}" for v in values], textposition="outside",
                           hovertemplate="%{x}: %{y:,.3g} TFLOP/s<br>%{customdata}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, yaxis_title="TFLOP/s (log scale)", yaxis_type="log", height=420,
                      showlegend=False, margin=dict(t=60, b=40),
                      title="Peak TFLOP/s: this CPU (estimated here) and published accelerator peaks")
    return fig


# Reference answers the exercise checks compare a learner's code with. They live here, not in the notebook,
# so that a check cell does not give the answer away.

def peak_gflops(cores: int, ghz: float, fma_units: int, lanes: int) -> float:
    """Peak GFLOP/s: cores x clock (GHz) x FMA units x SIMD lanes x 2 FLOPs per FMA."""
    return (positive_int("cores", cores) * positive_number("ghz (clock in GHz)", ghz)
            * positive_int("fma_units", fma_units) * positive_int("lanes", lanes) * 2)


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an (m, k) @ (k, n) product: m*n outputs, each k multiplies and k adds."""
    return 2 * positive_int("m", m) * positive_int("k", k) * positive_int("n", n)


def dense_layer_flops(batch: int, n_in: int, n_out: int) -> int:
    """FLOPs of a dense layer's forward pass, x @ W + b, for x of shape (batch, n_in)."""
    batch, n_in, n_out = positive_int("batch", batch), positive_int("n_in", n_in), positive_int("n_out", n_out)
    return 2 * batch * n_in * n_out + batch * n_out


def matmul_seconds(n: int, gflops: float) -> float:
    """Seconds an n x n by n x n product takes at a rate of `gflops` GFLOP/s."""
    return 2 * positive_int("n", n) ** 3 / (positive_number("gflops", gflops) * 1e9)
