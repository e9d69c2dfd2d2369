"""The fake GPUs' kernels (see the package docstring)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from fake_gpu_plugin import KINDS
from harness.protocol import Artifacts, LaunchFn, Problem


def _slot() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "")


def _folder() -> Path | None:
    folder = os.environ.get("FAKE_GPU_DIR")
    return Path(folder) if folder else None


def _log(kernel: str, problem: Problem) -> None:
    folder = _folder()
    if folder is None:
        return
    line = {
        "kernel": f"fake/{kernel}",
        "problem": problem.key,
        "visible": _slot(),
        "python": sys.executable,
        "pid": os.getpid(),
        "tag": os.environ.get("FAKE_TAG"),
    }
    with open(folder / "log", "a") as f:  # one short append: whole lines, even from many
        f.write(json.dumps(line) + "\n")


def _listed(variable: str, value: str) -> bool:
    listed = os.environ.get(variable)
    if listed is None:
        return True
    return listed == "*" or value in listed.split(",")


class Fake:
    backend = "fake"
    arch = "any"

    def __init__(self, name: str) -> None:
        self.name = name
        self.rung = KINDS[name][0]
        self.description = KINDS[name][1]

    def supports(self, problem: Problem) -> str | None:
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch

        name = self.name
        folder = _folder()
        _log(name, problem)
        if name == "reference" and folder and (folder / f"broken-{_slot()}").exists():
            raise RuntimeError(f"fake GPU {_slot()} is broken")
        if name == "sleep":
            time.sleep(float(os.environ.get("FAKE_SLEEP_S", "0.2")))
        faults = (
            name == "fault"
            and _listed("FAKE_FAULT_GPUS", _slot())
            and _listed("FAKE_FAULT_PROBLEMS", problem.key)
        )

        def launch(a: Any, b: Any, out: Any) -> None:
            if name == "raise":
                raise RuntimeError("fake kernel failed on purpose")
            if name == "exit":
                os._exit(3)
            if name == "hang":
                while True:
                    time.sleep(1)
            if faults:
                if folder is not None:
                    (folder / f"broken-{_slot()}").touch()
                os._exit(1)
            out.copy_(torch.matmul(a.float(), b.float().T).to(out.dtype))

        return launch

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        return Artifacts(arch=arch, notes=("a fake kernel: no PTX",))


REFERENCE = Fake("reference")
SLEEP = Fake("sleep")
RAISE = Fake("raise")
EXIT = Fake("exit")
FAULT = Fake("fault")
HANG = Fake("hang")
