"""Hopper wgmma pieces shared by the sm_90a rungs: operand descriptors and the MMA name.

TIRx 0.27 has no tile-level Hopper MMA (``Tx.gemm_async`` dispatches only to tcgen05), so the
rungs issue ``wgmma.mma_async`` through ``T.ptx[...]`` with descriptors from
``T.cuda.wgmma.encode_matrix_descriptor`` -- the study's "raw PTX" finding for TIRx on Hopper.

Operand layout (A: BLOCK_M x 64, B: BLOCK_N x 64, both K-major, as TMA writes them with
``CU_TENSOR_MAP_SWIZZLE_128B``): every row of a 64-wide fp16/bf16 k-tile is one 128-byte swizzle
row, eight rows make a 1024-byte swizzle atom, atoms are stacked along M/N.

* ``encode_matrix_descriptor(desc, addr, lbo, sbo, swizzle)`` takes LBO/SBO already in 16-byte
  units and a TMA-style swizzle code (3 = 128 B; it writes layout type 1 into the descriptor).
* SBO = 1024 B >> 4 = 64: the distance between 8-row atoms. LBO is unused for K-major
  swizzled layouts whose k extent fits one swizzle row; 1 by convention.
* The encoder fixes ``base_offset = 0``, so every operand tile (and every 64-row half the MMA
  starts at) must sit on a 1024-byte boundary: the shared-memory plans align each stage to 1024.
* The k16 step inside the atom adds 16 elements x 2 B = 32 B to the start address (the
  descriptor's address field is in 16-byte units: +2), i.e. ``ptr_to([kk * 16])``.
* Every descriptor of a k-tile differs from its buffer's *base* descriptor (element 0) only in
  the start-address field, bits 0-13 of the low word: the rungs encode the two bases once
  (:func:`descriptor_bases`), offset them to the stage *before* waiting on its ``full``
  barrier (:func:`offset_descriptor`), and the k-tile step adds each k16 step's offset to the
  low word, as CUTLASS's descriptor iterator does. Shared memory is < 256 KiB, so the 14-bit
  field never carries into LBO. Encoding each descriptor from its pointer after the wait
  instead (64-bit generic -> shared address, shift, mask, or) put ~7 dependent
  uniform-datapath instructions in front of every ``wgmma``, the first of them on the path from
  the data landing to the first MMA (Nsight Compute, rung 7: 34 % more instructions issued
  than Tilus's rung 7; no measurable time, the producer was what cost it).

Accumulator fragment of ``m64nNk16`` (fp32, N/2 registers per thread, thread t of the
warpgroup, warp w = t // 32, lane l = t % 32): register ``4*j + q`` holds
row ``16*w + l//4 + 8*(q//2)``, column ``8*j + 2*(l%4) + q%2``, for j in 0..N/8-1.
"""

from __future__ import annotations

from typing import Any

#: TMA-style swizzle code for 128-byte swizzle (encoder maps it to descriptor layout type 1).
SWIZZLE_128B = 3
#: Stride byte offset between 8-row swizzle atoms: 1024 B in 16-byte units.
SBO_128B = 64

_PTX_TYPE = {"float16": "f16", "bfloat16": "bf16"}


def mma_op(n: int, dtype: str) -> str:
    """``wgmma.mma_async`` for an m64 x n x k16 step with fp32 accumulators."""
    ab = _PTX_TYPE[dtype]
    return f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab}"


def descriptor_bases():
    """Macro ``(desc_a, desc_b, A_smem, B_smem)``: encode the base descriptors (element 0 of
    each operand buffer, 128-byte swizzle, SBO 1024 B) once, before the main loop (module
    docstring)."""
    from tvm.script import tirx as T

    @T.macro
    def encode(desc_a, desc_b, A_smem, B_smem):
        T.cuda.wgmma.encode_matrix_descriptor(
            T.address_of(desc_a), A_smem.ptr_to([0]), 1, SBO_128B, SWIZZLE_128B
        )
        T.cuda.wgmma.encode_matrix_descriptor(
            T.address_of(desc_b), B_smem.ptr_to([0]), 1, SBO_128B, SWIZZLE_128B
        )

    return encode


def offset_descriptor(base: Any, elements: Any) -> Any:
    """The descriptor of the operand ``elements`` (2-byte, a multiple of 8) past the one
    ``base`` describes: a 32-bit add to the start-address field (16-byte units) in the low
    word; the high word (SBO, layout type) is kept as is."""
    from tvm.script import tirx as T

    low = T.Cast("uint32", base) + T.Cast("uint32", elements // 8)
    high = T.shift_left(T.shift_right(base, T.uint64(32)), T.uint64(32))
    return T.bitwise_or(high, T.Cast("uint64", low))


def k_tile_step(mma: str, halves: int, regs: int, block_k: int):
    """The consumer's step for one k-tile, the mechanism rung 3 introduced and every later rung
    repeats: fence the accumulators, issue ``block_k / 16`` MMAs per 64-row half, commit, keep
    one batch in flight (``wait_group 1``), fence again. ``desc_a`` / ``desc_b`` describe the
    stage's first A rows and its B tile (:func:`offset_descriptor`). ``regs`` accumulator
    registers per half (N / 2 of m64nNk16); the first k-tile of an output tile (``kt == 0``)
    overwrites the accumulators instead of adding to them.

    The two accumulator fences are ``_workarounds.ACC_FENCE`` (the replacement for
    ``noop_barrier``): after ``wgmma.fence`` so the MMAs read the registers' current values, and
    after the wait so no read of a retired accumulator moves above it.
    """
    from tvm.script import tirx as T

    from backends.tirx._workarounds import ACC_FENCE, ACC_FENCE_SOURCE

    @T.macro
    def step(acc, desc_a, desc_b, kt):
        T.ptx.wgmma.fence.sync.aligned()
        for i in T.unroll(halves * regs):
            T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)
        for h in T.unroll(halves):
            for kk in T.unroll(block_k // 16):
                T.ptx[mma](*[acc[h * regs + i] for i in range(regs)],
                           offset_descriptor(desc_a, h * 64 * block_k + kk * 16),
                           offset_descriptor(desc_b, kk * 16),
                           T.Or(kt > 0, kk > 0), 1, 1, 0, 0)  # fmt: skip
        T.ptx.wgmma.commit_group.sync.aligned()
        T.ptx.wgmma.wait_group.sync.aligned(1)
        for i in T.unroll(halves * regs):
            T.cuda.func_call(ACC_FENCE, acc[i], source_code=ACC_FENCE_SOURCE)

    return step


def fragment_store(halves: int, block_n: int, panel_rows: int, dtype: str):
    """The epilogue's register -> shared step every TMA-store rung shares: cast the m64nNk16
    accumulator fragment (``halves`` 64-row halves, ``block_n`` columns; layout in the module
    docstring) to packed pairs and write it with ``stmatrix`` into 64-column, 128-byte-swizzled
    panels of ``panel_rows`` rows starting at element ``base`` of ``D_smem`` -- the layout the
    TMA store's tensor map reads.

    One ``stmatrix.m8n8.x4`` stores four 8x8 matrices; thread t's register ``i`` is row t // 4,
    columns 2 (t % 4) and 2 (t % 4) + 1 of matrix ``i`` -- exactly the fragment's (q = 0, 1) and
    (q = 2, 3) pairs of one 8-column group ``j``. So column groups ``j`` and ``j + 1`` of a
    warp's 16 rows are one instruction (``block_n / 16`` per half, against ``block_n / 2``
    32-bit ``st.shared``), and lane l gives the address of row ``l % 8`` of matrix ``l // 8``.
    Each matrix row is one 16-byte chunk; the XOR of the chunk index with ``row % 8`` is the
    128-byte swizzle, which also keeps the eight rows of a matrix in distinct banks."""
    from tvm.script import tirx as T

    cvt = f"cvt.rn.{_PTX_TYPE[dtype]}x2.f32"

    @T.macro
    def store(D_smem, acc, base, warp, lane):
        packed = T.alloc_buffer((4,), "uint32", scope="local")
        for h in T.unroll(halves):
            for jp in T.unroll(block_n // 16):
                for i in T.unroll(4):
                    # cvt's first source is the upper half: the odd column goes first
                    T.ptx[cvt](packed[i], acc[h * (block_n // 2) + jp * 8 + i * 2 + 1],
                               acc[h * (block_n // 2) + jp * 8 + i * 2])  # fmt: skip
                m = T.meta_var(lane // 8)  # the matrix this lane addresses
                row = T.meta_var(h * 64 + warp * 16 + (m % 2) * 8 + lane % 8)
                j = T.meta_var(jp * 2 + m // 2)
                T.ptx["stmatrix.sync.aligned.m8n8.x4.shared.b16"](
                    D_smem.ptr_to([base + (j // 8) * panel_rows * 64 + row * 64
                                   + T.bitwise_xor(j % 8, lane % 8) * 8]),
                    packed[0], packed[1], packed[2], packed[3])  # fmt: skip

    return store
