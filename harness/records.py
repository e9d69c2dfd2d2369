"""Typed results records: what a bench or codegen run produces, one record per outcome.

Records are frozen dataclasses built by the runner and the codegen driver and read by the
reports; :mod:`harness.results` is the only place that turns them into JSON and back. Absent
numbers are ``None``. Every record names the kernel (its identity fields) and, for kernels with
a config space, the config that ran (``config`` is its name, ``config_values`` its knobs).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.check import CheckResult
from harness.gemm import Problem
from harness.launched import DeviceKernel
from harness.telemetry import Telemetry
from harness.timing import Stats

__all__ = [
    "BenchRecord",
    "CheckResult",
    "CodegenRecord",
    "DeviceKernel",
    "Stats",
    "Status",
    "Telemetry",
]


class Status(enum.StrEnum):
    OK = "ok"
    UNSUPPORTED = "unsupported"
    WRONG = "wrong"
    ERROR = "error"
    TIMEOUT = "timeout"

    @property
    def failed(self) -> bool:
        """A wrong result, an exception/crash or a hang (not a declared limitation)."""
        return self in (Status.WRONG, Status.ERROR, Status.TIMEOUT)


@dataclass(frozen=True, kw_only=True)
class _KernelRecord:
    kernel: str
    backend: str
    name: str
    rung: int
    rung_name: str
    arch: str
    status: Status = Status.ERROR
    reason: str | None = None
    config: str | None = None
    config_values: Mapping[str, Any] | None = None

    @staticmethod
    def identity(spec: Any) -> dict[str, Any]:
        """The identity fields of a :class:`~harness.protocol.KernelSpec`."""
        return {
            "kernel": spec.id,
            "backend": spec.backend,
            "name": spec.name,
            "rung": int(spec.rung),
            "rung_name": spec.rung.label,
            "arch": spec.arch,
        }

    @property
    def label(self) -> str:
        """``kernel`` or ``kernel [config]``: how logs, tables and plots name what ran."""
        return f"{self.kernel} [{self.config}]" if self.config else self.kernel


@dataclass(frozen=True, kw_only=True)
class BenchRecord(_KernelRecord):
    """One (kernel, config, problem) of a bench run.

    ``selected`` says whether ``config`` is the kernel's own choice for the problem (what a
    plain ``bench`` runs); a ``--tune`` run also records every other config on the menu.
    ``selection`` says why the kernel chose it (its tuned table, or its heuristic's one-line
    reasoning, e.g. the cost model's estimate, waves and runner-up); None for a config that
    was not the kernel's own choice, or a kernel that gives no reason.

    ``gpu`` names the GPU it ran on (host, ``CUDA_VISIBLE_DEVICES`` slot, UUID, serial, PCI bus
    id, name: :data:`harness.devices.IDENTITY_FIELDS`); ``versions`` the interpreter and the
    pinned distributions of the environment its worker ran in (each backend may have its own).
    ``cublas_drift_pct`` is how far cuBLAS moved over the problem's measurements (timed before
    and after the kernels: after / before - 1, in %); ``per_clock_pct_of_cublas`` compares
    TFLOPS per GHz with cuBLAS's in the same run, which a clock change does not move.
    ``host_launch_ms`` is the host's enqueue time per launch and ``hold_ms_per_launch`` the
    GPU work each timed launch was held behind (0: none; ``harness.timing``), medians over the
    rounds. ``launched`` is what one launch ran on the device, each kernel with its time
    (``bench --check-only --launched``, :mod:`harness.launched`); None where not profiled.
    """

    problem: Problem
    selected: bool | None = None
    selection: str | None = None
    compile_s: float | None = None
    check: CheckResult | None = None
    timing: Stats | None = None
    rotation_sets: int | None = None
    tflops: float | None = None
    tflops_per_ghz: float | None = None
    pct_of_cublas: float | None = None
    per_clock_pct_of_cublas: float | None = None
    cublas_drift_pct: float | None = None
    host_launch_ms: float | None = None
    hold_ms_per_launch: float | None = None
    telemetry: Telemetry | None = None
    gpu: Mapping[str, Any] | None = None
    versions: Mapping[str, Any] | None = None
    launched: tuple[DeviceKernel, ...] | None = None
    traceback: str | None = None

    @property
    def problem_key(self) -> str:
        return self.problem.key

    @property
    def timed(self) -> bool:
        return self.status == Status.OK and self.timing is not None

    @property
    def median_ms(self) -> float | None:
        return self.timing.median_ms if self.timing else None


@dataclass(frozen=True, kw_only=True)
class CodegenRecord(_KernelRecord):
    """One kernel compiled for its arch without a GPU."""

    registers: int | None = None
    spill_bytes: int | None = None
    shared_bytes: int | None = None
    compile_seconds: float | None = None
    lines_of_code: int | None = None
    features: tuple[str, ...] = ()
    raw_ptx: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    ptx_bytes: int | None = None
