"""Loading result documents into the tables the plots draw (pure functions of the files)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results import ResultsError, load

__all__ = ["Dataset", "load_dataset"]


def _expand(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob("*.json"))
        elif p.exists():
            files.append(p)
        else:
            raise ResultsError(f"{p}: no such file or folder")
    return files


@dataclass(frozen=True)
class Dataset:
    """Bench records (latest run wins per kernel and problem, except that a check-only record
    never replaces a timed one), codegen records, environments."""

    bench: tuple[dict[str, Any], ...]
    codegen: tuple[dict[str, Any], ...]
    environments: tuple[dict[str, Any], ...]
    sources: tuple[str, ...]

    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.bench if r["status"] == "ok" and r.get("timing")]

    def problems(self) -> list[str]:
        """Problem keys with at least one timed record, ordered by dtype then size."""
        keys = {r["problem_key"]: r["problem"] for r in self.ok()}
        return sorted(
            keys,
            key=lambda k: (
                keys[k]["dtype"],
                keys[k]["m"] * keys[k]["n"] * keys[k]["k"],
                keys[k]["k"],
                k,
            ),
        )

    def backends(self) -> list[str]:
        return list(dict.fromkeys(r["backend"] for r in self.bench if r["backend"] != "cublas"))

    def final_kernels(self) -> dict[str, str]:
        """backend -> id of its highest-rung kernel with timed results (the backend's final)."""
        best: dict[str, tuple[int, str]] = {}
        for r in self.ok():
            if r["backend"] == "cublas":
                continue
            cur = best.get(r["backend"])
            if cur is None or r["rung"] > cur[0]:
                best[r["backend"]] = (r["rung"], r["kernel"])
        return {b: k for b, (_, k) in sorted(best.items())}

    def lookup(self, kernel: str, problem_key: str) -> dict[str, Any] | None:
        for r in self.bench:
            if r["kernel"] == kernel and r["problem_key"] == problem_key:
                return r
        return None

    def cublas(self, problem_key: str, backend: str | None = None) -> dict[str, Any] | None:
        """The cuBLAS record for a problem, preferring the run that measured ``backend``."""
        cands = [r for r in self.ok() if r["rung"] == 0 and r["problem_key"] == problem_key]
        if backend:
            runs = {
                r["_run"]
                for r in self.bench
                if r["backend"] == backend and r["problem_key"] == problem_key
            }
            same = [r for r in cands if r["_run"] in runs]
            cands = same or cands
        return cands[-1] if cands else None


def load_dataset(paths: Iterable[str | Path]) -> Dataset:
    files = _expand(paths)
    if not files:
        raise ResultsError("no result files found")
    docs = sorted((load(f) | {"_file": str(f)} for f in files), key=lambda d: d.get("created", ""))
    bench: dict[tuple[str, str], dict[str, Any]] = {}
    codegen: dict[tuple[str, str], dict[str, Any]] = {}
    envs = []
    for i, d in enumerate(docs):
        if d["kind"] == "bench":
            envs.append(d["environment"] | {"created": d.get("created"), "file": d["_file"]})
            for r in d["records"]:
                key = (r["kernel"], r["problem_key"])
                old = bench.get(key)
                # A later check-only record confirms correctness but must not hide a timing.
                if old and old.get("timing") and not r.get("timing") and r["status"] == "ok":
                    continue
                bench[key] = r | {"_run": i}
        else:
            for r in d["records"]:
                codegen[(r["kernel"], r["arch"])] = r
    return Dataset(
        tuple(bench.values()), tuple(codegen.values()), tuple(envs), tuple(d["_file"] for d in docs)
    )
