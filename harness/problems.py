"""Problems and suites, as data.

A suite is a named tuple of :class:`~harness.protocol.Problem` shapes; the dtype is applied when
a suite is expanded, so every suite runs in fp16 and bf16 alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.gemm import DTYPES, Problem, validate_k

__all__ = ["SUITES", "expand", "suite_names"]

_Shape = tuple[int, int, int]

#: name -> (description, shapes). Shapes are (M, N, K).
SUITES: dict[str, tuple[str, tuple[_Shape, ...]]] = {
    "smoke": (
        "seconds: one tile, one ragged edge, one mid-size square",
        ((128, 256, 64), (200, 328, 72), (1024, 1024, 1024)),
    ),
    "square": (
        "M = N = K from 1024 to 16384",
        tuple((s, s, s) for s in (1024, 2048, 4096, 8192, 16384)),
    ),
    "ksweep": (
        "M = N = 8192, K from 512 to 16384 (the Gluon multi-CTA tutorial's table)",
        tuple((8192, 8192, k) for k in (512, 1024, 2048, 4096, 8192, 16384)),
    ),
    "llm": (
        "transformer projections, tokens x out x in (Llama-3-8B / 70B shapes, 4096 tokens)",
        (
            (4096, 6144, 4096),  # 8B fused QKV
            (4096, 4096, 4096),  # 8B attention output
            (4096, 28672, 4096),  # 8B gate+up
            (4096, 4096, 14336),  # 8B down
            (4096, 10240, 8192),  # 70B fused QKV
            (4096, 8192, 28672),  # 70B down
        ),
    ),
    "sweep": (
        "decode to prefill: the (N, K) projections of Llama-3-8B (QKV, O, gate+up, down) and "
        "Llama-3-70B at M = 1, 16, 128, 1024, 8192, plus squares 512, 1024, 2048",
        tuple(
            (m, n, k)
            for m in (1, 16, 128, 1024, 8192)
            for n, k in (
                (6144, 4096),  # 8B fused QKV
                (4096, 4096),  # 8B attention output
                (28672, 4096),  # 8B gate+up
                (4096, 14336),  # 8B down
                (10240, 8192),  # 70B fused QKV
                (8192, 8192),  # 70B attention output
                (57344, 8192),  # 70B gate+up
                (8192, 28672),  # 70B down
            )
        )
        + tuple((s, s, s) for s in (512, 1024, 2048)),
    ),
    "ragged": (
        "non-multiples of 128/256 and degenerate M or N",
        (
            (3000, 5000, 1000),
            (1, 4096, 4096),
            (4096, 1, 4096),
            (129, 257, 72),
            (1000, 1000, 8),
            (4095, 4097, 520),
        ),
    ),
}


def suite_names() -> list[str]:
    return list(SUITES)


def expand(suites: Iterable[str], dtypes: Sequence[str] = ("fp16",)) -> list[Problem]:
    """The problems of ``suites`` in each of ``dtypes``, de-duplicated, in suite order.

    A suite name may also be a literal problem such as ``4096x4096x4096`` (dtype from
    ``dtypes``) or ``4096x4096x4096-bf16``. A problem whose K breaks TMA's 16-byte row
    alignment is refused here, before any kernel runs (ValueError).
    """
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {DTYPES}")
    problems: list[Problem] = []
    for name in suites:
        if name in SUITES:
            shapes = SUITES[name][1]
            problems += [Problem(m, n, k, d) for d in dtypes for (m, n, k) in shapes]
        elif "x" in name:
            p = Problem.parse(name)
            problems += [p] if "-" in name else [Problem(p.m, p.n, p.k, d) for d in dtypes]
        else:
            raise ValueError(f"unknown suite {name!r}; expected one of {suite_names()} or MxNxK")
    for p in problems:
        validate_k(p)
    seen: set[Problem] = set()
    return [p for p in problems if not (p in seen or seen.add(p))]
