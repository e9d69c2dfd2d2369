from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from harness.results import ResultsError
from reports.data import load_dataset
from reports.render import chain_table, pct_table, render_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_report_renders_every_figure_and_carries_the_fixture_numbers(tmp_path: Path) -> None:
    written = render_report([FIXTURES], tmp_path)
    names = {p.name for p in written}
    assert {
        "cross_dsl.png",
        "ksweep.png",
        "chain.png",
        "pct_cublas.png",
        "report.md",
        "results.csv",
    } <= names
    for p in written:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    md = (tmp_path / "report.md").read_text()
    # cuBLAS 4096^3: 2*4096^3 / 0.2 ms = 687.2 TFLOPS; alpha r7 0.19 ms -> 723.4 (105%).
    assert "| 4096x4096x4096-fp16 | 687.2 | 723.4 (105%) | 687.2 (100%) |" in md
    assert (
        "| 7 multi_consumer | alpha/sm90/r7_multi_consumer | ok | 0.1900 | 723.4 | 1.11 | 10.5 |"
        in md
    )
    assert "| 4 persistent | beta/sm90/r4_persistent | wrong |" in md
    assert "Fixture GPU H000" in md and "`0123456789`" in md
    assert "| alpha/sm90/r7_multi_consumer | sm_90a | ok | 168 | 0 | 1024 | 0.71 | 212 |" in md
    assert "CompileError: boom" in md
    for fig in ("cross_dsl.png", "ksweep.png", "chain.png", "pct_cublas.png"):
        assert f"]({fig})" in md
    rows = list(csv.DictReader(io.StringIO((tmp_path / "results.csv").read_text())))
    r7 = [r for r in rows if r["kernel"] == "alpha/sm90/r7_multi_consumer" and r["k"] == "4096"]
    assert float(r7[0]["median_ms"]) == pytest.approx(0.19)


def test_chain_and_heatmap_tables() -> None:
    ds = load_dataset([FIXTURES])
    table = chain_table(ds, "4096x4096x4096-fp16")
    alpha = {row["rung"]: row for row in table["alpha"]}
    assert alpha[3]["step"] == pytest.approx(3.0)
    assert alpha[7]["total"] == pytest.approx(2.0 / 0.19)
    beta = {row["rung"]: row for row in table["beta"]}
    assert beta[4]["status"] == "wrong" and beta[4]["median_ms"] is None
    assert beta[5]["step"] == pytest.approx(0.8 / 0.3)  # measured against the last timed rung
    rows, cols, grid = pct_table(ds)
    assert rows == ["alpha/sm90/r7_multi_consumer", "beta/sm90/r7_multi_consumer"]
    j = cols.index("8192x8192x8192-fp16")
    assert grid[0][j] == pytest.approx(100 * 0.52 / 0.47)


def test_report_on_missing_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no such file"):
        render_report([tmp_path / "nothing.json"], tmp_path / "out")
    with pytest.raises(ResultsError, match="no result files"):
        render_report([tmp_path], tmp_path / "out")


def test_readme_block_is_regenerated_from_results(tmp_path: Path) -> None:
    from reports.render import README_END, README_START

    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{README_START}\nstale numbers\n{README_END}\n\nrest\n")
    render_report([FIXTURES], tmp_path / "out", readme=readme)
    text = readme.read_text()
    assert "stale numbers" not in text and text.endswith("\n\nrest\n")
    assert "| 4096x4096x4096-fp16 | 687 TFLOPS | 723 (105.3%) | 687 (100.0%) |" in text
    assert "Fixture GPU H000 (700 W power limit" in text
    plain = tmp_path / "PLAIN.md"
    plain.write_text("no markers\n")
    render_report([FIXTURES], tmp_path / "out2", readme=plain)
    assert plain.read_text() == "no markers\n"
