"""Promote a run into the committed results: the only way a run enters ``reports/results``.

The harness writes runs into the ignored ``runs/`` folder and the reports render only
``reports/results/*.json``, so what the published report shows changes by one explicit step. A
file the new run supersedes is never deleted: it moves into ``archive/`` and the archive's
``README.md`` gains one table row saying when, by which file and why, so every number that was
once published can still be traced to its file.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.results import ResultsError, load

__all__ = ["ARCHIVE_HEADER", "PromoteError", "Promotion", "promote"]

ARCHIVE_INDEX = "README.md"
_TABLE_HEADER = "| file | moved | superseded by | why |\n|---|---|---|---|\n"
ARCHIVE_HEADER = (
    "# Archived runs (not rendered)\n\n"
    "`python -m reports` reads only `reports/results/*.json`, not this folder. "
    "`python -m reports promote --supersedes` moves a file here and appends its row below.\n\n"
    + _TABLE_HEADER
)


class PromoteError(Exception):
    """A promotion that would lose or corrupt something; nothing has been changed."""


@dataclass(frozen=True)
class Promotion:
    """What :func:`promote` did."""

    source: Path
    dest: Path
    kind: str
    records: int
    moved: tuple[tuple[Path, Path], ...]
    index: Path | None

    def lines(self) -> list[str]:
        out = [f"promoted {self.source} -> {self.dest} ({self.kind}, {self.records} records)"]
        out += [f"archived {old} -> {new}" for old, new in self.moved]
        if self.index is not None:
            n = len(self.moved)
            out.append(f"appended {n} line{'s' * (n != 1)} to {self.index}")
        return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _superseded(arg: str | os.PathLike[str], results_dir: Path) -> Path:
    """The file ``arg`` names: as given if it exists, else inside ``results_dir``; it must be a
    file directly in ``results_dir`` (only published results are archived)."""
    p = Path(arg)
    if not p.exists():
        p = results_dir / p.name
    if not p.is_file():
        raise PromoteError(f"--supersedes {arg}: no such file in {results_dir}")
    if p.resolve().parent != results_dir.resolve():
        raise PromoteError(f"--supersedes {arg}: not a file directly in {results_dir}")
    return p


def promote(
    run: str | os.PathLike[str],
    results_dir: str | os.PathLike[str],
    archive_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    supersedes: Iterable[str | os.PathLike[str]] = (),
    why: str | None = None,
    today: str | None = None,
) -> Promotion:
    """Copy ``run`` into ``results_dir`` as ``name`` (default its own name), then move each
    superseded file into ``archive_dir`` (default ``results_dir/archive``) and append its row
    to the archive index. Every check happens before anything is written; raises
    :class:`PromoteError` on a run that does not load, an existing destination, or a superseded
    file that is missing, outside ``results_dir`` or already archived."""
    src = Path(run)
    results = Path(results_dir)
    archive = Path(archive_dir) if archive_dir is not None else results / "archive"
    try:
        doc = load(src)
    except ResultsError as e:
        raise PromoteError(f"refusing to promote a file that does not load: {e}") from None
    fname = name or src.name
    if Path(fname).name != fname or fname in ("", ".", ".."):
        raise PromoteError(f"--name {fname!r}: give a file name, not a path")
    if not fname.endswith(".json"):
        fname += ".json"
    if not results.is_dir():
        raise PromoteError(f"{results}: no such results folder")
    _check_gpu(doc.environment.get("gpu"), fname, results)
    dest = results / fname
    if dest.exists():
        raise PromoteError(f"{dest} exists; refusing to overwrite (choose another --name)")
    old_files = list(dict.fromkeys(_superseded(s, results) for s in supersedes))
    moves = []
    for old in old_files:
        if old.resolve() == src.resolve():
            raise PromoteError(f"--supersedes {old}: that is the run being promoted")
        target = archive / old.name
        if target.exists():
            raise PromoteError(f"{target} exists; refusing to overwrite an archived file")
        moves.append((old, target))

    with open(src, "rb") as fin, open(dest, "xb") as fout:
        shutil.copyfileobj(fin, fout)
    index = None
    if moves:
        archive.mkdir(parents=True, exist_ok=True)
        index = archive / ARCHIVE_INDEX
        day = today or _dt.date.today().isoformat()
        reason = _cell(why) if why and why.strip() else "(no reason given)"
        rows = "".join(f"| `{old.name}` | {day} | `{dest.name}` | {reason} |\n" for old, _ in moves)
        for old, target in moves:
            old.rename(target)
        _append_rows(index, rows)
    return Promotion(src, dest, doc.kind, len(doc.records), tuple(moves), index)


#: GPU models a results file name or folder may name (``...-h200-2026...json``, ``h100/``).
GPU_TAGS = ("h100", "h200", "h20", "b200", "b300", "gb200", "a100")


def _check_gpu(gpu: object, fname: str, results: Path) -> None:
    """Refuse a run whose file name or results folder names another GPU than the one it ran on
    (an H100 run promoted as ``...-h200-...`` would be rendered in the H200 report)."""
    if not isinstance(gpu, str) or not gpu:
        return
    model = set(gpu.lower().split())  # "nvidia h100 80gb hbm3": the model is a word of it
    tokens = set(fname.lower().removesuffix(".json").replace("_", "-").split("-"))
    for where, words in (("--name", tokens), ("folder", {results.name.lower()})):
        for tag in words & set(GPU_TAGS):
            if tag not in model:
                raise PromoteError(f"{where} says {tag} but the run was on {gpu}")


def _append_rows(index: Path, rows: str) -> None:
    """Append table rows; start the index, or a fresh table, if it does not end in one."""
    text = index.read_text() if index.exists() else ""
    if not text:
        text = ARCHIVE_HEADER
    else:
        lines = text.rstrip("\n").splitlines()
        text = text.rstrip("\n") + "\n"
        if not lines or not lines[-1].lstrip().startswith("|"):
            text += "\n" + _TABLE_HEADER
    index.write_text(text + rows)
