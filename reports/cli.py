"""``python -m reports``: render the report, compare two runs, or promote a run.

::

    python -m reports [RESULTS ...] [--out DIR] [--readme README.md] [--chain-problem KEY]
    python -m reports compare A B [--changed]
    python -m reports ab RUN ... [--by forced|own|change]
    python -m reports gpus RESULTS ... [--gpus A B] [--by band|config] [--kernel K ...] [--m LO-HI]
    python -m reports launched RESULTS ... [--kernel K ...]
    python -m reports families RESULTS ... [--kernel K ...] [--dtype D] [--m LO-HI]
    python -m reports standing RESULTS ... [--readme README.md]
    python -m reports promote RUN.json [--name NAME] [--supersedes OLD.json ...] [--why TEXT]

Rendering reads result files and folders (default ``reports/results``, one level deep, so its
``archive/`` is not read), writes the figures, ``report.md`` (and the files it links) and the
CSVs into ``--out`` (default ``reports/latest``) and prints the report's summary tables.
``compare`` prints, per problem and kernel, the change from A to B and whether it is beyond
the spread (:mod:`reports.compare`). ``ab`` gives the verdict of a config A/B (``bench
--config own --config X``): forced / own time per shape and per group (:mod:`reports.ab`).
``gpus`` compares the same config at the same shape on two GPUs, TFLOPS/GHz and clock, beside
cuBLAS's over the same shapes (:mod:`reports.gpus`). ``launched`` lists what each profiled
launch ran on the device, cuBLAS's tile included (:mod:`reports.launched`). ``families``
pools a kernel's own choices over several runs by config family: where what is left of a gap
sits (:mod:`reports.families`). ``standing`` tabulates each DSL's rung 8 against its bars per
GPU model (the newest held-out seed, ``sweep``, the squares) and can write that table into a
README between its standing markers (:mod:`reports.standing`).
Every error is one line on stderr and exit status 2, because these commands run in scripts and
sessions where a traceback hides the one fact that matters.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["main"]

PROG = "python -m reports"
DEFAULT_RESULTS = Path("reports/results")
DEFAULT_OUT = Path("reports/latest")


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (exit 2), like every other error here."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _render_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Render figures, report.md and results.csv from result files. "
        f"`{PROG} compare -h`: what changed between two runs; `{PROG} ab -h`: the verdict of a "
        f"config A/B; `{PROG} gpus -h`: the same configs on two GPUs; `{PROG} promote -h`: "
        "promote a run into the committed results.",
    )
    p.add_argument(
        "results",
        nargs="*",
        type=Path,
        help=f"result files or folders, one level deep (default {DEFAULT_RESULTS})",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    p.add_argument(
        "--readme",
        type=Path,
        action="append",
        default=[],
        help="also refresh the results block between this file's markers (repeatable; a "
        "backends/<name>/README.md gets that backend's table)",
    )
    p.add_argument(
        "--chain-problem",
        metavar="KEY",
        help="problem of the speedup chain, e.g. 8192x8192x8192-fp16 (default 4096^3 fp16)",
    )
    return p


def _promote_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=f"{PROG} promote",
        description="Copy a run into the committed results; move the files it supersedes into "
        "the archive and record why in the archive's README.md.",
    )
    p.add_argument("run", type=Path, help="the run's results file (normally under runs/)")
    p.add_argument("--name", help="file name in the results folder (default: the run's own)")
    p.add_argument(
        "--supersedes",
        action="append",
        default=[],
        metavar="OLD.json",
        help="a committed results file this run replaces (repeatable)",
    )
    p.add_argument("--why", help="why the superseded files are replaced (for the archive index)")
    p.add_argument(
        "--results-dir",
        type=Path,
        default=DEFAULT_RESULTS,
        help="the results folder (default reports/results; another GPU model's subfolder, "
        "e.g. reports/results/h100)",
    )
    return p


def _compare_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=f"{PROG} compare",
        description="Per problem and kernel: the change from A to B (TFLOPS of B over A) and "
        "whether it is beyond the spread (the p20-p80 time bands do not overlap), with % of "
        "cuBLAS on each side.",
    )
    p.add_argument("a", type=Path, help="results file or folder: the before")
    p.add_argument("b", type=Path, help="results file or folder: the after")
    p.add_argument("--changed", action="store_true", help="list only changes beyond the spread")
    return p


def _results_parser(command: str, description: str) -> argparse.ArgumentParser:
    """The parser of a command that reads result files and folders (``RESULTS ...``)."""
    p = _Parser(prog=f"{PROG} {command}", description=description)
    p.add_argument("results", nargs="+", type=Path, help="result files or folders (one level)")
    return p


def _kernel_option(p: argparse.ArgumentParser, example: str) -> None:
    p.add_argument(
        "--kernel",
        action="append",
        default=[],
        help=f"only this kernel, e.g. {example} (repeatable)",
    )


def _ab_parser() -> argparse.ArgumentParser:
    from reports.ab import BY

    p = _results_parser(
        "ab",
        "The verdict of a config A/B (`bench --config own --config X`): per shape, "
        "the forced config's time over the kernel's own choice's (below 1: faster), % of cuBLAS "
        "and TFLOPS/GHz of both and of cuBLAS in the same run; per group, the geomean, how many "
        "ran faster and the worst. Records that failed their check are named and left out.",
    )
    p.add_argument(
        "--by",
        choices=BY,
        default="forced",
        help="group the pairs by the forced config (default), by the own choice (e.g. a "
        "register twin judged per tile family) or by the knobs the forced config changes (the "
        "X of --config X across the picks it overrode: what an A/B rule judges)",
    )
    return p


def _gpus_parser() -> argparse.ArgumentParser:
    from reports.gpus import BY

    p = _results_parser(
        "gpus",
        "How each kernel moves from GPU A to GPU B: every config timed at the same "
        "shape on both, its TFLOPS/GHz and SM clock B over A (geomeans), cuBLAS's TFLOPS/GHz "
        "over the same shapes, and the kernel's over cuBLAS's (below 1: it falls behind cuBLAS "
        "on B at the same configs). Only correct, timed records count.",
    )
    p.add_argument(
        "--gpus",
        nargs=2,
        metavar=("A", "B"),
        help="the two GPUs, by a part of their names, e.g. H200 H100 (default: the GPU of the "
        "first results path as A, the other GPU with the most records as B)",
    )
    p.add_argument(
        "--by", choices=BY, default="band", help="a row per M band (default) or per config"
    )
    _kernel_option(p, "cutedsl/sm90/r8_shape_adaptive")
    p.add_argument(
        "--m",
        type=_m_range,
        metavar="LO-HI",
        help="only shapes of M in this range, e.g. 257-4096 or 257- (with --by config: the "
        "configs of one band)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE.md",
        help="also write the tables as Markdown here, with the command that made them",
    )
    return p


def _launched_parser() -> argparse.ArgumentParser:
    p = _results_parser(
        "launched",
        "What each profiled launch ran on the device (runs of `python -m harness "
        "bench --check-only --launched`): per shape, GPU and kernel, one launch's device time, "
        "its main kernel with the tile cuBLAS's kernel name states, and its other kernels.",
    )
    _kernel_option(p, "cublas/torch_matmul")
    return p


def _families_parser() -> argparse.ArgumentParser:
    from reports.data import BAR_FLOOR_PCT

    p = _results_parser(
        "families",
        "A kernel's own choices pooled over the runs given (e.g. several held-out seeds), by "
        "config family of the shared vocabulary: records, geomean % of cuBLAS, how many below "
        f"{BAR_FLOOR_PCT:.0f} %, and each family's part of the pooled geomean's shortfall in "
        "points.",
    )
    _kernel_option(p, "cutedsl/sm90/r8_shape_adaptive")
    p.add_argument("--dtype", help="only problems of this dtype, e.g. fp16")
    p.add_argument(
        "--m", type=_m_range, metavar="LO-HI", help="only shapes of M in this range, e.g. 513-"
    )
    return p


def _standing_parser() -> argparse.ArgumentParser:
    p = _results_parser(
        "standing",
        "Where each DSL's rung 8 stands against its bars, one row per DSL and GPU model: the "
        "newest held-out seed it ran in fp16 (geomean, per clock, shapes below the floor, the "
        "worst), `sweep`, and 4096^3 and 8192^3. GPU models are folded apart, e.g. "
        "reports/results reports/results/h100.",
    )
    p.add_argument(
        "--readme",
        type=Path,
        action="append",
        default=[],
        help="also write the table between this file's standing markers (repeatable)",
    )
    return p


def _m_range(text: str) -> tuple[int, int | None]:
    lo, sep, hi = text.partition("-")
    try:
        bounds = (int(lo), int(hi) if hi else None)
    except ValueError:
        bounds = None
    if (
        not sep
        or bounds is None
        or bounds[0] < 1
        or (bounds[1] is not None and bounds[1] < bounds[0])
    ):
        raise argparse.ArgumentTypeError(f"{text!r}: LO-HI or LO- (M from LO to HI, 1 <= LO <= HI)")
    return bounds


def _say(kind: str, text: str) -> None:
    print(f"{PROG}: {kind}: {text}", file=sys.stderr)


def _render(argv: list[str]) -> int:
    args = _render_parser().parse_args(argv)
    if importlib.util.find_spec("matplotlib") is None:
        _say("error", "rendering needs matplotlib: pip install -e '.[report]'")
        return 2
    from reports.render import render_report

    written = render_report(
        args.results or [DEFAULT_RESULTS],
        args.out,
        chain_problem_key=args.chain_problem,
        readme=args.readme,
        warn=lambda m: _say("warning", m),
    )
    from reports.summary import terminal_summary

    files = [p for p in written if p not in args.readme]
    print(terminal_summary(written.dataset, written.chain))
    print()
    print(f"wrote {len(files)} files to {args.out}: " + ", ".join(p.name for p in files))
    print(f"the report: {args.out / 'report.md'}")
    for readme in args.readme:
        if readme in written:
            print(f"refreshed the results block of {readme}")
        else:
            _say("warning", f"{readme} has no results markers; left unchanged")
    return 0


def _compare(argv: list[str]) -> int:
    from reports.compare import compare, format_comparison
    from reports.data import load_dataset

    args = _compare_parser().parse_args(argv)
    a = load_dataset([args.a], warn=lambda m: _say("warning", m))
    b = load_dataset([args.b], warn=lambda m: _say("warning", m))
    print(format_comparison(compare(a, b), str(args.a), str(args.b), changed_only=args.changed))
    return 0


def _ab(argv: list[str]) -> int:
    from harness.results import load_many
    from reports.ab import format_ab, pairs

    args = _ab_parser().parse_args(argv)
    warn = lambda m: _say("warning", m)  # noqa: E731
    docs = load_many(args.results, warn=warn)
    print(format_ab(pairs(docs, warn=warn), by=args.by))
    return 0


def _gpus(argv: list[str]) -> int:
    from harness.results import load_many
    from reports.gpus import format_gpus, gpu_pairs, gpus_markdown

    args = _gpus_parser().parse_args(argv)
    warn = lambda m: _say("warning", m)  # noqa: E731
    # path by path: without --gpus, A is the GPU of the first path's runs
    docs = [doc for path in args.results for doc in load_many([path], warn=warn)]
    a, b = args.gpus or (None, None)
    try:
        gpu_a, gpu_b, found = gpu_pairs(docs, a, b)
    except ValueError as e:
        _say("error", str(e))
        return 2
    if args.kernel:
        known = {p.kernel for p in found}
        missing = [k for k in args.kernel if k not in known]
        if missing:
            _say(
                "error",
                f"--kernel {missing[0]}: no pair of it (kernels with pairs: "
                f"{', '.join(sorted(known)) or 'none'})",
            )
            return 2
        found = [p for p in found if p.kernel in args.kernel]
    if args.m:
        lo, hi = args.m
        found = [p for p in found if p.m >= lo and (hi is None or p.m <= hi)]
    text = format_gpus(gpu_a, gpu_b, found, by=args.by)
    print(text)
    if args.out:
        shown = [x for i, x in enumerate(argv) if "--out" not in (x.split("=")[0], argv[i - 1])]
        command = " ".join([f"{PROG} gpus", *shown])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(gpus_markdown(text, command))
        print(f"wrote {args.out}")
    return 0


def _launched(argv: list[str]) -> int:
    from harness.results import load_many
    from reports.launched import format_launched, launch_rows

    args = _launched_parser().parse_args(argv)
    docs = load_many(args.results, warn=lambda m: _say("warning", m))
    rows = launch_rows(docs, args.kernel)
    if args.kernel and not rows:
        known = sorted({r.kernel for d in docs for r in d.bench if r.launched})
        _say(
            "error",
            f"--kernel {args.kernel[0]}: no profiled launch of it (kernels with one: "
            f"{', '.join(known) or 'none'})",
        )
        return 2
    print(format_launched(rows))
    return 0


def _families(argv: list[str]) -> int:
    from harness.results import load_many
    from reports.families import format_families, pooled_families

    args = _families_parser().parse_args(argv)
    docs = load_many(args.results, warn=lambda m: _say("warning", m))
    pooled = pooled_families(docs, args.kernel, args.dtype, args.m)
    if args.kernel and not pooled.records:
        known = sorted({r.kernel for d in docs for r in d.bench if r.selected and r.config_values})
        _say(
            "error",
            f"--kernel {args.kernel[0]}: no own choice of it here (kernels with one: "
            f"{', '.join(known) or 'none'})",
        )
        return 2
    print(format_families(pooled))
    return 0


def _standing(argv: list[str]) -> int:
    from harness.results import load_many
    from reports.standing import format_standing, standing_rows, update_standing

    args = _standing_parser().parse_args(argv)
    warn = lambda m: _say("warning", m)  # noqa: E731
    # path by path: the GPU models' rows follow the order of the paths
    docs = [doc for path in args.results for doc in load_many([path], warn=warn)]
    table = format_standing(standing_rows(docs))
    print(table)
    status = 0
    for readme in args.readme:
        if update_standing(readme, table):
            print(f"refreshed the standing block of {readme}")
        else:
            markers = "<!-- standing:start --> and <!-- standing:end -->"
            _say("error", f"{readme} has no standing markers ({markers})")
            status = 2
    return status


def _promote(argv: list[str]) -> int:
    from reports.promote import promote

    args = _promote_parser().parse_args(argv)
    done = promote(
        args.run,
        args.results_dir,
        name=args.name,
        supersedes=args.supersedes,
        why=args.why,
    )
    for line in done.lines():
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    from harness.results import ResultsError
    from reports.data import ReportError
    from reports.promote import PromoteError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["promote"]:
            return _promote(argv[1:])
        if argv[:1] == ["compare"]:
            return _compare(argv[1:])
        if argv[:1] == ["ab"]:
            return _ab(argv[1:])
        if argv[:1] == ["gpus"]:
            return _gpus(argv[1:])
        if argv[:1] == ["launched"]:
            return _launched(argv[1:])
        if argv[:1] == ["families"]:
            return _families(argv[1:])
        if argv[:1] == ["standing"]:
            return _standing(argv[1:])
        return _render(argv)
    except (ResultsError, ReportError, PromoteError) as e:
        _say("error", str(e))
    except OSError as e:
        _say("error", f"{e.filename or ''}: {e.strerror or e}".lstrip(": "))
    return 2
