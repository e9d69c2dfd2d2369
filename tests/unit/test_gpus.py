"""One run over several GPUs, on a CPU: fake GPUs (``--gpus 0,1`` with ``--device cpu`` gives
each worker set its own ``CUDA_VISIBLE_DEVICES``) and the fake backend's kernels, which log
where they ran (tests/fakegpu). Sharding by GPU, faults that cost one record, a GPU that fails
its probe, a unit that fails on two GPUs, a killed run resumed, shards merged, and a backend
whose workers run under a second interpreter in the same run."""

from __future__ import annotations

import json
import os
import signal
import site
import subprocess
import sys
import time
import venv
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import run_harness
from expectations import require_module

from harness.records import BenchRecord, Status
from harness.results import Document, load

require_module("torch", "the fake GPUs' workers import it")

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--warmup", "0.05", "--rewarm", "0.05", "--settle", "0"]
FAST += ["--min-samples", "20", "--min-time", "0.02"]
FAST += ["--rounds", "2"]
SIX = ["64x64x64", "64x64x128", "64x128x64", "128x64x64", "128x128x64", "64x64x256"]


def _suites(*shapes: str) -> list[str]:
    return [a for s in shapes for a in ("--suite", s)]


_harness = run_harness


def _bench(env: dict[str, str], out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _harness(env, "bench", "--device", "cpu", "--out", str(out), *FAST, *args)


def _fake_log(env: dict[str, str]) -> list[dict]:
    log = Path(env["FAKE_GPU_DIR"]) / "log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _by_problem(doc: Document) -> dict[str, list[BenchRecord]]:
    out: dict[str, list[BenchRecord]] = defaultdict(list)
    for rec in doc.bench:
        out[rec.problem_key].append(rec)
    return out


def _outcomes(doc: Document) -> set[tuple[str, str | None, str, Status]]:
    return {(r.kernel, r.config, r.problem_key, r.status) for r in doc.bench}


def test_each_problem_runs_whole_on_one_of_two_gpus(fake_gpu_env, tmp_path: Path) -> None:
    out = tmp_path / "two.json"
    r = _bench(fake_gpu_env, out, "--kernel", "fake/sleep", "--gpus", "0,1", *_suites(*SIX))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    assert doc.finished is not None
    assert {g["visible"] for g in doc.environment["gpus"]} == {"0", "1"}
    per_problem = _by_problem(doc)
    assert len(per_problem) == 6
    used = set()
    for key, recs in per_problem.items():
        assert {r.kernel for r in recs} == {"fake/reference", "fake/sleep"}, key
        slots = {r.gpu["visible"] for r in recs}
        assert len(slots) == 1, f"{key} ran on GPUs {slots}: its % of cuBLAS compares two GPUs"
        used |= slots
        for rec in recs:
            assert rec.status == Status.OK and rec.pct_of_cublas is not None
            assert rec.gpu["host"] and rec.versions["executable"] == sys.executable
            assert rec.cublas_drift_pct is not None
    assert used == {"0", "1"}
    # what each worker saw is what its record says
    for line in _fake_log(fake_gpu_env):
        (rec,) = [r for r in per_problem[line["problem"]] if r.kernel == line["kernel"]]
        assert line["visible"] == rec.gpu["visible"], line
    assert "[GPU 0]" in r.stdout and "[GPU 1]" in r.stdout


def test_a_failing_worker_costs_its_own_record_only(fake_gpu_env, tmp_path: Path) -> None:
    out = tmp_path / "faults.json"
    kernels = [a for k in ("sleep", "raise", "exit", "hang") for a in ("--kernel", f"fake/{k}")]
    r = _bench(
        fake_gpu_env, out, *kernels, "--gpus", "0,1", "--timeout", "5",
        *_suites("64x64x64", "64x64x128"),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    got = {(rec.kernel, rec.problem_key): rec for rec in doc.bench}
    assert len(got) == 5 * 2
    for key in ("64x64x64-fp16", "64x64x128-fp16"):
        assert got[("fake/raise", key)].status == Status.ERROR
        assert "failed on purpose" in got[("fake/raise", key)].reason
        assert got[("fake/exit", key)].status == Status.ERROR
        assert "died" in got[("fake/exit", key)].reason
        assert got[("fake/hang", key)].status == Status.TIMEOUT
        for ok in ("fake/sleep", "fake/reference"):
            assert got[(ok, key)].status == Status.OK and got[(ok, key)].timing is not None
    # the GPUs passed their probes after the crash and the hang: nobody was quarantined
    assert doc.environment["quarantined"] == [] and doc.finished is not None


def test_a_gpu_that_fails_its_probe_is_quarantined_and_its_unit_runs_elsewhere(
    fake_gpu_env, tmp_path: Path
) -> None:
    env = {**fake_gpu_env, "FAKE_FAULT_GPUS": "1"}
    out = tmp_path / "quarantine.json"
    shapes = SIX[:4]
    r = _bench(env, out, "--kernel", "fake/fault", "--gpus", "0,1", *_suites(*shapes))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    (q,) = doc.environment["quarantined"]
    assert q["gpu"]["visible"] == "1" and "broken" in q["why"]
    faulted = q["unit"]
    assert any(
        line["kernel"] == "fake/fault" and line["problem"] == faulted and line["visible"] == "1"
        for line in _fake_log(env)
    )
    # every problem, the one GPU 1 broke on included, finished on GPU 0, once
    for key, recs in _by_problem(doc).items():
        assert sorted(rec.kernel for rec in recs) == ["fake/fault", "fake/reference"], key
        assert all(rec.status == Status.OK and rec.gpu["visible"] == "0" for rec in recs)
    assert len(_by_problem(doc)) == 4 and doc.finished is not None
    assert "quarantined" in r.stdout


def test_a_unit_that_fails_on_two_gpus_is_the_kernels_failure(fake_gpu_env, tmp_path: Path) -> None:
    env = {**fake_gpu_env, "FAKE_FAULT_GPUS": "*", "FAKE_FAULT_PROBLEMS": "64x64x64-fp16"}
    out = tmp_path / "twice.json"
    r = _bench(
        env, out, "--kernel", "fake/fault", "--gpus", "0,1,2", *_suites("64x64x64", "64x64x128")
    )
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    quarantined = doc.environment["quarantined"]
    assert [q["unit"] for q in quarantined] == ["64x64x64-fp16"] * 2
    assert len({q["gpu"]["visible"] for q in quarantined}) == 2
    recs = {(rec.kernel, rec.problem_key): rec for rec in doc.bench}
    fault = recs[("fake/fault", "64x64x64-fp16")]
    assert fault.status == Status.ERROR and "the kernel's failure" in fault.reason, fault.reason
    assert fault.gpu["visible"] == quarantined[1]["gpu"]["visible"]  # recorded where it last ran
    # the problem that breaks no GPU finished on one that works
    other = [rec for (k, p), rec in recs.items() if p == "64x64x128-fp16"]
    assert {rec.status for rec in other} == {Status.OK}
    assert len(recs) == 4 and doc.finished is not None


def test_a_killed_run_resumes_to_the_records_of_an_uninterrupted_one(
    fake_gpu_env, tmp_path: Path
) -> None:
    env = {**fake_gpu_env, "FAKE_SLEEP_S": "0.5"}
    args = ["--kernel", "fake/sleep", "--gpus", "0,1", *_suites(*SIX)]
    whole = tmp_path / "whole.json"
    r = _bench(env, whole, *args)
    assert r.returncode == 0, r.stdout + r.stderr

    out = tmp_path / "killed.json"
    cmd = [sys.executable, "-m", "harness", "bench", "--device", "cpu", "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, *FAST, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        if out.exists() and json.loads(out.read_text())["records"]:
            break
    proc.send_signal(signal.SIGKILL)  # mid-run: other problems are being measured
    proc.wait(timeout=30)
    killed = load(out)
    assert killed.finished is None
    before = {r.problem_key for r in killed.bench}
    assert 1 <= len(before) < 6
    logged = len(_fake_log(env))

    r = _bench(env, out, *args, "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(before)} problem(s) done, {6 - len(before)} to run" in r.stdout
    resumed = load(out)
    assert resumed.finished is not None and len(resumed.environment["resumed"]) == 1
    assert _outcomes(resumed) == _outcomes(load(whole))
    assert len(resumed.bench) == len(load(whole).bench)  # no problem twice
    # the resumed run compiled nothing for a problem the killed one had finished
    assert not {line["problem"] for line in _fake_log(env)[logged:]} & before


def test_shards_merge_into_the_records_of_one_run(fake_gpu_env, tmp_path: Path) -> None:
    shapes = SIX[:4]
    args = ["--kernel", "fake/sleep", *_suites(*shapes)]
    first, second = tmp_path / "s0.json", tmp_path / "s1.json"
    for out, extra in ((first, ["--shard", "0/2"]), (second, ["--shard", "1/2", "--gpus", "0,1"])):
        r = _bench(fake_gpu_env, out, *args, *extra)
        assert r.returncode == 0, r.stdout + r.stderr
    assert {r.problem_key for r in load(first).bench} == {f"{s}-fp16" for s in shapes[0::2]}
    merged = tmp_path / "merged.json"
    r = _harness(fake_gpu_env, "merge", str(second), str(first), "--out", str(merged))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(merged)
    kernels = ("fake/reference", "fake/sleep")
    assert _outcomes(doc) == {(k, None, f"{s}-fp16", Status.OK) for k in kernels for s in shapes}
    assert [r.problem_key for r in doc.bench[::2]] == [f"{s}-fp16" for s in shapes]  # plan order
    assert doc.finished is not None and len(doc.environment["merged_from"]) == 2
    # a problem in two files, a shard of other code: refused, one line each
    r = _harness(fake_gpu_env, "merge", str(first), str(first), "--out", str(merged))
    assert r.returncode == 2 and "is in both" in r.stderr
    raw = json.loads(second.read_text())
    raw["environment"]["git_sha"] = "0000000"
    second.write_text(json.dumps(raw))
    r = _harness(fake_gpu_env, "merge", str(first), str(second), "--out", str(merged))
    assert r.returncode == 2 and "different code" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _harness(
        fake_gpu_env, "merge", str(first), str(second), "--out", str(merged), "--allow-mixed"
    )
    assert r.returncode == 0, r.stderr
    # and a resume of a run with other kernels is refused
    r = _bench(fake_gpu_env, first, "--kernel", "fake/raise", *_suites(*shapes), "--resume")
    assert r.returncode == 2 and "was run with other kernels" in r.stderr, r.stderr


def test_the_rest_of_a_run_of_other_code_joins_it(fake_gpu_env, tmp_path: Path) -> None:
    """A run --resume refuses (other code) is finished by --rest-of into a new file, and the
    merge of the two holds every problem once, as one run would."""
    args = ["--kernel", "fake/sleep", *_suites(*SIX[:4])]
    whole = tmp_path / "whole.json"
    r = _bench(fake_gpu_env, whole, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    # an earlier run of other code, cut after two problems
    raw = json.loads(whole.read_text())
    kept = {f"{s}-fp16" for s in SIX[:2]}
    raw["records"] = [rec for rec in raw["records"] if rec["problem_key"] in kept]
    raw["environment"]["git_sha"] = "0000000"
    raw["finished"] = None
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(raw))
    r = _bench(fake_gpu_env, cut, *args, "--resume")
    assert r.returncode == 2 and f"--rest-of {cut}" in r.stderr, r.stderr
    rest = tmp_path / "rest.json"
    r = _bench(fake_gpu_env, rest, *args, "--rest-of", str(cut))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 problem(s) done there, 2 to run" in r.stdout
    assert f"merge --allow-mixed {cut} {rest}`" in r.stdout
    doc = load(rest)
    assert {rec.problem_key for rec in doc.bench} == {f"{s}-fp16" for s in SIX[2:4]}
    assert doc.environment["run"]["rest_of"]["git_sha"] == "0000000"
    # the rest, killed after one problem, resumes into itself without the source's problems
    raw = json.loads(rest.read_text())
    raw["records"] = [rec for rec in raw["records"] if rec["problem_key"] == f"{SIX[2]}-fp16"]
    raw["finished"] = None
    rest.write_text(json.dumps(raw))
    r = _bench(fake_gpu_env, rest, *args, "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"resuming {rest}: 1 problem(s) done\n" in r.stdout
    assert f"the rest of {cut}: 2 problem(s) done there, 1 to run" in r.stdout
    doc = load(rest)
    assert {rec.problem_key for rec in doc.bench} == {f"{s}-fp16" for s in SIX[2:4]}
    assert doc.environment["run"]["rest_of"]["source"] == str(cut)
    # ... and needs its source to do so
    moved = tmp_path / "cut-moved.json"
    cut.rename(moved)
    r = _bench(fake_gpu_env, rest, *args, "--resume")
    assert r.returncode == 2 and f"{rest} is the rest of another run" in r.stderr, r.stderr
    assert "no such results file" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    moved.rename(cut)
    merged = tmp_path / "merged.json"
    r = _harness(fake_gpu_env, "merge", str(cut), str(rest), "--out", str(merged), "--allow-mixed")
    assert r.returncode == 0, r.stderr
    joined = load(merged)
    assert _outcomes(joined) == _outcomes(load(whole))
    assert joined.finished is not None
    # the rest of a run of another plan, or of the --out file itself: refused, one line each
    r = _bench(
        fake_gpu_env, rest, "--kernel", "fake/raise", *_suites(*SIX[:4]), "--rest-of", str(cut)
    )
    assert r.returncode == 2 and "was run with other kernels" in r.stderr, r.stderr
    r = _bench(fake_gpu_env, cut, *args, "--rest-of", str(cut))
    assert r.returncode == 2 and "continue it with --resume" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _second_interpreter(where: Path) -> Path:
    """A second virtualenv whose interpreter sees this one's packages (torch) through a .pth
    file, as ``--env tirx:PYTHONPATH=...`` would hand a backend its own packages."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    (purelib,) = (where / "lib").glob("python3*/site-packages")
    (purelib / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return where / "bin" / "python"


def test_a_backend_runs_under_its_own_interpreter_in_the_same_run(
    fake_gpu_env, tmp_path: Path
) -> None:
    python = _second_interpreter(tmp_path / "second-venv")
    out = tmp_path / "two-pythons.json"
    r = _bench(
        fake_gpu_env, out, "--kernel", "fake/sleep", "--kernel", "toy/ok",
        "--python", f"fake={python}", "--env", "fake:FAKE_TAG=second",
        *_suites("64x64x64"),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    recs = {rec.kernel: rec for rec in doc.bench}
    assert {k: rec.status for k, rec in recs.items()} == {
        "fake/reference": Status.OK,
        "fake/sleep": Status.OK,
        "toy/ok": Status.OK,
    }
    assert recs["fake/sleep"].versions["executable"] == str(python)
    assert recs["toy/ok"].versions["executable"] == sys.executable  # the harness's own
    assert recs["toy/ok"].pct_of_cublas is not None  # timed beside the reference, one run
    lines = [line for line in _fake_log(fake_gpu_env) if line["kernel"] == "fake/sleep"]
    assert lines and all(
        line["python"] == str(python) and line["tag"] == "second" for line in lines
    )
    assert doc.environment["backends"]["fake"]["python"] == str(python)
    assert doc.environment["backends"]["fake"]["variables"] == {"FAKE_TAG": "second"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--python", "nope=/bin/sh"], "--python 'nope=/bin/sh': unknown backend 'nope'"),
        (["--python", "fake=/no/such/python"], "is not an executable interpreter"),
        (["--python", "fake"], "expected BACKEND=PATH"),
        (["--env", "fake:1X=2"], "expected BACKEND:VAR=VALUE"),
        (["--env", "nope:X=2"], "unknown backend 'nope'"),
        (["--gpus", "0,0"], "names a GPU twice"),
        (["--gpus", "one"], "expected 'all' or GPU numbers"),
        (["--shard", "2/2"], "I must be in 0..N-1"),
        (["--shard", "x"], "expected I/N"),
        (["--resume"], "--resume needs --out FILE.json"),
        (["--address", "auto"], "--address names a Ray cluster"),
        (["--executor", "ray", "--gpus", "0"], "--gpus is for --executor local"),
    ],
)
def test_bad_run_options_are_one_line_errors(fake_gpu_env, tmp_path, args, message) -> None:
    out = [] if "--resume" in args else ["--out", str(tmp_path / "never.json")]
    r = _harness(fake_gpu_env, "bench", "--device", "cpu", "--kernel", "fake/sleep", *out, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert message in lines[0], lines[0]
    assert not (tmp_path / "never.json").exists()


def test_ray_without_the_cluster_extra_says_how_to_install_it(fake_gpu_env, tmp_path) -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here (tests/cluster covers the executor)")
    r = _bench(fake_gpu_env, tmp_path / "x.json", "--kernel", "fake/sleep", "--executor", "ray")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "error: --executor ray needs Ray: install the [cluster] extra: pip install -e '.[cluster]'"
    )


def test_worker_environment_is_its_own(tmp_path: Path) -> None:
    """A backend's PYTHONPATH replaces the inherited one, with the harness's folder first; a
    virtualenv interpreter's bin leads PATH; a slot sets CUDA_VISIBLE_DEVICES in PCI order."""
    from harness.isolate import HARNESS_ROOT, WorkerEnv

    python = _second_interpreter(tmp_path / "v")
    env = WorkerEnv(str(python), (("PYTHONPATH", "/opt/tirx"),))
    got = env.environ("3", base={"PYTHONPATH": "/opt/tilus", "PATH": "/usr/bin"})
    assert got["PYTHONPATH"] == os.pathsep.join([str(HARNESS_ROOT), "/opt/tirx"])
    assert got["PATH"].split(os.pathsep)[0] == str(python.parent)
    assert got["VIRTUAL_ENV"] == str(tmp_path / "v")
    assert (got["CUDA_VISIBLE_DEVICES"], got["CUDA_DEVICE_ORDER"]) == ("3", "PCI_BUS_ID")
    own = WorkerEnv().environ(None, base={"PYTHONPATH": "/a", "CUDA_VISIBLE_DEVICES": "5"})
    assert own["PYTHONPATH"] == os.pathsep.join([str(HARNESS_ROOT), "/a"])
    assert own["CUDA_VISIBLE_DEVICES"] == "5" and "CUDA_DEVICE_ORDER" not in own
