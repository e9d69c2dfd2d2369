"""``chain.png``: the speedup chain, one panel per DSL on shared log axes.

Median time per rung at one problem (4096^3 fp16 unless ``--chain-problem`` says otherwise)
with p20-p80 bars and cuBLAS dashed. Each rung's time, its step over the rung before and its
total over rung 1 stand in a band across the top of the panel, in the rung's column, so no
label meets a line or another label. Under each panel: the configs of the configurable rungs
and a note for every step that made the kernel slower (red). ‡ marks a step whose rung comes
from another run than the rest of the chain.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from harness.gemm import Problem
from harness.protocol import Rung
from reports.data import ChainRow, Dataset, chain_table, has_chain
from reports.figures.common import (
    CUBLAS,
    GREY,
    MAX_WIDTH,
    RED,
    color,
    new_figure,
    style,
    suptitle,
)

__all__ = ["figure_chain"]

#: A step below this is a slowdown worth a note (the run-to-run spread is about 1 %).
SLOWER = 0.95
_NOTE = {"textcoords": "offset points", "fontsize": 7.5}


def figure_chain(ds: Dataset, chain: Problem | None = None) -> Any | None:
    """Median time per rung, one panel per backend (two per row), shared log axis."""
    title = "Speedup chain: each rung changes one thing"
    backends = ds.backends()
    table = chain_table(ds, chain) if chain is not None else {}
    if chain is None or not backends or not has_chain(table):
        return None  # nothing to draw: no file, no section
    with style():
        from matplotlib.ticker import FuncFormatter, LogLocator

        ncols = 1 if len(backends) == 1 else 2
        nrows = math.ceil(len(backends) / ncols)
        fig = new_figure(MAX_WIDTH if ncols == 2 else 8.0, 4.3 * nrows + 0.6)
        axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
        flat = [ax for row in axes for ax in row]
        # Shared x axis: every rung any backend's chain has (rung 8 only where some has it).
        rungs = sorted({row.rung for rows in table.values() for row in rows})
        all_ms = [v for rows in table.values() for row in rows for v in (row.p20_ms, row.p80_ms)]
        all_ms = [v for v in all_ms if v]
        for ax, backend in zip(flat, backends, strict=False):
            _panel(ds, ax, backend, table[backend], chain, all_ms)
            ax.set_xticks(rungs, [f"{r} {Rung(r).label}" for r in rungs])
            for t in ax.get_xticklabels():
                t.set(rotation=25, ha="right", rotation_mode="anchor")
            ax.set_xlim(rungs[0] - 0.6, rungs[-1] + 0.9)
        for ax in flat[len(backends) :]:
            ax.set_visible(False)
        if all_ms:  # the data in the lower 70 %, the label band above it
            lo, hi = min(all_ms) / 1.5, max(all_ms) * 1.15
            flat[0].set_ylim(lo, hi * (hi / lo) ** 0.45)
        flat[0].yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        flat[0].yaxis.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
        flat[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        flat[0].yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        for row in axes:
            row[0].set_ylabel("median ms per GEMM (log)")
        suptitle(fig, f"{title} ({chain.key}; p20-p80 bars)")
    return fig


def _panel(
    ds: Dataset, ax: Any, backend: str, rows: list[ChainRow], chain: Problem, all_ms: list[float]
) -> None:
    ax.set_yscale("log")
    timed = [row for row in rows if row.median_ms]
    c = color(backend)
    if timed:
        ms = [row.median_ms or 0.0 for row in timed]
        err = [
            [m - (row.p20_ms or m) for m, row in zip(ms, timed, strict=True)],
            [(row.p80_ms or m) - m for m, row in zip(ms, timed, strict=True)],
        ]
        ax.errorbar([row.rung for row in timed], ms, yerr=err, fmt="-o", markersize=4.5,
                    capsize=2.5, color=c)  # fmt: skip
    for i, row in enumerate(timed):
        _label(ax, row, first=i == 0)
    for row in rows:
        if row.median_ms is None:
            ax.annotate(
                row.status,
                (row.rung, 0.04),
                xycoords=("data", "axes fraction"),
                ha="center",
                va="bottom",
                rotation=90,
                fontsize=7.5,
                color=RED,
            )
    # cuBLAS of the run the chain's last timed rung comes from
    ref = ds.cublas(chain, timed[-1].record) if timed else None
    if ref and ref.median_ms:
        ax.axhline(ref.median_ms, color=CUBLAS, linestyle="--", linewidth=1)
        ax.annotate(
            f"cuBLAS {ref.median_ms:.3g} ms",
            (0.01, ref.median_ms),
            xycoords=("axes fraction", "data"),
            xytext=(2, -3),
            va="top",
            ha="left",
            color=CUBLAS,
            **_NOTE,
        )
        all_ms.append(ref.median_ms)
    ax.set_title(backend, color=c, fontweight="bold")
    configs, slower = _notes(backend, timed)
    # configs in grey as the axis label; slowdowns in red right under it (in the layout too)
    ax.set_xlabel("\n".join(configs) or " ", color=GREY, fontsize=7.5, loc="left")
    if slower:
        ax.annotate(
            "\n".join(slower),
            (0, 0),
            xycoords=ax.xaxis.label,
            xytext=(0, -2),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=7.5,
            color=RED,
        )


def _label(ax: Any, row: ChainRow, first: bool) -> None:
    """Time, step and total in the rung's column of the band across the top of the panel."""
    lines = [f"{row.median_ms:.3g} ms"]
    if row.step:
        lines.append(f"x{row.step:.2f} step" + (" ‡" if row.other_run else ""))
    if row.total and not first:
        lines.append(f"x{row.total:.1f} total")
    slower = row.step is not None and row.step < SLOWER
    ax.annotate(
        "\n".join(lines),
        (row.rung, 0.97),
        xycoords=("data", "axes fraction"),
        ha="center",
        va="top",
        color=RED if slower else "black",
        fontsize=7.5,
    )


def _notes(backend: str, timed: list[ChainRow]) -> tuple[list[str], list[str]]:
    """(configs of the configurable rungs and the ‡ note, every slowdown), wrapped to the
    panel."""
    out: list[str] = []
    slower: list[str] = []
    for row in timed:
        if row.config and row.rung >= Rung.MULTI_CONSUMER:
            out += textwrap.wrap(
                f"rung {row.rung} config: {row.config.replace(',', ', ')}",
                width=110,
                subsequent_indent="    ",
            )
    for i, row in enumerate(timed[1:], 1):
        if row.step is not None and row.step < SLOWER:
            prev = timed[i - 1].rung
            slower.append(
                f"rung {row.rung} is slower than rung {prev} (x{row.step:.2f}); "
                f"see backends/{backend}/README.md"
            )
    if any(row.other_run for row in timed):
        out.append("‡ rung timed in another run than the rest of this chain")
    return out, slower
