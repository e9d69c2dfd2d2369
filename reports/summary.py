"""The summary a reader sees first: the headline, the chains and the shape sweep, as tables.

Each table is data (:class:`Table`) computed once from the :class:`~reports.data.Dataset` and
written two ways: as markdown at the top of ``report.md`` and as plain text on the terminal
after ``python -m reports`` (:func:`terminal_summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.gemm import Problem
from harness.summary import pct_band, text_table
from reports.data import SWEEP_RUNGS, Dataset, chain_table, has_chain, sweep_panels

__all__ = [
    "HEADLINE_PROBLEMS",
    "Table",
    "chains",
    "headline",
    "markdown_table",
    "summary_tables",
    "sweeps",
    "terminal_summary",
]

#: The problems of the headline table (the README's too).
HEADLINE_PROBLEMS = tuple(Problem(s, s, s, "fp16") for s in (4096, 8192, 16384))


@dataclass(frozen=True)
class Table:
    """A titled table of strings, with notes under it."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table (``|`` in cells escaped)."""

    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(map(esc, r)) + " |" for r in rows]


def headline(ds: Dataset) -> Table | None:
    """Each DSL's final kernel at the headline problems: TFLOPS and % of cuBLAS in the same run
    with its p20-p80 band (None without a timed headline problem)."""
    finals = ds.final_kernels()
    if not finals:
        return None
    rows = []
    for p in HEADLINE_PROBLEMS:
        picks = [ds.pick(k, p) for k in finals.values()]
        like = next((r for r in picks if r is not None and r.timed), None)
        ref = ds.cublas(p, like)
        if ref is None or ref.tflops is None:
            continue
        row = [p.key, f"{ref.tflops:.0f}"]
        for rec in picks:
            band = pct_band(rec, ds.cublas(p, rec)) if rec is not None else None
            if rec is None or band is None or rec.tflops is None:
                row.append("-" if rec is None or rec.timed else rec.status.value)
                continue
            row.append(f"{rec.tflops:.0f} ({band[1]:.1f} %, {band[0]:.1f}-{band[2]:.1f})")
        rows.append(row)
    if not rows:
        return None
    return Table(
        "Final kernel of each DSL vs cuBLAS",
        ["problem", "cuBLAS TFLOPS", *(k.split("/")[0] for k in finals.values())],
        rows,
        [
            "Each cell: TFLOPS (% of cuBLAS timed in the same run, its p20-p80 band); final "
            "kernels: " + ", ".join(f"{b} `{k.split('/', 1)[1]}`" for b, k in finals.items()) + "."
        ],
    )


def chains(ds: Dataset, problem: Problem | None) -> Table | None:
    """Median ms per rung per DSL at ``problem``, each with its step over the rung before."""
    if problem is None:
        return None
    table = chain_table(ds, problem)
    if not has_chain(table):
        return None
    rungs = sorted({row.rung for rows in table.values() for row in rows})
    cells = {(b, row.rung): row for b, rows in table.items() for row in rows}
    rows = []
    for g in rungs:
        name = next(row.name for rows in table.values() for row in rows if row.rung == g)
        line = [f"{g} {name}"]
        for backend in table:
            row = cells.get((backend, g))
            if row is None or row.median_ms is None:
                line.append("" if row is None else row.status)
                continue
            step = f" (x{row.step:.2f}{'‡' if row.other_run else ''})" if row.step else ""
            line.append(f"{row.median_ms:.3f}{step}")
        rows.append(line)
    totals = ["total, rung 1 to the last"]
    for brows in table.values():
        timed = [r for r in brows if r.total]
        totals.append(f"x{timed[-1].total:.1f}" if timed else "-")
    rows.append(totals)
    return Table(
        f"Speedup chains at {problem.key}",
        ["rung", *table],
        rows,
        [
            "Median ms per GEMM (step over the rung before). Every rung of a DSL's chain comes "
            "from one run; ‡ marks a rung from another run."
        ],
    )


def sweeps(ds: Dataset) -> Table | None:
    """Per (suite, dtype, DSL): rung 7 and rung 8 as % of cuBLAS, geomean and worst shape."""
    rows = []
    for panel in sweep_panels(ds):
        line = [panel.suite, panel.dtype, panel.backend]
        for g in SWEEP_RUNGS:
            st = panel.stats.get(g)
            if st is None:
                line += ["-", "-"]
                continue
            part = f", {st.shapes}/{len(panel.rows)} shapes" if st.shapes < len(panel.rows) else ""
            line += [
                f"{st.geomean:.1f}",
                f"{st.worst:.1f} ({st.worst_problem.m}x{st.worst_problem.n}x"
                f"{st.worst_problem.k}{part})",
            ]
        rows.append(line)
    if not rows:
        return None
    r7, r8 = SWEEP_RUNGS
    return Table(
        "Shape sweep and held-out shapes, % of cuBLAS",
        [
            "suite",
            "dtype",
            "DSL",
            f"r{r7} geomean",
            f"r{r7} worst",
            f"r{r8} geomean",
            f"r{r8} worst",
        ],
        rows,
        [
            f"Rung {r7} runs one config everywhere, rung {r8} picks one per shape; a held-out "
            "suite's shapes were never tuned on. The bar for rung 8: geomean >= 100 and no shape "
            "below 90."
        ],
    )


def summary_tables(ds: Dataset, chain: Problem | None) -> list[Table]:
    """The tables of the summary, in order; those without data are left out."""
    return [t for t in (headline(ds), chains(ds, chain), sweeps(ds)) if t is not None]


def terminal_summary(ds: Dataset, chain: Problem | None) -> str:
    """The summary tables as aligned plain text."""
    parts = []
    for t in summary_tables(ds, chain):
        align = "l" * (3 if t.header[0] == "suite" else 1)
        align += "r" * (len(t.header) - len(align))
        parts.append(f"{t.title}:\n" + text_table(t.header, t.rows, align, indent="  "))
    return "\n\n".join(parts) if parts else "no timed results to summarize"
