"""Gluon · sm_90a · rung 7 ``multi_consumer`` — the final Hopper kernel.

Persistent, warp-specialized, 2-CTA cluster with the B tile multicast to both CTAs, and two
consumer warpgroups per CTA that share the staged B tile.

Changes from rung 6 (``cluster2``):
  * a second consumer warpgroup, as its own partition: ``warp_specialize`` runs consumer 0 in
    the default partition and consumer 1 in a 4-warp worker (``setmaxnreg`` 232 each, the
    producer 40). Each issues ``wgmma m64n256k16`` on its own 64 rows per CTA and both read
    the same B stage; each runs its own epilogue, so one may drain its tile while the other
    is still in its main loop;
  * A comes in two boxes per stage, one per consumer: the consumer-c box covers cluster rows
    ``[off_m + 128c, off_m + 128c + 128)`` with ``cga_layout=[[1, 0]]``, i.e. 64 rows in each
    CTA. The cluster tile becomes 256x256 (each CTA 128x256), the stage count drops 4 -> 3;
  * the empty barriers count two arrivals per CTA (one per consumer): ``ab_empty`` 2,
    ``b_empty`` 2 x 2 CTAs.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A 2 x 64x64x2 = 16 KiB, B 256x64x2 = 32 KiB -> 48 KiB per stage; 3 stages = 144 KiB;
  epilogue 2 x 64x256x2 = 64 KiB; total 208 KiB + barriers < 227 KiB (4 stages: 256 KiB).

Configs (``R7Config``; the harness records which one ran and ``bench --tune`` times them all):
``group``, the cluster-tile rows per L2 group of the tile order, and ``k_tile``, the k-tile
width: 64 (3 stages) or 32 (6 stages in the same 144 KiB, 64-byte swizzle).

Barriers (per stage s; "pair" = one barrier living in the lead CTA that both CTAs arrive on,
Gluon's ``allocate_mbarrier(two_ctas=True)``):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | producer expect; TMA | both consumers | A boxes + all of B landed |
  | ``ab_empty`` | 2 | each consumer (1 elected) | own producer | local stage s free |
  | ``b_empty`` | 2 x 2 CTAs | 4 consumers, remote | lead producer | B stage free in both CTAs |

Why ``b_empty`` counts the peer: Gluon lowers a multicast TMA of a CTA-broadcast tile to one
``cp.async.bulk.tensor ... multicast::cluster`` issued by the lead CTA with ``cta_mask=0b11``,
so the lead's producer writes into the peer's shared memory and may refill a stage only after
the peer's consumers released it too. The non-lead producer loads only its own A rows, so its
local ``ab_empty`` is enough (Gluon compiles the non-lead wait on a pair barrier away).
Barrier inits are fenced cluster-wide by the compiler (``fence.mbarrier_init.release.cluster``
+ cluster barrier) before ``warp_specialize``; a cluster barrier precedes exit.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from harness.protocol import ConfigSpace, KernelConfig, Problem, cdiv

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA (64 per consumer warpgroup)
BLOCK_N = 256
NUM_CONSUMERS = 2  # consumer warpgroups per CTA
CLUSTER_M = 2  # CTAs per cluster, stacked along M
#: Shared memory the A/B ring may take: 144 KiB, i.e. 3 stages of 64-wide k-tiles (48 KiB each).
RING_BYTES = 3 * (2 * 64 * 64 + BLOCK_N * 64) * 2
PRODUCER_WARPS = 1
PRODUCER_REGS = 40  # setmaxnreg.dec for the TMA warp
CONSUMER_REGS = 232  # setmaxnreg.inc for the second consumer warpgroup


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
    b_empty: gl.shared_memory_descriptor
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
        b_empty,
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
        self.b_empty = b_empty
        self.M = M
        self.N = N
        self.K = K
        self.NUM_STAGES = gl.constexpr(NUM_STAGES)
        self.GROUP_M = gl.constexpr(GROUP_M)


# -- producer: one warp issuing TMA ----------------------------------------------------------
@gluon.jit
def _producer(s: Smem):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]  # one consumer's cluster rows (64 per CTA)
    TILE_M: gl.constexpr = SUB_M * 2  # the cluster tile: both consumers
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
            mbarrier.wait(s.b_empty.index(empty.index), empty.phase)  # lead CTA only
            full = s.ab_full.index(empty.index)
            # Each CTA receives its 64 rows of each consumer's A box and the whole B tile.
            mbarrier.expect(full, 2 * s.a_desc.nbytes_per_cta + s.b_desc.nbytes_per_cta)
            for c in gl.static_range(2):
                tma.async_load(
                    s.a_desc,
                    [off_m + c * SUB_M, kk * TILE_K],
                    full,
                    s.a_bufs.index(2 * empty.index + c),
                )
            tma.async_load(
                s.b_desc, [off_n, kk * TILE_K], full, s.b_bufs.index(empty.index), multicast=True
            )
            empty = empty.next()


# -- consumers: two warpgroups (partitions) issuing wgmma, each with its own epilogue ----------
@gluon.jit
def _consumer(s: Smem, C: gl.constexpr):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_M: gl.constexpr = SUB_M * 2
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0],
        warps_per_cta=[gl.num_warps(), 1],
        instr_shape=[16, TILE_N, 16],
        cga_layout=s.c_desc.layout.cga_layout,
    )
    num_tiles_m = gl.cdiv(s.M, TILE_M)
    num_tiles_n = gl.cdiv(s.N, TILE_N)
    k_tiles = gl.cdiv(s.K, TILE_K)
    full = Counter.create(0, s.NUM_STAGES)
    release = Counter.create(0, s.NUM_STAGES)
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        acc = gl.zeros([SUB_M, TILE_N], gl.float32, acc_layout)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_full.index(full.index), full.phase)
            a = s.a_bufs.index(2 * full.index + C)
            b = s.b_bufs.index(full.index).permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # Keep one wgmma in flight: once only the newest is outstanding, the previous
            # stage's operands are no longer read and can be handed back.
            acc, a, b = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a, b))
            if kk > 0:
                mbarrier.arrive(s.ab_empty.index(release.index))
                mbarrier.arrive(s.b_empty.index(release.index))  # remote arrive on the lead
                release = release.next()
            full = full.next()
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(s.ab_empty.index(release.index))
        mbarrier.arrive(s.b_empty.index(release.index))
        release = release.next()

        # Epilogue: registers -> shared -> TMA store. The previous tile's store was left in
        # flight (it overlapped this tile's main loop); drain its smem reads before reuse.
        tma.store_wait(pendings=0)
        c_smem = s.c_smem.index(C)
        c_smem.store(acc.to(s.c_desc.dtype))
        fence_async_shared()  # generic-proxy smem writes -> async-proxy (TMA) reads
        tma.async_store(s.c_desc, [tile_m * TILE_M + C * SUB_M, tile_n * TILE_N], c_smem)
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
    GROUP_M: gl.constexpr,
    PRODUCER_WARPS: gl.constexpr,
    PRODUCER_REGS: gl.constexpr,
    CONSUMER_REGS: gl.constexpr,
):
    gl.static_assert(gl.num_ctas() == 2)
    dtype: gl.constexpr = a_desc.dtype
    # -- shared-memory plan --
    a_bufs = gl.allocate_shared_memory(
        dtype,
        [NUM_STAGES * 2] + a_desc.block_shape,  # noqa: RUF005
        a_desc.layout,
    )
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    c_smem = gl.allocate_shared_memory(dtype, [2] + c_desc.block_shape, c_desc.layout)  # noqa: RUF005
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    ab_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    b_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES, two_ctas=True)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # the producer's expect; bytes via tx
        mbarrier.init(ab_empty.index(i), count=2)  # one elected arrive per consumer partition
        mbarrier.init(b_empty.index(i), count=2)  # x2 by Gluon: 2 consumers in each CTA
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
        b_empty,
        gl.to_tensor(M),
        gl.to_tensor(N),
        gl.to_tensor(K),
        NUM_STAGES,
        GROUP_M,
    )
    # -- roles --
    gl.warp_specialize(
        [(_consumer, (s, 0)), (_producer, (s,)), (_consumer, (s, 1))],
        [PRODUCER_WARPS, 4],
        [PRODUCER_REGS, CONSUMER_REGS],
    )


# -- configs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class R7Config(KernelConfig):
    """Rung 7's knobs: the L2 grouping of the tile order, and the k-tile width. The ring keeps
    its ``RING_BYTES``, so a 32-wide k-tile doubles the stages (3 -> 6) at a 64-byte swizzle."""

    group: int = 8  # cluster-tile rows per L2 group
    k_tile: int = 64  # BLOCK_K

    @property
    def stages(self) -> int:
        return RING_BYTES // ((2 * 64 * self.k_tile + BLOCK_N * self.k_tile) * 2)


MENU = tuple(R7Config(group, k_tile) for group in (4, 8, 16) for k_tile in (64, 32))


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int, config: R7Config) -> Plan:
    tile_m = BLOCK_M * CLUSTER_M
    num_tiles = cdiv(problem.m, tile_m) * cdiv(problem.n, BLOCK_N)
    clusters = max(1, min(num_sms // CLUSTER_M, num_tiles))
    block_k = config.k_tile
    return Plan(
        args=(
            Desc("a", (tile_m // NUM_CONSUMERS, block_k), ((1, 0),)),  # a consumer box: 64 rows/CTA
            Desc("b", (BLOCK_N, block_k), ((0, 0),)),  # broadcast: both CTAs hold all of B
            Desc("c", (tile_m // NUM_CONSUMERS, BLOCK_N), ((1, 0),)),
            problem.m,
            problem.n,
            problem.k,
        ),
        constexprs=dict(
            NUM_STAGES=config.stages,
            GROUP_M=config.group,
            PRODUCER_WARPS=PRODUCER_WARPS,
            PRODUCER_REGS=PRODUCER_REGS,
            CONSUMER_REGS=CONSUMER_REGS,
        ),
        grid=(clusters,),
        num_warps=4,  # the default partition: consumer 0; consumer 1 is a 4-warp worker
        num_ctas=CLUSTER_M,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r7_multi_consumer_kernel,
    plan=plan,
    space=ConfigSpace(MENU, lambda problem: R7Config(), module=__name__),
    notes=(
        "B multicast: Gluon issues one TMA for the whole B tile from the lead CTA "
        "(ctaMask=0b11); the design's per-CTA halves are not expressible natively",
    ),
)
