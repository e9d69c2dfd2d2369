"""The summary a reader sees first: the headline, the chains and the shape sweep, as tables.

Each table is data (:class:`Table`) computed once from the :class:`~reports.data.Dataset` and
written two ways: as markdown at the top of ``report.md`` and as plain text on the terminal
after ``python -m reports`` (:func:`terminal_summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.gemm import Problem
from harness.records import BenchRecord
from harness.summary import pct_band, text_table
from reports.data import (
    BAR_FLOOR_PCT,
    SWEEP_RUNGS,
    Dataset,
    chain_table,
    has_chain,
    hold_text,
    newest_run,
    run_label,
    sweep_panels,
    warmups,
)

__all__ = [
    "HEADLINE_PROBLEMS",
    "OTHER_RUN_MARK",
    "HeadlineCell",
    "HeadlineRow",
    "Table",
    "chains",
    "headline",
    "headline_cell_text",
    "headline_notes",
    "headline_rows",
    "headline_table_rows",
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
    #: How many of ``notes`` (the first) the terminal prints too: what a reader of the plain
    #: text cannot do without (e.g. which run a table is read from).
    footnotes: int = 0


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table (``|`` in cells escaped)."""

    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(map(esc, r)) + " |" for r in rows]


#: The mark of a headline cell read from another run than the headline run.
OTHER_RUN_MARK = "†"


@dataclass(frozen=True)
class HeadlineCell:
    """One DSL's final kernel at one headline problem: the record shown (None: none), its %
    of cuBLAS band (low, median, high over p80, median, p20 time; same run), its % of cuBLAS
    per SM clock, and whether it comes from another run than the headline run."""

    record: BenchRecord | None
    band: tuple[float, float, float] | None
    per_clock: float | None
    other_run: bool


@dataclass(frozen=True)
class HeadlineRow:
    """One headline problem: cuBLAS (and whether it is from another run) and a cell per DSL."""

    problem: Problem
    cublas: BenchRecord
    cublas_other_run: bool
    cells: list[HeadlineCell]


def headline_rows(ds: Dataset) -> list[HeadlineRow]:
    """The headline cells, every one read from :meth:`~reports.data.Dataset.headline_run` where
    it has the record (one run: clocks, power and thermals shared), else from the latest run and
    marked. Problems without a timed cuBLAS are left out. Columns: ``ds.final_kernels()``."""
    finals = ds.final_kernels()
    rows = []
    for p in HEADLINE_PROBLEMS:
        ref = ds.headline_cublas(p)
        if ref is None or ref.tflops is None:
            continue
        cells = []
        for kernel in finals.values():
            rec = ds.headline_pick(kernel, p)
            if rec is None:
                cells.append(HeadlineCell(None, None, None, False))
                continue
            # % of cuBLAS always against cuBLAS of the record's own run, marked or not.
            band = pct_band(rec, ds.cublas(p, rec))
            other = rec.timed and ds.outside_headline(rec)
            cells.append(HeadlineCell(rec, band, ds.per_clock_pct(rec), other))
        rows.append(HeadlineRow(p, ref, ds.outside_headline(ref), cells))
    return rows


def _mark(other_run: bool) -> str:
    return OTHER_RUN_MARK if other_run else ""


def headline_cell_text(cell: HeadlineCell) -> str:
    """``TFLOPS (% of cuBLAS, p20-p80 band)``, † when from another run; ``-`` or the status
    when not timed."""
    rec = cell.record
    if rec is None or cell.band is None or rec.tflops is None:
        return "-" if rec is None or rec.timed else rec.status.value
    lo, mid, hi = cell.band
    return f"{rec.tflops:.0f} ({mid:.1f} %, {lo:.1f}-{hi:.1f}){_mark(cell.other_run)}"


def headline_table_rows(rows: Sequence[HeadlineRow]) -> list[list[str]]:
    """Per problem a line of TFLOPS and % of cuBLAS, then a ``per clock`` line: cuBLAS's
    TFLOPS/GHz and each kernel's % of cuBLAS per GHz (left out when the run read no clock).
    Per clock separates the kernel from the clock it happened to run at."""
    out = []
    for row in rows:
        ref = row.cublas
        out.append(
            [
                row.problem.key,
                f"{ref.tflops:.0f}{_mark(row.cublas_other_run)}",
                *(headline_cell_text(c) for c in row.cells),
            ]
        )
        if ref.tflops_per_ghz is None and all(c.per_clock is None for c in row.cells):
            continue
        per_clock = [
            "-" if c.per_clock is None else f"{c.per_clock:.1f} %{_mark(c.other_run)}"
            for c in row.cells
        ]
        ghz = "-" if ref.tflops_per_ghz is None else f"{ref.tflops_per_ghz:.0f} per GHz"
        out.append(["  per clock", ghz + _mark(row.cublas_other_run), *per_clock])
    return out


def headline_notes(ds: Dataset, rows: Sequence[HeadlineRow]) -> list[str]:
    """The lines under the headline table: which run it is read from, and (when some cell is
    marked) which other runs the marked cells come from."""
    run = ds.headline_run()
    notes = []
    if run is not None:
        env = run.environment
        power = env.get("power_limit_w")
        watts = f", {power:.0f} W power limit" if isinstance(power, int | float) else ""
        held = hold_text(env.get("timer"))
        notes.append(
            f"Headline run: `{Path(run.source or '?').name}` ({(run.created or '?')[:10]}, "
            f"{env.get('gpu', '?')}{watts}, warm-ups {warmups(env.get('timer'))} s: first "
            f"round / later rounds / settle{'; ' if held else ''}{held}); every cell, cuBLAS "
            "included, is from that one run "
            f"unless marked {OTHER_RUN_MARK}."
        )
    others = sorted(
        {
            Path(ds.run_of(r).source or "?").name
            for row in rows
            for r in (
                *(c.record for c in row.cells if c.other_run),
                *([row.cublas] if row.cublas_other_run else []),
            )
            if r is not None
        }
    )
    if others:
        files = ", ".join(f"`{f}`" for f in others)
        notes.append(f"{OTHER_RUN_MARK} from another run than the headline run ({files}).")
    return notes


def headline(ds: Dataset) -> Table | None:
    """Each DSL's final kernel at the headline problems, from the headline run: TFLOPS, % of
    cuBLAS timed in the same run with its p20-p80 band, and % of cuBLAS per clock (None
    without a timed headline problem)."""
    finals = ds.final_kernels()
    rows = headline_rows(ds) if finals else []
    if not rows:
        return None
    run_notes = headline_notes(ds, rows)
    return Table(
        "Final kernel of each DSL vs cuBLAS",
        ["problem", "cuBLAS TFLOPS", *finals],
        headline_table_rows(rows),
        [
            *run_notes,
            "Each cell: median TFLOPS over the run's rounds (% of cuBLAS timed in the same run, "
            "its p20-p80 band); `per clock`: cuBLAS's TFLOPS per GHz of SM clock and each "
            "kernel's TFLOPS/GHz as % of it. Final kernels: "
            + ", ".join(f"{b} `{k.split('/', 1)[1]}`" for b, k in finals.items())
            + ".",
        ],
        footnotes=len(run_notes),
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
            part = f", {st.shapes}/{panel.size} shapes" if st.shapes < panel.size else ""
            line += [
                f"{st.geomean:.1f}",
                f"{st.worst:.1f} ({st.worst_problem.m}x{st.worst_problem.n}x"
                f"{st.worst_problem.k}{part})",
            ]
        top = panel.stats.get(SWEEP_RUNGS[-1])
        line.append(str(top.below) if top is not None else "-")
        line.append(f"{top.weighted:.1f}" if top is not None and top.weighted else "-")
        line.append(" + ".join(top.timers) if top is not None and top.timers else "-")
        top_recs = [row.records.get(SWEEP_RUNGS[-1]) for row in panel.rows]
        line.append(run_label(newest_run(ds, top_recs)) if top is not None else "-")
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
            f"r{r8} below {BAR_FLOOR_PCT:.0f}",
            f"r{r8} by M band",
            f"r{r8} timer",
            f"r{r8} run",
        ],
        rows,
        [
            f"Rung {r7} runs one config everywhere, rung {r8} picks one per shape; a held-out "
            "suite's shapes were never tuned on. The bar for rung 8: geomean >= 100 and no shape "
            f"below {BAR_FLOOR_PCT:.0f} (r{r8} below {BAR_FLOOR_PCT:.0f}: how many are).",
            f"r{r8} by M band: a held-out suite's geomean with each M band (1-64, 65-256, "
            "257-1024, 1025-4096, above) weighed by its share of an average held-out draw, "
            "about 36 % at M <= 64 and 16 % in each band above, instead of by the shapes the "
            "suite drew there: suites whose draws lean on different bands compare on it (every "
            "band must be timed). The bar is read on the plain geomean.",
            f"Warm-ups of the runs rung {r8}'s numbers come from, in seconds: a kernel's first "
            "round / its later rounds / the extra before a problem's first measurement "
            "(cuBLAS's). Runs with no settle timed cuBLAS's first round right after the GPU "
            "rested through the compiles, when it clocks high: they read large shapes a few % "
            "low (docs/design.md, Timing).",
            f"r{r8} run: the date and the tree (git SHA) of the newest run rung {r8}'s numbers "
            "come from: which version of the kernel a suite measured.",
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
        text = f"{t.title}:\n" + text_table(t.header, t.rows, align, indent="  ")
        parts.append("\n".join([text, *(f"  {n}" for n in t.notes[: t.footnotes])]))
    return "\n\n".join(parts) if parts else "no timed results to summarize"
