"""Gluon · sm_100a · rung 5 ``warp_specialized`` — TMA warp, tcgen05 MMA warp, epilogue warps.

Blackwell, one CTA per SM, persistent over 128x256x64 tiles. Compiled and inspected here (no
Blackwell GPU to run on).

The Blackwell form of Hopper's rung 5: the accumulator lives in tensor memory (TMEM), so the
MMA needs a single issuing thread instead of a consumer warpgroup, and the epilogue gets its
own warps:
  * load partition (1 warp): TMA into a NUM_STAGES ring, as on Hopper;
  * MMA partition (1 warp): ``tcgen05_mma`` into a double-buffered TMEM accumulator; each MMA
    arrives on the stage's ``ab_empty`` when it retires (``mbarriers=[...]``, a
    ``tcgen05.commit``), and ``tcgen05_commit(acc_full)`` closes a tile;
  * epilogue (default partition, 4 warps): TMEM -> registers -> shared -> TMA store in
    128x64 sub-tiles, then hands the TMEM buffer back (``acc_empty``), so the MMA warp
    starts the next tile while this one drains.

Shared memory: A 128x64x2 = 16 KiB + B 256x64x2 = 32 KiB = 48 KiB per stage; 3 stages =
144 KiB; epilogue 2 x 128x64x2 = 32 KiB; total 176 KiB + barriers.
Tensor memory: 2 accumulators x 256 fp32 columns = 512 columns (all of it).

Barriers:

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | load warp's expect; TMA bytes | MMA warp | stage s landed |
  | ``ab_empty`` | 1 | tcgen05 commit of the MMA | load warp | stage s read by the MMA |
  | ``acc_full`` | 1 | tcgen05 commit after last K | epilogue | TMEM buffer b is final |
  | ``acc_empty`` | 1 | epilogue (1 elected) | MMA warp | TMEM buffer b drained |

Producers of "empty" barriers start at phase 1 (fresh barriers read as "previous phase done").
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    tcgen05_commit,
    tcgen05_mma,
    tensor_memory_descriptor,
)
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from backends.gluon import spec
from backends.gluon._host import Desc, GluonKernel, Plan
from backends.gluon._pipeline import Counter
from backends.gluon._schedule import grouped_tile
from harness.protocol import Problem, cdiv

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64
EPI_N = 64  # epilogue sub-tile width
NUM_STAGES = 3
NUM_ACC = 2  # TMEM accumulator buffers
GROUP_M = 8
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
    TILE_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    return gl.cdiv(s.M, TILE_M), gl.cdiv(s.N, TILE_N), gl.cdiv(s.K, TILE_K)


# -- load partition: one warp issuing TMA -----------------------------------------------------
@gluon.jit
def _load(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    num_tiles_m, num_tiles_n, k_tiles = _tiles(s)
    empty = Counter.create(1, s.ab_full.shape[0])
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_empty.index(empty.index), empty.phase)
            full = s.ab_full.index(empty.index)
            mbarrier.expect(full, s.a_desc.nbytes_per_cta + s.b_desc.nbytes_per_cta)
            tma.async_load(
                s.a_desc, [tile_m * TILE_M, kk * TILE_K], full, s.a_bufs.index(empty.index)
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
    acc_empty = Counter.create(1, s.acc_full.shape[0])
    for _tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        mbarrier.wait(s.acc_empty.index(acc_empty.index), acc_empty.phase)
        acc = s.acc_bufs.index(acc_empty.index)
        for kk in range(k_tiles):
            mbarrier.wait(s.ab_full.index(full.index), full.phase)
            tcgen05_mma(
                s.a_bufs.index(full.index),
                s.b_bufs.index(full.index).permute((1, 0)),
                acc,
                use_acc=kk > 0,
                mbarriers=[s.ab_empty.index(full.index)],
            )
            full = full.next()
        tcgen05_commit(s.acc_full.index(acc_empty.index))
        acc_empty = acc_empty.next()


# -- epilogue (default partition): TMEM -> registers -> shared -> TMA store --------------------
@gluon.jit
def _epilogue(s: Smem):
    TILE_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    SUB_N: gl.constexpr = s.c_desc.block_shape[1]
    num_tiles_m, num_tiles_n, _ = _tiles(s)
    acc_full = Counter.create(0, s.acc_full.shape[0])
    c_buf = Counter.create(0, s.c_bufs.shape[0])
    for tile_id in range(gl.program_id(0), num_tiles_m * num_tiles_n, gl.num_programs(0)):
        tile_m, tile_n = grouped_tile(tile_id, num_tiles_m, num_tiles_n, s.GROUP_M)
        mbarrier.wait(s.acc_full.index(acc_full.index), acc_full.phase)
        acc = s.acc_bufs.index(acc_full.index)
        for j in gl.static_range(TILE_N // SUB_N):
            part = acc.slice(j * SUB_N, SUB_N).load()
            # Two sub-tile buffers: the store issued from this one two sub-tiles ago must
            # have finished reading it.
            tma.store_wait(pendings=1)
            dst = s.c_bufs.index(c_buf.index)
            dst.store(part.to(s.c_desc.dtype))
            fence_async_shared()
            tma.async_store(s.c_desc, [tile_m * TILE_M, tile_n * TILE_N + j * SUB_N], dst)
            c_buf = c_buf.next()
        # The accumulator has been read into registers: the MMA warp may reuse it.
        mbarrier.arrive(s.acc_empty.index(acc_full.index))
        acc_full = acc_full.next()
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
    NUM_ACC: gl.constexpr,
    GROUP_M: gl.constexpr,
    LOAD_WARPS: gl.constexpr,
    MMA_WARPS: gl.constexpr,
    WORKER_REGS: gl.constexpr,
):
    dtype: gl.constexpr = a_desc.dtype
    TILE_M: gl.constexpr = a_desc.block_shape[0]
    TILE_N: gl.constexpr = b_desc.block_shape[0]
    # -- shared- and tensor-memory plan --
    a_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + a_desc.block_shape, a_desc.layout)  # noqa: RUF005
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    c_bufs = gl.allocate_shared_memory(dtype, [2] + c_desc.block_shape, c_desc.layout)  # noqa: RUF005
    acc_layout: gl.constexpr = TensorMemoryLayout(block=(TILE_M, TILE_N), col_stride=1)
    acc_bufs = allocate_tensor_memory(gl.float32, [NUM_ACC, TILE_M, TILE_N], acc_layout)
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    ab_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    acc_full = mbarrier.allocate_mbarrier(batch=NUM_ACC)
    acc_empty = mbarrier.allocate_mbarrier(batch=NUM_ACC)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # load warp's expect; bytes via tx
        mbarrier.init(ab_empty.index(i), count=1)  # the tcgen05 commit of the MMA that read it
    for i in gl.static_range(NUM_ACC):
        mbarrier.init(acc_full.index(i), count=1)  # tcgen05_commit after the tile's last MMA
        mbarrier.init(acc_empty.index(i), count=1)  # the epilogue partition (1 elected)
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
        [(_epilogue, (s,)), (_load, (s,)), (_mma, (s,))],
        [LOAD_WARPS, MMA_WARPS],
        [WORKER_REGS, WORKER_REGS],
    )


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> Plan:
    num_tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    return Plan(
        args=(
            Desc("a", (BLOCK_M, BLOCK_K)),
            Desc("b", (BLOCK_N, BLOCK_K)),
            Desc("c", (BLOCK_M, EPI_N)),
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
        ),
        grid=(max(1, min(num_sms, num_tiles)),),
        num_warps=4,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r5_warp_specialized_kernel,
    plan=plan,
)
