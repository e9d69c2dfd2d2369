"""``harness.fitcost.ceiling``: what a perfect choice among the timed configs reaches;
``harness.fitcost.own_choice``: what the kernels' own choices cost in their tuning runs;
``harness.fitcost.current_choice``: where the heuristic as it stands trails what was timed."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.configs import quiet_knob
from harness.fitcost import (
    M_BANDS,
    ceiling,
    current_choice,
    held_out_weighted,
    moves,
    own_choice,
    samples,
)
from harness.gemm import Problem
from harness.problems import held_out_m_share, random_shapes
from harness.protocol import KernelSpec, Rung
from harness.records import BenchRecord, Stats, Status
from harness.results import Document, document_to_json
from harness.tile_cost import HOPPER, GemmConfig, Sample, TileCostModel

R8 = KernelSpec("gluon", "r8", Rung.SHAPE_ADAPTIVE, "sm_90a", "d", module="tmp.r8")
R7 = KernelSpec("gluon", "r7", Rung.MULTI_CONSUMER, "sm_90a", "d", module="tmp.r7")


def _rec(
    spec: KernelSpec,
    m: int,
    pct: float | None = None,
    ok: bool = True,
    ms: float = 1.0,
    selected: bool | None = None,
) -> BenchRecord:
    return BenchRecord(
        **BenchRecord.identity(spec),
        problem=Problem(m, 4096, 4096),
        status=Status.OK if ok else Status.WRONG,
        timing=Stats(n=100, median_ms=ms, p20_ms=ms, p80_ms=ms, mean_ms=ms, min_ms=ms, cv=0.0),
        pct_of_cublas=pct,
        selected=selected,
    )


def _doc(*records: BenchRecord, gpu: str = "NVIDIA H200", source: str = "runs/t.json") -> Document:
    return Document("bench", {"gpu": gpu}, records, "2026-11-26T00:00:00", source=source)


def test_the_ceiling_is_the_fastest_timed_config_per_problem_across_runs() -> None:
    """Per problem the best config of the best run counts; other rungs and failed or untimed
    records do not; each band is a geomean and counts its problems below the floor."""
    first = _doc(_rec(R8, 16, 90.0), _rec(R8, 16, 104.0), _rec(R8, 300, 80.0), _rec(R7, 300, 99.0))
    second = _doc(_rec(R8, 300, 85.0), _rec(R8, 300, 120.0, ok=False), _rec(R8, 5000, None))
    (line,) = ceiling([first, second])
    assert line.startswith("ceiling on NVIDIA H200")
    assert f"all {math.sqrt(1.04 * 0.85):.3f} (2 problems)" in line
    assert "M 1-64 1.040 (1, 0 < 0.90)" in line
    assert "M 257-1024 0.850 (1, 1 < 0.90)" in line
    assert "M > 4096" not in line  # timed with no cuBLAS ratio: not a ceiling


def test_samples_leave_out_clusters_the_model_does_not_price() -> None:
    """A fit sees one CTA and pairs only: a cluster of four (CuTeDSL's tune-only swapped
    clusters) has no constant in the model, and priced as one CTA its timings would move the
    tile's efficiency."""
    knobs = {"tile_m": 128, "tile_n": 72, "swap_ab": True}
    recs = [
        dataclasses.replace(_rec(R8, 200, 90.0), config_values={**knobs, "cluster": c})
        for c in (1, 2, 4)
    ]
    assert sorted(s.config.cluster for s in samples([_doc(*recs)])) == [1, 2]


def test_samples_leave_out_a_backends_own_kernel_variants() -> None:
    """A config whose own knobs run another kernel than the model prices (Gluon's A in
    registers) is no sample of its tile; the same tile with the knob at its priced value, or
    without it (records older than the knob), is."""
    knobs = {"tile_m": 64, "tile_n": 160, "cluster": 1, "swap_ab": True}
    recs = [
        dataclasses.replace(_rec(R8, m, 90.0), config_values={**knobs, **extra})
        for m, extra in ((200, {}), (300, {"a_operand": "smem"}), (400, {"a_operand": "regs"}))
    ]
    assert sorted(s.problem.m for s in samples([_doc(*recs)])) == [200, 300]


def test_a_backends_priced_rule_picks_the_kernel_each_tile_is_priced_by() -> None:
    """With the backend's rule (Gluon's ``priced``: A in registers where that is a tile's
    kernel) the fit takes the register timings of such a tile and leaves out its shared-memory
    ones, while the other tiles keep the default; the samples' configs carry the shared knobs
    only."""

    def rec(m: int, tile_n: int, **own: object) -> BenchRecord:
        knobs = {"tile_m": 128, "tile_n": tile_n, "cluster": 1, "swap_ab": True, **own}
        return dataclasses.replace(_rec(R8, m, 90.0), config_values=knobs)

    def priced(values: Mapping[str, object]) -> bool:  # 152 wide runs A from registers only
        return values.get("a_operand", "smem") == ("regs" if values["tile_n"] == 152 else "smem")

    recs = [rec(200, 152, a_operand="regs"), rec(300, 144, a_operand="regs"), rec(400, 144)]
    recs.append(rec(500, 152))  # (no such kernel: an invented record, left out by the rule)
    by_rule = {(s.problem.m, s.config.tile_n) for s in samples([_doc(*recs)], priced=priced)}
    assert by_rule == {(200, 152), (400, 144)}
    by_default = {(s.problem.m, s.config.tile_n) for s in samples([_doc(*recs)])}
    assert by_default == {(400, 144), (500, 152)}
    assert all(type(s.config) is GemmConfig for s in samples([_doc(*recs)], priced=priced))


def test_fit_cost_takes_the_priced_rule_of_its_base_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fit-cost --base MODULE`` fits on the timings of the kernels the module's ``priced``
    names: a module that prices none of them leaves no sample (the one-line error), one that
    prices all of them keeps them."""
    from harness.cli import main

    knobs = {"tile_m": 128, "tile_n": 144, "cluster": 1, "a_operand": "regs"}
    recs = [dataclasses.replace(_rec(R8, m, 90.0), config_values=knobs) for m in (200, 300, 400)]
    path = tmp_path / "tune.json"
    path.write_text(json.dumps(document_to_json(_doc(*recs))))
    for name, rule in (("prices_none", "False"), ("prices_all", "True")):
        (tmp_path / f"{name}.py").write_text(
            f"from harness.tile_cost import HOPPER as COST\n\n\ndef priced(values):\n"
            f"    return {rule}\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    fit = ["fit-cost", str(path), "--folds", "2", "--rounds", "1", "--base"]
    assert main([*fit, "prices_none"]) == 2
    assert "no timed rung-8 record" in capsys.readouterr().err
    assert main([*fit, "prices_all"]) == 0
    assert capsys.readouterr().out.startswith("3 timings of 3 problems (NVIDIA H200)")


def test_samples_leave_out_stream_k_timed_before_the_tail_was_bounded() -> None:
    """2418x3584x4096 in 128x256 stream-K tiles: today 16 programs share its two tail tiles,
    before SK_MIN_ITERS all 132 did, so a timing from then is of another kernel. 1408x3584x14336
    (22 tail tiles, 37 k-iterations a program) runs the same schedule either way; tiles
    without stream-K are never left out."""
    sk = {"tile_m": 128, "tile_n": 256, "cluster": 1, "stream_k": True}

    def rec(m: int, n: int, k: int, **knobs: object) -> BenchRecord:
        r = dataclasses.replace(_rec(R8, m, 90.0), config_values={**sk, **knobs})
        return dataclasses.replace(r, problem=Problem(m, n, k))

    recs = [rec(2418, 3584, 4096), rec(1408, 3584, 14336), rec(2418, 3584, 4096, stream_k=False)]
    old = Document(
        "bench", {"gpu": "NVIDIA H200", "sm_count": 132}, tuple(recs), "2026-12-04T20:40:00+00:00"
    )
    new = dataclasses.replace(old, created="2026-12-04T21:18:12+00:00")
    kept = {(s.problem.m, s.config.stream_k) for s in samples([old])}
    assert kept == {(1408, True), (2418, False)}
    assert len(samples([new])) == 3
    assert len(samples([dataclasses.replace(old, created=None)])) == 2  # no date: as old


def test_moves_lists_the_picks_fitted_constants_move_and_how_to_time_the_rest() -> None:
    """A heuristic that picks 64x192 where the model prices it above 0.6, else 128x128 pairs:
    raising the price moves every problem; one was timed both ways (slower: named), the others
    come out as one bench command per new config."""
    wide, pair = GemmConfig(64, 192, 1), GemmConfig(128, 128, 2)

    def heuristic(problem: Problem, model: TileCostModel) -> GemmConfig:
        return wide if model.unswapped_efficiency.get((64, 192), 0.0) > 0.6 else pair

    old = HOPPER.with_params({"ueff:64x192": 0.5})
    new = old.with_params({"ueff:64x192": 0.7})
    a, b, c = Problem(207, 6144, 4096), Problem(555, 8192, 8192), Problem(231, 6144, 4096)
    data = [
        Sample(b, pair, 1.0, gpu="H200"),
        Sample(b, wide, 1.2, gpu="H200"),
        Sample(a, pair, 1.0, gpu="H200"),  # the new pick untimed: to time
    ]
    lines = moves(heuristic, old, new, [a, b, c, a], data, "gluon/sm90/r8_shape_adaptive")
    assert lines[0] == "picks the fitted constants move: 3 of 3 tuning problems"
    assert lines[1].split() == ["3", "x", "128x128", "c2", "->", "64x192"]
    assert "timed both ways: 1" in lines[2] and "555x8192x8192-fp16 1.200" in lines[2]
    assert lines[3].startswith("not timed both ways (2)")
    assert lines[4].strip() == (
        "python -m harness bench --kernel gluon/sm90/r8_shape_adaptive --config own --config "
        f"{wide} --suite 207x6144x4096 --suite 231x6144x4096"
    )
    assert moves(heuristic, new, new, [a], data, "k") == [
        "picks the fitted constants move: 0 of 1 tuning problems"
    ]


def test_the_ceiling_is_per_gpu_and_per_backend() -> None:
    h100 = _doc(_rec(R8, 8192, 97.0), gpu="NVIDIA H100 80GB HBM3")
    lines = ceiling([_doc(_rec(R8, 8192, 101.0)), h100])
    assert [line.split(" (")[0] for line in lines] == [
        "ceiling on NVIDIA H100 80GB HBM3",
        "ceiling on NVIDIA H200",
    ]
    assert "M > 4096 0.970" in lines[0] and "M > 4096 1.010" in lines[1]
    assert ceiling([h100], backends=["cutedsl"]) == []


@pytest.mark.parametrize("pct", [0.0, None])
def test_a_record_without_a_ratio_adds_nothing(pct: float | None) -> None:
    assert ceiling([_doc(_rec(R8, 64, pct))]) == []


def test_own_choice_is_each_runs_pick_against_the_fastest_config_that_run_timed() -> None:
    """Per run and problem: the selected record over the fastest; a run that did not time its
    own choice adds nothing, nor does another run's faster timing of the same problem; a
    problem two runs chose for counts twice."""
    first = _doc(
        _rec(R8, 16, ms=1.25, selected=True),
        _rec(R8, 16, ms=1.0),
        _rec(R8, 300, ms=2.0, selected=True),
        _rec(R8, 300, ms=2.5),
        _rec(R8, 5000, ms=3.0),  # no own choice timed: left out
        _rec(R7, 300, ms=2.0, selected=True),
        _rec(R7, 300, ms=1.0),  # not rung 8
    )
    second = _doc(_rec(R8, 300, ms=0.5), source="runs/u.json")
    (line,) = own_choice([first, second])
    assert line.startswith("own choice on NVIDIA H200")
    assert "12.5 % slower (mean, 2 choices), 25.0 % worst (16x4096x4096-fp16)" in line
    assert "M 1-64 25.0 % (1); M 257-1024 0.0 % (1)" in line
    assert "M > 4096" not in line
    third = _doc(_rec(R8, 16, ms=1.0, selected=True), _rec(R8, 16, ms=1.0), source="runs/v.json")
    (line,) = own_choice([first, second, third])
    assert "M 1-64 12.5 % (2)" in line


def test_own_choice_is_per_gpu_and_per_backend() -> None:
    h100 = _doc(
        _rec(R8, 64, ms=1.1, selected=True), _rec(R8, 64, ms=1.0), gpu="NVIDIA H100 80GB HBM3"
    )
    lines = own_choice([_doc(_rec(R8, 64, ms=1.0, selected=True)), h100])
    assert [line.split(" (")[0] for line in lines] == [
        "own choice on NVIDIA H100 80GB HBM3",
        "own choice on NVIDIA H200",
    ]
    assert "10.0 % slower" in lines[0] and "0.0 % slower" in lines[1]
    assert own_choice([h100], backends=["cutedsl"]) == []


@dataclasses.dataclass(frozen=True)
class _OwnConfig(GemmConfig):
    """A backend's config: the shared knobs and one of its own (Gluon's A operand)."""

    a_operand: str = quiet_knob("smem")


def _timed(spec: KernelSpec, m: int, ms: float, pct: float, **knobs: object) -> BenchRecord:
    """A timed record of the config ``knobs`` name (the other knobs at their defaults)."""
    config = _OwnConfig(**knobs)  # type: ignore[arg-type]
    return dataclasses.replace(
        _rec(spec, m, pct, ms=ms), config=config.name, config_values=config.values()
    )


def test_current_choice_judges_todays_pick_in_the_latest_run_that_timed_it() -> None:
    """Per (GPU, problem): the heuristic's pick now, in the latest run that timed it, against
    the fastest config that run timed; a problem whose pick no run timed is counted, not
    judged; another kernel's records and other runs' timings do not count; the worst lines
    name what beat the pick, knobs off their defaults included."""
    pick = _OwnConfig(128, 256, cluster=2)
    wide = dict(tile_m=128, tile_n=224, cluster=1, swap_ab=True, a_operand="regs")

    def heuristic(problem: Problem, model: TileCostModel) -> GemmConfig:
        return pick if problem.m != 700 else _OwnConfig(64, 64)

    def run(created: str, *records: BenchRecord) -> Document:
        return Document("bench", {"gpu": "NVIDIA H200"}, records, created, source=created)

    old = run(
        "2026-12-01",
        _timed(R8, 2000, 1.0, 80.0, tile_m=128, tile_n=256, cluster=2),
        _timed(R8, 2000, 0.5, 99.0, **wide),  # a later run timed the pick again: not this one
    )
    new = run(
        "2026-12-05",
        _timed(R8, 2000, 1.25, 80.0, tile_m=128, tile_n=256, cluster=2),
        _timed(R8, 2000, 1.0, 98.3, **wide),
        _timed(R8, 16, 1.0, 95.0, tile_m=128, tile_n=256, cluster=2),
        _timed(R8, 700, 1.0, 90.0, tile_m=128, tile_n=128),  # the pick (64x64) never timed
        _timed(R7, 16, 0.1, 300.0, tile_m=128, tile_n=256, cluster=2),  # another kernel
    )
    head, worst = current_choice([new, old], heuristic, HOPPER, R8.id)
    assert head.startswith("today's choice on NVIDIA H200")
    assert "12.5 % slower (mean, 2 of 3 problems" in head
    assert "M 1-64 0.0 % (1)" in head and "M 1025-4096 25.0 % (1)" in head
    assert (
        worst.split()
        == (
            "2000x4096x4096-fp16 +25.0 % 128x256 c2 (80.0 %) < 128x224 swap a_operand=regs (98.3 %)"
        ).split()
    )
    assert current_choice([new], heuristic, HOPPER, R7.id + "x") == []


def test_current_choice_asks_the_heuristic_once_a_problem_whichever_gpus_timed_it() -> None:
    """The model sees no GPU: a problem two GPUs timed is priced once, judged on each."""
    calls: list[Problem] = []

    def heuristic(problem: Problem, model: TileCostModel) -> GemmConfig:
        calls.append(problem)
        return _OwnConfig(128, 256, cluster=2)

    def run(gpu: str) -> Document:
        recs = (_timed(R8, 2000, 1.0, 90.0, tile_m=128, tile_n=256, cluster=2),)
        return Document("bench", {"gpu": gpu}, recs, "2026-12-05", source=gpu)

    lines = current_choice(
        [run("NVIDIA H200"), run("NVIDIA H100 80GB HBM3")], heuristic, HOPPER, R8.id
    )
    assert [line.split(" (")[0].split(":")[0] for line in lines if "today's choice" in line] == [
        "today's choice on NVIDIA H100 80GB HBM3",
        "today's choice on NVIDIA H200",
    ]
    assert len(calls) == 1


def test_current_choice_moves_todays_pick_by_the_gpus_rule_on_that_gpu_only() -> None:
    """A module's rule that reads the GPU (``ConfigSpace.on_gpu``) moves today's pick on the
    GPU it names: there the moved config is the one judged, elsewhere the heuristic's."""
    pick, four = _OwnConfig(128, 256, cluster=2), _OwnConfig(128, 256, cluster=1)

    def rule(problem: Problem, chosen: GemmConfig, gpu: str) -> tuple[GemmConfig, str] | None:
        return (four, "one CTA here") if "H100" in gpu else None

    def run(gpu: str) -> Document:
        recs = (
            _timed(R8, 2000, 1.0, 90.0, tile_m=128, tile_n=256, cluster=2),
            _timed(R8, 2000, 2.0, 45.0, tile_m=128, tile_n=256, cluster=1),
        )
        return Document("bench", {"gpu": gpu}, recs, "2026-12-05", source=gpu)

    runs = [run("NVIDIA H200"), run("NVIDIA H100 80GB HBM3")]
    lines = current_choice(runs, lambda p, m: pick, HOPPER, R8.id, on_gpu=rule)
    heads = {line.split(" (")[0]: line for line in lines if "today's choice" in line}
    assert "100.0 % slower" in heads["today's choice on NVIDIA H100 80GB HBM3"]
    assert "0.0 % slower" in heads["today's choice on NVIDIA H200"]
    plain = current_choice(runs, lambda p, m: pick, HOPPER, R8.id)
    assert all("0.0 % slower" in line for line in plain if "today's choice" in line)


def test_held_out_m_shares_are_what_held_out_suites_hold() -> None:
    """The bands' shares sum to 1; M 1-64 holds fewer than the log-uniform law's 43 % (small-M
    shapes are redrawn more often) but the most of any band; a held-out seed's suite of 1024
    shapes lands within a few standard errors of each share (64 shapes at a time, as drawn)."""
    shares = [held_out_m_share(lo, hi) for lo, hi in M_BANDS]
    assert sum(shares) == pytest.approx(1.0)
    assert 0.30 < shares[0] < math.log(65) / math.log(16385)
    assert all(0.12 < s < 0.20 for s in shares[1:])
    ms = [m for seed in range(77, 93) for m, _, _ in random_shapes(seed)]
    for (lo, hi), share in zip(M_BANDS, shares, strict=True):
        seen = sum(lo <= m and (hi is None or m <= hi) for m in ms) / len(ms)
        assert abs(seen - share) < 4 * math.sqrt(share * (1 - share) / len(ms))
    assert held_out_m_share(10**6) == 0.0


def test_the_ceiling_weighs_its_bands_as_a_held_out_suite_draws_m() -> None:
    """With every band timed the line ends with the band geomeans weighed by the held-out
    shares (a band short of 1.00 costs the suite its share of it); with a band missing it
    says nothing of the held-out suite."""
    pcts = {16: 104.0, 100: 94.0, 300: 94.0, 2000: 97.0, 8000: 99.5}
    (line,) = ceiling([_doc(*(_rec(R8, m, p) for m, p in pcts.items()))])
    logs = [
        held_out_m_share(lo, hi) * math.log(p / 100) for (lo, hi), p in zip(M_BANDS, pcts.values())
    ]
    want = math.exp(sum(logs))
    assert f"; weighed as a held-out suite draws M: {want:.3f}, " in line
    assert 0.98 < want < 0.99  # the mid bands' 6 % gap costs the suite about 1.5 points
    assert line.endswith(", 0.0 of its 64 shapes below 0.90")  # every band's best >= 0.94
    # one band's only shape below 0.90: a suite draws that band's share of its 64 below
    (low,) = ceiling([_doc(*(_rec(R8, m, 85.0 if m == 300 else p) for m, p in pcts.items()))])
    assert low.endswith(f", {64 * held_out_m_share(257, 1024):.1f} of its 64 shapes below 0.90")
    (partial,) = ceiling([_doc(_rec(R8, 16, 104.0), _rec(R8, 300, 94.0))])
    assert "held-out" not in partial


def test_a_held_out_suite_weighed_by_band_reads_as_an_average_draw() -> None:
    """A draw heavy in one band (here ten shapes at M <= 64, one in each band above) reads
    as the held-out shares weigh the bands, not as its shapes do; a band untimed: None."""
    values = [(Problem(8 + i, 4096, 4096), 1.06) for i in range(10)]
    values += [(Problem(m, 4096, 4096), 0.97) for m in (100, 300, 2000, 8000)]
    want = math.exp(
        held_out_m_share(1, 64) * math.log(1.06)
        + sum(held_out_m_share(lo, hi) for lo, hi in M_BANDS[1:]) * math.log(0.97)
    )
    plain = math.exp(sum(math.log(v) for _, v in values) / len(values))
    got = held_out_weighted(values)
    assert got == pytest.approx(want) and got < plain - 0.01
    assert held_out_weighted(values[:-1]) is None  # nothing above M = 4096


def test_fit_cost_set_names_the_constant_it_cannot_take() -> None:
    """``fit-cost --set``: a tile's own efficiency is declared (so ``--only 'ueff:*'`` fits
    it); a malformed pair, a tile name that is no tile or an unknown scalar is a one-line
    error naming it."""
    from harness.cli import _with_set

    model = _with_set(HOPPER, ["ueff:64x192=0.69", "launch_s=4e-6"])
    assert model.unswapped_efficiency[(64, 192)] == 0.69 and model.launch_s == 4e-6
    for bad, message in (
        ("ueff:64x192", "give NAME=NUMBER"),
        ("ueff:64x192=high", "give NAME=NUMBER"),
        ("ueff:wide=0.7", "ueff:ROWSxCOLS"),
        ("launch=1e-6", "no such cost-model constant"),
    ):
        with pytest.raises(ValueError, match=message):
            _with_set(HOPPER, [bad])
