"""Render the study's figures, ``report.md`` and CSVs from a :class:`~reports.data.Dataset`.

Figures (each ``figure_*`` function is a pure function of the dataset returning a matplotlib
``Figure`` on the Agg canvas; nothing goes through pyplot, so no global figure state):

* ``cross_dsl.png``  each backend's final kernel and cuBLAS per problem. Columns are problem
  families (square M = N = K; K sweep M = N = 8192, which repeats 8192^3 as its K = 8192
  point; other shapes), so small problems get a scale of their own. Small problems are made
  legible by a **second row of % of cuBLAS panels** under every TFLOPS row (bars grow up or
  down from the 100 % line, y fitted to the data) rather than by a log TFLOPS axis, which would
  flatten the few-percent gaps the study is about. Every bar has a p20-p80 error bar;
* ``ksweep.png``     TFLOPS against K at M = N = 8192, one line per final kernel, cuBLAS
  dashed, p20-p80 error bars, the y axis fitted to the data (not from zero);
* ``chain.png``      the speedup chain: median time per rung (log axis, p20-p80 error bars), one
  panel per backend on shared axes, step and cumulative speedups, cuBLAS dashed, and the config
  of the rung-7 and rung-8 points when they have one. Rungs 1-7 are every backend's chain; rung 8
  (``shape_adaptive``) is drawn for the backends that have it;
* ``pct_cublas.png`` % of cuBLAS (same run) per final kernel and problem: a diverging map centred
  at 100 and clipped to 90..110 so that a 2 % difference shows, cells labelled to 0.1;
* ``sweep.png``      the shape sweep: rung 7 and rung 8 of each backend as % of cuBLAS (same run)
  at every shape of the ``sweep`` suite that has data, ordered M, N, K (decode to prefill), one
  panel per (dtype, backend), lines at 100 % and 90 % (the rung-8 floor); each series' legend
  gives its geomean and its worst shape.

A time quantile becomes a rate by ``TFLOPS * median / quantile``: the p20 time is the upper end
of the TFLOPS band and the p80 time the lower. Backends and problems keep the order of
:mod:`reports.data` in every panel and table. PNGs are written without the "Software" text
chunk, so re-rendering the same inputs with the same matplotlib gives the same bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.gemm import Problem
from harness.protocol import Rung
from harness.records import BenchRecord, CodegenRecord
from harness.results import to_csv
from reports.data import (
    FAMILIES,
    KSWEEP_MN,
    SWEEP_RUNGS,
    ChainRow,
    Dataset,
    SweepPanel,
    SweepRow,
    backend_order,
    chain_problem,
    chain_table,
    family,
    held_out_suites,
    load_dataset,
    pct_table,
    problem_order,
    sweep_table,
    tflops_range,
)

__all__ = [
    "FIGURES",
    "README_END",
    "README_START",
    "figure_chain",
    "figure_cross_dsl",
    "figure_heatmap",
    "figure_ksweep",
    "figure_sweep",
    "render_markdown",
    "render_report",
    "sweep_lines",
    "update_readme",
]

FIGURES = MappingProxyType(
    {
        "cross_dsl": "cross_dsl.png",
        "ksweep": "ksweep.png",
        "chain": "chain.png",
        "pct_cublas": "pct_cublas.png",
        "sweep": "sweep.png",
    }
)
_COLORS = MappingProxyType(
    {
        "cublas": "#444444",
        "tirx": "#d62728",
        "gluon": "#1f77b4",
        "cutedsl": "#2ca02c",
        "tilus": "#9467bd",
    }
)
_FALLBACK = ("#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_STYLE = MappingProxyType(
    {
        "font.size": 8,
        "axes.titlesize": 9,
        "axes.labelsize": 8,
        "legend.fontsize": 7,
        "axes.grid": True,
        "grid.alpha": 0.3,
    }
)
_FAMILY_TITLE = MappingProxyType(
    {
        "square": "square (M = N = K)",
        "ksweep": f"K sweep (M = N = {KSWEEP_MN})",
        "other": "other shapes",
    }
)
_HEAT_RANGE = (90.0, 110.0)
_EBAR = MappingProxyType({"fmt": "none", "ecolor": "black", "elinewidth": 0.7, "capsize": 1.5})
_SLANT = MappingProxyType({"rotation": 35, "ha": "right", "rotation_mode": "anchor", "fontsize": 7})
_NOTE = MappingProxyType({"textcoords": "offset points", "ha": "center"})
_RED = "#b00000"
_DPI = 110


# -------------------------------------------------------------------------------------- helpers
def _color(backend: str) -> str:
    if backend in _COLORS:
        return _COLORS[backend]
    return _FALLBACK[sum(map(ord, backend)) % len(_FALLBACK)]


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        yield


def _figure(width: float, height: float) -> Any:
    """A Figure on the Agg canvas, laid out by constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Any, path: Path) -> None:
    """Write a PNG without the Software chunk (its only varying metadata)."""
    fig.savefig(path, dpi=_DPI, format="png", metadata={"Software": None})


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def _dtypes(problems: Iterable[Problem]) -> list[str]:
    return list(dict.fromkeys(p.dtype for p in problems))


def _ksweep(problems: Iterable[Problem], dtype: str) -> list[Problem]:
    """Problems at M = N = 8192 (8192^3 included as the K = 8192 point), by K."""
    ps = [p for p in problems if p.dtype == dtype and p.m == p.n == KSWEEP_MN]
    return sorted(ps, key=lambda p: p.k)


def _panel_problems(problems: list[Problem], dtype: str, fam: str) -> list[Problem]:
    if fam == "ksweep":
        ps = _ksweep(problems, dtype)
        return ps if any(family(p) == "ksweep" for p in ps) else []
    return [p for p in problems if p.dtype == dtype and family(p) == fam]


def _tick(p: Problem, fam: str) -> str:
    return {"square": str(p.m), "ksweep": str(p.k)}.get(fam, f"{p.m}x{p.n}x{p.k}")


def _reference(ds: Dataset, p: Problem, picks: Iterable[BenchRecord | None]) -> BenchRecord | None:
    """cuBLAS for ``p``, from the run of the first timed kernel record shown beside it."""
    like = next((r for r in picks if r is not None and r.timed), None)
    return ds.cublas(p, like)


def _cfg(rec: BenchRecord | CodegenRecord | None) -> str:
    return f"`{rec.config}`" if rec is not None and rec.config else "-"


# ------------------------------------------------------------------------------------ cross-DSL
def figure_cross_dsl(ds: Dataset) -> Any:
    """TFLOPS row and % of cuBLAS row per dtype; one column per problem family."""
    with _style():
        finals = ds.final_kernels()
        problems = ds.problems()
        dtypes = _dtypes(problems) or ["fp16"]
        fams = [f for f in FAMILIES if any(_panel_problems(problems, d, f) for d in dtypes)]
        fams = fams or ["square"]
        widths = [max(2, *(len(_panel_problems(problems, d, f)) for d in dtypes)) for f in fams]
        series = 1 + len(finals)
        fig = _figure(
            max(7.0, sum(widths) * (0.28 * series + 0.25) + 1.5), 2.7 * 2 * len(dtypes) + 0.6
        )
        axes = fig.subplots(2 * len(dtypes), len(fams), squeeze=False, width_ratios=widths)
        handles: dict[str, Any] = {}
        for row, dtype in enumerate(dtypes):
            for col, fam in enumerate(fams):
                ax_t, ax_p = axes[2 * row, col], axes[2 * row + 1, col]
                keys = _panel_problems(problems, dtype, fam)
                if not keys:
                    _empty(ax_t, f"no {dtype} {fam} results")
                    ax_p.set_visible(False)
                    continue
                _cross_panel(ds, ax_t, ax_p, keys, fam, finals, handles)
                ax_t.set_title(f"{dtype}, {_FAMILY_TITLE[fam]}")
                if col == 0:
                    ax_t.set_ylabel("TFLOPS (p20-p80)")
                    ax_p.set_ylabel("% of cuBLAS (same run)")
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncol=min(4, max(1, len(handles))),
        )
        fig.suptitle("Final kernel of each DSL vs cuBLAS (torch.matmul)")
    return fig


def _cross_panel(
    ds: Dataset,
    ax_t: Any,
    ax_p: Any,
    keys: list[Problem],
    fam: str,
    finals: dict[str, str],
    handles: dict[str, Any],
) -> None:
    n = 1 + len(finals)
    width = 0.8 / n
    picks = {p: [ds.pick(k, p) for k in finals.values()] for p in keys}
    refs = {p: _reference(ds, p, picks[p]) for p in keys}
    cols: list[tuple[str, str, list[BenchRecord | None]]] = [
        ("cublas", "cuBLAS (torch.matmul)", [refs[p] for p in keys])
    ]
    cols += [(b, k, [picks[p][j] for p in keys]) for j, (b, k) in enumerate(finals.items())]
    pct_lo, pct_hi = [100.0], [100.0]
    for j, (backend, label, recs) in enumerate(cols):
        offset = -0.4 + width * (j + 0.5)
        xs, mids, errs = [], [], ([], [])
        for i, rec in enumerate(recs):
            band = tflops_range(rec) if rec is not None else None
            if band is None:
                continue
            xs.append(i + offset)
            mids.append(band[1])
            errs[0].append(band[1] - band[0])
            errs[1].append(band[2] - band[1])
        bars = ax_t.bar(xs, mids, width * 0.92, color=_color(backend), label=label)
        ax_t.errorbar(xs, mids, yerr=errs, **_EBAR)
        handles.setdefault(label, bars)
        if backend == "cublas":
            continue
        for i, rec in enumerate(recs):
            if rec is None:
                continue
            x, pct = i + offset, ds.pct_of_cublas(rec)
            if pct is None or rec.timing is None:
                text = "not timed" if rec.status.value == "ok" else rec.status.value
                ax_p.text(x, 100, text, rotation=90, ha="center", fontsize=6, color=_RED)
                continue
            t = rec.timing
            lo, hi = pct * t.median_ms / t.p80_ms, pct * t.median_ms / t.p20_ms
            pct_lo.append(lo)
            pct_hi.append(hi)
            ax_p.bar(x, pct - 100, width * 0.92, bottom=100, color=_color(backend))
            ax_p.errorbar(x, pct, yerr=[[pct - lo], [hi - pct]], **_EBAR)
            up = pct >= 100
            ax_p.annotate(
                f"{pct:.1f}",
                (x, hi if up else lo),
                xytext=(0, 2 if up else -2),
                va="bottom" if up else "top",
                rotation=90,
                fontsize=6,
                **_NOTE,
            )
    ax_p.axhline(100, color=_COLORS["cublas"], linewidth=0.9)
    span = max(max(pct_hi) - min(pct_lo), 2.0)
    ax_p.set_ylim(min(pct_lo) - 0.35 * span, max(pct_hi) + 0.35 * span)
    ax_t.set_ylim(bottom=0)
    ax_t.margins(y=0.08)
    ticks = [_tick(p, fam) for p in keys]
    for ax in (ax_t, ax_p):
        ax.set_xticks(range(len(keys)), ticks, rotation=30 if fam == "other" else 0)
        ax.set_xlim(-0.55, len(keys) - 0.45)
    ax_p.set_xlabel(
        {"square": "M = N = K", "ksweep": f"K  (M = N = {KSWEEP_MN})"}.get(fam, "MxNxK")
    )


# -------------------------------------------------------------------------------------- K sweep
def figure_ksweep(ds: Dataset) -> Any:
    """TFLOPS against K at M = N = 8192 per dtype, with p20-p80 error bars."""
    with _style():
        problems = ds.problems()
        dtypes = _dtypes(problems) or ["fp16"]
        fig = _figure(5.2 * len(dtypes) + 0.6, 4.0)
        axes = fig.subplots(1, len(dtypes), squeeze=False)
        finals = ds.final_kernels()
        for ax, dtype in zip(axes[0], dtypes, strict=True):
            keys = _ksweep(problems, dtype)
            if len(keys) < 2:
                _empty(ax, f"no K sweep ({dtype}) results")
                continue
            picks = {p: [ds.pick(k, p) for k in finals.values()] for p in keys}
            lines = [("cublas", "cuBLAS", [_reference(ds, p, picks[p]) for p in keys], "--")]
            lines += [
                (b, k, [picks[p][j] for p in keys], "-") for j, (b, k) in enumerate(finals.items())
            ]
            lo_all, hi_all = [], []
            for backend, label, recs, style in lines:
                pts = [(p.k, tflops_range(r)) for p, r in zip(keys, recs, strict=True) if r]
                pts = [(k, b) for k, b in pts if b is not None]
                if not pts:
                    continue
                ks = [k for k, _ in pts]
                mid = [b[1] for _, b in pts]
                err = [[b[1] - b[0] for _, b in pts], [b[2] - b[1] for _, b in pts]]
                kw = {"markersize": 3, "capsize": 2, "color": _color(backend), "label": label}
                ax.errorbar(ks, mid, yerr=err, fmt=style + "o", **kw)
                lo_all += [b[0] for _, b in pts]
                hi_all += [b[2] for _, b in pts]
            ks = [p.k for p in keys]
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.minorticks_off()
            ax.set_xlabel(f"K  (M = N = {KSWEEP_MN})")
            ax.set_ylabel("TFLOPS (p20-p80)")
            if lo_all:
                pad = max(0.05 * (max(hi_all) - min(lo_all)), 0.01 * max(hi_all))
                ax.set_ylim(min(lo_all) - pad, max(hi_all) + pad)
            ax.set_title(f"K sweep, {dtype}")
            ax.legend(loc="lower right")
    return fig


# ---------------------------------------------------------------------------------------- chain
def figure_chain(ds: Dataset, problem: Problem | None) -> Any:
    """Median time per rung, one panel per backend, shared log axis."""
    with _style():
        from matplotlib.ticker import FormatStrFormatter

        backends = ds.backends()
        n = max(1, len(backends))
        fig = _figure(max(6.0, 4.2 * n), 4.6)
        axes = fig.subplots(1, n, squeeze=False, sharey=True)
        if problem is None or not backends:
            _empty(axes[0, 0], "no DSL rungs measured yet")
            fig.suptitle("Speedup chain")
            return fig
        table = chain_table(ds, problem)
        # Shared x axis: every rung any backend's chain has (rung 8 only where some has it).
        chain = sorted({row.rung for rows in table.values() for row in rows})
        all_ms = [v for rows in table.values() for row in rows for v in (row.p20_ms, row.p80_ms)]
        all_ms = [v for v in all_ms if v]
        for ax, backend in zip(axes[0], backends, strict=True):
            rows = table[backend]
            timed = [row for row in rows if row.median_ms]
            # cuBLAS of the run the chain's last timed rung comes from
            ref = ds.cublas(problem, timed[-1].record) if timed else None
            if timed:
                ms = [row.median_ms or 0.0 for row in timed]
                err = [
                    [m - (row.p20_ms or m) for m, row in zip(ms, timed, strict=True)],
                    [(row.p80_ms or m) - m for m, row in zip(ms, timed, strict=True)],
                ]
                ax.errorbar(
                    [row.rung for row in timed],
                    ms,
                    yerr=err,
                    fmt="-o",
                    markersize=4,
                    capsize=2.5,
                    color=_color(backend),
                )
            for row in rows:
                _annotate_rung(ax, row, first=bool(timed) and row is timed[0])
            if ref and ref.median_ms:
                label = f"cuBLAS {ref.median_ms:.3g} ms"
                ax.axhline(ref.median_ms, color="k", linestyle="--", linewidth=1, label=label)
                ax.legend(loc="upper right")
                all_ms.append(ref.median_ms)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
            ax.set_xticks(chain, [f"{r} {Rung(r).label}" for r in chain], **_SLANT)
            ax.set_xlim(0.5, chain[-1] + 0.5)
            ax.set_title(backend)
        if all_ms:
            axes[0, 0].set_ylim(min(all_ms) / 2.5, max(all_ms) * 4.0)
        axes[0, 0].set_ylabel("median time per GEMM (ms, log; p20-p80 bars)")
        fig.suptitle(f"Speedup chain at {problem.key}: each rung changes one thing")
    return fig


def _annotate_rung(ax: Any, row: ChainRow, first: bool) -> None:
    if row.median_ms is None:
        ax.annotate(
            row.status,
            (row.rung, 0.5),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="center",
            fontsize=7,
            color=_RED,
            rotation=90,
        )
        return
    label = f"{row.median_ms:.3g} ms"
    if row.step:
        label += f"\nx{row.step:.2f} step" + (" (other run)" if row.other_run else "")
    if row.total and not first:
        label += f"\nx{row.total:.1f} total"
    ax.annotate(
        label,
        (row.rung, row.p80_ms or row.median_ms),
        xytext=(0, 4),
        va="bottom",
        fontsize=6.5,
        **_NOTE,
    )
    if row.rung >= Rung.MULTI_CONSUMER and row.config:
        ax.annotate(
            row.config.replace(",", ",\n"),
            (row.rung, row.p20_ms or row.median_ms),
            xytext=(0, -4),
            va="top",
            fontsize=6,
            color="#555555",
            **_NOTE,
        )


# ------------------------------------------------------------------------------------- heat map
def figure_heatmap(ds: Dataset) -> Any:
    """% of cuBLAS, diverging at 100, clipped to 90..110; every cell labelled to 0.1 %. One
    panel per dtype, so the column labels stay short."""
    with _style():
        from matplotlib.colors import Normalize

        rows, cols, grid = pct_table(ds)
        dtypes = _dtypes(cols)
        per = max([sum(p.dtype == d for p in cols) for d in dtypes] or [0])
        fig = _figure(max(6.0, 0.62 * per + 3.8), max(2.6, len(dtypes) * (0.5 * len(rows) + 1.5)))
        axes = fig.subplots(max(1, len(dtypes)), 1, squeeze=False)[:, 0]
        fig.suptitle("% of cuBLAS in the same run (above 100 = faster than cuBLAS)")
        if not rows or not cols:
            _empty(axes[0], "no DSL kernels measured yet")
            return fig
        norm = Normalize(*_HEAT_RANGE, clip=True)
        half = _HEAT_RANGE[1] - 100.0
        for ax, dtype in zip(axes, dtypes, strict=True):
            js = [j for j, p in enumerate(cols) if p.dtype == dtype]
            sub = [[row[j] for j in js] for row in grid]
            data = [[math.nan if v is None else v for v in row] for row in sub]
            im = ax.imshow(data, cmap="RdBu", norm=norm, aspect="auto")
            for i, row in enumerate(sub):
                for j, v in enumerate(row):
                    dark = v is not None and abs(v - 100.0) > 0.6 * half
                    text = "-" if v is None else f"{v:.1f}"
                    color = "white" if dark else "black"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
            ax.set_xticks(
                range(len(js)), [f"{cols[j].m}x{cols[j].n}x{cols[j].k}" for j in js], **_SLANT
            )
            ax.set_yticks(range(len(rows)), rows, fontsize=7)
            ax.set_title(dtype)
            ax.grid(False)
        lo, hi = _HEAT_RANGE
        fig.colorbar(
            im, ax=list(axes), extend="both", label=f"% of cuBLAS (clipped to {lo:g}-{hi:g})"
        )
    return fig


# ---------------------------------------------------------------------------------- shape sweep
#: Marker per sweep rung: rung 7 hollow grey squares (the before), rung 8 filled circles in the
#: backend's colour (the kernel the sweep is about).
_SWEEP_MARK = MappingProxyType(
    {
        int(Rung.MULTI_CONSUMER): {"marker": "s", "fillstyle": "none", "markersize": 4.5},
        int(Rung.SHAPE_ADAPTIVE): {"marker": "o", "markersize": 4.0},
    }
)
_SWEEP_GREY = "#7f7f7f"
#: The dashed line: the lowest % of cuBLAS rung 8 may reach at any shape of the sweep.
_SWEEP_FLOOR = 90.0


def _shape(p: Problem) -> str:
    return f"{p.m}x{p.n}x{p.k}"


def _sweep_label(panel: SweepPanel, rung: int) -> str:
    st = panel.stats[rung]
    text = (
        f"r{rung} {st.name}: geomean {st.geomean:.0f} %, worst {st.worst:.0f} % at "
        f"{_shape(st.worst_problem)}"
    )
    # a geomean over fewer shapes than the panel shows is not comparable with a full one
    return text + (
        f" ({st.shapes} of {len(panel.rows)} shapes)" if st.shapes < len(panel.rows) else ""
    )


def _sweep_panels(ds: Dataset) -> list[SweepPanel]:
    """The ``sweep`` suite's panels, then each held-out suite's (shapes never tuned on)."""
    return [p for suite in ("sweep", *held_out_suites(ds)) for p in sweep_table(ds, suite)]


def figure_sweep(ds: Dataset) -> Any:
    """Rung 7 and rung 8 as % of cuBLAS over the sweep suite and over each held-out random
    suite: one panel per (suite, dtype, backend), stacked so that the shapes get the
    figure's width."""
    with _style():
        panels = _sweep_panels(ds)
        shapes = max([len(panel.rows) for panel in panels] or [0])
        # the legend (outside, right) takes about 4 in whatever the number of shapes
        fig = _figure(max(9.5, 0.24 * shapes + 4.5), 3.2 * max(1, len(panels)) + 0.5)
        axes = fig.subplots(max(1, len(panels)), 1, squeeze=False)[:, 0]
        fig.suptitle(
            "Shape sweep and held-out shapes: rung 7 (one config) vs rung 8 (config per shape), "
            "% of cuBLAS in the same run"
        )
        if not panels:
            _empty(axes[0], "no rung-7 or rung-8 results on the sweep suite yet")
            return fig
        for ax, panel in zip(axes, panels, strict=True):
            _sweep_panel(ax, panel)
    return fig


def _m_groups(ax: Any, rows: tuple[SweepRow, ...]) -> None:
    """The sweep's M groups (decode to prefill), separated and named along the top."""
    starts = [i for i, row in enumerate(rows) if i == 0 or row.problem.m != rows[i - 1].problem.m]
    for a, b in zip(starts, [*starts[1:], len(rows)], strict=True):
        if a:
            ax.axvline(a - 0.5, color="#bbbbbb", linewidth=0.6)
        ax.text(
            (a + b - 1) / 2,
            0.98,
            f"M={rows[a].problem.m}",
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="top",
            fontsize=6,
            color="#555555",
        )


def _sweep_panel(ax: Any, panel: SweepPanel) -> None:
    rows = panel.rows
    rungs = list(panel.kernels)
    top = [110.0]
    for j, rung in enumerate(rungs):
        # side by side within a shape, so that equal values do not hide each other
        off = (j - (len(rungs) - 1) / 2) * 0.22
        pts = [(i + off, row.pct[rung]) for i, row in enumerate(rows) if row.pct[rung] is not None]
        if pts:
            ax.plot(
                [x for x, _ in pts],
                [y for _, y in pts],
                linestyle="none",
                color=_color(panel.backend) if rung == Rung.SHAPE_ADAPTIVE else _SWEEP_GREY,
                label=_sweep_label(panel, rung),
                **_SWEEP_MARK.get(rung, {"marker": "D", "markersize": 4.0}),
            )
            top.append(max(y for _, y in pts))
        for i, row in enumerate(rows):
            rec = row.records[rung]
            if rec is not None and row.pct[rung] is None:
                status = "not timed" if rec.status.value == "ok" else rec.status.value
                ax.annotate(
                    f"r{rung} {status}",
                    (i + off, 0.02),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=5.5,
                    color=_RED,
                )
    ax.axhline(100, color=_COLORS["cublas"], linewidth=0.9, label="cuBLAS (100 %)")
    ax.axhline(
        _SWEEP_FLOOR,
        color=_COLORS["cublas"],
        linewidth=0.8,
        linestyle="--",
        label=f"{_SWEEP_FLOOR:g} %",
    )
    if panel.suite == "sweep":
        _m_groups(ax, rows)  # a held-out suite's M rarely repeats: its ticks name it
    ax.set_ylim(0, max(top) * 1.12)
    ax.set_xticks(
        range(len(rows)), [_shape(row.problem) for row in rows], **{**_SLANT, "fontsize": 6}
    )
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel("% of cuBLAS (same run)")
    where = "sweep" if panel.suite == "sweep" else f"held out: {panel.suite}"
    ax.set_title(f"{panel.backend}, {panel.dtype} ({where})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


# ------------------------------------------------------------------------------------- markdown
def _fmt(v: Any, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _md_table(header: str | list[str], rows: Iterable[list[str]]) -> list[str]:
    """A markdown table; ``header`` is a list or one string of ``" | "``-separated names."""
    if isinstance(header, str):
        header = header.split(" | ")
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _run_names(ds: Dataset) -> dict[int, str]:
    """id(document) -> "run N" (bench documents, numbered oldest first from 1)."""
    return {id(d): f"run {i}" for i, d in enumerate(ds.runs, 1)}


def environment_lines(ds: Dataset) -> list[str]:
    """One bullet per run: device, driver and CUDA, power and clocks, versions, timer."""
    lines = []
    for i, doc in enumerate(ds.runs, 1):
        env = doc.environment
        l2 = env.get("l2_bytes")
        t = env.get("timer") or {}
        run = env.get("run") or {}
        pk = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
        dirty = {True: " (uncommitted changes)", False: ""}.get(env.get("git_dirty"), "")
        kind = "tune run" if run.get("tune") else ("check-only run" if _check_only(doc) else "run")
        lines += [
            f"- **run {i}** `{Path(doc.source or '?').name}` ({kind}, created {doc.created}):",
            f"  {env.get('gpu', env.get('device', '?'))}, {env.get('sm_count', '?')} SMs, L2 "
            + (f"{l2 / 2**20:.0f} MiB" if l2 else "?")
            + f"; driver {env.get('driver', '?')}, CUDA {env.get('torch_cuda', '?')}; power limit "
            f"{_fmt(env.get('power_limit_w'), '.0f')} W; max clocks SM "
            f"{env.get('max_sm_clock_mhz', '?')} MHz, memory {env.get('max_mem_clock_mhz', '?')} "
            f"MHz; git `{env.get('git_sha') or '?'}`{dirty}",
            f"  packages: {pk or '?'}",
            f"  timer: warm-up {t.get('warmup_s', '?')} s; >= {t.get('min_samples', '?')} "
            f"samples and >= {t.get('min_time_s', '?')} s per round (at most "
            f"{t.get('max_samples', '?')}); {t.get('rounds', '?')} round-robin rounds; inputs "
            f"rotated over >= {t.get('rotate_factor', '?')}x L2",
        ]
    for doc in ds.documents:
        if doc.kind == "codegen":
            env = doc.environment
            pk = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
            lines.append(
                f"- codegen `{Path(doc.source or '?').name}` (created {doc.created}): "
                f"{pk or '?'}; git `{env.get('git_sha') or '?'}`"
            )
    return lines


def _check_only(doc: Any) -> bool:
    return bool(doc.bench) and all(r.timing is None for r in doc.bench)


def _pick_cell(ds: Dataset, rec: BenchRecord | None, fallback: bool) -> str:
    if rec is None:
        return "-"
    if not rec.timed:
        return "correct, not timed" if rec.status.value == "ok" else rec.status.value
    mark = " †" if fallback else ""
    return f"{_fmt(rec.tflops)} ({_fmt(ds.pct_of_cublas(rec), '.1f')}%){mark}"


def cross_table(ds: Dataset) -> list[str]:
    """Problem x final kernel: TFLOPS and % of cuBLAS, with the config that ran."""
    finals = ds.final_kernels()
    problems = ds.problems()
    picks = {p: [ds.pick(k, p) for k in finals.values()] for p in problems}
    configured = {
        k
        for j, k in enumerate(finals.values())
        if any(picks[p][j] and picks[p][j].config for p in problems)
    }
    header = ["problem", "cuBLAS TFLOPS"]
    for k in finals.values():
        header.append(f"{k} TFLOPS (% cuBLAS)")
        if k in configured:
            header.append(f"{k} config")
    rows, any_fallback = [], False
    for p in problems:
        ref = _reference(ds, p, picks[p])
        row = [p.key, _fmt(ref.tflops if ref else None)]
        for j, k in enumerate(finals.values()):
            rec = picks[p][j]
            fb = ds.picked_fastest(k, p)
            any_fallback |= fb
            row.append(_pick_cell(ds, rec, fb))
            if k in configured:
                row.append(_cfg(rec))
        rows.append(row)
    out = _md_table(header, rows)
    if any_fallback:
        out += [
            "",
            "† no record of the kernel's own config choice for this problem (a tune run only): "
            "the fastest config measured is shown instead.",
        ]
    return out


def chain_lines(ds: Dataset, problem: Problem | None) -> list[str]:
    if problem is None:
        return ["No chain measured yet."]
    md: list[str] = []
    for backend, rows in chain_table(ds, problem).items():
        md += [f"**{backend}** at {problem.key}:", ""]
        md += _md_table(
            "rung | kernel | config | status | median ms | p20-p80 ms | TFLOPS | step | total",
            [
                [
                    f"{c.rung} {c.name}",
                    c.kernel or "-",
                    (f"`{c.config}`" if c.config else "-")
                    + (" †" if c.fastest_fallback else "")
                    + (" ‡" if c.other_run else ""),
                    c.status,
                    _fmt(c.median_ms, ".4f"),
                    f"{c.p20_ms:.4f}-{c.p80_ms:.4f}" if c.p20_ms and c.p80_ms else "-",
                    _fmt(c.tflops),
                    _fmt(c.step, ".2f"),
                    _fmt(c.total, ".1f"),
                ]
                for c in rows
            ],
        )
        md += [""]
    md += [
        "Every rung of a backend's chain comes from one run (the run that timed the most of its "
        "rungs), so each step compares kernels timed side by side; ‡ marks a rung that run "
        "lacked, taken from another run.",
        "",
    ]
    return md


def tuning_lines(ds: Dataset) -> list[str]:
    """Every timed config of every (kernel, problem) that has more than one."""
    groups = ds.config_groups()
    if not groups:
        return ["No kernel has more than one timed config for a problem yet."]
    names = _run_names(ds)
    md: list[str] = []
    for kernel, problem, recs in groups:
        md += [f"**{kernel}** at {problem.key}:", ""]
        rows = []
        for i, r in enumerate(recs):
            marks = (["fastest"] if i == 0 else []) + (["selected"] if r.selected else [])
            t = r.timing
            rows.append(
                [
                    _cfg(r),
                    _fmt(r.median_ms, ".4f"),
                    f"{t.p20_ms:.4f}-{t.p80_ms:.4f}" if t else "-",
                    _fmt(ds.pct_of_cublas(r), ".1f"),
                    _fmt(r.tflops_per_ghz),
                    ", ".join(marks) or "-",
                    names.get(id(ds.run_of(r)), "?"),
                ]
            )
        md += _md_table(
            "config | median ms | p20-p80 ms | % of cuBLAS (same run) | TFLOPS/GHz | mark | run",
            rows,
        )
        md += [""]
    return md


def records_lines(ds: Dataset) -> list[str]:
    names = _run_names(ds)
    recs = sorted(
        ds.timed(),
        key=lambda r: (
            problem_order(r.problem),
            backend_order(r.backend),
            r.rung,
            r.kernel,
            r.config or "",
        ),
    )
    return _md_table(
        "kernel | config | sel. | problem | median ms | p20-p80 ms | cv | TFLOPS | TFLOPS/GHz | "
        "% cuBLAS | SM MHz | W | max err | run",
        [
            [
                r.kernel,
                _cfg(r),
                {True: "yes", False: "no"}.get(r.selected, "-"),  # type: ignore[arg-type]
                r.problem.key,
                f"{r.timing.median_ms:.4f}",
                f"{r.timing.p20_ms:.4f}-{r.timing.p80_ms:.4f}",
                f"{r.timing.cv:.3f}",
                _fmt(r.tflops),
                _fmt(r.tflops_per_ghz),
                _fmt(ds.pct_of_cublas(r)),
                _fmt(r.telemetry.sm_clock_mhz_mean if r.telemetry else None, ".0f"),
                _fmt(r.telemetry.power_w_mean if r.telemetry else None, ".0f"),
                _fmt(r.check.max_abs_err if r.check else None, ".3g"),
                names.get(id(ds.run_of(r)), "?"),
            ]
            for r in recs
            if r.timing is not None
        ],
    )


def failure_lines(ds: Dataset) -> list[str]:
    """Failures (wrong, error, timeout) first, then declared limitations, each with its reason."""
    names = _run_names(ds)
    bad = [r for r in ds.bench if r.status.value != "ok"]
    bad.sort(
        key=lambda r: (
            not r.status.failed,
            backend_order(r.backend),
            r.rung,
            r.kernel,
            problem_order(r.problem),
        )
    )
    checked = [r for r in ds.bench if r.status.value == "ok" and r.timing is None]
    failed = sum(r.status.failed for r in bad)
    md = [f"{failed} failed (wrong result, error, timeout), {len(bad) - failed} unsupported."]
    if bad:
        md += [""]
        md += _md_table(
            "kernel | config | problem | status | reason | run",
            [
                [
                    r.kernel,
                    _cfg(r),
                    r.problem.key,
                    r.status.value,
                    _cell(r.reason)[:200],
                    names.get(id(ds.run_of(r)), "?"),
                ]
                for r in bad
            ],
        )
    if checked:
        kernels = {r.kernel for r in checked}
        md += [
            "",
            f"Checked for correctness without timing (all correct): {len(checked)} records of "
            f"{len(kernels)} kernels on {len({r.problem for r in checked})} problems.",
        ]
    return md


def codegen_lines(ds: Dataset) -> list[str]:
    if not ds.codegen:
        return ["No codegen results (run `python -m harness codegen`)."]
    recs = sorted(ds.codegen, key=lambda r: (backend_order(r.backend), r.arch, r.rung, r.kernel))
    return _md_table(
        "kernel | config | arch | status | registers | spills (B) | smem (B) | compile s | lines | "
        "PTX features | via raw PTX | notes",
        [
            [
                r.kernel,
                _cfg(r),
                r.arch,
                r.status.value
                if r.status.value == "ok"
                else f"{r.status.value}: {_cell(r.reason)[:60]}",
                _fmt(r.registers, "d"),
                _fmt(r.spill_bytes, "d"),
                _fmt(r.shared_bytes, "d"),
                _fmt(r.compile_seconds, ".2f"),
                _fmt(r.lines_of_code, "d"),
                ", ".join(r.features) or "-",
                ", ".join(r.raw_ptx) or "-",
                _cell("; ".join(r.notes)) or "-",
            ]
            for r in recs
        ],
    )


def _sweep_cell(ds: Dataset, rec: BenchRecord | None, pct: float | None) -> str:
    if rec is None:
        return "-"
    if pct is None:
        return "correct, not timed" if rec.status.value == "ok" else rec.status.value
    return f"{pct:.1f}" + (" †" if ds.picked_fastest(rec.kernel, rec.problem) else "")


def sweep_lines(ds: Dataset) -> list[str]:
    """Per (dtype, backend): each sweep shape's cuBLAS TFLOPS, rung 7 and rung 8 as % of cuBLAS
    and the configs they ran, then each rung's geomean and worst shape."""
    panels = _sweep_panels(ds)
    if not panels:
        return ["No rung-7 or rung-8 results on the `sweep` suite yet."]
    md: list[str] = []
    any_fallback = False
    for panel in panels:
        rungs = list(panel.kernels)
        configured = [
            g for g in rungs if any(r.records[g] and r.records[g].config for r in panel.rows)
        ]
        header = ["shape", "cuBLAS TFLOPS"]
        header += [f"r{g} {Rung(g).label} (% cuBLAS)" for g in rungs]
        header += [f"r{g} config" for g in configured]
        rows = []
        for row in panel.rows:
            cells = [_shape(row.problem), _fmt(row.cublas.tflops if row.cublas else None)]
            cells += [_sweep_cell(ds, row.records[g], row.pct[g]) for g in rungs]
            cells += [_cfg(row.records[g]) for g in configured]
            any_fallback |= any(c.endswith(" †") for c in cells)
            rows.append(cells)
        kernels = ", ".join(f"`{k}`" for k in panel.kernels.values())
        where = "`sweep`" if panel.suite == "sweep" else f"held out, `{panel.suite}`"
        md += [f"**{panel.backend}** ({where}, {panel.dtype}; {kernels}):", ""]
        md += _md_table(header, rows)
        md += [""]
        for g in rungs:
            st = panel.stats.get(g)
            if st is None:
                md.append(f"- r{g} {Rung(g).label}: no shape timed")
                continue
            md.append(
                f"- r{g} {st.name}: geomean {st.geomean:.1f} % of cuBLAS, worst {st.worst:.1f} % "
                f"at {_shape(st.worst_problem)} ({st.shapes} of {len(panel.rows)} shapes timed)"
            )
        r7, r8 = SWEEP_RUNGS
        both = [r for r in panel.rows if r.pct.get(r7) is not None and r.pct.get(r8) is not None]
        if both:
            below = [r for r in both if r.pct[r8] < r.pct[r7]]  # type: ignore[operator]
            md.append(
                f"- r{r8} below r{r7} at {len(below)} of the {len(both)} shapes timed with both"
                + (": " if below else "")
                + ", ".join(
                    f"{_shape(r.problem)} ({r.pct[r8]:.1f} vs {r.pct[r7]:.1f})" for r in below
                )
            )
        md += [""]
    md += [
        "Each % is the kernel's own config choice against cuBLAS timed in the same run; the "
        "geomean is the geometric mean of those ratios over the shapes timed. Shapes run from "
        "decode (M = 1) to prefill (M = 8192), ordered by M, then N, then K."
    ]
    if any_fallback:
        md += [
            "",
            "† no record of the kernel's own config choice for this shape (a tune run only): "
            "the fastest config measured is shown instead.",
        ]
    return md


def render_markdown(ds: Dataset, chain_key: Problem | None) -> str:
    """The whole report.md: environment, every figure with the numbers behind it, failures."""
    backends = ", ".join(["cublas", *ds.backends()])
    md = [
        "# GEMM across DSLs: results",
        "",
        "Rendered by `python -m reports` from the result files listed under Sources; every "
        "number below comes from those files. A kernel's number is the record of the config it "
        "chooses by itself (the latest run wins; a correctness-only re-check never hides a "
        f"timing). Backends in the order {backends}; problems by dtype, then shape family "
        f"(square M = N = K, K sweep M = N = {KSWEEP_MN}, other), then size.",
        "",
        "## Environment",
        "",
        *(environment_lines(ds) or ["- no bench results"]),
        "",
        "## Cross-DSL performance",
        "",
        f"![cross-DSL TFLOPS]({FIGURES['cross_dsl']})",
        "",
        "Top row of each dtype: TFLOPS (bars at the median, p20-p80 error bars); bottom row: % "
        "of cuBLAS measured in the same run. TFLOPS below are medians.",
        "",
        *cross_table(ds),
        "",
        f"## K sweep (M = N = {KSWEEP_MN})",
        "",
        f"![K sweep]({FIGURES['ksweep']})",
        "",
        "## Speedup chain",
        "",
        f"![speedup chain]({FIGURES['chain']})",
        "",
        *chain_lines(ds, chain_key),
        "## % of cuBLAS",
        "",
        f"![percent of cuBLAS]({FIGURES['pct_cublas']})",
        "",
        "## Shape sweep",
        "",
        f"![shape sweep]({FIGURES['sweep']})",
        "",
        *sweep_lines(ds),
        "",
        "## Configs (tuning)",
        "",
        *tuning_lines(ds),
        "",
        "## All timed records",
        "",
        *records_lines(ds),
        "",
        "## Not timed",
        "",
        *failure_lines(ds),
        "",
        "## Codegen (compile-only)",
        "",
        *codegen_lines(ds),
        "",
        "## Sources",
        "",
        *(f"- `{Path(s).name}`" for s in ds.sources),
        "",
    ]
    return "\n".join(md)


# --------------------------------------------------------------------------------------- README
README_START = "<!-- results:start (generated by python -m reports --readme) -->"
_START_PREFIX = "<!-- results:start"
README_END = "<!-- results:end -->"
HEADLINE_PROBLEMS = tuple(Problem(s, s, s, "fp16") for s in (4096, 8192, 16384))


def readme_summary(ds: Dataset) -> str:
    """The README's headline table: each DSL's final kernel vs cuBLAS at the headline shapes."""
    finals = ds.final_kernels()
    env = ds.runs[-1].environment if ds.runs else {}
    created = ds.runs[-1].created if ds.runs else None
    lines = [
        f"{env.get('gpu', '?')} ({_fmt(env.get('power_limit_w'), '.0f')} W power limit), runs "
        f"up to {(created or '?')[:10]}, cuBLAS (`torch.matmul`) timed in the same run. Each "
        "DSL's final kernel (its highest measured rung of the seed chain, 1-7; rung 8 is in the "
        "shape sweep), TFLOPS (% of cuBLAS):",
        "",
    ]
    rows = []
    for p in HEADLINE_PROBLEMS:
        picks = [ds.pick(k, p) for k in finals.values()]
        ref = _reference(ds, p, picks)
        if ref is None or ref.tflops is None:
            continue
        row = [p.key, f"{ref.tflops:.0f} TFLOPS"]
        for rec in picks:
            if rec is None or not rec.timed or rec.tflops is None:
                row.append("-")
                continue
            cfg = f", `{rec.config}`" if rec.config else ""
            row.append(f"{rec.tflops:.0f} ({_fmt(ds.pct_of_cublas(rec), '.1f')}%{cfg})")
        rows.append(row)
    lines += _md_table(["problem", "cuBLAS", *finals.values()], rows)
    return "\n".join(lines)


def backend_summary(ds: Dataset, backend: str) -> str:
    """A backend README's table: every timed kernel of ``backend`` at the chain problems (4096^3
    and 8192^3 fp16) and its final kernel over the K sweep, each beside cuBLAS of the same run,
    with the config it ran and its TFLOPS per GHz of SM clock."""
    kernels = sorted(
        {r.kernel: (r.arch, r.rung) for r in ds.timed() if r.backend == backend}.items(),
        key=lambda kv: kv[1],
    )
    final = ds.final_kernels().get(backend)
    chain = [Problem(s, s, s, "fp16") for s in (4096, 8192)]
    sweep = [p for p in ds.problems() if family(p) == "ksweep" and p.dtype == "fp16"]
    rows = []
    for kernel, _ in kernels:
        for p in chain + (sweep if kernel == final else []):
            rec = ds.pick(kernel, p)
            if rec is None or not rec.timed or rec.tflops is None:
                continue
            ref = ds.cublas(p, like=rec)
            rows.append(
                [
                    f"`{kernel.split('/', 1)[1]}`",
                    f"`{rec.config}`" if rec.config else "-",
                    p.key,
                    f"{rec.tflops:.0f}",
                    _fmt(ref.tflops if ref else None, ".0f"),
                    _fmt(ds.pct_of_cublas(rec)),
                    _fmt(rec.tflops_per_ghz, ".0f"),
                ]
            )
    if not rows:
        return f"No timed results of `{backend}` in `reports/results/` yet."
    env = ds.runs[-1].environment if ds.runs else {}
    head = [
        f"{env.get('gpu', '?')}, sustained timing, cuBLAS in the same run; rendered from "
        "`reports/results/` by `python -m reports --readme`.",
        "",
    ]
    header = ["kernel", "config", "problem", "TFLOPS", "cuBLAS", "% cuBLAS", "TFLOPS/GHz"]
    return "\n".join(head + _md_table(header, rows))


def update_readme(ds: Dataset, readme: Path) -> bool:
    """Replace the block between the README's result markers (any start marker text, rewritten
    to :data:`README_START`); False if it has no markers. A backend's README
    (``backends/<name>/README.md``) gets that backend's table, any other the headline table."""
    text = readme.read_text()
    start = text.find(_START_PREFIX)
    end = text.find(README_END, start)
    if start < 0 or end < 0:
        return False
    head = text[:start]
    tail = text[end + len(README_END) :]
    folder = readme.resolve().parent
    body = (
        backend_summary(ds, folder.name) if folder.parent.name == "backends" else readme_summary(ds)
    )
    readme.write_text(f"{head}{README_START}\n{body}\n{README_END}{tail}")
    return True


# ------------------------------------------------------------------------------------- top level
def render_report(
    results: Iterable[str | os.PathLike[str]],
    out: Path,
    chain_problem_key: str | None = None,
    readme: Path | Iterable[Path] | None = None,
    warn: Callable[[str], None] = lambda _m: None,
) -> list[Path]:
    """Render every figure, ``report.md``, ``results.csv`` (and ``codegen.csv`` when there are
    codegen results) into ``out``; refresh ``readme``'s results block if given. Returns the
    paths written. Unreadable inputs are named through ``warn`` and skipped."""
    ds = load_dataset(results, warn=warn)
    key = chain_problem(ds, chain_problem_key)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = {
        "cross_dsl": lambda: figure_cross_dsl(ds),
        "ksweep": lambda: figure_ksweep(ds),
        "chain": lambda: figure_chain(ds, key),
        "pct_cublas": lambda: figure_heatmap(ds),
        "sweep": lambda: figure_sweep(ds),
    }
    written = []
    for name, make in figures.items():
        save_figure(make(), out / FIGURES[name])
        written.append(out / FIGURES[name])
    (out / "report.md").write_text(render_markdown(ds, key))
    written.append(out / "report.md")
    for kind, name in (("bench", "results.csv"), ("codegen", "codegen.csv")):
        docs = [d for d in ds.documents if d.kind == kind]
        if docs:
            (out / name).write_text(to_csv(docs))
            written.append(out / name)
    readmes = [readme] if isinstance(readme, (str, Path)) else list(readme or ())
    written += [Path(r) for r in readmes if update_readme(ds, Path(r))]
    return written
