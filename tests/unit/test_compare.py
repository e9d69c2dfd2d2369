"""``python -m reports compare A B`` and the summary ``python -m reports`` prints.

Two hand-made runs: cuBLAS unchanged, one kernel 10 % faster with bands well apart, one 0.5 %
slower inside its spread, one kernel only in A, one config that changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from expectations import require_module

from harness.gemm import Problem
from harness.protocol import Rung
from harness.records import BenchRecord, Stats, Status
from harness.results import ResultsWriter
from reports.cli import main
from reports.compare import compare, format_comparison
from reports.data import load_dataset

P = Problem(4096, 4096, 4096)
ROOT = Path(__file__).resolve().parents[2]


def _rec(kernel: str, rung: int, ms: float, spread: float = 0.01, **kw) -> BenchRecord:
    backend, _, name = kernel.partition("/")
    t = Stats(n=9, median_ms=ms, p20_ms=ms * (1 - spread), p80_ms=ms * (1 + spread),
              mean_ms=ms, min_ms=ms * 0.97, cv=spread)  # fmt: skip
    return BenchRecord(
        kernel=kernel,
        backend=backend,
        name=name,
        rung=rung,
        rung_name=Rung(rung).label,
        arch="any" if rung == 0 else "sm_90a",
        problem=P,
        timing=t,
        tflops=P.flops / (ms * 1e-3) / 1e12,
        status=Status.OK,
        **kw,
    )


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = ResultsWriter(tmp_path / "a.json", "bench", {"gpu": "x"})
    a.add(_rec("cublas/torch_matmul", 0, 0.200))
    a.add(_rec("fast/sm90/r7_multi_consumer", 7, 0.220))
    a.add(_rec("same/sm90/r7_multi_consumer", 7, 0.210, spread=0.02))
    a.add(_rec("gone/sm90/r7_multi_consumer", 7, 0.300))
    a.add(_rec("cfg/sm90/r7_multi_consumer", 7, 0.250, config="g=8", selected=True))
    a.finish()
    b = ResultsWriter(tmp_path / "b.json", "bench", {"gpu": "x"})
    b.add(_rec("cublas/torch_matmul", 0, 0.200))
    b.add(_rec("fast/sm90/r7_multi_consumer", 7, 0.200))
    b.add(_rec("same/sm90/r7_multi_consumer", 7, 0.211, spread=0.02))
    b.add(_rec("cfg/sm90/r7_multi_consumer", 7, 0.240, config="g=4", selected=True))
    b.add(_rec("cfg/sm90/r7_multi_consumer", 7, 0.100, config="g=2", selected=False))
    b.finish()
    return tmp_path / "a.json", tmp_path / "b.json"


def test_changes_and_whether_they_are_beyond_the_spread(runs) -> None:
    c = compare(load_dataset([runs[0]]), load_dataset([runs[1]]))
    by = {ch.kernel.split("/")[0]: ch for ch in c.changes}
    assert set(by) == {"cublas", "fast", "same", "cfg"}
    assert by["fast"].change == pytest.approx(10.0) and by["fast"].verdict == "faster"
    assert by["fast"].pct_a == pytest.approx(100 * 0.2 / 0.22) and by["fast"].pct_b == 100.0
    assert by["same"].change == pytest.approx(100 * (0.210 / 0.211 - 1))
    assert by["same"].verdict == "within spread"
    assert by["cublas"].verdict == "within spread"
    # the kernel's own choice is compared (g=4), not the faster config it did not pick
    assert (by["cfg"].a.config, by["cfg"].b.config) == ("g=8", "g=4")
    assert by["cfg"].verdict == "faster"
    assert [k for k, _ in c.only_a] == ["gone/sm90/r7_multi_consumer"] and not c.only_b
    text = format_comparison(c, "a.json", "b.json")
    row = next(line for line in text.splitlines() if "fast/sm90" in line).split()
    assert row[-6:] == ["+10.0", "%", "faster", "90.9", "->", "100.0"]
    assert "g=8 -> g=4" in text
    assert text.splitlines()[-1] == (
        "4 (kernel, problem) timed in both: 2 faster and 0 slower beyond the spread (p20-p80 "
        "bands apart), 2 within it; 1 only in A, 0 only in B."
    )
    changed = format_comparison(c, "a", "b", changed_only=True)
    assert "same/sm90" not in changed and "fast/sm90" in changed and "(not listed)" in changed


def test_compare_cli_and_its_errors(runs, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs[0]), str(runs[1]), "--changed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A: {runs[0]}\nB: {runs[1]}\n") and "faster" in out
    with pytest.raises(SystemExit) as usage:  # argparse's usage error, made one line
        main(["compare", str(runs[0])])
    assert usage.value.code == 2
    assert main(["compare", str(runs[0]), str(runs[0].parent / "nope.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("python -m reports") for line in err)
    assert "required: b" in err[0] and "nope.json" in err[1]


def test_rendering_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_module("matplotlib", "the report renders figures")
    assert main([str(ROOT / "tests" / "fixtures"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Final kernel of each DSL vs cuBLAS:\n")
    assert "  4096x4096x4096-fp16" in out and "723 (105.3 %," in out  # the headline run
    assert "Speedup chains at 4096x4096x4096-fp16:" in out and "x10.5" in out
    assert f"the report: {tmp_path / 'report.md'}" in out
