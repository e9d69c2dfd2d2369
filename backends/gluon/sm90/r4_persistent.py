"""Gluon · sm_90a · rung 4 ``persistent`` — one CTA per SM looping over tiles in L2 order.

One warpgroup per CTA issues both TMA and wgmma (no warp specialization yet), 128x128x64 tiles
through a 4-stage ring.

Changes from rung 3 (``pipelined``):
  * the grid is min(#SMs, #tiles) CTAs; each walks tiles ``pid, pid + #programs, ...`` mapped
    to (tile_m, tile_n) in ``GROUP_M``-row bands (``_schedule.grouped_tile``) so A and B
    stripes are reused from L2;
  * the ring state (slot, phase) carries across tiles, and the epilogue's TMA store is left in
    flight: ``store_wait(0)`` before the *next* tile rewrites ``c_smem`` lets the store drain
    under the next tile's prologue loads and main loop.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A stage 128x64x2 = 16 KiB, B stage 128x64x2 = 16 KiB -> 32 KiB per stage;
  4 stages = 128 KiB; epilogue tile 128x128x2 = 32 KiB; total 160 KiB + barriers < 227 KiB.

Barriers (per stage s):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | the expect; TMA bytes | the warpgroup | A and B of stage s landed |

There is no "empty" barrier: the same instruction stream refills a stage right after
``warpgroup_mma_wait(1)`` has retired the wgmma that read it.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from backends.gluon import spec
from backends.gluon._host import Desc, GluonKernel, Plan
from backends.gluon._pipeline import Counter
from backends.gluon._schedule import grouped_tile
from harness.protocol import Problem, cdiv

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 4
GROUP_M = 8  # tile rows per L2 group


@gluon.jit
def _issue_load(a_desc, b_desc, a_bufs, b_bufs, ab_full, load, off_m, off_n, k):
    full = ab_full.index(load.index)
    mbarrier.expect(full, a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
    tma.async_load(a_desc, [off_m, k], full, a_bufs.index(load.index))
    tma.async_load(b_desc, [off_n, k], full, b_bufs.index(load.index))
    return load.next()


@gluon.jit
def r4_persistent_kernel(
    a_desc, b_desc, c_desc, M, N, K, NUM_STAGES: gl.constexpr, GROUP_M: gl.constexpr
):
    dtype: gl.constexpr = a_desc.dtype
    TILE_M: gl.constexpr = a_desc.block_shape[0]
    TILE_N: gl.constexpr = b_desc.block_shape[0]
    TILE_K: gl.constexpr = a_desc.block_shape[1]
    # -- shared-memory plan --
    a_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + a_desc.block_shape, a_desc.layout)  # noqa: RUF005
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_shape, c_desc.layout)
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # the expect; bytes via tx
    # -- one warpgroup: loads, wgmma, epilogue --
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, TILE_N, 16]
    )
    num_tiles_m = gl.cdiv(M, TILE_M)
    num_tiles_n = gl.cdiv(N, TILE_N)
    k_tiles = gl.cdiv(K, TILE_K)
    load = Counter.create(0, NUM_STAGES)  # next stage to fill
    full = Counter.create(0, NUM_STAGES)  # next stage to consume
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, GROUP_M)
        off_m = tile_m * TILE_M
        off_n = tile_n * TILE_N
        # Prologue: NUM_STAGES - 1 loads ahead (the last slot is refilled inside the loop).
        for kk in gl.static_range(NUM_STAGES - 1):
            if kk < k_tiles:
                load = _issue_load(
                    a_desc, b_desc, a_bufs, b_bufs, ab_full, load, off_m, off_n, kk * TILE_K
                )
        acc = gl.zeros([TILE_M, TILE_N], gl.float32, acc_layout)
        for kk in range(k_tiles):
            mbarrier.wait(ab_full.index(full.index), full.phase)
            a = a_bufs.index(full.index)
            b = b_bufs.index(full.index).permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # Once only the newest wgmma is outstanding, the previous stage is no longer read:
            # it is the slot the load NUM_STAGES - 1 steps ahead goes into.
            acc, a, b = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a, b))
            if kk + NUM_STAGES - 1 < k_tiles:
                load = _issue_load(
                    a_desc,
                    b_desc,
                    a_bufs,
                    b_bufs,
                    ab_full,
                    load,
                    off_m,
                    off_n,
                    (kk + NUM_STAGES - 1) * TILE_K,
                )
            full = full.next()
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))

        # Epilogue: registers -> shared -> TMA store; the previous tile's store was left in
        # flight, so drain its smem reads before overwriting c_smem.
        tma.store_wait(pendings=0)
        c_smem.store(acc.to(dtype))
        fence_async_shared()  # generic-proxy smem writes -> async-proxy (TMA) reads
        tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> Plan:
    num_tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    ctas = max(1, min(num_sms, num_tiles))
    return Plan(
        args=(
            Desc("a", (BLOCK_M, BLOCK_K)),
            Desc("b", (BLOCK_N, BLOCK_K)),
            Desc("c", (BLOCK_M, BLOCK_N)),
            problem.m,
            problem.n,
            problem.k,
        ),
        constexprs=dict(NUM_STAGES=NUM_STAGES, GROUP_M=GROUP_M),
        grid=(ctas,),
        num_warps=4,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r4_persistent_kernel,
    plan=plan,
)
