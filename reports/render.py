"""Render the report: every figure of the table of figures, ``report.md`` and the files it
links, the CSVs, and the READMEs' results blocks.

* figures: :data:`reports.figures.FIGURES` (name, file, title, function), one module each under
  :mod:`reports.figures`;
* ``report.md`` and its linked files: :mod:`reports.markdown` (the summary tables:
  :mod:`reports.summary`);
* README blocks: :mod:`reports.readme`.

Everything is a pure function of the :class:`~reports.data.Dataset` loaded here; re-rendering
the same inputs with the same matplotlib gives the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.results import to_csv
from reports.data import Dataset, chain_problem, load_dataset
from reports.figures import FIGURES
from reports.figures.common import save_figure
from reports.markdown import report_files
from reports.readme import update_readme

__all__ = ["Rendered", "render_report"]


class Rendered(list[Path]):
    """The paths written, plus the dataset and chain problem they were rendered from (for the
    terminal summary)."""

    def __init__(self, paths: Iterable[Path], ds: Dataset, chain: object) -> None:
        super().__init__(paths)
        self.dataset = ds
        self.chain = chain


def render_report(
    results: Iterable[str | os.PathLike[str]],
    out: Path,
    chain_problem_key: str | None = None,
    readme: Path | Iterable[Path] | None = None,
    warn: Callable[[str], None] = lambda _m: None,
) -> Rendered:
    """Render every figure the results have data for, ``report.md`` and its linked files,
    ``results.csv`` (and ``codegen.csv`` when there are codegen results) into ``out``; refresh
    ``readme``'s results block if given. Returns the paths written. Unreadable inputs are named
    through ``warn`` and skipped."""
    ds = load_dataset(results, warn=warn)
    key = chain_problem(ds, chain_problem_key)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    drawn = set()
    for spec in FIGURES:
        fig = spec.draw(ds, key)
        if fig is None:  # nothing to draw: no file (not even a stale one), no section
            (out / spec.file).unlink(missing_ok=True)
            continue
        save_figure(fig, out / spec.file)
        written.append(out / spec.file)
        drawn.add(spec.name)
    for name, text in report_files(ds, key, drawn).items():
        (out / name).write_text(text)
        written.append(out / name)
    for kind, name in (("bench", "results.csv"), ("codegen", "codegen.csv")):
        docs = [d for d in ds.documents if d.kind == kind]
        if docs:
            (out / name).write_text(to_csv(docs))
            written.append(out / name)
    readmes = [readme] if isinstance(readme, (str, Path)) else list(readme or ())
    written += [Path(r) for r in readmes if update_readme(ds, Path(r))]
    return Rendered(written, ds, key)
