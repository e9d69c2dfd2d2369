"""CuTeDSL · sm_90a · rung 4 ``persistent`` — one CTA per SM looping over tiles in L2-grouped order.

Changes from rung 3: the grid is the number of SMs, not the number of tiles. Each CTA asks
CuTeDSL's ``StaticPersistentTileScheduler`` for its next output tile (clusters of tiles
grouped along M so that concurrently running CTAs share A and B panels in L2) and runs the
same pipelined mainloop and epilogue on it. The ring's stage/phase counter keeps running
across tiles, and the epilogue's TMA stores of one tile drain while the next tile's loads are
already in flight.

Shared-memory budget (fp16/bf16, 2 bytes):

    A stage  128 x 64 x 2            = 16 KiB
    B stage  128 x 64 x 2            = 16 KiB
    one stage                        = 32 KiB
    epilogue 4 x (64 x 32 x 2)       = 16 KiB
    barriers 6 x 8 B (+ align)       <  1 KiB
    227 KiB - 16 KiB - 1 KiB = 210 KiB -> 6 stages (192 KiB), total ~209 KiB

Barriers (one per stage s):

    name          arrives                                   waits        meaning
    ab_full[s]    warp 0, one lane (1, expect_tx of 32 KiB)   all 128      A + B tile of the
                  + the TMA bytes                           threads      k-tile in stage s landed

There is no empty barrier: one warpgroup both loads and computes. Stage s is refilled only
after ``wgmma.wait_group(1)`` proved the wgmma that read it retired in every warp (a
``bar.sync`` of the warpgroup separates the waits from warp 0's refill). For the j-th k-tile
this CTA loads (counted across all its tiles), the stage is ``j % NUM_STAGES`` and its full
barrier completes phase ``(j // NUM_STAGES) % 2``: every barrier starts in phase 0, so the
first wait is on parity 0.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
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

# -- constants -------------------------------------------------------------------------------
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64  # CTA tile
NUM_STAGES = 6  # shared-memory ring depth (budget above)
EPI_TILE = (64, 32)  # epilogue sub-tile staged in shared memory for one TMA store
EPI_STAGES = 4  # epilogue buffers in flight
L2_GROUP = 8  # scheduler swizzle: tiles per L2 group along M
THREADS_PER_WG = 128
NUM_THREADS = THREADS_PER_WG  # one warpgroup loads, computes and stores
# Epilogue plan (``_epilogue.py``): the warpgroup stages EPI_TILE sub-tiles,
# warp 0 issues each TMA store; named barrier 1 (0 is __syncthreads).
EPILOGUE = EpilogueConfig((BLOCK_M, BLOCK_N), EPI_TILE, EPI_STAGES, NUM_THREADS, 0)


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T, persistent pipelined TMA + wgmma kernel."""

    def __init__(self, num_sms: int, tma_store: bool, l2_group: int = L2_GROUP):
        self.num_sms = num_sms
        self.tma_store = tma_store  # needs N % 8 == 0 (16-byte aligned rows of D)
        self.l2_group = l2_group
        self.tile_mnk = (BLOCK_M, BLOCK_N, BLOCK_K)

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

        # MMA: one warpgroup, m64n128k16, repeated twice along M to cover the 128-row tile.
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (1, 1, 1),
            tiler_mn=(64, BLOCK_N),
        )

        # -- shared-memory plan: swizzled K-major A/B rings, row-major epilogue buffers ------
        row = LayoutEnum.ROW_MAJOR
        sA_layout = sm90_utils.make_smem_layout_a(row, self.tile_mnk, self.dtype, NUM_STAGES)
        sB_layout = sm90_utils.make_smem_layout_b(row, self.tile_mnk, self.dtype, NUM_STAGES)
        sD_layout = sm90_utils.make_smem_layout_epi(self.dtype, row, EPI_TILE, EPI_STAGES)

        @cute.struct
        class SharedStorage:
            ab_full: cute.struct.MemRange[cutlass.Int64, NUM_STAGES]
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]
            sD: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sD_layout)], 1024]

        self.shared_storage = SharedStorage

        # TMA loads of the A and B tiles of one stage.
        a_smem = cute.slice_(sA_layout, (None, None, 0))
        b_smem = cute.slice_(sB_layout, (None, None, 0))
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, a_smem, (BLOCK_M, BLOCK_K)
        )
        tma_b, gB_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mB, b_smem, (BLOCK_N, BLOCK_K)
        )
        # TMA store of D (clips at the matrix edge), or the plain tensor for direct stores.
        tma_d, gD_out = tma_store_atom(mD, sD_layout, EPI_TILE, self.tma_store)

        # Persistent grid over tiles (ragged edges round up; TMA zero-fills/clips).
        tiles_mnl = (cute.ceil_div(m, BLOCK_M), cute.ceil_div(n, BLOCK_N), 1)
        sched_params = utils.PersistentTileSchedulerParams(
            tiles_mnl, (1, 1, 1), self.l2_group, True
        )
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, self.num_sms)

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

        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(self.tma_store):
                cpasync.prefetch_descriptor(tma_d)

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
        ab_full = storage.ab_full.data_ptr()
        if tidx == 0:
            for s in cutlass.range_constexpr(NUM_STAGES):
                # One arrival per phase (warp 0's elected lane: expect_tx); TMA bytes finish it.
                cute.arch.mbarrier_init(ab_full + s, 1)
        # Barrier inits must be visible to the async proxy (TMA) and every thread before use.
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        # -- global tiles and their TMA partitions ------------------------------------------
        gA = cute.local_tile(mA, (BLOCK_M, BLOCK_K), (None, None))  # (bM, bK, RestM, RestK)
        gB = cute.local_tile(mB, (BLOCK_N, BLOCK_K), (None, None))  # (bN, bK, RestN, RestK)
        gD = cute.local_tile(mD, (BLOCK_M, BLOCK_N), (None, None))  # (bM, bN, RestM, RestN)
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
        )
        k_tiles = cute.size(gA, mode=[3])

        # -- MMA fragments ----------------------------------------------------------------------
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape[:3], cutlass.Float32)
        k_blocks = cute.size(tCrA, mode=[2])

        # Epilogue: registers -> shared (stmatrix) -> global (TMA store); ``_epilogue.py``.
        epi = TmaStoreEpilogue(EPILOGUE, tiled_mma, tidx, sD, tma_d, mD, self.dtype)
        tRS_acc = epi.retile(acc)

        sched = utils.StaticPersistentTileScheduler.create(
            sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
        )
        work = sched.initial_work_tile_info()
        done = cutlass.Int32(0)  # k-tiles of earlier tiles: the ring position carries over
        while work.is_valid_tile:
            tile_m, tile_n, _ = work.tile_idx
            # Every warp has retired the previous tile's wgmmas before its stages are refilled.
            cute.arch.sync_threads()
            # Prologue: warp 0 prefetches the first NUM_STAGES - 1 k-tiles.
            if warp_idx == 0:
                for kt in cutlass.range_constexpr(NUM_STAGES - 1):
                    if kt < k_tiles:
                        s = (done + kt) % NUM_STAGES
                        with cute.arch.elect_one():
                            cute.arch.mbarrier_arrive_and_expect_tx(ab_full + s, stage_bytes)
                        cute.copy(
                            tma_a,
                            tAgA[(None, tile_m, kt)],
                            tAsA[(None, s)],
                            tma_bar_ptr=ab_full + s,
                        )
                        cute.copy(
                            tma_b,
                            tBgB[(None, tile_n, kt)],
                            tBsB[(None, s)],
                            tma_bar_ptr=ab_full + s,
                        )

            # Mainloop: wait for k-tile kt, issue its wgmma, retire kt-1, refill kt-1's stage
            # with k-tile kt + NUM_STAGES - 1.
            acc.fill(0.0)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.fence()
            for kt in range(k_tiles):
                j = done + kt
                s = j % NUM_STAGES
                cute.arch.mbarrier_wait(ab_full + s, (j // NUM_STAGES) % 2)
                for kb in cutlass.range_constexpr(k_blocks):
                    coord = (None, None, kb, s)
                    cute.gemm(tiled_mma, acc, tCrA[coord], tCrB[coord], acc)
                warpgroup.commit_group()
                warpgroup.wait_group(1)
                cute.arch.sync_threads()  # all warps retired k-tile kt-1: its stage is free
                nxt = kt + NUM_STAGES - 1
                if warp_idx == 0 and nxt < k_tiles:
                    r = (j + NUM_STAGES - 1) % NUM_STAGES
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive_and_expect_tx(ab_full + r, stage_bytes)
                    cute.copy(
                        tma_a, tAgA[(None, tile_m, nxt)], tAsA[(None, r)], tma_bar_ptr=ab_full + r
                    )
                    cute.copy(
                        tma_b, tBgB[(None, tile_n, nxt)], tBsB[(None, r)], tma_bar_ptr=ab_full + r
                    )
            warpgroup.wait_group(0)
            done += k_tiles

            if cutlass.const_expr(self.tma_store):
                epi.store(tRS_acc, tile_m, tile_n, warp_idx)
            else:
                # Rows of D not 16-byte aligned (N % 8 != 0): no TMA store; each thread
                # writes its accumulator elements directly, predicated on the matrix edge.
                store_direct(thr_mma, acc, mD, EPILOGUE.tile_mn, tile_m, tile_n, self.dtype)

            sched.advance_to_next_work()
            work = sched.get_current_work()

        if cutlass.const_expr(self.tma_store):
            # Drain outstanding TMA stores before the CTA (and its shared memory) goes away.
            epi.drain()


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, tma_store, config: Gemm(num_sms, tma_store),
    variant_of=tma_store_variant,
)
