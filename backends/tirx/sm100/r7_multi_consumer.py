"""TIRx · sm_100a · rung 7 ``multi_consumer``.

Blackwell, 2-CTA clusters (``cta_group::2``), persistent over 512x128x64 cluster tiles.
Compile-only here (no Blackwell GPU): ``tvm.compile`` -> CUDA C -> nvcc PTX -> ptxas cubin.

Changes from rung 6 (``cluster2``):
  * two consumers per CTA pair: consumer c computes cluster rows [256 c, 256 c + 256) (CTA r
    holding rows 256 c + 128 r ... + 128). Each stage holds two A tiles (one per consumer) and
    one B tile, which both consumers' MMAs read: one staged B feeds twice the math;
  * two MMA issuers in the lead CTA (warpgroup 2, warps 0 and 1), one per consumer, each
    issuing ``cta_group::2`` MMAs (M=256, N=128) into its own pair of TMEM accumulators;
    ``mma2tma`` counts both issuers' commits (a ``tcgen05.commit`` tracks only the MMAs of the
    thread that issues it), so a stage is refilled only after both consumers read it;
  * two writeback warpgroups (0 and 1), one per consumer, each with its own ``mma2ld`` /
    ``ld2mma`` slots and named barrier;
  * N per tile drops from 256 to 128 so that 2 consumers x 2 TMEM buffers x 128 columns fit
    the 512 columns, and 3 stages fit shared memory beside two writebacks' buffers.

Shared memory per CTA: A 2 x 128x64x2 = 32 KiB + B half 64x64x2 = 8 KiB = 40 KiB per stage;
3 stages = 120 KiB; writeback 2 consumers x 2 x 128x64x2 = 64 KiB; barriers + TMEM address
1 KiB -> 185 KiB. A 4th stage (225 KiB + 1 KiB) would overflow the 227 KiB limit.
Tensor memory per CTA: NUM_CONSUMERS x NUM_ACC x BLOCK_N = 2 x 2 x 128 = 512 columns.

Barriers ("pair" = the lead CTA's copy, arrived on by both CTAs; s = stage, c = consumer,
b = buffer; slot ``c * NUM_ACC + b``):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``tma2mma[s]`` | pair, 1 x 2 + tx | both producers (expect_tx); both TMAs | both lead MMA issuers | both CTAs' stage s in |
  | ``mma2tma[s]`` | 2 | both issuers' commits (multicast) | own producer | read by both consumers |
  | ``mma2ld[c, b]`` | 1 | issuer c's commit (multicast) | own writeback c | acc (c, b) final |
  | ``ld2mma[c, b]`` | pair, 128 x 2 | writeback c threads of both CTAs | lead issuer c | (c, b) drained |

Starting phases as in rung 5: waiters of ``tma2mma`` / ``mma2ld`` start at phase 0, waiters
of ``mma2tma`` / ``ld2mma`` at phase 1 (a fresh barrier reads as "previous phase done").
"""  # noqa: E501

from __future__ import annotations

from tvm.backend.cuda.tile_primitive.tma_utils import mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.tirx.layout import S, TileLayout, tid_in_wg

from backends.tirx import spec
from backends.tirx._host import TirxKernel
from backends.tirx._schedule import grouped_tile
from backends.tirx._tma import COMMIT, LOAD, STORE, SWIZZLE_COLS, WAIT_READ
from backends.tirx._tma import SWIZZLE_128B as TMA_SW128

#: The TMA load of a CTA pair: completes its bytes on an mbarrier in either CTA of the pair.
LOAD_PAIR = LOAD + ".cta_group::2"

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA per consumer; one MMA covers both CTAs' 256
BLOCK_N = 128
BLOCK_K = 64
EPI_N = 64  # writeback chunk width (one 128-byte swizzle row of fp16/bf16)
NUM_STAGES = 3
NUM_ACC = 2  # TMEM accumulator buffers per consumer
NUM_CONSUMERS = 2
CLUSTER_M = 2  # CTAs per cluster, stacked along M
GROUP_M = 8
THREADS = 128 * (NUM_CONSUMERS + 1)  # wg 0, 1: writeback c; wg 2: warps 0, 1 MMA c, warp 3 TMA
TMEM_COLS = NUM_CONSUMERS * NUM_ACC * BLOCK_N
WRITEBACK_BAR = 1  # named barriers 1 and 2: writeback warpgroup c uses WRITEBACK_BAR + c
CLUSTER_TILE_M = BLOCK_M * CLUSTER_M * NUM_CONSUMERS
B_HALF = BLOCK_N // CLUSTER_M  # rows of the B tile each CTA loads
A_STAGE = NUM_CONSUMERS * BLOCK_M * BLOCK_K
B_STAGE = B_HALF * BLOCK_K
TX_BYTES = (A_STAGE + B_STAGE) * 2  # per CTA
D_CHUNK = BLOCK_M * EPI_N
SMEM_BYTES = 1024 + NUM_STAGES * TX_BYTES + NUM_CONSUMERS * 2 * D_CHUNK * 2


def build(dtype: str, config: object = None):
    a_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, NUM_CONSUMERS, BLOCK_M, BLOCK_K))
    b_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, B_HALF, BLOCK_K))
    d_layout = mma_shared_layout(dtype, 3, (NUM_CONSUMERS, 2, BLOCK_M, EPI_N))
    chunk_layout = TileLayout(S[(BLOCK_M, EPI_N) : (1 @ tid_in_wg, 1)])

    @T.prim_func
    def main(a: T.handle, b: T.handle, d: T.handle, num_ctas: T.int32):
        M = T.int32()
        N = T.int32()
        K = T.int32()
        A = T.match_buffer(a, (M, K), dtype, align=16)
        B = T.match_buffer(b, (N, K), dtype, align=16)
        D = T.match_buffer(d, (M, N), dtype, align=16)
        # -- host: TMA descriptors ------------------------------------------------------------
        A_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", A_map, dtype, 2, A.data, K, M, K * 2,
                      BLOCK_K, BLOCK_M, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip
        B_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", B_map, dtype, 2, B.data, K, N, K * 2,
                      BLOCK_K, B_HALF, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip
        D_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", D_map, dtype, 2, D.data, N, M, N * 2,
                      SWIZZLE_COLS, BLOCK_M, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip

        T.device_entry()
        rank = T.cta_id_in_cluster([CLUSTER_M])
        cta = T.cta_id([num_ctas])
        wg = T.warpgroup_id([THREADS // 128])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])

        # -- shared-memory plan ---------------------------------------------------------------
        pool = T.SMEMPool()
        tmem_pool = T.TMEMPool(pool, TMEM_COLS, cta_group=CLUSTER_M, alloc_warp=0)
        tma2mma = TMABar(pool, NUM_STAGES)
        mma2tma = TCGen05Bar(pool, NUM_STAGES)
        mma2ld = TCGen05Bar(pool, NUM_CONSUMERS * NUM_ACC)
        ld2mma = MBarrier(pool, NUM_CONSUMERS * NUM_ACC)
        pool.move_base_to(1024)
        A_smem = pool.alloc((NUM_STAGES, NUM_CONSUMERS, BLOCK_M, BLOCK_K), dtype,
                            layout=a_layout, align=1024)  # fmt: skip
        B_smem = pool.alloc((NUM_STAGES, B_HALF, BLOCK_K), dtype, layout=b_layout, align=1024)
        D_smem = pool.alloc((NUM_CONSUMERS, 2, BLOCK_M, EPI_N), dtype, layout=d_layout,
                            align=1024)  # fmt: skip
        pool.commit()

        # -- barrier init ---------------------------------------------------------------------
        tma2mma.init(CLUSTER_M)  # lead's copy: both producers' expect_tx; both TMAs' bytes
        mma2tma.init(NUM_CONSUMERS)  # one multicast tcgen05.commit per issuer per k-step
        mma2ld.init(1)  # one multicast tcgen05.commit of issuer c per tile
        ld2mma.init(128 * CLUSTER_M)  # lead's copy: writeback c threads of both CTAs
        # -- tensor-memory plan: warp 0 of each CTA joins the pair allocation (512 columns) ---
        tmem = tmem_pool.alloc((BLOCK_M, TMEM_COLS), "float32")
        tmem_pool.commit()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.ptx.tcgen05.fence__before_thread_sync()
        T.cuda.cluster_sync()  # peers see initialized barriers before any remote arrive
        T.ptx.tcgen05.fence__after_thread_sync()
        tma2mma_lead = tma2mma.remote_view(0)
        ld2mma_lead = ld2mma.remote_view(0)

        cluster = T.meta_var(cta // CLUSTER_M)
        num_clusters = T.meta_var(num_ctas // CLUSTER_M)
        tiles_m = T.meta_var(T.ceildiv(M, CLUSTER_TILE_M))
        tiles_n = T.meta_var(T.ceildiv(N, BLOCK_N))
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        my_tiles = T.meta_var(
            T.max(tiles_m * tiles_n - cluster + num_clusters - 1, 0) // num_clusters
        )

        if wg == NUM_CONSUMERS:
            if warp == 3:
                # -- TMA producer (each CTA): both consumers' A rows, its half of B ----------
                if T.cuda.elect_sync():
                    tma_ps = PipelineState(NUM_STAGES, 1)  # phase 1: every stage starts free
                    for lt in range(my_tiles):
                        tm, tn = T.meta_var(grouped_tile(cluster + lt * num_clusters, tiles_m,
                                                         tiles_n, GROUP_M))  # fmt: skip
                        for kt in range(k_tiles):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase)
                            s = T.meta_var(tma_ps.stage)
                            tma2mma_lead.arrive(s, TX_BYTES)
                            for c in T.unroll(NUM_CONSUMERS):
                                T.ptx[LOAD_PAIR](A_smem.ptr_to([s, c, 0, 0]), T.address_of(A_map),
                                                 kt * BLOCK_K,
                                                 tm * CLUSTER_TILE_M
                                                 + (c * CLUSTER_M + rank) * BLOCK_M,
                                                 tma2mma_lead.ptr_to([s]))  # fmt: skip
                            T.ptx[LOAD_PAIR](B_smem.ptr_to([s, 0, 0]), T.address_of(B_map),
                                             kt * BLOCK_K, tn * BLOCK_N + rank * B_HALF,
                                             tma2mma_lead.ptr_to([s]))  # fmt: skip
                            tma_ps.advance()
            elif warp < NUM_CONSUMERS:
                # -- MMA issuer of consumer c = warp (lead CTA only): one elected lane -------
                if rank == 0:
                    if T.cuda.elect_sync():
                        mma_ps = PipelineState(NUM_STAGES, 0)
                        acc_ps = PipelineState(NUM_ACC, 1)  # phase 1: both buffers start free
                        for _lt in range(my_tiles):
                            slot = T.meta_var(warp * NUM_ACC + acc_ps.stage)
                            ld2mma.wait(slot, acc_ps.phase)
                            T.ptx.tcgen05.fence__after_thread_sync()
                            col = T.meta_var(slot * BLOCK_N)
                            for kt in range(k_tiles):
                                tma2mma.wait(mma_ps.stage, mma_ps.phase)
                                T.ptx.tcgen05.fence__after_thread_sync()
                                Tx.gemm_async(tmem[:, col : col + BLOCK_N],
                                              A_smem[mma_ps.stage, warp, :, :],
                                              B_smem[mma_ps.stage, :, :], accum=kt != 0,
                                              dispatch="tcgen05", cta_group=CLUSTER_M)  # fmt: skip
                                # stage s of both CTAs read by this consumer once these retire
                                mma2tma.arrive(mma_ps.stage, cta_group=CLUSTER_M, cta_mask=0b11)
                                mma_ps.advance()
                            # consumer c's rows in both CTAs final once all its MMAs retire
                            mma2ld.arrive(slot, cta_group=CLUSTER_M, cta_mask=0b11)
                            acc_ps.advance()
        else:
            # -- writeback warpgroup c = wg (each CTA): its consumer's 128 rows --------------
            row = T.meta_var(warp * 32 + lane)
            ld_ps = PipelineState(NUM_ACC, 0)
            chunk = T.alloc_local((EPI_N,), "float32")
            chunk_wg = chunk.view(BLOCK_M, EPI_N, layout=chunk_layout)
            out = T.alloc_local((EPI_N,), dtype)
            for lt in range(my_tiles):
                tm, tn = T.meta_var(grouped_tile(cluster + lt * num_clusters, tiles_m, tiles_n,
                                                 GROUP_M))  # fmt: skip
                slot = T.meta_var(wg * NUM_ACC + ld_ps.stage)
                mma2ld.wait(slot, ld_ps.phase)
                T.ptx.tcgen05.fence__after_thread_sync()
                for j in T.unroll(BLOCK_N // EPI_N):
                    col = T.meta_var(slot * BLOCK_N + j * EPI_N)
                    Tx.wg.copy_async(chunk_wg[:, :], tmem[:, col : col + EPI_N])
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    if j == BLOCK_N // EPI_N - 1:
                        # the whole accumulator is in registers: tell the lead's issuer c
                        T.ptx.tcgen05.fence__before_thread_sync()
                        ld2mma_lead.arrive(slot)
                    Tx.cast(out[:], chunk[:])
                    # the store issued from this chunk buffer two chunks ago has read it
                    if warp == 0:
                        if lane == 0:
                            T.ptx[WAIT_READ](1)
                    T.cuda.warpgroup_sync(WRITEBACK_BAR + wg)
                    Tx.copy(D_smem[wg, j % 2, row, :], out[:])
                    T.ptx.fence.proxy.async_.shared__cta()
                    T.cuda.warpgroup_sync(WRITEBACK_BAR + wg)
                    if warp == 0:
                        if lane == 0:
                            T.ptx[STORE](T.address_of(D_map), tn * BLOCK_N + j * EPI_N,
                                         tm * CLUSTER_TILE_M + (wg * CLUSTER_M + rank) * BLOCK_M,
                                         D_smem.ptr_to([wg, j % 2, 0, 0]))  # fmt: skip
                            T.ptx[COMMIT]()
                ld_ps.advance()
            if warp == 0:
                if lane == 0:
                    T.ptx[WAIT_READ](0)

        # -- teardown: no CTA frees TMEM or exits while its peer may still reach it ----------
        T.ptx.tcgen05.fence__before_thread_sync()
        T.cuda.cluster_sync()
        T.ptx.tcgen05.fence__after_thread_sync()
        tmem_pool.dealloc()

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    persistent=True,
    cluster=CLUSTER_M,
    raw_ptx=("tma", "tma_cta_group2", "tcgen05.fence", "tcgen05.wait"),
)
