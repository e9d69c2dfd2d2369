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

Beyond the numbers, a launch must touch nothing but D. D lies inside one larger allocation, a
guard band of NaN before and after it (:class:`GuardedOutput`): a store past the end of D (a
ragged tile edge stored unmasked) or before its start changes guard bits and fails, with the
count in the reason. A and B are compared bit for bit with copies taken before the launch: a
kernel that uses an operand as scratch fails too. The guard is flat, not per row: kernels take
D contiguous and row-major (TMA needs that), so a store past the end of a row lands in the next
row of D, where the comparison with the reference catches it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from harness.gemm import Problem, cdiv, element_size

__all__ = [
    "CheckResult",
    "GuardedOutput",
    "KernelFault",
    "LaunchWitness",
    "check_kernel",
    "combine",
    "compare",
    "guard_elements",
    "synchronize",
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
    """Worst errors over the checks run; ``passed`` is False on any NaN/Inf and on any fault.

    ``faults`` names what a launch touched besides D's values, one line each (``"wrote 3
    elements past the end of D"``, ``"modified A (128 of 4096 elements)"``).
    """

    passed: bool
    max_abs_err: float
    rel_err: float
    nonfinite: int
    atol: float
    rtol: float
    checks: int
    faults: tuple[str, ...] = ()

    @property
    def within_tolerance(self) -> bool:
        """The values of D alone pass: no NaN/Inf, both error bounds met."""
        return self.nonfinite == 0 and self.max_abs_err <= self.atol and self.rel_err <= self.rtol

    def summary(self) -> str:
        return (
            f"max|err| {self.max_abs_err:.3g} (tol {self.atol:.3g}), "
            f"rel {self.rel_err:.3g} (tol {self.rtol:.3g}), non-finite {self.nonfinite}"
        )

    def failure(self) -> str | None:
        """Why the check failed, in one line (the faults first), or None if it passed."""
        if self.passed:
            return None
        parts = list(self.faults)
        if not self.within_tolerance or not parts:
            parts.append(f"result differs from torch.matmul: {self.summary()}")
        return "; ".join(parts)


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


def guard_elements(problem: Problem) -> int:
    """Poisoned elements on each side of D: at least one row of D (a tile stored unmasked past
    row M writes there first) and 4 KiB, in whole 256-byte units so that D's base keeps the
    alignment of a fresh CUDA allocation (TMA needs 16 bytes; DLPack importers may ask 64)."""
    size = element_size(problem.dtype)
    unit = 256 // size
    return cdiv(max(problem.n, 4096 // size), unit) * unit


def _bits(t: Any) -> Any:
    """The raw bits of a 16-bit tensor (NaN compares unequal to itself; bits do not)."""
    import torch

    return t.view(torch.int16)


class GuardedOutput:
    """D, (M, N) contiguous row-major, inside one NaN-filled allocation with
    :func:`guard_elements` of NaN before and after it."""

    def __init__(self, problem: Problem, device: str) -> None:
        import torch

        self.problem = problem
        self.guard = guard_elements(problem)
        size = problem.m * problem.n
        self.buffer = torch.full(
            (self.guard + size + self.guard,),
            math.nan,
            device=device,
            dtype=torch_dtype(problem.dtype),
        )
        self.d = self.buffer[self.guard : self.guard + size].view(problem.m, problem.n)
        self._poison = _bits(self.buffer[:1]).clone()

    def poison(self) -> None:
        """Fill D and both guards with NaN again."""
        self.buffer.fill_(math.nan)

    def faults(self) -> list[str]:
        """A line for each side of D whose guard no longer holds the poison, bit for bit."""
        g = self.guard
        out = []
        for where, band in (
            ("before the start", self.buffer[:g]),
            ("past the end", self.buffer[-g:]),
        ):
            n = int((_bits(band) != self._poison).sum().item())
            if n:
                out.append(f"wrote {n} element{'s' if n != 1 else ''} {where} of D")
        return out


def _modified(name: str, now: Any, before: Any) -> list[str]:
    n = int((_bits(now) != _bits(before)).sum().item())
    return [f"modified {name} ({n} of {now.numel()} elements)"] if n else []


class LaunchWitness:
    """One launch's operands — fresh A, B, a guarded D — and what to hold them to afterwards:
    the reference ``torch.matmul(A, B.T)`` and copies of A and B, all taken before the launch.

    ``inspect()`` (after the launch has finished) compares D with the reference, checks the
    guard band and that A and B are unchanged.
    """

    def __init__(self, problem: Problem, device: str, generator: Any = None) -> None:
        import torch

        self.problem = problem
        self.a, self.b = random_operands(problem, device, generator)
        self.out = GuardedOutput(problem, device)
        self.ref = torch.matmul(self.a, self.b.T)
        self._a, self._b = self.a.clone(), self.b.clone()

    @property
    def d(self) -> Any:
        return self.out.d

    def inspect(self) -> CheckResult:
        result = compare(self.problem, self.d, self.ref)
        faults = (
            self.out.faults() + _modified("A", self.a, self._a) + _modified("B", self.b, self._b)
        )
        if not faults:
            return result
        return replace(result, passed=False, faults=tuple(faults))


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

    The output is filled with NaN before every launch so unwritten elements fail; it sits in a
    NaN guard band that must stay untouched, and A and B must be unchanged afterwards
    (:class:`LaunchWitness`).
    """
    import torch

    gen = torch.Generator(device=device)
    gen.seed() if seed is None else gen.manual_seed(seed)
    results = []
    for _ in range(checks):
        w = LaunchWitness(problem, device, gen)
        validate_operands(problem, w.a, w.b, w.d, device)
        if device == "cuda":
            torch.cuda.synchronize()
        launch(w.a, w.b, w.d)
        synchronize(device)
        results.append(w.inspect())
        del w
    return combine(results)


def synchronize(device: str) -> None:
    """Wait for the launches queued on ``device``; a CUDA error they left is a KernelFault."""
    if device != "cuda":
        return
    import torch

    # Synchronize right after the kernel: a fault (an out-of-bounds write, an illegal
    # instruction) surfaces here as the kernel's own error, not as the next library call's
    # (cuBLAS would report CUBLAS_STATUS_INTERNAL_ERROR on a poisoned context).
    try:
        torch.cuda.synchronize()
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise KernelFault(f"the kernel faulted on the GPU: {first}") from None


def combine(results: list[CheckResult]) -> CheckResult:
    """The worst of several checks' results (faults of all of them, each named once)."""
    return CheckResult(
        passed=all(r.passed for r in results),
        max_abs_err=max(r.max_abs_err for r in results),
        rel_err=max(r.rel_err for r in results),
        nonfinite=max(r.nonfinite for r in results),
        atol=results[0].atol,
        rtol=results[0].rtol,
        checks=sum(r.checks for r in results),
        faults=tuple(dict.fromkeys(f for r in results for f in r.faults)),
    )
