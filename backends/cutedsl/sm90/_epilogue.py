"""The output path every Hopper rung from 2 up shares: accumulators -> D.

Two ways out, chosen per problem at compile time (``_host.tma_store_variant``):

* D's rows 16-byte aligned (N % 8 == 0): registers -> shared memory (``stmatrix``) -> global
  (TMA store), in ``epi_tile`` sub-tiles rotating over ``epi_stages`` shared buffers. The TMA
  store clips at the matrix edge, so ragged M and N need nothing more.
* otherwise: each thread writes its accumulator elements straight to global memory, predicated
  on the matrix edge (TMA cannot address rows that are not 16-byte aligned).

Barriers of the TMA-store path (per sub-tile; ``threads`` are the threads that hold
accumulators, one warpgroup or two):

    name            arrives / waits            meaning
    epi_bar (1st)   every thread, after its    the sub-tile is complete in shared memory and
                    stmatrix + proxy fence     visible to the async proxy: the store may go
    epi_bar (2nd)   every thread               the store warp has made sure the buffer that
                                               will be written next is no longer being read

``PipelineTmaStore`` is the store warp's bulk-group bookkeeping: ``producer_commit`` closes the
group of the store just issued, ``producer_acquire`` waits until at most ``epi_stages - 1``
groups still read shared memory, ``producer_tail`` drains all of them before the CTA exits.
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warp
from cutlass.tensor_utils import LayoutEnum


def tma_store_atom(
    mD: cute.Tensor, sD_layout: cute.ComposedLayout, epi_tile: tuple[int, int], tma_store: bool
) -> tuple[cute.CopyAtom | cute.Tensor, cute.Tensor]:
    """Host side: the TMA-store atom of D and its coordinate tensor, or D itself for the
    direct-store path."""
    if tma_store:
        return cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), mD, cute.slice_(sD_layout, (None, None, 0)), epi_tile
        )
    return mD, mD


@dataclass(frozen=True)
class EpilogueConfig:
    """A rung's epilogue plan, fixed at import: the CTA tile, the shared sub-tile one TMA store
    carries, how many sub-tile buffers rotate, the threads that hold accumulators, the warp
    that issues the stores and the named barrier they sync on (0 is ``__syncthreads``)."""

    tile_mn: tuple[int, int]
    epi_tile: tuple[int, int]
    stages: int
    threads: int
    store_warp: int
    barrier_id: int = 1


class TmaStoreEpilogue:
    """Device side of the TMA-store path for one CTA tile of ``cfg.tile_mn``.

    Build it once per kernel, in the threads that hold the accumulators (``tidx`` counted
    from the first of them), before the tile loop; call :meth:`store` per finished tile and
    :meth:`drain` once before the CTA exits.
    """

    def __init__(
        self,
        cfg: EpilogueConfig,
        tiled_mma: cute.TiledMma,
        tidx: cutlass.Int32,
        sD: cute.Tensor,
        tma_d: cute.CopyAtom,
        mD: cute.Tensor,
        dtype: type[cutlass.Numeric],
    ):
        self.tma_d, self.mD, self.sD = tma_d, mD, sD
        self.tile_mn, self.epi_tile, self.epi_stages = cfg.tile_mn, cfg.epi_tile, cfg.stages
        self.store_warp, self.dtype = cfg.store_warp, dtype
        self.bar = pipeline.NamedBarrier(barrier_id=cfg.barrier_id, num_threads=cfg.threads)
        self.r2s = cute.make_tiled_copy_S(
            sm90_utils.get_smem_store_op(LayoutEnum.ROW_MAJOR, dtype, cutlass.Float32),
            cute.make_tiled_copy_C_atom(
                cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), dtype), tiled_mma
            ),
        )
        thr_r2s = self.r2s.get_slice(tidx)
        self.tRS_sD = thr_r2s.partition_D(sD)
        self.sub_shape = cute.shape(thr_r2s.partition_S(sD))[:3]
        self.tRS_rD = cute.make_rmem_tensor(self.sub_shape, dtype)
        self.pipe = pipeline.PipelineTmaStore.create(
            num_stages=cfg.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cfg.threads),
        )

    # Nothing in here changes inside a tile loop, so a dynamic loop that uses the object carries
    # no values for it (the protocol CuTeDSL asks of objects referenced in such loops).
    def __extract_mlir_values__(self) -> list:
        return []

    def __new_from_mlir_values__(self, values: list) -> TmaStoreEpilogue:
        return self

    def retile(self, acc: cute.Tensor) -> cute.Tensor:
        """A register tile in the accumulator layout, viewed in ``stmatrix`` order."""
        return self.r2s.retile(acc)

    @cute.jit
    def store(self, tRS_src: cute.Tensor, tile_m: cutlass.Int32, tile_n: cutlass.Int32, warp_idx):
        """Store one finished tile (``retile`` of fp32 accumulators or of values already in
        D's type) at tile coordinate (tile_m, tile_n)."""
        gD = cute.local_tile(self.mD, self.tile_mn, (tile_m, tile_n))
        gD_epi = cute.zipped_divide(gD, self.epi_tile)
        bSG_sD, bSG_gD = cpasync.tma_partition(
            self.tma_d, 0, cute.make_layout(1), cute.group_modes(self.sD, 0, 2), gD_epi
        )
        epi_n = cute.size(gD_epi, mode=[1])
        # Every tile starts at buffer 0, so the rotation needs no state across tiles.
        assert epi_n % self.epi_stages == 0, "sub-tiles per tile must fill whole buffer rounds"
        epi_grid = cute.make_layout(gD_epi.shape[1], stride=(gD_epi.shape[1][1], 1))
        converted = tRS_src.element_type == self.dtype  # already in D's type: plain copies
        sub_len = cute.size(self.tRS_rD)
        if cutlass.const_expr(not converted):
            tRS_sub = cute.make_rmem_tensor(self.sub_shape, tRS_src.element_type)
        for e in cutlass.range_constexpr(epi_n):
            if cutlass.const_expr(converted):
                for v in cutlass.range_constexpr(sub_len):
                    self.tRS_rD[v] = tRS_src[e * sub_len + v]
            else:
                for v in cutlass.range_constexpr(sub_len):
                    tRS_sub[v] = tRS_src[e * sub_len + v]
                self.tRS_rD.store(tRS_sub.load().to(self.dtype))
            buf = e % self.epi_stages
            cute.copy(self.r2s, self.tRS_rD, self.tRS_sD[(None, None, None, buf)])
            # stmatrix writes are generic-proxy; the TMA store reads through the async proxy:
            # fence, then let every thread reach the barrier.
            cute.arch.fence_proxy("async.shared", space="cta")
            self.bar.arrive_and_wait()
            if warp_idx == self.store_warp:
                cute.copy(
                    self.tma_d, bSG_sD[(None, buf)], bSG_gD[(None, epi_grid.get_hier_coord(e))]
                )
                # Keep at most epi_stages - 1 stores reading shared memory, so the buffer
                # written next is no longer being read.
                self.pipe.producer_commit()
                self.pipe.producer_acquire()
            self.bar.arrive_and_wait()

    def drain(self) -> None:
        """Wait for outstanding TMA stores before the CTA (and its shared memory) goes away."""
        self.pipe.producer_tail()


@cute.jit
def store_direct(
    thr_mma,  # the thread's slice of the tiled MMA
    acc: cute.Tensor,
    mD: cute.Tensor,
    tile_mn: tuple[int, int],
    tile_m: cutlass.Int32,
    tile_n: cutlass.Int32,
    dtype,
):
    """The direct path: each thread writes its accumulator elements of tile (tile_m, tile_n),
    converted to ``dtype``, predicated on the matrix edge."""
    gD = cute.local_tile(mD, tile_mn, (tile_m, tile_n))
    cD = cute.local_tile(cute.make_identity_tensor(mD.shape), tile_mn, (tile_m, tile_n))
    tCgD = thr_mma.partition_C(gD)
    tCcD = thr_mma.partition_C(cD)
    for i in cutlass.range(cute.size(acc), unroll_full=True):
        if cute.elem_less(tCcD[i], mD.shape):
            tCgD[i] = acc[i].to(dtype)
