"""Input validation and the correctness check against the reference.

Tolerance. Inputs are uniform in [-1, 1], so each product has variance 1/9 and an output
element of a K-long dot product has standard deviation sqrt(K)/3. With fp32 accumulation the
error that remains is the final rounding to the output type, done once by the kernel and once by
the reference: at most one unit in the last place of |D|. We allow

    max |D - ref|            <= 8 * u * sqrt(K)
    ||D - ref|| / ||ref||    <= 2 * u

with u the unit roundoff of the output type (2^-11 fp16, 2^-8 bf16). The largest |D| of a large
problem is about 5 sigma = 5 sqrt(K)/3, whose ulp is at most 2u * 5 sqrt(K)/3 ~ 3.3 u sqrt(K),
so the absolute bound leaves ~2.4x headroom over a one-ulp disagreement while an element that is
wrong by one missing K-tile (O(sqrt(64)/3) ~ 2.7 at any K) fails at every K <= 10^5 (fp16).
The relative bound sits ~4x above the measured one-rounding level (~u/sqrt(3)). NaN or Inf
anywhere — including an element the kernel never wrote, which still holds its NaN poison —
fails regardless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.gemm import Problem

__all__ = [
    "CheckResult",
    "KernelFault",
    "check_kernel",
    "compare",
    "tolerances",
    "validate_operands",
]

_UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}


class KernelFault(RuntimeError):
    """The kernel's launch left a CUDA error (the context is unusable afterwards)."""


def torch_dtype(dtype: str) -> Any:
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]


def tolerances(problem: Problem) -> tuple[float, float]:
    """(max-abs, relative-Frobenius) tolerances for ``problem`` (see module docstring)."""
    u = _UNIT_ROUNDOFF[problem.dtype]
    return 8.0 * u * math.sqrt(problem.k), 2.0 * u


def validate_operands(problem: Problem, a: Any, b: Any, out: Any, device: str = "cuda") -> None:
    """Raise ``ValueError`` naming the first problem with the operands of ``problem``.

    Checks, in order: device, dtype, shapes (A (M,K), B (N,K), D (M,N)), row-major contiguity,
    K % 8 == 0 (16-byte rows for TMA) and 16-byte aligned base pointers.
    """
    want_dtype = torch_dtype(problem.dtype)
    expected = {
        "A": (problem.m, problem.k),
        "B": (problem.n, problem.k),
        "D": (problem.m, problem.n),
    }
    for name, t in (("A", a), ("B", b), ("D", out)):
        if not hasattr(t, "device") or not hasattr(t, "dtype"):
            raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t.device.type != device:
            raise ValueError(f"{name}: expected a {device} tensor, got one on {t.device}")
        if t.dtype != want_dtype:
            raise ValueError(
                f"{name}: dtype {t.dtype} does not match problem dtype {problem.dtype}"
            )
        if tuple(t.shape) != expected[name]:
            raise ValueError(
                f"{name}: shape {tuple(t.shape)} does not match {expected[name]} for {problem.key}"
            )
        if t.dim() != 2 or t.stride(1) != 1 or t.stride(0) != t.shape[1]:
            raise ValueError(
                f"{name}: layout must be contiguous row-major, got strides {tuple(t.stride())}"
            )
        if t.data_ptr() % 16:
            raise ValueError(f"{name}: base address {t.data_ptr():#x} is not 16-byte aligned")
    if problem.k % 8:
        raise ValueError(f"K = {problem.k} must be a multiple of 8 (16-byte rows for TMA)")


@dataclass(frozen=True)
class CheckResult:
    """Worst errors over the checks run; ``passed`` is False on any NaN/Inf."""

    passed: bool
    max_abs_err: float
    rel_err: float
    nonfinite: int
    atol: float
    rtol: float
    checks: int

    def summary(self) -> str:
        return (
            f"max|err| {self.max_abs_err:.3g} (tol {self.atol:.3g}), "
            f"rel {self.rel_err:.3g} (tol {self.rtol:.3g}), non-finite {self.nonfinite}"
        )


def compare(problem: Problem, out: Any, ref: Any) -> CheckResult:
    """Compare one output with its reference (fp32 arithmetic)."""
    import torch

    atol, rtol = tolerances(problem)
    d = out.float()
    r = ref.float()
    nonfinite = int((~torch.isfinite(d)).sum().item())
    diff = (d - r).nan_to_num(nan=math.inf)
    max_abs = float(diff.abs().max().item())
    ref_norm = float(torch.linalg.vector_norm(r).item())
    rel = float(torch.linalg.vector_norm(diff).item()) / ref_norm if ref_norm else max_abs
    passed = nonfinite == 0 and max_abs <= atol and rel <= rtol
    return CheckResult(passed, max_abs, rel, nonfinite, atol, rtol, 1)


def random_operands(problem: Problem, device: str, generator: Any = None) -> tuple[Any, Any]:
    """Fresh A, B uniform in [-1, 1]."""
    import torch

    dt = torch_dtype(problem.dtype)

    def uniform(rows: int) -> Any:
        t = torch.empty((rows, problem.k), device=device, dtype=torch.float32)
        return t.uniform_(-1.0, 1.0, generator=generator).to(dt)

    return uniform(problem.m), uniform(problem.n)


def check_kernel(
    problem: Problem, launch: Any, device: str = "cuda", checks: int = 2, seed: int | None = None
) -> CheckResult:
    """Run ``launch`` on ``checks`` fresh random input sets against ``torch.matmul(A, B.T)``.

    The output is filled with NaN before every launch so unwritten elements fail.
    """
    import torch

    gen = torch.Generator(device=device)
    gen.seed() if seed is None else gen.manual_seed(seed)
    results = []
    for _ in range(checks):
        a, b = random_operands(problem, device, gen)
        out = torch.full((problem.m, problem.n), math.nan, device=device, dtype=a.dtype)
        validate_operands(problem, a, b, out, device)
        ref = torch.matmul(a, b.T)
        if device == "cuda":
            torch.cuda.synchronize()
        launch(a, b, out)
        if device == "cuda":
            # Synchronize right after the kernel: a fault (an out-of-bounds write, an illegal
            # instruction) surfaces here as the kernel's own error, not as the next library
            # call's (cuBLAS would report CUBLAS_STATUS_INTERNAL_ERROR on a poisoned context).
            try:
                torch.cuda.synchronize()
            except RuntimeError as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise KernelFault(f"the kernel faulted on the GPU: {first}") from None
        results.append(compare(problem, out, ref))
        del a, b, out, ref
    return CheckResult(
        passed=all(r.passed for r in results),
        max_abs_err=max(r.max_abs_err for r in results),
        rel_err=max(r.rel_err for r in results),
        nonfinite=max(r.nonfinite for r in results),
        atol=results[0].atol,
        rtol=results[0].rtol,
        checks=checks,
    )
