"""Tilus · sm_90a · rung 1 ``tiled`` — one CTA per tile, threads copy, tensor-core MMA.

One CTA (one warpgroup, 128 threads) per 128x128 output tile. Each K step the threads load the
A and B tiles from global memory into registers (``load_global``), store them into shared
memory (``store_shared``; Tilus picks the swizzled layout wgmma reads), and a synchronous
wgmma multiplies them: issued, committed and waited for before the next copy. No asynchronous
copies, no overlap. The baseline.

Changes from rung 0 (cuBLAS): everything — this is the first hand-written kernel.

Demands M % 128 == N % 128 == 0 and K % 64 == 0 (``supports`` says so): the kernel sees the
sizes rounded down to whole tiles, which is what lets Tilus's divisibility analysis vectorize
the copies to 16 bytes (one bounds mask per vector, not per element); rung 2's TMA brings edge
handling.

Shared memory per CTA (fp16/bf16, 2 bytes):
  A tile 128x64x2 = 16 KiB, B tile 128x64x2 = 16 KiB; total 32 KiB.

Barriers: none but the CTA barrier (``self.sync()``, all 128 threads) between the threads'
stores and the wgmma that reads them, and after the wgmma before the next K step's stores. The
threads' stores go through the generic proxy and wgmma reads through the async proxy, so a
``fence.proxy.async`` precedes the first of those barriers.
"""

import tilus
from tilus import float32, int32, void_p

from backends.tilus import spec
from backends.tilus._host import TilusKernel
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64


class R1Tiled(tilus.Script):
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
        # ``supports`` demands tile multiples; rounding the sizes down to them (a no-op then)
        # tells Tilus's divisibility analysis so, and the copies become 16-byte vectors.
        # (``self.assume(k_size % 64 == 0)`` would say it directly, but Tilus 0.2.0 takes the gcd
        # with the JIT's divisibility of 1, so an assume is lost; fixed upstream with the lcm.)
        m_rows = m_size // BLOCK_M * BLOCK_M
        n_rows = n_size // BLOCK_N * BLOCK_N
        k_cols = k_size // BLOCK_K * BLOCK_K
        num_tiles_n = n_rows // BLOCK_N
        self.attrs.blocks = (m_rows // BLOCK_M) * num_tiles_n
        self.attrs.warps = 4

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_rows, k_cols])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_rows, k_cols])
        gc = self.global_view(c_ptr, dtype=self.dtype, shape=[m_rows, n_rows], strides=[ldc, 1])

        # -- shared-memory plan --
        sa = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_M, BLOCK_K])
        sb = self.shared_tensor(dtype=self.dtype, shape=[BLOCK_N, BLOCK_K])

        # -- one warpgroup: copies, wgmma, epilogue --
        off_m = self.blockIdx.x // num_tiles_n * BLOCK_M
        off_n = self.blockIdx.x % num_tiles_n * BLOCK_N
        # Each thread moves 8 contiguous elements (16 bytes) along K per access.
        copy_layout = self.cuda.default_register_layout(
            num_warps=4, dtype=self.dtype, shape=[BLOCK_M, BLOCK_K]
        )
        acc = self.register_tensor(dtype=float32, shape=[BLOCK_M, BLOCK_N], init=0.0)
        for off_k in self.range(0, k_cols, BLOCK_K):
            a = self.load_global(ga, offsets=[off_m, off_k], shape=[BLOCK_M, BLOCK_K])
            b = self.load_global(gb, offsets=[off_n, off_k], shape=[BLOCK_N, BLOCK_K])
            self.annotate_layout(a, copy_layout)
            self.annotate_layout(b, copy_layout)
            self.store_shared(sa, a)
            self.store_shared(sb, b)
            self.fence.proxy_async(space="shared")  # generic-proxy stores -> wgmma's reads
            self.sync()
            self.wgmma.fence()
            self.wgmma.mma(sa, sb.transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(0)  # synchronous: the tiles are free again
            self.sync()

        # -- epilogue: registers -> global, straight from the accumulator layout --
        self.store_global(gc, self.cast(acc, dtype=self.dtype), offsets=[off_m, off_n])


# -- host side ---------------------------------------------------------------------------------
def supports(problem: Problem) -> str | None:
    if problem.m % BLOCK_M or problem.n % BLOCK_N or problem.k % BLOCK_K:
        return (
            f"rung 1 needs M, N multiples of {BLOCK_M}/{BLOCK_N} and K of {BLOCK_K} "
            "(whole-tile copies)"
        )
    return None


def plan(problem: Problem, num_sms: int) -> dict:
    return {}


KERNEL = TilusKernel(spec(__name__), script=R1Tiled, plan=plan, supports=supports)
