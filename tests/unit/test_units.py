"""The pieces of a run spread over GPUs and files, without running anything: which GPUs
``--gpus`` names, how units are queued and retried, shards, resume and merge rules, and the
records of an older schema."""

from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from harness.devices import gpu_identity, parse_gpus
from harness.executors import MAX_BOUNCES, UnitQueue, progress
from harness.gemm import Problem
from harness.isolate import WorkerEnv, parse_worker_envs
from harness.merge import (
    MergeError,
    merge_documents,
    parse_shard,
    plan_units,
    resume_problem,
)
from harness.records import BenchRecord, Status
from harness.results import Document, load
from harness.runner import Unit, UnitOutcome
from harness.tune import held_out_suites, tuning_docs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBLEMS = [Problem(64, 64, 64), Problem(4096, 4096, 4096), Problem(512, 512, 512)]


def test_gpus_are_positions_among_the_visible_ones() -> None:
    scheduler = {"CUDA_VISIBLE_DEVICES": "2,3,6"}
    assert parse_gpus("0,2", scheduler) == ["2", "6"]
    assert parse_gpus("all", scheduler) == ["2", "3", "6"]
    with pytest.raises(ValueError, match="GPU 3 does not exist here; there are 3"):
        parse_gpus("3", scheduler)
    # kernels on the CPU: the numbers as they are, whatever the host has
    assert parse_gpus("0,1", scheduler, literal=True) == ["0", "1"]
    with pytest.raises(ValueError, match="--gpus all: no GPU found"):
        parse_gpus("all", scheduler, literal=True)


def test_gpu_identity_without_a_gpu_names_the_host_and_slot() -> None:
    ident = gpu_identity("1", {"device": "cpu"})
    assert ident["visible"] == "1" and ident["host"]
    assert (ident["uuid"], ident["serial"], ident["pci_bus_id"]) == (None, None, None)


def test_worker_envs_from_the_command_line(tmp_path: Path) -> None:
    exe = tmp_path / "python"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    envs = parse_worker_envs(
        [f"tirx={exe}"],
        ["tilus:PYTHONPATH=/opt/tilus:/opt/common", "tirx:FOO=a=b"],
        ["cublas", "tirx", "tilus"],
    )
    assert envs["tirx"] == WorkerEnv(str(exe), (("FOO", "a=b"),))
    assert envs["tilus"] == WorkerEnv(None, (("PYTHONPATH", "/opt/tilus:/opt/common"),))
    assert "cublas" not in envs and not envs["tilus"].own and WorkerEnv().own
    with pytest.raises(ValueError, match="names 'tirx' twice"):
        parse_worker_envs([f"tirx={exe}", f"tirx={exe}"], [], ["tirx"])


def test_shards_partition_the_units() -> None:
    assert parse_shard("1/3") == (1, 3)
    units = plan_units(PROBLEMS * 3)
    shards = [plan_units(PROBLEMS * 3, (i, 3)) for i in range(3)]
    assert sorted(u.index for s in shards for u in s) == [u.index for u in units]
    assert [u.index for u in shards[1]] == [1, 4, 7]


def _outcome(unit: Unit, **kw) -> UnitOutcome:
    return UnitOutcome(unit, (), {"host": "h", "visible": "0"}, **kw)


def test_queue_hands_out_the_longest_first_and_a_retry_next_and_final() -> None:
    units = plan_units(PROBLEMS)
    q = UnitQueue(units, longest_first=True)
    unit, final, n = q.take()
    assert (unit.problem, final, n) == (Problem(4096, 4096, 4096), False, 1)
    q.finish(_outcome(unit, device_failed="probe failed", retry=True))
    again, final, n = q.take()
    assert (again, final, n) == (unit, True, 1)  # back first; this attempt decides
    q.finish(_outcome(again))
    assert [q.take()[0].problem for _ in range(2)] == [Problem(512, 512, 512), Problem(64, 64, 64)]
    assert UnitQueue(units, longest_first=False).take()[0] == units[0]  # plan order


def test_queue_waits_while_a_unit_may_come_back() -> None:
    """A GPU with nothing to take waits while another runs a unit: it may come back (its GPU
    failed the probe) and then the waiting GPU runs it."""
    (unit,) = plan_units(PROBLEMS[:1])
    q = UnitQueue([unit], longest_first=True)
    taken = q.take()
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(q.take()))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive()  # blocked, not told "nothing left"
    q.finish(_outcome(taken[0], device_failed="x", retry=True))
    waiter.join(timeout=10)
    assert got and got[0][:2] == (unit, True)
    q.finish(_outcome(unit))
    assert q.take() is None and q.left() == []


def test_a_unit_that_keeps_landing_on_quarantined_gpus_is_left_for_later() -> None:
    (unit,) = plan_units(PROBLEMS[:1])
    q = UnitQueue([unit], longest_first=True)
    for _ in range(MAX_BOUNCES + 1):
        taken = q.take(block=False)
        assert taken is not None
        q.finish(_outcome(taken[0], bounced=True))
    assert q.take(block=False) is None and q.left() == [unit]


def _doc(keys: list[str], source: str, **env) -> Document:
    rec = next(r for r in load(FIXTURES / "bench_small.json").bench if r.timed)
    records = tuple(replace(rec, problem=Problem.parse(k)) for k in keys)
    plan = {"kernels": ["a"], "units": ["64x64x64-fp16", "128x64x64-fp16"], "device": "cuda"}
    environment = {"git_sha": "abc", "gpu": "NVIDIA H200", "timer": {}, "run": plan, **env}
    return Document("bench", environment, records, "2026-11-24T00:00:00+00:00", "x", 1.0, source)


def test_merge_takes_each_unit_from_its_one_piece() -> None:
    a = _doc(["64x64x64-fp16"], "a.json", gpus=[{"host": "n1", "uuid": "GPU-1"}])
    b = _doc(["128x64x64-fp16"], "b.json", gpus=[{"host": "n2", "uuid": "GPU-2"}])
    merged = merge_documents([b, a])
    assert [r.problem_key for r in merged.bench] == ["64x64x64-fp16", "128x64x64-fp16"]
    assert merged.finished is not None and merged.environment["missing_units"] == []
    assert [g["uuid"] for g in merged.environment["gpus"]] == ["GPU-2", "GPU-1"]
    assert merge_documents([a]).environment["missing_units"] == ["128x64x64-fp16"]
    assert merge_documents([a]).finished is None


@pytest.mark.parametrize(
    ("other", "message"),
    [
        ({"git_sha": "def"}, "different code"),
        ({"gpu": "NVIDIA H100"}, "different GPU models"),
        ({"run": {"kernels": ["b"], "units": [], "device": "cuda"}}, "differ in kernels, units"),
    ],
)
def test_merge_refuses_mixed_pieces_unless_told(other: dict, message: str) -> None:
    a = _doc(["64x64x64-fp16"], "a.json")
    b = _doc(["128x64x64-fp16"], "b.json", **other)
    with pytest.raises(MergeError, match=message):
        merge_documents([a, b])
    assert len(merge_documents([a, b], allow_mixed=True).bench) == 2
    with pytest.raises(MergeError, match=r"64x64x64-fp16 is in both a\.json and c\.json"):
        merge_documents([a, _doc(["64x64x64-fp16"], "c.json")], allow_mixed=True)


def test_a_mixed_merge_keeps_every_pieces_plan() -> None:
    """A tuning piece merged first with a held-out piece: the merged plan names both suites, so
    the document still counts as evaluation data and no fit reads it."""
    tune = {"kernels": ["a"], "units": ["64x64x64-fp16"], "suites": ["64x64x64"], "device": "cuda"}
    held = {"kernels": ["b"], "units": ["128x64x64-fp16"], "suites": ["random:424242:2"]}
    a = _doc(["64x64x64-fp16"], "a.json", run=tune)
    b = _doc(["128x64x64-fp16"], "b.json", run={**held, "device": "cuda", "shard": "0/1"})
    merged = merge_documents([a, b], allow_mixed=True)
    run = merged.environment["run"]
    assert run["suites"] == ["64x64x64", "random:424242:2"]
    assert run["units"] == ["64x64x64-fp16", "128x64x64-fp16"] and run["kernels"] == ["a", "b"]
    assert "shard" not in run and merged.environment["missing_units"] == []
    assert held_out_suites(merged) == ["random:424242:2"]
    warned: list[str] = []
    assert tuning_docs([merged, a], warned.append) == [a]
    assert "random:424242:2" in warned[0]


def test_resume_needs_the_same_plan_shard_and_code() -> None:
    doc = _doc(["64x64x64-fp16"], "a.json")
    assert resume_problem(doc, doc.environment) is None
    assert "other timer" in resume_problem(doc, {**doc.environment, "timer": {"rounds": 1}})
    v5 = {**doc.environment, "timer": {"hold_floor_ms": 0.5, "count_hold": False}}
    v6 = {**doc.environment, "timer": {"hold_floor_ms": 0.5, "count_hold": True}}
    assert "add --no-count-hold" in resume_problem(dataclasses.replace(doc, environment=v5), v6)
    assert "count-hold" not in resume_problem(dataclasses.replace(doc, environment=v6), v5)
    # a checked-only (or profiled) run is not continued by a timed one, nor the other way
    for key in ("check_only", "launched"):
        other = {**doc.environment, "run": {**doc.environment["run"], key: True}}
        assert f"other {key}" in resume_problem(doc, other)
    shard = {**doc.environment, "run": {**doc.environment["run"], "shard": "0/2"}}
    assert "is shard None, this run shard 0/2" in resume_problem(doc, shard)
    other_code = resume_problem(doc, {**doc.environment, "git_sha": "x"})
    assert "measured with code abc" in other_code and "merge --allow-mixed" in other_code
    # its rest, into another file (bench --rest-of), may be other code, never another plan
    assert resume_problem(doc, {**doc.environment, "git_sha": "x"}, same_code=False) is None
    assert "is shard None" in resume_problem(doc, shard, same_code=False)


def test_a_version_2_document_reads_without_gpu_versions_or_drift(tmp_path: Path) -> None:
    """The committed results are schema 2: they read, the new fields None."""
    raw = json.loads((FIXTURES / "results_all_fields_bench.json").read_text())
    raw["schema_version"] = 2
    for rec in raw["records"]:
        for key in ("gpu", "versions", "cublas_drift_pct", "per_clock_pct_of_cublas"):
            rec.pop(key)
    old = tmp_path / "v2.json"
    old.write_text(json.dumps(raw))
    ok = load(old).bench[0]
    assert isinstance(ok, BenchRecord) and ok.status == Status.OK and ok.tflops == 76.8
    assert (ok.gpu, ok.versions, ok.cublas_drift_pct, ok.per_clock_pct_of_cublas) == (None,) * 4


def test_progress_says_what_the_rest_of_a_run_needs() -> None:
    """Each "[n/total]" line carries the time so far and, once a unit has finished, the time
    left at the pace so far: a budgeted device session can tell whether the run fits."""
    assert progress(0.4, 0, 66) == "(0 s in)"
    assert progress(600.0, 20, 66) == "(10 min in, ~23 min left)"
    assert progress(45.0, 3, 4) == "(45 s in, ~15 s left)"
    assert progress(120.0, 4, 4) == "(2 min in, ~0 s left)"
