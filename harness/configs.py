"""Configurations as data: a kernel's knobs, its menu, its default choice and tuned tables.

A kernel *may* declare a config space. Its knobs are a small frozen dataclass deriving from
:class:`KernelConfig` (the name is derived from the values, e.g. ``group=8,raster=m``); the kernel
exposes

* ``configs``: the finite menu, a tuple of such configs;
* ``select(problem) -> config``: its default choice, which consults the committed tuned table
  for the GPU it runs on (:class:`TunedTable`) before its heuristic;
* ``supports(problem, config)``, ``compile(problem, config)`` and ``codegen(problem, arch,
  config)``, each taking the config as an optional last argument (``None`` = ``select``).

:class:`ConfigSpace` packages the menu, the heuristic and the table lookup so a backend writes
only the knobs and the heuristic. The harness forces a config (``bench --config``), times every
valid one (``bench --tune``) and writes the tuned tables (``python -m harness tune-table``);
every results record names the config that ran. A kernel without a config space works
unchanged: the harness records ``config: null`` for it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from harness.gemm import Problem

__all__ = [
    "TUNED_SCHEMA",
    "ConfigSpace",
    "KernelConfig",
    "TunedTable",
    "check_request",
    "config_space",
    "current_gpu_name",
    "format_knob",
    "gpu_slug",
    "parse_pairs",
    "quiet_knob",
    "resolve_config",
    "tuned_table_path",
]

TUNED_SCHEMA = "gemm-dsl-study/tuned"
TUNED_SCHEMA_VERSION = 1


def format_knob(value: Any) -> str:
    """A knob's value as a config name writes it (booleans as 1 / 0)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _coerce(text: str, like: Any, field: str) -> Any:
    if isinstance(like, bool):
        low = text.lower()
        if low in ("1", "true", "on", "yes"):
            return True
        if low in ("0", "false", "off", "no"):
            return False
        raise ValueError(f"config field {field!r} takes 0 or 1, got {text!r}")
    if isinstance(like, int):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"config field {field!r} takes an integer, got {text!r}") from None
    return text


def parse_pairs(text: str) -> dict[str, str]:
    """``k=v[,k=v...]`` (a config name, or overrides of one) as a dict of strings; ValueError
    on a part that is not ``k=v``."""
    pairs: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise ValueError(f"bad config {text!r}: expected k=v pairs")
        pairs[key] = value
    if not pairs:
        raise ValueError(f"bad config {text!r}: expected k=v pairs")
    return pairs


#: The config request that names the kernel's own choice (``bench --config own``): an A/B
#: times it beside forced configs in one run, each problem's pick whatever it is.
OWN_CHOICE = "own"


def check_request(menu: list[str] | tuple[str, ...], request: str) -> str | None:
    """None if ``request`` (a name, ``k=v`` overrides or ``OWN_CHOICE``) can match an entry of
    ``menu`` (config names), else why not. Works on names alone, so the harness can refuse a
    bad ``--config`` before any kernel (or DSL) is loaded for a run. A knob some names leave
    out (a ``quiet_knob`` at its default) matches any value in those: the kernel's own check
    (``resolve_config``) has the last word."""
    if request == OWN_CHOICE:
        return None
    try:
        want = parse_pairs(request)
    except ValueError as e:
        return f"{e}, e.g. {menu[0]}"
    entries = [parse_pairs(m) for m in menu]
    knobs = list(dict.fromkeys(k for e in entries for k in e))
    unknown = sorted(set(want) - set(knobs))
    if unknown:
        return f"unknown knob(s) {', '.join(unknown)}; the knobs are {', '.join(knobs)}"
    if not any(all(e.get(k, v) == v for k, v in want.items()) for e in entries):
        return f"no config on the menu has {request}; {_nearest(menu, want)}"
    return None


def _nearest(menu: Sequence[str], want: dict[str, str], count: int = 3) -> str:
    """One line for an error: the menu's size and the ``count`` entries that share the most
    knob values with ``want`` (a menu runs to hundreds of names)."""

    def shared(name: str) -> int:
        entry = parse_pairs(name)
        return sum(entry.get(k) == v for k, v in want.items())

    best = sorted(menu, key=lambda name: -shared(name))[:count]
    return f"{len(menu)} entries, the nearest: {'; '.join(best)}"


#: Field metadata key of a knob whose default value stays out of ``KernelConfig.name``.
QUIET = "gemm_study_quiet_default"


def quiet_knob(default: Any) -> Any:
    """A knob declared after results named its config: at ``default`` it stays out of the
    name, so every name written before it existed still names the same config (and a tuned
    table's or a results file's name still matches); at any other value it is named."""
    return dataclasses.field(default=default, metadata={QUIET: True})


class KernelConfig:
    """Base of a kernel's config dataclass (declare it ``@dataclass(frozen=True)``).

    Knobs are ints, strs or bools. The name is derived from the values, field by field, so a
    name in a results file, a tuned table or on the command line always means the same knobs
    (a ``quiet_knob`` at its default is left out; ``values`` has every knob).
    """

    @property
    def name(self) -> str:
        return ",".join(
            f"{f.name}={format_knob(getattr(self, f.name))}"
            for f in self._fields()
            if not (f.metadata.get(QUIET) and getattr(self, f.name) == f.default)
        )

    def values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self._fields()}

    def _fields(self) -> tuple[dataclasses.Field[Any], ...]:
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} must be a dataclass")
        return dataclasses.fields(self)

    def with_overrides(self, text: str) -> KernelConfig:
        """This config with the knobs named in ``text`` (``k=v[,k=v...]``) replaced. A
        ``text`` that names every knob but quiet ones (a config's ``name``) means those at
        their defaults."""
        known = self.values()
        pairs = parse_pairs(text)
        unknown = sorted(set(pairs) - set(known))
        if unknown:
            raise ValueError(
                f"bad config {text!r}: unknown knob(s) {', '.join(unknown)}; the knobs are "
                f"{', '.join(known)} (e.g. {self.name})"
            )
        changes = {k: _coerce(v, known[k], k) for k, v in pairs.items()}
        quiet = [f for f in self._fields() if f.metadata.get(QUIET)]
        if quiet and set(known) - {f.name for f in quiet} <= set(pairs):
            changes = {f.name: f.default for f in quiet} | changes
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def __str__(self) -> str:
        return self.name


C = TypeVar("C", bound=KernelConfig)


def gpu_slug(gpu_name: str) -> str:
    """A file-name-safe GPU model, e.g. ``NVIDIA H200`` -> ``nvidia-h200``."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def current_gpu_name() -> str | None:
    """The name of the current CUDA device, or None (no torch, no GPU: compile-only runs)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return str(torch.cuda.get_device_name(torch.cuda.current_device()))


def tuned_table_path(module: str, gpu_name: str) -> Path:
    """Where the tuned table of the kernels in ``module``'s folder lives for ``gpu_name``:
    ``<folder of module>/tuned/<gpu slug>.json``. Finds the folder without importing ``module``
    (its parent package is imported; backend packages import no DSL at import time)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ValueError(f"cannot locate module {module!r}")
    return Path(spec.origin).resolve().parent / "tuned" / f"{gpu_slug(gpu_name)}.json"


@dataclass(frozen=True)
class TunedEntry:
    problem: Problem
    config: str
    median_ms: float | None = None
    pct_of_cublas: float | None = None


@dataclass(frozen=True)
class TunedTable:
    """The winners of ``bench --tune`` on one GPU model: kernel id -> problem -> config name.

    A lookup takes the exact problem only; any other problem is the kernel's heuristic's. A
    tuned choice is a tile's fit to one shape's waves, and it does not carry to another M:
    an earlier lookup that reached 2x in M served shapes between the grid's points with tiles
    that left their last wave half empty (H200, 0.71-0.73x cuBLAS geomean on such shapes).
    """

    gpu: str
    kernels: Mapping[str, tuple[TunedEntry, ...]]
    sources: tuple[str, ...] = ()

    def lookup(self, kernel_id: str, problem: Problem) -> str | None:
        for e in self.kernels.get(kernel_id, ()):
            if e.problem == problem:
                return e.config
        return None

    # -- file form ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": TUNED_SCHEMA,
            "schema_version": TUNED_SCHEMA_VERSION,
            "gpu": self.gpu,
            "sources": list(self.sources),
            "kernels": {
                kid: {
                    e.problem.key: {
                        "config": e.config,
                        "median_ms": e.median_ms,
                        "pct_of_cublas": e.pct_of_cublas,
                    }
                    for e in sorted(entries, key=lambda e: e.problem)
                }
                for kid, entries in sorted(self.kernels.items())
            },
        }

    @classmethod
    def from_json(cls, doc: Any, source: str = "tuned table") -> TunedTable:
        if not isinstance(doc, dict) or doc.get("schema") != TUNED_SCHEMA:
            raise ValueError(f"{source}: not a tuned table (schema {TUNED_SCHEMA!r})")
        if doc.get("schema_version") != TUNED_SCHEMA_VERSION:
            raise ValueError(f"{source}: tuned-table version {doc.get('schema_version')!r} unknown")
        kernels = {
            kid: tuple(
                TunedEntry(
                    Problem.parse(key), e["config"], e.get("median_ms"), e.get("pct_of_cublas")
                )
                for key, e in entries.items()
            )
            for kid, entries in doc.get("kernels", {}).items()
        }
        return cls(str(doc.get("gpu")), kernels, tuple(doc.get("sources", ())))

    @classmethod
    def read(cls, path: Path) -> TunedTable | None:
        """The table at ``path``; None if there is none. A broken file raises ValueError."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        try:
            return cls.from_json(json.loads(text), str(path))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: unreadable tuned table ({e})") from None

    def merged(self, other: TunedTable) -> TunedTable:
        """This table with ``other``'s entries replacing same-kernel, same-problem ones."""
        kernels = {k: {e.problem: e for e in v} for k, v in self.kernels.items()}
        for kid, entries in other.kernels.items():
            kernels.setdefault(kid, {}).update({e.problem: e for e in entries})
        sources = tuple(dict.fromkeys((*self.sources, *other.sources)))
        return TunedTable(other.gpu, {k: tuple(v.values()) for k, v in kernels.items()}, sources)


@dataclass(frozen=True)
class ConfigSpace(Generic[C]):
    """A kernel's menu, heuristic and tuned-table lookup.

    ``module`` names the kernel module whose folder holds ``tuned/<gpu>.json``;
    ``heuristic(problem)`` must return a member of ``menu`` valid for the problem and is what a
    problem no table covers gets (never a refusal: the heuristic serves every valid problem).
    """

    menu: tuple[C, ...]
    heuristic: Callable[[Problem], C]
    module: str | None = None
    #: Why ``config`` cannot run ``problem`` (None: it can). The heuristic must pick a valid one.
    valid: Callable[[Problem, C], str | None] = lambda problem, config: None
    #: The configs valid for a problem, most promising first (e.g. by the heuristic's cost
    #: model): what ``bench --tune --tune-top N`` times the first N of. None: menu order.
    rank: Callable[[Problem], Sequence[C]] | None = None
    #: Why the heuristic chose ``config`` for ``problem``, one line (e.g. the cost model's
    #: estimate, waves and runner-up: ``harness.tile_cost.explain``). None: "heuristic".
    explain: Callable[[Problem, C], str] | None = None
    #: A rule that reads the GPU: ``on_gpu(problem, heuristic's choice, gpu name)`` gives the
    #: config to run instead on that GPU model and why (one line), or None to keep the choice
    #: (e.g. ``harness.tile_cost.four_cta_swap``). Applied to the heuristic's choice only (a
    #: tuned table's entry was timed on that GPU), and only where the replacement is on the
    #: menu and valid for the problem. None: the heuristic does not depend on the GPU.
    on_gpu: Callable[[Problem, C, str], tuple[C, str] | None] | None = None

    def __post_init__(self) -> None:
        if not self.menu:
            raise ValueError("a config space needs at least one config")
        names = [c.name for c in self.menu]
        if len(set(names)) != len(names):
            raise ValueError(f"config names repeat: {names}")

    def by_name(self, name: str) -> C | None:
        """The menu entry ``name`` names: every knob it gives at that value, and any knob it
        lacks at its default (a name written before the knob existed: a tuned table's entries
        outlive a knob added later)."""
        try:
            wanted = type(self.menu[0])().with_overrides(name)  # the defaults, then the name's
        except (IndexError, TypeError, ValueError):  # no defaults, or not a name of these knobs
            return next((c for c in self.menu if c.name == name), None)
        return next((c for c in self.menu if c == wanted), None)

    def _tuned(self, kernel_id: str, problem: Problem, gpu_name: str | None) -> C | None:
        """The tuned table's valid choice for ``problem`` on ``gpu_name``, if it has one."""
        if self.module is None or gpu_name is None:
            return None
        table = TunedTable.read(tuned_table_path(self.module, gpu_name))
        name = table.lookup(kernel_id, problem) if table else None
        chosen = self.by_name(name) if name else None
        return chosen if chosen is not None and self.valid(problem, chosen) is None else None

    def reason(
        self, kernel_id: str, problem: Problem, config: C, gpu_name: str | None = None
    ) -> str | None:
        """Why ``config`` is :meth:`select`'s choice: the tuned table's entry, or the
        heuristic's reasoning (``explain``); None if it is not the choice."""
        tuned = self._tuned(kernel_id, problem, gpu_name)
        if tuned is not None:
            return (
                f"tuned table (tuned/{gpu_slug(gpu_name or '')}.json)" if tuned == config else None
            )
        choice = self.heuristic(problem)
        moved = self._moved(problem, choice, gpu_name)
        if config != (moved[0] if moved else choice):
            return None
        why = self.explain(problem, choice) if self.explain else "heuristic"
        return f"{why}; {moved[1]}" if moved else why

    def _moved(self, problem: Problem, choice: C, gpu_name: str | None) -> tuple[C, str] | None:
        """``on_gpu``'s replacement for the heuristic's ``choice`` on ``gpu_name`` and why, if
        it gives one that is on the menu and valid for ``problem``."""
        if self.on_gpu is None or gpu_name is None:
            return None
        moved = self.on_gpu(problem, choice, gpu_name)
        if moved is None or moved[0] not in self.menu or self.valid(problem, moved[0]):
            return None
        return moved

    def select(self, kernel_id: str, problem: Problem, gpu_name: str | None = None) -> C:
        """The tuned table's choice for ``problem`` on ``gpu_name`` if it has one, else the
        heuristic's (moved by ``on_gpu`` where its rule holds for that GPU)."""
        tuned = self._tuned(kernel_id, problem, gpu_name)
        if tuned is not None:
            return tuned
        choice = self.heuristic(problem)
        if choice not in self.menu:
            raise ValueError(f"heuristic chose {choice.name}, which is not on the menu")
        why = self.valid(problem, choice)
        if why:
            raise ValueError(f"heuristic chose {choice.name} for {problem.key}, which {why}")
        moved = self._moved(problem, choice, gpu_name)
        return moved[0] if moved else choice


def tune_candidates(kernel: Any, problem: Problem, top: int | None = None) -> list[KernelConfig]:
    """The configs ``bench --tune`` times for ``problem``: every menu entry the kernel
    supports, or with ``top`` the first ``top`` of the kernel's ranking (``ranked(problem)``,
    menu order for a kernel without one) plus its own selection, so that a tuned table can
    always compare a winner with what the kernel would have run."""
    menu = config_space(kernel) or ()

    def ok(c: KernelConfig) -> bool:
        return kernel.supports(problem, c) is None

    if top is None:
        return [c for c in menu if ok(c)]
    ranked = getattr(kernel, "ranked", None)
    order = list(ranked(problem) or menu) if callable(ranked) else list(menu)
    chosen = [c for c in order if c in menu and ok(c)][:top]
    selected = kernel.select(problem)
    if selected is not None and selected not in chosen and ok(selected):
        chosen.append(selected)
    return chosen


def config_space(kernel: Any) -> tuple[KernelConfig, ...] | None:
    """The menu of a kernel that declares a config space, else None."""
    menu = getattr(kernel, "configs", None)
    if menu is None or not callable(getattr(kernel, "select", None)):
        return None
    return tuple(menu)


def resolve_config(kernel: Any, problem: Problem, request: str | None) -> KernelConfig | None:
    """The config a run of ``kernel`` on ``problem`` uses.

    ``request`` is None or ``OWN_CHOICE`` (the kernel's own ``select``), a full config name, or
    ``k=v`` pairs that override the selected config's knobs. The result must be on the
    kernel's menu. A kernel without a config space takes no request (ValueError) and runs with
    ``None``.
    """
    menu = config_space(kernel)
    if menu is None:
        if request:
            raise ValueError("this kernel declares no configs")
        return None
    base = kernel.select(problem)
    if not request or request == OWN_CHOICE:
        return base
    cfg = base.with_overrides(request)
    if cfg not in menu:
        names = _names(menu)
        raise ValueError(
            f"config {cfg.name} is not on the menu; {_nearest(names, parse_pairs(cfg.name))}"
        )
    return cfg


def _names(menu: Iterable[KernelConfig]) -> list[str]:
    return [c.name for c in menu]
