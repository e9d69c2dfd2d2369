"""The child-process side of isolation: one worker process per kernel.

The parent (``harness.isolate``) sends small command dicts over a pipe; the worker answers
each with a dict. Everything that touches the GPU happens here, so a hang, a CUDA fault or a
crash is confined to this process. Commands:

``env``      describe the device (name, SMs, L2, capability, CUDA, torch version)
``prepare``  load the kernel, ask ``supports``, ``compile`` (timed) and check correctness
``measure``  allocate rotated input sets, warm up, time launches with NVML telemetry, free
``codegen``  compile for an arch without running (``Kernel.codegen``)
``exit``     leave the loop
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from harness.protocol import KernelSpec, Problem


class _State:
    def __init__(self, spec: KernelSpec | None, device: str) -> None:
        self.spec = spec
        self.device = device
        self.kernel: Any = None
        self.launches: dict[Problem, Any] = {}


def describe_device(device: str) -> dict[str, Any]:
    import platform

    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": device,
    }
    if device == "cuda":
        idx = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(idx)
        info.update(
            gpu=p.name,
            sm_count=p.multi_processor_count,
            l2_bytes=int(getattr(p, "L2_cache_size", 0)),
            capability=f"{p.major}.{p.minor}",
            memory_bytes=int(p.total_memory),
            cudnn=None,
        )
        from harness.telemetry import nvml_device_info

        info.update(nvml_device_info(idx))
    return info


def _prepare(state: _State, problem: Problem, checks: int) -> dict[str, Any]:
    import torch

    from harness.check import check_kernel
    from harness.protocol import ARCH_CAPABILITY

    assert state.spec is not None
    cuda = state.device == "cuda"
    if cuda:
        want = ARCH_CAPABILITY[state.spec.arch]
        have = torch.cuda.get_device_capability()
        if want is not None and tuple(have) != want:
            return {
                "status": "unsupported",
                "reason": f"built for {state.spec.arch}; this GPU is sm_{have[0]}{have[1]}",
            }
    if state.kernel is None:
        state.kernel = state.spec.load()
    reason = state.kernel.supports(problem)
    if reason:
        return {"status": "unsupported", "reason": reason}
    t0 = time.perf_counter()
    launch = state.kernel.compile(problem)
    if cuda:
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    state.launches[problem] = launch
    result = check_kernel(problem, launch, device=state.device, checks=checks)
    if cuda:
        torch.cuda.empty_cache()  # many workers share the GPU: keep only what kernels hold
    return {
        "status": "ok" if result.passed else "wrong",
        "reason": None
        if result.passed
        else f"result differs from torch.matmul: {result.summary()}",
        "compile_s": compile_s,
        "check": {
            "max_abs_err": result.max_abs_err,
            "rel_err": result.rel_err,
            "nonfinite": result.nonfinite,
            "atol": result.atol,
            "rtol": result.rtol,
            "checks": result.checks,
        },
    }


def _measure(
    state: _State,
    problem: Problem,
    settings: dict[str, Any],
    warmup_s: float,
    min_samples: int,
    min_time_s: float,
) -> dict[str, Any]:
    import torch

    from harness.check import random_operands
    from harness.telemetry import TelemetrySampler
    from harness.timing import TimerSettings, rotation_sets, time_launches, warm_up

    ts = TimerSettings(**settings)
    launch = state.launches[problem]
    if state.device == "cuda":
        l2 = int(
            getattr(
                torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0
            )
        )
    else:
        l2 = 0
    n_sets = rotation_sets(problem, l2, ts)
    sets = []
    for _ in range(n_sets):
        a, b = random_operands(problem, state.device)
        d = torch.full((problem.m, problem.n), math.nan, device=state.device, dtype=a.dtype)
        sets.append((a, b, d))
    try:
        warm_up(launch, sets, warmup_s, state.device)
        with TelemetrySampler(enabled=state.device == "cuda") as tel:
            samples = time_launches(
                launch, sets, min_samples, min_time_s, ts.max_samples, state.device
            )
    finally:
        del sets
        if state.device == "cuda":
            torch.cuda.empty_cache()
    return {"samples": samples, "telemetry": tel.summary().as_dict(), "rotation_sets": n_sets}


def _codegen(state: _State, problem: Problem, arch: str) -> dict[str, Any]:
    if state.kernel is None:
        assert state.spec is not None
        state.kernel = state.spec.load()
    t0 = time.perf_counter()
    art = state.kernel.codegen(problem, arch)
    wall = time.perf_counter() - t0
    return {"status": "ok", "artifacts": art, "wall_s": wall}


def _leave() -> NoReturn:
    """End the worker without interpreter teardown: nothing is left to flush but stdio, and
    some DSL bindings (Triton's nanobind module) print pages of spurious leak reports at
    teardown, burying the run's progress output."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve(conn: Connection, spec: KernelSpec | None, device: str) -> None:
    """Worker main loop (the target of the spawned process)."""
    state = _State(spec, device)
    conn.send({"ready": True})
    while True:
        try:
            cmd = conn.recv()
        except EOFError:
            _leave()
        op = cmd.get("op")
        try:
            if op == "exit":
                conn.send({"ok": True})
                _leave()
            if op == "env":
                reply = describe_device(device)
            elif op == "prepare":
                reply = _prepare(state, cmd["problem"], cmd.get("checks", 2))
            elif op == "measure":
                reply = _measure(
                    state,
                    cmd["problem"],
                    cmd["settings"],
                    cmd["warmup_s"],
                    cmd["min_samples"],
                    cmd["min_time_s"],
                )
            elif op == "codegen":
                reply = _codegen(state, cmd["problem"], cmd["arch"])
            elif op == "release":
                state.launches.pop(cmd["problem"], None)
                reply = {"ok": True}
            else:
                reply = {"error": f"unknown op {op!r}"}
        except Exception as e:
            reply = {
                "status": "error",
                "error": f"{type(e).__name__}: {e}".strip()[:2000],
                "traceback": traceback.format_exc()[-8000:],
            }
        conn.send(reply)
