"""``sweep.png``: rung 7 (one config) against rung 8 (a config per shape), decode to prefill.

One row per (suite, dtype) — the ``sweep`` suite, then the ``MAX_HELD_OUT`` held-out random
suites the bench runs ran last (every one keeps its table in ``sweep.md``: a row per seed
would grow the figure past reading) — and one column per DSL, all on one y scale: % of
cuBLAS in the same run against M on a log axis, every shape a point (shapes of one M spread
a little sideways so none hides another). Lines at 100 % (cuBLAS) and 90 % (rung 8's floor).
The panel's title gives each rung's geomean and worst shape; the per-shape tables are in
``sweep.md``.
"""

from __future__ import annotations

import math
from typing import Any

from harness.gemm import Problem
from harness.protocol import Rung
from reports.data import BAR_FLOOR_PCT, Dataset, SweepPanel, backend_order, sweep_panels
from reports.figures.common import (
    CUBLAS,
    GREY,
    MAX_WIDTH,
    RED,
    color,
    new_figure,
    shape,
    status_text,
    style,
    suptitle,
)

__all__ = ["figure_sweep"]

TITLE = "Shape sweep: rung 7 (one config) vs rung 8 (config per shape), % of cuBLAS in the same run"
#: Held-out suites drawn: the most recently run ones.
MAX_HELD_OUT = 2
_GREY = "#8a8a8a"
_R7, _R8 = int(Rung.MULTI_CONSUMER), int(Rung.SHAPE_ADAPTIVE)
_MARK = {
    _R7: {"marker": "s", "fillstyle": "none", "markersize": 4.2, "markeredgewidth": 0.9},
    _R8: {"marker": "o", "markersize": 4.0},
}


def figure_sweep(ds: Dataset, chain: Problem | None = None) -> Any | None:
    """% of cuBLAS against M per (suite, dtype) row and DSL column; ``chain`` is unused."""
    panels = sweep_panels(ds)
    held = list(dict.fromkeys(p.suite for p in panels if p.suite != "sweep"))
    shown = {"sweep", *held[-MAX_HELD_OUT:]}
    panels = [p for p in panels if p.suite in shown]
    if not panels:
        return None  # nothing to draw: no file, no section
    rows = list(dict.fromkeys((p.suite, p.dtype) for p in panels))
    cols = sorted({p.backend for p in panels}, key=backend_order)
    at = {(p.suite, p.dtype, p.backend): p for p in panels}
    top = max([110.0] + [v for p in panels for r in p.rows for v in r.pct.values() if v])
    ms = [r.problem.m for p in panels for r in p.rows]
    with style():
        width = min(MAX_WIDTH, 3.7 * len(cols) + 0.8)
        fig = new_figure(width, 3.2 * len(rows) + 1.0)
        body = fig.subfigures(1, 1)
        axes = body.subplots(len(rows), len(cols), squeeze=False, sharey=True, sharex=True)
        for i, (suite, dtype) in enumerate(rows):
            for j, backend in enumerate(cols):
                ax = axes[i, j]
                panel = at.get((suite, dtype, backend))
                if panel is None:
                    ax.set_visible(False)
                    continue
                _panel(ax, panel)
                if j == 0 or axes[i, j - 1].get_visible() is False:
                    ax.set_ylabel(f"{_where(suite)}, {dtype}\n% of cuBLAS")
                ax.tick_params(labelleft=True)
        axes[0, 0].set_ylim(0, top * 1.08)
        _m_axis(axes[0, 0], min(ms), max(ms))  # shared by every panel
        for ax in axes[-1]:
            ax.set_xlabel("M (log; shapes of one M spread sideways)", color=GREY)
        for ax in axes.flat:
            ax.tick_params(labelbottom=True)
        rungs = {g for p in panels for g in p.kernels}
        handles = _handles(rungs)
        body.legend(handles=handles, loc="outside upper center", ncol=len(handles), frameon=False)
        suptitle(fig, TITLE)
    return fig


def _where(suite: str) -> str:
    return "sweep" if suite == "sweep" else f"held out {suite}"


def _handles(rungs: set[int]) -> list[Any]:
    """Legend entries: the sweep rungs drawn somewhere, then the two lines."""
    from matplotlib.lines import Line2D

    marks = {
        _R7: Line2D([], [], color=_GREY, label="rung 7 multi_consumer", **_MARK[_R7]),
        _R8: Line2D([], [], color=GREY, label="rung 8 shape_adaptive (DSL colour)", **_MARK[_R8]),
    }
    for mark in marks.values():
        mark.set_linestyle("none")
    return [
        *(marks[g] for g in sorted(rungs) if g in marks),
        Line2D([], [], color=CUBLAS, linewidth=1.0, label="cuBLAS (100 %)"),
        Line2D([], [], color=CUBLAS, linewidth=0.8, linestyle="--", label=f"{BAR_FLOOR_PCT:g} %"),
    ]


def _panel(ax: Any, panel: SweepPanel) -> None:

    rows = panel.rows
    # sideways spread of the shapes sharing an M: a fraction of an octave, centred on M
    groups: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(row.problem.m, []).append(i)
    x = [0.0] * len(rows)
    for m, idx in groups.items():
        for rank, i in enumerate(idx):
            x[i] = m * 2 ** (0.09 * (rank - (len(idx) - 1) / 2))
    rungs = list(panel.kernels)
    for rung in rungs:
        shift = 2 ** (0.035 * (1 if rung == _R8 else -1)) if len(rungs) > 1 else 1.0
        pts = [(x[i] * shift, row.pct[rung]) for i, row in enumerate(rows) if row.pct[rung]]
        c = color(panel.backend) if rung == _R8 else _GREY
        if pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], linestyle="none", color=c,
                    **_MARK.get(rung, {"marker": "D", "markersize": 4}))  # fmt: skip
        bad = [  # failures only: a correctness-only record has no point and needs no note
            i
            for i, row in enumerate(rows)
            if (rec := row.records[rung]) is not None and rec.status.failed
        ]
        for i in bad:
            rec = rows[i].records[rung]
            ax.annotate(f"r{rung} {status_text(rec)}", (x[i], 0.02),
                        xycoords=("data", "axes fraction"), rotation=90, ha="center",
                        va="bottom", fontsize=7, color=RED)  # fmt: skip
    ax.axhline(100, color=CUBLAS, linewidth=1.0)
    ax.axhline(BAR_FLOOR_PCT, color=CUBLAS, linewidth=0.8, linestyle="--")
    lines = [panel.backend]
    for rung in rungs:
        st = panel.stats.get(rung)
        if st is None:
            lines.append(f"r{rung}: no shape timed")
            continue
        part = f"; {st.shapes}/{panel.size} shapes" if st.shapes < panel.size else ""
        lines.append(
            f"r{rung} geomean {st.geomean:.0f} %, worst {st.worst:.0f} % "
            f"({shape(st.worst_problem)}{part})"
        )
    ax.set_title("\n".join(lines), fontsize=7.5, loc="left", wrap=True)  # wrap: kept on the canvas


def _m_axis(ax: Any, lo: int, hi: int) -> None:
    """A log-2 M axis from ``lo`` to ``hi`` with room for the sideways spread."""
    from matplotlib.ticker import FixedLocator, FuncFormatter

    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 1.7, hi * 1.7)
    ticks = [2**e for e in range(0, int(math.log2(hi)) + 2, 2) if lo / 1.7 <= 2**e <= hi * 1.7]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.minorticks_off()
