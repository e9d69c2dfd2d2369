"""The README's "Adding a backend" works when copied as written.

The plugin's files are taken verbatim from the README's code blocks (each starts with a
``# mydsl-gemm/<path>`` comment), "installed" the way an installer lays out a distribution (its
entry point from its own pyproject.toml) and run through the README's own commands.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import run_harness
from expectations import require_module

from harness.records import Status
from harness.results import load

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(?:python|toml)\n# (mydsl-gemm/[^\n]+)\n(.*?)```", re.S)


def _write_plugin(dest: Path) -> Path:
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert {p for p, _ in blocks} >= {
        "mydsl-gemm/pyproject.toml",
        "mydsl-gemm/mydsl_gemm/__init__.py",
        "mydsl-gemm/mydsl_gemm/r7.py",
    }, "the README's plugin example lost a file"
    for path, body in blocks:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    return dest / "mydsl-gemm"


def test_readme_plugin_runs_as_written(tmp_path: Path, plugin_site_maker) -> None:
    require_module("torch", "the README's plugin runs on CPU tensors")
    project = _write_plugin(tmp_path)
    site = plugin_site_maker(tmp_path / "site", project)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(project), str(ROOT)])

    def harness(*args: str) -> subprocess.CompletedProcess:
        return run_harness(env, *args, timeout=600, cwd=tmp_path)

    listed = harness("list", "--backend", "mydsl")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("mydsl/"))
    assert "mydsl/cpu/r7_multi_consumer" in line and "  yes  " in line
    ran = harness("bench", "--backend", "mydsl", "--device", "cpu", "--suite", "smoke")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = (tmp_path / "runs").glob("bench-*.json")
    records = load(run).bench
    assert len(records) == 3 and all(r.status == Status.OK and r.timed for r in records)
