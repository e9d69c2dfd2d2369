"""``python -m harness list|bench|picks|codegen|merge|tune-table|fit-cost``.

Results go to an ignored run folder (``runs/``) unless ``--out`` says otherwise; the curated,
committed results under ``reports/results/`` change only through ``python -m reports promote``.
Reports are rendered by ``python -m reports``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.devices import list_gpus
from harness.gemm import DTYPES
from harness.problems import SUITES, TUNING_SEEDS, canonical_suite, expand, held_out
from harness.protocol import ARCH_CAPABILITY, ARCHES, KernelSpec, Problem, Rung
from harness.registry import Registry, discover

if TYPE_CHECKING:
    from harness.runner import Unit

#: Where runs land by default: ignored by git, promoted into reports/results on purpose.
DEFAULT_RUN_DIR = Path("runs")


class UsageError(ValueError):
    """A command-line mistake: reported as one line, exit status 2."""


def _stamp() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _print(msg: str) -> None:
    print(msg, flush=True)


def _warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


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
    """The specs the selection flags name; UsageError naming the valid choices otherwise."""
    try:
        rungs = [Rung.parse(r) for r in args.rung] if args.rung else None
    except ValueError as e:
        raise UsageError(str(e)) from None
    bad_arch = sorted(set(args.arch) - set(ARCHES))
    if bad_arch:
        raise UsageError(f"unknown arch {bad_arch[0]!r}; the arches are {', '.join(ARCHES)}")
    unknown = sorted(set(args.backend) - set(reg.backends))
    if unknown:
        raise UsageError(
            f"unknown backend {unknown[0]!r}; the backends here are {', '.join(reg.backends)}"
        )
    ids = [s.id for s in reg]
    unknown = sorted(set(args.kernel) - set(ids))
    if unknown:
        raise UsageError(f"unknown kernel {unknown[0]!r}; list them with `python -m harness list`")
    specs = reg.select(
        backends=args.backend or None,
        rungs=rungs,
        arches=args.arch or None,
        kernels=args.kernel or None,
    )
    if not specs:
        raise UsageError("the selection matches no kernel; see `python -m harness list`")
    return specs


def _report_discovery_errors(reg: Registry) -> None:
    for err in reg.errors:
        _warn(f"{err.source}: {err.error}")


def _out_path(args: argparse.Namespace, kind: str) -> Path:
    """The results file of this run: ``--out`` (a file, or a folder to put it in) or runs/."""
    from harness.results import ResultsError, check_writable

    out = Path(args.out) if args.out else DEFAULT_RUN_DIR
    if out.suffix != ".json":
        out = out / f"{kind}-{_stamp()}.json"
    try:
        check_writable(out)
    except ResultsError as e:
        raise UsageError(str(e)) from None
    return out


# ---------------------------------------------------------------------------------------- list
def cmd_list(args: argparse.Namespace) -> int:
    reg = discover()
    _report_discovery_errors(reg)
    specs = _select(reg, args)
    cap, why = _gpu_capability()
    _print(f"GPU: {why}")
    rows = [("kernel", "rung", "arch", "runs here", "description")]
    for spec in specs:
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
def _check_configs(menus: dict[str, Any], requests: Sequence[str]) -> None:
    """Every forced config must fit every selected kernel that declares a config space."""
    from harness.configs import check_request

    configurable = {k: m for k, m in menus.items() if isinstance(m, list)}
    if not configurable:
        raise UsageError("--config: none of the selected kernels declares configs")
    for request in requests:
        for kid, menu in configurable.items():
            why = check_request(menu, request)
            if why:
                raise UsageError(f"--config for {kid}: {why}")


def _worker_envs(args: argparse.Namespace, reg: Registry) -> dict[str, Any]:
    """backend -> WorkerEnv from ``--python``/``--env``; UsageError naming a bad one."""
    from harness.isolate import parse_worker_envs

    try:
        return parse_worker_envs(args.python, args.env, reg.backends)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _bench_options(args: argparse.Namespace) -> tuple[list[str | None], tuple[int, int] | None]:
    """The GPU slots (``--gpus``; [None]: the GPU this process sees) and the shard; UsageError
    for a bad or conflicting option."""
    from harness.devices import parse_gpus
    from harness.executors import RAY_MISSING
    from harness.merge import parse_shard

    if args.executor == "ray":
        if args.gpus:
            raise UsageError("--gpus is for --executor local: Ray gives each task its GPU")
        if importlib.util.find_spec("ray") is None:
            raise UsageError(RAY_MISSING)
    elif args.address:
        raise UsageError("--address names a Ray cluster: it goes with --executor ray")
    if args.resume and (not args.out or Path(args.out).suffix != ".json"):
        raise UsageError("--resume needs --out FILE.json: the run to continue")
    if args.rest_of and args.resume:
        raise UsageError("--rest-of and --resume exclude each other: --resume continues its file")
    if args.rest_of and args.out and Path(args.out).resolve() == Path(args.rest_of).resolve():
        raise UsageError("--rest-of names the --out file: continue it with --resume instead")
    try:
        slots: list[str | None] = (
            list(parse_gpus(args.gpus, literal=args.device == "cpu")) if args.gpus else [None]
        )
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as e:
        raise UsageError(str(e)) from None
    return slots, shard


def _rest_of(
    source: Path, out: Path, env: dict[str, Any], units: list[Unit], prefix: str = "--rest-of"
) -> list[Unit]:
    """``units`` less those run ``source`` finished: the rest of an earlier run of this plan
    (what ``--resume`` refuses to continue in place for other code), recorded in ``env``; also
    what a ``--resume`` of such a rest leaves out (``prefix`` starts its errors)."""
    from harness.merge import finished_units, resume_problem
    from harness.results import ResultsError, load

    try:
        prior = load(source)
    except ResultsError as e:
        raise UsageError(f"{prefix}: {e}") from None
    why = resume_problem(prior, env, same_code=False)
    if why:
        raise UsageError(f"{prefix}: {why}")
    done = finished_units(prior)
    env["run"]["rest_of"] = {
        "source": str(source),
        "git_sha": prior.environment.get("git_sha"),
        "units_done": len(done),
    }
    rest = [u for u in units if u.key not in done]
    _print(
        f"the rest of {source}: {len(done)} problem(s) done there, {len(rest)} to run; join the "
        f"two with `python -m harness merge --allow-mixed {source} {out}`"
    )
    return rest


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.env import host_environment
    from harness.executors import (
        ExecutorUnavailable,
        UnitQueue,
        run_local,
        run_ray,
        write_events,
    )
    from harness.isolate import WorkerEnv
    from harness.merge import finished_units, plan_units, resume_problem
    from harness.records import Status
    from harness.results import ResultsError, ResultsWriter, load, to_csv
    from harness.runner import BenchPlan, Runner, RunSettings, survey, with_reference
    from harness.summary import run_summary
    from harness.timing import TimerSettings

    reg = discover()
    _report_discovery_errors(reg)
    try:
        args.suite = [canonical_suite(s) for s in args.suite]
        problems = expand(args.suite, args.dtype)
    except ValueError as e:
        raise UsageError(str(e)) from None
    specs = _select(reg, args)
    if args.config and args.tune:
        raise UsageError("--config and --tune exclude each other (--tune times every config)")
    held = [s for s in args.suite if held_out(s)]
    if args.tune and held:
        raise UsageError(
            f"--tune on the held-out suite {held[0]}: held-out seeds are for evaluation only; "
            f"tune on the fixed suites or random:<seed in {sorted(TUNING_SEEDS)}>"
        )
    if args.tune_top is not None and (not args.tune or args.tune_top < 1):
        raise UsageError("--tune-top N needs --tune and N >= 1")
    if args.launched and not args.check_only:
        raise UsageError(
            "--launched needs --check-only: the profiler stays loaded in a worker once used, "
            "and timed runs must not carry it"
        )
    specs = with_reference(specs, reg, args.device, add=not args.no_reference)
    if not specs:
        raise UsageError(f"no selected kernel runs on --device {args.device}")
    envs = _worker_envs(args, reg)
    slots, shard = _bench_options(args)
    out = _out_path(args, "bench")
    if args.device == "cuda" and args.executor == "local":
        cap, why = _gpu_capability()
        if cap is None and not (why == "torch is not installed" and list_gpus()):
            raise UsageError(
                f"bench needs a CUDA GPU ({why}). Without one, run "
                "`python -m harness codegen` (compile-only) or `python -m reports`."
            )
    timer = TimerSettings(
        warmup_s=args.warmup,
        min_samples=args.min_samples,
        min_time_s=args.min_time,
        rounds=args.rounds,
        rewarm_s=args.rewarm,
        settle_s=args.settle,
        hold_floor_ms=args.hold_floor,
        count_hold=args.count_hold,
    )
    settings = RunSettings(
        device=args.device,
        timeout_s=args.timeout,
        checks=args.checks,
        measure=not args.check_only,
        timer=timer,
        configs=tuple(args.config),
        tune=args.tune,
        tune_top=args.tune_top,
        launched=args.launched,
    )
    env: dict[str, Any] = {
        **host_environment(specs),
        "timer": timer.as_dict(),
        "run": {
            "timeout_s": args.timeout,
            "checks": args.checks,
            "suites": args.suite,
            "dtypes": args.dtype,
            "configs": list(args.config),
            "tune": args.tune,
            "tune_top": args.tune_top,
            "check_only": args.check_only,
            "launched": args.launched,
            "device": args.device,
            "kernels": [s.id for s in specs],
            "units": [p.key for p in problems],
            "shard": args.shard,
            "gpus": args.gpus,
            "executor": args.executor,
        },
    }
    units = plan_units(problems, shard)
    base = None
    rest_of = (Path(args.rest_of), "--rest-of") if args.rest_of else None
    if args.resume and not out.exists():
        _print(f"--resume: {out} does not exist yet; starting it")
    if args.resume and out.exists():
        try:
            base = load(out)
        except ResultsError as e:
            raise UsageError(f"--resume: {e}") from None
        why = resume_problem(base, env)
        if why:
            raise UsageError(f"--resume: {why}")
        done = finished_units(base)
        units = [u for u in units if u.key not in done]
        for key in ("gpus", "quarantined"):
            env[key] = list(base.environment.get(key) or [])
        env["resumed"] = [
            *(base.environment.get("resumed") or []),
            {"at": _stamp(), "host": env.get("host"), "units_done": len(done)},
        ]
        source = ((base.environment.get("run") or {}).get("rest_of") or {}).get("source")
        if source:
            # The file is the rest of another: that run's problems stay out too (below), or
            # the join of the two would hold them twice (`merge` refuses that).
            rest_of = (Path(source), f"--resume: {out} is the rest of another run")
            _print(f"resuming {out}: {len(done)} problem(s) done")
        else:
            _print(f"resuming {out}: {len(done)} problem(s) done, {len(units)} to run")
    if rest_of:
        units = _rest_of(rest_of[0], out, env, units, rest_of[1])
    status = survey(specs, envs, args.timeout)
    runnable = [s for s in specs if not status[s.id].missing]
    plan = BenchPlan(
        tuple(runnable),
        settings,
        unavailable=tuple((s, str(status[s.id].reason)) for s in specs if status[s.id].missing),
        envs=envs,
        versions={s.id: status[s.id].versions for s in specs},
    )
    env["backends"] = {
        s.backend: {**envs.get(s.backend, WorkerEnv()).as_dict(), "versions": status[s.id].versions}
        for s in specs
    }
    if args.config or args.tune:
        with Runner(runnable, settings, envs=envs) as describing:
            menus = describing.menus()
        _check_configs(menus, args.config)
        plan = replace(plan, menus={k: v for k, v in menus.items() if not isinstance(v, str)})
    where = (
        f"Ray ({args.address or 'local'})"
        if args.executor == "ray"
        else f"GPUs {', '.join(map(str, slots))}"
        if len(slots) > 1
        else args.device
    )
    _print(
        f"bench: {len(runnable)} kernel(s) x {len(units)} problem(s) on {where}"
        + (f" (shard {args.shard})" if shard else "")
        + (
            ""
            if not args.tune
            else " (tuning every config)"
            if args.tune_top is None
            else f" (tuning each kernel's {args.tune_top} best-ranked configs)"
        )
        + f" -> {out}"
    )
    for spec, why in plan.unavailable:
        _print(f"    {spec.id:<48} skipped: {why}")
    writer = ResultsWriter(out, "bench", env, base=base)
    work = UnitQueue(units, longest_first=args.executor == "ray" or len(slots) > 1)
    t0 = time.perf_counter()
    try:
        events = (
            run_ray(plan, work, _print, args.address)
            if args.executor == "ray"
            else run_local(plan, work, slots, _print)
        )
        counts = write_events(events, writer, _print)
    except ExecutorUnavailable as e:
        raise UsageError(str(e)) from None
    left = work.left()
    if not left:
        writer.finish(elapsed_s=time.perf_counter() - t0)
    _print(run_summary(load(out).bench))
    _print(
        f"done in {time.perf_counter() - t0:.0f} s: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; wrote {out}"
    )
    if left:
        print(
            f"error: {len(left)} problem(s) not run ({', '.join(u.key for u in left[:3])}"
            f"{', ...' if len(left) > 3 else ''}): every GPU given to the run failed its probe; "
            f"run again with --resume --out {out}",
            file=sys.stderr,
        )
    if args.csv:
        Path(args.csv).write_text(to_csv([load(out)]))
        _print(f"wrote {args.csv}")
    bad = sum(v for k, v in counts.items() if Status(k).failed)
    return 1 if left or (bad and args.strict) else 0


# ---------------------------------------------------------------------------------------- picks
def code_changes(sha: str, backends: Sequence[str], root: Path | None = None) -> str:
    """Which files of ``backends`` and the harness's code differ between commit ``sha`` and the
    checkout at ``root`` (default: this one), documentation aside: a line for ``picks
    --against``, or why it cannot say."""
    import subprocess

    root = root or Path(__file__).resolve().parents[1]
    paths = [*(f"backends/{b}" for b in sorted(set(backends))), "harness"]
    cmd = ["git", "-C", str(root), "diff", "--name-only", sha, "--", *paths, ":(exclude)*.md"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot tell whether the code changed since {sha[:10]} ({e})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or ["git failed"]
        return f"cannot tell whether the code changed since {sha[:10]} ({why[0]})"
    files = done.stdout.split()
    if not files:
        return f"code unchanged since the run's tree {sha[:10]} ({', '.join(paths)})"
    groups = []
    for path in paths:
        mine = [f for f in files if f.startswith(path + "/")]
        if mine:
            shown = ", ".join(f.removeprefix(path + "/") for f in mine[:5])
            more = f" and {len(mine) - 5} more" if len(mine) > 5 else ""
            groups.append(f"{path}/: {shown}{more}")
    return (
        f"code changed since the run's tree {sha[:10]} ({'; '.join(groups)}): the same configs "
        "may run differently, so time them again before calling the run current"
    )


def cmd_picks(args: argparse.Namespace) -> int:
    """What each selected kernel with a config space would run for each problem, and why, on a
    named GPU (its tuned table) without a GPU or a compile; with ``--against`` a run's
    records, where today's selection differs from what that run ran."""
    from harness.configs import current_gpu_name
    from harness.results import ResultsError, load
    from harness.runner import Runner, RunSettings, survey

    if args.below is not None and not args.against:
        raise UsageError("--below lists a run's misses: it needs --against RUN.json")
    if args.below is not None and not 0 < args.below:
        raise UsageError(f"--below {args.below}: a ratio of cuBLAS above 0, e.g. 0.9")
    reg = discover()
    _report_discovery_errors(reg)
    run = None
    ran: dict[tuple[str, str], str] = {}
    pct: dict[tuple[str, str], float] = {}
    if args.against:
        try:
            run = load(args.against)
        except ResultsError as e:
            raise UsageError(f"--against: {e}") from None
        own = [r for r in run.bench if r.selected and r.config is not None]
        if not own:
            raise UsageError(f"--against {args.against}: no record of a kernel's own config choice")
        ran = {(r.kernel, r.problem.key): r.config for r in own}
        pct = {
            (r.kernel, r.problem.key): r.pct_of_cublas for r in own if r.pct_of_cublas is not None
        }
    try:
        problems = (
            expand([canonical_suite(s) for s in args.suite], args.dtype) if args.suite else []
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not problems and run is not None:
        seen = {r.problem.key: r.problem for r in run.bench if (r.kernel, r.problem.key) in ran}
        problems = list(seen.values())
    flags = args.backend or args.rung or args.arch or args.kernel
    specs = _select(reg, args)
    if run is not None and not flags:
        specs = [s for s in specs if any(k == s.id for k, _ in ran)]
    specs = [s for s in specs if s.rung != Rung.CUBLAS]
    envs = _worker_envs(args, reg)
    status = survey(specs, envs, args.timeout)  # each backend's own environment (--python)
    by_need: dict[str, list[str]] = {}
    for s in specs:
        if status[s.id].missing:
            by_need.setdefault(", ".join(status[s.id].missing), []).append(s.id)
    for need, ids in by_need.items():
        _warn(f"skipped, not installed ({need}): {', '.join(ids)}")
    specs = [s for s in specs if not status[s.id].missing]
    if not specs:
        raise UsageError("no selected kernel can be loaded; see `python -m harness list`")
    gpu = args.gpu
    if gpu is None and run is not None:
        gpu = run.environment.get("gpu") or next(
            (r.gpu["name"] for r in run.bench if r.gpu and r.gpu.get("name")), None
        )
    if gpu is None:
        gpu = current_gpu_name()
    table = f"tuned tables for {gpu}, else" if gpu else "no GPU named: no tuned table, only"
    _print(f"picks for {len(problems)} problem(s) ({table} each kernel's heuristic)")
    with Runner(
        specs, RunSettings(device="cpu", measure=False, timeout_s=args.timeout), envs=envs
    ) as runner:
        replies = runner.picks(problems, gpu, ran)
    differ = 0
    for spec in specs:
        reply = replies[spec.id]
        if isinstance(reply, str):
            _warn(f"{spec.id}: failed to load: {reply}")
            differ += 1
            continue
        if reply["picks"] is None:
            continue
        _print(spec.id + ("" if reply["gpu_honoured"] else " (its own select: this machine's GPU)"))
        counts = {"same": 0, "differ": 0, "unrun": 0, "refused": 0}
        removed: set[str] = set()
        standing = 0  # --below: problems run as today's pick would run them, under the ratio
        for problem, pick in zip(problems, reply["picks"]):
            if pick["refused"]:
                counts["refused"] += 1
                _print(f"  {problem.key:<24} refused: {pick['refused']}")
                continue
            state = {None: "unrun", True: "same", False: "differ"}[pick["as_ran"]]
            counts[state] += 1
            removed.update(pick["removed"] if state == "same" else ())
            if args.below is not None:
                ratio = pct.get((spec.id, problem.key))
                if state == "same" and ratio is not None and ratio < 100 * args.below:
                    standing += 1
                    _print(
                        f"  {problem.key:<24} {ratio:5.1f} % of cuBLAS  {pick['config']}  "
                        f"[{pick['why'] or 'no reason given'}]"
                    )
                continue
            if run is None or state == "differ" or args.all:
                _print(
                    f"  {problem.key:<24} {pick['config']}  [{pick['why'] or 'no reason given'}]"
                )
                if state == "differ":
                    _print(f"  {'':<24} ran {ran[(spec.id, problem.key)]}")
        if run is not None:
            gone = f" (their names also set {', '.join(sorted(removed))}: knobs since removed)"
            _print(
                f"  {len(problems)} problem(s): {counts['same']} as the run ran them"
                f"{gone if removed else ''}, {counts['differ']} differ, "
                f"{counts['unrun']} not in the run, {counts['refused']} refused"
            )
            if args.below is not None:
                _print(
                    f"  {standing} of the {counts['same']} run as today's picks ran below "
                    f"{args.below:g}x cuBLAS"
                )
            differ += counts["differ"] + counts["refused"]
        elif counts["refused"]:
            differ += counts["refused"]
    if run is not None:
        sha = run.environment.get("git_sha")
        backends = [s.backend for s in specs]
        _print(code_changes(sha, backends) if sha else "the run records no git SHA")
        if sha and run.environment.get("git_dirty"):
            _print("(the run's tree had uncommitted changes: they are not in that SHA)")
    return 1 if args.strict and differ else 0


# -------------------------------------------------------------------------------------- codegen
def cmd_codegen(args: argparse.Namespace) -> int:
    from harness.codegen import codegen_records
    from harness.env import host_environment
    from harness.records import Status
    from harness.results import ResultsWriter

    reg = discover()
    _report_discovery_errors(reg)
    specs = [s for s in _select(reg, args) if s.rung != Rung.CUBLAS]
    try:
        problem = Problem.parse(args.problem)
        expand([problem.key])  # the same validation as bench's problems
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not specs:
        raise UsageError("codegen: the selection holds only the cuBLAS reference (no PTX)")
    envs = _worker_envs(args, reg)
    configurable = _codegen_configurable(specs, args.config, args.timeout, envs)
    out = _out_path(args, "codegen")
    env = {
        **host_environment(specs),
        "problem": problem.key,
        "config": args.config,
        "backends": {b: e.as_dict() for b, e in envs.items()},
    }
    writer = ResultsWriter(out, "codegen", env)
    _print(f"codegen: {len(specs)} kernel(s) for {problem.key} -> {out}")
    counts: dict[str, int] = {}
    for rec in codegen_records(
        specs,
        problem,
        timeout_s=args.timeout,
        log=_print,
        ptx_dir=Path(args.ptx_dir) if args.ptx_dir else None,
        config=args.config,
        configurable=configurable,
        envs=envs,
    ):
        writer.add(rec)
        counts[rec.status.value] = counts.get(rec.status.value, 0) + 1
    writer.finish()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    _print(f"done: {summary}; wrote {out}")
    if not counts.get(Status.OK.value):
        print(
            "error: no kernel compiled (are the DSLs installed? `python -m harness list` says)",
            file=sys.stderr,
        )
        return 1
    return 1 if any(Status(k).failed for k in counts) else 0


def _codegen_configurable(
    specs: Sequence[KernelSpec], request: str | None, timeout: float, envs: dict[str, Any]
) -> set[str] | None:
    """With ``--config``: the kernels it applies to, after checking it against their menus
    (UsageError before anything compiles); None without one."""
    if not request:
        return None
    from harness.codegen import config_menus
    from harness.runner import survey

    status = survey(specs, envs, timeout)
    installed = [s for s in specs if not status[s.id].missing]
    menus = {
        k: m for k, m in config_menus(installed, timeout, envs).items() if not isinstance(m, str)
    }
    if not menus:
        raise UsageError(
            f"--config {request}: none of the selected kernels loads here to check it against "
            "(`python -m harness list` says why)"
        )
    _check_configs(menus, [request])
    return {k for k, m in menus.items() if isinstance(m, list)}


# ---------------------------------------------------------------------------------------- merge
def cmd_merge(args: argparse.Namespace) -> int:
    from harness.merge import MergeError, merge_documents
    from harness.results import ResultsError, ResultsWriter, load, result_files

    try:
        docs = [load(f) for f in result_files(args.results)]
        merged = merge_documents(docs, allow_mixed=args.allow_mixed)
    except (ResultsError, MergeError) as e:
        raise UsageError(str(e)) from None
    out = _out_path(args, "bench-merged")
    writer = ResultsWriter(out, "bench", dict(merged.environment), base=merged)
    missing = merged.environment.get("missing_units") or []
    if merged.finished:
        writer.finish()
    units = len({r.problem_key for r in merged.bench})
    _print(
        f"merged {len(docs)} file(s): {units} problem(s), {len(merged.bench)} record(s) -> {out}"
    )
    if missing:
        _warn(
            f"{len(missing)} problem(s) of the run are in none of the files "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): a shard missing?"
        )
    return 0


# ----------------------------------------------------------------------------------- tune-table
def cmd_tune_table(args: argparse.Namespace) -> int:
    from harness.results import load_many
    from harness.tune import choose, tuning_docs, write_tables

    try:
        docs = tuning_docs(load_many(args.results, warn=_warn), _warn)
    except ValueError as e:
        raise UsageError(str(e)) from None
    choices = choose(docs, margin=args.margin / 100.0)
    if not choices:
        raise UsageError(
            "no problem with two or more timed configs in these files (run `bench --tune`)"
        )
    for c in choices:
        if c.selected is None:
            why = "fastest (no record of the kernel's own choice)"
        elif c.fastest is c.selected:
            why = "the kernel's own choice is the fastest"
        elif c.chosen is c.selected:
            lead = c.selected.median_ms / c.fastest.median_ms - 1.0  # type: ignore[operator]
            why = f"own choice kept: {c.fastest.config} is only {100 * lead:+.1f}%"
        else:
            why = f"{100 * (c.gain or 0.0):+.1f}% over the own choice {c.selected.config}"
        _print(f"{c.kernel:<34} {c.problem.key:<22} {c.chosen.config:<36} {why}")
    if args.dry_run:
        return 0
    for path in write_tables(choices, discover(), log=_warn):
        _print(f"wrote {path}")
    return 0


# ------------------------------------------------------------------------------------- fit-cost
def _cost_model(module: str | None):
    """``COST`` of a rung-8 module (e.g. ``backends.cutedsl.sm90.r8_shape_adaptive``), the
    model a partial fit starts from (the shared ``HOPPER`` without one); a one-line error if
    it has none."""
    import importlib

    from harness.tile_cost import HOPPER, TileCostModel

    if module is None:
        return HOPPER
    try:
        cost = getattr(importlib.import_module(module), "COST", None)
    except ImportError as e:
        raise ValueError(f"--base {module}: cannot import it ({e})") from None
    if not isinstance(cost, TileCostModel):
        raise ValueError(f"--base {module}: no COST cost model in that module")
    return cost


def _with_set(base, pairs: Sequence[str]):
    """``base`` with ``--set NAME=VALUE`` constants (``eff:RxC``, ``ueff:RxC`` or a scalar of
    ``TileCostModel``); ValueError naming a malformed or unknown one."""
    values: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            values[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"--set {pair!r}: give NAME=NUMBER, e.g. ueff:64x192=0.69")
    known = set(base.params())
    scalars = ", ".join(sorted(n for n in known if ":" not in n))
    for name in values:
        kind, _, tile = name.partition(":")
        if kind in ("eff", "ueff") and not re.fullmatch(r"\d+x\d+", tile):
            raise ValueError(f"--set {name}: a tile's efficiency is {kind}:ROWSxCOLS")
        if name not in known and kind not in ("eff", "ueff"):
            raise ValueError(f"--set {name}: no such cost-model constant ({scalars})")
    return base.with_params(values)


def _moves_problems(suites: Sequence[str]):
    """The problems of ``--moves`` suites: tuning suites only (the picks a fit moves decide
    what to time next, so a held-out suite would be tuned on)."""
    from harness.problems import expand, held_out

    for name in suites:
        if held_out(name):
            raise ValueError(f"--moves {name}: a held-out suite; list moves on tuning suites")
    return expand(list(suites))


def cmd_fit_cost(args: argparse.Namespace) -> int:
    import importlib

    from harness.fitcost import report
    from harness.results import load_many
    from harness.tune import tuning_docs

    try:
        if args.moves and not args.base:
            raise ValueError("--moves needs --base MODULE: whose heuristic's picks to move")
        problems = _moves_problems(args.moves)
        docs = tuning_docs(load_many(args.results, warn=_warn), _warn)
        current = _cost_model(args.base)
        base = _with_set(current, args.set)
        module = importlib.import_module(args.base) if args.base else None
        # the module's own choice: judged where the runs timed it, moved by --moves
        heuristic = getattr(module, "_heuristic", None)
        if args.moves and heuristic is None:
            raise ValueError(f"--base {args.base}: no _heuristic(problem, model) to move")
        parts = (args.base or "").split(".")
        kernel = "/".join(parts[1:]) if parts[0] == "backends" else (args.base or "")
        text = report(
            docs,
            backends=args.backend or None,
            folds=args.folds,
            rounds=args.rounds,
            base=base,
            only=tuple(args.only),
            min_problems=args.min_problems,
            heuristic=heuristic,
            moves_over=problems,
            kernel=kernel,
            current=current,
            priced=getattr(module, "priced", None),  # which of its kernels the model prices
            # its rule that reads the GPU, if its config space has one
            on_gpu=getattr(getattr(getattr(module, "KERNEL", None), "space", None), "on_gpu", None),
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    _print(text)
    return 0


# ------------------------------------------------------------------------------------------ main
class _Parser(argparse.ArgumentParser):
    """Errors as one line naming the problem (argparse's default adds a usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from harness.timing import TimerSettings

    ap = _Parser(prog="python -m harness", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def selection(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--backend", action="append", default=[], help="backend (repeatable; default: all)"
        )
        p.add_argument(
            "--rung",
            action="append",
            default=[],
            help="rung number or name (repeatable), e.g. 7 or multi_consumer",
        )
        p.add_argument("--arch", action="append", default=[], help=" or ".join(ARCHES))
        p.add_argument(
            "--kernel",
            action="append",
            default=[],
            help="kernel id, e.g. gluon/sm90/r7_multi_consumer (repeatable)",
        )

    def environments(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--python",
            action="append",
            default=[],
            metavar="BACKEND=PATH",
            help="run BACKEND's workers under this interpreter, e.g. tirx=.venv-tirx/bin/python "
            "(repeatable; default: this one)",
        )
        p.add_argument(
            "--env",
            action="append",
            default=[],
            metavar="BACKEND:VAR=VALUE",
            help="set VAR in BACKEND's workers, e.g. tirx:PYTHONPATH=/opt/tirx (replaces the "
            "inherited value; repeatable)",
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
    p.add_argument(
        "--config",
        action="append",
        default=[],
        help="force a config on kernels that declare configs: a name or k=v overrides of "
        "their own choice, e.g. epilogue=serial, or 'own' for the choice itself (repeatable: "
        "each is run, a config asked for twice once)",
    )
    p.add_argument(
        "--tune",
        action="store_true",
        help="time every config valid for each problem (kernels with a config space)",
    )
    p.add_argument(
        "--tune-top",
        type=int,
        metavar="N",
        help="with --tune: time only the N configs the kernel ranks best for each problem "
        "(its cost model; menu order without one), plus its own choice",
    )
    p.add_argument("--out", help=f"results JSON path or folder (default {DEFAULT_RUN_DIR}/)")
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
        help="cpu runs only kernels that declare devices=('cpu',)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=TimerSettings.warmup_s,
        help="warm-up seconds per kernel in the first round",
    )
    p.add_argument("--min-samples", type=int, default=TimerSettings.min_samples)
    p.add_argument(
        "--min-time",
        type=float,
        default=TimerSettings.min_time_s,
        help="measured seconds per kernel",
    )
    p.add_argument(
        "--rounds", type=int, default=TimerSettings.rounds, help="round-robin rounds per problem"
    )
    p.add_argument(
        "--rewarm",
        type=float,
        default=TimerSettings.rewarm_s,
        help="warm-up seconds per kernel in later rounds",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=TimerSettings.settle_s,
        help="more warm-up seconds before each problem's first measurement (cuBLAS's), "
        "after the GPU idled through compiles and checks",
    )
    p.add_argument(
        "--hold-floor",
        type=float,
        default=TimerSettings.hold_floor_ms,
        metavar="MS",
        help="time every kernel shorter than MS behind at least MS of full-load GPU work per "
        "launch, the same for every DSL whatever its launch cost (default %(default)s; 0: "
        "timer v4, hold only kernels shorter than their host launch, 1.5x their host time)",
    )
    p.add_argument(
        "--count-hold",
        action=argparse.BooleanOptionalAction,
        default=TimerSettings.count_hold,
        help="timer v6 (the default): a held kernel's --min-time counts the hold it is timed "
        "behind, and its warm-ups run held too; --no-count-hold is timer v5, which counts only "
        "the kernel's own time (on an H200, five short-kernel shapes: the same numbers in 37 %% "
        "of v5's device time; docs/design.md, 'Timing')",
    )
    p.add_argument("--checks", type=int, default=2, help="correctness checks per problem")
    p.add_argument("--check-only", action="store_true", help="check correctness, skip timing")
    p.add_argument(
        "--launched",
        action="store_true",
        help="with --check-only: profile one launch of each correct kernel and record the "
        "device kernels it ran, each with its time (cuBLAS's names its tile and cluster); "
        "such a run's compile times carry the profiler's overhead",
    )
    p.add_argument("--no-reference", action="store_true", help="do not add cuBLAS")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 if any kernel was wrong, errored or timed out"
    )
    environments(p)
    p.add_argument(
        "--gpus",
        metavar="LIST",
        help="run on these GPUs of this host at once: 'all' or numbers like 0,1 (among "
        "CUDA_VISIBLE_DEVICES if set); one problem at a time per GPU, longest first",
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: this host's GPUs (default); ray: one Ray task of one GPU per problem "
        "(the [cluster] extra)",
    )
    p.add_argument(
        "--address", help="with --executor ray: the cluster to join, e.g. auto (default: local)"
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (0-based; every N-th problem from the I-th), for job "
        "arrays; `python -m harness merge` joins the shard files",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out FILE.json: skip the problems it has finished",
    )
    p.add_argument(
        "--rest-of",
        metavar="FILE",
        help="run only the problems the earlier run FILE (of this plan) has not finished, into "
        "--out: for a run --resume refuses to continue for other code; `python -m harness "
        "merge --allow-mixed` joins the two",
    )
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser(
        "picks",
        help="print the config each kernel would run per problem and why (no GPU, no compile)",
    )
    selection(p)
    p.add_argument(
        "--suite",
        action="append",
        default=None,
        help="suite or shape, as for bench (repeatable; default: smoke, or with --against "
        "the run's problems)",
    )
    p.add_argument("--dtype", action="append", default=None, choices=DTYPES)
    p.add_argument(
        "--gpu",
        metavar="NAME",
        help="select as on this GPU model, e.g. 'NVIDIA H200' (its tuned tables); default: "
        "the --against run's GPU, else this machine's, else none (heuristics only)",
    )
    p.add_argument(
        "--against",
        metavar="RUN.json",
        help="a bench results file: list where today's selection differs from what it ran, "
        "and whether the kernels' code changed since its git SHA",
    )
    p.add_argument("--all", action="store_true", help="with --against: list every problem")
    p.add_argument(
        "--below",
        type=float,
        metavar="RATIO",
        help="with --against: list only the problems today's selection runs as the run ran "
        "them and that ran below RATIO of cuBLAS there (e.g. 0.9: the misses still standing)",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 if any pick differs or is refused")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to load each kernel")
    environments(p)
    p.set_defaults(fn=cmd_picks)

    p = sub.add_parser("codegen", help="compile every kernel without a GPU and tabulate it")
    selection(p)
    environments(p)
    p.add_argument("--problem", default="4096x4096x4096-fp16")
    p.add_argument("--config", help="force a config on kernels that declare configs")
    p.add_argument("--out", help=f"codegen JSON path or folder (default {DEFAULT_RUN_DIR}/)")
    p.add_argument("--ptx-dir", help="also write each kernel's PTX here")
    p.add_argument("--timeout", type=float, default=600.0)
    p.set_defaults(fn=cmd_codegen)

    p = sub.add_parser("merge", help="join the files of a sharded (or split) run into one")
    p.add_argument("results", nargs="+", help="bench result files or folders of one run")
    p.add_argument("--out", help=f"merged JSON path or folder (default {DEFAULT_RUN_DIR}/)")
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="merge pieces of different code (git SHA), GPU models or plans anyway",
    )
    p.set_defaults(fn=cmd_merge)

    p = sub.add_parser(
        "tune-table", help="write the winners of `bench --tune` runs into the tuned tables"
    )
    p.add_argument("results", nargs="+", help="bench result files or folders of a --tune run")
    p.add_argument(
        "--margin",
        type=float,
        default=1.0,
        help="%% a config must beat the kernel's own choice by to replace it (default 1)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the choices, write nothing")
    p.set_defaults(fn=cmd_tune_table)

    p = sub.add_parser(
        "fit-cost",
        help="fit the rung-8 cost model to tuning runs and report its cross-validated error",
    )
    p.add_argument("results", nargs="+", help="bench result files or folders (tuning suites only)")
    p.add_argument(
        "--backend", action="append", default=[], help="fit on this backend's rung 8 only"
    )
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds (by problem)")
    p.add_argument("--rounds", type=int, default=6, help="coordinate-descent rounds")
    p.add_argument(
        "--base",
        metavar="MODULE",
        help="start from this rung-8 module's COST (e.g. backends.cutedsl.sm90."
        "r8_shape_adaptive) instead of the shared HOPPER model, and fit on the timings of "
        "the kernels its `priced` rule names (if it declares one); the report then also "
        "judges the module's heuristic as it stands where the runs timed its pick",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="fit only the constants matching this glob (repeatable), e.g. 'eff:256x*', or "
        "'ueff:*' (the unswapped tiles' own efficiencies a base names); the others keep the "
        "base's values",
    )
    p.add_argument(
        "--min-problems",
        type=int,
        default=1,
        metavar="N",
        help="a tile timed on fewer problems keeps the base's (interpolated) efficiency "
        "instead of one fitted to so few timings (default 1: every timed tile is fitted)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="start from the base with this constant set (repeatable), e.g. ueff:64x192=0.69: "
        "names an unswapped tile's own efficiency, so --only 'ueff:*' fits it and the "
        "heuristic may pick it",
    )
    p.add_argument(
        "--moves",
        action="append",
        default=[],
        metavar="SUITE",
        help="with --base: list the picks of the base module's heuristic the fitted constants "
        "move over this tuning suite (repeatable), those timed both ways and the bench "
        "commands that would time the rest",
    )
    p.set_defaults(fn=cmd_fit_cost)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from harness.quiet import quiet_resource_tracker

    args = build_parser().parse_args(argv)
    quiet_resource_tracker()
    if getattr(args, "suite", "x") is None and not getattr(args, "against", None):
        args.suite = ["smoke"]
    if getattr(args, "dtype", "x") is None:
        args.dtype = ["fp16"]
    try:
        return int(args.fn(args))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file the command writes (a full disk, a read-only mount): one line
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
