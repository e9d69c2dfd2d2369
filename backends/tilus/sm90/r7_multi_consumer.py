"""Tilus · sm_90a · rung 7 ``multi_consumer`` — the final Hopper kernel.

Persistent, warp-specialized, a 2-CTA cluster whose CTAs each load half of the B tile and
multicast it to both, and two consumer warpgroups per CTA that share the staged B tile.

Changes from rung 6 (``cluster2``):
  * a second consumer warpgroup. Each issues ``wgmma m64n256k16`` on its own 64 rows and both
    read the same B stage; each runs its own epilogue. The cluster tile becomes 256x256 (each
    CTA 128x256), the stage count drops 4 -> 3;
  * A comes in two 64-row boxes per stage, one per consumer;
  * the empty barriers count four arrivals: one per consumer warpgroup, in both CTAs.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A 2 x 64x64x2 = 16 KiB, B 256x64x2 = 32 KiB -> 48 KiB per stage; 3 stages = 144 KiB;
  epilogue 2 x 64x256x2 = 64 KiB; total 208 KiB + barriers < 227 KiB (4 stages: 256 KiB).

Warps: 0-3 consumer 0, 4-7 consumer 1 (``setmaxnreg`` 232), 8-11 the producer warpgroup
(``setmaxnreg`` 40) of which warp 8 issues every TMA. 232 x 256 + 40 x 128 = 64,512 of the
SM's 65,536 registers.

Configs (``R7Config``; the harness records which one ran and ``bench --tune`` times them all):
``group`` and ``raster``, the L2 grouping of the tile order (``group`` cluster-tile rows, or
columns with ``raster="n"``).

Barriers (per stage s, in each CTA):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``full[s]`` | 1 + tx | own producer (expects A + all B); both CTAs' TMA | consumers | landed |
  | ``empty[s]`` | 4 | each consumer warpgroup of both CTAs (remote) | own producer | free |

Why ``empty`` counts the peer: CTA r loads rows ``[128r, 128r + 128)`` of the B tile and
multicasts them (``multicast_mask=0b11``) into the same offset of both CTAs' stage s, so its
producer writes into the peer's shared memory and may refill a stage only after the peer's
consumers released it too. Both CTAs walk the same tile and K sequence. The barrier inits are
made visible cluster-wide by a cluster barrier before any role starts; a cluster barrier
precedes exit so that no CTA leaves while its peer may still arrive on its barriers.
"""

from dataclasses import dataclass

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, float32, int32, uint32, void_p
from tilus.hidet.ir.primitives.cuda.setmaxnreg import setmaxnreg

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._schedule import GroupedOrder
from backends.tilus._workarounds import cdiv
from harness.protocol import ConfigSpace, KernelConfig, Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA (64 per consumer warpgroup)
BLOCK_N = 256
BLOCK_K = 64
NUM_STAGES = 3
NUM_CONSUMERS = 2  # consumer warpgroups per CTA
CLUSTER_M = 2  # CTAs per cluster, stacked along M
WG_M = BLOCK_M // NUM_CONSUMERS  # rows per consumer warpgroup
HALF_N = BLOCK_N // CLUSTER_M  # B rows each CTA loads and multicasts
PRODUCER_REGS = 40
CONSUMER_REGS = 232


class R7MultiConsumer(tilus.Script):
    def __init__(self, dtype, num_clusters: int, group: int, raster_n: bool):
        super().__init__()
        self.dtype = dtype
        self.num_clusters = num_clusters
        self.group = group
        self.raster_n = raster_n

    def __call__(
        self,
        m_size: int32,
        n_size: int32,
        k_size: int32,
        a_ptr: void_p,
        b_ptr: void_p,
        c_ptr: void_p,
        ldc: int32,
    ):
        self.attrs.blocks = self.num_clusters * CLUSTER_M
        self.attrs.cluster_blocks = CLUSTER_M
        self.attrs.warps = 4 * (NUM_CONSUMERS + 1)

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, NUM_CONSUMERS, WG_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, CLUSTER_M, HALF_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[NUM_CONSUMERS, WG_M, BLOCK_N])

        # -- barriers --
        full = self.mbarrier.alloc([1 for _ in range(NUM_STAGES)])
        empty = self.mbarrier.alloc([NUM_CONSUMERS * CLUSTER_M for _ in range(NUM_STAGES)])
        # The peer multicasts into our stages and arrives on our empty barriers: every init
        # must be visible cluster-wide before either CTA starts.
        self.cluster.sync()

        rank = self.cluster.blockRank
        cluster_id = self.blockIdx.x // CLUSTER_M
        order = GroupedOrder(
            cdiv(m_size, BLOCK_M * CLUSTER_M), cdiv(n_size, BLOCK_N), self.group, self.raster_n
        )

        # -- roles --
        with self.warp_group(warp_begin=4 * NUM_CONSUMERS, num_warps=4):
            self.producer(ga, gb, sa, sb, full, empty, order, rank, cluster_id, k_size)
        with self.warp_group(warp_begin=0, num_warps=4):
            self.consumer(0, gc, sa, sb, sc, full, empty, order, rank, cluster_id, k_size)
        with self.warp_group(warp_begin=4, num_warps=4):
            self.consumer(1, gc, sa, sb, sc, full, empty, order, rank, cluster_id, k_size)

        # The peer may still arrive on our empty barriers: leave together.
        self.cluster.sync()

    def release(self, empty: RegisterTensor, stage: int32):
        """One elected thread frees ``stage`` in both CTAs (0-byte remote expect-tx arrives:
        Tilus 0.2.0's plain ``arrive`` is CTA-local only)."""
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx_remote(
                empty[stage], transaction_bytes=0, target_rank=0, sem="relaxed", scope="cluster"
            )
            self.mbarrier.arrive_and_expect_tx_remote(
                empty[stage], transaction_bytes=0, target_rank=1, sem="relaxed", scope="cluster"
            )

    # -- producer: one warp issues every TMA (Tilus 0.2.0 issues TMA at warp scope) ------------
    def producer(
        self,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        full: RegisterTensor,
        empty: RegisterTensor,
        order: GroupedOrder,
        rank: int32,
        cluster_id: int32,
        k_size: int32,
    ):
        setmaxnreg(PRODUCER_REGS, "dec")
        with self.single_warp():
            stage: int32 = 0
            # Empty barriers start in phase 0 with nothing arrived: waiting on the *previous*
            # phase (1) falls through, so the first pass finds every stage free.
            phase: uint32 = self.mbarrier.producer_initial_phase
            for t in self.range(cluster_id, order.num_tiles, self.num_clusters):
                tile_m, tile_n = order.coords(t)
                off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M
                off_n = tile_n * BLOCK_N + rank * HALF_N  # this CTA's half of B
                for off_k in self.range(0, k_size, BLOCK_K):
                    self.mbarrier.wait(empty[stage], phase=phase)
                    with self.single_thread():
                        self.mbarrier.arrive_and_expect_tx(full[stage], sa[0].nbytes + sb[0].nbytes)
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage, 0], offsets=[off_m, off_k], mbarrier=full[stage]
                    )
                    self.tma.global_to_shared(
                        src=ga,
                        dst=sa[stage, 1],
                        offsets=[off_m + WG_M, off_k],
                        mbarrier=full[stage],
                    )
                    self.tma.global_to_shared(
                        src=gb,
                        dst=sb[stage, rank],
                        offsets=[off_n, off_k],
                        mbarrier=full[stage],
                        multicast_mask=0b11,
                    )
                    stage = (stage + 1) % NUM_STAGES
                    phase = phase ^ (stage == 0)

    # -- consumer c: 64 rows of the CTA tile, sharing the B stage with the other consumer -------
    def consumer(
        self,
        c: int,
        gc: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        sc: SharedTensor,
        full: RegisterTensor,
        empty: RegisterTensor,
        order: GroupedOrder,
        rank: int32,
        cluster_id: int32,
        k_size: int32,
    ):
        setmaxnreg(CONSUMER_REGS, "inc")
        stage: int32 = 0
        phase: uint32 = self.mbarrier.consumer_initial_phase
        for t in self.range(cluster_id, order.num_tiles, self.num_clusters):
            tile_m, tile_n = order.coords(t)
            acc = self.register_tensor(dtype=float32, shape=[WG_M, BLOCK_N], init=0.0)
            prev: int32 = 0
            for off_k in self.range(0, k_size, BLOCK_K):
                self.mbarrier.wait(full[stage], phase=phase)
                self.wgmma.fence()
                b_tile = self.reshape_shared(sb[stage], [BLOCK_N, BLOCK_K])
                self.wgmma.mma(sa[stage, c], b_tile.transpose(), acc)
                self.wgmma.commit_group()
                # One wgmma group stays in flight: the previous stage's is done, release it.
                self.wgmma.wait_group(1)
                if off_k > 0:
                    self.release(empty, prev)
                prev = stage
                stage = (stage + 1) % NUM_STAGES
                phase = phase ^ (stage == 0)
            self.wgmma.wait_group(0)
            self.release(empty, prev)

            # -- epilogue: registers -> shared -> TMA store --
            # The previous tile's store must have read sc[c] before it is overwritten; waiting
            # here rather than right after issuing it lets that store overlap this mainloop.
            with self.single_warp():
                self.tma.wait_group(0, read=True)
            self.sync()
            off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M + c * WG_M
            self.store_shared(sc[c], self.cast(acc, dtype=self.dtype))
            self.fence.proxy_async(space="shared")
            self.sync()  # every thread's stores are in before the TMA reads them
            with self.single_warp():
                self.tma.shared_to_global(sc[c], gc, offsets=[off_m, tile_n * BLOCK_N])
                self.tma.commit_group()
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits


# -- configs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class R7Config(KernelConfig):
    """Rung 7's knobs: the L2 grouping of the tile order (``group`` cluster-tile rows, or
    columns with ``raster="n"``)."""

    group: int = 8
    raster: str = "m"


MENU = tuple(R7Config(group, raster) for group in (4, 8, 16) for raster in ("m", "n"))


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int, config: R7Config) -> dict:
    tiles = cdiv(problem.m, BLOCK_M * CLUSTER_M) * cdiv(problem.n, BLOCK_N)
    return dict(
        num_clusters=max(1, min(num_sms // CLUSTER_M, tiles)),
        group=config.group,
        raster_n=config.raster == "n",
    )


KERNEL = TilusKernel(
    spec(__name__),
    script=R7MultiConsumer,
    plan=plan,
    space=ConfigSpace(MENU, lambda problem: R7Config(), module=__name__),
    raw_ptx=("setmaxnreg",),
    notes=(
        "setmaxnreg through Tilus's vendored hidet primitive (no Tilus instruction in 0.2.0)",
        "remote empty-barrier arrive spelled arrive_and_expect_tx_remote(..., 0 bytes): 0.2.0's "
        "plain arrive is CTA-local only",
    ),
)
