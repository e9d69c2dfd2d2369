"""Render the study's figures and markdown report from result files (matplotlib, Agg).

Figures (each a pure function of a :class:`~reports.data.Dataset`):

* ``cross_dsl.png``  TFLOPS per problem of each backend's final kernel; cuBLAS as a black bar
  marker, the line to beat;
* ``ksweep.png``     TFLOPS against K at M = N = 8192, one line per final kernel, cuBLAS dashed;
* ``chain.png``      the speedup chain: time per rung on a log axis, one panel per backend on
  shared axes, each step's and the cumulative speedup annotated, cuBLAS dashed;
* ``pct_cublas.png`` % of cuBLAS (same run), backend x problem heat map;

plus ``report.md`` tying them together with the environment, the numbers behind every plot,
the codegen table and every failure with its reason, and ``results.csv``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.protocol import Problem, Rung
from reports.data import Dataset, load_dataset

__all__ = ["render_report"]

_COLORS = {
    "cublas": "#222222",
    "gluon": "#1f77b4",
    "cutedsl": "#2ca02c",
    "tirx": "#d62728",
    "tilus": "#9467bd",
}
_FALLBACK = ["#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _color(backend: str, order: list[str]) -> str:
    if backend in _COLORS:
        return _COLORS[backend]
    return _FALLBACK[order.index(backend) % len(_FALLBACK)] if backend in order else "#7f7f7f"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.grid": True,
            "grid.alpha": 0.3,
        }
    )
    return plt


def _short(key: str) -> str:
    p = Problem.parse(key)
    return f"{p.m}x{p.n}x{p.k}"


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


# ----------------------------------------------------------------------------------- cross-DSL
def plot_cross_dsl(ds: Dataset, path: Path) -> None:
    plt = _plt()
    finals = ds.final_kernels()
    problems = ds.problems()
    dtypes = sorted({Problem.parse(k).dtype for k in problems}) or ["fp16"]
    per_dtype = max(sum(Problem.parse(k).dtype == d for k in problems) for d in dtypes)
    fig, axes = plt.subplots(
        len(dtypes),
        1,
        figsize=(max(7.0, 0.75 * per_dtype + 3), 3.6 * len(dtypes)),
        squeeze=False,
    )
    order = list(finals)
    for ax, dtype in zip(axes[:, 0], dtypes):
        keys = [k for k in problems if Problem.parse(k).dtype == dtype]
        if not keys:
            _empty(ax, f"no {dtype} results")
            continue
        width = 0.8 / max(1, len(finals))
        for j, (backend, kid) in enumerate(finals.items()):
            xs, ys = [], []
            for i, key in enumerate(keys):
                r = ds.lookup(kid, key)
                if r and r["status"] == "ok" and r.get("tflops"):
                    xs.append(i - 0.4 + width * (j + 0.5))
                    ys.append(r["tflops"])
            ax.bar(xs, ys, width=width * 0.95, color=_color(backend, order), label=kid)
        labelled = False
        for i, key in enumerate(keys):
            ref = ds.cublas(key)
            if ref:
                ax.hlines(
                    ref["tflops"],
                    i - 0.45,
                    i + 0.45,
                    colors=_COLORS["cublas"],
                    linewidth=2,
                    label=None if labelled else "cuBLAS (torch.matmul)",
                )
                if not finals:
                    ax.text(
                        i,
                        ref["tflops"],
                        f"{ref['tflops']:.0f}",
                        ha="center",
                        va="bottom",
                        fontsize=7,
                    )
                labelled = True
        ax.set_xticks(range(len(keys)), [_short(k) for k in keys], rotation=30, ha="right")
        ax.set_ylabel("TFLOPS")
        ax.set_title(f"Final kernel of each DSL vs cuBLAS, {dtype} (MxNxK)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -------------------------------------------------------------------------------------- k-sweep
def _ksweep_keys(ds: Dataset, dtype: str) -> list[str]:
    keys = [k for k in ds.problems() if Problem.parse(k).dtype == dtype]
    keys = [k for k in keys if Problem.parse(k).m == 8192 and Problem.parse(k).n == 8192]
    return sorted(keys, key=lambda k: Problem.parse(k).k)


def plot_ksweep(ds: Dataset, path: Path) -> None:
    plt = _plt()
    dtypes = sorted({Problem.parse(k).dtype for k in ds.problems()}) or ["fp16"]
    fig, axes = plt.subplots(
        1, len(dtypes), figsize=(5.5 * len(dtypes), 3.8), squeeze=False, sharey=True
    )
    finals = ds.final_kernels()
    order = list(finals)
    for ax, dtype in zip(axes[0], dtypes):
        keys = _ksweep_keys(ds, dtype)
        if len(keys) < 2:
            _empty(ax, f"no K-sweep ({dtype}) results")
            continue
        ks = [Problem.parse(k).k for k in keys]
        ref = [ds.cublas(k) for k in keys]
        ax.plot(
            [k for k, r in zip(ks, ref) if r],
            [r["tflops"] for r in ref if r],
            "k--o",
            markersize=3,
            label="cuBLAS",
        )
        for backend, kid in finals.items():
            pts = [(k, ds.lookup(kid, key)) for k, key in zip(ks, keys)]
            pts = [
                (k, r["tflops"]) for k, r in pts if r and r["status"] == "ok" and r.get("tflops")
            ]
            if pts:
                ax.plot(*zip(*pts), "-o", markersize=3, color=_color(backend, order), label=kid)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("K  (M = N = 8192)")
        ax.set_ylabel("TFLOPS")
        ax.set_ylim(bottom=0)
        ax.set_title(f"K sweep, {dtype}")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.2), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- chain
def chain_problem(ds: Dataset, requested: str | None = None) -> str | None:
    """The problem the chain panels show: the requested one, 4096^3 fp16, or the largest square."""
    keys = ds.problems()
    if requested:
        key = Problem.parse(requested).key
        return key if key in keys else None
    if "4096x4096x4096-fp16" in keys:
        return "4096x4096x4096-fp16"
    squares = [
        k for k in keys if len({Problem.parse(k).m, Problem.parse(k).n, Problem.parse(k).k}) == 1
    ]
    return squares[-1] if squares else (keys[-1] if keys else None)


def chain_table(ds: Dataset, problem_key: str) -> dict[str, list[dict[str, Any]]]:
    """backend -> one row per rung 1..7 (kernel, median ms or None, step and total speedup)."""
    table: dict[str, list[dict[str, Any]]] = {}
    for backend in ds.backends():
        recs = [r for r in ds.bench if r["backend"] == backend and r["problem_key"] == problem_key]
        by_rung: dict[int, dict[str, Any]] = {}
        for r in sorted(recs, key=lambda r: (r["arch"] != "sm_90a", r["rung"])):
            by_rung.setdefault(r["rung"], r)
        rows, prev, first = [], None, None
        for rung in range(1, 8):
            r = by_rung.get(rung)
            ms = r["timing"]["median_ms"] if r and r["status"] == "ok" and r.get("timing") else None
            step = prev / ms if (ms and prev) else None
            if ms and first is None:
                first = ms
            rows.append(
                {
                    "rung": rung,
                    "name": Rung(rung).label,
                    "kernel": r["kernel"] if r else None,
                    "status": r["status"] if r else "missing",
                    "median_ms": ms,
                    "step": step,
                    "total": first / ms if (ms and first) else None,
                    "tflops": r.get("tflops") if r else None,
                }
            )
            prev = ms or prev
        table[backend] = rows
    return table


def plot_chain(ds: Dataset, path: Path, problem_key: str | None) -> None:
    plt = _plt()
    from matplotlib.ticker import FormatStrFormatter

    backends = ds.backends()
    n = max(1, len(backends))
    fig, axes = plt.subplots(1, n, figsize=(max(6.0, 4.2 * n), 4.4), squeeze=False, sharey=True)
    if problem_key is None or not backends:
        _empty(axes[0, 0], "no DSL rungs measured yet")
        fig.suptitle("Speedup chain")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return
    table = chain_table(ds, problem_key)
    all_ms = [row["median_ms"] for rows in table.values() for row in rows if row["median_ms"]]
    for ax, backend in zip(axes[0], backends):
        rows = table[backend]
        ref = ds.cublas(problem_key, backend)
        xs = [row["rung"] for row in rows if row["median_ms"]]
        ys = [row["median_ms"] for row in rows if row["median_ms"]]
        ax.plot(xs, ys, "-o", color=_color(backend, backends), markersize=4)
        for row in rows:
            if row["median_ms"]:
                label = f"{row['median_ms']:.3g} ms"
                if row["step"]:
                    label += f"\nx{row['step']:.2f} step"
                if row["total"] and row["rung"] != xs[0]:
                    label += f"\nx{row['total']:.1f} total"
                ax.annotate(
                    label,
                    (row["rung"], row["median_ms"]),
                    textcoords="offset points",
                    xytext=(0, 7),
                    ha="center",
                    fontsize=6.5,
                )
            else:
                ax.annotate(
                    row["status"],
                    (row["rung"], 0.5),
                    xycoords=("data", "axes fraction"),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="#b00000",
                    rotation=90,
                )
        if ref:
            ax.axhline(
                ref["timing"]["median_ms"],
                color="k",
                linestyle="--",
                linewidth=1,
                label=f"cuBLAS {ref['timing']['median_ms']:.3g} ms",
            )
            ax.legend(fontsize=7, loc="upper right")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.set_xticks(
            range(1, 8),
            [f"{i} {Rung(i).label}" for i in range(1, 8)],
            fontsize=7,
            rotation=35,
            ha="right",
            rotation_mode="anchor",
        )
        ax.set_xlim(0.5, 7.5)
        ax.set_title(backend)
        if all_ms:
            lo = min(all_ms + ([ref["timing"]["median_ms"]] if ref else []))
            ax.set_ylim(lo / 2.0, max(all_ms) * 4.0)
    axes[0, 0].set_ylabel("median time per GEMM (ms, log)")
    fig.suptitle(f"Speedup chain, {problem_key}: each rung changes one thing")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------------------------- heat map
def pct_table(ds: Dataset) -> tuple[list[str], list[str], list[list[float | None]]]:
    """Rows (final kernels), columns (problems), % of cuBLAS in the same run."""
    finals = list(ds.final_kernels().values())
    cols = ds.problems()
    grid = []
    for kid in finals:
        row = []
        for key in cols:
            r = ds.lookup(kid, key)
            row.append(r.get("pct_of_cublas") if r and r["status"] == "ok" else None)
        grid.append(row)
    keep = [j for j in range(len(cols)) if any(row[j] is not None for row in grid)]
    return finals, [cols[j] for j in keep], [[row[j] for j in keep] for row in grid]


def plot_heatmap(ds: Dataset, path: Path) -> None:
    plt = _plt()
    rows, cols, grid = pct_table(ds)
    fig, ax = plt.subplots(
        figsize=(max(6.0, 0.55 * len(cols) + 3), max(2.2, 0.5 * len(rows) + 1.8))
    )
    if not rows or not cols:
        _empty(ax, "no DSL kernels measured yet")
        ax.set_title("% of cuBLAS (same run)")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return
    import numpy as np

    data = np.array([[math.nan if v is None else v for v in row] for row in grid], dtype=float)
    im = ax.imshow(data, cmap="RdYlGn", vmin=50, vmax=150, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            v = data[i, j]
            ax.text(
                j, i, "-" if math.isnan(v) else f"{v:.0f}", ha="center", va="center", fontsize=7
            )
    ax.set_xticks(range(len(cols)), [k.replace("-", "\n") for k in cols], rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="% of cuBLAS (100 = parity)")
    ax.set_title("% of cuBLAS in the same run (higher is faster)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------------------------- markdown
def _fmt(v: Any, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def _md_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def environment_lines(ds: Dataset) -> list[str]:
    lines = []
    for env in ds.environments:
        pk = {k: v for k, v in (env.get("packages") or {}).items() if v}
        t = env.get("timer") or {}
        l2 = env.get("l2_bytes")
        lines.append(
            f"- **{env.get('gpu', env.get('device', '?'))}** ({env.get('sm_count', '?')} SMs, "
            f"L2 {l2 / 2**20:.0f} MiB, "
            if l2
            else f"- **{env.get('gpu', env.get('device', '?'))}** ("
        )
        lines[-1] += (
            f"driver {env.get('driver', '?')}, CUDA {env.get('torch_cuda', '?')}, power limit "
            f"{_fmt(env.get('power_limit_w'), '.0f')} W, max SM clock "
            f"{env.get('max_sm_clock_mhz', '?')} MHz); run {env.get('created', '?')}, git "
            f"`{(env.get('git_sha') or '?')[:10]}`{' (dirty)' if env.get('git_dirty') else ''}; "
            + ", ".join(f"{k} {v}" for k, v in pk.items())
            + f"; timer: warm-up {t.get('warmup_s')} s, >= {t.get('min_samples')} samples and "
            f"{t.get('min_time_s')} s, {t.get('rounds')} round-robin rounds, inputs rotated over "
            f">= {t.get('rotate_factor')}x L2. File: `{Path(env.get('file', '?')).name}`"
        )
    return lines


def render_markdown(ds: Dataset, figures: dict[str, str], chain_key: str | None) -> str:
    md = ["# GEMM across DSLs: results", ""]
    md += [
        "Rendered by `python -m harness report` from the result files listed below; every "
        "number comes from those files.",
        "",
        "## Environment",
        "",
    ]
    md += environment_lines(ds) or ["- no bench results"]
    md += ["", "## Cross-DSL performance", "", f"![cross-DSL TFLOPS]({figures['cross_dsl']})", ""]
    finals = ds.final_kernels()
    header = ["problem", "cuBLAS TFLOPS"] + [f"{k} TFLOPS (% cuBLAS)" for k in finals.values()]
    rows = []
    for key in ds.problems():
        ref = ds.cublas(key)
        row = [key, _fmt(ref["tflops"] if ref else None)]
        for kid in finals.values():
            r = ds.lookup(kid, key)
            if r and r["status"] == "ok" and r.get("tflops"):
                row.append(f"{r['tflops']:.1f} ({_fmt(r.get('pct_of_cublas'), '.0f')}%)")
            else:
                ok = r and r["status"] == "ok"
                row.append("correct, not timed" if ok else (r["status"] if r else "-"))
        rows.append(row)
    md += _md_table(header, rows)
    md += [
        "",
        "## K sweep (M = N = 8192)",
        "",
        f"![K sweep]({figures['ksweep']})",
        "",
        "## Speedup chain",
        "",
        f"![speedup chain]({figures['chain']})",
        "",
    ]
    if chain_key:
        for backend, crow in chain_table(ds, chain_key).items():
            md += [f"**{backend}** at {chain_key}:", ""]
            md += _md_table(
                ["rung", "kernel", "status", "median ms", "TFLOPS", "step", "total"],
                [
                    [
                        f"{c['rung']} {c['name']}",
                        c["kernel"] or "-",
                        c["status"],
                        _fmt(c["median_ms"], ".4f"),
                        _fmt(c["tflops"]),
                        _fmt(c["step"], ".2f"),
                        _fmt(c["total"], ".1f"),
                    ]
                    for c in crow
                ],
            )
            md += [""]
    md += ["## % of cuBLAS", "", f"![percent of cuBLAS]({figures['pct_cublas']})", ""]
    md += ["## All timed records", ""]
    md += _md_table(
        [
            "kernel",
            "problem",
            "median ms",
            "p20-p80 ms",
            "cv",
            "TFLOPS",
            "TFLOPS/GHz",
            "% cuBLAS",
            "SM MHz",
            "W",
            "max err",
        ],
        [
            [
                r["kernel"],
                r["problem_key"],
                f"{r['timing']['median_ms']:.4f}",
                f"{r['timing']['p20_ms']:.4f}-{r['timing']['p80_ms']:.4f}",
                f"{r['timing']['cv']:.3f}",
                _fmt(r.get("tflops")),
                _fmt(r.get("tflops_per_ghz")),
                _fmt(r.get("pct_of_cublas")),
                _fmt((r.get("telemetry") or {}).get("sm_clock_mhz_mean"), ".0f"),
                _fmt((r.get("telemetry") or {}).get("power_w_mean"), ".0f"),
                _fmt((r.get("check") or {}).get("max_abs_err"), ".3g"),
            ]
            for r in sorted(ds.ok(), key=lambda r: (r["problem_key"], r["rung"], r["kernel"]))
        ],
    )
    failures = [r for r in ds.bench if r["status"] not in ("ok",)]
    md += ["", "## Not timed", ""]
    if failures:
        md += _md_table(
            ["kernel", "problem", "status", "reason"],
            [
                [
                    r["kernel"],
                    r["problem_key"],
                    r["status"],
                    (r.get("reason") or "").replace("|", "/")[:160],
                ]
                for r in failures
            ],
        )
    else:
        md += ["Every selected kernel ran correctly on every problem."]
    md += ["", "## Codegen (compile-only)", ""]
    md += codegen_lines(ds)
    md += ["", "Sources: " + ", ".join(f"`{Path(s).name}`" for s in ds.sources), ""]
    return "\n".join(md)


def codegen_lines(ds: Dataset) -> list[str]:
    if not ds.codegen:
        return ["No codegen results (run `python -m harness codegen`)."]
    return _md_table(
        [
            "kernel",
            "arch",
            "status",
            "registers",
            "spills (B)",
            "smem (B)",
            "compile s",
            "lines",
            "PTX features",
            "via raw PTX",
            "notes",
        ],
        [
            [
                r["kernel"],
                r["arch"],
                r["status"]
                if r["status"] == "ok"
                else f"{r['status']}: {(r.get('reason') or '')[:60]}",
                _fmt(r.get("registers"), "d"),
                _fmt(r.get("spill_bytes"), "d"),
                _fmt(r.get("shared_bytes"), "d"),
                _fmt(r.get("compile_seconds"), ".2f"),
                _fmt(r.get("lines_of_code"), "d"),
                ", ".join(r.get("features") or []) or "-",
                ", ".join(r.get("raw_ptx") or []) or "-",
                "; ".join(r.get("notes") or []).replace("|", "/") or "-",
            ]
            for r in sorted(ds.codegen, key=lambda r: (r["backend"], r["arch"], r["rung"]))
        ],
    )


README_START = "<!-- results:start (generated by python -m harness report --readme) -->"
README_END = "<!-- results:end -->"
HEADLINE_PROBLEMS = ("4096x4096x4096-fp16", "8192x8192x8192-fp16", "16384x16384x16384-fp16")


def readme_summary(ds: Dataset) -> str:
    """The README's headline table: each DSL's final kernel vs cuBLAS at the headline shapes."""
    finals = ds.final_kernels()
    env = ds.environments[-1] if ds.environments else {}
    lines = [
        f"{env.get('gpu', '?')} ({_fmt(env.get('power_limit_w'), '.0f')} W power limit, clocks "
        f"not pinned), runs of {(env.get('created') or '?')[:10]}, cuBLAS (`torch.matmul`) timed "
        "in the same run. Each DSL's final kernel (its highest measured rung):",
        "",
    ]
    header = ["problem", "cuBLAS", *[f"{k}" for k in finals.values()]]
    rows = []
    for key in HEADLINE_PROBLEMS:
        ref = ds.cublas(key)
        if ref is None:
            continue
        row = [key, f"{ref['tflops']:.0f} TFLOPS"]
        for kid in finals.values():
            r = ds.lookup(kid, key)
            ok = r and r["status"] == "ok" and r.get("tflops")
            row.append(f"{r['tflops']:.0f} ({_fmt(r.get('pct_of_cublas'), '.1f')}%)" if ok else "-")
        rows.append(row)
    lines += _md_table(header, rows)
    return "\n".join(lines)


def update_readme(ds: Dataset, readme: Path) -> bool:
    """Replace the block between the README's result markers; False if it has no markers."""
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(f"{head}{README_START}\n{readme_summary(ds)}\n{README_END}{tail}")
    return True


def render_report(
    results: Iterable[str | Path],
    out: Path,
    chain_problem: str | None = None,
    readme: Path | None = None,
) -> list[Path]:
    """Render every figure, ``report.md`` and ``results.csv`` into ``out``; return the paths."""
    from harness.results import load, to_csv

    ds = load_dataset(results)
    out.mkdir(parents=True, exist_ok=True)
    figures = {
        "cross_dsl": "cross_dsl.png",
        "ksweep": "ksweep.png",
        "chain": "chain.png",
        "pct_cublas": "pct_cublas.png",
    }
    key = chain_problem_for(ds, chain_problem)
    plot_cross_dsl(ds, out / figures["cross_dsl"])
    plot_ksweep(ds, out / figures["ksweep"])
    plot_chain(ds, out / figures["chain"], key)
    plot_heatmap(ds, out / figures["pct_cublas"])
    (out / "report.md").write_text(render_markdown(ds, figures, key))
    bench_docs = [d for d in (load(s) for s in ds.sources) if d["kind"] == "bench"]
    written = [out / f for f in figures.values()] + [out / "report.md"]
    if bench_docs:
        (out / "results.csv").write_text(to_csv(bench_docs))
        written.append(out / "results.csv")
    if readme is not None and update_readme(ds, readme):
        written.append(readme)
    return written


def chain_problem_for(ds: Dataset, requested: str | None) -> str | None:
    return chain_problem(ds, requested)
