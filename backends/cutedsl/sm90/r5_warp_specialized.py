"""CuTeDSL · sm_90a · rung 5 ``warp_specialized`` — a producer warpgroup and a consumer warpgroup.

Changes from rung 4: the loads move to their own warpgroup. Warpgroup 0 is the producer: it
gives registers up (``setmaxnreg.dec`` to 40) and warp 0 walks the same tile sequence as
the consumers, issuing the TMA loads of each stage as soon as that stage is free. Warpgroup 1
is the consumer: it takes the registers (``setmaxnreg.inc`` to 232), waits for full stages,
issues ``wgmma`` and releases each stage once the wgmma that read it retired, then runs the
epilogue. The inline mbarrier/phase bookkeeping of rungs 2-4 becomes CuTeDSL's
``PipelineTmaAsync`` (full + empty barrier per stage) and ``PipelineState``.

Shared-memory budget (fp16/bf16, 2 bytes):

    A stage  128 x 64 x 2            = 16 KiB
    B stage  128 x 64 x 2            = 16 KiB
    one stage                        = 32 KiB
    epilogue 4 x (64 x 32 x 2)       = 16 KiB
    barriers 2 x 6 x 8 B (+ align)   <  1 KiB
    227 KiB - 16 KiB - 1 KiB = 210 KiB -> 6 stages (192 KiB), total ~209 KiB

Barriers (one of each per stage s; counts are arrivals per phase):

    name          arrives                                   waits        meaning
    ab_full[s]    producer lane (1, arrive.expect_tx of     consumers    A + B tile of stage s
                  32 KiB) + the TMA bytes                                landed
    ab_empty[s]   one elected lane of each consumer warp    producer     stage s free again
                  (4)

The producer starts with phase 1 on the empty barriers (every stage is free at start, so its
first wait on each passes) and the consumers with phase 0 on the full barriers (nothing has
landed): ``make_pipeline_state`` encodes exactly that for ``Producer`` and ``Consumer``.
"""

from __future__ import annotations

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

# -- constants -------------------------------------------------------------------------------
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64  # CTA tile
NUM_STAGES = 6  # shared-memory ring depth (budget above)
NUM_CONSUMERS = 1  # consumer warpgroups; one owns the whole 128 x 128 tile
EPI_TILE = (64, 32)  # epilogue sub-tile staged in shared memory for one TMA store
EPI_STAGES = 4  # epilogue buffers in flight
PRODUCER_REGS = 40  # setmaxnreg.dec for the producer warpgroup
CONSUMER_REGS = 232  # setmaxnreg.inc for the consumer warpgroups
L2_GROUP = 8  # scheduler swizzle: tiles per L2 group along M
THREADS_PER_WG = 128
NUM_THREADS = (1 + NUM_CONSUMERS) * THREADS_PER_WG
# Epilogue plan (``_epilogue.py``): the consumer warpgroups stage EPI_TILE
# sub-tiles; their first warp issues each TMA store; named barrier 1 (0 is __syncthreads).
EPI_THREADS, EPI_STORE_WARP = NUM_CONSUMERS * THREADS_PER_WG, THREADS_PER_WG // 32
EPILOGUE = EpilogueConfig((BLOCK_M, BLOCK_N), EPI_TILE, EPI_STAGES, EPI_THREADS, EPI_STORE_WARP)


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T, persistent warp-specialized wgmma kernel."""

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
        wg_idx = cute.arch.make_warp_uniform(tidx // THREADS_PER_WG)

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
        # ab_empty: one arrive per consumer warp.
        consumer_arrivals = NUM_CONSUMERS * (THREADS_PER_WG // 32)
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.ab_barriers.data_ptr(),
            num_stages=NUM_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arrivals),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
            defer_sync=True,
        )
        # Barrier inits must be visible to the async proxy (TMA) and every thread before use.
        pipeline.pipeline_init_arrive()

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

        pipeline.pipeline_init_wait()

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
                        # Wait until the stage is free, then arm ab_full with its A + B bytes.
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
                        )
                        prod.advance()
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                # Wait for the consumers' last releases before the producer leaves.
                ab_pipe.producer_tail(prod)

        # -- consumer warpgroups: wgmma over the ring, then the epilogue --------------------
        if wg_idx > 0:
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            consumer_tidx = tidx - THREADS_PER_WG
            thr_mma = tiled_mma.get_slice(consumer_tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape[:3], cutlass.Float32)
            k_blocks = cute.size(tCrA, mode=[2])

            # Epilogue: registers -> shared (stmatrix) -> global (TMA store); ``_epilogue.py``.
            epi = TmaStoreEpilogue(EPILOGUE, tiled_mma, consumer_tidx, sD, tma_d, mD, self.dtype)
            tRS_acc = epi.retile(acc)

            sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
            )
            work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, NUM_STAGES)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, NUM_STAGES)
            while work.is_valid_tile:
                tile_m, tile_n, _ = work.tile_idx
                # Mainloop: keep one wgmma batch in flight; release a stage only after the
                # batch that read it retired (wait_group(1) after issuing the next one).
                acc.fill(0.0)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                warpgroup.fence()
                for kt in range(k_tiles):
                    ab_pipe.consumer_wait(read)
                    for kb in cutlass.range_constexpr(k_blocks):
                        coord = (None, None, kb, read.index)
                        cute.gemm(tiled_mma, acc, tCrA[coord], tCrB[coord], acc)
                    warpgroup.commit_group()
                    read.advance()
                    if kt > 0:
                        warpgroup.wait_group(1)
                        ab_pipe.consumer_release(release)
                        release.advance()
                # K >= 8 so there is at least one k-tile: release the last stage read.
                warpgroup.wait_group(0)
                ab_pipe.consumer_release(release)
                release.advance()

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
