from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.results import (
    SCHEMA_VERSION,
    ResultsError,
    ResultsWriter,
    load,
    load_many,
    to_csv,
)

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "bench_small.json"


def test_fixture_roundtrips_and_exports_csv(tmp_path: Path) -> None:
    doc = load(FIXTURE)  # a version-1 file: read as records without configs
    assert doc.kind == "bench" and doc.bench and all(r.config is None for r in doc.bench)
    csv_text = to_csv([doc])
    header = csv_text.splitlines()[0].split(",")
    for col in (
        "kernel",
        "config",
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
    assert len(csv_text.splitlines()) == len(doc.records) + 1
    assert "alpha/sm90/r7_multi_consumer" in csv_text
    # write it back as the current version and read it again: the same records
    out = tmp_path / "v2.json"
    w = ResultsWriter(out, "bench", dict(doc.environment))
    for rec in doc.records:
        w.add(rec)
    again = load(out)
    assert json.loads(out.read_text())["schema_version"] == SCHEMA_VERSION
    assert again.records == doc.records


def test_configs_roundtrip(tmp_path: Path) -> None:
    rec = replace(
        load(FIXTURE).bench[0],
        config="group=8,raster=m",
        config_values={"group": 8, "raster": "m"},
        selected=False,
    )
    w = ResultsWriter(tmp_path / "c.json", "bench", {})
    w.add(rec)
    (back,) = load(tmp_path / "c.json").bench
    assert back == rec and back.label.endswith("[group=8,raster=m]")


def test_writer_keeps_a_valid_file_after_every_record(tmp_path: Path) -> None:
    src = load(FIXTURE)
    out = tmp_path / "run.json"
    w = ResultsWriter(out, "bench", {"gpu": "x"})
    assert load(out).records == ()
    for i, rec in enumerate(src.records[:3], 1):
        w.add(rec)
        assert len(load(out).records) == i
    w.finish(elapsed_s=1.0)
    assert load(out).finished
    assert not list(tmp_path.glob(".*.tmp"))


def test_writer_takes_only_records_of_its_kind(tmp_path: Path) -> None:
    w = ResultsWriter(tmp_path / "r.json", "codegen", {})
    with pytest.raises(TypeError, match="CodegenRecord"):
        w.add(load(FIXTURE).bench[0])


def test_load_many_names_and_skips_bad_files(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(FIXTURE.read_text())
    (tmp_path / "corrupt.json").write_text("{oops")
    newer = json.loads(FIXTURE.read_text()) | {"schema_version": SCHEMA_VERSION + 1}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    warnings: list[str] = []
    docs = load_many([tmp_path], warn=warnings.append)
    assert [Path(d.source).name for d in docs] == ["good.json"]
    assert len(warnings) == 2
    assert any("corrupt.json" in w and "not valid JSON" in w for w in warnings)
    assert any("newer.json" in w and "newer than this harness" in w for w in warnings)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer than this harness"),
        (lambda d: d.update(schema="something/else"), "not a results file"),
        (lambda d: d.pop("records"), "records missing"),
        (lambda d: d["records"][0].pop("kernel"), "missing field 'kernel'"),
        (lambda d: d["records"][0].update(status="great"), "unknown status 'great'"),
        (lambda d: d["records"][0].pop("problem"), "missing field 'problem'"),
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
