"""CuTeDSL · sm_90a · rung 8 ``shape_adaptive`` — rung 7's kernel family, configured per problem.

Changes from rung 7: the configuration is chosen per problem. Rung 7's one 256x256 cluster tile
makes 16 cluster tiles (32 CTAs) at M = 1, N = 4096 and 16 at 1024^2, far below the 132 SMs.
Rung 8 keeps the kernel (persistent, warp-specialized, TMA ring, wgmma consumers, B multicast in
a cluster) and makes its shape a config (``R8Config``):

* ``tile_m`` x ``tile_n``: the CTA tile on the wgmma M x N sides. ``tile_m`` is 64 (one consumer
  warpgroup) or 128 (two, as rung 7); ``tile_n`` 16 to 256 (the wgmma N; 16 and 32 only swapped;
  160 for N = 10240, which 128-wide tiles quantize badly).
* ``cluster``: 1, or 2 CTAs along M sharing the B tile by TMA multicast (rung 7).
* ``swap_ab``: compute D^T[N, M] = B A^T. Small M then sits on the wgmma N side (n16 / n32 /
  n64, the narrowest that covers M) and N fills the M side (64 or 128 rows a CTA); A and B
  swap roles and D is written through a column-major view (D^T(i, j) at i + j * ld), with
  direct predicated stores: D's bytes are M/K of B's (< 2 % at M <= 64, K >= 4096), so the
  store path hardly matters; the weights (B) stream through TMA.
* ``split_k``: the k-tiles are divided evenly over ``split_k`` work units per output tile (the
  scheduler's L mode). Each writes its fp32 partial tile to its own slice of a workspace
  (``split_k`` x M x N fp32, allocated when the launcher is built, never in the launch);
  every element of every slice is written exactly once, so nothing is zeroed. A second small
  CuTeDSL kernel (``reduce``) then sums the slices in the order 0, 1, ... and writes D once:
  deterministic, no atomics.
* ``persistent``: 1 = grid min(tiles, SMs / cluster), CTAs loop over tiles (rung 7); below one
  wave that grid *is* the tile count. 0 = one CTA per work unit, the hardware handing out the
  waves (same device code: each CTA's scheduler loop runs once; only the host's grid differs).
* ``raster`` / ``group``: the scheduler's L2 grouping (rung 7), for unswapped, unsplit configs
  (the others run ungrouped: the grouping pads the tile count to a multiple of the group, and
  a swapped problem has one tile along N); both loops step over the padded work units, which
  the scheduler reports as valid. ``epilogue`` overlap / serial (rung 7; overlap needs the
  TMA-store epilogue: N % 8 == 0, no swap, no split).

Stages are derived, not a knob: as many as fit next to the epilogue buffers, at most 8 (12 for
the swapped tiles, which stream B from DRAM).

Shared-memory arithmetic (fp16/bf16; BLOCK_K = 64; 227 KiB usable, 1 KiB kept for barriers;
epilogue buffers tile_m x 32 x 2 B, min(4, tile_n / 32) of them (5 for 160 columns), only with
the TMA-store epilogue; "direct" = swap, split or N % 8 != 0):

    tile      one stage   epilogue   stages (TMA store)   stages (direct)
    128x256     48 KiB     32 KiB        4 (rung 7)             4
    128x160     36 KiB     40 KiB        5                      6
    128x128     32 KiB     32 KiB        6                      7
    128x64      24 KiB     16 KiB        8                      8
    64x256      40 KiB     16 KiB        5                      5
    64x160      28 KiB     20 KiB        7                      8
    64x128      24 KiB     16 KiB        8                      8
    64x64       16 KiB      8 KiB        8                      8
    128x16/32/64  18/20/24 KiB  -        -                  12/11/9   (swap_ab: tile_n covers M)
    64x16/32/64   10/12/16 KiB  -        -                     12

Barriers (as rung 7; one pair per stage, counts are arrivals per phase):

    name          arrives                                   waits        meaning
    ab_full[s]    producer lane (arrive.expect_tx of the    consumers    A + whole B tile of
                  stage's bytes) + TMA bytes of all CTAs                 stage s landed
    ab_empty[s]   one elected lane of each consumer warp    producer     stage s free in every
                  of every CTA of the cluster                            CTA of the cluster
                  (cluster x consumers x 4)

The split-K reduce runs after the GEMM kernel on the same stream: stream order is its only
synchronization.

``_heuristic`` (the cost model both rung 8s share, ``harness.tile_cost``): among the menu
entries it allows, the least estimated time, where the estimate is the largest of the MMA time
(waves x k-tiles at the tile's efficiency), the cold stream (bytes an SM is the first to load:
what bounds decode) and DRAM, plus a fifth of the other two (+ the reduce, with split-K). Swap
A and B when M <= 64 < N, with tile_n the narrowest of 16/32/64 covering M (so M = 1..16 gets
128 or 64 rows of N x 16 columns: a 16 / 8 KiB box of B per k-tile, as Gluon); the clusters
``HEURISTIC_CLUSTERS`` allows per tile (2 only on 128x256 / 128x160 / 128x128, 160 columns only
with 2); split-K only when the unsplit tiles fill at most half a wave,
the splits fit one wave and keep >= 512 of K each; rung 7's overlapped epilogue wherever it
applies. ``_ranked`` orders the menu the same way for ``bench --tune --tune-top N``, and a
tuned table (``tuned/<gpu>.json``, every ``sweep`` shape with M <= 2048 on the H200)
overrides the heuristic per shape.

TMA loads pass an explicit L2 cache policy (``TMA_CACHE_HINT``, CUTLASS C++'s EVICT_NORMAL):
CuTeDSL 4.8.1 otherwise emits ``.L2::cache_hint`` with a policy of 0 (SASS ``desc[URZ]``),
which neither CUTLASS C++ (0x1000000000000000) nor Triton (no hint) issues.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from backends.cutedsl import spec
from backends.cutedsl._host import CuteDslKernel, tma_store_variant
from backends.cutedsl._operands import operand_tensors
from backends.cutedsl._workarounds import padded_unit
from backends.cutedsl.sm90._epilogue import (
    EpilogueConfig,
    TmaStoreEpilogue,
    store_direct,
    tma_store_atom,
)
from backends.cutedsl.sm90.r7_multi_consumer import mma_k_tile
from harness.protocol import ConfigSpace, KernelConfig, Problem, cdiv
from harness.tile_cost import HOPPER

# -- constants -------------------------------------------------------------------------------
BLOCK_K = 64  # k-tile: one 128-byte swizzle row of fp16/bf16
SMEM_BYTES = 227 * 1024  # sm_90 dynamic shared memory per CTA
BARRIER_BYTES = 1024  # ab_full/ab_empty for up to MAX_STAGES, rounded up to the 1 KiB alignment
TMA_CACHE_HINT = 0x1000000000000000  # L2 policy EVICT_NORMAL as CUTLASS C++ passes (CacheHintSm90)
MAX_STAGES = 8  # beyond this the ring only holds more bytes than TMA latency needs
# Swapped (decode) tiles stream B from DRAM with no reuse: a deeper ring keeps more of it in
# flight per SM (128x16: 11 x 16 KiB; 64x16: 11 x 8 KiB), one CTA per SM being all that fits.
MAX_STAGES_SWAP = 12
EPI_N = 32  # epilogue sub-tile width (tile_m x 32, one TMA store)
MAX_EPI_STAGES = 4  # epilogue buffers in flight
PRODUCER_REGS = 40  # setmaxnreg.dec for the producer warpgroup
CONSUMER_REGS = 232  # setmaxnreg.inc for the consumer warpgroups
THREADS_PER_WG = 128
EPI_STORE_WARP = THREADS_PER_WG // 32  # first warp of the first consumer issues TMA stores
MAX_GRID_Z = 65535  # a non-persistent grid puts its clusters on grid.z
REDUCE_THREADS, REDUCE_VEC = 256, 4  # split-K reduce: threads a block, elements a thread


@dataclass(frozen=True)
class R8Config(KernelConfig):
    """Rung 8's knobs (module docstring)."""

    tile_m: int = 128  # wgmma M side of the CTA tile: 64 (one consumer warpgroup) or 128 (two)
    tile_n: int = 256  # wgmma N side: 16, 32, 64, 128, 160 or 256
    cluster: int = 2  # CTAs along M sharing (multicasting) the B tile
    swap_ab: bool = False  # compute D^T = B A^T (small M on the wgmma N side)
    split_k: int = 1  # work units per output tile along K (fp32 workspace + reduce kernel)
    persistent: bool = True  # grid min(tiles, SMs) looping over tiles; else one CTA per tile
    raster: str = "m"  # walk tiles along M ("m") or N ("n") within a group
    group: int = 8  # scheduler swizzle: clusters per L2 group
    epilogue: str = "overlap"  # "overlap": store tile i under tile i + 1's first MMAs; "serial"


def _menu() -> tuple[R8Config, ...]:
    """The curated menu: rung 7's family, then smaller tiles (cluster, grid and split
    variants), then the swap-AB family for small M (16, 32 or 64 columns: the narrowest that
    covers M). Every heuristic choice is on it."""
    menu = [
        R8Config(128, 256, 2, raster=raster, group=group, epilogue=epilogue)
        for group in (4, 8, 16)
        for raster in ("m", "n")
        for epilogue in ("overlap", "serial")
    ]
    for tm, tn in ((128, 256), (128, 128), (128, 64), (64, 256), (64, 128), (64, 64)):
        for cluster in (1, 2):
            menu += [R8Config(tm, tn, cluster, epilogue=e) for e in ("overlap", "serial")]
        menu.append(R8Config(tm, tn, 1, persistent=False, epilogue="serial"))
        menu += [R8Config(tm, tn, 1, split_k=s, epilogue="serial") for s in (2, 4, 8)]
    # 160 columns: N = 10240 in 64 tiles, not 80 (128x128), so M = 128 splits into one wave
    # (64x160 or 128x160 x 2 splits: 128 CTAs) and M = 1024 fills 3.9 waves, not 4.8.
    menu += [R8Config(128, 160, cluster, epilogue="overlap") for cluster in (1, 2)]
    menu += [R8Config(64, 160, 1, epilogue="overlap")]
    menu += [R8Config(tm, 160, 1, split_k=2, epilogue="serial") for tm in (128, 64)]
    for tm in (128, 64):
        for tn in (16, 32, 64):
            menu += [
                R8Config(tm, tn, 1, swap_ab=True, split_k=s, epilogue="serial")
                for s in (1, 2, 4, 8)
            ]
    return tuple(dict.fromkeys(menu))  # rung 7's default appears twice


MENU = _menu()


def _oriented(problem: Problem, config: R8Config) -> tuple[int, int]:
    """(rows, cols) of the output the kernel computes: (M, N), or (N, M) when swapped."""
    return (problem.n, problem.m) if config.swap_ab else (problem.m, problem.n)


def _tiles(problem: Problem, config: R8Config) -> tuple[int, int]:
    rows, cols = _oriented(problem, config)
    return cdiv(rows, config.tile_m), cdiv(cols, config.tile_n)


def _tma_epilogue(tma_store: bool, config: R8Config) -> bool:
    """The TMA-store epilogue (stmatrix -> shared -> TMA) is used: D row-major, rows aligned."""
    return tma_store and not config.swap_ab and config.split_k == 1


def workspace_elems(problem: Problem, config: R8Config | None) -> int:
    """fp32 elements of the split-K workspace (0 without split)."""
    if config is None or config.split_k == 1:
        return 0
    return config.split_k * problem.m * problem.n


def _valid(problem: Problem, config: R8Config) -> str | None:
    if config.epilogue == "overlap" and not _tma_epilogue(tma_store_variant(problem), config):
        return "overlap needs the TMA-store epilogue (N % 8 == 0, no swap_ab, no split_k)"
    if config.split_k > cdiv(problem.k, BLOCK_K):
        return f"split_k={config.split_k} leaves a split without a k-tile (K={problem.k})"
    if workspace_elems(problem, config) >= 2**31:
        return "split-K workspace exceeds 2^31 elements (32-bit indexing)"
    tm, tn = _tiles(problem, config)
    clusters = cdiv(tm, config.cluster) * tn * config.split_k
    if not config.persistent and clusters > MAX_GRID_Z:
        return f"non-persistent grid of {clusters} clusters exceeds grid.z {MAX_GRID_Z}"
    return None


#: The clusters the heuristic may pick per tile (any other tile: cluster 1). Cluster 2 where its
#: halved B traffic matters (the Gluon rung 8's menu rule; 128x160 is CuTeDSL's); 160 columns
#: only with cluster 2: one CTA, they lost where the cost model preferred them (H200,
#: 128x10240x8192: 64x160 84.5 %, 128x160 76.4 % of cuBLAS, 128x128 91.4 %). Every menu entry
#: stays available to ``bench --tune``.
HEURISTIC_CLUSTERS: dict[tuple[int, int], tuple[int, ...]] = {
    (128, 256): (1, 2),
    (128, 160): (2,),
    (128, 128): (1, 2),
    (64, 160): (),
}


def _shape(config: R8Config) -> dict[str, Any]:
    """``config`` as the cost model sees it."""
    tile = (config.tile_m, config.tile_n)
    return dict(swap_ab=config.swap_ab, tile=tile, cluster=config.cluster, split_k=config.split_k)


def _ctas(problem: Problem, config: R8Config) -> int:
    """CTAs of ``config`` on ``problem``: tiles (rows padded to whole clusters) x splits."""
    return HOPPER.ctas(problem, **_shape(config))


def _cost(problem: Problem, config: R8Config) -> float:
    """Estimated seconds (``harness.tile_cost``: the slowest of MMA, cold weight stream and
    DRAM, plus the reduce and the fp32 workspace round trip with split-K)."""
    return HOPPER.seconds(problem, block_k=BLOCK_K, **_shape(config))


def _variant(problem: Problem, c: R8Config) -> bool:
    """``c`` changes what the cost model cannot see: raster, group, a non-persistent grid or
    the other epilogue than the one the problem's D allows to overlap."""
    want = "overlap" if _tma_epilogue(tma_store_variant(problem), c) else "serial"
    return c.raster != "m" or c.group != 8 or not c.persistent or c.epilogue != want


def _ranked(problem: Problem) -> list[R8Config]:
    """Every valid menu config, cheapest first by ``_cost`` (what ``bench --tune --tune-top``
    times first), the variants the model cannot tell apart after all the others; ties go to
    the larger tile, then cluster 2, then fewer splits."""
    valid = [c for c in MENU if _valid(problem, c) is None]
    key = {
        c: (_variant(problem, c), _cost(problem, c), -c.tile_m * c.tile_n, -c.cluster, c.split_k)
        for c in valid
    }
    return sorted(valid, key=key.__getitem__)


def _heuristic(problem: Problem) -> R8Config:
    """The menu config of least ``_cost`` (ties: larger tile, then cluster 2, then fewer splits),
    among:

    * swap-AB when M <= 64 < N, with the narrowest tile_n of 16/32/64 that covers M: N then
      fills 128 (or 64) wgmma rows per CTA and every k-tile streams a 16 (8) KiB box of B;
    * the clusters ``HEURISTIC_CLUSTERS`` allows per tile (2 only for 128x256, 128x160 and
      128x128; 160 columns only with 2); split-K only where the unsplit tiles
      fill at most half a wave, the splits still fit one wave and each keeps >= 512 of K;
    * persistent, raster m, group 8, and rung 7's overlapped epilogue wherever it applies.

    At large M x N this is rung 7's configuration (128x256, cluster 2). ``bench --tune`` times
    the whole menu, and a tuned table (``tuned/<gpu>.json``) overrides this per shape.
    """
    swap = problem.m <= 64 < problem.n
    cover = next(tn for tn in (16, 32, 64) if tn >= problem.m) if swap else None

    def allowed(c: R8Config) -> bool:
        if c.swap_ab != swap or _variant(problem, c):
            return False
        if swap and c.tile_n != cover:
            return False
        if c.cluster not in HEURISTIC_CLUSTERS.get((c.tile_m, c.tile_n), (1,)):
            return False
        if c.split_k == 1:
            return True
        unsplit = _ctas(problem, c) // c.split_k
        return HOPPER.split_pays(unsplit, c.split_k, problem.k // c.split_k)

    return next(c for c in _ranked(problem) if allowed(c))


# -- the kernel ------------------------------------------------------------------------------
class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T for one ``R8Config``: persistent (or not) warp-specialized
    wgmma, optional B multicast, swap-AB and split-K (+ reduce kernel)."""

    def __init__(self, num_sms: int, tma_store: bool, config: R8Config):
        self.config = config
        self.tile_m, self.tile_n = config.tile_m, config.tile_n
        self.num_consumers = config.tile_m // 64
        self.num_threads = (1 + self.num_consumers) * THREADS_PER_WG
        self.cluster_m = config.cluster
        self.cluster_mn = (config.cluster, 1)
        self.swap, self.split_k = config.swap_ab, config.split_k
        self.tma_store = tma_store  # D's rows are 16-byte aligned (N % 8 == 0)
        self.tma_epi = _tma_epilogue(tma_store, config)
        self.overlap = self.tma_epi and config.epilogue == "overlap"
        # The scheduler's L2 grouping rounds the tile count along N (raster m) or M (raster n)
        # up to a multiple of the group, and the padded work units are *valid* tiles to it:
        # unguarded, each runs the whole K loop (TMA of the real rows of the other operand, MMA
        # on zeros) and stores nothing. Swapped, the N side is cdiv(M, tile_n) = 1 tile: 8 units
        # of work for each real one (the first H200 run: 13-23 % of cuBLAS at M = 1, 16).
        # Grouping only pays for large M x N, so swap and split-K configs run ungrouped (no
        # padding, tiles dealt round-robin); the grouped ones step over padded units
        # (``_workarounds.padded_unit``).
        self.l2_group = 1 if config.swap_ab or config.split_k > 1 else config.group
        self.raster_m = config.raster == "m"
        # Non-persistent: as many clusters as there are work units (grid.z bound in _valid).
        self.max_active_clusters = num_sms // config.cluster if config.persistent else MAX_GRID_Z
        self.tile_mnk = (self.tile_m, self.tile_n, BLOCK_K)
        self.epi_tile = (self.tile_m, EPI_N)
        # (>= 1: a swap tile of 16 columns has no TMA-store epilogue but still names a plan).
        # Every tile starts at buffer 0, so the sub-tiles must fill whole buffer rounds: the
        # 160-wide tile's five sub-tiles take five buffers.
        subtiles = max(1, self.tile_n // EPI_N)
        self.epi_stages = subtiles if subtiles % MAX_EPI_STAGES else MAX_EPI_STAGES
        epi_bytes = self.tile_m * EPI_N * 2 * self.epi_stages if self.tma_epi else 0
        stage_bytes = (self.tile_m + self.tile_n) * BLOCK_K * 2
        max_stages = MAX_STAGES_SWAP if self.swap else MAX_STAGES
        self.num_stages = min(max_stages, (SMEM_BYTES - BARRIER_BYTES - epi_bytes) // stage_bytes)
        self.epilogue = EpilogueConfig(
            (self.tile_m, self.tile_n),
            self.epi_tile,
            self.epi_stages,
            self.num_consumers * THREADS_PER_WG,
            EPI_STORE_WARP,
        )

    # -- host: layouts, TMA descriptors, launches -------------------------------------------
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        d_ptr: cute.Pointer,
        w_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.dtype = a_ptr.dtype
        mA, mB, mD = operand_tensors(a_ptr, b_ptr, d_ptr, m, n, k, self.tma_store)
        rows, cols = m, n
        if cutlass.const_expr(self.swap):
            # D^T = B A^T: B is the MMA's "A" (rows over N), A its "B"; D seen column-major.
            mA, mB = mB, mA
            mD = cute.make_tensor(mD.iterator, cute.select(mD.layout, mode=[1, 0]))
            rows, cols = n, m
        # Split-K workspace: slice s holds the fp32 partial of the s-th K range, in the same
        # orientation as mD (so the reduce reads every slice as plain M x N row-major).
        mn = m * n
        if cutlass.const_expr(self.swap):
            w_layout = cute.make_layout((rows, cols, self.split_k), stride=(1, n, mn))
        else:
            w_layout = cute.make_layout((rows, cols, self.split_k), stride=(n, 1, mn))
        mW = cute.make_tensor(w_ptr, w_layout)

        # MMA: num_consumers warpgroups stacked along M, each m64 x tile_n over its 64 rows.
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (self.num_consumers, 1, 1),
            tiler_mn=(64, self.tile_n),
        )

        # -- shared-memory plan: swizzled K-major A/B rings, row-major epilogue buffers ------
        row = LayoutEnum.ROW_MAJOR
        stages = self.num_stages
        sA_layout = sm90_utils.make_smem_layout_a(row, self.tile_mnk, self.dtype, stages)
        sB_layout = sm90_utils.make_smem_layout_b(row, self.tile_mnk, self.dtype, stages)
        sD_layout = sm90_utils.make_smem_layout_epi(self.dtype, row, self.epi_tile, self.epi_stages)

        # Only the TMA-store epilogue stages D in shared memory; the others spend it on stages.
        if cutlass.const_expr(self.tma_epi):

            @cute.struct
            class SharedStorage:
                ab_barriers: cute.struct.MemRange[cutlass.Int64, stages * 2]
                sA: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024
                ]
                sB: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024
                ]
                sD: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sD_layout)], 1024
                ]

        else:

            @cute.struct
            class SharedStorage:
                ab_barriers: cute.struct.MemRange[cutlass.Int64, stages * 2]
                sA: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024
                ]
                sB: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024
                ]

        self.shared_storage = SharedStorage

        # TMA loads: A plain, B multicast over the cluster (each CTA issues 1/cluster of it).
        a_smem = cute.slice_(sA_layout, (None, None, 0))
        b_smem = cute.slice_(sB_layout, (None, None, 0))
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, a_smem, (self.tile_m, BLOCK_K)
        )
        if cutlass.const_expr(self.cluster_m > 1):
            tma_b, gB_tma = cpasync.make_tiled_tma_atom(
                cpasync.CopyBulkTensorTileG2SMulticastOp(),
                mB,
                b_smem,
                (self.tile_n, BLOCK_K),
                num_multicast=self.cluster_m,
            )
        else:
            tma_b, gB_tma = cpasync.make_tiled_tma_atom(
                cpasync.CopyBulkTensorTileG2SOp(), mB, b_smem, (self.tile_n, BLOCK_K)
            )
        tma_d, gD_out = tma_store_atom(mD, sD_layout, self.epi_tile, self.tma_epi)

        # Work units: output tiles x K splits (the scheduler's L mode carries the split).
        tiles_mnl = (
            cute.ceil_div(rows, self.tile_m),
            cute.ceil_div(cols, self.tile_n),
            self.split_k,
        )
        sched_params = utils.PersistentTileSchedulerParams(
            tiles_mnl, (*self.cluster_mn, 1), self.l2_group, self.raster_m
        )
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(
            sched_params, self.max_active_clusters
        )

        self.kernel(
            tma_a,
            gA_tma,
            tma_b,
            gB_tma,
            tma_d,
            gD_out,
            mW,
            tiled_mma,
            sA_layout,
            sB_layout,
            sD_layout,
            sched_params,
        ).launch(
            grid=grid,
            block=[self.num_threads, 1, 1],
            cluster=(*self.cluster_mn, 1),
            min_blocks_per_mp=1,
            stream=stream,
        )

        if cutlass.const_expr(self.split_k > 1):
            # D is contiguous (row pitch N), so the reduce is over flat M*N elements.
            mW_flat = cute.make_tensor(w_ptr, cute.make_layout((mn, self.split_k), stride=(1, mn)))
            mD_flat = cute.make_tensor(d_ptr, cute.make_layout(mn))
            per_block = REDUCE_THREADS * REDUCE_VEC
            self.reduce(mW_flat, mD_flat, mn).launch(
                grid=[cute.ceil_div(mn, per_block), 1, 1],
                block=[REDUCE_THREADS, 1, 1],
                stream=stream,
            )

    # -- device: the GEMM --------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_d: cute.CopyAtom | cute.Tensor,
        mD: cute.Tensor,
        mW: cute.Tensor,
        tiled_mma: cute.TiledMma,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sD_layout: cute.ComposedLayout,
        sched_params: utils.PersistentTileSchedulerParams,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg_idx = cute.arch.make_warp_uniform(tidx // THREADS_PER_WG)
        stages = self.num_stages

        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(self.tma_epi):
                cpasync.prefetch_descriptor(tma_d)

        cta_layout = cute.make_layout((*self.cluster_mn, 1))
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster_coord = cta_layout.get_flat_coord(cta_rank)
        # B goes to every CTA that shares this CTA's N coordinate (the whole cluster).
        b_mcast_mask = cute.make_layout_image_mask(cta_layout, cluster_coord, mode=0)

        # -- shared memory ---------------------------------------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)

        # -- barriers (table in the module docstring) -------------------------------------------
        stage_bytes = cute.size_in_bytes(
            self.dtype, cute.slice_(sA_layout, (None, None, 0))
        ) + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0)))
        consumer_arrivals = self.cluster_m * self.num_consumers * (THREADS_PER_WG // 32)
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.ab_barriers.data_ptr(),
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arrivals),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)),
            defer_sync=True,
        )
        # With a cluster the peer multicasts into our shared memory and arrives on our
        # barriers: the inits must be visible cluster-wide first (a CTA barrier without one).
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        # -- global tiles and their TMA partitions ------------------------------------------
        tile_mk, tile_nk = (self.tile_m, BLOCK_K), (self.tile_n, BLOCK_K)
        gA = cute.local_tile(mA, tile_mk, (None, None))  # (bM, bK, RestM, RestK)
        gB = cute.local_tile(mB, tile_nk, (None, None))  # (bN, bK, RestN, RestK)
        gD = cute.local_tile(mD, (self.tile_m, self.tile_n), (None, None))
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        # B split cluster_m ways: this CTA's rank along M picks its slice of the B tile.
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cluster_coord[0],
            cute.make_layout(self.cluster_m),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        k_tiles = cute.size(gA, mode=[3])
        # Real tile counts: the grouped scheduler pads the count along N (raster m) or M
        # (raster n) up to the group; both loops step over those padded units (``padded_unit``).
        tiles_m, tiles_n = cute.size(gA, mode=[2]), cute.size(gB, mode=[2])
        rank_m = cluster_coord[0]

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)

        # -- producer warpgroup: warp 0 walks the work units, an elected lane issues TMA ------
        if wg_idx == 0:
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp_idx == 0:
                sched = utils.StaticPersistentTileScheduler.create(
                    sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
                )
                work = sched.initial_work_tile_info()
                prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
                if cutlass.const_expr(self.l2_group > 1):
                    while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                        sched.advance_to_next_work()
                        work = sched.get_current_work()
                while work.is_valid_tile:
                    tile_m, tile_n, split = work.tile_idx
                    # Split s owns k-tiles [k_tiles*s/S, k_tiles*(s+1)/S): never empty, as
                    # _valid keeps split_k <= k_tiles.
                    k_begin = k_tiles * split // self.split_k
                    k_end = k_tiles * (split + 1) // self.split_k
                    for kt in range(k_begin, k_end):
                        ab_pipe.producer_acquire(prod)
                        bar = ab_pipe.producer_get_barrier(prod)
                        cute.copy(
                            tma_a,
                            tAgA[(None, tile_m, kt)],
                            tAsA[(None, prod.index)],
                            tma_bar_ptr=bar,
                            cache_policy=cutlass.Int64(TMA_CACHE_HINT),
                        )
                        if cutlass.const_expr(self.cluster_m > 1):
                            cute.copy(
                                tma_b,
                                tBgB[(None, tile_n, kt)],
                                tBsB[(None, prod.index)],
                                tma_bar_ptr=bar,
                                cache_policy=cutlass.Int64(TMA_CACHE_HINT),
                                mcast_mask=b_mcast_mask,
                            )
                        else:
                            cute.copy(
                                tma_b,
                                tBgB[(None, tile_n, kt)],
                                tBsB[(None, prod.index)],
                                tma_bar_ptr=bar,
                                cache_policy=cutlass.Int64(TMA_CACHE_HINT),
                            )
                        prod.advance()
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                    if cutlass.const_expr(self.l2_group > 1):
                        while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                            sched.advance_to_next_work()
                            work = sched.get_current_work()
                # No remote arrive may target this CTA's barriers after it exits.
                ab_pipe.producer_tail(prod)

        # -- consumer warpgroups: wgmma over the ring, then the epilogue --------------------
        if wg_idx > 0:
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            consumer_tidx = tidx - THREADS_PER_WG
            thr_mma = tiled_mma.get_slice(consumer_tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape[:3], cutlass.Float32)
            tile_mn = (self.tile_m, self.tile_n)

            if cutlass.const_expr(self.tma_epi):
                sD = storage.sD.get_tensor(sD_layout.outer, swizzle=sD_layout.inner)
                epi = TmaStoreEpilogue(
                    self.epilogue, tiled_mma, consumer_tidx, sD, tma_d, mD, self.dtype
                )
                tRS_acc = epi.retile(acc)

            sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
            )
            work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            if cutlass.const_expr(self.overlap):
                # The finished tile waits here, in D's type, under the next tile's first MMAs.
                rD_tile = cute.make_rmem_tensor(acc.shape, self.dtype)
                tRS_rD_tile = epi.retile(rD_tile)
                prev_m = cutlass.Int32(0)
                prev_n = cutlass.Int32(0)
                tiles_done = cutlass.Int32(0)
            if cutlass.const_expr(self.l2_group > 1):
                while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
            while work.is_valid_tile:
                tile_m, tile_n, split = work.tile_idx
                num_k = k_tiles * (split + 1) // self.split_k - k_tiles * split // self.split_k
                # Mainloop as rung 7: one wgmma batch in flight, a stage released only after
                # the batch that read it retired. Every work unit has >= 1 k-tile.
                acc.fill(0.0)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                warpgroup.fence()
                read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                if cutlass.const_expr(self.overlap):
                    if tiles_done > 0:
                        epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
                for _kt in range(1, num_k):
                    read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                    warpgroup.wait_group(1)
                    ab_pipe.consumer_release(release)
                    release.advance()
                warpgroup.wait_group(0)
                ab_pipe.consumer_release(release)
                release.advance()

                if cutlass.const_expr(self.split_k > 1):
                    # fp32 partial into this split's workspace slice, predicated on the edge.
                    mW_s = mW[(None, None, split)]
                    store_direct(thr_mma, acc, mW_s, tile_mn, tile_m, tile_n, cutlass.Float32)
                elif cutlass.const_expr(self.overlap):
                    rD_tile.store(acc.load().to(self.dtype))
                    prev_m, prev_n = tile_m, tile_n
                    tiles_done += 1
                elif cutlass.const_expr(self.tma_epi):
                    epi.store(tRS_acc, tile_m, tile_n, warp_idx)
                else:
                    # Swapped (column-major view of D) or N % 8 != 0: direct predicated stores.
                    store_direct(thr_mma, acc, mD, tile_mn, tile_m, tile_n, self.dtype)

                sched.advance_to_next_work()
                work = sched.get_current_work()
                if cutlass.const_expr(self.l2_group > 1):
                    while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                        sched.advance_to_next_work()
                        work = sched.get_current_work()

            if cutlass.const_expr(self.overlap):
                if tiles_done > 0:
                    epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
            if cutlass.const_expr(self.tma_epi):
                epi.drain()

    # -- device: the split-K reduce ----------------------------------------------------------
    @cute.kernel
    def reduce(self, mW: cute.Tensor, mD: cute.Tensor, mn: cutlass.Int32):
        """D[e] = sum over s = 0, 1, ... of W[e, s], in that order (bit-identical run to run).
        A block covers REDUCE_VEC x REDUCE_THREADS consecutive elements; at each step its
        threads touch consecutive addresses (coalesced)."""
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        base = bidx * (REDUCE_THREADS * REDUCE_VEC) + tidx
        for v in cutlass.range_constexpr(REDUCE_VEC):
            e = base + v * REDUCE_THREADS
            if e < mn:
                total = cutlass.Float32(0.0)
                for s in cutlass.range_constexpr(self.split_k):
                    total = total + mW[e, s]
                mD[e] = total.to(self.dtype)


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, tma_store, config: Gemm(num_sms, tma_store, config),
    variant_of=tma_store_variant,
    space=ConfigSpace(MENU, _heuristic, module=__name__, valid=_valid, rank=_ranked),
    workspace=workspace_elems,
)
