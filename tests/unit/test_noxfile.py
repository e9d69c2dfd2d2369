"""The noxfile's plain helpers, each compiled on its own from the file's source (nox is not
installed in the test environments, so the noxfile cannot be imported)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _noxfile_function(name: str) -> Callable[..., Any]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "noxfile.py", "exec"), namespace)
    return namespace[name]


def test_tests_named_after_the_double_dash_replace_the_sessions_own() -> None:
    paths = _noxfile_function("_test_paths")
    own = ("tests/compile/test_cutedsl.py", "tests/gpu")
    assert paths([], *own) == list(own)
    assert paths(["-v", "-k", "rung8 and cutedsl"], *own) == list(own)
    assert paths(["-x", "tests/gpu/test_rung8.py", "-k", "cutedsl"], *own) == []
    assert paths(["tests/gpu/test_rung8.py::test_a_in_registers_is_correct"], *own) == []


def test_a_bench_report_renders_the_run_alone_where_the_committed_results_are_absent(
    tmp_path: Path,
) -> None:
    sources = _noxfile_function("_report_sources")
    run = tmp_path / "runs" / "bench.json"
    committed = tmp_path / "reports" / "results"
    assert sources(committed, run) == [str(run)]
    committed.mkdir(parents=True)
    assert sources(committed, run) == [str(committed), str(run)]
