"""The numbers the study publishes, computed by the runner from kernels of known duration.

The workers are replaced by fakes that answer ``prepare`` with a pass and ``measure`` with the
samples and clock a kernel of known duration would give, so every figure below goes through
the runner's own arithmetic (``harness/runner.py``, ``Problem.flops`` in ``harness/gemm.py``)
and is compared with a hand computation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from harness.check import CheckResult
from harness.protocol import KernelSpec, Problem, Rung
from harness.records import Status
from harness.runner import Runner, RunSettings, base_record, held_above
from harness.telemetry import Telemetry
from harness.timing import TimerSettings

CUBLAS = KernelSpec("cublas", "torch_matmul", Rung.CUBLAS, "any", "reference", module="x")
KERNEL = KernelSpec("fake", "r7", Rung.MULTI_CONSUMER, "any", "known duration", module="y")
PASSED = CheckResult(True, 0.01, 1e-4, 0, 0.1, 1e-3, 2)


class FakeWorker:
    """A worker whose kernel takes ``ms`` per launch at ``mhz``; logs the commands it got."""

    def __init__(
        self,
        ms: list[float],
        mhz: float,
        recheck: CheckResult | None = None,
        later_ms: list[float] | None = None,
    ) -> None:
        self.ms = ms
        self.mhz = mhz
        self.recheck = recheck
        #: what launches take from the fifth measurement on (cuBLAS's closing one)
        self.later_ms = later_ms
        self.commands: list[dict[str, Any]] = []

    def call(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.commands.append(cmd)
        if cmd["op"] == "prepare":
            return {"status": "ok", "reason": None, "compile_s": 0.5, "check": PASSED}
        if cmd["op"] == "measure":
            done = sum(c["op"] == "measure" for c in self.commands)
            return {
                "samples": list(self.later_ms if self.later_ms and done > 4 else self.ms),
                "telemetry": Telemetry(samples=10, sm_clock_mhz_mean=self.mhz),
                "rotation_sets": 3,
                "host_ms": 0.01 * done,  # the median of the rounds' is recorded
                "hold_ms_per_launch": 0.0,
                "recheck": self.recheck if cmd.get("recheck") else None,
            }
        return {"ok": True}

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


def _run(
    problem: Problem, workers: dict[str, FakeWorker], timer: TimerSettings | None = None
) -> dict[str, Any]:
    settings = RunSettings(device="cpu", timer=timer or TimerSettings(rounds=4, settle_s=0.0))
    with Runner([CUBLAS, KERNEL], settings) as runner:
        runner._worker = lambda spec: workers[spec.id]  # type: ignore[method-assign]
        return {r.kernel: r for r in runner.run([problem])}


def test_tflops_and_pct_of_cublas_by_hand() -> None:
    """1000 x 3000 x 512: 2 * 1000 * 3000 * 512 = 3.072e9 flops. The kernel's median launch is
    0.04 ms -> 3.072e9 / 4e-5 s = 76.8 TFLOPS, at 1600 MHz 48 TFLOPS/GHz; cuBLAS's 0.05 ms ->
    61.44 TFLOPS, at 1200 MHz 51.2 TFLOPS/GHz; the kernel is 0.05 / 0.04 = 125 % of cuBLAS."""
    problem = Problem(1000, 3000, 512)
    assert problem.flops == 3_072_000_000
    workers = {
        CUBLAS.id: FakeWorker([0.049, 0.05, 0.051], mhz=1200.0),
        KERNEL.id: FakeWorker([0.039, 0.04, 0.041], mhz=1600.0),
    }
    got = _run(problem, workers)
    ref, rec = got[CUBLAS.id], got[KERNEL.id]
    assert ref.status == rec.status == Status.OK
    assert rec.timing.median_ms == pytest.approx(0.04)
    assert rec.timing.n == 4 * 3  # four rounds pooled
    assert rec.tflops == pytest.approx(76.8, rel=1e-12)
    assert rec.tflops_per_ghz == pytest.approx(48.0, rel=1e-12)
    assert rec.pct_of_cublas == pytest.approx(125.0, rel=1e-12)
    assert ref.tflops == pytest.approx(61.44, rel=1e-12)
    assert ref.tflops_per_ghz == pytest.approx(51.2, rel=1e-12)
    assert ref.pct_of_cublas == pytest.approx(100.0)
    # per clock: 48 / 51.2 TFLOPS/GHz = 93.75 %: the kernel is faster only by its clock
    assert rec.per_clock_pct_of_cublas == pytest.approx(93.75, rel=1e-12)
    assert ref.per_clock_pct_of_cublas == pytest.approx(100.0)
    assert rec.telemetry.sm_clock_mhz_mean == 1600.0 and rec.rotation_sets == 3
    # each worker measured its kernel in 4 rounds, host 0.01 ms x its running count: median
    assert rec.host_launch_ms == pytest.approx(0.025) and rec.hold_ms_per_launch == 0.0


def test_square_problem_by_hand() -> None:
    """4096^3: 2 * 4096^3 = 137438953472 flops; 0.25 ms -> 549.755813888 TFLOPS; cuBLAS at
    0.2 ms -> 687.19476736 TFLOPS; the kernel is 80 % of cuBLAS."""
    workers = {
        CUBLAS.id: FakeWorker([0.2], mhz=1500.0),
        KERNEL.id: FakeWorker([0.25], mhz=1500.0),
    }
    got = _run(Problem(4096, 4096, 4096), workers)
    assert got[KERNEL.id].tflops == pytest.approx(549.755813888, rel=1e-12)
    assert got[CUBLAS.id].tflops == pytest.approx(687.19476736, rel=1e-12)
    assert got[KERNEL.id].pct_of_cublas == pytest.approx(80.0, rel=1e-12)
    assert got[KERNEL.id].tflops_per_ghz == pytest.approx(549.755813888 / 1.5, rel=1e-12)


def test_a_failed_recheck_after_timing_makes_the_record_wrong() -> None:
    """The first round's ``measure`` re-checks one timed launch's output (and only the first
    round: once per problem); a kernel that fails it is recorded wrong, untimed, with the
    reason, and is not measured again."""
    bad = CheckResult(
        False, 0.01, 1e-4, 0, 0.1, 1e-3, 1, faults=("wrote 3 elements past the end of D",)
    )
    workers = {
        CUBLAS.id: FakeWorker([0.2], mhz=1500.0, recheck=PASSED),
        KERNEL.id: FakeWorker([0.25], mhz=1500.0, recheck=bad),
    }
    got = _run(Problem(256, 256, 256), workers)
    rec = got[KERNEL.id]
    assert rec.status == Status.WRONG
    assert rec.reason == "after timing: wrote 3 elements past the end of D"
    assert rec.check == bad and rec.timing is None and rec.tflops is None
    assert got[CUBLAS.id].status == Status.OK and got[CUBLAS.id].timing.n == 4
    measures = [c for c in workers[KERNEL.id].commands if c["op"] == "measure"]
    assert [c["recheck"] for c in measures] == [True]
    measures = [c for c in workers[CUBLAS.id].commands if c["op"] == "measure"]
    # four rounds, then the closing measurement of the drift
    assert [c["recheck"] for c in measures] == [True, False, False, False, False]
    assert any(c["op"] == "release" for c in workers[KERNEL.id].commands)


def test_cublas_drift_is_its_closing_median_against_its_first_round() -> None:
    """cuBLAS is timed once more after the last round: 0.0505 ms against its first round's
    0.05 ms is +1 % of drift, recorded on every timed record of the problem. The closing
    samples only measure the drift: cuBLAS's statistics pool the four rounds, like the
    kernel's, so its median stays 0.05 ms."""
    workers = {
        CUBLAS.id: FakeWorker([0.049, 0.05, 0.051], mhz=1500.0, later_ms=[0.0505]),
        KERNEL.id: FakeWorker([0.04], mhz=1500.0),
    }
    got = _run(Problem(512, 512, 512), workers)
    for rec in got.values():
        assert rec.cublas_drift_pct == pytest.approx(1.0, rel=1e-9)
    assert got[CUBLAS.id].timing.n == 12 and got[CUBLAS.id].timing.median_ms == 0.05
    assert sum(c["op"] == "measure" for c in workers[KERNEL.id].commands) == 4


def test_warm_ups_settle_once_then_rewarm() -> None:
    """The first round warms every kernel ``warmup_s``, and the problem's first measurement
    (cuBLAS's) ``settle_s`` more; later rounds and the closing drift measurement warm
    ``rewarm_s`` (never more than ``warmup_s``)."""
    workers = {
        CUBLAS.id: FakeWorker([0.05], mhz=1500.0),
        KERNEL.id: FakeWorker([0.04], mhz=1500.0),
    }
    timer = TimerSettings(rounds=3, warmup_s=1.0, rewarm_s=0.5, settle_s=2.0)
    _run(Problem(512, 512, 512), workers, timer)

    def warmups(spec: Any) -> list[float]:
        return [c["warmup_s"] for c in workers[spec.id].commands if c["op"] == "measure"]

    assert warmups(CUBLAS) == [3.0, 0.5, 0.5, 0.5]
    assert warmups(KERNEL) == [1.0, 0.5, 0.5]
    workers = {
        CUBLAS.id: FakeWorker([0.05], mhz=1500.0),
        KERNEL.id: FakeWorker([0.04], mhz=1500.0),
    }
    _run(Problem(512, 512, 512), workers, TimerSettings(rounds=2, warmup_s=0.1))
    # the defaults: settle 2 s, later rounds capped by the first round's warm-up
    assert warmups(CUBLAS) == [2.1, 0.1, 0.1] and warmups(KERNEL) == [0.1, 0.1]
    with pytest.raises(ValueError, match="negative warm-up"):
        TimerSettings(settle_s=-1.0)


def test_a_kernel_held_above_the_floor_is_named() -> None:
    """Under timer v5 every short kernel is held the floor's time a launch; one whose host
    launch is so slow that 1.5x it beats the floor is held longer, and the runner names it
    (``held_above``). With the floor off (v4) holds follow each host, so none is named."""
    p = Problem(8, 4096, 4096)
    alike = replace(base_record(CUBLAS, p), hold_ms_per_launch=0.5)
    slow = replace(base_record(KERNEL, p), hold_ms_per_launch=0.62)
    unheld = replace(base_record(KERNEL, p), hold_ms_per_launch=0.0)
    assert held_above([alike, slow, unheld], 0.5) == [slow]
    assert held_above([alike, unheld], 0.5) == []
    assert held_above([alike, slow], 0.0) == []


def test_device_checks_get_their_floor_however_short_the_kernel_timeout(monkeypatch) -> None:
    """``--timeout`` bounds a kernel's steps; describing and probing the GPU in a fresh worker
    (a Python start, torch's import, a CUDA context) always get ``DEVICE_CHECK_MIN_S``, so a
    short timeout on a loaded host does not quarantine a healthy GPU; a long one still caps
    the probe at ``PROBE_TIMEOUT_S``."""
    from harness import runner as runner_module

    asked: list[tuple[str, float]] = []

    class Recording:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def call(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
            asked.append((msg["op"], timeout))
            return {"ok": True}

        def stop(self) -> None:
            pass

    monkeypatch.setattr(runner_module, "Worker", Recording)
    for timeout_s, want_env, want_probe in ((5.0, 30.0, 30.0), (600.0, 600.0, 120.0)):
        asked.clear()
        settings = RunSettings(device="cpu", timeout_s=timeout_s)
        with Runner([CUBLAS], settings) as runner:
            runner.device_info()
            assert runner.probe() is None
        assert asked == [("env", want_env), ("probe", want_probe)]
