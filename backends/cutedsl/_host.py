"""Host side shared by every CuTeDSL rung: the :class:`harness.protocol.Kernel` implementation.

A rung module defines a ``Gemm`` class whose ``@cute.jit __call__(a_ptr, b_ptr, d_ptr, m, n, k,
stream)`` builds tensors, TMA descriptors and launches its ``@cute.kernel``. This module turns
that class into a protocol ``Kernel``: it compiles once per (dtype, variant) and caches the
compiled function (``cute.compile`` itself keeps no cache we can rely on), builds the launch
closure, and compiles without a GPU for ``codegen``.

Why raw pointers and runtime ``m, n, k`` instead of ``from_dlpack`` tensors: converting a torch
tensor through DLPack costs tens of microseconds per call, a pointer costs a few; and one
compiled kernel per dtype serves every shape, so the harness's many problems never recompile.
The layouts are rebuilt inside the jit function from ``m, n, k`` (row-major, unit stride in the
last mode), which is all TMA needs.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.protocol import (
    Artifacts,
    ConfigSpace,
    KernelConfig,
    KernelSpec,
    LaunchFn,
    Problem,
    SpecKernel,
)
from harness.toolchain import DEFAULT_NUM_SMS


def _dtype(name: str) -> Any:
    import cutlass

    return {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}[name]


def _num_sms() -> int:
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


@functools.cache
def resident_clusters(num_sms: int, cluster: int) -> int:
    """How many clusters of ``cluster`` CTAs the GPU runs at once, one CTA an SM (a rung's CTA
    takes the SM's shared memory): ``num_sms // cluster`` for one CTA or a pair, fewer in fours,
    a cluster living in one GPC whose SM count need not divide by four (an H200 holds 30
    clusters of four, not 33: README, "Four-CTA swapped clusters"). A persistent grid past this
    count leaves its last programs waiting for a whole cluster to finish. Without a GPU
    (compiling only, torch maybe not installed), the SM count's share."""
    try:
        import torch
    except ImportError:  # a compile-only environment
        torch = None
    if cluster <= 2 or torch is None or not torch.cuda.is_available():
        return num_sms // cluster
    from cutlass.utils import HardwareInfo

    torch.cuda.synchronize()  # makes torch's primary context current: HardwareInfo reads it
    held = HardwareInfo(torch.cuda.current_device()).get_max_active_clusters(cluster)
    return min(num_sms // cluster, held)


@dataclass
class CuteDslKernel(SpecKernel):
    """One CuTeDSL rung as a protocol ``Kernel``.

    Its identity is its ``spec`` (the backend's list, written once). ``make_gemm(num_sms,
    variant, config)`` returns the rung's ``Gemm`` object; ``variant_of(problem)`` names the
    compile-time variant a problem needs (e.g. whether the TMA-store epilogue can be used, which
    needs 16-byte aligned output rows); ``rung_supports(problem)`` adds the rung's own limits. A
    rung with tuning knobs passes ``space`` (its menu, heuristic and which config fits which
    problem); the config is then part of the compile cache key, and ``configs``/``select``
    expose it to the harness. A rung that needs scratch memory passes ``workspace(problem,
    config, num_sms)``, a count of fp32 elements (``num_sms`` being what ``make_gemm`` got):
    its ``__call__`` then takes a fourth pointer (fp32) after ``d_ptr``, to a buffer allocated
    once per launcher, outside the launch.
    """

    spec: KernelSpec
    make_gemm: Callable[[int, Any, KernelConfig | None], Any]
    variant_of: Callable[[Problem], Any] = lambda problem: None
    rung_supports: Callable[[Problem], str | None] | None = None
    space: ConfigSpace[Any] | None = None
    raw_ptx: tuple[str, ...] = ()
    workspace: Callable[[Problem, KernelConfig | None, int], int] | None = None
    _cache: dict[tuple[str, Any, int, Any], Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- protocol -------------------------------------------------------------------------------
    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        import cuda.bindings.driver as cuda
        import cutlass
        import cutlass.cute as cute
        import torch
        from cutlass.cute.runtime import make_ptr

        want = {"sm_90a": (9, 0), "sm_100a": (10, 0)}[self.arch]
        have = torch.cuda.get_device_capability()
        if have != want:
            raise RuntimeError(
                f"{self.spec.id} is built for {self.arch}; this GPU is sm_{have[0]}{have[1]}"
            )
        num_sms = _num_sms()
        variant = self.variant_of(problem)
        key = (problem.dtype, variant, num_sms, config)
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is None:
                compiled = self._compile(problem.dtype, variant, num_sms, config, arch=None)[0]
                self._cache[key] = compiled
        dtype = _dtype(problem.dtype)
        gmem = cute.AddressSpace.gmem
        m, n, k = cutlass.Int32(problem.m), cutlass.Int32(problem.n), cutlass.Int32(problem.k)
        scratch: tuple[Any, ...] = ()
        buf = None
        if self.workspace is not None:
            # Allocated here, once: the launch below only passes its address.
            elems = max(self.workspace(problem, config, num_sms), 4)
            buf = torch.empty(elems, dtype=torch.float32, device="cuda")
            scratch = (make_ptr(cutlass.Float32, buf.data_ptr(), gmem, assumed_align=16),)

        def launch(a: Any, b: Any, out: Any) -> None:
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
            compiled(
                make_ptr(dtype, a.data_ptr(), gmem, assumed_align=16),
                make_ptr(dtype, b.data_ptr(), gmem, assumed_align=16),
                make_ptr(dtype, out.data_ptr(), gmem, assumed_align=16),
                *scratch,
                m,
                n,
                k,
                stream,
            )

        if buf is not None:
            launch.workspace = buf  # type: ignore[attr-defined]  # lives as long as the launcher
        return launch

    def codegen(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> Artifacts:
        if arch != self.arch:
            raise ValueError(f"{self.spec.id} targets {self.arch}, not {arch}")
        config = self.config_for(problem, config)
        variant = self.variant_of(problem)
        compiled, seconds = self._compile(
            problem.dtype, variant, DEFAULT_NUM_SMS, config, arch=arch
        )
        ptx, cubin = compiled.__ptx__, compiled.__cubin__
        return Artifacts(
            arch=arch,
            ptx=ptx if isinstance(ptx, str) and not ptx.endswith(".ptx") else None,
            cubin=cubin if isinstance(cubin, bytes) else None,
            compile_seconds=seconds,
            raw_ptx=self.raw_ptx,
            notes=(f"variant={variant}",) if variant is not None else (),
        )

    # -- internals ------------------------------------------------------------------------------
    def _compile(
        self,
        dtype_name: str,
        variant: Any,
        num_sms: int,
        config: KernelConfig | None,
        arch: str | None,
    ) -> Any:
        """``cute.compile`` the rung for one dtype/variant; with ``arch`` no GPU is needed."""
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_stream, make_ptr

        dtype = _dtype(dtype_name)
        gmem = cute.AddressSpace.gmem
        # Placeholder pointers: the compiled function takes the real addresses at launch.
        ptrs = [make_ptr(dtype, 16 * (i + 1), gmem, assumed_align=16) for i in range(3)]
        if self.workspace is not None:
            ptrs.append(make_ptr(cutlass.Float32, 64, gmem, assumed_align=16))
        shape = [cutlass.Int32(128)] * 3
        gemm = self.make_gemm(num_sms, variant, config)
        options = ""
        if arch is not None:
            dump = tempfile.mkdtemp(prefix="cutedsl-")
            options = f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {dump}"
        start = time.perf_counter()
        if arch is None:
            compiled = cute.compile(gemm, *ptrs, *shape, make_fake_stream())
        else:
            compiled = cute.compile(gemm, *ptrs, *shape, make_fake_stream(), options=options)
        seconds = time.perf_counter() - start
        if arch is not None:
            # PTX and cubin were read into the compiled object; the dump files are not needed.
            shutil.rmtree(dump, ignore_errors=True)
        return compiled, seconds


def tma_store_variant(problem: Problem) -> bool:
    """The compile-time variant of the rungs with two epilogues: True (TMA store) when D's
    rows are 16-byte aligned, N % 8 == 0; False (direct stores) otherwise."""
    return problem.n % 8 == 0
