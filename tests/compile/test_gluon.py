"""Compile-only tests for the Gluon backend: every kernel builds for its arch without a GPU.

Runs on a CPU in a venv holding only ``triton==3.9.0`` + pytest + this repo (no torch): Gluon's
``GluonASTSource`` + ``triton.compile(target=GPUTarget(...))`` emit PTX and a cubin offline.
Each kernel's PTX is checked for the instructions that define its rung.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("triton.experimental.gluon", reason="Gluon (triton==3.9.0) not installed")

from compile_checks import assert_identity_and_supports, assert_listing_imports_no_dsl

from backends.gluon import kernels
from harness.protocol import Problem, Rung

SPECS = kernels()
PROBLEM = Problem(4096, 4096, 4096, "fp16")

# Instructions (regexes) each kernel's PTX must hold, by (arch, minimum rung).
_HOPPER = [
    (Rung.TILED, r"wgmma\.mma_async"),
    (Rung.TMA, r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.mbarrier"),
    (Rung.TMA, r"mbarrier\.try_wait"),
    (Rung.TMA, r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"),  # TMA store epilogue
    (Rung.WARP_SPECIALIZED, r"setmaxnreg\.dec"),
    (Rung.WARP_SPECIALIZED, r"setmaxnreg\.inc"),
    (Rung.CLUSTER2, r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\..*multicast::cluster"),
    (Rung.CLUSTER2, r"\.reqnctapercluster 2"),
    (Rung.CLUSTER2, r"mbarrier\.arrive\.shared::cluster"),  # peer's consumer -> lead's b_empty
    (Rung.CLUSTER2, r"fence\.mbarrier_init\.release\.cluster"),
    (Rung.MULTI_CONSUMER, r"wgmma\.mma_async\.sync\.aligned\.m64n256k16"),
]
_BLACKWELL = [
    (Rung.WARP_SPECIALIZED, r"tcgen05\.mma"),
    (Rung.WARP_SPECIALIZED, r"tcgen05\.alloc"),
    (Rung.CLUSTER2, r"tcgen05\.mma\.cta_group::2"),
    (Rung.CLUSTER2, r"tcgen05\.alloc\.cta_group::2"),
    (Rung.CLUSTER2, r"tcgen05\.commit\.cta_group::2.*multicast::cluster"),
    (Rung.CLUSTER2, r"\.reqnctapercluster 2"),
    # TMA loads of a pair's operand halves complete on the lead CTA's pair barrier.
    (Rung.CLUSTER2, r"cp\.async\.bulk\.tensor\.2d\.cta_group::2\.shared::cluster\.global"),
]
#: Cluster launch control (sm100 rung 7's ``scheduler=clc`` config): the lead CTA asks for the
#: next tile and the response is multicast to both CTAs; every role decodes it.
_CLC = [
    r"clusterlaunchcontrol\.try_cancel\.async\.shared::cta\.mbarrier::complete_tx::bytes"
    r"\.multicast::cluster::all",
    r"clusterlaunchcontrol\.query_cancel\.is_canceled",
    r"clusterlaunchcontrol\.query_cancel\.get_first_ctaid",
]
# Instructions a rung must NOT have (yet): (arch, highest rung without it, regex).
_ABSENT = [
    ("sm_90a", Rung.TILED, r"cp\.async\.bulk\.tensor"),
    ("sm_90a", Rung.PERSISTENT, r"setmaxnreg"),
    ("sm_90a", Rung.WARP_SPECIALIZED, r"multicast::cluster"),
    # Every kernel's own choice is a static persistent loop (CLC is a config of rung 7).
    ("sm_100a", Rung.MULTI_CONSUMER, r"clusterlaunchcontrol"),
    # A 2-CTA cta_group::2 kernel shares both operands through the pair (A split by M, B by
    # N): no TMA multicast, in any Blackwell rung (it would need a cluster of 4 or more).
    ("sm_100a", Rung.MULTI_CONSUMER, r"cp\.async\.bulk\.tensor\S*multicast::cluster"),
]


def _expected(rung: Rung, arch: str) -> list[str]:
    table = _HOPPER if arch == "sm_90a" else _BLACKWELL
    return [pat for low, pat in table if rung >= low]


def _absent(rung: Rung, arch: str) -> list[str]:
    return [pat for a, high, pat in _ABSENT if a == arch and rung <= high]


@pytest.fixture(scope="module")
def artifacts():
    cache: dict[str, object] = {}

    def get(spec):
        if spec.id not in cache:
            cache[spec.id] = spec.load().codegen(PROBLEM, spec.arch)
        return cache[spec.id]

    return get


def test_listing_imports_no_dsl():
    assert_listing_imports_no_dsl("backends.gluon", ["triton"])


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_compiles_with_rung_instructions(spec, artifacts):
    art = artifacts(spec)
    assert art.arch == spec.arch
    assert art.ptx and art.cubin, "no PTX/cubin came out"
    assert art.compile_seconds and art.compile_seconds > 0
    target = "sm_90a" if spec.arch == "sm_90a" else "sm_100a"
    assert re.search(rf"\.target {target}", art.ptx)
    missing = [p for p in _expected(spec.rung, spec.arch) if not re.search(p, art.ptx)]
    assert not missing, f"{spec.id}: PTX lacks {missing}"
    present = [p for p in _absent(spec.rung, spec.arch) if re.search(p, art.ptx)]
    assert not present, f"{spec.id}: PTX already has {present}"


CONFIGURED = [s for s in SPECS if s.rung == Rung.MULTI_CONSUMER]


@pytest.mark.parametrize("spec", CONFIGURED, ids=[s.id for s in CONFIGURED])
def test_every_config_compiles(spec):
    """Each config on a rung's menu is a distinct compile: every one builds, and each keeps the
    rung's defining instructions (the sm90 k_tile=32 configs run 6 stages of 32-wide k-tiles;
    sm100's clc config adds cluster launch control)."""
    kernel = spec.load()
    seen = set()
    for config in kernel.configs:
        if spec.arch == "sm_90a" and config.group != 8:
            continue  # the L2 group is a runtime argument of the same code
        art = kernel.codegen(PROBLEM, spec.arch, config)
        missing = [p for p in _expected(spec.rung, spec.arch) if not re.search(p, art.ptx)]
        assert not missing, f"{spec.id} [{config.name}]: PTX lacks {missing}"
        clc = [p for p in _CLC if re.search(p, art.ptx)]
        assert clc == (_CLC if getattr(config, "scheduler", None) == "clc" else [])
        seen.add(art.ptx)
    assert len(seen) == 2, "the configs should compile to different kernels"


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_identity(spec):
    assert_identity_and_supports(spec, "gluon")
