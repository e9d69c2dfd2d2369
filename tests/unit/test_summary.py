"""The table ``bench`` prints when it ends, and the device line it starts with.

Records are built by hand so every number can be checked against a hand computation: a kernel's
% of cuBLAS is cuBLAS's median over its own, and its spread is that % at its p80 and p20 times.
"""

from __future__ import annotations

import pytest

from harness.gemm import Problem
from harness.records import BenchRecord, Stats, Status
from harness.summary import device_line, run_summary, text_table

P = Problem(4096, 4096, 4096)
Q = Problem(1, 4096, 4096)


def _rec(kernel: str, p: Problem, ms: float | None, pct: float | None = None, **kw) -> BenchRecord:
    backend, _, name = kernel.partition("/")
    timing = None
    if ms is not None:
        timing = Stats(n=9, median_ms=ms, p20_ms=ms * 0.98, p80_ms=ms * 1.04, mean_ms=ms,
                       min_ms=ms * 0.97, cv=0.02)  # fmt: skip
    return BenchRecord(
        kernel=kernel,
        backend=backend,
        name=name,
        rung=0 if backend == "cublas" else 7,
        rung_name="cublas" if backend == "cublas" else "multi_consumer",
        arch="any" if backend == "cublas" else "sm_90a",
        problem=p,
        timing=timing,
        tflops=p.flops / (ms * 1e-3) / 1e12 if ms else None,
        pct_of_cublas=pct,
        status=kw.pop("status", Status.OK),
        **kw,
    )


def _row(text: str, start: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.strip().startswith(start))
    return line.split()


def test_summary_gives_each_kernel_its_percent_and_spread() -> None:
    recs = [
        _rec("cublas/torch_matmul", P, 0.20),
        _rec("alpha/sm90/r7", P, 0.25, pct=80.0),
        _rec("beta/sm90/r7", P, 0.19),  # no recorded %: from cuBLAS of the run
        _rec("beta/sm90/r1", P, None, status=Status.WRONG, reason="max|err| 3.2 > 0.1"),
        _rec("cublas/torch_matmul", Q, 0.002),
        _rec("alpha/sm90/r7", Q, 0.004, pct=50.0),
    ]
    text = run_summary(recs)
    assert text.splitlines()[1].split()[:3] == ["problem", "/", "kernel"]
    assert _row(text, "alpha/sm90/r7") == ["alpha/sm90/r7", "549.8", "80.0", "%", "76.9-81.6"]
    beta = 100 * 0.20 / 0.19
    spread = f"{beta / 1.04:.1f}-{beta / 0.98:.1f}"
    assert _row(text, "beta/sm90/r7")[2:5] == [f"{beta:.1f}", "%", spread]
    assert "wrong: max|err| 3.2 > 0.1" in text
    assert _row(text, "cuBLAS")[1:5] == [f"{P.flops / 0.2e-3 / 1e12:.1f}", "100", "%", "96.2-102.0"]
    # problems in run order, each with its own cuBLAS and kernels
    lines = text.splitlines()
    q = lines.index(next(x for x in lines if x.startswith("1x4096x4096-fp16")))
    assert _row("\n".join(lines[q:]), "alpha/sm90/r7")[2] == "50.0"


def test_a_tuned_kernel_shows_its_own_choice_and_the_fastest() -> None:
    recs = [
        _rec("cublas/torch_matmul", P, 0.20),
        _rec("alpha/sm90/r7", P, 0.21, config="group=8", selected=True),
        _rec("alpha/sm90/r7", P, 0.20, config="group=4", selected=False),
        _rec("alpha/sm90/r7", P, None, config="group=16", selected=False, status=Status.WRONG),
    ]
    text = run_summary(recs)
    row = next(x for x in text.splitlines() if "alpha" in x)
    assert f"{100 * 0.20 / 0.21:.1f} %" in row
    assert "[group=8] best of 2 configs: 100.0 % [group=4]" in row
    assert text.count("alpha/sm90/r7") == 1


def test_an_empty_run_and_a_cpu_device_say_so_without_none() -> None:
    assert run_summary([]) == "summary: no records"
    assert device_line({"device": "cpu", "sm_count": None, "l2_bytes": None}) == "device: cpu"
    gpu = {"gpu": "NVIDIA H200", "sm_count": 132, "l2_bytes": 60 * 2**20, "driver": "580.1"}
    assert device_line(gpu) == "device: NVIDIA H200  SMs 132  L2 60 MiB  driver 580.1"


def test_text_table_aligns_columns() -> None:
    out = text_table(["a", "bb"], [["xyz", "1"], ["q", "22"]], indent="  ")
    assert out.splitlines() == ["  a    bb", "  xyz   1", "  q    22"]
    with pytest.raises(ValueError):
        text_table(["a"], [["x", "y"]], "ll")
