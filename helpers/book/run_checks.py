"""The rules an executed chapter is held to beyond `claims.problems`: what its printed numbers and sentences may say.

Every recorded run (docs/runs/, tests/test_recorded_runs.py), the GPU suite's runs of the chapters and
`python -m helpers notebooks record` judge a run by `findings(cells, devices)`. Each rule reads the text a learner
sees, so it also judges runs recorded before a chapter stated its bounds and outcomes through `h.claim`:

- problem: an error, a claim that printed False, a traceback, a printed line ending in False (`claims.problems`).
- over-peak: a printed share of a peak or roof above 100% (more than a roof is a bug, never a result).
- bound-beaten: a measurement faster than an "at most X GFLOP/s" (or GB/s) the same cell printed for the same thing.
- factor: "N x too small" (or too large, ...) where N is 1 or less, or where the output printed two times and they
  do not differ by N.
- prediction-raced: a line that races a prediction for a device the run is on ("the H200 (prediction) beats ...").
- prediction-claimed: a claim about the model's prediction for a device the run is on (claim the measurement).
- warning: a Python warning other than those in ALLOWED_WARNINGS.

docs/architecture.md says what each rule cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..learning.claims import CLAIM_KEY, problems

#: Every rule, by name, in a line.
RULES = {
    "problem": "an error, a claim that printed False, a traceback or a printed line ending in False",
    "over-peak": "a printed share of a peak or roof above 100%",
    "bound-beaten": "a measurement faster than an 'at most' bound the same cell printed for it",
    "factor": "an 'N x too small' (or too large) that the printed numbers contradict",
    "prediction-raced": "a prediction for a device the run is on, raced against a measurement",
    "prediction-claimed": "a claim about the model's prediction for a device the run is on",
    "warning": "a warning that is not in ALLOWED_WARNINGS",
}

#: The warnings a run may keep, and why each says nothing wrong about the chapter.
ALLOWED_WARNINGS = {
    "NoisyTimingWarning": "the samples of one timing spread: another program shared the machine for a moment. A "
                          "run recorded once on a shared or virtual host may show it; the chapter's code and text "
                          "are not wrong (notebooks execute never stores one in notebooks/, and reruns instead)",
    "BusyMachineWarning": "a timing ran far below what this machine's own calibration did: something else held the "
                          "cores (another program, or more BLAS threads than free cores). The warning tells the "
                          "learner what to do; it says nothing wrong about the chapter",
}


@dataclass(frozen=True)
class Finding:
    """One thing a run printed that breaks a rule: the cell, the rule, the line as printed, and why it breaks it."""

    cell: int
    rule: str
    text: str
    why: str

    def key(self) -> tuple[int, str, str]:
        """What identifies the finding in a list of known ones: cell, rule and text (not the explanation)."""
        return self.cell, self.rule, self.text

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.rule}: {self.text!r}: {self.why}"


def findings(cells: Sequence[Any], devices: Iterable[str] = ()) -> list[Finding]:
    """Every rule's findings in the executed `cells` of a chapter, in cell order. `devices`: the names the run's
    accelerators go by (as the chapters print them: 'NVIDIA H200'); none for a run on a CPU."""
    names = tuple(name for name in devices if name)
    found: list[Finding] = []
    for index, cell in enumerate(cells):  # a cell without outputs (markdown) has nothing to find
        found += _problems(index, cell) + _warnings(index, cell) + _over_peak(index, cell)
        found += _bounds_beaten(index, cell) + _factors(index, cell)
        found += _predictions_raced(index, cell, names) + _predictions_claimed(index, cell, names)
    return found


# ---------------------------------------------------------------------------------------------------------------
# What a cell printed


def _joined(value: Any) -> str:
    return value if isinstance(value, str) else "".join(value) if isinstance(value, list) else ""


def _texts(cell: Any, claims_too: bool = False) -> list[str]:
    """Each text output of `cell` (a stream, or a display's text/plain), claims left out unless `claims_too`."""
    out = []
    for output in cell.get("outputs", []):
        if not claims_too and CLAIM_KEY in output.get("metadata", {}):
            continue
        if output.get("output_type") == "stream":
            out.append(_joined(output.get("text", "")))
        elif "text/plain" in output.get("data", {}):
            out.append(_joined(output["data"]["text/plain"]))
    return out


def _lines(cell: Any) -> list[str]:
    return [line for text in _texts(cell) for line in text.splitlines()]


NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
TIME = re.compile(rf"(?<![\w.]){NUMBER}\s?(ns|µs|μs|us|ms|s|min)(?![\w/])")
SECONDS = {"ns": 1e-9, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
RATE = re.compile(rf"(?<![\w.]){NUMBER}\s?([GT])(FLOP|B)/s\b")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _times(text: str) -> list[float]:
    """Every duration printed in `text`, in seconds."""
    return [_number(value) * SECONDS[unit] for value, unit in TIME.findall(text)]


def _rates(text: str) -> dict[str, float]:
    """The first rate of each kind printed in `text`: {'FLOP': FLOP/s, 'B': bytes/s}."""
    found: dict[str, float] = {}
    for value, scale, kind in RATE.findall(text):
        found.setdefault(kind, _number(value) * (1e9 if scale == "G" else 1e12))
    return found


def _rate_text(kind: str, per_second: float) -> str:
    return f"{per_second / 1e9:,.0f} G{kind}/s"


# ---------------------------------------------------------------------------------------------------------------
# The rules


def _problems(index: int, cell: Any) -> list[Finding]:
    """claims.problems, one finding per problem it names."""
    return [Finding(index, "problem", text.split(": ", 1)[1], "a learner sees this go wrong")
            for text in problems([cell])]


WARNING = re.compile(r"^.*?:\d+: ([A-Z]\w*Warning): (.*)$", re.M)


def _warnings(index: int, cell: Any) -> list[Finding]:
    """Python warnings printed on stderr whose category is not in ALLOWED_WARNINGS."""
    printed = "".join(_joined(o.get("text", "")) for o in cell.get("outputs", [])
                      if o.get("output_type") == "stream" and o.get("name") == "stderr")
    return [Finding(index, "warning", f"{category}: {message.strip()}",
                    f"{category} is not a warning a run may keep (ALLOWED_WARNINGS lists them, with why)")
            for category, message in WARNING.findall(printed) if category not in ALLOWED_WARNINGS]


SHARE = re.compile(rf"(?<![\w.]){NUMBER}% of [^%\n]*?\b(peak|roof)\b")
#: A line that says its number is wrong on purpose: the async trap's "taken at face value it would mean ...".
HYPOTHETICAL = re.compile(r"\bwould\b|\bwrong\b|\bface value\b", re.I)


def _over_peak(index: int, cell: Any) -> list[Finding]:
    """Lines that give a share of a peak or roof above 100% (not those that call the number wrong)."""
    return [Finding(index, "over-peak", line.strip(), f"{share}% of a {what}: more than a {what} is a bug")
            for line in _lines(cell) if not HYPOTHETICAL.search(line)
            for share, what in SHARE.findall(line) if _number(share) > 100]


BOUND = re.compile(rf"\bat most {NUMBER}\s?([GT])(FLOP|B)/s\b")
#: A cell that prints one of these times matrix products: a row "label, n = N" of it did 2 N^3 FLOPs.
MATMUL = re.compile(r"\bmatmul|\bmatrix (?:product|multipl)|\bGEMM\b|\bcuBLAS\b| @ ")
SIZE = re.compile(r"\bn = (\d[\d,]*)\b")
#: A row of a table of predictions beside measurements (cuda.GPU.side_by_side): label, predicted, measured, ratio.
SIDE_BY_SIDE = re.compile(rf"^(\S.*?)\s{{2,}}{NUMBER}\s?(ns|µs|ms|s)\s+{NUMBER}\s?(ns|µs|ms|s)\s+[\d.,]+x\s*$")
#: Slack for rounding: a bound and a rate each printed to 3 or 4 significant digits.
ROUNDING = 1.01


def _subject(text: str) -> str:
    """What a line is about, for matching a bound with a measurement: lower case, one space, no ' on the ...'."""
    text = re.split(r"\s+on the\s+|\s+\[|:", text.strip(), maxsplit=1)[0]
    return " ".join(text.lower().split())


def _bounds(lines: list[str]) -> list[tuple[str, str, float, str]]:
    """(subject, kind, bound per second, line) for each 'at most X GFLOP/s' line. An indented line's subject is
    the heading above it (the last unindented line ending in ':'); another line's is what comes before its ':'."""
    found, heading = [], ""
    for line in lines:
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            heading = line
        for value, scale, kind in BOUND.findall(line):
            subject = _subject(heading if line[:1].isspace() and heading else line)
            found.append((subject, kind, _number(value) * (1e9 if scale == "G" else 1e12), line.strip()))
    return found


def _measured_rates(lines: list[str], matmul: bool) -> list[tuple[str, str, float, str]]:
    """(subject, kind, per second, how) for each measurement a cell printed: a rate on a line that says
    'measured', and, in a cell about matrix products, a side-by-side row 'label, n = N' (2 N^3 FLOPs)."""
    found = []
    for line in lines:
        if "measured" in line and not BOUND.search(line):
            found += [(_subject(line), kind, rate, f"measured {_rate_text(kind, rate)}")
                      for kind, rate in _rates(line).items()]
        row = SIDE_BY_SIDE.match(line)
        size = SIZE.search(row.group(1)) if row and matmul else None
        if size:
            n, seconds = _number(size.group(1)), _number(row.group(4)) * SECONDS[row.group(5)]
            rate = 2 * n**3 / seconds
            found.append((_subject(row.group(1).split(",")[0]), "FLOP", rate,
                          f"measured {row.group(4)} {row.group(5)} for 2 x {n:,.0f}^3 FLOPs = "
                          f"{_rate_text('FLOP', rate)}"))
    return found


def _bounds_beaten(index: int, cell: Any) -> list[Finding]:
    """'at most X' bounds that a measurement of the same subject in the same cell beats."""
    lines = _lines(cell)
    measured = _measured_rates(lines, bool(MATMUL.search("\n".join(lines))))
    return [Finding(index, "bound-beaten", line, f"{how}, over the bound of {_rate_text(kind, bound)}")
            for subject, kind, bound, line in _bounds(lines)
            for what, measured_kind, rate, how in measured
            if measured_kind == kind and what.startswith(subject) and rate > bound * ROUNDING]


FACTOR = re.compile(rf"(?<![\w.]){NUMBER}x too (?:small|little|large|big|low|high|few|many|much|slow|fast|short|"
                    r"long)\b")


def _factor_agrees(factor: str, times: list[float]) -> bool:
    """Whether the larger of two `times` is `factor` times the smaller, as printed (to the factor's decimals, with
    room for times printed to 3 digits)."""
    decimals = len(factor.split(".")[1]) if "." in factor else 0
    low, high = sorted(times)
    ratio = high / low if low > 0 else float("inf")
    return abs(ratio - _number(factor)) <= 0.5 * 10**-decimals + 0.01 * ratio


def _factors(index: int, cell: Any) -> list[Finding]:
    """'N x too small' (or large, ...) where N is at most 1 (no difference, or the other way round), or where the
    same output printed exactly two times (the two the factor compares) and they do not differ by N."""
    found = []
    for text in _texts(cell):
        times = _times(text)
        for line in text.splitlines():
            for factor in FACTOR.findall(line):
                if _number(factor) <= 1:
                    why = f"{factor}x is no difference (or the other way round): nothing is too small by it"
                elif len(times) == 2 and not _factor_agrees(factor, times):
                    why = f"the two times printed here ({times[0]:.3g} s, {times[1]:.3g} s) do not differ by {factor}x"
                else:
                    continue
                found.append(Finding(index, "factor", line.strip(), why))
    return found


RACE = re.compile(r"\b(?:beats?|beaten|wins?|won|outruns?|loses? to|faster than|slower than)\b")


def _predicted(name: str) -> re.Pattern[str]:
    """'<name> (prediction' or '<name> (predicted': a figure the model gives for that device."""
    return re.compile(rf"{re.escape(name)}\s*\((?:prediction|predicted)\b")


def _predictions_raced(index: int, cell: Any, names: tuple[str, ...]) -> list[Finding]:
    """Printed lines that race a prediction for a device the run is on against anything: where the device is
    present, its measurement goes beside the prediction, and no winner comes from the prediction."""
    found = []
    for line in _lines(cell):
        name = next((name for name in names if _predicted(name).search(line)), None) if RACE.search(line) else None
        if name:
            found.append(Finding(index, "prediction-raced", line.strip(),
                                 f"the {name} is present: print its measurement beside the prediction, not a race "
                                 "won or lost by the prediction"))
    return found


PREDICTS = re.compile(r"\bpredict(?:s|ed|ion|ions)?\b", re.I)


def _predictions_claimed(index: int, cell: Any, names: tuple[str, ...]) -> list[Finding]:
    """Claims about the model's prediction for a device the run is on that say nothing of its measurement."""
    found = []
    for output in cell.get("outputs", []):
        claimed = output.get("metadata", {}).get(CLAIM_KEY)
        if not claimed:
            continue
        statement = claimed["statement"]
        named = next((name for name in names if re.search(rf"\b{re.escape(name)}\b", statement)), None)
        if named and PREDICTS.search(statement) and "measur" not in statement.lower():
            found.append(Finding(index, "prediction-claimed", statement,
                                 f"the {named} is present: claim what it measured (beside the prediction), not "
                                 "what the model predicts for it"))
    return found

