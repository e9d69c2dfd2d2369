"""The GEMM problem every kernel solves: the "TN" convention of the source tutorials.

``A`` is (M, K) row-major, ``B`` is (N, K) row-major and ``D = A @ B.T`` is (M, N) row-major,
fp16 or bf16 in and out, fp32 accumulation. Any M, N >= 1 is valid; K must keep the rows of A
and B 16-byte aligned for TMA (K % 8 == 0 for 2-byte types), which :func:`validate_k` checks
where problems enter the harness.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DTYPES", "Problem", "cdiv", "element_size", "k_alignment_reason", "validate_k"]

DTYPES = ("fp16", "bf16")


def element_size(dtype: str) -> int:
    """Bytes per element of a problem dtype."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; expected one of {DTYPES}")
    return 2


@dataclass(frozen=True, order=True)
class Problem:
    """One GEMM: ``D[M, N] = A[M, K] @ B[N, K].T`` in ``dtype`` with fp32 accumulation."""

    m: int
    n: int
    k: int
    dtype: str = "fp16"

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Problem.{name} must be a positive int, got {value!r}")
        element_size(self.dtype)  # validates dtype

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def key(self) -> str:
        """Stable text id, e.g. ``4096x4096x4096-fp16``."""
        return f"{self.m}x{self.n}x{self.k}-{self.dtype}"

    @classmethod
    def parse(cls, key: str) -> Problem:
        """Inverse of :attr:`key`; the dtype suffix is optional (fp16)."""
        shape, _, dtype = key.partition("-")
        try:
            m, n, k = (int(x) for x in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"bad problem {key!r}; expected MxNxK[-fp16|-bf16]") from None
        return cls(m, n, k, dtype or "fp16")

    def bytes_per_set(self) -> int:
        """Bytes of one (A, B, D) input/output set."""
        return element_size(self.dtype) * (self.m * self.k + self.n * self.k + self.m * self.n)


def cdiv(x: int, y: int) -> int:
    """Ceiling division: how many tiles of ``y`` cover ``x``."""
    return -(-x // y)


def k_alignment_reason(problem: Problem) -> str | None:
    """Why the rows of A and B are not 16-byte aligned (TMA's requirement), or None."""
    align = 16 // element_size(problem.dtype)
    if problem.k % align:
        return (
            f"K = {problem.k} is not a multiple of {align}; rows of A and B must be 16-byte "
            "aligned for TMA"
        )
    return None


def validate_k(problem: Problem) -> None:
    """Raise ValueError unless the rows of A and B are 16-byte aligned (TMA's requirement)."""
    reason = k_alignment_reason(problem)
    if reason:
        raise ValueError(f"{problem.key}: {reason}")
