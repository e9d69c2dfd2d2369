"""Every Tilus 0.2.0 defect this backend works around, each with its upstream fix.

Nothing else in ``backends/tilus`` patches Tilus. :func:`apply` is called by the host module
before the first kernel is built (never at import) and is idempotent.

1. **Every TMA load carries ``.cta_group::1``**, a Blackwell-only PTX qualifier that ptxas
   rejects for sm_90a ("Feature '.cta_group' requires .target sm_100 or higher"): the IR's
   ``CopyAsyncTensorGlobalToSharedInst`` always holds ``cta_group=1`` and the 0.2.0 emitter
   passes it through on every target. Fixed upstream after 0.2.0 by NVIDIA/tilus#154 (commit
   8970fbba, ``backends/emitters/cuda/cp_async_tensor.py``: "Pass None on Hopper"). Worked
   around the same way: below sm_100 the two primitive constructors the emitter calls drop the
   qualifier (``cta_group=None``); sm_100a kernels are untouched.
2. **TMA issued inside ``single_thread()`` is refused** ("TMA global to shared is a
   warp-cooperative instruction"): the 0.2.0 emitter requires a warp-aligned group of 32 threads
   and elects the leader lane itself. Fixed upstream by the same PR (a single-thread context is
   accepted with a constant-true predicate). No patch: our kernels issue every TMA (loads and
   stores) from a ``single_warp()`` scope — the emitter predicates the instruction on one
   elected lane — and keep ``single_thread()`` for the ``arrive_and_expect_tx`` that precedes
   it. :data:`TMA_SCOPE` names that rule where the kernels rely on it.
3. **apache-tvm-ffi >= 0.1.13 breaks Tilus 0.2.0's generated host code** (the
   ``TryCastFromAnyView`` API it calls changed). The backend pins ``apache-tvm-ffi==0.1.12``
   (pyproject extra ``tilus``); :func:`check_versions` names the mismatch in one line instead of
   letting nvcc fail deep inside a build.

4. **A TMA store of a tile written from wgmma fragments fails** ("The shared tensor layout is
   not supported by TMA"): ``store_shared`` of a 64x256 accumulator gives the shared tensor the
   fragments' layout — four 64-column, 128-byte-swizzled blocks one after another — which is
   no single TMA box (a 128-byte-swizzled box is at most 64 fp16 wide), and 0.2.0's store
   emitter knows only single boxes. Fixed upstream by NVIDIA/tilus#154 (one TMA store per
   column block, ``resolve_shared_tensor_segments``). Worked around the same way: when the
   shared tensor is such a column-blocked 2-D tile, one store per block through one tensor
   map; any other layout goes to the 0.2.0 emitter unchanged. (Tilus 0.2.0 cannot slice a
   register tensor by a column range, so the kernel cannot split the store itself.)

5. **Python's ``//`` becomes C's ``/`` in a script**: Tilus lowers floor division of ``int32``
   values to C integer division, which truncates toward zero, so any ceiling division written
   the Python way, ``-(-x // y)`` (``harness.gemm.cdiv``), compiles to ``-((-x) / y)`` — the
   *floor* of x / y. Seen on an H200: with that ``cdiv`` in the grid size, every shape whose M
   or N is not a tile multiple launched too few CTAs (200x328x72 left all of D unwritten; rung 7
   at 128x256x64 launched no CTA at all). Not reported upstream yet. Avoided: scripts use
   :func:`cdiv` below, ``(x + y - 1) // y``, whose operands stay non-negative.

6. **Warp-group roles of a block of 384 threads are divergent branches to ptxas**: 0.2.0's
   codegen (``FunctionCodegen.visit_ThreadGroupStmt``) tests a ``warp_group(...)`` role with a
   shuffle-broadcast group index -- a warp-uniform predicate -- only when the *parent* group's
   thread count is a power of two; rung 7's block (producer + two consumer warpgroups, 384
   threads) gets ``128 <= threadIdx.x && threadIdx.x < 256`` instead. Inside such a branch ptxas
   keeps every value in vector registers: the stage index, the wgmma shared-memory descriptors
   (moved with four ``R2UR`` before every ``wgmma``) and the barrier addresses, which Nsight
   Compute showed as ~40 % more instructions than Gluon's kernel. The broadcast predicate is
   sound for any parent whose thread count is a multiple of the group's (the group index is
   ``threadIdx.x // 128``, the same for all lanes of a warp). Still so on Tilus main
   (9a22de0a, 2026-07). Worked around by letting the codegen see the parent's thread count
   rounded up to a power of two while it emits such a role (only that test reads
   it); with it rung 7's consumer keeps descriptors and stage in uniform registers
   (``R2UR``: 125 -> 24 in the cubin) and rung 7 went from 94-99 % to 99-103 % of cuBLAS on
   the H200. It also changes the roles of the sm_100a rungs 5-7 (compiled, not run). Not
   reported upstream yet.

Also not patched but avoided: 0.2.0 places mbarriers into shared memory released by
``free_shared`` (fixed upstream by NVIDIA/tilus#154 in ``mbarrier_alloc_ctx.py``), so no kernel
here calls ``free_shared``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path

#: Where every TMA instruction of this backend is issued (workaround 2).
TMA_SCOPE = "single_warp"


def cdiv(x, y):
    """Ceiling division for non-negative ``x``, written so Tilus lowers it correctly in a script
    (defect 5): no negated operand meets C's truncating division."""
    return (x + y - 1) // y


TILUS_VERSION = "0.2.0"
TVM_FFI_VERSION = "0.1.12"


@functools.cache
def fingerprint() -> str:
    """A short hash of this module, which names the build cache folder (``_host.cache_dir``):
    Tilus keys its cache by the program's text, which a codegen workaround does not change, so
    a changed workaround must not reuse binaries built without it."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8]


def check_versions() -> None:
    """Raise a one-line error if the installed Tilus / apache-tvm-ffi are not the pinned ones."""
    for dist, want in (("tilus", TILUS_VERSION), ("apache-tvm-ffi", TVM_FFI_VERSION)):
        try:
            have = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise RuntimeError(
                f"{dist}=={want} is not installed (pip install '.[tilus]')"
            ) from None
        if have != want:
            raise RuntimeError(
                f"the Tilus backend is written for {dist}=={want}, found {have} "
                "(apache-tvm-ffi >= 0.1.13 breaks Tilus 0.2.0's generated host code)"
            )


@functools.cache
def apply() -> None:
    """Install workarounds 1, 4 and 6 (idempotent) after checking the pins (workaround 3)."""
    check_versions()
    from tilus.backends.emitters.cuda import cp_async_tensor as emitter
    from tilus.target import get_current_target

    def hopper_safe(primitive):
        @functools.wraps(primitive)
        def call(*args, cta_group=None, **kwargs):
            if get_current_target().properties.compute_capability < (10, 0):
                cta_group = None  # `.cta_group::N` exists only on sm_100+
            return primitive(*args, cta_group=cta_group, **kwargs)

        return call

    for name in ("cp_async_tensor_global_to_shared", "cp_async_tensor_global_to_cluster_shared"):
        setattr(emitter, name, hopper_safe(getattr(emitter, name)))

    store = emitter.CopyAsyncTensorSharedToGlobalInstEmitter
    store.emit = _column_blocked_store(store.emit)

    from tilus.backends.codegen import FunctionCodegen as codegen

    codegen.visit_ThreadGroupStmt = _uniform_warp_group_roles(codegen.visit_ThreadGroupStmt)


def _uniform_warp_group_roles(visit):
    """Workaround 6: emit a warp-aligned role of a non-power-of-two block with the uniform
    (shuffle-broadcast) predicate 0.2.0 reserves for power-of-two blocks."""
    from tilus.utils import is_power_of_two as is_pow2

    @functools.wraps(visit)
    def patched(self, stmt):
        stack = self.thread_group_stack
        parent = stack.num_threads[-1]
        size, begin = stmt.num_threads, stmt.thread_begin
        if (
            begin < 0  # elect-any groups take another path
            or is_pow2(parent)
            or size < 32
            or not is_pow2(size)
            or begin % size
            or parent % size
        ):
            return visit(self, stmt)
        stack.num_threads[-1] = 1 << parent.bit_length()  # read only for that test
        try:
            return visit(self, stmt)
        finally:
            stack.num_threads[-1] = parent

    return patched


def _column_blocked_store(emit_one_box):
    """Workaround 4: a TMA store emitter that also takes column-blocked 2-D shared tiles."""
    import numpy as np
    from tilus.backends.emitters.cuda import cp_async_tensor as emitter
    from tilus.ir.layout import SharedLayout

    swizzles = [
        emitter.TensorMapSwizzle.NONE,
        emitter.TensorMapSwizzle.B32,
        emitter.TensorMapSwizzle.B64,
        emitter.TensorMapSwizzle.B128,
    ]

    def blocks(shared):
        """(rows, block width, blocks, TMA swizzle) of a column-blocked tile, else None."""
        layout = shared.layout
        if len(shared.shape) != 2 or len(layout.mode_shape) != 3:
            return None
        rows, width = shared.shape
        m0, count, inner = layout.mode_shape
        if (m0, count * inner) != (rows, width) or tuple(layout.mode_strides) != (
            inner,
            rows * inner,
            1,
        ):
            return None
        box = SharedLayout(
            shape=(rows, inner),
            mode_shape=(rows, inner),
            mode_strides=(inner, 1),
            optional_swizzle=layout.optional_swizzle,
        ).as_numpy_grid()
        for swizzle in swizzles:
            grid = emitter.get_offset_grid_of_swizzled_layout(
                dtype_nbits=shared.dtype.nbits, shape=(rows, inner), swizzle=swizzle
            )
            if grid is not None and np.array_equal(box, grid):
                return rows, inner, count, swizzle
        return None

    def emit(self, inst):
        shared = inst.inputs[1].as_shared_tensor()
        try:
            self.resolve_shared_tensor_info(shared)
        except NotImplementedError:
            found = blocks(shared)
            if found is None:
                raise
        else:
            return emit_one_box(self, inst)
        rows, inner, count, swizzle = found
        glob = inst.inputs[0].as_global_tensor()
        dims = list(inst.dims) if inst.dims is not None else list(range(len(glob.shape)))
        info = self.resolve_global_tensor_info(glob, offsets=inst.offsets, dims=inst.dims)
        base = self.shared_tensor_shared_space_addr[shared]
        first = emitter.SharedTensorInfo(addr=base, shape=(rows, inner), swizzle=swizzle)
        tensor_map = self.create_tensor_map(info, first, glob.dtype)
        for j in range(count):
            coords = list(inst.offsets)
            coords[dims[1]] = coords[dims[1]] + j * inner
            self.append(
                emitter.cp_async_tensor_shared_to_global(
                    dst_tensor_map=~tensor_map,
                    src=base + j * rows * inner * shared.dtype.nbytes,
                    coords=list(reversed(coords)),
                    cache_policy=inst.cache_policy,
                    predicate=self.contexts.leader_lane_ctx.leader_lane,
                )
            )

    return emit
