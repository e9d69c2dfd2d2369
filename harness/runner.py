"""The benchmark loop: check every kernel on every problem, then time them interleaved.

For each problem, every selected kernel is prepared in its own worker process (supports ->
compile -> correctness check on fresh inputs). Kernels that pass are then timed in
``rounds`` round-robin passes (kernel 1, kernel 2, ..., kernel 1, ...), so clock or thermal
drift during a problem affects every kernel alike; the samples of all rounds are pooled. Any
timeout, crash or exception is recorded against that kernel and problem, its worker is
replaced, and the run goes on. Records are yielded as soon as they are final.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.isolate import Worker, WorkerDied
from harness.protocol import KernelSpec, Problem, Rung
from harness.results import Status, kernel_fields
from harness.telemetry import Telemetry, merge
from harness.timing import TimerSettings, summarize

__all__ = ["RunSettings", "Runner"]


@dataclass(frozen=True)
class RunSettings:
    device: str = "cuda"
    timeout_s: float = 300.0
    checks: int = 2
    measure: bool = True
    timer: TimerSettings = field(default_factory=TimerSettings)


def base_record(spec: KernelSpec, problem: Problem) -> dict[str, Any]:
    return {
        **kernel_fields(spec),
        "problem": {"m": problem.m, "n": problem.n, "k": problem.k, "dtype": problem.dtype},
        "problem_key": problem.key,
        "status": Status.ERROR.value,
        "reason": None,
        "compile_s": None,
        "check": None,
        "timing": None,
        "rotation_sets": None,
        "tflops": None,
        "tflops_per_ghz": None,
        "pct_of_cublas": None,
        "telemetry": None,
    }


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

    def _call(self, spec: KernelSpec, rec: dict[str, Any], cmd: dict[str, Any]) -> dict | None:
        """One worker call; on failure fill ``rec`` with the outcome and return None."""
        try:
            reply = self._worker(spec).call(cmd, timeout=self.settings.timeout_s)
        except TimeoutError as e:
            rec.update(status=Status.TIMEOUT.value, reason=str(e))
            return None
        except WorkerDied as e:
            rec.update(status=Status.ERROR.value, reason=str(e))
            return None
        if reply.get("status") == Status.ERROR.value:
            rec.update(
                status=Status.ERROR.value,
                reason=reply.get("error"),
                traceback=reply.get("traceback"),
            )
            # A Python error may leave a CUDA context poisoned: start the next problem afresh.
            self._worker(spec).kill()
            return None
        return reply

    def run_problem(self, problem: Problem) -> Iterator[dict[str, Any]]:
        s = self.settings
        records: dict[str, dict[str, Any]] = {}
        timed: list[KernelSpec] = []
        for spec in self.specs:
            rec = base_record(spec, problem)
            records[spec.id] = rec
            reply = self._call(spec, rec, {"op": "prepare", "problem": problem, "checks": s.checks})
            if reply is not None:
                rec.update(
                    status=reply["status"],
                    reason=reply.get("reason"),
                    compile_s=reply.get("compile_s"),
                    check=reply.get("check"),
                )
            if rec["status"] == Status.OK.value and s.measure:
                timed.append(spec)
            else:
                self.log(_line(rec))
                yield rec
        if not timed:
            return
        samples: dict[str, list[float]] = {sp.id: [] for sp in timed}
        telemetry: dict[str, list[Telemetry]] = {sp.id: [] for sp in timed}
        t = s.timer
        for rnd in range(t.rounds):
            for spec in list(timed):
                rec = records[spec.id]
                reply = self._call(
                    spec,
                    rec,
                    {
                        "op": "measure",
                        "problem": problem,
                        "settings": t.as_dict(),
                        "warmup_s": t.warmup_s if rnd == 0 else min(0.2, t.warmup_s),
                        "min_samples": math.ceil(t.min_samples / t.rounds),
                        "min_time_s": t.min_time_s / t.rounds,
                    },
                )
                if reply is None:
                    timed.remove(spec)
                    self.log(_line(rec))
                    yield rec
                    continue
                samples[spec.id] += reply["samples"]
                telemetry[spec.id].append(Telemetry(**reply["telemetry"]))
                rec["rotation_sets"] = reply["rotation_sets"]
        for spec in timed:
            self._call(spec, records[spec.id], {"op": "release", "problem": problem})
            rec = records[spec.id]
            stats = summarize(samples[spec.id])
            tel = merge(telemetry[spec.id])
            tflops = problem.flops / (stats.median_ms * 1e-3) / 1e12
            ghz = tel.sm_clock_mhz_mean / 1e3 if tel.sm_clock_mhz_mean else None
            rec.update(
                timing=stats.as_dict(),
                tflops=tflops,
                telemetry=tel.as_dict(),
                tflops_per_ghz=tflops / ghz if ghz else None,
            )
        ref = next((records[sp.id] for sp in timed if sp.rung == Rung.CUBLAS), None)
        for spec in timed:
            rec = records[spec.id]
            if ref is not None:
                rec["pct_of_cublas"] = (
                    100.0 * ref["timing"]["median_ms"] / rec["timing"]["median_ms"]
                )
            self.log(_line(rec))
            yield rec

    def run(self, problems: Sequence[Problem]) -> Iterator[dict[str, Any]]:
        for i, problem in enumerate(problems, 1):
            self.log(f"[{i}/{len(problems)}] {problem.key}")
            yield from self.run_problem(problem)


def _line(rec: dict[str, Any]) -> str:
    head = f"    {rec['kernel']:<40} {rec['status']:<11}"
    if rec["status"] == Status.OK.value and rec.get("timing"):
        t = rec["timing"]
        pct = rec.get("pct_of_cublas")
        pct_s = f"  {pct:6.1f}% of cuBLAS" if pct is not None else ""
        return (
            f"{head} {t['median_ms']:9.4f} ms  {rec['tflops']:7.1f} TFLOPS  cv {t['cv']:.3f}{pct_s}"
        )
    if rec["status"] == Status.OK.value:
        return f"{head} correct ({rec['check']['max_abs_err']:.3g} max err), not timed"
    return f"{head} {rec.get('reason') or ''}"
