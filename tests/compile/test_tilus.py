"""Compile-only tests for the Tilus backend: every kernel builds for its arch without a GPU.

Runs on a CPU in a venv holding ``tilus==0.2.0`` (+ its CPU torch) and this repo: Tilus's own
passes write the CUDA source without a GPU and nvcc assembles it to PTX and a cubin
(``TilusKernel.codegen``). Each kernel's PTX is checked for the instructions that define its
rung, and the Tilus 0.2.0 workarounds are checked where they show. Where Tilus does not import
the module skips, unless the session installs it (``tests/expectations.py``): then it fails,
also when one of Tilus's own imports is missing (``cuda-bindings``). Without nvcc it fails in CI
and skips elsewhere, saying so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from compile_checks import assert_identity_and_supports, assert_listing_imports_no_dsl
from expectations import find_nvcc, require_dsl, require_tool

from backends.tilus import kernels
from harness.protocol import Problem, Rung
from harness.toolchain import find_ptxas, run_ptxas

require_dsl("tilus", "tilus", "Tilus (tilus==0.2.0)")
require_tool("nvcc", find_nvcc(), "Tilus compiles its CUDA source with it (every test here)")

SPECS = kernels()
PROBLEM = Problem(4096, 4096, 4096, "fp16")

# Instructions (regexes) each kernel's PTX must hold, by (arch, minimum rung).
_HOPPER = [
    (Rung.TILED, r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16"),
    (Rung.TMA, r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.tile\.mbarrier"),
    (Rung.TMA, r"mbarrier\.try_wait"),
    (Rung.TMA, r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"),  # TMA store epilogue
    (Rung.PIPELINED, r"wgmma\.wait_group\.sync\.aligned 1;"),  # one MMA group in flight
    (Rung.WARP_SPECIALIZED, r"setmaxnreg\.dec\.sync\.aligned\.u32 40"),
    (Rung.WARP_SPECIALIZED, r"setmaxnreg\.inc\.sync\.aligned\.u32 232"),
    (Rung.CLUSTER2, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\..*multicast::cluster"),
    (Rung.CLUSTER2, r"\.reqnctapercluster 2"),
    (Rung.CLUSTER2, r"mbarrier\.arrive\.expect_tx\.relaxed\.cluster\.shared::cluster"),
    (Rung.CLUSTER2, r"mapa\.shared::cluster"),
    (Rung.CLUSTER2, r"fence\.mbarrier_init\.release\.cluster"),
    (Rung.MULTI_CONSUMER, r"wgmma\.mma_async\.sync\.aligned\.m64n256k16"),
]
_BLACKWELL = [
    (Rung.WARP_SPECIALIZED, r"tcgen05\.mma"),
    (Rung.WARP_SPECIALIZED, r"tcgen05\.alloc"),
    (Rung.CLUSTER2, r"tcgen05\.mma\.cta_group::2"),
    (Rung.CLUSTER2, r"tcgen05\.alloc\.cta_group::2"),
    (Rung.CLUSTER2, r"\.reqnctapercluster 2"),
    (Rung.MULTI_CONSUMER, r"clusterlaunchcontrol\.try_cancel"),
]
# Instructions a rung must NOT have (yet): (arch, highest rung without it, regex).
_ABSENT = [
    ("sm_90a", Rung.TILED, r"cp\.async\.bulk\.tensor"),
    ("sm_90a", Rung.PERSISTENT, r"setmaxnreg"),
    ("sm_90a", Rung.WARP_SPECIALIZED, r"multicast::cluster"),
    # Workaround 1: `.cta_group::N` exists only from sm_100; ptxas refuses it on sm_90a.
    ("sm_90a", Rung.MULTI_CONSUMER, r"cp\.async\.bulk\.tensor\S*\.cta_group::"),
    ("sm_100a", Rung.CLUSTER2, r"clusterlaunchcontrol"),
]


def _expected(rung: Rung, arch: str) -> list[str]:
    table = _HOPPER if arch == "sm_90a" else _BLACKWELL
    return [pat for low, pat in table if rung >= low]


def _absent(rung: Rung, arch: str) -> list[str]:
    return [pat for a, high, pat in _ABSENT if a == arch and rung <= high]


@pytest.fixture(scope="module")
def artifacts():
    cache: dict[tuple[str, str], object] = {}

    def get(spec, dtype: str = "fp16"):
        if (spec.id, dtype) not in cache:
            problem = Problem(PROBLEM.m, PROBLEM.n, PROBLEM.k, dtype)
            cache[(spec.id, dtype)] = spec.load().codegen(problem, spec.arch)
        return cache[(spec.id, dtype)]

    return get


def test_listing_imports_no_dsl():
    assert_listing_imports_no_dsl("backends.tilus", ["tilus"])


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_compiles_with_rung_instructions(spec, artifacts):
    art = artifacts(spec)
    assert art.arch == spec.arch
    assert art.ptx and art.cubin, "no PTX/cubin came out"
    assert art.compile_seconds and art.compile_seconds > 0
    assert re.search(rf"\.target {spec.arch}", art.ptx)
    missing = [p for p in _expected(spec.rung, spec.arch) if not re.search(p, art.ptx)]
    assert not missing, f"{spec.id}: PTX lacks {missing}"
    present = [p for p in _absent(spec.rung, spec.arch) if re.search(p, art.ptx)]
    assert not present, f"{spec.id}: PTX already has {present}"


HOPPER_ASYNC = [s for s in SPECS if s.arch == "sm_90a" and s.rung >= Rung.PIPELINED]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("spec", HOPPER_ASYNC, ids=[s.id for s in HOPPER_ASYNC])
def test_wgmma_is_not_serialized(spec, dtype, artifacts):
    """ptxas serializes wgmma (warning C7514) when it cannot prove the accumulator registers
    untouched while an MMA is in flight; it also must not spill."""
    art = artifacts(spec, dtype)
    ptxas = require_tool("ptxas", find_ptxas(), "the wgmma serialization and spill checks")
    run = run_ptxas(art.ptx, spec.arch, ptxas=ptxas)
    assert run.returncode == 0, run.log[-2000:]
    log = run.log
    assert "C7514" not in log and "serialized" not in log, log
    assert re.search(r" 0 bytes spill stores", log), log


def test_every_config_compiles():
    """Rung 7's configs are the tile order's grouping and raster: each is its own build (the
    raster is a compile-time branch), and both rasters keep the rung's instructions."""
    spec = next(s for s in SPECS if s.arch == "sm_90a" and s.rung == Rung.MULTI_CONSUMER)
    kernel = spec.load()
    sources = {c.name: kernel.cuda_source(PROBLEM, spec.arch, c) for c in kernel.configs}
    assert len(set(sources.values())) == len(sources)
    for raster in ("m", "n"):
        config = next(c for c in kernel.configs if c.raster == raster)
        art = kernel.codegen(PROBLEM, spec.arch, config)
        missing = [p for p in _expected(spec.rung, spec.arch) if not re.search(p, art.ptx)]
        assert not missing, f"{config.name}: PTX lacks {missing}"


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_no_truncating_ceil_division(spec):
    """Tilus lowers ``//`` to C's truncating ``/`` (``_workarounds`` defect 5): a Python-style
    ceiling division ``-(-x // y)`` in a script becomes a floor and launches too few CTAs on any
    non-tile-multiple shape. No negated operand may meet a division in the generated source."""
    source = spec.load().cuda_source(Problem(200, 328, 72, "fp16"), spec.arch)
    bad = re.findall(r"\(-\(?[A-Za-z_]\w*\)?\) / ", source)
    assert not bad, f"{spec.id}: truncating division of a negated value: {bad[:3]}"


def test_warp_group_roles_are_uniform():
    """Workaround 6: rung 7's three warp-group roles (384 threads, not a power of two) branch on
    the group index broadcast from lane 0, which ptxas knows is warp-uniform, not on a
    ``threadIdx.x`` range; in a range-tested role ptxas computes the wgmma descriptors per
    thread and moves them with R2UR before every wgmma (README)."""
    spec = next(s for s in SPECS if s.arch == "sm_90a" and s.rung == Rung.MULTI_CONSUMER)
    src = spec.load().cuda_source(PROBLEM, spec.arch)
    role = r"shfl_sync_i32\(uint32_t\(4294967295u\), \(\(int\)threadIdx\.x / 128\), 0\) == {}"
    missing = [g for g in range(3) if not re.search(role.format(g), src)]
    assert not missing, f"warp groups {missing} are not selected by a broadcast index"
    assert not re.search(r"\d+ <= \(int\)threadIdx\.x\)? && ", src), "a role tests a range"


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_identity(spec):
    assert_identity_and_supports(spec, "tilus")


def test_build_cache_is_outside_the_work_tree(monkeypatch, tmp_path):
    from backends.tilus import _host

    monkeypatch.delenv("GEMM_STUDY_TILUS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _host.cache_dir().is_relative_to(tmp_path)
    root = Path(__file__).resolve().parents[2]
    assert not _host.cache_dir().is_relative_to(root)


def test_pins_are_checked(monkeypatch):
    import importlib.metadata

    from backends.tilus import _workarounds

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata,
        "version",
        lambda d: "0.1.15" if d == "apache-tvm-ffi" else real(d),
    )
    with pytest.raises(RuntimeError, match=r"apache-tvm-ffi==0\.1\.12, found 0\.1\.15"):
        _workarounds.check_versions()
