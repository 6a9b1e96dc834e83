"""helpers.learning.lessons: the pieces chapters 00 and 01 share."""

from __future__ import annotations

import pytest

from helpers.core import project
from helpers.learning import lessons
from helpers.measuring import specs, workloads
from helpers.measuring.cpu import cpu_info


def _text(shown: object) -> str:
    return getattr(shown, "data", shown)  # IPython's Markdown keeps its text in .data


def test_chapter_map_links_every_chapter_with_its_runtime() -> None:
    text = _text(lessons.chapter_map())
    for chapter in project.CHAPTERS:
        assert f"[{chapter.title}]({chapter.file})" in text  # relative to notebooks/, where the reader is
    assert "| TPU |" in text and "| GPU |" in text and "any (CPU is enough)" in text


def test_show_source_is_the_code_that_runs() -> None:
    text = _text(lessons.show_source(workloads.axpby_loops))
    assert text.startswith("```python\ndef axpby_loops(") and text.endswith("\n```")


def test_line_bytecode_finds_the_multiply_add_of_the_inner_loop() -> None:
    names = [ins.opname for ins in lessons.line_bytecode(workloads.matmul_loops, "total +=")]
    assert names.count("BINARY_SUBSCR") == 4  # a[i][p] and b[p][j]
    with pytest.raises(ValueError, match="no line"):
        lessons.line_bytecode(workloads.matmul_loops, "not in the source")


def test_arithmetic_units_imply_the_clock_of_each_peak() -> None:
    cpu, t4, tpu = lessons.arithmetic_units()
    assert cpu.clock_hz == pytest.approx(float(cpu_info().clock_hz.value))  # the CPU row agrees with its formula
    t4_fp32 = specs.get("NVIDIA T4").peak_for("float32")
    assert (t4.device, t4.macs_per_cycle, t4.peak_flops) == ("NVIDIA T4", 2560, t4_fp32)
    assert (tpu.macs_per_cycle, tpu.dtype) == (4 * 128 * 128, "bfloat16")
    assert 1e9 < t4.clock_hz < 2e9 and 1e9 < tpu.clock_hz < 2e9  # published peaks match published unit counts
    table = _text(lessons.units_table([cpu, t4, tpu]))
    assert "T4 datasheet" in table and "| 2,560 |" in table
    assert "TFLOP/s" not in table and f"{t4.peak_flops / 1e12:g}" not in table  # shown before the prompt on peaks


def _units(device: str, macs: int, ghz: float) -> lessons.ArithmeticUnits:
    return lessons.ArithmeticUnits(device, "made up", macs, 2 * macs * ghz * 1e9, "float32", "made up")


def test_peak_ratios_split_each_peak_into_width_and_clock() -> None:
    text = lessons.peak_ratios([_units("this CPU", 64, 4.0), _units("wide", 2560, 1.0), _units("wider", 65536, 2.0)])
    first, second, last = text.splitlines()
    assert first.startswith("wide: 10x this CPU's estimated FP32 peak = 40x its multiply-adds per cycle x 0.25x")
    assert second.startswith("wider: 512x this CPU's estimated FP32 peak = 1,024x its multiply-adds per cycle x 0.50x")
    assert last.endswith("None of them ticks faster than this CPU: they win by starting more multiply-adds on "
                         "every tick.")


def test_peak_ratios_follow_the_numbers_on_a_slow_or_wide_cpu() -> None:
    slow = lessons.peak_ratios([_units("this CPU", 64, 1.0), _units("T4-like", 2560, 1.5)])
    assert "2.6e+02" not in slow and "60x this CPU's" in slow
    assert slow.splitlines()[-1].endswith("T4-like ticks faster than this CPU.")
    wide = lessons.peak_ratios([_units("this CPU", 3072, 1.9), _units("T4-like", 2560, 1.5)])
    assert "0.66x this CPU's estimated FP32 peak = 0.83x its multiply-adds" in wide
    assert "win" not in wide.splitlines()[-1]  # a CPU wider than the accelerator: no claim that width won
    with pytest.raises(ValueError, match="at least 2"):
        lessons.peak_ratios([_units("this CPU", 64, 1.0)])
    with pytest.raises(ValueError, match="arithmetic_units"):
        lessons.peak_ratios(["this CPU", "NVIDIA T4"])


def test_peaks_figure_labels_estimated_and_published_bars() -> None:
    bars = lessons.peaks_figure().data[0]
    assert "this CPU, FP32" in bars.x and "NVIDIA T4, FP32" in bars.x and "TPU v5e, BF16 MXU" in bars.x
    assert all(note.startswith(("estimated", "published")) for note in bars.customdata)


def test_reference_answers() -> None:
    assert lessons.peak_gflops(2, 2.5, 2, 8) == 160
    assert lessons.matmul_flops(3, 5, 7) == 210
    assert lessons.dense_layer_flops(7, 3, 5) == 2 * 7 * 3 * 5 + 7 * 5
    assert lessons.matmul_seconds(1000, 2.0) == pytest.approx(1.0)
