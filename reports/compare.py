"""``python -m reports compare A B``: what changed from run A to run B, and whether it is beyond
the spread.

A and B are result files or folders (each read as one :class:`~reports.data.Dataset`, so a
folder of several runs compares what its report would show). For every (kernel, problem) timed
on both sides, the record each side's report uses (:meth:`Dataset.pick`: the kernel's own
config choice) is compared:

* **change**: TFLOPS of B over A, in % (positive: B is faster);
* **beyond the spread**: A's and B's p20-p80 time bands do not overlap (each run's own
  spread; a change inside it is noise at this sample size);
* **% of cuBLAS** on each side (cuBLAS timed in that side's run): a clock or power difference
  between the runs moves cuBLAS too, so a change that this column does not show is the GPU's,
  not the kernel's.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.gemm import Problem
from harness.records import BenchRecord
from harness.summary import text_table
from reports.data import Dataset, backend_order, problem_order

__all__ = ["Change", "Comparison", "compare", "format_comparison"]


@dataclass(frozen=True)
class Change:
    """One (kernel, problem) timed in both A and B."""

    kernel: str
    problem: Problem
    a: BenchRecord
    b: BenchRecord
    pct_a: float | None
    pct_b: float | None

    @property
    def change(self) -> float:
        """TFLOPS of B over A, in % (positive: B is faster)."""
        assert self.a.median_ms and self.b.median_ms
        return 100.0 * (self.a.median_ms / self.b.median_ms - 1.0)

    @property
    def beyond_spread(self) -> bool:
        """A's and B's p20-p80 time bands do not overlap."""
        ta, tb = self.a.timing, self.b.timing
        assert ta is not None and tb is not None
        return ta.p80_ms < tb.p20_ms or tb.p80_ms < ta.p20_ms

    @property
    def verdict(self) -> str:
        if not self.beyond_spread:
            return "within spread"
        return "faster" if self.change > 0 else "slower"


@dataclass(frozen=True)
class Comparison:
    """Every (kernel, problem) timed on both sides, and what only one side timed."""

    changes: tuple[Change, ...]
    only_a: tuple[tuple[str, Problem], ...]
    only_b: tuple[tuple[str, Problem], ...]


def _timed(ds: Dataset) -> dict[tuple[str, Problem], BenchRecord]:
    out = {}
    for kernel, problem in {(r.kernel, r.problem) for r in ds.timed()}:
        rec = ds.pick(kernel, problem)
        if rec is not None and rec.timed:
            out[(kernel, problem)] = rec
    return out


def compare(a: Dataset, b: Dataset) -> Comparison:
    """Compare what each side's report shows for every (kernel, problem)."""
    ta, tb = _timed(a), _timed(b)
    first = {r.kernel: r for ds in (a, b) for r in ds.bench}

    def order(key: tuple[str, Problem]) -> tuple[object, ...]:
        rec = first[key[0]]
        return (problem_order(key[1]), backend_order(rec.backend), rec.rung, key[0])

    changes = tuple(
        Change(
            k, p, ta[(k, p)], tb[(k, p)], a.pct_of_cublas(ta[(k, p)]), b.pct_of_cublas(tb[(k, p)])
        )
        for k, p in sorted(ta.keys() & tb.keys(), key=order)
    )
    return Comparison(
        changes,
        tuple(sorted(ta.keys() - tb.keys(), key=order)),
        tuple(sorted(tb.keys() - ta.keys(), key=order)),
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def format_comparison(c: Comparison, a_name: str, b_name: str, changed_only: bool = False) -> str:
    """The comparison as text: one row per (problem, kernel), then the counts."""
    shown = [ch for ch in c.changes if ch.beyond_spread or not changed_only]
    rows = []
    for ch in shown:
        config = ch.b.config or ""
        if ch.a.config != ch.b.config:
            config = f"{ch.a.config or '-'} -> {ch.b.config or '-'}"
        rows.append(
            [
                ch.problem.key,
                ch.kernel,
                f"{ch.a.tflops or 0:.1f}",
                f"{ch.b.tflops or 0:.1f}",
                f"{ch.change:+.1f} %",
                ch.verdict,
                f"{_pct(ch.pct_a)} -> {_pct(ch.pct_b)}",
                config,
            ]
        )
    counts = {v: sum(ch.verdict == v for ch in c.changes) for v in ("faster", "slower")}
    lines = [f"A: {a_name}", f"B: {b_name}", ""]
    if rows:
        lines.append(
            text_table(
                [
                    "problem",
                    "kernel",
                    "TFLOPS A",
                    "TFLOPS B",
                    "change",
                    "vs spread",
                    "% cuBLAS A -> B",
                    "config",
                ],
                rows,
                "llrrrlrl",
            )
        )
        lines.append("")
    lines.append(
        f"{len(c.changes)} (kernel, problem) timed in both: {counts['faster']} faster and "
        f"{counts['slower']} slower beyond the spread (p20-p80 bands apart), "
        f"{len(c.changes) - counts['faster'] - counts['slower']} within it"
        + (" (not listed)" if changed_only else "")
        + f"; {len(c.only_a)} only in A, {len(c.only_b)} only in B."
    )
    return "\n".join(lines)
