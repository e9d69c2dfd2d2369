"""Tilus · sm_90a · rung 6 ``cluster2`` — a 2-CTA cluster sharing the B tile by TMA multicast.

Persistent, warp-specialized, two CTAs per cluster stacked along M that share one B tile.

Changes from rung 5 (``warp_specialized``):
  * ``self.attrs.cluster_blocks = 2``: the pair computes a 256x128 cluster tile, CTA rank r
    rows ``[128r, 128r + 128)``; the persistent grid counts clusters ((#SMs / 2) of 2 CTAs)
    and ``GroupedOrder`` hands out cluster tiles, so both CTAs walk the same tile and K
    sequence;
  * CTA r loads its own A rows and *half* of the B tile (rows ``[64r, 64r + 64)``) and
    multicasts that half (``multicast_mask=0b11``) into the same offset of both CTAs' stage s;
    each CTA's ``full[s]`` therefore expects its A bytes plus the *whole* B tile's bytes;
  * the empty barriers count two arrivals: the consumer warpgroup of each CTA frees stage s in
    both CTAs (a remote arrive to rank 0 and rank 1), since the peer's producer writes into
    this CTA's stage too;
  * a cluster barrier after the barrier inits (they must be visible to the peer's multicast
    and arrives) and one before exit (no CTA leaves while its peer may still arrive on it).

Shared memory per CTA (fp16/bf16, 2 bytes):
  A stage 128x64x2 = 16 KiB, B stage 2 x 64x64x2 = 16 KiB -> 32 KiB per stage;
  4 stages = 128 KiB; epilogue tile 128x128x2 = 32 KiB; total 160 KiB + barriers < 227 KiB.

Warps: 0-3 the consumer warpgroup (``setmaxnreg`` 232), 4-7 the producer warpgroup
(``setmaxnreg`` 40) of which warp 4 issues every TMA.

Barriers (per stage s, in each CTA):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``full[s]`` | 1 + tx bytes | own expect (A + all B); both CTAs' TMA | consumer | A + B landed |
  | ``empty[s]`` | 2 | each CTA's consumer (1 thread, remote) | producer | free in both CTAs |

Remote arrives are spelled ``arrive_and_expect_tx_remote(..., 0 bytes, sem="relaxed")``
(Tilus 0.2.0's plain ``arrive`` is CTA-local only; a release.cluster arrive costs a GPU-wide
memory barrier per K step). The barrier inits are made visible cluster-wide by a cluster
barrier before any role starts (Tilus emits ``fence.mbarrier_init``).
"""

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, float32, int32, uint32, void_p
from tilus.hidet.ir.primitives.cuda.setmaxnreg import setmaxnreg

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._schedule import GroupedOrder
from backends.tilus._workarounds import cdiv
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 4
NUM_CONSUMERS = 1  # consumer warpgroups per CTA
CLUSTER_M = 2  # CTAs per cluster, stacked along M
HALF_N = BLOCK_N // CLUSTER_M  # B rows each CTA loads and multicasts
GROUP_M = 8  # cluster-tile rows per L2 group
PRODUCER_REGS = 40
CONSUMER_REGS = 232


class R6Cluster2(tilus.Script):
    def __init__(self, dtype, num_clusters: int):
        super().__init__()
        self.dtype = dtype
        self.num_clusters = num_clusters

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
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, CLUSTER_M, HALF_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_N])

        # -- barriers --
        full = self.mbarrier.alloc([1 for _ in range(NUM_STAGES)])
        empty = self.mbarrier.alloc([NUM_CONSUMERS * CLUSTER_M for _ in range(NUM_STAGES)])
        # The peer multicasts into our stages and arrives on our empty barriers: every init
        # must be visible cluster-wide before either CTA starts.
        self.cluster.sync()

        rank = self.cluster.blockRank
        cluster_id = self.blockIdx.x // CLUSTER_M
        order = GroupedOrder(
            cdiv(m_size, BLOCK_M * CLUSTER_M), cdiv(n_size, BLOCK_N), GROUP_M, False
        )

        # -- roles --
        with self.warp_group(warp_begin=4 * NUM_CONSUMERS, num_warps=4):
            self.producer(ga, gb, sa, sb, full, empty, order, rank, cluster_id, k_size)
        with self.warp_group(warp_begin=0, num_warps=4):
            self.consumer(gc, sa, sb, sc, full, empty, order, rank, cluster_id, k_size)

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
                        src=ga, dst=sa[stage], offsets=[off_m, off_k], mbarrier=full[stage]
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

    # -- consumer: the CTA's 128 rows, then the epilogue -----------------------------------------
    def consumer(
        self,
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
            acc = self.register_tensor(dtype=float32, shape=[BLOCK_M, BLOCK_N], init=0.0)
            prev: int32 = 0
            for off_k in self.range(0, k_size, BLOCK_K):
                self.mbarrier.wait(full[stage], phase=phase)
                self.wgmma.fence()
                b_tile = self.reshape_shared(sb[stage], [BLOCK_N, BLOCK_K])
                self.wgmma.mma(sa[stage], b_tile.transpose(), acc)
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
            # The previous tile's store must have read sc before it is overwritten; waiting
            # here rather than right after issuing it lets that store overlap this mainloop.
            with self.single_warp():
                self.tma.wait_group(0, read=True)
            self.sync()
            off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M
            self.store_shared(sc, self.cast(acc, dtype=self.dtype))
            self.fence.proxy_async(space="shared")
            self.sync()  # every thread's stores are in before the TMA reads them
            with self.single_warp():
                self.tma.shared_to_global(sc, gc, offsets=[off_m, tile_n * BLOCK_N])
                self.tma.commit_group()
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> dict:
    tiles = cdiv(problem.m, BLOCK_M * CLUSTER_M) * cdiv(problem.n, BLOCK_N)
    return dict(num_clusters=max(1, min(num_sms // CLUSTER_M, tiles)))


KERNEL = TilusKernel(
    spec(__name__),
    script=R6Cluster2,
    plan=plan,
    raw_ptx=("setmaxnreg",),
    notes=(
        "setmaxnreg through Tilus's vendored hidet primitive (no Tilus instruction in 0.2.0)",
        "remote empty-barrier arrive spelled arrive_and_expect_tx_remote(..., 0 bytes): 0.2.0's "
        "plain arrive is CTA-local only",
    ),
)
