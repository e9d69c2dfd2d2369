"""Host side shared by every Tilus rung: the ``Kernel`` implementation, launch and codegen.

A rung module writes its ``tilus.Script`` and a *plan*: a pure function of the problem, the SM
count and (for a rung with knobs) the config that returns the script's constructor arguments.
Every script has the same ``__call__(m_size, n_size, k_size, a_ptr, b_ptr, c_ptr, ldc)``
(``ldc``: D's row stride, N or N padded to 8); the element type is a constructor argument, so
one script serves fp16 and bf16. Tilus builds the
TMA descriptors in its generated host code on every launch, from the runtime shapes.

:class:`TilusKernel` turns a plan into what the harness asks for:

* ``compile(problem)``: builds the script once per (problem, config) with the GPU's own nvcc
  (Tilus compiles at the first call), launches it once on zeros so that timing never sees the
  build, and returns ``fn(a, b, out)``;
* ``codegen(problem, arch)``: runs Tilus's passes for sm_90a / sm_100a and writes the CUDA
  source without a GPU, then assembles it to PTX and a cubin with nvcc (the same flags Tilus
  builds with, minus the host link).

Tilus keeps its build cache in ``$GEMM_STUDY_TILUS_CACHE`` (default
``~/.cache/gemm-dsl-study/tilus-<version>-<hash of _workarounds.py>``), never in the work tree
(its own default is ``<git root>/.cache`` when installed inside a repository).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backends.tilus import _workarounds
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
from harness.toolchain import DEFAULT_NUM_SMS, require, run_ptxas

#: ``plan(problem, num_sms)`` or ``plan(problem, num_sms, config)`` -> the script's kwargs.
PlanFn = Callable[..., dict[str, Any]]


def cache_dir() -> Path:
    """Where Tilus builds (outside any work tree)."""
    env = os.environ.get("GEMM_STUDY_TILUS_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return (
        base / "gemm-dsl-study" / f"tilus-{_workarounds.TILUS_VERSION}-{_workarounds.fingerprint()}"
    )


def _setup(arch: str) -> None:
    """Workarounds, cache dir and compilation target, before anything is built."""
    _workarounds.apply()
    import tilus

    tilus.option.cache_dir(cache_dir())
    # One build at a time: a worker process per build would re-import Tilus for nothing.
    tilus.option.parallel_workers(1)
    targets = {"sm_90a": tilus.target.nvgpu_sm90a, "sm_100a": tilus.target.nvgpu_sm100a}
    if arch not in targets:
        raise ValueError(f"tilus builds for {sorted(targets)}, not {arch!r}")
    tilus.target.set_current_target(targets[arch])


def element_type(dtype: str) -> Any:
    """The Tilus element type of a harness dtype name."""
    import tilus

    return {"fp16": tilus.float16, "bf16": tilus.bfloat16}[dtype]


class TilusKernel(SpecKernel):
    """One Tilus rung for one arch, implementing ``harness.protocol.Kernel``.

    Its identity is its ``spec`` (the backend's list). ``script`` is the ``tilus.Script``
    class; ``plan`` gives its constructor arguments per problem (and config, with a ``space``).
    """

    def __init__(
        self,
        spec: KernelSpec,
        *,
        script: type,
        plan: PlanFn,
        supports: Callable[[Problem], str | None] | None = None,
        space: ConfigSpace[Any] | None = None,
        raw_ptx: Sequence[str] = (),
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(spec, supports=supports, space=space, raw_ptx=raw_ptx, notes=notes)
        self._script = script
        self._plan = plan

    def _kwargs(self, problem: Problem, num_sms: int, config: KernelConfig | None) -> dict:
        kwargs = (
            self._plan(problem, num_sms)
            if self.space is None
            else self._plan(problem, num_sms, config)
        )
        return {"dtype": element_type(problem.dtype), **kwargs}

    # -- protocol ------------------------------------------------------------------------------
    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        import torch

        _setup(self.spec.arch)
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        script = self._script(**self._kwargs(problem, props.multi_processor_count, config))

        m, n, k = problem.m, problem.n, problem.k

        def run(a: Any, b: Any, d: Any) -> None:
            # N stays the problem's (B has N rows); D's row stride may be padded (ragged N).
            script(m, n, k, a, b, d, d.shape[1])

        # Padded D for ragged N, and a first call on zeros: Tilus builds with nvcc there.
        launch = tma_launch(problem, run, torch.device("cuda", torch.cuda.current_device()))
        return launch

    def codegen(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> Artifacts:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="tilus-codegen-") as tmp:
            source = Path(tmp) / "source.cu"
            source.write_text(self.cuda_source(problem, arch, config))
            ptx = _nvcc(source, arch)
            # PTX -> cubin (what nvcc would run next), without a second C++ front-end pass.
            assembled = run_ptxas(ptx, arch, verbose=False)
            if assembled.cubin is None:
                raise RuntimeError(f"ptxas failed for {arch}:\n{assembled.log[-4000:]}")
        return Artifacts(
            arch=arch,
            ptx=ptx,
            cubin=assembled.cubin,
            compile_seconds=time.perf_counter() - start,
            raw_ptx=self.raw_ptx,
            notes=self.notes,
        )

    def cuda_source(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> str:
        """The CUDA C++ Tilus generates for ``problem`` on ``arch``, without a GPU: Tilus's own
        build steps (verify, program passes, lowering, IR passes, codegen) short of nvcc."""
        _setup(arch)
        from tilus.backends.codegen import generate_ir_module
        from tilus.drivers import BuildOptions, optimize_ir_module, optimize_program
        from tilus.hidet.backend.codegen import codegen as emit_cuda
        from tilus.ir.tools import verify

        config = self.config_for(problem, config)
        script = self._script(**self._kwargs(problem, DEFAULT_NUM_SMS, config))
        # Pointers are not part of Tilus's JIT key: None stands in for the tensors.
        jit = script._jit_instance_for(problem.m, problem.n, problem.k, None, None, None, problem.n)
        (program,) = jit.transpiled_programs
        verify(program)
        with tempfile.TemporaryDirectory(prefix="tilus-source-") as tmp:
            optimized = optimize_program(
                program, options=BuildOptions.create(), cache_dir=Path(tmp)
            )
            module = optimize_ir_module(generate_ir_module(optimized), Path(tmp))
            source = Path(tmp) / "source.cu"
            emit_cuda(module, src_out_path=str(source), target="cuda")
            return source.read_text()


def _nvcc(source: Path, arch: str) -> str:
    """Tilus's CUDA source -> PTX, with the flags Tilus builds with (minus the host link)."""
    import tvm_ffi
    from tilus.hidet.backend.build import get_include_dirs
    from tilus.hidet.libinfo import find_include_path

    includes = [*get_include_dirs(), tvm_ffi.libinfo.find_include_path(), find_include_path()]
    out = source.with_suffix(".ptx")
    cmd = [
        require("nvcc"),
        "-ptx",
        f"-arch={arch}",
        "-std=c++17",
        "-O3",
        "-ftz=true",
        "-prec-div=false",
        *[f"-I{d}" for d in includes],
        "--diag-suppress=177,179,39,550",
        str(source),
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc -ptx failed for {arch}:\n{proc.stderr[-4000:]}")
    return out.read_text()
