"""Command line of the series: `python -m helpers bench | gpu-report | hardware | backends | classroom | notebooks ...`.

Installed as `loops-to-tpus` too. A mistake on the command line gets one line on stderr (what was wrong and
what is accepted) and exit code 2: no usage dump, no traceback. bench checks before it runs what it can (output
paths, the same path twice: 2; sizes that do not fit in memory: 1); a failure during or after the run is one line
and exit code 1, Ctrl-C one line `interrupted` and exit code 130.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from .core.files import write_output

if TYPE_CHECKING:
    from .measuring.bench import TooLarge

#: How the user called us, for error messages: `python -m helpers` or the `loops-to-tpus` console script.
PROG = "python -m helpers" if sys.argv and sys.argv[0].endswith("__main__.py") else "loops-to-tpus"
COMMANDS = ("bench", "gpu-report", "hardware", "backends", "classroom", "site", "notebooks")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are a single line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Print `prog: error: message` on one line (argparse would add the usage) and exit 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")

    def reject_extra(self, extra: Sequence[str]) -> NoReturn:
        """Error for arguments this (sub)command does not take, listing the options it does take."""
        options = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        self.error(f"unrecognized arguments: {' '.join(extra)} (accepted: {', '.join(options)})")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


#: The longest --budget accepted: a minute per measurement is already far more than any result needs.
MAX_BUDGET = 60.0


def _positive_seconds(text: str, most: float = MAX_BUDGET) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= most):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds between 0 and {most:g}")
    return value


def _time_limit(text: str) -> float:
    """A run's time limit: seconds, up to a day."""
    return _positive_seconds(text, most=86_400)


def _backend_list(text: str) -> list[str]:
    from .measuring.bench import NAMES

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in NAMES]
    if unknown or not names:
        what = f"unknown backend {unknown[0]!r}" if unknown else "no backend given"
        raise argparse.ArgumentTypeError(f"{what}; accepted: a comma-separated list of {', '.join(NAMES)}")
    return names


#: The helpers package (its code, kernels and data) and, in a clone, the repository around it.
PACKAGE = os.path.dirname(os.path.realpath(__file__))
REPOSITORY = os.path.dirname(PACKAGE)
#: The endings of the files an output may replace in the repository: what the commands write (gpu-report's JSON
#: is committed as docs/gpu-report-*.json, and a new run replaces it).
OUTPUT_ENDINGS = (".json", ".html", ".htm")


def _inside(path: str, folder: str) -> bool:
    """Whether the resolved `path` is `folder` or inside it."""
    return os.path.commonpath([path, folder]) == folder


def _replaced_problem(text: str) -> str | None:
    """Why an output must not go to `text` although it could be written: it would replace a file the helpers read
    (the package's code, kernels and data; what earlier runs measured, in the cache) or a file of the repository
    that no command writes (a chapter, the README, a test). None where it may."""
    from .measuring.cpu import cache_file

    path = os.path.realpath(text)
    kept = cache_file()
    if _inside(path, PACKAGE):
        return f"it is inside the helpers package ({PACKAGE}: its code, kernels and data, which the commands read)"
    if kept is not None and _inside(path, os.path.realpath(kept.parent)):
        return f"it is in the series' cache ({kept.parent}: what earlier runs measured, which the commands read)"
    if os.path.isfile(path) and os.path.isdir(os.path.join(REPOSITORY, "notebooks")) and _inside(path, REPOSITORY) \
            and not path.endswith(OUTPUT_ENDINGS):
        return f"it is a file of the repository ({os.path.relpath(path, REPOSITORY)}), not an earlier output"
    return None


def _output_path(text: str) -> str:
    """A file --json or --html can write, checked before the run: its folder exists, it can be written there, it
    is not a symbolic link, and it replaces no file the helpers read or the repository holds (`_replaced_problem`).

    The check opens the path for appending, so what the system would refuse after the run (permissions, a
    read-only disk) is refused now; a file created by the check is removed again, and a named pipe is not waited on
    (nothing reading it is an error too: the write would hang). A regular file is replaced by a new one
    (files.write_output), so its folder must take new files too.
    """
    path = os.path.abspath(text)
    folder = os.path.dirname(path)
    if os.path.islink(text):  # a link may lead anywhere, into the repository too: it is never written through
        raise argparse.ArgumentTypeError(f"{text!r} is a symbolic link (to {os.readlink(text)!r}); give the file's "
                                         "own path: a link is not written through")
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file name")
    if not os.path.exists(folder):
        raise argparse.ArgumentTypeError(f"directory {folder!r} does not exist (it is not created for you)")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {folder!r} is not a directory")
    replaced = _replaced_problem(text)
    if replaced:
        raise argparse.ArgumentTypeError(f"will not write {text!r}: {replaced}; give a path of its own")
    existed = os.path.lexists(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o666))
    except OSError as exc:
        why = "a named pipe that nothing reads" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {why}") from None
    if not existed:
        with contextlib.suppress(OSError):
            os.remove(path)
    elif os.path.isfile(path) and not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: it is replaced by a new file, and its folder "
                                         f"{folder!r} takes none")
    return text


def build_parser() -> Parser:
    """The parser of every command; each subparser sets `parser` so its own errors can be raised later."""
    from .measuring.bench import DEFAULT_BUDGET, DEFAULT_SIZES, QUICK_BUDGET, QUICK_SIZES
    from .measuring.workloads import DTYPES

    parser = Parser(prog=PROG, description="From Loops to TPUs: measure why GPUs and TPUs speed up deep learning.")
    sub = parser.add_subparsers(dest="command", metavar="command")
    d, q = DEFAULT_SIZES, QUICK_SIZES
    bench = sub.add_parser(
        "bench", help="time matmul and axpby on every usable backend and in Python loops",
        description=(f"Time matmul (n={d.matmul:,}; loops n={d.matmul_loops}) and axpby (n={d.axpby:,}; loops "
                     f"n={d.axpby_loops:,}) on every usable backend; print GFLOP/s, GB/s, fraction of peak and "
                     "speed-up over Python loops. Progress goes to stderr, the table to stdout."))
    bench.add_argument("--size", type=_positive_int, metavar="N",
                       help=f"matmul side n for the array backends (default {d.matmul}, --quick {q.matmul})")
    bench.add_argument("--dtype", choices=DTYPES, default="float32", help="float type (default float32)")
    bench.add_argument("--backends", type=_backend_list, metavar="LIST",
                       help="comma-separated subset of loops,numpy,jax,cupy (default: all usable here)")
    bench.add_argument("--budget", type=_positive_seconds, metavar="SECONDS",
                       help=f"timing budget per measurement (default {DEFAULT_BUDGET:g}, --quick {QUICK_BUDGET:g})")
    bench.add_argument("--quick", action="store_true",
                       help=f"small sizes and budget, a smoke test (matmul n={q.matmul}, axpby n={q.axpby:,})")
    bench.add_argument("--json", type=_output_path, metavar="PATH", help="also write the hardware and results as JSON")
    bench.add_argument("--html", type=_output_path, metavar="PATH",
                       help="also write a self-contained HTML report (works offline)")
    bench.add_argument("--name", type=_machine_name, metavar="NAME",
                       help="this machine's name in the --json file (classroom merge shows it)")
    bench.set_defaults(parser=bench)
    _gpu_report_parser(sub)
    for name, text in (("hardware", "what this machine has, with peak FLOP/s and their sources"),
                       ("backends", "which of numpy, jax and cupy can run here, and why not")):
        command = sub.add_parser(name, help=text, description=text)
        command.set_defaults(parser=command)
    classroom = sub.add_parser("classroom", help="for a class: learner copies of the chapters, every machine's "
                                                "bench results in one page",
                               description="Tools for teaching with the series (docs/teaching.md).")
    what = classroom.add_subparsers(dest="classroom", metavar="copies|merge")
    _folder_command(what, "copies", "write every chapter as a hand-out, its predictions' answers cleared",
                    "Write every chapter into DIR with the outputs after each prediction prompt, and of every "
                    "measurement, cleared; plus a zip of them.", "the folder to write (created if missing)")
    merge = what.add_parser("merge", help="put the bench --json files of a class in one offline page",
                            description="Read the files `python -m helpers bench --json` wrote on each machine and "
                                        "write one self-contained page: a table, GFLOP/s by machine and backend, "
                                        "and each machine under its own roofs. Unusable files are named and skipped.")
    merge.add_argument("files", metavar="FILE", nargs="+", help="bench --json files, one per machine")
    merge.add_argument("--html", type=_output_path, metavar="PATH", required=True,
                       help="the page to write (not one of the FILEs, not a symbolic link)")
    merge.set_defaults(parser=merge)
    classroom.set_defaults(parser=classroom)
    site = sub.add_parser("site", help="build the series as an offline HTML book: site build DIR",
                          description="Tools for reading the series without running it.")
    site_what = site.add_subparsers(dest="site", metavar="build")
    _folder_command(site_what, "build", "write every chapter, the chapter map and the teacher guide as HTML",
                    "Write the stored chapters as an offline HTML book into DIR (figures interactive, plotly.js "
                    "copied in); serve it with python -m http.server", "the folder to write, outside the repository")
    site.set_defaults(parser=site)
    sub.add_parser("notebooks", help="keep the notebooks in shape: sync | check | execute (see notebooks --help)")
    return parser


def _gpu_report_parser(sub: argparse._SubParsersAction) -> None:
    """gpu-report [--json PATH] [--quick] [--budget SECONDS] [--time-limit SECONDS]."""
    from .book.gpu_report import DEFAULT_BUDGET, DEFAULT_TIME_LIMIT, QUICK_BUDGET

    report = sub.add_parser(
        "gpu-report", help="on a GPU or TPU: every measurement the chapters make, beside its prediction",
        description="On a GPU or a TPU, run every measurement chapters 03 to 07 set beside a prediction, at the "
                    "chapters' sizes, and print measured beside predicted with the device, driver and package "
                    "versions; --json also writes them (commit it as docs/gpu-report-<device>-<date>.json and run "
                    "python -m helpers.book.evidence). Each row is printed, and the JSON file rewritten, as soon as it "
                    "is measured, so an interrupted run keeps what it measured. Progress (how far, about how long "
                    "is left) goes to stderr, the table to stdout.")
    report.add_argument("--json", type=_output_path, metavar="PATH", help="also write the report as JSON")
    report.add_argument("--quick", action="store_true", help="smaller sizes and budget: a smoke test, not a record")
    report.add_argument("--budget", type=_positive_seconds, metavar="SECONDS",
                        help=f"timing budget per measurement (default {DEFAULT_BUDGET:g}, --quick {QUICK_BUDGET:g})")
    report.add_argument("--time-limit", type=_time_limit, metavar="SECONDS", default=DEFAULT_TIME_LIMIT,
                        help=f"measure for at most this long; the cases left are listed as not measured (default "
                             f"{DEFAULT_TIME_LIMIT:g})")
    report.set_defaults(parser=report)


def _folder_command(sub: argparse._SubParsersAction, name: str, help_text: str, description: str,
                    where: str) -> None:
    """A subcommand that writes into a folder DIR, refusing a non-empty one unless --force."""
    command = sub.add_parser(name, help=help_text, description=description)
    command.add_argument("dir", metavar="DIR", help=where)
    command.add_argument("--force", action="store_true", help="write into DIR even if it is not empty")
    command.set_defaults(parser=command)


def _into_folder(args: argparse.Namespace, write: Callable[..., list]) -> list:
    """write(DIR, force=...): what it refuses, or cannot write, is one line and exit 2."""
    from .book.classroom import ClassroomError

    try:
        return write(args.dir, force=args.force)
    except ClassroomError as exc:
        args.parser.error(str(exc))
    except OSError as exc:
        args.parser.error(f"cannot write into {args.dir!r}: {exc.strerror or exc}")


def _machine_name(text: str) -> str:
    name = " ".join(text.split())
    if not name or len(name) > 80:
        raise argparse.ArgumentTypeError(f"{text!r:.90} is not a name of 1 to 80 characters")
    return name


def _site(args: argparse.Namespace) -> int:
    """site build DIR [--force]: one line and exit 2 for what cannot be done."""
    if args.site is None:
        args.parser.error("choose build (--help explains it)")
    try:
        from .book import site
    except ImportError as exc:
        args.parser.error(f"needs the maintainers' tools ({exc.name} is missing): pip install -e '.[dev]'")
    written = _into_folder(args, site.build)
    print(f"wrote {len(written)} files into {args.dir}: serve them with python -m http.server --directory "
          f"{args.dir}, then open http://localhost:8000")
    return 0


def _classroom(args: argparse.Namespace) -> int:
    """copies DIR [--force] | merge FILE... --html PATH: one line and exit 2 for what cannot be done."""
    from .book import classroom

    if args.classroom is None:
        args.parser.error("choose copies or merge (--help explains them)")
    if args.classroom == "copies":
        written = _into_folder(args, classroom.write_copies)
        print(f"wrote {len(written) - 1} learner copies and {written[-1]} ({written[-1].stat().st_size:,} bytes)")
        return 0
    return _merge(args)


def _merge(args: argparse.Namespace) -> int:
    """merge FILE... --html PATH: the page, never over one of the FILEs; the files it cannot use named."""
    from .book import classroom

    inputs = [f for f in args.files if _same_file(f, args.html)]
    if inputs:
        args.parser.error(f"--html {args.html!r} is the input file {inputs[0]!r}: give the page a path of its own "
                          "(the FILEs are only read)")
    machines, skipped = classroom.read_machines(args.files)
    for line in skipped:
        print(f"{args.parser.prog}: {line}", file=sys.stderr)
    if not machines:
        args.parser.error("none of the files is a bench --json file; nothing to show")
    try:
        write_output(args.html, classroom.class_page(machines))
    except OSError as exc:
        print(f"{args.parser.prog}: error: cannot write {args.html!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.html}: {len(machines)} machine(s)" + (f", {len(skipped)} file(s) skipped" if skipped else ""))
    return 0


def _bench(args: argparse.Namespace) -> int:
    """Check everything that can be checked first (exit 2: the command line; 1: too large), run, write the files."""
    from .core.backend import BackendUnavailable
    from .measuring import bench
    from .measuring.timing import TooSlow

    prog = args.parser.prog
    if args.json and args.html and _same_file(args.json, args.html):
        args.parser.error(f"--json and --html both name {args.html!r}; give two different files")
    sizes = bench.QUICK_SIZES if args.quick else bench.DEFAULT_SIZES
    if args.size:
        sizes = replace(sizes, matmul=args.size)
    budget = args.budget or (bench.QUICK_BUDGET if args.quick else bench.DEFAULT_BUDGET)
    try:
        report = bench.run(args.backends, args.dtype, sizes, budget, progress=sys.stderr)
    except BackendUnavailable as exc:
        args.parser.error(str(exc))
    except bench.TooLarge as exc:
        print(f"{prog}: error: {_too_large(exc, args)}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{prog}: error: out of memory at these sizes; try a smaller --size, or --quick", file=sys.stderr)
        return 1
    except (TooSlow, ValueError) as exc:  # e.g. memory used up by another program while the bench ran
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(report)
    named = {"name": args.name} if args.name else {}
    for path, content in ((args.json, lambda: json.dumps({**named, **report.as_json()}, indent=2)),
                          (args.html, report.to_html)):
        if path:
            try:
                write_output(path, content())
            except OSError as exc:
                print(f"{prog}: error: cannot write {path!r}: {exc.strerror or exc} (the results are in the table "
                      "above)", file=sys.stderr)
                return 1
    return 0


def _gpu_report(args: argparse.Namespace) -> int:
    """Measure on the GPU or TPU here (exit 1, one line, when there is none: no file is written), each row printed
    and the JSON file rewritten as it is measured; an interrupted run keeps its rows (exit 130)."""
    from .book import gpu_report, report_case

    prog = args.parser.prog
    sizes, budget = (gpu_report.QUICK, gpu_report.QUICK_BUDGET) if args.quick else (gpu_report.CHAPTER_SIZES,
                                                                                   gpu_report.DEFAULT_BUDGET)
    try:
        report = gpu_report.run(sizes, args.budget or budget, progress=sys.stderr, table=sys.stdout,
                                json_path=args.json, time_limit_s=args.time_limit)
    except report_case.NoAccelerator as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        kept = f"; {args.json} holds every row measured before it" if args.json and os.path.exists(args.json) else ""
        print(f"{prog}: interrupted{kept}", file=sys.stderr)
        return 130
    except OSError as exc:  # the JSON file could not be written after a row
        return _unwritten(prog, args.json, exc)
    print("\n".join(report.footer()))
    if not report.rows:
        print(f"{prog}: error: no measurement succeeded (see 'not measured' above)", file=sys.stderr)
        return 1
    if args.json:
        try:
            gpu_report.write(args.json, report)
        except OSError as exc:
            return _unwritten(prog, args.json, exc)
        print(f"wrote {args.json}; {gpu_report.next_step(args.json, report)}")
    return 0


def _unwritten(prog: str, path: str, exc: OSError) -> int:
    """Say that the report file could not be written (its rows are in the table printed); exit status 1."""
    print(f"{prog}: error: cannot write {path!r}: {exc.strerror or exc} (the results are in the table above)",
          file=sys.stderr)
    return 1


def _same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file: the same resolved path, or two links to one existing file."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _too_large(exc: TooLarge, args: argparse.Namespace) -> str:
    """The one-line message for bench.TooLarge: what needs how much, what is available, and what to do."""
    need = exc.need
    if need.op == "matmul" and need.backend != "loops":
        what = f"--size {need.n:,} is too large for this machine: " if args.size else ""
        fix = (f"give a smaller --size (at most about {exc.largest:,} fits)" if exc.largest
               else "close other programs to free memory")
    else:
        what, fix = "", "close other programs to free memory" if args.quick else "try --quick"
    return f"{what}{exc}; {fix}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status: 0 done, 2 bad command line (one line on stderr), 1 failed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["notebooks"]:  # everything after the word belongs to the upkeep command
        try:
            from .book.records import main as record
            from .book.upkeep import clone_problem
            from .book.upkeep import main as upkeep_main
        except ImportError as exc:  # nbformat, nbclient and jupyter_client come with the dev extra only
            print(f"{PROG} notebooks: needs the maintainers' tools ({exc.name} is missing): "
                  "pip install -e '.[dev]' in a clone of the repository", file=sys.stderr)
            return 2
        if argv[1:2] != ["record"]:
            return upkeep_main(argv[1:])
        if (problem := clone_problem()) is not None:
            print(problem, file=sys.stderr)
            return 2
        return record(argv[2:])
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if args.command is None:
            parser.error(f"choose a command: {', '.join(COMMANDS)} (--help explains them)")
        if extra:
            args.parser.reject_extra(extra)
        if args.command == "bench":
            return _bench(args)
        if args.command == "gpu-report":
            return _gpu_report(args)
        if args.command == "classroom":
            return _classroom(args)
        if args.command == "site":
            return _site(args)
    except SystemExit as exc:  # argparse has printed the help or the one-line error
        return exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    if args.command == "hardware":
        from .measuring.hardware import hardware

        print(hardware())
    else:
        from .core.backend import backends

        print(backends())
    return 0


if __name__ == "__main__":
    sys.exit(main())
