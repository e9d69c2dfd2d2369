"""CuTeDSL-specific GPU checks (skipped without a Hopper GPU; without nvidia-cutlass-dsl skipped
too, unless the session installs it: ``tests/expectations.py``).

The generic correctness tests over every registered kernel live beside this file; these check
what is particular to this backend: one compile per (dtype, variant) serves every shape, the
N % 8 != 0 variant (direct stores instead of the TMA store) is exact too, and a persistent grid
of four-CTA clusters holds only the clusters the GPU runs at once.
"""

from __future__ import annotations

import pytest
from expectations import require_dsl, require_module

from backends.cutedsl import kernels
from backends.cutedsl._host import resident_clusters
from harness.protocol import Problem

torch = require_module("torch", "the GPU tests")

require_dsl("cutedsl", "cutlass", "CuTeDSL (nvidia-cutlass-dsl)")

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs a Hopper (sm_90a) GPU", allow_module_level=True)

FINAL = next(s for s in kernels() if s.name == "sm90/r7_multi_consumer")


def _run(fn, p: Problem) -> float:
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[p.dtype]
    a = (torch.rand(p.m, p.k, device="cuda") * 2 - 1).to(dt)
    b = (torch.rand(p.n, p.k, device="cuda") * 2 - 1).to(dt)
    out = torch.full((p.m, p.n), float("nan"), device="cuda", dtype=dt)
    fn(a, b, out)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert not torch.isnan(out).any()
    return float(torch.linalg.norm(out.float() - ref) / torch.linalg.norm(ref))


def test_one_compile_serves_every_shape() -> None:
    kernel = FINAL.load()
    for m, n, k in [(512, 512, 512), (1024, 768, 256), (300, 4096, 72)]:
        assert _run(kernel.compile(Problem(m, n, k)), Problem(m, n, k)) < 2e-3
    # fp16 with the TMA-store epilogue: compiled once for all three shapes
    assert sum(1 for key in kernel._cache if key[:2] == ("fp16", True)) == 1


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_direct_store_variant(dtype: str) -> None:
    p = Problem(333, 1001, 136, dtype)
    assert _run(FINAL.load().compile(p), p) < (1e-2 if dtype == "bf16" else 2e-3)


def test_four_cta_grid_is_the_resident_clusters() -> None:
    """The GPU holds fewer clusters of four than a quarter of its SMs (30 of 33 on an H200,
    README "Four-CTA swapped clusters"), pairs and single CTAs all of theirs; rung 8's
    persistent four-CTA grid is that count, not the quarter."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    held = resident_clusters(sms, 4)
    assert 0 < held <= sms // 4
    assert resident_clusters(sms, 2) == sms // 2 and resident_clusters(sms, 1) == sms
    from backends.cutedsl.sm90 import r8_shape_adaptive as r8

    four = next(c for c in r8.MENU if c.cluster == 4)
    gemm = r8.Gemm(sms, True, four)
    assert gemm.programs == gemm.max_active_clusters == held
