"""Kernel discovery: the built-in backends plus installed plugins.

Built-in backends are packages under ``backends/`` named in :data:`BUILTIN_BACKENDS`; a plugin is
any installed distribution declaring an entry point in the group
:data:`harness.protocol.ENTRY_POINT_GROUP` (``gemm_dsl_study.backends``) whose object is a
zero-argument callable returning :class:`~harness.protocol.KernelSpec` values::

    [project.entry-points."gemm_dsl_study.backends"]
    mydsl = "mydsl_gemm:kernels"

Discovery imports each backend's ``kernels()`` function only: a backend package must not import
its DSL at import time, so listing works where a DSL is not installed. The result is a value
(:class:`Registry`); nothing is cached in module state.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from harness.protocol import ENTRY_POINT_GROUP, KernelSpec, Rung

__all__ = ["BUILTIN_BACKENDS", "DiscoveryError", "Registry", "discover"]

#: Built-in backend packages, in report order. A missing one (not yet written) is skipped.
BUILTIN_BACKENDS: tuple[str, ...] = (
    "backends.cublas",
    "backends.tirx",
    "backends.gluon",
    "backends.cutedsl",
    "backends.tilus",
)


@dataclass(frozen=True)
class DiscoveryError:
    """A backend that failed to list its kernels (shown by ``list``, never fatal)."""

    source: str
    error: str


@dataclass(frozen=True)
class Registry:
    specs: tuple[KernelSpec, ...]
    errors: tuple[DiscoveryError, ...] = ()

    def __iter__(self) -> Iterator[KernelSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def backends(self) -> list[str]:
        return list(dict.fromkeys(s.backend for s in self.specs))

    def get(self, kernel_id: str) -> KernelSpec:
        for spec in self.specs:
            if spec.id == kernel_id:
                return spec
        raise KeyError(f"no kernel {kernel_id!r}; known: {', '.join(s.id for s in self.specs)}")

    def select(
        self,
        backends: Iterable[str] | None = None,
        rungs: Iterable[Rung] | None = None,
        arches: Iterable[str] | None = None,
        kernels: Iterable[str] | None = None,
    ) -> list[KernelSpec]:
        """Specs matching every given filter (``None`` = no filter). Unknown names raise."""
        b = set(backends) if backends else None
        if b and (unknown := b - set(self.backends)):
            raise ValueError(f"unknown backend(s) {sorted(unknown)}; known: {self.backends}")
        r = set(rungs) if rungs else None
        a = set(arches) if arches else None
        k = set(kernels) if kernels else None
        if k and (unknown := k - {s.id for s in self.specs}):
            raise ValueError(f"unknown kernel(s) {sorted(unknown)}")
        return [
            s
            for s in self.specs
            if (b is None or s.backend in b)
            and (r is None or s.rung in r)
            and (a is None or s.arch in a or s.arch == "any")
            and (k is None or s.id in k)
        ]


def _specs_from(source: str, factory: object) -> list[KernelSpec]:
    if not callable(factory):
        raise TypeError(f"{source}: kernels entry is not callable")
    specs = list(factory())
    for s in specs:
        if not isinstance(s, KernelSpec):
            raise TypeError(f"{source}: kernels() yielded {type(s).__name__}, not KernelSpec")
    return specs


def discover(builtins: Iterable[str] = BUILTIN_BACKENDS, entry_points: bool = True) -> Registry:
    """Collect kernel specs from built-in backends and entry-point plugins.

    A backend that fails to import or list is reported in ``Registry.errors``; duplicates
    (same kernel id) keep the first and are reported too.
    """
    specs: list[KernelSpec] = []
    errors: list[DiscoveryError] = []
    sources: list[tuple[str, object]] = []
    for pkg in builtins:
        try:
            mod = importlib.import_module(pkg)
        except ModuleNotFoundError as e:
            if e.name == pkg:  # a backend not written yet: not an error
                continue
            errors.append(DiscoveryError(pkg, f"{type(e).__name__}: {e}"))
            continue
        except Exception as e:
            errors.append(DiscoveryError(pkg, f"{type(e).__name__}: {e}"))
            continue
        sources.append((pkg, getattr(mod, "kernels", None)))
    if entry_points:
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                sources.append((f"entry point {ep.name} ({ep.value})", ep.load()))
            except Exception as e:
                errors.append(DiscoveryError(f"entry point {ep.name}", f"{type(e).__name__}: {e}"))
    seen: set[str] = set()
    for source, factory in sources:
        try:
            found = _specs_from(source, factory)
        except Exception as e:
            errors.append(DiscoveryError(source, f"{type(e).__name__}: {e}"))
            continue
        for s in found:
            if s.id in seen:
                errors.append(DiscoveryError(source, f"duplicate kernel id {s.id}; kept the first"))
                continue
            seen.add(s.id)
            specs.append(s)
    specs.sort(key=lambda s: (s.rung != Rung.CUBLAS, s.backend != "cublas"))
    return Registry(tuple(specs), tuple(errors))
