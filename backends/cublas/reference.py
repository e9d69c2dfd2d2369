"""cuBLAS through torch: the line every kernel is measured against.

``torch.matmul(a, b.T, out=d)`` with ``b`` row-major (N, K) is cuBLAS's TN GEMM with fp32
accumulation, written straight into the preallocated ``d`` (no extra copy inside the timed
launch).
"""

from __future__ import annotations

from typing import Any

from backends.cublas import spec
from harness.protocol import Artifacts, LaunchFn, Problem, SpecKernel


class CublasReference(SpecKernel):
    def supports(self, problem: Problem) -> str | None:
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch

        def launch(a: Any, b: Any, out: Any) -> None:
            torch.matmul(a, b.T, out=out)

        return launch

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        return Artifacts(arch=arch, notes=("closed-source library: no PTX to inspect",))


KERNEL = CublasReference(spec(__name__))
