"""CuTeDSL · sm_100a · rung 5 ``warp_specialized`` — TMA warp, MMA warp, epilogue warps (1 CTA).

Compiled and inspected, not run (no Blackwell GPU here).

The Blackwell form of the warp-specialized persistent kernel, before the CTA pair of rung 6:
one CTA computes a 128 x 256 tile with ``tcgen05.mma.cta_group::1`` m128n256k16, A and B from
shared memory, the fp32 accumulator in tensor memory (not registers). Warp 5 issues the TMA
loads, warp 4 the MMAs (one elected thread), warps 0-3 drain the accumulator (``tcgen05.ld``)
through shared memory to a TMA store. The stage-release and accumulator-ready signals are
``tcgen05.commit`` arrivals on mbarriers (CuTeDSL's ``PipelineTmaUmma`` / ``PipelineUmmaAsync``:
producer ``acquire_and_advance``/``commit``/``tail``, consumer ``wait_and_advance``/``release``).

Shared-memory budget (fp16/bf16, 2 bytes):

    A stage  128 x 64 x 2            = 16 KiB
    B stage  256 x 64 x 2            = 32 KiB
    one stage                        = 48 KiB
    epilogue 2 x (128 x 32 x 2)      = 16 KiB   (epilogue tile from compute_epilogue_tile_shape)
    barriers + TMEM handle           <  1 KiB
    228 KiB - 16 KiB - 1 KiB = 211 KiB -> 4 stages (192 KiB)

Tensor memory: one 128-lane x 256-column fp32 accumulator = 256 columns.

Barriers (arrivals per phase):

    name          arrives                                   waits        meaning
    ab_full[s]    TMA warp (expect_tx of 48 KiB)            MMA warp     A and B of stage s landed
                  + TMA bytes
    ab_empty[s]   MMA warp's tcgen05.commit (1)             TMA warp     the MMAs that read stage
                                                                         s retired
    acc_full      MMA warp's tcgen05.commit (1)             epilogue     accumulator complete
    acc_empty     4 epilogue warps (4)                      MMA warp     accumulator drained

Producers start on phase 1 of their empty barriers (all free), consumers on phase 0 of the
full ones (``make_participants`` sets both).
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.memory import SmemAllocator, TmemAllocator
from cutlass.tensor_utils import LayoutEnum

from backends.cutedsl import spec
from backends.cutedsl._host import CuteDslKernel
from backends.cutedsl._operands import operand_tensors
from backends.cutedsl.sm100._epilogue import n_multiple_of_8, store_accumulator

# -- constants -------------------------------------------------------------------------------
CLUSTER_M = 1  # no cluster yet
MMA_TILER = (128, 256, 64)  # CTA tile; the instruction is m128n256k16 (cta_group::1)
BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # the CTA's tile
NUM_STAGES = 4  # shared-memory ring depth (budget above)
ACC_STAGES = 1  # accumulators in tensor memory
EPI_STAGES = 2  # epilogue buffers in flight
TMEM_COLS = 256 * ACC_STAGES  # fp32 columns allocated (power of two >= 32)
EPILOGUE_WARPS = (0, 1, 2, 3)
MMA_WARP = 4
TMA_WARP = 5
NUM_THREADS = 32 * (len(EPILOGUE_WARPS) + 2)
EPI_BARRIER_ID = 1
TMEM_BARRIER_ID = 2


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T, persistent warp-specialized tcgen05 kernel (1 CTA)."""

    def __init__(self, num_sms: int, variant: None = None):
        self.max_active_clusters = num_sms // CLUSTER_M

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
        # Row-major A, B, D over the raw pointers (``_operands.py``); N % 8 == 0 (supports()).
        mA, mB, mD = operand_tensors(a_ptr, b_ptr, d_ptr, m, n, k, True)

        tiled_mma = cute.make_tiled_mma(
            tcgen05.MmaF16BF16Op(
                self.dtype,
                cutlass.Float32,
                (MMA_TILER[0], MMA_TILER[1], 16),
                tcgen05.CtaGroup.ONE,
                tcgen05.OperandSource.SMEM,
                cute.nvgpu.OperandMajorMode.K,
                cute.nvgpu.OperandMajorMode.K,
            )
        )
        # (V, M, N, K) view of the (trivial) cluster: V = the CTAs of one MMA, here one.
        cta_layout_vmnk = cute.tiled_divide(
            cute.make_layout((CLUSTER_M, 1, 1)), (tiled_mma.thr_id,)
        )

        # -- shared-memory plan --------------------------------------------------------------
        sA_layout = sm100_utils.make_smem_layout_a(tiled_mma, MMA_TILER, self.dtype, NUM_STAGES)
        sB_layout = sm100_utils.make_smem_layout_b(tiled_mma, MMA_TILER, self.dtype, NUM_STAGES)
        epi_tile = utils.compute_epilogue_tile_shape(
            (BLOCK_M, BLOCK_N, BLOCK_K), True, LayoutEnum.ROW_MAJOR, self.dtype
        )
        sD_layout = sm100_utils.make_smem_layout_epi(
            self.dtype, LayoutEnum.ROW_MAJOR, epi_tile, EPI_STAGES
        )

        @cute.struct
        class SharedStorage:
            ab_barriers: cute.struct.MemRange[cutlass.Int64, NUM_STAGES * 2]
            acc_barriers: cute.struct.MemRange[cutlass.Int64, ACC_STAGES * 2]
            tmem_handle: cutlass.Int32
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]
            sD: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sD_layout)], 1024]

        self.shared_storage = SharedStorage

        # TMA loads of the CTA's A and B tiles.
        tma_op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
        tma_a, gA_tma = cute.nvgpu.make_tiled_tma_atom_A(
            tma_op,
            mA,
            cute.slice_(sA_layout, (None, None, None, 0)),
            MMA_TILER,
            tiled_mma,
            cta_layout_vmnk.shape,
        )
        tma_b, gB_tma = cute.nvgpu.make_tiled_tma_atom_B(
            tma_op,
            mB,
            cute.slice_(sB_layout, (None, None, None, 0)),
            MMA_TILER,
            tiled_mma,
            cta_layout_vmnk.shape,
        )
        tma_d, gD_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), mD, cute.slice_(sD_layout, (None, None, 0)), epi_tile
        )

        # Persistent grid over CTA tiles.
        tiles_mnl = (cute.ceil_div(m, BLOCK_M), cute.ceil_div(n, BLOCK_N), 1)
        sched_params = utils.PersistentTileSchedulerParams(tiles_mnl, (CLUSTER_M, 1, 1))
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(
            sched_params, self.max_active_clusters
        )

        self.kernel(
            tiled_mma,
            tma_a,
            gA_tma,
            tma_b,
            gB_tma,
            tma_d,
            gD_tma,
            sA_layout,
            sB_layout,
            sD_layout,
            epi_tile,
            cta_layout_vmnk,
            sched_params,
        ).launch(
            grid=grid,
            block=[NUM_THREADS, 1, 1],
            stream=stream,
        )

    # -- device ------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_d: cute.CopyAtom,
        mD: cute.Tensor,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sD_layout: cute.ComposedLayout,
        epi_tile: cute.Tile,
        cta_layout_vmnk: cute.Layout,
        sched_params: utils.PersistentTileSchedulerParams,
    ):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        cta_coord = cta_layout_vmnk.get_flat_coord(cute.arch.block_idx_in_cluster())
        mma_v = bidx % cute.size(cta_layout_vmnk, mode=[0])  # always 0: one CTA per MMA

        if warp_idx == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_d)

        # -- shared memory ---------------------------------------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)
        sD = storage.sD.get_tensor(sD_layout.outer, swizzle=sD_layout.inner)

        # -- tensor memory: allocated by epilogue warp 0, read by the MMA and epilogue warps --
        tmem = TmemAllocator(
            storage.tmem_handle.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=TMEM_BARRIER_ID, num_threads=32 * (len(EPILOGUE_WARPS) + 1)
            ),
            allocator_warp_id=EPILOGUE_WARPS[0],
        )

        # -- barriers (table in the module docstring) -------------------------------------------
        stage_bytes = (
            cute.size_in_bytes(self.dtype, cute.select(sA_layout, mode=[0, 1, 2]))
            + cute.size_in_bytes(self.dtype, cute.select(sB_layout, mode=[0, 1, 2]))
        ) * cute.size(cta_layout_vmnk, mode=[0])
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_barriers.data_ptr(),
            num_stages=NUM_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=stage_bytes,
            cta_layout_vmnk=cta_layout_vmnk,
            defer_sync=True,
        ).make_participants()
        acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_barriers.data_ptr(),
            num_stages=ACC_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, CLUSTER_M * len(EPILOGUE_WARPS)
            ),
            cta_layout_vmnk=cta_layout_vmnk,
            defer_sync=True,
        ).make_participants()
        # Barrier inits must be visible to the async proxy and every warp before use.
        pipeline.pipeline_init_arrive(cluster_shape_mn=(CLUSTER_M, 1), is_relaxed=True)

        # -- global tiles, MMA and TMA partitions ----------------------------------------------
        gA = cute.local_tile(mA, cute.slice_(MMA_TILER, (None, 0, None)), (None, None))
        gB = cute.local_tile(mB, cute.slice_(MMA_TILER, (0, None, None)), (None, None))
        gD = cute.local_tile(mD, cute.slice_(MMA_TILER, (None, None, 0)), (None, None))
        thr_mma = tiled_mma.get_slice(mma_v)
        tCgA = thr_mma.partition_A(gA)
        tCgB = thr_mma.partition_B(gB)
        tCgD = thr_mma.partition_C(gD)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_shape = tiled_mma.partition_shape_C(MMA_TILER[:2])
        tCtAcc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES)).layout
        tAsA, tAgA = cpasync.tma_partition(
            tma_a,
            cta_coord[2],
            cute.make_layout(cute.size(cta_layout_vmnk, mode=[2])),
            cute.group_modes(sA, 0, 3),
            cute.group_modes(tCgA, 0, 3),
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cta_coord[1],
            cute.make_layout(cute.size(cta_layout_vmnk, mode=[1])),
            cute.group_modes(sB, 0, 3),
            cute.group_modes(tCgB, 0, 3),
        )
        gD_epi = cute.flat_divide(tCgD[((None, None), 0, 0, None, None)], epi_tile)
        tDsD, tDgD = cpasync.tma_partition(
            tma_d,
            0,
            cute.make_layout(1),
            cute.group_modes(sD, 0, 2),
            cute.group_modes(gD_epi, 0, 2),
        )
        k_tiles = cute.size(gA, mode=[3])
        k_blocks = cute.size(tCrA, mode=[2])

        pipeline.pipeline_init_wait(cluster_shape_mn=(CLUSTER_M, 1))

        sched = utils.StaticPersistentTileScheduler.create(
            sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
        )
        work = sched.initial_work_tile_info()

        # -- TMA warp: load A and B of every stage -----------------------------------------
        if warp_idx == TMA_WARP:
            while work.is_valid_tile:
                pair_m = work.tile_idx[0] // CLUSTER_M
                tile_n = work.tile_idx[1]
                for kt in range(k_tiles):
                    stage = ab_producer.acquire_and_advance()
                    cute.copy(
                        tma_a,
                        tAgA[(None, pair_m, kt)],
                        tAsA[(None, stage.index)],
                        tma_bar_ptr=stage.barrier,
                    )
                    cute.copy(
                        tma_b,
                        tBgB[(None, tile_n, kt)],
                        tBsB[(None, stage.index)],
                        tma_bar_ptr=stage.barrier,
                    )
                sched.advance_to_next_work()
                work = sched.get_current_work()
            ab_producer.tail()

        # -- MMA warp: one elected thread issues tcgen05.mma -------------------------------
        elif warp_idx == MMA_WARP:
            tmem.wait_for_alloc()
            tCtAcc_all = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), tCtAcc_layout)
            while work.is_valid_tile:
                acc = acc_producer.acquire_and_advance()
                tCtAcc = tCtAcc_all[(None, None, None, acc.index)]
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                for _kt in range(k_tiles):
                    stage = ab_consumer.wait_and_advance()
                    for kb in cutlass.range_constexpr(k_blocks):
                        coord = (None, None, kb, stage.index)
                        cute.gemm(tiled_mma, tCtAcc, tCrA[coord], tCrB[coord], tCtAcc)
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    # tcgen05.commit to ab_empty once these MMAs retire.
                    stage.release()
                acc.commit()
                sched.advance_to_next_work()
                work = sched.get_current_work()
            acc_producer.tail()

        # -- epilogue warps: TMEM -> registers -> shared -> TMA store -------------------------
        elif warp_idx < MMA_WARP:
            tmem.allocate(TMEM_COLS)
            tmem.wait_for_alloc()
            tmem_ptr = tmem.retrieve_ptr(cutlass.Float32)
            tCtAcc_all = cute.make_tensor(tmem_ptr, tCtAcc_layout)
            epi_bar = pipeline.NamedBarrier(
                barrier_id=EPI_BARRIER_ID, num_threads=32 * len(EPILOGUE_WARPS)
            )
            store_pipe = pipeline.PipelineTmaStore.create(
                num_stages=EPI_STAGES,
                producer_group=pipeline.CooperativeGroup(
                    pipeline.Agent.Thread, 32 * len(EPILOGUE_WARPS)
                ),
            )
            while work.is_valid_tile:
                pair_m = work.tile_idx[0] // CLUSTER_M
                tile_n = work.tile_idx[1]
                acc = acc_consumer.wait_and_advance()
                store_accumulator(
                    tCtAcc_all[((None, None), 0, 0, acc.index)],
                    tCgD[((None, None), 0, 0, pair_m, tile_n)],
                    tDgD[(None, None, None, pair_m, tile_n)],
                    tDsD,
                    sD,
                    tma_d,
                    epi_tile,
                    EPI_STAGES,
                    0,
                    tidx,
                    warp_idx,
                    EPILOGUE_WARPS[0],
                    epi_bar,
                    store_pipe,
                    self.dtype,
                )
                # Accumulator drained: one arrive per epilogue warp on acc_empty.
                with cute.arch.elect_one():
                    acc.release()
                sched.advance_to_next_work()
                work = sched.get_current_work()
            store_pipe.producer_tail()
            tmem.relinquish_alloc_permit()
            tmem.free(tmem_ptr)


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, variant, config: Gemm(num_sms),
    rung_supports=n_multiple_of_8,
)
