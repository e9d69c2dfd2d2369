"""End to end through the CLI on a CPU: an out-of-tree plugin's kernels that succeed, compute
wrong results, raise, crash their process and hang are each recorded, and the run completes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from harness.results import load

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--warmup", "0.05", "--min-samples", "20", "--min-time", "0.02", "--rounds", "2"]


def _harness(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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
    got = {(rec["kernel"], rec["problem_key"]): rec for rec in doc["records"]}
    assert len(got) == 7 * 2
    for key in ("64x64x64-fp16", "100x72x40-fp16"):
        assert got[("toy/ok", key)]["status"] == "ok"
        assert got[("toy/ok", key)]["timing"]["n"] >= 20
        assert got[("toy/wrong", key)]["status"] == "wrong"
        assert got[("toy/partial", key)]["status"] == "wrong"
        assert got[("toy/partial", key)]["check"]["nonfinite"] > 0
        assert got[("toy/raise", key)]["status"] == "error"
        assert "failed on purpose" in got[("toy/raise", key)]["reason"]
        assert got[("toy/crash", key)]["status"] == "error"
        assert "died" in got[("toy/crash", key)]["reason"]
        assert got[("toy/hang", key)]["status"] == "timeout"
    assert got[("toy/picky", "64x64x64-fp16")]["status"] == "ok"
    assert got[("toy/picky", "100x72x40-fp16")]["status"] == "unsupported"
    assert "multiples of 64" in got[("toy/picky", "100x72x40-fp16")]["reason"]
    assert "[2/2] 100x72x40-fp16" in r.stdout  # progress output
    assert (tmp_path / "run.csv").read_text().count("toy/") == 14


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
    assert "finished" not in doc
    assert [r["problem_key"] for r in doc["records"]] == ["64x64x64-fp16"]
    assert doc["records"][0]["status"] == "ok"


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


def test_bad_arguments_are_explained(plugin_env) -> None:
    r = _harness(plugin_env, "bench", "--device", "cpu", "--suite", "giant")
    assert r.returncode == 2 and "unknown suite" in r.stderr
    r = _harness(plugin_env, "bench", "--device", "cpu", "--backend", "nope")
    assert r.returncode == 2 and "unknown backend" in r.stderr
