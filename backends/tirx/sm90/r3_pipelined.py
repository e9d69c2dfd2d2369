"""TIRx · sm_90a · rung 3 ``pipelined``.

Changes from rung 2 (``tma``):
  * a NUM_STAGES-deep shared-memory ring: thread 0 fills every stage before the main loop and
    refills a stage with the k-tile NUM_STAGES ahead as soon as the MMAs reading it retired;
  * async wgmma: each k-tile's MMA batch is committed and only ``wait_group 1`` is awaited,
    so the MMAs of k-tile t run while the warpgroup waits for k-tile t+1's data;
  * a second barrier per stage, ``ab_empty``: after ``wait_group 1`` (k-tile t-1's MMAs done)
    lane 0 of each warp arrives on ``ab_empty[(t-1) % S]``; thread 0 waits on it before the
    refill TMA overwrites that stage.

Shared memory: A 16 KiB + B 16 KiB = 32 KiB per stage; 4 stages = 128 KiB; D 32 KiB;
barriers 1 KiB -> 161 KiB (< 227 KiB).

Barriers (per stage s; stage/phase of k-tile t: s = t % S, phase = (t // S) & 1):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | thread 0 (expect_tx); TMA | all threads | stage s landed |
  | ``ab_empty`` | 4 | lane 0 of each warp, after wait_group 1 | thread 0 | stage s free |

A k-tile t refills stage s for the (t // S)-th time: it waits for the (t // S - 1)-th
completion of ``ab_empty[s]``, i.e. parity ((t - S) // S) & 1.
"""

from __future__ import annotations

from tvm.script import tirx as T
from tvm.tirx.lang.pipeline import MBarrier, TMABar

from backends.tirx import spec
from backends.tirx._host import TirxKernel
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
THREADS = 128
ACC = BLOCK_M // 64 * BLOCK_N // 2
A_STAGE = BLOCK_M * BLOCK_K  # elements
B_STAGE = BLOCK_N * BLOCK_K
TX_BYTES = (A_STAGE + B_STAGE) * 2
SMEM_BYTES = 1024 + NUM_STAGES * TX_BYTES + BLOCK_M * BLOCK_N * 2


def build(dtype: str, config: object = None):
    store_fragment = fragment_store(BLOCK_M // 64, BLOCK_N, BLOCK_M, dtype)
    mma_k_tile = k_tile_step(mma_op(BLOCK_N, dtype), BLOCK_M // 64, ACC // (BLOCK_M // 64), BLOCK_K)
    encode_bases = descriptor_bases()

    @T.prim_func
    def main(a: T.handle, b: T.handle, d: T.handle):
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
        bm, bn = T.cta_id([T.ceildiv(M, BLOCK_M), T.ceildiv(N, BLOCK_N)])
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
        ab_full.init(1)  # thread 0's expect_tx; the TMA bytes complete it
        ab_empty.init(4)  # lane 0 of each of the 4 warps, once its MMAs on the stage retired
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        acc = T.alloc_buffer((ACC,), "float32", scope="local")
        desc_a: T.uint64 = T.uint64(0)
        desc_b: T.uint64 = T.uint64(0)
        encode_bases(desc_a, desc_b, A_smem, B_smem)  # once: each k-step offsets them
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        warp = T.meta_var(tx // 32)
        lane = T.meta_var(tx % 32)

        # -- prologue: fill the ring (fresh stages need no empty wait) ------------------------
        if tx == 0:
            for t in range(T.min(NUM_STAGES, k_tiles)):
                ab_full.arrive(t, TX_BYTES)
                T.ptx[LOAD](A_smem.ptr_to([t * A_STAGE]), T.address_of(A_map), t * BLOCK_K,
                            bm * BLOCK_M, ab_full.ptr_to([t]))  # fmt: skip
                T.ptx[LOAD](B_smem.ptr_to([t * B_STAGE]), T.address_of(B_map), t * BLOCK_K,
                            bn * BLOCK_N, ab_full.ptr_to([t]))  # fmt: skip

        for kt in range(k_tiles):
            s = T.meta_var(kt % NUM_STAGES)
            # the stage's descriptors before the wait: the first wgmma issues as soon as the
            # data lands
            da: T.uint64 = offset_descriptor(desc_a, s * A_STAGE)
            db: T.uint64 = offset_descriptor(desc_b, s * B_STAGE)
            ab_full.wait(s, (kt // NUM_STAGES) % 2)

            # -- MMA: async wgmma batch, keep one batch in flight -----------------------------
            mma_k_tile(acc, da, db, kt)

            # -- release k-tile kt-1's stage, refill it with k-tile kt-1+S --------------------
            if kt > 0:
                prev = T.meta_var((kt - 1) % NUM_STAGES)
                if lane == 0:
                    ab_empty.arrive(prev)
                nxt = T.meta_var(kt - 1 + NUM_STAGES)
                if tx == 0 and nxt < k_tiles:
                    ab_empty.wait(prev, ((kt - 1) // NUM_STAGES) % 2)
                    ab_full.arrive(prev, TX_BYTES)
                    T.ptx[LOAD](A_smem.ptr_to([prev * A_STAGE]), T.address_of(A_map),
                                nxt * BLOCK_K, bm * BLOCK_M, ab_full.ptr_to([prev]))  # fmt: skip
                    T.ptx[LOAD](B_smem.ptr_to([prev * B_STAGE]), T.address_of(B_map),
                                nxt * BLOCK_K, bn * BLOCK_N, ab_full.ptr_to([prev]))  # fmt: skip
        T.ptx.wgmma.wait_group.sync.aligned(0)
        for i in T.unroll(ACC):
            T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)

        # -- epilogue: registers -> swizzled shared panels -> TMA store ------------------------
        store_fragment(D_smem, acc, 0, warp, lane)
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.cta_sync()
        if tx == 0:
            for p in T.unroll(BLOCK_N // 64):
                T.ptx[STORE](T.address_of(D_map), bn * BLOCK_N + p * 64, bm * BLOCK_M,
                             D_smem.ptr_to([p * BLOCK_M * 64]))  # fmt: skip
            T.ptx[COMMIT]()
            T.ptx[WAIT_READ](0)

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    raw_ptx=("wgmma", "tma"),
)
