"""``python -m reports standing``: one row per DSL and GPU model with the newest held-out seed,
``sweep`` and the squares, every cell from a record; GPU models never mixed; the README block
between the standing markers rewritten in place; a README without markers is one line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.gemm import Problem
from harness.problems import suite_shapes
from harness.results import Document, ResultsWriter, load_many
from reports.cli import main
from reports.standing import STANDING_END, STANDING_START, format_standing, standing_rows
from tests.records import bench_record

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
SQ4, SQ8 = Problem(4096, 4096, 4096), Problem(8192, 8192, 8192)


def _pair(backend: str, p: Problem, pct: float, clock: float | None = None, rung: int = 8):
    """cuBLAS and ``backend``'s own choice at ``p``, the kernel at ``pct`` % of cuBLAS."""
    return [
        bench_record("cublas", 0, p, 0.1),
        bench_record(
            backend,
            rung,
            p,
            0.1 * 100 / pct,
            config="t",
            selected=True,
            pct_of_cublas=pct,
            per_clock_pct_of_cublas=clock if clock is not None else pct,
        ),
    ]


def _doc(
    gpu: str, created: str, suites: list[str], records: list, sha: str = "abcdef123"
) -> Document:
    env = {"gpu": gpu, "git_sha": sha, "run": {"suites": suites}}
    return Document("bench", env, tuple(records), created=f"{created}T00:00:00+00:00")


def _held(seed: int, pcts: list[float], backend: str = "gamma") -> list:
    shapes = [Problem(*s) for s in suite_shapes(f"random:{seed}:3")]
    return [r for p, v in zip(shapes, pcts, strict=False) for r in _pair(backend, p, v)]


def _geo(values: list[float]) -> float:
    return math.exp(sum(math.log(v / 100) for v in values) / len(values))


def test_each_dsl_and_gpu_gets_its_newest_seed_its_sweep_and_its_squares() -> None:
    sweep = [Problem(1, 4096, 4096), Problem(128, 4096, 4096)]
    docs = [
        # the H200 first: its rows come first
        _doc(H200, "2026-12-01", ["random:9:3"], _held(9, [101.0, 99.0, 104.0])),
        _doc(H200, "2026-12-02", ["sweep"], [r for p in sweep for r in _pair("gamma", p, 100.0)]),
        _doc(H100, "2026-12-03", ["random:9:3"], _held(9, [80.0, 80.0, 80.0])),
        # the newest H100 seed: 89 % is below the floor, 120 % is not
        _doc(
            H100,
            "2026-12-05",
            ["random:10:3", SQ4.key, SQ8.key],
            _held(10, [89.0, 120.0, 100.0])
            + _pair("gamma", SQ4, 98.0, 101.0)
            + _pair("gamma", SQ8, 103.0),
            sha="1234567890",
        ),
        # an older held-out run given last: it is the newest by time that stands, not by order
        _doc(H100, "2026-11-30", ["random:11:3"], _held(11, [50.0, 50.0, 50.0])),
    ]
    rows = standing_rows(docs)
    assert [(r.backend, r.gpu) for r in rows] == [("gamma", H200), ("gamma", H100)]
    h200, h100 = rows
    assert h200.held_out.name == "random:9:3" and h200.held_out.geomean == pytest.approx(
        100 * _geo([101.0, 99.0, 104.0])
    )
    assert h200.sweep.shapes == 2 and h200.sweep.size == 43 and h200.squares == ()
    held = h100.held_out
    assert held.name == "random:10:3" and held.date == "2026-12-05" and held.trees == "1234567"
    assert held.below == 1 and held.worst == pytest.approx(89.0)
    assert held.geomean == pytest.approx(100 * _geo([89.0, 120.0, 100.0]))
    # 8192^3 is one of the sweep's 43 shapes: the squares run put it in the sweep's cell too
    assert (h100.sweep.shapes, h100.sweep.worst_problem) == (1, SQ8)
    assert [(q.problem, q.pct, q.per_clock) for q in h100.squares] == [
        (SQ4, 98.0, 101.0),
        (SQ8, 103.0, 103.0),
    ]
    text = format_standing(rows)
    assert "| gamma | H100 80GB HBM3 | 10 (3; 2026-12-05, 1234567) |" in text
    assert "| 1 | " in text and " 0.980 (1.010) / 1.030 (1.030); 2026-12-05 |" in text
    assert "1.000, 0 below (worst 1x4096x4096 1.000, 2 of 43)" in text


def test_a_run_cut_short_says_how_much_of_its_seed_it_timed() -> None:
    doc = _doc(H100, "2026-12-05", ["random:10:3"], _held(10, [95.0, 96.0]))
    (row,) = standing_rows([doc])
    assert (row.held_out.shapes, row.held_out.size) == (2, 3)
    assert "10 (2 of 3; 2026-12-05, abcdef1)" in format_standing([row])


def test_a_dsl_without_rung_8_has_no_row_and_nothing_timed_says_so() -> None:
    p = Problem(1, 4096, 4096)
    doc = _doc(H100, "2026-12-05", ["sweep"], _pair("delta", p, 100.0, rung=7))
    assert standing_rows([doc]) == []
    assert format_standing([]) == "No timed rung-8 results yet."


def test_the_readme_block_is_rewritten_in_place_and_a_readme_without_markers_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    w = ResultsWriter(
        results / "run.json", "bench", {"gpu": H100, "run": {"suites": ["random:10:3"]}}
    )
    w.add_many(_held(10, [95.0, 96.0, 97.0]))
    w.finish()
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n\n<!-- standing:start -->\nold\n{STANDING_END}\n\nafter\n")
    assert main(["standing", str(results), "--readme", str(readme)]) == 0
    once = readme.read_text()
    assert once.startswith("# x\n\nbefore\n\n" + STANDING_START + "\n") and once.endswith(
        f"{STANDING_END}\n\nafter\n"
    )
    assert "old" not in once and "| gamma | H100 80GB HBM3 | 10 (3; " in once
    assert main(["standing", str(results), "--readme", str(readme)]) == 0
    assert readme.read_text() == once  # rendering twice changes nothing
    bare = tmp_path / "BARE.md"
    bare.write_text("# no markers\n")
    capsys.readouterr()
    assert main(["standing", str(results), "--readme", str(bare)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "has no standing markers" in err
    assert bare.read_text() == "# no markers\n"


def test_the_readmes_standing_table_is_what_the_committed_results_render() -> None:
    """The README opens with the standing as ``nox -s report`` renders it from
    ``reports/results`` and each GPU model's folder: a promoted run without a re-render, or a
    hand edit, fails here."""
    root = Path(__file__).resolve().parents[2]
    committed = root / "reports" / "results"
    folders = [
        committed,
        *sorted(p for p in committed.iterdir() if p.is_dir() and p.name != "archive"),
    ]
    docs = [doc for folder in folders for doc in load_many([folder])]
    text = (root / "README.md").read_text()
    block = text[text.index(STANDING_START) + len(STANDING_START) + 1 : text.index(STANDING_END)]
    assert block == format_standing(standing_rows(docs)) + "\n"


def test_a_seed_joined_from_two_runs_names_both_trees() -> None:
    """``harness merge --allow-mixed`` joins a seed's parts run on two trees: the row names both,
    the first part's first, as the report's run list does."""
    doc = _doc(H100, "2026-12-07", ["random:10:3"], _held(10, [95.0, 96.0, 97.0]), sha="aaaaaaa111")
    env = {**doc.environment, "merged_from": [{"git_sha": "aaaaaaa111"}, {"git_sha": "bbbbbbb222"}]}
    merged = Document("bench", env, doc.records, created=doc.created)
    (row,) = standing_rows([merged])
    assert row.held_out.trees == "aaaaaaa + bbbbbbb"
    assert "10 (3; 2026-12-07, aaaaaaa + bbbbbbb)" in format_standing([row])
