"""The CUDA toolchain as the harness and the backends use it: finding nvcc and ptxas, running
``ptxas -v`` and reading what it reports, and the SM count assumed without a GPU.

One place for what the codegen table, the TIRx and Tilus builds (CUDA source -> PTX -> cubin)
and the Gluon backend (Triton's bundled ptxas) all need. Nothing here needs a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_NUM_SMS",
    "PtxasRun",
    "find_nvcc",
    "find_ptxas",
    "parse_ptxas_log",
    "ptxas_resources",
    "require",
    "run_ptxas",
]

#: Streaming multiprocessors assumed when compiling without a GPU (H100 SXM, H200): only a
#: persistent kernel's grid depends on it, never the generated code.
DEFAULT_NUM_SMS = 132

#: Where a CUDA toolkit puts its tools when they are not on PATH.
_TOOLKIT_DIRS = ("/usr/local/cuda/bin", "/usr/local/bin")


def _find(name: str, env_var: str) -> str | None:
    for cand in (
        os.environ.get(env_var),
        shutil.which(name),
        *(f"{d}/{name}" for d in _TOOLKIT_DIRS),
    ):
        if cand and Path(cand).is_file():
            return cand
    return None


def find_nvcc() -> str | None:
    """``$NVCC``, nvcc on PATH or the CUDA toolkit's (None if there is none)."""
    return _find("nvcc", "NVCC")


def find_ptxas() -> str | None:
    """``$PTXAS``, ptxas on PATH, the one beside nvcc, or the CUDA toolkit's (None if none)."""
    found = _find("ptxas", "PTXAS")
    if found is None and (nvcc := find_nvcc()) is not None:
        beside = Path(nvcc).with_name("ptxas")
        found = str(beside) if beside.is_file() else None
    return found


def require(name: str) -> str:
    """The path of ``nvcc`` or ``ptxas``; FileNotFoundError saying what is needed otherwise."""
    found = {"nvcc": find_nvcc, "ptxas": find_ptxas}[name]()
    if found is None:
        raise FileNotFoundError(
            f"{name} not found (CUDA toolkit 12.8+ needed for sm_90a/sm_100a: put it on PATH, "
            f"in /usr/local/cuda/bin, or name it in ${name.upper()})"
        )
    return found


@dataclass(frozen=True)
class PtxasRun:
    """What one ``ptxas`` run produced: the cubin (None on failure), its log, its exit status."""

    cubin: bytes | None
    log: str
    returncode: int


def run_ptxas(
    ptx: str, arch: str, *, verbose: bool = True, ptxas: str | None = None, timeout: float = 300
) -> PtxasRun:
    """Assemble ``ptx`` for ``arch`` (``-v``: with the resource report in the log). ``ptxas``
    defaults to :func:`find_ptxas`'s (FileNotFoundError if there is none)."""
    tool = ptxas or require("ptxas")
    with tempfile.TemporaryDirectory(prefix="ptxas-") as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        proc = subprocess.run(
            [tool, f"-arch={arch}", *(["-v"] if verbose else []), str(src), "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        cubin = out.read_bytes() if proc.returncode == 0 and out.is_file() else None
    return PtxasRun(cubin, proc.stderr + proc.stdout, proc.returncode)


_ENTRY = re.compile(r"ptxas(?:-blackwell)? info\s*: Compiling entry function")
_RESOURCES = re.compile(
    r"Compiling entry function '(?P<fn>[^']+)' for '(?P<arch>\w+)'.*?"
    r"(?:(?P<spst>\d+) bytes spill stores, (?P<spld>\d+) bytes spill loads.*?)?"
    r"Used (?P<regs>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?",
    re.S,
)


def parse_ptxas_log(log: str) -> dict[str, int] | None:
    """Registers, spill bytes (stores + loads) and static shared memory of the kernel with the
    most registers in a ``ptxas -v`` log (``ptxas-blackwell``'s too); None if it names none."""
    best: dict[str, int] | None = None
    for block in _ENTRY.split(log)[1:]:
        m = _RESOURCES.search("Compiling entry function" + block)
        if not m:
            continue
        res = {
            "registers": int(m["regs"]),
            "spill_bytes": int(m["spst"] or 0) + int(m["spld"] or 0),
            "shared_bytes": int(m["smem"] or 0),
        }
        if best is None or res["registers"] > best["registers"]:
            best = res
    return best


def ptxas_resources(ptx: str | None, arch: str, ptxas: str | None = None) -> dict[str, int] | None:
    """:func:`parse_ptxas_log` of ``ptxas -v`` on ``ptx``; None when there is no PTX, no ptxas,
    or ptxas refuses it (resources are optional in a codegen record)."""
    if not ptx:
        return None
    try:
        run = run_ptxas(ptx, arch, ptxas=ptxas or find_ptxas())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_ptxas_log(run.log) if run.returncode == 0 else None
