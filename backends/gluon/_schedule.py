"""Tile order shared by the persistent Gluon rungs (4 onwards).

Persistent programs walk output tiles ``pid, pid + num_programs, ...``. Consecutive tile ids
are mapped to (tile_m, tile_n) in an L2-grouped order: ``GROUP_M`` tile rows are swept together
column by column, so the ``GROUP_M`` A stripes and the current B stripe stay resident in L2
while a wave of programs works on them. In the 2-CTA rungs a "tile" is a *cluster* tile (both
CTAs' rows), so both CTAs of a pair compute the same sequence by construction.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def grouped_tile(tile_id, num_tiles_m, num_tiles_n, GROUP_M: gl.constexpr):
    """(tile_m, tile_n) of linear ``tile_id`` in GROUP_M-row bands swept column-major."""
    tiles_per_group = GROUP_M * num_tiles_n
    group = tile_id // tiles_per_group
    first_m = group * GROUP_M
    group_rows = gl.minimum(num_tiles_m - first_m, GROUP_M)
    tile_m = first_m + (tile_id % tiles_per_group) % group_rows
    tile_n = (tile_id % tiles_per_group) // group_rows
    return tile_m, tile_n
