"""The rung-8 cost model (harness.tile_cost) that the CuTeDSL and Gluon heuristics share."""

from __future__ import annotations

import pytest

from harness.tile_cost import HOPPER, TileCostModel


def _s(model: TileCostModel = HOPPER, **kw) -> float:
    args = {"ctas": 132, "k": 4096, "block_k": 64, "tile": (128, 256), "cluster": 1, "split_k": 1}
    return model.seconds(**{**args, **kw})


def test_time_counts_whole_waves_and_k_steps() -> None:
    one = _s()
    assert _s(ctas=1) == one  # a wave costs the same however full it is
    assert _s(ctas=133) == pytest.approx(2 * one)  # the 133rd CTA costs a second wave
    assert _s(k=8192) == pytest.approx(2 * one)
    # at full efficiency a 128x256x4096 tile per SM is its FLOPs at a 132nd of peak
    ideal = 2 * 128 * 256 * 4096 / (HOPPER.peak_flops / HOPPER.num_sms)
    assert one == pytest.approx(ideal / HOPPER.efficiency[(128, 256)])


def test_cluster_split_and_tile_size_move_the_estimate_the_right_way() -> None:
    assert _s(cluster=2) < _s()
    # the same rows x cols of output: one big tile beats four quarter tiles on one SM each wave
    assert _s(tile=(128, 256)) < _s(tile=(64, 128), ctas=4 * 132)
    # a split halves the k-steps but pays the reduce and the workspace round trip
    split = _s(split_k=2, workspace_bytes=2 * 4096 * 4096 * 4)
    assert split > _s() / 2
    ws = 2 * 4096 * 4096 * 4
    assert split - _s(split_k=2) == pytest.approx(2 * ws / HOPPER.hbm_bytes_per_s)
    assert _s(split_k=2) == pytest.approx(_s() / 2 + HOPPER.reduce_launch_s)


def test_split_pays_only_below_half_a_wave_within_one_wave_and_with_enough_k() -> None:
    assert HOPPER.split_pays(32, 4, 1024)
    assert not HOPPER.split_pays(67, 2, 4096)  # already over half a wave
    assert not HOPPER.split_pays(60, 4, 4096)  # 240 CTAs: more than one wave
    assert not HOPPER.split_pays(32, 4, 256)  # too little K per split
