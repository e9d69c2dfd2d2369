"""The toy kernels: each one misbehaves in exactly one way."""

from __future__ import annotations

import os
import time
from typing import Any

from harness.protocol import Artifacts, LaunchFn, Problem, Rung

_FAKE_PTX = """//
.version 8.7
.target sm_90a
.address_size 64
.visible .entry toy_kernel() .reqnctapercluster 2, 1, 1 { mbarrier.init.shared.b64 [x], 1; ret; }
"""


class Toy:
    backend = "toy"
    arch = "any"
    description = "toy kernel"

    def __init__(self, name: str, rung: Rung) -> None:
        self.name = name
        self.rung = rung

    def supports(self, problem: Problem) -> str | None:
        if self.name == "picky" and (problem.m % 64 or problem.n % 64):
            return "M and N must be multiples of 64"
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch

        name = self.name

        def launch(a: Any, b: Any, out: Any) -> None:
            if name == "raise":
                raise RuntimeError("toy kernel failed on purpose")
            if name == "crash":
                os._exit(13)
            if name == "hang":
                while True:
                    time.sleep(1)
            bb = b[:, :-1] if name == "wrong" else b
            aa = a[:, :-1] if name == "wrong" else a
            res = torch.matmul(aa.float(), bb.float().T).to(out.dtype)
            if name == "partial":
                out[:-1].copy_(res[:-1])
            else:
                out.copy_(res)

        return launch

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        return Artifacts(
            arch=arch,
            ptx=_FAKE_PTX,
            compile_seconds=0.01,
            registers=40,
            spill_bytes=0,
            shared_bytes=1024,
            raw_ptx=("setmaxnreg",),
        )


OK = Toy("ok", Rung.TILED)
WRONG = Toy("wrong", Rung.TMA)
RAISE = Toy("raise", Rung.PIPELINED)
CRASH = Toy("crash", Rung.PERSISTENT)
HANG = Toy("hang", Rung.WARP_SPECIALIZED)
PARTIAL = Toy("partial", Rung.CLUSTER2)
PICKY = Toy("picky", Rung.MULTI_CONSUMER)
