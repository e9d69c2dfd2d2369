"""Timing: rotated input sets, time-based warm-up, per-launch CUDA events, robust statistics.

The measurement follows CUTLASS's GEMM guidelines and ``triton.testing.do_bench``:

* inputs rotate over enough (A, B, D) sets to total at least ``rotate_factor`` x the L2 size
  (queried from the device), so no launch finds its operands already cached;
* a warm-up of at least ``warmup_s`` seconds of back-to-back launches lets clocks settle;
* every launch is bracketed by CUDA events recorded on the launching stream (one event ends a
  sample and starts the next), so a sample is GPU time of exactly one launch; a kernel shorter
  than its host launch has each batch start behind GPU work long enough for the host to enqueue
  the batch (``_Hold``: GEMMs, not a sleep, so the clock stays where the load puts it), so it is
  timed back to back rather than at the host's pace;
* at least ``min_samples`` samples and at least ``min_time_s`` of measured time are taken.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.gemm import Problem

__all__ = [
    "Launches",
    "Stats",
    "TimerSettings",
    "rotation_sets",
    "summarize",
    "time_launches",
]


@dataclass(frozen=True)
class TimerSettings:
    warmup_s: float = 1.0
    min_samples: int = 100
    min_time_s: float = 0.5
    max_samples: int = 20000
    rounds: int = 4
    rotate_factor: float = 2.0
    max_rotation_bytes: int = 8 << 30
    #: Warm-up before each round after the first (the first warms ``warmup_s``): long enough
    #: that the kernel timed before has stopped setting this one's clock (docs/design.md,
    #: "Timing").
    rewarm_s: float = 1.0
    #: More warm-up before a problem's first measurement (cuBLAS's first round): the GPU
    #: idled while every kernel compiled and was checked, and a rested power-capped GPU runs
    #: above its sustained clock for about a second (an H100: 1380-1440 MHz for 0.75 s, then
    #: 1230-1280 MHz at 4425x8192x28672), which cuBLAS alone would be timed in.
    settle_s: float = 2.0
    #: GPU hold per launch of a held batch, at least (ms): every kernel shorter than this is
    #: held, each launch behind at least this much of the hold's GEMMs, so DSLs whose host
    #: launch costs differ are timed behind the same full-load work (timer v5). Without it
    #: (0, timer v4) a launch is held 1.5 x its own host time, so a quick launcher's batches
    #: start from a cooler GPU: on an H100, cuBLAS (24-41 us a launch) ran its small-M
    #: batches at 1680 MHz and Gluon (80-150 us) at 1430; held 0.5 ms a launch both ran at
    #: 1350 MHz (docs/design.md, "Timing"). 0.5 ms is more than 1.5 x the slowest launch
    #: measured (Gluon's, up to about 0.2 ms on an H200).
    hold_floor_ms: float = 0.5
    #: Timer v6 (the default since 2026-12-04; ``--no-count-hold`` is v5): a held kernel's
    #: ``min_time_s`` counts the GPU time its measurement occupies, the hold included, and its
    #: warm-up runs held too. Under v5 a 16 us kernel needs 0.125 s of its own time a round,
    #: about 7800 launches each behind 0.5 ms of hold: 4 s of GEMMs for a median that 250
    #: launches already pin to about 0.2 % (cv 0.03-0.05); a held-out suite, mostly such
    #: kernels, then outlasts a 30-minute device session. Warming up held keeps the state v5
    #: measured in: v5's back-to-back warm-up of a short kernel runs at its host's pace (the GPU
    #: mostly idle, its clock boosting), and only v5's seconds of held timing brought the clock
    #: down to the loaded one. On an H200, five short-kernel shapes timed both ways read the
    #: same (v6/v5 % of cuBLAS geomean 1.005, every shape within 2 points, median SM clock
    #: 1466 -> 1474 MHz) in 78 s of device time against 212 s (docs/design.md, "Timing").
    count_hold: bool = True

    def __post_init__(self) -> None:
        if self.min_samples < 1 or self.rounds < 1 or self.max_samples < self.min_samples:
            raise ValueError(f"inconsistent timer settings: {self}")
        if min(self.warmup_s, self.rewarm_s, self.settle_s) < 0:
            raise ValueError(f"negative warm-up: {self}")
        if self.hold_floor_ms < 0:
            raise ValueError(f"negative hold: {self}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Stats:
    """Summary of per-launch times in milliseconds."""

    n: int
    median_ms: float
    p20_ms: float
    p80_ms: float
    mean_ms: float
    min_ms: float
    cv: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of sorted data (numpy's default method)."""
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float]) -> Stats:
    """Median, p20/p80, mean, min and coefficient of variation (stdev / mean)."""
    if not samples_ms:
        raise ValueError("no samples to summarize")
    xs = sorted(float(x) for x in samples_ms)
    mean = statistics.fmean(xs)
    cv = statistics.stdev(xs) / mean if len(xs) > 1 and mean > 0 else 0.0
    return Stats(
        len(xs), _quantile(xs, 0.5), _quantile(xs, 0.2), _quantile(xs, 0.8), mean, xs[0], cv
    )


def rotation_sets(problem: Problem, l2_bytes: int, settings: TimerSettings) -> int:
    """How many (A, B, D) sets make at least ``rotate_factor`` x L2 (at least 2)."""
    per_set = problem.bytes_per_set()
    want = math.ceil(settings.rotate_factor * l2_bytes / per_set)
    cap = max(2, settings.max_rotation_bytes // per_set)
    return int(max(2, min(want, cap)))


class _Clock:
    """CUDA events on the current stream, or a host clock for CPU test kernels."""

    def __init__(self, device: str) -> None:
        self.cuda = device == "cuda"
        if self.cuda:
            import torch

            self._torch = torch

    def sync(self) -> None:
        if self.cuda:
            self._torch.cuda.synchronize()

    def marks(self, n: int) -> list[Any]:
        if self.cuda:
            return [self._torch.cuda.Event(enable_timing=True) for _ in range(n)]
        return [0.0] * n

    def mark(self, marks: list[Any], i: int) -> None:
        if self.cuda:
            marks[i].record()
        else:
            marks[i] = time.perf_counter()

    def elapsed_ms(self, marks: list[Any]) -> list[float]:
        if self.cuda:
            return [marks[i].elapsed_time(marks[i + 1]) for i in range(len(marks) - 1)]
        return [(marks[i + 1] - marks[i]) * 1e3 for i in range(len(marks) - 1)]


class _Hold:
    """GPU work that occupies the stream while the host enqueues a batch, at full load.

    A batch of a kernel shorter than its host launch must be enqueued before it starts (nvbench's
    "blocking kernel"), so the stream first gets work lasting long enough. That work is a chain
    of fp16 GEMMs on scratch operands (cuBLAS, before the first timing event), not a sleep: a
    power-limited GPU boosts its clock while a one-thread sleep idles it, and the launches right
    after the sleep then run faster than in steady state. Seen on an H200 at 700 W: a 0.19 ms
    kernel behind a sleep averaged 1670 MHz (cuBLAS, back to back, 1480 MHz) and timed at 113 %
    of cuBLAS while doing the same work per clock.
    """

    SIZE = 8192  # one GEMM lasts 1-3 ms on an H100/H200: a 250 ms hold is ~150 launches

    def __init__(self, torch: Any) -> None:
        self._matmul = torch.matmul
        n = self.SIZE
        self._x = torch.randn(n, n, device="cuda", dtype=torch.float16)
        self._y = torch.randn(n, n, device="cuda", dtype=torch.float16)
        self._z = torch.empty(n, n, device="cuda", dtype=torch.float16)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self._gemm()  # the first call may pick and load the cuBLAS kernel
        start.record()
        self._gemm()
        end.record()
        end.synchronize()
        self.gemm_ms = max(start.elapsed_time(end), 1e-3)

    def _gemm(self) -> None:
        self._matmul(self._x, self._y, out=self._z)

    def __call__(self, ms: float) -> None:
        for _ in range(max(1, math.ceil(ms / self.gemm_ms))):
            self._gemm()


def _run_batch(
    clock: _Clock,
    launch: Callable[..., None],
    sets: Sequence[tuple[Any, Any, Any]],
    n: int,
    start: int,
    hold: Callable[[float], None] | None = None,
    hold_ms: float = 0.0,
) -> tuple[list[float], float]:
    """Time ``n`` launches; returns (per-launch ms, host ms spent enqueueing each launch).

    With ``hold``, the stream first gets ``hold_ms`` of GPU work (``_Hold``) so the host can
    enqueue the whole batch before the first launch starts: each sample is then the kernel's own
    time, not the host's launch latency, even for kernels shorter than a launch.
    """
    marks = clock.marks(n + 1)
    if hold is not None and hold_ms > 0:
        hold(hold_ms)
    t0 = time.perf_counter()
    clock.mark(marks, 0)
    for i in range(n):
        a, b, d = sets[(start + i) % len(sets)]
        launch(a, b, d)
        clock.mark(marks, i + 1)
    host_ms = (time.perf_counter() - t0) * 1e3 / n
    clock.sync()
    return clock.elapsed_ms(marks), host_ms


_MAX_HOLD_MS = 250.0
#: The driver's launch queue holds on the order of a thousand commands (a launch and an event
#: each take one); a longer batch would block the host mid-batch and fall back to its pace.
_MAX_BATCH = 200


def _hold_per_launch(est_ms: float, host_ms: float, floor_ms: float) -> float:
    """The GPU work (ms) each launch of a kernel is timed behind; 0: not held. Only a kernel
    shorter than its own launch needs the hold (a GPU-bound kernel keeps the queue full by
    itself, and a hold is GPU time that is not measured); the floor holds every kernel below
    it alike, whatever its host time."""
    if host_ms > 0.5 * est_ms or est_ms < floor_ms:
        return max(floor_ms, 1.5 * host_ms)
    return 0.0


def _per_batch(per_launch_ms: float) -> int:
    return max(1, min(_MAX_BATCH, int(_MAX_HOLD_MS / max(per_launch_ms, 1.5e-3))))


def warm_up(
    launch: Callable[..., None],
    sets: Sequence[tuple[Any, Any, Any]],
    seconds: float,
    device: str,
    held_floor_ms: float | None = None,
) -> int:
    """Launch for at least ``seconds`` of wall time; returns launches made.

    Back to back, or with ``held_floor_ms`` (timer v6, ``TimerSettings.count_hold``) a kernel
    that :func:`time_launches` would hold under that floor is warmed up the way it is timed:
    in batches behind its hold, so the GPU is at full load when the first sample is taken."""
    clock = _Clock(device)
    done, batch = 0, 1
    t0 = time.perf_counter()
    if held_floor_ms is not None:
        probe, host_ms = _run_batch(clock, launch, sets, 10, 0)
        done = 10
        per_launch = _hold_per_launch(max(min(probe), 1e-4), host_ms, held_floor_ms)
        if per_launch > 0:
            hold = _Hold(clock._torch) if clock.cuda else None
            while time.perf_counter() - t0 < seconds:
                n = _per_batch(per_launch)
                hold_ms = min(_MAX_HOLD_MS, n * per_launch)
                _, host_ms = _run_batch(clock, launch, sets, n, done, hold, hold_ms)
                done += n
                per_launch = max(held_floor_ms, 1.5 * host_ms)  # as time_launches does
            return done
    while True:
        for i in range(batch):
            a, b, d = sets[(done + i) % len(sets)]
            launch(a, b, d)
        clock.sync()
        done += batch
        if time.perf_counter() - t0 >= seconds:
            return done
        batch = min(batch * 2, 256)


@dataclass(frozen=True)
class Launches:
    """What :func:`time_launches` measured: per-launch GPU times (ms), the host's enqueue time
    per launch (ms, median over the timed batches) and the hold each launch was timed behind
    (ms of GPU work per launch, median over the batches; 0: not held)."""

    samples: list[float]
    host_ms: float
    hold_ms_per_launch: float


def time_launches(
    launch: Callable[..., None],
    sets: Sequence[tuple[Any, Any, Any]],
    min_samples: int,
    min_time_s: float,
    max_samples: int,
    device: str = "cuda",
    hold_floor_ms: float = TimerSettings.hold_floor_ms,
    count_hold: bool = TimerSettings.count_hold,
) -> Launches:
    """Per-launch times (ms): at least ``min_samples`` and ``min_time_s`` of GPU time.

    Launches walk ``sets`` in order from ``sets[0]``, and the first batch of kept samples
    starts there too: ``sets[0]`` always receives a timed launch's output, which the worker
    re-checks after timing.

    A launch shorter than ``hold_floor_ms``, or shorter than twice its host enqueue time, is
    timed in batches behind a hold (``_Hold``) of max(``hold_floor_ms``, 1.5 x host time) per
    launch. With ``count_hold`` (timer v6, the default) such a launch's ``min_time_s`` counts
    the GPU time the measurement occupies, its hold included; without it (v5), only its own.
    """
    clock = _Clock(device)
    # A first small batch measures the launch time and the host's enqueue time per launch, so
    # the rest can be sized, and held back long enough for the host to get ahead of the GPU.
    # Its samples ran at the host's pace, so they only size the rest and are not kept.
    probe, host_ms = _run_batch(clock, launch, sets, min(10, min_samples), 0)
    est = max(min(probe), 1e-4)
    samples: list[float] = []
    per_launch = _hold_per_launch(est, host_ms, hold_floor_ms)
    needs_hold = per_launch > 0
    # v6: a held launch's time toward min_time_s is its own plus the hold it waited behind
    counted = est + per_launch if count_hold else est
    want = max(min_samples, math.ceil(min_time_s * 1e3 / counted))
    want = min(want, max_samples)
    per_batch = _per_batch(per_launch)
    hold = _Hold(clock._torch) if needs_hold and clock.cuda else None
    min_ms = min_time_s * 1e3
    hosts: list[float] = []
    holds: list[float] = []
    held_ms = 0.0  # hold GPU time so far, counted toward min_time_s under v6 only

    def covered() -> float:
        return sum(samples) + (held_ms if count_hold else 0.0)

    # Sized from the probe's fastest launch, ``want`` usually covers ``min_time_s``; if the
    # launches ran faster than that estimate, time more until it is met (up to max_samples).
    while len(samples) < max_samples and (len(samples) < want or covered() < min_ms):
        short = math.ceil((min_ms - covered()) / counted) if covered() < min_ms else 0
        n = min(max(want - len(samples), short, 1), per_batch, max_samples - len(samples))
        hold_ms = min(_MAX_HOLD_MS, n * per_launch)
        if needs_hold:
            holds.append(per_launch)
            held_ms += hold_ms if hold is not None else 0.0  # a CPU test kernel runs no hold
        batch, host_ms = _run_batch(clock, launch, sets, n, len(samples), hold, hold_ms)
        samples += batch
        hosts.append(host_ms)
        if needs_hold:  # the next batch is held for the host time this one took
            per_launch = max(hold_floor_ms, 1.5 * host_ms)
    hold_per_launch = statistics.median(holds) if holds else 0.0
    return Launches(samples, statistics.median(hosts) if hosts else host_ms, hold_per_launch)
