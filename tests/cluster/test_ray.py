"""The Ray executor on a CPU: a local Ray with two logical GPUs (``ray.init(num_gpus=2)``),
the fake GPUs' backend (tests/fakegpu), and ``bench --executor ray`` run in this process, so
that it joins that Ray. Each problem is one Ray task of one GPU; the records come back into one
document, and each kernel's worker ran on the GPU Ray gave its task.

Runs in ``nox -s "tests(cluster)"``, which installs the ``[cluster]`` extra and sets
``GEMM_STUDY_EXPECT_RAY=1``: there a missing Ray fails; elsewhere these tests skip.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

if os.environ.get("GEMM_STUDY_EXPECT_RAY") == "1":
    # the session installs the [cluster] extra and the CPU torch: either missing is a failure
    import ray
    import torch  # noqa: F401
else:
    pytest.importorskip("torch")
    ray = pytest.importorskip("ray", reason="Ray is not installed (the [cluster] extra)")

from conftest import FAKEGPU_SRC, PLUGIN_SRC, ROOT, make_plugin_site

from harness.cli import main
from harness.records import Status
from harness.results import load

FAST = ["--warmup", "0.05", "--rewarm", "0.05", "--settle", "0"]
FAST += ["--min-samples", "20", "--min-time", "0.02"]
FAST += ["--rounds", "2"]
SHAPES = ["64x64x64", "64x64x128", "64x128x64", "128x64x64"]


@pytest.fixture()
def fake_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The fake GPUs' backend, seen by this process (discovery happens here) and by every
    process it starts (Ray's workers and theirs); its log goes to ``tmp_path``."""
    site = make_plugin_site(tmp_path / "site", FAKEGPU_SRC)
    path = [str(site), str(FAKEGPU_SRC), str(PLUGIN_SRC), str(ROOT)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_GPU_DIR", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the logical GPUs share the CPU
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for p in reversed(path):
        monkeypatch.syspath_prepend(p)
    importlib.invalidate_caches()
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("fake_gpu_plugin")]:
        del sys.modules[name]


@pytest.fixture()
def ray_with_two_gpus(fake_backend: Path):
    """A local Ray of 2 CPUs and 2 logical GPUs (what ``ray start --num-gpus 2`` gives)."""
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False)
    try:
        yield fake_backend
    finally:
        ray.shutdown()


def test_each_problem_is_a_ray_task_of_one_gpu(ray_with_two_gpus: Path, capsys) -> None:
    out = ray_with_two_gpus / "ray.json"
    suites = [a for s in SHAPES for a in ("--suite", s)]
    args = ["bench", "--device", "cpu", "--kernel", "fake/sleep", "--executor", "ray"]
    assert main([*args, *suites, *FAST, "--out", str(out)]) == 0, capsys.readouterr()
    doc = load(out)
    assert doc.finished is not None and doc.environment["run"]["executor"] == "ray"
    per_problem: dict[str, list] = defaultdict(list)
    for rec in doc.bench:
        per_problem[rec.problem_key].append(rec)
    assert len(per_problem) == len(SHAPES)
    for key, recs in per_problem.items():
        assert sorted(r.kernel for r in recs) == ["fake/reference", "fake/sleep"], key
        assert all(r.status == Status.OK and r.pct_of_cublas is not None for r in recs)
        (slot,) = {r.gpu["visible"] for r in recs}  # one task, one GPU
        assert slot in {"0", "1"}, slot
    # each kernel's worker saw the GPU Ray assigned to its task, as its record says
    lines = [json.loads(x) for x in (ray_with_two_gpus / "log").read_text().splitlines()]
    assert {line["kernel"] for line in lines} == {"fake/reference", "fake/sleep"}
    for line in lines:
        (rec,) = [r for r in per_problem[line["problem"]] if r.kernel == line["kernel"]]
        assert line["visible"] == rec.gpu["visible"], line
    assert {g["visible"] for g in doc.environment["gpus"]} <= {"0", "1"}


def test_a_ray_without_gpus_is_refused(fake_backend: Path, capsys) -> None:
    ray.init(num_cpus=1, num_gpus=0, include_dashboard=False)
    try:
        code = main(
            ["bench", "--device", "cpu", "--kernel", "fake/sleep", "--executor", "ray", "--out",
             str(fake_backend / "x.json"), "--suite", "64x64x64"]
        )  # fmt: skip
    finally:
        ray.shutdown()
    assert code == 2
    assert "has no GPU" in capsys.readouterr().err
