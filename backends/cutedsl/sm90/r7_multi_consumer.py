"""CuTeDSL · sm_90a · rung 7 ``multi_consumer`` — the final Hopper kernel.

Changes from rung 6: a second consumer warpgroup. The CTA tile grows from 128x128 to 128x256;
consumer warpgroup w (w = 0, 1) owns rows [64w, 64w+64) and both read the same staged B tile
(256 x 64), so each byte of B brought into shared memory feeds twice the MMA work. The
epilogue sub-tile becomes 128 x 32 so that one TMA store carries both warpgroups' rows.

Design (docs/design.md, "The Hopper 2-CTA design"):

* persistent: grid = SMs rounded down to the cluster size; CuTeDSL's
  ``StaticPersistentTileScheduler`` hands out cluster tiles in an L2-grouped order;
* warp-specialized: warpgroup 0 is the producer (gives registers up to 40, warp 0 issues
  TMA), warpgroups 1 and 2 are consumers (take 232 registers, issue ``wgmma`` m64n256k16);
* 2-CTA cluster (2, 1) along M: both CTAs of the pair compute the same N columns, so they
  share the B tile: CTA r loads rows [128r, 128r+128) of it and multicasts them to both CTAs;
* barriers through CuTeDSL's ``PipelineTmaAsync`` (full/empty per stage) and
  ``PipelineTmaStore`` (TMA-store drain).

Shared-memory budget (fp16/bf16, 2 bytes):

    A stage  128 x 64 x 2            = 16 KiB
    B stage  256 x 64 x 2            = 32 KiB
    one stage                        = 48 KiB
    epilogue 4 x (128 x 32 x 2)      = 32 KiB
    barriers 2 x 4 x 8 B (+ align)   <  1 KiB
    227 KiB - 32 KiB - 1 KiB = 194 KiB -> 4 stages (192 KiB), total ~225 KiB

Configs (``R7Config``; the harness records which one ran, ``bench --tune`` times them all):

* ``group`` and ``raster``: the scheduler's L2 grouping (clusters per group) and whether tiles
  are walked along M or N within a group;
* ``epilogue``: ``serial`` stores a finished tile right after its mainloop, as rung 6 does;
  ``overlap`` converts the accumulators to the output type and keeps them in registers (64 a
  thread next to the next tile's 128 fp32 accumulators: within the 232 granted, no spills),
  then stores them only after the next tile's first k-tile of wgmma is issued, so the tensor
  cores work through that batch while the warpgroups run the stmatrix / TMA-store sub-tiles;
  the last tile's epilogue runs after the loop. ``overlap`` needs the TMA-store epilogue
  (N % 8 == 0); the heuristic picks it whenever it can.

Barriers (one of each per stage s; counts are arrivals per phase):

    name          arrives                                   waits        meaning
    ab_full[s]    producer lane (1, arrive.expect_tx of     consumers    A + whole B tile of
                  48 KiB) + TMA bytes from both CTAs                     stage s landed
    ab_empty[s]   one elected lane of each consumer warp    producer     stage s free in BOTH
                  of BOTH CTAs (2 CTAs x 8 warps = 16)                   CTAs of the pair

ab_empty counts the peer CTA's consumers because this CTA's multicast writes B into the peer's
shared memory: the producer may refill stage s only after the peer released it as well. The
producer starts with phase 1 on the empty barriers (every stage is free at start, so its first
wait on each passes) and the consumers with phase 0 on the full barriers (nothing has landed):
``make_pipeline_state`` encodes exactly that for ``Producer`` and ``Consumer``.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from backends.cutedsl.sm90._epilogue import (
    EpilogueConfig,
    TmaStoreEpilogue,
    store_direct,
    tma_store_atom,
)
from harness.protocol import ConfigSpace, KernelConfig, Problem

# -- constants -------------------------------------------------------------------------------
BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # CTA tile; the cluster tile is 256 x 256
NUM_STAGES = 4  # shared-memory ring depth (budget above)
NUM_CONSUMERS = 2  # consumer warpgroups, each a 64 x 256 slice of the tile
CLUSTER_M = 2  # CTAs per cluster, along M; they share (multicast) the B tile
EPI_TILE = (128, 32)  # epilogue sub-tile staged in shared memory for one TMA store
EPI_STAGES = 4  # epilogue buffers in flight
PRODUCER_REGS = 40  # setmaxnreg.dec for the producer warpgroup
CONSUMER_REGS = 232  # setmaxnreg.inc for the consumer warpgroups
THREADS_PER_WG = 128
NUM_THREADS = (1 + NUM_CONSUMERS) * THREADS_PER_WG
# Epilogue plan (``_epilogue.py``): the consumer warpgroups stage EPI_TILE
# sub-tiles; their first warp issues each TMA store; named barrier 1 (0 is __syncthreads).
EPI_THREADS, EPI_STORE_WARP = NUM_CONSUMERS * THREADS_PER_WG, THREADS_PER_WG // 32
EPILOGUE = EpilogueConfig((BLOCK_M, BLOCK_N), EPI_TILE, EPI_STAGES, EPI_THREADS, EPI_STORE_WARP)


@dataclass(frozen=True)
class R7Config(KernelConfig):
    """Rung 7's knobs (module docstring, "Configs")."""

    group: int = 8  # scheduler swizzle: clusters per L2 group
    raster: str = "m"  # walk tiles along M ("m") or N ("n") within a group
    epilogue: str = "overlap"  # "overlap": store tile i under tile i + 1's first MMAs; "serial"


MENU = tuple(
    R7Config(group, raster, epilogue)
    for group in (4, 8, 16)
    for raster in ("m", "n")
    for epilogue in ("overlap", "serial")
)


def _valid(problem: Problem, config: R7Config) -> str | None:
    if config.epilogue == "overlap" and not tma_store_variant(problem):
        return "needs N % 8 == 0 (the overlapped epilogue stores through TMA)"
    return None


def _heuristic(problem: Problem) -> R7Config:
    return R7Config(epilogue="overlap" if tma_store_variant(problem) else "serial")


@cute.jit
def mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read):
    """Consumer step: wait for the stage ``read`` names and issue its k-tile of wgmma (every
    k-block of the stage) as one committed batch into ``acc``; return the next read state."""
    ab_pipe.consumer_wait(read)
    for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
        coord = (None, None, kb, read.index)
        cute.gemm(tiled_mma, acc, tCrA[coord], tCrB[coord], acc)
    warpgroup.commit_group()
    read.advance()
    return read


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T, persistent warp-specialized 2-CTA wgmma kernel."""

    def __init__(self, num_sms: int, tma_store: bool, config: R7Config):
        self.max_active_clusters = num_sms // CLUSTER_M
        self.tma_store = tma_store  # needs N % 8 == 0 (16-byte aligned rows of D)
        self.l2_group = config.group
        self.raster_m = config.raster == "m"
        # epilogue of tile i under the first MMAs of tile i + 1 (TMA-store epilogue only)
        self.overlap = tma_store and config.epilogue == "overlap"
        self.tile_mnk = (BLOCK_M, BLOCK_N, BLOCK_K)
        self.cluster_mn = (CLUSTER_M, 1)

    # -- host: layouts, TMA descriptors, launch ----------------------------------------------
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        d_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.dtype = a_ptr.dtype
        # Row-major A, B, D over the raw pointers (``_operands.py``).
        mA, mB, mD = operand_tensors(a_ptr, b_ptr, d_ptr, m, n, k, self.tma_store)

        # MMA: NUM_CONSUMERS warpgroups stacked along M, each m64n256k16 over a 64 x 256 slice.
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (NUM_CONSUMERS, 1, 1),
            tiler_mn=(64, BLOCK_N),
        )

        # -- shared-memory plan: swizzled K-major A/B rings, row-major epilogue buffers ------
        row = LayoutEnum.ROW_MAJOR
        sA_layout = sm90_utils.make_smem_layout_a(row, self.tile_mnk, self.dtype, NUM_STAGES)
        sB_layout = sm90_utils.make_smem_layout_b(row, self.tile_mnk, self.dtype, NUM_STAGES)
        sD_layout = sm90_utils.make_smem_layout_epi(self.dtype, row, EPI_TILE, EPI_STAGES)

        @cute.struct
        class SharedStorage:
            ab_barriers: cute.struct.MemRange[cutlass.Int64, NUM_STAGES * 2]
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]
            sD: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sD_layout)], 1024]

        self.shared_storage = SharedStorage

        # TMA loads. A: plain (each CTA its own rows). B: multicast across the CLUSTER_M CTAs,
        # each of which issues 1/CLUSTER_M of the tile (tma_partition splits it below).
        a_smem = cute.slice_(sA_layout, (None, None, 0))
        b_smem = cute.slice_(sB_layout, (None, None, 0))
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, a_smem, (BLOCK_M, BLOCK_K)
        )
        tma_b, gB_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SMulticastOp(),
            mB,
            b_smem,
            (BLOCK_N, BLOCK_K),
            num_multicast=CLUSTER_M,
        )
        # TMA store of D (clips at the matrix edge), or the plain tensor for direct stores.
        tma_d, gD_out = tma_store_atom(mD, sD_layout, EPI_TILE, self.tma_store)

        # Persistent grid over cluster tiles (ragged edges round up; TMA zero-fills/clips).
        tiles_mnl = (cute.ceil_div(m, BLOCK_M), cute.ceil_div(n, BLOCK_N), 1)
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
            tiled_mma,
            sA_layout,
            sB_layout,
            sD_layout,
            sched_params,
        ).launch(
            grid=grid,
            block=[NUM_THREADS, 1, 1],
            cluster=(*self.cluster_mn, 1),
            min_blocks_per_mp=1,
            stream=stream,
        )

    # -- device ------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_d: cute.CopyAtom | cute.Tensor,
        mD: cute.Tensor,
        tiled_mma: cute.TiledMma,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sD_layout: cute.ComposedLayout,
        sched_params: utils.PersistentTileSchedulerParams,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg_idx = cute.arch.make_warp_uniform(tidx // THREADS_PER_WG)

        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(self.tma_store):
                cpasync.prefetch_descriptor(tma_d)

        cta_layout = cute.make_layout((*self.cluster_mn, 1))
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster_coord = cta_layout.get_flat_coord(cta_rank)
        # B goes to every CTA that shares this CTA's N coordinate: both CTAs of the pair.
        b_mcast_mask = cute.make_layout_image_mask(cta_layout, cluster_coord, mode=0)

        # -- shared memory ---------------------------------------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        sD = storage.sD.get_tensor(sD_layout.outer, swizzle=sD_layout.inner)

        # -- barriers (table in the module docstring) -------------------------------------------
        stage_bytes = cute.size_in_bytes(
            self.dtype, cute.slice_(sA_layout, (None, None, 0))
        ) + cute.size_in_bytes(self.dtype, cute.slice_(sB_layout, (None, None, 0)))
        # ab_empty: one arrive per consumer warp per CTA it multicasts to (both CTAs).
        consumer_arrivals = CLUSTER_M * NUM_CONSUMERS * (THREADS_PER_WG // 32)
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.ab_barriers.data_ptr(),
            num_stages=NUM_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arrivals),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)),
            defer_sync=True,
        )
        # The peer multicasts into our shared memory and arrives on our barriers: make the
        # barrier inits visible cluster-wide before anyone may touch them.
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        # -- global tiles and their TMA partitions ------------------------------------------
        gA = cute.local_tile(mA, (BLOCK_M, BLOCK_K), (None, None))  # (bM, bK, RestM, RestK)
        gB = cute.local_tile(mB, (BLOCK_N, BLOCK_K), (None, None))  # (bN, bK, RestN, RestK)
        gD = cute.local_tile(mD, (BLOCK_M, BLOCK_N), (None, None))  # (bM, bN, RestM, RestN)
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        # B split CLUSTER_M ways: this CTA's rank along M picks its slice of the B tile.
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cluster_coord[0],
            cute.make_layout(CLUSTER_M),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        k_tiles = cute.size(gA, mode=[3])

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)

        # -- producer warpgroup: warp 0 walks the tiles, an elected lane issues each TMA -----
        if wg_idx == 0:
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp_idx == 0:
                sched = utils.StaticPersistentTileScheduler.create(
                    sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
                )
                work = sched.initial_work_tile_info()
                prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, NUM_STAGES)
                while work.is_valid_tile:
                    tile_m, tile_n, _ = work.tile_idx
                    for kt in range(k_tiles):
                        # Wait until the stage is free in both CTAs, then arm ab_full with the
                        # bytes this CTA will receive (its A + both halves of B).
                        ab_pipe.producer_acquire(prod)
                        bar = ab_pipe.producer_get_barrier(prod)
                        cute.copy(
                            tma_a,
                            tAgA[(None, tile_m, kt)],
                            tAsA[(None, prod.index)],
                            tma_bar_ptr=bar,
                        )
                        cute.copy(
                            tma_b,
                            tBgB[(None, tile_n, kt)],
                            tBsB[(None, prod.index)],
                            tma_bar_ptr=bar,
                            mcast_mask=b_mcast_mask,
                        )
                        prod.advance()
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                # Wait for the last releases (ours and the peer's) so that no remote arrive
                # targets this CTA's barriers after it exits.
                ab_pipe.producer_tail(prod)

        # -- consumer warpgroups: wgmma over the ring, then the epilogue --------------------
        if wg_idx > 0:
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            consumer_tidx = tidx - THREADS_PER_WG
            thr_mma = tiled_mma.get_slice(consumer_tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape[:3], cutlass.Float32)

            # Epilogue: registers -> shared (stmatrix) -> global (TMA store); ``_epilogue.py``.
            epi = TmaStoreEpilogue(EPILOGUE, tiled_mma, consumer_tidx, sD, tma_d, mD, self.dtype)
            tRS_acc = epi.retile(acc)

            sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
            )
            work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, NUM_STAGES)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, NUM_STAGES)
            if cutlass.const_expr(self.overlap):
                # The finished tile waits here, in the output type, until the next tile's
                # first k-tile of MMAs is issued (module docstring, "Configs").
                rD_tile = cute.make_rmem_tensor(acc.shape, self.dtype)
                tRS_rD_tile = epi.retile(rD_tile)
                prev_m = cutlass.Int32(0)
                prev_n = cutlass.Int32(0)
                tiles_done = cutlass.Int32(0)
            while work.is_valid_tile:
                tile_m, tile_n, _ = work.tile_idx
                # Mainloop: keep one wgmma batch in flight; release a stage only after the
                # batch that read it retired (wait_group(1) after issuing the next one).
                acc.fill(0.0)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                warpgroup.fence()
                # The first k-tile (K >= 8, so there is one) is issued on its own so that the
                # previous tile's epilogue can run under it. Inside the loop, behind a runtime
                # branch, the stores made ptxas serialize the wgmma of the bf16 build (C7514).
                read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                if cutlass.const_expr(self.overlap):
                    if tiles_done > 0:
                        epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
                for _kt in range(1, k_tiles):
                    read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                    warpgroup.wait_group(1)
                    ab_pipe.consumer_release(release)
                    release.advance()
                # K >= 8 so there is at least one k-tile: release the last stage read.
                warpgroup.wait_group(0)
                ab_pipe.consumer_release(release)
                release.advance()

                if cutlass.const_expr(self.overlap):
                    rD_tile.store(acc.load().to(self.dtype))
                    prev_m, prev_n = tile_m, tile_n
                    tiles_done += 1
                elif cutlass.const_expr(self.tma_store):
                    epi.store(tRS_acc, tile_m, tile_n, warp_idx)
                else:
                    # Rows of D not 16-byte aligned (N % 8 != 0): no TMA store; each thread
                    # writes its accumulator elements directly, predicated on the matrix edge.
                    store_direct(thr_mma, acc, mD, EPILOGUE.tile_mn, tile_m, tile_n, self.dtype)

                sched.advance_to_next_work()
                work = sched.get_current_work()

            if cutlass.const_expr(self.overlap):
                # The last tile has no successor to hide behind.
                if tiles_done > 0:
                    epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
            if cutlass.const_expr(self.tma_store):
                # Drain outstanding TMA stores before the CTA (and its shared memory) goes away.
                epi.drain()


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, tma_store, config: Gemm(num_sms, tma_store, config),
    variant_of=tma_store_variant,
    space=ConfigSpace(MENU, _heuristic, module=__name__, valid=_valid),
)
