"""Reports: rendering from fixtures, the Dataset's rules, the CLI's errors and promote.

Fixtures: ``bench_small.json`` (schema v1: two DSLs' chains and finals, no configs, one wrong
rung), ``bench_tune.json`` (schema v2, a later tune run: three timed configs of alpha's rung 7
at 4096^3 with the selected one not the fastest, one wrong config, and a pure tune at 2048^3
with no selected record), ``codegen_small.json``. The figures' readability (size, text that
overlaps or leaves the canvas) is tested in ``test_figures.py``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from expectations import require_module
from records import bench_record

from harness.fitcost import ceiling
from harness.gemm import Problem
from harness.problems import suite_shapes
from harness.records import BenchRecord, Stats, Status
from harness.results import ResultsWriter, load
from harness.telemetry import Telemetry
from reports.cli import main
from reports.data import (
    build_dataset,
    chain_table,
    config_family,
    family_stats,
    held_out_suites,
    hold_text,
    load_dataset,
    pct_table,
    same_config_classes,
    sweep_order,
    sweep_panels,
    sweep_table,
    tflops_range,
    timer_label,
    warmups,
)
from reports.figures import FIGURES
from reports.figures.chain import figure_chain
from reports.figures.heatmap import figure_heatmap
from reports.figures.ksweep import figure_ksweep
from reports.figures.sweep import MAX_HELD_OUT, figure_sweep
from reports.markdown import (
    anchor,
    ceiling_lines,
    environment_lines,
    runs_lines,
    sweep_lines,
    tuning_lines,
    watts_cell,
)
from reports.promote import PromoteError, promote
from reports.readme import README_END, README_START, update_readme
from reports.render import render_report
from reports.summary import summary_tables

require_module("matplotlib", "the report renders figures")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ALPHA7 = "alpha/sm90/r7_multi_consumer"
R8 = "gamma/sm90/r8_shape_adaptive"
P4096 = Problem(4096, 4096, 4096)
P2048 = Problem(2048, 2048, 2048)
FIGS = tuple(spec.file for spec in FIGURES)
LINKED = ("sweep.md", "tuning.md", "records.md", "environment.md")
OUTPUTS = {*FIGS, "report.md", *LINKED}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    render_report([FIXTURES], out)
    return out


@pytest.fixture(scope="module")
def ds():
    return load_dataset([FIXTURES])


# ------------------------------------------------------------------------------------ rendering
def test_render_writes_every_file_with_the_fixture_numbers(rendered: Path) -> None:
    assert OUTPUTS | {"results.csv", "codegen.csv"} <= {p.name for p in rendered.iterdir()}
    for png in rendered.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    md = (rendered / "report.md").read_text()
    assert "Rendered by `python -m reports`" in md
    # alpha's own choice at 4096^3 is the selected config of the later tune run (0.195 ms),
    # not the faster non-selected config nor the earlier unconfigured record.
    assert (
        "| 4096x4096x4096-fp16 | square, llm | 687.2 | 704.8 (102.6%) | `group=8,raster=m` | "
        "687.2 (100.0%) |" in md
    )
    # 2048^3 has only non-selected configs: the fastest stands in, marked and explained.
    assert (
        "| 2048x2048x2048-fp16 | square, sweep | 572.7 | 554.2 (96.8%) † | `group=4,raster=m` | - |"
        in md
    )
    assert "the fastest config measured is shown instead" in md
    # The chain takes every rung from the one run that timed them all (bench_small), not
    # rung 7 from the later tune run: a step compares kernels timed side by side.
    assert "| 7 multi_consumer | alpha/sm90/r7_multi_consumer | - | ok | 0.1900 |" in md
    assert "| 4 persistent | beta/sm90/r4_persistent | - | wrong |" in md
    # failures with reasons, codegen; the long tables and the environment in linked files
    assert "| 4096x4096x4096-fp16 | wrong | result differs from torch.matmul: max\\|err\\|" in md
    assert "| alpha/sm90/r7_multi_consumer | - | sm_90a | ok | 168 | 0 | 1024 | 0.71 | 212 |" in md
    assert "CompileError: boom" in md
    for fig in FIGS:
        assert f"]({fig})" in md
    env = (rendered / "environment.md").read_text()
    assert "Fixture GPU H000, 132 SMs, L2 50 MiB" in env and "`0123456789abcdef`" in env
    assert "power limit 700 W" in env and "warm-up 1.0 s" in env and "triton 3.9.0" in env
    assert "| TFLOPS/GHz | % cuBLAS | SM MHz | W |" in (rendered / "records.md").read_text()
    assert "**alpha/sm90/r7_multi_consumer** at " in (rendered / "tuning.md").read_text()
    for name in (*LINKED, "report.md"):
        text = (rendered / name).read_text()
        for outside in (
            "DESIGN.md",
            "DSL-NOTES",
            "../shared",
            "seeds",
            "the issue",
            "harness report",
        ):
            assert outside not in text, (name, outside)
    rows = list(csv.DictReader(io.StringIO((rendered / "results.csv").read_text())))
    tuned = [r for r in rows if r["kernel"] == ALPHA7 and r["k"] == "4096" and r["config"]]
    assert {r["config"] for r in tuned} >= {"group=8,raster=m", "group=4,raster=m"}


def test_report_md_reads_summary_first_then_contents(rendered: Path) -> None:
    """Summary (headline, chains, sweep geomeans), then contents whose every link resolves,
    then the figures; the runs at the end; the long tables only in the linked files."""
    md = (rendered / "report.md").read_text()
    heads = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    assert heads[:2] == ["Summary", "Contents"] and heads[-1] == "Runs"
    assert heads.index("Cross-DSL performance") < heads.index("Not timed") < heads.index("Runs")
    summary = md.split("## Summary")[1].split("## Contents")[0]
    # headline: from the headline run (bench_small, the run with both finals), not the later tune
    assert "| 4096x4096x4096-fp16 | 687 | 723 (105.3 %, " in summary
    assert (
        "| 1 tiled | 2.000 | 3.000 |" in summary
        and "| 4 persistent | 0.400 (x1.25) | wrong |" in summary
    )
    assert "| total, rung 1 to the last | x10.5 | x15.0 |" in summary
    sweep_row = "| sweep | fp16 | alpha | 103.5 | 96.8 (2048x2048x2048, 2/43 shapes) | - | - |"
    assert sweep_row in summary  # 2 of the `sweep` suite's 43 shapes timed
    contents = md.split("## Contents")[1].split("\n## ")[0]
    anchors = {anchor(h) for h in heads}
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert len(links) == len(heads) - 2 and set(links) <= anchors
    for name in LINKED:
        assert f"[{name}]({name})" in contents
        assert (rendered / name).read_text().splitlines()[2] == "[Back to report.md](report.md)"
    for long in ("Fixture GPU H000, 132 SMs", "SM MHz", "| config | median ms | p20-p80 ms |"):
        assert long not in md
    assert len(md.splitlines()) < 200


def test_rendering_twice_gives_identical_bytes(rendered: Path, tmp_path: Path) -> None:
    render_report([FIXTURES], tmp_path)
    for name in OUTPUTS:
        assert (tmp_path / name).read_bytes() == (rendered / name).read_bytes(), name


def test_bad_files_are_named_and_skipped_while_the_rest_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(FIXTURES, inputs)
    (inputs / "corrupt.json").write_text('{"schema": "gemm-dsl-study/results", ')
    newer = json.loads((FIXTURES / "bench_tune.json").read_text())
    newer["schema_version"] = 99
    (inputs / "newer.json").write_text(json.dumps(newer))
    assert main([str(inputs), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("warning" in line for line in err)
    assert any("corrupt.json" in line and "not valid JSON" in line for line in err)
    assert any("newer.json" in line and "newer" in line for line in err)
    assert OUTPUTS <= {p.name for p in (tmp_path / "out").iterdir()}
    md = (tmp_path / "out" / "report.md").read_text()
    assert "`bench_tune.json`" in md and "corrupt.json" not in md and "newer.json" not in md


# -------------------------------------------------------------------------------------- the CLI
def test_no_results_exits_2_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "reports"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and "reports/results" in run.stderr
    assert "Traceback" not in run.stderr


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert main([str(FIXTURES), "--out", str(tmp_path / "o"), "--chain-problem", "64x64x64"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert "no result files found" in err[0]
    assert "--chain-problem 64x64x64-fp16: no timed results" in err[1]
    assert not (tmp_path / "o").exists()


# -------------------------------------------------------------------------------------- Dataset
def test_dataset_picks_the_selected_config(ds) -> None:
    rec = ds.pick(ALPHA7, P4096)
    assert rec.config == "group=8,raster=m" and rec.selected is True
    assert min(r.median_ms for r in ds.records(ALPHA7, P4096) if r.timed) < rec.median_ms
    assert not ds.picked_fastest(ALPHA7, P4096)
    fallback = ds.pick(ALPHA7, P2048)
    assert fallback.config == "group=4,raster=m" and ds.picked_fastest(ALPHA7, P2048)
    assert ds.final_kernels() == {"alpha": ALPHA7, "beta": "beta/sm90/r7_multi_consumer"}
    # cuBLAS comes from the run of the record it is compared with
    old = next(r for r in ds.records(ALPHA7, P4096) if r.config is None)
    assert ds.run_of(ds.cublas(P4096, old)).source.endswith("bench_small.json")
    assert ds.run_of(ds.cublas(P4096, rec)).source.endswith("bench_tune.json")


def test_latest_run_wins_but_a_check_only_record_keeps_the_timing(tmp_path: Path) -> None:
    base = load(FIXTURES / "bench_small.json")
    beta7 = next(
        r for r in base.bench if r.kernel == "beta/sm90/r7_multi_consumer" and r.problem == P4096
    )
    later = ResultsWriter(tmp_path / "later.json", "bench", {"gpu": "x"})
    later.add(BenchRecord(**_ident(beta7), problem=P4096, status=Status.OK))  # check-only
    faster = Stats(n=9, median_ms=0.1, p20_ms=0.09, p80_ms=0.11, mean_ms=0.1, min_ms=0.09, cv=0)
    big = Problem(8192, 8192, 8192)
    later.add(BenchRecord(**_ident(beta7), problem=big, timing=faster, status=Status.OK))
    ds = build_dataset([base, load(tmp_path / "later.json")])
    assert ds.pick(beta7.kernel, P4096).median_ms == pytest.approx(0.2)
    assert ds.pick(beta7.kernel, big).median_ms == pytest.approx(0.1)  # a later timing wins


def test_headline_run_is_the_run_with_the_most_final_kernels(tmp_path: Path) -> None:
    """The headline comes from the run that timed the most backends' final kernels; a record
    of another run is marked, one of the headline run is not."""
    base = load(FIXTURES / "bench_small.json")
    ds = build_dataset([base])
    assert ds.headline_run() is base
    assert not any(ds.outside_headline(r) for r in base.bench)
    # a later run that times only one backend's final kernel is not the headline
    beta7 = next(r for r in base.bench if r.kernel == "beta/sm90/r7_multi_consumer" and r.timed)
    ref = next(r for r in base.bench if r.rung == 0 and r.timed and r.problem == beta7.problem)
    later = ResultsWriter(tmp_path / "later.json", "bench", {"gpu": "x"})
    later.add_many([ref, replace(beta7, timing=replace(beta7.timing, median_ms=0.1))])
    ds = build_dataset([base, load(tmp_path / "later.json")])
    assert ds.headline_run() is ds.documents[0]
    newer = ds.pick(beta7.kernel, beta7.problem)
    assert newer.median_ms == pytest.approx(0.1) and ds.outside_headline(newer)


def _ident(rec: BenchRecord) -> dict:
    keys = ("kernel", "backend", "name", "rung", "rung_name", "arch")
    return {k: getattr(rec, k) for k in keys}


def test_tuning_section_lists_every_timed_config(ds) -> None:
    md = "\n".join(tuning_lines(ds))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if "`" in line}
    assert {"`group=4,raster=m`", "`group=8,raster=m`", "`group=8,raster=n`"} <= set(rows)
    assert "group=16" not in md  # wrong, so not timed: listed under failures instead
    assert md.count("**alpha/sm90/r7_multi_consumer** at ") == 2
    section = md.split("at 4096x4096x4096-fp16:")[1]
    assert re.search(r"`group=4,raster=m` \| 0\.1850 .*\| fastest \|", section)
    assert re.search(r"`group=8,raster=m` \| 0\.1950 .*\| selected \|", section)
    assert "| 102.6 |" in section  # % of cuBLAS in the same run


def test_chain_and_heatmap_tables(ds) -> None:
    table = chain_table(ds, P4096)
    alpha = {row.rung: row for row in table["alpha"]}
    assert alpha[3].step == pytest.approx(3.0)
    assert alpha[7].total == pytest.approx(2.0 / 0.19) and alpha[7].config is None
    assert not any(row.other_run for row in table["alpha"])
    # Without the chain run's rung 7, the tune run's record stands in, marked as another run.
    rest = build_dataset(
        [
            replace(
                d, records=tuple(r for r in d.records if not (r.rung == 7 and r.config is None))
            )
            for d in ds.documents
        ]
    )
    alpha = {row.rung: row for row in chain_table(rest, P4096)["alpha"]}
    assert alpha[7].other_run and alpha[7].config == "group=8,raster=m"
    assert alpha[7].median_ms == pytest.approx(0.195)
    beta = {row.rung: row for row in table["beta"]}
    assert beta[4].status == "wrong" and beta[4].median_ms is None
    assert beta[5].step == pytest.approx(0.8 / 0.3)  # against the last timed rung
    rows, cols, grid = pct_table(ds)
    assert rows == [ALPHA7, "beta/sm90/r7_multi_consumer"]
    assert grid[0][cols.index(Problem(8192, 8192, 8192))] == pytest.approx(100 * 0.52 / 0.47)


def test_chain_keeps_its_run_when_a_later_run_retimes_a_rung(ds) -> None:
    """A later run timing alpha's rung 7 again (same config, so latest-run-wins keeps only the
    later record) leaves the chain on the run that timed every rung, unmarked."""
    chain_doc = next(d for d in ds.documents if any(r.rung == 1 for r in d.records))
    again = [
        replace(r, timing=replace(r.timing, median_ms=0.25))
        for r in chain_doc.records
        if r.kernel == ALPHA7 and r.problem == P4096 and r.config is None
    ]
    later = replace(chain_doc, records=tuple(again), created="2099-01-01T00:00:00Z")
    both = build_dataset([*ds.documents, later])
    assert {r.timing.median_ms for r in both.bench if r.kernel == ALPHA7 and r.problem == P4096
            and r.config is None} == {0.25}  # fmt: skip
    alpha = {row.rung: row for row in chain_table(both, P4096)["alpha"]}
    assert alpha[7].median_ms == pytest.approx(0.19) and not alpha[7].other_run


def test_heatmap_resolves_two_percent_and_tells_25_from_89(ds) -> None:
    fig = figure_heatmap(ds)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "102.6" in texts and "110.6" in texts
    assert all(re.fullmatch(r"\d+\.\d|-", t) for t in texts), texts
    image = next(ax.images[0] for ax in fig.axes if ax.images)
    colour = lambda v: tuple(image.cmap(image.norm(v)))  # noqa: E731
    # a diverging scale centred on 100: fine steps near it, and 25 % far from 89 %
    assert colour(98.5) != colour(101.5) and colour(99.5) != colour(100.5)
    assert colour(25) != colour(89) and colour(89) != colour(95)
    assert colour(101) == colour(101.5)  # one step, not a continuum
    red = lambda v: colour(v)[0] > colour(v)[2]  # noqa: E731
    light = lambda v: sum(colour(v)[:3])  # noqa: E731
    assert all(red(v) for v in (25, 89, 99)) and not any(red(v) for v in (101, 115))
    assert light(25) < light(89) < light(99) and light(115) < light(101)  # darker further out
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert "fp16, square suite (M = N = K)" in titles and "fp16, K sweep (M = N = 8192)" in titles


def test_error_bands_and_ksweep_axis(ds) -> None:
    rec = ds.pick(ALPHA7, P4096)
    lo, mid, hi = tflops_range(rec)
    assert hi == pytest.approx(mid * rec.timing.median_ms / rec.timing.p20_ms) and lo < mid < hi
    ax = figure_ksweep(ds).axes[0]
    assert ax.get_ylim()[0] > 0.5 * min(line.get_ydata().min() for line in ax.get_lines())


def test_readme_block_is_regenerated(ds, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    old = "<!-- results:start (generated by python -m harness report --readme) -->"
    readme.write_text(f"# Title\n\n{old}\nstale numbers\n{README_END}\n\nrest\n")
    assert update_readme(ds, readme)
    text = readme.read_text()
    assert README_START in text and old not in text and "stale numbers" not in text
    assert text.endswith("\n\nrest\n")
    # every cell from the headline run (bench_small: both finals), per clock on the next line
    assert "| 4096x4096x4096-fp16 | 687 | 723 (105.3 %, 104.2-106.3) | 687 (100.0 %, " in text
    assert "|   per clock | 429 per GHz | 105.3 % | 100.0 % |" in text
    plain = tmp_path / "PLAIN.md"
    plain.write_text("no markers\n")
    assert not update_readme(ds, plain) and plain.read_text() == "no markers\n"


# -------------------------------------------------------------------------------------- promote
@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fake repository: runs/ with a run, reports/results with one committed file."""
    (tmp_path / "runs").mkdir()
    shutil.copy(FIXTURES / "bench_tune.json", tmp_path / "runs" / "bench-tune.json")
    results = tmp_path / "reports" / "results"
    (results / "archive").mkdir(parents=True)
    shutil.copy(FIXTURES / "bench_small.json", results / "bench-old.json")
    (results / "archive" / "README.md").write_text("# Archive\n\n| file | moved | by | why |\n")
    return tmp_path


def test_promote_copies_and_refuses_to_overwrite(repo: Path) -> None:
    results = repo / "reports" / "results"
    done = promote(repo / "runs" / "bench-tune.json", results)
    assert done.dest == results / "bench-tune.json" and not done.moved
    assert done.dest.read_bytes() == (repo / "runs" / "bench-tune.json").read_bytes()
    with pytest.raises(PromoteError, match="refusing to overwrite"):
        promote(repo / "runs" / "bench-tune.json", results)
    (repo / "runs" / "bad.json").write_text("{")
    with pytest.raises(PromoteError, match="does not load"):
        promote(repo / "runs" / "bad.json", results)
    assert not (results / "bad.json").exists()


def test_promote_refuses_a_name_or_folder_of_another_gpu(repo: Path) -> None:
    """The fixture ran on "Fixture GPU H000": a name or folder saying h200 / h100 is refused,
    one saying nothing of the GPU is not."""
    results = repo / "reports" / "results"
    run = repo / "runs" / "bench-tune.json"
    with pytest.raises(PromoteError, match="--name says h200 but the run was on Fixture GPU"):
        promote(run, results, name="eval-r8-h200-20261126")
    (results / "h100").mkdir()
    with pytest.raises(PromoteError, match="folder says h100"):
        promote(run, results / "h100", name="eval-r8")
    assert (
        not any((results / "h100").iterdir())
        and not (results / "eval-r8-h200-20261126.json").exists()
    )
    raw = json.loads(run.read_text())
    raw["environment"]["gpu"] = "NVIDIA H100 80GB HBM3"
    run.write_text(json.dumps(raw))
    assert promote(run, results / "h100", name="eval-r8-h100").dest.exists()
    with pytest.raises(PromoteError, match="--name says h200"):
        promote(run, results, name="eval-r8-h200")
    raw["environment"]["gpu"] = "NVIDIA H200"  # whole words: h20 is not a prefix of h200
    run.write_text(json.dumps(raw))
    with pytest.raises(PromoteError, match="--name says h20 "):
        promote(run, results, name="eval-r8-h20")


def test_promote_archives_what_it_supersedes(repo: Path) -> None:
    results = repo / "reports" / "results"
    done = promote(
        repo / "runs" / "bench-tune.json",
        results,
        name="bench-new",
        supersedes=["bench-old.json"],
        why="timer | v3",
        today="2026-12-01",
    )
    assert (results / "bench-new.json").exists() and not (results / "bench-old.json").exists()
    assert (results / "archive" / "bench-old.json").exists()
    lines = (results / "archive" / "README.md").read_text().splitlines()
    assert lines[-1] == "| `bench-old.json` | 2026-12-01 | `bench-new.json` | timer \\| v3 |"
    assert lines[0] == "# Archive" and len(lines) == 4
    assert any("archived" in line for line in done.lines())
    with pytest.raises(PromoteError, match="no such file"):  # nothing changes on an error
        promote(repo / "runs" / "bench-tune.json", results, name="x", supersedes=["gone.json"])
    assert not (results / "x.json").exists()


def test_promote_cli(repo: Path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(repo)
    argv = ["promote", "runs/bench-tune.json", "--supersedes", "bench-old.json", "--why", "new"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "promoted runs/bench-tune.json -> reports/results/bench-tune.json" in out
    assert (
        "archived reports/results/bench-old.json -> reports/results/archive/bench-old.json" in out
    )
    assert main(["promote", "runs/bench-tune.json"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "refusing to overwrite" in err[0]
    assert (repo / "reports" / "results" / "archive" / "bench-old.json").exists()


# ---------------------------------------------------------------------------------- shape sweep
#: Sweep-suite shapes of the synthetic run, listed out of order on purpose, with cuBLAS ms and
#: % of cuBLAS of gamma's rung 7 and rung 8 (None: rung 8 wrong there). 4096^3 is not a sweep
#: shape: its records must stay out of the sweep.
SWEEP = {
    Problem(8192, 8192, 8192): (0.52, 100.5, 101.0),
    Problem(1, 6144, 4096): (0.020, 12.0, 93.0),
    Problem(128, 28672, 4096): (0.110, 70.0, 104.0),
    Problem(16, 4096, 14336): (0.050, 25.0, 97.5),
    Problem(1024, 1024, 1024): (0.011, 55.0, None),
}
P8192 = Problem(8192, 8192, 8192)


def _sweep_dataset(tmp_path: Path, sweep: bool = True):
    """One run: cuBLAS, gamma's rungs 7 and 8 (rung 8 with a config per shape) and delta's rung
    7 on :data:`SWEEP` (``sweep=False``: only 4096^3), plus rungs 7 and 8 at 4096^3."""
    w = ResultsWriter(tmp_path / "sweep.json", "bench", {"gpu": "x"})
    shapes = dict(SWEEP) if sweep else {}
    shapes[P4096] = (0.2, 98.0, 100.0)
    for p, (cub, r7, r8) in shapes.items():
        w.add(bench_record("cublas", 0, p, cub))
        w.add(bench_record("gamma", 7, p, cub * 100 / r7))
        if r8 is None:
            w.add(bench_record("gamma", 8, p, None, status=Status.WRONG, config=f"tile{p.m}",
                       selected=True))  # fmt: skip
        else:
            w.add(bench_record("gamma", 8, p, cub * 100 / r8, config=f"tile{p.m}", selected=True,
                               selection=f"{p.m} tiles, model"))  # fmt: skip
        w.add(bench_record("delta", 7, p, cub * 100 / (r7 * 0.9)))
    w.finish()
    return load_dataset([tmp_path / "sweep.json"])


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def test_shape_sweep_section_and_figure(tmp_path: Path) -> None:
    ds = _sweep_dataset(tmp_path)
    md = "\n".join(sweep_lines(ds))
    # % of cuBLAS as the report computes it: cuBLAS median over the kernel's median, same run
    pct = {
        g: {p: 100 * v[0] / (v[0] * 100 / v[g - 6]) for p, v in SWEEP.items() if v[g - 6]}
        for g in (7, 8)
    }
    g7, g8 = _geomean(list(pct[7].values())), _geomean(list(pct[8].values()))
    b7, b8 = (sum(v < 90 for v in pct[g].values()) for g in (7, 8))
    assert b7 + b8 > 0  # the count below the bar's floor has something to count
    assert (
        f"- r7 multi_consumer: geomean {g7:.1f} % of cuBLAS, worst {min(pct[7].values()):.1f} % "
        f"at 1x6144x4096, {b7} below 90 % (5 of 43 shapes timed; timer ?)" in md
    )
    assert (
        f"- r8 shape_adaptive: geomean {g8:.1f} % of cuBLAS, worst {min(pct[8].values()):.1f} % "
        f"at 1x6144x4096, {b8} below 90 % (4 of 43 shapes timed; timer ?)" in md
    )
    assert "- r8 below r7 at 0 of the 4 shapes timed with both" in md
    # unknown backends sort by name: delta's panel comes first
    delta, gamma = (md.split(f"**{b}** (`sweep`, fp16;")[1] for b in ("delta", "gamma"))
    delta, gamma = delta.split("**gamma**")[0], gamma.split("Each %")[0]
    assert (
        "| shape | cuBLAS TFLOPS | r7 multi_consumer (% cuBLAS) | r8 shape_adaptive (% cuBLAS) "
        "| r8 config | r8 why |" in gamma
    )
    cub = Problem(1, 6144, 4096).flops / (0.020e-3) / 1e12
    assert f"| 1x6144x4096 | {cub:.1f} | 12.0 | 93.0 | `tile1` | 1 tiles, model |" in gamma
    assert "| 1024x1024x1024 | " in gamma and "| 55.0 | wrong | `tile1024` | - |" in gamma
    # rows by M, then N, then K; 4096^3 is not a sweep shape
    order = [line.split(" | ")[0][2:] for line in gamma.splitlines() if line.startswith("| ")]
    assert order[1:] == ["1x6144x4096", "16x4096x14336", "128x28672x4096", "1024x1024x1024",
                         "8192x8192x8192"]  # fmt: skip
    assert "4096x4096x4096" not in md
    # delta has no rung 8: its table has no rung-8 column and no rung-8 line
    assert "r8" not in delta and "- r7 multi_consumer: geomean" in delta

    fig = figure_sweep(ds)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    titles = [ax.get_title(loc="left").splitlines() for ax in axes]
    assert [t[0] for t in titles] == ["delta", "gamma"]  # one column per DSL
    assert titles[1][2] == (
        f"r8 geomean {g8:.0f} %, worst {min(pct[8].values()):.0f} % (1x6144x4096; 4/43 shapes)"
    )
    assert titles[1][1].startswith(f"r7 geomean {g7:.0f} %") and len(titles[0]) == 2
    ax = axes[1]
    assert ax.get_xscale() == "log"  # M, decode to prefill
    points = {
        round(x): y
        for line in ax.get_lines()
        if line.get_marker() == "o"
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
    }
    assert points[1] == pytest.approx(93.0) and points[16] == pytest.approx(97.5)
    assert {line.get_ydata()[0] for line in ax.get_lines()} >= {100, 90}
    assert "r8 wrong" in [t.get_text() for t in ax.texts]

    out = render_report([tmp_path / "sweep.json"], tmp_path / "out")
    assert tmp_path / "out" / "sweep.png" in out
    assert (tmp_path / "out" / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Shape sweep" in (tmp_path / "out" / "report.md").read_text()


def test_held_out_suites_get_their_own_panels(tmp_path: Path) -> None:
    """A run of a held-out random suite adds a panel (and a table) per backend after the
    sweep's, over that suite's shapes only; a tuning seed's suite adds none."""
    held = "random:9:3"
    shapes = suite_shapes(held)
    w = ResultsWriter(
        tmp_path / "held.json", "bench", {"gpu": "x", "run": {"suites": [held, "random:101:2"]}}
    )
    for i, (m, n, k) in enumerate(shapes):
        p = Problem(m, n, k)
        w.add(bench_record("cublas", 0, p, 0.1))
        w.add(bench_record("gamma", 8, p, 0.1 * 100 / (90 + i), config="t", selected=True))
    w.finish()
    ds = load_dataset([tmp_path / "held.json"])
    fig = figure_sweep(ds)
    (ax,) = [ax for ax in fig.axes if ax.get_visible()]
    assert ax.get_title(loc="left").startswith("gamma\nr8 geomean 91 %, worst 90 %")
    assert ax.get_ylabel() == f"held out {held}, fp16\n% of cuBLAS"
    md = "\n".join(sweep_lines(ds))
    assert f"**gamma** (held out, `{held}`, fp16;" in md
    assert "geomean 91.0 % of cuBLAS, worst 90.0 %" in md


def test_a_held_out_panel_shows_only_the_runs_of_its_seed(tmp_path: Path) -> None:
    """A shape another seed's run shares with a held-out suite adds no panel for a backend
    that never ran that suite (it drew one of 64 shapes for a seed the backend never ran)."""
    held, other = "random:9:3", "random:10:3"
    mine = ResultsWriter(tmp_path / "a.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    theirs = ResultsWriter(tmp_path / "b.json", "bench", {"gpu": "x", "run": {"suites": [other]}})
    for m, n, k in suite_shapes(held):
        p = Problem(m, n, k)
        mine.add(bench_record("cublas", 0, p, 0.1))
        mine.add(bench_record("gamma", 8, p, 0.1, config="t", selected=True))
    shared = Problem(*suite_shapes(held)[0])  # as if seed 10 had drawn it too
    theirs.add(bench_record("cublas", 0, shared, 0.1))
    theirs.add(bench_record("delta", 8, shared, 0.1, config="t", selected=True))
    mine.finish()
    theirs.finish()
    ds = load_dataset([tmp_path / "a.json", tmp_path / "b.json"])
    assert [p.backend for p in sweep_table(ds, held)] == ["gamma"]
    md = "\n".join(sweep_lines(ds))
    assert f"**gamma** (held out, `{held}`" in md and "**delta**" not in md


def test_a_random_suite_asked_for_without_its_count_folds_into_one_panel(tmp_path: Path) -> None:
    """Two runs of one held-out suite, one recorded as ``random:9`` (before ``bench`` wrote the
    count) and one as ``random:9:64``, make one suite and one panel per backend, named with
    the count."""
    shapes = suite_shapes("random:9:64")[:2]
    for i, (name, backend) in enumerate((("random:9", "gamma"), ("random:9:64", "delta"))):
        w = ResultsWriter(tmp_path / f"{i}.json", "bench", {"gpu": "x", "run": {"suites": [name]}})
        for m, n, k in shapes:
            p = Problem(m, n, k)
            w.add(bench_record("cublas", 0, p, 0.1))
            w.add(bench_record(backend, 8, p, 0.1, config="t", selected=True))
        w.finish()
    ds = load_dataset([tmp_path / "0.json", tmp_path / "1.json"])
    assert held_out_suites(ds) == ["random:9:64"]
    assert sorted(p.backend for p in sweep_table(ds, "random:9:64")) == ["delta", "gamma"]
    md = "\n".join(sweep_lines(ds))
    assert "`random:9`" not in md and "**gamma** (held out, `random:9:64`" in md


def test_a_later_run_of_a_held_out_shape_leaves_the_suite_panel_as_measured(
    tmp_path: Path,
) -> None:
    """A tune run after the evaluation that re-times a held-out shape with the kernel's own
    config (latest-run-wins for every other view) neither replaces the suite run's record nor
    drops the shape from the held-out panel: its geomean and worst stay the evaluation's."""
    held = "random:9:3"
    shapes = [Problem(*s) for s in suite_shapes(held)]
    ev = ResultsWriter(tmp_path / "a.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    for i, p in enumerate(shapes):
        ev.add(bench_record("cublas", 0, p, 0.1))
        ev.add(bench_record("gamma", 8, p, 0.1 * 100 / (80 + 10 * i), config="t", selected=True))
    ev.finish()
    tune = ResultsWriter(
        tmp_path / "b.json", "bench", {"gpu": "x", "run": {"suites": [shapes[0].key]}}
    )
    tune.add(bench_record("cublas", 0, shapes[0], 0.1))
    tune.add(bench_record("gamma", 8, shapes[0], 0.1, config="t", selected=True))
    tune.add(bench_record("gamma", 8, shapes[0], 0.09, config="u", selected=False))
    tune.finish()
    ds = load_dataset([tmp_path / "a.json", tmp_path / "b.json"])
    # every other view takes the latest run's record
    assert ds.pct_of_cublas(ds.pick(R8, shapes[0])) == pytest.approx(100.0)
    (panel,) = sweep_table(ds, held)
    assert [row.problem for row in panel.rows] == sorted(shapes, key=sweep_order)
    (stat,) = panel.stats.values()
    assert stat.worst == pytest.approx(80.0) and stat.worst_problem == shapes[0]
    assert stat.shapes == 3 and panel.size == 3


def test_a_held_out_run_cut_short_reads_against_its_suites_size(tmp_path: Path) -> None:
    """A run that stopped after 2 of a suite's 3 shapes says so in the section, the summary
    table and the figure's title: its geomean is over 2 shapes, not a complete suite's."""
    held = "random:9:3"
    shapes = [Problem(*s) for s in suite_shapes(held)][:2]
    w = ResultsWriter(tmp_path / "a.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    for p in shapes:
        w.add(bench_record("cublas", 0, p, 0.1))
        w.add(bench_record("gamma", 8, p, 0.1, config="t", selected=True))
    w.finish()
    ds = load_dataset([tmp_path / "a.json"])
    (panel,) = sweep_table(ds, held)
    assert len(panel.rows) == 2 and panel.size == 3
    assert "(2 of 3 shapes timed; timer ?)" in "\n".join(sweep_lines(ds))
    (table,) = [t for t in summary_tables(ds, None) if t.title.startswith("Shape sweep")]
    assert table.rows[0][6].endswith(", 2/3 shapes)")


def _held_out_run(path: Path, suites: list[str], **env: Any) -> Path:
    """A bench run of ``suites`` (``env`` added to its environment): cuBLAS and the rung-8
    kernel ``gamma`` at the same time on every shape, so every shape reads 100 %."""
    w = ResultsWriter(path, "bench", {"gpu": "x", "run": {"suites": suites}, **env})
    for suite in suites:
        for m, n, k in suite_shapes(suite):
            p = Problem(m, n, k)
            w.add(bench_record("cublas", 0, p, 0.1))
            w.add(bench_record("gamma", 8, p, 0.1, config="t", selected=True))
    w.finish()
    return path


def test_the_sweep_figure_draws_the_latest_held_out_suites(tmp_path: Path) -> None:
    """Every held-out suite keeps its table in ``sweep.md``, but the figure draws only the
    ``MAX_HELD_OUT`` run last (a row per seed grows it past reading: 18 rows, 59 inches)."""
    suites = ["random:9:2", "random:10:2", "random:11:2"]
    ds = load_dataset([_held_out_run(tmp_path / "held.json", suites)])
    labels = [ax.get_ylabel() for ax in figure_sweep(ds).axes if ax.get_visible()]
    assert MAX_HELD_OUT == 2
    assert labels == [f"held out {s}, fp16\n% of cuBLAS" for s in suites[1:]]
    md = "\n".join(sweep_lines(ds))
    assert all(f"`{s}`" in md for s in suites)


def test_two_dsls_rung_8_splits_by_same_config_or_not(tmp_path: Path) -> None:
    """Two backends' rung 8 over one held-out suite, compared per shape both timed: by config
    class (same shared knobs, unswapped / narrow cover / wide swap; or different), each a
    geomean of the second's % of cuBLAS over the first's. A backend's own knob (epilogue) does
    not make configs differ; a shared one (split_k) does; a legacy name (block_n) reads as
    its shared one."""
    suite = "random:9:4"
    shapes = [Problem(m, n, k) for m, n, k in suite_shapes(suite)]
    unswapped = dict(tile_m=128, tile_n=256, cluster=2, swap_ab=False, split_k=1)
    cover = dict(tile_m=64, tile_n=16, cluster=1, swap_ab=True, split_k=1)
    wide = dict(tile_m=128, tile_n=144, cluster=1, swap_ab=True, split_k=1)
    legacy = dict(block_m=64, block_n=16, cluster=1, swap_ab=True, split_k=1)  # cover, old names
    # (first's config, second's config, second's time): the first runs 0.1 ms everywhere
    plan = [
        (unswapped, dict(unswapped, epilogue="direct"), 0.125),  # 80 %: same, own knob aside
        (dict(cover, epilogue="tma"), legacy, 0.08),  # 125 %
        (wide, wide, 0.1),  # 100 %
        (cover, dict(cover, split_k=2), 0.05),  # 200 %: different configs
    ]
    w = ResultsWriter(tmp_path / "two.json", "bench", {"gpu": "x", "run": {"suites": [suite]}})
    for p, (first, second, ms) in zip(shapes, plan, strict=True):
        w.add(bench_record("cublas", 0, p, 0.1))
        w.add(bench_record("delta", 8, p, 0.1, config="a", config_values=first, selected=True))
        w.add(bench_record("gamma", 8, p, ms, config="b", config_values=second, selected=True))
    w.finish()
    ds = load_dataset([tmp_path / "two.json"])
    got = {
        c.kind: (c.first, c.second, c.shapes, round(c.ratio, 6))
        for c in same_config_classes(sweep_panels(ds))
    }
    assert got == {
        "same config, unswapped": ("delta", "gamma", 1, 0.8),
        "same config, narrow swapped cover": ("delta", "gamma", 1, 1.25),
        "same config, wide swap": ("delta", "gamma", 1, 1.0),
        "different configs": ("delta", "gamma", 1, 2.0),
        "all shapes": ("delta", "gamma", 4, round((0.8 * 1.25 * 1.0 * 2.0) ** 0.25, 6)),
    }
    md = "\n".join(sweep_lines(ds))
    assert "**Same config, two DSLs.**" in md
    assert f"| `{suite}` | fp16 | gamma / delta | different configs | 1 | 2.000 |" in md


def test_rung_8_by_config_family_puts_the_largest_shortfall_first(tmp_path: Path) -> None:
    """A panel's rung 8 by the family of config each shape ran (shared knobs: unswapped, narrow
    cover, wide swap; cluster size, a backend's ``cluster_n`` counted in; split-K or stream-K):
    shapes, geomean, how many below 90 %, and each family's part of the geomean's shortfall,
    the parts summing to 100 x ln(geomean); the family that costs most comes first."""
    pair = dict(tile_m=128, tile_n=256, cluster=2, swap_ab=False, split_k=1, stream_k=False)
    cover = dict(tile_m=64, tile_n=16, cluster=1, swap_ab=True, split_k=1, stream_k=False)
    row = dict(tile_m=128, tile_n=80, cluster=1, swap_ab=True, split_k=1, cluster_n=3)
    assert config_family(pair) == "unswapped, clusters of 2"
    assert config_family(dict(pair, stream_k=True)) == "unswapped, clusters of 2, stream-K"
    assert config_family(dict(cover, split_k=2)) == "narrow swapped cover, split-K"
    assert config_family(row) == "wide swap, clusters of 3"
    assert config_family({"tile": 8192}) is None and config_family(None) is None
    suite = "random:9:4"
    shapes = [Problem(m, n, k) for m, n, k in suite_shapes(suite)]
    plan = [(pair, 0.125), (pair, 0.1), (cover, 0.095), (dict(pair, stream_k=True), 0.1)]
    w = ResultsWriter(tmp_path / "fam.json", "bench", {"gpu": "x", "run": {"suites": [suite]}})
    for p, (values, ms) in zip(shapes, plan, strict=True):
        w.add(bench_record("cublas", 0, p, 0.1))
        w.add(bench_record("gamma", 8, p, ms, config="c", config_values=values, selected=True))
    w.finish()
    (panel,) = [p for p in sweep_panels(load_dataset([tmp_path / "fam.json"])) if p.suite == suite]
    stats = family_stats(panel)
    assert [st.family for st in stats] == [
        "unswapped, clusters of 2",  # 80 % and 100 %: the loss
        "unswapped, clusters of 2, stream-K",  # 100 %: nothing
        "narrow swapped cover",  # 105.3 %: a gain
    ]
    first = stats[0]
    assert (first.shapes, first.below) == (2, 1)
    assert first.geomean == pytest.approx(100 * math.sqrt(0.8))
    assert first.points == pytest.approx(100 * math.log(0.8) / 4)
    geomean = (0.8 * 1.0 * (0.1 / 0.095) * 1.0) ** 0.25
    assert sum(st.points for st in stats) == pytest.approx(100 * math.log(geomean))
    md = "\n".join(sweep_lines(load_dataset([tmp_path / "fam.json"])))
    assert (
        "- r8 by config family, the costliest first: unswapped, clusters of 2 89.4 % "
        "(2 shapes, 1 below 90 %, -5.58 points); " in md
    )


def test_a_figure_without_data_is_neither_written_nor_linked(tmp_path: Path) -> None:
    ds = _sweep_dataset(tmp_path, sweep=False)
    assert figure_sweep(ds) is None
    assert sweep_lines(ds) == ["No rung-7 or rung-8 results on the `sweep` suite yet."]
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.png").write_bytes(b"stale")  # from an earlier render
    written = render_report([tmp_path / "sweep.json"], out)
    assert not (out / "sweep.png").exists() and out / "sweep.png" not in written
    md = (out / "report.md").read_text()
    assert "## Shape sweep" not in md and "(sweep.png)" not in md and "(#shape-sweep)" not in md
    assert "## Speedup chain" in md and "(chain.png)" in md


def test_chain_shows_rung_8_only_for_backends_that_have_it(tmp_path: Path) -> None:
    ds = _sweep_dataset(tmp_path)
    table = chain_table(ds, P8192)
    assert [row.rung for row in table["gamma"]] == list(range(1, 9))
    assert [row.rung for row in table["delta"]] == list(range(1, 8))
    r7, r8 = table["gamma"][6], table["gamma"][7]
    assert r8.name == "shape_adaptive" and r8.config == "tile8192"
    assert r8.step == pytest.approx(r7.median_ms / r8.median_ms)
    ax = figure_chain(ds, P8192).axes[1]  # delta, gamma
    assert ax.get_title() == "gamma"
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "8 shape_adaptive"
    assert ax.get_xlabel() == "rung 8 config: tile8192"  # under the panel, never clipped
    # final kernel = highest measured rung of the seed chain: rung 8 has its own sweep section
    assert ds.final_kernels() == {
        "gamma": "gamma/sm90/r7_multi_consumer",
        "delta": "delta/sm90/r7_multi_consumer",
    }


def test_committed_results_ran_on_the_gpu_their_name_and_folder_say() -> None:
    """Every promoted file in ``reports/results`` and ``reports/results/h100`` passes the GPU
    check ``promote`` makes (the H200 and H100 reports are rendered by folder)."""
    from reports.promote import _check_gpu

    for folder in (ROOT / "reports" / "results", ROOT / "reports" / "results" / "h100"):
        for path in sorted(folder.glob("*.json")):
            gpu = json.loads(path.read_text()).get("environment", {}).get("gpu")
            _check_gpu(gpu, path.name, folder)


def test_records_mark_instantaneous_power() -> None:
    """records.md's W column marks instantaneous readings; NVML's one-second means (every
    record written before ``power_source``) stay unmarked, and no reading is a dash."""
    assert watts_cell(Telemetry(5, 1500.0, power_w_mean=612.4, power_source="instant")) == "612*"
    assert watts_cell(Telemetry(5, 1500.0, power_w_mean=612.4, power_source="average")) == "612"
    assert watts_cell(Telemetry(5, 1500.0, power_w_mean=612.4)) == "612"
    assert watts_cell(Telemetry(0)) == watts_cell(None) != "612"


def test_the_sweep_tables_name_each_runs_warm_ups(tmp_path: Path) -> None:
    """A run's warm-ups are first/later/settle seconds; a run from before ``rewarm_s`` and
    ``settle_s`` existed warmed later rounds min(0.2, warmup) and had no settle. A held-out
    panel names its run's; the summary table names rung 8's."""
    assert warmups({"warmup_s": 0.3, "rounds": 2}) == "0.3/0.2/0"
    assert warmups({"warmup_s": 0.1}) == "0.1/0.1/0"
    assert warmups({"warmup_s": 1.0, "rewarm_s": 1.0, "settle_s": 2.0}) == "1/1/2"
    assert warmups(None) == warmups({}) == "?"
    held = "random:9:3"
    timer = {"warmup_s": 1.0, "rewarm_s": 1.0, "settle_s": 2.0}
    ds = load_dataset([_held_out_run(tmp_path / "a.json", [held], timer=timer)])
    (panel,) = sweep_table(ds, held)
    (stat,) = panel.stats.values()
    assert stat.timers == ("1/1/2 s",)
    assert "3 of 3 shapes timed; timer 1/1/2 s)" in "\n".join(sweep_lines(ds))
    (table,) = [t for t in summary_tables(ds, None) if t.title.startswith("Shape sweep")]
    cell = dict(zip(table.header, table.rows[0], strict=True))
    assert cell["r8 timer"] == "1/1/2 s"
    # three shapes, all at M <= 64: no band-weighed geomean (it needs every band)
    assert cell["r8 by M band"] == "-"
    # every shape at 100 %: none below the bar's floor
    assert cell["r8 below 90"] == "0" and stat.below == 0
    # the run the numbers come from: its date (the run has no git SHA)
    created = ds.runs[0].created
    assert created and cell["r8 run"] == created[:10]
    assert stat.weighted is None
    # timer v5's equal hold is named, so runs pooled across timers show it
    v5 = {**timer, "hold_floor_ms": 0.5}
    assert timer_label(v5) == "1/1/2 s, hold 0.5 ms" and timer_label(None) == "?"
    ds5 = load_dataset([_held_out_run(tmp_path / "b.json", [held], timer=v5)])
    assert "3 of 3 shapes timed; timer 1/1/2 s, hold 0.5 ms)" in "\n".join(sweep_lines(ds5))
    assert "(timer v5)" in hold_text(v5) and "(timer v4 or older)" in hold_text(timer)
    v6 = {**v5, "count_hold": True}
    assert timer_label(v6) == "1/1/2 s, hold 0.5 ms counted" and "(timer v6)" in hold_text(v6)
    assert timer_label({**v5, "count_hold": False}) == timer_label(v5)
    assert hold_text(None) == ""


def test_the_tuning_file_opens_with_each_dsls_rung8_ceiling(tmp_path: Path) -> None:
    """tuning.md's ceiling section is `fit-cost`'s line per DSL over the tuning runs (its
    weighing is tested with it); a held-out run's faster records change nothing (evaluation
    data never tunes); no rung-8 tuning data, no section."""
    pcts = {16: 104.0, 100: 94.0, 300: 94.0, 2000: 97.0, 8000: 99.5}
    tune = ResultsWriter(tmp_path / "t.json", "bench", {"gpu": "x", "run": {"suites": ["llm"]}})
    for m, pct in pcts.items():
        p = Problem(m, 4096, 4096)
        tune.add(bench_record("gamma", 8, p, 0.1, config="t", selected=True, pct_of_cublas=pct))
        tune.add(bench_record("gamma", 8, p, 0.2, config="u", pct_of_cublas=pct / 2))
    tune.finish()
    held = "random:9:3"  # every shape at M <= 64: counted, it would move that band
    ev = ResultsWriter(tmp_path / "e.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    for s in suite_shapes(held):
        ev.add(bench_record("gamma", 8, Problem(*s), 0.05, config="t", pct_of_cublas=150.0))
    ev.finish()
    md = ceiling_lines(load_dataset([tmp_path]))
    (line,) = ceiling([load(tmp_path / "t.json")], ["gamma"])
    assert md[0] == "## Rung 8's ceiling" and f"- **gamma**: {line}" in md
    assert "M 1-64 1.040 (1, 0 < 0.90)" in line and "held-out suite draws M" in line
    assert md[-2:] == [f"- **gamma**: {line}", ""]  # the section ends with its lines
    assert ceiling_lines(load_dataset([tmp_path / "e.json"])) == []


def test_the_sweep_table_names_the_kernel_cublas_ran_where_a_run_profiled_it(
    tmp_path: Path,
) -> None:
    """A profiled cuBLAS launch (``bench --check-only --launched``, a later run that times
    nothing) adds a "cuBLAS ran" column to the held-out panel: the tile its kernel's name
    states at each profiled shape, "-" at the others; without one, no column."""
    from harness.launched import DeviceKernel

    held = "random:9:3"
    shapes = [Problem(*s) for s in suite_shapes(held)]
    w = ResultsWriter(tmp_path / "held.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    for p in shapes:
        w.add(bench_record("cublas", 0, p, 0.1))
        w.add(bench_record("gamma", 8, p, 0.1, config="t", selected=True))
    w.finish()
    assert "| cuBLAS ran" not in "\n".join(sweep_lines(load_dataset([tmp_path / "held.json"])))
    nvjet = DeviceKernel("nvjet_sm90_hsh_192x104_64x5_1x2_h_bz_TNT", 1.0, 30.0)
    prof = ResultsWriter(tmp_path / "prof.json", "bench", {"gpu": "x", "run": {"suites": [held]}})
    prof.add(bench_record("cublas", 0, shapes[0], None, launched=(nvjet,)))
    prof.finish()
    md = "\n".join(sweep_lines(load_dataset([tmp_path / "held.json", tmp_path / "prof.json"])))
    assert "| cuBLAS ran (N x M x K tile) |" in md
    rows = [line for line in md.splitlines() if line.startswith(f"| {shapes[0].m}x")]
    assert rows and rows[0].endswith("| 192x104x64, 5 stages, cluster 1x2 |")
    other = [line for line in md.splitlines() if line.startswith(f"| {shapes[1].m}x")]
    assert other and other[0].endswith("| - |")
    both = load_dataset([tmp_path / "held.json", tmp_path / "prof.json"])
    kinds = [line.split(" | ")[2] for line in runs_lines(both) if "`prof.json`" in line]
    assert kinds == ["check-only, profiled"]
    assert any("`prof.json` (check-only, profiled run" in line for line in environment_lines(both))


def test_a_run_merged_from_other_code_names_every_commit(tmp_path: Path) -> None:
    """A document joined from pieces of other code (``merge --allow-mixed``) lists each piece's
    commit in the run list and the environment lines, not just its first piece's; shards of
    one commit show it once."""
    p = Problem(256, 256, 256)
    pieces = [{"git_sha": "a" * 40}, {"git_sha": "b" * 40}, {"git_sha": "b" * 40}]
    for name, merged in (("mixed.json", pieces), ("shards.json", pieces[1:])):
        env = {"gpu": "x", "git_sha": merged[0]["git_sha"], "merged_from": merged}
        w = ResultsWriter(tmp_path / name, "bench", env)
        w.add(bench_record("cublas", 0, p, 0.1))
        w.finish()
    ds = load_dataset([tmp_path / "mixed.json", tmp_path / "shards.json"])
    rows = {
        line.split(" | ")[1]: line.split(" | ")[-1] for line in runs_lines(ds) if ".json" in line
    }
    assert rows["`mixed.json`"].startswith("`aaaaaaaaaa` + `bbbbbbbbbb`")
    assert rows["`shards.json`"].startswith("`bbbbbbbbbb`") and "+" not in rows["`shards.json`"]
    env_lines = "\n".join(environment_lines(ds))
    assert f"git `{'a' * 40}` + `{'b' * 40}`" in env_lines
