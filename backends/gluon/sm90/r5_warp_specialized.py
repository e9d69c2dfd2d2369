"""Gluon · sm_90a · rung 5 ``warp_specialized`` — a TMA producer warp and a wgmma consumer.

Persistent, one CTA per SM, 128x128x64 tiles; the loads and the math run in separate warps.

Changes from rung 4 (``persistent``):
  * ``gl.warp_specialize`` splits the CTA into roles: a 1-warp producer partition issuing TMA
    and the default partition (one warpgroup) issuing wgmma and running the epilogue. The
    producer runs ahead across K steps *and* tiles, so the next tile's loads overlap this
    tile's epilogue;
  * the ring gets "empty" barriers: the consumer hands a stage back after the wgmma that read
    it has retired (rung 4 reused a stage implicitly, being one instruction stream);
  * register reallocation: the producer gives its registers up (``setmaxnreg.dec`` to 40) and
    the consumer takes them (``setmaxnreg.inc``), via ``worker_num_regs``.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A stage 128x64x2 = 16 KiB, B stage 128x64x2 = 16 KiB -> 32 KiB per stage;
  4 stages = 128 KiB; epilogue tile 128x128x2 = 32 KiB; total 160 KiB + barriers < 227 KiB.

Barriers (per stage s):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | producer expect; TMA | consumer | A and B of stage s landed |
  | ``ab_empty`` | 1 | consumer partition (1 elected) | producer | stage s free for a refill |
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
BLOCK_M = 128  # rows per CTA
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 4
NUM_CONSUMERS = 1  # consumer warpgroups per CTA
GROUP_M = 8  # tile rows per L2 group
PRODUCER_WARPS = 1
PRODUCER_REGS = 40  # setmaxnreg.dec for the TMA warp; the consumers get the rest


@gluon.aggregate
class Smem:
    """The shared-memory plan: every buffer and barrier, allocated before warp_specialize."""

    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    c_smem: gl.shared_memory_descriptor
    ab_full: gl.shared_memory_descriptor
    ab_empty: gl.shared_memory_descriptor
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    NUM_STAGES: gl.constexpr
    GROUP_M: gl.constexpr

    @gluon.constexpr_function
    def __init__(
        self,
        a_desc,
        b_desc,
        c_desc,
        a_bufs,
        b_bufs,
        c_smem,
        ab_full,
        ab_empty,
        M,
        N,
        K,
        NUM_STAGES,
        GROUP_M,
    ):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.c_desc = c_desc
        self.a_bufs = a_bufs
        self.b_bufs = b_bufs
        self.c_smem = c_smem
        self.ab_full = ab_full
        self.ab_empty = ab_empty
        self.M = M
        self.N = N
        self.K = K
        self.NUM_STAGES = gl.constexpr(NUM_STAGES)
        self.GROUP_M = gl.constexpr(GROUP_M)


# -- producer: one warp issuing TMA ----------------------------------------------------------
@gluon.jit
def _producer(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    num_tiles_m = gl.cdiv(s.M, TILE_M)
    num_tiles_n = gl.cdiv(s.N, TILE_N)
    k_tiles = gl.cdiv(s.K, TILE_K)
    # Producer waits on "empty" starting at phase 1: fresh barriers report the previous
    # phase complete, i.e. every stage starts free.
    empty = Counter.create(1, s.NUM_STAGES)
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        off_m = tile_m * TILE_M
        off_n = tile_n * TILE_N
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_empty.index(empty.index), empty.phase)
            full = s.ab_full.index(empty.index)
            mbarrier.expect(full, s.a_desc.nbytes_per_cta + s.b_desc.nbytes_per_cta)
            tma.async_load(s.a_desc, [off_m, kk * TILE_K], full, s.a_bufs.index(empty.index))
            tma.async_load(s.b_desc, [off_n, kk * TILE_K], full, s.b_bufs.index(empty.index))
            empty = empty.next()


# -- consumer: one warpgroup issuing wgmma, then the epilogue -------------------------------
@gluon.jit
def _consumer(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, TILE_N, 16]
    )
    num_tiles_m = gl.cdiv(s.M, TILE_M)
    num_tiles_n = gl.cdiv(s.N, TILE_N)
    k_tiles = gl.cdiv(s.K, TILE_K)
    full = Counter.create(0, s.NUM_STAGES)
    release = Counter.create(0, s.NUM_STAGES)
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        acc = gl.zeros([TILE_M, TILE_N], gl.float32, acc_layout)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_full.index(full.index), full.phase)
            a = s.a_bufs.index(full.index)
            b = s.b_bufs.index(full.index).permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # Keep one wgmma in flight: once only the newest is outstanding, the previous
            # stage's operands are no longer read and can be handed back.
            acc, a, b = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a, b))
            if kk > 0:
                mbarrier.arrive(s.ab_empty.index(release.index))
                release = release.next()
            full = full.next()
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(s.ab_empty.index(release.index))
        release = release.next()

        # Epilogue: registers -> shared -> TMA store. The previous tile's store was left in
        # flight (it overlapped this tile's main loop); drain its smem reads before reuse.
        tma.store_wait(pendings=0)
        s.c_smem.store(acc.to(s.c_desc.dtype))
        fence_async_shared()  # generic-proxy smem writes -> async-proxy (TMA) reads
        tma.async_store(s.c_desc, [tile_m * TILE_M, tile_n * TILE_N], s.c_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def r5_warp_specialized_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    NUM_STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    PRODUCER_WARPS: gl.constexpr,
    PRODUCER_REGS: gl.constexpr,
):
    dtype: gl.constexpr = a_desc.dtype
    # -- shared-memory plan --
    a_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + a_desc.block_shape, a_desc.layout)  # noqa: RUF005
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_shape, c_desc.layout)
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    ab_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # the producer's expect; bytes via tx
        mbarrier.init(ab_empty.index(i), count=1)  # one elected arrive of the consumer partition
    # A size of 1 arrives as a constexpr (Triton specializes it): make all three tensors.
    s = Smem(
        a_desc,
        b_desc,
        c_desc,
        a_bufs,
        b_bufs,
        c_smem,
        ab_full,
        ab_empty,
        gl.to_tensor(M),
        gl.to_tensor(N),
        gl.to_tensor(K),
        NUM_STAGES,
        GROUP_M,
    )
    # -- roles --
    gl.warp_specialize([(_consumer, (s,)), (_producer, (s,))], [PRODUCER_WARPS], [PRODUCER_REGS])


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
        constexprs=dict(
            NUM_STAGES=NUM_STAGES,
            GROUP_M=GROUP_M,
            PRODUCER_WARPS=PRODUCER_WARPS,
            PRODUCER_REGS=PRODUCER_REGS,
        ),
        grid=(ctas,),
        num_warps=4 * NUM_CONSUMERS,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r5_warp_specialized_kernel,
    plan=plan,
)
