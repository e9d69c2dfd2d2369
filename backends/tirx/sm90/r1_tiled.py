"""TIRx · sm_90a · rung 1 ``tiled``.

One CTA (one warpgroup, 128 threads) per 128x128 output tile. For each 64-wide k-tile the
threads copy A and B global -> shared themselves (16 bytes each, written in the 128-byte-swizzle
layout wgmma reads), then the warpgroup issues synchronous ``wgmma m64n128k16`` (two 64-row
halves x four k16 steps) and waits for it. No overlap: copy, MMA, copy, MMA.

Changes from rung 0 (cuBLAS): everything; this is the first hand-written kernel.

Shared memory: A 128x64x2 = 16 KiB + B 128x64x2 = 16 KiB = 32 KiB (static).

Barriers: none but ``__syncthreads`` (``T.cuda.cta_sync``) between copy and MMA, and after
the MMA before the next copy overwrites the tiles. Thread-written shared memory is read by the
async proxy (wgmma), so a ``fence.proxy.async`` precedes the barrier.

wgmma operands (K-major, 128-byte swizzle; see ``_wgmma.py``): a 64-wide k-tile row is exactly
one 128-byte swizzle row; 8 rows form a 1024-byte swizzle atom, so SBO = 1024 B and LBO is
unused; the k16 step inside the atom advances the descriptor start address by 32 B.

Requires M, N multiples of 128 and K of 64 (no masking in the thread copy or the store).
"""

from __future__ import annotations

from tvm.script import tirx as T

from backends.tirx import spec
from backends.tirx._host import TirxKernel
from backends.tirx._wgmma import SBO_128B, SWIZZLE_128B, mma_op
from backends.tirx._workarounds import ACC_FENCE, ACC_FENCE_SOURCE, COPY16, COPY16_SOURCE
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 1
THREADS = 128  # one warpgroup
ACC = BLOCK_M // 64 * BLOCK_N // 2  # fp32 accumulators per thread: 2 halves x 64


def build(dtype: str, config: object = None):
    mma = mma_op(BLOCK_N, dtype)

    @T.prim_func
    def main(a: T.handle, b: T.handle, d: T.handle):
        M = T.int32()
        N = T.int32()
        K = T.int32()
        A = T.match_buffer(a, (M, K), dtype, align=16)
        B = T.match_buffer(b, (N, K), dtype, align=16)
        D = T.match_buffer(d, (M, N), dtype, align=16)
        T.device_entry()
        bm, bn = T.cta_id([T.ceildiv(M, BLOCK_M), T.ceildiv(N, BLOCK_N)])
        tx = T.thread_id([THREADS])

        # -- shared-memory plan ---------------------------------------------------------------
        A_smem = T.alloc_buffer((BLOCK_M * BLOCK_K,), dtype, scope="shared", align=1024)
        B_smem = T.alloc_buffer((BLOCK_N * BLOCK_K,), dtype, scope="shared", align=1024)
        acc = T.alloc_buffer((ACC,), "float32", scope="local")
        desc_a: T.uint64 = T.uint64(0)
        desc_b: T.uint64 = T.uint64(0)

        for kt in range(T.ceildiv(K, BLOCK_K)):
            # -- copy: 128 rows x 8 chunks of 16 B per operand, 8 chunks per thread -----------
            for it in T.unroll(BLOCK_M * BLOCK_K // 8 // THREADS):
                r = T.meta_var((it * THREADS + tx) // 8)
                c = T.meta_var((it * THREADS + tx) % 8)
                dst = T.meta_var(r * BLOCK_K + T.bitwise_xor(c, r % 8) * 8)  # 128B swizzle
                T.cuda.func_call(
                    COPY16,
                    A_smem.ptr_to([dst]),
                    A.ptr_to([bm * BLOCK_M + r, kt * BLOCK_K + c * 8]),
                    source_code=COPY16_SOURCE,
                )
                T.cuda.func_call(
                    COPY16,
                    B_smem.ptr_to([dst]),
                    B.ptr_to([bn * BLOCK_N + r, kt * BLOCK_K + c * 8]),
                    source_code=COPY16_SOURCE,
                )
            T.ptx.fence.proxy.async_.shared__cta()
            T.cuda.cta_sync()

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
                    # scale_d = 0 on the first k16 step of the tile: the MMA zero-initializes.
                    T.ptx[mma](
                        *[acc[h * 64 + i] for i in range(64)],
                        desc_a,
                        desc_b,
                        T.Or(kt > 0, kk > 0),
                        1,
                        1,
                        0,
                        0,
                    )
            T.ptx.wgmma.commit_group.sync.aligned()
            T.ptx.wgmma.wait_group.sync.aligned(0)
            for i in T.unroll(ACC):
                T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
            T.cuda.cta_sync()  # the next copy overwrites what this MMA read

        # -- epilogue: registers -> global (m64nNk16 fragment layout, see _wgmma.py) -----------
        warp = T.meta_var(tx // 32)
        lane = T.meta_var(tx % 32)
        for h in T.unroll(BLOCK_M // 64):
            for j in T.unroll(BLOCK_N // 8):
                row = T.meta_var(bm * BLOCK_M + h * 64 + warp * 16 + lane // 4)
                col = T.meta_var(bn * BLOCK_N + j * 8 + (lane % 4) * 2)
                D[row, col] = T.Cast(dtype, acc[h * 64 + j * 4 + 0])
                D[row, col + 1] = T.Cast(dtype, acc[h * 64 + j * 4 + 1])
                D[row + 8, col] = T.Cast(dtype, acc[h * 64 + j * 4 + 2])
                D[row + 8, col + 1] = T.Cast(dtype, acc[h * 64 + j * 4 + 3])

    return main


def _supports(problem: Problem) -> str | None:
    if problem.m % BLOCK_M or problem.n % BLOCK_N or problem.k % BLOCK_K:
        return f"rung 1 needs M, N multiples of {BLOCK_M} and K of {BLOCK_K} (no masking)"
    return None


KERNEL = TirxKernel(
    spec(__name__),
    build=build,
    shared_bytes=lambda config: (BLOCK_M + BLOCK_N) * BLOCK_K * 2,
    supports=_supports,
    raw_ptx=("wgmma",),
)
