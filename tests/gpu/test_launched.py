"""``bench --check-only --launched`` on a GPU: the profiler sees cuBLAS's kernels at a square
shape and a decode one, and the square one's name states the tile cuBLAS chose
(harness.launched.cublas_tile reads it)."""

from __future__ import annotations

import pytest
from expectations import require_module

from harness.launched import cublas_tile, main_kernel
from harness.protocol import Problem
from harness.records import Status
from harness.registry import discover
from harness.runner import Runner, RunSettings

torch = require_module("torch", "the GPU tests")

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
pytestmark = pytest.mark.gpu


def test_cublas_launch_names_its_kernel_and_tile(request: pytest.FixtureRequest) -> None:
    wanted = request.config.getoption("--backend", default=None)
    if wanted and "cublas" not in wanted:
        pytest.skip("a harness test: runs with the reference's GPU tests")
    reference = discover(entry_points=False).get("cublas/torch_matmul")
    problems = [Problem(4096, 4096, 4096), Problem(64, 4096, 4096)]
    settings = RunSettings(measure=False, launched=True, timeout_s=120)
    with Runner([reference], settings) as runner:
        records = list(runner.run(problems))
    assert [r.status for r in records] == [Status.OK, Status.OK]
    for r in records:
        assert r.launched, f"{r.problem.key}: nothing recorded"
        main = main_kernel(r.launched)
        assert main.us > 0 and main.calls >= 1
    # a square GEMM is a tensor-core tile kernel whatever cuBLAS's heuristics pick; a decode
    # shape may be a GEMV or split kernel whose name states no tile: only listed
    square = main_kernel(records[0].launched)
    assert cublas_tile(square.name), f"no tile read from {square.name!r}"
