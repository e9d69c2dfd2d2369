"""Rung 8's shared vocabulary, schedule and cost model: which CTA tile, cluster and K
decomposition fill the GPU best for a problem.

Every DSL's rung 8 declares its knobs as :class:`GemmConfig` (adding only knobs its kernel has
beyond these), so a config name means the same in every backend; the DSLs differ in the
kernels they can express, not in how they choose. This module holds, once:

* :class:`GemmConfig` — tile M/N per CTA, cluster, swap-AB, split-K, stream-K, raster, group;
* :class:`StreamK` — the data-parallel + stream-K schedule: whole waves of tiles, then the
  tail tiles' k-iterations spread evenly over as many programs as give each at least
  ``SK_MIN_ITERS``, each program's share at most two partial tiles (the reference the kernels
  and their reduction implement);
* :class:`TileCostModel` — a config's estimated time: the busiest program's k-steps at the
  tile's MMA rate, the cold operand stream, DRAM, per-unit overheads and the split-K /
  stream-K reduction;
* :func:`ranked` / :func:`cheapest` — a menu ordered by that estimate, and the heuristic's
  pick among the configs a backend allows;
* :func:`fit` / :func:`cross_validate` — the model's constants fitted (least squares on log
  time) to ``bench --tune`` timings of tuning suites, and its error and choice regret on
  problems it was not fitted on (``python -m harness fit-cost``).

Backends import this module and ``harness.protocol`` from the harness, nothing else.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import math
import random
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.configs import KernelConfig
from harness.gemm import Problem, cdiv, element_size

__all__ = [
    "HOPPER",
    "NARROW",
    "SK_MIN_ITERS",
    "SPLIT_COVERS",
    "SWAP_ALIGN",
    "SWAP_WIDTHS",
    "GemmConfig",
    "Sample",
    "StreamK",
    "TileCostModel",
    "cheapest",
    "cover_ctas",
    "cross_validate",
    "explain",
    "fit",
    "four_cta_swap",
    "heuristic_allows",
    "heuristic_raster",
    "idle_share",
    "named",
    "one_wave_rows",
    "padded_rows",
    "padded_rows_swap",
    "ranked",
    "split_cover",
    "square_tile_swap",
    "swap_clusters",
    "swap_cover",
    "swap_fits",
    "swap_raster",
    "unsplit_twin",
    "wasted_share",
    "whole_wave_swap",
    "whole_wave_transpose",
]


# -- the vocabulary ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmConfig(KernelConfig):
    """Rung 8's knobs, the same in every backend.

    ``tile_m`` x ``tile_n`` is one CTA's output tile in the kernel's view: ``tile_m`` rows on
    the wgmma M side (64 = one consumer warpgroup, 128 = two, 192 = three, 256 = two of 128
    rows each), ``tile_n`` columns on the wgmma N side. With ``swap_ab`` the kernel computes
    D^T = B A^T, so its rows run along D's N and its columns along D's M (small M on the
    narrow side).
    ``cluster`` CTAs stack along the rows and share the B tile by TMA multicast. ``split_k``
    splits every tile's K range evenly (fp32 partials, then a reduction); ``stream_k`` keeps
    whole tiles for the full waves and spreads the last, partial wave's k-iterations over
    every program (:class:`StreamK`).
    ``raster`` (walk D's tiles along M or N first — D's, not the kernel's view: swapped, raster
    m walks the kernel's columns first, so the tiles that read one block of B share a wave) and
    ``group`` (tile rows per L2 group) order the data-parallel tiles.
    """

    tile_m: int = 128
    tile_n: int = 256
    cluster: int = 2
    swap_ab: bool = False
    split_k: int = 1
    stream_k: bool = False
    raster: str = "m"
    group: int = 8

    @property
    def wide_swap(self) -> bool:
        """Swapped with a tile wider than the narrow covers: M on the wgmma N side in up to
        ``MAX_SWAP_COLUMNS`` column tiles (:func:`swap_fits`)."""
        return self.swap_ab and self.tile_n > max(NARROW)

    @property
    def label(self) -> str:
        """The knobs a cost model sees, short (``128x136 swap sk``, ``128x256 c2``,
        ``64x128 split4``): how explanations name a config."""
        parts = [f"{self.tile_m}x{self.tile_n}"]
        parts += [f"c{self.cluster}"] if self.cluster > 1 else []
        parts += ["swap"] if self.swap_ab else []
        parts += [f"split{self.split_k}"] if self.split_k > 1 else []
        parts += ["sk"] if self.stream_k else []
        return " ".join(parts)

    @property
    def tile_rows(self) -> int:
        """Rows of one cluster tile (the unit the schedule hands out)."""
        return self.tile_m * self.cluster

    def oriented(self, problem: Problem) -> tuple[int, int]:
        """(rows, cols) of the output in the kernel's view: (M, N), or (N, M) swapped."""
        return (problem.n, problem.m) if self.swap_ab else (problem.m, problem.n)

    def tiles(self, problem: Problem) -> int:
        """Cluster tiles of the output (before any K split)."""
        rows, cols = self.oriented(problem)
        return cdiv(rows, self.tile_rows) * cdiv(cols, self.tile_n)

    def ctas(self, problem: Problem) -> int:
        """CTAs the work would occupy at once if unbounded: tiles x cluster x K splits."""
        return self.tiles(problem) * self.cluster * self.split_k

    def schedule(self, problem: Problem, num_sms: int, block_k: int = 64) -> StreamK:
        """The stream-K schedule of ``problem`` on a persistent grid of one program per
        cluster (what a stream-K kernel walks and its reduction sums)."""
        return StreamK(self.tiles(problem), cdiv(problem.k, block_k), num_sms // self.cluster)


C = TypeVar("C", bound=GemmConfig)


# -- the stream-K schedule -------------------------------------------------------------------
#: The fewest tail k-iterations a stream-K program takes (where the tail has that many a
#: program): below it, storing a partial and summing it costs more than the k-steps it
#: shares. 8, as CUTLASS's sm90 stream-K scheduler bounds its units.
SK_MIN_ITERS = 8


@dataclass(frozen=True)
class StreamK:
    """Data-parallel waves, then stream-K over the tail (the kernels' work units).

    ``tiles`` cluster tiles of ``k_tiles`` k-iterations each run on ``programs`` persistent
    programs (clusters). The first ``dp_tiles`` = (tiles // programs) x programs are whole
    tiles, dealt round-robin (program p: tiles p, p + programs, ...). The remaining
    ``sk_tiles`` < programs tiles form one iteration space of ``sk_iters`` k-iterations shared
    by the first ``tail_programs`` programs: as many as give each at least ``min_iters`` of
    them (:data:`SK_MIN_ITERS`), but never fewer than ``sk_tiles``. Program p covers
    ``begin(p)`` to ``begin(p + 1)``: at most one tile's worth, so it touches at most two
    tiles — its segment 0 (the tile it starts in) and segment 1 (the next); a program past
    ``tail_programs`` has none. Every segment writes an fp32 partial tile into workspace slot
    ``segment x programs + p``; the reduction sums each tail tile's partials in program order
    (deterministic) and writes D. Why the bound: spread over every program, a tail of two
    tiles of 64 k-iterations gives each about one, and then each stores a whole fp32 partial
    for one k-step of work and the reduction sums 66 of them a tile (an H200 ran 2418x3584x4096
    in 128x256 tiles so at 49.5 % of cuBLAS, and at 88.7 % with the bound; docs/design.md,
    "Stream-K").

    Work units, as both roles of a program walk them: unit u = p, p + programs, ... below
    ``units``; u < dp_tiles is a whole tile, the others are segment (u - dp_tiles) // programs
    of program p (possibly empty: then nothing is loaded, computed or stored).
    """

    tiles: int
    k_tiles: int
    programs: int
    min_iters: int = SK_MIN_ITERS

    @property
    def dp_tiles(self) -> int:
        return (self.tiles // self.programs) * self.programs

    @property
    def sk_tiles(self) -> int:
        return self.tiles - self.dp_tiles

    @property
    def sk_iters(self) -> int:
        return self.sk_tiles * self.k_tiles

    @property
    def tail_programs(self) -> int:
        """The programs that share the tail: ``sk_iters // min_iters``, within ``sk_tiles``
        (no program more than one tile's worth) and ``programs`` (0 without a tail)."""
        return _tail_programs(self.sk_tiles, self.k_tiles, self.programs, self.min_iters)

    @property
    def units(self) -> int:
        return self.dp_tiles + (2 * self.programs if self.sk_tiles else 0)

    def begin(self, p: int) -> int:
        """First tail iteration of program ``p`` (``sk_iters`` from ``tail_programs`` on)."""
        s = self.tail_programs
        return min(p, s) * self.sk_iters // s if s else 0

    def unit(self, u: int) -> tuple[int, int, int, int]:
        """(tile, first k-tile, end k-tile, workspace slot or -1) of work unit ``u``; an empty
        segment has first == end."""
        if u < self.dp_tiles:
            return u, 0, self.k_tiles, -1
        v = u - self.dp_tiles
        segment, p = divmod(v, self.programs)
        lo, hi = self.begin(p), self.begin(p + 1)
        boundary = (lo // self.k_tiles + 1) * self.k_tiles  # end of the tile p starts in
        if segment == 0:
            start, end = lo, min(hi, boundary)
        else:
            start, end = boundary, max(hi, boundary)
        tile = min(start // self.k_tiles, self.sk_tiles - 1)
        # min: a program past tail_programs starts at sk_iters, and its empty segment 1 a
        # tile further (the kernels skip an empty unit before they use its range)
        k_lo = min(start - tile * self.k_tiles, self.k_tiles)
        return self.dp_tiles + tile, k_lo, k_lo + (end - start), v

    def contributors(self, r: int) -> list[tuple[int, int]]:
        """(program, workspace slot) of every partial of tail tile ``r`` (0-based among the
        tail tiles), in the order the reduction adds them."""
        first_it = r * self.k_tiles
        p_first, p_last = _programs_over(r, self.k_tiles, self.tail_programs, self.sk_iters)
        out = []
        for p in range(p_first, p_last + 1):
            if self.begin(p) == self.begin(p + 1):
                continue  # an empty program wrote nothing
            segment = 0 if self.begin(p) >= first_it else 1
            out.append((p, segment * self.programs + p))
        return out

    def most_contributors(self) -> int:
        """The most partials any tail tile sums: the reduction adds them one after another,
        so its latency grows with this count (0 without a tail)."""
        return _most_contributors(self.sk_tiles, self.k_tiles, self.tail_programs)

    def max_iters(self) -> int:
        """k-iterations of the busiest program."""
        dp = (self.dp_tiles // self.programs) * self.k_tiles
        return dp + (cdiv(self.sk_iters, self.tail_programs) if self.sk_tiles else 0)


def _tail_programs(sk_tiles: int, k_tiles: int, programs: int, min_iters: int) -> int:
    """:attr:`StreamK.tail_programs`; the kernels compute the same in their schedules."""
    return max(min(programs, sk_tiles * k_tiles // min_iters), sk_tiles)


def _programs_over(r: int, k_tiles: int, shared: int, sk_iters: int) -> tuple[int, int]:
    """(first, last) program whose tail share overlaps tail tile ``r``, the tail shared by
    ``shared`` programs: the program covering iteration x is the last p with
    ``p * sk_iters // shared <= x``."""
    first_it, end_it = r * k_tiles, (r + 1) * k_tiles
    return ((first_it + 1) * shared - 1) // sk_iters, (end_it * shared - 1) // sk_iters


@functools.cache
def _most_contributors(sk_tiles: int, k_tiles: int, shared: int) -> int:
    """:meth:`StreamK.most_contributors`, cached: the cost model asks it for every stream-K
    config it prices, and a fit prices each thousands of times."""
    spans = (_programs_over(r, k_tiles, shared, sk_tiles * k_tiles) for r in range(sk_tiles))
    return max((last - first + 1 for first, last in spans), default=0)


# -- the cost model --------------------------------------------------------------------------
#: Fraction of an SM's peak MMA rate a CTA tile (wgmma rows, cols) reaches: a larger tile
#: keeps more wgmma work in flight per byte it waits for.
HOPPER_TILE_EFFICIENCY: Mapping[tuple[int, int], float] = {
    (128, 256): 0.755,
    (128, 192): 0.759,  # not timed yet: between its neighbours 128x160 and 128x256
    (128, 160): 0.763,
    (128, 128): 0.758,
    (128, 64): 0.557,
    (128, 32): 0.328,
    (128, 16): 0.249,
    (64, 256): 0.705,
    (64, 192): 0.621,  # not timed yet: between its neighbours 64x160 and 64x256
    (64, 160): 0.537,
    (64, 128): 0.720,
    (64, 64): 0.435,
    (64, 32): 0.314,
    (64, 16): 0.230,
}


def _interpolated(table: Mapping[tuple[int, int], float], tm: int, tn: int) -> float:
    """A tile's efficiency from ``table``: its own entry, else linear in the width between
    the nearest entries of the same row count (the nearest one beyond the table's ends); a
    row count the table lacks takes the nearest row count's (the fewer rows on a tie)."""
    if (tm, tn) in table:
        return table[(tm, tn)]
    widths = sorted(c for r, c in table if r == tm)
    if not widths:
        rows = {r for r, _ in table}
        if not rows:
            raise KeyError("an empty tile-efficiency table")
        return _interpolated(table, min(rows, key=lambda r: (abs(r - tm), r)), tn)
    lo = max((w for w in widths if w < tn), default=None)
    hi = min((w for w in widths if w > tn), default=None)
    if lo is None or hi is None:
        return table[(tm, lo if hi is None else hi)]
    t = (tn - lo) / (hi - lo)
    return (1 - t) * table[(tm, lo)] + t * table[(tm, hi)]


@dataclass(frozen=True)
class TileCostModel:
    """A config's time as a roofline of three terms plus overheads:

    * **MMA**: the busiest program's k-steps (whole waves of tiles, split-K's ranges, or
      stream-K's even share) x one k-step of the tile at its efficiency;
    * **cold stream**: the bytes an SM loads that no other CTA loaded before it (a box of A is
      shared by the tiles of its row, a box of B by those of its column) at what one SM pulls
      from DRAM — what bounds decode, where every CTA streams its own slice of the weights;
    * **DRAM**: A, B and D once.

    The pipeline overlaps the three imperfectly: the largest plus ``overlap_loss`` of the
    others. Each work unit a program runs costs ``unit_s`` (ring refill, epilogue); a kernel
    costs ``launch_s``. Split-K adds the reduce kernel (launch + the fp32 workspace's round
    trip); stream-K adds each program's partial tiles (stored from registers) and the reduce
    (its traffic, and ``reduce_step_s`` per partial its busiest tile adds in turn).
    A grid smaller than the GPU runs its MMAs ``idle_boost`` faster per fraction of SMs idle.
    The constants are fitted (:func:`fit`); docs/design.md says on what.
    """

    num_sms: int = 132
    peak_flops: float = 989e12  # dense fp16/bf16, datasheet
    hbm_bytes_per_s: float = 6.16e12
    sm_stream_bytes_per_s: float = 137e9
    sm_store_bytes_per_s: float = 1.4e14
    reduce_launch_s: float = 4.53e-6
    launch_s: float = 3.67e-6
    unit_s: float = 2.28e-6
    overlap_loss: float = 0.411
    cluster2_gain: float = 1.0
    #: MMA rate of a swapped tile wider than the narrow covers (M on the wgmma N side, D
    #: stored transposed) relative to the same tile unswapped.
    swap_gain: float = 1.0
    #: A wide swapped tile's rate in a 2-CTA cluster against one CTA, on top of
    #: ``cluster2_gain``: a swapped pair multicasts the kernel's narrow operand (D's A, M x K,
    #: which L2 already holds for every tile of its rows), so the pair saves little traffic and
    #: pays its cross-CTA barriers — how much is the kernel's (Gluon's pairs ran 2.2 % slower
    #: than one CTA in 80 of 102 timed pairs; CuTeDSL's ran 4.3 % faster while its one CTA
    #: launched as a 1x1x1 cluster, and fit to 0.954 once it launched plainly).
    swap_cluster2_gain: float = 1.0
    #: MMA rate gained per fraction of the SMs a grid leaves idle (a grid of half the SMs runs
    #: each at 1 + idle_boost / 2 the rate): a partial wave draws less power, so the SMs that
    #: run it clock higher on a power-limited GPU and share L2 and DRAM among fewer. 0 = none.
    idle_boost: float = 0.0
    #: Stream-K's reduction, per partial its busiest tail tile adds: a reduce block loads its
    #: partials one after another (a loop over the contributing programs), so with few tail
    #: tiles and many contributors each it waits out one DRAM round trip per partial that
    #: the bandwidth term (``hbm_bytes_per_s``) does not see. 0 = none.
    reduce_step_s: float = 0.0
    efficiency: Mapping[tuple[int, int], float] = field(
        default_factory=lambda: dict(HOPPER_TILE_EFFICIENCY)
    )
    #: An unswapped tile's own efficiency (``ueff:RxC``), where a kernel runs it at another
    #: rate than the wide swap of that size whose timings fit the shared ``efficiency`` entry
    #: (Gluon's unswapped widths of two boxes, 160 and 192, whose D leaves through two TMA
    #: boxes side by side). A backend names such tiles in its constants; absent = the shared
    #: entry, as every tile of a kernel that runs both orientations alike.
    unswapped_efficiency: Mapping[tuple[int, int], float] = field(default_factory=dict)

    def seconds(self, problem: Problem, config: GemmConfig, block_k: int = 64) -> float:
        """Estimated time of ``problem`` (D[M, N] = A[M, K] B[N, K]^T) under ``config``."""
        m, n, k = problem.m, problem.n, problem.k
        elem = element_size(problem.dtype)
        tm, tn = config.tile_m, config.tile_n
        rows, cols = config.oriented(problem)
        tiles = config.tiles(problem)
        programs = self.num_sms // config.cluster
        k_tiles = cdiv(k, block_k)
        reduce = 0.0
        sk = config.schedule(problem, self.num_sms, block_k)
        if config.stream_k:
            steps = sk.max_iters()
            units = sk.dp_tiles // programs + (2 if sk.sk_tiles else 0)
            if sk.sk_tiles:
                partial = config.tile_rows * tn * 4
                slots = sk.tail_programs + sk.sk_tiles  # segments written (at most)
                store = 2 * (partial // config.cluster) / self.sm_store_bytes_per_s
                reduce = store + self.reduce_launch_s + 2 * slots * partial / self.hbm_bytes_per_s
                reduce += sk.most_contributors() * self.reduce_step_s
        else:
            s = config.split_k
            per_program = cdiv(tiles * s, programs)
            steps = per_program * cdiv(k_tiles, s)
            units = per_program
            if s > 1:
                workspace = s * m * n * 4
                reduce = self.reduce_launch_s + 2 * workspace / self.hbm_bytes_per_s
        own = None if config.swap_ab else self.unswapped_efficiency.get((tm, tn))
        eff = self.tile_efficiency(tm, tn) if own is None else own
        if config.cluster == 2:
            eff *= self.cluster2_gain * (self.swap_cluster2_gain if config.wide_swap else 1.0)
        eff *= self.swap_gain if config.wide_swap else 1.0
        if not config.stream_k:  # stream-K's grid is every SM
            eff *= 1.0 + self.idle_boost * max(0.0, 1.0 - config.ctas(problem) / self.num_sms)
        mma = steps * 2 * tm * tn * block_k / (eff * self.peak_flops / self.num_sms)
        row_tiles, col_tiles = cdiv(rows, tm), cdiv(cols, tn)
        cold = (tm / col_tiles + tn / row_tiles) * block_k * elem
        stream = steps * cold / self.sm_stream_bytes_per_s
        dram = (m * k + n * k + m * n) * elem / self.hbm_bytes_per_s
        if config.stream_k:
            # The tail's programs start at staggered k offsets, so no two tiles read the same
            # k-slice of A or B at once: the tail's operands come from DRAM tile by tile
            # (measured: a long-K tail turns DRAM-bound, e.g. 828x4096x14336 at half speed).
            tail = sk.sk_iters * (config.tile_rows + tn) * block_k * elem
            dram += tail / self.hbm_bytes_per_s
        terms = (mma, stream, dram)
        body = max(terms) + self.overlap_loss * (sum(terms) - max(terms))
        return self.launch_s + body + units * self.unit_s + reduce

    def predicted_waves(self, problem: Problem, config: GemmConfig, block_k: int = 64) -> float:
        """The busiest program's work in whole-tile units (1.0 = one tile's K loop): waves of
        tiles, split-K's share, or stream-K's data-parallel waves plus its fraction."""
        k_tiles = cdiv(problem.k, block_k)
        if config.stream_k:
            return config.schedule(problem, self.num_sms, block_k).max_iters() / k_tiles
        programs = self.num_sms // config.cluster
        per_program = cdiv(config.tiles(problem) * config.split_k, programs)
        return per_program * cdiv(k_tiles, config.split_k) / k_tiles

    def tile_efficiency(self, tile_m: int, tile_n: int) -> float:
        """The tile's fraction of peak MMA rate: its fitted entry, or interpolated in the
        width between its fitted neighbours (a tile no tuning run timed yet)."""
        return _interpolated(self.efficiency, tile_m, tile_n)

    # -- fitting ------------------------------------------------------------------------------
    def with_params(self, params: Mapping[str, float]) -> TileCostModel:
        """This model with named constants replaced; ``eff:RxC`` names a tile's efficiency,
        ``ueff:RxC`` an unswapped tile's own (``unswapped_efficiency``)."""
        tables = {"eff": dict(self.efficiency), "ueff": dict(self.unswapped_efficiency)}
        scalars: dict[str, float] = {}
        for name, value in params.items():
            kind, _, tile = name.partition(":")
            if tile and kind in tables:
                r, c = tile.split("x")
                tables[kind][(int(r), int(c))] = value
            else:
                scalars[name] = value
        return dataclasses.replace(
            self, efficiency=tables["eff"], unswapped_efficiency=tables["ueff"], **scalars
        )

    def without_own(self, tile_m: int, tile_n: int) -> TileCostModel:
        """This model without the unswapped ``tile_m x tile_n`` tile's own efficiency (its
        ``ueff:`` entry): the tile is priced as the shared entry again, and a kernel that
        keeps such a tile tune-only until it has one of its own (Gluon's ``_variant``) drops
        it from its picks. What a heuristic picks under it is the pick it would make without
        that tile (Gluon's rung 8, README, "Twenty-eighth version")."""
        own = {t: v for t, v in self.unswapped_efficiency.items() if t != (tile_m, tile_n)}
        return dataclasses.replace(self, unswapped_efficiency=own)

    def params(self) -> dict[str, float]:
        """The fitted constants by name (the inverse of :meth:`with_params`)."""
        out = {name: float(getattr(self, name)) for name in _FITTED}
        out.update({f"eff:{r}x{c}": v for (r, c), v in sorted(self.efficiency.items())})
        out.update({f"ueff:{r}x{c}": v for (r, c), v in sorted(self.unswapped_efficiency.items())})
        return out


#: Scalar constants :func:`fit` adjusts (with every tile efficiency).
_FITTED = (
    "hbm_bytes_per_s",
    "sm_stream_bytes_per_s",
    "sm_store_bytes_per_s",
    "reduce_launch_s",
    "launch_s",
    "unit_s",
    "overlap_loss",
    "cluster2_gain",
    "swap_gain",
    "swap_cluster2_gain",
    "idle_boost",
    "reduce_step_s",
)

#: Where :func:`fit` starts a constant that is 0 in its base (a log-scale step cannot leave 0).
_FIT_START = {"idle_boost": 0.1, "reduce_step_s": 5e-7}

#: The machine the rung-8 heuristics count against (the launch itself uses the real SM count).
HOPPER = TileCostModel()


# -- ranking and choice ------------------------------------------------------------------------
def ranked(
    problem: Problem,
    menu: Iterable[C],
    valid: Callable[[Problem, C], str | None],
    *,
    variant: Callable[[Problem, C], bool] = lambda p, c: False,
    model: TileCostModel = HOPPER,
    block_k: int = 64,
) -> list[C]:
    """Every valid config of ``menu``, cheapest first by ``model`` (what ``bench --tune
    --tune-top`` times first); the ``variant`` ones (knobs the model cannot see, e.g. raster
    or group) after all the others; ties go to the larger tile, then cluster 2, then the
    simpler K decomposition (no split, no stream-K)."""
    valid_configs = [c for c in menu if valid(problem, c) is None]
    key = {
        c: (
            variant(problem, c),
            model.seconds(problem, c, block_k),
            -c.tile_m * c.tile_n,
            -c.cluster,
            c.split_k,
            c.stream_k,
        )
        for c in valid_configs
    }
    return sorted(valid_configs, key=key.__getitem__)


def cheapest(
    problem: Problem,
    menu: Iterable[C],
    valid: Callable[[Problem, C], str | None],
    allowed: Callable[[C], bool],
    **kw: Any,
) -> C:
    """The first of :func:`ranked` that ``allowed`` accepts (ValueError if none)."""
    for c in ranked(problem, menu, valid, **kw):
        if allowed(c):
            return c
    raise ValueError(f"no allowed config for {problem.key}")


def explain(
    problem: Problem,
    chosen: C,
    menu: Iterable[C],
    valid: Callable[[Problem, C], str | None],
    allowed: Callable[[C], bool],
    *,
    model: TileCostModel = HOPPER,
    block_k: int = 64,
) -> str:
    """Why a heuristic (:func:`cheapest` over the same ``menu``, ``valid`` and ``allowed``)
    chose ``chosen``, one line: its tiles, the busiest program's waves and the model's time,
    then the cheapest other valid, allowed config and how much slower the model thinks it
    is; where the model ranks that one first, or ``chosen`` is not among the allowed (a rule
    applied after the model, e.g. :func:`whole_wave_transpose`, replaced the pick), that a
    rule chose against it. E.g. ``288 tiles, 2.19 waves, model 181 us; next 128x136 c2 swap
    sk +1% (model)``."""
    t = model.seconds(problem, chosen, block_k)
    waves = model.predicted_waves(problem, chosen, block_k)
    line = f"{chosen.tiles(problem)} tiles, {waves:.2f} waves, model {t * 1e6:.0f} us"
    others = [c for c in menu if c != chosen and valid(problem, c) is None and allowed(c)]
    if not others:
        return line + "; no other config allowed"
    best = min(others, key=lambda c: model.seconds(problem, c, block_k))
    ratio = model.seconds(problem, best, block_k) / t
    if ratio < 1 or not allowed(chosen):
        return f"{line}; by rule over {best.label}, {ratio - 1:+.0%} (model)"
    return f"{line}; next {best.label} {ratio - 1:+.0%} (model)"


NARROW = (16, 32, 64)  # the tile widths that cover a short side
MIN_K_PER_SPLIT = 512  # a split must keep this much of K, or its reduce costs more than it saves
#: A K split pays only where the unsplit tiles fill less than this share of the SMs, at every
#: K: on a fuller grid the model undercharges the fp32 partials, their serial epilogue and the
#: reduce, and in the tuning runs a split beat the fastest unsplit config in 4 of 377 such
#: pairs (evidence: CuTeDSL README, "Twentieth version").
SPLIT_MAX_FILL = 0.5
#: Nor at K up to this, whatever the fill: each split's K loop is 64 k-steps or fewer, too
#: short to hide its fp32 partials' store, and the reduce kernel is a tenth or more of the
#: whole (tuning runs: a split beat the fastest unsplit config at none of CuTeDSL's 59 such
#: problems; CuTeDSL README, "Twenty-first version"). A kernel whose decode splits do pay
#: declares the M up to which they still run (``heuristic_allows``'s ``short_k_split_rows``).
SPLIT_SHORT_K = 8192
#: At M <= 32 and K > ``SPLIT_SHORT_K``, no K split where the unsplit 64-row cover (one CTA
#: per 64 rows of N) fills this share of the SMs or more: each such CTA streams its slice of
#: the weights at about one SM's rate, and from about this many of them on the unsplit grid
#: pulls as much from DRAM as a split one, which adds its fp32 partials and the reduce kernel.
#: The model puts such a split 1-10 % ahead of the unsplit cover; measured it is behind. At N =
#: 4096, K = 14336 (64 CTAs) 128x16 split 4 ran 0.92-0.95 of cuBLAS in every CuTeDSL run on
#: both GPUs where the 64x16 cover unsplit ran 0.97-1.04 (Gluon: 0.86-0.93 split, 0.93-0.98
#: unsplit); forced side by side on an H100 the unsplit cover took 8-12 % less time at 64 and
#: 72 CTAs (N = 4096, 4608). At 56 (N = 3584) it did on the H100 too, but on the H200, whose
#: DRAM outpaces 56 SMs' streams, it tied the best split (CuTeDSL README, "Twenty-third
#: version"): the share stays above it. At 32 < M <= 64 a kernel that runs split covers
#: (``heuristic_allows``'s ``split_covers``) counts the cover it would run (:func:`cover_ctas`),
#: within one wave: on an H100 the unswapped picks split four ways ran 90.1-96.3 % of cuBLAS at
#: 42-57 x 3584-5120 x 13824-14336 where the swapped 64x32 or 128x32 unsplit ran 101.5-110.1 %
#: (112-128 CTAs; CuTeDSL README, "Survey AW"). A/B AY decides it.
COVER_SPLIT_MAX_FILL = 0.45


def swap_cover(problem: Problem) -> int | None:
    """The narrowest of ``NARROW`` that covers M when swap-AB pays (M <= 64 < N), else None:
    N then fills the wgmma rows and M the narrow side, whose padding a wider tile would waste."""
    if not problem.m <= 64 < problem.n:
        return None
    return next(w for w in NARROW if w >= problem.m)


#: The split covers a kernel may run at 32 < M <= 64 (:func:`split_cover`): swapped
#: tiles narrower than the 64-column cover, M in several column tiles, as (rows, width).
SPLIT_COVERS = ((64, 32), (128, 32), (128, 16))
#: The most column tiles a split cover takes: each re-reads its row tile's weights from L2, and
#: in four (58x3584x4096 as 128x16) it ran at 71.5 % of cuBLAS where two (64x32) ran 90.1 %
#: (H200, both with the serial epilogue; CuTeDSL tuning run ``tune-r8-random103``).
SPLIT_COVER_MAX_COLUMNS = 3


def split_cover(
    problem: Problem,
    chosen: C,
    covers: Sequence[tuple[int, int]] = SPLIT_COVERS,
    num_sms: int = HOPPER.num_sms,
) -> C | None:
    """The split cover that replaces ``chosen`` at 32 < M <= 64, or None: where the model
    picked the unsplit 64-column swapped cover (``chosen``), the one of ``covers`` whose CTAs
    fill the most of one wave, if no fewer than the cover's, in at most
    ``SPLIT_COVER_MAX_COLUMNS`` column tiles (ties: fewer column tiles, then more rows).

    A rule the model does not see: each CTA of a narrow cover streams its slice of the
    weights, and the cover's CTA streams it slower than a 128-row CTA of half its width,
    though the model prices the two alike (the same cold bytes a k-step, less MMA work):
    36x8192x8192, 128 CTAs either way, 64x64 took 47.0 us, 128x32 41.7 (85.4 against 96.2 %
    of cuBLAS, H200). Over one wave a split cover loses (36x8192x8192 as 128x16, 192 CTAs:
    78.3 %). A kernel opts in by applying it to its pick, with the split covers it has timed
    (the default: CuTeDSL's, README "Twenty-seventh version")."""
    if swap_cover(problem) != 64 or not chosen.swap_ab or chosen.tile_n != 64:
        return None
    if chosen.split_k > 1 or chosen.stream_k or chosen.cluster != 1:
        return None
    floor = chosen.ctas(problem)

    def key(c: C) -> tuple[int, int, int]:
        return (c.ctas(problem), -cdiv(problem.m, c.tile_n), c.tile_m)

    fits = [
        c
        for c in (dataclasses.replace(chosen, tile_m=tm, tile_n=tn) for tm, tn in covers)
        if floor <= c.ctas(problem) <= num_sms
        and cdiv(problem.m, c.tile_n) <= SPLIT_COVER_MAX_COLUMNS
    ]
    return max(fits, key=key) if fits else None


def cover_ctas(
    problem: Problem,
    covers: Sequence[tuple[int, int]] = (),
    num_sms: int = HOPPER.num_sms,
) -> int:
    """The CTAs of the unsplit swapped cover a kernel runs at M <= 64 < N: one per 64 rows of N
    (the 64-row cover), or at 32 < M <= 64 for a kernel that applies :func:`split_cover` with
    ``covers``, the split cover's that rule would run in its place."""
    cover = GemmConfig(64, 64, 1, swap_ab=True)
    return (split_cover(problem, cover, covers, num_sms) or cover).ctas(problem)


def unsplit_twin(problem: Problem, chosen: C) -> C | None:
    """The 64-row unsplit twin that replaces ``chosen``, a 128-row wide swapped tile split
    two ways (one CTA), or None: the same width, the same CTAs (N / 128 row tiles, two
    splits each, against N / 64 row tiles) and the same MMA work a CTA (128 rows of half of K
    against 64 rows of all of it), without the fp32 partials, their serial epilogue and the
    reduce kernel. The model prices the 64-row tile's MMA rate below the 128-row tile's and
    so puts the split ahead; timed side by side the twin ran faster at 5 of Gluon's 6
    tuning shapes (H200: 150x4096x14336 101.4 against 95.3 % of cuBLAS, 74x5120x27648 99.2
    against 95.7; 79x4608x36864 the exception, 94.1 against 95.8: Gluon README, "Nineteenth
    version"). A split four ways doubles the twin's CTAs and stays the model's to weigh. A
    kernel opts in by applying it to its pick where its heuristic allows the twin."""
    if not (chosen.wide_swap and chosen.tile_m == 128 and chosen.split_k == 2):
        return None
    if chosen.stream_k or chosen.cluster != 1:
        return None
    return dataclasses.replace(chosen, tile_m=64, split_k=1)


#: A wide swapped tile's width: M's share of its column tiles, rounded up to this — the wgmma
#: N step (8 for fp16/bf16), as cuBLAS's own swapped tiles do on Hopper (667x4096x14336: its
#: kernel's tile is 128x168, M in 4 x 168; docs/design.md, "Why wide swapped tiles").
SWAP_ALIGN = 8
#: The most column tiles a wide swapped config splits M into (beyond, M is no short side).
MAX_SWAP_COLUMNS = 8


#: The wide swapped widths of a kernel that can run every multiple of ``SWAP_ALIGN`` above the
#: narrow covers, up to wgmma's largest N: 72..256.
SWAP_WIDTHS = tuple(range(max(NARROW) + SWAP_ALIGN, 256 + 1, SWAP_ALIGN))


def swap_fits(problem: Problem, tile_n: int, widths: Sequence[int] = SWAP_WIDTHS) -> bool:
    """A swapped tile wider than ``NARROW`` fits ``problem`` when M (> 64, shorter than N) is
    its short side and the width is the narrowest of the kernel's ``widths`` that holds M's
    share of the column tiles it takes, rounded up to ``SWAP_ALIGN``: with every multiple of 8
    (the default), 338 rows as 2 x 176 or 3 x 120, not 3 x 128 or 2 x 184 (padding is MMA
    work); a kernel with fewer widths (Gluon's sums of two powers of two) pads to the next one
    it has: 338 as 2 x 192."""
    m = problem.m
    if not max(NARROW) < m < problem.n or tile_n <= max(NARROW) or tile_n not in widths:
        return False
    columns = cdiv(m, tile_n)
    share = cdiv(cdiv(m, columns), SWAP_ALIGN) * SWAP_ALIGN
    if columns > MAX_SWAP_COLUMNS or share < min(widths):
        return False  # (a share narrower than every width: fewer, wider columns fit better)
    return tile_n == min(w for w in widths if w >= share)


def one_wave_rows(
    problem: Problem,
    c: GemmConfig,
    rows: int,
    widths: Sequence[int],
    num_sms: int = HOPPER.num_sms,
    min_fill: float = 0.0,
) -> bool:
    """Whether the heuristic may pick ``c`` before the model ranks, as far as a row count
    between the two-warpgroup tiles goes: a tile of ``rows`` rows (three consumer warpgroups
    at 192) only alone, at a width among ``widths`` (those its backend's A/B timed winning),
    and where its tiles fit one wave, filling at least ``min_fill`` of it; any other row count
    passes.

    What such a tile buys is the one wave that 128- and 256-row tiles leave part-empty or
    overfill (H200: 400x6144x4096 as 128 tiles of 192x104 at 103.9 % of cuBLAS, 96 of
    128x200 at 85.9 %; 414x6144x6144 as 192x128 at 83.4 %, 256x96 at 73.0 %). The model's
    192-row rates are fitted on one-wave shapes, and over two waves or more the 128-row tile
    ran faster at each shape timed (300x14336x4096: 100.0 against 97.3 %), and no pair of
    192-row CTAs ran faster than one (CuTeDSL README, "Twenty-sixth version"; Gluon README,
    "Eighteenth version"). Over whole waves :func:`whole_wave_swap` may still take one after
    the model."""
    if c.tile_m != rows:
        return True
    ctas = c.ctas(problem)
    return c.cluster == 1 and c.tile_n in widths and min_fill * num_sms <= ctas <= num_sms


#: The least share of its last wave a :func:`whole_wave_swap` tile's tiles must fill: at 0.91
#: (384 tiles on 132 SMs) and 1.0 the 192-row tile beat stream-K at each shape timed; at 0.27
#: to 0.53 it lost to it (CuTeDSL README, "Twenty-eighth version").
WHOLE_WAVE_FILL = 0.9
#: The most column tiles a :func:`whole_wave_swap` tile splits M into: each re-reads its row
#: tile's B from L2, and the tiles timed were in two (M 133-184, as 192x72..192x96).
WHOLE_WAVE_MAX_COLUMNS = 2


def whole_wave_swap(
    problem: Problem,
    chosen: C,
    rows: int,
    widths: Sequence[int],
    num_sms: int = HOPPER.num_sms,
) -> C | None:
    """The swapped tile of ``rows`` rows that replaces ``chosen``, a stream-K wide swap, or
    None: the one of the fewest column tiles (``WHOLE_WAVE_MAX_COLUMNS`` at most) whose width
    :func:`swap_fits` among ``widths`` and whose tiles fill two waves or more with at least
    ``WHOLE_WAVE_FILL`` of the last, unsplit on one CTA (the kernel's raster and epilogue as
    ``chosen``'s).

    A rule the model does not see: stream-K evens out a partial last wave but costs its
    partial tiles and the reduce, and a row count whose tiles fill whole waves needs neither;
    the model prices the 192-row tiles from one-wave shapes and ranks them first at two waves
    and more, where they lose unless their waves are whole (H200: 133x37888x3584 as 192x72,
    396 tiles, 111.8 % of cuBLAS against stream-K's 99.2 %; 183x57344x8192 as 192x96, 598
    tiles, 97.8 against 106.3). cuBLAS runs the same tiles there (``nvjet_sm90_hsh_192x96``
    at 184x37888x3584 and 180x36864x7168, ``192x88`` at 169x36864x4608). A kernel opts in by
    applying it to its pick, with the row count and widths it has."""
    if not (chosen.stream_k and chosen.wide_swap):
        return None
    for tn in sorted(widths, key=lambda w: (cdiv(problem.m, w), w)):
        if cdiv(problem.m, tn) > WHOLE_WAVE_MAX_COLUMNS or not swap_fits(problem, tn, widths):
            continue
        c = dataclasses.replace(chosen, tile_m=rows, tile_n=tn, cluster=1, stream_k=False)
        tiles = c.tiles(problem)
        last = tiles % num_sms
        if tiles >= 2 * num_sms and (last == 0 or last >= WHOLE_WAVE_FILL * num_sms):
            return c
    return None


#: The M a :func:`whole_wave_transpose` may change: the band its A/B timed (H200, M 1107-4736
#: at N 2112-5120), where unswapped 128-row tiles leave a wave part-empty and cuBLAS runs M on
#: the wgmma N side (``nvjet_sm90_hsh_128x288`` at 3906x7168x5120, 192x176 at 4200x3072x3072).
TRANSPOSE_M = (1024, 5120)
#: The least share of its waves' SM time an unswapped pick must waste (:func:`wasted_share`:
#: idle slots and padding past M and N) for :func:`whole_wave_transpose` to replace it. On the
#: H200 tuning shapes every pick a whole-wave swap beat wasted 0.10-0.19 (4736x3072x3072's
#: 128x192 pair 0.10: 101.1 -> 108.9 % of cuBLAS; 1811x6144x6144's 128x256 pair 0.14, its
#: waves whole but for 3 %: 92.4 -> 101.4, 128x168 swapped); where the pick wasted 0.06-0.08
#: no swap won clearly (1116x8192x8192, 1981x4096x14336, 2597x8192x3584: within a point;
#: 3101x10240x8192: 96.2, 128x176 swapped 93.3; 1756x4608x36864: 91.6, 128x160 swapped 86.3,
#: 90.2 and 99.2 in one run); 4096^3 and 8192^3 (rung 7's tile) waste 0.03. The thirtieth
#: version counted idle slots alone (>= 0.05), which let 1811's pair by.
TRANSPOSE_WASTE = 0.10
#: The least share of its waves' SM time a :func:`whole_wave_transpose` tile must fill (the
#: winners timed filled 0.97-1.00).
TRANSPOSE_FILL = 0.95
#: The most the model may price a :func:`whole_wave_transpose` tile over the pick it replaces:
#: it charges the pick's part-empty wave too little (1152x3072x3072: 128x256 modelled 42 us,
#: ran 48; 128x112 swapped modelled 48, ran 43, 14 % over the pick's estimate; 1107x5120x4096:
#: 128x88 swapped modelled 17 % over, ran 96.7 % of cuBLAS against the pick's 91.9), but a
#: narrow swap priced further over still loses (1248x2112x7168: 128x88 modelled 28 % over, ran
#: 82 % against the pick's 89).
TRANSPOSE_SLACK = 1.2
#: The least share of SM time a :func:`whole_wave_transpose` tile must waste less than the pick:
#: a swapped tile that fills the waves but pads M as much buys nothing (1084x3584x4096: 128x256,
#: one wave of 126 tiles, 0.10 wasted; 128x128 swapped, two waves of 252, 0.10 too). The timed
#: winners wasted 0.06-0.19 less.
TRANSPOSE_GAIN = 0.03


def _slots(config: GemmConfig, problem: Problem, num_sms: int) -> int:
    """Cluster-tile slots of ``config``'s unsplit waves on a persistent grid of one program per
    cluster: its tiles rounded up to whole waves."""
    programs = num_sms // config.cluster
    return cdiv(config.tiles(problem), programs) * programs


def idle_share(config: GemmConfig, problem: Problem, num_sms: int = HOPPER.num_sms) -> float:
    """The share of its waves' SM time ``config``'s unsplit tiles leave idle on a persistent grid
    of one program per cluster: 0 for whole waves, 24 / 132 for 108 tiles on 132 SMs."""
    slots = _slots(config, problem, num_sms)
    return (slots - config.tiles(problem)) / slots


def wasted_share(config: GemmConfig, problem: Problem, num_sms: int = HOPPER.num_sms) -> float:
    """The share of its waves' SM time ``config``'s unsplit tiles spend off D: the idle slots
    of :func:`idle_share` and the edge tiles' rows and columns past M and N (a pair pads M to
    twice its rows). 1811x6144x6144's 128x256 pair: 192 pair tiles in 3 waves of 66 leave 3 %
    idle, but M's 15 rows of 128 padded to 16 put 12 % of the rows past M: 14 % wasted."""
    rows, cols = config.oriented(problem)
    slot_area = config.tile_rows * config.tile_n
    return 1 - rows * cols / (_slots(config, problem, num_sms) * slot_area)


def whole_wave_transpose(
    problem: Problem,
    chosen: C,
    candidates: Iterable[C],
    seconds: Callable[[C], float],
    num_sms: int = HOPPER.num_sms,
) -> C | None:
    """The swapped tile that replaces ``chosen``, an unswapped unsplit tile wasting at least
    ``TRANSPOSE_WASTE`` of its waves' SM time (:func:`wasted_share`: idle slots, padding past M
    and N) at M in ``TRANSPOSE_M``, or None: the one the model (``seconds``) prices cheapest
    among ``candidates`` (the kernel's swapped tiles, unsplit, its structural rules kept) whose
    tiles fill ``TRANSPOSE_FILL`` of their waves and waste ``TRANSPOSE_GAIN`` less than
    ``chosen``'s, if within ``TRANSPOSE_SLACK`` of ``chosen``'s price.

    With M on the wgmma N side the tile's width may be any of the kernel's widths, so the
    tiles can fill whole waves where 128- or 256-column tiles of M cannot; :func:`swap_fits`
    refuses it (M is no short side), and the model, left to rank such tiles everywhere, would
    take them where the pick's waves are already whole (3456x3072x3072: 128x160 swapped priced
    4 % under 128x128, ran 1.8 points of cuBLAS behind); under one wave it prices the pick's
    idle SMs as clocking higher (``idle_boost``), hence the slack. H200, % of cuBLAS, pick ->
    this tile:
    1152x3072x3072 101.6 -> 112.4 (128x112), 1248x2112x7168 89.2 -> 107.5 (192x104, one wave),
    1728x3072x3072 83.7 -> 97.2 (128x160), 3072x3584x3584 87.0 -> 97.3 (128x224),
    4736x3072x3072 101.1 -> 108.9 (128x144) (CuTeDSL README, "Thirtieth version");
    1811x6144x6144 92.4 -> 101.4 (128x168; "Thirty-first version": the pick's waves whole but
    for 3 %, its pair tiles 12 % past M)."""
    if chosen.swap_ab or chosen.split_k > 1 or chosen.stream_k:
        return None
    if not TRANSPOSE_M[0] <= problem.m <= TRANSPOSE_M[1]:
        return None
    wasted = wasted_share(chosen, problem, num_sms)
    if wasted < TRANSPOSE_WASTE:
        return None
    fits = [
        c
        for c in candidates
        if c.swap_ab
        and c.split_k == 1
        and not c.stream_k
        and 1 - idle_share(c, problem, num_sms) >= TRANSPOSE_FILL
        and wasted_share(c, problem, num_sms) <= wasted - TRANSPOSE_GAIN
    ]
    if not fits:
        return None
    best = min(fits, key=lambda c: (seconds(c), -c.tile_n))
    return best if seconds(best) <= TRANSPOSE_SLACK * seconds(chosen) else None


#: L2 of an H100 and an H200 (50 MB): an operand larger than this comes from DRAM again on
#: every pass a tile order makes over it.
L2_BYTES = 50 * 2**20


def swap_raster(problem: Problem) -> str:
    """The raster of a wide swapped tile (M on the wgmma N side, up to ``MAX_SWAP_COLUMNS``
    column tiles): ``"m"`` — D's M, the kernel's columns, first — where B (N x K, the rows
    every column tile re-reads) outgrows L2, so the column tiles of one block of B share a
    wave and B comes from DRAM once; ``"n"`` — the kernel's rows first — where B stays in L2,
    which measured faster there (both orders in one H100 run: CuTeDSL README, "Fifth
    version")."""
    return "m" if problem.n * problem.k * element_size(problem.dtype) > L2_BYTES else "n"


def heuristic_raster(problem: Problem, config: GemmConfig) -> str:
    """The raster a heuristic runs ``config`` with: :func:`swap_raster` for a wide swap of up to
    ``MAX_SWAP_COLUMNS`` column tiles, else m (the tile order the cost model cannot see;
    backends pin their group likewise), as :func:`whole_wave_transpose`'s tiles of M in 11 to
    33 columns were timed."""
    if config.wide_swap and cdiv(problem.m, config.tile_n) <= MAX_SWAP_COLUMNS:
        return swap_raster(problem)
    return "m"


# -- rules that read the GPU ----------------------------------------------------------------
#: GPU models (a part of the name) where the rules below hold: the model their A/Bs ran on (the
#: 132-SM H100 SXM; an H100 PCIe has 114 SMs and other resident cluster counts). Elsewhere
#: each returns None and the pick stands.
RULE_GPUS = ("H100 80GB HBM3",)


def _rules_hold(gpu_name: str) -> bool:
    """Whether ``gpu_name`` is one of ``RULE_GPUS``."""
    return any(g in gpu_name for g in RULE_GPUS)


#: The narrowest :func:`whole_wave_transpose` tile an H100 keeps at N >= ``TRANSPOSE_KEEP_N``
#: (:func:`transpose_gives_way`): its transposes 144-224 wide held out at 96.9-101.9 % of cuBLAS.
TRANSPOSE_KEEP_WIDTH = 144
#: The N from which :func:`transpose_gives_way` applies: A/B AQ's narrow transposes won at all
#: five of its shapes of N <= 3584 and lost at four of the five of N >= 4096.
TRANSPOSE_KEEP_N = 4096
#: The most column tiles (``ceil(M / width)``) an H100 keeps a :func:`whole_wave_transpose` in
#: (:func:`transpose_gives_way`, any N). On the H100 all 24 records of the kernel's one-CTA
#: 128-row swaps at raster m in 18-33 columns ran 53.9-91.1 % of cuBLAS, and the best unswapped
#: tile timed beside each ran ahead at 21 of them and within 1.1 points at the other three
#: (86.2-102.8 %: A/B AK, AQ, BA, BB, BD and the small-N survey; the worst, 2828x8192x29568's
#: 128x144 in 20 columns, 53.9 % against the pair's 96.1 %). In 15-17 columns the four records
#: split: two ties, one swap 21 points behind, one 5.9 ahead (A/B BD, Survey AX), which is why
#: A/B BD's cap of 14 failed (0.900x the time, faster at 6 of 10, stop 104) and this one is 17.
TRANSPOSE_MAX_COLUMNS = 17


def transpose_gives_way(
    problem: Problem,
    chosen: C,
    gpu_name: str,
    untransposed: Callable[[Problem], C],
) -> tuple[C, str] | None:
    """On an H100, the pick a :func:`whole_wave_transpose` replaced (``untransposed``: the
    kernel's heuristic without it) in place of a transposed tile narrower than
    ``TRANSPOSE_KEEP_WIDTH`` at N >= ``TRANSPOSE_KEEP_N``, or one holding M in more than
    ``TRANSPOSE_MAX_COLUMNS`` column tiles at any N, at M in ``TRANSPOSE_M``; None elsewhere.

    At N = 5120 a 128-row transpose makes 40 row tiles by 13 column tiles of M, 520 tiles in
    four waves of 132, so M 1100-1700 all take 88-136-wide tiles there, which ran 74-81 % of
    cuBLAS on the H100 at K 4096-27648 (A/B AQ, and seed 256654's 1425x5120x5120 at 77.0 %);
    cuBLAS runs 256x112 swapped tiles in pairs at 1425x5120x5120. The narrow half was decided
    by A/B AR (CuTeDSL README, "A/B AR"): fixed after AQ's data (one H100 80GB HBM3, seed
    631442: the pick took 0.989x the transpose's time at any N, faster at 5 of 10; 0.902x at N
    >= 4096, 4 of 5) and before any of its own, on ten fresh shapes, and it held there (seed
    984756, all at N = 5120: the replaced pick took 0.899x the transpose's time, faster at 8 of
    10; 74-86 % of cuBLAS -> 75-95 %). The column half is A/B BE's, fixed at stop 104 after A/B
    BD's data and before any of its own (``TRANSPOSE_MAX_COLUMNS``), and held at stops 105 and
    106 (seed 419595: the replaced pair took 0.867x the transpose's time, faster at all ten;
    56.8-85.9 % of cuBLAS -> 83.2-95.5 %)."""
    if not _rules_hold(gpu_name):
        return None
    if not chosen.swap_ab:
        return None
    narrow = chosen.tile_n < TRANSPOSE_KEEP_WIDTH and problem.n >= TRANSPOSE_KEEP_N
    columns = cdiv(problem.m, chosen.tile_n)
    if not narrow and columns <= TRANSPOSE_MAX_COLUMNS:
        return None
    if not TRANSPOSE_M[0] <= problem.m <= TRANSPOSE_M[1]:
        return None
    pick = untransposed(problem)
    if pick == chosen or pick.swap_ab:
        return None
    why = (
        f"narrower than {TRANSPOSE_KEEP_WIDTH} at N >= {TRANSPOSE_KEEP_N}"
        if narrow
        else f"M in {columns} columns, more than {TRANSPOSE_MAX_COLUMNS}"
    )
    return pick, (
        f"the pick a {chosen.tile_m}x{chosen.tile_n} transpose replaced, on the {gpu_name} "
        f"({why}: tile_cost.transpose_gives_way)"
    )


#: Clusters of four CTAs a 132-SM Hopper holds at once (``cudaOccupancyMaxActiveClusters`` on
#: the H100 SXM and the H200): 30, not 132 // 4. More clusters of work than this run a second
#: round (1.8x the time at 32 clusters: CuTeDSL README, "A/B Z ran").
RESIDENT_CLUSTERS_OF_FOUR = 30
#: The M band :func:`four_cta_swap` holds in: where the A/B that decided it drew its shapes.
FOUR_CTA_M = (150, 450)
#: The widest tile :func:`four_cta_swap` moves (the four-CTA menus' widths: 72..128).
FOUR_CTA_MAX_WIDTH = 128


def four_cta_swap(problem: Problem, chosen: C, gpu_name: str) -> tuple[C, str] | None:
    """On an H100, the same tile in clusters of four CTAs for a heuristic's one-CTA wide swap
    of 128 rows, raster n (B, the weights, stays in L2: :func:`swap_raster`), at most
    ``FOUR_CTA_MAX_WIDTH`` wide, unsplit, at M in ``FOUR_CTA_M``, whose clusters of four fit
    the GPU at once (``RESIDENT_CLUSTERS_OF_FOUR``); None elsewhere. The four CTAs stack along
    N and share the narrow tile (M's column) by multicast, so each k-step moves 128 + W / 4
    rows through L2 instead of 128 + W, as cuBLAS's ``nvjet_sm90_hsh_128xW_64xS_4x1`` runs
    these shapes. Decided by A/B AA (one H100 80GB HBM3; ten fresh shapes drawn as held-out
    suites draw, seed 189292, before any timing; the rule fixed before the data): 0.914x the
    one-CTA time, faster at all ten, after A/B Y (0.952x, 9 of 10) and Z (faster at 11 of the
    12 raster-n picks of both, slower at all 6 raster-m ones). On the H200 four CTAs gained
    0-8 % and lost at long K: no rule there (CuTeDSL README, "Thirty-fifth version")."""
    if not _rules_hold(gpu_name):
        return None
    one_cta_swap = (
        chosen.wide_swap
        and chosen.tile_m == 128
        and chosen.cluster == 1
        and chosen.split_k == 1
        and not chosen.stream_k
        and chosen.raster == "n"
        and chosen.tile_n <= FOUR_CTA_MAX_WIDTH
    )
    if not one_cta_swap or not FOUR_CTA_M[0] <= problem.m <= FOUR_CTA_M[1]:
        return None
    four = dataclasses.replace(chosen, cluster=4)
    return _resident(
        problem, four, gpu_name, "four CTAs", "four", RESIDENT_CLUSTERS_OF_FOUR, "four_cta_swap"
    )


def _resident(
    problem: Problem, moved: C, gpu_name: str, what: str, size: str, limit: int, rule: str
) -> tuple[C, str] | None:
    """``moved`` with the reason ``rule`` gives for it, where its cluster tiles fit the
    ``limit`` clusters of ``size`` CTAs the GPU holds at once (a grid of more would run its
    clusters in waves the rule was not timed in); None where they do not."""
    clusters = moved.tiles(problem)
    if clusters > limit:
        return None
    return moved, (
        f"{what} on the {gpu_name} ({clusters} clusters of {size}, at most {limit} resident: "
        f"tile_cost.{rule})"
    )


#: Clusters of three CTAs a 132-SM H100 SXM holds at once (``cudaOccupancyMaxActiveClusters``
#: on the H100 80GB HBM3): 39, not 132 // 3. More clusters of work than this run a second round
#: (N = 5120's 40: CuTeDSL README, "Thirty-seventh version").
RESIDENT_CLUSTERS_OF_THREE = 39


def swap_clusters(problem: Problem, chosen: C, gpu_name: str) -> tuple[C, str] | None:
    """A rung 8's ``on_gpu`` rule for its wide swaps: :func:`four_cta_swap`'s move, and where
    that move's tile holds M in exactly three column tiles and the kernel has 2-D clusters (a
    ``cluster_n`` knob), one row tile by those three columns instead (``cluster=1,
    cluster_n=3``), provided its cluster tiles fit ``RESIDENT_CLUSTERS_OF_THREE``. The three
    CTAs of a row share the weights' tile by multicast, so the weights cross L2 once per row
    tile instead of once per column tile, the traffic that left the four-CTA pick at 1.8x
    cuBLAS's L2 reads (``ncu`` at 217x5120x4096: 145.5 MB against 82.7). Decided by A/B AI
    (one H100 80GB HBM3; ten fresh shapes, seed 139711, drawn before any timing, the rule
    fixed before the data): 0.880x the four-CTA time, faster at nine of ten, 90.4 % -> 102.8 %
    of cuBLAS (CuTeDSL README, "Thirty-seventh version"). Where the four-CTA move leaves the
    pick, :func:`fuller_wave_rows` may still move it to 192-row tiles that fill the wave (A/B
    AN, "Thirty-eighth version"), and a 64-row one, :func:`sixty_four_row_clusters`, to
    4x2 clusters (A/B AP, "Thirty-ninth version")."""
    moved = four_cta_swap(problem, chosen, gpu_name)
    if moved is None:
        return fuller_wave_rows(problem, chosen, gpu_name) or sixty_four_row_clusters(
            problem, chosen, gpu_name
        )
    if not hasattr(chosen, "cluster_n") or cdiv(problem.m, chosen.tile_n) != 3:
        return moved
    row = dataclasses.replace(chosen, cluster=1, cluster_n=3)
    what = "one row tile by M's three column tiles"
    return (
        _resident(
            problem, row, gpu_name, what, "three", RESIDENT_CLUSTERS_OF_THREE, "swap_clusters"
        )
        or moved
    )


#: The least share of one wave a :func:`fuller_wave_rows` tile must fill, and the most its
#: one-wave pick may: below this the pick leaves a tenth of the SMs idle.
FULLER_WAVE_FILL = 0.9
#: The widths :func:`fuller_wave_rows` may take: the narrow end of the 192-row tiles, those
#: cuBLAS runs on the H100 at M 270-300 (``nvjet_sm90_hsh_192x72_64x6_1x2`` at 275x6144x4096,
#: ``192x80`` at 296x6144x4096). Those two shapes keep their weights in L2 (raster n), where
#: the rule does not move the pick (A/B AM); A/B AN timed all four widths at raster m.
FULLER_WAVE_WIDTHS = (72, 80, 88, 96)


def fuller_wave_rows(
    problem: Problem,
    chosen: C,
    gpu_name: str,
    rows: int = 192,
    widths: Sequence[int] = FULLER_WAVE_WIDTHS,
    num_sms: int = HOPPER.num_sms,
) -> tuple[C, str] | None:
    """:func:`swap_clusters`' move where neither of its cluster moves applies: on an H100, a
    one-CTA, unsplit swapped pick of raster m (B, the weights, outgrows L2: :func:`swap_raster`)
    whose CTAs fill less than ``FULLER_WAVE_FILL`` of one wave becomes a ``rows``-row swapped
    tile of ``widths`` (one CTA, raster m) whose CTAs fill between that share and the whole wave
    (:func:`one_wave_rows`): the fewest column tiles of M, each the narrowest width that holds
    its share (:func:`swap_fits`). At 309x6144x16384 the pick's 128x160 tiles make 96 CTAs and
    192x80's make 128, as cuBLAS's ``192x80_64x6_1x2`` tiles do at 296x6144x4096.

    A/B AM tried it at any raster and failed (one H100, ten fresh shapes, seed 648325: 0.976x
    the pick's time, 6 of 10 faster). Its split was the raster: at the six raster-m picks the
    192-row tiles took 0.818-0.902x the time (78-85 % of cuBLAS -> 95-97 %), at the four raster-n
    ones (B in L2, K <= 4096) 1.08-1.25x. A/B AN, fixed before its data, decided the raster-m
    half (one H100 80GB HBM3; ten fresh shapes, seed 289642): **0.911x** the pick's time, faster
    at 8 of 10, 80.9-92.1 % of cuBLAS -> 97.4-106.4 % at the six N = 6144 shapes (CuTeDSL README,
    "Thirty-eighth version"). On the H200 (where none of these tiles is picked in one wave:
    ``ROWS_192_PICKED``) 192x80 lost to a 128-row pick that already filled the wave
    (222x8192x3584: 89.9 % of cuBLAS against 100.4 %)."""
    if not _rules_hold(gpu_name):
        return None
    one_cta = chosen.swap_ab and chosen.cluster == 1 and getattr(chosen, "cluster_n", 1) == 1
    if not one_cta or chosen.split_k != 1 or chosen.stream_k or chosen.tile_m == rows:
        return None
    if chosen.raster != "m":  # B in L2: A/B AM's 192-row tiles lost at all four such picks
        return None
    if chosen.ctas(problem) >= FULLER_WAVE_FILL * num_sms:  # also every pick of two waves or more
        return None
    for tn in sorted(widths, key=lambda w: (cdiv(problem.m, w), w)):
        if not swap_fits(problem, tn, widths):
            continue
        c = dataclasses.replace(chosen, tile_m=rows, tile_n=tn)
        if one_wave_rows(problem, c, rows, widths, num_sms, min_fill=FULLER_WAVE_FILL):
            return c, (
                f"{rows}-row tiles fill {c.ctas(problem)} of {num_sms} SMs on the {gpu_name} "
                f"where {chosen.tile_m}-row ones fill {chosen.ctas(problem)}: "
                "tile_cost.fuller_wave_rows"
            )
    return None


#: Clusters of eight CTAs (4x2) a 132-SM H100 SXM holds at once (``cudaOccupancyMaxActiveClusters``
#: on the H100 80GB HBM3, read at stops 93 and 94): 15, not 132 // 8. Sixteen clusters of work ran a
#: second round, 1.36-1.38x the one-CTA time (A/B AO: 291x4096x4096, 222x4096x4096).
RESIDENT_CLUSTERS_OF_EIGHT = 15
#: The widest 64-row tile :func:`sixty_four_row_clusters` moves: A/B AO's 4x2 tiles won at
#: widths 80-112 (0.875-0.977x the one-CTA time at five of five shapes) and tied or lost at 144
#: (1.006x, 1.040x).
SIXTY_FOUR_ROW_MAX_WIDTH = 112


def sixty_four_row_clusters(problem: Problem, chosen: C, gpu_name: str) -> tuple[C, str] | None:
    """:func:`swap_clusters`' move for a 64-row wide swap: on an H100, a one-CTA, unsplit,
    raster-n (B, the weights, in L2) swapped pick of 64 rows at most
    ``SIXTY_FOUR_ROW_MAX_WIDTH`` wide, holding M in an even number of column tiles, runs as the
    same tile in 4x2 clusters: four CTAs along N share M's column tile by multicast, each
    issuing a quarter of it, and the two columns of a row share the weights' 64 rows, so a
    k-step brings 64 / 2 + W / 4 rows a CTA through L2 instead of 64 + W, as cuBLAS's
    ``nvjet_sm90_hsh_64x112_64x9_4x2`` runs 212x3072x3072 on the H100; only where its cluster
    tiles fit the ``RESIDENT_CLUSTERS_OF_EIGHT`` the GPU holds at once, and only in a kernel
    with 2-D clusters (a ``cluster_n`` knob). A/B AO (stop 93) timed the wider rule (any width,
    4x1 at odd column counts) and it failed: 0.963x the one-CTA time over eight shapes, faster
    at five; the narrow 4x2 half of it is A/B AP's rule, which held (one H100 80GB HBM3, stop
    94; ten fresh shapes, seed 547331, drawn before any timing): **0.942x** the one-CTA time,
    faster at all ten, 86.3-96.1 % of cuBLAS -> 95.1-101.9 % (CuTeDSL README, "Thirty-ninth
    version")."""
    if not _rules_hold(gpu_name) or not hasattr(chosen, "cluster_n"):
        return None
    one_cta = (
        chosen.wide_swap
        and chosen.tile_m == 64
        and chosen.tile_n <= SIXTY_FOUR_ROW_MAX_WIDTH
        and chosen.cluster == 1
        and chosen.cluster_n == 1
        and chosen.split_k == 1
        and not chosen.stream_k
        and chosen.raster == "n"
    )
    columns = cdiv(problem.m, chosen.tile_n)
    if not one_cta or columns < 2 or columns % 2:
        return None
    moved = dataclasses.replace(chosen, cluster=4, cluster_n=2)
    return _resident(
        problem,
        moved,
        gpu_name,
        "64-row tiles in 4x2 clusters",
        "eight",
        RESIDENT_CLUSTERS_OF_EIGHT,
        "sixty_four_row_clusters",
    )


#: The M band :func:`padded_rows_swap` holds in: past ``PADDED_M`` and the 96 rows where an
#: unswapped 64-row tile pads exactly a quarter (Gluon's timed exception, below), up to three
#: 64-row tiles (the band Survey AS and the H200 tuning runs timed both ways: M 100-196).
PADDED_ROWS_M = (97, 192)
#: The least share of its rows an unswapped 64-row pick pads past M for
#: :func:`padded_rows_swap` to move it. Where the pick padded 17-27 % the swap won at every
#: shape timed (H100, Survey AS: 150x5120x4096 87.3 -> 107.0 % of cuBLAS, 151x4608x4096 92.0
#: -> 106.0; H200 tuning runs: 140x5120x4096 80.4 -> 99.5, 100x8192x4096 99.0 -> 104.5,
#: 106x6144x4096 96.4 -> 99.8); at 7-13 % it went both ways (H200: 168x5120x5120 99.0 against
#: 64x168 swapped's 85.8, 179x6144x6144 114.4 against 105.3; H100: 113x3072x3072 109.8
#: against 64x64 swapped's 116.8).
PADDED_ROWS_SHARE = 0.15


def padded_rows(problem: Problem, tile_rows: int) -> float:
    """The share of the rows that unswapped tiles of ``tile_rows`` rows pad past M: 0.22 for
    150 rows as three of 64."""
    return 1 - problem.m / (cdiv(problem.m, tile_rows) * tile_rows)


def padded_rows_swap(
    problem: Problem,
    chosen: C,
    gpu_name: str,
    candidates: Iterable[C],
    widths: Sequence[int] = SWAP_WIDTHS,
) -> tuple[C, str] | None:
    """On an H100, M in one column of a 64-row swapped tile in place of an unswapped, unsplit
    64-row pick that pads at least ``PADDED_ROWS_SHARE`` of its rows past M, at M in
    ``PADDED_ROWS_M`` (shorter than N); None elsewhere. The tile is the one of ``candidates``
    (the kernel's unsplit configs its structural rules allow) 64 rows by the narrowest of
    ``widths`` that holds M (:func:`swap_fits`), one CTA, no stream-K, the raster
    :func:`swap_raster` gives; the kernel's epilogue for it is the candidate's.

    A rule the model does not see: both tiles stream the same weights a k-step, and the model
    prices the unswapped one's extra row tiles (three of 64 at M = 150: 120 CTAs at N = 5120)
    as the faster way through one wave, where the swapped one's 80 CTAs hold M whole with at
    most 7 padded rows. Timed, the swap won wherever the pick padded 17 % of its rows or more;
    the threshold, ``PADDED_ROWS_SHARE``, leaves M 97-108 and 129-163 in the band. Fixed at
    stop 97 from Survey AS (one H100 80GB HBM3, six tuning shapes of M 113-154: CuTeDSL
    README, "Survey AS") and the H200 tuning runs, before any data of its own. A/B AT decided
    it at stop 98 (ten fresh shapes, seed 848759): the swap took 0.914x the pick's time,
    faster at all ten; six of the picks ran below 90 % of cuBLAS, two of the swaps ("Forty-first
    version" there)."""
    if not _rules_hold(gpu_name):
        return None
    unsplit = chosen.split_k == 1 and not chosen.stream_k
    if chosen.swap_ab or chosen.tile_m != 64 or not unsplit:
        return None
    padded = padded_rows(problem, chosen.tile_m)
    m_in_band = PADDED_ROWS_M[0] <= problem.m <= PADDED_ROWS_M[1] and problem.m < problem.n
    if not m_in_band or padded < PADDED_ROWS_SHARE:
        return None
    width = next((w for w in widths if w >= problem.m and swap_fits(problem, w, widths)), None)
    raster = swap_raster(problem)
    for c in candidates:
        one_column = c.swap_ab and (c.tile_m, c.tile_n, c.raster) == (64, width, raster)
        one_cta = c.cluster == 1 and getattr(c, "cluster_n", 1) == 1
        if one_column and one_cta and c.split_k == 1 and not c.stream_k:
            return c, (
                f"64x{width} swapped holds M in one column on the {gpu_name} where the "
                f"{chosen.tile_m}x{chosen.tile_n} pick pads {padded:.0%} of its rows: "
                "tile_cost.padded_rows_swap"
            )
    return None


#: M above which :func:`square_tile_swap` applies: past decode and the 4-CTA swaps' band.
SQUARE_TILE_M = 512
#: The least N :func:`square_tile_swap` applies at. A/B BA (stop 102) ran the rule at every N:
#: the swaps won at all seven of its shapes at N 3584-5120 (0.78-0.97x the pick's time) and
#: lost at all three at N = 3072 (1.08-1.30x), as at 600x3072x8192 (Survey "smalln", 1.04x).
SQUARE_TILE_MIN_N = 3584
#: The narrowest swapped tile :func:`square_tile_swap` runs: the widths the H100's whole-wave
#: transposes held out at 96.9-101.9 % of cuBLAS, which :func:`transpose_gives_way` keeps.
SQUARE_TILE_MIN_WIDTH = TRANSPOSE_KEEP_WIDTH
#: The most :func:`wasted_share` the swapped tile may waste above the 128x128 pick's: at
#: 1711x3584x14336 both wasted 0.054 and the swap ran 102.3 % of cuBLAS against the pair's 86.1.
SQUARE_TILE_SLACK = 0.02
#: The most column tiles (``ceil(M / width)``) a :func:`square_tile_swap` may split M into. A/B
#: BB (stop 103) won at all eight of its shapes whose swap held M in 9-14 columns (0.77-1.00x the
#: pick's time) and lost at both that took 28 and 33 (4183x3584x18944 1.36x, 4720x4096x14336
#: 1.37x). The H100's earlier records say the same of one shape at two widths: 2900x3584x14336
#: ran 99.3-105.5 % of cuBLAS in 14 columns of 208-216 and 81.3 % in 18 of 168 (Survey
#: "smalln"), 3300x3584x18944 92.7 % in 13 of 256 and 78.0 % in 18 of 184, 2376x4096x14336
#: 100.5 % in 12 of 200 and 84.3 % in 16 of 152 (Survey AX); 3030-4283x4608x36864 in 22 columns
#: ran 62.6-68.5 % (A/B AK).
SQUARE_TILE_MAX_COLUMNS = 14


def square_tile_swap(
    problem: Problem,
    chosen: C,
    gpu_name: str,
    candidates: Iterable[C],
    num_sms: int = HOPPER.num_sms,
) -> tuple[C, str] | None:
    """On an H100, the 128-row swapped tile at least ``SQUARE_TILE_MIN_WIDTH`` wide, holding M in
    at most ``SQUARE_TILE_MAX_COLUMNS`` column tiles, that wastes the least of its waves
    (:func:`wasted_share`; ties to the wider) in place of an unswapped
    128x128 pick (one CTA or a pair, stream-K or not) at M above ``SQUARE_TILE_M`` and N at
    least ``SQUARE_TILE_MIN_N``, where it wastes at most ``SQUARE_TILE_SLACK`` more than the
    pick; None elsewhere. ``candidates``
    are the kernel's swapped tiles as its heuristic would run them (epilogue, raster), of
    any column count: one CTA, unsplit, no stream-K.

    A rule the model does not see: it prices a 128x128 tile at the efficiency the H200 tuning
    runs fitted, and on an H100 those picks ran 76.3 % of cuBLAS (geomean) over the ten held-out
    and `sweep` records of them past M 512 (1709-1738x3584xK on four seeds: 76.4-87.4 %), where
    the 128-row swaps 184-200 wide timed beside them ran 96-103 % (1600x3584x4096,
    1711x3584x14336; CuTeDSL README, "Survey AV"). A/B BA, the rule at every N on ten fresh
    shapes (seed 561939), failed at stop 102 (0.973x the pick's time, 7 of 10 faster): it won
    at all seven of N >= 3584 and lost at all three of N = 3072. That half, A/B BB, failed at
    stop 103 (0.976x, 8 of 10 faster): it won at all eight shapes whose swap held M in at most 14
    columns and lost at both that took more (``SQUARE_TILE_MAX_COLUMNS``). The rule with that
    cap, fixed at stop 103 before its data, is A/B BC, and it held at stop 104 on ten fresh
    shapes (seed 822888: 0.918x the pick's time, faster at 9 of 10; 83.1-104.0 % of cuBLAS ->
    91.0-114.0 %)."""
    if not _rules_hold(gpu_name) or problem.m <= SQUARE_TILE_M or problem.n < SQUARE_TILE_MIN_N:
        return None
    if chosen.swap_ab or (chosen.tile_m, chosen.tile_n) != (128, 128):
        return None
    fits = [
        c
        for c in candidates
        if c.swap_ab
        and c.tile_m == 128
        and c.tile_n >= SQUARE_TILE_MIN_WIDTH
        and cdiv(problem.m, c.tile_n) <= SQUARE_TILE_MAX_COLUMNS
        and c.split_k == 1
        and not c.stream_k
        and c.cluster == 1
        and getattr(c, "cluster_n", 1) == 1
    ]
    if not fits:
        return None
    best = min(fits, key=lambda c: (wasted_share(c, problem, num_sms), -c.tile_n))
    wasted = wasted_share(best, problem, num_sms)
    pick_wasted = wasted_share(chosen, problem, num_sms)
    if wasted > pick_wasted + SQUARE_TILE_SLACK:
        return None
    return best, (
        f"128x{best.tile_n} swapped in place of the 128x128 pick on the {gpu_name} (waste "
        f"{wasted:.3f} against {pick_wasted:.3f}): tile_cost.square_tile_swap"
    )


#: M where unswapped tiles (64 or 128 rows) pad M to 128 rows, more than a quarter of them
#: empty, while one column of a wide swapped tile (72..96 wide) holds M with at most 7
#: (CuTeDSL) or 15 (Gluon) padded rows. Unsplit, the swap makes as many tiles (N / 64) with the
#: same K loop and less MMA work; a K split or stream-K changes the tile count, so the model
#: weighs those. Measured at the rule's five timed Gluon shapes (M 66-80): the swap ran 9-22
#: points of cuBLAS ahead (H200; Gluon README, "Tenth version"); M = 96 (exactly a quarter)
#: went the other way, 64x64 unswapped 99 % against 96 % swapped.
PADDED_M = (65, 95)


def heuristic_allows(
    problem: Problem,
    config: GemmConfig,
    block_k: int = 64,
    swap_widths: Sequence[int] = SWAP_WIDTHS,
    num_sms: int = HOPPER.num_sms,
    short_k_split_rows: int = 0,
    one_column_swap_k: int = 0,
    swapped_splits: bool = False,
    split_covers: Sequence[tuple[int, int]] = (),
) -> bool:
    """The structural rules every rung-8 heuristic applies before the cost model ranks:

    * swap-AB when M <= 64 < N, with the narrowest width covering M (a narrower one, M in
      several column tiles, measured slower, save where a kernel applies
      :func:`split_cover` to its pick), and always at M <= 32, where half a 64-row
      tile or more would be padding (the unswapped picks it replaced were slower at all 19
      tuning shapes timed both ways, by 0.6-17 points of cuBLAS: CuTeDSL README,
      "Seventeenth version"); for M in 33..64 the model weighs the swapped cover against
      unswapped tiles wider than 64 only (an unswapped tile of 64 or fewer columns does no
      less MMA work than the cover, the model scores the two alike, and it ran slower in 20
      of 23 timed pairs: "Sixteenth version"); for a longer M (64 < M < N), a wide swapped
      tile only where it fits M tightly among the kernel's ``swap_widths``
      (:func:`swap_fits`), in one column tile at K <= ``one_column_swap_k`` (a kernel whose
      swapped epilogue does not overlap the next tile's K loop declares that K: up to it the
      epilogue is too large a share of each tile), and at M in ``PADDED_M`` no unsplit
      unswapped tile;
    * unswapped, a tile narrower than 64 only as the narrowest that covers N (elsewhere it
      reloads the long operand for too little MMA work);
    * a K split keeps at least ``MIN_K_PER_SPLIT`` of K and splits only a grid whose unsplit
      CTAs fill less than ``SPLIT_MAX_FILL`` of ``num_sms`` (the model undercharges the fp32
      partials, their serial epilogue and the reduce where the grid is full), and none at
      K <= ``SPLIT_SHORT_K`` unless M <= ``short_k_split_rows`` (a kernel's own decode rule),
      and none at M <= 32 and K > ``SPLIT_SHORT_K`` where the unsplit 64-row cover fills
      ``COVER_SPLIT_MAX_FILL`` of the SMs, nor at 32 < M <= 64 for a kernel that runs
      ``split_covers`` (:func:`split_cover`) where the cover it would run (:func:`cover_ctas`)
      fills that share within one wave; a kernel whose menu splits wide swapped tiles
      (``swapped_splits``) splits no unswapped tile where one of its ``swap_widths`` fits M
      (:func:`swap_fits`: 64 < M < N): there the swapped split holds M in fewer padded rows
      and ran faster (CuTeDSL README, "Thirty-second version"), while a kernel without one
      keeps the unswapped split, its only source of CTAs where N is short;
    * the raster :func:`heuristic_raster` gives (m; a wide swap's by B outgrowing L2 or not).

    Waves, tails, split-K against stream-K against a smaller tile: the model decides.
    """
    cover = swap_cover(problem)
    if config.raster != heuristic_raster(problem, config):
        return False
    if config.swap_ab and config.tile_n <= max(NARROW) and config.tile_n != cover:
        return False  # also refuses a narrow swap where it does not pay (no cover)
    if config.wide_swap and not swap_fits(problem, config.tile_n, swap_widths):
        return False
    if config.wide_swap and problem.k <= one_column_swap_k and problem.m > config.tile_n:
        return False  # several column tiles, each paying its serial epilogue on a short K loop
    if not config.swap_ab and cover is not None:
        if problem.m <= 32:
            return False  # unswapped, half or more of a 64-row tile's rows would be padding
        if config.tile_n <= max(NARROW):
            return False  # the swapped cover runs no more MMA work, faster
    if not config.swap_ab and PADDED_M[0] <= problem.m <= PADDED_M[1] < problem.n:
        if config.split_k == 1 and not config.stream_k:
            return False  # as many tiles as a one-column swap, over a quarter of rows padding
    if not config.swap_ab and config.tile_n < 64:
        if config.tile_n != next((w for w in NARROW if w >= problem.n), None):
            return False
    if config.split_k > 1:
        k = cdiv(problem.k, block_k) * block_k
        if k // config.split_k < MIN_K_PER_SPLIT:
            return False
        if config.tiles(problem) * config.cluster >= SPLIT_MAX_FILL * num_sms:
            return False
        if problem.k <= SPLIT_SHORT_K and problem.m > short_k_split_rows:
            return False
        if swapped_splits and not config.swap_ab:
            if any(swap_fits(problem, w, swap_widths) for w in swap_widths):
                return False  # a wide swapped split holds M: the unswapped one pads its rows
        if problem.k > SPLIT_SHORT_K and cover is not None and (problem.m <= 32 or split_covers):
            ctas = cover_ctas(problem, split_covers, num_sms)  # at 32 < M: within one wave
            if COVER_SPLIT_MAX_FILL * num_sms <= ctas and (problem.m <= 32 or ctas <= num_sms):
                return False  # the unsplit cover streams the weights as fast, no reduce
    return True


# -- fitting and cross-validation ----------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    """One timing: ``config`` (as the model sees it) ran ``problem`` in ``seconds``."""

    problem: Problem
    config: GemmConfig
    seconds: float
    source: str = ""
    #: The tuning run (results file) the timing came from: the unit of leave-one-run-out.
    run: str = ""
    #: The GPU that timed it: a problem timed on two GPUs is two problems to the loss and the
    #: regret (a config's time on one GPU is never compared with another's on the other).
    gpu: str = ""

    @property
    def timed_problem(self) -> tuple[str, Problem]:
        """(GPU, problem): the group whose configs the model ranks against each other."""
        return self.gpu, self.problem


def _loss(model: TileCostModel, samples: Sequence[Sample], block_k: int) -> float:
    """Mean squared log error, each problem's samples on one GPU weighed together as one."""
    by_problem: dict[tuple[str, Problem], list[float]] = {}
    for s in samples:
        err = math.log(model.seconds(s.problem, s.config, block_k) / s.seconds)
        by_problem.setdefault(s.timed_problem, []).append(err * err)
    return sum(sum(v) / len(v) for v in by_problem.values()) / max(1, len(by_problem))


def named(constant: str, patterns: Sequence[str]) -> bool:
    """Whether a constant (``launch_s``, ``eff:256x144``) matches one of the glob
    ``patterns`` a partial fit names (:func:`fit`'s ``only``)."""
    return any(fnmatch.fnmatchcase(constant, pat) for pat in patterns)


def fit(
    samples: Sequence[Sample],
    base: TileCostModel = HOPPER,
    *,
    block_k: int = 64,
    rounds: int = 6,
    only: Sequence[str] = (),
    min_problems: int = 1,
) -> TileCostModel:
    """``base`` with its constants (:meth:`TileCostModel.params`; the tile efficiencies only
    for tiles in ``samples``) fitted to ``samples`` by coordinate descent on log scale,
    minimizing the per-problem mean squared log error. Deterministic. ``only`` (glob patterns,
    e.g. ``eff:256x*``) fits just the constants it names and keeps the rest of ``base``: a
    new tile family's efficiencies against constants already fitted on more data. A tile
    timed on fewer than ``min_problems`` problems gets no efficiency of its own (one timing
    would set it alone, noise and all): it keeps ``base``'s, interpolated between its
    neighbours where ``base`` has none."""
    problems: dict[tuple[int, int], set[Problem]] = {}
    unswapped: dict[tuple[int, int], set[Problem]] = {}
    for s in samples:
        tile = (s.config.tile_m, s.config.tile_n)
        problems.setdefault(tile, set()).add(s.problem)
        if not s.config.swap_ab:
            unswapped.setdefault(tile, set()).add(s.problem)
    used = {tile for tile, ps in problems.items() if len(ps) >= min_problems}
    params = base.params()
    names = [n for n in params if not n.startswith(("eff:", "ueff:"))]
    names += [f"eff:{r}x{c}" for r, c in sorted(used)]
    # An unswapped tile's own efficiency is fitted only where ``base`` names one (the
    # backend's declaration that its kernel runs that tile at a rate of its own).
    names += [
        f"ueff:{r}x{c}"
        for r, c in sorted(base.unswapped_efficiency)
        if len(unswapped.get((r, c), ())) >= min_problems
    ]
    if only:
        names = [n for n in names if named(n, only)]
    # A tile timed for the first time starts from its interpolated efficiency.
    start = {f"eff:{r}x{c}": base.tile_efficiency(r, c) for r, c in used}
    start.update({n: v for n, v in _FIT_START.items() if not params[n] and n in names})
    model = base.with_params(start)
    best = _loss(model, samples, block_k)
    step = 0.5  # log-scale step, halved each round
    for _ in range(rounds):
        for name in names:
            for _ in range(8):
                moved = False
                value = model.params()[name]
                for factor in (math.exp(step), math.exp(-step)):
                    trial_value = value * factor
                    if name.startswith(("eff:", "ueff:")) or name in ("overlap_loss", "idle_boost"):
                        trial_value = min(trial_value, 1.0)
                    if name in ("swap_gain", "swap_cluster2_gain"):
                        trial_value = min(max(trial_value, 0.7), 1.1)
                    if name == "cluster2_gain":
                        # A multicast pair halves B's L2 traffic and adds no MMA work: the
                        # fit may not make it a penalty (timings of c1 and c2 within noise
                        # of each other otherwise pull it below 1 and rung 7 off its tile).
                        trial_value = min(max(trial_value, 1.0), 1.2)
                    trial = model.with_params({name: trial_value})
                    loss = _loss(trial, samples, block_k)
                    if loss < best - 1e-12:
                        model, best, moved = trial, loss, True
                        break
                if not moved:
                    break
        step /= 2
    return model


@dataclass(frozen=True)
class FoldReport:
    """Out-of-fold quality of the model: per problem held out of the fit."""

    problems: int
    samples: int
    median_abs_log_err: float
    mean_abs_log_err: float
    #: (time of the model's first choice among the timed configs) / (fastest timed) - 1
    median_regret: float
    worst_regret: float
    regrets: tuple[tuple[Problem, float], ...]


def evaluate(
    model: TileCostModel, samples: Sequence[Sample], block_k: int = 64
) -> tuple[list[float], list[tuple[Problem, float]]]:
    """(|log error| per sample, (problem, regret) per problem and GPU with >= 2 timed
    configs)."""
    errors = [
        abs(math.log(model.seconds(s.problem, s.config, block_k) / s.seconds)) for s in samples
    ]
    by_problem: dict[tuple[str, Problem], list[Sample]] = {}
    for s in samples:
        by_problem.setdefault(s.timed_problem, []).append(s)
    regrets = []
    for (_, problem), group in sorted(by_problem.items()):
        if len(group) < 2:
            continue
        pick = min(group, key=lambda s: model.seconds(problem, s.config, block_k))
        best = min(s.seconds for s in group)
        regrets.append((problem, pick.seconds / best - 1.0))
    return errors, regrets


def cross_validate(
    samples: Sequence[Sample],
    base: TileCostModel = HOPPER,
    *,
    folds: int = 5,
    seed: int = 0,
    block_k: int = 64,
    rounds: int = 6,
    by_run: bool = False,
    only: Sequence[str] = (),
    min_problems: int = 1,
) -> FoldReport:
    """K-fold by problem: fit on the other folds' problems, measure on this fold's (a problem's
    configs are never split between fit and test).

    ``by_run``: one fold per tuning run instead (a problem belongs to the first run, in name
    order, that timed it). Random folds put neighbours of a grid in both halves and flatter the
    model; a run left out whole is what a new suite of shapes looks like to it."""
    problems = sorted({s.problem for s in samples})
    if by_run:
        first_run: dict[Problem, str] = {}
        for s in sorted(samples, key=lambda s: s.run):
            first_run.setdefault(s.problem, s.run)
        runs = sorted(set(first_run.values()))
        fold_of = {p: runs.index(first_run[p]) for p in problems}
        folds = len(runs)
    else:
        random.Random(seed).shuffle(problems)
        fold_of = {p: i % folds for i, p in enumerate(problems)}
    errors: list[float] = []
    regrets: list[tuple[Problem, float]] = []
    for f in range(folds):
        train = [s for s in samples if fold_of[s.problem] != f]
        test = [s for s in samples if fold_of[s.problem] == f]
        if not train or not test:
            continue
        model = fit(
            train, base, block_k=block_k, rounds=rounds, only=only, min_problems=min_problems
        )
        e, r = evaluate(model, test, block_k)
        errors += e
        regrets += r
    regret = [r for _, r in regrets]
    return FoldReport(
        problems=len(problems),
        samples=len(samples),
        median_abs_log_err=_median(errors),
        mean_abs_log_err=sum(errors) / max(1, len(errors)),
        median_regret=_median(regret),
        worst_regret=max(regret, default=0.0),
        regrets=tuple(regrets),
    )


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")
