"""Every built-in DSL backend lists the Hopper chain (rungs 1-7; rung 8 ``shape_adaptive`` in
the backends that build it) and the Blackwell rungs 5-7.

Listing needs no DSL installed (specs name modules that are imported lazily), so this runs in
the plain harness environment and fails when a rung module is dropped from a backend's list or
a listed module file is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.protocol import Rung
from harness.registry import discover

ROOT = Path(__file__).resolve().parents[2]
DSL_SPECS = [s for s in discover(entry_points=False) if s.backend != "cublas"]
BACKENDS = sorted({s.backend for s in DSL_SPECS})
#: Backends with rung 8 (issue: rung 8 in CuTeDSL and Gluon); the others stop at rung 7.
SHAPE_ADAPTIVE_BACKENDS = {"cutedsl", "gluon"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_lists_every_rung(backend: str) -> None:
    specs = [s for s in DSL_SPECS if s.backend == backend]
    hopper = {s.rung for s in specs if s.arch == "sm_90a"}
    blackwell = {s.rung for s in specs if s.arch == "sm_100a"}
    chain = set(Rung) - {Rung.CUBLAS}
    if backend not in SHAPE_ADAPTIVE_BACKENDS:
        chain -= {Rung.SHAPE_ADAPTIVE}
    assert hopper == chain, f"{backend}: Hopper rungs {sorted(hopper)}"
    assert {Rung.WARP_SPECIALIZED, Rung.CLUSTER2, Rung.MULTI_CONSUMER} <= blackwell


@pytest.mark.parametrize("spec", DSL_SPECS, ids=[s.id for s in DSL_SPECS])
def test_spec_names_an_existing_rung_module(spec) -> None:
    folder, module = spec.name.split("/")
    assert folder == {"sm_90a": "sm90", "sm_100a": "sm100"}[spec.arch]
    assert module.startswith(f"r{int(spec.rung)}_{spec.rung.label}")
    path = ROOT / Path(*spec.module.split("."))
    assert path.with_suffix(".py").is_file(), spec.module
    assert spec.pins, f"{spec.id}: pin the DSL release the kernel is written for"
    assert importlib.util.find_spec(spec.module.rsplit(".", 1)[0]) is not None
