"""Gluon · sm_100a · rung 7 ``multi_consumer`` — two accumulators per CTA sharing each B stage.

Blackwell, 2-CTA clusters (``tcgen05.mma.cta_group::2``), persistent over 512x128x64 cluster
tiles. Compiled and inspected here (no Blackwell GPU to run on).

Changes from rung 6 (``cluster2``):
  * two consumers per CTA: each stage holds two A tiles (cluster rows [0, 256) and [256, 512)
    of the cluster tile) and one B tile; the MMA warp issues two ``cta_group::2`` MMAs per
    stage, one into each consumer's TMEM accumulator, both reading the same staged B;
  * two epilogues: the default partition drains consumer 0's accumulator and a second 4-warp
    partition drains consumer 1's, each with its own ``acc_full`` / ``acc_empty`` barriers;
  * ``ab_empty`` now counts both MMAs of a stage (each arrives through its own commit);
  * N per tile drops from 256 to 128 so that 2 consumers x 2 TMEM buffers x 128 columns fit
    the 512 columns, and 3 stages fit shared memory.

Shared memory per CTA: A 2 x 128x64x2 = 32 KiB + B half 64x64x2 = 8 KiB = 40 KiB per stage;
3 stages = 120 KiB; epilogues 2 x 2 x 128x64x2 = 64 KiB; total 184 KiB + barriers.
Tensor memory per CTA: 2 consumers x 2 buffers x 128 fp32 columns = 512 columns.

Barriers ("pair" = one barrier in the lead CTA that both CTAs arrive on; c = consumer):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | pair, 1 x 2 | both load warps; TMA | lead MMA warp | both CTAs' stage s in |
  | ``ab_empty`` | 2 | lead's 2 commits (mcast) | own load warp | read by both MMAs |
  | ``acc_full[c]`` | 1 | lead's commit (mcast) | epilogue c | buffer of c final |
  | ``acc_empty[c]`` | pair, 1 x 2 | epilogue c of both CTAs | lead MMA warp | buffer of c drained |

Barrier inits are fenced cluster-wide by the compiler before ``warp_specialize``.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    tcgen05_commit,
    tcgen05_mma,
    tcgen05_mma_barrier_count,
    tensor_memory_descriptor,
)
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from backends.gluon._host import Desc, GluonKernel, Plan, cdiv
from backends.gluon._pipeline import Counter
from backends.gluon._schedule import grouped_tile
from harness.protocol import Problem, Rung

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA; the MMA covers both CTAs' 256
BLOCK_N = 128
BLOCK_K = 64
EPI_N = 64  # epilogue sub-tile width
NUM_STAGES = 3
NUM_ACC = 2  # TMEM accumulator buffers per consumer
NUM_CONSUMERS = 2
EPI_WARPS = 4  # the second consumer's epilogue partition
EPI_REGS = 128
GROUP_M = 8
CLUSTER_M = 2
LOAD_WARPS = 1
MMA_WARPS = 1
WORKER_REGS = 48


@gluon.aggregate
class Smem:
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    c_bufs: gl.shared_memory_descriptor
    acc_bufs: tensor_memory_descriptor
    ab_full: gl.shared_memory_descriptor
    ab_empty: gl.shared_memory_descriptor
    acc_full: gl.shared_memory_descriptor
    acc_empty: gl.shared_memory_descriptor
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    GROUP_M: gl.constexpr

    @gluon.constexpr_function
    def __init__(
        self,
        a_desc,
        b_desc,
        c_desc,
        a_bufs,
        b_bufs,
        c_bufs,
        acc_bufs,
        ab_full,
        ab_empty,
        acc_full,
        acc_empty,
        M,
        N,
        K,
        GROUP_M,
    ):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.c_desc = c_desc
        self.a_bufs = a_bufs
        self.b_bufs = b_bufs
        self.c_bufs = c_bufs
        self.acc_bufs = acc_bufs
        self.ab_full = ab_full
        self.ab_empty = ab_empty
        self.acc_full = acc_full
        self.acc_empty = acc_empty
        self.M = M
        self.N = N
        self.K = K
        self.GROUP_M = gl.constexpr(GROUP_M)


@gluon.jit
def _tiles(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0] * 2  # two consumers
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    return gl.cdiv(s.M, TILE_M), gl.cdiv(s.N, TILE_N), gl.cdiv(s.K, TILE_K)


# -- load partition: one warp issuing TMA -----------------------------------------------------
@gluon.jit
def _load(s: Smem):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]  # cluster rows of one consumer
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    num_tiles_m, num_tiles_n, k_tiles = _tiles(s)
    empty = Counter.create(1, s.ab_full.shape[0])
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_empty.index(empty.index), empty.phase)
            full = s.ab_full.index(empty.index)
            # Per CTA: 128 A rows per consumer and its half of B; the pair barrier sums both.
            mbarrier.expect(full, 2 * s.a_desc.nbytes_per_cta + s.b_desc.nbytes_per_cta)
            for c in gl.static_range(2):
                tma.async_load(
                    s.a_desc,
                    [(2 * tile_m + c) * SUB_M, kk * TILE_K],
                    full,
                    s.a_bufs.index(2 * empty.index + c),
                )
            tma.async_load(
                s.b_desc, [tile_n * TILE_N, kk * TILE_K], full, s.b_bufs.index(empty.index)
            )
            empty = empty.next()


# -- MMA partition: one warp issuing tcgen05 --------------------------------------------------
@gluon.jit
def _mma(s: Smem):
    num_tiles_m, num_tiles_n, k_tiles = _tiles(s)
    full = Counter.create(0, s.ab_full.shape[0])
    acc_empty = Counter.create(1, s.acc_full.shape[0] // 2)
    for _tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        # Both consumers' buffers advance in lockstep: buffer b of consumer c is 2 * b + c.
        for c in gl.static_range(2):
            mbarrier.wait(s.acc_empty.index(2 * acc_empty.index + c), acc_empty.phase)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_full.index(full.index), full.phase)
            b = s.b_bufs.index(full.index).permute((1, 0))
            for c in gl.static_range(2):  # both consumers read the same staged B
                tcgen05_mma(
                    s.a_bufs.index(2 * full.index + c),
                    b,
                    s.acc_bufs.index(2 * acc_empty.index + c),
                    use_acc=kk > 0,
                    mbarriers=[s.ab_empty.index(full.index)],
                )
            full = full.next()
        for c in gl.static_range(2):
            tcgen05_commit(s.acc_full.index(2 * acc_empty.index + c))
        acc_empty = acc_empty.next()


# -- epilogues (default partition: consumer 0; a 4-warp worker: consumer 1) -------------------
@gluon.jit
def _epilogue(s: Smem, C: gl.constexpr):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    SUB_N: gl.constexpr = s.c_desc.block_shape[1]
    num_tiles_m, num_tiles_n, _ = _tiles(s)
    acc_full = Counter.create(0, s.acc_full.shape[0] // 2)
    c_buf = Counter.create(0, s.c_bufs.shape[0] // 2)
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        mbarrier.wait(s.acc_full.index(2 * acc_full.index + C), acc_full.phase)
        acc = s.acc_bufs.index(2 * acc_full.index + C)
        for j in gl.static_range(TILE_N // SUB_N):
            part = acc.slice(j * SUB_N, SUB_N).load()
            # Two sub-tile buffers: the store issued from this one two sub-tiles ago must
            # have finished reading it.
            tma.store_wait(pendings=1)
            dst = s.c_bufs.index(2 * c_buf.index + C)
            dst.store(part.to(s.c_desc.dtype))
            fence_async_shared()
            tma.async_store(s.c_desc, [(2 * tile_m + C) * SUB_M, tile_n * TILE_N + j * SUB_N], dst)
            c_buf = c_buf.next()
        # The accumulator has been read into registers: the MMA warp may reuse it.
        mbarrier.arrive(s.acc_empty.index(2 * acc_full.index + C))
        acc_full = acc_full.next()
    tma.store_wait(pendings=0)


@gluon.jit
def r7_multi_consumer_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    NUM_STAGES: gl.constexpr,
    NUM_ACC: gl.constexpr,
    GROUP_M: gl.constexpr,
    LOAD_WARPS: gl.constexpr,
    MMA_WARPS: gl.constexpr,
    WORKER_REGS: gl.constexpr,
    EPI_WARPS: gl.constexpr,
    EPI_REGS: gl.constexpr,
):
    gl.static_assert(gl.num_ctas() == 2)
    dtype: gl.constexpr = a_desc.dtype
    TILE_M: gl.constexpr = a_desc.block_shape[0]
    TILE_N: gl.constexpr = b_desc.block_shape[0]
    # -- shared- and tensor-memory plan --
    a_bufs = gl.allocate_shared_memory(
        dtype,
        [NUM_STAGES * 2] + a_desc.block_shape,  # noqa: RUF005
        a_desc.layout,
    )
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    c_bufs = gl.allocate_shared_memory(dtype, [2 * 2] + c_desc.block_shape, c_desc.layout)  # noqa: RUF005
    acc_layout: gl.constexpr = TensorMemoryLayout(
        block=(TILE_M // 2, TILE_N),
        col_stride=1,
        cga_layout=c_desc.layout.cga_layout,
        two_ctas=True,
    )
    acc_bufs = allocate_tensor_memory(gl.float32, [NUM_ACC * 2, TILE_M, TILE_N], acc_layout)
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES, two_ctas=True)
    ab_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    acc_full = mbarrier.allocate_mbarrier(batch=NUM_ACC * 2)
    acc_empty = mbarrier.allocate_mbarrier(batch=NUM_ACC * 2, two_ctas=True)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # x2 by Gluon: each load warp's expect
        mbarrier.init(
            ab_empty.index(i),  # the lead's 2 tcgen05 commits, multicast to the pair
            count=2 * tcgen05_mma_barrier_count([a_bufs, b_bufs], multicast=False, two_ctas=True),
        )
    for i in gl.static_range(NUM_ACC * 2):
        mbarrier.init(acc_full.index(i), count=1)  # tcgen05_commit after the tile's last MMA
        mbarrier.init(acc_empty.index(i), count=1)  # x2 by Gluon: each CTA's epilogue
    # A size of 1 arrives as a constexpr (Triton specializes it): make all three tensors.
    s = Smem(
        a_desc,
        b_desc,
        c_desc,
        a_bufs,
        b_bufs,
        c_bufs,
        acc_bufs,
        ab_full,
        ab_empty,
        acc_full,
        acc_empty,
        gl.to_tensor(M),
        gl.to_tensor(N),
        gl.to_tensor(K),
        GROUP_M,
    )
    # -- roles --
    gl.warp_specialize(
        [(_epilogue, (s, 0)), (_load, (s,)), (_mma, (s,)), (_epilogue, (s, 1))],
        [LOAD_WARPS, MMA_WARPS, EPI_WARPS],
        [WORKER_REGS, WORKER_REGS, EPI_REGS],
    )


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> Plan:
    tile_m = BLOCK_M * CLUSTER_M  # rows of one consumer's cluster tile
    num_tiles = cdiv(problem.m, tile_m * NUM_CONSUMERS) * cdiv(problem.n, BLOCK_N)
    return Plan(
        args=(
            Desc("a", (tile_m, BLOCK_K), ((1, 0),)),  # CTA r: A rows [128r, 128r+128)
            Desc("b", (BLOCK_N, BLOCK_K), ((1, 0),)),  # CTA r: B rows (N) [64r, 64r+64)
            Desc("c", (tile_m, EPI_N), ((1, 0),)),
            problem.m,
            problem.n,
            problem.k,
        ),
        constexprs=dict(
            NUM_STAGES=NUM_STAGES,
            NUM_ACC=NUM_ACC,
            GROUP_M=GROUP_M,
            LOAD_WARPS=LOAD_WARPS,
            MMA_WARPS=MMA_WARPS,
            WORKER_REGS=WORKER_REGS,
            EPI_WARPS=EPI_WARPS,
            EPI_REGS=EPI_REGS,
        ),
        grid=(max(1, min(num_sms // CLUSTER_M, num_tiles)),),
        num_warps=4,
        num_ctas=CLUSTER_M,
    )


KERNEL = GluonKernel(
    name="sm100/r7_multi_consumer",
    rung=Rung.MULTI_CONSUMER,
    arch="sm_100a",
    description="persistent WS 2-CTA cta_group::2, 2 TMEM accs sharing B, 2 epilogues, 512x128x64",
    jit_fn=r7_multi_consumer_kernel,
    plan=plan,
)
