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
