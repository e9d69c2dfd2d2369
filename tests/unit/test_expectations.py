"""A broken install is never a green run: what a missing DSL, toolchain or pin means where
(``tests/expectations.py``), and that the compile tests follow it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import expectations
import pytest
from expectations import (
    ALLOW_PIN_DRIFT,
    CHECK_WORKERS,
    EXPECT_DSL,
    REQUIRE_TOOLCHAIN,
    check_workers,
    config_shard,
    expected_dsls,
    kernel_verdict,
    policy_lines,
    require_module,
    require_tool,
    spread,
    toolchain_required,
)

from harness.protocol import KernelSpec, Rung

ROOT = Path(__file__).resolve().parents[2]
PYTEST = importlib.metadata.version("pytest")


def _spec(backend: str = "dsl", requires: tuple[str, ...] = (), pins: tuple[str, ...] = ()):
    return KernelSpec(
        backend, "sm90/r1", Rung.TILED, "sm_90a", "d", module="m", requires=requires, pins=pins
    )


def test_settings_are_read_from_the_environment() -> None:
    assert expected_dsls({EXPECT_DSL: "tilus, tirx"}) == {"tilus", "tirx"}
    assert expected_dsls({}) == frozenset()
    assert toolchain_required({REQUIRE_TOOLCHAIN: "1"})
    assert toolchain_required({"CI": "true"})
    assert not toolchain_required({"CI": "true", REQUIRE_TOOLCHAIN: "0"})
    assert not toolchain_required({})
    lines = policy_lines({EXPECT_DSL: "tilus", "CI": "1"})
    assert "tilus" in lines[0] and "fails" in lines[0]
    assert lines[1].startswith("nvcc/ptxas: required")
    assert lines[2].startswith("pin drift: a failure")


@pytest.mark.parametrize(
    ("requires", "pins", "expected", "allow", "verdict"),
    [
        ((), (f"pytest=={PYTEST}",), set(), False, None),
        (("surely_not_a_module_xyz",), (), set(), False, "skip"),
        (("surely_not_a_module_xyz",), (), {"dsl"}, False, "fail"),
        ((), ("surely-not-a-dist==1.0",), set(), False, "skip"),
        ((), ("surely-not-a-dist==1.0",), {"dsl"}, False, "fail"),
        ((), ("pytest==0.0.1",), set(), False, "fail"),  # drift: loud wherever it is found
        ((), ("pytest==0.0.1",), {"dsl"}, False, "fail"),
        ((), ("pytest==0.0.1",), set(), True, "warn"),
    ],
)
def test_kernel_verdicts(requires, pins, expected, allow, verdict) -> None:
    got = kernel_verdict(_spec(requires=requires, pins=pins), frozenset(expected), allow)
    assert (got[0] if got else None) == verdict, got
    if verdict == "fail" and "0.0.1" in str(pins):
        assert f"pytest==0.0.1 (found {PYTEST})" in got[1] and ALLOW_PIN_DRIFT in got[1]


def test_a_missing_tool_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    assert require_tool("nvcc", "/x/nvcc", "everything") == "/x/nvcc"
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(REQUIRE_TOOLCHAIN, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"nvcc \(CUDA toolkit\) not found: the PTX"):
        require_tool("nvcc", None, "the PTX checks")
    monkeypatch.setenv(REQUIRE_TOOLCHAIN, "1")
    with pytest.raises(pytest.fail.Exception, match="required here"):
        require_tool("nvcc", None, "the PTX checks")


def _pytest(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in (EXPECT_DSL, "CI", REQUIRE_TOOLCHAIN)}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([env.get("PYTHONPATH", ""), str(ROOT)]).strip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


#: backend -> (its compile tests, the module they import, how they name the DSL)
DSLS = {
    "cutedsl": ("cutlass", "CuTeDSL"),
    "gluon": ("triton.experimental.gluon", "Gluon"),
    "tilus": ("tilus", "Tilus"),
    "tirx": ("tvm", "TIRx"),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(DSLS))
def test_compile_tests_fail_where_their_dsl_is_expected(backend: str) -> None:
    """Without the DSL, its compile tests skip — and say why at the end — unless the session
    installed it: then they fail."""
    module, name = DSLS[backend]
    if _importable(module):
        pytest.skip(f"{module} is installed here")
    path = f"tests/compile/test_{backend}.py"
    skipped = _pytest(path, env={})
    assert skipped.returncode in (0, 5), skipped.stdout + skipped.stderr  # 5: nothing ran
    assert "1 skipped" in skipped.stdout
    assert f"skipped because: {name}" in skipped.stdout and "not installed here" in skipped.stdout
    assert "no DSL expected" in skipped.stdout  # the summary says a skip is what this means
    failed = _pytest(path, env={EXPECT_DSL: backend})
    assert failed.returncode not in (0, 5), failed.stdout + failed.stderr
    assert f"{name}" in failed.stdout and "does not import in a session that installs it" in (
        failed.stdout
    )


@pytest.mark.slow
def test_a_dsl_missing_one_of_its_own_imports_fails(tmp_path: Path) -> None:
    """Tilus is installed but cannot import a dependency it does not declare (cuda-bindings,
    in Tilus 0.2.0): in the Tilus session that is a failure, not "1 skipped"."""
    if _importable("tilus"):
        pytest.skip("tilus is installed here")
    fake = tmp_path / "tilus"
    fake.mkdir()
    (fake / "__init__.py").write_text("import surely_missing_dependency_of_tilus\n")
    env = {"PYTHONPATH": str(tmp_path)}
    failed = _pytest("tests/compile/test_tilus.py", env={**env, EXPECT_DSL: "tilus"})
    assert failed.returncode not in (0, 5), failed.stdout + failed.stderr
    assert "surely_missing_dependency_of_tilus" in failed.stdout
    skipped = _pytest("tests/compile/test_tilus.py", env=env)
    assert skipped.returncode in (0, 5) and "1 skipped" in skipped.stdout, skipped.stdout


def test_a_test_dependency_missing_in_a_nox_session_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch or matplotlib missing where a nox session installed them is a broken install (a
    failure); run by hand outside nox it is a skip that names what did not run."""
    missing = "surely_not_an_installed_test_dependency"
    monkeypatch.setenv(EXPECT_DSL, "cublas")
    with pytest.raises(pytest.fail.Exception, match="does not import in a session that"):
        require_module(missing, "the checks compare tensors")
    monkeypatch.delenv(EXPECT_DSL)
    with pytest.raises(pytest.skip.Exception, match="not installed here"):
        require_module(missing, "the checks compare tensors")
    assert require_module("json", "present").dumps([]) == "[]"


def test_config_shards_are_disjoint_slices_covering_the_list() -> None:
    """``--config-shard K/N`` (GPU tests): K, K+N, ...; the N shards together check every
    config once; a malformed shard is a usage error, not an empty run."""
    names = [f"c{i}" for i in range(7)]
    shards = [config_shard(names, f"{k}/3") for k in (1, 2, 3)]
    assert shards[0] == ["c0", "c3", "c6"]
    assert sorted(n for s in shards for n in s) == names
    assert config_shard(names, None) == names
    assert config_shard(names[:1], "2/2") == []
    for bad in ("3", "0/2", "3/2", "a/b"):
        with pytest.raises(pytest.UsageError):
            config_shard(names, bad)


def test_check_workers_default_to_half_the_cores_and_a_bad_setting_is_a_usage_error() -> None:
    """``GEMM_STUDY_CHECK_WORKERS`` sets how many worker processes the many-config GPU tests
    run at once; unset, half the cores, at least one and at most ``MAX_CHECK_WORKERS``."""
    assert check_workers({}, cpus=2) == 1
    assert check_workers({}, cpus=16) == 8
    assert check_workers({}, cpus=128) == expectations.MAX_CHECK_WORKERS
    assert check_workers({CHECK_WORKERS: " 3 "}, cpus=2) == 3
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(pytest.UsageError, match=CHECK_WORKERS):
            check_workers({CHECK_WORKERS: bad})


def test_spread_deals_every_config_once_to_non_empty_chunks() -> None:
    names = [f"c{i}" for i in range(7)]
    assert spread(names, 3) == [["c0", "c3", "c6"], ["c1", "c4"], ["c2", "c5"]]
    assert spread(names[:2], 8) == [["c0"], ["c1"]]
    assert spread([], 4) == []
    assert spread(names, 1) == [names]


def test_forced_records_runs_the_chunks_at_once_in_runners_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each chunk gets a runner (its own worker process) forced to that chunk's configs, the
    runners run at the same time (a barrier that needs all of them passes), and the records of
    every chunk come back."""
    monkeypatch.setenv(CHECK_WORKERS, "3")
    barrier = threading.Barrier(3, timeout=10)
    seen: list[tuple[str, ...]] = []

    class FakeRunner:
        def __init__(self, specs: list, settings) -> None:
            assert not settings.measure
            self.configs = settings.configs

        def __enter__(self) -> FakeRunner:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def run(self, problems):
            seen.append(self.configs)
            barrier.wait()  # raises BrokenBarrierError unless all three run at once
            return [(c, p) for c in self.configs for p in problems]

    monkeypatch.setattr(expectations, "Runner", FakeRunner)
    names = [f"c{i}" for i in range(5)]
    records = expectations.forced_records(_spec(), names, ["p1", "p2"])
    assert sorted(seen) == [("c0", "c3"), ("c1", "c4"), ("c2",)]
    assert sorted(records) == sorted((c, p) for c in names for p in ("p1", "p2"))
