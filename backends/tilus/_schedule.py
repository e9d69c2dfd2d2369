"""The L2-grouped tile order every persistent Tilus rung walks (rungs 4-7).

Tiles are numbered ``t = 0 .. num_m * num_n - 1``. With ``raster="m"`` consecutive ``t`` sweep
``group`` tile rows column by column (the CTAs running at the same time share B columns and a
few A row panels in L2); ``raster="n"`` is the transpose: ``group`` tile columns, row by row.
The last group may be shorter. Written once as a ``tilus.Class`` so each rung calls
``order.coords(t)``.
"""

import tilus
from tilus import int32


class GroupedOrder(tilus.Class):
    """Tile ``t`` -> (tile row, tile column) in groups of ``group`` rows (or columns)."""

    def __init__(self, num_m: int32, num_n: int32, group: int, raster_n: bool):
        self.num_m: int32 = num_m
        self.num_n: int32 = num_n
        self.group: int = group
        self.raster_n: bool = raster_n
        self.num_tiles: int32 = num_m * num_n

    def coords(self, t: int32):
        # Python-level branch: raster_n is a constant, so only one order is compiled.
        major = self.num_n if self.raster_n else self.num_m
        minor = self.num_m if self.raster_n else self.num_n
        tiles_per_group = self.group * minor
        first = t // tiles_per_group * self.group
        width = major - first
        if width > self.group:
            width = self.group
        in_group = t % tiles_per_group
        along = first + in_group % width
        across = in_group // width
        # One return per tilus function, and no tuple swap: Tilus 0.2.0 lowers `a, b = b, a`
        # to two sequential assignments (both end up equal), so assign each once.
        row: int32 = along
        col: int32 = across
        if self.raster_n:
            row = across
            col = along
        return row, col
