"""Problems and suites, as data.

A suite is a named tuple of :class:`~harness.protocol.Problem` shapes; the dtype is applied when
a suite is expanded, so every suite runs in fp16 and bf16 alike.

Besides the fixed suites there are seeded random ones, ``random:SEED[:COUNT]``: COUNT shapes
(default 64) whose (N, K) are projections of real models (``MODEL_PROJECTIONS``, thirteen
families) and whose M is log-uniform in [1, 16384], decode to prefill. They keep tuning and
evaluation apart (docs/design.md, "Held out by construction"): a random suite whose seed is in
``TUNING_SEEDS`` is tuning data like the fixed suites; every other seed is held out. A held-out
suite never holds a shape of a fixed suite or of a tuning seed's suite, and ``bench --tune`` /
``tune-table`` refuse held-out suites, so no tuned choice was ever made on a shape it is
judged on.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterable, Sequence

from harness.gemm import DTYPES, Problem, validate_k

__all__ = [
    "MODEL_PROJECTIONS",
    "RANDOM_PREFIX",
    "SUITES",
    "TUNING_SEEDS",
    "canonical_suite",
    "expand",
    "held_out",
    "held_out_m_share",
    "random_shapes",
    "suite_names",
    "suite_shapes",
]

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


#: Projections of real models, (name, N, K) = (projection, out features, in features), with one
#: GPU's whole layer (no tensor parallelism), QKV and gate+up fused where the fused N stays
#: <= 57344 (else the gate alone). N and K are multiples of 8 in [256, 57344].
MODEL_PROJECTIONS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "llama-3-8b": (("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096),
                   ("down", 4096, 14336)),
    "llama-3-70b": (("qkv", 10240, 8192), ("o", 8192, 8192), ("gate_up", 57344, 8192),
                    ("down", 8192, 28672)),
    "llama-3.1-405b": (("qkv", 18432, 16384), ("o", 16384, 16384), ("gate", 53248, 16384),
                       ("down", 16384, 53248)),
    "qwen2.5-7b": (("qkv", 4608, 3584), ("o", 3584, 3584), ("gate_up", 37888, 3584),
                   ("down", 3584, 18944)),
    "qwen2.5-14b": (("qkv", 7168, 5120), ("o", 5120, 5120), ("gate_up", 27648, 5120),
                    ("down", 5120, 13824)),
    "qwen2.5-32b": (("qkv", 7168, 5120), ("o", 5120, 5120), ("gate_up", 55296, 5120),
                    ("down", 5120, 27648)),
    "qwen2.5-72b": (("qkv", 10240, 8192), ("o", 8192, 8192), ("gate", 29568, 8192),
                    ("down", 8192, 29568)),
    "mistral-nemo-12b": (("qkv", 6144, 5120), ("o", 5120, 4096), ("gate_up", 28672, 5120),
                         ("down", 5120, 14336)),
    "mixtral-8x22b": (("qkv", 8192, 6144), ("o", 6144, 6144), ("expert_gate_up", 32768, 6144),
                      ("expert_down", 6144, 16384)),
    "gemma-2-9b": (("qkv", 8192, 3584), ("o", 3584, 4096), ("gate_up", 28672, 3584),
                   ("down", 3584, 14336)),
    "gemma-2-27b": (("qkv", 8192, 4608), ("o", 4608, 4096), ("gate", 36864, 4608),
                    ("down", 4608, 36864)),
    "phi-3-mini": (("qkv", 9216, 3072), ("o", 3072, 3072), ("gate_up", 16384, 3072),
                   ("down", 3072, 8192)),
    "deepseek-v3": (("q_a+kv_a", 2112, 7168), ("q_b", 24576, 1536), ("kv_b", 32768, 512),
                    ("o", 7168, 16384), ("dense_gate_up", 36864, 7168),
                    ("dense_down", 7168, 18432), ("expert_gate_up", 4096, 7168),
                    ("expert_down", 7168, 2048)),
}  # fmt: skip

#: Seeds of the random suites that tuning (``bench --tune``, tuned tables, cost-model fits) may
#: use. Every other seed is held out for evaluation.
TUNING_SEEDS = frozenset({101, 102, 103})
RANDOM_PREFIX = "random:"
RANDOM_COUNT = 64  # shapes in a random suite unless its name says otherwise
RANDOM_MAX_M = 16384
#: A tuning seed's suite is excluded from held-out suites up to this many shapes.
TUNING_SUITE_MAX = 256


def parse_random(name: str) -> tuple[int, int] | None:
    """(seed, count) of a ``random:SEED[:COUNT]`` suite name; None for any other name;
    ValueError for a malformed one."""
    if not name.startswith(RANDOM_PREFIX):
        return None
    parts = name[len(RANDOM_PREFIX) :].split(":")
    try:
        seed = int(parts[0])
        count = int(parts[1]) if len(parts) > 1 else RANDOM_COUNT
    except (ValueError, IndexError):
        raise ValueError(f"bad random suite {name!r}; expected random:SEED[:COUNT]") from None
    if len(parts) > 2 or seed < 0 or not 1 <= count <= 4096:
        raise ValueError(f"bad random suite {name!r}; expected random:SEED[:COUNT], COUNT 1-4096")
    return seed, count


def canonical_suite(name: str) -> str:
    """``name`` as results record it: a random suite always with its count
    (``random:919361`` -> ``random:919361:64``), so that two runs of one suite fold into one
    report panel however each was asked for; any other name unchanged."""
    parsed = parse_random(name)
    return name if parsed is None else f"{RANDOM_PREFIX}{parsed[0]}:{parsed[1]}"


def held_out(name: str) -> bool:
    """Whether suite ``name`` is held out for evaluation: a random suite of a non-tuning seed."""
    parsed = parse_random(name)
    return parsed is not None and parsed[0] not in TUNING_SEEDS


@functools.cache
def _grid() -> frozenset[_Shape]:
    """Every shape of the fixed suites (all tuning data)."""
    return frozenset(s for _, shapes in SUITES.values() for s in shapes)


@functools.cache
def _tuning_random() -> frozenset[_Shape]:
    return frozenset(s for seed in TUNING_SEEDS for s in _draw(seed, TUNING_SUITE_MAX, _grid()))


def _draw(seed: int, count: int, exclude: frozenset[_Shape]) -> tuple[_Shape, ...]:
    """``count`` distinct shapes: a family uniformly, one of its projections uniformly, M
    log-uniform in [1, RANDOM_MAX_M]; shapes in ``exclude`` are drawn again."""
    rng = random.Random(seed)
    families = sorted(MODEL_PROJECTIONS)
    shapes: list[_Shape] = []
    seen = set(exclude)
    while len(shapes) < count:
        _, n, k = rng.choice(MODEL_PROJECTIONS[rng.choice(families)])
        m = min(RANDOM_MAX_M, int(math.exp(rng.uniform(0.0, math.log(RANDOM_MAX_M + 1)))))
        if (m, n, k) not in seen:
            seen.add((m, n, k))
            shapes.append((m, n, k))
    return tuple(shapes)


@functools.cache
def held_out_m_share(lo: int, hi: int | None = None, suites: int = 256) -> float:
    """The share of a held-out suite's shapes whose M lies in [lo, hi] (hi None: no bound),
    counted over ``suites`` suites of ``RANDOM_COUNT`` shapes drawn as a held-out seed's are
    (seeds from 10**6, above any evaluation's). M is drawn log-uniform (43 % of draws at
    M <= 64), but a small-M shape is redrawn more often, for clashing with a tuning shape or an
    earlier draw: M 1-64 ends up about 36 % of a suite and each band of 4x above it about 16 %."""
    ms = [m for seed in range(10**6, 10**6 + suites) for m, _, _ in random_shapes(seed)]
    return sum(lo <= m and (hi is None or m <= hi) for m in ms) / len(ms)


@functools.cache
def random_shapes(seed: int, count: int = RANDOM_COUNT) -> tuple[_Shape, ...]:
    """The shapes of ``random:seed:count``: never a fixed suite's shape, and for a held-out
    seed never a shape of a tuning seed's suite either. A shorter suite of the same seed is a
    prefix of a longer one."""
    exclude = _grid() if seed in TUNING_SEEDS else _grid() | _tuning_random()
    return _draw(seed, count, exclude)


def suite_shapes(name: str) -> tuple[_Shape, ...]:
    """The (M, N, K) shapes of a fixed or random suite (ValueError for an unknown name)."""
    if name in SUITES:
        return SUITES[name][1]
    parsed = parse_random(name)
    if parsed is None:
        raise ValueError(
            f"unknown suite {name!r}; expected one of {suite_names()}, random:SEED[:COUNT] or MxNxK"
        )
    return random_shapes(*parsed)


def suite_names() -> list[str]:
    return list(SUITES)


def expand(suites: Iterable[str], dtypes: Sequence[str] = ("fp16",)) -> list[Problem]:
    """The problems of ``suites`` in each of ``dtypes``, de-duplicated, in suite order.

    A suite name may also be ``random:SEED[:COUNT]`` (module docstring) or a literal problem
    such as ``4096x4096x4096`` (dtype from ``dtypes``) or ``4096x4096x4096-bf16``. A problem
    whose K breaks TMA's 16-byte row alignment is refused here, before any kernel runs
    (ValueError).
    """
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {DTYPES}")
    problems: list[Problem] = []
    for name in suites:
        if name in SUITES or name.startswith(RANDOM_PREFIX):
            shapes = suite_shapes(name)
            problems += [Problem(m, n, k, d) for d in dtypes for (m, n, k) in shapes]
        elif "x" in name:
            p = Problem.parse(name)
            problems += [p] if "-" in name else [Problem(p.m, p.n, p.k, d) for d in dtypes]
        else:
            suite_shapes(name)  # raises, naming the valid suites
    for p in problems:
        validate_k(p)
    seen: set[Problem] = set()
    return [p for p in problems if not (p in seen or seen.add(p))]
