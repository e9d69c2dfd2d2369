"""TIRx · sm_100a · rung 5 ``warp_specialized``.

Blackwell, one CTA per SM, persistent over 128x256x64 tiles. Compile-only here (no Blackwell
GPU): ``tvm.compile`` -> CUDA C -> nvcc PTX -> ptxas cubin.

Changes from rung 4 (``persistent``; the Hopper rung 5 is the same idea on wgmma):
  * the accumulator lives in tensor memory (TMEM), so the MMA needs one issuing thread instead
    of a consumer warpgroup, and the epilogue gets its own warpgroup. Three roles:
    - TMA producer (warpgroup 1, warp 3, one elected lane): A and B tiles into a NUM_STAGES
      ring, as on Hopper;
    - MMA issuer (warpgroup 1, warp 0, one elected lane): ``Tx.gemm_async(dispatch="tcgen05")``
      into one of NUM_ACC = 2 TMEM accumulators (128 lanes x 256 fp32 columns each); each
      k-step's ``tcgen05.commit`` releases its stage (``mma2tma``), and one commit after the
      tile's last k-step tells the epilogue the accumulator is final (``mma2ld``);
    - writeback (warpgroup 0, 4 warps): TMEM -> registers (``tcgen05.ld`` through
      ``Tx.wg.copy_async``) in 128xEPI_N chunks -> fp16/bf16 -> 128B-swizzled shared -> TMA
      store, two chunk buffers in flight; once the whole accumulator is in registers it hands
      the TMEM buffer back (``ld2mma``), so the MMA of the next tile overlaps this tile's
      writeback;
  * stage/phase bookkeeping is TIRx's ``PipelineState`` (one per role and ring);
  * no ``setmaxnreg``: the producer and MMA roles are single threads, the writeback holds one
    64-column chunk (64 fp32) at a time.

Shared memory: A 128x64x2 = 16 KiB + B 256x64x2 = 32 KiB = 48 KiB per stage; 3 stages =
144 KiB; writeback 2 x 128x64x2 = 32 KiB; barriers + TMEM address 1 KiB -> 177 KiB (of 227).
A 4th stage (224 KiB + 1 KiB) would not fit beside the writeback buffers.
Tensor memory: NUM_ACC x BLOCK_N = 2 x 256 fp32 columns = 512 columns (all of it).

Barriers (s = stage, b = accumulator buffer):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``tma2mma[s]`` | 1 + tx bytes | producer (expect_tx); TMA bytes | MMA issuer | stage s landed |
  | ``mma2tma[s]`` | 1 | ``tcgen05.commit`` after the k-step's MMAs | producer | stage s read |
  | ``mma2ld[b]`` | 1 | ``tcgen05.commit`` after a tile's last k-step | writeback | acc b final |
  | ``ld2mma[b]`` | 128 | every writeback thread, after ``tcgen05.wait::ld`` | MMA issuer | b free |

Starting phases: the waiters of "full" barriers (``tma2mma``, ``mma2ld``) start at phase 0 and
block until the first completion; the waiters of "empty" barriers (``mma2tma``, ``ld2mma``)
start at phase 1, which a fresh barrier (in phase 0) reports as already completed, so every
stage and both accumulators start free.
"""

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

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64
EPI_N = 64  # writeback chunk width (one 128-byte swizzle row of fp16/bf16)
NUM_STAGES = 3
NUM_ACC = 2  # TMEM accumulator buffers
NUM_CONSUMERS = 1
GROUP_M = 8
THREADS = 256  # warpgroup 0: writeback; warpgroup 1: warp 0 MMA, warp 3 TMA
TMEM_COLS = NUM_ACC * BLOCK_N
WRITEBACK_BAR = 1  # named barrier of the writeback warpgroup (0 is __syncthreads)
A_STAGE = BLOCK_M * BLOCK_K
B_STAGE = BLOCK_N * BLOCK_K
TX_BYTES = (A_STAGE + B_STAGE) * 2
D_CHUNK = BLOCK_M * EPI_N
SMEM_BYTES = 1024 + NUM_STAGES * TX_BYTES + 2 * D_CHUNK * 2


def build(dtype: str, config: object = None):
    a_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, BLOCK_M, BLOCK_K))
    b_layout = mma_shared_layout(dtype, 3, (NUM_STAGES, BLOCK_N, BLOCK_K))
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
                      BLOCK_K, BLOCK_N, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip
        D_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", D_map, dtype, 2, D.data, N, M, N * 2,
                      SWIZZLE_COLS, BLOCK_M, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip

        T.device_entry()
        cta = T.cta_id([num_ctas])
        wg = T.warpgroup_id([THREADS // 128])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])

        # -- shared-memory plan ---------------------------------------------------------------
        pool = T.SMEMPool()
        tmem_pool = T.TMEMPool(pool, TMEM_COLS, cta_group=1, alloc_warp=0)
        tma2mma = TMABar(pool, NUM_STAGES)
        mma2tma = TCGen05Bar(pool, NUM_STAGES)
        mma2ld = TCGen05Bar(pool, NUM_ACC)
        ld2mma = MBarrier(pool, NUM_ACC)
        pool.move_base_to(1024)
        A_smem = pool.alloc((NUM_STAGES, BLOCK_M, BLOCK_K), dtype, layout=a_layout, align=1024)
        B_smem = pool.alloc((NUM_STAGES, BLOCK_N, BLOCK_K), dtype, layout=b_layout, align=1024)
        D_smem = pool.alloc((2, BLOCK_M, EPI_N), dtype, layout=d_layout, align=1024)
        pool.commit()

        # -- barrier init ---------------------------------------------------------------------
        tma2mma.init(1)  # the producer's expect_tx; the TMA bytes complete it
        mma2tma.init(1)  # one tcgen05.commit per k-step
        mma2ld.init(1)  # one tcgen05.commit per tile
        ld2mma.init(128)  # every writeback thread
        # -- tensor-memory plan: warp 0 (writeback warpgroup) allocates all 512 columns -----
        tmem = tmem_pool.alloc((BLOCK_M, TMEM_COLS), "float32")
        tmem_pool.commit()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.ptx.tcgen05.fence__before_thread_sync()
        T.cuda.cta_sync()
        T.ptx.tcgen05.fence__after_thread_sync()

        tiles_m = T.meta_var(T.ceildiv(M, BLOCK_M))
        tiles_n = T.meta_var(T.ceildiv(N, BLOCK_N))
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        my_tiles = T.meta_var(T.max(tiles_m * tiles_n - cta + num_ctas - 1, 0) // num_ctas)

        if wg == 1:
            if warp == 3:
                # -- TMA producer: one elected lane ------------------------------------------
                if T.cuda.elect_sync():
                    tma_ps = PipelineState(NUM_STAGES, 1)  # phase 1: every stage starts free
                    for lt in range(my_tiles):
                        tm, tn = T.meta_var(grouped_tile(cta + lt * num_ctas, tiles_m, tiles_n,
                                                         GROUP_M))  # fmt: skip
                        for kt in range(k_tiles):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase)
                            s = T.meta_var(tma_ps.stage)
                            tma2mma.arrive(s, TX_BYTES)
                            T.ptx[LOAD](A_smem.ptr_to([s, 0, 0]), T.address_of(A_map),
                                        kt * BLOCK_K, tm * BLOCK_M,
                                        tma2mma.ptr_to([s]))  # fmt: skip
                            T.ptx[LOAD](B_smem.ptr_to([s, 0, 0]), T.address_of(B_map),
                                        kt * BLOCK_K, tn * BLOCK_N,
                                        tma2mma.ptr_to([s]))  # fmt: skip
                            tma_ps.advance()
            elif warp == 0:
                # -- MMA issuer: one elected lane --------------------------------------------
                if T.cuda.elect_sync():
                    mma_ps = PipelineState(NUM_STAGES, 0)
                    acc_ps = PipelineState(NUM_ACC, 1)  # phase 1: both accumulators start free
                    for _lt in range(my_tiles):
                        ld2mma.wait(acc_ps.stage, acc_ps.phase)
                        T.ptx.tcgen05.fence__after_thread_sync()
                        col = T.meta_var(acc_ps.stage * BLOCK_N)
                        for kt in range(k_tiles):
                            tma2mma.wait(mma_ps.stage, mma_ps.phase)
                            T.ptx.tcgen05.fence__after_thread_sync()
                            Tx.gemm_async(tmem[:, col : col + BLOCK_N],
                                          A_smem[mma_ps.stage, :, :], B_smem[mma_ps.stage, :, :],
                                          accum=kt != 0, dispatch="tcgen05",
                                          cta_group=1)  # fmt: skip
                            mma2tma.arrive(mma_ps.stage)  # stage read once these MMAs retire
                            mma_ps.advance()
                        mma2ld.arrive(acc_ps.stage)  # accumulator final once all MMAs retire
                        acc_ps.advance()
        else:
            # -- writeback warpgroup: TMEM -> registers -> swizzled shared -> TMA store -------
            row = T.meta_var(warp * 32 + lane)
            ld_ps = PipelineState(NUM_ACC, 0)
            chunk = T.alloc_local((EPI_N,), "float32")
            chunk_wg = chunk.view(BLOCK_M, EPI_N, layout=chunk_layout)
            out = T.alloc_local((EPI_N,), dtype)
            for lt in range(my_tiles):
                tm, tn = T.meta_var(grouped_tile(cta + lt * num_ctas, tiles_m, tiles_n,
                                                 GROUP_M))  # fmt: skip
                mma2ld.wait(ld_ps.stage, ld_ps.phase)
                T.ptx.tcgen05.fence__after_thread_sync()
                for j in T.unroll(BLOCK_N // EPI_N):
                    col = T.meta_var(ld_ps.stage * BLOCK_N + j * EPI_N)
                    Tx.wg.copy_async(chunk_wg[:, :], tmem[:, col : col + EPI_N])
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    if j == BLOCK_N // EPI_N - 1:
                        # the whole accumulator is in registers: the MMA may overwrite it
                        T.ptx.tcgen05.fence__before_thread_sync()
                        ld2mma.arrive(ld_ps.stage)
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
                                         tm * BLOCK_M, D_smem.ptr_to([j % 2, 0, 0]))  # fmt: skip
                            T.ptx[COMMIT]()
                ld_ps.advance()
            if warp == 0:
                if lane == 0:
                    T.ptx[WAIT_READ](0)

        # -- teardown: every role done with TMEM before warp 0 frees it ----------------------
        T.ptx.tcgen05.fence__before_thread_sync()
        T.cuda.cta_sync()
        tmem_pool.dealloc()

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    persistent=True,
    raw_ptx=("tma", "tcgen05.fence", "tcgen05.wait"),
)
