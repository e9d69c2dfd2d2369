"""The output path every Hopper rung from 2 up shares: accumulators -> D.

Two ways out, chosen per problem at compile time (``_host.tma_store_variant``):

* D's rows 16-byte aligned (N % 8 == 0): registers -> shared memory (``stmatrix``) -> global
  (TMA store), in ``epi_tile`` sub-tiles rotating over ``epi_stages`` shared buffers. The TMA
  store clips at the matrix edge, so ragged M and N need nothing more.
* otherwise: each thread writes its accumulator elements straight to global memory, predicated
  on the matrix edge (TMA cannot address rows that are not 16-byte aligned).

Rung 8's swap-AB tiles write D through a column-major view (D^T[N, M], unit stride along the
kernel's rows). Their TMA-store path is the same with three changes (``EpilogueConfig``):
``stmatrix .trans`` into M-major shared buffers, so each buffer column is a contiguous run of
D's row; sub-tiles as narrow as the tile's width needs (8 or 16 columns: the swapped widths
step by 8); several sub-tiles per round, one barrier and one bulk group a round, so a narrow
sub-tile costs no more synchronization than rung 7's 32-column one.

A sub-tile's registers are found by a flat index, ``e * sub_len + v``: the accumulators'
register order runs over the columns first, then over the MMA's blocks of rows, and the
sub-tiles are walked in that order (``epi_grid``), so a sub-tile may span at most one block of
rows (64 rows a consumer warpgroup; rung 8's 256-row tiles take 128-row sub-tiles, its 192-row
tiles, three warpgroups of one block each, 192-row ones).

Barriers of the TMA-store path (per sub-tile; ``threads`` are the threads that hold
accumulators, one warpgroup or two):

    name            arrives / waits            meaning
    epi_bar (1st)   every thread, after its    the sub-tile is complete in shared memory and
                    stmatrix + proxy fence     visible to the async proxy: the store may go
    epi_bar (2nd)   every thread               the store warp has made sure the buffer that
                                               will be written next is no longer being read

(with ``batch`` > 1 the two barriers are per round of ``batch`` sub-tiles, not per sub-tile.)

``deferred`` (rung 8's ``epilogue=deferred``): one buffer per sub-tile, the whole tile in one
round, and the store warp waits for the round's reads only when the buffers are next written,
at the next tile's epilogue, where a whole K loop has passed (the order Gluon's rung 8 keeps):

    name            arrives / waits            meaning
    epi_bar (1st)   every thread, after the    the previous tile's stores have read every
                    store warp's wait          buffer: they may be written
    epi_bar (2nd)   every thread, after its    the tile is complete in shared memory and
                    stmatrix + proxy fence     visible to the async proxy: the stores may go

``PipelineTmaStore`` is the store warp's bulk-group bookkeeping: ``producer_commit`` closes the
group of the round just issued, ``producer_acquire`` waits until at most ``stages / batch - 1``
groups still read shared memory, ``producer_tail`` drains all of them before the CTA exits.
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync, warp

from backends.cutedsl._workarounds import stage_layout


def tma_store_atom(
    mD: cute.Tensor, sD_layout: cute.ComposedLayout, epi_tile: tuple[int, int], tma_store: bool
) -> tuple[cute.CopyAtom | cute.Tensor, cute.Tensor]:
    """Host side: the TMA-store atom of D and its coordinate tensor, or D itself for the
    direct-store path."""
    if tma_store:
        return cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), mD, stage_layout(sD_layout), epi_tile
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
    #: D written through a column-major view (swap-AB): ``stmatrix .trans``, M-major buffers.
    column_major: bool = False
    #: Sub-tiles per round (one barrier pair and one bulk group); ``stages`` is a multiple.
    batch: int = 1
    #: The whole tile in one round (``stages == batch``, one per sub-tile), its reads waited
    #: on before the buffers are next written instead of after the stores are issued.
    deferred: bool = False


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
        self.store_warp, self.dtype, self.batch = cfg.store_warp, dtype, cfg.batch
        self.deferred = cfg.deferred
        assert cfg.stages % cfg.batch == 0, "buffers must hold whole rounds"
        assert not cfg.deferred or cfg.stages == cfg.batch, "deferred: one round, a buffer each"
        self.bar = pipeline.NamedBarrier(barrier_id=cfg.barrier_id, num_threads=cfg.threads)
        # stmatrix moves 8x8 matrices, four a warp where the sub-tile is 16 columns or more
        # (a warp's accumulator rows are 16: 16 x 16 = four), two for an 8-column sub-tile.
        # (The atom ``hopper_helpers.get_smem_store_op`` picks for 16-bit D, plus the x2 case.)
        matrices = 4 if cfg.epi_tile[1] % 16 == 0 else 2
        stmatrix = cute.make_copy_atom(warp.StMatrix8x8x16bOp(cfg.column_major, matrices), dtype)
        self.r2s = cute.make_tiled_copy_S(
            stmatrix, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma)
        )
        thr_r2s = self.r2s.get_slice(tidx)
        self.tRS_sD = thr_r2s.partition_D(sD)
        self.sub_shape = cute.shape(thr_r2s.partition_S(sD))[:3]
        self.tRS_rD = cute.make_rmem_tensor(self.sub_shape, dtype)
        # One bulk group a round: as many groups in flight as whole rounds fit the buffers.
        self.rounds_in_flight = cfg.stages // cfg.batch
        self.pipe = pipeline.PipelineTmaStore.create(
            num_stages=self.rounds_in_flight,
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
        batch, in_flight = self.batch, self.rounds_in_flight
        rounds = (epi_n + batch - 1) // batch
        if cutlass.const_expr(self.deferred):
            # One round: the buffers are free once the previous tile's stores have read them
            # (a whole K loop ago, so the wait rarely waits).
            assert rounds == 1, "a deferred epilogue stores the whole tile in one round"
            if warp_idx == self.store_warp:
                self.pipe.producer_acquire()
            self.bar.arrive_and_wait()
        # Every tile starts at buffer 0, so the rotation needs no state across tiles: where a
        # tile's rounds do not fill whole rotations, its last round waits until every store has
        # read its buffer (rung 7's tiles fill whole rotations and never wait).
        drain_last = rounds % in_flight != 0
        epi_grid = cute.make_layout(gD_epi.shape[1], stride=(gD_epi.shape[1][1], 1))
        converted = tRS_src.element_type == self.dtype  # already in D's type: plain copies
        sub_len = cute.size(self.tRS_rD)
        if cutlass.const_expr(not converted):
            tRS_sub = cute.make_rmem_tensor(self.sub_shape, tRS_src.element_type)
        for r in cutlass.range_constexpr(rounds):
            first = r * batch
            count = min(batch, epi_n - first)
            base = (r % in_flight) * batch
            for i in cutlass.range_constexpr(count):
                e = first + i
                if cutlass.const_expr(converted):
                    for v in cutlass.range_constexpr(sub_len):
                        self.tRS_rD[v] = tRS_src[e * sub_len + v]
                else:
                    for v in cutlass.range_constexpr(sub_len):
                        tRS_sub[v] = tRS_src[e * sub_len + v]
                    self.tRS_rD.store(tRS_sub.load().to(self.dtype))
                cute.copy(self.r2s, self.tRS_rD, self.tRS_sD[(None, None, None, base + i)])
            # stmatrix writes are generic-proxy; the TMA store reads through the async proxy:
            # fence, then let every thread reach the barrier.
            cute.arch.fence_proxy("async.shared", space="cta")
            self.bar.arrive_and_wait()
            if warp_idx == self.store_warp:
                for i in cutlass.range_constexpr(count):
                    cute.copy(
                        self.tma_d,
                        bSG_sD[(None, base + i)],
                        bSG_gD[(None, epi_grid.get_hier_coord(first + i))],
                    )
                self.pipe.producer_commit()
                if cutlass.const_expr(self.deferred):
                    pass  # waited on at the next tile's epilogue (above) or by ``drain``
                elif cutlass.const_expr(drain_last and r == rounds - 1):
                    cute.arch.cp_async_bulk_wait_group(0, read=True)
                else:
                    # Keep at most in_flight - 1 rounds reading shared memory, so the buffers
                    # written next are no longer being read.
                    self.pipe.producer_acquire()
            if cutlass.const_expr(not self.deferred):
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
