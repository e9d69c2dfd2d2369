"""The reference: ``torch.matmul(A, B.T)``, which dispatches to cuBLAS (rung 0 of every chain)."""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung, spec_of_module


def kernels() -> list[KernelSpec]:
    return [
        KernelSpec(
            backend="cublas",
            name="torch_matmul",
            rung=Rung.CUBLAS,
            arch="any",
            description="torch.matmul(A, B.T) into a preallocated D (cuBLAS TN GEMM)",
            module="backends.cublas.reference",
            requires=("torch",),
        )
    ]


def spec(module: str) -> KernelSpec:
    """The spec of ``module`` (the reference's identity, written once above)."""
    return spec_of_module(kernels(), module)
