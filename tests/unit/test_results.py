from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import pytest

from harness.check import CheckResult
from harness.protocol import Problem
from harness.records import BenchRecord, CodegenRecord, Stats, Status, Telemetry
from harness.results import (
    SCHEMA_VERSION,
    Document,
    ResultsError,
    ResultsWriter,
    document_to_json,
    load,
    load_many,
    to_csv,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE = FIXTURES / "bench_small.json"
#: Hand-written documents holding every field of the schema, each with a value of its own.
ALL_FIELDS = {kind: FIXTURES / f"results_all_fields_{kind}.json" for kind in ("bench", "codegen")}


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
        selected=True,
        selection="64 tiles, 1.00 waves, model 15 us; next 128x16 swap split4 +24% (model)",
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


# -- every field of the schema, against hand-written files ---------------------------------------
def test_every_field_of_a_bench_document_is_read() -> None:
    doc = load(ALL_FIELDS["bench"])
    assert (doc.kind, doc.created, doc.finished, doc.elapsed_s) == (
        "bench",
        "2026-11-23T01:02:03+00:00",
        "2026-11-23T01:09:03+00:00",
        420.0,
    )
    assert doc.environment == {"gpu": "NVIDIA H200", "sm_count": 132, "git_sha": "0123abc"}
    ok, err = doc.bench
    assert (ok.kernel, ok.backend, ok.name, ok.rung, ok.rung_name, ok.arch) == (
        "alpha/sm90/r7_multi_consumer",
        "alpha",
        "sm90/r7_multi_consumer",
        7,
        "multi_consumer",
        "sm_90a",
    )
    assert (ok.status, ok.reason) == (Status.OK, "a reason kept even when it ran")
    assert (ok.config, ok.config_values) == ("group=8,raster=m", {"group": 8, "raster": "m"})
    assert ok.problem == Problem(1000, 3000, 512, "bf16") and ok.problem_key == "1000x3000x512-bf16"
    assert (ok.selected, ok.compile_s, ok.rotation_sets) == (True, 12.5, 37)
    assert ok.selection == "132 tiles, 1.00 waves, model 15 us; next 128x256 +4% (model)"
    assert ok.check == CheckResult(
        passed=True,
        max_abs_err=0.0625,
        rel_err=0.00125,
        nonfinite=0,
        atol=0.70710678,
        rtol=0.0078125,
        checks=2,
        faults=("a fault kept for the round trip",),
    )
    assert ok.timing == Stats(
        n=400, median_ms=0.04, p20_ms=0.039, p80_ms=0.041, mean_ms=0.0402, min_ms=0.038, cv=0.021
    )
    assert (ok.tflops, ok.tflops_per_ghz, ok.pct_of_cublas) == (76.8, 48.0, 125.0)
    assert ok.telemetry == Telemetry(
        samples=51,
        sm_clock_mhz_mean=1600.0,
        sm_clock_mhz_min=1545.0,
        sm_clock_mhz_max=1755.0,
        power_w_mean=612.5,
        power_w_max=699.0,
        temp_c_max=61.0,
        power_source="instant",
    )
    assert (ok.per_clock_pct_of_cublas, ok.cublas_drift_pct) == (93.75, -0.5)
    assert (ok.host_launch_ms, ok.hold_ms_per_launch) == (0.012, 0.1)
    assert ok.gpu == {
        "host": "gpu-node-7",
        "visible": "1",
        "uuid": "GPU-5f0c1a2b-0000-1111-2222-333344445555",
        "serial": "1654123456789",
        "pci_bus_id": "00000000:3A:00.0",
        "name": "NVIDIA H200",
    }
    assert ok.versions == {
        "python": "3.11.7",
        "executable": "/venvs/alpha/bin/python",
        "torch": "2.15.0",
        "alpha-dsl": "1.2.3",
    }
    assert ok.traceback is None
    assert (err.status, err.reason, err.config, err.problem) == (
        Status.ERROR,
        "RuntimeError: it broke",
        None,
        Problem(64, 64, 64, "fp16"),
    )
    assert err.traceback == "Traceback (most recent call last):\n  RuntimeError: it broke\n"
    assert (err.check, err.timing, err.telemetry, err.tflops) == (None, None, None, None)
    assert (err.gpu, err.versions, err.cublas_drift_pct) == (None, None, None)


def test_every_field_of_a_codegen_document_is_read() -> None:
    doc = load(ALL_FIELDS["codegen"])
    assert (doc.kind, doc.created, doc.finished, doc.elapsed_s) == (
        "codegen",
        "2026-11-23T02:00:00+00:00",
        "2026-11-23T02:00:09+00:00",
        9.0,
    )
    (rec,) = doc.codegen
    assert rec == CodegenRecord(
        kernel="beta/sm100/r6_cluster2",
        backend="beta",
        name="sm100/r6_cluster2",
        rung=6,
        rung_name="cluster2",
        arch="sm_100a",
        status=Status.OK,
        reason="compiled, not run",
        config="cluster=2",
        config_values={"cluster": 2},
        registers=168,
        spill_bytes=0,
        shared_bytes=197632,
        compile_seconds=3.25,
        lines_of_code=412,
        features=("tma_load", "tcgen05.mma.cta_group::2"),
        raw_ptx=("setmaxnreg",),
        notes=("variant=tma",),
        ptx_bytes=123456,
    )


@pytest.mark.parametrize("kind", list(ALL_FIELDS))
def test_every_field_is_written_back(kind: str, tmp_path: Path) -> None:
    """Read, write, compare with the hand-written file: a field the writer drops, renames or
    changes is a difference here; the written file reads back to the same records."""
    written = json.loads(ALL_FIELDS[kind].read_text())
    doc = load(ALL_FIELDS[kind])
    assert json.loads(json.dumps(document_to_json(doc))) == written
    out = tmp_path / "again.json"
    w = ResultsWriter(out, kind, dict(doc.environment))
    for rec in doc.records:
        w.add(rec)
    again = json.loads(out.read_text())
    assert again["records"] == written["records"]
    assert load(out).records == doc.records


def _nonnull_keys(objs: list[dict]) -> set[str]:
    return {k for o in objs for k, v in o.items() if v is not None and v != [] and v != {}}


def test_the_fixtures_hold_every_field_of_the_schema() -> None:
    """Each record dataclass's every field, and every nested one, has a value in the
    hand-written files: a field added to the records must be added there too."""
    bench = json.loads(ALL_FIELDS["bench"].read_text())
    codegen = json.loads(ALL_FIELDS["codegen"].read_text())
    for doc in (bench, codegen):
        fields_of_doc = {f.name for f in fields(Document)} - {"source"}
        assert fields_of_doc | {"schema", "schema_version"} <= _nonnull_keys([doc])
    records = bench["records"]
    assert {f.name for f in fields(BenchRecord)} | {"problem_key"} <= _nonnull_keys(records)
    assert {f.name for f in fields(CodegenRecord)} <= _nonnull_keys(codegen["records"])
    for key, cls in (("check", CheckResult), ("timing", Stats), ("telemetry", Telemetry)):
        nested = [r[key] for r in records if r.get(key)]
        assert {f.name for f in fields(cls)} <= _nonnull_keys(nested), key
    assert {f.name for f in fields(Problem)} <= _nonnull_keys([r["problem"] for r in records])
