"""What every figure shares: colours, the rc style, the canvas, packing panels into rows.

Sizes are in inches at :data:`DPI`; :data:`MAX_WIDTH` keeps every PNG at most 1600 px wide, the
width a reader sees it at (the README, a markdown viewer), so nothing needs zooming. Fonts are
no smaller than 7 pt (about 11 px). Figures are built on the Agg canvas without pyplot, so no
global figure state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from harness.gemm import Problem
from harness.records import BenchRecord, CodegenRecord
from reports.data import OTHER, Dataset

__all__ = [
    "DPI",
    "MAX_WIDTH",
    "RED",
    "color",
    "legend_columns",
    "new_figure",
    "pack_rows",
    "panel_title",
    "reference",
    "save_figure",
    "shape",
    "slots",
    "style",
    "suite_rows",
    "suite_title",
    "suptitle",
]

DPI = 110
#: inches: 1595 px at :data:`DPI`
MAX_WIDTH = 14.5
RED = "#b00000"
GREY = "#555555"
CUBLAS = "#222222"
_COLORS = MappingProxyType(
    {
        "cublas": CUBLAS,
        "tirx": "#d62728",
        "gluon": "#1f77b4",
        "cutedsl": "#2ca02c",
        "tilus": "#9467bd",
    }
)
_FALLBACK = ("#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_STYLE = MappingProxyType(
    {
        "font.size": 8.5,
        "axes.titlesize": 9.5,
        "axes.labelsize": 8.5,
        "xtick.labelsize": 7.5,
        "ytick.labelsize": 7.5,
        "legend.fontsize": 8,
        "figure.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
    }
)
_SUITE_TITLE = MappingProxyType(
    {
        "square": "square suite (M = N = K)",
        "ksweep": "K sweep (M = N = 8192)",
        "llm": "llm suite (4096 tokens)",
        "sweep": "shape sweep (Llama-3 projections, decode to prefill)",
        "ragged": "ragged suite",
        "smoke": "smoke suite",
        OTHER: "other shapes",
    }
)

T = TypeVar("T")


def color(backend: str) -> str:
    """A backend's colour, the same in every figure."""
    if backend in _COLORS:
        return _COLORS[backend]
    return _FALLBACK[sum(map(ord, backend)) % len(_FALLBACK)]


def suite_title(suite: str) -> str:
    return _SUITE_TITLE.get(suite, f"held out: {suite}")


def shape(p: Problem) -> str:
    return f"{p.m}x{p.n}x{p.k}"


@contextmanager
def style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        yield


def new_figure(width: float, height: float) -> Any:
    """A Figure on the Agg canvas laid out by constrained layout, at most :data:`MAX_WIDTH`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(min(width, MAX_WIDTH), height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def suptitle(fig: Any, text: str) -> None:
    """The figure's title, wrapped to its width."""
    import textwrap

    width = fig.get_figwidth()
    fig.suptitle("\n".join(textwrap.wrap(text, max(30, int(width * 12)))))


def legend_columns(fig: Any, entries: int, per: float = 2.6) -> int:
    """Legend columns that fit the figure's width at about ``per`` inches an entry."""
    return max(1, min(entries, int(fig.get_figwidth() / per)))


def save_figure(fig: Any, path: Path) -> None:
    """Write a PNG without the Software chunk (its only varying metadata), so re-rendering the
    same inputs with the same matplotlib gives the same bytes."""
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})


#: the fewest shape slots a suite panel gets, so that its title fits
MIN_SLOTS = 5

Panel = tuple[str, str, list[Problem]]  # (dtype, suite, problems)


def slots(panel: Panel) -> int:
    """Shape slots of a suite panel (its width in the row)."""
    return max(MIN_SLOTS, len(panel[2]))


def suite_rows(panels: Sequence[Panel], capacity: int) -> tuple[list[list[Panel]], int]:
    """Suite panels in rows of at most ``capacity`` slots: per dtype, its short suites packed
    together, then each long one on its own row; and the slots of the widest row."""
    rows: list[list[Panel]] = []
    for dtype in dict.fromkeys(p[0] for p in panels):
        mine = [p for p in panels if p[0] == dtype]
        short = [p for p in mine if slots(p) <= capacity]
        rows += pack_rows(short, [slots(p) for p in short], capacity)
        rows += [[p] for p in mine if slots(p) > capacity]
    widest = max((sum(slots(p) for p in row) for row in rows), default=MIN_SLOTS)
    return rows, min(widest, capacity)


def panel_title(panel: Panel) -> str:
    """``dtype, suite`` wrapped to the panel's width."""
    import textwrap

    return "\n".join(textwrap.wrap(f"{panel[0]}, {suite_title(panel[1])}", 7 * slots(panel)))


def pack_rows(items: Sequence[T], size: Iterable[int], capacity: int) -> list[list[T]]:
    """Items in order, packed greedily into rows whose sizes sum to at most ``capacity`` (an
    item larger than that gets a row of its own)."""
    rows: list[list[T]] = []
    used = capacity
    for item, n in zip(items, size, strict=True):
        if used + n > capacity or not rows:
            rows.append([])
            used = 0
        rows[-1].append(item)
        used += n
    return rows


def reference(ds: Dataset, p: Problem, picks: Iterable[BenchRecord | None]) -> BenchRecord | None:
    """cuBLAS for ``p``, from the run of the first timed kernel record shown beside it."""
    like = next((r for r in picks if r is not None and r.timed), None)
    return ds.cublas(p, like)


def pct_band(ds: Dataset, rec: BenchRecord) -> tuple[float, float, float] | None:
    """(low, median, high) % of cuBLAS of a timed record: its p80 and p20 times against the
    same cuBLAS median (the kernel's own spread)."""
    pct = ds.pct_of_cublas(rec)
    t = rec.timing
    if pct is None or t is None or t.p20_ms <= 0 or t.p80_ms <= 0:
        return None
    return pct * t.median_ms / t.p80_ms, pct, pct * t.median_ms / t.p20_ms


def status_text(rec: BenchRecord | CodegenRecord) -> str:
    """What an untimed record shows instead of a number."""
    return "not timed" if rec.status.value == "ok" else rec.status.value
