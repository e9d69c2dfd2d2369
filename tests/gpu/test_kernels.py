"""Every discovered kernel, correct against cuBLAS on the GPU (skipped without one).

Kernels run through the harness's isolated runner (check only), so a kernel that hangs or
faults fails its own test and not the session. Every rung on smoke and ragged; the final rung
(7) also on square and ksweep; fp16 and bf16; and every config on a kernel's menu on smoke and
ragged. Rung 1 may refuse shapes that are not tile multiples; rungs 2-7 must accept every
problem. ``pytest tests/gpu --backend NAME`` restricts the run to one backend (what
``nox -s tests`` does, each backend in its own environment); ``--config-shard K/N`` checks only
every N-th menu entry from the K-th, to split a long menu over time-limited GPU jobs.

A kernel whose DSL is absent skips, unless the session installs that DSL; a DSL installed at
another version than its pin fails, unless ``GEMM_STUDY_ALLOW_PIN_DRIFT=1`` asks to test the
installed version (``tests/expectations.py``). A kernel that does not load fails.
"""

from __future__ import annotations

import pytest
from expectations import config_shard, forced_records, require_module, require_runnable

from harness.problems import expand
from harness.protocol import KernelSpec, Rung
from harness.records import Status
from harness.registry import discover
from harness.runner import Runner, RunSettings

torch = require_module("torch", "the GPU tests")

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

CAP = torch.cuda.get_device_capability()
SPECS = [s for s in discover() if "cuda" in s.devices]
pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _only_selected_backends(request: pytest.FixtureRequest) -> None:
    spec = request.node.callspec.params.get("spec") if hasattr(request.node, "callspec") else None
    wanted = request.config.getoption("--backend", default=None)
    if spec is not None and wanted and spec.backend not in wanted:
        pytest.skip(f"--backend {' '.join(wanted)} given")


def _runnable(spec: KernelSpec) -> None:
    require_runnable(spec, CAP)


def _failures(spec: KernelSpec, records) -> list[str]:
    bad = []
    for r in records:
        allowed = r.status == Status.OK or (
            r.status == Status.UNSUPPORTED and spec.rung <= Rung.TILED
        )
        if not allowed:
            bad.append(f"{r.problem_key} [{r.config}]: {r.status.value}: {r.reason}")
    return bad


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_kernel_is_correct(spec: KernelSpec) -> None:
    _runnable(spec)
    extra = {
        Rung.MULTI_CONSUMER: ["square", "ksweep"],
        # rung 8's code paths (swap-AB, split-K, each tile family) are chosen by shape: the
        # sweep lands on every one of them
        Rung.SHAPE_ADAPTIVE: ["square", "sweep"],
    }
    suites = ["smoke", "ragged", *extra.get(spec.rung, [])]
    problems = expand(suites, ["fp16", "bf16"])
    with Runner([spec], RunSettings(measure=False, timeout_s=300)) as runner:
        records = list(runner.run(problems))
    bad = _failures(spec, records)
    assert not bad, "\n".join(bad)
    assert any(r.status == Status.OK for r in records)


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_every_config_is_correct(spec: KernelSpec, shard: str | None) -> None:
    """Each config on the menu (not only the selected one) is correct on smoke and ragged.

    Each config runs every problem; where the kernel's ``supports`` refuses the config for a
    problem (split-K on a short K, say) the record is ``unsupported``, as ``bench --tune``
    would skip it. Every config must be correct on at least one problem and, over the whole
    menu, rungs 2-7 must run every problem with some config.
    """
    _runnable(spec)
    with Runner([spec], RunSettings(measure=False, timeout_s=300)) as runner:
        menu = runner.menus()[spec.id]
    if isinstance(menu, str):
        pytest.fail(f"{spec.id} does not load: {menu}", pytrace=False)
    if menu is None:
        pytest.skip(f"{spec.id} declares no configs")
    names = config_shard(menu, shard)
    problems = expand(["smoke", "ragged"], ["fp16", "bf16"])
    records = forced_records(spec, names, problems)
    bad = _failures(spec, [r for r in records if r.status != Status.UNSUPPORTED])
    if len(names) == len(menu):  # a shard may hold no config for a problem; the menu must
        ran = {r.problem_key for r in records if r.status == Status.OK}
        refused = [
            r for r in records if r.status == Status.UNSUPPORTED and r.problem_key not in ran
        ]
        bad += _failures(spec, refused)  # errors and wrong results are in ``bad`` already
    assert not bad, "\n".join(bad)
    assert {r.config for r in records if r.status == Status.OK} == set(names)
