"""Run the test suite on a machine made about 4x slower: one CPU, shared with busy processes.

    python tests/slow_machine.py [--busy N] [--no-benchmark] [PYTEST ARGS ...]

Every test must pass on a machine 4x slower than the one it was written on (a class's shared machine, Binder, an
old laptop, a slow CI runner). This pins pytest to one CPU, where N processes (3 by default) spin beside it, so
the suite gets about a quarter of one core, against the two cores it has otherwise. It measures the slow-down the
way the README states the executor's speed: `python -m helpers.executor.benchmark`'s seconds before the busy
processes start and again beside them, printed at the end with the suite's own time. Extra arguments go to pytest
(e.g. `tests/test_timing.py -x`). Linux only (it needs os.sched_setaffinity). Run it before adding or changing a
test that times anything; docs/architecture.md ("Tests") says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pinned(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def executor_seconds(cpu: int | None) -> dict[str, float]:
    """The executor benchmark's seconds per kernel at its full sizes (pinned to `cpu` when given)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.json"
        # exit code 1 only says a target was missed, which a slowed machine may do: the JSON has the seconds
        subprocess.run([sys.executable, "-m", "helpers.executor.benchmark", "--json", str(path)], cwd=ROOT,
                       stdout=subprocess.DEVNULL,
                       preexec_fn=None if cpu is None else (lambda: _pinned(cpu)))
        rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    first = {}
    for row in rows:  # the first row of each kernel is the executor at the full size
        if row["engine"] == "executor":
            first.setdefault(row["kernel"], row["seconds"])
    return first


def main(argv: list[str] | None = None) -> int:
    """Measure the executor, start the busy processes, run pytest beside them on one CPU, measure again."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=3, help="spinning processes beside pytest on its CPU (3)")
    parser.add_argument("--no-benchmark", action="store_true", help="skip the executor benchmark before and during")
    args, pytest_args = parser.parse_known_args(argv)
    if not hasattr(os, "sched_setaffinity"):
        print("slow_machine.py needs Linux (os.sched_setaffinity)", file=sys.stderr)
        return 2
    cpu = min(os.sched_getaffinity(0))
    before = {} if args.no_benchmark else executor_seconds(None)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: _pinned(cpu))
                for _ in range(args.busy)]
    try:
        during = {} if args.no_benchmark else executor_seconds(cpu)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT,
                              preexec_fn=lambda: _pinned(cpu)).returncode
        took = time.perf_counter() - start
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    print(f"\nslow machine: pytest on CPU {cpu} beside {args.busy} busy processes: exit {code} in {took:,.0f} s")
    for kernel, seconds in before.items():
        print(f"executor benchmark, {kernel}: {seconds:.3f} s before, {during[kernel]:.3f} s during "
              f"({during[kernel] / seconds:.1f}x slower)")
    return code


if __name__ == "__main__":
    sys.exit(main())
