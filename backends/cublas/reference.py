"""cuBLAS through torch: the line every kernel is measured against.

``torch.matmul(a, b.T, out=d)`` with ``b`` row-major (N, K) is cuBLAS's TN GEMM with fp32
accumulation, written straight into the preallocated ``d`` (no extra copy inside the timed
launch).
"""

from __future__ import annotations

from typing import Any

from harness.protocol import Artifacts, LaunchFn, Problem, Rung


class CublasReference:
    backend = "cublas"
    name = "torch_matmul"
    rung = Rung.CUBLAS
    arch = "any"
    description = "torch.matmul(A, B.T) into a preallocated D (cuBLAS TN GEMM)"

    def supports(self, problem: Problem) -> str | None:
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch

        def launch(a: Any, b: Any, out: Any) -> None:
            torch.matmul(a, b.T, out=out)

        return launch

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        return Artifacts(arch=arch, notes=("closed-source library: no PTX to inspect",))


KERNEL = CublasReference()
