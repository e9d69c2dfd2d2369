from __future__ import annotations

from pathlib import Path

import pytest
from expectations import require_module

from harness import codegen, toolchain
from harness.codegen import count_loc, ptx_features
from harness.records import Status

PTXAS_OUT = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'small' for 'sm_90a'
ptxas info    : Function properties for small
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'gemm' for 'sm_90a'
ptxas info    : Function properties for gemm
    8 bytes stack frame, 12 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 560 bytes cmem[0]
"""


def test_ptx_features_recognise_the_defining_instructions() -> None:
    ptx = """
    .visible .entry k() .reqnctapercluster 2, 1, 1 {
    setmaxnreg.dec.sync.aligned.u32 40;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes\
.multicast::cluster [a], [b, {c, d}], [e], f;
    wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {...};
    cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [a, {b, c}], [d];
    mbarrier.try_wait.parity.shared::cta.b64 p, [x], 0;
    }"""
    feats = ptx_features(ptx)
    for f in (
        "wgmma",
        "tma_load",
        "tma_store",
        "tma_multicast",
        "cluster",
        "setmaxnreg",
        "mbarrier",
    ):
        assert f in feats
    assert "tcgen05.mma.cta_group::2" not in feats
    assert ptx_features("tcgen05.mma.cta_group::2.kind::f16 [x]; tcgen05.alloc.cta_group::2.sync")[
        :2
    ] == ["tcgen05.mma.cta_group::2", "tcgen05.alloc.cta_group::2"]


def test_ptxas_report_is_parsed_for_the_largest_kernel() -> None:
    want = {"registers": 168, "spill_bytes": 16, "shared_bytes": 1024}
    assert toolchain.parse_ptxas_log(PTXAS_OUT) == want
    # Triton's bundled ptxas-blackwell prefixes its lines with its own name
    assert (
        toolchain.parse_ptxas_log(PTXAS_OUT.replace("ptxas info", "ptxas-blackwell info")) == want
    )
    assert toolchain.parse_ptxas_log("ptxas fatal   : Unresolved extern function") is None


def test_ptxas_resources_runs_the_tool_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``$PTXAS`` names the tool; its ``-v`` report becomes the resources, and a ptxas that
    refuses the PTX gives none."""
    fake = tmp_path / "ptxas"
    fake.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{PTXAS_OUT}EOF\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PTXAS", str(fake))
    assert toolchain.find_ptxas() == str(fake)
    assert toolchain.ptxas_resources(".version 8.7", "sm_90a") == {
        "registers": 168,
        "spill_bytes": 16,
        "shared_bytes": 1024,
    }
    fake.write_text("#!/bin/sh\necho 'ptxas fatal' >&2\nexit 1\n")
    assert toolchain.ptxas_resources(".version 8.7", "sm_90a") is None
    assert toolchain.ptxas_resources("", "sm_90a") is None


def test_count_loc_skips_docstrings_comments_and_blanks() -> None:
    n = count_loc("backends.cublas.reference")
    assert n is not None and 10 < n < 40
    assert count_loc("surely.not.a.module") is None


@pytest.mark.usefixtures("plugin_on_path")
def test_codegen_records_for_plugin_kernels() -> None:
    require_module("torch", "the toy plugin's kernels declare it")
    from harness.protocol import Problem
    from harness.registry import discover

    specs = discover().select(kernels=["toy/ok", "cublas/torch_matmul"])
    recs = list(codegen.codegen_records(specs, Problem(256, 256, 64), timeout_s=120))
    assert [r.kernel for r in recs] == ["toy/ok"]  # the library reference has no PTX
    assert recs[0].status == Status.OK
    assert recs[0].registers == 40
    assert {"cluster", "mbarrier"} <= set(recs[0].features)
    assert recs[0].raw_ptx == ("setmaxnreg",)
    assert recs[0].config is None


@pytest.mark.usefixtures("plugin_on_path")
def test_codegen_records_the_config_it_compiled() -> None:
    require_module("torch", "the toy plugin's kernels declare it")
    from harness.protocol import Problem
    from harness.registry import discover

    specs = discover().select(kernels=["toy/tuned"])
    (own,) = codegen.codegen_records(specs, Problem(256, 256, 64), timeout_s=120)
    assert (own.status, own.config) == (Status.OK, "split=1")  # no GPU: the heuristic's choice
    (forced,) = codegen.codegen_records(specs, Problem(256, 256, 64), 120, config="split=4")
    assert (forced.config, forced.config_values) == ("split=4", {"split": 4})
