"""Rung 8's shared pieces (harness.tile_cost): the config vocabulary, the stream-K schedule the
kernels implement, the cost model every rung-8 heuristic ranks by, and its fit."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any

import pytest

from harness import tile_cost
from harness.gemm import Problem, cdiv
from harness.tile_cost import (
    HOPPER,
    SPLIT_SHORT_K,
    GemmConfig,
    Sample,
    StreamK,
    TileCostModel,
    cheapest,
    cross_validate,
    evaluate,
    explain,
    fit,
    heuristic_allows,
    ranked,
    swap_cover,
    swap_fits,
    swap_raster,
    unsplit_twin,
)


def _s(model: TileCostModel = HOPPER, m=8192, n=8192, k=4096, **kw) -> float:
    config = GemmConfig(**{"tile_m": 128, "tile_n": 256, "cluster": 1, **kw})
    return model.seconds(Problem(m, n, k), config)


# -- the vocabulary ---------------------------------------------------------------------------
def test_config_names_the_shared_knobs_in_one_order() -> None:
    c = GemmConfig(64, 128, 1, stream_k=True)
    assert c.name == (
        "tile_m=64,tile_n=128,cluster=1,swap_ab=0,split_k=1,stream_k=1,raster=m,group=8"
    )
    assert c.with_overrides("cluster=2,stream_k=0") == GemmConfig(64, 128, 2)


def test_tiles_pad_rows_to_whole_clusters_and_follow_swap_ab() -> None:
    assert GemmConfig(128, 256, 2).tiles(Problem(8192, 8192, 64)) == 32 * 32
    assert GemmConfig(128, 16, 2, split_k=3).ctas(Problem(129, 16, 64)) == 2 * 1 * 3
    assert GemmConfig(64, 128, 1).tiles(Problem(100, 300, 64)) == 2 * 3
    # swapped, N runs along the tile rows: 129 rows of N in one 256-row cluster tile
    assert GemmConfig(128, 16, 2, swap_ab=True).tiles(Problem(16, 129, 64)) == 1


# -- the stream-K schedule ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "tiles,k_tiles,programs,min_iters",
    list(
        itertools.product(
            [1, 5, 84, 131, 132, 133, 140, 265], [1, 2, 7, 64, 256], [1, 66, 132], [1, 8]
        )
    ),
)
def test_stream_k_covers_every_k_iteration_once(
    tiles: int, k_tiles: int, programs: int, min_iters: int
) -> None:
    """The work units of every program cover each (tile, k-tile) exactly once; whole waves are
    whole tiles written to D; each tail tile's contributors are exactly the units whose
    partials landed in it; no program does more than a tile's share of the tail, and none
    fewer than ``min_iters`` of it where the tail has that many a program."""
    sk = StreamK(tiles, k_tiles, programs, min_iters)
    covered: dict[tuple[int, int], int] = {}
    per_program = [0] * programs
    for u in range(sk.units):
        tile, lo, hi, slot = sk.unit(u)
        assert 0 <= lo <= hi <= k_tiles
        if u < sk.dp_tiles:
            assert (lo, hi, slot) == (0, k_tiles, -1)
        per_program[u % programs] += hi - lo
        for k in range(lo, hi):
            assert (tile, k) not in covered, (u, tile, k)
            covered[(tile, k)] = slot
    assert len(covered) == tiles * k_tiles
    for r in range(sk.sk_tiles):
        written = {s for (t, _), s in covered.items() if t == sk.dp_tiles + r}
        assert sorted(s for _, s in sk.contributors(r)) == sorted(written)
        assert all(s % programs == p for p, s in sk.contributors(r))
    assert max(per_program) == sk.max_iters()
    shared = sk.tail_programs
    assert (shared == 0) == (sk.sk_tiles == 0) and shared <= programs
    tail = cdiv(sk.sk_iters, shared) if sk.sk_tiles else 0
    assert sk.max_iters() == (tiles // programs) * k_tiles + tail
    if sk.sk_tiles:
        shares = [sk.begin(p + 1) - sk.begin(p) for p in range(programs)]
        assert max(shares) <= k_tiles and all(n == 0 for n in shares[shared:])
        if sk.sk_iters >= min_iters * shared:  # room for min_iters each: nobody has less
            assert min(shares[:shared]) >= min_iters
    # the reduction's longest chain: every partial of the busiest tail tile, no fewer
    # (an empty program is counted where it falls inside a tile: its loop step runs too)
    most = max((len(sk.contributors(r)) for r in range(sk.sk_tiles)), default=0)
    assert most <= sk.most_contributors() <= most + (sk.sk_iters < shared) * shared
    assert (sk.most_contributors() == 0) == (sk.sk_tiles == 0)


def test_stream_k_spreads_a_partial_wave_evenly() -> None:
    # 300 x 7168 in 64x256 tiles: 5 x 28 = 140 tiles on 132 SMs, K = 16384 (256 k-tiles).
    sk = StreamK(140, 256, 132)
    assert (sk.dp_tiles, sk.sk_tiles, sk.tail_programs) == (132, 8, 132)
    assert sk.max_iters() == 256 + cdiv(8 * 256, 132)  # one wave + 16 of the 2048 tail steps
    assert StreamK(264, 64, 132).units == 264  # whole waves: no tail, no segments


def test_stream_k_gives_a_short_tail_to_fewer_programs() -> None:
    """2418x3584x4096 in 128x256 tiles: 266 tiles, two waves and 2 tiles of 64 k-iterations.
    Over all 132 programs each would take about one k-iteration and store a whole partial for
    it (49.5 % of cuBLAS on an H200); 16 programs take 8 each, the others none."""
    sk = StreamK(266, 64, 132)
    assert (sk.sk_tiles, sk.sk_iters, sk.tail_programs) == (2, 128, 16)
    assert sk.max_iters() == 2 * 64 + 8
    assert [len(sk.contributors(r)) for r in range(2)] == [8, 8]
    assert StreamK(266, 64, 132, min_iters=1).tail_programs == 128  # the unbounded schedule
    # a tail too short for one program per tile at min_iters: one program a tile, no fewer
    assert StreamK(133, 4, 132).tail_programs == 1 and StreamK(134, 4, 132).tail_programs == 2


# -- the cost model ------------------------------------------------------------------------------
def test_compute_bound_time_counts_the_busiest_programs_k_steps() -> None:
    mma_only = TileCostModel(overlap_loss=0.0, launch_s=0.0, unit_s=0.0)
    one = _s(mma_only)  # 8192^2 / (128 x 256) = 2048 tiles: 16 waves of 132 (the last not full)
    assert _s(mma_only, k=8192) == pytest.approx(2 * one)
    assert _s(mma_only, m=8192 + 2 * 128) == pytest.approx(one)  # 2112 tiles: still 16 waves
    assert _s(mma_only, m=8192 + 3 * 128) == pytest.approx(one * 17 / 16)  # a 17th wave
    ideal = 16 * 64 * 2 * 128 * 256 * 64 / (HOPPER.peak_flops / HOPPER.num_sms)
    assert one == pytest.approx(ideal / HOPPER.efficiency[(128, 256)])


def test_stream_k_pays_for_a_tail_and_costs_nothing_without_one() -> None:
    m, n, k = 300, 7168, 16384  # 64x256 tiles: 140, one wave and 8 tiles
    dp = _s(m=m, n=n, k=k, tile_m=64)
    sk = _s(m=m, n=n, k=k, tile_m=64, stream_k=True)
    assert sk < 0.7 * dp  # 272 k-steps for 512, plus the partials and the reduce
    assert HOPPER.predicted_waves(Problem(m, n, k), GemmConfig(64, 256, 1)) == 2.0
    waves = HOPPER.predicted_waves(Problem(m, n, k), GemmConfig(64, 256, 1, stream_k=True))
    assert waves == pytest.approx(1 + 16 / 256)
    # 8192^2 in 128x256 cluster-2 tiles: 1024 cluster tiles = 15 waves + 34 tiles of 66
    whole = Problem(8448, 8192, 4096)  # 33 x 32 = 1056 = 16 x 66 cluster tiles: no tail
    assert HOPPER.seconds(whole, GemmConfig(stream_k=True)) == HOPPER.seconds(whole, GemmConfig())


def test_stream_k_reduce_pays_a_step_per_partial_of_its_busiest_tile() -> None:
    # 116 x 36864 in 128x256 tiles: 144 tiles, one wave and 12, each summed from 9 programs'
    # partials (72 k-tiles a tile; 864 shared by 108 programs, 8 each)
    problem, config = Problem(116, 36864, 4608), GemmConfig(128, 256, 1, stream_k=True)
    assert config.schedule(problem, 132).most_contributors() == 9
    stepped = dataclasses.replace(HOPPER, reduce_step_s=1e-6)
    extra = stepped.seconds(problem, config) - HOPPER.seconds(problem, config)
    assert extra == pytest.approx(9e-6)
    unsplit = GemmConfig(128, 256, 1)  # no tail, no reduce: the step costs nothing
    assert stepped.seconds(problem, unsplit) == HOPPER.seconds(problem, unsplit)


def test_cluster_split_and_tile_size_move_the_estimate_the_right_way() -> None:
    assert _s(tile_n=256) < _s(tile_m=64, tile_n=128)
    m, n, k = 128, 4096, 16384  # 32 tiles of 128x128 on 132 SMs
    unsplit = _s(m=m, n=n, k=k, tile_n=128)
    split = _s(m=m, n=n, k=k, tile_n=128, split_k=4)
    assert split < unsplit
    ws = 4 * m * n * 4
    assert split >= HOPPER.reduce_launch_s + 2 * ws / HOPPER.hbm_bytes_per_s


def test_a_grid_smaller_than_the_gpu_runs_its_mmas_faster_by_the_idle_boost() -> None:
    """``idle_boost``: a grid that leaves a fraction f of the SMs idle runs its MMAs 1 + boost x f
    times as fast (a partial wave clocks higher on a power-limited GPU); a full grid and
    stream-K (every SM) are unchanged."""
    flat = TileCostModel(overlap_loss=0.0, launch_s=0.0, unit_s=0.0)
    boosted = dataclasses.replace(flat, idle_boost=0.5)
    half = {"m": 6 * 128, "n": 11 * 256, "k": 16384}  # 66 tiles of 128x256: half the SMs
    assert GemmConfig(128, 256, 1).ctas(Problem(**half)) == HOPPER.num_sms // 2
    assert _s(flat, **half) == pytest.approx(1.25 * _s(boosted, **half))  # MMA-bound
    full = {"m": 12 * 128, "n": 11 * 256, "k": 16384}  # 132 tiles: every SM
    assert _s(boosted, **full) == _s(flat, **full)
    assert _s(boosted, **half, stream_k=True) == _s(flat, **half, stream_k=True)


def test_decode_is_bound_by_streaming_the_weights() -> None:
    kw = {"m": 1, "n": 8192, "k": 8192, "swap_ab": True, "tile_m": 64, "tile_n": 16}
    t = _s(**kw)
    assert t >= 8192 * 8192 * 2 / HOPPER.hbm_bytes_per_s
    assert _s(**{**kw, "swap_ab": False, "tile_n": 64}) >= t  # 63 of 64 tile rows wasted
    assert _s(**kw, split_k=2) > t  # a split adds the reduce to a DRAM-bound time


# -- choosing ------------------------------------------------------------------------------
_MENU = (
    GemmConfig(),
    GemmConfig(group=16),
    GemmConfig(128, 128, 1),
    GemmConfig(64, 256, 1),
    GemmConfig(64, 256, 1, stream_k=True),
    GemmConfig(128, 16, 1, swap_ab=True),
    GemmConfig(128, 16, 1, swap_ab=True, split_k=4),
    GemmConfig(128, 32, 1, swap_ab=True),
    GemmConfig(128, 64, 1, split_k=8),
)


def _valid(problem: Problem, c: GemmConfig) -> str | None:
    return "no swap at large M" if c.swap_ab and problem.m > 64 else None


def test_ranked_orders_valid_configs_by_cost_with_variants_last() -> None:
    p = Problem(300, 7168, 16384)
    order = ranked(p, _MENU, _valid, variant=lambda p, c: c.group != 8)
    assert sorted(c.name for c in order) == sorted(c.name for c in _MENU if not c.swap_ab)
    assert order[-1].group == 16
    costs = [HOPPER.seconds(p, c) for c in order[:-1]]
    assert costs == sorted(costs)
    assert order[0] == GemmConfig(64, 256, 1, stream_k=True)


def test_a_split_cover_replaces_the_64_column_cover_where_it_fills_more_of_one_wave() -> None:
    cover = GemmConfig(64, 64, 1, swap_ab=True)
    # N = 8192: 128x32 (M in 2 columns) makes the cover's 128 CTAs with 128 rows each
    # (64x32: 256 CTAs and 128x16: 192, both over a wave)
    assert tile_cost.split_cover(Problem(36, 8192, 8192), cover) == GemmConfig(128, 32, 1, True)
    # N = 5120: 128x16 in 3 columns fills 120 SMs, 128x32 and the cover 80
    assert tile_cost.split_cover(Problem(40, 5120, 5120), cover) == GemmConfig(128, 16, 1, True)
    # N = 3584: 64x32 makes 112 CTAs; 128x16 would too at M = 58, but in 4 columns
    assert tile_cost.split_cover(Problem(58, 3584, 4096), cover) == GemmConfig(64, 32, 1, True)
    assert tile_cost.split_cover(Problem(34, 3584, 4096), cover) == GemmConfig(64, 32, 1, True)
    # N = 14336: every split cover is over a wave; other picks, M <= 32, or a K split: none
    assert tile_cost.split_cover(Problem(36, 14336, 4096), cover) is None
    assert tile_cost.split_cover(Problem(36, 8192, 8192), GemmConfig(64, 128, 1)) is None
    assert tile_cost.split_cover(Problem(30, 8192, 8192), GemmConfig(64, 32, 1, True)) is None
    split = dataclasses.replace(cover, split_k=2)
    assert tile_cost.split_cover(Problem(36, 2048, 8192), split) is None
    # the 128-row cover's 64 CTAs at N = 8192 are a floor the split cover passes
    assert tile_cost.split_cover(
        Problem(36, 8192, 8192), GemmConfig(128, 64, 1, True)
    ) == GemmConfig(128, 32, 1, True)


def test_a_whole_wave_swap_replaces_stream_k_where_its_tiles_fill_whole_waves() -> None:
    widths = tuple(range(72, 113, 8))
    sk = GemmConfig(128, 184, 1, swap_ab=True, stream_k=True)
    # N = 37888: 198 row tiles of 192 x 2 columns of 96 = 396 tiles, three whole waves
    assert tile_cost.whole_wave_swap(Problem(184, 37888, 3584), sk, 192, widths) == GemmConfig(
        192, 96, 1, swap_ab=True
    )
    # N = 36864: 192 x 2 = 384 tiles, the last wave 120 of 132 (0.91)
    assert tile_cost.whole_wave_swap(Problem(169, 36864, 4608), sk, 192, widths) == GemmConfig(
        192, 88, 1, swap_ab=True
    )
    # N = 57344: 299 x 2 = 598 tiles leave the last wave half-empty; N = 18432: 1.45 waves
    assert tile_cost.whole_wave_swap(Problem(183, 57344, 8192), sk, 192, widths) is None
    assert tile_cost.whole_wave_swap(Problem(171, 18432, 16384), sk, 192, widths) is None
    # M in more than two columns, a width outside ``widths``, or a pick that is not stream-K
    assert tile_cost.whole_wave_swap(Problem(311, 18432, 16384), sk, 192, widths) is None
    assert tile_cost.whole_wave_swap(Problem(300, 36864, 4608), sk, 192, widths) is None
    unsplit = dataclasses.replace(sk, stream_k=False)
    assert tile_cost.whole_wave_swap(Problem(184, 37888, 3584), unsplit, 192, widths) is None
    unswapped = GemmConfig(128, 256, 2, stream_k=True)
    assert tile_cost.whole_wave_swap(Problem(184, 37888, 3584), unswapped, 192, widths) is None


def test_a_middle_row_count_is_picked_alone_at_its_widths_in_one_wave() -> None:
    one_wave = Problem(410, 6144, 4096)  # 32 row tiles of 192 x 4 columns of 104 = 128 CTAs
    widths = (104, 112)
    assert tile_cost.one_wave_rows(one_wave, GemmConfig(192, 104, 1, True), 192, widths)
    # a pair, a width no A/B timed winning, or two waves' tiles (N = 14336: 75 x 3 = 225)
    assert not tile_cost.one_wave_rows(one_wave, GemmConfig(192, 104, 2, True), 192, widths)
    assert not tile_cost.one_wave_rows(one_wave, GemmConfig(192, 136, 1, True), 192, widths)
    many = Problem(300, 14336, 4096)
    assert not tile_cost.one_wave_rows(many, GemmConfig(192, 104, 1, True), 192, widths)
    # other row counts are not its concern, on any cluster or wave count
    assert tile_cost.one_wave_rows(many, GemmConfig(128, 152, 2, True), 192, widths)
    assert tile_cost.one_wave_rows(many, GemmConfig(256, 96, 1, True), 192, widths)
    # a fill floor refuses a wave its tiles leave part-empty: 24 x 4 = 96 of 132 SMs
    part = Problem(385, 4608, 3584)
    assert tile_cost.one_wave_rows(part, GemmConfig(192, 104, 1, True), 192, widths)
    assert not tile_cost.one_wave_rows(
        part, GemmConfig(192, 104, 1, True), 192, widths, min_fill=0.9
    )
    assert tile_cost.one_wave_rows(one_wave, GemmConfig(192, 104, 1, True), 192, widths, 132, 0.9)
    assert tile_cost.one_wave_rows(part, GemmConfig(128, 104, 1, True), 192, widths, 132, 0.9)


def test_idle_share_counts_the_empty_slots_of_the_last_wave() -> None:
    p = Problem(1152, 3072, 3072)  # 9 x 12 = 108 tiles of 128x256
    assert tile_cost.idle_share(GemmConfig(128, 256, 1), p, 132) == pytest.approx(24 / 132)
    # a pair: 5 x 12 = 60 cluster tiles of 256 rows on 66 programs; whole waves: none idle
    assert tile_cost.idle_share(GemmConfig(128, 256, 2), p, 132) == pytest.approx(6 / 66)
    assert tile_cost.idle_share(GemmConfig(128, 112, 1, swap_ab=True), p, 132) == 0  # 24 x 11


def test_wasted_share_adds_the_padding_past_m_and_n_to_the_idle_slots() -> None:
    p = Problem(1811, 6144, 6144)
    pair = GemmConfig(128, 256, 2)  # 8 x 24 = 192 pair tiles, 3 waves of 66: 6 slots idle
    assert tile_cost.idle_share(pair, p, 132) == pytest.approx(6 / 198)
    # ... and 2048 rows for M = 1811: the share of the slots' area outside D
    outside = 1 - 1811 * 6144 / (198 * 256 * 256)
    assert tile_cost.wasted_share(pair, p, 132) == pytest.approx(outside)
    # swapped, 128x168: 48 x 11 = 528 tiles = 4 whole waves, 1848 columns for 1811
    swapped = GemmConfig(128, 168, 1, swap_ab=True)
    assert tile_cost.wasted_share(swapped, p, 132) == pytest.approx(1 - 1811 / 1848)
    # no padding: the idle slots alone (4096^3's 128x256 pair, 256 tiles on 66 programs)
    square = Problem(4096, 4096, 4096)
    assert tile_cost.wasted_share(pair, square, 132) == pytest.approx(
        tile_cost.idle_share(pair, square, 132)
    )


def _transpose_candidates(widths: Sequence[int]) -> list[GemmConfig]:
    return [GemmConfig(128, w, 1, swap_ab=True) for w in widths]


def test_a_whole_wave_transpose_replaces_a_part_empty_wave_at_mid_m() -> None:
    """An unswapped pick wasting 10 % or more of its waves' SM time (idle slots, padding) at M
    1024-5120 gives way to the cheapest swapped candidate filling 95 % of its waves and wasting
    3 points less, within the slack of its price."""
    widths = range(72, 257, 8)
    cands = _transpose_candidates(widths)
    pick = GemmConfig(128, 256, 1)  # 1152x3072x3072: 108 tiles, 0.18 idle
    p = Problem(1152, 3072, 3072)
    whole = tile_cost.whole_wave_transpose(p, pick, cands, lambda c: 1.0)
    # 24 row tiles of N: 11 columns of 112 make 264 = two waves (120: 24 x 10 = 240, 0.91 of
    # two); every fitting candidate costs the same, so the widest wins the tie
    assert whole == GemmConfig(128, 112, 1, swap_ab=True)
    # a cheaper fitting one is taken (72: 24 x 16 = 384, 0.97 of three waves); a non-fitting
    # one (128: 24 x 9 = 216, 0.82 of two) never is, however cheap
    narrow, unfit = GemmConfig(128, 72, 1, swap_ab=True), GemmConfig(128, 128, 1, swap_ab=True)
    cheap = {narrow: 0.9, unfit: 0.1}
    priced = tile_cost.whole_wave_transpose(p, pick, cands, lambda c: cheap.get(c, 1.0))
    assert priced == narrow
    # priced over the slack against the pick: kept
    over = lambda c: 1.0 if c == pick else 1.0 + tile_cost.TRANSPOSE_SLACK  # noqa: E731
    assert tile_cost.whole_wave_transpose(p, pick, cands, over) is None
    # whole waves already (3456x3072x3072 as 128x128: 27 x 24 = 648 tiles, 0.02 idle), M out
    # of the band, a swapped, split or stream-K pick: none
    assert (
        tile_cost.whole_wave_transpose(
            Problem(3456, 3072, 3072), GemmConfig(128, 128, 1), cands, lambda c: 1.0
        )
        is None
    )
    for m in (1000, 5200):
        assert (
            tile_cost.whole_wave_transpose(Problem(m, 3072, 3072), pick, cands, lambda c: 1.0)
            is None
        ), m
    for other in (
        GemmConfig(128, 200, 1, swap_ab=True),
        dataclasses.replace(pick, split_k=2),
        dataclasses.replace(pick, stream_k=True),
    ):
        assert tile_cost.whole_wave_transpose(p, other, cands, lambda c: 1.0) is None
    # whole waves but padded: 1811x6144x6144's 128x256 pair leaves 3 % of its slots idle, but
    # its 2048 rows waste 14 %; of the candidates that fill their waves and waste 3 points less,
    # the widest is 240 (8 columns of M, 384 tiles: 0.97 of three waves)
    padded = Problem(1811, 6144, 6144)
    assert tile_cost.whole_wave_transpose(
        padded, GemmConfig(128, 256, 2), cands, lambda c: 1.0
    ) == GemmConfig(128, 240, 1, swap_ab=True)
    # idle slots alone are no reason (4811x4096x4096's pair: 0.08 idle, 0.09 wasted) ...
    assert (
        tile_cost.whole_wave_transpose(
            Problem(4811, 4096, 4096), GemmConfig(128, 256, 2), cands, lambda c: 1.0
        )
        is None
    )
    # ... nor a swapped tile that fills the waves but pads M as much (1084x3584x4096: 128x256
    # in one wave of 126 tiles and 128x128 swapped in two of 252 both waste 0.10)
    assert (
        tile_cost.whole_wave_transpose(
            Problem(1084, 3584, 4096),
            GemmConfig(128, 256, 1),
            _transpose_candidates([128]),
            lambda c: 1.0,
        )
        is None
    )
    # no candidate fills its waves: none (N = 3000 in 24 row tiles, M = 1153 ragged)
    assert (
        tile_cost.whole_wave_transpose(
            Problem(1153, 3000, 3072), pick, _transpose_candidates([248]), lambda c: 1.0
        )
        is None
    )


def test_cover_ctas_counts_the_cover_split_cover_would_run() -> None:
    covers = tile_cost.SPLIT_COVERS
    expected = {  # (M, N): CTAs of the cover split_cover runs, as (rows, width)
        (57, 4096): 128,  # 64x32, M in 2 columns
        (42, 3584): 112,  # 64x32
        (49, 5120): 80,  # 128x32 (64x32's 160 are over a wave)
        (40, 5120): 120,  # 128x16 in 3 columns
        (36, 14336): 224,  # every split cover over a wave: the 64x64 cover itself
    }
    for (m, n), ctas in expected.items():
        assert tile_cost.cover_ctas(Problem(m, n, 14336), covers) == ctas, (m, n)
        assert tile_cost.cover_ctas(Problem(m, n, 14336)) == cdiv(n, 64)  # no split covers
    assert tile_cost.cover_ctas(Problem(20, 4096, 14336), covers) == 64  # M <= 32: 64 rows


def test_a_kernel_with_split_covers_splits_no_unswapped_tile_its_cover_streams_as_fast() -> None:
    covers = tile_cost.SPLIT_COVERS
    split4 = GemmConfig(64, 128, 1, split_k=4)
    # Survey AW (H100): 57x4096x14336 as 64x128 split 4, 90.1 % of cuBLAS; 64x32 swapped
    # unsplit (128 CTAs) 108.0 %; 42x3584x14336: 96.3 against 105.9 % (64x32, 112 CTAs)
    for shape in ((57, 4096, 14336), (42, 3584, 14336), (49, 5120, 13824)):
        assert heuristic_allows(Problem(*shape), split4)  # a kernel without split covers
        assert not heuristic_allows(Problem(*shape), split4, split_covers=covers)
    # the cover past one wave (N = 16384: 256 CTAs of 64 rows) leaves the split to the model
    wide = GemmConfig(64, 256, 1, split_k=2)
    assert heuristic_allows(Problem(38, 16384, 53248), wide, split_covers=covers)
    # a cover filling under COVER_SPLIT_MAX_FILL (N = 1536: 24 CTAs of 64 rows, 48 of 64x32)
    fill = tile_cost.COVER_SPLIT_MAX_FILL * 132
    assert tile_cost.cover_ctas(Problem(40, 1536, 14336), covers) == 48 < fill
    assert heuristic_allows(Problem(40, 1536, 14336), split4, split_covers=covers)
    # at M <= 32 the rule was already there; the covers change nothing
    decode_split = GemmConfig(128, 16, 1, swap_ab=True, split_k=4)
    for n in (3584, 4096):
        p = Problem(8, n, 14336)
        assert heuristic_allows(p, decode_split) == heuristic_allows(
            p, decode_split, split_covers=covers
        )


def test_heuristic_rules_and_the_cheapest_allowed() -> None:
    assert swap_cover(Problem(1, 4096, 4096)) == 16
    assert swap_cover(Problem(33, 4096, 4096)) == 64
    assert swap_cover(Problem(65, 4096, 4096)) is None
    assert swap_cover(Problem(16, 16, 4096)) is None  # N does not fill the wgmma rows either
    decode = Problem(8, 4096, 14336)
    assert not heuristic_allows(decode, GemmConfig(128, 32, 1, swap_ab=True))  # 16 covers M
    assert not heuristic_allows(decode, GemmConfig(128, 128, 1))  # M = 8 must swap
    split_cover = GemmConfig(128, 16, 1, swap_ab=True, split_k=4)
    assert heuristic_allows(Problem(8, 3584, 14336), split_cover)  # 56 cover CTAs of 132
    # the unsplit 64-row cover fills COVER_SPLIT_MAX_FILL of the SMs: it streams as fast
    assert cdiv(decode.n, 64) >= tile_cost.COVER_SPLIT_MAX_FILL * 132 > cdiv(3584, 64)
    assert not heuristic_allows(decode, split_cover)
    assert heuristic_allows(decode, GemmConfig(64, 16, 1, swap_ab=True))
    assert not heuristic_allows(Problem(29, 4608, 36864), GemmConfig(128, 32, 1, True, split_k=2))
    assert heuristic_allows(Problem(40, 4096, 36864), GemmConfig(64, 256, 1, split_k=4))  # M > 32
    assert heuristic_allows(Problem(8, 4096, 8192), split_cover, short_k_split_rows=16)  # short K
    assert not heuristic_allows(Problem(8, 4096, 1024), GemmConfig(128, 16, 1, True, split_k=4))
    assert not heuristic_allows(Problem(300, 4096, 4096), GemmConfig(raster="n"))
    # at every K a split only where the unsplit grid is under half a wave (SPLIT_MAX_FILL)
    wide = Problem(155, 36864, 7168)  # 288 tiles of 128 x 160: a split only adds partials
    assert not heuristic_allows(wide, GemmConfig(128, 160, 1, swap_ab=True, split_k=2))
    assert heuristic_allows(wide, GemmConfig(128, 160, 1, swap_ab=True))
    wide_long = Problem(155, 36864, 16384)  # a longer K changes nothing
    assert not heuristic_allows(wide_long, GemmConfig(128, 160, 1, True, split_k=2))
    long_k = Problem(3198, 4608, 36864)  # 450 tiles of 128 x 256, K long: still no split
    assert not heuristic_allows(long_k, GemmConfig(128, 256, 1, split_k=2))
    assert heuristic_allows(Problem(40, 4096, 36864), GemmConfig(64, 256, 1, split_k=4))  # 16
    assert not heuristic_allows(Problem(8, 53248, 16384), GemmConfig(128, 16, 1, True, split_k=2))
    assert heuristic_allows(Problem(51, 3072, 13824), GemmConfig(64, 128, 1, split_k=4))  # 24 CTAs
    assert not heuristic_allows(Problem(51, 8448, 13824), GemmConfig(64, 128, 1, split_k=4))  # 66
    # at K <= SPLIT_SHORT_K no split at all, but for a kernel's declared decode rows
    short_k = Problem(51, 3072, SPLIT_SHORT_K)  # 24 CTAs: fill alone would allow it
    assert not heuristic_allows(short_k, GemmConfig(64, 128, 1, split_k=4))
    assert not heuristic_allows(short_k, GemmConfig(64, 128, 1, split_k=4), short_k_split_rows=16)
    decode_short = Problem(9, 5120, 5120)  # 80 tiles of the 64 cover
    split_cover = GemmConfig(128, 16, 1, swap_ab=True, split_k=2)  # 40 tiles, split in 2
    assert not heuristic_allows(decode_short, split_cover)
    assert heuristic_allows(decode_short, split_cover, short_k_split_rows=16)
    assert heuristic_allows(Problem(161, 8192, 8192), GemmConfig(128, 88, 1, swap_ab=True))
    # at K <= a kernel's one_column_swap_k, a wide swap holds M in one column tile or not at all
    very_short = Problem(1073, 32768, 512)  # 8 x 136 columns of M
    several = GemmConfig(256, 136, 1, swap_ab=True, raster="n")
    assert heuristic_allows(very_short, several)
    assert not heuristic_allows(very_short, several, one_column_swap_k=1024)
    longer = Problem(1073, 32768, 1536)  # B outgrows L2 there: raster m
    assert heuristic_allows(longer, GemmConfig(256, 136, 1, True), one_column_swap_k=1024)
    one_column = Problem(166, 32768, 512)  # M in one 168-wide column: still allowed
    one_col = GemmConfig(128, 168, 2, swap_ab=True, raster="n")
    assert heuristic_allows(one_column, one_col, one_column_swap_k=1024)
    assert not heuristic_allows(Problem(161, 8192, 8192), GemmConfig(128, 168, 1, True, split_k=2))
    short = Problem(34, 3584, 4096)  # M in 17..64: the swapped cover or an unswapped wide tile
    assert heuristic_allows(short, GemmConfig(64, 64, 1, swap_ab=True))
    assert not heuristic_allows(short, GemmConfig(64, 32, 1, swap_ab=True))  # 64 covers M
    assert not heuristic_allows(short, GemmConfig(64, 64, 1))  # no less MMA than the swap
    assert heuristic_allows(short, GemmConfig(64, 128, 1, stream_k=True))
    half = Problem(19, 28672, 3584)  # M <= 32: half a 64-row tile or more would be padding
    assert not heuristic_allows(half, GemmConfig(64, 256, 1))
    assert not heuristic_allows(half, GemmConfig(64, 128, 1, split_k=2))
    assert heuristic_allows(half, GemmConfig(128, 32, 1, swap_ab=True))
    padded = Problem(69, 4608, 4096)  # 64-row tiles pad 69 rows to 128; one 72-wide column
    assert not heuristic_allows(padded, GemmConfig(64, 128, 1))
    assert heuristic_allows(padded, GemmConfig(64, 128, 1, stream_k=True))  # other schedules
    fewer = Problem(69, 2048, 13824)  # 32 CTAs unsplit: under half a wave, a split may pay
    assert heuristic_allows(fewer, GemmConfig(64, 128, 1, split_k=4))
    assert not heuristic_allows(Problem(69, 2048, 4096), GemmConfig(64, 128, 1, split_k=4))
    assert not heuristic_allows(Problem(69, 4608, 13824), GemmConfig(64, 128, 1, split_k=4))  # 72
    assert heuristic_allows(padded, GemmConfig(64, 72, 1, swap_ab=True, raster="n"))
    assert heuristic_allows(Problem(96, 4608, 4096), GemmConfig(64, 64, 1))  # a quarter
    narrower = Problem(8, 3584, 14336)
    pick = cheapest(narrower, _MENU, _valid, lambda c: heuristic_allows(narrower, c))
    assert pick == GemmConfig(128, 16, 1, swap_ab=True, split_k=4)  # 28 tiles, long K
    pick = cheapest(decode, _MENU, _valid, lambda c: heuristic_allows(decode, c))
    assert pick.swap_ab and pick.split_k == 1  # 64 cover CTAs: no split
    with pytest.raises(ValueError, match="no allowed config"):
        cheapest(decode, _MENU, _valid, lambda c: False)


def test_the_unsplit_twin_replaces_only_a_two_way_128_row_swapped_split() -> None:
    """``unsplit_twin``: a 128-row wide swapped split two ways (one CTA) gives way to the
    64-row unsplit tile of its width, as many CTAs; a four-way split (twice the twin's CTAs),
    a pair, stream-K, an unswapped split and a narrow cover stay."""
    p = Problem(73, 6144, 16384)
    split2 = GemmConfig(128, 80, 1, swap_ab=True, split_k=2)
    twin = unsplit_twin(p, split2)
    assert twin == GemmConfig(64, 80, 1, swap_ab=True)
    assert twin.ctas(p) == split2.ctas(p)
    assert unsplit_twin(p, GemmConfig(128, 80, 1, swap_ab=True, split_k=4)) is None
    assert unsplit_twin(p, GemmConfig(128, 80, 2, swap_ab=True, split_k=2)) is None
    assert unsplit_twin(p, GemmConfig(128, 80, 1, swap_ab=True, stream_k=True)) is None
    assert unsplit_twin(p, GemmConfig(128, 128, 1, split_k=2)) is None
    assert unsplit_twin(p, GemmConfig(128, 32, 1, swap_ab=True, split_k=2)) is None
    assert unsplit_twin(p, GemmConfig(64, 80, 1, swap_ab=True)) is None


def test_a_kernel_with_swapped_splits_splits_no_unswapped_tile_at_mid_m() -> None:
    """``swapped_splits``: where a wide swap fits M only a swapped tile splits K; at M <= 64,
    M >= N, past the widest swap and for a kernel without swapped splits nothing changes."""
    mid = Problem(121, 7168, 16384)  # 57 128x256 CTAs: a split may pay
    unswapped = GemmConfig(128, 256, 1, split_k=4)
    swapped = GemmConfig(128, 128, 1, swap_ab=True, split_k=2)
    assert heuristic_allows(mid, unswapped)
    assert not heuristic_allows(mid, unswapped, swapped_splits=True)
    assert heuristic_allows(mid, swapped, swapped_splits=True)
    assert heuristic_allows(mid, GemmConfig(128, 256, 1), swapped_splits=True)  # unsplit
    assert heuristic_allows(
        Problem(121, 7168, 16384), unswapped, swap_widths=(72, 120), swapped_splits=True
    )  # 121 past the widest swap: no swapped cover
    square = Problem(256, 256, 16384)  # M = N: no swap fits
    assert heuristic_allows(square, GemmConfig(128, 128, 1, split_k=4), swapped_splits=True)
    short = Problem(40, 4096, 36864)
    assert heuristic_allows(short, GemmConfig(64, 256, 1, split_k=4), swapped_splits=True)


def test_explain_names_the_tiles_waves_model_time_and_the_runner_up() -> None:
    """A heuristic's one-line reason: the pick's tiles, its busiest program's waves and the
    model's time, then the cheapest other allowed config and how much slower the model puts
    it; a pick the model does not rank first, or one the rules before it do not allow (a
    rule's after it), says so."""
    p = Problem(300, 7168, 16384)

    def no_split(c: GemmConfig) -> bool:  # a rule of this test's heuristic
        return c.split_k == 1

    best = cheapest(p, _MENU, _valid, no_split)
    line = explain(p, best, _MENU, _valid, no_split)
    t = HOPPER.seconds(p, best)
    assert line.startswith(f"{best.tiles(p)} tiles, ") and f"model {t * 1e6:.0f} us" in line
    assert f"{HOPPER.predicted_waves(p, best):.2f} waves" in line
    allowed = [c for c in _MENU if _valid(p, c) is None and no_split(c) and c != best]
    runner = min(allowed, key=lambda c: HOPPER.seconds(p, c))
    assert f"; next {runner.label} +" in line  # the cheapest other valid, allowed config
    rule = explain(p, runner, _MENU, _valid, no_split)  # not the model's first: a rule's
    assert f"; by rule over {best.label}, -" in rule

    def split(c: GemmConfig) -> bool:  # a heuristic allowing splits only...
        return not no_split(c)

    cheapest_split = cheapest(p, _MENU, _valid, split)
    assert HOPPER.seconds(p, cheapest_split) > HOPPER.seconds(p, best)
    after = explain(p, best, _MENU, _valid, split)  # ...whose rule after the model took best
    assert f"; by rule over {cheapest_split.label}, +" in after
    only = explain(p, best, _MENU, _valid, lambda c: c == best)
    assert only.endswith("; no other config allowed")
    assert GemmConfig(128, 136, 2, swap_ab=True, stream_k=True).label == "128x136 c2 swap sk"
    assert GemmConfig(64, 128, 1, split_k=4).label == "64x128 split4"


def test_a_wide_swapped_tile_fits_a_mid_size_m_tightly() -> None:
    mid = Problem(338, 8192, 8192)
    assert swap_fits(mid, 176)  # 2 x 176 = 352 rows for 338
    assert swap_fits(mid, 120)  # 3 x 120 = 360: three columns, each as narrow as it can be
    assert not swap_fits(mid, 128)  # 3 x 128 pads 46 rows where 120 pads 22
    assert not swap_fits(mid, 184)  # 2 x 184 pads 30 rows where 176 pads 14
    assert swap_fits(Problem(667, 4096, 14336), 168)  # cuBLAS's width there: 4 x 168
    assert not swap_fits(Problem(667, 4096, 14336), 176)  # a multiple of 16 pads 37 rows
    assert not swap_fits(mid, 64)  # a narrow width is the decode rule's, not this one
    assert not swap_fits(Problem(338, 300, 8192), 176)  # M is no short side
    assert not swap_fits(Problem(64, 8192, 8192), 80)  # M <= 64: the narrow covers
    assert not swap_fits(Problem(2100, 8192, 8192), 256)  # 9 columns: M is no short side
    assert heuristic_allows(mid, GemmConfig(128, 176, 2, swap_ab=True))
    assert not heuristic_allows(mid, GemmConfig(128, 192, 2, swap_ab=True))
    assert not heuristic_allows(mid, GemmConfig(128, 64, 1, swap_ab=True))  # no narrow cover
    # every M in 65..2048 below N has a fitting width of 72..256 in steps of 8 (the wgmma N)
    widths = range(72, 257, 8)
    for m in range(65, 2049):
        fits = [w for w in widths if swap_fits(Problem(m, 8192, 4096), w)]
        assert fits, m
        for w in fits:
            assert 0 <= cdiv(m, w) * w - m < 8 * cdiv(m, w)  # under 8 rows a column padded


def test_a_kernel_with_fewer_swap_widths_pads_to_the_next_it_has() -> None:
    """Gluon's wide swaps are one or two power-of-two boxes (72, 80, 96, 128, ...): M's share
    is padded to the narrowest of those that holds it, and no other width of the kernel's
    fits; with every multiple of 8 (the default) the rule is the tight one above."""
    two_boxes = (72, 80, 96, 128, 136, 144, 160, 192, 256)
    mid = Problem(338, 8192, 8192)
    assert swap_fits(mid, 192, two_boxes)  # 2 x 192: the share 169 -> 176, which Gluon lacks
    assert not swap_fits(mid, 256, two_boxes)  # also 2 columns, but 192 holds the share
    assert swap_fits(mid, 128, two_boxes)  # 3 x 128: the share 113 -> 120 -> 128
    assert not swap_fits(mid, 176, two_boxes)  # not one of the kernel's widths
    assert not swap_fits(mid, 192)  # every width: 176 holds the share
    cfg = GemmConfig(128, 192, 2, swap_ab=True)
    assert heuristic_allows(mid, cfg, swap_widths=two_boxes)
    assert not heuristic_allows(mid, cfg)
    for m in range(65, 2049):  # a fitting width for every M, each padding under one step
        problem = Problem(m, 8192, 4096)
        fits = [w for w in two_boxes if swap_fits(problem, w, two_boxes)]
        assert fits, m
        for w in fits:
            share = cdiv(m, cdiv(m, w))
            assert w == min(x for x in two_boxes if x >= share), (m, w)


def test_a_wide_swap_walks_d_m_first_only_where_b_outgrows_l2() -> None:
    """B (N x K) re-read per column tile unless those tiles share a wave: raster m (D's M, the
    kernel's columns, first) where B is larger than L2, the kernel's rows first where not."""
    big, small = Problem(387, 53248, 16384), Problem(1460, 7168, 2048)  # 1745 MB, 29 MB
    assert (swap_raster(big), swap_raster(small)) == ("m", "n")
    edge = tile_cost.L2_BYTES // 2  # K = 1 row of N elements, 2 bytes each
    assert swap_raster(Problem(300, edge, 1)) == "n"
    assert swap_raster(Problem(300, edge + 8, 1)) == "m"
    for problem, raster in ((big, "m"), (small, "n")):
        c = GemmConfig(128, 136 if problem is big else 216, 2, swap_ab=True)
        assert heuristic_allows(problem, dataclasses.replace(c, raster=raster))
        other = "n" if raster == "m" else "m"
        assert not heuristic_allows(problem, dataclasses.replace(c, raster=other))
    # an unswapped tile (and a narrow swap) stays raster m whatever B's size
    assert not heuristic_allows(small, GemmConfig(128, 256, 2, raster="n"))
    # M past ``MAX_SWAP_COLUMNS`` column tiles (a whole-wave transpose): m, as timed
    transposed = Problem(4736, 3072, 3072)
    assert swap_raster(transposed) == "n"
    assert tile_cost.heuristic_raster(transposed, GemmConfig(128, 144, 1, swap_ab=True)) == "m"
    assert tile_cost.heuristic_raster(Problem(1152, 3072, 3072), GemmConfig(128, 160, 1, True)) == (
        "n"  # 8 columns: a swap swap_fits may take
    )


def test_four_ctas_take_an_h100s_one_cta_raster_n_swaps_that_fit_the_resident_clusters() -> None:
    """``four_cta_swap``: on an H100 the same tile in clusters of four for a one-CTA 128-row
    wide swap of raster n, at most 128 wide, unsplit, at M 150-450, in at most 30 clusters of
    four; anything else, and any GPU but an H100, keeps its pick."""
    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    p = Problem(217, 5120, 4096)
    pick = GemmConfig(128, 80, 1, swap_ab=True, raster="n")
    moved = tile_cost.four_cta_swap(p, pick, h100)
    assert moved is not None
    assert moved[0] == dataclasses.replace(pick, cluster=4)
    assert "30 clusters of four" in moved[1] and h100 in moved[1]
    assert moved[0].tiles(p) == 10 * 3 == tile_cost.RESIDENT_CLUSTERS_OF_FOUR
    assert tile_cost.four_cta_swap(p, pick, h200) is None
    assert tile_cost.four_cta_swap(p, pick, "NVIDIA H100 PCIe") is None  # 114 SMs: not timed
    others = [
        dataclasses.replace(pick, raster="m"),  # weights past L2: slower in four (A/B Z)
        dataclasses.replace(pick, cluster=2),
        dataclasses.replace(pick, split_k=2),
        dataclasses.replace(pick, stream_k=True),
        dataclasses.replace(pick, tile_m=64),
        dataclasses.replace(pick, tile_n=136),
        GemmConfig(128, 256, 1),
        GemmConfig(128, 32, 1, swap_ab=True, raster="n"),  # a narrow cover
    ]
    for c in others:
        assert tile_cost.four_cta_swap(p, c, h100) is None, c.label
    lo, hi = tile_cost.FOUR_CTA_M
    for m in (lo - 1, hi + 1):
        assert tile_cost.four_cta_swap(Problem(m, 5120, 4096), pick, h100) is None, m
    assert tile_cost.four_cta_swap(Problem(lo, 5120, 4096), pick, h100) is not None
    # 240 rows of M in 80-wide columns: 10 x 3 clusters; 241 needs a fourth column: 40
    assert tile_cost.four_cta_swap(Problem(240, 5120, 4096), pick, h100) is not None
    assert tile_cost.four_cta_swap(Problem(241, 5120, 4096), pick, h100) is None


def test_swap_clusters_is_the_four_cta_move_for_a_kernel_without_2d_clusters() -> None:
    """``swap_clusters`` (the ``on_gpu`` rule): where ``four_cta_swap`` keeps the pick, so does
    it, unless ``fuller_wave_rows`` moves it; a kernel whose config has no ``cluster_n`` knob
    gets the four-CTA move even at three column tiles (the 1x3 move needs 2-D clusters:
    CuTeDSL's compile tests check it); there are fewer clusters of three resident than 132 / 3."""
    h100 = "NVIDIA H100 80GB HBM3"
    pick = GemmConfig(128, 80, 1, swap_ab=True, raster="n")
    three = Problem(240, 4608, 4096)  # 240 rows of M in 80-wide columns
    assert tile_cost.swap_clusters(three, pick, h100) == tile_cost.four_cta_swap(three, pick, h100)
    assert tile_cost.swap_clusters(three, pick, h100)[0].cluster == 4
    assert tile_cost.swap_clusters(three, pick, "NVIDIA H200") is None
    assert tile_cost.swap_clusters(three, dataclasses.replace(pick, raster="m"), h100) is None
    assert tile_cost.RESIDENT_CLUSTERS_OF_THREE < HOPPER.num_sms // 3
    # where the four-CTA move leaves a one-CTA raster-m pick in a part-empty wave, the 192-row
    # tiles of fuller_wave_rows fill it (A/B AN: 309x6144x16384-like shapes)
    part = Problem(309, 6144, 16384)
    wide = GemmConfig(128, 160, 1, swap_ab=True, raster="m")  # 96 CTAs
    assert tile_cost.four_cta_swap(part, wide, h100) is None
    moved = tile_cost.swap_clusters(part, wide, h100)
    assert moved == tile_cost.fuller_wave_rows(part, wide, h100)
    assert moved[0].label == "192x80 swap" and moved[0].ctas(part) == 128
    assert tile_cost.swap_clusters(part, wide, "NVIDIA H200") is None


def test_fuller_wave_rows_fills_the_wave_a_one_cta_swap_leaves_part_empty() -> None:
    """``fuller_wave_rows`` (A/B AN; ``swap_clusters``' last move): on an H100 a one-CTA
    unsplit raster-m swap filling under 0.9 of the SMs in one wave moves to the 192-row tile of
    the fewest column tiles that fills 0.9-1.0 of it, each the narrowest width holding its share
    of M (309 rows: 4 x 80); nowhere else, and never at raster n, where A/B AM's 192-row tiles
    lost at all four picks (1.08-1.25x the time)."""
    h100 = "NVIDIA H100 80GB HBM3"
    p = Problem(309, 6144, 16384)
    pick = GemmConfig(128, 160, 1, swap_ab=True, raster="m")  # 48 x 2 = 96 CTAs
    moved = tile_cost.fuller_wave_rows(p, pick, h100)
    assert moved is not None
    assert (moved[0].tile_m, moved[0].tile_n, moved[0].cluster) == (192, 80, 1)
    assert moved[0].ctas(p) == 128 and moved[0].raster == "m"
    assert tile_cost.fuller_wave_rows(Problem(270, 6144, 5120), pick, h100)[0].tile_n == 72
    assert tile_cost.fuller_wave_rows(p, pick, "NVIDIA H200") is None
    for other in (
        dataclasses.replace(pick, raster="n"),  # B in L2 (AM: 313x6144x4096 ran 1.08x the time)
        dataclasses.replace(pick, cluster=2),  # a pair
        dataclasses.replace(pick, split_k=2),  # split
        dataclasses.replace(pick, stream_k=True),  # stream-K
        GemmConfig(128, 160, 1, raster="m"),  # unswapped
    ):
        assert tile_cost.fuller_wave_rows(p, other, h100) is None, other.label
    # a pick that already fills 0.9 of the wave stays (H200: 222x8192x3584's 128x112, 128 CTAs,
    # ran 100.4 % of cuBLAS against 192x80's 89.9 %)
    full = Problem(222, 8192, 3584)
    mpick = GemmConfig(128, 112, 1, swap_ab=True, raster="m")
    assert mpick.ctas(full) >= 0.9 * HOPPER.num_sms
    assert tile_cost.fuller_wave_rows(full, mpick, h100) is None
    # no 192-row tile of 72..96 fills 0.9 of the wave at 240 rows (4 x 72 pads past the share)
    assert tile_cost.fuller_wave_rows(Problem(240, 6144, 6144), pick, h100) is None


def test_an_untimed_tile_takes_its_neighbours_efficiency() -> None:
    model = HOPPER.with_params({"eff:128x128": 0.6, "eff:128x160": 0.8})
    assert model.tile_efficiency(128, 144) == pytest.approx(0.7)  # halfway
    assert model.tile_efficiency(128, 160) == 0.8  # its own entry
    assert model.tile_efficiency(128, 512) == model.tile_efficiency(128, 256)  # beyond the end
    assert model.tile_efficiency(32, 128) == model.tile_efficiency(64, 128)  # nearest rows
    with pytest.raises(KeyError, match="empty"):
        tile_cost._interpolated({}, 64, 128)
    # a swapped wide tile pays the swap factor; a narrow cover and an unswapped tile do not
    slow = model.with_params({"swap_gain": 0.5})
    p = Problem(338, 8192, 8192)
    wide = GemmConfig(128, 176, 1, swap_ab=True)
    assert slow.seconds(p, wide) > model.seconds(p, wide)
    assert slow.seconds(p, GemmConfig(128, 176, 1)) == model.seconds(p, GemmConfig(128, 176, 1))


def test_a_swapped_pair_pays_its_own_cluster_factor_and_nothing_else_does() -> None:
    """``swap_cluster2_gain`` prices a wide swapped tile in a 2-CTA cluster against the same
    tile on one CTA; an unswapped pair (rung 7's) and a swapped single CTA keep their time,
    and a factor below 1 turns the model's pick for a wide swap to one CTA."""
    model = HOPPER.with_params({"eff:128x192": 0.75})
    slow = model.with_params({"swap_cluster2_gain": 0.97})
    p = Problem(338, 8192, 8192)
    pair, one = GemmConfig(128, 192, 2, swap_ab=True), GemmConfig(128, 192, 1, swap_ab=True)
    assert slow.seconds(p, pair) > model.seconds(p, pair)
    assert slow.seconds(p, one) == model.seconds(p, one)
    rung7 = GemmConfig(128, 256, 2)
    assert slow.seconds(Problem(8192, 8192, 8192), rung7) == model.seconds(
        Problem(8192, 8192, 8192), rung7
    )
    assert slow.seconds(p, one) < slow.seconds(p, pair)


def test_fit_starts_a_tile_no_run_timed_from_its_interpolated_efficiency() -> None:
    base = HOPPER.with_params({"eff:128x128": 0.6, "eff:128x160": 0.8})
    wide = GemmConfig(128, 144, 1, swap_ab=True)
    problems = [Problem(m, 8192, 8192) for m in (100, 144, 300, 500)]
    truth = base.with_params({"eff:128x144": 0.5})
    data = [Sample(p, wide, truth.seconds(p, wide)) for p in problems]
    before, _ = evaluate(base, data)  # would raise KeyError if the model had no value for it
    fitted = fit(data, base, rounds=4)
    assert (128, 144) in fitted.efficiency and (128, 144) not in base.efficiency
    errors, _ = evaluate(fitted, data)
    assert max(before) > 0.2 and max(errors) < 0.1


def _wide_256_samples(truth: TileCostModel) -> list[Sample]:
    """A 256x144 swapped pair timed by ``truth`` at three mid-M shapes."""
    wide = GemmConfig(256, 144, 2, swap_ab=True)
    return [
        Sample(p, wide, truth.seconds(p, wide))
        for p in (Problem(m, 16384, 8192) for m in (300, 555, 1100))
    ]


def test_a_row_count_no_run_timed_takes_the_nearest_row_counts_efficiency() -> None:
    """A 256-row tile before any timing of one: its width's efficiency among 128-row tiles
    (the nearest row count; the fewer rows on a tie), interpolated as they are; then fitted
    like any new tile."""
    base = HOPPER.with_params({"eff:64x144": 0.5, "eff:128x128": 0.6, "eff:128x160": 0.8})
    assert base.tile_efficiency(256, 144) == pytest.approx(0.7)
    assert base.tile_efficiency(96, 128) == base.tile_efficiency(64, 128)  # a tie: fewer rows
    assert base.tile_efficiency(192, 144) == base.tile_efficiency(128, 144)
    data = _wide_256_samples(base.with_params({"eff:256x144": 0.9}))
    before, _ = evaluate(base, data)
    fitted = fit(data, base, rounds=4)
    assert (256, 144) in fitted.efficiency and (256, 144) not in base.efficiency
    assert (128, 144) not in fitted.efficiency  # its own row count's value, untouched
    errors, _ = evaluate(fitted, data)
    assert max(before) > 0.2 and max(errors) < 0.1


def test_a_partial_fit_moves_only_the_constants_it_names() -> None:
    base = HOPPER.with_params({"eff:128x128": 0.6, "eff:128x160": 0.8})
    data = _wide_256_samples(base.with_params({"eff:256x144": 0.9, "launch_s": 9e-6}))
    fitted = fit(data, base, rounds=4, only=("eff:256x*",))
    moved = {n for n, v in fitted.params().items() if base.params().get(n) != v}
    assert moved == {"eff:256x144"}


def test_a_tile_timed_on_too_few_problems_keeps_its_interpolated_efficiency() -> None:
    """One timing of a tile would set its efficiency alone (noise and all): below
    ``min_problems`` problems it stays interpolated between its fitted neighbours."""
    base = HOPPER.with_params({"eff:128x128": 0.6, "eff:128x160": 0.8})
    once = GemmConfig(128, 144, 1, swap_ab=True)
    truth = base.with_params({"eff:128x144": 0.95})
    data = [Sample(Problem(300, 8192, 8192), once, truth.seconds(Problem(300, 8192, 8192), once))]
    assert (128, 144) in fit(data, base, rounds=2).efficiency  # the default: fitted
    kept = fit(data, base, rounds=2, min_problems=2)
    assert (128, 144) not in kept.efficiency
    assert kept.tile_efficiency(128, 144) == pytest.approx(0.7)


def test_an_unswapped_tile_of_its_own_rate_leaves_the_wide_swap_of_its_size_alone() -> None:
    """``ueff:RxC`` prices the unswapped tile only (Gluon's two-box widths run at another rate
    than the wide swap of that size sharing ``eff:RxC``); a model naming none prices both
    from the shared entry, and the names round-trip through ``params``."""
    shared = HOPPER.with_params({"eff:128x192": 0.75})
    own = shared.with_params({"ueff:128x192": 0.6})
    p = Problem(2048, 6144, 8192)
    unswapped, swapped = GemmConfig(128, 192, 1), GemmConfig(128, 192, 1, swap_ab=True)
    assert own.seconds(p, unswapped) > shared.seconds(p, unswapped)
    assert own.seconds(p, swapped) == shared.seconds(p, swapped)
    assert own.params()["ueff:128x192"] == 0.6 and "ueff:128x192" not in shared.params()
    assert HOPPER.with_params(own.params()) == own


def test_without_own_drops_one_unswapped_rate_and_keeps_the_rest() -> None:
    """``without_own(R, C)`` prices the unswapped RxC from the shared entry again (as a model
    that never named it), leaves the other tiles' own rates and the original model alone."""
    shared = HOPPER.with_params({"eff:64x160": 0.55, "eff:128x192": 0.75})
    own = shared.with_params({"ueff:64x160": 0.69, "ueff:128x192": 0.6})
    bare = own.without_own(64, 160)
    p = Problem(600, 8192, 8192)
    tile = GemmConfig(64, 160, 1)
    assert bare.seconds(p, tile) == shared.seconds(p, tile) != own.seconds(p, tile)
    assert bare.unswapped_efficiency == {(128, 192): 0.6}
    assert own.unswapped_efficiency[(64, 160)] == 0.69
    assert bare.without_own(64, 160) == bare  # naming a tile it lacks changes nothing


def test_a_fit_moves_an_unswapped_rate_only_where_the_base_names_one() -> None:
    """Unswapped timings of a tile whose base names ``ueff`` fit that constant (and leave the
    shared entry to the wide swaps); a base naming none fits the shared entry as before."""
    truth = HOPPER.with_params({"eff:128x192": 0.75, "ueff:128x192": 0.55})
    tile = GemmConfig(128, 192, 1)
    data = [
        Sample(p, tile, truth.seconds(p, tile))
        for p in (Problem(m, 6144, 8192) for m in (1000, 2048, 5000))
    ]
    base = truth.with_params({"ueff:128x192": 0.75})
    fitted = fit(data, base, rounds=6, only=("ueff:*", "eff:128x192"))
    assert fitted.unswapped_efficiency[(128, 192)] == pytest.approx(0.55, rel=0.02)
    assert fitted.efficiency[(128, 192)] == 0.75  # no swapped timing moves the shared entry
    plain = fit(data, HOPPER.with_params({"eff:128x192": 0.75}), rounds=6, only=("eff:128x192",))
    assert not plain.unswapped_efficiency
    assert plain.efficiency[(128, 192)] == pytest.approx(0.55, rel=0.02)


# -- fitting and cross-validation -----------------------------------------------------------------
def _synthetic(truth: TileCostModel) -> list[Sample]:
    problems = [Problem(m, n, k) for m in (1, 200, 1000, 8192) for n, k in ((4096, 4096),
                (7168, 16384), (28672, 4096))]  # fmt: skip
    configs = [c for c in _MENU if c.group == 8]
    out = []
    for p in problems:
        for c in configs:
            if _valid(p, c) is None:
                out.append(Sample(p, c, truth.seconds(p, c)))
    return out


def test_fit_recovers_constants_that_generated_the_timings() -> None:
    """Constants that trade off (a tile's efficiency against the cluster gain where only
    cluster-2 timings of that tile exist) need not come back exactly; the times and the
    choices they predict must."""
    truth = HOPPER.with_params({"eff:128x256": 0.8, "hbm_bytes_per_s": 4.0e12, "unit_s": 1e-6})
    data = _synthetic(truth)
    before, _ = evaluate(HOPPER, data)
    fitted = fit(data, rounds=8)
    errors, regrets = evaluate(fitted, data)
    assert max(before) > 0.15 and max(errors) < 0.03
    assert max(r for _, r in regrets) < 0.01


def test_fit_moves_the_idle_boost_off_zero_when_the_timings_show_one() -> None:
    """A log-scale step cannot leave 0, so the fit starts a zero ``idle_boost`` from a small
    value; timings made with a boost bring it back, timings made without keep it small."""
    truth = HOPPER.with_params({"idle_boost": 0.4})
    assert HOPPER.idle_boost == 0.0
    fitted = fit(_synthetic(truth), rounds=8)
    assert fitted.idle_boost == pytest.approx(0.4, abs=0.08)
    errors, _ = evaluate(fitted, _synthetic(truth))
    assert max(errors) < 0.03
    assert fit(_synthetic(HOPPER), rounds=8).idle_boost < 0.05


def test_cross_validation_never_tests_on_a_problem_it_fitted() -> None:
    data = _synthetic(HOPPER.with_params({"eff:64x256": 0.6}))
    report = cross_validate(data, folds=3, rounds=2)
    assert report.problems == len({s.problem for s in data})
    assert report.samples == len(data)
    assert {p for p, _ in report.regrets} == {s.problem for s in data}  # each tested once
    assert len(report.regrets) == report.problems
    assert math.isfinite(report.median_abs_log_err) and report.worst_regret >= 0.0


def test_leave_one_run_out_holds_out_whole_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """``by_run``: one fold per tuning run; a problem timed by two runs belongs to the first, and
    no fold's fit sees a problem of the run it is tested on."""
    base = _synthetic(HOPPER)
    data = [dataclasses.replace(s, run="a-grid" if s.problem.m <= 200 else "b-rnd") for s in base]
    shared = next(s for s in base if s.problem.m == 1000)
    data.append(dataclasses.replace(shared, run="a-grid"))  # also timed by the first run
    trained: list[set[Problem]] = []
    real_fit = tile_cost.fit

    def spy(train: Sequence[Sample], *args: Any, **kw: Any) -> TileCostModel:
        trained.append({s.problem for s in train})
        return real_fit(train, *args, **kw)

    monkeypatch.setattr(tile_cost, "fit", spy)
    report = cross_validate(data, rounds=1, by_run=True)
    a = {s.problem for s in base if s.problem.m <= 200} | {shared.problem}
    b = {s.problem for s in base} - a
    assert trained == [b, a]  # fold "a-grid" fits on b's problems only, then the reverse
    assert {p for p, _ in report.regrets} == a | b and len(report.regrets) == len(a | b)


def test_regret_compares_configs_timed_on_one_gpu_only() -> None:
    """A problem timed on two GPUs is two problems: the model's first choice on the slower GPU
    is measured against that GPU's fastest config, never the other GPU's (grouped by problem
    alone, the H100's pick here would read 200 % over the H200's best)."""
    p = Problem(300, 8192, 8192)
    fast, slow = GemmConfig(128, 256, 2), GemmConfig(64, 64, 1)
    assert HOPPER.seconds(p, fast) < HOPPER.seconds(p, slow)
    data = [
        Sample(p, fast, 3.0, gpu="H100"),
        Sample(p, slow, 4.0, gpu="H100"),
        Sample(p, fast, 1.0, gpu="H200"),
        Sample(p, slow, 2.0, gpu="H200"),
    ]
    _, regrets = evaluate(HOPPER, data)
    assert regrets == [(p, 0.0), (p, 0.0)]


@dataclasses.dataclass(frozen=True)
class _Config2D(GemmConfig):
    """A config with a ``cluster_n`` knob (2-D clusters), as CuTeDSL's rung 8 has."""

    cluster_n: int = 1

    def tiles(self, problem: Problem) -> int:
        rows, cols = self.oriented(problem)
        return cdiv(rows, self.tile_rows) * cdiv(cols, self.tile_n * self.cluster_n)


def test_sixty_four_row_clusters_take_an_h100s_narrow_raster_n_64_row_swaps() -> None:
    """``sixty_four_row_clusters`` (A/B AP; ``swap_clusters``' last move): on an H100 a one-CTA,
    unsplit, raster-n 64-row wide swap at most 112 wide holding M in an even number of column
    tiles runs in 4x2 clusters, within the 15 clusters of eight the H100 holds; an odd column
    count, a wider tile (A/B AO: 144 tied or lost), any other pick or GPU, and a kernel
    without a ``cluster_n`` knob keep the pick."""
    h100 = "NVIDIA H100 80GB HBM3"
    pick = _Config2D(64, 112, 1, swap_ab=True, raster="n")
    p = Problem(212, 3072, 3072)  # 48 row tiles by two columns of 112
    moved = tile_cost.sixty_four_row_clusters(p, pick, h100)
    assert moved is not None and moved[0] == dataclasses.replace(pick, cluster=4, cluster_n=2)
    assert moved[0].tiles(p) == 12 and "4x2" in moved[1] and h100 in moved[1]
    assert tile_cost.swap_clusters(p, pick, h100) == moved
    # the resident clusters bound it: 3840 rows of N make 15 clusters of eight, 3904 make 16
    assert tile_cost.sixty_four_row_clusters(Problem(212, 3840, 4096), pick, h100) is not None
    assert tile_cost.sixty_four_row_clusters(Problem(212, 3904, 4096), pick, h100) is None
    assert tile_cost.RESIDENT_CLUSTERS_OF_EIGHT < HOPPER.num_sms // 8
    for other in (
        dataclasses.replace(pick, tile_n=144),  # wider than SIXTY_FOUR_ROW_MAX_WIDTH
        dataclasses.replace(pick, raster="m"),
        dataclasses.replace(pick, tile_m=128),
        dataclasses.replace(pick, cluster=2),
        dataclasses.replace(pick, cluster_n=2),
        dataclasses.replace(pick, split_k=2),
        dataclasses.replace(pick, stream_k=True),
        _Config2D(64, 128, 1, raster="n"),  # unswapped
        GemmConfig(64, 112, 1, swap_ab=True, raster="n"),  # no cluster_n knob
    ):
        assert tile_cost.sixty_four_row_clusters(p, other, h100) is None, other
    odd = dataclasses.replace(pick, tile_n=80)  # 219 rows of M: three columns of 80
    assert tile_cost.sixty_four_row_clusters(Problem(219, 2112, 7168), odd, h100) is None
    assert tile_cost.sixty_four_row_clusters(Problem(100, 3072, 3072), pick, h100) is None  # one
    assert tile_cost.sixty_four_row_clusters(p, pick, "NVIDIA H200") is None


def test_a_narrow_transpose_gives_way_on_an_h100_at_n_4096_and_up() -> None:
    """``transpose_gives_way``: on an H100, a swapped pick narrower than 144 at N >= 4096 and M
    in the transpose's band runs the kernel's untransposed pick instead, where that differs and
    is unswapped; a wide transpose, a small N, M outside the band, another GPU, or a kernel
    whose heuristic chose the same tile keep the pick."""
    h100 = "NVIDIA H100 80GB HBM3"
    pair = GemmConfig(128, 160, 2)
    untransposed = lambda problem: pair  # noqa: E731 - the kernel's heuristic, transpose off
    p = Problem(1425, 5120, 5120)  # seed 256654: 40 x 13 tiles of 128x112, 77.0 % of cuBLAS
    narrow = GemmConfig(128, 112, 1, swap_ab=True)
    moved = tile_cost.transpose_gives_way(p, narrow, h100, untransposed)
    assert moved is not None and moved[0] == pair
    assert "128x112" in moved[1] and h100 in moved[1]
    assert tile_cost.transpose_gives_way(p, narrow, "NVIDIA H200", untransposed) is None
    wide = dataclasses.replace(narrow, tile_n=tile_cost.TRANSPOSE_KEEP_WIDTH)
    assert tile_cost.transpose_gives_way(p, wide, h100, untransposed) is None
    small_n = Problem(1425, tile_cost.TRANSPOSE_KEEP_N - 512, 5120)
    assert tile_cost.transpose_gives_way(small_n, narrow, h100, untransposed) is None
    at_n = Problem(1425, tile_cost.TRANSPOSE_KEEP_N, 5120)
    assert tile_cost.transpose_gives_way(at_n, narrow, h100, untransposed) is not None
    lo, hi = tile_cost.TRANSPOSE_M
    for m in (lo - 1, hi + 1):
        outside = Problem(m, 5120, 5120)
        assert tile_cost.transpose_gives_way(outside, narrow, h100, untransposed) is None
    assert tile_cost.transpose_gives_way(p, narrow, h100, lambda problem: narrow) is None
    swapped = GemmConfig(128, 176, 1, swap_ab=True)
    assert tile_cost.transpose_gives_way(p, narrow, h100, lambda problem: swapped) is None
    assert tile_cost.transpose_gives_way(p, pair, h100, untransposed) is None  # unswapped


def test_a_transpose_past_17_columns_gives_way_on_an_h100_at_any_n() -> None:
    """``transpose_gives_way``'s column half (A/B BE's rule, fixed before its data): on an
    H100 a transposed pick holding M in more than ``TRANSPOSE_MAX_COLUMNS`` column tiles, at
    any N and any width, runs the kernel's untransposed pick; 17 columns, another GPU, or M
    outside the transpose's band keep it."""
    h100 = "NVIDIA H100 80GB HBM3"
    pair = GemmConfig(128, 256, 2)
    untransposed = lambda problem: pair  # noqa: E731 - the kernel's heuristic, transpose off
    p = Problem(2828, 3072, 3072)  # A/B BD's 2828x8192x29568 ran 128x144 in 20 columns: 53.9 %
    wide = GemmConfig(128, 144, 1, swap_ab=True)
    assert wide.tile_n >= tile_cost.TRANSPOSE_KEEP_WIDTH and p.n < tile_cost.TRANSPOSE_KEEP_N
    moved = tile_cost.transpose_gives_way(p, wide, h100, untransposed)
    assert moved is not None and moved[0] == pair
    assert "20 columns" in moved[1] and "128x144" in moved[1]
    assert tile_cost.transpose_gives_way(p, wide, "NVIDIA H200", untransposed) is None
    # 2828 rows in 17 columns of 168 (2856) keep the transpose; in 18 of 160 (2880) it gives way
    assert (
        tile_cost.transpose_gives_way(p, dataclasses.replace(wide, tile_n=168), h100, untransposed)
        is None
    )
    assert (
        tile_cost.transpose_gives_way(p, dataclasses.replace(wide, tile_n=160), h100, untransposed)
        is not None
    )
    hi = tile_cost.TRANSPOSE_M[1]
    assert (
        tile_cost.transpose_gives_way(Problem(hi + 1, 3072, 3072), wide, h100, untransposed) is None
    )


def test_padded_rows_swap_holds_m_in_one_64_row_column_on_an_h100() -> None:
    """``padded_rows_swap`` (A/B AT's rule, fixed before its data): on an H100 an unswapped,
    unsplit 64-row pick padding a sixth of its rows or more past M (97 <= M <= 192) runs the
    kernel's 64-row swapped tile of the narrowest width holding M, one CTA, raster by
    ``swap_raster``; a pick padding less, M outside the band, a split, stream-K or 128-row
    pick, another GPU, or a kernel without that tile keep the pick."""
    h100 = "NVIDIA H100 80GB HBM3"
    pick = GemmConfig(64, 128, 1, raster="m")
    p = Problem(150, 5120, 4096)  # Survey AS: 87.3 % of cuBLAS unswapped, 107.0 % as 64x152
    assert tile_cost.padded_rows(p, 64) == pytest.approx(1 - 150 / 192)
    menu = [
        GemmConfig(64, w, c, swap_ab=True, raster=r)
        for w in tile_cost.SWAP_WIDTHS
        for c in (1, 2)
        for r in ("m", "n")
    ]
    moved = tile_cost.padded_rows_swap(p, pick, h100, menu)
    assert moved is not None
    assert moved[0] == GemmConfig(64, 152, 1, swap_ab=True, raster="n")
    assert "22%" in moved[1] and h100 in moved[1]
    # the weights outgrow L2 at 105x4096x7168 (58.7 MB): the swap keeps raster m there
    wide_b = tile_cost.padded_rows_swap(Problem(105, 4096, 7168), GemmConfig(64, 64, 1), h100, menu)
    assert wide_b is not None and (wide_b[0].tile_n, wide_b[0].raster) == (112, "m")
    assert tile_cost.padded_rows_swap(p, pick, "NVIDIA H200", menu) is None
    # 113 rows pad 12 % of two 64-row tiles, 96 (a quarter) sits below the band, 193 above it
    for m in (113, 96, 193):
        assert tile_cost.padded_rows_swap(Problem(m, 5120, 4096), pick, h100, menu) is None, m
    for other in (
        dataclasses.replace(pick, split_k=2),
        dataclasses.replace(pick, stream_k=True),
        dataclasses.replace(pick, tile_m=128),
        GemmConfig(64, 152, 1, swap_ab=True, raster="n"),  # already swapped
    ):
        assert tile_cost.padded_rows_swap(p, other, h100, menu) is None, other.label
    # the kernel's menu decides the tile: without a one-CTA 64x152 swap the pick stays
    no_152 = [c for c in menu if not (c.tile_n == 152 and c.cluster == 1)]
    assert tile_cost.padded_rows_swap(p, pick, h100, no_152) is None
    # M as long as N is no short side
    assert tile_cost.padded_rows_swap(Problem(150, 150, 4096), pick, h100, menu) is None


def test_square_tile_swap_trades_an_h100_128x128_pick_for_the_least_waste_wide_swap() -> None:
    """``square_tile_swap`` (A/B BA's rule, fixed before its data): on an H100 an unswapped
    128x128 pick past M 512 at N >= 3584 runs the one-CTA 128-row swap at least 144 wide that
    wastes the least of its waves, where that wastes at most ``SQUARE_TILE_SLACK`` more than the
    pick and holds M in at most ``SQUARE_TILE_MAX_COLUMNS`` columns; a swap wasting more, M <=
    512, N = 3072, M past 14 columns of 256, another tile or GPU, or a menu without such a swap
    keep it (A/B BC's rule, fixed before its data)."""
    h100 = "NVIDIA H100 80GB HBM3"
    pair = GemmConfig(128, 128, 2)
    p = Problem(1711, 3584, 14336)  # Survey AV: the pair 86.1 % of cuBLAS, 128x192 swapped 102.3
    menu = [
        GemmConfig(128, w, c, swap_ab=True, raster="m") for w in range(8, 257, 8) for c in (1, 2)
    ]
    moved = tile_cost.square_tile_swap(p, pair, h100, menu)
    assert moved is not None
    assert moved[0] == GemmConfig(128, 192, 1, swap_ab=True, raster="m")
    assert "square_tile_swap" in moved[1] and h100 in moved[1]
    # 9 columns of 192 hold M: 252 tiles in two waves of 132, as wasteful as 196 pairs in 3 of 66
    swap_waste = tile_cost.wasted_share(moved[0], p)
    assert swap_waste == pytest.approx(tile_cost.wasted_share(pair, p), abs=1e-3)
    assert all(
        tile_cost.wasted_share(c, p) >= swap_waste
        for c in menu
        if c.cluster == 1 and c.tile_n >= tile_cost.SQUARE_TILE_MIN_WIDTH
    )
    # one CTA and stream-K picks of the same tile move too
    for other in (GemmConfig(128, 128, 1), GemmConfig(128, 128, 2, stream_k=True)):
        assert tile_cost.square_tile_swap(p, other, h100, menu) is not None, other.label
    assert tile_cost.square_tile_swap(p, pair, "NVIDIA H200", menu) is None
    assert tile_cost.square_tile_swap(Problem(500, 3584, 14336), pair, h100, menu) is None
    for other in (
        GemmConfig(128, 192, 2),
        GemmConfig(128, 256, 2),
        GemmConfig(128, 128, 1, swap_ab=True),
    ):
        assert tile_cost.square_tile_swap(p, other, h100, menu) is None, other.label
    # narrower than 144 or in clusters the swaps are not the rule's
    narrow = [c for c in menu if c.tile_n < tile_cost.SQUARE_TILE_MIN_WIDTH or c.cluster == 2]
    assert tile_cost.square_tile_swap(p, pair, h100, narrow) is None
    # N = 3072, where A/B BA's swaps lost (3372x3072x3072: 1.30x the pick's time), keeps it
    assert tile_cost.square_tile_swap(Problem(3372, 3072, 3072), pair, h100, menu) is None
    # past 14 columns the swaps lost (A/B BB, 4183x3584x18944: 128x152 in 28 columns, 1.36x the
    # pick's time); at M 2897 the least-waste swap that fits 14 columns is 128x208 (A/B BB 0.997x)
    one = GemmConfig(128, 128, 1)
    assert tile_cost.square_tile_swap(Problem(4183, 3584, 18944), one, h100, menu) is None
    fit = tile_cost.square_tile_swap(Problem(2897, 3584, 4096), one, h100, menu)
    assert fit is not None and fit[0].tile_n == 208
    assert cdiv(2897, 200) > tile_cost.SQUARE_TILE_MAX_COLUMNS >= cdiv(2897, 208)
    # 1059x3584x8192: the best wide swap (128x144, 0.220) wastes more than the pick (0.123)
    q = Problem(1059, 3584, 8192)
    best = min(
        (c for c in menu if c.cluster == 1 and c.tile_n >= 144),
        key=lambda c: tile_cost.wasted_share(c, q),
    )
    one_cta = GemmConfig(128, 128, 1)
    assert tile_cost.wasted_share(best, q) > tile_cost.wasted_share(one_cta, q) + 0.02
    assert tile_cost.square_tile_swap(q, one_cta, h100, menu) is None
