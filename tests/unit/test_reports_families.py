"""``python -m reports families``: a kernel's own choices pooled over runs by config family,
the costliest family first, its points summing to the pooled geomean's shortfall; forced
configs, failed records and configs of another vocabulary stay out; filters by kernel, dtype
and M; an unknown kernel is one line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.gemm import Problem
from harness.records import BenchRecord, Status
from harness.results import ResultsWriter, load
from reports.cli import main
from reports.families import format_families, pooled_families

OURS = dict(kernel="alpha/sm90/r8", backend="alpha", name="sm90/r8", rung=8)
OTHER = dict(kernel="beta/sm90/r8", backend="beta", name="sm90/r8", rung=8)


def _values(tm: int, tn: int, cluster: int = 1, swap: bool = False, sk: bool = False) -> dict:
    return dict(
        tile_m=tm, tile_n=tn, cluster=cluster, swap_ab=swap, split_k=1, stream_k=sk, raster="m"
    )


def _rec(p: Problem, pct: float, values: dict | None, ident: dict = OURS, **kw) -> BenchRecord:
    kw.setdefault("selected", True)
    kw.setdefault("status", Status.OK)
    return BenchRecord(
        **ident,
        rung_name="x",
        arch="sm_90a",
        problem=p,
        config="c",
        config_values=values,
        pct_of_cublas=pct,
        **kw,
    )


def _doc(path: Path, records: list[BenchRecord]):
    w = ResultsWriter(path, "bench", {"gpu": "NVIDIA H100 80GB HBM3"})
    w.add_many(records)
    return load(path)


def _docs(tmp_path: Path):
    big, mid, small = Problem(2000, 4096, 14336), Problem(700, 4096, 4096), Problem(8, 4096, 4096)
    a = _doc(
        tmp_path / "a.json",
        [
            _rec(big, 90.0, _values(128, 160, 2)),  # unswapped pair
            _rec(big, 120.0, _values(128, 256, 2), selected=False),  # forced: not the own choice
            _rec(mid, 96.0, _values(128, 192)),  # unswapped, one CTA
            _rec(small, 104.0, _values(64, 16, swap=True)),  # narrow swapped cover
            _rec(small, 50.0, _values(64, 16, swap=True), ident=OTHER),
        ],
    )
    b = _doc(
        tmp_path / "b.json",
        [
            _rec(big, 81.0, _values(128, 160, 2)),  # the same shape again: counted as it ran
            _rec(mid, 100.0, _values(128, 192), status=Status.WRONG),  # wrong: out
            _rec(small, 110.0, None),  # no config of the shared vocabulary: out
            _rec(Problem(8, 4096, 4096, "bf16"), 70.0, _values(64, 16, swap=True)),
        ],
    )
    return [a, b]


def test_families_pool_the_own_choices_costliest_first(tmp_path: Path) -> None:
    pooled = pooled_families(_docs(tmp_path), ["alpha/sm90/r8"], dtype="fp16")
    assert (pooled.runs, pooled.records) == (2, 4)
    fams = {st.family: st for st in pooled.families}
    assert set(fams) == {"unswapped, clusters of 2", "unswapped", "narrow swapped cover"}
    pair = fams["unswapped, clusters of 2"]
    assert pair.shapes == 2 and pair.below == 1
    assert pair.geomean == pytest.approx(100 * math.sqrt(0.90 * 0.81))
    assert pooled.families[0] is pair  # the costliest first
    assert fams["narrow swapped cover"].points > 0
    # the pooled geomean, from the families' points, is the four records' own
    assert pooled.geomean == pytest.approx(100 * (0.90 * 0.81 * 0.96 * 1.04) ** 0.25)
    text = format_families(pooled)
    assert text.splitlines()[0].startswith("4 own choices from 2 run(s)")
    assert "unswapped, clusters of 2" in text.splitlines()[2]


def test_families_filter_by_kernel_dtype_and_m(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    assert pooled_families(docs, dtype="bf16").records == 1
    assert pooled_families(docs, ["beta/sm90/r8"]).records == 1
    long_m = pooled_families(docs, ["alpha/sm90/r8"], "fp16", m=(513, None))
    assert {st.family for st in long_m.families} == {"unswapped, clusters of 2", "unswapped"}
    assert pooled_families(docs, m=(1, 8)).records == 3  # alpha fp16, beta, alpha bf16
    assert "no own choice" in format_families(pooled_families(docs, m=(9, 9)))


def test_families_cli_names_an_unknown_kernel_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _docs(tmp_path)
    assert main(["families", str(tmp_path / "a.json"), "--kernel", "alpha/sm90/r8"]) == 0
    assert "own choices from 1 run(s)" in capsys.readouterr().out
    assert main(["families", str(tmp_path / "a.json"), "--kernel", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--kernel nope" in err and "alpha/sm90/r8" in err
