"""``python -m reports gpus RESULTS ...``: how a kernel moves from one GPU to another.

The bars are relative to cuBLAS in the same run, so a selection tuned on one GPU can hold there
and miss on another because the reference moved, not the kernel. This pairs every timing of
one (kernel, config, shape) on GPU A with a timing of the same on GPU B (cuBLAS's per shape)
and gives, per kernel and M band (or per config),

* **TFLOPS/GHz B / A**: the work per clock the same code does on B over A (geomean over the
  pairs; a clock-free number, the GPUs being power-limited at different clocks);
* **SM clock B / A**: what the clock did meanwhile;
* **cuBLAS TFLOPS/GHz B / A** over the same shapes, and the kernel's ratio to it: below 1, a
  kernel that matched cuBLAS on A falls behind it on B by that much at the same configs.

Only correct, timed records count; each side of a pair is the geomean of its timings (several
runs of the same config at the same shape).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from harness.fitcost import M_BANDS, band_name, config_label
from harness.records import BenchRecord
from harness.results import Document
from harness.summary import text_table

__all__ = ["BY", "GpuPair", "format_gpus", "gpu_names", "gpu_pairs", "gpus_markdown"]

#: How the pairs of a kernel are grouped: by the shape's M band or by the config.
BY = ("band", "config")

_Side = dict[str, list[BenchRecord]]  # GPU name -> records


@dataclass(frozen=True)
class GpuPair:
    """One (kernel, config, shape) timed on both GPUs, with cuBLAS's timings of the shape."""

    kernel: str
    label: str
    m: int
    per_ghz: tuple[float, float]  # A, B
    clock_mhz: tuple[float, float]
    cublas_per_ghz: tuple[float, float] | None


def _gpu(doc: Document, rec: BenchRecord) -> str | None:
    name = (rec.gpu or {}).get("name") or doc.environment.get("gpu")
    return str(name) if name else None


def gpu_names(docs: Iterable[Document]) -> list[str]:
    """The GPU names the bench records of ``docs`` ran on, most records first."""
    count: dict[str, int] = defaultdict(int)
    for doc in docs:
        for rec in doc.bench:
            name = _gpu(doc, rec)
            if name:
                count[name] += 1
    return sorted(count, key=lambda n: (-count[n], n))


def _match(names: Sequence[str], wanted: str) -> str:
    hits = [n for n in names if wanted.lower() in n.lower()]
    if len(hits) != 1:
        found = ", ".join(names) or "none"
        why = "no GPU" if not hits else f"{len(hits)} GPUs"
        raise ValueError(f"--gpus {wanted!r}: {why} of the results match (their GPUs: {found})")
    return hits[0]


def _usable(rec: BenchRecord) -> bool:
    return bool(
        rec.timed
        and rec.tflops_per_ghz
        and rec.telemetry is not None
        and rec.telemetry.sm_clock_mhz_mean
        and not (rec.check is not None and not rec.check.passed)
    )


def _gm(values: Iterable[float]) -> float:
    return statistics.geometric_mean(list(values))


def gpu_pairs(
    docs: Iterable[Document], a: str | None = None, b: str | None = None
) -> tuple[str, str, list[GpuPair]]:
    """(GPU A, GPU B, every pair); ``a`` and ``b`` pick the GPUs by a part of their names
    (default: A the first document's GPU, B the other GPU with the most records, so that
    ``gpus OLD_GPU/ NEW_GPU/`` reads old -> new)."""
    docs = list(docs)
    names = gpu_names(docs)
    if a is None and b is None:
        if len(names) < 2:
            raise ValueError(
                f"the results ran on {len(names)} GPU(s) ({', '.join(names) or 'none'}): "
                "two are needed"
            )
        a = next(n for d in docs for n in gpu_names([d])[:1])
        b = next(n for n in names if n != a)
    elif a is None or b is None:
        raise ValueError("--gpus takes two names (A B) or none")
    gpu_a, gpu_b = _match(names, a), _match(names, b)
    if gpu_a == gpu_b:
        raise ValueError(f"--gpus {a} {b}: both name {gpu_a}")
    kernels: dict[tuple[str, str, str], _Side] = defaultdict(lambda: defaultdict(list))
    cublas: dict[str, _Side] = defaultdict(lambda: defaultdict(list))
    for doc in docs:
        for rec in doc.bench:
            gpu = _gpu(doc, rec)
            if gpu not in (gpu_a, gpu_b) or not _usable(rec):
                continue
            if rec.backend == "cublas":
                cublas[rec.problem.key][gpu].append(rec)
            elif rec.config_values is not None:
                kernels[(rec.kernel, str(rec.config), rec.problem.key)][gpu].append(rec)
    out = []
    for (kernel, _config, key), side in kernels.items():
        if not (side[gpu_a] and side[gpu_b]):
            continue
        first = side[gpu_a][0]
        ref = cublas.get(key, {})
        out.append(
            GpuPair(
                kernel=kernel,
                label=config_label(first.config_values) or str(first.config),
                m=first.problem.m,
                per_ghz=(_per_ghz(side[gpu_a]), _per_ghz(side[gpu_b])),
                clock_mhz=(_clock(side[gpu_a]), _clock(side[gpu_b])),
                cublas_per_ghz=(
                    (_per_ghz(ref[gpu_a]), _per_ghz(ref[gpu_b]))
                    if ref.get(gpu_a) and ref.get(gpu_b)
                    else None
                ),
            )
        )
    return gpu_a, gpu_b, out


def _per_ghz(recs: list[BenchRecord]) -> float:
    return _gm(r.tflops_per_ghz for r in recs if r.tflops_per_ghz)


def _clock(recs: list[BenchRecord]) -> float:
    return _gm(r.telemetry.sm_clock_mhz_mean for r in recs if r.telemetry)  # type: ignore[misc]


def _band(m: int) -> str:
    return next(band_name(lo, hi) for lo, hi in M_BANDS if m >= lo and (hi is None or m <= hi))


def _groups(found: list[GpuPair], by: str) -> Iterator[tuple[str, list[tuple[str, list[GpuPair]]]]]:
    kernels: dict[str, dict[str, list[GpuPair]]] = defaultdict(lambda: defaultdict(list))
    for p in found:
        kernels[p.kernel][_band(p.m) if by == "band" else p.label].append(p)
    order = [band_name(lo, hi) for lo, hi in M_BANDS]
    for kernel in sorted(kernels):
        groups = kernels[kernel]
        keys = (
            [k for k in order if k in groups]
            if by == "band"
            else sorted(groups, key=lambda k: (-len(groups[k]), k))
        )
        names = dict(zip(keys, keys)) if by == "band" else _without_common(keys)
        yield kernel, [(names[k], groups[k]) for k in keys]


def _without_common(labels: list[str]) -> dict[str, str]:
    """Each config label without the ``k=v`` knobs every label of its kernel shares (a
    backend's own knobs at one value throughout, e.g. ``persistent=True``): they tell the rows
    nothing apart."""
    tokens = [label.split(" ") for label in labels]
    common = set.intersection(*({t for t in ts if "=" in t} for ts in tokens))
    return {label: " ".join(t for t in ts if t not in common) for label, ts in zip(labels, tokens)}


def _row(name: str, group: list[GpuPair]) -> tuple[str, ...]:
    own = _gm(p.per_ghz[1] / p.per_ghz[0] for p in group)
    clock = _gm(p.clock_mhz[1] / p.clock_mhz[0] for p in group)
    ref = [p.cublas_per_ghz for p in group if p.cublas_per_ghz]
    if ref:
        cub = _gm(b / a for a, b in ref)
        against = _gm(
            (p.per_ghz[1] / p.per_ghz[0]) / (p.cublas_per_ghz[1] / p.cublas_per_ghz[0])
            for p in group
            if p.cublas_per_ghz
        )
        ref_cols = (f"{cub:.3f}", f"{against:.3f}")
    else:
        ref_cols = ("-", "-")
    return (name, str(len(group)), f"{own:.3f}", f"{clock:.3f}", *ref_cols)


def format_gpus(gpu_a: str, gpu_b: str, found: list[GpuPair], by: str = "band") -> str:
    """The pairs as text: one table per kernel, a row per M band (or config) and one for all."""
    if by not in BY:
        raise ValueError(f"by={by!r}: one of {', '.join(BY)}")
    if not found:
        return (
            f"no pairs: no config of any kernel was timed at the same shape on {gpu_a} and {gpu_b}"
        )
    header = (
        "M" if by == "band" else "config",
        "pairs",
        "TFLOPS/GHz B/A",
        "SM clock B/A",
        "cuBLAS TFLOPS/GHz B/A",
        "against cuBLAS B/A",
    )
    blocks = [f"A = {gpu_a}, B = {gpu_b}: the same config at the same shape on both"]
    for kernel, groups in _groups(found, by):
        rows = [_row(name, group) for name, group in groups]
        rows.append(_row("all", [p for _, group in groups for p in group]))
        blocks.append(f"{kernel}\n" + text_table(header, rows, "lrrrrr", "  "))
    return "\n\n".join(blocks)


def gpus_markdown(text: str, command: str) -> str:
    """``format_gpus``'s tables as a Markdown page that names the command that made them."""
    return (
        "# The same configs on two GPUs\n\n"
        f"Rendered by `{command}`; every number comes from the result files it names. Per "
        "kernel and M band (or config): every config timed at the same shape on both GPUs, its "
        "TFLOPS/GHz and SM clock on B over A (geomeans over the pairs), cuBLAS's TFLOPS/GHz "
        "over the same shapes, and the kernel's ratio over cuBLAS's: below 1, the kernel "
        "stands that much further behind cuBLAS on B than on A at the same configs, which a "
        "selection tuned on A does not see.\n\n"
        f"```text\n{text}\n```\n"
    )
