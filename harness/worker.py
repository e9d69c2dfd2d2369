"""The child-process side of isolation: one worker process per kernel.

The parent (``harness.isolate``) starts ``main`` under the backend's interpreter and sends
small command dicts over a socket; the worker answers each with a dict. Everything that
touches the GPU happens here, so a hang, a CUDA fault or a crash is confined to this process.
Commands:

``env``          describe the device (name, SMs, L2, capability, CUDA, torch version, and the
                 GPU's UUID, serial and PCI bus id where NVML or torch tell them)
``inspect``      for kernel specs: what of their requirements is missing here, and the
                 versions of their pinned distributions (the "not installed" records and each
                 record's versions come from the backend's own environment)
``probe``        is the device healthy: the reference (or, without one, torch) computes a
                 small GEMM correctly in this fresh process
``describe``     the kernel's config menu (names), or None without a config space
``configs_for``  the menu entries ``bench --tune`` times for a problem (``top``: the best ranked)
``prepare``      resolve the config, ask ``supports``, ``compile`` (timed), check correctness
``measure``      allocate rotated input sets, warm up, time launches with NVML telemetry, free;
                 with ``recheck``, check one timed launch's output as ``prepare`` checks
``launched``     profile one prepared launch: the device kernels it runs, each with its time
                 (:mod:`harness.launched`; only in runs that time nothing)
``release``      drop a prepared (problem, config) launch
``codegen``      compile for an arch without running (``Kernel.codegen``)
``exit``         leave the loop

Third-party noise (DSL deprecation warnings and the like) is silenced in the worker unless
``GEMM_STUDY_VERBOSE=1`` is set (:func:`harness.quiet.quiet_third_party`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from harness.configs import (
    ConfigSpace,
    config_space,
    parse_pairs,
    resolve_config,
    tune_candidates,
)
from harness.protocol import KernelSpec, Problem
from harness.quiet import quiet_third_party


class _State:
    def __init__(self, spec: KernelSpec | None, device: str) -> None:
        self.spec = spec
        self.device = device
        self.kernel: Any = None
        #: (problem, config name or None) -> launch function
        self.launches: dict[tuple[Problem, str | None], Any] = {}

    def load(self) -> Any:
        if self.kernel is None:
            assert self.spec is not None
            self.kernel = self.spec.load()
        return self.kernel


def _supports(kernel: Any, problem: Problem, config: Any) -> str | None:
    return kernel.supports(problem) if config is None else kernel.supports(problem, config)


def describe_device(device: str) -> dict[str, Any]:
    import platform

    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": str(torch.__version__),  # a str: unpickling a TorchVersion imports torch
        "torch_cuda": torch.version.cuda,
        "device": device,
    }
    if device == "cuda":
        from harness.telemetry import cuda_uuid, nvml_device_info, torch_pci_bus_id

        idx = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(idx)
        info.update(
            gpu=p.name,
            sm_count=p.multi_processor_count,
            l2_bytes=int(getattr(p, "L2_cache_size", 0)),
            capability=f"{p.major}.{p.minor}",
            memory_bytes=int(p.total_memory),
            cudnn=None,
            uuid=cuda_uuid(idx),
            pci_bus_id=torch_pci_bus_id(p),
        )
        info.update({k: v for k, v in nvml_device_info(idx).items() if v is not None})
    return info


def _inspect(specs: Sequence[KernelSpec]) -> dict[str, Any]:
    """Per spec id: its unmet requirements here, and the versions of the harness's and its
    pinned distributions (plus this interpreter's), as the results record them."""
    import platform

    from harness.env import package_versions

    python = {"python": platform.python_version(), "executable": sys.executable}
    return {
        "specs": {
            s.id: {
                "missing": s.missing_requirements(),
                "versions": {**python, **package_versions(s.distributions)},
            }
            for s in specs
        }
    }


#: The GEMM a device probe computes: small, and a multiple of every tile.
PROBE_PROBLEM = Problem(256, 256, 256)


def _probe(state: _State) -> dict[str, Any]:
    """A health check of the device in a fresh process: the reference kernel (the state's
    spec) prepared and checked on :data:`PROBE_PROBLEM`, or without one a torch GEMM compared
    with the CPU's. ``{"ok": True}`` or ``{"ok": False, "error": why}``."""
    if state.spec is not None:
        reply = _prepare(state, PROBE_PROBLEM, 1, None)
        if reply["status"] != "ok":
            return {"ok": False, "error": f"{reply['status']}: {reply.get('reason')}"}
        return {"ok": True}
    import torch

    a = torch.rand(256, 256, dtype=torch.float32)
    got = torch.matmul(a.to(state.device), a.to(state.device)).cpu()
    if not torch.allclose(got, a @ a, rtol=1e-3, atol=1e-3):
        return {"ok": False, "error": "a 256^3 GEMM on the device differs from the CPU's"}
    return {"ok": True}


def _describe(state: _State) -> dict[str, Any]:
    """The kernel's config menu (names), or None for a kernel without a config space."""
    menu = config_space(state.load())
    return {"configs": None if menu is None else [c.name for c in menu]}


def _configs_for(state: _State, problem: Problem, top: int | None) -> dict[str, Any]:
    """The menu entries ``bench --tune`` times for ``problem`` (all valid ones, or the kernel's
    ``top`` best ranked plus its own choice)."""
    return {"configs": [c.name for c in tune_candidates(state.load(), problem, top)]}


def _picks(
    state: _State,
    problems: Sequence[Problem],
    gpu_name: str | None,
    ran: Sequence[str | None] = (),
) -> dict[str, Any]:
    """What ``bench`` would run for each problem on a GPU named ``gpu_name`` (``picks``: one
    ``{"config", "why", "refused", "as_ran", "removed"}`` a problem; None for a kernel without
    a config space). A kernel whose configs are a :class:`ConfigSpace` (``kernel.space``) is
    asked for that GPU's tuned table, else for its heuristic; any other one answers for the GPU
    this process sees (``gpu_honoured`` False). ``ran`` holds, problem by problem, the config
    name a run recorded (or None): ``as_ran`` says whether it names today's pick (``_as_ran``).
    Nothing is compiled: selection is host code."""
    kernel = state.load()
    if config_space(kernel) is None:
        return {"picks": None, "gpu_honoured": False}
    assert state.spec is not None
    kid = state.spec.id
    space = getattr(kernel, "space", None)
    own = not isinstance(space, ConfigSpace)
    explain = getattr(kernel, "selection_reason", None)
    before = list(ran) + [None] * (len(problems) - len(ran))
    out = []
    for problem, then in zip(problems, before):
        try:
            if own:
                config = kernel.select(problem)
                why = explain(problem, config) if callable(explain) else None
            else:
                config = space.select(kid, problem, gpu_name)
                why = space.reason(kid, problem, config, gpu_name)
            refused = _supports(kernel, problem, config)
        except ValueError as e:  # a problem the kernel cannot take: said, not raised
            out.append(
                {"config": None, "why": None, "refused": str(e), "as_ran": None, "removed": []}
            )
            continue
        as_ran, removed = _as_ran(config, then)
        out.append(
            {
                "config": config.name,
                "why": why,
                "refused": refused,
                "as_ran": as_ran,
                "removed": removed,
            }
        )
    return {"picks": out, "gpu_honoured": not own}


def _as_ran(config: Any, name: str | None) -> tuple[bool | None, list[str]]:
    """Whether the config name a run recorded, ``name``, is ``config`` (None: no record), and
    the ``k=v`` of its knobs the kernel no longer declares. Names outlive knobs both ways: a
    knob added since is at its default in an older name (``ConfigSpace.by_name``), and one
    removed since is left out of the comparison and reported."""
    if name is None:
        return None, []
    if name == config.name:
        return True, []
    try:
        pairs = parse_pairs(name)
    except ValueError:
        return False, []
    known = config.values()
    removed = [f"{k}={v}" for k, v in pairs.items() if k not in known]
    kept = ",".join(f"{k}={v}" for k, v in pairs.items() if k in known)
    try:
        then = type(config)().with_overrides(kept)
    except (TypeError, ValueError):  # knobs without defaults, or a value that no longer parses
        return False, removed
    return then == config, removed


def _config_fields(kernel: Any, problem: Problem, config: Any) -> dict[str, Any]:
    if config is None:
        return {"config": None, "config_values": None, "selected": None, "selection": None}
    selected = config == kernel.select(problem)
    reason = getattr(kernel, "selection_reason", None)  # optional: a plugin may not say why
    return {
        "config": config.name,
        "config_values": config.values(),
        "selected": selected,
        "selection": reason(problem, config) if selected and callable(reason) else None,
    }


def _prepare(state: _State, problem: Problem, checks: int, request: str | None) -> dict[str, Any]:
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
    kernel = state.load()
    config = resolve_config(kernel, problem, request)
    fields = _config_fields(kernel, problem, config)
    reason = _supports(kernel, problem, config)
    if reason:
        return {"status": "unsupported", "reason": reason, **fields}
    t0 = time.perf_counter()
    launch = kernel.compile(problem) if config is None else kernel.compile(problem, config)
    if cuda:
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    state.launches[(problem, fields["config"])] = launch
    result = check_kernel(problem, launch, device=state.device, checks=checks)
    if cuda:
        torch.cuda.empty_cache()  # many workers share the GPU: keep only what kernels hold
    return {
        "status": "ok" if result.passed else "wrong",
        "reason": result.failure(),
        "compile_s": compile_s,
        "check": result,
        **fields,
    }


def _measure(
    state: _State,
    problem: Problem,
    config: str | None,
    settings: dict[str, Any],
    warmup_s: float,
    min_samples: int,
    min_time_s: float,
    recheck: bool = False,
) -> dict[str, Any]:
    """Time the prepared launch over rotated input sets. With ``recheck``, the first set is a
    :class:`~harness.check.LaunchWitness`: its D is poisoned again after the warm-up, so what
    it holds after timing is a timed launch's output (``time_launches`` always launches
    ``sets[0]``), and it is checked like the correctness check's (values, guard band, A and B
    unchanged). A kernel that is right once and wrong when launched back to back fails here."""
    import torch

    from harness.check import LaunchWitness, random_operands, synchronize
    from harness.telemetry import TelemetrySampler
    from harness.timing import TimerSettings, rotation_sets, time_launches, warm_up

    ts = TimerSettings(**settings)
    launch = state.launches[(problem, config)]
    if state.device == "cuda":
        l2 = int(
            getattr(
                torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0
            )
        )
    else:
        l2 = 0
    n_sets = rotation_sets(problem, l2, ts)
    witness = LaunchWitness(problem, state.device) if recheck else None
    sets = [] if witness is None else [(witness.a, witness.b, witness.d)]
    checked = None
    while len(sets) < n_sets:
        a, b = random_operands(problem, state.device)
        d = torch.full((problem.m, problem.n), math.nan, device=state.device, dtype=a.dtype)
        sets.append((a, b, d))
    try:
        held = ts.hold_floor_ms if ts.count_hold else None  # v6 warms a held kernel up held
        warm_up(launch, sets, warmup_s, state.device, held_floor_ms=held)
        if witness is not None:
            witness.out.poison()
        with TelemetrySampler(enabled=state.device == "cuda") as tel:
            timed = time_launches(
                launch,
                sets,
                min_samples,
                min_time_s,
                ts.max_samples,
                state.device,
                hold_floor_ms=ts.hold_floor_ms,
                count_hold=ts.count_hold,
            )
        if witness is not None:
            synchronize(state.device)
            checked = witness.inspect()
    finally:
        del sets, witness
        if state.device == "cuda":
            torch.cuda.empty_cache()
    return {
        "samples": timed.samples,
        "host_ms": timed.host_ms,
        "hold_ms_per_launch": timed.hold_ms_per_launch,
        "telemetry": tel.summary(),
        "rotation_sets": n_sets,
        "recheck": checked,
    }


def _launched(state: _State, problem: Problem, config: str | None) -> dict[str, Any]:
    import torch

    from harness.check import random_operands
    from harness.launched import profile_launch

    launch = state.launches[(problem, config)]
    a, b = random_operands(problem, state.device)
    d = torch.empty((problem.m, problem.n), device=state.device, dtype=a.dtype)
    try:
        return {"launched": profile_launch(launch, (a, b, d), state.device)}
    finally:
        del a, b, d
        if state.device == "cuda":
            torch.cuda.empty_cache()


def _codegen(state: _State, problem: Problem, arch: str, request: str | None) -> dict[str, Any]:
    kernel = state.load()
    config = resolve_config(kernel, problem, request)
    t0 = time.perf_counter()
    art = kernel.codegen(problem, arch) if config is None else kernel.codegen(problem, arch, config)
    wall = time.perf_counter() - t0
    return {
        "status": "ok",
        "artifacts": art,
        "wall_s": wall,
        **_config_fields(kernel, problem, config),
    }


def _leave() -> NoReturn:
    """End the worker without interpreter teardown: nothing is left to flush but stdio, and
    some DSL bindings (Triton's nanobind module) print pages of spurious leak reports at
    teardown, burying the run's progress output."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> None:
    """The worker process: ``python -c "from harness.worker import main; main()" FD``, FD its
    end of the socket pair :class:`harness.isolate.Worker` made. The parent sends the import
    path to use (or None: this interpreter's own), then the spec and device, then commands."""
    args = sys.argv[1:] if argv is None else argv
    conn = Connection(int(args[0]))
    try:
        path = conn.recv()
        if path is not None:
            sys.path[:] = path
        init = conn.recv()
    except EOFError:
        _leave()
    serve(conn, init["spec"], init["device"])


def serve(conn: Connection, spec: KernelSpec | None, device: str) -> None:
    """Worker main loop: answer commands until ``exit`` or the parent goes away. torch is
    imported before the worker reports ready, so its import (seconds, more on a loaded host)
    counts against the start-up timeout, not the first step's (a 5 s ``--timeout`` timed out
    a kernel that raises at once when two workers started on two busy cores)."""
    quiet_third_party()
    with contextlib.suppress(ImportError):  # a codegen-only environment may lack it
        import torch  # noqa: F401
    state = _State(spec, device)
    conn.send({"ready": True})
    while True:
        try:
            cmd = conn.recv()
        except (EOFError, OSError):
            _leave()
        op = cmd.get("op")
        try:
            if op == "exit":
                conn.send({"ok": True})
                _leave()
            if op == "env":
                reply = describe_device(device)
            elif op == "describe":
                reply = _describe(state)
            elif op == "inspect":
                reply = _inspect(cmd["specs"])
            elif op == "probe":
                reply = _probe(state)
            elif op == "picks":
                reply = _picks(state, cmd["problems"], cmd.get("gpu"), cmd.get("ran", ()))
            elif op == "configs_for":
                reply = _configs_for(state, cmd["problem"], cmd.get("top"))
            elif op == "prepare":
                reply = _prepare(state, cmd["problem"], cmd.get("checks", 2), cmd.get("config"))
            elif op == "measure":
                reply = _measure(
                    state,
                    cmd["problem"],
                    cmd.get("config"),
                    cmd["settings"],
                    cmd["warmup_s"],
                    cmd["min_samples"],
                    cmd["min_time_s"],
                    cmd.get("recheck", False),
                )
            elif op == "launched":
                reply = _launched(state, cmd["problem"], cmd.get("config"))
            elif op == "codegen":
                reply = _codegen(state, cmd["problem"], cmd["arch"], cmd.get("config"))
            elif op == "release":
                state.launches.pop((cmd["problem"], cmd.get("config")), None)
                reply = {"ok": True}
            else:
                reply = {"error": f"unknown op {op!r}"}
        except Exception as e:
            reply = {
                "status": "error",
                "error": f"{type(e).__name__}: {e}".strip()[:2000],
                "traceback": traceback.format_exc()[-8000:],
            }
        try:
            conn.send(reply)
        except OSError:  # the parent is gone (killed, or it gave up on this call)
            _leave()
