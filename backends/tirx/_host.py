"""Host side shared by every TIRx rung: the ``Kernel`` implementation, launch and codegen.

A rung module writes ``build(dtype, config) -> PrimFunc``: one TIRx ``@T.prim_func`` per tile
configuration whose M, N and K are symbolic (``T.int32()`` bound by ``T.match_buffer``), so one
compile serves every problem of that dtype. The prim_func holds its own host part: before
``T.device_entry()`` it encodes the TMA descriptors with ``runtime.cuTensorMapEncodeTiled``
from the actual tensors, and TVM's generated host code computes the grid from the shapes and
launches (with ``cuLaunchKernelEx`` and the cluster attribute where the kernel declares a
cluster). Persistent rungs take one extra scalar, the number of CTAs to launch.

:class:`TirxKernel` turns that into what the harness asks for:

* ``compile(problem)``: ``tvm.compile`` for the rung's arch (TVM JIT-compiles the CUDA source
  with NVRTC when the module loads), cached per (dtype, config), then a first launch on zeros so
  that timing never sees a JIT; returns ``fn(a, b, out)`` launching on torch's current stream;
* ``codegen(problem, arch)``: no GPU: ``tvm.compile`` emits CUDA C, nvcc turns it into PTX and
  ptxas into a cubin (``ptxas -v`` gives registers and spills).

Nothing here is imported by ``backends.tirx.__init__``; TVM and torch load lazily.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backends.tirx._workarounds import compile_for
from harness.protocol import (
    Artifacts,
    ConfigSpace,
    KernelConfig,
    KernelSpec,
    LaunchFn,
    Problem,
    SpecKernel,
    tma_launch,
)
from harness.toolchain import parse_ptxas_log, require, run_ptxas

#: Element type names as TVM spells them.
TVM_DTYPE = {"fp16": "float16", "bf16": "bfloat16"}

#: ``build(dtype, config)`` -> a TIRx PrimFunc (config is None for a rung without configs).
BuildFn = Callable[[str, Any], Any]


def cuda_source(func: Any, arch: str) -> str:
    """The CUDA C TVM generates for ``func`` on ``arch`` (no GPU needed)."""
    ex = compile_for(func, arch)
    return str(ex.mod.imports[0].inspect_source())


def to_ptx(source: str, arch: str) -> str:
    """CUDA source -> PTX with nvcc (``-arch=sm_90a`` / ``sm_100a``)."""
    with tempfile.TemporaryDirectory() as tmp:
        cu, ptx = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
        cu.write_text(source)
        nvcc = require("nvcc")
        run = subprocess.run(
            [nvcc, f"-arch={arch}", "-O3", "-ptx", "-std=c++17", str(cu), "-o", str(ptx)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode:
            errors = [ln for ln in run.stderr.splitlines() if "error" in ln][:5]
            raise RuntimeError("nvcc failed: " + " | ".join(errors or [run.stderr[-500:]]))
        return ptx.read_text()


class TirxKernel(SpecKernel):
    """One TIRx rung for one arch, implementing ``harness.protocol.Kernel``.

    ``build(dtype, config)`` returns the rung's PrimFunc (M, N, K symbolic). ``persistent``
    rungs take the CTA count as a trailing scalar argument (the SM count, rounded down to the
    cluster size). ``shared_bytes(config)`` is the dynamic shared memory the rung's plan uses
    (ptxas only sees static shared memory). ``space`` declares a config space, as in Gluon.
    """

    def __init__(
        self,
        spec: KernelSpec,
        *,
        build: BuildFn,
        shared_bytes: Callable[[Any], int],
        persistent: bool = False,
        cluster: int = 1,
        supports: Callable[[Problem], str | None] | None = None,
        space: ConfigSpace[Any] | None = None,
        raw_ptx: Sequence[str] = (),
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(spec, supports=supports, space=space, raw_ptx=raw_ptx, notes=notes)
        self._build = build
        self._shared_bytes = shared_bytes
        self._persistent = persistent
        self._cluster = cluster
        self._modules: dict[tuple[str, KernelConfig | None], Any] = {}

    # -- protocol ------------------------------------------------------------------------------
    def _module(self, dtype: str, config: KernelConfig | None) -> Any:
        """The runtime module of this rung for ``dtype`` (built once per tile config)."""
        key = (dtype, config)
        if key not in self._modules:
            ex = compile_for(self._build(TVM_DTYPE[dtype], config), self.spec.arch)
            self._modules[key] = ex.mod["main"]
        return self._modules[key]

    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        import torch
        import tvm_ffi

        kernel = self._module(problem.dtype, config)
        dev = torch.device("cuda", torch.cuda.current_device())
        props = torch.cuda.get_device_properties(dev)
        ctas = (props.multi_processor_count // self._cluster) * self._cluster
        extra: tuple[int, ...] = (ctas,) if self._persistent else ()

        def run(a: Any, b: Any, d: Any) -> None:
            with tvm_ffi.use_torch_stream():
                kernel(a, b, d, *extra)

        # Padded D for ragged N (rung 1 stores D without TMA), and a first launch on zeros:
        # NVRTC JIT and module load happen there, not in timing.
        launch = tma_launch(problem, run, dev, pad_d=self.spec.rung >= 2)
        return launch

    def codegen(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> Artifacts:
        if arch not in ("sm_90a", "sm_100a"):
            raise ValueError(f"tirx codegen supports sm_90a and sm_100a, not {arch!r}")
        config = self.config_for(problem, config)
        start = time.perf_counter()
        source = cuda_source(self._build(TVM_DTYPE[problem.dtype], config), arch)
        ptx = to_ptx(source, arch)
        assembled = run_ptxas(ptx, arch)
        if assembled.cubin is None:
            raise RuntimeError(f"ptxas failed: {assembled.log[-800:]}")
        seconds = time.perf_counter() - start
        log = assembled.log
        resources = parse_ptxas_log(log) or {}
        # ptxas reports a serialized wgmma (C7514) as an "info" line, not a warning: keep both.
        warnings = tuple(
            ln.strip()
            for ln in log.splitlines()
            if "warning" in ln.lower() or "Performance Loss" in ln
        )
        return Artifacts(
            arch=arch,
            ptx=ptx,
            cubin=assembled.cubin,
            registers=resources.get("registers"),
            spill_bytes=resources.get("spill_bytes"),
            shared_bytes=self._shared_bytes(config),
            compile_seconds=seconds,
            raw_ptx=self.raw_ptx,
            notes=self.notes + warnings,
        )
