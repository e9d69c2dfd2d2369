"""A GPU kernel that writes to address 0: an illegal memory access, as a buggy GEMM would make.

Not listed by the plugin's ``kernels()`` (every listed toy kernel runs on a CPU); the GPU test
of fault reporting builds its spec directly. The launch goes through the CUDA driver API
(``cuda.bindings``, a dependency of CUDA builds of torch) on torch's current stream.
"""

from __future__ import annotations

from typing import Any

from harness.protocol import Artifacts, LaunchFn, Problem, Rung

_PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry fault()
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
\x00"""


class Faulty:
    backend = "toy"
    name = "faulty"
    rung = Rung.TILED
    arch = "any"
    description = "writes to address 0 (an illegal memory access)"

    def supports(self, problem: Problem) -> str | None:
        return None

    def compile(self, problem: Problem) -> LaunchFn:
        import torch
        from cuda.bindings import driver

        torch.zeros(1, device="cuda")  # makes torch's (primary) context current here
        err, module = driver.cuModuleLoadData(_PTX)
        assert err == driver.CUresult.CUDA_SUCCESS, err
        err, fn = driver.cuModuleGetFunction(module, b"fault")
        assert err == driver.CUresult.CUDA_SUCCESS, err

        def launch(a: Any, b: Any, out: Any) -> None:
            stream = torch.cuda.current_stream().cuda_stream
            driver.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, 0, 0)

        return launch

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        return Artifacts(arch=arch, ptx=_PTX.decode().rstrip("\x00"))


KERNEL = Faulty()
