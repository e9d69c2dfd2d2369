"""``pct_cublas.png``: % of cuBLAS (same run) per final kernel and problem, suite by suite.

A diverging colour scale centred on 100 % in uneven steps: fine near 100 (98-100, 100-102,
...) where the study's few-percent gaps live, coarse far below it (<50, 50-70, 70-80, 80-90),
so 25 % and 89 % get different colours while a 2 % gap still shows. Every cell is labelled to
0.1 %. Panels per (dtype, suite) as in ``cross_dsl.png``.
"""

from __future__ import annotations

from typing import Any

from harness.gemm import Problem
from reports.data import Dataset, drawn_suites, held_out_suites, pct_table
from reports.figures.common import (
    MAX_WIDTH,
    new_figure,
    panel_title,
    slots,
    style,
    suite_rows,
    suptitle,
)

__all__ = ["BOUNDS", "figure_heatmap"]

TITLE = "% of cuBLAS in the same run, final kernel of each DSL (above 100 = faster than cuBLAS)"
#: Colour steps (% of cuBLAS); below the first and above the last share the end colours.
BOUNDS = (0.0, 50.0, 70.0, 80.0, 90.0, 95.0, 98.0, 100.0, 102.0, 105.0, 110.0)
_ROW_SLOTS = 30


def _cmap() -> tuple[Any, Any]:
    """(colormap, norm): reds below 100 (darker further down), blues above; over the last
    bound, the darkest blue."""
    from matplotlib import colormaps
    from matplotlib.colors import BoundaryNorm, ListedColormap

    rdbu = colormaps["RdBu"]
    below = sum(b < 100 for b in BOUNDS)  # bins under 100
    above = len(BOUNDS) - below  # bins from 100 up, plus the one over the top
    colors = [rdbu(0.02 + 0.43 * i / (below - 1)) for i in range(below)]
    colors += [rdbu(0.57 + 0.41 * i / (above - 1)) for i in range(above)]
    return ListedColormap(colors), BoundaryNorm(BOUNDS, len(colors), extend="max")


def figure_heatmap(ds: Dataset, chain: Problem | None = None) -> Any | None:
    """% of cuBLAS per (dtype, suite) panel; ``chain`` is unused."""
    rows, cols, grid = pct_table(ds)
    if not rows or not cols:
        return None  # nothing to draw: no file, no section
    value = {(k, p): grid[i][j] for i, k in enumerate(rows) for j, p in enumerate(cols)}
    dtypes = list(dict.fromkeys(p.dtype for p in cols))
    extra = held_out_suites(ds)
    panels = [(d, s, ps) for d in dtypes for s, ps in drawn_suites(cols, d, extra)]
    lines, width = suite_rows(panels, _ROW_SLOTS)
    labels = [k.split("/")[0] for k in rows]
    height = 0.27 * len(rows) + 1.45
    with style():
        cmap, norm = _cmap()
        fig = new_figure(min(MAX_WIDTH, 1.4 + 0.44 * width), height * len(lines) + 1.5)
        top, *subs = fig.subfigures(len(lines) + 1, 1, height_ratios=[0.75] + [height] * len(lines))
        _colorbar(top, cmap, norm)
        for sf, line in zip(subs, lines, strict=True):
            widths = [slots(x) for x in line]
            pad = width - sum(widths)
            axes = sf.subplots(
                1,
                len(line) + (1 if pad > 0 else 0),
                squeeze=False,
                width_ratios=[*widths, pad] if pad > 0 else widths,
            )[0]
            for j, (dtype, suite, ps) in enumerate(line):
                data = [[_nan(value.get((k, p))) for p in ps] for k in rows]
                ax = axes[j]
                ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
                for i, row in enumerate(data):
                    for jj, v in enumerate(row):
                        ax.text(jj, i, "-" if v != v else f"{v:.1f}", ha="center",
                                va="center", fontsize=7, color=_ink(v))  # fmt: skip
                ticks = [_tick(p, suite) for p in ps]
                ax.set_xticks(range(len(ps)), ticks)
                if suite not in ("square", "ksweep"):
                    for t in ax.get_xticklabels():
                        t.set(rotation=50, ha="right", rotation_mode="anchor", fontsize=7)
                ax.set_yticks(range(len(rows)), labels if j == 0 else [""] * len(rows))
                ax.set_title(panel_title((dtype, suite, ps)))
                ax.grid(False)
            if pad > 0:
                axes[-1].set_visible(False)
        suptitle(fig, TITLE)
    return fig


def _colorbar(sf: Any, cmap: Any, norm: Any) -> None:
    """The scale, centred across the top, each step as wide as the next."""
    from matplotlib.cm import ScalarMappable

    _, cax, _ = sf.subplots(1, 3, width_ratios=[1, 2, 1])[:]
    for ax in sf.axes:
        if ax is not cax:
            ax.set_visible(False)
    sf.colorbar(
        ScalarMappable(norm=norm, cmap=cmap),
        cax=cax,
        orientation="horizontal",
        spacing="uniform",
        ticks=list(BOUNDS),
        extend="max",
        label="% of cuBLAS (uneven steps: fine near 100, coarse below 90)",
    )


def _nan(v: float | None) -> float:
    return float("nan") if v is None else v


def _ink(v: float) -> str:
    """Text colour on a cell: white on the dark ends of the scale."""
    return "white" if v == v and (v < 80 or v >= 105) else "black"


def _tick(p: Problem, suite: str) -> str:
    return {"square": str(p.m), "ksweep": f"K={p.k}"}.get(suite, f"{p.m}x{p.n}x{p.k}")
