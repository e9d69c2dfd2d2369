"""Tilus · sm_90a · rung 2 ``tma`` — TMA loads completing on an mbarrier; no overlap yet.

One CTA (one warpgroup) per 128x128 output tile; each K step loads A and B by TMA, waits for
them, then runs a synchronous wgmma: load and math still alternate.

Changes from rung 1 (``tiled``):
  * the threads no longer copy global -> shared themselves: one elected thread announces the
    byte count on the ``ab_full`` mbarrier (``arrive_and_expect_tx``) and warp 0 issues the two
    TMA loads (Tilus 0.2.0 issues TMA at warp scope and elects the lane itself:
    ``_workarounds.TMA_SCOPE``), which complete on that barrier;
  * TMA zero-fills reads past the matrix edge and the epilogue goes registers -> shared ->
    ``tma.shared_to_global``, which clips: any M, N >= 1 and K % 8 == 0 now work.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A tile 128x64x2 = 16 KiB, B tile 128x64x2 = 16 KiB; epilogue tile 128x128x2 = 32 KiB;
  total 64 KiB + one barrier.

Barriers:

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | 1 thread's expect; TMA | the warpgroup | this K step landed |

The phase starts at 0 (``consumer_initial_phase``) and flips after every wait. A CTA barrier
after the synchronous wgmma keeps the next K step's expect and TMA behind every thread's wait
and every warp's wgmma reads.
"""

import tilus
from tilus import float32, int32, uint32, void_p

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from backends.tilus._workarounds import cdiv
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64


class R2Tma(tilus.Script):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

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
        num_tiles_n = cdiv(n_size, BLOCK_N)
        self.attrs.blocks = cdiv(m_size, BLOCK_M) * num_tiles_n
        self.attrs.warps = 4

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_size, n_size], strides=[ldc, 1])

        # -- shared-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_N, BLOCK_K])
        sc = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_N])

        # -- barriers --
        ab_full = self.mbarrier.alloc(1)  # the expect; bytes via tx

        # -- one warpgroup: loads, wgmma, epilogue --
        off_m = self.blockIdx.x // num_tiles_n * BLOCK_M
        off_n = self.blockIdx.x % num_tiles_n * BLOCK_N
        phase: uint32 = self.mbarrier.consumer_initial_phase
        acc = self.register_tensor(dtype=float32, shape=[BLOCK_M, BLOCK_N], init=0.0)
        for off_k in self.range(0, k_size, BLOCK_K):
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx(ab_full, sa.nbytes + sb.nbytes)
            with self.single_warp():
                self.tma.global_to_shared(src=ga, dst=sa, offsets=[off_m, off_k], mbarrier=ab_full)
                self.tma.global_to_shared(src=gb, dst=sb, offsets=[off_n, off_k], mbarrier=ab_full)
            self.mbarrier.wait(ab_full, phase=phase)
            phase = phase ^ 1
            self.wgmma.fence()
            self.wgmma.mma(sa, sb.transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(0)  # synchronous: the tiles are free again
            self.sync()  # every thread waited and every warp's wgmma read before the next TMA

        # -- epilogue: registers -> shared -> TMA store --
        self.store_shared(sc, self.cast(acc, dtype=self.dtype))
        self.fence.proxy_async(space="shared")  # generic-proxy stores -> the TMA's reads
        self.sync()  # every thread's stores are in before the TMA reads them
        with self.single_warp():
            self.tma.shared_to_global(sc, gc, offsets=[off_m, off_n])
            self.tma.commit_group()
            self.tma.wait_group(0)  # the store is complete before the CTA exits


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int) -> dict:
    return {}


KERNEL = TilusKernel(spec(__name__), script=R2Tma, plan=plan)
