"""TMA instruction names shared by the sm_90a rungs (issued through ``T.ptx[...]``).

The descriptors themselves are encoded on the host, inside each rung's prim_func before
``T.device_entry()``, with ``T.call_packed("runtime.cuTensorMapEncodeTiled", map, dtype, 2,
ptr, inner, outer, row_bytes, box_inner, box_outer, 1, 1, interleave=0, swizzle, l2=0,
oob_fill=0)``. ``oob_fill = 0`` (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) fills out-of-bounds
elements with zeros, and a TMA store clips at the tensor's edge: that is how rungs 2-7 take
any M, N and K % 8 == 0. Loads count the whole box toward ``complete_tx`` (zero-filled bytes
included), so a full barrier always expects the full box bytes.
"""

from __future__ import annotations

#: 2-D tiled load into this CTA's shared memory, completing on an mbarrier.
LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
#: The same load multicast to every CTA in ``cta_mask`` (same shared offset, each CTA's own
#: mbarrier at the same offset gets the bytes).
LOAD_MULTICAST = LOAD + ".multicast::cluster"
#: 2-D tiled store from shared memory, tracked by bulk groups.
STORE = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
COMMIT = "cp.async.bulk.commit_group"
#: Wait until at most N bulk groups still *read* shared memory (the buffer may be reused).
WAIT_READ = "cp.async.bulk.wait_group.read"

#: CUtensorMapSwizzle code for 128-byte swizzle.
SWIZZLE_128B = 3
#: Columns of one 128-byte swizzle row of fp16/bf16: the TMA box's inner extent.
SWIZZLE_COLS = 64
