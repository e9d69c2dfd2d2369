"""Fake GPUs for the multi-GPU and cluster tests, on a machine without one.

A "GPU" is whatever ``CUDA_VISIBLE_DEVICES`` the harness gives a worker set. Every kernel here
runs on the CPU and appends one line to ``$FAKE_GPU_DIR/log`` per problem it compiles: kernel,
problem, ``CUDA_VISIBLE_DEVICES``, interpreter, process and ``$FAKE_TAG``, so a test can check
where and under what each unit ran. A fake GPU is *broken* when ``$FAKE_GPU_DIR/broken-<slot>``
exists: the reference (rung 0, which the harness's device probe runs) then refuses to compile
there, so the probe fails, as a real probe fails on a GPU that fell off the bus.

Kernels: ``reference`` (the stand-in for cuBLAS), ``sleep`` (correct, ``$FAKE_SLEEP_S`` seconds
to compile), ``raise`` (its launch raises), ``exit`` (its launch ends its process), ``hang``
(its launch never returns) and ``fault`` (on the GPUs named in ``$FAKE_FAULT_GPUS``, ``*`` for
all, and the problems in ``$FAKE_FAULT_PROBLEMS``, default all: breaks its GPU and dies, as a
kernel that takes its GPU down; elsewhere correct).
"""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung

KINDS = {
    "reference": (Rung.CUBLAS, "torch on the CPU: the reference of the fake GPUs"),
    "sleep": (Rung.TILED, "correct, after sleeping $FAKE_SLEEP_S seconds to compile"),
    "raise": (Rung.TMA, "raises in its launch function"),
    "exit": (Rung.PIPELINED, "ends its own process in its launch function"),
    "fault": (Rung.PERSISTENT, "breaks its fake GPU and dies, where told to"),
    "hang": (Rung.WARP_SPECIALIZED, "never returns from its launch function"),
}


def kernels() -> list[KernelSpec]:
    return [
        KernelSpec(
            backend="fake",
            name=name,
            rung=rung,
            arch="any",
            description=desc,
            module="fake_gpu_plugin.kernels",
            attr=name.upper(),
            requires=("torch",),
            devices=("cpu",),
        )
        for name, (rung, desc) in KINDS.items()
    ]
