"""``python -m reports families RESULTS ...``: where a kernel's own choices lose, by config family.

A report panel splits one suite's rung-8 shapes by config family
(:func:`reports.data.family_stats`). This pools the kernel's own choices (``selected``
records, each against cuBLAS in its own run) over every run given — several held-out seeds,
say — and splits them the same way: per family of the shared vocabulary (unswapped, narrow
swapped cover or wide swap; its cluster; split-K or stream-K), how many records, their geomean
% of cuBLAS, how many below the bar's floor, and the family's part of the pooled geomean's
shortfall in points. It says whether what is left of a gap is one class of pick (a rule's
business) or spread over a family the kernel runs everywhere (the kernel's rate). A shape
timed in two runs counts twice: the records are taken as they ran.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from harness.records import Status
from harness.results import Document
from harness.summary import text_table
from reports.data import BAR_FLOOR_PCT, FamilyStat, config_family, family_stats_of

__all__ = ["Pooled", "format_families", "pooled_families"]


@dataclass(frozen=True)
class Pooled:
    """The kernel's own choices pooled over ``runs`` result files, as their families' stats;
    the totals follow from those (the families' points add up to 100 x ln(geomean))."""

    runs: int
    families: list[FamilyStat]

    @property
    def records(self) -> int:
        return sum(st.shapes for st in self.families)

    @property
    def points(self) -> float:
        """The pooled geomean's distance from cuBLAS: 100 x ln(geomean / 100 %)."""
        return sum(st.points for st in self.families)

    @property
    def geomean(self) -> float:
        """The pooled geomean % of cuBLAS (NaN without a record)."""
        return 100 * math.exp(self.points / 100) if self.families else float("nan")


def pooled_families(
    docs: Iterable[Document],
    kernels: Iterable[str] = (),
    dtype: str | None = None,
    m: tuple[int, int | None] | None = None,
) -> Pooled:
    """The timed, correct own choices of ``docs`` (only ``kernels``', ``dtype``'s and M in
    ``m`` = (lo, hi or None) where given) with a config of the shared vocabulary, by family."""
    wanted = set(kernels)
    points: list[tuple[str | None, float]] = []
    runs = 0
    for doc in docs:
        before = len(points)
        for rec in doc.bench:
            if rec.selected is not True or rec.status != Status.OK or not rec.pct_of_cublas:
                continue
            if (wanted and rec.kernel not in wanted) or (dtype and rec.problem.dtype != dtype):
                continue
            if m and not (m[0] <= rec.problem.m and (m[1] is None or rec.problem.m <= m[1])):
                continue
            family = config_family(rec.config_values)
            if family is not None:
                points.append((family, rec.pct_of_cublas))
        runs += len(points) > before
    return Pooled(runs, family_stats_of(points))


def format_families(pooled: Pooled) -> str:
    """A table of ``pooled``'s families, the costliest first, under a line of its totals."""
    if not pooled.records:
        return (
            "no own choice with a config of the shared vocabulary in these results (rung-8 runs "
            "of `python -m harness bench`, cuBLAS beside them)"
        )
    head = (
        f"{pooled.records} own choices from {pooled.runs} run(s): geomean "
        f"{pooled.geomean:.1f} % of cuBLAS, {pooled.points:+.2f} points"
    )
    body = [
        [
            st.family,
            str(st.shapes),
            f"{st.geomean:.1f}",
            str(st.below),
            f"{st.points:+.2f}",
        ]
        for st in pooled.families
    ]
    header = ["family", "records", "% cuBLAS", f"below {BAR_FLOOR_PCT:.0f} %", "points"]
    return head + "\n" + text_table(header, body, align="lrrrr")
