"""What a bench run prints when it ends: per problem, cuBLAS and each kernel, % and spread.

Pure functions of the run's records (no I/O, no torch): :func:`run_summary` is the table
``python -m harness bench`` prints after its last record, :func:`device_line` the line naming
the device it runs on, and :func:`text_table` the aligned plain-text table both this and
``python -m reports`` print.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.records import BenchRecord, Status

__all__ = ["device_line", "pct_band", "run_summary", "text_table"]


def text_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "", indent: str = ""
) -> str:
    """Columns padded to their widest cell, two spaces apart. ``align`` has an ``l`` or ``r``
    per column (default: the first left, the rest right: they hold numbers)."""
    table = [list(header), *(list(r) for r in rows)]
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for r in table:
        cells = [
            c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align, strict=True)
        ]
        lines.append(indent + "  ".join(cells).rstrip())
    return "\n".join(lines)


def pct_band(rec: BenchRecord, ref: BenchRecord | None = None) -> tuple[float, float, float] | None:
    """(low, median, high) % of cuBLAS of a timed record: the same-run % (``pct_of_cublas``, or
    ``ref``'s median over the record's) at the record's p80, median and p20 times."""
    t = rec.timing
    if not rec.timed or t is None or t.median_ms <= 0:
        return None
    pct = rec.pct_of_cublas
    if pct is None and ref is not None and ref.timed and ref.median_ms:
        pct = 100.0 * ref.median_ms / t.median_ms
    if pct is None:
        return None
    lo = pct * t.median_ms / t.p80_ms if t.p80_ms > 0 else pct
    hi = pct * t.median_ms / t.p20_ms if t.p20_ms > 0 else pct
    return lo, pct, hi


def _own(recs: list[BenchRecord]) -> BenchRecord:
    """The record of what the kernel runs by itself: its selected config (or no config space),
    else the fastest timed config, else the first."""
    own = [r for r in recs if r.selected is True or r.config is None]
    timed = sorted((r for r in recs if r.timed), key=lambda r: r.median_ms or 0.0)
    return (own or timed or recs)[0]


def _cell(rec: BenchRecord, ref: BenchRecord | None, configs: list[BenchRecord]) -> list[str]:
    """[TFLOPS, % of cuBLAS, p20-p80 %, note] of one kernel at one problem."""
    band = pct_band(rec, ref)
    if not rec.timed:
        what = "correct, not timed" if rec.status == Status.OK else rec.status.value
        reason = " ".join((rec.reason or "").split())
        return ["-", "-", "-", what + (f": {reason[:70]}" if reason else "")]
    note = f"[{rec.config}]" if rec.config else ""
    timed = [r for r in configs if r.timed]
    if len(timed) > 1:
        best = min(timed, key=lambda r: r.median_ms or 0.0)
        fb = pct_band(best, ref)
        note += f" best of {len(timed)} configs: " + (
            "this one" if best is rec else f"{fb[1]:.1f} % [{best.config}]" if fb else "?"
        )
    pct = f"{band[1]:.1f} %" if band else "-"
    spread = f"{band[0]:.1f}-{band[2]:.1f}" if band else "-"
    return [f"{rec.tflops:.1f}" if rec.tflops else "-", pct, spread, note.strip()]


def run_summary(records: Iterable[BenchRecord]) -> str:
    """Per problem (in run order): cuBLAS's TFLOPS and each kernel's TFLOPS, % of cuBLAS in this
    run and its spread (the % at the kernel's p80 and p20 times), or its status and reason.

    A kernel timed with several configs (``--tune``) shows its own choice and the fastest."""
    by_problem: dict[Any, dict[str, list[BenchRecord]]] = {}
    for r in records:
        by_problem.setdefault(r.problem, {}).setdefault(r.kernel, []).append(r)
    if not by_problem:
        return "summary: no records"
    rows: list[list[str]] = []
    any_ref = False
    for problem, kernels in by_problem.items():
        refs = [r for recs in kernels.values() for r in recs if r.rung == 0 and r.timed]
        ref = refs[0] if refs else None
        rows.append([problem.key, "", "", "", ""])
        if ref is not None:
            any_ref = True
            t = ref.timing
            assert t is not None
            spread = f"{100 * t.median_ms / t.p80_ms:.1f}-{100 * t.median_ms / t.p20_ms:.1f}"
            rows.append(["  cuBLAS", f"{ref.tflops or 0:.1f}", "100 %", spread, ref.kernel])
        for kernel, recs in kernels.items():
            if recs[0].rung == 0 and ref is not None:
                continue
            rows.append([f"  {kernel}", *_cell(_own(recs), ref, recs)])
    head = (
        "summary (% of cuBLAS timed in this run; spread: the % at p20-p80 time):"
        if any_ref
        else "summary (no cuBLAS in this run, so no % of cuBLAS):"
    )
    table = text_table(
        ["problem / kernel", "TFLOPS", "% cuBLAS", "p20-p80 %", "config / status"], rows, "lrrrl"
    )
    return f"{head}\n{table}"


def device_line(env: Mapping[str, Any]) -> str:
    """``device: NAME  SMs N  L2 X MiB  driver V`` with only the fields the run knows (a CPU
    run knows none of them)."""
    parts = [f"device: {env.get('gpu') or env.get('device') or '?'}"]
    if env.get("sm_count"):
        parts.append(f"SMs {env['sm_count']}")
    if env.get("l2_bytes"):
        parts.append(f"L2 {env['l2_bytes'] / 2**20:.0f} MiB")
    if env.get("driver"):
        parts.append(f"driver {env['driver']}")
    return "  ".join(parts)
