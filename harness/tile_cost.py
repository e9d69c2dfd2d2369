"""A cost model for shape-adaptive GEMM heuristics (rung 8): which CTA tile, cluster and K split
fill the GPU best for a problem.

Backends whose rung 8 picks its config from a menu share this model, so the DSLs differ in the
kernels they can express, not in how they guess. Estimated time = waves of CTAs over the SMs x
k-tiles per CTA x one k-tile's MMA time at the tile's efficiency, plus, with split-K, the reduce
kernel's launch and the fp32 workspace's round trip. The efficiencies are estimates for a
warp-specialized wgmma kernel at one CTA per SM on an H100 SXM / H200; a tuned table
(``bench --tune``, ``tune-table``) corrects the choice per shape where measurements disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.gemm import cdiv

__all__ = ["HOPPER", "HOPPER_TILE_EFFICIENCY", "TileCostModel"]

#: Fraction of an SM's peak a CTA tile (wgmma rows, cols) reaches: a larger tile reuses each
#: loaded byte more and keeps more wgmma work in flight.
HOPPER_TILE_EFFICIENCY: Mapping[tuple[int, int], float] = {
    (128, 256): 0.97,
    (128, 128): 0.90,
    (128, 64): 0.75,
    (128, 32): 0.50,
    (128, 16): 0.30,
    (64, 256): 0.85,
    (64, 128): 0.72,
    (64, 64): 0.55,
    (64, 32): 0.35,
    (64, 16): 0.20,
}


@dataclass(frozen=True)
class TileCostModel:
    num_sms: int = 132
    peak_flops: float = 989e12  # dense fp16/bf16, datasheet
    #: what a small split-K workspace round trip sees, conservatively
    hbm_bytes_per_s: float = 3.0e12
    #: the split-K reduce kernel: launch gap plus its own latency
    reduce_launch_s: float = 1.5e-6
    #: a 2-CTA cluster multicasting B halves B's L2 -> SM traffic
    cluster2_gain: float = 1.03
    #: a split must keep at least this much of K, or the reduce costs more than it saves
    min_k_per_split: int = 512
    efficiency: Mapping[tuple[int, int], float] = field(
        default_factory=lambda: dict(HOPPER_TILE_EFFICIENCY)
    )

    def seconds(
        self,
        *,
        ctas: int,
        k: int,
        block_k: int,
        tile: tuple[int, int],
        cluster: int,
        split_k: int,
        workspace_bytes: int = 0,
    ) -> float:
        """Estimated time of ``ctas`` CTAs of ``tile`` (rows, cols) over K, split ``split_k``
        ways (``workspace_bytes`` of fp32 partials then written and read once)."""
        waves = cdiv(ctas, self.num_sms)
        k_steps = cdiv(cdiv(k, block_k), split_k)
        per_sm = self.peak_flops / self.num_sms
        eff = self.efficiency[tile]
        eff *= self.cluster2_gain if cluster == 2 else 1.0
        seconds = waves * k_steps * (2 * tile[0] * tile[1] * block_k / (eff * per_sm))
        if split_k > 1:
            seconds += self.reduce_launch_s + 2 * workspace_bytes / self.hbm_bytes_per_s
        return seconds

    def split_pays(self, unsplit_ctas: int, split_k: int, k_per_split: int) -> bool:
        """Split K only where the unsplit tiles fill at most half a wave, the splits still fit
        in one wave and each keeps enough of K."""
        return (
            2 * unsplit_ctas <= self.num_sms
            and unsplit_ctas * split_k <= self.num_sms
            and k_per_split >= self.min_k_per_split
        )


#: The machine the rung-8 heuristics count against (the launch itself uses the real SM count).
HOPPER = TileCostModel()
