"""``python -m reports ab``: the verdict of a config A/B (``bench --config own --config X``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from records import bench_record

from harness.gemm import Problem
from harness.records import BenchRecord, Status
from harness.results import Document, document_to_json
from harness.telemetry import Telemetry
from reports.ab import format_ab, pairs
from reports.cli import main

OWN = {"tile_m": 128, "tile_n": 256, "cluster": 2, "swap_ab": False, "a_operand": "smem"}
WIDE = {"tile_m": 128, "tile_n": 224, "cluster": 1, "swap_ab": True, "a_operand": "regs"}


def _name(values: dict[str, object]) -> str:
    return ",".join(f"{k}={v}" for k, v in values.items())


def _r8(m: int, ms: float, values: dict[str, object], selected: bool, **kw: object) -> BenchRecord:
    return bench_record(
        "gluon",
        8,
        Problem(m, 4608, 4096),
        ms,
        config=_name(values),
        config_values=values,
        selected=selected,
        **kw,
    )


def _run(*records: BenchRecord, source: str = "runs/ab.json") -> Document:
    return Document("bench", {"gpu": "NVIDIA H200"}, records, "2026-12-05T00:00:00", source=source)


def _doc() -> Document:
    clock = Telemetry(samples=3, sm_clock_mhz_mean=1402.0, power_w_mean=689.0)
    return _run(
        bench_record("cublas", 0, Problem(2456, 4608, 4096), 0.1455, pct_of_cublas=100.0),
        _r8(2456, 0.1668, OWN, True, pct_of_cublas=87.2, tflops_per_ghz=392.0, telemetry=clock),
        _r8(2456, 0.1481, WIDE, False, pct_of_cublas=98.3, tflops_per_ghz=439.0),
        bench_record("cublas", 0, Problem(1463, 4608, 4096), 0.08, pct_of_cublas=100.0),
        _r8(1463, 0.10, OWN, True, pct_of_cublas=80.0),
        _r8(1463, 0.11, WIDE, False, pct_of_cublas=72.7),
        _r8(1463, 0.05, {**WIDE, "tile_n": 200}, False, status=Status.WRONG),  # never counted
        _r8(999, 0.05, WIDE, False),  # no own choice beside it: no pair
        _r8(2456, 0.17, OWN, False),  # the own choice forced too: not a pair with itself
    )


def test_pairs_are_the_forced_configs_beside_the_own_choice_of_their_run() -> None:
    """Each forced config that ran correct beside the own choice at its shape is one pair
    (forced / own time); a wrong record is named and left out; a shape with no own choice
    timed gives none, nor does the own config forced again; the pair carries that shape's
    cuBLAS record."""
    said: list[str] = []
    found = pairs([_doc()], warn=said.append)
    assert [(p.problem.m, round(p.ratio, 3)) for p in found] == [(2456, 0.888), (1463, 1.1)]
    assert found[0].cublas is not None and found[0].cublas.median_ms == 0.1455
    assert len(said) == 1 and "1463x4608x4096-fp16: wrong, left out" in said[0]
    assert found[0].label("forced") == "128x224 swap a_operand=regs"  # off the own choice
    assert found[0].label("own") == "128x256 c2"


def test_the_verdict_groups_pairs_and_sums_them_up() -> None:
    """Per forced config: its shapes fastest first, the geomean of forced / own, how many ran
    faster and the worst; then all pairs. ``by="own"`` groups by the own choice's tile."""
    found = pairs([_doc()])
    text = format_ab(found)
    head = (
        "gluon/sm90/r8_shape_adaptive, forced 128x224 swap a_operand=regs: 2 shape(s), forced "
        f"/ own time {(0.1481 / 0.1668 * 1.1) ** 0.5:.3f} (geomean), 1 faster, worst 1.100 "
        "(1463x4608x4096-fp16)"
    )
    assert text.startswith(head), text
    row = next(line for line in text.splitlines() if line.strip().startswith("2456x"))
    assert row.split()[1:] == [
        "128x256", "c2", "87.2", "128x224", "swap", "a_operand=regs", "98.3", "0.888",
        "392/439/-", "1402,", "689",
    ]  # fmt: skip
    assert text.splitlines()[-1].startswith("all pairs: 2 shape(s)")
    assert "own 128x256 c2: 2 shape(s)" in format_ab(found, by="own")
    with pytest.raises(ValueError, match="by='tile'"):
        format_ab(found, by="tile")
    assert format_ab([]).startswith("no A/B pairs")


def test_by_change_groups_one_override_across_the_picks_it_overrode() -> None:
    """``by="change"``: the knobs a forced config sets otherwise than the own choice (what
    ``--config X`` overrode), so one override over shapes whose picks differ in width is one
    group, as an A/B rule judges it; booleans read as a config name writes them."""
    narrow = {**OWN, "tile_n": 128}
    doc = _run(
        _r8(2456, 0.20, OWN, True),
        _r8(2456, 0.18, {**OWN, "cluster": 1, "swap_ab": True}, False),
        _r8(1463, 0.10, narrow, True),
        _r8(1463, 0.11, {**narrow, "cluster": 1, "swap_ab": True}, False),
        _r8(1463, 0.09, {**narrow, "tile_n": 192}, False),
    )
    found = pairs([doc])
    assert sorted(p.change for p in found) == ["cluster=1,swap_ab=1"] * 2 + ["tile_n=192"]
    text = format_ab(found, by="change")
    assert "change cluster=1,swap_ab=1: 2 shape(s)" in text
    assert f"time {(0.9 * 1.1) ** 0.5:.3f} (geomean), 1 faster" in text
    assert "change tile_n=192: 1 shape(s)" in text
    assert "forced 128x192" in format_ab(found)  # by the forced config: one group per config
    assert "forced 128x256 swap: 1 shape(s)" in format_ab(found)


def test_reports_ab_reads_runs_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ab.json"
    path.write_text(json.dumps(document_to_json(_doc())))
    assert main(["ab", str(path), "--by", "own"]) == 0
    out, err = capsys.readouterr()
    assert "own 128x256 c2: 2 shape(s)" in out and "wrong, left out" in err
    assert main(["ab", str(tmp_path / "missing.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
