"""What a test session expects to find installed, and what a missing piece means there.

A skip must never turn a broken install into a green run, so three settings decide:

``GEMM_STUDY_EXPECT_DSL=<backend>[,<backend>...]``
    The backends whose DSL this session installed (``nox -s tests`` sets it in each backend's
    session). Their compile and GPU tests *fail* when the DSL does not import — also when the
    package is there but one of its own imports is missing (Tilus without ``cuda-bindings``).
    Any other backend's tests skip when its DSL is absent: it is not meant to be here.
``GEMM_STUDY_REQUIRE_TOOLCHAIN=1`` (or ``CI`` set, as CI services do)
    nvcc/ptxas missing where a test needs them is a failure (``.ci/run`` exports it); elsewhere
    it is a skip that names what did not run. ``GEMM_STUDY_REQUIRE_TOOLCHAIN=0`` overrides ``CI``.
``GEMM_STUDY_ALLOW_PIN_DRIFT=1``
    A DSL installed at another version than its pin fails its GPU tests unless this is set; with
    it they run against the installed version and warn.

The same holds for the packages the tests themselves need (torch, matplotlib): under a nox
session (``GEMM_STUDY_EXPECT_DSL`` set) they were installed, so :func:`require_module` fails
where one is missing; ``pytest.importorskip`` would turn that broken install into a skip.

``tests/conftest.py`` prints these settings and every skip reason at the end of the session.

One more setting decides no verdict, only how fast one comes: ``GEMM_STUDY_CHECK_WORKERS=N``,
the worker processes a GPU test that forces many configs spreads them over on its one GPU
(:func:`forced_records`; default: half the CPU cores, at most 8). Those tests are bound by
compiling, one core a worker: on an H200 host the Gluon rung 8's register-A and stream-K tests
compiled for 14.5 minutes in one worker, the GPU idle, and had not finished.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Literal

import pytest

from harness.gemm import Problem
from harness.protocol import KernelSpec
from harness.records import BenchRecord
from harness.runner import Runner, RunSettings
from harness.toolchain import find_nvcc

__all__ = [
    "check_workers",
    "find_nvcc",
    "forced_records",
    "kernel_verdict",
    "policy_lines",
    "require_dsl",
    "require_module",
    "require_runnable",
    "require_tool",
    "spread",
]

EXPECT_DSL = "GEMM_STUDY_EXPECT_DSL"
REQUIRE_TOOLCHAIN = "GEMM_STUDY_REQUIRE_TOOLCHAIN"
ALLOW_PIN_DRIFT = "GEMM_STUDY_ALLOW_PIN_DRIFT"
CHECK_WORKERS = "GEMM_STUDY_CHECK_WORKERS"
#: The most worker processes :func:`check_workers` gives by default (each holds a CUDA context).
MAX_CHECK_WORKERS = 8

Verdict = tuple[Literal["skip", "fail", "warn"], str]


def _flag(value: str | None) -> bool | None:
    """True/False for a set flag, None for an unset or empty one."""
    if value is None or not value.strip():
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def expected_dsls(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The backends whose DSL this session installed (``GEMM_STUDY_EXPECT_DSL``)."""
    return frozenset(b.strip() for b in environ.get(EXPECT_DSL, "").split(",") if b.strip())


def toolchain_required(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a missing nvcc/ptxas fails (CI) rather than skips."""
    explicit = _flag(environ.get(REQUIRE_TOOLCHAIN))
    return explicit if explicit is not None else bool(_flag(environ.get("CI")))


def pin_drift_allowed(environ: Mapping[str, str] = os.environ) -> bool:
    return bool(_flag(environ.get(ALLOW_PIN_DRIFT)))


def require_dsl(backend: str, module: str, what: str) -> None:
    """Import ``module`` (the DSL of ``backend``, described as ``what``) for a test module.

    Fails (at collection) when the session installed that DSL, skips the module otherwise.
    """
    try:
        importlib.import_module(module)
        return
    except ImportError as e:
        error = f"{type(e).__name__}: {e}"
    # (outside the handler: the report then shows this line, not a chain of tracebacks)
    if backend in expected_dsls():
        pytest.fail(
            f"{what} does not import in a session that installs it "
            f"({EXPECT_DSL}={os.environ.get(EXPECT_DSL)}): {error}",
            pytrace=False,
        )
    pytest.skip(
        f"{what} is not installed here (not expected: nox -s 'tests({backend})' installs it)",
        allow_module_level=True,
    )


def require_module(module: str, why: str) -> ModuleType:
    """Import a package the tests need beyond the harness (torch, matplotlib), ``why`` saying
    what for. Every ``nox -s tests`` session that collects such a test installs it (and sets
    ``GEMM_STUDY_EXPECT_DSL``), so there a missing one is a broken install and fails; run by
    hand outside nox, the test skips, naming what did not run. Usable at module level and
    inside a test."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        error = f"{type(e).__name__}: {e}"
    if expected_dsls():
        pytest.fail(
            f"{module} ({why}) does not import in a session that installs it "
            f"({EXPECT_DSL}={os.environ.get(EXPECT_DSL)}): {error}",
            pytrace=False,
        )
    pytest.skip(f"{module} is not installed here ({why})", allow_module_level=True)
    raise AssertionError("unreachable")  # pytest.skip raises


def require_tool(name: str, path: str | None, needed_for: str) -> str:
    """``path`` if the CUDA tool ``name`` was found; else fail (CI) or skip, saying what did
    not run (``needed_for``). Usable at module level and inside a test."""
    if path:
        return path
    missing = f"{name} (CUDA toolkit) not found: {needed_for}"
    if toolchain_required():
        pytest.fail(f"{missing}; required here ({REQUIRE_TOOLCHAIN} / CI)", pytrace=False)
    pytest.skip(
        f"{missing}; optional here ({REQUIRE_TOOLCHAIN}=1 makes it a failure)",
        allow_module_level=True,
    )
    raise AssertionError("unreachable")  # pytest.skip raises


def kernel_verdict(spec: KernelSpec, expected: frozenset[str], allow_drift: bool) -> Verdict | None:
    """Whether ``spec``'s GPU tests can run here: None (run), or a skip, a failure or a warning
    (run anyway) with its reason."""
    missing = spec.missing_modules()
    if missing:
        if spec.backend in expected:
            return (
                "fail",
                f"{spec.id}: this session installs {spec.backend} but lacks {', '.join(missing)}",
            )
        return ("skip", f"not installed: {', '.join(missing)}")
    drift = spec.pin_drift()
    if drift:
        if allow_drift:
            return (
                "warn",
                f"{spec.id}: tested against {', '.join(drift)} ({ALLOW_PIN_DRIFT}=1)",
            )
        return (
            "fail",
            f"{spec.id}: installed versions differ from the pins: {', '.join(drift)}; set "
            f"{ALLOW_PIN_DRIFT}=1 to test the installed versions anyway",
        )
    return None


def policy_lines(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The settings above, one line each, as the session summary prints them."""
    dsls = expected_dsls(environ)
    return [
        (
            f"DSLs this session installs ({EXPECT_DSL}): {', '.join(sorted(dsls))}; one that "
            "does not import fails"
            if dsls
            else f"no DSL expected ({EXPECT_DSL} unset): a DSL that does not import skips"
        ),
        (
            "nvcc/ptxas: required, missing is a failure"
            if toolchain_required(environ)
            else f"nvcc/ptxas: optional, missing is a skip ({REQUIRE_TOOLCHAIN}=1 or CI to fail)"
        ),
        (
            f"pin drift: allowed, tested against the installed versions ({ALLOW_PIN_DRIFT}=1)"
            if pin_drift_allowed(environ)
            else f"pin drift: a failure ({ALLOW_PIN_DRIFT}=1 tests the installed versions)"
        ),
    ]


def require_runnable(spec: KernelSpec, capability: tuple[int, int]) -> None:
    """Skip, fail or warn for a GPU test of ``spec`` on a GPU of ``capability`` (another arch:
    skip; then :func:`kernel_verdict` under this session's settings)."""
    from harness.protocol import ARCH_CAPABILITY

    want = ARCH_CAPABILITY[spec.arch]
    if want is not None and tuple(capability) != want:
        pytest.skip(f"{spec.arch} kernel on an sm_{capability[0]}{capability[1]} GPU")
    verdict = kernel_verdict(spec, expected_dsls(), pin_drift_allowed())
    if verdict is None:
        return
    action, reason = verdict
    if action == "fail":
        pytest.fail(reason, pytrace=False)
    if action == "skip":
        pytest.skip(reason)
    warnings.warn(reason, stacklevel=3)


def check_workers(environ: Mapping[str, str] = os.environ, cpus: int | None = None) -> int:
    """How many worker processes :func:`forced_records` runs (``GEMM_STUDY_CHECK_WORKERS``, else
    half of ``cpus`` (this host's cores), 1 to ``MAX_CHECK_WORKERS``). A value that is not a
    positive integer is a usage error."""
    value = environ.get(CHECK_WORKERS, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise pytest.UsageError(f"{CHECK_WORKERS}={value!r}: expected a positive integer")
        return int(value)
    cores = cpus if cpus is not None else (os.cpu_count() or 2)
    return max(1, min(MAX_CHECK_WORKERS, cores // 2))


def spread(names: list[str], workers: int) -> list[list[str]]:
    """``names`` dealt round-robin to at most ``workers`` non-empty lists (menu neighbours,
    often one tile family, go to different workers)."""
    return [chunk for chunk in (names[i::workers] for i in range(workers)) if chunk]


def forced_records(
    spec: KernelSpec, names: list[str], problems: Sequence[Problem]
) -> list[BenchRecord]:
    """Check-only records of every config of ``names`` forced on every problem of
    ``problems``: the configs :func:`spread` over :func:`check_workers` runners at once, each
    with its own worker process on this GPU (the checks are not timed, so sharing the GPU
    changes no result; each worker compiles its own configs)."""

    def run(chunk: list[str]) -> list[BenchRecord]:
        settings = RunSettings(measure=False, timeout_s=300, configs=tuple(chunk))
        with Runner([spec], settings) as runner:
            return list(runner.run(problems))

    chunks = spread(names, check_workers())
    with ThreadPoolExecutor(max(1, len(chunks))) as pool:
        return [r for records in pool.map(run, chunks) for r in records]


def config_shard(menu: list[str], shard: str | None) -> list[str]:
    """The entries of ``menu`` that ``--config-shard K/N`` names: K, K+N, K+2N, ... (1-based);
    all of them without a shard."""
    if shard is None:
        return list(menu)
    try:
        k, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--config-shard {shard!r}: expected K/N, e.g. 2/3") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"--config-shard {shard!r}: K must be in 1..N")
    return list(menu[k - 1 :: n])
