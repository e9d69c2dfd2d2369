"""A kernel's identity is written once, and its one-line description agrees with its code.

Runs without any DSL: kernel modules are read as source (``ast``), never imported. Identity
(backend, name, rung, arch, description) lives in the backend's spec list; a rung module takes
it with ``spec(__name__)`` and must not restate it. The description's numbers — tile shapes,
stage counts, consumer warpgroups — must match the module's constants, so a rung whose
constants change without its description (or the other way round) fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness.protocol import KernelSpec
from harness.registry import discover

ROOT = Path(__file__).resolve().parents[2]
SPECS = [s for s in discover(entry_points=False) if s.backend != "cublas"]
IDENTITY = {"backend", "name", "rung", "arch", "description"}
WORDS = {"one": 1, "two": 2, "three": 3}


def _module_source(spec: KernelSpec) -> str:
    return (ROOT / Path(*spec.module.split("."))).with_suffix(".py").read_text()


def _int_constants(tree: ast.Module) -> dict[str, int]:
    """Module-level ``NAME = <int>`` and ``A, B = <int>, <int>`` assignments."""
    out: dict[str, int] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = []
        if isinstance(target, ast.Name):
            pairs = [(target, value)]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = list(zip(target.elts, value.elts, strict=False))
        for t, v in pairs:
            if isinstance(t, ast.Name) and isinstance(v, ast.Constant) and isinstance(v.value, int):
                out[t.id] = v.value
    return out


def description_drift(description: str, consts: dict[str, int]) -> list[str]:
    """Claims of ``description`` that the module's constants contradict."""
    problems = []
    stages = consts.get("NUM_STAGES")
    for m in re.finditer(r"(\d+)[- ]stages?\b", description):
        if stages is not None and int(m.group(1)) != stages:
            problems.append(f"says {m.group(0)!r} but NUM_STAGES = {stages}")
    consumers = consts.get("NUM_CONSUMERS", 1)
    for m in re.finditer(r"\b(\d+|one|two|three) consumer warpgroups?\b", description):
        said = int(WORDS.get(m.group(1), m.group(1)))
        if said != consumers:
            problems.append(f"says {m.group(0)!r} but NUM_CONSUMERS = {consumers}")
    bm, bn, bk = consts.get("BLOCK_M"), consts.get("BLOCK_N"), consts.get("BLOCK_K")
    cm = consts.get("CLUSTER_M", 1)
    rows = {bm, bm * cm, bm * cm * consumers} if bm else set()
    for m in re.finditer(r"\b(\d+)x(\d+)(?:x(\d+))?\b", description):
        a, b = int(m.group(1)), int(m.group(2))
        k = int(m.group(3)) if m.group(3) else None
        if bm is not None and a not in rows:
            problems.append(f"says {m.group(0)!r} but BLOCK_M = {bm} (cluster {cm})")
        if bn is not None and b != bn:
            problems.append(f"says {m.group(0)!r} but BLOCK_N = {bn}")
        if k is not None and bk is not None and k != bk:
            problems.append(f"says {m.group(0)!r} but BLOCK_K = {bk}")
    return problems


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_module_does_not_restate_its_identity(spec: KernelSpec) -> None:
    tree = ast.parse(_module_source(spec))
    kernel = next(
        (
            n.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == spec.attr for t in n.targets)
        ),
        None,
    )
    assert isinstance(kernel, ast.Call), f"{spec.module}.{spec.attr} is not a constructor call"
    restated = sorted(IDENTITY & {kw.arg for kw in kernel.keywords if kw.arg})
    assert not restated, f"{spec.id} restates {restated}: take them from spec(__name__)"
    first = kernel.args[0] if kernel.args else None
    assert (
        isinstance(first, ast.Call)
        and getattr(first.func, "id", None) == "spec"
        and ast.unparse(first.args[0]) == "__name__"
    ), f"{spec.id}: construct the kernel from spec(__name__)"


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_description_matches_constants(spec: KernelSpec) -> None:
    consts = _int_constants(ast.parse(_module_source(spec)))
    assert not description_drift(spec.description, consts), spec.id


def test_drift_is_detected() -> None:
    """The check itself: a description that drifted from its constants is caught."""
    consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_STAGES": 1}
    assert description_drift("one CTA per 128x128x64 tile, 1 stage", consts) == []
    assert description_drift("128x128x64, 6 stages, TMA store", consts)
    assert description_drift("a 128x256x64 tile", consts)
    assert description_drift("2 consumer warpgroups", consts)
    pair = {"BLOCK_M": 128, "BLOCK_N": 256, "CLUSTER_M": 2, "NUM_CONSUMERS": 2}
    assert description_drift("2 consumer warpgroups, 256x256 cluster tile", pair) == []
