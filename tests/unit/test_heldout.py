"""Held out by construction (docs/design.md): random suites of real models' projections, the
seeds tuning may use, and the rule that no tuned choice or cost-model fit ever saw a shape it is
judged on."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from records import bench_record

from harness.gemm import Problem
from harness.problems import (
    MODEL_PROJECTIONS,
    SUITES,
    TUNING_SEEDS,
    TUNING_SUITE_MAX,
    canonical_suite,
    expand,
    held_out,
    parse_random,
    random_shapes,
    suite_shapes,
)
from harness.results import Document, load_many
from harness.tune import tuning_docs

ROOT = Path(__file__).resolve().parents[2]
PROJECTIONS = {(n, k) for entries in MODEL_PROJECTIONS.values() for _, n, k in entries}
GRID = {s for _, shapes in SUITES.values() for s in shapes}


def test_projections_are_real_layer_shapes_in_range() -> None:
    assert len(MODEL_PROJECTIONS) >= 8
    assert len({f.split("-")[0] for f in MODEL_PROJECTIONS}) >= 6  # families, not sizes
    for n, k in PROJECTIONS:
        assert n % 8 == 0 and k % 8 == 0 and 256 <= n <= 57344 and 256 <= k <= 57344


def test_a_random_suite_is_seeded_log_uniform_in_m_and_off_the_grid() -> None:
    shapes = random_shapes(7, 512)
    assert shapes == random_shapes(7, 512)  # the same seed, the same suite
    assert random_shapes(7, 64) == shapes[:64]  # a shorter suite is a prefix
    assert random_shapes(8, 64) != shapes[:64]
    assert len(set(shapes)) == len(shapes)
    for m, n, k in shapes:
        assert 1 <= m <= 16384 and (n, k) in PROJECTIONS and (m, n, k) not in GRID
    # log-uniform M: about ln(129) / ln(16385) of the draws are M <= 128
    small = sum(m <= 128 for m, _, _ in shapes) / len(shapes)
    assert abs(small - math.log(129) / math.log(16385)) < 0.08
    assert len({(n, k) for _, n, k in shapes}) > 30  # many families, not one


def test_a_random_suite_is_recorded_with_its_count() -> None:
    assert canonical_suite("random:919361") == "random:919361:64"
    assert canonical_suite("random:919361:64") == "random:919361:64"
    assert canonical_suite("random:5:12") == "random:5:12"
    assert canonical_suite("sweep") == "sweep" and canonical_suite("64x64x64") == "64x64x64"
    assert suite_shapes("random:919361") == suite_shapes(canonical_suite("random:919361"))
    with pytest.raises(ValueError, match="random:SEED"):
        canonical_suite("random:x")


def _tuning_shapes() -> set[tuple[int, int, int]]:
    """Every shape tuning may use: the fixed suites and the tuning seeds' suites."""
    tuning = set(GRID)
    for seed in TUNING_SEEDS:
        tuning |= set(random_shapes(seed, TUNING_SUITE_MAX))
    return tuning


def test_held_out_suites_share_no_shape_with_any_tuning_suite() -> None:
    tuning = _tuning_shapes()
    for seed in (0, 7, 2026, 123456):
        assert held_out(f"random:{seed}")
        assert not set(random_shapes(seed, 1024)) & tuning
    assert not any(held_out(f"random:{s}") for s in TUNING_SEEDS)
    assert not any(held_out(name) for name in SUITES)


def test_random_suite_names_expand_and_bad_ones_are_refused() -> None:
    assert parse_random("random:5") == (5, 64)
    assert parse_random("random:5:10") == (5, 10)
    assert parse_random("sweep") is None
    problems = expand(["random:5:10"], ("fp16", "bf16"))
    assert len(problems) == 20 and {p.dtype for p in problems} == {"fp16", "bf16"}
    assert [(p.m, p.n, p.k) for p in problems[:10]] == list(suite_shapes("random:5:10"))
    for bad in ("random:", "random:x", "random:5:0", "random:5:1:2", "random:-1"):
        with pytest.raises(ValueError, match="bad random suite"):
            expand([bad])
    with pytest.raises(ValueError, match="random:SEED"):
        expand(["nonsense"])


def _evaluation_suites() -> set[str]:
    """Every held-out suite a committed result ran: the evaluation data of the study."""
    suites: set[str] = set()
    results = ROOT / "reports" / "results"
    folders = [results, *(p for p in results.iterdir() if p.is_dir() and p.name != "archive")]
    for doc in load_many(folders):
        suites.update(
            s for s in (doc.environment.get("run") or {}).get("suites") or () if held_out(s)
        )
    return suites


def test_tuned_tables_hold_only_tuning_shapes_never_an_evaluation_shape() -> None:
    """Every entry of every committed tuned table is a shape of a tuning suite (so no held-out
    suite can hold it: the test above), and none is a shape of an evaluation suite that a
    committed result ran."""
    tuning = _tuning_shapes()
    evaluation = {s for name in _evaluation_suites() for s in suite_shapes(name)}
    tables = sorted(ROOT.glob("backends/*/*/tuned/*.json"))
    assert tables, "no tuned table found"
    for path in tables:
        for kernel, entries in json.loads(path.read_text())["kernels"].items():
            for key in entries:
                p = Problem.parse(key)
                shape = (p.m, p.n, p.k)
                assert shape in tuning, f"{path.name}: {kernel} tuned on {key}, not a tuning shape"
                assert shape not in evaluation, f"{path.name}: {kernel} holds evaluation {key}"


def _doc(suites: list[str]) -> Document:
    env = {"gpu": "NVIDIA H200", "run": {"suites": suites}}
    return Document("bench", env, (), "2026-11-24T00:00:00", source="runs/x.json")


def test_tuning_leaves_held_out_data_out() -> None:
    warned: list[str] = []
    kept = tuning_docs([_doc(["sweep", "random:101"]), _doc(["4096x4096x4096"])], warned.append)
    assert len(kept) == 2 and not warned
    held = _doc(["sweep", "random:7:64"])
    assert tuning_docs([_doc(["sweep"]), held], warned.append) == [_doc(["sweep"])]
    assert warned == [
        "skipped runs/x.json ran the held-out suite random:7:64: evaluation data never tunes"
    ]
    with pytest.raises(ValueError, match=r"no tuning data: runs/x\.json ran the held-out"):
        tuning_docs([held], warned.append)
    warned.clear()  # a folder of many evaluation runs: one line, the first three named
    many = [dataclasses.replace(held, source=f"runs/e{i}.json") for i in range(5)]
    assert tuning_docs([_doc(["sweep"]), *many], warned.append) == [_doc(["sweep"])]
    assert warned == [
        "skipped 5 runs of held-out suites (evaluation data never tunes): runs/e0.json ran the "
        "held-out suite random:7:64; runs/e1.json ran the held-out suite random:7:64; "
        "runs/e2.json ran the held-out suite random:7:64; and 2 more"
    ]


def test_tuning_leaves_evaluated_shapes_out_of_kept_runs() -> None:
    """A run that timed shapes by name is tuning data, except the shapes a held-out suite
    among the loaded runs holds: a diagnostic tune of spent evaluation shapes never enters a
    fit or a table. The other records of that run stay."""
    spent = Problem(*suite_shapes("random:7:4")[0])
    fresh = Problem(4096, 4096, 4096)
    recs = tuple(bench_record("gamma", 8, p, 0.1, config="t") for p in (spent, fresh))
    named = Document("bench", _doc([spent.key, fresh.key]).environment, recs, source="t.json")
    warned: list[str] = []
    (kept,) = tuning_docs([_doc(["random:7:4"]), named], warned.append)
    assert [r.problem for r in kept.bench] == [fresh]
    assert warned[-1] == (
        f"skipped the records of 1 evaluated shape(s) in t.json ({spent.key}): "
        "evaluation shapes never tune"
    )
    # without the evaluation run loaded, nothing marks the shape as spent
    (alone,) = tuning_docs([named], warned.append)
    assert len(alone.bench) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--tune", "--suite", "random:7", "--device", "cpu"],
        ["tune-table", "HELD"],
        ["fit-cost", "HELD"],
        ["fit-cost", "HELD", "--base", "harness.tile_cost", "--moves", "random:7"],
    ],
)
def test_the_cli_refuses_to_tune_on_held_out_suites(args: list[str], tmp_path: Path) -> None:
    held = tmp_path / "held.json"
    doc = {
        "schema": "gemm-dsl-study/results",
        "schema_version": 2,
        "kind": "bench",
        "created": "2026-11-24T00:00:00",
        "environment": {"gpu": "NVIDIA H200", "run": {"suites": ["random:7"]}},
        "records": [],
    }
    held.write_text(json.dumps(doc))
    argv = [str(held) if a == "HELD" else a for a in args]
    r = subprocess.run(
        [sys.executable, "-m", "harness", *argv], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2, r.stdout + r.stderr
    *warnings, line = r.stderr.strip().splitlines()  # each skipped file named, then the error
    assert all(w.startswith("warning: skipped") for w in warnings)
    assert line.startswith("error: ") and "held-out" in line and "random:7" in line
