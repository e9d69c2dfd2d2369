"""The table of figures: each figure declared once (name, file, title, function).

A figure function is a pure function of the :class:`~reports.data.Dataset` and the chain's
problem (used by the chain only) returning a matplotlib ``Figure``, or None when the results
hold nothing it draws; :func:`reports.render.render_report` writes each figure drawn to its
file (and removes a stale one that was not), and ``report.md`` shows each under its title. A
new plot is one module and one entry here. Importing this package imports no matplotlib (the
figure modules import it inside their functions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.gemm import Problem
from reports.data import Dataset
from reports.figures.chain import figure_chain
from reports.figures.cross_dsl import figure_cross_dsl
from reports.figures.heatmap import figure_heatmap
from reports.figures.ksweep import figure_ksweep
from reports.figures.sweep import figure_sweep

__all__ = ["FIGURES", "FigureSpec", "figure_file"]


@dataclass(frozen=True)
class FigureSpec:
    """One figure: its name (the report's anchor), file, title and drawing function."""

    name: str
    file: str
    title: str
    draw: Callable[[Dataset, Problem | None], Any | None]


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("cross_dsl", "cross_dsl.png", "Cross-DSL performance", figure_cross_dsl),
    FigureSpec("ksweep", "ksweep.png", "K sweep", figure_ksweep),
    FigureSpec("chain", "chain.png", "Speedup chain", figure_chain),
    FigureSpec("pct_cublas", "pct_cublas.png", "% of cuBLAS", figure_heatmap),
    FigureSpec("sweep", "sweep.png", "Shape sweep", figure_sweep),
)


def figure_file(name: str) -> str:
    """The file of the figure called ``name`` (KeyError naming the known ones)."""
    for spec in FIGURES:
        if spec.name == name:
            return spec.file
    raise KeyError(f"no figure {name!r}; the figures are {', '.join(f.name for f in FIGURES)}")
