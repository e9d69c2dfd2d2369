"""``python -m harness fit-cost``: the rung-8 cost model against measured tuning runs.

Reads ``bench --tune`` results (tuning suites only: the CLI refuses held-out ones), turns every
timed rung-8 record into a :class:`harness.tile_cost.Sample`, cross-validates the fit (k folds
by problem: a problem's configs are never split between fit and test) and fits on everything.
The report gives the current constants' error, the selection's ceiling (:func:`ceiling`: the
fastest timed config against cuBLAS, per M band), what each run's own choice cost against the
fastest config it timed (:func:`own_choice`: the heuristic with its rules, as it stood when the
run ran, where the model's "first choice" ranks every timed config), with a base module what its
heuristic picks today cost where a run timed the pick (:func:`current_choice`), the out-of-fold
error and choice regret, and the fitted constants to paste into ``harness.tile_cost.HOPPER``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from harness.gemm import Problem
from harness.problems import RANDOM_COUNT, held_out_m_share
from harness.protocol import Rung
from harness.records import BenchRecord
from harness.results import Document
from harness.tile_cost import (
    HOPPER,
    GemmConfig,
    Sample,
    TileCostModel,
    cross_validate,
    evaluate,
    fit,
    named,
)

__all__ = [
    "Priced",
    "ceiling",
    "config_label",
    "current_choice",
    "model_config",
    "moves",
    "own_choice",
    "report",
    "samples",
]

#: A rung-8 module's heuristic priced by a given model (``_heuristic(problem, model)``).
Heuristic = Callable[[Problem, TileCostModel], GemmConfig]
#: A module's rule that reads the GPU (``ConfigSpace.on_gpu``): the config to run instead of the
#: heuristic's on that GPU model, and why; None to keep it.
GpuRule = Callable[[Problem, GemmConfig, str], "tuple[GemmConfig, str] | None"]
#: A backend's rule for which of its kernels the shared cost model prices: given a record's
#: config values (shared knobs, legacy names mapped, and the backend's own), whether its
#: timing is of the kernel the model prices for that tile. Declared as ``priced`` in a rung-8
#: module (``fit-cost --base`` reads it); :data:`_PRICED_KNOBS` is the rule without one.
Priced = Callable[[Mapping[str, Any]], bool]

_FIELDS = tuple(f.name for f in dataclasses.fields(GemmConfig))
#: Records written before the shared vocabulary (Gluon's rung 8 named the tile block_m x
#: block_n; neither rung 8 had stream-K, so a missing knob reads as its default).
_LEGACY_NAMES = {"block_m": "tile_m", "block_n": "tile_n"}
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(GemmConfig)}
#: A backend's own knobs that change the kernel a tile runs, at the value the shared cost
#: model prices: a timing at another value is of another kernel (Gluon's ``a_operand=regs``,
#: A in registers: a variant until timed; backends/gluon/README.md, "Twenty-third version").
#: The rule where no backend's ``priced`` says otherwise (the reports read records with it;
#: ``fit-cost --base`` takes the module's: Gluon prices a three-box tile by its register
#: kernel, its only one).
_PRICED_KNOBS = {"a_operand": "smem"}


def model_config(
    values: Mapping[str, Any] | None, priced: Priced | None = None
) -> GemmConfig | None:
    """A record's ``config_values`` in the shared vocabulary: legacy names mapped, knobs the
    record predates at their defaults, a backend's own knobs dropped; None for a config of
    another vocabulary (or none), or one whose own knobs run another kernel than the model
    prices (``priced``, the backend's rule; without one ``_PRICED_KNOBS``)."""
    if not values:
        return None
    knobs = {_LEGACY_NAMES.get(k, k): v for k, v in values.items()}
    if not {"tile_m", "tile_n", "cluster"} <= set(knobs):
        return None
    if not (priced or _priced_by_default)(knobs):
        return None
    return _shared(knobs)


def _priced_by_default(knobs: Mapping[str, Any]) -> bool:
    """Every knob of :data:`_PRICED_KNOBS` at its priced value (or absent: a record older than
    the knob)."""
    return all(knobs.get(k, v) == v for k, v in _PRICED_KNOBS.items())


def _shared(knobs: Mapping[str, Any]) -> GemmConfig:
    """The shared knobs of ``knobs`` (a missing one at its default)."""
    return GemmConfig(**{f: knobs.get(f, _DEFAULTS[f]) for f in _FIELDS})


#: Stream-K runs created before this ran the unbounded tail (every program shared it, before
#: ``SK_MIN_ITERS``; docs/design.md, "Stream-K"): where today's schedule gives the tail to
#: fewer programs, such a timing is of another kernel, and a fit leaves it out.
SK_BOUNDED_SINCE = _dt.datetime(2026, 12, 4, 21, 0, tzinfo=_dt.UTC)


def _unbounded_tail(doc: Document, problem: Problem, config: GemmConfig) -> bool:
    """Whether ``doc`` timed stream-K ``config`` on ``problem`` under the schedule before
    ``SK_MIN_ITERS`` where that schedule differs from today's (``SK_BOUNDED_SINCE``)."""
    if not config.stream_k:
        return False
    try:
        created = _dt.datetime.fromisoformat(doc.created or "")
    except ValueError:
        created = None  # no date: as old as any
    if created is not None:
        created = created if created.tzinfo else created.replace(tzinfo=_dt.UTC)
        if created >= SK_BOUNDED_SINCE:
            return False
    sms = int(doc.environment.get("sm_count") or HOPPER.num_sms)
    sk = config.schedule(problem, sms)
    return sk.sk_tiles > 0 and sk.tail_programs < sk.programs


def _as_timed(config: GemmConfig) -> GemmConfig:
    """``config`` as :func:`samples` keys its timings: the shared knobs only (a backend's own
    dropped), raster m and group 8 (knobs the model cannot see)."""
    return dataclasses.replace(_shared(dataclasses.asdict(config)), raster="m", group=8)


def samples(
    docs: Iterable[Document], backends: Sequence[str] | None = None, priced: Priced | None = None
) -> list[Sample]:
    """One sample per (GPU, problem, config as the model sees it) from the timed rung-8 records
    of ``docs``: the median time; where knobs the model cannot see (a backend's own, or raster
    and group) give several records of one model config, the fastest of them. Records of a
    kernel the model does not price (``priced``, the backend's rule: :func:`model_config`) are
    left out, as are clusters of more than two CTAs (the model prices one CTA or a pair) and
    stream-K timings of the schedule before ``SK_MIN_ITERS`` where today's differs
    (:data:`SK_BOUNDED_SINCE`)."""
    best: dict[tuple[str, Problem, GemmConfig], Sample] = {}
    for gpu, doc, rec in _timed_rung8(docs, backends):
        shared = model_config(rec.config_values, priced)
        if shared is None:
            continue  # no config, or one of another vocabulary
        if shared.cluster > 2:
            # No constant prices a cluster of four yet (CuTeDSL's tune-only swapped clusters):
            # seen as one CTA, its timings would move its tile's efficiency.
            continue
        config = _as_timed(shared)
        if _unbounded_tail(doc, rec.problem, config):
            continue
        seconds = rec.median_ms * 1e-3  # type: ignore[operator]
        key = (gpu, rec.problem, config)
        if key not in best or seconds < best[key].seconds:
            best[key] = Sample(
                rec.problem, config, seconds, f"{gpu}@{doc.source}:{rec.kernel}", doc.source, gpu
            )
    return list(best.values())


def _timed_rung8(
    docs: Iterable[Document], backends: Sequence[str] | None
) -> Iterator[tuple[str, Document, BenchRecord]]:
    """(GPU, document, record) for every timed rung-8 record of ``backends`` (all if none)."""
    for doc in docs:
        gpu = str(doc.environment.get("gpu"))
        for rec in doc.bench:
            if rec.rung == Rung.SHAPE_ADAPTIVE and rec.timed:
                if not backends or rec.backend in backends:
                    yield gpu, doc, rec


#: The M bands :func:`ceiling` reports (decode, the narrow covers, mid M, prefill).
M_BANDS = ((1, 64), (65, 256), (257, 1024), (1025, 4096), (4097, None))


def ceiling(
    docs: Iterable[Document], backends: Sequence[str] | None = None, floor: float = 0.90
) -> list[str]:
    """What a perfect choice among the timed configs would reach: per (GPU, problem), the
    fastest timed rung-8 config of a run against cuBLAS in the same run (the best run where
    several timed it), as a geomean per M band with the problems below ``floor``. A band short
    of 1.00 here is the kernels' gap, not the selection's: no cost model closes it. Where every
    band was timed, the line ends with the bands weighed as a held-out suite draws M
    (:func:`_held_out_weighted`): the geomean a perfect selection would reach on the suite the
    rung-8 bar is read on, and how many of a held-out suite's shapes would fall below
    ``floor`` with a perfect pick (each band's share of tuning shapes below it, weighed the same
    way): the part of the bar's "no shape below" that no selection can meet. (Only the configs
    a run timed count: ``--tune-top N`` leaves the rest of the menu out, so the ceiling is a
    floor on what the kernels can reach; and tuning suites hold A/B shapes picked where a
    kernel lost, so the count leans high.)"""
    best: dict[tuple[str, Problem], float] = {}
    for gpu, _, rec in _timed_rung8(docs, backends):
        if rec.pct_of_cublas:
            key = (gpu, rec.problem)
            best[key] = max(best.get(key, 0.0), rec.pct_of_cublas / 100)
    lines = []
    for gpu in sorted({g for g, _ in best}):
        bands = dict(_by_band((p, r) for (g, p), r in best.items() if g == gpu))
        parts = [
            f"{band} {statistics.geometric_mean(rs):.3f} ({len(rs)}, "
            f"{sum(r < floor for r in rs)} < {floor:.2f})"
            for band, rs in bands.items()
        ]
        ratios = [r for (g, _), r in best.items() if g == gpu]
        held = _held_out_weighted(bands)
        tail = ""
        if held:
            below = RANDOM_COUNT * sum(
                held_out_m_share(lo, hi) * sum(r < floor for r in rs) / len(rs)
                for (lo, hi), rs in zip(M_BANDS, bands.values(), strict=True)
            )
            tail = (
                f"; weighed as a held-out suite draws M: {held:.3f}, "
                f"{below:.1f} of its {RANDOM_COUNT} shapes below {floor:.2f}"
            )
        lines.append(
            f"ceiling on {gpu} (fastest timed config / cuBLAS, same run): all "
            f"{statistics.geometric_mean(ratios):.3f} ({len(ratios)} problems); "
            + "; ".join(parts)
            + tail
        )
    return lines


def _held_out_weighted(bands: Mapping[str, list[float]]) -> float | None:
    """The geomeans of ``bands`` (as :func:`_by_band` yields them, in :data:`M_BANDS` order)
    weighed by the share of a held-out suite's shapes in each band (``held_out_m_share``:
    about 36 % at M <= 64, 16 % in each band above): what the ceiling reads on the suite the
    rung-8 bar is held to. None unless every band was timed."""
    if len(bands) != len(M_BANDS):
        return None
    logs = [
        held_out_m_share(lo, hi) * math.log(statistics.geometric_mean(rs))
        for (lo, hi), rs in zip(M_BANDS, bands.values(), strict=True)
    ]
    return math.exp(sum(logs))


def held_out_weighted(values: Iterable[tuple[Problem, float]]) -> float | None:
    """The geomean of ``values`` (a ratio per problem) with each of :data:`M_BANDS` weighed by
    its share of a held-out suite's shapes (``held_out_m_share``) instead of by how many of
    the suite's shapes it drew: what an average draw would read, so that two seeds whose draws
    lean on different bands compare. None unless every band holds a value."""
    return _held_out_weighted(dict(_by_band(values)))


def own_choice(docs: Iterable[Document], backends: Sequence[str] | None = None) -> list[str]:
    """What the kernels' own choices cost in the tuning runs: per (GPU, run, kernel, problem),
    the record the run marked as the kernel's choice against the fastest config the same run
    timed, as a mean per GPU and M band with the worst problem. It is the heuristic as it stood
    when each run ran (its rules included: swap covers, clusters a tile may pick), which the
    model's "first choice" over every timed config is not; a run that did not time the
    kernel's choice adds nothing."""
    fastest: dict[tuple[str, str, str, Problem], float] = {}
    chosen: dict[tuple[str, str, str, Problem], float] = {}
    for gpu, doc, rec in _timed_rung8(docs, backends):
        key = (gpu, doc.source, rec.kernel, rec.problem)
        ms = rec.median_ms or 0.0
        fastest[key] = min(fastest.get(key, ms), ms)
        if rec.selected:
            chosen[key] = ms
    lines = []
    for gpu in sorted({k[0] for k in chosen}):
        regret = [
            (k[3], chosen[k] / fastest[k] - 1.0) for k in chosen if k[0] == gpu and fastest[k] > 0
        ]
        if not regret:
            continue
        worst = max(regret, key=lambda pr: pr[1])
        parts = [
            f"{band} {100 * statistics.mean(rs):.1f} % ({len(rs)})" for band, rs in _by_band(regret)
        ]
        lines.append(
            f"own choice on {gpu} (each run's heuristic against the fastest config it timed): "
            f"{100 * statistics.mean(r for _, r in regret):.1f} % slower (mean, {len(regret)} "
            f"choices), {100 * worst[1]:.1f} % worst ({worst[0].key}); " + "; ".join(parts)
        )
    return lines


def current_choice(
    docs: Iterable[Document],
    heuristic: Heuristic,
    model: TileCostModel,
    kernel: str,
    worst: int = 5,
    on_gpu: GpuRule | None = None,
) -> list[str]:
    """Where the heuristic as it stands (``heuristic`` priced by ``model``: a module's own
    choice with its rules, moved by ``on_gpu`` on the GPU a run timed, no tuned table) trails
    what the runs of ``kernel`` measured: per
    (GPU, problem) whose current pick some run timed, the pick's time over the fastest config
    that run timed (the latest such run), as a mean per M band, then the ``worst`` problems
    with what beat the pick (% of cuBLAS in that run). :func:`own_choice` judges each run's
    choice as it stood then; this judges today's picks, on the shapes the runs timed (tuning
    shapes: in sample), and names the A/Bs worth running next. Problems no run timed the pick
    of are counted, not judged."""
    # (GPU, problem) -> run (created, source) -> config name -> its fastest record there
    runs: dict[tuple[str, Problem], dict[tuple[str, str], dict[str, BenchRecord]]] = {}
    for gpu, doc, rec in _timed_rung8(docs, None):
        if rec.kernel != kernel or not rec.config:
            continue
        run = (doc.created or "", doc.source or "")
        timed = runs.setdefault((gpu, rec.problem), {}).setdefault(run, {})
        old = timed.get(rec.config)
        if old is None or (rec.median_ms or math.inf) < (old.median_ms or math.inf):
            timed[rec.config] = rec
    lines = []
    # the model sees no GPU: one pick per problem, then the GPU's rule where there is one
    picks = {p: heuristic(p, model) for p in {p for _, p in runs}}
    for gpu in sorted({g for g, _ in runs}):
        problems = {p: r for (g, p), r in runs.items() if g == gpu}
        judged: list[tuple[Problem, float, BenchRecord, BenchRecord, GemmConfig]] = []
        for problem, by_run in problems.items():
            pick = picks[problem]
            moved = on_gpu(problem, pick, gpu) if on_gpu is not None else None
            pick = moved[0] if moved else pick
            seen = [by_run[run] for run in sorted(by_run) if str(pick) in by_run[run]]
            if not seen:
                continue
            own = seen[-1][str(pick)]
            best = min(seen[-1].values(), key=lambda r: r.median_ms or math.inf)
            ratio = (own.median_ms or math.inf) / (best.median_ms or math.inf)
            judged.append((problem, ratio - 1.0, own, best, pick))
        if not judged:
            continue
        parts = [
            f"{band} {100 * statistics.mean(rs):.1f} % ({len(rs)})"
            for band, rs in _by_band((j[0], j[1]) for j in judged)
        ]
        mean = 100 * statistics.mean(j[1] for j in judged)
        lines.append(
            f"today's choice on {gpu} (the heuristic now, where a run timed its pick: against "
            f"the fastest config that run timed): {mean:.1f} % slower (mean, {len(judged)} of "
            f"{len(problems)} problems; no run timed the others' pick); " + "; ".join(parts)
        )
        for problem, r, own, best, pick in sorted(judged, key=lambda j: -j[1])[:worst]:
            if r <= 0:
                break
            defaults = _knob_defaults(pick)
            lines.append(
                f"    {problem.key:<24} +{100 * r:4.1f} %  {_short(own, defaults)} ({_pct(own)}) "
                f"< {_short(best, defaults)} ({_pct(best)})"
            )
    return lines


def _knob_defaults(config: GemmConfig) -> dict[str, Any]:
    """Every knob's default in ``config``'s class (the shared ones and the backend's own)."""
    return {f.name: f.default for f in dataclasses.fields(config)}


def config_label(
    values: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None = None
) -> str:
    """A record's config (its ``config_values``), short: the shared knobs' label, then every
    other knob off its value in ``defaults`` or not named there (``128x224 swap
    a_operand=regs``, ``128x144 swap raster=n``; default: the shared vocabulary's defaults and
    :data:`_PRICED_KNOBS`); "" for a record without values of the shared vocabulary."""
    if defaults is None:
        defaults = {**_DEFAULTS, **_PRICED_KNOBS}
    knobs = {_LEGACY_NAMES.get(k, k): v for k, v in (values or {}).items()}
    if not {"tile_m", "tile_n", "cluster"} <= set(knobs):
        return ""
    label = {"tile_m", "tile_n", "cluster", "swap_ab", "split_k", "stream_k"}
    unnamed = object()  # a knob ``defaults`` does not name is always shown
    extra = [
        f"{k}={v}" for k, v in knobs.items() if k not in label and v != defaults.get(k, unnamed)
    ]
    return " ".join([_shared(knobs).label, *extra])


def _short(rec: BenchRecord, defaults: Mapping[str, Any]) -> str:
    """:func:`config_label` of ``rec``, or its config's name where it has no such values."""
    return config_label(rec.config_values, defaults) or str(rec.config)


def _pct(rec: BenchRecord) -> str:
    return f"{rec.pct_of_cublas:.1f} %" if rec.pct_of_cublas else "no cuBLAS ratio"


def band_name(lo: int, hi: int | None) -> str:
    """The name of the M band ``lo..hi`` of :data:`M_BANDS` (``"257-1024"``, ``"> 4096"``)."""
    return f"{lo}-{hi}" if hi else f"> {lo - 1}"


def _by_band(values: Iterable[tuple[Problem, float]]) -> Iterator[tuple[str, list[float]]]:
    """(name, values) of each of :data:`M_BANDS` that holds a problem of ``values``."""
    values = list(values)
    for lo, hi in M_BANDS:
        band = [v for p, v in values if lo <= p.m and (hi is None or p.m <= hi)]
        if band:
            yield f"M {band_name(lo, hi)}", band


def moves(
    heuristic: Heuristic,
    base: TileCostModel,
    fitted: TileCostModel,
    problems: Iterable[Problem],
    data: Sequence[Sample],
    kernel: str,
) -> list[str]:
    """The picks ``fitted`` moves against ``base`` over ``problems`` (tuning shapes): how many
    and from what to what; where a run timed both configs, the new pick's time over the old
    (per GPU); and, for the rest, the ``bench`` commands that would time them: what a tuning
    run should measure before the fitted constants are taken."""
    timed: dict[Problem, dict[str, dict[GemmConfig, float]]] = {}
    for s in data:
        timed.setdefault(s.problem, {}).setdefault(s.gpu, {})[s.config] = s.seconds
    problems = list(dict.fromkeys(problems))
    moved = [
        (p, a, b) for p in problems if (a := heuristic(p, base)) != (b := heuristic(p, fitted))
    ]
    lines = [f"picks the fitted constants move: {len(moved)} of {len(problems)} tuning problems"]
    kinds = Counter((a.label, b.label) for _, a, b in moved)
    lines += [f"    {n:4d} x {a} -> {b}" for (a, b), n in kinds.most_common()]
    both: list[tuple[Problem, str, float]] = []
    untimed: dict[str, list[Problem]] = {}
    for p, a, b in moved:
        old, new = _as_timed(a), _as_timed(b)
        pairs = [
            (gpu, t[new] / t[old])
            for gpu, t in sorted(timed.get(p, {}).items())
            if old in t and new in t
        ]
        both += [(p, gpu, r) for gpu, r in pairs]
        if not pairs:
            untimed.setdefault(str(b), []).append(p)
    if both:
        ratios = [r for _, _, r in both]
        worse = [f"{p.key} {r:.3f}" for p, _, r in sorted(both, key=lambda x: -x[2]) if r > 1]
        lines.append(
            f"timed both ways: {len(both)}; new pick's time / old's geomean "
            f"{math.exp(statistics.mean(map(math.log, ratios))):.3f}; slower: "
            + (", ".join(worse) or "none")
        )
    if untimed:
        lines.append(f"not timed both ways ({sum(map(len, untimed.values()))}), to time next:")
        for config, ps in untimed.items():
            suites = " ".join(f"--suite {p.m}x{p.n}x{p.k}" for p in ps)
            bench = f"python -m harness bench --kernel {kernel} --config own --config {config}"
            lines.append(f"    {bench} {suites}")
    return lines


def report(
    docs: Sequence[Document],
    backends: Sequence[str] | None = None,
    folds: int = 5,
    rounds: int = 6,
    base: TileCostModel = HOPPER,
    only: Sequence[str] = (),
    min_problems: int = 1,
    heuristic: Heuristic | None = None,
    moves_over: Sequence[Problem] = (),
    kernel: str = "",
    current: TileCostModel | None = None,
    priced: Priced | None = None,
    on_gpu: GpuRule | None = None,
) -> str:
    """The text ``fit-cost`` prints (ValueError when the documents hold no rung-8 timing).
    ``base`` is the model the fit starts from (a backend's ``COST``), ``only`` the constants
    it fits and ``min_problems`` the problems a tile needs for an efficiency of its own
    (``tile_cost.fit``); the report's last line says which. With ``heuristic`` (the base
    module's) and ``kernel`` it judges today's picks (:func:`current_choice`, priced by
    ``current``); with ``moves_over`` (tuning problems) too, it ends with :func:`moves`: the
    picks the fitted constants would move against ``current`` (the module's constants as they stand;
    default ``base``), and how to time them (``kernel``: the module's kernel id). ``priced``
    is the module's rule for which of its kernels the model prices (:func:`model_config`),
    ``on_gpu`` its rule that reads the GPU (``ConfigSpace.on_gpu``), applied to today's picks."""
    data = samples(docs, backends, priced)
    if not data:
        raise ValueError(
            "no timed rung-8 record with the shared config vocabulary in these files "
            "(run `bench --rung 8 --tune` on a tuning suite)"
        )
    gpus = sorted({s.gpu for s in data})
    problems = len({s.problem for s in data})
    lines = [f"{len(data)} timings of {problems} problems ({', '.join(gpus)})"]
    errors, regrets = evaluate(base, data)
    lines.append(_line("current constants, in sample", errors, [r for _, r in regrets]))
    lines += ceiling(docs, backends)
    lines += own_choice(docs, backends)
    if heuristic is not None and kernel:
        lines += current_choice(docs, heuristic, current or base, kernel, on_gpu=on_gpu)
    kw = dict(rounds=rounds, only=only, min_problems=min_problems)
    cv = cross_validate(data, base, folds=folds, **kw)
    lines.append(
        f"{folds}-fold cross-validation (fit on the other folds' problems): median |log err| "
        f"{cv.median_abs_log_err:.3f}, mean {cv.mean_abs_log_err:.3f}; first choice "
        f"{100 * sum(r for _, r in cv.regrets) / max(1, len(cv.regrets)):.1f} % slower than "
        "the fastest timed (mean), "
        f"{100 * cv.worst_regret:.1f} % worst"
    )
    worst = sorted(cv.regrets, key=lambda pr: -pr[1])[:5]
    lines += [f"    {p.key:<24} regret {100 * r:5.1f} %" for p, r in worst]
    runs = sorted({s.run for s in data})
    if len(runs) > 1:
        by_run = cross_validate(data, base, by_run=True, **kw)
        lines.append(
            f"leave one tuning run out ({len(runs)} runs; the estimate for a new suite): "
            f"median |log err| {by_run.median_abs_log_err:.3f}; first choice "
            f"{100 * sum(r for _, r in by_run.regrets) / max(1, len(by_run.regrets)):.1f} % "
            f"slower than the fastest timed (mean), {100 * by_run.worst_regret:.1f} % worst"
        )
    fitted = fit(data, base, **kw)
    errors, regrets = evaluate(fitted, data)
    lines.append(_line("fitted on all, in sample", errors, [r for _, r in regrets]))
    lines.append(
        "fitted constants, as a backend declares them (COST = HOPPER.with_params(...); tiles "
        "without a timing keep HOPPER's value):"
    )
    used = {f"eff:{s.config.tile_m}x{s.config.tile_n}" for s in data}
    used |= {f"ueff:{s.config.tile_m}x{s.config.tile_n}" for s in data if not s.config.swap_ab}
    lines += [
        f'    "{name}": {value:.4g},'
        for name, value in fitted.params().items()
        if (not name.startswith(("eff:", "ueff:")) or name in used)
        and (not only or named(name, only))
    ]
    if only:
        lines.append(f"(only {', '.join(only)} fitted; every other constant kept from the base)")
    if min_problems > 1:
        counts: dict[str, set[Problem]] = {}
        for s in data:
            counts.setdefault(f"{s.config.tile_m}x{s.config.tile_n}", set()).add(s.problem)
        few = sorted(t for t, ps in counts.items() if len(ps) < min_problems)
        lines.append(
            f"(timed on fewer than {min_problems} problems, so not fitted: "
            f"{', '.join(few) or 'none'})"
        )
    if heuristic is not None and moves_over:
        lines += moves(heuristic, current or base, fitted, moves_over, data, kernel)
    return "\n".join(lines)


def _line(what: str, errors: list[float], regrets: list[float]) -> str:
    mean = sum(regrets) / max(1, len(regrets))
    return (
        f"{what}: median |log err| {statistics.median(errors):.3f}; first choice "
        f"{100 * mean:.1f} % slower than the fastest timed (mean), "
        f"{100 * max(regrets, default=0.0):.1f} % worst"
    )
