"""The headline table (report.md summary, terminal summary, README) is read from one run.

Built from ``tests/fixtures/bench_small.json`` (alpha's and beta's final kernels and cuBLAS at
4096^3 and 8192^3) plus runs written here, so each test states which run a cell must come from.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.gemm import Problem
from harness.records import BenchRecord
from harness.results import Document, ResultsWriter, load
from reports.data import Dataset, build_dataset
from reports.readme import readme_summary
from reports.summary import OTHER_RUN_MARK, headline, headline_rows, terminal_summary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALPHA7 = "alpha/sm90/r7_multi_consumer"
BETA7 = "beta/sm90/r7_multi_consumer"
P4096 = Problem(4096, 4096, 4096)
P8192 = Problem(8192, 8192, 8192)


def _rec(doc: Document, kernel: str, p: Problem) -> BenchRecord:
    return next(r for r in doc.bench if r.kernel == kernel and r.problem == p and r.timed)


def _cublas(doc: Document, p: Problem) -> BenchRecord:
    return next(r for r in doc.bench if r.rung == 0 and r.problem == p and r.timed)


def _write(path: Path, records: list[BenchRecord]) -> Document:
    w = ResultsWriter(path, "bench", {"gpu": "Fixture GPU H000", "power_limit_w": 700.0})
    w.add_many(records)
    return load(path)


def _faster(rec: BenchRecord, ms: float) -> BenchRecord:
    return replace(rec, timing=replace(rec.timing, median_ms=ms, p20_ms=ms, p80_ms=ms))


def _row(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(start))


def test_every_cell_comes_from_the_headline_run_when_it_has_it(tmp_path: Path) -> None:
    """A later run that timed alpha again (faster) must not replace the headline run's cell:
    the table compares kernels timed side by side, not the latest of each."""
    base = load(FIXTURES / "bench_small.json")
    later = _write(
        tmp_path / "later.json",
        [_cublas(base, P4096), _faster(_rec(base, ALPHA7, P4096), 0.1)],
    )
    ds = build_dataset([base, later])
    assert ds.headline_run() is base
    assert ds.pick(ALPHA7, P4096).median_ms == pytest.approx(0.1)  # latest-per-cell differs
    rows = headline_rows(ds)
    assert [r.problem for r in rows] == [P4096, P8192]
    for row in rows:
        assert ds.run_of(row.cublas) is base and not row.cublas_other_run
        for cell in row.cells:
            assert ds.run_of(cell.record) is base and not cell.other_run
    alpha = _rec(base, ALPHA7, P4096)
    md = readme_summary(ds)
    assert f"| 4096x4096x4096-fp16 | 687 | {alpha.tflops:.0f} (105.3 %, " in md
    assert OTHER_RUN_MARK not in md.split("Headline run")[0]
    assert "Headline run: `bench_small.json` (" in md and "Fixture GPU H000" in md
    # the fixture's timer predates rewarm_s / settle_s: later rounds warmed 0.2 s, no settle
    assert "warm-ups 1/0.2/0 s: first round / later rounds / settle" in md
    assert "from another run than the headline run" not in md


def test_a_cell_from_another_run_is_marked_and_its_run_named(tmp_path: Path) -> None:
    """The headline run lacks beta at 8192^3: that cell falls back to the latest run that has
    it, with a † and a footnote naming the file; its % is against that run's own cuBLAS."""
    base = load(FIXTURES / "bench_small.json")
    # no recorded %: it must be computed against the older run's cuBLAS (0.55 ms), not the
    # headline run's (0.52 ms)
    beta = replace(
        _faster(_rec(base, BETA7, P8192), 0.50),
        pct_of_cublas=None,
        tflops=P8192.flops / 0.50e-3 / 1e12,
    )
    older = _write(tmp_path / "older-beta.json", [_faster(_cublas(base, P8192), 0.55), beta])
    lacking = _write(
        tmp_path / "all-dsl.json", [r for r in base.bench if r is not _rec(base, BETA7, P8192)]
    )
    ds = build_dataset([older, lacking])
    assert ds.headline_run() is lacking
    cells = {(row.problem, i): c for row in headline_rows(ds) for i, c in enumerate(row.cells)}
    assert cells[(P8192, 1)].other_run and ds.run_of(cells[(P8192, 1)].record) is older
    assert not any(c.other_run for k, c in cells.items() if k != (P8192, 1))
    pct = 100 * 0.55 / 0.50
    for text in (readme_summary(ds), terminal_summary(ds, None)):
        row = _row(text, "| 8192x8192x8192-fp16" if text.startswith("Each") else "8192x")
        assert f"{beta.tflops:.0f} ({pct:.1f} %, {pct:.1f}-{pct:.1f}){OTHER_RUN_MARK}" in row
        assert row.count(OTHER_RUN_MARK) == 1
        assert f"{OTHER_RUN_MARK} from another run than the headline run (`older-beta.json`)" in (
            text
        )
        assert "Headline run: `all-dsl.json`" in text


def _per_clock_dataset(tmp_path: Path) -> Dataset:
    base = load(FIXTURES / "bench_small.json")
    alpha, beta = _rec(base, ALPHA7, P4096), _rec(base, BETA7, P4096)
    records = [
        # schema 3: recorded per clock (not the plain % of cuBLAS, so the test tells them apart)
        replace(r, per_clock_pct_of_cublas=97.5)
        if r is alpha
        # schema 2: no per clock recorded; computed from TFLOPS/GHz over cuBLAS's of the run
        else replace(r, tflops_per_ghz=400.0, per_clock_pct_of_cublas=None)
        if r is beta
        else r
        for r in base.bench
    ]
    return build_dataset([_write(tmp_path / "clock.json", records)])


def test_per_clock_is_shown_recorded_or_computed_from_the_same_run(tmp_path: Path) -> None:
    ds = _per_clock_dataset(tmp_path)
    ref = _cublas(ds.documents[0], P4096)
    computed = 100 * 400.0 / ref.tflops_per_ghz
    table = headline(ds)
    assert table is not None
    i = next(j for j, r in enumerate(table.rows) if r[0] == P4096.key)
    assert table.rows[i + 1] == [
        "  per clock",
        f"{ref.tflops_per_ghz:.0f} per GHz",
        "97.5 %",
        f"{computed:.1f} %",
    ]
    md = readme_summary(ds)
    assert f"| 97.5 % | {computed:.1f} % |" in md
    line = _row(terminal_summary(ds, None), "per clock").split()
    clock = f"{ref.tflops_per_ghz:.0f}"
    assert line == ["per", "clock", clock, "per", "GHz", "97.5", "%", f"{computed:.1f}", "%"]


def test_per_clock_is_left_out_without_a_clock_of_the_same_run(tmp_path: Path) -> None:
    base = load(FIXTURES / "bench_small.json")
    records = [replace(r, tflops_per_ghz=None, per_clock_pct_of_cublas=None) for r in base.bench]
    ds = build_dataset([_write(tmp_path / "noclock.json", records)])
    table = headline(ds)
    assert table is not None and not any("per clock" in r[0] for r in table.rows)
