"""One timed launch's output is checked like the correctness check's, in the worker, on a CPU.

``measure`` with ``recheck`` makes its first rotation set a guarded, witnessed set, poisons
its D after the warm-up and inspects it after timing; the toy plugin's kernels that go wrong
only when launched back to back, store past the end of D or scribble on A are each caught.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from expectations import require_module

from harness.check import check_kernel
from harness.protocol import Problem
from harness.timing import TimerSettings, time_launches
from harness.worker import _measure, _State

require_module("torch", "the re-check compares tensors")

PROBLEM = Problem(100, 72, 40)
FAST = TimerSettings(warmup_s=0.01, min_samples=5, min_time_s=0.001, rounds=1)


def _toy(name: str) -> Any:
    # the module, not the package's ``kernels()`` listing of the same name
    toy = importlib.import_module("toy_gemm_plugin.kernels")
    return getattr(toy, name.upper()).compile(PROBLEM)


def _measure_toy(name: str, recheck: bool = True) -> dict[str, Any]:
    state = _State(None, "cpu")
    launch = _toy(name)
    state.launches[(PROBLEM, None)] = launch
    # the correctness check's two launches come first, as in a run
    assert check_kernel(PROBLEM, launch, device="cpu").passed
    return _measure(
        state, PROBLEM, None, FAST.as_dict(), FAST.warmup_s, 5, FAST.min_time_s, recheck
    )


def test_time_launches_always_launches_the_first_set() -> None:
    """What the recheck relies on: ``sets[0]`` receives a launch inside ``time_launches``."""
    launched: list[int] = []
    sets = [(i, None, None) for i in range(50)]
    time_launches(lambda a, b, d: launched.append(a), sets, 5, 0.0, 5, device="cpu")
    assert launched and 0 in launched


@pytest.mark.usefixtures("plugin_on_path")
def test_a_correct_kernel_passes_the_recheck() -> None:
    reply = _measure_toy("ok")
    assert reply["recheck"].passed and reply["recheck"].faults == ()
    assert len(reply["samples"]) >= 5
    assert _measure_toy("ok", recheck=False)["recheck"] is None


@pytest.mark.usefixtures("plugin_on_path")
def test_a_kernel_wrong_only_when_launched_back_to_back_is_caught() -> None:
    """Right on its first two launches (the check passes), then it stores nothing: the timed
    launch's D still holds the poison put there after the warm-up."""
    r = _measure_toy("stale")["recheck"]
    assert not r.passed and r.nonfinite == PROBLEM.m * PROBLEM.n
    assert r.failure().startswith("result differs from torch.matmul")


@pytest.mark.usefixtures("plugin_on_path")
@pytest.mark.parametrize(
    ("name", "fault"),
    [
        ("overrun", "wrote 3 elements past the end of D"),
        ("clobber", f"modified A ({PROBLEM.k} of {PROBLEM.m * PROBLEM.k} elements)"),
    ],
)
def test_timed_launches_touch_only_d(name: str, fault: str) -> None:
    assert check_kernel(PROBLEM, _toy(name), device="cpu").faults == (fault,)
    r = _measure_toy_unchecked(name)["recheck"]
    assert r.faults == (fault,) and not r.passed
    assert r.failure().startswith(fault)  # (A scribbled on in the warm-up: D is wrong too)


def _measure_toy_unchecked(name: str) -> dict[str, Any]:
    state = _State(None, "cpu")
    state.launches[(PROBLEM, None)] = _toy(name)
    return _measure(state, PROBLEM, None, FAST.as_dict(), FAST.warmup_s, 5, FAST.min_time_s, True)
