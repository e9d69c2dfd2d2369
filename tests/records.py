"""Synthetic bench records for the report tests: a kernel of ``backend`` at ``rung`` (0: the
cuBLAS reference) timed at ``ms`` with a 1 % p20-p80 band, or untimed (``ms`` None)."""

from __future__ import annotations

from typing import Any

from harness.gemm import Problem
from harness.protocol import Rung
from harness.records import BenchRecord, Stats, Status


def bench_record(backend: str, rung: int, p: Problem, ms: float | None, **kw: Any) -> BenchRecord:
    name = "torch_matmul" if rung == 0 else f"r{rung}_{Rung(rung).label}"
    timing = None
    if ms is not None:
        timing = Stats(n=9, median_ms=ms, p20_ms=ms * 0.99, p80_ms=ms * 1.01, mean_ms=ms,
                       min_ms=ms * 0.98, cv=0.01)  # fmt: skip
    return BenchRecord(
        kernel=f"{backend}/{name}" if rung == 0 else f"{backend}/sm90/{name}",
        backend=backend,
        name=name,
        rung=rung,
        rung_name=Rung(rung).label,
        arch="any" if rung == 0 else "sm_90a",
        problem=p,
        timing=timing,
        tflops=p.flops / (ms * 1e-3) / 1e12 if ms else None,
        status=kw.pop("status", Status.OK),
        **kw,
    )
