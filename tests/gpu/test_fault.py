"""A kernel that faults on the GPU is recorded as its own fault, naming the CUDA error, and the
run goes on: the reference timed beside it in its own process is unaffected."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from expectations import require_module

from harness.protocol import KernelSpec, Problem, Rung
from harness.records import Status
from harness.registry import discover
from harness.runner import Runner, RunSettings

torch = require_module("torch", "the GPU tests")

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
pytest.importorskip("cuda.bindings", reason="cuda-bindings (comes with CUDA torch) missing")
pytestmark = pytest.mark.gpu

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
FAULTY = KernelSpec(
    "toy",
    "faulty",
    Rung.TILED,
    "any",
    "writes to address 0 (an illegal memory access)",
    module="toy_gemm_plugin.faulty",
)


def test_fault_is_named_as_the_kernels_own(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    wanted = request.config.getoption("--backend", default=None)
    if wanted and "cublas" not in wanted:
        pytest.skip("a harness test: runs with the reference's GPU tests")
    monkeypatch.syspath_prepend(str(PLUGIN))  # the spawned workers inherit sys.path
    assert str(PLUGIN) in sys.path
    reference = discover(entry_points=False).get("cublas/torch_matmul")
    problems = [Problem(256, 256, 64), Problem(512, 512, 128)]
    with Runner([reference, FAULTY], RunSettings(measure=False, timeout_s=120)) as runner:
        records = list(runner.run(problems))
    faulty = [r for r in records if r.kernel == "toy/faulty"]
    assert [r.status for r in faulty] == [Status.ERROR, Status.ERROR]
    for r in faulty:
        assert "faulted on the GPU" in r.reason and "illegal" in r.reason.lower(), r.reason
        assert "CUBLAS" not in r.reason
    ref = [r for r in records if r.kernel == "cublas/torch_matmul"]
    assert [r.status for r in ref] == [Status.OK, Status.OK]
