"""Checks every backend's compile-only tests make the same way (imported by those files).

The whole rung list of each backend is checked once, without any DSL, in
``tests/unit/test_completeness.py``; what needs the DSL installed lives here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from harness.protocol import KernelSpec, Problem, Rung

ROOT = Path(__file__).resolve().parents[2]


def assert_listing_imports_no_dsl(package: str, dsl_modules: Iterable[str]) -> None:
    """Listing ``package``'s kernels imports neither its DSL nor torch (specs load lazily), even
    where the DSL is installed: a fresh interpreter lists them and looks at ``sys.modules``."""
    banned = [*dsl_modules, "torch"]
    code = (
        f"import sys, {package} as b; b.kernels(); "
        f"loaded = [m for m in {banned!r} if m in sys.modules]; "
        "assert not loaded, f'listing imported {loaded}'"
    )
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=env)


def assert_identity_and_supports(spec: KernelSpec, backend: str) -> None:
    """The loaded kernel reports its spec's identity; rungs 2+ take any M, N with K % 8 == 0,
    rung 1 may refuse ragged shapes with a reason, and K % 8 != 0 is refused with a reason."""
    kernel = spec.load()
    assert (kernel.backend, kernel.name, kernel.arch, kernel.rung, kernel.description) == (
        backend,
        spec.name,
        spec.arch,
        spec.rung,
        spec.description,
    )
    assert kernel.supports(Problem(4096, 4096, 4096)) is None
    ragged = Problem(1000, 777, 520, "bf16")
    if spec.rung >= Rung.TMA:
        assert kernel.supports(ragged) is None
    else:
        assert isinstance(kernel.supports(ragged), str)
    assert isinstance(kernel.supports(Problem(128, 128, 100)), str)  # K % 8 != 0


def assert_tuned_entries_on_the_menu(specs: Iterable[KernelSpec]) -> None:
    """Every entry of every tuned table of ``specs``' kernels names a config on the kernel's
    menu, valid for its problem: a name the menu no longer resolves (a knob renamed, a config
    dropped) would silently hand the problem back to the heuristic."""
    from harness.configs import TunedTable, tuned_table_path

    checked = 0
    for spec in specs:
        kernel = spec.load()
        space = getattr(kernel, "space", None)  # a kernel's ConfigSpace, if it declares one
        if space is None or space.module is None:
            continue
        folder = tuned_table_path(space.module, "any").parent
        for path in sorted(folder.glob("*.json")):
            table = TunedTable.read(path)
            for entry in table.kernels.get(spec.id, ()) if table else ():
                config = space.by_name(entry.config)
                where = f"{path.name}: {spec.id} {entry.problem.key}"
                assert config is not None, f"{where}: {entry.config} is not on the menu"
                assert kernel.supports(entry.problem, config) is None, f"{where}: invalid"
                checked += 1
    assert checked, "no tuned entry checked"
