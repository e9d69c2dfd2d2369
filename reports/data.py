"""Result documents folded into the one view every figure and table draws from.

A :class:`Dataset` is a pure function of the files it was loaded from. Its rules, in one place so
that every figure and table agrees:

* **latest run wins** per (kernel, config, problem), except that a check-only record (status ok,
  no timing) never replaces a timed one: re-checking correctness must not erase a measurement;
  a held-out suite's panels fold only the runs that ran that suite (:func:`sweep_table`), so a
  later run of one of its shapes (a tune on spent shapes) leaves its evaluation as measured;
* a backend's **final kernel** is its highest-rung kernel with timed records;
* where a (kernel, problem) has several configs, figures and headline tables use the record the
  kernel would run by itself (:meth:`Dataset.pick`): ``selected`` is True, or the kernel has no
  config space (``config`` None); a pure ``--tune`` run has only non-selected records, and then
  the fastest stands in and :meth:`Dataset.picked_fastest` says so;
* **cuBLAS** for a record comes from the same run when that run timed it (clocks, power and
  thermals are shared within a run, not across runs), else from the latest run that did;
* the **headline run** (:meth:`Dataset.headline_run`) is the run that timed the final kernels
  of the most backends (an all-DSL run), the latest of those; a headline cell from any other
  run is marked as such (:meth:`Dataset.outside_headline`);
* backends and problems come in one fixed order everywhere (:data:`BACKEND_ORDER`,
  :func:`problem_order`), so the panels of every figure line up with the tables.

The views the figures and the markdown share (the speedup chain, the % of cuBLAS grid, the
shape sweep) live here too, so a number in a figure and in a table can only come from one
computation.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.fitcost import held_out_weighted, model_config
from harness.gemm import DTYPES, Problem
from harness.problems import canonical_suite, held_out, suite_shapes
from harness.protocol import Rung
from harness.records import BenchRecord, CodegenRecord, Status
from harness.results import Document, ResultsError, load_many, result_files
from harness.tile_cost import NARROW, GemmConfig

__all__ = [
    "BACKEND_ORDER",
    "BAR_FLOOR_PCT",
    "COMMON_TOP_RUNG",
    "OTHER",
    "SUITE_ORDER",
    "SWEEP_RUNGS",
    "ChainRow",
    "ConfigClass",
    "Dataset",
    "FamilyStat",
    "ReportError",
    "SweepPanel",
    "SweepRow",
    "SweepStat",
    "backend_order",
    "build_dataset",
    "chain_problem",
    "chain_rungs",
    "chain_table",
    "config_family",
    "drawn_suites",
    "family_stats",
    "family_stats_of",
    "has_chain",
    "held_out_suites",
    "home_suite",
    "load_dataset",
    "pct_table",
    "problem_order",
    "same_config_classes",
    "suite_problems",
    "suites_of",
    "sweep_order",
    "sweep_table",
    "tflops_range",
    "warmups",
]

#: Backends in the order of every panel, column and table; others follow alphabetically.
BACKEND_ORDER = ("cublas", "tirx", "gluon", "cutedsl", "tilus")
#: The fixed suites in the order figures and tables draw them. A problem's *home* is the first
#: of these that holds its shape (8192^3 is square's; the K sweep draws it again as its
#: K = 8192 point, because a suite is drawn as it is).
SUITE_ORDER = ("square", "ksweep", "llm", "sweep", "ragged", "smoke")
#: The home of a shape that no fixed suite holds (a random suite's, a one-off shape).
OTHER = "other"
#: The rungs every backend implements; a rung above it (8 ``shape_adaptive``) is in a backend's
#: chain only where the backend has a kernel for it, so that a DSL that stops at rung 7 by
#: design is not reported as "missing" rung 8.
COMMON_TOP_RUNG = Rung.MULTI_CONSUMER
#: The rungs the shape sweep compares: the fixed-config kernel and its per-problem successor.
SWEEP_RUNGS = (int(Rung.MULTI_CONSUMER), int(Rung.SHAPE_ADAPTIVE))


def backend_order(backend: str) -> tuple[int, str]:
    """Sort key putting the known backends first, in :data:`BACKEND_ORDER`."""
    known = backend in BACKEND_ORDER
    return (BACKEND_ORDER.index(backend) if known else len(BACKEND_ORDER), backend)


def suites_of(p: Problem) -> tuple[str, ...]:
    """The fixed suites (of :data:`SUITE_ORDER`) that hold ``p``'s shape, in that order."""
    shape = (p.m, p.n, p.k)
    return tuple(s for s in SUITE_ORDER if shape in _suite_set(s))


def home_suite(p: Problem) -> str:
    """The first suite of :data:`SUITE_ORDER` holding ``p``'s shape, else :data:`OTHER`."""
    found = suites_of(p)
    return found[0] if found else OTHER


def problem_order(p: Problem) -> tuple[Any, ...]:
    """Sort key: dtype (fp16 first), home suite (:data:`SUITE_ORDER`), then M, N, K (a square
    suite by size, the K sweep by K, the shape sweep decode to prefill)."""
    dtype = DTYPES.index(p.dtype) if p.dtype in DTYPES else len(DTYPES)
    home = home_suite(p)
    rank = SUITE_ORDER.index(home) if home in SUITE_ORDER else len(SUITE_ORDER)
    return (dtype, p.dtype, rank, p.m, p.n, p.k)


def suite_problems(problems: Iterable[Problem], suite: str, dtype: str) -> list[Problem]:
    """The problems of ``dtype`` whose shape ``suite`` holds (any suite name
    :func:`harness.problems.suite_shapes` knows), ordered M, N, K."""
    shapes = _suite_set(suite)
    return sorted(
        {p for p in problems if p.dtype == dtype and (p.m, p.n, p.k) in shapes}, key=sweep_order
    )


def drawn_suites(
    problems: Iterable[Problem], dtype: str, extra: Iterable[str] = ()
) -> list[tuple[str, list[Problem]]]:
    """(suite, its problems) for the panels of one dtype: the suites of :data:`SUITE_ORDER`,
    then ``extra`` (held-out random suites), then :data:`OTHER`, each drawn whole (every problem
    of it that has data, shared shapes again) when it holds a problem no earlier suite drew."""
    problems = [p for p in problems if p.dtype == dtype]
    out: list[tuple[str, list[Problem]]] = []
    drawn: set[Problem] = set()
    for suite in (*SUITE_ORDER, *extra):
        mine = suite_problems(problems, suite, dtype)
        if set(mine) - drawn:
            out.append((suite, mine))
            drawn |= set(mine)
    rest = sorted(set(problems) - drawn, key=sweep_order)
    if rest:
        out.append((OTHER, rest))
    return out


@functools.cache
def _suite_set(suite: str) -> frozenset[tuple[int, int, int]]:
    return frozenset(suite_shapes(suite))


def tflops_range(rec: BenchRecord) -> tuple[float, float, float] | None:
    """(TFLOPS at p80 time, at the median, at p20 time): the p20-p80 band of a timed record.

    A shorter time is a higher rate, so the p20 time gives the upper end of the band.
    """
    t = rec.timing
    if not rec.timed or t is None or t.median_ms <= 0:
        return None
    mid = rec.tflops if rec.tflops else rec.problem.flops / (t.median_ms * 1e-3) / 1e12
    lo = mid * t.median_ms / t.p80_ms if t.p80_ms > 0 else mid
    hi = mid * t.median_ms / t.p20_ms if t.p20_ms > 0 else mid
    return lo, mid, hi


@dataclass(frozen=True)
class Dataset:
    """Every record of the loaded documents, plus the views the reports use.

    ``documents`` are all loaded files, oldest first; ``bench`` and ``codegen`` are the records
    left after latest-run-wins (see the module docstring). ``run_of`` maps a record to the
    document it came from.
    """

    documents: tuple[Document, ...]
    bench: tuple[BenchRecord, ...]
    codegen: tuple[CodegenRecord, ...]
    #: id(record) -> index into ``documents``, for every bench record of every document
    #: (records are kept alive by ``documents``, so their ids are stable).
    _run: Mapping[int, int] = field(repr=False, default_factory=dict)

    # ------------------------------------------------------------------------------ runs
    @property
    def runs(self) -> tuple[Document, ...]:
        """The bench documents, oldest first."""
        return tuple(d for d in self.documents if d.kind == "bench")

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(d.source or "?" for d in self.documents)

    def run_index(self, rec: BenchRecord) -> int:
        """Position of the record's document among :attr:`documents` (later = newer)."""
        return self._run[id(rec)]

    def run_of(self, rec: BenchRecord) -> Document:
        """The document ``rec`` was read from."""
        return self.documents[self._run[id(rec)]]

    # --------------------------------------------------------------------------- records
    def timed(self) -> list[BenchRecord]:
        return [r for r in self.bench if r.timed]

    def problems(self) -> list[Problem]:
        """Problems with at least one timed record, in :func:`problem_order`."""
        return sorted({r.problem for r in self.timed()}, key=problem_order)

    def backends(self) -> list[str]:
        """Backends other than cuBLAS that have any record, in :data:`BACKEND_ORDER`."""
        names = {r.backend for r in self.bench if r.backend != "cublas" and r.rung != 0}
        return sorted(names, key=backend_order)

    def records(self, kernel: str, problem: Problem) -> list[BenchRecord]:
        """Every kept record of a (kernel, problem): one per config."""
        return [r for r in self.bench if r.kernel == kernel and r.problem == problem]

    def final_kernels(self) -> dict[str, str]:
        """backend -> its final kernel: highest rung of the seed chain (1-7) with timed records
        (ties: most problems timed, then kernel id), in :data:`BACKEND_ORDER`.

        Rung 8 (``shape_adaptive``) is left out: only some DSLs build it and it is timed on the
        ``sweep`` suite, so the cross-DSL comparisons stay on the design every DSL wrote, and
        rung 8 has its own sweep section and figure."""
        timed: dict[tuple[str, int, str], set[Problem]] = {}
        for r in self.timed():
            if r.backend != "cublas" and 0 < r.rung < Rung.SHAPE_ADAPTIVE:
                timed.setdefault((r.backend, r.rung, r.kernel), set()).add(r.problem)
        best: dict[str, tuple[int, int, str]] = {}
        for (backend, rung, kernel), probs in sorted(timed.items()):
            cand = (-rung, -len(probs), kernel)
            if backend not in best or cand < best[backend]:
                best[backend] = cand
        return {b: best[b][2] for b in sorted(best, key=backend_order)}

    def pick(self, kernel: str, problem: Problem) -> BenchRecord | None:
        """The record of what ``kernel`` runs by itself on ``problem`` (see module docstring)."""
        recs = self.records(kernel, problem)
        own = [r for r in recs if r.selected is True or r.config is None]
        if own:
            return _latest(sorted(own, key=lambda r: self._run[id(r)]))
        timed = [r for r in recs if r.timed]
        if timed:
            return min(timed, key=lambda r: r.median_ms or 0.0)
        return max(recs, key=lambda r: self._run[id(r)]) if recs else None

    def picked_fastest(self, kernel: str, problem: Problem) -> bool:
        """True when :meth:`pick` fell back to the fastest config (no record of the kernel's
        own choice: a pure tune run)."""
        recs = self.records(kernel, problem)
        own = any(r.selected is True or r.config is None for r in recs)
        return not own and any(r.timed for r in recs)

    def config_groups(self) -> list[tuple[str, Problem, list[BenchRecord]]]:
        """(kernel, problem, timed records fastest first) for every (kernel, problem) with more
        than one timed config, in backend, rung, kernel and problem order."""
        groups: dict[tuple[str, Problem], list[BenchRecord]] = {}
        for r in self.timed():
            groups.setdefault((r.kernel, r.problem), []).append(r)
        out = []
        for (kernel, problem), recs in groups.items():
            if len({r.config for r in recs}) > 1:
                out.append((kernel, problem, sorted(recs, key=lambda r: r.median_ms or 0.0)))
        first = {r.kernel: r for r in self.bench}
        return sorted(
            out,
            key=lambda g: (
                backend_order(first[g[0]].backend),
                first[g[0]].rung,
                g[0],
                problem_order(g[1]),
            ),
        )

    # ------------------------------------------------------------------------------ cuBLAS
    def cublas(self, problem: Problem, like: BenchRecord | None = None) -> BenchRecord | None:
        """The timed cuBLAS record for ``problem``: from ``like``'s run if it has one, else the
        latest. Searches every document, not only the kept records, so that a later cuBLAS-only
        run does not take away the reference measured beside a kernel."""
        cands = [
            (run, r)
            for run, doc in enumerate(self.documents)
            for r in doc.bench
            if r.rung == 0 and r.problem == problem and r.timed
        ]
        if not cands:
            return None
        if like is not None and id(like) in self._run:
            same = [c for c in cands if c[0] == self._run[id(like)]]
            cands = same or cands
        return max(cands, key=lambda c: c[0])[1]

    # ------------------------------------------------------------------------- headline
    def headline_run(self) -> Document | None:
        """The run a headline table is read from: the one that timed the final kernels of the
        most backends (with cuBLAS) — an all-DSL run where there is one — the latest of those.
        None without a timed run."""
        finals = set(self.final_kernels().values())
        best: tuple[int, int] | None = None
        for i, doc in enumerate(self.documents):
            timed = {r.kernel for r in doc.bench if r.timed}
            if doc.kind != "bench" or not any(r.rung == 0 for r in doc.bench if r.timed):
                continue
            cand = (len(finals & timed), i)
            if cand[0] and (best is None or cand > best):
                best = cand
        return self.documents[best[1]] if best is not None else None

    def outside_headline(self, rec: BenchRecord) -> bool:
        """True when ``rec`` comes from another run than :meth:`headline_run`: a table that
        shows it beside the headline run's numbers must mark it."""
        headline = self.headline_run()
        return headline is not None and self.run_of(rec) is not headline

    def run_pick(self, run: Document, kernel: str, problem: Problem) -> BenchRecord | None:
        """The timed record of what ``kernel`` runs by itself on ``problem`` in ``run`` (its
        selected config, or no config space); None when that run has none. Reads the run's own
        records, not the kept ones: a later run must not take a cell out of the headline run."""
        own = [
            r
            for r in run.bench
            if r.kernel == kernel
            and r.problem == problem
            and r.timed
            and (r.selected is True or r.config is None)
        ]
        return own[-1] if own else None

    def headline_pick(self, kernel: str, problem: Problem) -> BenchRecord | None:
        """The record a headline cell shows: the headline run's where it has one, else
        :meth:`pick` (then :meth:`outside_headline` is True and the cell must be marked)."""
        run = self.headline_run()
        rec = self.run_pick(run, kernel, problem) if run is not None else None
        return rec if rec is not None else self.pick(kernel, problem)

    def headline_cublas(self, problem: Problem) -> BenchRecord | None:
        """The cuBLAS record of the headline table: the headline run's, else :meth:`cublas`'s
        latest (marked like any other cell from another run)."""
        run = self.headline_run()
        if run is not None:
            own = [r for r in run.bench if r.rung == 0 and r.problem == problem and r.timed]
            if own:
                return own[-1]
        return self.cublas(problem)

    def per_clock_pct(self, rec: BenchRecord) -> float | None:
        """% of cuBLAS per SM clock (TFLOPS/GHz over cuBLAS's in the same run): as recorded
        (schema 3), else from both records' ``tflops_per_ghz`` when the run timed cuBLAS with a
        clock reading; None otherwise (a clock of another run would compare two sessions)."""
        if not rec.timed:
            return None
        if rec.per_clock_pct_of_cublas is not None:
            return rec.per_clock_pct_of_cublas
        ref = self.cublas(rec.problem, rec)
        if (
            ref is None
            or self.run_index(ref) != self.run_index(rec)
            or not rec.tflops_per_ghz
            or not ref.tflops_per_ghz
        ):
            return None
        return 100.0 * rec.tflops_per_ghz / ref.tflops_per_ghz

    def pct_of_cublas(self, rec: BenchRecord) -> float | None:
        """% of cuBLAS for a timed record: as recorded (same run), else against :meth:`cublas`."""
        if not rec.timed:
            return None
        if rec.pct_of_cublas is not None:
            return rec.pct_of_cublas
        ref = self.cublas(rec.problem, rec)
        if ref is None or not rec.median_ms or ref.median_ms is None:
            return None
        return 100.0 * ref.median_ms / rec.median_ms


class ReportError(ValueError):
    """A request the inputs cannot satisfy (e.g. a chain problem with no results)."""


# ---------------------------------------------------------------------------- chain and heat map
@dataclass(frozen=True)
class ChainRow:
    """One rung of a backend's chain at one problem."""

    rung: int
    name: str
    kernel: str | None
    config: str | None
    status: str
    median_ms: float | None
    p20_ms: float | None
    p80_ms: float | None
    tflops: float | None
    step: float | None
    total: float | None
    fastest_fallback: bool = False
    #: True when the chain's run (the one covering most rungs) lacked this rung, so its record
    #: comes from another run: its step is then a comparison across runs.
    other_run: bool = False
    #: The record the row shows (None: nothing measured).
    record: BenchRecord | None = None


def chain_problem(ds: Dataset, requested: str | None = None) -> Problem | None:
    """The problem the chain shows: ``requested`` (ReportError unless it has timed results),
    else 4096^3 fp16, else the largest square problem, else the last problem."""
    problems = ds.problems()
    if requested:
        try:
            p = Problem.parse(requested)
        except ValueError as e:
            raise ReportError(f"--chain-problem: {e}") from None
        if p not in problems:
            raise ReportError(f"--chain-problem {p.key}: no timed results for that problem")
        return p
    if Problem(4096, 4096, 4096, "fp16") in problems:
        return Problem(4096, 4096, 4096, "fp16")
    squares = [p for p in problems if p.m == p.n == p.k]
    if squares:
        return max(squares, key=lambda p: (p.dtype == "fp16", p.m))
    return problems[-1] if problems else None


def chain_rungs(ds: Dataset, backend: str) -> list[Rung]:
    """The rungs of ``backend``'s chain: 1 up to :data:`COMMON_TOP_RUNG`, then every higher rung
    the backend has a kernel for (any record, any problem)."""
    own = {r.rung for r in ds.bench if r.backend == backend}
    return [r for r in Rung if r != Rung.CUBLAS and (r <= COMMON_TOP_RUNG or r in own)]


def chain_table(ds: Dataset, problem: Problem) -> dict[str, list[ChainRow]]:
    """backend -> one row per rung of :func:`chain_rungs`: the kernel's own record, step and
    total speedups (each step is measured against the last timed rung before it)."""
    table: dict[str, list[ChainRow]] = {}
    for backend in ds.backends():
        # Steps are only comparable within one run: take every rung from the run that timed
        # the most of this backend's rungs at ``problem`` (the latest of equals); a rung that
        # run lacks falls back to the kernel's latest record and is marked ``other_run``. Every
        # document counts, not only the records latest-run-wins kept: a later run that timed
        # one rung again must not break the chain of the run that timed them all.
        own = [
            r
            for doc in ds.runs
            for r in doc.bench
            if r.backend == backend
            and r.problem == problem
            and r.timed
            and (r.selected is True or r.config is None)
        ]
        coverage: dict[int, set[int]] = {}
        for r in own:
            coverage.setdefault(ds.run_index(r), set()).add(r.rung)
        chain_run = max(coverage, key=lambda i: (len(coverage[i]), i)) if coverage else None
        kernels = sorted({r.kernel for r in ds.bench if r.backend == backend})
        by_rung: dict[int, list[BenchRecord]] = {}
        from_run: set[int] = set()
        for r in own:
            if ds.run_index(r) == chain_run:
                by_rung.setdefault(r.rung, []).append(r)
                from_run.add(r.rung)
        for k in kernels:
            rec = ds.pick(k, problem)
            if rec is not None and rec.rung not in from_run:
                by_rung.setdefault(rec.rung, []).append(rec)
        rows, prev, first = [], None, None
        for rung in chain_rungs(ds, backend):
            cands = sorted(by_rung.get(rung, []), key=lambda r: (_shown_first(r), r.kernel))
            r = cands[0] if cands else None
            t = r.timing if r is not None and r.timed else None
            ms = t.median_ms if t else None
            if ms and first is None:
                first = ms
            status = "missing" if r is None else r.status.value
            if r is not None and status == "ok" and t is None:
                status = "checked, not timed"
            row = ChainRow(
                rung=int(rung),
                name=Rung(rung).label,
                kernel=r.kernel if r else None,
                config=r.config if r else None,
                status=status,
                median_ms=ms,
                p20_ms=t.p20_ms if t else None,
                p80_ms=t.p80_ms if t else None,
                tflops=r.tflops if t and r else None,
                step=prev / ms if (ms and prev) else None,
                total=first / ms if (ms and first) else None,
                fastest_fallback=bool(r and ds.picked_fastest(r.kernel, problem)),
                other_run=bool(r and r.timed and chain_run is not None and rung not in from_run),
                record=r,
            )
            rows.append(row)
            prev = ms or prev
        table[backend] = rows
    return table


def has_chain(table: Mapping[str, list[ChainRow]]) -> bool:
    """Whether some backend of a :func:`chain_table` has two timed rungs: a chain to show."""
    return any(sum(row.median_ms is not None for row in rows) >= 2 for rows in table.values())


def _shown_first(r: BenchRecord) -> int:
    """Which of a rung's kernels (one per arch) the chain shows: timed, checked, failed, then
    declared unsupported."""
    if r.timed:
        return 0
    return 1 if r.status.value == "ok" else (2 if r.status.failed else 3)


def pct_table(ds: Dataset) -> tuple[list[str], list[Problem], list[list[float | None]]]:
    """Rows (final kernels), columns (problems with any value), % of cuBLAS in the same run."""
    finals = list(ds.final_kernels().values())
    cols = ds.problems()
    grid = []
    for kid in finals:
        row = []
        for p in cols:
            rec = ds.pick(kid, p)
            row.append(ds.pct_of_cublas(rec) if rec is not None else None)
        grid.append(row)
    keep = [j for j in range(len(cols)) if any(row[j] is not None for row in grid)]
    return finals, [cols[j] for j in keep], [[row[j] for j in keep] for row in grid]


# ---------------------------------------------------------------------------------- shape sweep
@dataclass(frozen=True)
class SweepRow:
    """One shape of a backend's sweep: the record of each sweep rung (None: no record), its %
    of cuBLAS in its own run (None: not timed) and the cuBLAS record shown beside it."""

    problem: Problem
    records: Mapping[int, BenchRecord | None]
    pct: Mapping[int, float | None]
    cublas: BenchRecord | None


#: The rung-8 bar's floor, % of cuBLAS: no shape of `sweep` or a held-out suite below it.
BAR_FLOOR_PCT = 90.0


@dataclass(frozen=True)
class SweepStat:
    """One rung over a backend's sweep: geometric mean and minimum of % of cuBLAS."""

    rung: int
    name: str
    kernel: str
    geomean: float
    worst: float
    worst_problem: Problem
    shapes: int
    #: The timers (:func:`timer_label`) of the runs these numbers come from, most shapes first.
    timers: tuple[str, ...] = ()
    #: Of a held-out suite: the geomean with each M band weighed by its share of an average
    #: held-out draw (``harness.fitcost.held_out_weighted``); None elsewhere or with a band
    #: untimed.
    weighted: float | None = None
    #: Shapes below :data:`BAR_FLOOR_PCT`.
    below: int = 0


def warmups(timer: Mapping[str, Any] | None) -> str:
    """A run's warm-ups in seconds, "first/later/settle": a kernel's first round, its later
    rounds, and the extra before a problem's first measurement (cuBLAS's). Runs before those
    settings existed (2026-11-27) warmed later rounds ``min(0.2, warmup_s)`` and had no settle.
    "?" where the run recorded no timer."""
    if not timer or "warmup_s" not in timer:
        return "?"
    first = float(timer["warmup_s"])
    later = min(float(timer.get("rewarm_s", 0.2)), first)
    settle = float(timer.get("settle_s", 0.0))
    return f"{first:g}/{later:g}/{settle:g}"


def hold_floor(timer: Mapping[str, Any] | None) -> float:
    """The hold every short kernel's launch got (ms, timer v5's ``hold_floor_ms``); 0 for a
    v4 or older run, whose holds followed each launcher's host time (docs/design.md,
    "Timing")."""
    return float((timer or {}).get("hold_floor_ms") or 0.0)


def hold_text(timer: Mapping[str, Any] | None) -> str:
    """How a run held its short kernels' batches, in words ("" where it recorded no timer)."""
    if not timer:
        return ""
    floor = hold_floor(timer)
    if floor and timer.get("count_hold"):
        return (
            f"every kernel under {floor:g} ms held {floor:g} ms a launch, warmed up held, "
            "its minimum time counting the hold (timer v6)"
        )
    if floor:
        return f"every kernel under {floor:g} ms held {floor:g} ms a launch (timer v5)"
    return "short kernels' holds not equalized (timer v4 or older)"


def timer_label(timer: Mapping[str, Any] | None) -> str:
    """A run's timer in one cell: its warm-ups (:func:`warmups`) and, from v5 on, the equal
    hold, e.g. "1/1/2 s" (v4), "1/1/2 s, hold 0.5 ms" (v5) or "1/1/2 s, hold 0.5 ms counted"
    (v6), so a table that pools runs shows when they were timed differently. "?" where the
    run recorded no timer."""
    w = warmups(timer)
    if w == "?":
        return w
    floor = hold_floor(timer)
    counted = " counted" if floor and (timer or {}).get("count_hold") else ""
    return f"{w} s" + (f", hold {floor:g} ms{counted}" if floor else "")


@dataclass(frozen=True)
class SweepPanel:
    """A backend's rungs 7 and 8 over the sweep shapes of one dtype that have data.

    ``kernels`` maps each sweep rung the backend has timed there to the kernel shown (of a
    rung's kernels, one per arch, the one timed at the most sweep shapes); ``stats`` has a
    :class:`SweepStat` per rung with at least one timed shape.
    """

    backend: str
    dtype: str
    kernels: Mapping[int, str]
    rows: tuple[SweepRow, ...]
    stats: Mapping[int, SweepStat]
    #: ``sweep``, or a held-out ``random:SEED[:COUNT]`` suite
    suite: str = "sweep"

    @property
    def size(self) -> int:
        """The shapes a complete run of the panel's suite times (a run cut short has fewer
        rows)."""
        return max(len(_suite_set(self.suite)), len(self.rows))


def sweep_order(p: Problem) -> tuple[int, int, int]:
    """Sort key of the sweep's x axis: M (decode to prefill), then N, then K."""
    return (p.m, p.n, p.k)


def held_out_suites(ds: Dataset) -> list[str]:
    """The held-out suites (``random:SEED[:COUNT]`` of a non-tuning seed) the bench runs of
    ``ds`` ran, in the order first seen, each named as :func:`_suites_of` names it."""
    seen: list[str] = []
    for doc in ds.runs:
        for name in _suites_of(doc):
            if held_out(name) and name not in seen:
                seen.append(name)
    return seen


def _suites_of(doc: Document) -> list[str]:
    """The suites run ``doc`` ran, a random one always with its count
    (``harness.problems.canonical_suite``): a run recorded before ``bench`` wrote names that
    way may say ``random:919361`` for ``random:919361:64``."""
    out = []
    for name in (doc.environment.get("run") or {}).get("suites") or ():
        try:
            out.append(canonical_suite(name))
        except ValueError:  # a malformed name in a hand-edited file: keep it as written
            out.append(name)
    return out


def sweep_table(ds: Dataset, suite: str = "sweep") -> list[SweepPanel]:
    """One panel per (dtype, backend) with a timed rung-7 or rung-8 record on a shape of
    ``suite`` (the ``sweep`` suite, or a held-out random one), dtypes in :data:`DTYPES` order,
    backends in :data:`BACKEND_ORDER`.

    A dtype's shapes are those where any shown kernel has a record that is timed, failed or
    unsupported (a check-only record adds no shape), in :func:`sweep_order`, the same for every
    backend so that the panels line up. Each record is :meth:`Dataset.pick`'s, its % of cuBLAS
    :meth:`Dataset.pct_of_cublas`'s (cuBLAS of the record's own run). A held-out suite's
    panels are folded from the runs that ran it alone (:func:`_ran`): a later run of one of
    its shapes (a tune on spent shapes, another seed's run that drew it) neither replaces the
    suite's record nor drops the shape from the suite's panel."""
    if suite != "sweep":
        ds = build_dataset(d for d in ds.documents if _ran(d, suite))
    shapes = _suite_set(suite)
    recs = [
        r
        for r in ds.bench
        if r.rung in SWEEP_RUNGS and (r.problem.m, r.problem.n, r.problem.k) in shapes
    ]
    dtypes = sorted(
        {r.problem.dtype for r in recs},
        key=lambda d: (DTYPES.index(d) if d in DTYPES else len(DTYPES), d),
    )
    panels: list[SweepPanel] = []
    for dtype in dtypes:
        mine = [r for r in recs if r.problem.dtype == dtype]
        # backend -> rung -> kernel: the kernel timed at the most shapes (ties: kernel id)
        count: dict[tuple[str, int, str], set[Problem]] = {}
        for r in mine:
            if r.timed:
                count.setdefault((r.backend, r.rung, r.kernel), set()).add(r.problem)
        chosen: dict[str, dict[int, str]] = {}
        for backend, rung, kernel in sorted(count, key=lambda c: (-len(count[c]), c[2])):
            chosen.setdefault(backend, {}).setdefault(rung, kernel)
        shown = {k for ks in chosen.values() for k in ks.values()}
        problems = sorted(
            {r.problem for r in mine if r.kernel in shown and (r.timed or r.status != Status.OK)},
            key=sweep_order,
        )
        for backend in sorted(chosen, key=backend_order):
            kernels = {rung: chosen[backend][rung] for rung in sorted(chosen[backend])}
            rows = []
            for p in problems:
                picked = {rung: ds.pick(k, p) for rung, k in kernels.items()}
                pct = {
                    rung: ds.pct_of_cublas(r) if r is not None else None
                    for rung, r in picked.items()
                }
                # cuBLAS of the run of the highest timed rung: the kernel the sweep is about
                like = next(
                    (picked[g] for g in sorted(picked, reverse=True) if pct[g] is not None), None
                )
                rows.append(SweepRow(p, picked, pct, ds.cublas(p, like)))
            stats = {}
            for rung, kernel in kernels.items():
                pts = [(row.pct[rung], row.problem) for row in rows if row.pct[rung] is not None]
                if not pts:
                    continue
                worst = min(pts, key=lambda t: t[0])
                timers = Counter(
                    timer_label(ds.run_of(rec).environment.get("timer"))
                    for row in rows
                    if row.pct[rung] is not None and (rec := row.records[rung]) is not None
                )
                stats[rung] = SweepStat(
                    rung=rung,
                    name=Rung(rung).label,
                    kernel=kernel,
                    geomean=math.exp(sum(math.log(v) for v, _ in pts) / len(pts)),
                    worst=worst[0],
                    worst_problem=worst[1],
                    shapes=len(pts),
                    timers=tuple(t for t, _ in timers.most_common()),
                    weighted=_weighted(suite, pts),
                    below=sum(v < BAR_FLOOR_PCT for v, _ in pts),
                )
            panels.append(SweepPanel(backend, dtype, kernels, tuple(rows), stats, suite))
    return panels


def newest_run(ds: Dataset, records: Iterable[BenchRecord | None]) -> Document | None:
    """The newest run (by creation time) that ``records`` came from; None without one."""
    runs = [ds.run_of(r) for r in records if r is not None]
    return max(runs, key=lambda d: d.created or "") if runs else None


def run_trees(env: Mapping[str, Any]) -> list[str]:
    """The commits a run measured, in order: every piece's where a merge joined pieces of
    other code (``harness merge --allow-mixed``; the document's own ``git_sha`` is its first
    piece's), "?" for a piece that recorded none."""
    pieces = [p.get("git_sha") for p in env.get("merged_from") or ()] or [env.get("git_sha")]
    return list(dict.fromkeys(sha or "?" for sha in pieces))


def short_trees(env: Mapping[str, Any]) -> str:
    """:func:`run_trees` shortened to 7 characters and joined (``8538be7 + bf71649``), pieces
    that recorded no commit left out ("" when none did)."""
    return " + ".join(t[:7] for t in run_trees(env) if t != "?")


def run_label(doc: Document | None) -> str:
    """A run as a reader finds it: its date and the trees it ran (``2026-12-07, 8538be7 +
    bf71649`` for two runs merged)."""
    if doc is None:
        return "-"
    return (
        ", ".join(x for x in ((doc.created or "")[:10], short_trees(doc.environment)) if x) or "-"
    )


def _weighted(suite: str, pts: list[tuple[float, Problem]]) -> float | None:
    """A held-out suite's % of cuBLAS with its M bands weighed as an average draw's."""
    if not held_out(suite):
        return None
    w = held_out_weighted((p, v / 100) for v, p in pts)
    return None if w is None else 100 * w


def _swap_kind(c: GemmConfig) -> str:
    """Unswapped, a narrow swapped cover (M within ``NARROW``) or a wide swap."""
    if not c.swap_ab:
        return "unswapped"
    return "narrow swapped cover" if c.tile_n <= max(NARROW) else "wide swap"


def config_family(values: Mapping[str, Any] | None) -> str | None:
    """A rung-8 config's family in the shared vocabulary (``harness.tile_cost.GemmConfig``):
    unswapped, a narrow swapped cover or a wide swap; its cluster size where more than one CTA
    (with a backend's ``cluster_n``, CTAs along the other side, counted in); split-K or
    stream-K. None for a record without a config of that vocabulary."""
    c = model_config(values, priced=lambda _knobs: True)
    if c is None:
        return None
    family = _swap_kind(c)
    ctas = c.cluster * int((values or {}).get("cluster_n", 1))
    if ctas > 1:
        family += f", clusters of {ctas}"
    if c.split_k > 1:
        family += ", split-K"
    elif c.stream_k:
        family += ", stream-K"
    return family


@dataclass(frozen=True)
class FamilyStat:
    """Rung 8 over one panel's shapes of one :func:`config_family`: how many, their geomean %
    of cuBLAS, how many below :data:`BAR_FLOOR_PCT`, and ``points``, the family's part of the
    panel's geomean shortfall (100 x its shapes' summed log ratio over the panel's shape
    count: the parts add up to 100 x ln(geomean), about the geomean's distance from 100 %)."""

    family: str
    shapes: int
    geomean: float
    below: int
    points: float


def family_stats(panel: SweepPanel) -> list[FamilyStat]:
    """Rung 8's timed shapes of ``panel`` by :func:`config_family`, the family that costs the
    geomean most first: where a selection or a kernel loses, by the kind of config it runs."""
    rung = SWEEP_RUNGS[1]
    points = []
    for row in panel.rows:
        record, pct = row.records.get(rung), row.pct.get(rung)
        if record is not None and pct is not None:
            points.append((config_family(record.config_values), pct))
    return family_stats_of(points)


def family_stats_of(points: Iterable[tuple[str | None, float]]) -> list[FamilyStat]:
    """(:func:`config_family`, % of cuBLAS) points by family, the family that costs their
    geomean most first; a point without a family or a positive % is left out."""
    logs: dict[str, list[float]] = {}
    for family, pct in points:
        if pct > 0 and family is not None:
            logs.setdefault(family, []).append(math.log(pct / 100))
    total = sum(len(xs) for xs in logs.values())
    stats = [
        FamilyStat(
            family,
            len(xs),
            100 * math.exp(sum(xs) / len(xs)),
            sum(x < math.log(BAR_FLOOR_PCT / 100) for x in xs),
            100 * sum(xs) / total,
        )
        for family, xs in logs.items()
    ]
    return sorted(stats, key=lambda st: (st.points, st.family))


#: :func:`same_config_classes`' classes, in table order.
CONFIG_CLASSES = (
    "same config, unswapped",
    "same config, narrow swapped cover",
    "same config, wide swap",
    "different configs",
)


@dataclass(frozen=True)
class ConfigClass:
    """Two backends' rung 8 over one suite and dtype, on the shapes both timed, in one class
    of :data:`CONFIG_CLASSES`: how many shapes, and the geometric mean of ``second``'s % of
    cuBLAS over ``first``'s (each against cuBLAS in its own run)."""

    suite: str
    dtype: str
    first: str
    second: str
    kind: str
    shapes: int
    ratio: float


def _config_class(a: BenchRecord, b: BenchRecord) -> str:
    ca, cb = model_config(a.config_values), model_config(b.config_values)
    if ca is None or ca != cb:
        return CONFIG_CLASSES[3]
    return f"same config, {_swap_kind(ca)}"


def same_config_classes(panels: Iterable[SweepPanel]) -> list[ConfigClass]:
    """Where one backend's rung 8 trails or leads another's, split by whether the two ran the
    same config (the shared knobs of ``harness.tile_cost.GemmConfig``, as
    ``harness.fitcost.model_config`` reads a record's; a backend's own knobs, an epilogue or
    persistence, are part of its kernel) — kernel against kernel — or chose differently (the
    selection, or a tile one DSL cannot express). Per (suite, dtype) and pair of backends in
    :data:`BACKEND_ORDER`; a class with no shape is left out, and each pair ends with an
    "all shapes" row."""
    rung = SWEEP_RUNGS[1]
    groups: dict[tuple[str, str], list[SweepPanel]] = {}
    for panel in panels:
        if rung in panel.kernels:
            groups.setdefault((panel.suite, panel.dtype), []).append(panel)
    out: list[ConfigClass] = []
    for (suite, dtype), group in groups.items():
        ordered = sorted(group, key=lambda p: backend_order(p.backend))
        for first, second in itertools.combinations(ordered, 2):
            theirs = {row.problem: row for row in second.rows}
            logs: dict[str, list[float]] = {}
            for row in first.rows:
                other = theirs.get(row.problem)
                a, pa = row.records.get(rung), row.pct.get(rung)
                if other is None or a is None or pa is None:
                    continue
                b, pb = other.records.get(rung), other.pct.get(rung)
                if b is None or pb is None:
                    continue
                logs.setdefault(_config_class(a, b), []).append(math.log(pb / pa))
            if not logs:
                continue
            every = [x for kind in CONFIG_CLASSES for x in logs.get(kind, [])]
            rows = [(k, logs[k]) for k in CONFIG_CLASSES if k in logs]
            for kind, xs in [*rows, ("all shapes", every)]:
                out.append(
                    ConfigClass(
                        suite,
                        dtype,
                        first.backend,
                        second.backend,
                        kind,
                        len(xs),
                        math.exp(sum(xs) / len(xs)),
                    )
                )
    return out


def _ran(doc: Document, suite: str) -> bool:
    """Whether the run ``doc`` ran ``suite``: a held-out panel shows only the runs of its seed,
    not a shape another seed's run shares with it (a backend that never ran the seed would
    otherwise get a panel of its few colliding small-M shapes)."""
    return suite in _suites_of(doc)


def sweep_panels(ds: Dataset) -> list[SweepPanel]:
    """The ``sweep`` suite's panels, then each held-out suite's (shapes never tuned on)."""
    return [p for suite in ("sweep", *held_out_suites(ds)) for p in sweep_table(ds, suite)]


def _replaces(new: BenchRecord, old: BenchRecord | None) -> bool:
    """Latest run wins, except that a check-only record (ok, untimed) never hides a timing."""
    return old is None or not (old.timed and new.status == Status.OK and new.timing is None)


def _latest(recs: Iterable[BenchRecord]) -> BenchRecord | None:
    """The record that wins among ``recs`` (oldest first) under :func:`_replaces`."""
    cur = None
    for r in recs:
        if _replaces(r, cur):
            cur = r
    return cur


def build_dataset(docs: Iterable[Document]) -> Dataset:
    """Fold documents (oldest first) into a :class:`Dataset`."""
    docs = tuple(docs)
    run: dict[int, int] = {}
    bench: dict[tuple[str, str | None, Problem], BenchRecord] = {}
    codegen: dict[tuple[str, str, str | None], CodegenRecord] = {}
    for i, doc in enumerate(docs):
        for r in doc.bench:
            run[id(r)] = i
            key = (r.kernel, r.config, r.problem)
            if _replaces(r, bench.get(key)):
                bench[key] = r
        for c in doc.codegen:
            codegen[(c.kernel, c.arch, c.config)] = c
    return Dataset(docs, tuple(bench.values()), tuple(codegen.values()), run)


def load_dataset(
    paths: Iterable[str | os.PathLike[str]], warn: Callable[[str], None] = lambda _m: None
) -> Dataset:
    """Load every results file under ``paths`` (folders one level deep); unreadable files are
    named through ``warn`` and skipped. Raises :class:`ResultsError` when nothing is left."""
    paths = list(paths)
    if not result_files(paths):
        raise ResultsError("no result files found in " + ", ".join(map(str, paths)))
    docs = load_many(paths, warn=warn)
    if not docs:
        raise ResultsError("no readable result files (every one was skipped)")
    return build_dataset(docs)
