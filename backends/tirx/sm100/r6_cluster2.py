"""TIRx · sm_100a · rung 6 ``cluster2``.

Blackwell, 2-CTA clusters, persistent over 256x256x64 cluster tiles. Compile-only here (no
Blackwell GPU): ``tvm.compile`` -> CUDA C -> nvcc PTX -> ptxas cubin.

Changes from rung 5 (``warp_specialized``):
  * 2-CTA clusters along M (``T.cta_id_in_cluster([2])``: TVM launches with
    ``cuLaunchKernelEx`` and the cluster attribute) running ``cta_group::2``: the lead CTA's
    (rank 0) MMA issuer runs one M=256, N=256 ``tcgen05.mma.cta_group::2`` per k16 step
    (``Tx.gemm_async(..., cta_group=2)``), reading A rows [128 r, 128 r + 128) and B rows
    [128 r, 128 r + 128) from the shared memory of CTA r and writing each CTA's 128 accumulator
    rows into that CTA's TMEM. Each CTA loads only its half of the B tile: the pair shares B
    without multicast. Rank 1 runs no MMA issuer;
  * ``tma2mma`` becomes a pair barrier: the lead's copy counts both producers
    (``mbarrier.arrive.expect_tx.shared::cluster`` through ``TMABar.remote_view(0)``), and both
    CTAs' TMA loads complete their bytes on it (``cp.async.bulk.tensor ... .cta_group::2`` with
    the lead's barrier address);
  * the lead's commits are multicast (``tcgen05.commit.cta_group::2 ... multicast::cluster``,
    ``cta_mask = 0b11``): one commit arrives on ``mma2tma`` / ``mma2ld`` in both CTAs, so each
    producer refills its own stage and each writeback drains its own 128 rows;
  * ``ld2mma`` becomes a pair barrier: every writeback thread of both CTAs arrives on the
    lead's copy (``MBarrier.arrive(remote=0)``), so an accumulator buffer is reused only after
    both CTAs drained it;
  * TMEM is allocated with ``tcgen05.alloc.cta_group::2`` by one warp of each CTA; barrier
    inits are published cluster-wide (``fence.mbarrier_init.release.cluster`` + a cluster
    barrier) before any remote arrive, and a cluster barrier precedes the dealloc and exit, so
    no CTA frees TMEM or leaves while its peer's MMAs or arrivals may still reach it.

Shared memory per CTA: A 128x64x2 = 16 KiB + B half 128x64x2 = 16 KiB = 32 KiB per stage;
4 stages = 128 KiB; writeback 2 x 128x64x2 = 32 KiB; barriers + TMEM address 1 KiB -> 161 KiB.
Tensor memory per CTA: NUM_ACC x BLOCK_N = 2 x 256 fp32 columns = 512 columns (all of it).

Barriers ("pair" = the lead CTA's copy, arrived on by both CTAs; s = stage, b = buffer):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``tma2mma[s]`` | pair, 1 x 2 + tx | both producers (expect_tx); both TMAs | lead MMA issuer | both halves in |
  | ``mma2tma[s]`` | 1 | lead's commit (multicast) | own producer | stage s read |
  | ``mma2ld[b]`` | 1 | lead's commit (multicast) | own writeback | acc b final |
  | ``ld2mma[b]`` | pair, 128 x 2 | writeback threads of both CTAs | lead MMA issuer | b drained |

Starting phases as in rung 5: waiters of ``tma2mma`` / ``mma2ld`` start at phase 0, waiters
of ``mma2tma`` / ``ld2mma`` at phase 1 (a fresh barrier reads as "previous phase done"). Rank
1's copies of ``tma2mma`` and ``ld2mma`` exist (same layout) but nobody uses them.
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
BLOCK_M = 128  # rows per CTA; one MMA covers both CTAs' 256
BLOCK_N = 256
BLOCK_K = 64
EPI_N = 64  # writeback chunk width (one 128-byte swizzle row of fp16/bf16)
NUM_STAGES = 4
NUM_ACC = 2  # TMEM accumulator buffers
NUM_CONSUMERS = 1
CLUSTER_M = 2  # CTAs per cluster, stacked along M
GROUP_M = 8
THREADS = 256  # warpgroup 0: writeback; warpgroup 1: warp 0 MMA (lead CTA), warp 3 TMA
TMEM_COLS = NUM_ACC * BLOCK_N
WRITEBACK_BAR = 1  # named barrier of the writeback warpgroup (0 is __syncthreads)
B_HALF = BLOCK_N // CLUSTER_M  # rows of the B tile each CTA loads
A_STAGE = BLOCK_M * BLOCK_K
B_STAGE = B_HALF * BLOCK_K
TX_BYTES = (A_STAGE + B_STAGE) * 2  # per CTA
D_CHUNK = BLOCK_M * EPI_N
SMEM_BYTES = 1024 + NUM_STAGES * TX_BYTES + 2 * D_CHUNK * 2


def build(dtype: str, config: object = None):
    a_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, BLOCK_M, BLOCK_K))
    b_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, B_HALF, BLOCK_K))
    d_layout = mma_shared_layout(dtype, 3, (2, BLOCK_M, EPI_N))
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
        mma2ld = TCGen05Bar(pool, NUM_ACC)
        ld2mma = MBarrier(pool, NUM_ACC)
        pool.move_base_to(1024)
        A_smem = pool.alloc((NUM_STAGES, BLOCK_M, BLOCK_K), dtype, layout=a_layout, align=1024)
        B_smem = pool.alloc((NUM_STAGES, B_HALF, BLOCK_K), dtype, layout=b_layout, align=1024)
        D_smem = pool.alloc((2, BLOCK_M, EPI_N), dtype, layout=d_layout, align=1024)
        pool.commit()

        # -- barrier init ---------------------------------------------------------------------
        tma2mma.init(CLUSTER_M)  # lead's copy: both producers' expect_tx; both TMAs' bytes
        mma2tma.init(1)  # one multicast tcgen05.commit per k-step
        mma2ld.init(1)  # one multicast tcgen05.commit per tile
        ld2mma.init(128 * CLUSTER_M)  # lead's copy: every writeback thread of both CTAs
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
        tiles_m = T.meta_var(T.ceildiv(M, BLOCK_M * CLUSTER_M))
        tiles_n = T.meta_var(T.ceildiv(N, BLOCK_N))
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        my_tiles = T.meta_var(
            T.max(tiles_m * tiles_n - cluster + num_clusters - 1, 0) // num_clusters
        )

        if wg == 1:
            if warp == 3:
                # -- TMA producer (each CTA): its A rows and its half of B, lead's barrier -----
                if T.cuda.elect_sync():
                    tma_ps = PipelineState(NUM_STAGES, 1)  # phase 1: every stage starts free
                    for lt in range(my_tiles):
                        tm, tn = T.meta_var(grouped_tile(cluster + lt * num_clusters, tiles_m,
                                                         tiles_n, GROUP_M))  # fmt: skip
                        for kt in range(k_tiles):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase)
                            s = T.meta_var(tma_ps.stage)
                            tma2mma_lead.arrive(s, TX_BYTES)
                            T.ptx[LOAD_PAIR](A_smem.ptr_to([s, 0, 0]), T.address_of(A_map),
                                             kt * BLOCK_K, (tm * CLUSTER_M + rank) * BLOCK_M,
                                             tma2mma_lead.ptr_to([s]))  # fmt: skip
                            T.ptx[LOAD_PAIR](B_smem.ptr_to([s, 0, 0]), T.address_of(B_map),
                                             kt * BLOCK_K, tn * BLOCK_N + rank * B_HALF,
                                             tma2mma_lead.ptr_to([s]))  # fmt: skip
                            tma_ps.advance()
            elif warp == 0:
                # -- MMA issuer (lead CTA only): one elected lane ----------------------------
                if rank == 0:
                    if T.cuda.elect_sync():
                        mma_ps = PipelineState(NUM_STAGES, 0)
                        acc_ps = PipelineState(NUM_ACC, 1)  # phase 1: both buffers start free
                        for _lt in range(my_tiles):
                            ld2mma.wait(acc_ps.stage, acc_ps.phase)
                            T.ptx.tcgen05.fence__after_thread_sync()
                            col = T.meta_var(acc_ps.stage * BLOCK_N)
                            for kt in range(k_tiles):
                                tma2mma.wait(mma_ps.stage, mma_ps.phase)
                                T.ptx.tcgen05.fence__after_thread_sync()
                                Tx.gemm_async(tmem[:, col : col + BLOCK_N],
                                              A_smem[mma_ps.stage, :, :],
                                              B_smem[mma_ps.stage, :, :], accum=kt != 0,
                                              dispatch="tcgen05", cta_group=CLUSTER_M)  # fmt: skip
                                # stage s of both CTAs read once these MMAs retire
                                mma2tma.arrive(mma_ps.stage, cta_group=CLUSTER_M, cta_mask=0b11)
                                mma_ps.advance()
                            # both CTAs' accumulator rows final once all MMAs retire
                            mma2ld.arrive(acc_ps.stage, cta_group=CLUSTER_M, cta_mask=0b11)
                            acc_ps.advance()
        else:
            # -- writeback warpgroup (each CTA): its 128 rows, TMEM -> regs -> smem -> TMA ----
            row = T.meta_var(warp * 32 + lane)
            ld_ps = PipelineState(NUM_ACC, 0)
            chunk = T.alloc_local((EPI_N,), "float32")
            chunk_wg = chunk.view(BLOCK_M, EPI_N, layout=chunk_layout)
            out = T.alloc_local((EPI_N,), dtype)
            for lt in range(my_tiles):
                tm, tn = T.meta_var(grouped_tile(cluster + lt * num_clusters, tiles_m, tiles_n,
                                                 GROUP_M))  # fmt: skip
                mma2ld.wait(ld_ps.stage, ld_ps.phase)
                T.ptx.tcgen05.fence__after_thread_sync()
                for j in T.unroll(BLOCK_N // EPI_N):
                    col = T.meta_var(ld_ps.stage * BLOCK_N + j * EPI_N)
                    Tx.wg.copy_async(chunk_wg[:, :], tmem[:, col : col + EPI_N])
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    if j == BLOCK_N // EPI_N - 1:
                        # the whole accumulator is in registers: tell the lead's MMA issuer
                        T.ptx.tcgen05.fence__before_thread_sync()
                        ld2mma_lead.arrive(ld_ps.stage)
                    Tx.cast(out[:], chunk[:])
                    # the store issued from this chunk buffer two chunks ago has read it
                    if warp == 0:
                        if lane == 0:
                            T.ptx[WAIT_READ](1)
                    T.cuda.warpgroup_sync(WRITEBACK_BAR)
                    Tx.copy(D_smem[j % 2, row, :], out[:])
                    T.ptx.fence.proxy.async_.shared__cta()
                    T.cuda.warpgroup_sync(WRITEBACK_BAR)
                    if warp == 0:
                        if lane == 0:
                            T.ptx[STORE](T.address_of(D_map), tn * BLOCK_N + j * EPI_N,
                                         (tm * CLUSTER_M + rank) * BLOCK_M,
                                         D_smem.ptr_to([j % 2, 0, 0]))  # fmt: skip
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
