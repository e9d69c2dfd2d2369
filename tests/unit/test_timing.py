from __future__ import annotations

import statistics
import sys
import time
import types
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from harness.protocol import Problem
from harness.telemetry import Telemetry, TelemetrySampler, merge, power_reader
from harness.timing import (
    Launches,
    TimerSettings,
    _Clock,
    _run_batch,
    rotation_sets,
    summarize,
    time_launches,
    warm_up,
)


def test_summary_statistics_on_known_samples() -> None:
    xs = [float(i) for i in range(1, 101)]  # 1..100
    s = summarize(list(reversed(xs)))
    assert s.n == 100
    assert s.median_ms == pytest.approx(50.5)
    assert s.p20_ms == pytest.approx(20.8)
    assert s.p80_ms == pytest.approx(80.2)
    assert s.min_ms == 1.0
    assert s.cv == pytest.approx(statistics.stdev(xs) / statistics.fmean(xs))
    assert summarize([2.0]).cv == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_rotation_covers_twice_the_l2() -> None:
    t = TimerSettings()
    l2 = 50 * 2**20
    small = Problem(1024, 1024, 1024)  # 6 MiB per set
    n = rotation_sets(small, l2, t)
    assert n * small.bytes_per_set() >= 2 * l2
    assert (n - 1) * small.bytes_per_set() < 2 * l2
    big = Problem(16384, 16384, 16384)
    assert rotation_sets(big, l2, t) == 2  # one set already exceeds L2; still alternate two
    tiny = Problem(1, 1, 8)
    assert rotation_sets(tiny, l2, t) * tiny.bytes_per_set() <= t.max_rotation_bytes


def test_time_launches_rotates_sets_and_meets_minimums() -> None:
    seen: list[int] = []
    sets = [(i, None, None) for i in range(3)]

    def launch(a, b, d):
        seen.append(a)
        time.sleep(0.0002)

    assert warm_up(launch, sets, 0.05, "cpu") >= 1
    seen.clear()
    samples = time_launches(
        launch, sets, min_samples=50, min_time_s=0.02, max_samples=500, device="cpu"
    ).samples
    assert len(samples) >= 50
    assert sum(samples) >= 20.0
    assert all(x >= 0.2 for x in samples)
    assert seen[:6] == [0, 1, 2, 0, 1, 2]


def test_time_launches_meets_min_time_when_launches_speed_up() -> None:
    """The probe sizes the run; launches that turn out faster than the probe still get timed
    until ``min_time_s`` is covered."""
    calls = {"n": 0}

    def launch(a, b, d):
        calls["n"] += 1
        time.sleep(0.001 if calls["n"] <= 5 else 0.0002)  # the 5 probe launches are slow

    samples = time_launches(
        launch, [(0, None, None)], min_samples=5, min_time_s=0.02, max_samples=1000, device="cpu"
    ).samples
    assert sum(samples) >= 20.0 and len(samples) > 20


def _busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def test_the_default_floor_holds_quick_and_slow_launchers_alike() -> None:
    """Under the default settings (timer v5) two short kernels whose launches cost 0.03 and
    0.15 ms of host time (cuBLAS's and Gluon's, roughly) are held behind the same GPU work per
    launch, the floor's. Without a floor (v4) each is held 1.5x its own host time, so the
    slower launcher about five times longer."""

    def timed(host_ms: float, floor_ms: float) -> Launches:
        def launch(a, b, d):  # a CPU "kernel": all host time
            _busy(host_ms)

        return time_launches(launch, [(0, None, None)], 5, 0.01, 200, "cpu", floor_ms)

    floor = TimerSettings().hold_floor_ms
    v5 = {ms: timed(ms, floor) for ms in (0.03, 0.15)}
    assert v5[0.03].hold_ms_per_launch == v5[0.15].hold_ms_per_launch == floor
    assert all(t.host_ms > 0 for t in v5.values())
    v4 = {ms: timed(ms, 0.0) for ms in (0.03, 0.15)}
    assert v4[0.15].hold_ms_per_launch >= 1.5 * 0.15
    assert v4[0.15].hold_ms_per_launch > 2 * v4[0.03].hold_ms_per_launch


class _FakeGpu(_Clock):
    """A clock that says it is on a GPU, so ``time_launches`` and ``warm_up`` run their holds
    (a :class:`_FakeHold`): each launch appends its "GPU time" (ms) to ``times`` and a batch's
    samples are those, while the host's enqueue time stays a real, tiny one."""

    times: ClassVar[list[float]] = []

    def __init__(self, device: str) -> None:
        super().__init__("cpu")
        self.cuda, self._torch = True, None

    def sync(self) -> None:
        pass

    def marks(self, n: int) -> list[Any]:
        return [0.0] * n

    def mark(self, marks: list[Any], i: int) -> None:
        pass

    def elapsed_ms(self, marks: list[Any]) -> list[float]:
        return self.times[len(self.times) - (len(marks) - 1) :]


class _FakeHold:
    """Records the GPU work each batch was held behind (ms), instead of running GEMMs."""

    asked: ClassVar[list[float]] = []

    def __init__(self, torch: Any) -> None:
        type(self).asked = []

    def __call__(self, ms: float) -> None:
        self.asked.append(ms)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> type[_FakeHold]:
    import harness.timing as timing

    monkeypatch.setattr(timing, "_Clock", _FakeGpu)
    monkeypatch.setattr(timing, "_Hold", _FakeHold)
    _FakeGpu.times = []
    return _FakeHold


def _kernel(ms: float) -> Callable[..., None]:
    def launch(a, b, d):
        _FakeGpu.times.append(ms)

    return launch


def test_timer_v6_counts_the_hold_toward_the_minimum_time(held: type[_FakeHold]) -> None:
    """A 0.05 ms kernel held 0.5 ms a launch: v5 takes min_time_s of the kernel's own time
    (200 launches for 10 ms), v6 counts the 0.55 ms each launch occupies the GPU (19), and
    each of its batches still waits behind 0.5 ms a launch. A kernel longer than the floor
    is not held, and v6 changes nothing for it."""
    one = [(0, None, None)]
    v5 = time_launches(_kernel(0.05), one, 5, 0.01, 1000, "cuda", 0.5, count_hold=False)
    assert v5.hold_ms_per_launch == 0.5 and len(v5.samples) == 200
    v6 = time_launches(_kernel(0.05), one, 5, 0.01, 1000, "cuda", 0.5)  # the default
    assert TimerSettings().count_hold and v6.hold_ms_per_launch == 0.5 and len(v6.samples) == 19
    assert sum(held.asked) == pytest.approx(0.5 * 19)  # the hold's time is what covers it
    assert sum(v6.samples) + sum(held.asked) >= 10.0
    for count_hold in (False, True):
        held.asked = []
        slow = time_launches(_kernel(0.8), one, 5, 0.02, 1000, "cuda", 0.5, count_hold=count_hold)
        assert slow.hold_ms_per_launch == 0.0 and held.asked == []
        assert len(slow.samples) == 25  # 20 ms of its own time


def test_timer_v6_warms_a_held_kernel_up_held(held: type[_FakeHold]) -> None:
    """With ``held_floor_ms`` (v6) a kernel under the floor is warmed up in batches behind
    its hold, 0.5 ms a launch, so the GPU is under the measurement's load from the start; a
    kernel over the floor, and every kernel without ``held_floor_ms`` (v5), warms up back to
    back."""
    n = warm_up(_kernel(0.05), [(0, None, None)], 0.02, "cuda", held_floor_ms=0.5)
    assert n == len(_FakeGpu.times) > 10 and held.asked  # held batches after a 10-launch probe
    assert set(held.asked) == {0.5 * 200}
    for kernel, floor in ((_kernel(0.05), None), (_kernel(0.8), 0.5)):
        held.asked = []
        assert warm_up(kernel, [(0, None, None)], 0.01, "cuda", held_floor_ms=floor) >= 1
        assert held.asked == []


def test_hold_runs_before_the_batch_and_outside_its_samples() -> None:
    """A host-bound batch starts behind the hold's GPU work (GEMMs, see ``_Hold``), enqueued
    before the first timing mark, so no sample contains it."""
    events: list[str] = []

    def hold(ms: float) -> None:
        events.append(f"hold {ms}")
        time.sleep(0.02)

    def launch(a, b, d):
        events.append("launch")
        time.sleep(0.0002)

    samples, _ = _run_batch(_Clock("cpu"), launch, [(0, None, None)], 5, 0, hold, 3.0)
    assert events == ["hold 3.0"] + ["launch"] * 5
    assert len(samples) == 5 and max(samples) < 20.0
    events.clear()
    _run_batch(_Clock("cpu"), launch, [(0, None, None)], 2, 0, hold, 0.0)
    assert events == ["launch", "launch"]  # no hold asked for: none run


def test_telemetry_merge_weights_by_samples() -> None:
    a = Telemetry(10, 1500.0, 1400.0, 1600.0, 600.0, 650.0, 60.0)
    b = Telemetry(30, 1700.0, 1650.0, 1800.0, 700.0, 720.0, 70.0)
    m = merge([a, b, Telemetry(0)])
    assert m.samples == 40
    assert m.sm_clock_mhz_mean == pytest.approx(1650.0)
    assert (m.sm_clock_mhz_min, m.sm_clock_mhz_max, m.temp_c_max) == (1400.0, 1800.0, 70.0)
    assert merge([Telemetry(0)]).sm_clock_mhz_mean is None


class _FakeNvml:
    """The few ``pynvml`` names the sampler uses: instant power 512.5 W (or a failing field
    where ``instant`` is False), one-second average 700 W, SM clock 1500 MHz, 60 C."""

    NVML_SUCCESS = 0
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, instant: bool) -> None:
        self.instant = instant

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> object:
        return object()

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> object:
        return object()

    def nvmlDeviceGetClockInfo(self, handle: object, which: int) -> int:
        return 1500

    def nvmlDeviceGetTemperature(self, handle: object, which: int) -> int:
        return 60

    def nvmlDeviceGetFieldValues(self, handle: object, fields: list[int]) -> list[object]:
        assert fields == [186]  # NVML_FI_DEV_POWER_INSTANT, as nvml.h numbers it
        value = types.SimpleNamespace(uiVal=512_500)
        rc = self.NVML_SUCCESS if self.instant else 3  # NVML_ERROR_NOT_SUPPORTED
        return [types.SimpleNamespace(nvmlReturn=rc, valueType=1, value=value)]

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        return 700_000


@pytest.mark.parametrize(
    ("instant", "watts", "source"), [(True, 512.5, "instant"), (False, 700.0, "average")]
)
def test_power_reads_the_instant_field_where_the_driver_has_it(
    monkeypatch: pytest.MonkeyPatch, instant: bool, watts: float, source: str
) -> None:
    """NVML's ``nvmlDeviceGetPowerUsage`` is a one-second mean on Ampere and newer, longer than
    a timing window: the sampler reads the instantaneous field where it answers, and names
    the source in the telemetry."""
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(instant))
    read, got = power_reader(object())
    assert (read(), got) == (watts, source)
    assert power_reader(None) is None


def test_telemetry_merge_keeps_a_common_power_source() -> None:
    a = Telemetry(10, 1500.0, power_w_mean=600.0, power_source="instant")
    b = Telemetry(30, 1700.0, power_w_mean=700.0, power_source="instant")
    assert merge([a, b]).power_source == "instant"
    assert (
        merge([a, Telemetry(5, 1600.0, power_w_mean=650.0, power_source="average")]).power_source
        == "mixed"
    )
    assert merge([Telemetry(10, 1500.0, power_w_mean=600.0)]).power_source is None


@pytest.mark.parametrize(("instant", "source"), [(True, "instant"), (False, "average")])
def test_sampler_records_the_power_source(
    monkeypatch: pytest.MonkeyPatch, instant: bool, source: str
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(instant))
    with TelemetrySampler(interval_s=0.005) as sampler:
        time.sleep(0.05)
    t = sampler.summary()
    assert t.samples >= 2 and t.sm_clock_mhz_mean == 1500.0 and t.temp_c_max == 60.0
    assert (t.power_w_mean, t.power_source) == ({True: 512.5, False: 700.0}[instant], source)
