"""Tilus · sm_100a · rung 5 ``warp_specialized`` — persistent, one CTA, TMEM double buffer.

Blackwell, one CTA per SM walking 128x256 output tiles in an L2-grouped order (grid = #SMs,
static stride). Compiled and inspected here (no Blackwell GPU to run on).

Changes from rung 4 (``persistent``; the Blackwell chain starts here, so the step is read
against the Hopper rung 4 — its tile loop, L2-grouped order and TMA ring stay):
  * warp specialization: one warp issues every TMA load, one warp issues every ``tcgen05.mma``
    (a single thread's instruction: the accumulator lives in tensor memory, not registers), and
    a 4-warp epilogue warpgroup drains the accumulator; no ``setmaxnreg`` (the MMA warp holds no
    accumulator, so no role needs a large register file);
  * full/empty TMA pipeline (``ab``): the MMA warp frees a stage with ``tcgen05.commit`` on its
    ``empty`` barrier, which fires once the MMAs that read the stage are done;
  * the accumulator is double-buffered in TMEM (``acc``, 2 buffers): the MMA warp computes tile
    i+1 into one buffer while the epilogue drains tile i from the other;
  * epilogue: ``tcgen05.ld`` of a 128x32 column chunk -> registers -> fp16/bf16 -> shared ->
    TMA store, eight chunks per tile, each store drained before the next chunk is written.

Shared memory (fp16/bf16, 2 bytes):
  A 128x64x2 = 16 KiB + B 256x64x2 = 32 KiB = 48 KiB per stage; 4 stages = 192 KiB;
  epilogue chunk 128x32x2 = 8 KiB; total 200 KiB + barriers < 227 KiB (5 stages: 248 KiB).
Tensor memory: 2 buffers x 256 fp32 columns (128 lanes) = 512 columns, all of it.

Warps: 0-3 epilogue (a warpgroup: warp w reads TMEM lanes 32w..32w+31), 4 TMA, 5 MMA.

Barriers (one CTA; ``s`` a shared-memory stage, ``b`` a TMEM buffer):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab.full[s]`` | 1 + tx bytes | TMA warp (expect A + B bytes); TMA | MMA warp | stage s in |
  | ``ab.empty[s]`` | 1 | MMA warp's commit | TMA warp | MMAs reading stage s done |
  | ``acc.full[b]`` | 1 | MMA warp's commit after a tile's last MMA | epilogue | buffer b final |
  | ``acc.empty[b]`` | 1 | one epilogue thread, every chunk read | MMA warp | buffer b drained |

("commit" = ``tcgen05.commit``: it arrives once the MMAs issued before it have completed.)

Starting phases are explained in ``_pipeline.py``. All three roles walk the same tile sequence
(``t = blockIdx.x, blockIdx.x + num_ctas, ...``) and the same K loop.
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
BLOCK_M = 128  # rows per tile: the m128 tcgen05.mma (cta_group::1)
BLOCK_N = 256
BLOCK_K = 64  # one 128-byte swizzle atom of fp16/bf16
NUM_STAGES = 4  # shared-memory ring depth (budget above)
ACC_STAGES = 2  # TMEM accumulator buffers
EPI_N = 32  # epilogue chunk width (columns per tcgen05.ld / TMA store)
CLUSTER_M = 1  # no cluster yet
GROUP = 8  # tile rows per L2 group of the tile order
EPI_WARP, TMA_WARP, MMA_WARP = 0, 4, 5  # first warp of each role
NUM_WARPS = 6


class R5WarpSpecialized(tilus.Script):
    def __init__(self, dtype, num_ctas: int, group: int, raster_n: bool):
        super().__init__()
        self.dtype = dtype
        self.num_ctas = num_ctas
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
        self.attrs.blocks = self.num_ctas
        self.attrs.warps = NUM_WARPS

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory and tensor-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, EPI_N])
        accs = TmemAccumulators(ACC_STAGES, BLOCK_M, BLOCK_N, cta_group=1)

        # -- barriers (counts and arrivals in the table above) --
        ab = Pipeline(NUM_STAGES, full_count=1, empty_count=1)
        acc = Pipeline(ACC_STAGES, full_count=1, empty_count=1)

        order = GroupedOrder(
            cdiv(m_size, BLOCK_M), cdiv(n_size, BLOCK_N), self.group, self.raster_n
        )

        # -- roles --
        with self.single_warp(TMA_WARP):
            self.load(ga, gb, sa, sb, ab, order, k_size)
        with self.single_warp(MMA_WARP):
            self.mma(sa, sb, accs, ab, acc, order, k_size)
        with self.warp_group(warp_begin=EPI_WARP, num_warps=4):
            self.epilogue(gc, sc, accs, acc, order)

        # Every tcgen05 op has completed (the epilogue waited for the last tile): free TMEM.
        self.sync()
        self.tcgen05.dealloc(accs.tmem)

    # -- TMA warp: A and B tiles into the stage ring (Tilus 0.2.0 issues TMA at warp scope) ----
    def load(
        self,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        ab: Pipeline,
        order: GroupedOrder,
        k_size: int32,
    ):
        for t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
            tile_m, tile_n = order.coords(t)
            for off_k in self.range(0, k_size, BLOCK_K):
                ab.producer_acquire()
                s = ab.producer_stage
                with self.single_thread():
                    self.mbarrier.arrive_and_expect_tx(ab.full[s], sa[0].nbytes + sb[0].nbytes)
                self.tma.global_to_shared(
                    src=ga, dst=sa[s], offsets=[tile_m * BLOCK_M, off_k], mbarrier=ab.full[s]
                )
                self.tma.global_to_shared(
                    src=gb, dst=sb[s], offsets=[tile_n * BLOCK_N, off_k], mbarrier=ab.full[s]
                )
                ab.producer_advance()

    # -- MMA warp: one tcgen05.mma m128n256k16 x 4 per stage into the current TMEM buffer ------
    def mma(
        self,
        sa: SharedTensor,
        sb: SharedTensor,
        accs: TmemAccumulators,
        ab: Pipeline,
        acc: Pipeline,
        order: GroupedOrder,
        k_size: int32,
    ):
        for _t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
            acc.producer_acquire()  # the epilogue has drained this buffer
            for off_k in self.range(0, k_size, BLOCK_K):
                ab.consumer_acquire()
                s = ab.consumer_stage
                self.tcgen05.mma(
                    sa[s],
                    sb[s].transpose(),
                    accs.tmem[acc.producer_stage],
                    enable_input_d=off_k != 0,
                )
                # Fires when these MMAs have read stage s: the TMA warp may refill it.
                self.tcgen05.commit(mbarrier=ab.empty[s])
                ab.consumer_advance()
            # Fires when every MMA of the tile is done: the accumulator is final.
            self.tcgen05.commit(mbarrier=acc.full[acc.producer_stage])
            acc.producer_advance()

    # -- epilogue warpgroup: TMEM -> registers -> shared -> TMA store, 32 columns at a time -----
    def epilogue(
        self,
        gc: GlobalTensor,
        sc: SharedTensor,
        accs: TmemAccumulators,
        acc: Pipeline,
        order: GroupedOrder,
    ):
        for t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
            tile_m, tile_n = order.coords(t)
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
                    self.tma.shared_to_global(
                        sc, gc, offsets=[tile_m * BLOCK_M, tile_n * BLOCK_N + off_n]
                    )
                    self.tma.commit_group()
                    self.tma.wait_group(0, read=True)  # sc is read: it may be overwritten
                self.sync()
            # Every thread has waited for its last tcgen05.ld (the sync above): hand the buffer
            # back to the MMA warp.
            with self.single_thread():
                self.mbarrier.arrive(acc.empty[acc.consumer_stage])
            acc.consumer_advance()
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> dict:
    tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    return dict(num_ctas=max(1, min(num_sms, tiles)), group=GROUP, raster_n=False)


KERNEL = TilusKernel(
    spec(__name__),
    script=R5WarpSpecialized,
    plan=plan,
    notes=(
        "TMEM accumulators passed to role methods inside a tilus.Class: 0.2.0's inlined methods "
        "take no TMemoryTensor parameter",
    ),
)
