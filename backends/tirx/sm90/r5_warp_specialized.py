"""TIRx · sm_90a · rung 5 ``warp_specialized``.

Changes from rung 4 (``persistent``):
  * two warpgroups with fixed roles: warpgroup 0 is the producer (its warp 0 walks the ring and
    one elected lane issues every TMA, the warp's role test on a lane-0-broadcast warp index so
    that ptxas sees it as warp-uniform; the warpgroup gives registers back with
    ``setmaxnreg.dec 40``), warpgroup 1 the consumer
    (``setmaxnreg.inc 232``, issues the wgmma and runs the epilogue). The producer runs ahead
    of the consumer by up to NUM_STAGES k-tiles, across tile boundaries, blocked only by
    ``ab_empty``;
  * stage/phase bookkeeping moves into TIRx's ``PipelineState`` (one per role);
  * the kernel is compiled with a 168-register cap (``tirx.max_registers`` -> ``__maxnreg__``)
    so that ``setmaxnreg`` moves registers between the roles.

Shared memory: as rung 4: 4 stages x 32 KiB + D 32 KiB + barriers 1 KiB -> 161 KiB.

Barriers (per stage s):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | elected producer lane (expect_tx); TMA | consumers | landed |
  | ``ab_empty`` | 4 | lane 0 of each consumer warp, after wait_group 1 | producer warp | free |

Starting phases: the consumer waits ``ab_full`` from phase 0. The producer waits ``ab_empty``
from phase 1: a freshly initialized mbarrier is in phase 0, and a parity-1 wait asks for the
phase *before* it, which counts as complete, so the first pass over the ring falls through
without any consumer arrival (every stage starts free).
"""

from __future__ import annotations

from tvm.script import tirx as T
from tvm.tirx.lang.pipeline import MBarrier, PipelineState, TMABar

from backends.tirx import spec
from backends.tirx._host import TirxKernel
from backends.tirx._schedule import grouped_tile
from backends.tirx._tma import COMMIT, LOAD, STORE, SWIZZLE_COLS, WAIT_READ
from backends.tirx._tma import SWIZZLE_128B as TMA_SW128
from backends.tirx._wgmma import (
    descriptor_bases,
    fragment_store,
    k_tile_step,
    mma_op,
    offset_descriptor,
)
from backends.tirx._workarounds import ACC_FENCE, ACC_FENCE_SOURCE

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 4
NUM_CONSUMERS = 1
GROUP_M = 8
THREADS = 128 * (1 + NUM_CONSUMERS)  # producer warpgroup + consumer warpgroup
MAX_REGS = 168  # compile-time cap; setmaxnreg rebalances it per role
PRODUCER_REGS = 40
CONSUMER_REGS = 232
EPILOGUE_BAR = 1  # named barrier of the consumer warpgroup (0 is __syncthreads)
ACC = BLOCK_M // 64 * BLOCK_N // 2
A_STAGE = BLOCK_M * BLOCK_K
B_STAGE = BLOCK_N * BLOCK_K
TX_BYTES = (A_STAGE + B_STAGE) * 2
SMEM_BYTES = 1024 + NUM_STAGES * TX_BYTES + BLOCK_M * BLOCK_N * 2


def build(dtype: str, config: object = None):
    store_fragment = fragment_store(BLOCK_M // 64, BLOCK_N, BLOCK_M, dtype)
    mma_k_tile = k_tile_step(mma_op(BLOCK_N, dtype), BLOCK_M // 64, ACC // (BLOCK_M // 64), BLOCK_K)
    encode_bases = descriptor_bases()

    @T.prim_func
    def main(a: T.handle, b: T.handle, d: T.handle, num_ctas: T.int32):
        M = T.int32()
        N = T.int32()
        K = T.int32()
        LD = T.int32()  # D's row stride: N, or N rounded up to 8 (the host's padded D)
        A = T.match_buffer(a, (M, K), dtype, align=16)
        B = T.match_buffer(b, (N, K), dtype, align=16)
        D = T.match_buffer(d, (M, LD), dtype, align=16)
        # -- host: TMA descriptors ------------------------------------------------------------
        A_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", A_map, dtype, 2, A.data, K, M, K * 2,
                      BLOCK_K, BLOCK_M, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip
        B_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", B_map, dtype, 2, B.data, K, N, K * 2,
                      BLOCK_K, BLOCK_N, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip
        D_map: T.let[T.handle("tensormap")] = T.tvm_stack_alloca("tensormap", 1)
        T.call_packed("runtime.cuTensorMapEncodeTiled", D_map, dtype, 2, D.data, N, M, LD * 2,
                      SWIZZLE_COLS, BLOCK_M, 1, 1, 0, TMA_SW128, 0, 0)  # fmt: skip

        T.device_entry()
        T.attr({"tirx.max_registers": MAX_REGS})
        cta = T.cta_id([num_ctas])
        tx = T.thread_id([THREADS])

        # -- shared-memory plan ---------------------------------------------------------------
        pool = T.SMEMPool()
        ab_full = TMABar(pool, NUM_STAGES)
        ab_empty = MBarrier(pool, NUM_STAGES)
        pool.move_base_to(1024)
        A_smem = pool.alloc((NUM_STAGES * A_STAGE,), dtype, align=1024)
        B_smem = pool.alloc((NUM_STAGES * B_STAGE,), dtype, align=1024)
        D_smem = pool.alloc((BLOCK_M * BLOCK_N,), dtype, align=1024)
        pool.commit()

        # -- barrier init ---------------------------------------------------------------------
        ab_full.init(1)  # the producer's expect_tx; the TMA bytes complete it
        ab_empty.init(4)  # lane 0 of each consumer warp
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tiles_m = T.meta_var(T.ceildiv(M, BLOCK_M))
        tiles_n = T.meta_var(T.ceildiv(N, BLOCK_N))
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        my_tiles = T.meta_var(T.max(tiles_m * tiles_n - cta + num_ctas - 1, 0) // num_ctas)

        if tx < 128:
            # -- producer warpgroup: warp 0 walks the ring, one elected lane issues the TMA ---
            T.ptx.setmaxnreg.dec.sync.aligned.u32(PRODUCER_REGS)
            # warp index broadcast from lane 0: a branch ptxas knows is warp-uniform keeps the
            # loop's coordinates and addresses in uniform registers (issued by one thread
            # under `tx == 0`, each TMA sat in a waterfall loop after R2UR moves)
            w: T.int32 = T.cuda.__shfl_sync(T.uint32(0xFFFFFFFF), tx // 32, 0, 32)
            if w == 0:
                empty = PipelineState(NUM_STAGES, 1)  # phase 1: every stage starts free
                for lt in range(my_tiles):
                    tm, tn = T.meta_var(grouped_tile(cta + lt * num_ctas, tiles_m, tiles_n,
                                                     GROUP_M))  # fmt: skip
                    # the tile's TMA rows, once per tile (not per k-step: the tile order divides)
                    a_row: T.int32 = tm * BLOCK_M
                    b_row: T.int32 = tn * BLOCK_N
                    for kt in range(k_tiles):
                        ab_empty.wait(empty.stage, empty.phase)
                        s = T.meta_var(empty.stage)
                        if T.cuda.elect_sync():
                            ab_full.arrive(s, TX_BYTES)
                            T.ptx[LOAD](A_smem.ptr_to([s * A_STAGE]), T.address_of(A_map),
                                        kt * BLOCK_K, a_row, ab_full.ptr_to([s]))  # fmt: skip
                            T.ptx[LOAD](B_smem.ptr_to([s * B_STAGE]), T.address_of(B_map),
                                        kt * BLOCK_K, b_row, ab_full.ptr_to([s]))  # fmt: skip
                        empty.advance()
        else:
            # -- consumer warpgroup: wgmma + epilogue -----------------------------------------
            T.ptx.setmaxnreg.inc.sync.aligned.u32(CONSUMER_REGS)
            ctx = T.meta_var(tx - 128)
            warp = T.meta_var(ctx // 32)
            lane = T.meta_var(ctx % 32)
            acc = T.alloc_buffer((ACC,), "float32", scope="local")
            desc_a: T.uint64 = T.uint64(0)
            desc_b: T.uint64 = T.uint64(0)
            encode_bases(desc_a, desc_b, A_smem, B_smem)  # once: each k-step offsets them
            full = PipelineState(NUM_STAGES, 0)
            release = PipelineState(NUM_STAGES, 0)
            for lt in range(my_tiles):
                tm, tn = T.meta_var(grouped_tile(cta + lt * num_ctas, tiles_m, tiles_n,
                                                 GROUP_M))  # fmt: skip
                for kt in range(k_tiles):
                    s = T.meta_var(full.stage)
                    # the stage's descriptors before the wait: the first wgmma issues as soon as
                    # the data lands
                    da: T.uint64 = offset_descriptor(desc_a, s * A_STAGE)
                    db: T.uint64 = offset_descriptor(desc_b, s * B_STAGE)
                    ab_full.wait(s, full.phase)
                    mma_k_tile(acc, da, db, kt)
                    full.advance()
                    # the previous k-tile's MMAs retired: hand its stage back to the producer
                    if kt > 0:
                        if lane == 0:
                            ab_empty.arrive(release.stage)
                        release.advance()

                # -- epilogue: registers -> swizzled shared panels -> TMA store ---------------
                T.ptx.wgmma.wait_group.sync.aligned(0)
                # The last k-tile's MMAs retired too: free its stage now, so the producer has
                # every stage to prefetch the next tile into while this epilogue runs.
                if lane == 0:
                    ab_empty.arrive(release.stage)
                release.advance()
                for i in T.unroll(ACC):
                    T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
                if ctx == 0:
                    T.ptx[WAIT_READ](0)  # the previous tile's store has read D_smem
                T.cuda.warpgroup_sync(EPILOGUE_BAR)
                store_fragment(D_smem, acc, 0, warp, lane)
                T.ptx.fence.proxy.async_.shared__cta()
                T.cuda.warpgroup_sync(EPILOGUE_BAR)
                if ctx == 0:
                    for p in T.unroll(BLOCK_N // 64):
                        T.ptx[STORE](T.address_of(D_map), tn * BLOCK_N + p * 64, tm * BLOCK_M,
                                     D_smem.ptr_to([p * BLOCK_M * 64]))  # fmt: skip
                    T.ptx[COMMIT]()
            if ctx == 0:
                T.ptx[WAIT_READ](0)

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    persistent=True,
    raw_ptx=("wgmma", "tma", "setmaxnreg"),
)
