"""End to end through the CLI on a CPU: an out-of-tree plugin's kernels that succeed, compute
wrong results, store past the end of D, modify A, go wrong only once timed, raise, crash their
process and hang are each recorded, and the run completes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_harness
from expectations import require_module

from harness.records import Status
from harness.results import load

require_module("torch", "the workers run the toy plugin's kernels")

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--warmup", "0.05", "--rewarm", "0.05", "--settle", "0"]
FAST += ["--min-samples", "20", "--min-time", "0.02"]
FAST += ["--rounds", "2"]


_harness = run_harness


def test_list_shows_plugin_kernels_and_why_they_cannot_run(plugin_env) -> None:
    r = _harness(plugin_env, "list")
    assert r.returncode == 0, r.stderr
    assert "cublas/torch_matmul" in r.stdout
    assert "toy/hang" in r.stdout and "5 warp_specialized" in r.stdout
    cublas_line = next(line for line in r.stdout.splitlines() if "cublas/torch_matmul" in line)
    gpu = "no CUDA GPU visible" not in r.stdout
    assert ("  yes  " in cublas_line) == gpu  # without a GPU it says why not
    if not gpu:
        assert "no: no CUDA GPU visible" in cublas_line
    toy_line = next(line for line in r.stdout.splitlines() if line.startswith("toy/ok"))
    assert "  yes  " in toy_line  # CPU test kernels run anywhere


@pytest.mark.slow
def test_bench_records_every_failure_and_finishes(plugin_env, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    t0 = time.monotonic()
    r = _harness(
        plugin_env,
        "bench",
        "--device",
        "cpu",
        "--backend",
        "toy",
        "--suite",
        "64x64x64",
        "--suite",
        "100x72x40",
        "--timeout",
        "8",
        "--strict",
        "--out",
        str(out),
        "--csv",
        str(tmp_path / "run.csv"),
        *FAST,
    )
    assert time.monotonic() - t0 < 240
    assert r.returncode == 1, r.stdout + r.stderr  # --strict: failures present
    doc = load(out)
    got = {(rec.kernel, rec.problem_key): rec for rec in doc.bench}
    assert len(got) == 11 * 2
    for key in ("64x64x64-fp16", "100x72x40-fp16"):
        assert got[("toy/ok", key)].status == Status.OK
        assert got[("toy/ok", key)].timing.n >= 20
        assert got[("toy/ok", key)].config is None  # no config space: nothing to record
        assert got[("toy/wrong", key)].status == Status.WRONG
        assert got[("toy/partial", key)].status == Status.WRONG
        assert got[("toy/partial", key)].check.nonfinite > 0
        assert got[("toy/raise", key)].status == Status.ERROR
        assert "failed on purpose" in got[("toy/raise", key)].reason
        assert got[("toy/crash", key)].status == Status.ERROR
        assert "died" in got[("toy/crash", key)].reason
        assert got[("toy/hang", key)].status == Status.TIMEOUT
        overrun = got[("toy/overrun", key)]  # D itself is right: the guard band says why not
        assert overrun.status == Status.WRONG and overrun.check.faults
        assert overrun.reason == "wrote 3 elements past the end of D", overrun.reason
        assert got[("toy/clobber", key)].status == Status.WRONG
        assert got[("toy/clobber", key)].reason.startswith("modified A (")
        stale = got[("toy/stale", key)]  # passes the check, fails once launched back to back
        assert stale.status == Status.WRONG and stale.timing is None
        assert stale.reason.startswith("after timing: result differs from torch.matmul")
        tuned = got[("toy/tuned", key)]
        assert tuned.status == Status.OK and tuned.selected is True
        assert (tuned.config, tuned.config_values) == ("split=1", {"split": 1})
        assert tuned.selection == "toy: split=1 sums K in one pass"  # the kernel's own reason
    assert got[("toy/picky", "64x64x64-fp16")].status == Status.OK
    assert got[("toy/picky", "100x72x40-fp16")].status == Status.UNSUPPORTED
    assert "multiples of 64" in got[("toy/picky", "100x72x40-fp16")].reason
    # progress output: where the run is, and from the second problem on, the time it needs
    assert re.search(r"\[1/2\] 64x64x64-fp16 \(\d+ s in\)\n", r.stdout), r.stdout
    assert re.search(r"\[2/2\] 100x72x40-fp16 \(\d+ s in, ~\d+ s left\)", r.stdout)
    # the device line names only what the run knows; a summary table ends the run
    assert "device: cpu\n" in r.stdout and "None" not in r.stdout
    summary = r.stdout.split("summary (")[1]
    assert "toy/ok" in summary and "wrong: " in summary and "timeout" in summary
    assert "Warning" not in r.stdout + r.stderr
    assert (tmp_path / "run.csv").read_text().count("toy/") == 22


def _bench_tuned(
    plugin_env, tmp_path: Path, *extra: str
) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "tuned.json"
    r = _harness(
        plugin_env,
        "bench",
        "--device",
        "cpu",
        "--kernel",
        "toy/tuned",
        "--suite",
        "64x64x64",
        "--suite",
        "64x64x40",
        "--out",
        str(out),
        *FAST,
        *extra,
    )
    return r, out


def test_a_failing_config_spares_the_others(plugin_env, tmp_path: Path) -> None:
    """An error kills the kernel's worker (its CUDA context may be poisoned); the configs it had
    already prepared are prepared again in the next worker and still timed."""
    out = tmp_path / "tune48.json"
    r = _harness(
        plugin_env, "bench", "--device", "cpu", "--kernel", "toy/tuned", "--suite", "48x64x64",
        "--tune", "--out", str(out), *FAST,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    got = {rec.config: rec for rec in load(out).bench if rec.kernel == "toy/tuned"}
    assert got["split=2"].status == Status.ERROR
    assert "does not build at M = 48" in got["split=2"].reason
    for ok in ("split=1", "split=4"):
        assert got[ok].status == Status.OK and got[ok].timing is not None, got[ok]


def test_forced_config_is_run_and_recorded(plugin_env, tmp_path: Path) -> None:
    r, out = _bench_tuned(plugin_env, tmp_path, "--config", "split=2")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = {rec.problem_key: rec for rec in load(out).bench if rec.kernel == "toy/tuned"}
    forced = recs["64x64x64-fp16"]
    assert forced.status == Status.OK and forced.timing is not None
    assert (forced.config, forced.selected) == ("split=2", False)
    # K = 40 is no multiple of 16: the forced config cannot run it, and says why.
    assert recs["64x64x40-fp16"].status == Status.UNSUPPORTED
    assert "split=2" in recs["64x64x40-fp16"].reason


def test_own_choice_runs_beside_forced_configs_once(plugin_env, tmp_path: Path) -> None:
    """``--config own`` is each problem's pick (an A/B beside it in one run); a request that
    resolves to a config already asked for (here ``split=1``, the pick) is not run again."""
    r, out = _bench_tuned(
        plugin_env, tmp_path, "--config", "own", "--config", "split=2", "--config", "split=1"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    got: dict[str, list[tuple[str | None, bool | None, Status]]] = {}
    for rec in load(out).bench:
        if rec.kernel == "toy/tuned":
            got.setdefault(rec.problem_key, []).append((rec.config, rec.selected, rec.status))
    got = {key: sorted(recs, key=str) for key, recs in got.items()}  # refusals come first
    assert got == {
        "64x64x64-fp16": [("split=1", True, Status.OK), ("split=2", False, Status.OK)],
        "64x64x40-fp16": [("split=1", True, Status.OK), ("split=2", False, Status.UNSUPPORTED)],
    }
    assert "toy/tuned [split=1]: asked for twice; run once" in r.stdout


def test_timer_v6_is_the_default_and_v5_can_be_asked_for(plugin_env, tmp_path: Path) -> None:
    """Timer v6 (``count_hold``) is what a plain bench runs; ``--no-count-hold`` (v5) reaches
    the workers (their timer settings are the run's) and the run records which it was, so a
    report can tell v6 from v5."""
    r, out = _bench_tuned(plugin_env, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    assert doc.environment["timer"]["count_hold"] is True
    assert all(rec.status != Status.ERROR for rec in doc.bench)
    r, out = _bench_tuned(plugin_env, tmp_path, "--no-count-hold")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    assert doc.environment["timer"]["count_hold"] is False
    assert all(rec.status != Status.ERROR for rec in doc.bench)


def test_tune_times_every_valid_config(plugin_env, tmp_path: Path) -> None:
    r, out = _bench_tuned(plugin_env, tmp_path, "--tune")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = [rec for rec in load(out).bench if rec.kernel == "toy/tuned"]
    by_problem: dict[str, set[str]] = {}
    for rec in recs:
        assert rec.status == Status.OK and rec.timing is not None, rec
        by_problem.setdefault(rec.problem_key, set()).add(rec.config)
    assert by_problem == {
        "64x64x64-fp16": {"split=1", "split=2", "split=4"},
        "64x64x40-fp16": {"split=1"},  # 40 % 16 and 40 % 32 != 0
    }
    assert [rec.config for rec in recs if rec.selected] == ["split=1", "split=1"]


def test_tune_top_times_the_best_ranked_and_the_kernels_own_choice(
    plugin_env, tmp_path: Path
) -> None:
    r, out = _bench_tuned(plugin_env, tmp_path, "--tune", "--tune-top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "best-ranked" in r.stdout
    got: dict[str, list[str]] = {}
    for rec in load(out).bench:
        if rec.kernel == "toy/tuned":
            got.setdefault(rec.problem_key, []).append(rec.config)
    # the ranking's first valid config, then the selection (split=1)
    assert got == {"64x64x64-fp16": ["split=4", "split=1"], "64x64x40-fp16": ["split=1"]}
    assert load(out).environment["run"]["tune_top"] == 1
    r, _ = _bench_tuned(plugin_env, tmp_path, "--tune-top", "2")
    assert r.returncode == 2 and "--tune-top N needs --tune" in r.stderr


@pytest.mark.slow
def test_killed_run_keeps_what_it_measured(plugin_env, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "bench",
        "--device",
        "cpu",
        "--kernel",
        "toy/ok",
        "--suite",
        "64x64x64",
        "--suite",
        "64x64x128",
        "--suite",
        "64x64x256",
        "--min-time",
        "3",
        "--warmup",
        "0.05",
        "--settle",
        "0",
        "--rounds",
        "1",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=plugin_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if out.exists() and json.loads(out.read_text())["records"]:
            break
    proc.kill()  # mid-run: the second problem is being timed
    proc.wait(timeout=30)
    doc = load(out)
    assert doc.finished is None
    assert [r.problem_key for r in doc.bench] == ["64x64x64-fp16"]
    assert doc.bench[0].status == Status.OK


def test_bench_without_gpu_says_so(plugin_env, tmp_path: Path) -> None:
    r = _harness(plugin_env, "bench", "--suite", "smoke", "--out", str(tmp_path / "x.json"))
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU is present")
    assert r.returncode == 2
    assert "needs a CUDA GPU" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--backend", "nope"], "unknown backend 'nope'; the backends here are"),
        (["list", "--kernel", "toy/nope"], "unknown kernel 'toy/nope'"),
        (["bench", "--device", "cpu", "--suite", "giant"], "unknown suite 'giant'"),
        (["bench", "--device", "cpu", "--rung", "9"], "unknown rung '9'; the rungs are: 0 cublas"),
        (["bench", "--device", "cpu", "--arch", "sm_80"], "unknown arch 'sm_80'; the arches are"),
        (["bench", "--device", "cpu", "--suite", "64x64x7"], "K = 7 is not a multiple of 8"),
        (["bench", "--device", "cpu", "--dtype", "fp8"], "invalid choice: 'fp8'"),
        (["bench", "--device", "cpu", "--launched"], "--launched needs --check-only"),
        (
            ["bench", "--device", "cpu", "--kernel", "toy/tuned", "--config", "bogus=1"],
            "unknown knob(s) bogus; the knobs are split",
        ),
        (
            ["bench", "--device", "cpu", "--kernel", "toy/tuned", "--config", "split=3"],
            "no config on the menu has split=3",
        ),
        (
            ["bench", "--device", "cpu", "--kernel", "toy/ok", "--config", "split=2"],
            "none of the selected kernels declares configs",
        ),
        (["codegen", "--backend", "toy", "--problem", "64x64x9"], "K = 9 is not a multiple"),
        (
            ["codegen", "--kernel", "toy/tuned", "--kernel", "toy/ok", "--config", "foo=bar"],
            "--config for toy/tuned: unknown knob(s) foo; the knobs are split",
        ),
        (
            ["codegen", "--kernel", "toy/ok", "--config", "split=2"],
            "none of the selected kernels declares configs",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(plugin_env, tmp_path, args, message) -> None:
    out = tmp_path / "never.json"
    r = _harness(plugin_env, *args, *(["--out", str(out)] if args[0] != "list" else []))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert message in lines[0], lines[0]
    assert not out.exists()  # refused before any kernel ran


@pytest.mark.parametrize("where", ["under-a-file", "proc", "read-only"])
def test_unwritable_out_is_refused(plugin_env, tmp_path: Path, where: str) -> None:
    """One line, also as root, where permission bits say nothing: the check writes a file."""
    if where == "under-a-file":
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        out = blocker / "x.json"
    elif where == "proc":  # root may write anywhere a mode allows; /proc refuses even root
        if not Path("/proc/self").exists():
            pytest.skip("no /proc here")
        out = Path("/proc/gemm-study-no-such-folder/x.json")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
        probe = folder / "probe"
        try:
            probe.write_text("")
        except OSError:
            pass
        else:  # root: the mode does not stop it, and then the run may write there too
            probe.unlink()
            pytest.skip("this user writes into read-only folders (root)")
        out = folder / "x.json"
    r = _harness(plugin_env, "bench", "--device", "cpu", "--kernel", "toy/ok", "--out", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().startswith("error: cannot write results to"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_runs_land_in_the_ignored_run_folder(plugin_env, tmp_path: Path) -> None:
    """Without --out a run goes to runs/ (git-ignored), never into reports/results/."""
    r = _harness(
        plugin_env,
        *("bench", "--device", "cpu", "--kernel", "toy/ok", "--suite", "64x64x64", "--check-only"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    files = list((tmp_path / "runs").glob("bench-*.json"))
    assert len(files) == 1 and load(files[0]).bench[0].status == Status.OK
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "runs/bench-x.json"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0, "runs/ must be git-ignored"
