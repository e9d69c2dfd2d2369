"""Every figure is readable at the width a reader sees it, drawn from the fixtures and from the
committed results: at most 1600 px wide, no text smaller than 7 pt, none overlapping other text
or leaving the canvas; and each figure shows what it is for (suites as they are, log axes where
decode and prefill share a panel, slowdowns in the chain called out). The table of figures is
the one place a figure is declared.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from expectations import require_module
from figure_text import drawn_texts, text_problems
from records import bench_record

from harness.gemm import Problem
from harness.results import ResultsWriter
from reports import markdown, render
from reports.data import chain_problem, load_dataset
from reports.figures import FIGURES, FigureSpec
from reports.figures.chain import figure_chain
from reports.figures.common import DPI
from reports.figures.cross_dsl import figure_cross_dsl
from reports.figures.ksweep import figure_ksweep
from reports.render import render_report

require_module("matplotlib", "the figures")

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "fixtures": ROOT / "tests" / "fixtures",
    "h200": ROOT / "reports" / "results",
    "h100": ROOT / "reports" / "results" / "h100",
}


@pytest.fixture(scope="module", params=list(SOURCES))
def source(request: pytest.FixtureRequest):
    ds = load_dataset([SOURCES[request.param]])
    return request.param, ds, chain_problem(ds)


@pytest.mark.parametrize("spec", FIGURES, ids=[f.name for f in FIGURES])
def test_every_figure_is_readable_at_1600_px(source, spec: FigureSpec) -> None:
    name, ds, chain = source
    fig = spec.draw(ds, chain)
    if fig is None:  # nothing of this figure in these results (the H100 has rung 8 only)
        assert name == "h100", f"{spec.name} drew nothing from {name}"
        return
    width = fig.get_figwidth() * DPI
    assert width <= 1600, f"{spec.file} from {name} is {width:.0f} px wide"
    small = [t.get_text() for t in drawn_texts(fig) if t.get_fontsize() < 7]
    assert not small, f"{spec.file} from {name}: text under 7 pt: {small[:5]}"
    problems = text_problems(fig)
    assert not problems, f"{spec.file} from {name}:\n" + "\n".join(problems[:20])


def test_the_text_check_catches_overprint_and_clipping() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.annotate("x1.08 step", (0.5, 0.5), ha="center")
    ax.annotate("x1.00 step (other run)", (0.5, 0.52), ha="center")
    ax.annotate("clipped under the axis", (0.5, -0.5), xycoords="axes fraction")
    found = text_problems(fig)
    assert any("overlap: 'x1.08 step'" in p for p in found)
    assert any("off the canvas: 'clipped under the axis'" in p for p in found)


# ------------------------------------------------------------------------------- what they show


def _run(path: Path, shapes: dict[Problem, float], chain: dict[int, float] | None = None):
    """cuBLAS and kappa's rung 7 at ``shapes`` (ms of cuBLAS; kappa 5 % slower), and kappa's
    chain at 4096^3 (rung -> ms)."""
    w = ResultsWriter(path, "bench", {"gpu": "x"})
    for p, ms in shapes.items():
        w.add(bench_record("cublas", 0, p, ms))
        w.add(bench_record("kappa", 7, p, ms * 1.05))
    for rung, ms in (chain or {}).items():
        w.add(bench_record("kappa", rung, Problem(4096, 4096, 4096), ms))
    w.finish()
    return load_dataset([path])


def test_ksweep_draws_the_ksweep_suite_only(tmp_path: Path) -> None:
    """8192x8192x28672 has M = N = 8192 but is a sweep shape: not a K-sweep point."""
    shapes = {Problem(8192, 8192, k): 0.1 * k / 512 for k in (512, 2048, 8192, 16384, 28672)}
    fig = figure_ksweep(_run(tmp_path / "r.json", shapes))
    ticks = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert ticks == ["512", "2048", "8192", "16384"]


def test_decode_and_prefill_share_a_log_axis(tmp_path: Path) -> None:
    shapes = {Problem(m, 4096, 4096): 0.002 + m * 2.5e-5 for m in (1, 16, 128, 1024, 8192)}
    shapes[Problem(1024, 1024, 1024)] = 0.011
    fig = figure_cross_dsl(_run(tmp_path / "r.json", shapes))
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    sweep = next(ax for t, ax in by_title.items() if "shape sweep" in t)
    square = next(ax for t, ax in by_title.items() if "square suite" in t)
    assert sweep.get_yscale() == "log" and square.get_yscale() == "linear"
    # the sweep panel is ordered decode to prefill, and draws 1024^3 too (a sweep shape)
    (strip,) = [ax for ax in sweep.get_shared_x_axes().get_siblings(sweep) if ax is not sweep]
    assert [t.get_text() for t in strip.get_xticklabels()] == [
        "1x4096x4096", "16x4096x4096", "128x4096x4096", "1024x1024x1024", "1024x4096x4096",
        "8192x4096x4096",
    ]  # fmt: skip


def test_chain_calls_out_a_slower_rung_and_keeps_labels_apart(tmp_path: Path) -> None:
    chain = {1: 2.0, 2: 1.0, 3: 0.9, 4: 1.8, 5: 0.5, 6: 0.45, 7: 0.44}
    ds = _run(tmp_path / "r.json", {Problem(4096, 4096, 4096): 0.4}, chain)
    fig = figure_chain(ds, Problem(4096, 4096, 4096))
    texts = [t.get_text() for t in drawn_texts(fig)]
    assert "rung 4 is slower than rung 3 (x0.50); see backends/kappa/README.md" in texts
    assert "1.8 ms\nx0.50 step\nx1.1 total" in texts
    assert not text_problems(fig)


# ------------------------------------------------------------------------------ the figure table
def test_the_table_declares_each_figure_once() -> None:
    assert len({f.name for f in FIGURES}) == len({f.file for f in FIGURES}) == len(FIGURES)
    assert all(f.file.endswith(".png") and callable(f.draw) for f in FIGURES)


def test_a_new_figure_is_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def figure_count(ds, chain):
        from reports.figures.common import new_figure

        fig = new_figure(4, 3)
        fig.subplots().bar(["records"], [len(ds.bench)])
        return fig

    extra = FigureSpec("count", "count.png", "Record count", figure_count)
    for module in (render, markdown):
        monkeypatch.setattr(module, "FIGURES", (*FIGURES, extra))
    written = render_report([SOURCES["fixtures"]], tmp_path)
    assert tmp_path / "count.png" in written
    md = (tmp_path / "report.md").read_text()
    assert "## Record count\n\n![Record count](count.png)" in md
    assert "1. [Record count](#record-count)" in md
