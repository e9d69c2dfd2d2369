"""A cost model for shape-adaptive GEMM heuristics (rung 8): which CTA tile, cluster and K split
fill the GPU best for a problem.

Backends whose rung 8 picks its config from a menu share this model, so the DSLs differ in the
kernels they can express, not in how they guess. A config's time is a roofline of three terms,
plus the split-K reduction:

* **MMA**: waves of CTAs over the SMs x k-tiles per CTA x one k-tile's MMA time at the tile's
  efficiency (``HOPPER_TILE_EFFICIENCY``);
* **cold stream**: the bytes an SM loads that no other CTA loaded before it (a tile of A is
  shared by the CTAs of its tile row, a tile of B by those of its column: 1/reuse of each box
  is cold) at what one SM pulls from DRAM (``sm_stream_bytes_per_s``) — what bounds decode,
  where every CTA streams its own slice of the weights;
* **DRAM**: A, B and D once at ``hbm_bytes_per_s``.

The pipeline overlaps the three, but not perfectly: the estimate is the largest plus
``overlap_loss`` of the other two. With split-K, the reduce kernel's launch and the fp32
workspace's round trip are added. The constants were fitted (least squares on log time) to 690
rung 7/8 timings of an H200 over the ``sweep`` suite and a 42-config Gluon rung-8 tune of 11
decode shapes (timer v3); on those (in sample) the model's first choice is within 1 % of the
fastest measured on all 11. It is a guide for an untuned shape and for which configs
``bench --tune --tune-top N`` times; a tuned table (``bench --tune``, ``tune-table``) corrects
the choice per shape where measurements disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.gemm import Problem, cdiv, element_size

__all__ = ["HOPPER", "HOPPER_TILE_EFFICIENCY", "TileCostModel"]

#: Fraction of an SM's peak MMA rate a CTA tile (wgmma rows, cols) reaches: a larger tile
#: keeps more wgmma work in flight per byte it waits for.
HOPPER_TILE_EFFICIENCY: Mapping[tuple[int, int], float] = {
    (128, 256): 0.97,
    (128, 160): 0.92,
    (128, 128): 0.90,
    (128, 64): 0.75,
    (128, 32): 0.50,
    (128, 16): 0.30,
    (64, 256): 0.85,
    (64, 160): 0.70,
    (64, 128): 0.72,
    (64, 64): 0.55,
    (64, 32): 0.35,
    (64, 16): 0.20,
}


@dataclass(frozen=True)
class TileCostModel:
    num_sms: int = 132
    peak_flops: float = 989e12  # dense fp16/bf16, datasheet
    #: A, B and D once, and the split-K workspace (fitted; the H200's datasheet says 4.8e12)
    hbm_bytes_per_s: float = 3.0e12
    #: cold bytes one SM streams from DRAM (fitted: TMA latency x the bytes a ring keeps in flight)
    sm_stream_bytes_per_s: float = 80e9
    #: the split-K reduce kernel: its launch gap and latency (fitted)
    reduce_launch_s: float = 4e-6
    #: the share of the two lesser terms the pipeline does not hide (fitted)
    overlap_loss: float = 0.2
    #: a 2-CTA cluster multicasting B halves B's L2 -> SM traffic
    cluster2_gain: float = 1.03
    #: a split must keep at least this much of K, or the reduce costs more than it saves
    min_k_per_split: int = 512
    efficiency: Mapping[tuple[int, int], float] = field(
        default_factory=lambda: dict(HOPPER_TILE_EFFICIENCY)
    )

    def ctas(
        self, problem: Problem, *, swap_ab: bool, tile: tuple[int, int], cluster: int, split_k: int
    ) -> int:
        """CTAs of ``tile`` (rows, cols in the kernel's view: with ``swap_ab`` the rows run along
        N) over ``problem``'s output: tile rows padded to whole clusters, x tile columns, x K
        splits."""
        rows, cols = _oriented(problem, swap_ab)
        return cdiv(rows, tile[0] * cluster) * cluster * cdiv(cols, tile[1]) * split_k

    def seconds(
        self,
        problem: Problem,
        *,
        swap_ab: bool,
        block_k: int,
        tile: tuple[int, int],
        cluster: int,
        split_k: int,
    ) -> float:
        """Estimated time of ``problem`` (D[M, N] = A[M, K] B[N, K]^T) with ``tile`` (as in
        :meth:`ctas`), split ``split_k`` ways."""
        m, n, k = problem.m, problem.n, problem.k
        elem_bytes = element_size(problem.dtype)
        rows, cols = _oriented(problem, swap_ab)
        ctas = self.ctas(problem, swap_ab=swap_ab, tile=tile, cluster=cluster, split_k=split_k)
        waves = cdiv(ctas, self.num_sms)
        k_steps = waves * cdiv(cdiv(k, block_k), split_k)
        eff = self.efficiency[tile] * (self.cluster2_gain if cluster == 2 else 1.0)
        mma = k_steps * 2 * tile[0] * tile[1] * block_k / (eff * self.peak_flops / self.num_sms)
        row_tiles, col_tiles = cdiv(rows, tile[0]), cdiv(cols, tile[1])
        cold = (tile[0] / col_tiles + tile[1] / row_tiles) * block_k * elem_bytes
        stream = k_steps * cold / self.sm_stream_bytes_per_s
        dram = (m * k + n * k + m * n) * elem_bytes / self.hbm_bytes_per_s
        terms = (mma, stream, dram)
        seconds = max(terms) + self.overlap_loss * (sum(terms) - max(terms))
        if split_k > 1:
            workspace = split_k * m * n * 4
            seconds += self.reduce_launch_s + 2 * workspace / self.hbm_bytes_per_s
        return seconds

    def split_pays(self, unsplit_ctas: int, split_k: int, k_per_split: int) -> bool:
        """Split K only where the unsplit tiles fill at most half a wave, the splits still fit
        in one wave and each keeps enough of K."""
        return (
            2 * unsplit_ctas <= self.num_sms
            and unsplit_ctas * split_k <= self.num_sms
            and k_per_split >= self.min_k_per_split
        )


def _oriented(problem: Problem, swap_ab: bool) -> tuple[int, int]:
    """(rows, cols) of the output in the kernel's view: (M, N), or (N, M) with swap-AB."""
    return (problem.n, problem.m) if swap_ab else (problem.m, problem.n)


#: The machine the rung-8 heuristics count against (the launch itself uses the real SM count).
HOPPER = TileCostModel()
