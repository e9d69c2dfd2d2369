"""Without a GPU no session can pull a CUDA torch from the public index.

The noxfile pins the CPU build as a ``+cpu`` local version: PyPI has no such release (its
``torch==2.13.0`` is the CUDA build, GBs of CUDA wheels), so pip can satisfy the pin only from
the PyTorch CPU index the noxfile adds, a mirror of it or a wheelhouse; anywhere else the
install fails instead of downloading CUDA. The README's commands for a CPU environment (a
plugin) use the same pin and index. Read with ``ast`` and as text: nox is not imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _constants() -> dict[str, object]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def test_the_cpu_torch_pin_cannot_resolve_to_a_cuda_build() -> None:
    c = _constants()
    req = Requirement(str(c["CPU_TORCH"]))
    (spec,) = req.specifier
    assert req.name == "torch" and spec.operator == "=="
    assert spec.version.endswith("+cpu"), "a pin without +cpu resolves to PyPI's CUDA build"
    assert c["CPU_TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"
    assert c["TORCH_INDEX_VAR"] == "GEMM_STUDY_TORCH_INDEX"
    text = (ROOT / "noxfile.py").read_text()
    # every install of torch in the noxfile goes through the one helper that adds the index
    assert text.count("session.install(CPU_TORCH") == 1
    assert re.search(r'session\.install\(CPU_TORCH, \*\(\["--extra-index-url", index\]', text)


def test_the_readme_installs_the_same_cpu_torch_for_a_plugin() -> None:
    pin = str(_constants()["CPU_TORCH"])
    readme = (ROOT / "README.md").read_text()
    installs = [line for line in readme.splitlines() if line.startswith("pip install")]
    torch = [line for line in installs if "torch" in line]
    assert torch, "the README's plugin example installs no torch"
    for line in torch:
        assert pin in line and "--extra-index-url https://download.pytorch.org/whl/cpu" in line
    assert not any(re.search(r"\btorch\b(?!==)", line.split("#")[0]) for line in installs)
