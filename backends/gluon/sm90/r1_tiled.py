"""Gluon · sm_90a · rung 1 ``tiled`` — one CTA per tile, threads copy, tensor-core MMA.

One CTA (one warpgroup) per 128x128 output tile. Each K step the 128 threads load the A and B
tiles from global memory into registers, store them into swizzled shared memory, and a
synchronous wgmma multiplies them: no asynchronous copies, no overlap. The baseline.

Changes from rung 0 (cuBLAS): everything — this is the first hand-written kernel.

Demands M % 128 == N % 128 == 0 and K % 64 == 0 (unmasked loads and stores; rung 2's TMA
brings edge handling).

Shared memory per CTA (fp16/bf16, 2 bytes):
  A tile 128x64x2 = 16 KiB, B tile 128x64x2 = 16 KiB; total 32 KiB.

Barriers: none. Gluon's shared-memory analysis puts a CTA barrier between the threads' stores
and the wgmma that reads them, and between that wgmma and the next K step's stores; the
``fence_async_shared`` makes the generic-proxy stores visible to wgmma (async proxy).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma

from backends.gluon import spec
from backends.gluon._host import GluonKernel, Plan, Ptr, gl_dtype
from harness.protocol import Problem

# -- constants --------------------------------------------------------------------------------
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 64


@gluon.jit
def r1_tiled_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    BLOCK_K: gl.constexpr,
    smem_layout: gl.constexpr,
):
    dtype: gl.constexpr = a_ptr.dtype.element_ty
    # -- shared-memory plan --
    a_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_K], smem_layout)
    b_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, BLOCK_K], smem_layout)
    # Registers for the copy: 8 contiguous halves (16 B) per thread along K.
    copy_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, BLOCK_N, 16]
    )
    num_tiles_n = N // BLOCK_N
    tile_id = gl.program_id(0)
    off_m = (tile_id // num_tiles_n) * BLOCK_M
    off_n = (tile_id % num_tiles_n) * BLOCK_N
    rows_a = off_m + gl.arange(0, BLOCK_M, gl.SliceLayout(1, copy_layout))
    rows_b = off_n + gl.arange(0, BLOCK_N, gl.SliceLayout(1, copy_layout))
    cols = gl.arange(0, BLOCK_K, gl.SliceLayout(0, copy_layout))
    a_ptrs = a_ptr + rows_a[:, None].to(gl.int64) * K + cols[None, :]
    b_ptrs = b_ptr + rows_b[:, None].to(gl.int64) * K + cols[None, :]
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
    for k in range(0, K, BLOCK_K):
        a_smem.store(gl.load(a_ptrs + k))
        b_smem.store(gl.load(b_ptrs + k))
        fence_async_shared()  # generic-proxy smem writes -> async-proxy (wgmma) reads
        acc = warpgroup_mma(a_smem, b_smem.permute((1, 0)), acc)  # synchronous
    # -- epilogue: registers -> global, straight from the accumulator layout --
    rows_c = off_m + gl.arange(0, BLOCK_M, gl.SliceLayout(1, acc_layout))
    cols_c = off_n + gl.arange(0, BLOCK_N, gl.SliceLayout(0, acc_layout))
    gl.store(c_ptr + rows_c[:, None].to(gl.int64) * N + cols_c[None, :], acc.to(dtype))


# -- host side ---------------------------------------------------------------------------------
def supports(problem: Problem) -> str | None:
    if problem.m % BLOCK_M or problem.n % BLOCK_N or problem.k % BLOCK_K:
        return (
            f"rung 1 needs M, N multiples of {BLOCK_M}/{BLOCK_N} and K of {BLOCK_K} "
            "(unmasked copies)"
        )
    return None


def plan(problem: Problem, num_sms: int) -> Plan:
    from triton.experimental.gluon import language as gl

    layout = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl_dtype(problem.dtype))
    return Plan(
        args=(Ptr("a"), Ptr("b"), Ptr("c"), problem.m, problem.n, problem.k),
        constexprs=dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, smem_layout=layout),
        grid=((problem.m // BLOCK_M) * (problem.n // BLOCK_N),),
        num_warps=4,
    )


KERNEL = GluonKernel(
    spec(__name__),
    jit_fn=r1_tiled_kernel,
    plan=plan,
    supports=supports,
)
