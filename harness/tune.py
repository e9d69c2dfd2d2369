"""Turn ``bench --tune`` results into the committed tuned tables that ``select`` consults.

For every (GPU model, kernel, problem) with timed records of at least two configs, the fastest
median wins — but it replaces the config the kernel selected on its own (the record marked
``selected``) only when it is faster by more than ``margin`` (default 1 %, about the
run-to-run spread of a sustained measurement): a table should not enshrine noise. Each winner
is merged into ``<kernel module folder>/tuned/<gpu slug>.json`` (:func:`harness.configs.
tuned_table_path`), replacing that kernel's earlier entry for the same problem.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.configs import TunedEntry, TunedTable, tuned_table_path
from harness.gemm import Problem
from harness.problems import TUNING_SEEDS, held_out, suite_shapes
from harness.protocol import KernelSpec
from harness.records import BenchRecord
from harness.results import Document

__all__ = ["Choice", "choose", "held_out_suites", "tuning_docs", "write_tables"]


def held_out_suites(doc: Document) -> list[str]:
    """The held-out suites (``harness.problems.held_out``) a results document ran."""
    run = doc.environment.get("run") or {}
    return [s for s in run.get("suites") or () if held_out(s)]


def tuning_docs(docs: Iterable[Document], warn: Callable[[str], None]) -> list[Document]:
    """``docs`` without those that ran a held-out suite: their timings are evaluation data,
    never tuning data (tuned tables, cost-model fits). Nor, in the documents kept, the bench
    records of a shape one of those held-out suites holds (a diagnostic ``--tune`` of spent
    evaluation shapes, run by name): an evaluated shape stays out of every fit. The documents
    left out (one line for all of them) and each document's records left out are named through
    ``warn``; ValueError when nothing is left."""
    evaluated: set[tuple[int, int, int]] = set()
    kept, dropped = [], []
    for doc in docs:
        suites = held_out_suites(doc)
        if suites:
            dropped.append(
                f"{doc.source or 'a results document'} ran the held-out suite {suites[0]}"
            )
            evaluated.update(s for name in suites for s in suite_shapes(name))
        else:
            kept.append(doc)
    if len(dropped) == 1:
        warn(f"skipped {dropped[0]}: evaluation data never tunes")
    elif dropped:  # one line, however many evaluation runs a results folder holds
        shown = "; ".join(dropped[:3]) + (
            f"; and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        )
        warn(
            f"skipped {len(dropped)} runs of held-out suites (evaluation data never tunes): {shown}"
        )
    if not kept and dropped:
        raise ValueError(
            f"no tuning data: {dropped[0]} (tune on sweep, square, ksweep, llm or "
            f"random:<seed in {sorted(TUNING_SEEDS)}>)"
        )

    def spent(r: object) -> bool:
        return isinstance(r, BenchRecord) and (r.problem.m, r.problem.n, r.problem.k) in evaluated

    out = []
    for doc in kept:
        keys = sorted({r.problem.key for r in doc.bench if spent(r)})
        if keys:
            warn(
                f"skipped the records of {len(keys)} evaluated shape(s) in "
                f"{doc.source or 'a results document'} ({', '.join(keys)}): "
                "evaluation shapes never tune"
            )
            doc = dataclasses.replace(doc, records=tuple(r for r in doc.records if not spent(r)))
        out.append(doc)
    return out


@dataclass(frozen=True)
class Choice:
    gpu: str
    kernel: str
    problem: Problem
    chosen: BenchRecord
    fastest: BenchRecord
    selected: BenchRecord | None
    configs: int
    source: str

    @property
    def gain(self) -> float | None:
        """How much faster the chosen config is than the selected one (0.02 = 2 %)."""
        if self.selected is None or self.selected.median_ms is None:
            return None
        return self.selected.median_ms / self.chosen.median_ms - 1.0  # type: ignore[operator]


def choose(docs: Iterable[Document], margin: float = 0.01) -> list[Choice]:
    """The winner per (GPU, kernel, problem) over the timed, configured records of ``docs``."""
    groups: dict[tuple[str, str, Problem], list[tuple[BenchRecord, str]]] = defaultdict(list)
    for doc in docs:
        gpu = doc.environment.get("gpu")
        if not gpu:
            continue
        for rec in doc.bench:
            if rec.timed and rec.config is not None:
                groups[(gpu, rec.kernel, rec.problem)].append((rec, doc.source or "?"))
    choices = []
    for (gpu, kernel, problem), recs in sorted(groups.items(), key=lambda kv: kv[0]):
        by_config: dict[str, tuple[BenchRecord, str]] = {}
        for rec, src in recs:  # a config timed twice: the later document wins
            by_config[rec.config] = (rec, src)  # type: ignore[index]
        if len(by_config) < 2:
            continue
        ranked = sorted(by_config.values(), key=lambda rs: rs[0].median_ms)  # type: ignore[arg-type,return-value]
        fastest, source = ranked[0]
        selected = next((r for r, _ in ranked if r.selected), None)
        chosen = fastest
        if selected is not None and selected.median_ms <= fastest.median_ms * (1 + margin):  # type: ignore[operator]
            chosen = selected
        choices.append(
            Choice(gpu, kernel, problem, chosen, fastest, selected, len(by_config), source)
        )
    return choices


def write_tables(
    choices: Iterable[Choice],
    specs: Iterable[KernelSpec],
    log: Callable[[str], None] = lambda _m: None,
) -> list[Path]:
    """Merge ``choices`` into the kernels' tuned tables; return the files written."""
    by_id = {s.id: s for s in specs}
    tables: dict[Path, TunedTable] = {}
    for c in choices:
        spec = by_id.get(c.kernel)
        if spec is None:
            log(f"skipped {c.kernel}: not a kernel of this installation")
            continue
        path = tuned_table_path(spec.module, c.gpu)
        if path not in tables:
            tables[path] = TunedTable.read(path) or TunedTable(c.gpu, {})
        entry = TunedEntry(c.problem, c.chosen.config, c.chosen.median_ms, c.chosen.pct_of_cublas)  # type: ignore[arg-type]
        tables[path] = tables[path].merged(
            TunedTable(c.gpu, {c.kernel: (entry,)}, (Path(c.source).name,))
        )
    for path, table in tables.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table.to_json(), indent=1) + "\n")
    return list(tables)
