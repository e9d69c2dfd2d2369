"""CuTeDSL · sm_90a · rung 1 ``tiled`` — one CTA per output tile, threads copy, tensor-core MMA.

The starting point of the chain. One CTA of one warpgroup (128 threads) computes one 128 x 128
tile of D. For each 64-wide k-tile the threads copy the A and B tiles from global to shared
memory themselves (16-byte vector loads and stores into the 128B-swizzled layout wgmma reads),
fence the generic-proxy writes for the async proxy, sync, run ``wgmma`` m64n128k16 (twice along
M, four k-blocks) with fp32 accumulators in registers, wait for it and sync again before the
next copy. No overlap between copying and computing. The epilogue converts the accumulators
and stores them straight to global memory.

No predication: the problem must be a multiple of the tile (M, N % 128 == 0, K % 64 == 0);
``supports()`` says so.

Shared-memory budget (fp16/bf16, 2 bytes):

    A tile   128 x 64 x 2            = 16 KiB
    B tile   128 x 64 x 2            = 16 KiB
    total                              32 KiB

Barriers: none but ``bar.sync`` (all 128 threads) after each copy and after each MMA.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warpgroup
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from backends.cutedsl import spec
from backends.cutedsl._host import CuteDslKernel
from backends.cutedsl._operands import operand_tensors
from harness.protocol import Problem

# -- constants -------------------------------------------------------------------------------
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64  # CTA tile
COPY_BITS = 128  # each thread moves 16 bytes per copy instruction
THREADS_PER_WG = 128
NUM_THREADS = THREADS_PER_WG  # one warpgroup loads, computes and stores


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T, thread-copy + wgmma kernel, one CTA per tile."""

    def __init__(self, num_sms: int, variant: None = None):
        self.tile_mnk = (BLOCK_M, BLOCK_N, BLOCK_K)

    # -- host: layouts, TMA descriptors, launch ----------------------------------------------
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        d_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.dtype = a_ptr.dtype
        # Row-major A, B, D over the raw pointers (``_operands.py``); this rung demands tile
        # multiples, so D's rows are always 16-byte aligned.
        mA, mB, mD = operand_tensors(a_ptr, b_ptr, d_ptr, m, n, k, True)

        # MMA: one warpgroup, m64n128k16, repeated twice along M to cover the 128-row tile.
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (1, 1, 1),
            tiler_mn=(64, BLOCK_N),
        )

        # -- shared-memory plan: one swizzled K-major A and B tile -------------------------
        row = LayoutEnum.ROW_MAJOR
        sA_layout = sm90_utils.make_smem_layout_a(row, self.tile_mnk, self.dtype, 1)
        sB_layout = sm90_utils.make_smem_layout_b(row, self.tile_mnk, self.dtype, 1)

        @cute.struct
        class SharedStorage:
            sA: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024]

        self.shared_storage = SharedStorage

        # Thread copy: 128 threads as 16 rows x 8 columns of 16-byte vectors cover 16 x 64
        # elements per instruction; 8 instructions per 128 x 64 tile.
        vec = COPY_BITS // self.dtype.width
        tiled_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(
                cute.nvgpu.CopyUniversalOp(), self.dtype, num_bits_per_copy=COPY_BITS
            ),
            cute.make_ordered_layout(
                (NUM_THREADS // (BLOCK_K // vec), BLOCK_K // vec), order=(1, 0)
            ),
            cute.make_layout((1, vec)),
        )

        # One CTA per output tile (the problem is a multiple of the tile: see supports()).
        grid = (cute.ceil_div(m, BLOCK_M), cute.ceil_div(n, BLOCK_N), 1)

        self.kernel(mA, mB, mD, tiled_copy, tiled_mma, sA_layout, sB_layout).launch(
            grid=grid,
            block=[NUM_THREADS, 1, 1],
            min_blocks_per_mp=1,
            stream=stream,
        )

    # -- device ------------------------------------------------------------------------------
    @cute.kernel
    def kernel(
        self,
        mA: cute.Tensor,
        mB: cute.Tensor,
        mD: cute.Tensor,
        tiled_copy: cute.TiledCopy,
        tiled_mma: cute.TiledMma,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        tile_m, tile_n, _ = cute.arch.block_idx()

        # -- shared memory ---------------------------------------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)

        # -- this tile's global panels and each thread's share of the copies -----------------
        gA = cute.local_tile(mA, (BLOCK_M, BLOCK_K), (tile_m, None))  # (bM, bK, RestK)
        gB = cute.local_tile(mB, (BLOCK_N, BLOCK_K), (tile_n, None))  # (bN, bK, RestK)
        gD = cute.local_tile(mD, (BLOCK_M, BLOCK_N), (tile_m, tile_n))  # (bM, bN)
        thr_copy = tiled_copy.get_slice(tidx)
        tAgA = thr_copy.partition_S(gA)
        tAsA = thr_copy.partition_D(sA[(None, None, 0)])
        tBgB = thr_copy.partition_S(gB)
        tBsB = thr_copy.partition_D(sB[(None, None, 0)])
        k_tiles = cute.size(gA, mode=[2])

        # -- MMA fragments ----------------------------------------------------------------------
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape, cutlass.Float32)
        k_blocks = cute.size(tCrA, mode=[2])

        # Mainloop: copy k-tile kt into shared memory, then multiply it; no overlap.
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        for kt in range(k_tiles):
            cute.copy(tiled_copy, tAgA[(None, None, None, kt)], tAsA)
            cute.copy(tiled_copy, tBgB[(None, None, None, kt)], tBsB)
            # The stores above are generic-proxy writes; wgmma reads shared memory through the
            # async proxy: fence in every writing thread, then sync.
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.sync_threads()
            warpgroup.fence()
            for kb in cutlass.range_constexpr(k_blocks):
                coord = (None, None, kb, 0)
                cute.gemm(tiled_mma, acc, tCrA[coord], tCrB[coord], acc)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
            cute.arch.sync_threads()  # every warp is done reading before the next copy

        # Epilogue: convert and store each thread's accumulators straight to global memory.
        tCgD = thr_mma.partition_C(gD)
        tCrD = cute.make_rmem_tensor(acc.shape, self.dtype)
        tCrD.store(acc.load().to(self.dtype))
        cute.autovec_copy(tCrD, tCgD)


def _supports(problem: Problem) -> str | None:
    if problem.m % BLOCK_M or problem.n % BLOCK_N or problem.k % BLOCK_K:
        return f"rung 1 has no edge handling: needs M, N % {BLOCK_M} == 0 and K % {BLOCK_K} == 0"
    return None


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, variant, config: Gemm(num_sms),
    rung_supports=_supports,
)
