"""Tilus · sm_90a · rung 5 ``warp_specialized`` — a TMA producer warp and a wgmma consumer.

Persistent, one CTA per SM, 128x128x64 tiles; the loads and the math run in separate warps.

Changes from rung 4 (``persistent``):
  * warp specialization: a producer warpgroup, of which one warp issues every TMA, and a
    consumer warpgroup that issues wgmma and runs the epilogue. The producer runs ahead across
    K steps *and* tiles, so the next tile's loads overlap this tile's epilogue;
  * the ring gets ``empty`` barriers: the consumer hands a stage back after the wgmma that
    read it has retired (rung 4 reused a stage implicitly, being one instruction stream);
  * register reallocation: the producer warpgroup gives its registers up (``setmaxnreg.dec``
    to 40) and the consumer takes them (``setmaxnreg.inc`` to 232).

Shared memory per CTA (fp16/bf16, 2 bytes):
  A stage 128x64x2 = 16 KiB, B stage 128x64x2 = 16 KiB -> 32 KiB per stage;
  4 stages = 128 KiB; epilogue tile 128x128x2 = 32 KiB; total 160 KiB + barriers < 227 KiB.

Warps: 0-3 the consumer warpgroup (``setmaxnreg`` 232), 4-7 the producer warpgroup
(``setmaxnreg`` 40) of which warp 4 issues every TMA (``setmaxnreg`` acts on whole
warpgroups, so the producer warp comes with three idle ones).

Barriers (per stage s):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``full[s]`` | 1 + tx bytes | producer expect (A + B); TMA | consumer | stage s landed |
  | ``empty[s]`` | 1 | consumer warpgroup (1 elected thread) | producer | stage s free |

The consumer's phase starts at 0 (``consumer_initial_phase``), the producer's at 1
(``producer_initial_phase``, explained where it is set). Both roles walk the same tile
sequence (``t = blockIdx.x, blockIdx.x + num_ctas, ...``) and the same K loop.
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
GROUP_M = 8  # tile rows per L2 group
PRODUCER_REGS = 40
CONSUMER_REGS = 232


class R5WarpSpecialized(tilus.Script):
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
        self.attrs.warps = 4 * (NUM_CONSUMERS + 1)

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[NUM_STAGES, BLOCK_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_N])

        # -- barriers --
        full = self.mbarrier.alloc([1 for _ in range(NUM_STAGES)])
        empty = self.mbarrier.alloc([NUM_CONSUMERS for _ in range(NUM_STAGES)])

        order = GroupedOrder(cdiv(m_size, BLOCK_M), cdiv(n_size, BLOCK_N), GROUP_M, False)

        # -- roles --
        with self.warp_group(warp_begin=4 * NUM_CONSUMERS, num_warps=4):
            self.producer(ga, gb, sa, sb, full, empty, order, k_size)
        with self.warp_group(warp_begin=0, num_warps=4):
            self.consumer(gc, sa, sb, sc, full, empty, order, k_size)

    def release(self, empty: RegisterTensor, stage: int32):
        """One elected thread frees ``stage``."""
        with self.single_thread():
            self.mbarrier.arrive(empty[stage])

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
        k_size: int32,
    ):
        setmaxnreg(PRODUCER_REGS, "dec")
        with self.single_warp():
            stage: int32 = 0
            # Empty barriers start in phase 0 with nothing arrived: waiting on the *previous*
            # phase (1) falls through, so the first pass finds every stage free.
            phase: uint32 = self.mbarrier.producer_initial_phase
            for t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
                tile_m, tile_n = order.coords(t)
                off_m = tile_m * BLOCK_M
                off_n = tile_n * BLOCK_N
                for off_k in self.range(0, k_size, BLOCK_K):
                    self.mbarrier.wait(empty[stage], phase=phase)
                    with self.single_thread():
                        self.mbarrier.arrive_and_expect_tx(full[stage], sa[0].nbytes + sb[0].nbytes)
                    self.tma.global_to_shared(
                        src=ga, dst=sa[stage], offsets=[off_m, off_k], mbarrier=full[stage]
                    )
                    self.tma.global_to_shared(
                        src=gb, dst=sb[stage], offsets=[off_n, off_k], mbarrier=full[stage]
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
        k_size: int32,
    ):
        setmaxnreg(CONSUMER_REGS, "inc")
        stage: int32 = 0
        phase: uint32 = self.mbarrier.consumer_initial_phase
        for t in self.range(self.blockIdx.x, order.num_tiles, self.num_ctas):
            tile_m, tile_n = order.coords(t)
            acc = self.register_tensor(dtype=float32, shape=[BLOCK_M, BLOCK_N], init=0.0)
            prev: int32 = 0
            for off_k in self.range(0, k_size, BLOCK_K):
                self.mbarrier.wait(full[stage], phase=phase)
                self.wgmma.fence()
                self.wgmma.mma(sa[stage], sb[stage].transpose(), acc)
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
            off_m = tile_m * BLOCK_M
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
    tiles = cdiv(problem.m, BLOCK_M) * cdiv(problem.n, BLOCK_N)
    return dict(num_ctas=max(1, min(num_sms, tiles)))


KERNEL = TilusKernel(
    spec(__name__),
    script=R5WarpSpecialized,
    plan=plan,
    raw_ptx=("setmaxnreg",),
    notes=("setmaxnreg through Tilus's vendored hidet primitive (no Tilus instruction in 0.2.0)",),
)
