"""CuTeDSL 4.8.1 behaviour this backend works around, each with where it bites.

1. **The grouped persistent scheduler runs padded work units as real ones.**
   ``utils.PersistentTileSchedulerParams`` with an L2 group (``swizzle_size`` > 1) rounds the
   cluster count along the walked dimension (N for raster m, M for raster n) up to a multiple
   of the group, and ``StaticPersistentTileScheduler``'s ``is_valid_tile`` is judged against
   that padded count. A padded unit runs a full K loop on out-of-bounds tiles (TMA fills zeros,
   every store is masked), so results stay correct while the work grows: seen on an H200 with
   rung 8's swap-AB, where N is cdiv(M, tile_n) = 1 tile padded to 8, at 13-23 % of cuBLAS
   (8x the work). Not reported upstream yet. Worked around in rung 8: swap-AB and split-K
   configs run ungrouped (no padding), and the grouped persistent configs walk their tiles
   themselves (``r8_shape_adaptive.grouped_tile``, whose last band is as tall as the rows
   left: nothing padded). The raster-n and non-persistent variants keep the scheduler and step
   over padded units with :func:`padded_unit`; skipped units still hold their place in the
   static round-robin, so where the padded count needs one more round of the persistent grid
   than the real tiles, some CTAs run one more real tile: 668x5120x14336 with 128x256 (6 x 20
   cluster tiles padded to 6 x 24 = 144 units on 132 SMs) ran 345 TFLOPS grouped, 536
   ungrouped (H200). Rungs 4-7 use the same scheduler with a group of 8 and are left as they
   were measured (no padding on the square and K-sweep shapes; 1.2-2x the units on ragged
   ones such as 4095x4097, which are checked, not timed).

2. **``cute.slice_`` aborts on a ring whose rows are an odd number of 8-row swizzle groups.**
   Slicing one stage out of a staged 128-byte-swizzled K-major layout of 16-bit elements,
   ``cute.slice_(layout, (None, None, 0))``, kills the process (SIGABRT inside the MLIR op
   builder, no Python error) when the tile's row count is an odd multiple of 8: 72, 88, ...,
   248 rows, i.e. shapes ((8, 9), ...) to ((8, 31), ...); 80 or 176 rows slice fine. The
   layout itself is well formed (``cute.select`` of its first two modes gives the same
   one-stage layout, and TMA and wgmma take it). Rung 8's wide swapped tiles have such widths
   (``SWAP_WIDE``: M's share rounded to the wgmma N step of 8), so it takes a stage's layout
   with :func:`stage_layout`. The same abort hit the TMA-store atom of the 192-row swapped
   tiles' M-major epilogue buffers (192 rows x 8 columns, eight stages; 192 rows are 24
   groups of 8, an even count, so the trigger is wider than the odd counts above), so the
   shared epilogue (``sm90/_epilogue.tma_store_atom``) takes its stage with it too. Seen
   compiling offline (no GPU needed); not reported upstream yet.
"""

from __future__ import annotations

from typing import Any

__all__ = ["padded_unit", "stage_layout"]


def padded_unit(work: Any, tiles_m: Any, tiles_n: Any, rank_m: Any) -> Any:
    """Whether ``work`` (a ``WorkTileInfo``) is a padded unit (defect 1): its N tile, or its
    cluster's first M tile, lies beyond the real tile count. Both CTAs of a cluster agree, so
    they skip the same units. Traced inline into the kernel (a DSL boolean)."""
    tile_m, tile_n, _ = work.tile_idx
    return (tile_n >= tiles_n) | (tile_m - rank_m >= tiles_m)


def stage_layout(staged: Any) -> Any:
    """One stage, (rows, k), of a staged (rows, k, stages) shared-memory layout, swizzle kept:
    what ``cute.slice_(staged, (None, None, 0))`` would give, without its abort on an odd
    number of 8-row groups (defect 2)."""
    import cutlass.cute as cute

    return cute.select(staged, mode=[0, 1])
