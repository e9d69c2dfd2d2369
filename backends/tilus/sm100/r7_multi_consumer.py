"""Tilus · sm_100a · rung 7 ``multi_consumer`` — the final Blackwell kernel (the seed's V6).

Blackwell, 2-CTA clusters (``tcgen05.mma.cta_group::2``) over 256x256 cluster tiles, tiles
handed out by cluster launch control, and a pipelined TMEM epilogue. Compiled and inspected
here (no Blackwell GPU to run on). The rung's name comes from the Hopper chain (two consumer
warpgroups sharing B); on Blackwell it is the Tilus seed's final kernel (V6), which keeps one
epilogue warpgroup and one accumulator per CTA (``NUM_CONSUMERS = 1``) and instead adds
dynamic scheduling and a pipelined epilogue.

Changes from rung 6 (``cluster2``):
  * cluster launch control (CLC) replaces the static persistent stride: the grid is one cluster
    per cluster tile; a cluster starts on its own tile (``blockIdx.x // 2``) and CTA 0's
    scheduler warp then asks the hardware for more (``clusterlaunchcontrol.try_cancel``: cancel
    a cluster that has not launched yet and take its tile). The 16-byte response is multicast
    into both CTAs; every role of both CTAs reads it from its own CTA (``query_cancel``: valid?
    first CTA id -> cluster index -> (tile_m, tile_n) by the same L2-grouped order) and stops
    at the first failed request. Idle SMs steal work instead of waiting on a fixed stride;
  * a scheduler warp (warp 6) and the ``clc`` pipeline (1 response slot, as in the seed: the
    roles run at most one tile apart anyway, bounded by the two TMEM buffers);
  * pipelined TMEM epilogue: two 128x32 store buffers, so the TMA store of chunk j overlaps the
    ``tcgen05.ld`` and conversion of chunk j+1 (``wait_group(1)`` instead of draining every
    store), and the TMEM buffer is handed back to the MMA warp as soon as its last chunk is in
    registers, before the last stores drain.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A 128x64x2 = 16 KiB + B half 128x64x2 = 16 KiB = 32 KiB per stage; 6 stages = 192 KiB;
  epilogue 2 x 128x32x2 = 16 KiB; CLC response 16 B; total 208 KiB + barriers < 227 KiB.
Tensor memory per CTA: 2 buffers x 256 fp32 columns (128 lanes) = 512 columns, all of it.

Warps: 0-3 epilogue (a warpgroup: warp w reads TMEM lanes 32w..32w+31), 4 TMA, 5 MMA (CTA 0),
6 scheduler (requests from CTA 0).

Barriers (``s`` a shared-memory stage, ``b`` a TMEM buffer; "CTA 0" = one barrier in CTA 0 that
both CTAs arrive on; the same barrier in CTA 1 is unused):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab.full[s]`` | CTA 0: 2 + tx | each TMA warp (its bytes); TMA | CTA 0's MMA | both halves in |
  | ``ab.empty[s]`` | 1 | CTA 0's commit (multicast) | own TMA warp | MMAs read stage s |
  | ``acc.full[b]`` | 1 | CTA 0's commit after a tile (multicast) | own epilogue | buffer b final |
  | ``acc.empty[b]`` | CTA 0: 2 | one thread of each epilogue | CTA 0's MMA | b drained in both |
  | ``clc.full[0]`` | 1 + 16 B | CTA 0's scheduler (expect); CLC | own 4 roles | next tile in |
  | ``clc.empty[0]`` | CTA 0: 8 | one thread per role, both CTAs | CTA 0's scheduler | slot read |

("commit" = ``tcgen05.commit.cta_group::2`` with ``multicast_mask=0b11``: it arrives on the
barrier at the same offset in both CTAs once the MMAs issued before it have completed; "expect"
= an arrive with expect-tx; every arrive on a CTA-0 barrier from CTA 1 is a remote arrive.)

Starting phases are explained in ``_pipeline.py``. Both CTAs walk the same tiles (each reads
the same multicast response) and the same K loop. Barrier inits are made visible cluster-wide
by a cluster barrier before any role starts; a cluster barrier precedes the TMEM dealloc and
exit (CTA 0's last, failing request still writes into CTA 1, which waits for it).
"""

from dataclasses import dataclass

import tilus
from tilus import GlobalTensor, SharedTensor, int32, void_p

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._schedule import GroupedOrder
from backends.tilus._workarounds import cdiv
from backends.tilus.sm100._pipeline import Pipeline, TmemAccumulators
from harness.protocol import ConfigSpace, KernelConfig, Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128  # rows per CTA; the cta_group::2 MMA covers both CTAs' 256
BLOCK_N = 256
BLOCK_K = 64  # one 128-byte swizzle atom of fp16/bf16
NUM_STAGES = 6  # shared-memory ring depth (budget above)
ACC_STAGES = 2  # TMEM accumulator buffers
EPI_N = 32  # epilogue chunk width (columns per tcgen05.ld / TMA store)
EPI_STAGES = 2  # epilogue store buffers in flight
NUM_CHUNKS = BLOCK_N // EPI_N
CLC_STAGES = 1  # CLC response slots
NUM_CONSUMERS = 1  # one epilogue warpgroup per CTA (the seed's V6)
CLUSTER_M = 2  # CTAs per cluster, stacked along M
HALF_N = BLOCK_N // CLUSTER_M  # B rows each CTA loads
NUM_ROLES = 4  # epilogue, TMA, MMA, scheduler: each reads every CLC response
EPI_WARP, TMA_WARP, MMA_WARP, SCHED_WARP = 0, 4, 5, 6  # first warp of each role
NUM_WARPS = 7


class R7MultiConsumer(tilus.Script):
    def __init__(self, dtype, group: int, raster_n: bool):
        super().__init__()
        self.dtype = dtype
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
        num_m, num_n = cdiv(m_size, BLOCK_M * CLUSTER_M), cdiv(n_size, BLOCK_N)
        # One cluster per cluster tile: CLC lets running clusters take the ones not launched yet.
        self.attrs.blocks = num_m * num_n * CLUSTER_M
        self.attrs.cluster_blocks = CLUSTER_M
        self.attrs.warps = NUM_WARPS

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory and tensor-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, HALF_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[EPI_STAGES, BLOCK_M, EPI_N])
        response = self.shared_tensor(dtype=int32, shape=[CLC_STAGES, 4])  # 16 B per slot
        accs = TmemAccumulators(ACC_STAGES, BLOCK_M, BLOCK_N, cta_group=2)

        # -- barriers (counts and arrivals in the table above) --
        ab = Pipeline(NUM_STAGES, full_count=CLUSTER_M, empty_count=1)
        acc = Pipeline(ACC_STAGES, full_count=1, empty_count=CLUSTER_M)
        clc = Pipeline(CLC_STAGES, full_count=1, empty_count=NUM_ROLES * CLUSTER_M)
        # The peer arrives on our barriers: every init must be visible cluster-wide first.
        self.cluster.sync()

        rank = self.cluster.blockRank
        first = self.blockIdx.x // CLUSTER_M  # this cluster's own tile
        order = GroupedOrder(num_m, num_n, self.group, self.raster_n)

        # -- roles --
        with self.single_warp(TMA_WARP):
            self.load(ga, gb, sa, sb, response, ab, clc, order, rank, first, k_size)
        with self.single_warp(MMA_WARP):
            self.mma(sa, sb, accs, response, ab, acc, clc, rank, k_size)
        with self.single_warp(SCHED_WARP):
            self.schedule(response, clc, rank)
        with self.warp_group(warp_begin=EPI_WARP, num_warps=4):
            self.epilogue(gc, sc, accs, response, acc, clc, order, rank, first)

        # The peer may still arrive on our barriers and CTA 0's last MMAs read both CTAs'
        # shared memory: leave together, then free TMEM (both CTAs: cta_group::2).
        self.cluster.sync()
        self.tcgen05.dealloc(accs.tmem)

    def next_tile(self, response: SharedTensor, clc: Pipeline):
        """Read the next CLC response: (a tile was taken?, its cluster index). Every role of both
        CTAs calls this once per tile; one thread per role then frees the slot in CTA 0 (a
        remote 0-byte expect-tx arrive: Tilus 0.2.0's plain arrive is CTA-local only)."""
        clc.consumer_acquire()
        taken, first_cta = self.clc.query_response(response[clc.consumer_stage])
        self.sync()  # every thread of the role has read the slot
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx_remote(
                clc.empty[clc.consumer_stage], transaction_bytes=0, target_rank=0, sem="relaxed"
            )
        clc.consumer_advance()
        return taken, first_cta.x // CLUSTER_M

    # -- TMA warp: this CTA's halves of A and B, counted on CTA 0's barrier --------------------
    def load(
        self,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        response: SharedTensor,
        ab: Pipeline,
        clc: Pipeline,
        order: GroupedOrder,
        rank: int32,
        first: int32,
        k_size: int32,
    ):
        t: int32 = first
        while True:
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
            taken, t = self.next_tile(response, clc)
            if not taken:
                break

    # -- MMA warp (CTA 0 issues; CTA 1's only follows the responses) ---------------------------
    def mma(
        self,
        sa: SharedTensor,
        sb: SharedTensor,
        accs: TmemAccumulators,
        response: SharedTensor,
        ab: Pipeline,
        acc: Pipeline,
        clc: Pipeline,
        rank: int32,
        k_size: int32,
    ):
        while True:
            if rank == 0:
                acc.producer_acquire()  # both epilogues have drained this buffer
                for off_k in self.range(0, k_size, BLOCK_K):
                    ab.consumer_acquire()  # both CTAs' halves of the stage are in
                    s = ab.consumer_stage
                    # Operands are this CTA's: the cta_group::2 MMA reads the peer's at the
                    # same shared-memory offsets and writes both CTAs' TMEM.
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
            taken, _ = self.next_tile(response, clc)
            if not taken:
                break

    # -- scheduler warp: CTA 0 requests the next tile for the pair -----------------------------
    def schedule(self, response: SharedTensor, clc: Pipeline, rank: int32):
        while True:
            if rank == 0:
                clc.producer_acquire()  # every role of both CTAs has read the slot
                s = clc.producer_stage
                # One elected thread per CTA expects the 16 response bytes on that CTA's
                # clc.full[s] (try_cancel itself only completes the bytes).
                self.mbarrier.arrive_and_expect_tx_multicast(
                    clc.full[s], transaction_bytes=16, multicast_mask=0b11, sem="relaxed"
                )
                self.clc.try_cancel(response[s], mbarrier=clc.full[s], multicast=True)
                clc.producer_advance()
            # A failed request ends the loop: issuing another after one failed is undefined.
            taken, _ = self.next_tile(response, clc)
            if not taken:
                break

    # -- epilogue warpgroup: TMEM -> registers -> shared -> TMA store, two chunks in flight ----
    def epilogue(
        self,
        gc: GlobalTensor,
        sc: SharedTensor,
        accs: TmemAccumulators,
        response: SharedTensor,
        acc: Pipeline,
        clc: Pipeline,
        order: GroupedOrder,
        rank: int32,
        first: int32,
    ):
        t: int32 = first
        while True:
            tile_m, tile_n = order.coords(t)
            off_m = (tile_m * CLUSTER_M + rank) * BLOCK_M
            acc.consumer_acquire()
            buf = accs.tmem[acc.consumer_stage]
            for j in self.range(NUM_CHUNKS):
                chunk = self.tcgen05.slice(
                    buf, offsets=[0, j * EPI_N], dims=[0, 1], shape=[BLOCK_M, EPI_N]
                )
                r = self.tcgen05.load(chunk)
                self.tcgen05.wait_load()
                with self.single_warp():
                    # The store that read sc[j % 2] two chunks ago is done with it (the one
                    # issued last chunk may still run: it overlaps this chunk's work).
                    self.tma.wait_group(EPI_STAGES - 1, read=True)
                self.sync()  # sc[j % 2] is free, and every thread's chunk-j load is done
                if j == NUM_CHUNKS - 1:
                    # The whole buffer is in registers or stored: hand it back to CTA 0's MMA
                    # warp now, before the last stores drain.
                    with self.single_thread():
                        self.mbarrier.arrive_and_expect_tx_remote(
                            acc.empty[acc.consumer_stage], transaction_bytes=0, target_rank=0
                        )
                self.store_shared(sc[j % EPI_STAGES], self.cast(r, dtype=self.dtype))
                self.fence.proxy_async(space="shared")
                self.sync()  # every thread's stores are in before the TMA reads them
                with self.single_warp():
                    self.tma.shared_to_global(
                        sc[j % EPI_STAGES], gc, offsets=[off_m, tile_n * BLOCK_N + j * EPI_N]
                    )
                    self.tma.commit_group()
            acc.consumer_advance()
            taken, t = self.next_tile(response, clc)
            if not taken:
                break
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits


# -- configs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class R7Config(KernelConfig):
    """Rung 7's knobs: the L2 grouping of the tile order (``group`` cluster-tile rows, or
    columns with ``raster="n"``). CLC hands out cluster indices; the order maps them to tiles."""

    group: int = 8
    raster: str = "m"


MENU = tuple(R7Config(group, raster) for group in (4, 8, 16) for raster in ("m", "n"))


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int, config: R7Config) -> dict:
    # The grid is one cluster per cluster tile whatever the SM count: CLC balances the load.
    return dict(group=config.group, raster_n=config.raster == "n")


KERNEL = TilusKernel(
    spec(__name__),
    script=R7MultiConsumer,
    plan=plan,
    space=ConfigSpace(MENU, lambda problem: R7Config(), module=__name__),
    notes=(
        "TMEM accumulators passed to role methods inside a tilus.Class: 0.2.0's inlined methods "
        "take no TMemoryTensor parameter",
        "remote barrier arrive spelled arrive_and_expect_tx_remote(..., 0 bytes): 0.2.0's plain "
        "arrive is CTA-local only",
        "try_cancel needs an explicit expect-tx of 16 bytes (its 0.2.0 docstring says it arrives "
        "itself; the PTX and the seed's V6 say it only completes the bytes)",
    ),
)
