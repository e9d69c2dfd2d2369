from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.results import (
    SCHEMA_VERSION,
    ResultsError,
    ResultsWriter,
    load,
    to_csv,
)

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "bench_small.json"


def test_fixture_roundtrips_and_exports_csv() -> None:
    doc = load(FIXTURE)
    assert doc["schema_version"] == SCHEMA_VERSION
    csv_text = to_csv([doc])
    header = csv_text.splitlines()[0].split(",")
    for col in (
        "kernel",
        "m",
        "n",
        "k",
        "dtype",
        "median_ms",
        "tflops",
        "pct_of_cublas",
        "sm_clock_mhz_mean",
        "max_abs_err",
        "status",
    ):
        assert col in header
    assert len(csv_text.splitlines()) == len(doc["records"]) + 1
    assert "alpha/sm90/r7_multi_consumer" in csv_text


def test_writer_keeps_a_valid_file_after_every_record(tmp_path: Path) -> None:
    src = load(FIXTURE)
    out = tmp_path / "run.json"
    w = ResultsWriter(out, "bench", {"gpu": "x"})
    assert load(out)["records"] == []
    for i, rec in enumerate(src["records"][:3], 1):
        w.add(rec)
        assert len(load(out)["records"]) == i
    w.finish(elapsed_s=1.0)
    assert load(out)["finished"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_writer_rejects_malformed_records(tmp_path: Path) -> None:
    w = ResultsWriter(tmp_path / "r.json", "bench", {})
    with pytest.raises(ResultsError, match="missing field 'problem'"):
        w.add({"kernel": "a/b", "backend": "a", "rung": 1, "arch": "sm_90a", "status": "ok"})
    rec = load(FIXTURE)["records"][0] | {"status": "great"}
    with pytest.raises(ResultsError, match="unknown status"):
        w.add(rec)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer than this harness"),
        (lambda d: d.update(schema="something/else"), "not a results file"),
        (lambda d: d.pop("records"), "records missing"),
        (lambda d: d["records"][0].pop("kernel"), "missing field 'kernel'"),
        (lambda d: d.update(kind="poem"), "kind must be"),
    ],
)
def test_load_explains_bad_files(tmp_path: Path, mutate, message) -> None:
    doc = json.loads(FIXTURE.read_text())
    mutate(doc)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=message):
        load(p)


def test_load_explains_non_json(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(ResultsError, match="not valid JSON"):
        load(p)
    with pytest.raises(ResultsError, match="no such results file"):
        load(tmp_path / "absent.json")


def test_git_sha_override_wins_over_a_stale_checkout(monkeypatch, tmp_path) -> None:
    """A tree shipped to a GPU host may carry an old .git: the named commit must win."""
    from harness.env import git_state

    monkeypatch.setenv("GEMM_STUDY_GIT_SHA", "abc1234")
    assert git_state() == {"git_sha": "abc1234", "git_dirty": None}
    monkeypatch.delenv("GEMM_STUDY_GIT_SHA")
    assert git_state(tmp_path)["git_sha"] is None  # no checkout there, nothing named
