"""``cross_dsl.png``: each DSL's final kernel against cuBLAS, suite by suite.

One panel per (dtype, suite), each suite drawn as it is (every shape of it with data, shared
shapes again: the K sweep repeats 8192^3 as its K = 8192), packed into rows of the figure's
width. A panel is two strips on one x axis: TFLOPS (cuBLAS a black bar to beat, each DSL a dot
with its p20-p80 bar; a log axis where the panel's rates span more than 8x, so decode and
prefill share it) and % of cuBLAS in the same run (bars of the kernel's own spread), where the
few-percent gaps the study is about show.
"""

from __future__ import annotations

from typing import Any

from harness.gemm import Problem
from harness.records import BenchRecord, Status
from reports.data import Dataset, drawn_suites, held_out_suites, tflops_range
from reports.figures.common import (
    CUBLAS,
    GREY,
    MAX_WIDTH,
    RED,
    color,
    legend_columns,
    new_figure,
    panel_title,
    pct_band,
    reference,
    slots,
    status_text,
    style,
    suite_rows,
    suptitle,
)

__all__ = ["figure_cross_dsl"]

TITLE = "Final kernel of each DSL vs cuBLAS (torch.matmul): TFLOPS and % of cuBLAS in the same run"
#: shape slots per row of panels; a suite with more gets a row of its own
_ROW_SLOTS = 26
#: inches per shape slot (26 slots fill the 14.5 in of MAX_WIDTH)
_SLOT = 0.51
_LOG_SPAN = 8.0
_EBAR = {"fmt": "none", "elinewidth": 0.8, "capsize": 0}


def figure_cross_dsl(ds: Dataset, chain: Problem | None = None) -> Any | None:
    """TFLOPS and % of cuBLAS per (dtype, suite); ``chain`` is unused (the table's signature)."""
    finals = ds.final_kernels()
    problems = [p for p in ds.problems() if any(_shown(ds.pick(k, p)) for k in finals.values())]
    if not problems:
        return None  # nothing to draw: no file, no section
    dtypes = list(dict.fromkeys(p.dtype for p in problems))
    extra = held_out_suites(ds)
    panels = [(d, s, ps) for d in dtypes for s, ps in drawn_suites(problems, d, extra)]
    rows, width = suite_rows(panels, _ROW_SLOTS)
    long_ticks = [any(not _short_ticks(s) for _, s, _ in row) for row in rows]
    heights = [3.9 + (0.6 if long else 0.0) for long in long_ticks]
    with style():
        fig = new_figure(min(MAX_WIDTH, 1.3 + _SLOT * width), sum(heights) + 0.8)
        subs = fig.subfigures(len(rows), 1, height_ratios=heights, squeeze=False)[:, 0]
        for sf, row in zip(subs, rows, strict=True):
            widths = [slots(x) for x in row]
            pad = width - sum(widths)
            cols = len(row) + (1 if pad > 0 else 0)
            axes = sf.subplots(
                2,
                cols,
                squeeze=False,
                sharex="col",
                height_ratios=[2.2, 1.0],
                width_ratios=[*widths, pad] if pad > 0 else widths,
            )
            for j, (dtype, suite, ps) in enumerate(row):
                _panel(ds, axes[0, j], axes[1, j], ps, suite, finals)
                axes[0, j].set_title(panel_title((dtype, suite, ps)))
                if j == 0:
                    axes[0, j].set_ylabel("TFLOPS")
                    axes[1, j].set_ylabel("% of cuBLAS")
            if pad > 0:
                axes[0, -1].set_visible(False)
                axes[1, -1].set_visible(False)
        subs[0].legend(
            handles=_handles(finals),
            loc="outside upper center",
            ncol=legend_columns(fig, 1 + len(finals)),
            frameon=False,
        )
        suptitle(fig, TITLE)
    return fig


def _shown(rec: BenchRecord | None) -> bool:
    """Timed, or failed: a correctness-only record adds no point (nor a shape)."""
    return rec is not None and (rec.timed or rec.status != Status.OK)


def _short_ticks(suite: str) -> bool:
    return suite in ("square", "ksweep")


def _tick(p: Problem, suite: str) -> str:
    return {"square": str(p.m), "ksweep": str(p.k)}.get(suite, f"{p.m}x{p.n}x{p.k}")


def _handles(finals: dict[str, str]) -> list[Any]:
    from matplotlib.lines import Line2D

    out = [Line2D([], [], color=CUBLAS, linewidth=2.2, label="cuBLAS (torch.matmul)")]
    for backend, kernel in finals.items():
        out.append(Line2D([], [], color=color(backend), marker="o", linestyle="none", label=kernel))
    return out


def _panel(
    ds: Dataset,
    ax_t: Any,
    ax_p: Any,
    keys: list[Problem],
    suite: str,
    finals: dict[str, str],
) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    n = len(finals)
    offsets = [0.0] if n == 1 else [-0.28 + 0.56 * j / (n - 1) for j in range(n)]
    rates: list[float] = []
    pct_lo, pct_hi = [100.0], [100.0]
    for i, p in enumerate(keys):
        picks = [ds.pick(k, p) for k in finals.values()]
        ref = reference(ds, p, picks)
        band = tflops_range(ref) if ref is not None else None
        if band is not None:
            ax_t.hlines(band[1], i - 0.42, i + 0.42, color=CUBLAS, linewidth=2.2, zorder=2)
            rates.append(band[1])
        failed: list[str] = []
        for (backend, _), rec, dx in zip(finals.items(), picks, offsets, strict=True):
            if not _shown(rec):
                continue
            x = i + dx
            band = tflops_range(rec)
            pb = pct_band(ds, rec)
            if band is None or pb is None:
                failed.append(f"{backend} {status_text(rec)}")
                continue
            c = color(backend)
            ax_t.errorbar(x, band[1], yerr=[[band[1] - band[0]], [band[2] - band[1]]],
                          ecolor=c, **_EBAR)  # fmt: skip
            ax_t.plot(x, band[1], "o", color=c, markersize=4.2, zorder=3)
            rates += [band[0], band[2]]
            ax_p.errorbar(x, pb[1], yerr=[[pb[1] - pb[0]], [pb[2] - pb[1]]], ecolor=c, **_EBAR)
            ax_p.plot(x, pb[1], "o", color=c, markersize=3.6, zorder=3)
            pct_lo.append(pb[0])
            pct_hi.append(pb[2])
        if failed:  # one label per shape, in the TFLOPS strip (where nothing else is drawn low)
            ax_t.annotate(
                "\n".join(failed),
                (i, 0.03),
                xycoords=("data", "axes fraction"),
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=7,
                color=RED,
            )
    if not _short_ticks(suite):
        _groups(ax_t, ax_p, keys)
    if rates and max(rates) / max(min(rates), 1e-9) > _LOG_SPAN:
        ax_t.set_yscale("log")
        ax_t.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax_t.yaxis.set_minor_locator(LogLocator(base=10, subs=()))
        ax_t.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax_t.set_ylim(min(rates) / 1.6, max(rates) * 1.6)
    elif rates:  # fitted to the data, so the gap to cuBLAS shows
        span = max(rates) - min(rates)
        ax_t.set_ylim(max(0.0, min(rates) - 0.12 * span - 1), max(rates) + 0.12 * span + 1)
    ax_p.axhline(100, color=CUBLAS, linewidth=1.0, zorder=1)
    lo, hi = min(pct_lo), max(pct_hi)
    pad = max(2.0, 0.1 * (hi - lo))
    ax_p.set_ylim(lo - pad, hi + pad)
    ax_p.set_xticks(range(len(keys)), [_tick(p, suite) for p in keys])
    if not _short_ticks(suite):
        for t in ax_p.get_xticklabels():
            t.set(rotation=50, ha="right", rotation_mode="anchor", fontsize=7)
    ax_p.set_xlim(-0.6, max(len(keys), 3) - 0.4)
    ax_p.set_xlabel({"square": "M = N = K", "ksweep": "K"}.get(suite, "M x N x K"), color=GREY)
    ax_t.tick_params(labelbottom=False)
    ax_t.grid(axis="x", visible=False)
    ax_p.grid(axis="x", visible=False)


def _groups(ax_t: Any, ax_p: Any, keys: list[Problem]) -> None:
    """Separate shapes of different M (decode to prefill) by a faint line in both strips."""
    for i in range(1, len(keys)):
        if keys[i].m != keys[i - 1].m:
            for ax in (ax_t, ax_p):
                ax.axvline(i - 0.5, color="#cccccc", linewidth=0.7, zorder=0)
