"""Shared fixtures: the repository root, a site folder that 'installs' the toy plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_SRC = ROOT / "tests" / "plugin"
#: The fake GPUs' backend (tests/fakegpu): CPU kernels that record where they ran.
FAKEGPU_SRC = ROOT / "tests" / "fakegpu"


def make_plugin_site(dest: Path, project: Path = PLUGIN_SRC) -> Path:
    """Install the plugin at ``project`` (default: the toy plugin) into ``dest`` as an
    installer would (dist-info + entry points).

    Its metadata is generated from the plugin's own pyproject.toml, so the entry point under
    test is exactly the one a third party would declare; the package source is left in place
    and found through PYTHONPATH.
    """
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    info = dest / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    lines = []
    for group, eps in meta["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return dest


def run_harness(
    env: dict[str, str], *args: str, timeout: float = 300, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` in a subprocess with ``env``, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        action="append",
        default=None,
        help="run the GPU tests of this backend only (repeatable); nox -s tests passes it",
    )
    parser.addoption(
        "--config-shard",
        default=None,
        metavar="K/N",
        help="check only the K-th of N slices of each config list (entries K, K+N, ...) in "
        "test_every_config_is_correct and rung 8's forced-config tests (tests/gpu/"
        "test_rung8.py), to fit a long list into GPU jobs with a time limit",
    )


@pytest.fixture()
def shard(request: pytest.FixtureRequest) -> str | None:
    """``--config-shard K/N`` as given (None: every config); the GPU tests slice their config
    lists with ``expectations.config_shard``."""
    return request.config.getoption("--config-shard")


@pytest.fixture()
def plugin_site_maker() -> object:
    """:func:`make_plugin_site`, for tests that lay out a plugin of their own."""
    return make_plugin_site


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for a subprocess that sees the toy plugin as an installed distribution."""
    site = make_plugin_site(tmp_path_factory.mktemp("site"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(site), str(PLUGIN_SRC), str(ROOT), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    env["OMP_NUM_THREADS"] = "1"  # many small CPU workers: one torch thread each
    return env


@pytest.fixture()
def fake_gpu_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for a subprocess that sees the toy plugin and the fake GPUs' backend, with a
    fresh ``FAKE_GPU_DIR`` (its kernels' log and broken-GPU markers)."""
    site = tmp_path_factory.mktemp("site")
    make_plugin_site(site)
    make_plugin_site(site, FAKEGPU_SRC)
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(site), str(PLUGIN_SRC), str(FAKEGPU_SRC), str(ROOT), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    env["FAKE_GPU_DIR"] = str(tmp_path_factory.mktemp("fakegpu"))
    # Several fake GPUs share the CPU: one torch thread per worker, not one per core each.
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.fixture()
def plugin_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the toy plugin discoverable in this process."""
    site = make_plugin_site(tmp_path / "site")
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    monkeypatch.syspath_prepend(str(site))
    import importlib

    importlib.invalidate_caches()
    yield
    sys.modules.pop("toy_gemm_plugin", None)
    sys.modules.pop("toy_gemm_plugin.kernels", None)


# --- What a missing piece meant ---------------------------------------------------------------
# A skip must say what did not run and why, and whether a missing DSL or toolchain would have
# been a failure here (tests/expectations.py): the last section of the summary says both.
_OUTCOMES = ("passed", "failed", "skipped", "error", "xfailed", "xpassed")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from expectations import policy_lines

    stats = terminalreporter.stats
    reasons: Counter[str] = Counter()
    for rep in stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons[str(longrepr[2]).removeprefix("Skipped: ")] += 1
    paths = {
        str(getattr(rep, "nodeid", "")).split("::")[0]
        for key in _OUTCOMES
        for rep in stats.get(key, [])
    }
    dsl_tests = any(p.startswith(("tests/compile", "tests/gpu")) for p in paths)
    if not (dsl_tests or reasons):
        return
    terminalreporter.section("what was expected here", sep="-")
    for line in policy_lines():
        terminalreporter.line(line)
    for reason, count in reasons.most_common():
        terminalreporter.line(f"skipped because: {reason} ({count})")


# --- Quiet exit after Triton -------------------------------------------------------------------
# Triton's nanobind bindings print pages of "nanobind: leaked ..." reports during interpreter
# teardown of any process that imported triton. They say nothing about this project's code and
# bury the test summary, so once pytest has finished everything it does (summary printed, cache
# written, capture stopped) the process ends at once with pytest's exit status, skipping that
# teardown. GEMM_STUDY_VERBOSE=1 keeps the normal exit (and the reports).
_EXIT_STATUS = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _EXIT_STATUS not in config.stash or "triton" not in sys.modules:
        return
    if os.environ.get("GEMM_STUDY_VERBOSE", "") not in ("", "0"):
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()  # hands captured output to the real streams first
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(config.stash[_EXIT_STATUS])
