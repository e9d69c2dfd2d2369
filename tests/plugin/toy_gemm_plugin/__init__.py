"""Test-only kernels exercising the harness's checks and isolation on a CPU."""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung

KINDS = {
    "ok": (Rung.TILED, "fp32 CPU matmul, correct"),
    "wrong": (Rung.TMA, "drops the last K column: wrong results"),
    "raise": (Rung.PIPELINED, "raises in its launch function"),
    "crash": (Rung.PERSISTENT, "kills its own process (like a CUDA fault aborting)"),
    "hang": (Rung.WARP_SPECIALIZED, "never returns (like a deadlocked kernel)"),
    "partial": (Rung.CLUSTER2, "leaves the last output row unwritten"),
    "picky": (Rung.MULTI_CONSUMER, "supports only multiples of 64"),
    "tuned": (Rung.MULTI_CONSUMER, "correct, with a config space (split K into 1, 2 or 4)"),
    "overrun": (Rung.PIPELINED, "correct D, plus 3 elements stored past its end"),
    "clobber": (Rung.PERSISTENT, "correct D, but uses A's first row as scratch"),
    "stale": (Rung.WARP_SPECIALIZED, "correct on its first two launches only, then stores nothing"),
}


def kernels() -> list[KernelSpec]:
    return [
        KernelSpec(
            backend="toy",
            name=name,
            rung=rung,
            arch="any",
            description=desc,
            module="toy_gemm_plugin.kernels",
            attr=name.upper(),
            requires=("torch",),
            devices=("cpu",),
        )
        for name, (rung, desc) in KINDS.items()
    ]
