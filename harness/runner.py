"""The benchmark loop: check every kernel on every problem, then time them interleaved.

For each problem, every selected kernel — or, for a kernel with a config space, every config
asked for (its own choice by default, the ones named by ``--config``, or all valid ones with
``--tune``) — is prepared in the kernel's own worker process (resolve config -> supports ->
compile -> correctness check on fresh inputs). What passes is then timed in ``rounds``
round-robin passes (unit 1, unit 2, ..., unit 1, ...), so clock or thermal drift during a
problem affects every unit alike; the samples of all rounds are pooled. The first round also
re-checks one timed launch's output (``measure`` with ``recheck``): a unit that fails it is
recorded ``wrong`` ("after timing: ...") and timed no further. Any timeout, crash or
exception is recorded against that kernel, config and problem, its worker is replaced, and the
run goes on. Records are yielded as soon as they are final.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.isolate import Worker, WorkerDied
from harness.protocol import KernelSpec, Problem, Rung
from harness.records import BenchRecord, Status
from harness.telemetry import Telemetry, merge
from harness.timing import TimerSettings, summarize

__all__ = ["RunSettings", "Runner", "base_record"]


@dataclass(frozen=True)
class RunSettings:
    device: str = "cuda"
    timeout_s: float = 300.0
    checks: int = 2
    measure: bool = True
    timer: TimerSettings = field(default_factory=TimerSettings)
    #: Config requests (names or ``k=v`` overrides) forced on every kernel with a config space.
    configs: tuple[str, ...] = ()
    #: Time every config valid for each problem (kernels with a config space).
    tune: bool = False
    #: With ``tune``: only the kernel's ``tune_top`` best-ranked configs (plus its own choice).
    tune_top: int | None = None


def base_record(spec: KernelSpec, problem: Problem, **fields: Any) -> BenchRecord:
    return BenchRecord(**BenchRecord.identity(spec), problem=problem, **fields)


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
    """Owns one worker per kernel for the duration of a run (use as a context manager)."""

    def __init__(
        self,
        specs: Sequence[KernelSpec],
        settings: RunSettings,
        log: Callable[[str], None] = lambda _m: None,
    ) -> None:
        self.specs = list(specs)
        self.settings = settings
        self.log = log
        self._workers: dict[str, Worker] = {}
        self._menus: dict[str, list[str] | None] = {}

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self._workers.values():
            w.stop()
        self._workers.clear()

    def _worker(self, spec: KernelSpec) -> Worker:
        if spec.id not in self._workers:
            self._workers[spec.id] = Worker(spec, self.settings.device)
        return self._workers[spec.id]

    def device_info(self) -> dict[str, Any]:
        """Describe the device from a throw-away worker (the parent never touches the GPU)."""
        w = Worker(None, self.settings.device)
        try:
            reply = w.call({"op": "env"}, timeout=self.settings.timeout_s)
        except (TimeoutError, WorkerDied) as e:
            return {"device_error": str(e)}
        finally:
            w.stop()
        if reply.get("status") == Status.ERROR.value:
            return {"device_error": reply.get("error")}
        return reply

    # -- configs -------------------------------------------------------------------------------
    def menus(self) -> dict[str, list[str] | str | None]:
        """kernel id -> its config menu (names), None without a config space, or the error
        that loading it raised (a text). Loads each kernel in its worker."""
        out: dict[str, list[str] | str | None] = {}
        for spec in self.specs:
            try:
                reply = self._worker(spec).call({"op": "describe"}, self.settings.timeout_s)
            except (TimeoutError, WorkerDied) as e:
                out[spec.id] = f"{type(e).__name__}: {e}"
                continue
            if reply.get("status") == Status.ERROR.value:
                out[spec.id] = str(reply.get("error"))
                self._worker(spec).kill()
                continue
            out[spec.id] = reply["configs"]
            self._menus[spec.id] = reply["configs"]
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
        """One worker call: its reply, or ``rec`` updated with the failure."""
        try:
            reply = self._worker(spec).call(cmd, timeout=self.settings.timeout_s)
        except TimeoutError as e:
            return replace(rec, status=Status.TIMEOUT, reason=str(e))
        except WorkerDied as e:
            return replace(rec, status=Status.ERROR, reason=str(e))
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
        )
        return _Unit(spec, request, rec)

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

    def run_problem(self, problem: Problem) -> Iterator[BenchRecord]:
        s = self.settings
        timed: list[_Unit] = []
        for spec in self.specs:
            requests = self._requests(spec, problem)
            if isinstance(requests, BenchRecord):
                self.log(_line(requests))
                yield requests
                continue
            for request in requests:
                unit = self._prepare(spec, problem, request)
                if unit.record.status == Status.ERROR:
                    yield from self._restore(spec, problem, timed)
                if unit.record.status == Status.OK and s.measure:
                    timed.append(unit)
                else:
                    self.log(_line(unit.record))
                    yield unit.record
        if not timed:
            return
        samples: dict[int, list[float]] = {id(u): [] for u in timed}
        telemetry: dict[int, list[Telemetry]] = {id(u): [] for u in timed}
        rotation: dict[int, int] = {}
        t = s.timer
        for rnd in range(t.rounds):
            for unit in list(timed):
                if unit not in timed:  # dropped by a _restore earlier in this round
                    continue
                reply = self._call(
                    unit.spec,
                    unit.record,
                    {
                        "op": "measure",
                        "problem": problem,
                        "config": unit.record.config,
                        "settings": t.as_dict(),
                        "warmup_s": t.warmup_s if rnd == 0 else min(0.2, t.warmup_s),
                        "min_samples": math.ceil(t.min_samples / t.rounds),
                        "min_time_s": t.min_time_s / t.rounds,
                        # once per problem, in the round with the full warm-up
                        "recheck": rnd == 0,
                    },
                )
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
                telemetry[id(unit)].append(reply["telemetry"])
                rotation[id(unit)] = reply["rotation_sets"]
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
                )
            )
        ref = next((r for r in finished if r.rung == Rung.CUBLAS), None)
        for rec in finished:
            if ref is not None and ref.timing and rec.timing:
                rec = replace(
                    rec, pct_of_cublas=100.0 * ref.timing.median_ms / rec.timing.median_ms
                )
            self.log(_line(rec))
            yield rec

    def run(self, problems: Sequence[Problem]) -> Iterator[BenchRecord]:
        if (self.settings.tune or self.settings.configs) and not self._menus:
            self.menus()
        for i, problem in enumerate(problems, 1):
            self.log(f"[{i}/{len(problems)}] {problem.key}")
            yield from self.run_problem(problem)


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
