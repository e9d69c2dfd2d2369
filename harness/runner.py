"""The benchmark loop: check every kernel on every problem, then time them interleaved.

The unit of work is one problem: cuBLAS and every kernel and config of it, on one GPU, so every
% of cuBLAS compares measurements of the same GPU in the same minute. A :class:`Runner` owns
one set of workers (one process per kernel, each under its backend's interpreter and
environment, :class:`~harness.isolate.WorkerEnv`) on one GPU (``slot``: the
``CUDA_VISIBLE_DEVICES`` its workers get); the executors (:mod:`harness.executors`) hand it
problems, one or many runners at a time.

For each problem, every selected kernel — or, for a kernel with a config space, every config
asked for (its own choice by default, the ones named by ``--config``, or all valid ones with
``--tune``) — is prepared in the kernel's own worker process (resolve config -> supports ->
compile -> correctness check on fresh inputs). What passes is then timed in ``rounds``
round-robin passes (unit 1, unit 2, ..., unit 1, ...), so clock or thermal drift during a
problem affects every unit alike; the samples of all rounds are pooled. cuBLAS comes first in
every round and is timed once more after the last one: how far its median moved between its
first round and that closing measurement is the problem's drift (``cublas_drift_pct``). The
first round also re-checks one timed launch's output (``measure`` with ``recheck``): a unit
that fails it is recorded ``wrong`` ("after timing: ...") and timed no further. A run that
times nothing may instead profile each correct unit's launch once (``launched``): what it ran
on the device, kernel by kernel (:mod:`harness.launched`). Any timeout,
crash or exception is recorded against that kernel, config and problem, its worker is
replaced, and the run goes on; after a crash or a hang the GPU is first probed in a fresh
process (:meth:`Runner.probe`), and a GPU that fails the probe raises :class:`DeviceFailed`:
it gets no more work. Records are yielded as soon as they are final.

The run's policy lives here too: cuBLAS joins every run (:func:`with_reference`), and a kernel
whose requirements its environment lacks is recorded "not installed" for every problem
(:func:`survey`, asked of each backend's own environment; :func:`run_unit`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.isolate import Worker, WorkerDied, WorkerEnv
from harness.launched import summary
from harness.protocol import KernelSpec, Problem, Rung
from harness.records import BenchRecord, Status
from harness.telemetry import Telemetry, merge
from harness.timing import TimerSettings, summarize

__all__ = [
    "BenchPlan",
    "DeviceFailed",
    "RunSettings",
    "Runner",
    "SpecStatus",
    "Unit",
    "UnitOutcome",
    "base_record",
    "run_unit",
    "survey",
    "with_reference",
]

#: Seconds a device probe may take (a fresh process, a CUDA context, one small GEMM).
PROBE_TIMEOUT_S = 120.0
#: Seconds a fresh worker always gets to describe or probe its GPU, however short ``--timeout``
#: (which bounds a kernel's steps): a Python start, torch's import and a CUDA context take
#: seconds on a loaded host, and a GPU that misses its probe is quarantined for the run.
DEVICE_CHECK_MIN_S = 30.0


@dataclass(frozen=True)
class RunSettings:
    device: str = "cuda"
    timeout_s: float = 300.0
    checks: int = 2
    measure: bool = True
    timer: TimerSettings = field(default_factory=TimerSettings)
    #: Config requests (names, ``k=v`` overrides, or ``own``: the kernel's own choice) forced on
    #: every kernel with a config space; two that resolve to one config run it once.
    configs: tuple[str, ...] = ()
    #: Time every config valid for each problem (kernels with a config space).
    tune: bool = False
    #: With ``tune``: only the kernel's ``tune_top`` best-ranked configs (plus its own choice).
    tune_top: int | None = None
    #: Without ``measure``: profile each correct unit's launch once and record the device
    #: kernels it ran (:mod:`harness.launched`).
    launched: bool = False

    def __post_init__(self) -> None:
        if self.launched and self.measure:
            raise ValueError("launched needs measure=False: the profiler would stay loaded")


def base_record(spec: KernelSpec, problem: Problem, **fields: Any) -> BenchRecord:
    return BenchRecord(**BenchRecord.identity(spec), problem=problem, **fields)


# -------------------------------------------------------------------------------- policy
def with_reference(
    specs: Sequence[KernelSpec], known: Iterable[KernelSpec], device: str, add: bool = True
) -> list[KernelSpec]:
    """The kernels a run times: ``specs`` with the cuBLAS reference (the rung-0 kernels of
    ``known``) first unless ``add`` is False or the selection holds one already, keeping only
    kernels that run on ``device``."""
    out = list(specs)
    if add and not any(s.rung == Rung.CUBLAS for s in out):
        out = [s for s in known if s.rung == Rung.CUBLAS and device in s.devices] + out
    return [s for s in out if device in s.devices]


@dataclass(frozen=True)
class SpecStatus:
    """What a kernel's environment lacks (empty: it can run) and the versions it holds."""

    missing: tuple[str, ...] = ()
    versions: Mapping[str, Any] | None = None

    @property
    def reason(self) -> str | None:
        return f"not installed: {', '.join(self.missing)}" if self.missing else None


def survey(
    specs: Sequence[KernelSpec], envs: Mapping[str, WorkerEnv], timeout_s: float = 300.0
) -> dict[str, SpecStatus]:
    """spec id -> :class:`SpecStatus`, asked of each backend's own environment (one worker per
    distinct environment; nothing is imported but the harness). An environment whose worker
    cannot start makes its kernels "not installed", saying why."""
    groups: dict[WorkerEnv, list[KernelSpec]] = {}
    for spec in specs:
        groups.setdefault(envs.get(spec.backend, WorkerEnv()), []).append(spec)
    out: dict[str, SpecStatus] = {}
    for env, members in groups.items():
        w = Worker(None, "cpu", env=env)
        try:
            reply = w.call({"op": "inspect", "specs": members}, timeout=timeout_s)
            error = reply.get("error") if reply.get("status") == Status.ERROR.value else None
        except (TimeoutError, WorkerDied) as e:
            reply, error = {}, str(e)
        finally:
            w.stop()
        for spec in members:
            if error is not None:
                out[spec.id] = SpecStatus((f"a working environment ({env.describe()}): {error}",))
            else:
                got = reply["specs"][spec.id]
                out[spec.id] = SpecStatus(tuple(got["missing"]), got["versions"])
    return out


# -------------------------------------------------------------------------------- units
@dataclass(frozen=True)
class Unit:
    """One problem of a run: cuBLAS and every kernel and config of it, on one GPU.
    ``index`` is its place in the run's plan (the order of the suites)."""

    index: int
    problem: Problem

    @property
    def key(self) -> str:
        return self.problem.key


@dataclass(frozen=True)
class UnitOutcome:
    """What running a unit on one GPU gave: its records, or nothing if it is to run again.

    ``device_failed`` says why the GPU failed its probe (it gets no more work); ``retry`` that
    the unit is to run again on another GPU (its records here are dropped); ``bounced`` that it
    never ran because it landed on a GPU already quarantined.
    """

    unit: Unit
    records: tuple[BenchRecord, ...]
    gpu: Mapping[str, Any] | None = None
    device_failed: str | None = None
    retry: bool = False
    bounced: bool = False


@dataclass(frozen=True)
class BenchPlan:
    """Everything a unit needs, wherever it runs (it pickles: Ray ships it to its tasks).

    ``specs`` are the kernels that run, ``unavailable`` those whose environment lacks what they
    need (recorded "not installed" in every unit), ``envs`` each backend's worker environment,
    ``menus`` each configurable kernel's config names, ``versions`` each kernel's environment's
    versions (:func:`survey`).
    """

    specs: tuple[KernelSpec, ...]
    settings: RunSettings
    unavailable: tuple[tuple[KernelSpec, str], ...] = ()
    envs: Mapping[str, WorkerEnv] = field(default_factory=dict)
    menus: Mapping[str, list[str] | None] = field(default_factory=dict)
    versions: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)

    def runner(
        self,
        slot: str | None = None,
        log: Callable[[str], None] = lambda _m: None,
        gpu: Mapping[str, Any] | None = None,
    ) -> Runner:
        """A runner for this plan's kernels on ``slot`` (the GPU its workers see)."""
        return Runner(
            self.specs,
            self.settings,
            log,
            envs=self.envs,
            slot=slot,
            menus=self.menus,
            versions=self.versions,
            gpu=gpu,
        )


class DeviceFailed(RuntimeError):
    """The GPU failed its probe after a worker crashed or hung on it: ``record`` is that
    worker's record, ``why`` what the probe said."""

    def __init__(self, why: str, record: BenchRecord) -> None:
        super().__init__(why)
        self.why = why
        self.record = record


def run_unit(plan: BenchPlan, runner: Runner, unit: Unit, final: bool) -> UnitOutcome:
    """Run ``unit`` on ``runner``'s GPU: the "not installed" records, then the kernels.

    If the GPU fails its probe, the unit is to run again elsewhere (``retry``) — unless this is
    its ``final`` attempt (it failed so on another GPU already): then the failure is the
    kernel's, recorded as such, and the kernels the unit had not reached are recorded as not
    run. Either way the GPU gets no more work (``device_failed``).
    """
    problem = unit.problem
    records = [
        runner.stamp(base_record(spec, problem, status=Status.UNSUPPORTED, reason=why))
        for spec, why in plan.unavailable
    ]
    try:
        for rec in runner.iter_problem(problem):
            records.append(rec)
    except DeviceFailed as e:
        if not final:
            return UnitOutcome(unit, (), runner.gpu, device_failed=e.why, retry=True)
        where = _gpu_name(runner.gpu)
        failed = replace(
            e.record,
            reason=f"{e.record.reason}; {where} then failed its probe ({e.why}), as another GPU "
            "did on this problem: the kernel's failure",
        )
        records.append(runner.stamp(failed))
        done = {r.kernel for r in records}
        records += [
            runner.stamp(
                base_record(
                    spec,
                    problem,
                    status=Status.ERROR,
                    reason=f"not run: {where} failed its probe after {failed.kernel} failed",
                )
            )
            for spec in plan.specs
            if spec.id not in done
        ]
        return UnitOutcome(unit, tuple(records), runner.gpu, device_failed=e.why)
    return UnitOutcome(unit, tuple(records), runner.gpu)


def _gpu_name(gpu: Mapping[str, Any] | None) -> str:
    if not gpu:
        return "the GPU"
    slot = f"GPU {gpu['visible']}" if gpu.get("visible") is not None else "the GPU"
    return f"{slot} of {gpu.get('host')}" if gpu.get("host") else slot


# -------------------------------------------------------------------------------- runner
@dataclass
class _Unit:
    """One (kernel, config request) to prepare and time for one problem."""

    spec: KernelSpec
    request: str | None
    record: BenchRecord

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.spec.id, self.record.config)


class Runner:
    """Owns one worker per kernel on one GPU for the duration of a run (a context manager).

    ``envs`` maps a backend to the environment its workers run in (default: the harness's
    own); ``slot`` is the ``CUDA_VISIBLE_DEVICES`` they get (None: inherited); ``menus`` the
    config menus already known (else :meth:`menus` asks the workers); ``versions`` and ``gpu``
    are stamped on every record (:meth:`stamp`).
    """

    def __init__(
        self,
        specs: Sequence[KernelSpec],
        settings: RunSettings,
        log: Callable[[str], None] = lambda _m: None,
        *,
        envs: Mapping[str, WorkerEnv] | None = None,
        slot: str | None = None,
        menus: Mapping[str, list[str] | None] | None = None,
        versions: Mapping[str, Mapping[str, Any] | None] | None = None,
        gpu: Mapping[str, Any] | None = None,
    ) -> None:
        self.specs = list(specs)
        self.settings = settings
        self.log = log
        self.envs = dict(envs or {})
        self.slot = slot
        self.versions = dict(versions or {})
        self.gpu = gpu
        self.reference = next((s for s in self.specs if s.rung == Rung.CUBLAS), None)
        self._workers: dict[str, Worker] = {}
        self._menus: dict[str, list[str] | None] = dict(menus or {})

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self._workers.values():
            w.stop()
        self._workers.clear()

    def _env(self, spec: KernelSpec | None) -> WorkerEnv:
        return self.envs.get(spec.backend, WorkerEnv()) if spec is not None else WorkerEnv()

    def _fresh_worker(self, spec: KernelSpec | None) -> Worker:
        return Worker(spec, self.settings.device, env=self._env(spec), visible=self.slot)

    def _worker(self, spec: KernelSpec) -> Worker:
        if spec.id not in self._workers:
            self._workers[spec.id] = self._fresh_worker(spec)
        return self._workers[spec.id]

    def stamp(self, rec: BenchRecord) -> BenchRecord:
        """``rec`` naming the GPU this runner runs on and its kernel's environment versions."""
        return replace(rec, gpu=self.gpu, versions=self.versions.get(rec.kernel))

    def device_info(self) -> dict[str, Any]:
        """Describe the device from a throw-away worker in the reference's environment (the
        parent never touches the GPU)."""
        w = Worker(None, self.settings.device, env=self._env(self.reference), visible=self.slot)
        try:
            timeout = max(self.settings.timeout_s, DEVICE_CHECK_MIN_S)
            reply = w.call({"op": "env"}, timeout=timeout)
        except (TimeoutError, WorkerDied) as e:
            return {"device_error": str(e)}
        finally:
            w.stop()
        if reply.get("status") == Status.ERROR.value:
            return {"device_error": reply.get("error")}
        return reply

    def probe(self) -> str | None:
        """None if the GPU computes the reference (without one, a torch GEMM) correctly in a
        fresh process, else what went wrong."""
        w = self._fresh_worker(self.reference)
        try:
            timeout = min(max(self.settings.timeout_s, DEVICE_CHECK_MIN_S), PROBE_TIMEOUT_S)
            reply = w.call({"op": "probe"}, timeout=timeout)
        except (TimeoutError, WorkerDied) as e:
            return str(e)
        finally:
            w.stop()
        if reply.get("ok"):
            return None
        return str(reply.get("error"))

    # -- configs -------------------------------------------------------------------------------
    def _ask(self, spec: KernelSpec, cmd: dict[str, Any]) -> dict[str, Any] | str:
        """``spec``'s worker's reply to a host-side command (its kernel loaded, nothing
        launched), or the error that loading or answering raised (a text; the worker is
        killed, and the next call starts a fresh one)."""
        try:
            reply = self._worker(spec).call(cmd, self.settings.timeout_s)
        except (TimeoutError, WorkerDied) as e:
            return f"{type(e).__name__}: {e}"
        if reply.get("status") == Status.ERROR.value:
            self._worker(spec).kill()
            return str(reply.get("error"))
        return reply

    def menus(self) -> dict[str, list[str] | str | None]:
        """kernel id -> its config menu (names), None without a config space, or the error
        that loading it raised (a text). Loads each kernel in its worker."""
        out: dict[str, list[str] | str | None] = {}
        for spec in self.specs:
            reply = self._ask(spec, {"op": "describe"})
            if isinstance(reply, str):
                out[spec.id] = reply
                continue
            out[spec.id] = reply["configs"]
            self._menus[spec.id] = reply["configs"]
        return out

    def picks(
        self,
        problems: Sequence[Problem],
        gpu_name: str | None,
        ran: Mapping[tuple[str, str], str] | None = None,
    ) -> dict[str, dict[str, Any] | str]:
        """kernel id -> its worker's ``picks`` reply for ``problems`` on a GPU named
        ``gpu_name`` (``harness.worker``: the config each would run and why, without compiling,
        and whether it is the config ``ran`` says a run ran: (kernel id, problem key) -> config
        name), or the error that loading the kernel raised (a text)."""
        out: dict[str, dict[str, Any] | str] = {}
        for spec in self.specs:
            before = [(ran or {}).get((spec.id, p.key)) for p in problems]
            cmd = {"op": "picks", "problems": list(problems), "gpu": gpu_name, "ran": before}
            out[spec.id] = self._ask(spec, cmd)
        return out

    def _requests(self, spec: KernelSpec, problem: Problem) -> list[str | None] | BenchRecord:
        """The config requests to run ``spec`` on ``problem`` with (or a failure record)."""
        menu = self._menus.get(spec.id)
        if menu is None:  # no config space (or not described: the prepare step will say why)
            return [None]
        if self.settings.tune:
            rec = base_record(spec, problem)
            cmd = {"op": "configs_for", "problem": problem, "top": self.settings.tune_top}
            reply = self._call(spec, rec, cmd)
            if isinstance(reply, BenchRecord):
                return reply
            names = reply["configs"]
            if not names:
                return base_record(
                    spec,
                    problem,
                    status=Status.UNSUPPORTED,
                    reason="no config on the menu supports this problem",
                )
            return list(names)
        return list(self.settings.configs) or [None]

    # -- worker calls --------------------------------------------------------------------------
    def _call(
        self, spec: KernelSpec, rec: BenchRecord, cmd: dict[str, Any]
    ) -> dict[str, Any] | BenchRecord:
        """One worker call: its reply, or ``rec`` updated with the failure. After a crash or a
        hang the GPU is probed first; a failed probe raises :class:`DeviceFailed`."""
        try:
            reply = self._worker(spec).call(cmd, timeout=self.settings.timeout_s)
        except (TimeoutError, WorkerDied) as e:
            status = Status.TIMEOUT if isinstance(e, TimeoutError) else Status.ERROR
            failed = replace(rec, status=status, reason=str(e))
            why = self.probe()
            if why is not None:
                self.log(f"    {_gpu_name(self.gpu)} failed its probe after {rec.label}: {why}")
                raise DeviceFailed(why, failed) from None
            return failed
        if reply.get("status") == Status.ERROR.value:
            # A Python error may leave a CUDA context poisoned: start the next call afresh.
            self._worker(spec).kill()
            return replace(
                rec,
                status=Status.ERROR,
                reason=reply.get("error"),
                traceback=reply.get("traceback"),
            )
        return reply

    def _prepare(self, spec: KernelSpec, problem: Problem, request: str | None) -> _Unit:
        rec = base_record(spec, problem)
        reply = self._call(
            spec,
            rec,
            {
                "op": "prepare",
                "problem": problem,
                "checks": self.settings.checks,
                "config": request,
            },
        )
        if isinstance(reply, BenchRecord):  # the worker failed: say which config it was asked
            return _Unit(spec, request, replace(reply, config=reply.config or request))
        rec = replace(
            rec,
            status=Status(reply["status"]),
            reason=reply.get("reason"),
            compile_s=reply.get("compile_s"),
            check=reply.get("check"),
            config=reply.get("config"),
            config_values=reply.get("config_values"),
            selected=reply.get("selected"),
            selection=reply.get("selection"),
        )
        return _Unit(spec, request, rec)

    def _launched(self, unit: _Unit, problem: Problem) -> BenchRecord:
        """``unit``'s record with the device kernels one launch ran (logged under its line).
        A failed profile leaves the record as checked and says why: the kernel was right."""
        cmd = {"op": "launched", "problem": problem, "config": unit.record.config}
        reply = self._call(unit.spec, unit.record, cmd)
        self.log(_line(unit.record))
        if isinstance(reply, BenchRecord):
            self.log(f"      not profiled: {reply.reason}")
            return unit.record
        self._release(unit, problem)
        for line in summary(reply["launched"]):
            self.log("      " + line)
        return replace(unit.record, launched=tuple(reply["launched"]))

    def _release(self, unit: _Unit, problem: Problem) -> None:
        """Drop ``unit``'s launch function (and what it holds on the device) in its worker."""
        self._call(
            unit.spec,
            unit.record,
            {"op": "release", "problem": problem, "config": unit.record.config},
        )

    def _restore(
        self, spec: KernelSpec, problem: Problem, timed: list[_Unit]
    ) -> Iterator[BenchRecord]:
        """After an error replaced ``spec``'s worker, prepare its other units of ``problem``
        again (compile + check) in the new one: their launch functions died with the old
        worker. A unit that now fails leaves ``timed`` and its record is yielded."""
        for unit in [u for u in timed if u.spec == spec]:
            again = self._prepare(spec, problem, unit.request)
            if again.record.status != Status.OK:
                timed.remove(unit)
                self.log(_line(again.record))
                yield again.record

    def _measure(
        self, unit: _Unit, problem: Problem, warmup_s: float, recheck: bool
    ) -> dict[str, Any] | BenchRecord:
        """One round's measurement of ``unit`` (a share of the problem's samples and time)."""
        t = self.settings.timer
        return self._call(
            unit.spec,
            unit.record,
            {
                "op": "measure",
                "problem": problem,
                "config": unit.record.config,
                "settings": t.as_dict(),
                "warmup_s": warmup_s,
                "min_samples": math.ceil(t.min_samples / t.rounds),
                "min_time_s": t.min_time_s / t.rounds,
                "recheck": recheck,
            },
        )

    def run_problem(self, problem: Problem) -> list[BenchRecord]:
        """Every record of ``problem`` on this runner's GPU, stamped (:meth:`stamp`)."""
        return list(self.iter_problem(problem))

    def iter_problem(self, problem: Problem) -> Iterator[BenchRecord]:
        """The records of ``problem`` as each becomes final, stamped (:meth:`stamp`)."""
        for rec in self._run_problem(problem):
            yield self.stamp(rec)

    def _run_problem(self, problem: Problem) -> Iterator[BenchRecord]:
        s = self.settings
        timed: list[_Unit] = []
        for spec in self.specs:
            requests = self._requests(spec, problem)
            if isinstance(requests, BenchRecord):
                self.log(_line(requests))
                yield requests
                continue
            ran: set[str] = set()
            for request in requests:
                unit = self._prepare(spec, problem, request)
                name = unit.record.config
                if name in ran:  # two requests resolved to one config (``own`` and its name)
                    self.log(f"    {spec.id} [{name}]: asked for twice; run once")
                    continue  # its launch function is the earlier unit's (keyed by name)
                if name is not None:
                    ran.add(name)
                if unit.record.status == Status.ERROR:
                    yield from self._restore(spec, problem, timed)
                if unit.record.status == Status.OK and s.measure:
                    timed.append(unit)
                elif unit.record.status == Status.OK and s.launched:
                    yield self._launched(unit, problem)
                else:
                    self.log(_line(unit.record))
                    yield unit.record
        if not timed:
            return
        samples: dict[int, list[float]] = {id(u): [] for u in timed}
        first_round: dict[int, list[float]] = {}
        telemetry: dict[int, list[Telemetry]] = {id(u): [] for u in timed}
        rotation: dict[int, int] = {}
        launches: dict[int, list[tuple[float, float]]] = {id(u): [] for u in timed}
        t = s.timer
        for rnd in range(t.rounds):
            for i, unit in enumerate(list(timed)):
                if unit not in timed:  # dropped by a _restore earlier in this round
                    continue
                # the full warm-up and the re-check once per problem, in the first round;
                # the problem's first measurement also lets the rested GPU settle
                warmup = t.warmup_s if rnd == 0 else min(t.rewarm_s, t.warmup_s)
                if rnd == 0 and i == 0:
                    warmup += t.settle_s
                reply = self._measure(unit, problem, warmup, recheck=rnd == 0)
                if isinstance(reply, BenchRecord):
                    timed.remove(unit)
                    self.log(_line(reply))
                    yield reply
                    yield from self._restore(unit.spec, problem, timed)
                    continue
                recheck = reply.get("recheck")
                if recheck is not None and not recheck.passed:
                    timed.remove(unit)
                    self._release(unit, problem)
                    wrong = replace(
                        unit.record,
                        status=Status.WRONG,
                        reason=f"after timing: {recheck.failure()}",
                        check=recheck,
                    )
                    self.log(_line(wrong))
                    yield wrong
                    continue
                samples[id(unit)] += reply["samples"]
                first_round.setdefault(id(unit), list(reply["samples"]))
                telemetry[id(unit)].append(reply["telemetry"])
                rotation[id(unit)] = reply["rotation_sets"]
                launches[id(unit)].append((reply["host_ms"], reply["hold_ms_per_launch"]))
        drift = self._drift(problem, timed, first_round)
        finished: list[BenchRecord] = []
        for unit in timed:
            self._release(unit, problem)
            stats = summarize(samples[id(unit)])
            tel = merge(telemetry[id(unit)])
            tflops = problem.flops / (stats.median_ms * 1e-3) / 1e12
            ghz = tel.sm_clock_mhz_mean / 1e3 if tel.sm_clock_mhz_mean else None
            finished.append(
                replace(
                    unit.record,
                    timing=stats,
                    tflops=tflops,
                    telemetry=tel,
                    tflops_per_ghz=tflops / ghz if ghz else None,
                    rotation_sets=rotation.get(id(unit)),
                    cublas_drift_pct=drift,
                    host_launch_ms=statistics.median(h for h, _ in launches[id(unit)]),
                    hold_ms_per_launch=statistics.median(x for _, x in launches[id(unit)]),
                )
            )
        ref = next((r for r in finished if r.rung == Rung.CUBLAS), None)
        for rec in finished:
            if ref is not None and ref.timing and rec.timing:
                rec = replace(
                    rec,
                    pct_of_cublas=100.0 * ref.timing.median_ms / rec.timing.median_ms,
                    per_clock_pct_of_cublas=(
                        100.0 * rec.tflops_per_ghz / ref.tflops_per_ghz
                        if rec.tflops_per_ghz and ref.tflops_per_ghz
                        else None
                    ),
                )
            self.log(_line(rec))
            yield rec
        floor = self.settings.timer.hold_floor_ms
        if over := held_above(finished, floor):
            self.log(
                f"    note: held above the {floor:g} ms floor, so not alike: "
                + ", ".join(f"{r.label} {r.hold_ms_per_launch:.2f} ms" for r in over)
                + " a launch (a slow host launch); raise --hold-floor"
            )

    def _drift(
        self, problem: Problem, timed: list[_Unit], first_round: dict[int, list[float]]
    ) -> float | None:
        """cuBLAS timed once more after the problem's last round: its median then against
        its first round's, in % (None without a timed reference). Those closing samples only
        measure the drift; cuBLAS's statistics pool the same rounds as every kernel's."""
        ref = next((u for u in timed if u.spec.rung == Rung.CUBLAS), None)
        if ref is None or not first_round.get(id(ref)):
            return None
        t = self.settings.timer
        reply = self._measure(ref, problem, min(t.rewarm_s, t.warmup_s), recheck=False)
        if isinstance(reply, BenchRecord) or not reply["samples"]:
            return None
        before = statistics.median(first_round[id(ref)])
        return 100.0 * (statistics.median(reply["samples"]) / before - 1.0)

    def run(self, problems: Sequence[Problem]) -> Iterator[BenchRecord]:
        if (self.settings.tune or self.settings.configs) and not self._menus:
            self.menus()
        for i, problem in enumerate(problems, 1):
            self.log(f"[{i}/{len(problems)}] {problem.key}")
            yield from self.iter_problem(problem)


def held_above(records: Sequence[BenchRecord], floor_ms: float) -> list[BenchRecord]:
    """The records held longer than the timer's floor (a launch so slow that 1.5x its host
    time beat the floor): timed behind more GPU work than the rest, so not on equal terms
    (docs/design.md, "Timing"). None where the floor is off (timer v4 holds by host time)."""
    if floor_ms <= 0:
        return []
    return [r for r in records if (r.hold_ms_per_launch or 0.0) > floor_ms * 1.001]


def _line(rec: BenchRecord) -> str:
    head = f"    {rec.label:<48} {rec.status.value:<11}"
    if rec.status == Status.OK and rec.timing:
        t = rec.timing
        pct = rec.pct_of_cublas
        pct_s = f"  {pct:6.1f}% of cuBLAS" if pct is not None else ""
        return f"{head} {t.median_ms:9.4f} ms  {rec.tflops:7.1f} TFLOPS  cv {t.cv:.3f}{pct_s}"
    if rec.status == Status.OK and rec.check:
        return f"{head} correct ({rec.check.max_abs_err:.3g} max err), not timed"
    return f"{head} {rec.reason or ''}"
