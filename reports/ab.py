"""``python -m reports ab RUN ...``: the verdict of a config A/B.

An A/B is a bench run with ``--config own --config X`` (README, "Configurations"): at each
shape the kernel's own choice and one or more forced configs, cuBLAS beside them in the same
run. For every (run, kernel, shape) this pairs the own choice with each forced config that
differs from it and gives

* **forced / own**: the forced config's median time over the own choice's (below 1: the forced
  config ran faster), the number the backend READMEs state their A/B rules in;
* **% of cuBLAS** and **TFLOPS/GHz** of both and of cuBLAS, and the own choice's SM clock and
  power (the GPUs run power-limited: a ratio is compared within one run only);

then, per group (``by="forced"``: the forced config's label; ``"own"``: the own choice's, e.g.
a register twin A/B judged per tile family; ``"change"``: the knobs the forced config sets
otherwise than the own choice, the ``X`` of ``--config X`` whatever pick it overrode, which is
what an A/B rule judges), the geomean of forced / own, how many shapes the
forced config ran faster and the worst ratio, and the same over every pair. A record that
failed its check is named and left out: an A/B never counts an incorrect config.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from harness.configs import format_knob
from harness.fitcost import config_label
from harness.gemm import Problem
from harness.records import BenchRecord
from harness.results import Document
from harness.summary import text_table

__all__ = ["BY", "Pair", "format_ab", "pairs"]

#: What a group of pairs shares: the forced config's label, the own choice's, or the knobs the
#: forced config changes.
BY = ("forced", "own", "change")


@dataclass(frozen=True)
class Pair:
    """One forced config beside the kernel's own choice at one shape of one run."""

    kernel: str
    problem: Problem
    own: BenchRecord
    forced: BenchRecord
    cublas: BenchRecord | None

    @property
    def ratio(self) -> float:
        """The forced config's median time over the own choice's (below 1: faster)."""
        assert self.own.median_ms and self.forced.median_ms
        return self.forced.median_ms / self.own.median_ms

    @property
    def change(self) -> str:
        """The knobs the forced config sets otherwise than the own choice, as ``k=v,...`` in
        the forced config's order (what ``--config k=v,...`` overrode)."""
        own = dict(self.own.config_values or {})
        forced = dict(self.forced.config_values or {})
        moved = [f"{k}={format_knob(v)}" for k, v in forced.items() if own.get(k) != v]
        return ",".join(moved) or str(self.forced.config)

    def label(self, which: str) -> str:
        """The own choice's tile (its shared knobs), or the forced config's with every knob
        set otherwise than the own choice's named."""
        own = dict(self.own.config_values or {})
        if which == "own":
            return config_label(own, own) or str(self.own.config)
        return config_label(self.forced.config_values, own) or str(self.forced.config)


def pairs(docs: Iterable[Document], warn: Callable[[str], None] = lambda _m: None) -> list[Pair]:
    """Every (own choice, forced config) pair of ``docs``, run by run; records that failed
    (wrong, error, timeout) are named through ``warn`` and left out."""
    out: list[Pair] = []
    for doc in docs:
        cublas: dict[Problem, BenchRecord] = {}
        own: dict[tuple[str, Problem], BenchRecord] = {}
        forced: dict[tuple[str, Problem], list[BenchRecord]] = {}
        for rec in doc.bench:
            if rec.backend == "cublas":
                if rec.timed:
                    cublas[rec.problem] = rec
                continue
            if rec.config is None or rec.selected is None:
                continue  # no config space: nothing to compare
            if rec.status.failed:
                warn(
                    f"{doc.source}: {rec.kernel} [{rec.config}] at {rec.problem.key}: "
                    f"{rec.status.value}, left out"
                )
                continue
            if not rec.timed:
                continue  # refused as declared (unsupported), or a check-only run
            key = (rec.kernel, rec.problem)
            if rec.selected:
                own[key] = rec
            else:
                forced.setdefault(key, []).append(rec)
        for key, recs in forced.items():
            mine = own.get(key)
            if mine is None:
                continue
            for rec in recs:
                if rec.config != mine.config:
                    out.append(Pair(key[0], key[1], mine, rec, cublas.get(key[1])))
    return out


def _summary(name: str, group: list[Pair]) -> str:
    ratios = [p.ratio for p in group]
    worst = max(group, key=lambda p: p.ratio)
    mean = statistics.geometric_mean(ratios)
    return (
        f"{name}: {len(group)} shape(s), forced / own time {mean:.3f} (geomean), "
        f"{sum(r < 1 for r in ratios)} faster, worst {worst.ratio:.3f} ({worst.problem.key})"
    )


def _pct(rec: BenchRecord | None) -> str:
    return f"{rec.pct_of_cublas:.1f}" if rec and rec.pct_of_cublas else "-"


def _per_ghz(rec: BenchRecord | None) -> str:
    return f"{rec.tflops_per_ghz:.0f}" if rec and rec.tflops_per_ghz else "-"


def _groups(found: list[Pair], by: str) -> Iterator[tuple[str, list[Pair]]]:
    """(title, pairs) per kernel and forced config (its name: one config whatever the own
    choice it ran beside), per kernel and own choice's tile, or per kernel and the knobs the
    forced config changes."""
    keys: dict[tuple[str, str], list[Pair]] = {}
    titles: dict[tuple[str, str], str] = {}
    for p in found:
        if by == "forced":
            key = (p.kernel, str(p.forced.config))
            titles[key] = config_label(p.forced.config_values) or key[1]
        elif by == "change":
            key = (p.kernel, p.change)
            titles[key] = key[1]
        else:
            key = (p.kernel, p.label("own"))
            titles[key] = key[1]
        keys.setdefault(key, []).append(p)
    for key, group in keys.items():
        yield f"{key[0]}, {by} {titles[key]}", group


def format_ab(found: list[Pair], by: str = "forced") -> str:
    """The pairs as text: one table and summary line per group, then the summary of all."""
    if by not in BY:
        raise ValueError(f"by={by!r}: one of {', '.join(BY)}")
    if not found:
        return "no A/B pairs: no run here timed a forced config beside its kernel's own choice"
    blocks = []
    for name, group in _groups(found, by):
        rows = [
            (
                p.problem.key,
                p.label("own"),
                _pct(p.own),
                p.label("forced"),
                _pct(p.forced),
                f"{p.ratio:.3f}",
                f"{_per_ghz(p.own)}/{_per_ghz(p.forced)}/{_per_ghz(p.cublas)}",
                _telemetry(p.own),
            )
            for p in sorted(group, key=lambda p: p.ratio)
        ]
        header = (
            "shape",
            "own",
            "% cuBLAS",
            "forced",
            "% cuBLAS",
            "forced/own",
            "TFLOPS/GHz own/forced/cuBLAS",
            "MHz, W (own)",
        )
        blocks.append(_summary(name, group) + "\n" + text_table(header, rows, "llrlrrrr", "  "))
    blocks.append(_summary("all pairs", found))
    return "\n\n".join(blocks)


def _telemetry(rec: BenchRecord) -> str:
    t = rec.telemetry
    if t is None or t.sm_clock_mhz_mean is None:
        return "-"
    watts = f", {t.power_w_mean:.0f}" if t.power_w_mean is not None else ""
    return f"{t.sm_clock_mhz_mean:.0f}{watts}"
