"""Gluon · sm_100a · rung 7 ``multi_consumer`` — two accumulators per CTA sharing each B stage.

Blackwell, 2-CTA clusters (``tcgen05.mma.cta_group::2``) over 512x128x64 cluster tiles.
Compiled and inspected here (no Blackwell GPU to run on).

Changes from rung 6 (``cluster2``):
  * two consumers per CTA: each stage holds two A tiles (cluster rows [0, 256) and [256, 512)
    of the cluster tile) and one B tile; the MMA warp issues two ``cta_group::2`` MMAs per
    stage, one into each consumer's TMEM accumulator, both reading the same staged B;
  * two epilogues: the default partition drains consumer 0's accumulator and a second 4-warp
    partition drains consumer 1's, each with its own ``acc_full`` / ``acc_empty`` barriers;
  * ``ab_empty`` now counts both MMAs of a stage (each arrives through its own commit);
  * N per tile drops from 256 to 128 so that 2 consumers x 2 TMEM buffers x 128 columns fit
    the 512 columns, and 3 stages fit shared memory.

Configs (``R7Config``): ``scheduler=static`` keeps rung 6's persistent loop (``tile_id +=
num_programs``); ``scheduler=clc`` hands tiles out by cluster launch control, as in the Gluon
multi-CTA tutorial's ``matmul_multicta``: the grid is one cluster per cluster tile; a cluster
starts on its own ``program_id`` and a 1-warp scheduler partition then asks the hardware for
more (``clc.try_cancel``: cancel a cluster not launched yet and take its tile). Gluon issues the
request from the lead CTA only and multicasts the 16-byte response to both CTAs (``try_cancel
... multicast::cluster::all``); every role reads it from its own CTA's slot
(``clc.load_result`` -> ``is_canceled()``, ``program_id(0)``: a cluster index, mapped to
(tile_m, tile_n) by the same L2-grouped order) and stops once a request fails. The CLC
barriers and response slots exist in both configs; only ``clc`` uses them.

No TMA multicast: in a 2-CTA cluster running ``cta_group::2`` every operand byte is already
loaded once per pair (A split by M, B split by N), so no tile is needed by both CTAs; Gluon
lowers ``multicast=True`` on these split layouts to a plain ``cta_group::2`` TMA (checked).
Multicast needs a broadcast CTA basis, i.e. a cluster of 4 or more (two pairs sharing B).

Shared memory per CTA: A 2 x 128x64x2 = 32 KiB + B half 64x64x2 = 8 KiB = 40 KiB per stage;
3 stages = 120 KiB; epilogues 2 x 2 x 128x64x2 = 64 KiB; CLC 2 x 16 B responses; total
184 KiB + barriers.
Tensor memory per CTA: 2 consumers x 2 buffers x 128 fp32 columns = 512 columns.

Barriers ("pair" = one barrier in the lead CTA that both CTAs arrive on; c = consumer):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | pair, 1 x 2 | both load warps; TMA | lead MMA warp | both CTAs' stage s in |
  | ``ab_empty`` | 2 | lead's 2 commits (mcast) | own load warp | read by both MMAs |
  | ``acc_full[c]`` | 1 | lead's commit (mcast) | epilogue c | buffer of c final |
  | ``acc_empty[c]`` | pair, 1 x 2 | epilogue c of both CTAs | lead MMA warp | buffer of c drained |
  | ``clc_full`` | 1 + 16 B | own scheduler's expect; CLC | all 5 roles of own CTA | response in |
  | ``clc_empty`` | pair, 5 x 2 | all 5 roles of both CTAs | lead scheduler | slot read |

Barrier inits are fenced cluster-wide by the compiler before ``warp_specialize``; the compiler
also puts a ``fence.proxy.async.shared::cluster`` before each ``try_cancel`` (the roles read the
previous response through the generic proxy, the CLC unit writes the next through the async one).
"""

from __future__ import annotations

from dataclasses import dataclass

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    clc,
    tcgen05_commit,
    tcgen05_mma,
    tcgen05_mma_barrier_count,
    tensor_memory_descriptor,
)
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from backends.gluon import spec
from backends.gluon._host import Desc, GluonKernel, Plan
from backends.gluon._pipeline import Counter
from backends.gluon._schedule import grouped_tile
from harness.protocol import ConfigSpace, KernelConfig, Problem, cdiv

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
NUM_CLC = 2  # CLC response slots: the scheduler runs up to 2 responses ahead of any role
CLC_WARPS = 1


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
    clc_result: gl.shared_memory_descriptor
    clc_full: gl.shared_memory_descriptor
    clc_empty: gl.shared_memory_descriptor
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    GROUP_M: gl.constexpr
    USE_CLC: gl.constexpr

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
        clc_result,
        clc_full,
        clc_empty,
        M,
        N,
        K,
        GROUP_M,
        USE_CLC,
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
        self.clc_result = clc_result
        self.clc_full = clc_full
        self.clc_empty = clc_empty
        self.M = M
        self.N = N
        self.K = K
        self.GROUP_M = gl.constexpr(GROUP_M)
        self.USE_CLC = gl.constexpr(USE_CLC)


@gluon.jit
def _tiles(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0] * 2  # two consumers
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    return gl.cdiv(s.M, TILE_M), gl.cdiv(s.N, TILE_N), gl.cdiv(s.K, TILE_K)


@gluon.jit
def _first_tile(s: Smem):
    """Every role starts on its cluster's own tile; (has_work, tile_id)."""
    num_tiles_m, num_tiles_n, _ = _tiles(s)
    tile_id = gl.program_id(0)
    return tile_id < num_tiles_m * num_tiles_n, tile_id


@gluon.jit
def _next_tile(s: Smem, tile_id, slot):
    """Every role, the scheduler too: the cluster's next tile; (has_work, tile_id, slot).

    Static: the next tile ``num_programs`` further on. CLC: read the next response, then free
    its slot; ``has_work`` is False once a request found no cluster left to cancel, and the
    tile is the canceled cluster's ``program_id(0)``.
    """
    if s.USE_CLC:
        mbarrier.wait(s.clc_full.index(slot.index), slot.phase)
        response = clc.load_result(s.clc_result.index(slot.index))
        # The response is in registers: the scheduler may refill the slot (pair barrier: the
        # lead's next request multicasts into both CTAs' slot, so both must be done with it).
        mbarrier.arrive(s.clc_empty.index(slot.index))
        return response.is_canceled(), response.program_id(0), slot.next()
    else:
        num_tiles_m, num_tiles_n, _ = _tiles(s)
        tile_id += gl.num_programs(0)
        return tile_id < num_tiles_m * num_tiles_n, tile_id, slot


# -- scheduler partition: one warp asking cluster launch control for the next tile ----------
@gluon.jit
def _scheduler(s: Smem):
    # ``slot.phase`` is the phase of ``clc_full`` (starts at 0); waiting on ``clc_empty`` with
    # the opposite parity makes the first NUM_CLC waits return at once (every slot free).
    slot = Counter.create(0, s.clc_full.shape[0])
    has_work, tile_id = _first_tile(s)
    while has_work:
        mbarrier.wait(s.clc_empty.index(slot.index), slot.phase ^ 1)
        full = s.clc_full.index(slot.index)
        mbarrier.expect(full, 16)  # the 16-byte response lands in this CTA's slot
        clc.try_cancel(s.clc_result.index(slot.index), full)
        # After a failed request no further one may be issued: stop with the other roles.
        has_work, tile_id, slot = _next_tile(s, tile_id, slot)


# -- load partition: one warp issuing TMA -----------------------------------------------------
@gluon.jit
def _load(s: Smem):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]  # cluster rows of one consumer
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    num_tiles_m, num_tiles_n, k_tiles = _tiles(s)
    empty = Counter.create(1, s.ab_full.shape[0])
    slot = Counter.create(0, s.clc_full.shape[0])
    has_work, tile_id = _first_tile(s)  # own tile first, then the scheduler's next ones
    while has_work:
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
        has_work, tile_id, slot = _next_tile(s, tile_id, slot)


# -- MMA partition: one warp issuing tcgen05 --------------------------------------------------
@gluon.jit
def _mma(s: Smem):
    _, _, k_tiles = _tiles(s)
    full = Counter.create(0, s.ab_full.shape[0])
    acc_empty = Counter.create(1, s.acc_full.shape[0] // 2)
    slot = Counter.create(0, s.clc_full.shape[0])
    has_work, tile_id = _first_tile(s)
    while has_work:
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
        has_work, tile_id, slot = _next_tile(s, tile_id, slot)


# -- epilogues (default partition: consumer 0; a 4-warp worker: consumer 1) -------------------
@gluon.jit
def _epilogue(s: Smem, C: gl.constexpr):
    SUB_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    SUB_N: gl.constexpr = s.c_desc.block_shape[1]
    num_tiles_m, num_tiles_n, _ = _tiles(s)
    acc_full = Counter.create(0, s.acc_full.shape[0] // 2)
    c_buf = Counter.create(0, s.c_bufs.shape[0] // 2)
    slot = Counter.create(0, s.clc_full.shape[0])
    has_work, tile_id = _first_tile(s)
    while has_work:
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
        has_work, tile_id, slot = _next_tile(s, tile_id, slot)
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
    NUM_CLC: gl.constexpr,
    GROUP_M: gl.constexpr,
    LOAD_WARPS: gl.constexpr,
    MMA_WARPS: gl.constexpr,
    WORKER_REGS: gl.constexpr,
    EPI_WARPS: gl.constexpr,
    EPI_REGS: gl.constexpr,
    CLC_WARPS: gl.constexpr,
    USE_CLC: gl.constexpr,
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
    # One 16-byte CLC response per slot; cga_layout [[0]]: every CTA holds all the slots.
    clc_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0], cga_layout=[[0]])
    clc_result = gl.allocate_shared_memory(gl.int64, [NUM_CLC, 2], clc_layout)
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
    clc_full = mbarrier.allocate_mbarrier(batch=NUM_CLC)
    clc_empty = mbarrier.allocate_mbarrier(batch=NUM_CLC, two_ctas=True)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # x2 by Gluon: each load warp's expect
        mbarrier.init(
            ab_empty.index(i),  # the lead's 2 tcgen05 commits, multicast to the pair
            count=2 * tcgen05_mma_barrier_count([a_bufs, b_bufs], multicast=False, two_ctas=True),
        )
    for i in gl.static_range(NUM_ACC * 2):
        mbarrier.init(acc_full.index(i), count=1)  # tcgen05_commit after the tile's last MMA
        mbarrier.init(acc_empty.index(i), count=1)  # x2 by Gluon: each CTA's epilogue
    for i in gl.static_range(NUM_CLC):
        mbarrier.init(clc_full.index(i), count=1)  # own scheduler's expect; response bytes
        mbarrier.init(clc_empty.index(i), count=5)  # x2 by Gluon: every role of both CTAs
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
        clc_result,
        clc_full,
        clc_empty,
        gl.to_tensor(M),
        gl.to_tensor(N),
        gl.to_tensor(K),
        GROUP_M,
        USE_CLC,
    )
    # -- roles --
    if USE_CLC:
        gl.warp_specialize(
            [
                (_epilogue, (s, 0)),
                (_load, (s,)),
                (_mma, (s,)),
                (_epilogue, (s, 1)),
                (_scheduler, (s,)),
            ],
            [LOAD_WARPS, MMA_WARPS, EPI_WARPS, CLC_WARPS],
            [WORKER_REGS, WORKER_REGS, EPI_REGS, WORKER_REGS],
        )
    else:
        gl.warp_specialize(
            [(_epilogue, (s, 0)), (_load, (s,)), (_mma, (s,)), (_epilogue, (s, 1))],
            [LOAD_WARPS, MMA_WARPS, EPI_WARPS],
            [WORKER_REGS, WORKER_REGS, EPI_REGS],
        )


# -- configs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class R7Config(KernelConfig):
    """How clusters get their tiles: ``static`` (a persistent grid of #SMs / 2 clusters, each
    striding over the tiles, as rung 6 does) or ``clc`` (module docstring)."""

    scheduler: str = "static"


MENU = (R7Config("static"), R7Config("clc"))


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int, config: R7Config) -> Plan:
    tile_m = BLOCK_M * CLUSTER_M  # rows of one consumer's cluster tile
    num_tiles = cdiv(problem.m, tile_m * NUM_CONSUMERS) * cdiv(problem.n, BLOCK_N)
    use_clc = config.scheduler == "clc"
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
            NUM_CLC=NUM_CLC,
            GROUP_M=GROUP_M,
            LOAD_WARPS=LOAD_WARPS,
            MMA_WARPS=MMA_WARPS,
            WORKER_REGS=WORKER_REGS,
            EPI_WARPS=EPI_WARPS,
            EPI_REGS=EPI_REGS,
            CLC_WARPS=CLC_WARPS,
            USE_CLC=use_clc,
        ),
        # Static: one persistent cluster per SM pair. CLC: one cluster per cluster tile;
        # clusters that start early cancel the launch of pending ones and take their tiles.
        grid=(num_tiles if use_clc else max(1, min(num_sms // CLUSTER_M, num_tiles)),),
        num_warps=4,
        num_ctas=CLUSTER_M,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r7_multi_consumer_kernel,
    plan=plan,
    space=ConfigSpace(MENU, lambda problem: R7Config(), module=__name__),
)
