"""Every discovered kernel, correct against cuBLAS on the GPU (skipped without one).

Kernels run through the harness's isolated runner (check only), so a kernel that hangs or
faults fails its own test and not the session. Every rung on smoke and ragged; the final rung
(7) also on square and ksweep; fp16 and bf16. Rung 1 may refuse shapes that are not tile
multiples; rungs 2-7 must accept every problem.
"""

from __future__ import annotations

import pytest

from harness.problems import expand
from harness.protocol import ARCH_CAPABILITY, Rung
from harness.registry import discover

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

CAP = torch.cuda.get_device_capability()
SPECS = [s for s in discover() if "cuda" in s.devices]


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_kernel_is_correct(spec) -> None:
    from harness.runner import Runner, RunSettings

    want = ARCH_CAPABILITY[spec.arch]
    if want is not None and tuple(CAP) != want:
        pytest.skip(f"{spec.arch} kernel on an sm_{CAP[0]}{CAP[1]} GPU")
    if spec.missing_requirements():
        pytest.skip(f"not installed: {spec.missing_requirements()}")
    suites = ["smoke", "ragged"] + (
        ["square", "ksweep"] if spec.rung == Rung.MULTI_CONSUMER else []
    )
    problems = expand(suites, ["fp16", "bf16"])
    with Runner([spec], RunSettings(measure=False, timeout_s=300)) as runner:
        records = list(runner.run(problems))
    bad = []
    for r in records:
        allowed = r["status"] == "ok" or (r["status"] == "unsupported" and spec.rung <= Rung.TILED)
        if not allowed:
            bad.append(f"{r['problem_key']}: {r['status']}: {r.get('reason')}")
    assert not bad, "\n".join(bad)
    assert any(r["status"] == "ok" for r in records)
