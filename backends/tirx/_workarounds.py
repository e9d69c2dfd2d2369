"""Every TIRx (apache-tvm 0.27.0.post1) defect this backend works around, in one place.

Nothing else in ``backends/tirx`` patches or bypasses TVM. Each entry names the defect, the
symptom, and the replacement; the rung kernels call these helpers through TIRx's own escape
hatch for device code, ``T.cuda.func_call(name, *args, source_code=...)``, which pastes the
helper's CUDA source once into the generated translation unit.

1. ``T.cuda.wgmma.noop_barrier`` (the accumulator-ordering fence) is broken.
   In 0.27.0.post1 it crashes CUDA codegen (``AttributeError`` in
   ``tvm/backend/cuda/cpp/asm.py``); patched, it passes the register *by value* to its helper,
   so the empty asm orders only a copy and nothing else. Without a working fence nvcc is free
   to move accumulator reads/writes across the asynchronous ``wgmma.mma_async`` ...
   ``wgmma.wait_group`` window, and ptxas answers by serializing the MMAs (C7514,
   "wgmma serialized", printed as an info line) or, worse, by reading an accumulator before
   the MMA wrote it.
   Upstream: the op exists in ``tvm/backend/cuda/op.py`` (``cuda_wgmma_noop_barrier``); no
   fix was found in apache/tvm at the time of writing (2026-11; check before relying on it).

   Replacement: :data:`ACC_FENCE` / :data:`ACC_FENCE_SOURCE`, a device helper that takes one
   accumulator element **by reference** and runs an empty ``asm volatile`` with a ``"+f"``
   constraint (CUTLASS's ``warpgroup_fence_operand``). Why it is sound: ``"+f"`` makes the
   register both an input and an output of a volatile asm statement, so the compiler must
   materialize the accumulator's current value in that register before the statement and
   must assume the statement changed it afterwards; a volatile asm is never deleted, merged
   or reordered with respect to other volatile asm (every ``wgmma.*`` instruction TVM emits is
   a volatile asm with a "memory" clobber). Hence no read or write of that accumulator can
   move across the fence. The kernels call it for every accumulator element
   (a) after ``wgmma.fence`` and before the MMA batch, so the zero-init / previous values are
   in the registers the MMA reads, and (b) after ``wgmma.wait_group``, so no epilogue read is
   hoisted above the wait. With it ptxas reports no C7514 for rungs 4-7; rung 3 still gets one
   for another reason, not isolated (``tests/compile/test_tirx.py::test_wgmma_serialization``,
   README).

2. ``T.vectorized`` over a global -> shared fp16 copy emits invalid CUDA.
   A vectorized 8 x fp16 gather from a buffer with a symbolic row stride (``K``) is lowered to
   ``make_uint4(h0, ..., h7)`` with eight half arguments: nvcc: "too many arguments in function
   call". Rung 1's thread copies therefore move 16 bytes with :data:`COPY16` (one
   ``uint4`` load and store), which is what the vectorizer should have emitted.

3. ``Buffer.access_ptr`` on a buffer carved out of ``T.SMEMPool`` fails to lower
   ("tvm_access_ptr element type must match the source buffer": the pool's backing buffer is
   ``uint8``). The kernels take shared-memory addresses with ``buf.ptr_to([offset])`` instead.
   Not a patch, a spelling; listed so that nobody "fixes" it back.

4. ``tvm.compile(mod, target=Target(arch=...))`` does not compile the device code for that arch
   on a machine with a GPU. ``tir_to_runtime`` calls the NVRTC callback
   (``tvm_callback_cuda_compile``) without entering the target's scope; the callback then
   takes the arch from ``Target.current()`` and, that being empty, from ``tvm.cuda(0)``. On an
   H100 host an ``sm_100a`` rung is therefore compiled for ``sm_90a`` and fails (ptxas:
   "Instruction 'tcgen05.alloc' not supported on .target 'sm_90a'"); without a GPU it does
   not show. ``tvm/support/nvcc.py`` says callers "no longer need to push/pop a target
   scope" (0.27.0.post1), which the build path contradicts. Replacement: :func:`compile_for`
   builds inside ``with target:``.
"""

from __future__ import annotations

from typing import Any

#: Name of the accumulator-ordering fence (replacement for ``T.cuda.wgmma.noop_barrier``).
ACC_FENCE = "tirx_study_acc_fence"
ACC_FENCE_SOURCE = f"""
__device__ __forceinline__ void {ACC_FENCE}(float& reg) {{
  asm volatile("" : "+f"(reg) :: "memory");
}}
"""

#: 16-byte global -> shared copy for rung 1's thread copies (defect 2).
COPY16 = "tirx_study_copy16"
COPY16_SOURCE = f"""
__device__ __forceinline__ void {COPY16}(void* dst, const void* src) {{
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}}
"""


def compile_for(func: Any, arch: str) -> Any:
    """``tvm.compile`` of a TIRx PrimFunc for ``arch``, whatever GPU this machine has (defect 4)."""
    import tvm

    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target:
        return tvm.compile(tvm.IRModule({"main": func}), target=target, tir_pipeline="tirx")
