"""The output path the Blackwell rungs share: one accumulator tile, tensor memory -> D.

TMEM -> registers (``tcgen05.ld`` 32x32b) -> shared memory -> global (TMA store), in
``epi_tile`` sub-tiles rotating over ``epi_stages`` shared buffers (from ``buf_base`` on, so
that two epilogue warpgroups can own disjoint buffers). Barriers per sub-tile, over the
epilogue threads that drain this accumulator:

    name            arrives / waits            meaning
    epi_bar (1st)   every thread, after its    the sub-tile is in shared memory and visible to
                    st.shared + proxy fence    the async proxy: the store warp may issue it
    epi_bar (2nd)   every thread               the buffer written next is no longer being read

The caller releases the accumulator (``acc_empty``) after this returns: every ``tcgen05.ld``
of it has completed by then (the copies' results were consumed).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import tcgen05
from cutlass.tensor_utils import LayoutEnum


@cute.jit
def store_accumulator(
    tAcc: cute.Tensor,
    gD: cute.Tensor,
    tDgD: cute.Tensor,
    tDsD: cute.Tensor,
    sD: cute.Tensor,
    tma_d: cute.CopyAtom,
    epi_tile: cute.Tile,
    epi_stages: cutlass.Constexpr,
    buf_base,
    tidx: cutlass.Int32,
    warp_idx: cutlass.Int32,
    store_warp,
    epi_bar,
    store_pipe,
    dtype,
):
    """Store the accumulator ``tAcc`` (this CTA's TMEM tile) into ``gD`` (the same tile of D);
    ``tDgD`` / ``tDsD`` are D's TMA partitions for that tile and for the shared buffers;
    ``tidx`` counts from the first thread of the draining warpgroup."""
    tAcc_epi = cute.flat_divide(tAcc, epi_tile)
    gD_tile = cute.flat_divide(gD, epi_tile)
    t2r_atom = cute.make_copy_atom(
        tcgen05.Ld32x32bOp(tcgen05.Repetition.x32, tcgen05.Pack.NONE), cutlass.Float32
    )
    t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc_epi[(None, None, 0, 0)])
    thr_t2r = t2r.get_slice(tidx)
    tTR_tAcc = thr_t2r.partition_S(tAcc_epi)
    tTR_gD = thr_t2r.partition_D(gD_tile)
    tTR_rAcc = cute.make_rmem_tensor(tTR_gD[(None, None, None, 0, 0)].shape, cutlass.Float32)
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    r2s = cute.make_tiled_copy_D(
        sm100_utils.get_smem_store_op(LayoutEnum.ROW_MAJOR, dtype, cutlass.Float32, t2r), t2r
    )
    thr_r2s = r2s.get_slice(tidx)
    tRS_sD = thr_r2s.partition_D(sD)
    tRS_rAcc = r2s.retile(tTR_rAcc)
    tRS_rD = cute.make_rmem_tensor(tRS_rAcc.shape, dtype)
    tDgD = cute.group_modes(tDgD, 1, cute.rank(tDgD))
    subtiles = cute.size(tTR_tAcc.shape, mode=[3])
    for st in cutlass.range(subtiles):
        cute.copy(t2r, tTR_tAcc[(None, None, None, st)], tTR_rAcc)
        buf = buf_base + st % epi_stages
        tRS_rD.store(tRS_rAcc.load().to(dtype))
        cute.copy(r2s, tRS_rD, tRS_sD[(None, None, None, buf)])
        # Shared-memory writes must be visible to the TMA (async proxy).
        cute.arch.fence_view_async_shared()
        epi_bar.arrive_and_wait()
        if warp_idx == store_warp:
            cute.copy(tma_d, tDsD[(None, buf)], tDgD[(None, st)])
            store_pipe.producer_commit()
            store_pipe.producer_acquire()
        epi_bar.arrive_and_wait()


def n_multiple_of_8(problem) -> str | None:
    """``supports`` of the Blackwell rungs: D goes out through TMA only."""
    if problem.n % 8:
        return "the sm_100a kernels store D with TMA only: N must be a multiple of 8"
    return None
