"""Tilus · sm_100a · rung 6 ``cluster2`` — a CTA pair computing one tile with cta_group::2.

Blackwell, 2-CTA clusters, persistent over 256x256 cluster tiles in an L2-grouped order (grid =
#SMs / 2 clusters, static stride). Compiled and inspected here (no Blackwell GPU to run on).

Changes from rung 5 (``warp_specialized``):
  * ``cluster_blocks=2`` and ``tcgen05.mma.cta_group::2``: CTA 0's MMA warp issues an M=256
    MMA (m256n256k16) whose A rows come from both CTAs' shared memory (128 rows each) and whose
    256 B rows (N) are split the same way (128 each): each CTA loads half of each operand and
    the pair shares them — the Blackwell form of "share one operand", no TMA multicast; CTA 1's
    MMA warp has nothing to do;
  * TMEM allocated with ``cta_group=2`` (both CTAs together): each CTA's TMEM holds its own 128
    accumulator rows, written by CTA 0's MMA;
  * ``ab.full[s]`` lives in CTA 0 only and counts both CTAs: each TMA warp arrives on it
    remotely with its own bytes and issues its loads with ``cta_group=2`` against CTA 0's
    barrier (``mapa`` of the local address);
  * each MMA completion is a multicast ``tcgen05.commit.cta_group::2`` (mask 0b11): it arrives on
    ``ab.empty[s]`` / ``acc.full[b]`` in both CTAs, so each TMA warp refills its own stage and
    each epilogue drains its own 128 rows;
  * ``acc.empty[b]`` lives in CTA 0 and counts both epilogues (remote arrives);
  * the stage count rises 4 -> 6: a stage now holds half of B.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A 128x64x2 = 16 KiB + B half 128x64x2 = 16 KiB = 32 KiB per stage; 6 stages = 192 KiB;
  epilogue chunk 128x32x2 = 8 KiB; total 200 KiB + barriers < 227 KiB (7 stages: 232 KiB).
Tensor memory per CTA: 2 buffers x 256 fp32 columns (128 lanes) = 512 columns, all of it.

Warps: 0-3 epilogue (a warpgroup: warp w reads TMEM lanes 32w..32w+31), 4 TMA, 5 MMA (CTA 0).

Barriers (``s`` a shared-memory stage, ``b`` a TMEM buffer; "CTA 0" = one barrier in CTA 0 that
both CTAs arrive on; the same barrier in CTA 1 is unused):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab.full[s]`` | CTA 0: 2 + tx | each TMA warp (its bytes); TMA | CTA 0's MMA | both halves in |
  | ``ab.empty[s]`` | 1 | CTA 0's commit (multicast) | own TMA warp | MMAs read stage s |
  | ``acc.full[b]`` | 1 | CTA 0's commit after a tile (multicast) | own epilogue | buffer b final |
  | ``acc.empty[b]`` | CTA 0: 2 | one thread of each epilogue | CTA 0's MMA | b drained in both |

("commit" = ``tcgen05.commit.cta_group::2`` with ``multicast_mask=0b11``: it arrives on the
barrier at the same offset in both CTAs once the MMAs issued before it have completed; every
arrive on a CTA-0 barrier from CTA 1 is a remote arrive.)

Starting phases are explained in ``_pipeline.py``. Both CTAs walk the same tile sequence and K
loop. Barrier inits are made visible cluster-wide by a cluster barrier before any role starts;
a cluster barrier precedes the TMEM dealloc and exit, so that no CTA leaves while its peer may
still arrive on its barriers or read its shared memory.
"""

import tilus
from tilus import GlobalTensor, SharedTensor, int32, void_p

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._schedule import GroupedOrder
from backends.tilus._workarounds import cdiv
from backends.tilus.sm100._pipeline import Pipeline, TmemAccumulators
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA; the cta_group::2 MMA covers both CTAs' 256
BLOCK_N = 256
BLOCK_K = 64  # one 128-byte swizzle atom of fp16/bf16
NUM_STAGES = 6  # shared-memory ring depth (budget above)
ACC_STAGES = 2  # TMEM accumulator buffers
EPI_N = 32  # epilogue chunk width (columns per tcgen05.ld / TMA store)
CLUSTER_M = 2  # CTAs per cluster, stacked along M
HALF_N = BLOCK_N // CLUSTER_M  # B rows each CTA loads
GROUP = 8  # cluster-tile rows per L2 group of the tile order
EPI_WARP, TMA_WARP, MMA_WARP = 0, 4, 5  # first warp of each role
NUM_WARPS = 6


class R6Cluster2(tilus.Script):
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
        self.attrs.warps = NUM_WARPS

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory and tensor-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, HALF_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, EPI_N])
        accs = TmemAccumulators(ACC_STAGES, BLOCK_M, BLOCK_N, cta_group=2)

        # -- barriers (counts and arrivals in the table above) --
        ab = Pipeline(NUM_STAGES, full_count=CLUSTER_M, empty_count=1)
        acc = Pipeline(ACC_STAGES, full_count=1, empty_count=CLUSTER_M)
        # The peer arrives on our barriers: every init must be visible cluster-wide first.
        self.cluster.sync()

        rank = self.cluster.blockRank
        cluster_id = self.blockIdx.x // CLUSTER_M
        order = GroupedOrder(
            cdiv(m_size, BLOCK_M * CLUSTER_M), cdiv(n_size, BLOCK_N), self.group, self.raster_n
        )

        # -- roles --
        with self.single_warp(TMA_WARP):
            self.load(ga, gb, sa, sb, ab, order, rank, cluster_id, k_size)
        with self.single_warp(MMA_WARP):
            if rank == 0:  # CTA 0 issues the pair's MMAs
                self.mma(sa, sb, accs, ab, acc, order, cluster_id, k_size)
        with self.warp_group(warp_begin=EPI_WARP, num_warps=4):
            self.epilogue(gc, sc, accs, acc, order, rank, cluster_id)

        # The peer may still arrive on our barriers and CTA 0's last MMAs read both CTAs'
        # shared memory: leave together, then free TMEM (both CTAs: cta_group::2).
        self.cluster.sync()
        self.tcgen05.dealloc(accs.tmem)

    # -- TMA warp: this CTA's halves of A and B, counted on CTA 0's barrier --------------------
    def load(
        self,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        ab: Pipeline,
        order: GroupedOrder,
        rank: int32,
        cluster_id: int32,
        k_size: int32,
    ):
        for t in self.range(cluster_id, order.num_tiles, self.num_clusters):
            tile_m, tile_n = order.coords(t)
            off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M  # this CTA's rows of A
            off_n = tile_n * BLOCK_N + rank * HALF_N  # this CTA's half of B
            for off_k in self.range(0, k_size, BLOCK_K):
                ab.producer_acquire()
                s = ab.producer_stage
                # Relaxed: the TMA bytes are the payload, and their complete-tx publishes them.
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx_remote(
                        ab.full[s], sa[0].nbytes + sb[0].nbytes, target_rank=0, sem="relaxed"
                    )
                full_in_cta0 = self.cluster.map_shared_addr(ab.full[s], target_rank=0)
                self.tma.global_to_shared(
                    src=ga, dst=sa[s], offsets=[off_m, off_k], mbarrier=full_in_cta0, cta_group=2
                )
                self.tma.global_to_shared(
                    src=gb, dst=sb[s], offsets=[off_n, off_k], mbarrier=full_in_cta0, cta_group=2
                )
                ab.producer_advance()

    # -- MMA warp (CTA 0): one tcgen05.mma.cta_group::2 m256n256k16 x 4 per stage -------------
    def mma(
        self,
        sa: SharedTensor,
        sb: SharedTensor,
        accs: TmemAccumulators,
        ab: Pipeline,
        acc: Pipeline,
        order: GroupedOrder,
        cluster_id: int32,
        k_size: int32,
    ):
        for _t in self.range(cluster_id, order.num_tiles, self.num_clusters):
            acc.producer_acquire()  # both epilogues have drained this buffer
            for off_k in self.range(0, k_size, BLOCK_K):
                ab.consumer_acquire()  # both CTAs' halves of the stage are in
                s = ab.consumer_stage
                # Operands are this CTA's: the cta_group::2 MMA reads the peer's at the same
                # shared-memory offsets and writes both CTAs' TMEM.
                self.tcgen05.mma(
                    sa[s],
                    sb[s].transpose(),
                    accs.tmem[acc.producer_stage],
                    enable_input_d=off_k != 0,
                    cta_group=2,
                )
                # Fires in both CTAs when these MMAs have read stage s.
                self.tcgen05.commit(mbarrier=ab.empty[s], cta_group=2, multicast_mask=0b11)
                ab.consumer_advance()
            # Fires in both CTAs when every MMA of the tile is done.
            self.tcgen05.commit(
                mbarrier=acc.full[acc.producer_stage], cta_group=2, multicast_mask=0b11
            )
            acc.producer_advance()

    # -- epilogue warpgroup: this CTA's 128 rows, TMEM -> registers -> shared -> TMA store -----
    def epilogue(
        self,
        gc: GlobalTensor,
        sc: SharedTensor,
        accs: TmemAccumulators,
        acc: Pipeline,
        order: GroupedOrder,
        rank: int32,
        cluster_id: int32,
    ):
        for t in self.range(cluster_id, order.num_tiles, self.num_clusters):
            tile_m, tile_n = order.coords(t)
            off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M
            acc.consumer_acquire()
            buf = accs.tmem[acc.consumer_stage]
            for off_n in self.range(0, BLOCK_N, EPI_N):
                chunk = self.tcgen05.slice(
                    buf, offsets=[0, off_n], dims=[0, 1], shape=[BLOCK_M, EPI_N]
                )
                r = self.tcgen05.load(chunk)
                self.tcgen05.wait_load()
                self.store_shared(sc, self.cast(r, dtype=self.dtype))
                self.fence.proxy_async(space="shared")
                self.sync()  # every thread's stores are in before the TMA reads them
                with self.single_warp():
                    self.tma.shared_to_global(sc, gc, offsets=[off_m, tile_n * BLOCK_N + off_n])
                    self.tma.commit_group()
                    self.tma.wait_group(0, read=True)  # sc is read: it may be overwritten
                self.sync()
            # Every thread has waited for its last tcgen05.ld: tell CTA 0's MMA warp (a remote
            # 0-byte expect-tx arrive: Tilus 0.2.0's plain arrive is CTA-local only).
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx_remote(
                    acc.empty[acc.consumer_stage], transaction_bytes=0, target_rank=0
                )
            acc.consumer_advance()
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> dict:
    tiles = cdiv(problem.m, BLOCK_M * CLUSTER_M) * cdiv(problem.n, BLOCK_N)
    return dict(num_clusters=max(1, min(num_sms // CLUSTER_M, tiles)), group=GROUP, raster_n=False)


KERNEL = TilusKernel(
    spec(__name__),
    script=R6Cluster2,
    plan=plan,
    notes=(
        "TMEM accumulators passed to role methods inside a tilus.Class: 0.2.0's inlined methods "
        "take no TMemoryTensor parameter",
        "remote barrier arrive spelled arrive_and_expect_tx_remote(..., 0 bytes): 0.2.0's plain "
        "arrive is CTA-local only",
    ),
)
