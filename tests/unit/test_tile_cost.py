"""The rung-8 cost model (harness.tile_cost) that the CuTeDSL and Gluon heuristics share."""

from __future__ import annotations

import pytest

from harness.gemm import Problem
from harness.tile_cost import HOPPER, TileCostModel


def _s(model: TileCostModel = HOPPER, m=8192, n=8192, k=4096, **kw) -> float:
    args = {"swap_ab": False, "block_k": 64, "tile": (128, 256), "cluster": 1, "split_k": 1}
    return model.seconds(Problem(m, n, k), **{**args, **kw})


def test_ctas_pad_tile_rows_to_whole_clusters_and_follow_swap_ab() -> None:
    def ctas(m: int, n: int, swap_ab: bool = False, **kw) -> int:
        return HOPPER.ctas(Problem(m, n, 64), swap_ab=swap_ab, **kw)

    assert ctas(8192, 8192, tile=(128, 256), cluster=2, split_k=1) == 64 * 32
    assert ctas(129, 16, tile=(128, 16), cluster=2, split_k=3) == 2 * 1 * 3
    assert ctas(100, 300, tile=(64, 128), cluster=1, split_k=1) == 2 * 3
    # swapped, N runs along the tile rows: 16 x 129 -> 129 rows of N, 16 columns of M
    assert ctas(16, 129, swap_ab=True, tile=(128, 16), cluster=2, split_k=3) == 2 * 1 * 3


def test_compute_bound_time_counts_whole_waves_and_k_steps() -> None:
    mma_only = TileCostModel(overlap_loss=0.0)  # the MMA term alone, the others fully hidden
    one = _s(mma_only)  # 8192^2 / (128 x 256) = 2048 CTAs: 16 waves of 132 (the last not full)
    assert _s(mma_only, k=8192) == pytest.approx(2 * one)
    assert _s(mma_only, m=8192 + 2 * 128) == pytest.approx(one)  # 2112 CTAs: still 16 waves
    assert _s(mma_only, m=8192 + 3 * 128) == pytest.approx(one * 17 / 16)  # 2144: a 17th wave
    ideal = 16 * 2 * 128 * 256 * 4096 / (HOPPER.peak_flops / HOPPER.num_sms)
    assert one == pytest.approx(ideal / HOPPER.efficiency[(128, 256)])
    # the pipeline hides most, not all, of the DRAM and streaming terms
    assert one < _s() < 1.1 * one


def test_cluster_split_and_tile_size_move_the_estimate_the_right_way() -> None:
    assert _s(cluster=2) < _s()
    assert _s(tile=(128, 256)) < _s(tile=(64, 128))
    # a split halves the k-steps but pays the reduce and the fp32 workspace round trip
    m, n, k = 128, 4096, 16384
    unsplit = _s(m=m, n=n, k=k, tile=(128, 128))
    split = _s(m=m, n=n, k=k, tile=(128, 128), split_k=4)
    assert split < unsplit  # 32 tiles on 132 SMs: four splits fill the GPU
    ws = 4 * m * n * 4
    assert split >= HOPPER.reduce_launch_s + 2 * ws / HOPPER.hbm_bytes_per_s


def test_decode_is_bound_by_streaming_the_weights() -> None:
    # M = 1: swap-AB puts N on the tile rows; every CTA streams its own rows of B from DRAM
    kw = {"m": 1, "n": 8192, "k": 8192, "swap_ab": True, "tile": (64, 16)}
    t = _s(**kw)
    weights = 8192 * 8192 * 2
    assert t >= weights / HOPPER.hbm_bytes_per_s
    # half the CTAs (128-row tiles) stream twice the cold bytes each, at the same DRAM bound
    assert _s(**{**kw, "tile": (128, 16)}) >= t
    # not swapping wastes 63 of 64 tile rows for no gain (the bound is the same weights)
    assert _s(**{**kw, "swap_ab": False, "tile": (64, 64)}) >= t
    # a split adds the reduce to a time that streaming the weights already bounds
    assert _s(**kw, split_k=2) > t


def test_split_pays_only_below_half_a_wave_within_one_wave_and_with_enough_k() -> None:
    assert HOPPER.split_pays(32, 4, 1024)
    assert not HOPPER.split_pays(67, 2, 4096)  # already over half a wave
    assert not HOPPER.split_pays(60, 4, 4096)  # 240 CTAs: more than one wave
    assert not HOPPER.split_pays(32, 4, 256)  # too little K per split
