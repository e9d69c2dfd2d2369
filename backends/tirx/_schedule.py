"""The L2-grouped tile order shared by the persistent rungs (trace-time helper).

Tiles are visited in groups of ``group`` tile-rows: within a group, down the rows first and
then across the columns, so ``group`` rows of A and a band of B columns stay in L2 while a
wave of CTAs works through them. Called inside a prim_func, it returns TIR expressions.
(TIRx's ``ClusterPersistentScheduler2D`` has the same order but takes the N tile count as a
Python int, i.e. it would compile one kernel per N; these kernels keep M, N, K runtime values.)
"""

from __future__ import annotations

from typing import Any

from tvm.script import tirx as T


def grouped_tile(tile: Any, tiles_m: Any, tiles_n: Any, group: Any) -> tuple[Any, Any]:
    """(tile_m, tile_n) of linear tile index ``tile`` in the grouped order."""
    per_group = group * tiles_n
    first_m = (tile // per_group) * group
    rows = T.min(tiles_m - first_m, group)
    within = tile % per_group
    return first_m + within % rows, within // rows
