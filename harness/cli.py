"""``python -m harness bench|codegen|report|list``."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.problems import SUITES, expand
from harness.protocol import ARCH_CAPABILITY, DTYPES, KernelSpec, Problem, Rung
from harness.registry import Registry, discover

DEFAULT_RESULTS_DIR = Path("reports/results")
DEFAULT_REPORT_DIR = Path("reports/latest")


def _stamp() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _print(msg: str) -> None:
    print(msg, flush=True)


def _gpu_capability() -> tuple[tuple[int, int] | None, str]:
    """(capability, description) of GPU 0, or (None, why not). Imports torch if present."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "no CUDA GPU visible"
    cap = torch.cuda.get_device_capability(0)
    return (cap[0], cap[1]), f"{torch.cuda.get_device_name(0)} (sm_{cap[0]}{cap[1]})"


def runnable_reason(spec: KernelSpec, cap: tuple[int, int] | None, gpu_why: str) -> str | None:
    """None if ``spec`` can run on this machine, else why not."""
    missing = spec.missing_requirements()
    if missing:
        return f"not installed: {', '.join(missing)}"
    if "cpu" in spec.devices:
        return None
    if cap is None:
        return gpu_why
    want = ARCH_CAPABILITY[spec.arch]
    if want is not None and cap != want:
        return f"needs an sm_{want[0]}{want[1]} GPU; this one is sm_{cap[0]}{cap[1]}"
    return None


def _select(reg: Registry, args: argparse.Namespace) -> list[KernelSpec]:
    rungs = [Rung.parse(r) for r in args.rung] if args.rung else None
    specs = reg.select(
        backends=args.backend or None,
        rungs=rungs,
        arches=args.arch or None,
        kernels=args.kernel or None,
    )
    return specs


def _report_discovery_errors(reg: Registry) -> None:
    for err in reg.errors:
        print(f"warning: {err.source}: {err.error}", file=sys.stderr)


# ---------------------------------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    reg = discover()
    _report_discovery_errors(reg)
    cap, why = _gpu_capability()
    _print(f"GPU: {why}")
    rows = [("kernel", "rung", "arch", "runs here", "description")]
    for spec in _select(reg, args):
        reason = runnable_reason(spec, cap, why)
        rows.append(
            (
                spec.id,
                f"{int(spec.rung)} {spec.rung.label}",
                spec.arch,
                "yes" if reason is None else f"no: {reason}",
                spec.description,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        _print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    _print(f"{len(rows) - 1} kernel(s) from {len(reg.backends)} backend(s)")
    return 0


# ---------------------------------------------------------------------------------------- bench
def cmd_bench(args: argparse.Namespace) -> int:
    from harness.env import host_environment
    from harness.results import ResultsWriter, Status
    from harness.runner import Runner, RunSettings
    from harness.timing import TimerSettings

    reg = discover()
    _report_discovery_errors(reg)
    try:
        problems = expand(args.suite, args.dtype)
        specs = _select(reg, args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.no_reference and not any(s.rung == Rung.CUBLAS for s in specs):
        specs = [s for s in reg if s.rung == Rung.CUBLAS and args.device in s.devices] + specs
    specs = [s for s in specs if args.device in s.devices]
    if not specs:
        print("error: no kernels selected for this device", file=sys.stderr)
        return 2
    if args.device == "cuda":
        cap, why = _gpu_capability()
        if cap is None:
            print(
                f"error: bench needs a CUDA GPU ({why}). Without one, run "
                "`python -m harness codegen` (compile-only) or `python -m harness report`.",
                file=sys.stderr,
            )
            return 2
    timer = TimerSettings(
        warmup_s=args.warmup,
        min_samples=args.min_samples,
        min_time_s=args.min_time,
        rounds=args.rounds,
    )
    settings = RunSettings(
        device=args.device,
        timeout_s=args.timeout,
        checks=args.checks,
        measure=not args.check_only,
        timer=timer,
    )
    out = Path(args.out) if args.out else DEFAULT_RESULTS_DIR / f"bench-{_stamp()}.json"
    if out.suffix != ".json":
        out = out / f"bench-{_stamp()}.json"
    env: dict[str, Any] = {
        **host_environment(),
        "timer": timer.as_dict(),
        "run": {
            "timeout_s": args.timeout,
            "checks": args.checks,
            "suites": args.suite,
            "dtypes": args.dtype,
        },
    }
    counts: dict[str, int] = {}
    t0 = time.perf_counter()
    missing = {s.id: s.missing_requirements() for s in specs}
    runnable = [s for s in specs if not missing[s.id]]
    with Runner(runnable, settings, log=_print) as runner:
        _print(
            f"bench: {len(runnable)} kernel(s) x {len(problems)} problem(s) on {args.device}"
            f" -> {out}"
        )
        env.update(runner.device_info())
        writer = ResultsWriter(out, "bench", env)
        _print(
            f"device: {env.get('gpu', env.get('device'))}  SMs {env.get('sm_count')}  "
            f"L2 {env.get('l2_bytes')} B  driver {env.get('driver')}"
        )
        for spec in specs:
            if missing[spec.id]:
                for p in problems:
                    rec = _unsupported_record(
                        spec, p, f"not installed: {', '.join(missing[spec.id])}"
                    )
                    writer.add(rec)
                    counts[rec["status"]] = counts.get(rec["status"], 0) + 1
                _print(f"    {spec.id:<40} skipped: not installed ({', '.join(missing[spec.id])})")
        for rec in runner.run(problems):
            writer.add(rec)
            counts[rec["status"]] = counts.get(rec["status"], 0) + 1
        writer.finish(elapsed_s=time.perf_counter() - t0)
    _print(
        f"done in {time.perf_counter() - t0:.0f} s: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; wrote {out}"
    )
    if args.csv:
        from harness.results import load, to_csv

        Path(args.csv).write_text(to_csv([load(out)]))
        _print(f"wrote {args.csv}")
    bad = (
        counts.get(Status.WRONG.value, 0)
        + counts.get(Status.ERROR.value, 0)
        + counts.get(Status.TIMEOUT.value, 0)
    )
    return 1 if (bad and args.strict) else 0


def _unsupported_record(spec: KernelSpec, problem: Problem, reason: str) -> dict[str, Any]:
    from harness.runner import base_record

    return base_record(spec, problem) | {"status": "unsupported", "reason": reason}


# -------------------------------------------------------------------------------------- codegen
def cmd_codegen(args: argparse.Namespace) -> int:
    from harness.codegen import codegen_records
    from harness.env import host_environment
    from harness.results import ResultsWriter

    reg = discover()
    _report_discovery_errors(reg)
    try:
        specs = _select(reg, args)
        problem = Problem.parse(args.problem)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else DEFAULT_RESULTS_DIR / f"codegen-{_stamp()}.json"
    writer = ResultsWriter(out, "codegen", {**host_environment(), "problem": problem.key})
    _print(f"codegen: {len(specs)} kernel(s) for {problem.key} -> {out}")
    n_ok = 0
    for rec in codegen_records(
        specs,
        problem,
        timeout_s=args.timeout,
        log=_print,
        ptx_dir=Path(args.ptx_dir) if args.ptx_dir else None,
    ):
        writer.add(rec)
        n_ok += rec["status"] == "ok"
    writer.finish()
    _print(f"done: {n_ok} compiled; wrote {out}")
    return 0


# --------------------------------------------------------------------------------------- report
def cmd_report(args: argparse.Namespace) -> int:
    from harness.results import ResultsError
    from reports.render import render_report

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: reports need matplotlib: pip install -e '.[report]'", file=sys.stderr)
        return 2
    try:
        written = render_report(
            args.results,
            Path(args.out),
            chain_problem=args.chain_problem,
            readme=Path(args.readme) if args.readme else None,
        )
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for p in written:
        _print(f"wrote {p}")
    return 0


# ------------------------------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)

    def selection(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--backend",
            action="append",
            default=[],
            help="backend to include (repeatable; default: all)",
        )
        p.add_argument(
            "--rung",
            action="append",
            default=[],
            help="rung number or name (repeatable), e.g. 7 or multi_consumer",
        )
        p.add_argument("--arch", action="append", default=[], help="sm_90a or sm_100a")
        p.add_argument(
            "--kernel",
            action="append",
            default=[],
            help="kernel id, e.g. gluon/sm90/r7_multi_consumer (repeatable)",
        )

    p = sub.add_parser("list", help="list discovered kernels and whether they run here")
    selection(p)
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("bench", help="check and time kernels against cuBLAS")
    selection(p)
    p.add_argument(
        "--suite",
        action="append",
        default=None,
        help=f"suite ({', '.join(SUITES)}) or a shape MxNxK[-dtype]; repeatable (default: smoke)",
    )
    p.add_argument(
        "--dtype",
        action="append",
        default=None,
        choices=DTYPES,
        help="fp16 and/or bf16 (repeatable; default fp16)",
    )
    p.add_argument("--out", help="results JSON path or folder (default reports/results/)")
    p.add_argument("--csv", help="also write the records as CSV here")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds each kernel gets per step (compile+check, each timing round)",
    )
    p.add_argument(
        "--device",
        default="cuda",
        choices=("cuda", "cpu"),
        help="cpu only runs test kernels that declare it",
    )
    p.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per kernel")
    p.add_argument("--min-samples", type=int, default=100)
    p.add_argument("--min-time", type=float, default=0.5, help="measured seconds per kernel")
    p.add_argument("--rounds", type=int, default=4, help="round-robin rounds per problem")
    p.add_argument("--checks", type=int, default=2, help="correctness checks per problem")
    p.add_argument("--check-only", action="store_true", help="check correctness, skip timing")
    p.add_argument("--no-reference", action="store_true", help="do not add cuBLAS")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 if any kernel was wrong, errored or timed out"
    )
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("codegen", help="compile every kernel without a GPU and tabulate it")
    selection(p)
    p.add_argument("--problem", default="4096x4096x4096-fp16")
    p.add_argument("--out", help="codegen JSON path (default reports/results/codegen-*.json)")
    p.add_argument("--ptx-dir", help="also write each kernel's PTX here")
    p.add_argument("--timeout", type=float, default=600.0)
    p.set_defaults(fn=cmd_codegen)

    p = sub.add_parser("report", help="render plots and a markdown report from result files")
    p.add_argument(
        "results",
        nargs="*",
        default=[str(DEFAULT_RESULTS_DIR)],
        help="result JSON files or folders (default reports/results)",
    )
    p.add_argument("--out", default=str(DEFAULT_REPORT_DIR), help="output folder")
    p.add_argument(
        "--chain-problem",
        default=None,
        help="problem for the speedup-chain panels (default 4096x4096x4096-fp16 or the"
        " largest square measured)",
    )
    p.add_argument(
        "--readme",
        help="also refresh the results table between the markers of this README (e.g. README.md)",
    )
    p.set_defaults(fn=cmd_report)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "suite", "x") is None:
        args.suite = ["smoke"]
    if getattr(args, "dtype", "x") is None:
        args.dtype = ["fp16"]
    return int(args.fn(args))
