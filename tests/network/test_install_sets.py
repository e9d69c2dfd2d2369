"""Every backend's bench environment resolves on PyPI: one consistent set with a CUDA torch.

``nox -s bench`` installs ``.[<extras>,gpu,report]`` into each backend's venv (``BACKENDS`` and
``BENCH_EXTRAS`` in noxfile.py, read here with ``ast``: nox is not imported). This test asks pip
to resolve each set for that backend's Python on Linux x86_64 without installing anything
(``pip install --dry-run --report``, reading each wheel's metadata rather than the wheel:
``METADATA_ONLY``), ignoring pip's config files so that only the index decides, and checks that
the set holds one version of each distribution, a CUDA build of torch, the Triton the Gluon
kernels need, and that every requirement of every member is met by the set
(what ``pip check`` would say after installing it).

Needs the package index, so it lives apart from the unit tests (``tests/network``, marker
``network``; ``nox -s "tests(network)"`` runs it, and CI with it): skipped with
``GEMM_STUDY_OFFLINE=1`` (the offline GPU host) and when the index does not answer. Each
resolution takes a few seconds; they run in parallel.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[2]

# The platform tags of a current Linux x86_64 host: pip needs them all to see every wheel (the
# NVIDIA wheels ship for different manylinux baselines, e.g. nvidia-nccl-cu13 only for 2_18).
PLATFORMS = [
    *(f"manylinux_2_{n}_x86_64" for n in (17, 18, 24, 25, 26, 27, 28, 31, 34, 35, 39)),
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]
# pip settings from the environment that are kept: how to reach the index, not what to install.
KEEP_PIP_ENV = {
    "PIP_INDEX_URL",
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_TRUSTED_HOST",
    "PIP_PROXY",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_RETRIES",
    "PIP_CACHE_DIR",
    "PIP_DISABLE_PIP_VERSION_CHECK",
}
# Read each wheel's METADATA with HTTP range requests instead of downloading it: an index that
# serves no PEP 658 metadata files otherwise makes pip fetch every wheel whole, about 4 GB of
# CUDA wheels per set (torch, cuDNN, NCCL, ...) and five sets at once, which filled a CI
# machine's disk (Errno 28). The resolver is the same; only how it reads metadata changes, and
# pip falls back to a whole download where the server refuses ranges. No cache: nothing is kept.
METADATA_ONLY = ("--use-feature=fast-deps", "--no-cache-dir")
# Files of the project that determine its metadata (copied, so that concurrent resolutions do
# not build egg-info in the same tree, and nothing is written into the checkout).
PROJECT_FILES = ("pyproject.toml", "README.md", "setup.py", "setup.cfg")


def _noxfile_tables() -> tuple[dict[str, tuple[str, str]], str, str]:
    """``BACKENDS``, ``BENCH_EXTRAS`` and ``RESOLVING_PIP`` as the noxfile defines them."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name, value = node.targets[0].id, node.value
        else:
            continue
        if name in NOXFILE_TABLES and value is not None:
            found[name] = ast.literal_eval(value)
    assert set(found) == set(NOXFILE_TABLES), f"noxfile.py: one of {NOXFILE_TABLES} moved"
    return found["BACKENDS"], found["BENCH_EXTRAS"], found["RESOLVING_PIP"]


NOXFILE_TABLES = ("BACKENDS", "BENCH_EXTRAS", "RESOLVING_PIP")
BACKENDS, BENCH_EXTRAS, RESOLVING_PIP = _noxfile_tables()
# The oldest pip whose --dry-run does not download every wheel after resolving (pypa/pip#12603).
MIN_PIP = min(Version(s.version) for s in Requirement(RESOLVING_PIP).specifier)


def _extras(backend: str) -> list[str]:
    return [e for p in (BACKENDS[backend][1], BENCH_EXTRAS) for e in p.split(",") if e]


def _pinned(extra: str, dist: str) -> str | None:
    """The version pyproject.toml pins ``dist`` to (``==``) in ``extra``, if it does."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["optional-dependencies"].get(extra, []):
        req = Requirement(spec)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if canonicalize_name(req.name) == canonicalize_name(dist) and pins:
            return pins[0]
    return None


def _pip_env() -> dict[str, str]:
    """The environment for pip: no config files, no find-links/constraints from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in KEEP_PIP_ENV}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _index_unreachable() -> str | None:
    """Why the index cannot be used here, or None."""
    if os.environ.get("GEMM_STUDY_OFFLINE", "") not in ("", "0"):
        return "GEMM_STUDY_OFFLINE is set: no package index on this host"
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=10) as r:
            r.read(1)
    except Exception as e:
        return f"the package index {index} does not answer ({type(e).__name__}: {e})"
    return None


def _resolve(backend: str, workdir: Path) -> dict[str, Any]:
    """pip's resolution of the backend's bench set: {"rc", "output", "report"}."""
    project = workdir / "project"
    project.mkdir(parents=True)
    for name in PROJECT_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, project / name)
    report = workdir / "report.json"
    cmd = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
        *METADATA_ONLY,
        "--report", str(report), "--target", str(workdir / "target"),
        "--python-version", BACKENDS[backend][0], "--only-binary=:all:",
        *(f"--platform={p}" for p in PLATFORMS),
        f"{project}[{','.join(_extras(backend))}]",
    ]  # fmt: skip
    r = subprocess.run(
        cmd,
        env=_pip_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    doc = json.loads(report.read_text()) if r.returncode == 0 and report.exists() else None
    return {"rc": r.returncode, "output": r.stdout[-4000:], "report": doc}


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    why = _index_unreachable()
    if why:
        pytest.skip(why)
    if importlib.util.find_spec("pip") is None:
        pytest.skip(f"pip is not installed in {sys.executable}")
    pip = Version(importlib.metadata.version("pip"))
    if pip < MIN_PIP:  # a failure, not a skip: CI must not pass by resolving nothing
        pytest.fail(
            f"pip {pip} in {sys.executable} downloads every wheel in --dry-run (pypa/pip#12603,"
            f" fixed in {MIN_PIP}); install {MIN_PIP} or newer (nox -s 'tests(network)' does)"
        )
    base = tmp_path_factory.mktemp("install-sets")
    with ThreadPoolExecutor(max_workers=len(BACKENDS)) as pool:
        futures = {b: pool.submit(_resolve, b, base / b) for b in BACKENDS}
        return {b: f.result() for b, f in futures.items()}


def _marker_env(python: str) -> dict[str, str]:
    """Marker variables of a CPython ``python`` on Linux x86_64 (the target, not this host)."""
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_system": "Linux",
        "python_full_version": f"{python}.0",
        "python_version": python,
        "sys_platform": "linux",
    }


def _applies(req: Requirement, env: dict[str, str], extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({**env, "extra": e}) for e in ({""} | extras))


def _active_requirements(
    dists: dict[str, dict[str, Any]], top_extras: dict[str, set[str]], env: dict[str, str]
) -> dict[str, list[Requirement]]:
    """Each resolved distribution's requirements that apply, given the extras asked of it by
    the top-level request and by other members (to a fixed point)."""
    extras = {name: set(top_extras.get(name, ())) for name in dists}
    reqs = {
        name: [Requirement(s) for s in d["metadata"].get("requires_dist") or []]
        for name, d in dists.items()
    }
    changed = True
    while changed:
        changed = False
        for name in dists:
            for req in reqs[name]:
                dep = canonicalize_name(req.name)
                if dep in extras and _applies(req, env, extras[name]):
                    new = {canonicalize_name(e) for e in req.extras} - extras[dep]
                    if new:
                        extras[dep] |= new
                        changed = True
    return {name: [r for r in reqs[name] if _applies(r, env, extras[name])] for name in dists}


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_bench_install_set_resolves(backend: str, resolutions: dict[str, dict[str, Any]]) -> None:
    res = resolutions[backend]
    python, _ = BACKENDS[backend]
    extras = _extras(backend)
    assert res["rc"] == 0 and res["report"], (
        f"pip cannot resolve .[{','.join(extras)}] for Python {python}:\n{res['output']}"
    )
    install = res["report"]["install"]

    # Exactly one version of each distribution.
    versions: dict[str, set[str]] = {}
    for item in install:
        versions.setdefault(canonicalize_name(item["metadata"]["name"]), set()).add(
            item["metadata"]["version"]
        )
    dupes = {n: v for n, v in versions.items() if len(v) > 1}
    assert not dupes, f"several versions of one distribution: {dupes}"
    dists = {canonicalize_name(i["metadata"]["name"]): i for i in install}
    version = {n: Version(i["metadata"]["version"]) for n, i in dists.items()}
    env = _marker_env(python)

    # Every requirement of every member is met by the set (pip check, before installing).
    top = {
        canonicalize_name(i["metadata"]["name"]): {
            canonicalize_name(e) for e in i.get("requested_extras") or []
        }
        for i in install
        if i.get("requested")
    }
    active = _active_requirements(dists, top, env)
    unmet = []
    for name, reqs in active.items():
        for req in reqs:
            dep = canonicalize_name(req.name)
            if dep not in version:
                unmet.append(f"{name} needs {req}: not in the set")
            elif not req.specifier.contains(version[dep], prereleases=True):
                unmet.append(f"{name} needs {req}: the set has {dep} {version[dep]}")
    assert not unmet, "inconsistent set:\n" + "\n".join(unmet)

    # The project's own pins (each extra's ==) are what was resolved.
    for extra in extras:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        for spec in project["optional-dependencies"][extra]:
            req = Requirement(spec)
            dep = canonicalize_name(req.name)
            if req.marker is None or req.marker.evaluate(env):
                assert dep in version, f"{spec} (extra {extra}) is not in the set"
                assert req.specifier.contains(version[dep], prereleases=True), (
                    f"{spec} (extra {extra}): resolved {version[dep]}"
                )

    # torch is there and is a CUDA build: it needs the CUDA runtime wheels, and is not +cpu.
    assert "torch" in dists, "the bench set has no torch"
    torch = dists["torch"]
    tv = version["torch"]
    url = torch.get("download_info", {}).get("url", "")
    assert tv.local is None or "cpu" not in tv.local, f"torch {tv} is a CPU build"
    assert "/cpu/" not in url and "%2Bcpu" not in url and "+cpu" not in url, url
    cuda = sorted(
        canonicalize_name(r.name)
        for r in active["torch"]
        if re.match(r"^(cuda-toolkit|nvidia-)", canonicalize_name(r.name))
    )
    assert cuda, f"torch {tv} requires no CUDA runtime wheels (a CPU build?): {url}"
    assert all(c in version for c in cuda)

    # Gluon: the pinned Triton, and the torch in the set is built against it.
    if "gluon" in extras:
        want = _pinned("gluon", "triton")
        assert want, "pyproject.toml: the gluon extra pins no triton"
        assert str(version.get("triton")) == want, f"triton {version.get('triton')} != {want}"
        triton_reqs = [r for r in active["torch"] if canonicalize_name(r.name) == "triton"]
        assert triton_reqs, f"torch {tv} does not require triton on Linux"
        for r in triton_reqs:
            assert r.specifier.contains(Version(want)), f"torch {tv} requires {r}, not {want}"
