"""Where the units of a run execute: the GPUs of this host, or a Ray cluster.

A unit is one problem (:class:`~harness.runner.Unit`); whoever runs it runs all of it on one GPU
(:func:`~harness.runner.run_unit`), so every ratio in its records is same-GPU, same-minute.

* :func:`run_local` — every GPU of this host (``--gpus``): one thread per GPU, each owning a
  :class:`~harness.runner.Runner` (a set of worker processes with that GPU as
  ``CUDA_VISIBLE_DEVICES``), pulling units from one queue, longest first so the last ones to
  finish are short. Plain subprocesses: nothing to install, no daemon.
* :func:`run_ray` — a Ray cluster (``--executor ray``; the ``[cluster]`` extra): each unit a
  Ray task with ``num_gpus=1``, in which Ray's ``CUDA_VISIBLE_DEVICES`` names the GPU; the
  records come back to this process, which writes the one results document. On SLURM the job
  script starts Ray on its nodes (``ray start``), on Kubernetes KubeRay does (docs/clusters.md).

Faults: a worker that crashes or hangs costs its own record; the GPU is then probed in a fresh
process. A GPU that fails the probe gets no more work (quarantined) and its unit runs again on
another GPU; a unit whose second GPU fails the probe too is recorded as the kernel's failure
(:func:`~harness.runner.run_unit`). Both executors yield the same events: :class:`GpuReady` for
each GPU as it starts (what it is, or why it cannot work) and each unit's
:class:`~harness.runner.UnitOutcome`.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.devices import gpu_identity
from harness.isolate import HARNESS_ROOT
from harness.results import ResultsWriter
from harness.runner import BenchPlan, Unit, UnitOutcome, run_unit
from harness.summary import device_line

__all__ = [
    "RAY_MISSING",
    "ExecutorUnavailable",
    "GpuReady",
    "UnitQueue",
    "gpu_key",
    "progress",
    "run_local",
    "run_ray",
    "write_events",
]

#: What to do when ``--executor ray`` finds no Ray.
RAY_MISSING = "--executor ray needs Ray: install the [cluster] extra: pip install -e '.[cluster]'"
#: How often a unit may land on a GPU already quarantined before it is left for a later run.
MAX_BOUNCES = 8
#: What the environment keeps of each GPU a worker described, beside its identity.
GPU_FACTS = ("driver", "power_limit_w", "max_sm_clock_mhz", "sm_count", "capability")

Log = Callable[[str], None]


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot run here (e.g. Ray is not installed)."""


@dataclass(frozen=True)
class GpuReady:
    """A GPU that joined the run: its identity and what a worker on it reported (``device``),
    or why it cannot work (``error``: it gets no units)."""

    gpu: Mapping[str, Any]
    device: Mapping[str, Any]
    error: str | None = None


def gpu_key(gpu: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """What tells two GPUs apart across a cluster: (host, UUID, else the slot)."""
    gpu = gpu or {}
    return (gpu.get("host"), gpu.get("uuid") or gpu.get("visible"))


class UnitQueue:
    """The units of a run, handed out one at a time (thread-safe).

    ``take`` returns (unit, final, ordinal): ``final`` when the unit already made one GPU fail
    its probe (this attempt decides), ``ordinal`` the how-many-th unit this is to start. A unit
    to run again goes back to the front. ``take`` blocks while the queue is empty but units
    are still running (one may come back); it returns None once nothing is left to hand out.
    """

    def __init__(self, units: Sequence[Unit], longest_first: bool) -> None:
        order = sorted(units, key=lambda u: (-u.problem.flops, u.index)) if longest_first else units
        self.total = len(units)
        self._pending = list(order)
        self._running = 0
        self._failures: dict[int, int] = {}
        self._bounces: dict[int, int] = {}
        self._started: set[int] = set()
        self._given_up: list[Unit] = []
        self._cond = threading.Condition()

    def take(self, block: bool = True) -> tuple[Unit, bool, int] | None:
        with self._cond:
            while block and not self._pending and self._running:
                self._cond.wait()
            if not self._pending:
                return None
            unit = self._pending.pop(0)
            self._running += 1
            self._started.add(unit.index)
            return unit, self._failures.get(unit.index, 0) >= 1, len(self._started)

    def finish(self, outcome: UnitOutcome) -> None:
        """Account for a unit that came back: done, or (``retry``, ``bounced``) to run again."""
        unit = outcome.unit
        with self._cond:
            self._running -= 1
            if outcome.retry:
                self._failures[unit.index] = self._failures.get(unit.index, 0) + 1
                self._pending.insert(0, unit)
            elif outcome.bounced:
                self._bounces[unit.index] = self._bounces.get(unit.index, 0) + 1
                if self._bounces[unit.index] > MAX_BOUNCES:
                    self._given_up.append(unit)
                else:
                    self._pending.insert(0, unit)
            self._cond.notify_all()

    def abandon(self, unit: Unit) -> None:
        """A unit whose runner broke down: nobody will finish it in this run."""
        with self._cond:
            self._running -= 1
            self._given_up.append(unit)
            self._cond.notify_all()

    def left(self) -> list[Unit]:
        """Units not done: never handed out, or given up on."""
        with self._cond:
            return sorted([*self._pending, *self._given_up], key=lambda u: u.index)


# ---------------------------------------------------------------------------------- local
def progress(elapsed_s: float, finished: int, total: int) -> str:
    """How far a run is, for its "[n/total]" lines: time so far and, once a unit has finished,
    the time left at the pace so far (every GPU's units count, so several GPUs' pace is in it),
    e.g. "(12 min in, ~16 min left)". Device time is budgeted; a long run says what it needs."""

    def dur(s: float) -> str:
        return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"

    if finished <= 0:
        return f"({dur(elapsed_s)} in)"
    return f"({dur(elapsed_s)} in, ~{dur(elapsed_s / finished * max(total - finished, 0))} left)"


class _SlotDone:
    pass


@dataclass(frozen=True)
class _Crashed:
    error: BaseException


def run_local(
    plan: BenchPlan, work: UnitQueue, slots: Sequence[str | None], log: Log
) -> Iterator[GpuReady | UnitOutcome]:
    """Run the units of ``work`` on this host's GPUs, one worker set per slot (``None``: the
    GPU this process sees). Units not run (every GPU quarantined) stay in
    :meth:`UnitQueue.left`."""
    events: queue.Queue[Any] = queue.Queue()
    total = work.total
    one_at_a_time = threading.Lock()  # whole lines, from every GPU's thread
    t0, finished = time.monotonic(), [0]  # units finished on every GPU, under one_at_a_time

    def serve(slot: str | None) -> None:
        prefix = f"[GPU {slot}] " if len(slots) > 1 else ""

        def slot_log(message: str) -> None:
            with one_at_a_time:
                log(prefix + message)

        unit = None
        try:
            with plan.runner(slot, slot_log) as runner:
                info = runner.device_info()
                runner.gpu = gpu_identity(slot, info)
                error = info.get("device_error")
                events.put(GpuReady(runner.gpu, info, error))
                if error:
                    slot_log(f"this GPU does not work ({error}); it gets no work")
                    return
                while (item := work.take()) is not None:
                    unit, final, n = item
                    again = " (again: it made another GPU fail its probe)" if final else ""
                    with one_at_a_time:
                        pace = progress(time.monotonic() - t0, finished[0], total)
                    slot_log(f"[{n}/{total}] {unit.key}{again} {pace}")
                    outcome = run_unit(plan, runner, unit, final)
                    work.finish(outcome)
                    with one_at_a_time:
                        finished[0] += 1
                    unit = None
                    events.put(outcome)
                    if outcome.device_failed:
                        slot_log(f"quarantined: {outcome.device_failed}")
                        return
        except BaseException as e:  # a bug: stop the run, not only this GPU
            if unit is not None:
                work.abandon(unit)
            events.put(_Crashed(e))
        finally:
            events.put(_SlotDone())

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in slots]
    for t in threads:
        t.start()
    running = len(threads)
    while running:
        event = events.get()
        if isinstance(event, _SlotDone):
            running -= 1
        elif isinstance(event, _Crashed):
            raise RuntimeError(f"a GPU's runner failed: {event.error!r}") from event.error
        else:
            yield event


# ------------------------------------------------------------------------------------ Ray
def _ray_unit(
    plan: BenchPlan, unit: Unit, final: bool, quarantined: frozenset[tuple[Any, Any]]
) -> tuple[GpuReady, UnitOutcome]:
    """A Ray task: run ``unit`` on the GPU Ray gave this task (its ``CUDA_VISIBLE_DEVICES``).
    A fresh worker first describes the GPU (and so probes it); a GPU known to be quarantined
    hands the unit back."""
    slot = os.environ.get("CUDA_VISIBLE_DEVICES")
    with plan.runner(slot, lambda m: print(m, flush=True)) as runner:
        info = runner.device_info()
        runner.gpu = gpu_identity(slot, info)
        ready = GpuReady(runner.gpu, info, info.get("device_error"))
        if gpu_key(runner.gpu) in quarantined:
            return ready, UnitOutcome(unit, (), runner.gpu, bounced=True)
        if ready.error:  # the GPU, not the unit: hand it back without counting it against it
            return ready, UnitOutcome(unit, (), runner.gpu, device_failed=ready.error, bounced=True)
        print(f"[{unit.index + 1}] {unit.key} on {runner.gpu.get('host')} GPU {slot}", flush=True)
        return ready, run_unit(plan, runner, unit, final)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorUnavailable(RAY_MISSING) from None
    return ray


def run_ray(
    plan: BenchPlan, work: UnitQueue, log: Log, address: str | None = None
) -> Iterator[GpuReady | UnitOutcome]:
    """Run the units of ``work`` as Ray tasks of one GPU each on the cluster at ``address``
    (None: a Ray already initialised in this process, else a new local one). The repository
    must be at the same path on every node (a shared file system, or the same container
    image): the tasks import the harness from there. Units not run stay in
    :meth:`UnitQueue.left`."""
    ray = _import_ray()
    owned = not ray.is_initialized()
    if owned:
        ray.init(address=address)
    path = [str(HARNESS_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    task = ray.remote(num_gpus=1, num_cpus=1, max_retries=0)(_ray_unit).options(
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}}
    )
    gpus = ray.cluster_resources().get("GPU", 0)
    if gpus < 1:
        if owned:
            ray.shutdown()
        raise ExecutorUnavailable(
            f"the Ray cluster ({address or 'local'}) has no GPU: its tasks would wait forever"
        )
    plan_ref = ray.put(plan)
    quarantined: set[tuple[Any, Any]] = set()
    seen: set[tuple[Any, Any]] = set()
    futures: dict[Any, Unit] = {}
    finished = 0

    def submit() -> None:
        while (item := work.take(block=False)) is not None:
            unit, final, _ = item
            futures[task.remote(plan_ref, unit, final, frozenset(quarantined))] = unit

    log(f"ray: {work.total} problem(s) on {gpus:g} GPU(s)")
    t0 = time.monotonic()
    try:
        submit()
        while futures:
            (ref,), _ = ray.wait(list(futures), num_returns=1)
            unit = futures.pop(ref)
            try:
                ready, outcome = ray.get(ref)
            except ray.exceptions.RayTaskError:
                raise  # an error of the harness itself, raised in the task
            except ray.exceptions.RayError as e:  # the task's process or node went away
                ready, outcome = None, UnitOutcome(unit, (), device_failed=str(e), retry=True)
            if ready is not None and gpu_key(ready.gpu) not in seen:
                seen.add(gpu_key(ready.gpu))
                yield ready
            if outcome.device_failed and outcome.gpu is not None:
                quarantined.add(gpu_key(outcome.gpu))
            work.finish(outcome)
            if outcome.records:
                gpu = outcome.gpu or {}
                finished += 1
                log(
                    f"[{finished}/{work.total}] {unit.key}: done on {gpu.get('host')} GPU "
                    f"{gpu.get('visible')} {progress(time.monotonic() - t0, finished, work.total)}"
                )
            if not outcome.bounced:
                yield outcome
            submit()
    finally:
        if owned:
            ray.shutdown()


# ------------------------------------------------------------------------------ recording
def write_events(
    events: Iterable[GpuReady | UnitOutcome], writer: ResultsWriter, log: Log
) -> dict[str, int]:
    """Write a run's events into its results document as they come: each problem's records
    in one rewrite; every GPU under ``environment.gpus`` (the first that works also describes
    the run at the top level, as a one-GPU run always did); every quarantined GPU, with why and
    on which problem, under ``environment.quarantined``. Returns the count of records by
    status."""
    env = writer.document.environment
    gpus = list(env.get("gpus") or [])
    quarantined = list(env.get("quarantined") or [])
    described = "gpu" in env
    counts: dict[str, int] = {}
    for event in events:
        if isinstance(event, GpuReady):
            facts = {k: event.device[k] for k in GPU_FACTS if k in event.device}
            gpus.append({**event.gpu, **facts})
            if event.error:
                quarantined.append({"gpu": event.gpu, "why": event.error, "unit": None})
            elif not described:
                described = True
                writer.update_environment(**event.device)
                log(device_line(event.device))
            writer.update_environment(gpus=gpus, quarantined=quarantined)
            continue
        if event.device_failed:
            quarantined.append(
                {"gpu": event.gpu, "why": event.device_failed, "unit": event.unit.key}
            )
            writer.update_environment(quarantined=quarantined)
        writer.add_many(event.records)
        for rec in event.records:
            counts[rec.status.value] = counts.get(rec.status.value, 0) + 1
    return counts
