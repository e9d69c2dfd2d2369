"""Tilus · sm_90a · rung 4 ``persistent`` — one CTA per SM looping over tiles in L2 order.

One warpgroup per CTA issues both TMA and wgmma (no warp specialization yet), 128x128x64 tiles
through a 4-stage ring.

Changes from rung 3 (``pipelined``):
  * the grid is min(#SMs, #tiles) CTAs; each walks tiles ``t = blockIdx, blockIdx + #CTAs, ...``
    mapped to (tile_m, tile_n) by ``GroupedOrder`` in bands of ``GROUP_M`` tile rows
    (``_schedule.py``) so A and B stripes are reused from L2;
  * the ring state (load stage; consume stage and phase) carries across tiles, and the
    epilogue's TMA store is left in flight: ``tma.wait_group(0, read=True)`` just before the
    *next* tile rewrites ``sc`` lets the store drain under the next tile's prologue loads and
    main loop.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A stage 128x64x2 = 16 KiB, B stage 128x64x2 = 16 KiB -> 32 KiB per stage;
  4 stages = 128 KiB; epilogue tile 128x128x2 = 32 KiB; total 160 KiB + barriers < 227 KiB.

Barriers (per stage s):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full[s]`` | 1 + tx bytes | 1 thread's expect; TMA | the warpgroup | stage s landed |

There is no "empty" barrier: the same instruction stream refills a stage right after
``wgmma.wait_group(1)`` has retired the wgmma that read it. A CTA barrier sits between that
wait and the refill, so that every warp has retired its part of that wgmma and has passed its
wait on the stage's previous phase before warp 0 re-arms the barrier and overwrites the stage;
across tiles the epilogue's CTA barriers do the same for the next tile's prologue. The
consumer's phase starts at 0 (``consumer_initial_phase``) and flips when the stage index wraps.
"""

import tilus
from tilus import GlobalTensor, RegisterTensor, SharedTensor, float32, int32, uint32, void_p

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._schedule import GroupedOrder
from backends.tilus._workarounds import cdiv
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64
NUM_STAGES = 4
GROUP_M = 8  # tile rows per L2 group


class R4Persistent(tilus.Script):
    def __init__(self, dtype, num_ctas: int):
        super().__init__()
        self.dtype = dtype
        self.num_ctas = num_ctas

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
        self.attrs.warps = 4

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_N])

        # -- barriers --
        ab_full = self.mbarrier.alloc([1 for _ in range(NUM_STAGES)])  # the expect; tx bytes

        # -- one warpgroup: loads, wgmma, epilogue --
        order = GroupedOrder(cdiv(m_size, BLOCK_M), cdiv(n_size, BLOCK_N), GROUP_M, False)
        k_tiles = cdiv(k_size, BLOCK_K)
        load_stage: int32 = 0  # next stage to fill
        stage: int32 = 0  # next stage to consume
        phase: uint32 = self.mbarrier.consumer_initial_phase
        for t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
            tile_m, tile_n = order.coords(t)
            off_m = tile_m * BLOCK_M
            off_n = tile_n * BLOCK_N
            # Prologue: NUM_STAGES - 1 loads ahead (the last slot is refilled in the loop).
            for kk in self.range(NUM_STAGES - 1, unroll="all"):
                if kk < k_tiles:
                    self.load(ga, gb, sa, sb, ab_full, load_stage, off_m, off_n, kk * BLOCK_K)
                    load_stage = (load_stage + 1) % NUM_STAGES
            acc = self.register_tensor(dtype=float32, shape=[BLOCK_M, BLOCK_N], init=0.0)
            for kk in self.range(k_tiles):
                self.mbarrier.wait(ab_full[stage], phase=phase)
                self.wgmma.fence()
                self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)
                self.wgmma.commit_group()
                # Once only the newest wgmma is outstanding, the previous stage is no longer
                # read: it is the slot the load NUM_STAGES - 1 steps ahead goes into.
                self.wgmma.wait_group(1)
                if kk + (NUM_STAGES - 1) < k_tiles:
                    self.sync()  # every warp retired that wgmma and passed its wait (see above)
                    next_k = (kk + (NUM_STAGES - 1)) * BLOCK_K
                    self.load(ga, gb, sa, sb, ab_full, load_stage, off_m, off_n, next_k)
                    load_stage = (load_stage + 1) % NUM_STAGES
                stage = (stage + 1) % NUM_STAGES
                phase = phase ^ (stage == 0)
            self.wgmma.wait_group(0)

            # -- epilogue: registers -> shared -> TMA store --
            # The previous tile's store must have read sc before it is overwritten; waiting
            # here rather than right after issuing it lets that store overlap this main loop.
            with self.single_warp():
                self.tma.wait_group(0, read=True)
            self.sync()
            self.store_shared(sc, self.cast(acc, dtype=self.dtype))
            self.fence.proxy_async(space="shared")  # generic-proxy stores -> the TMA's reads
            self.sync()  # every thread's stores are in before the TMA reads them
            with self.single_warp():
                self.tma.shared_to_global(sc, gc, offsets=[off_m, off_n])
                self.tma.commit_group()
        with self.single_warp():
            self.tma.wait_group(0)  # the last store is complete before the CTA exits

    # -- one K step's loads: one thread expects the bytes, warp 0 issues the TMA ---------------
    def load(
        self,
        ga: GlobalTensor,
        gb: GlobalTensor,
        sa: SharedTensor,
        sb: SharedTensor,
        ab_full: RegisterTensor,
        stage: int32,
        off_m: int32,
        off_n: int32,
        off_k: int32,
    ):
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(ab_full[stage], sa[0].nbytes + sb[0].nbytes)
        with self.single_warp():
            self.tma.global_to_shared(
                src=ga, dst=sa[stage], offsets=[off_m, off_k], mbarrier=ab_full[stage]
            )
            self.tma.global_to_shared(
                src=gb, dst=sb[stage], offsets=[off_n, off_k], mbarrier=ab_full[stage]
            )


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> dict:
    tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    return dict(num_ctas=max(1, min(num_sms, tiles)))


KERNEL = TilusKernel(spec(__name__), script=R4Persistent, plan=plan)
