"""The toy kernels: each one misbehaves in exactly one way."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Any

from harness.protocol import (
    Artifacts,
    ConfigSpace,
    KernelConfig,
    LaunchFn,
    Problem,
    Rung,
    current_gpu_name,
)
from toy_gemm_plugin import KINDS

_FAKE_PTX = """//
.version 8.7
.target sm_90a
.address_size 64
.visible .entry toy_kernel() .reqnctapercluster 2, 1, 1 { mbarrier.init.shared.b64 [x], 1; ret; }
"""


class Toy:
    backend = "toy"
    arch = "any"

    def __init__(self, name: str, rung: Rung) -> None:
        self.name = name
        self.rung = rung
        self.description = KINDS[name][1]  # the spec's, so the harness's identity check holds

    def supports(self, problem: Problem) -> str | None:
        if self.name == "picky" and (problem.m % 64 or problem.n % 64):
            return "M and N must be multiples of 64"
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch

        name = self.name
        launches = itertools.count()

        def launch(a: Any, b: Any, out: Any) -> None:
            # Like a tile counter kept in a workspace and never reset: right while the harness
            # checks (two launches), wrong once launched back to back.
            if name == "stale" and next(launches) >= 2:
                return
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
            if name == "overrun":
                _store_past_the_end(out, 3)
            if name == "clobber":
                a[0].zero_()

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


def _store_past_the_end(out: Any, count: int) -> None:
    """Store ``count`` zeros right after the last element of ``out``, as an unmasked store at a
    ragged edge would. Where ``out``'s own allocation ends there (no guard band around it) a GPU
    kernel would corrupt whatever memory follows, unseen; the toy cannot reach that memory and
    stores nothing, which is just as unseen."""
    import torch

    end = out.storage_offset() + out.numel()
    if out.untyped_storage().nbytes() // out.element_size() >= end + count:
        torch.as_strided(out, (count,), (1,), end).zero_()


@dataclass(frozen=True)
class ToyConfig(KernelConfig):
    """The toy "tuned" kernel's one knob: sum the product over ``split`` chunks of K."""

    split: int = 1


def _valid(problem: Problem, config: ToyConfig) -> str | None:
    if problem.k % (8 * config.split):
        return f"split={config.split} needs K % {8 * config.split} == 0"
    return None


class TunableToy(Toy):
    """A correct kernel with a config space, as a plugin would declare one."""

    def __init__(self, name: str, rung: Rung) -> None:
        super().__init__(name, rung)
        self.space = ConfigSpace(
            tuple(ToyConfig(s) for s in (1, 2, 4)),
            lambda problem: ToyConfig(1),
            module=__name__,
            valid=_valid,
            rank=lambda problem: (ToyConfig(4), ToyConfig(2), ToyConfig(1)),  # most splits first
            explain=lambda problem, config: f"toy: split={config.split} sums K in one pass",
        )

    def selection_reason(self, problem: Problem, config: ToyConfig) -> str | None:
        return self.space.reason(f"toy/{self.name}", problem, config, current_gpu_name())

    def ranked(self, problem: Problem) -> tuple[ToyConfig, ...]:
        return self.space.rank(problem)  # type: ignore[misc]

    @property
    def configs(self) -> tuple[ToyConfig, ...]:
        return self.space.menu

    def select(self, problem: Problem) -> ToyConfig:
        return self.space.select(f"toy/{self.name}", problem, current_gpu_name())

    def supports(self, problem: Problem, config: ToyConfig | None = None) -> str | None:
        return self.space.valid(problem, config or self.select(problem))

    def compile(self, problem: Problem, config: ToyConfig | None = None) -> LaunchFn:
        import torch

        split = (config or self.select(problem)).split
        step = problem.k // split
        if problem.m == 48 and split == 2:  # lets a test see one config fail among others
            raise RuntimeError("toy: split=2 does not build at M = 48")

        def launch(a: Any, b: Any, out: Any) -> None:
            acc = torch.zeros(out.shape, dtype=torch.float32)
            for i in range(split):
                chunk = slice(i * step, (i + 1) * step)
                acc += torch.matmul(a[:, chunk].float(), b[:, chunk].float().T)
            out.copy_(acc.to(out.dtype))

        return launch

    def codegen(self, problem: Problem, arch: str, config: ToyConfig | None = None) -> Artifacts:
        return super().codegen(problem, arch)


OK = Toy("ok", Rung.TILED)
TUNED = TunableToy("tuned", Rung.MULTI_CONSUMER)
WRONG = Toy("wrong", Rung.TMA)
RAISE = Toy("raise", Rung.PIPELINED)
CRASH = Toy("crash", Rung.PERSISTENT)
HANG = Toy("hang", Rung.WARP_SPECIALIZED)
PARTIAL = Toy("partial", Rung.CLUSTER2)
PICKY = Toy("picky", Rung.MULTI_CONSUMER)
OVERRUN = Toy("overrun", Rung.PIPELINED)
CLOBBER = Toy("clobber", Rung.PERSISTENT)
STALE = Toy("stale", Rung.WARP_SPECIALIZED)
