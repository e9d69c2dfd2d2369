"""Gluon · sm_90a · rung 2 ``tma`` — TMA loads completing on an mbarrier; no overlap yet.

One CTA per 128x128 output tile, one warpgroup; each K step loads A and B by TMA, waits for
them, then runs a synchronous wgmma: load and math still alternate.

Changes from rung 1 (``tiled``):
  * the threads no longer copy global -> shared themselves: one elected thread issues
    ``tma.async_load`` for the A and B tiles, which complete on the ``ab_full`` mbarrier
    (``expect`` announces the byte count; the TMA unit's completions flip the phase);
  * TMA zero-fills reads past the matrix edge and the epilogue stores through shared memory
    with ``tma.async_store``, which clips: any M, N >= 1 and K % 8 == 0 now work.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A tile 128x64x2 = 16 KiB, B tile 128x64x2 = 16 KiB; epilogue tile 128x128x2 = 32 KiB;
  total 64 KiB + one barrier.

Barriers:

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | the expect; TMA bytes | the warpgroup | this K step landed |

The phase starts at 0 and flips after every wait; the synchronous wgmma has finished reading
the tiles before the next K step's TMA overwrites them.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
)

from backends.gluon import spec
from backends.gluon._host import Desc, GluonKernel, Plan
from harness.protocol import Problem, cdiv

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64


@gluon.jit
def r2_tma_kernel(a_desc, b_desc, c_desc, M, N, K):
    dtype: gl.constexpr = a_desc.dtype
    TILE_M: gl.constexpr = a_desc.block_shape[0]
    TILE_N: gl.constexpr = b_desc.block_shape[0]
    TILE_K: gl.constexpr = a_desc.block_shape[1]
    # -- shared-memory plan --
    a_smem = gl.allocate_shared_memory(dtype, a_desc.block_shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, b_desc.block_shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_shape, c_desc.layout)
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier()
    mbarrier.init(ab_full, count=1)  # the expect; bytes via tx
    # -- one warpgroup: loads, wgmma, epilogue --
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, TILE_N, 16]
    )
    num_tiles_n = gl.cdiv(N, TILE_N)
    k_tiles = gl.cdiv(K, TILE_K)
    tile_id = gl.program_id(0)
    tile_m = tile_id // num_tiles_n
    tile_n = tile_id % num_tiles_n
    off_m = tile_m * TILE_M
    off_n = tile_n * TILE_N
    phase = 0
    acc = gl.zeros([TILE_M, TILE_N], gl.float32, acc_layout)
    for kk in range(k_tiles):
        mbarrier.expect(ab_full, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [off_m, kk * TILE_K], ab_full, a_smem)
        tma.async_load(b_desc, [off_n, kk * TILE_K], ab_full, b_smem)
        mbarrier.wait(ab_full, phase)
        phase ^= 1
        acc = warpgroup_mma(a_smem, b_smem.permute((1, 0)), acc)  # synchronous
    mbarrier.invalidate(ab_full)

    # Epilogue: registers -> shared -> TMA store.
    c_smem.store(acc.to(dtype))
    fence_async_shared()  # generic-proxy smem writes -> async-proxy (TMA) reads
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> Plan:
    num_tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    return Plan(
        args=(
            Desc("a", (BLOCK_M, BLOCK_K)),
            Desc("b", (BLOCK_N, BLOCK_K)),
            Desc("c", (BLOCK_M, BLOCK_N)),
            problem.m,
            problem.n,
            problem.k,
        ),
        constexprs={},
        grid=(num_tiles,),
        num_warps=4,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r2_tma_kernel,
    plan=plan,
)
