"""Host-side environment facts for a results document (the device side comes from a worker)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.protocol import KernelSpec

#: Distributions the harness itself relies on (the reference and telemetry); each DSL's
#: distributions come from its kernels' pins (:attr:`KernelSpec.distributions`).
HARNESS_DISTRIBUTIONS = ("torch", "nvidia-ml-py", "numpy")

REPO_ROOT = Path(__file__).resolve().parent.parent


def package_versions(distributions: Iterable[str] = ()) -> dict[str, str | None]:
    """Installed versions of the harness's distributions and ``distributions`` (None: absent)."""
    out: dict[str, str | None] = {}
    for dist in dict.fromkeys((*HARNESS_DISTRIBUTIONS, *distributions)):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    """Commit SHA and whether the work tree differs from it (None outside a git checkout).

    ``GEMM_STUDY_GIT_SHA``, when set, names the code and wins over the checkout: a tree shipped
    to a GPU host may carry no ``.git``, or a stale one that does not know the shipped commit.
    """
    override = os.environ.get("GEMM_STUDY_GIT_SHA")
    if override:
        return {"git_sha": override, "git_dirty": None}

    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    if sha is None:  # a copy of the tree without .git
        return {"git_sha": None, "git_dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_sha": sha, "git_dirty": bool(status) if status is not None else None}


def host_environment(specs: Iterable[KernelSpec] = ()) -> dict[str, Any]:
    """Facts about this host and the versions of everything ``specs`` are pinned to."""
    dists = [d for s in specs for d in s.distributions]
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python_executable": sys.executable,
        "argv": sys.argv[1:],
        "packages": package_versions(dists),
        **git_state(),
    }
