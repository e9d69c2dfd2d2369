"""``report.md`` and the files it links: a summary first, then a table of contents, each
figure with the numbers behind it, and the long tables and the environment at the end or in
files of their own.

``report.md``: the summary (:mod:`reports.summary`), contents, every figure of
:data:`reports.figures.FIGURES` with its table, codegen, what was not timed, and the runs.
Linked files: ``sweep.md`` (every shape of every sweep panel), ``tuning.md`` (every config timed),
``records.md`` (every timed record) and ``environment.md`` (every run's environment). Pure
functions of the :class:`~reports.data.Dataset`; nothing here reads or writes files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.fitcost import ceiling
from harness.gemm import Problem
from harness.launched import cublas_tile, main_kernel, short_name
from harness.protocol import Rung
from harness.records import BenchRecord, CodegenRecord
from harness.tune import tuning_docs
from reports.data import (
    BAR_FLOOR_PCT,
    SWEEP_RUNGS,
    Dataset,
    backend_order,
    chain_table,
    family_stats,
    has_chain,
    hold_text,
    problem_order,
    run_trees,
    same_config_classes,
    suites_of,
    sweep_panels,
)
from reports.figures import FIGURES
from reports.summary import markdown_table, summary_tables

__all__ = [
    "LINKED",
    "anchor",
    "ceiling_lines",
    "chain_lines",
    "codegen_lines",
    "cross_table",
    "environment_lines",
    "failure_lines",
    "records_lines",
    "report_files",
    "runs_lines",
    "same_config_lines",
    "sweep_lines",
    "sweep_stats_lines",
    "tuning_lines",
]

#: The files report.md links to, with what they hold.
LINKED = {
    "sweep.md": (
        "every shape of every shape-sweep panel: cuBLAS, rung 7 and rung 8, configs; two "
        "DSLs' rung 8 by same config or not"
    ),
    "tuning.md": (
        "rung 8's ceiling per DSL (the fastest config the tuning runs timed); every config "
        "timed for every (kernel, problem) with more than one"
    ),
    "records.md": "every timed record: time, spread, TFLOPS, TFLOPS/GHz, clocks, power, error",
    "environment.md": "every run's environment: GPU, clocks, power limit, driver, versions, git",
}


def _shape(p: Problem) -> str:
    return f"{p.m}x{p.n}x{p.k}"


def _cfg(rec: BenchRecord | CodegenRecord | None) -> str:
    return f"`{rec.config}`" if rec is not None and rec.config else "-"


def _why(rec: BenchRecord | None) -> str:
    """Why the kernel chose the config that ran (``BenchRecord.selection``), or "-"."""
    return rec.selection if rec is not None and rec.selection else "-"


def _reference(ds: Dataset, p: Problem, picks: Iterable[BenchRecord | None]) -> BenchRecord | None:
    like = next((r for r in picks if r is not None and r.timed), None)
    return ds.cublas(p, like)


def anchor(title: str) -> str:
    """The anchor a markdown renderer (GitHub's) gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _fmt(v: Any, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _md_table(header: str | list[str], rows: Iterable[list[str]]) -> list[str]:
    """A markdown table; ``header`` is a list or one string of ``" | "``-separated names."""
    if isinstance(header, str):
        header = header.split(" | ")
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _run_names(ds: Dataset) -> dict[int, str]:
    """id(document) -> "run N" (bench documents, numbered oldest first from 1)."""
    return {id(d): f"run {i}" for i, d in enumerate(ds.runs, 1)}


def _git(env: dict[str, Any], width: int | None = None) -> str:
    """The commit a run measured, shortened to ``width``: every piece's, in order, where a
    merge joined pieces of other code (``harness merge --allow-mixed``; the document's own
    ``git_sha`` is its first piece's)."""
    return " + ".join(f"`{sha[:width]}`" for sha in run_trees(env))


def environment_lines(ds: Dataset) -> list[str]:
    """One bullet per run: device, driver and CUDA, power and clocks, versions, timer."""
    lines = []
    for i, doc in enumerate(ds.runs, 1):
        env = doc.environment
        l2 = env.get("l2_bytes")
        t = env.get("timer") or {}
        pk = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
        dirty = {True: " (uncommitted changes)", False: ""}.get(env.get("git_dirty"), "")
        kind = _run_kind(doc)
        kind = "run" if kind == "bench" else f"{kind} run"
        lines += [
            f"- **run {i}** `{Path(doc.source or '?').name}` ({kind}, created {doc.created}):",
            f"  {env.get('gpu', env.get('device', '?'))}, {env.get('sm_count', '?')} SMs, L2 "
            + (f"{l2 / 2**20:.0f} MiB" if l2 else "?")
            + f"; driver {env.get('driver', '?')}, CUDA {env.get('torch_cuda', '?')}; power limit "
            f"{_fmt(env.get('power_limit_w'), '.0f')} W; max clocks SM "
            f"{env.get('max_sm_clock_mhz', '?')} MHz, memory {env.get('max_mem_clock_mhz', '?')} "
            f"MHz; git {_git(env)}{dirty}",
            f"  packages: {pk or '?'}",
            f"  timer: warm-up {t.get('warmup_s', '?')} s; >= {t.get('min_samples', '?')} "
            f"samples and >= {t.get('min_time_s', '?')} s per round (at most "
            f"{t.get('max_samples', '?')}); {t.get('rounds', '?')} round-robin rounds; inputs "
            f"rotated over >= {t.get('rotate_factor', '?')}x L2"
            + (f"; {hold_text(t)}" if t else ""),
        ]
    for doc in ds.documents:
        if doc.kind == "codegen":
            env = doc.environment
            pk = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
            lines.append(
                f"- codegen `{Path(doc.source or '?').name}` (created {doc.created}): "
                f"{pk or '?'}; git `{env.get('git_sha') or '?'}`"
            )
    return lines


def _check_only(doc: Any) -> bool:
    return bool(doc.bench) and all(r.timing is None for r in doc.bench)


def _run_kind(doc: Any) -> str:
    """The kind of run: tune, check-only (profiled: made with ``--launched``) or bench."""
    if (doc.environment.get("run") or {}).get("tune"):
        return "tune"
    if not _check_only(doc):
        return "bench"
    return "check-only, profiled" if any(r.launched for r in doc.bench) else "check-only"


def _pick_cell(ds: Dataset, rec: BenchRecord | None, fallback: bool) -> str:
    if rec is None:
        return "-"
    if not rec.timed:
        return "correct, not timed" if rec.status.value == "ok" else rec.status.value
    mark = " †" if fallback else ""
    return f"{_fmt(rec.tflops)} ({_fmt(ds.pct_of_cublas(rec), '.1f')}%){mark}"


def cross_table(ds: Dataset) -> list[str]:
    """Problem x final kernel: TFLOPS and % of cuBLAS, with the config that ran."""
    finals = ds.final_kernels()
    if not finals:
        return ["No DSL kernel of rungs 1-7 timed in these results."]
    picks = {p: [ds.pick(k, p) for k in finals.values()] for p in ds.problems()}
    problems = [
        p for p, recs in picks.items() if any(r and (r.timed or r.status.failed) for r in recs)
    ]
    configured = {
        k
        for j, k in enumerate(finals.values())
        if any(picks[p][j] and picks[p][j].config for p in problems)
    }
    header = ["problem", "suites", "cuBLAS TFLOPS"]
    for k in finals.values():
        header.append(f"{k} TFLOPS (% cuBLAS)")
        if k in configured:
            header.append(f"{k} config")
    rows, any_fallback = [], False
    for p in problems:
        ref = _reference(ds, p, picks[p])
        row = [p.key, ", ".join(suites_of(p)) or "-", _fmt(ref.tflops if ref else None)]
        for j, k in enumerate(finals.values()):
            rec = picks[p][j]
            fb = ds.picked_fastest(k, p)
            any_fallback |= fb
            row.append(_pick_cell(ds, rec, fb))
            if k in configured:
                row.append(_cfg(rec))
        rows.append(row)
    out = _md_table(header, rows)
    if any_fallback:
        out += [
            "",
            "† no record of the kernel's own config choice for this problem (a tune run only): "
            "the fastest config measured is shown instead.",
        ]
    return out


def chain_lines(ds: Dataset, problem: Problem | None) -> list[str]:
    """Per backend, every rung at the chain problem: kernel, config, status, time, steps."""
    table = chain_table(ds, problem) if problem is not None else {}
    if problem is None or not has_chain(table):
        return ["No DSL has two rungs timed at one problem: no chain to show."]
    md: list[str] = []
    for backend, rows in table.items():
        md += [f"**{backend}** at {problem.key}:", ""]
        md += _md_table(
            "rung | kernel | config | status | median ms | p20-p80 ms | TFLOPS | step | total",
            [
                [
                    f"{c.rung} {c.name}",
                    c.kernel or "-",
                    (f"`{c.config}`" if c.config else "-")
                    + (" †" if c.fastest_fallback else "")
                    + (" ‡" if c.other_run else ""),
                    c.status,
                    _fmt(c.median_ms, ".4f"),
                    f"{c.p20_ms:.4f}-{c.p80_ms:.4f}" if c.p20_ms and c.p80_ms else "-",
                    _fmt(c.tflops),
                    _fmt(c.step, ".2f"),
                    _fmt(c.total, ".1f"),
                ]
                for c in rows
            ],
        )
        md += [""]
    md += [
        "Every rung of a backend's chain comes from one run (the run that timed the most of its "
        "rungs), so each step compares kernels timed side by side; ‡ marks a rung that run "
        "lacked, taken from another run.",
        "",
    ]
    return md


def ceiling_lines(ds: Dataset) -> list[str]:
    """Rung 8's ceiling per DSL and GPU: ``python -m harness fit-cost``'s line
    (:func:`harness.fitcost.ceiling`) over the tuning data among the loaded runs (held-out runs
    and evaluated shapes left out, as every fit leaves them out)."""
    try:
        docs = tuning_docs(ds.documents, lambda _: None)
    except ValueError:  # every loaded run is an evaluation
        return []
    rung8 = {r.backend for d in docs for r in d.bench if r.rung == Rung.SHAPE_ADAPTIVE}
    lines = [
        f"- **{b}**: {line}"
        for b in sorted(rung8, key=backend_order)
        for line in ceiling(docs, [b])
    ]
    if not lines:
        return []
    return [
        "## Rung 8's ceiling",
        "",
        "Per tuning problem, the fastest rung-8 config any tuning run timed against cuBLAS in "
        "that run, as a geomean per M band (problems below 0.90 counted), and the bands weighed "
        "as a held-out suite draws M: what a perfect choice among the timed configs would reach "
        "on the suite rung 8's bar is read on. Short of 1.00 is the kernels' gap, not the "
        "selection's (`python -m harness fit-cost`; docs/design.md).",
        "",
        *lines,
        "",
    ]


def tuning_lines(ds: Dataset) -> list[str]:
    """Every timed config of every (kernel, problem) that has more than one."""
    groups = ds.config_groups()
    if not groups:
        return ["No kernel has more than one timed config for a problem yet."]
    names = _run_names(ds)
    md: list[str] = []
    for kernel, problem, recs in groups:
        md += [f"**{kernel}** at {problem.key}:", ""]
        rows = []
        for i, r in enumerate(recs):
            marks = (["fastest"] if i == 0 else []) + (["selected"] if r.selected else [])
            t = r.timing
            rows.append(
                [
                    _cfg(r),
                    _fmt(r.median_ms, ".4f"),
                    f"{t.p20_ms:.4f}-{t.p80_ms:.4f}" if t else "-",
                    _fmt(ds.pct_of_cublas(r), ".1f"),
                    _fmt(r.tflops_per_ghz),
                    ", ".join(marks) or "-",
                    names.get(id(ds.run_of(r)), "?"),
                ]
            )
        md += _md_table(
            "config | median ms | p20-p80 ms | % of cuBLAS (same run) | TFLOPS/GHz | mark | run",
            rows,
        )
        md += [""]
    return md


def watts_cell(telemetry: Any) -> str:
    """The mean power of a record's samples; ``*`` marks instantaneous readings (the others
    are NVML's one-second means, which lag a short timing window)."""
    if telemetry is None or telemetry.power_w_mean is None:
        return _fmt(None)
    mark = "*" if telemetry.power_source == "instant" else ""
    return _fmt(telemetry.power_w_mean, ".0f") + mark


def records_lines(ds: Dataset) -> list[str]:
    names = _run_names(ds)
    recs = sorted(
        ds.timed(),
        key=lambda r: (
            problem_order(r.problem),
            backend_order(r.backend),
            r.rung,
            r.kernel,
            r.config or "",
        ),
    )
    return _md_table(
        "kernel | config | sel. | problem | median ms | p20-p80 ms | cv | TFLOPS | TFLOPS/GHz | "
        "% cuBLAS | SM MHz | W | max err | run",
        [
            [
                r.kernel,
                _cfg(r),
                {True: "yes", False: "no"}.get(r.selected, "-"),  # type: ignore[arg-type]
                r.problem.key,
                f"{r.timing.median_ms:.4f}",
                f"{r.timing.p20_ms:.4f}-{r.timing.p80_ms:.4f}",
                f"{r.timing.cv:.3f}",
                _fmt(r.tflops),
                _fmt(r.tflops_per_ghz),
                _fmt(ds.pct_of_cublas(r)),
                _fmt(r.telemetry.sm_clock_mhz_mean if r.telemetry else None, ".0f"),
                watts_cell(r.telemetry),
                _fmt(r.check.max_abs_err if r.check else None, ".3g"),
                names.get(id(ds.run_of(r)), "?"),
            ]
            for r in recs
            if r.timing is not None
        ],
    )


def failure_lines(ds: Dataset) -> list[str]:
    """Failures (wrong, error, timeout), one row each with its reason; then declared
    limitations, one row per (kernel, reason) with the problems it covers."""
    names = _run_names(ds)
    order = lambda r: (backend_order(r.backend), r.rung, r.kernel, problem_order(r.problem))  # noqa: E731
    failed = sorted((r for r in ds.bench if r.status.failed), key=order)
    unsupported = sorted((r for r in ds.bench if r.status.value == "unsupported"), key=order)
    checked = [r for r in ds.bench if r.status.value == "ok" and r.timing is None]
    md = [f"{len(failed)} failed (wrong result, error, timeout), {len(unsupported)} unsupported."]
    if failed:
        md += [""]
        md += _md_table(
            "kernel | config | problem | status | reason | run",
            [
                [
                    r.kernel,
                    _cfg(r),
                    r.problem.key,
                    r.status.value,
                    _cell(r.reason)[:200],
                    names.get(id(ds.run_of(r)), "?"),
                ]
                for r in failed
            ],
        )
    if unsupported:
        groups: dict[tuple[str, str], list[BenchRecord]] = {}
        for r in unsupported:
            groups.setdefault((r.kernel, _cell(r.reason)[:200]), []).append(r)
        md += ["", "Declared unsupported (the kernel's `supports()` says why):", ""]
        md += _md_table(
            "kernel | reason | problems",
            [
                [kernel, reason, ", ".join(r.problem.key for r in recs)]
                for (kernel, reason), recs in groups.items()
            ],
        )
    if checked:
        kernels = {r.kernel for r in checked}
        md += [
            "",
            f"Checked for correctness without timing (all correct): {len(checked)} records of "
            f"{len(kernels)} kernels on {len({r.problem for r in checked})} problems.",
        ]
    return md


def codegen_lines(ds: Dataset) -> list[str]:
    if not ds.codegen:
        return ["No codegen results (run `python -m harness codegen`)."]
    recs = sorted(ds.codegen, key=lambda r: (backend_order(r.backend), r.arch, r.rung, r.kernel))
    return _md_table(
        "kernel | config | arch | status | registers | spills (B) | smem (B) | compile s | lines | "
        "PTX features | via raw PTX | notes",
        [
            [
                r.kernel,
                _cfg(r),
                r.arch,
                r.status.value
                if r.status.value == "ok"
                else f"{r.status.value}: {_cell(r.reason)[:60]}",
                _fmt(r.registers, "d"),
                _fmt(r.spill_bytes, "d"),
                _fmt(r.shared_bytes, "d"),
                _fmt(r.compile_seconds, ".2f"),
                _fmt(r.lines_of_code, "d"),
                ", ".join(r.features) or "-",
                ", ".join(r.raw_ptx) or "-",
                _cell("; ".join(r.notes)) or "-",
            ]
            for r in recs
        ],
    )


def _sweep_cell(ds: Dataset, rec: BenchRecord | None, pct: float | None) -> str:
    if rec is None:
        return "-"
    if pct is None:
        return "correct, not timed" if rec.status.value == "ok" else rec.status.value
    return f"{pct:.1f}" + (" †" if ds.picked_fastest(rec.kernel, rec.problem) else "")


def _panel_heading(panel: Any) -> str:
    kernels = ", ".join(f"`{k}`" for k in panel.kernels.values())
    where = "`sweep`" if panel.suite == "sweep" else f"held out, `{panel.suite}`"
    return f"**{panel.backend}** ({where}, {panel.dtype}; {kernels}):"


def _panel_stats(panel: Any) -> list[str]:
    """Each sweep rung's geomean, worst shape and shapes below the bar's floor, and where rung 8
    fell below rung 7."""
    md = []
    for g in panel.kernels:
        st = panel.stats.get(g)
        if st is None:
            md.append(f"- r{g} {Rung(g).label}: no shape timed")
            continue
        md.append(
            f"- r{g} {st.name}: geomean {st.geomean:.1f} % of cuBLAS, worst {st.worst:.1f} % "
            f"at {_shape(st.worst_problem)}, {st.below} below {BAR_FLOOR_PCT:.0f} % "
            f"({st.shapes} of {panel.size} shapes timed; "
            f"timer {' + '.join(st.timers) or '?'})"
        )
    r7, r8 = SWEEP_RUNGS
    families = family_stats(panel) if r8 in panel.stats else []
    if families:
        md.append(
            f"- r{r8} by config family, the costliest first: "
            + "; ".join(
                f"{st.family} {st.geomean:.1f} % ({st.shapes} shape{'s' * (st.shapes != 1)}, "
                f"{st.below} below {BAR_FLOOR_PCT:.0f} %, {st.points:+.2f} points)"
                for st in families
            )
        )
    both = [r for r in panel.rows if r.pct.get(r7) is not None and r.pct.get(r8) is not None]
    if both:
        below = [r for r in both if r.pct[r8] < r.pct[r7]]
        md.append(
            f"- r{r8} below r{r7} at {len(below)} of the {len(both)} shapes timed with both"
            + (": " if below else "")
            + ", ".join(f"{_shape(r.problem)} ({r.pct[r8]:.1f} vs {r.pct[r7]:.1f})" for r in below)
        )
    return md


_SWEEP_NOTE = (
    "Each % is the kernel's own config choice against cuBLAS timed in the same run; the "
    "geomean is the geometric mean of those ratios over the shapes timed. Shapes run from "
    'decode (M = 1) to prefill, ordered by M, then N, then K. "why" is the kernel\'s own '
    "reason for its choice, recorded with the result: its tuned table, or its heuristic's "
    "cost-model estimate (tiles, waves of the busiest program, modelled time) and the "
    "next-cheapest config it allowed (runs before 2026-11-27 did not record it). Where a run "
    'profiled cuBLAS at a shape (`bench --check-only --launched`), "cuBLAS ran" is the tile '
    "its kernel's name states, in cuBLAS's column-major order: N first, then M."
)


def cublas_kernels(ds: Dataset) -> dict[Problem, str]:
    """Problem -> the kernel cuBLAS ran there, by the newest profiled launch among the loaded
    runs (``bench --check-only --launched``): the tile its name states, or the name itself.
    Every document counts, not only the latest-wins records (a profiled run times nothing, so
    a timed run of the shape would hide it)."""
    out: dict[Problem, str] = {}
    for doc in ds.documents:  # oldest first: a newer profile replaces an older one
        for rec in doc.bench:
            if rec.rung == Rung.CUBLAS and rec.launched:
                main = main_kernel(rec.launched).name
                out[rec.problem] = cublas_tile(main) or short_name(main, 48)
    return out


def sweep_stats_lines(ds: Dataset) -> list[str]:
    """Per (suite, dtype, backend): each rung's geomean and worst shape (report.md)."""
    panels = sweep_panels(ds)
    if not panels:
        return ["No rung-7 or rung-8 results on the `sweep` suite yet."]
    md: list[str] = []
    for panel in panels:
        md += [_panel_heading(panel), "", *_panel_stats(panel), ""]
    return [*md, _SWEEP_NOTE]


def sweep_lines(ds: Dataset) -> list[str]:
    """Per (suite, dtype, backend): each shape's cuBLAS TFLOPS, rung 7 and rung 8 as % of
    cuBLAS and the configs they ran, then each rung's geomean and worst shape (sweep.md)."""
    panels = sweep_panels(ds)
    if not panels:
        return ["No rung-7 or rung-8 results on the `sweep` suite yet."]
    md: list[str] = []
    any_fallback = False
    cublas_ran = cublas_kernels(ds)
    for panel in panels:
        rungs = list(panel.kernels)
        configured = [
            g for g in rungs if any(r.records[g] and r.records[g].config for r in panel.rows)
        ]
        header = ["shape", "cuBLAS TFLOPS"]
        header += [f"r{g} {Rung(g).label} (% cuBLAS)" for g in rungs]
        header += [f"r{g} config" for g in configured]
        explained = [g for g in rungs if any(_why(r.records[g]) != "-" for r in panel.rows)]
        header += [f"r{g} why" for g in explained]
        profiled = any(row.problem in cublas_ran for row in panel.rows)
        header += ["cuBLAS ran (N x M x K tile)"] if profiled else []
        rows = []
        for row in panel.rows:
            cells = [_shape(row.problem), _fmt(row.cublas.tflops if row.cublas else None)]
            cells += [_sweep_cell(ds, row.records[g], row.pct[g]) for g in rungs]
            cells += [_cfg(row.records[g]) for g in configured]
            cells += [_why(row.records[g]) for g in explained]
            cells += [cublas_ran.get(row.problem, "-")] if profiled else []
            any_fallback |= any(c.endswith(" †") for c in cells)
            rows.append(cells)
        md += [_panel_heading(panel), ""]
        md += _md_table(header, rows)
        md += ["", *_panel_stats(panel), ""]
    md += [_SWEEP_NOTE, "", *same_config_lines(panels)]
    if any_fallback:
        md += [
            "",
            "† no record of the kernel's own config choice for this shape (a tune run only): "
            "the fastest config measured is shown instead.",
        ]
    return md


def same_config_lines(panels: list[Any]) -> list[str]:
    """Two DSLs' rung 8 side by side, split by whether they ran the same config (sweep.md)."""
    classes = same_config_classes(panels)
    if not classes:
        return []
    rows = [
        [
            f"`{c.suite}`",
            c.dtype,
            f"{c.second} / {c.first}",
            c.kind,
            str(c.shapes),
            f"{c.ratio:.3f}",
        ]
        for c in classes
    ]
    return [
        "**Same config, two DSLs.** Rung 8 of the second DSL against the first, per shape both "
        "timed: the geometric mean of their % of cuBLAS (each against cuBLAS in its own run), "
        "split by whether the two ran the same config (the shared knobs of "
        "`harness.tile_cost.GemmConfig`: kernel against kernel) or chose differently (the "
        "selection, or a tile one DSL cannot express).",
        "",
        *_md_table(["suite", "dtype", "DSLs", "configs", "shapes", "ratio"], rows),
    ]


def runs_lines(ds: Dataset) -> list[str]:
    """One row per result file: what it is, when, on which GPU, from which commit."""
    names = _run_names(ds)
    rows = []
    for doc in ds.documents:
        env = doc.environment
        run = env.get("run") or {}
        if doc.kind == "codegen":
            kind = "codegen"
        else:
            kind = _run_kind(doc)
        rows.append(
            [
                names.get(id(doc), "-"),
                f"`{Path(doc.source or '?').name}`",
                kind,
                (doc.created or "?")[:16].replace("T", " "),
                str(env.get("gpu") or env.get("device") or "-"),
                ", ".join(run.get("suites") or []) or "-",
                _git(env, 10),
            ]
        )
    return _md_table("run | file | kind | created | GPU | suites | git", rows)


def _title_block(ds: Dataset) -> list[str]:
    runs = ds.runs
    gpus = sorted({str(d.environment.get("gpu")) for d in runs if d.environment.get("gpu")})
    limits = sorted(
        {f"{w:.0f} W" for d in runs if isinstance(w := d.environment.get("power_limit_w"), float)}
    )
    dates = sorted((d.created or "")[:10] for d in runs if d.created)
    when = (
        (f"from {dates[0]} to {dates[-1]}" if dates[0] != dates[-1] else f"on {dates[0]}")
        if dates
        else ""
    )
    where = ", ".join(gpus) or "no GPU"
    power = f" ({', '.join(limits)} power limit)" if limits else ""
    count = f"{len(runs)} bench run{'s' if len(runs) != 1 else ''}"
    return [
        "# GEMM across DSLs: results",
        "",
        f"{where}{power}; {count} {when}. "
        "Rendered by `python -m reports` from the result files listed under [Runs](#runs); "
        "every number comes from them. A kernel's number is the record of the config it "
        "chooses by itself (the latest run wins; a correctness-only re-check never hides a "
        "timing), against cuBLAS (`torch.matmul`) timed in the same run.",
    ]


def report_files(
    ds: Dataset, chain: Problem | None, drawn: Iterable[str] | None = None
) -> dict[str, str]:
    """``report.md`` and the files it links (:data:`LINKED`): name -> markdown text. A figure's
    section is left out when the figure is not in ``drawn`` (names; default: every figure)."""
    summary: list[str] = []
    for t in summary_tables(ds, chain):
        summary += [f"**{t.title}**", "", *markdown_table(t.header, t.rows), ""]
        for note in t.notes:  # each its own paragraph: markdown would run them together
            summary += [note, ""]
    failed = sum(r.status.failed for r in ds.bench)
    unsupported = sum(r.status.value == "unsupported" for r in ds.bench)
    summary += [
        f"{failed} records failed (wrong result, error, timeout) and {unsupported} are declared "
        "unsupported: [Not timed](#not-timed)."
    ]
    # Each figure of the table gets a section in the table's order (a figure not drawn: none),
    # with the numbers behind it where there are some; then the sections without a figure.
    bodies = {
        "cross_dsl": [
            "Each DSL's final kernel (its highest measured rung of 1-7, the config it picks "
            "itself) against cuBLAS, suite by suite; TFLOPS below are medians.",
            "",
            *cross_table(ds),
        ],
        "ksweep": ["M = N = 8192, K from 512 to 16384 (the `ksweep` suite)."],
        "chain": chain_lines(ds, chain),
        "pct_cublas": [
            "Colour steps are fine near 100 % and coarse below 90 %; every cell gives its value."
        ],
        "sweep": [
            *sweep_stats_lines(ds),
            "",
            "Every shape with its configs: [sweep.md](sweep.md).",
        ],
    }
    drawn = {f.name for f in FIGURES} if drawn is None else set(drawn)
    sections: list[tuple[str, str | None, list[str]]] = [
        (f.title, f.file, bodies.get(f.name, [])) for f in FIGURES if f.name in drawn
    ]
    if ds.codegen:
        sections.append(("Codegen (compile-only)", None, codegen_lines(ds)))
    sections.append(("Not timed", None, failure_lines(ds)))
    sections.append(
        (
            "Runs",
            None,
            [
                *runs_lines(ds),
                "",
                "Each run's environment (GPU, clocks, power limit, driver, CUDA, package "
                "versions, timer settings): [environment.md](environment.md).",
            ],
        )
    )
    contents = [f"1. [{title}](#{anchor(title)})" for title, _, _ in sections]
    contents += [f"- [{name}]({name}): {what}" for name, what in LINKED.items()]
    md = [*_title_block(ds), "", "## Summary", "", *summary, "", "## Contents", "", *contents, ""]
    for title, file, lines in sections:
        md += [f"## {title}", ""]
        if file:
            md += [f"![{title}]({file})", ""]
        md += [*lines, ""]
    back = "[Back to report.md](report.md)"
    linked = {
        "sweep.md": ["# Shape sweep: every shape", "", back, "", *sweep_lines(ds)],
        "tuning.md": [
            "# Configs timed",
            "",
            back,
            "",
            *ceiling_lines(ds),
            "## Every config timed",
            "",
            *tuning_lines(ds),
        ],
        "records.md": [
            "# Every timed record",
            "",
            back,
            "",
            "W: the mean of the power samples taken while the record was timed. NVML's reading "
            "is a one-second mean, longer than a timing window, unless marked `*` "
            "(instantaneous; `power_source` in the results).",
            "",
            *records_lines(ds),
        ],
        "environment.md": [
            "# Environment of every run",
            "",
            back,
            "",
            *(environment_lines(ds) or ["- no bench results"]),
        ],
    }
    out = {"report.md": "\n".join(md).rstrip() + "\n"}
    out.update({name: "\n".join(lines).rstrip() + "\n" for name, lines in linked.items()})
    return out
