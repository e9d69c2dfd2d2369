"""TIRx · sm_90a · rung 2 ``tma``.

Changes from rung 1 (``tiled``):
  * A and B tiles arrive by TMA: thread 0 issues two ``cp.async.bulk.tensor`` loads (host-
    encoded descriptors, 128-byte swizzle) and ``mbarrier.arrive.expect_tx`` with their bytes;
    every thread waits on that mbarrier (``TMABar`` from ``tvm.tirx.lang.pipeline``) before
    the MMA. Load and MMA still alternate: one stage, nothing in flight during the MMA.
  * The epilogue goes registers -> shared (swizzled 64-column panels) -> TMA store.
  * Shared memory comes from ``T.SMEMPool`` (dynamic, 1024-byte aligned stages).
  * Ragged shapes: TMA zero-fills out-of-bounds loads and clips stores, so any M, N >= 1 and
    K % 8 == 0 runs (the host pads D when N % 8 != 0).

Shared memory: barrier 8 B (padded to 1 KiB) + A 16 KiB + B 16 KiB + D 128x128x2 = 32 KiB
-> 65 KiB.

Barriers:

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | thread 0 (expect_tx); TMA | all 128 threads | A and B landed |

The wait phase flips every k-tile (starts at 0: a fresh barrier is in phase 0).
"""

from __future__ import annotations

from tvm.script import tirx as T
from tvm.tirx.lang.pipeline import TMABar

from backends.tirx import spec
from backends.tirx._host import TirxKernel
from backends.tirx._tma import COMMIT, LOAD, STORE, SWIZZLE_COLS, WAIT_READ
from backends.tirx._tma import SWIZZLE_128B as TMA_SW128
from backends.tirx._wgmma import SBO_128B, SWIZZLE_128B, fragment_store, mma_op
from backends.tirx._workarounds import ACC_FENCE, ACC_FENCE_SOURCE

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 1
THREADS = 128
ACC = BLOCK_M // 64 * BLOCK_N // 2
TX_BYTES = (BLOCK_M + BLOCK_N) * BLOCK_K * 2
SMEM_BYTES = 1024 + TX_BYTES + BLOCK_M * BLOCK_N * 2


def build(dtype: str, config: object = None):
    store_fragment = fragment_store(BLOCK_M // 64, BLOCK_N, BLOCK_M, dtype)
    mma = mma_op(BLOCK_N, dtype)

    @T.prim_func
    def main(a: T.handle, b: T.handle, d: T.handle):
        M = T.int32()
        N = T.int32()
        K = T.int32()
        LD = T.int32()  # D's row stride: N, or N rounded up to 8 (the host's padded D)
        A = T.match_buffer(a, (M, K), dtype, align=16)
        B = T.match_buffer(b, (N, K), dtype, align=16)
        D = T.match_buffer(d, (M, LD), dtype, align=16)
        # -- host: TMA descriptors (box = one 128-byte swizzle row wide) ----------------------
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
        pool.move_base_to(1024)
        A_smem = pool.alloc((BLOCK_M * BLOCK_K,), dtype, align=1024)
        B_smem = pool.alloc((BLOCK_N * BLOCK_K,), dtype, align=1024)
        # D as BLOCK_N / 64 panels of BLOCK_M x 64, each in the 128-byte swizzle TMA stores from
        D_smem = pool.alloc((BLOCK_M * BLOCK_N,), dtype, align=1024)
        pool.commit()

        # -- barrier init ---------------------------------------------------------------------
        ab_full.init(1)  # thread 0's expect_tx; the TMA bytes complete it
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        acc = T.alloc_buffer((ACC,), "float32", scope="local")
        desc_a: T.uint64 = T.uint64(0)
        desc_b: T.uint64 = T.uint64(0)
        phase: T.int32 = 0

        for kt in range(T.ceildiv(K, BLOCK_K)):
            # -- load: one thread, two TMA boxes ----------------------------------------------
            if tx == 0:
                T.ptx[LOAD](A_smem.ptr_to([0]), T.address_of(A_map), kt * BLOCK_K, bm * BLOCK_M,
                            ab_full.ptr_to([0]))  # fmt: skip
                T.ptx[LOAD](B_smem.ptr_to([0]), T.address_of(B_map), kt * BLOCK_K, bn * BLOCK_N,
                            ab_full.ptr_to([0]))  # fmt: skip
                ab_full.arrive(0, TX_BYTES)
            ab_full.wait(0, phase)
            phase = phase ^ 1

            # -- MMA: synchronous wgmma batch -------------------------------------------------
            T.ptx.wgmma.fence.sync.aligned()
            for i in T.unroll(ACC):
                T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
            for h in T.unroll(BLOCK_M // 64):
                for kk in T.unroll(BLOCK_K // 16):
                    T.cuda.wgmma.encode_matrix_descriptor(
                        T.address_of(desc_a),
                        A_smem.ptr_to([h * 64 * BLOCK_K + kk * 16]),
                        1,
                        SBO_128B,
                        SWIZZLE_128B,
                    )
                    T.cuda.wgmma.encode_matrix_descriptor(
                        T.address_of(desc_b), B_smem.ptr_to([kk * 16]), 1, SBO_128B, SWIZZLE_128B
                    )
                    T.ptx[mma](*[acc[h * 64 + i] for i in range(64)], desc_a, desc_b,
                               T.Or(kt > 0, kk > 0), 1, 1, 0, 0)  # fmt: skip
            T.ptx.wgmma.commit_group.sync.aligned()
            T.ptx.wgmma.wait_group.sync.aligned(0)
            for i in T.unroll(ACC):
                T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
            T.cuda.cta_sync()  # the next TMA overwrites what this MMA read

        # -- epilogue: registers -> swizzled shared panels -> TMA store ------------------------
        warp = T.meta_var(tx // 32)
        lane = T.meta_var(tx % 32)
        store_fragment(D_smem, acc, 0, warp, lane)
        T.ptx.fence.proxy.async_.shared__cta()  # thread writes -> async-proxy (TMA) reads
        T.cuda.cta_sync()
        if tx == 0:
            for p in T.unroll(BLOCK_N // 64):
                T.ptx[STORE](T.address_of(D_map), bn * BLOCK_N + p * 64, bm * BLOCK_M,
                             D_smem.ptr_to([p * BLOCK_M * 64]))  # fmt: skip
            T.ptx[COMMIT]()
            T.ptx[WAIT_READ](0)  # shared memory must outlive the store's reads

    return main


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: SMEM_BYTES,
    raw_ptx=("wgmma", "tma"),
)
