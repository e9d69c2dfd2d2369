"""``ksweep.png``: TFLOPS against K at M = N = 8192, the ``ksweep`` suite's shapes only.

One column per dtype: TFLOPS of each final kernel (p20-p80 bars; the axis fitted to the data,
not from zero) with cuBLAS dashed, and under it % of cuBLAS in the same run. Small K is
bandwidth- and epilogue-bound, large K tests the main loop.
"""

from __future__ import annotations

from typing import Any

from harness.gemm import Problem
from harness.problems import suite_shapes
from reports.data import Dataset, suite_problems, tflops_range
from reports.figures.common import (
    CUBLAS,
    GREY,
    color,
    legend_columns,
    new_figure,
    pct_band,
    reference,
    style,
    suptitle,
)

__all__ = ["figure_ksweep"]

TITLE = "K sweep (M = N = 8192): final kernel of each DSL vs cuBLAS"
SUITE = "ksweep"


def figure_ksweep(ds: Dataset, chain: Problem | None = None) -> Any | None:
    """TFLOPS and % of cuBLAS against K per dtype; ``chain`` is unused."""
    finals = ds.final_kernels()
    problems = ds.problems()
    dtypes = [
        d
        for d in dict.fromkeys(p.dtype for p in problems)
        if len(suite_problems(problems, SUITE, d)) >= 2
    ]
    if not finals or not dtypes:
        return None  # nothing to draw: no file, no section
    mn = suite_shapes(SUITE)[0][0]
    with style():
        fig = new_figure(6.2 * len(dtypes) + 0.4, 5.6)
        body = fig.subfigures(1, 1)  # holds the legend under the title
        axes = body.subplots(2, len(dtypes), squeeze=False, sharex="col", height_ratios=[2.2, 1])
        for col, dtype in enumerate(dtypes):
            ax_t, ax_p = axes[0, col], axes[1, col]
            keys = suite_problems(problems, SUITE, dtype)
            _column(ds, ax_t, ax_p, keys, finals)
            ks = [p.k for p in keys]
            ax_p.set_xscale("log", base=2)
            ax_p.set_xticks(ks, [str(k) for k in ks])
            ax_p.minorticks_off()
            ax_p.set_xlabel(f"K  (M = N = {mn})", color=GREY)
            ax_t.tick_params(labelbottom=False)
            ax_t.set_title(dtype)
            if col == 0:
                ax_t.set_ylabel("TFLOPS (p20-p80)")
                ax_p.set_ylabel("% of cuBLAS")
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=CUBLAS, linestyle="--", marker="o", label="cuBLAS")]
        handles += [Line2D([], [], color=color(b), marker="o", label=k) for b, k in finals.items()]
        ncol = legend_columns(fig, len(handles))
        body.legend(handles=handles, loc="outside upper center", ncol=ncol, frameon=False)
        suptitle(fig, TITLE)
    return fig


def _column(ds: Dataset, ax_t: Any, ax_p: Any, keys: list[Problem], finals: dict[str, str]) -> None:
    picks = {p: [ds.pick(k, p) for k in finals.values()] for p in keys}
    lines = [("cublas", [reference(ds, p, picks[p]) for p in keys], "--")]
    lines += [(b, [picks[p][j] for p in keys], "-") for j, b in enumerate(finals)]
    lo_all, hi_all, pct_all = [], [], [100.0]
    for backend, recs, ls in lines:
        pts = [(p.k, tflops_range(r), r) for p, r in zip(keys, recs, strict=True) if r]
        pts = [(k, b, r) for k, b, r in pts if b is not None]
        if not pts:
            continue
        ks = [k for k, _, _ in pts]
        mid = [b[1] for _, b, _ in pts]
        err = [[b[1] - b[0] for _, b, _ in pts], [b[2] - b[1] for _, b, _ in pts]]
        kw = {"markersize": 3.5, "capsize": 2, "color": color(backend)}
        ax_t.errorbar(ks, mid, yerr=err, fmt=ls + "o", **kw)
        lo_all += [b[0] for _, b, _ in pts]
        hi_all += [b[2] for _, b, _ in pts]
        if backend == "cublas":
            continue
        bands = [(k, pct_band(ds, r)) for k, _, r in pts]
        bands = [(k, b) for k, b in bands if b is not None]
        if bands:
            ax_p.errorbar(
                [k for k, _ in bands],
                [b[1] for _, b in bands],
                yerr=[[b[1] - b[0] for _, b in bands], [b[2] - b[1] for _, b in bands]],
                fmt="-o",
                **kw,
            )
            pct_all += [v for _, b in bands for v in (b[0], b[2])]
    ax_p.axhline(100, color=CUBLAS, linestyle="--", linewidth=1.0)
    if lo_all:
        pad = max(0.06 * (max(hi_all) - min(lo_all)), 0.01 * max(hi_all))
        ax_t.set_ylim(min(lo_all) - pad, max(hi_all) + pad)
    pad = max(1.5, 0.1 * (max(pct_all) - min(pct_all)))
    ax_p.set_ylim(min(pct_all) - pad, max(pct_all) + pad)
