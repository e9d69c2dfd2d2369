"""The GPUs of a run: which ones (``--gpus``) and what they are (UUID, serial, PCI bus, host).

A *slot* is what one set of workers gets as ``CUDA_VISIBLE_DEVICES``: one GPU. ``--gpus 0,1``
names GPUs by their position among the ones this process may use (``CUDA_VISIBLE_DEVICES`` if
it is set, as a scheduler sets it, else all of the host's, numbered as nvidia-smi numbers them);
``--gpus all`` takes every one. Nothing here touches a GPU: identity comes from ``nvidia-smi``
where it is installed, and the workers add what torch and NVML say (``harness.worker``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from typing import Any

__all__ = ["IDENTITY_FIELDS", "gpu_identity", "list_gpus", "parse_gpus"]

#: What a record says about the GPU it ran on.
IDENTITY_FIELDS = ("host", "visible", "uuid", "serial", "pci_bus_id", "name")
_SMI_FIELDS = ("uuid", "serial", "pci.bus_id", "name")


def _smi(*args: str) -> list[list[str]] | None:
    """nvidia-smi's CSV rows (None without nvidia-smi or when it fails)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        r = subprocess.run(
            [smi, *args, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return [[c.strip() for c in line.split(",")] for line in r.stdout.splitlines() if line.strip()]


def list_gpus(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries: the entries of
    ``CUDA_VISIBLE_DEVICES`` if it is set, else nvidia-smi's indices (empty without either)."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip()]
    rows = _smi("--query-gpu=index")
    return [row[0] for row in rows or []]


def parse_gpus(
    text: str, environ: Mapping[str, str] = os.environ, literal: bool = False
) -> list[str]:
    """The slots ``--gpus`` names: ``all``, or positions ``0,1,...`` among :func:`list_gpus`.

    ``literal`` (kernels that run on the CPU: ``bench --device cpu``) takes the numbers as
    they are, looking nothing up: ``--gpus 0,1`` makes two worker sets with
    ``CUDA_VISIBLE_DEVICES`` 0 and 1, fake GPUs for test kernels. So does a machine with
    neither ``CUDA_VISIBLE_DEVICES`` nor nvidia-smi. ValueError naming the problem otherwise.
    """
    if text.strip() == "all":
        available = [] if literal else list_gpus(environ)
        if not available:
            raise ValueError("--gpus all: no GPU found (nvidia-smi lists none); name them: 0,1")
        return available
    picks: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"--gpus {text!r}: expected 'all' or GPU numbers like 0,1")
        picks.append(part)
    if len(set(picks)) != len(picks):
        raise ValueError(f"--gpus {text!r} names a GPU twice")
    if literal:
        return picks
    available = list_gpus(environ)
    if not available and "CUDA_VISIBLE_DEVICES" not in environ:
        return picks
    out = []
    for p in picks:
        if int(p) >= len(available):
            raise ValueError(
                f"--gpus {text!r}: GPU {p} does not exist here; there are {len(available)} "
                f"({', '.join(available) or 'none'})"
            )
        out.append(available[int(p)])
    return out


def gpu_identity(visible: str | None, device: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a record says about the GPU of a slot: host name, the ``CUDA_VISIBLE_DEVICES``
    entry its workers got (None: inherited), and UUID, serial, PCI bus id and name.

    ``device`` is what a worker on that slot reported (``env``: torch's and NVML's view); the
    GPU is looked up in nvidia-smi by its UUID from there, else by ``visible`` (else GPU 0).
    Fields nobody could tell stay None (on a machine without a GPU, all but host and slot).
    """
    device = device or {}
    ident: dict[str, Any] = {
        "host": socket.gethostname(),
        "visible": visible,
        "uuid": device.get("uuid"),
        "serial": device.get("serial"),
        "pci_bus_id": device.get("pci_bus_id"),
        "name": device.get("gpu"),
    }
    if device.get("device", "cuda") != "cuda":
        return ident
    selector = ident["uuid"] or (visible.split(",")[0] if visible else "0")
    rows = _smi("--query-gpu=" + ",".join(_SMI_FIELDS), "-i", selector)
    if rows:
        for key, value in zip(("uuid", "serial", "pci_bus_id", "name"), rows[0]):
            if ident[key] is None and value and value not in ("[N/A]", "N/A"):
                ident[key] = value
    return ident
