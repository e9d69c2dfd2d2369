"""``python -m harness picks``: what a kernel would run per problem and why, on a named GPU,
without a GPU or a compile; and, against a run, where today's selection differs from what the
run ran and whether the kernels' code changed since its tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import PLUGIN_SRC, run_harness
from expectations import require_module

from harness.cli import code_changes
from harness.configs import TunedEntry, TunedTable, gpu_slug
from harness.protocol import Problem

require_module("torch", "the workers load the toy plugin's kernels")


def _picks(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(env, "picks", *args)


def test_picks_names_each_config_and_why_and_skips_kernels_without_configs(plugin_env) -> None:
    r = _picks(plugin_env, "--backend", "toy", "--suite", "64x64x64", "--suite", "48x64x40")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no GPU named" in r.stdout or "tuned tables for" in r.stdout
    lines = r.stdout.splitlines()
    assert "toy/tuned" in lines and "toy/ok" not in lines  # toy/ok has no config space
    mine = [line.split() for line in lines if line.startswith("  ")]
    assert [m[:2] for m in mine] == [["64x64x64-fp16", "split=1"], ["48x64x40-fp16", "split=1"]]
    assert all("[toy: split=1 sums K in one pass]" in line for line in lines if "split=1" in line)


@pytest.fixture()
def toy_with_table(plugin_env, tmp_path: Path) -> dict[str, str]:
    """The toy plugin copied ahead of the original on the path, with a tuned table for a GPU
    named "Test GPU 9000" choosing split=4 at 64x64x64."""
    copy = tmp_path / "src"
    shutil.copytree(PLUGIN_SRC / "toy_gemm_plugin", copy / "toy_gemm_plugin")
    entry = TunedEntry(Problem.parse("64x64x64-fp16"), "split=4")
    table = TunedTable("Test GPU 9000", {"toy/tuned": (entry,)})
    tuned = copy / "toy_gemm_plugin" / "tuned" / f"{gpu_slug('Test GPU 9000')}.json"
    tuned.parent.mkdir()
    tuned.write_text(json.dumps(table.to_json()))
    env = dict(plugin_env)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), env["PYTHONPATH"]])
    return env


def test_picks_reads_the_named_gpus_tuned_table(toy_with_table) -> None:
    args = ("--kernel", "toy/tuned", "--suite", "64x64x64", "--suite", "128x64x64")
    on_it = _picks(toy_with_table, *args, "--gpu", "Test GPU 9000")
    assert on_it.returncode == 0, on_it.stdout + on_it.stderr
    assert "tuned tables for Test GPU 9000" in on_it.stdout
    assert "64x64x64-fp16            split=4  [tuned table (tuned/test-gpu-9000.json)]" in (
        on_it.stdout
    )
    assert "128x64x64-fp16           split=1  [toy: split=1" in on_it.stdout  # not in the table
    other = _picks(toy_with_table, *args, "--gpu", "Test GPU 1")
    assert "64x64x64-fp16            split=1" in other.stdout  # another GPU: its heuristic


def _run(env: dict[str, str], out: Path) -> dict:
    r = run_harness(
        env,
        *("bench", "--device", "cpu", "--kernel", "toy/tuned", "--check-only", "--no-reference"),
        *("--suite", "64x64x64", "--suite", "128x64x64", "--out", str(out)),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text())


def test_picks_against_a_run_lists_what_differs_and_strict_fails(plugin_env, tmp_path) -> None:
    out = tmp_path / "run.json"
    doc = _run(plugin_env, out)
    same = _picks(plugin_env, "--against", str(out), "--strict")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 problem(s): 2 as the run ran them, 0 differ" in same.stdout
    assert "code unchanged since" in same.stdout or "code changed since" in same.stdout

    for rec in doc["records"]:
        if rec["problem_key"] == "64x64x64-fp16":  # as if the selection had moved off split=2
            rec["config"] = "split=2"
        else:  # a name from before a knob was removed: today's pick on the knobs it still has
            rec["config"] = "split=1,colour=red"
    doc["environment"]["git_sha"] = "0" * 40
    out.write_text(json.dumps(doc))
    moved = _picks(plugin_env, "--against", str(out))
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "1 as the run ran them (their names also set colour=red: knobs since removed), " in (
        moved.stdout
    )
    assert ", 1 differ, 0 not in the run, 0 refused" in moved.stdout
    lines = moved.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  64x64x64-fp16"))
    assert "split=1" in lines[at] and lines[at + 1].split() == ["ran", "split=2"]
    assert not any(line.startswith("  128x64x64-fp16") for line in lines)  # same: not listed
    assert "cannot tell whether the code changed since 0000000000" in moved.stdout
    strict = _picks(plugin_env, "--against", str(out), "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr


def test_picks_below_lists_only_the_misses_todays_selection_still_runs(
    plugin_env, tmp_path
) -> None:
    out = tmp_path / "run.json"
    doc = _run(plugin_env, out)
    for rec in doc["records"]:  # as if timed: one pick at 80 % of cuBLAS, one at 95 %
        rec["pct_of_cublas"] = 80.0 if rec["problem_key"] == "64x64x64-fp16" else 95.0
    out.write_text(json.dumps(doc))
    r = _picks(plugin_env, "--against", str(out), "--below", "0.9")
    assert r.returncode == 0, r.stdout + r.stderr
    listed = [
        line.split() for line in r.stdout.splitlines() if line.startswith("  ") and "%" in line
    ]
    assert [line[:2] for line in listed] == [["64x64x64-fp16", "80.0"]]
    assert "1 of the 2 run as today's picks ran below 0.9x cuBLAS" in r.stdout
    for rec in doc["records"]:  # the selection has moved off the slow pick: no longer standing
        if rec["problem_key"] == "64x64x64-fp16":
            rec["config"] = "split=2"
    out.write_text(json.dumps(doc))
    moved = _picks(plugin_env, "--against", str(out), "--below", "0.9")
    assert "0 of the 1 run as today's picks ran below 0.9x cuBLAS" in moved.stdout
    alone = _picks(plugin_env, "--suite", "64x64x64", "--below", "0.9")
    assert alone.returncode == 2
    assert alone.stderr.strip().splitlines() == [
        "error: --below lists a run's misses: it needs --against RUN.json"
    ]


def test_picks_against_a_missing_file_is_a_one_line_error(plugin_env, tmp_path) -> None:
    r = _picks(plugin_env, "--against", str(tmp_path / "nope.json"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --against: {tmp_path / 'nope.json'}: no such results file"
    ]


def _git(root: Path, *args: str) -> None:
    ident = ("-c", "user.email=t@example.com", "-c", "user.name=t")
    subprocess.run(["git", "-C", str(root), *ident, *args], check=True, capture_output=True)


def test_code_changes_names_backend_and_harness_files_not_docs(tmp_path: Path) -> None:
    """On a git checkout (what `picks --against` reads; git is no optional part of it): the
    backend's and the harness's changed files, never the docs or another backend's; outside
    a repository it says it cannot tell."""
    assert code_changes("0" * 40, ["x"], tmp_path).startswith(
        "cannot tell whether the code changed since 0000000000"
    )
    for path in ("backends/x/k.py", "backends/x/README.md", "backends/y/k.py", "harness/a.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    sha = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert code_changes(sha, ["x"], tmp_path).startswith(
        f"code unchanged since the run's tree {sha[:10]}"
    )
    for path in ("backends/x/README.md", "backends/y/k.py"):
        (tmp_path / path).write_text("2\n")  # docs, and another backend: not this kernel's code
    assert code_changes(sha, ["x"], tmp_path).startswith("code unchanged")
    (tmp_path / "backends/x/k.py").write_text("2\n")
    (tmp_path / "harness/a.py").write_text("2\n")
    said = code_changes(sha, ["x"], tmp_path)
    assert said.startswith(f"code changed since the run's tree {sha[:10]}")
    assert "backends/x/: k.py; harness/: a.py" in said and "README" not in said
