"""TIRx · sm_90a · rung 4 ``persistent``.

Changes from rung 3 (``pipelined``):
  * one CTA per SM (the host passes the CTA count), each looping over output tiles
    ``cta, cta + num_ctas, ...`` in an L2-grouped order (``_schedule.grouped_tile``,
    GROUP_M tile-rows per group);
  * the ring runs over the CTA's whole (tile, k-tile) sequence, flattened into items
    ``g = local_tile * k_tiles + kt``: the refill of item g+S may belong to the next tile, so
    the next tile's loads are in flight while this tile finishes and stores;
  * the TMA store of a tile is left in flight; thread 0 waits for its shared-memory reads only
    before the next epilogue writes the D buffer (and before exit).

Shared memory: as rung 3: 4 stages x 32 KiB + D 32 KiB + barriers 1 KiB -> 161 KiB.

Barriers (per stage s; item g: s = g % S, phase = (g // S) & 1):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | thread 0 (expect_tx); TMA | all threads | stage s landed |
  | ``ab_empty`` | 4 | lane 0 of each warp, after wait_group 1 | thread 0 | stage s free |
"""

from __future__ import annotations

from tvm.script import tirx as T
from tvm.tirx.lang.pipeline import MBarrier, TMABar

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
GROUP_M = 8  # tile-rows per L2 group
THREADS = 128
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
        ab_full.init(1)  # thread 0's expect_tx; the TMA bytes complete it
        ab_empty.init(4)  # lane 0 of each of the 4 warps, once its MMAs on the stage retired
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        acc = T.alloc_buffer((ACC,), "float32", scope="local")
        desc_a: T.uint64 = T.uint64(0)
        desc_b: T.uint64 = T.uint64(0)
        encode_bases(desc_a, desc_b, A_smem, B_smem)  # once: each k-step offsets them
        warp = T.meta_var(tx // 32)
        lane = T.meta_var(tx % 32)
        tiles_m = T.meta_var(T.ceildiv(M, BLOCK_M))
        tiles_n = T.meta_var(T.ceildiv(N, BLOCK_N))
        k_tiles = T.meta_var(T.ceildiv(K, BLOCK_K))
        my_tiles = T.meta_var(T.max(tiles_m * tiles_n - cta + num_ctas - 1, 0) // num_ctas)
        items = T.meta_var(my_tiles * k_tiles)

        # -- scheduler + producer: item g -> (tile, k-tile) -> one TMA pair ------------------
        @T.inline
        def load(g, s):
            tm, tn = T.meta_var(grouped_tile(cta + g // k_tiles * num_ctas, tiles_m, tiles_n,
                                             GROUP_M))  # fmt: skip
            kt = T.meta_var(g % k_tiles)
            ab_full.arrive(s, TX_BYTES)
            T.ptx[LOAD](A_smem.ptr_to([s * A_STAGE]), T.address_of(A_map), kt * BLOCK_K,
                        tm * BLOCK_M, ab_full.ptr_to([s]))  # fmt: skip
            T.ptx[LOAD](B_smem.ptr_to([s * B_STAGE]), T.address_of(B_map), kt * BLOCK_K,
                        tn * BLOCK_N, ab_full.ptr_to([s]))  # fmt: skip

        if tx == 0:
            for g in range(T.min(NUM_STAGES, items)):
                load(g, g)

        for g in range(items):
            s = T.meta_var(g % NUM_STAGES)
            kt = T.meta_var(g % k_tiles)
            # the stage's descriptors before the wait: the first wgmma issues as soon as the
            # data lands
            da: T.uint64 = offset_descriptor(desc_a, s * A_STAGE)
            db: T.uint64 = offset_descriptor(desc_b, s * B_STAGE)
            ab_full.wait(s, (g // NUM_STAGES) % 2)

            # -- MMA: async wgmma batch, keep one batch in flight -----------------------------
            mma_k_tile(acc, da, db, kt)

            # -- release item g-1's stage, refill it with item g-1+S --------------------------
            if g > 0:
                prev = T.meta_var((g - 1) % NUM_STAGES)
                if lane == 0:
                    ab_empty.arrive(prev)
                if tx == 0 and g - 1 + NUM_STAGES < items:
                    ab_empty.wait(prev, ((g - 1) // NUM_STAGES) % 2)
                    load(g - 1 + NUM_STAGES, prev)

            # -- epilogue after a tile's last k-tile ------------------------------------------
            if kt == k_tiles - 1:
                T.ptx.wgmma.wait_group.sync.aligned(0)
                for i in T.unroll(ACC):
                    T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
                tm, tn = T.meta_var(grouped_tile(cta + g // k_tiles * num_ctas, tiles_m, tiles_n,
                                                 GROUP_M))  # fmt: skip
                if tx == 0:
                    T.ptx[WAIT_READ](0)  # the previous tile's store has read D_smem
                T.cuda.cta_sync()
                store_fragment(D_smem, acc, 0, warp, lane)
                T.ptx.fence.proxy.async_.shared__cta()
                T.cuda.cta_sync()
                if tx == 0:
                    for p in T.unroll(BLOCK_N // 64):
                        T.ptx[STORE](T.address_of(D_map), tn * BLOCK_N + p * 64, tm * BLOCK_M,
                                     D_smem.ptr_to([p * BLOCK_M * 64]))  # fmt: skip
                    T.ptx[COMMIT]()
        if tx == 0:
            T.ptx[WAIT_READ](0)

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    persistent=True,
    raw_ptx=("wgmma", "tma"),
)
