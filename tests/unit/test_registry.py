from __future__ import annotations

import sys
import types

import pytest

from harness.protocol import KernelSpec, Rung
from harness.registry import discover


def test_builtin_reference_is_discovered_without_importing_torch() -> None:
    before = "torch" in sys.modules
    reg = discover(entry_points=False)
    assert "cublas/torch_matmul" in [s.id for s in reg]
    assert reg.specs[0].rung is Rung.CUBLAS
    if not before:
        assert "torch" not in sys.modules


@pytest.mark.usefixtures("plugin_on_path")
def test_entry_point_plugin_is_discovered() -> None:
    reg = discover()
    toy = [s for s in reg if s.backend == "toy"]
    assert {s.name for s in toy} >= {"ok", "hang", "crash", "raise", "wrong"}
    assert all(s.devices == ("cpu",) for s in toy)
    assert [s.id for s in reg.select(backends=["toy"], rungs=[Rung.TILED])] == ["toy/ok"]
    with pytest.raises(ValueError, match="unknown backend"):
        reg.select(backends=["nope"])


def test_broken_backend_is_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = types.ModuleType("fake_broken_backend")

    def kernels():
        raise RuntimeError("cannot list")

    bad.kernels = kernels  # type: ignore[attr-defined]
    dup = types.ModuleType("fake_dup_backend")
    spec = KernelSpec("cublas", "torch_matmul", Rung.CUBLAS, "any", "d", module="x")
    dup.kernels = lambda: [spec]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_broken_backend", bad)
    monkeypatch.setitem(sys.modules, "fake_dup_backend", dup)
    reg = discover(
        builtins=(
            "backends.cublas",
            "fake_broken_backend",
            "fake_dup_backend",
            "backends.not_written_yet",
        ),
        entry_points=False,
    )
    assert [s.id for s in reg] == ["cublas/torch_matmul"]
    sources = {e.source: e.error for e in reg.errors}
    assert "cannot list" in sources["fake_broken_backend"]
    assert "duplicate" in sources["fake_dup_backend"]
    assert "backends.not_written_yet" not in sources
