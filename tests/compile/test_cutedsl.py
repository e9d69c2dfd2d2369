"""CuTeDSL kernels compile without a GPU and their PTX holds the instructions of their rung.

Runs on CPU: ``cute.compile`` with ``--gpu-arch`` set to each kernel's arch, placeholder
pointers and a fake stream (``backends/cutedsl/_host.py``). Where nvidia-cutlass-dsl is not
installed the module skips, unless the session installs it (``tests/expectations.py``): then it
fails. The spill and serialization checks need ptxas: without one they fail in CI and skip
elsewhere, saying so.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from compile_checks import assert_listing_imports_no_dsl, assert_tuned_entries_on_the_menu
from expectations import require_dsl, require_tool

from backends.cutedsl import kernels
from harness.problems import expand, random_shapes
from harness.protocol import Problem, Rung, cdiv
from harness.tile_cost import HOPPER, swap_clusters, swap_fits
from harness.toolchain import find_ptxas, run_ptxas

require_dsl("cutedsl", "cutlass", "CuTeDSL (nvidia-cutlass-dsl)")

SPECS = kernels()

#: Instructions every kernel of a rung must contain, by arch (cumulative along the chain).
HOPPER_FEATURES: dict[Rung, tuple[str, ...]] = {
    Rung.TILED: ("wgmma.mma_async", "ld.global.v4", "st.shared.v4"),
    Rung.TMA: ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait", "stmatrix"),
    Rung.PIPELINED: ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"),
    Rung.PERSISTENT: ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"),
    Rung.WARP_SPECIALIZED: ("wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg"),
    Rung.CLUSTER2: (
        "wgmma.mma_async",
        "cp.async.bulk.tensor",
        "setmaxnreg",
        "multicast::cluster",
        "mapa.shared::cluster",
        "mbarrier.arrive.shared::cluster",
        "barrier.cluster.arrive",
    ),
    Rung.MULTI_CONSUMER: (
        "wgmma.mma_async",
        "cp.async.bulk.tensor",
        "setmaxnreg.dec",
        "setmaxnreg.inc",
        "multicast::cluster",
        "mapa.shared::cluster",
        "mbarrier.arrive.shared::cluster",
        "barrier.cluster.arrive",
    ),
}
# Rung 8 at 4096^3 picks rung 7's configuration (asserted below), so it has rung 7's features.
HOPPER_FEATURES[Rung.SHAPE_ADAPTIVE] = HOPPER_FEATURES[Rung.MULTI_CONSUMER]
_PAIR = (
    "tcgen05.mma.cta_group::2",
    "tcgen05.alloc.cta_group::2",
    # the leader's commit signals the barriers of both CTAs of the pair
    "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster",
    "cp.async.bulk.tensor",
    "tcgen05.ld",
)
BLACKWELL_FEATURES: dict[Rung, tuple[str, ...]] = {
    Rung.WARP_SPECIALIZED: (
        "tcgen05.mma.cta_group::1",
        "tcgen05.alloc.cta_group::1",
        "tcgen05.commit.cta_group::1",
        "cp.async.bulk.tensor",
        "tcgen05.ld",
    ),
    Rung.CLUSTER2: _PAIR,
    Rung.MULTI_CONSUMER: _PAIR,
}


def _problem(spec) -> Problem:
    # Rung 1 needs tile multiples; everything else is compiled for the same square problem.
    return Problem(4096, 4096, 4096, "fp16")


@pytest.fixture(scope="module")
def artifacts() -> dict:
    return {}


def _codegen(spec, artifacts: dict):
    if spec.id not in artifacts:
        artifacts[spec.id] = spec.load().codegen(_problem(spec), spec.arch)
    return artifacts[spec.id]


def test_listing_does_not_import_the_dsl() -> None:
    assert_listing_imports_no_dsl("backends.cutedsl", ["cutlass"])


def test_tuned_tables_name_menu_configs() -> None:
    assert_tuned_entries_on_the_menu(SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_compiles_with_rung_features(spec, artifacts: dict) -> None:
    art = _codegen(spec, artifacts)
    assert art.arch == spec.arch
    assert art.ptx, "no PTX came back"
    assert f".target {spec.arch}" in art.ptx
    assert art.cubin, "no cubin came back"
    wanted = (HOPPER_FEATURES if spec.arch == "sm_90a" else BLACKWELL_FEATURES)[spec.rung]
    missing = [f for f in wanted if f not in art.ptx]
    assert not missing, f"{spec.id}: PTX lacks {missing}"


@pytest.mark.parametrize("spec", [s for s in SPECS if s.arch == "sm_90a"], ids=lambda s: s.id)
def test_hopper_register_split(spec, artifacts: dict) -> None:
    """Warp-specialized rungs give the producer 40 registers and the consumers 232."""
    ptx = _codegen(spec, artifacts).ptx
    dec = re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+)", ptx)
    inc = re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+)", ptx)
    if spec.rung >= Rung.WARP_SPECIALIZED:
        assert dec == ["40"] and inc == ["232"]
    else:
        assert not dec and not inc


def test_r7_epilogue_configs_compile() -> None:
    """Rung 7's epilogue knob selects two code paths: each compiles with the rung's features,
    the overlapped one differently from the serial one; ragged N falls back to serial."""
    spec = next(s for s in SPECS if s.name == "sm90/r7_multi_consumer")
    kernel = spec.load()
    problem = Problem(4096, 4096, 4096, "fp16")
    ptx = {}
    for epilogue in ("overlap", "serial"):
        config = kernel.select(problem).with_overrides(f"epilogue={epilogue}")
        assert config in kernel.configs
        art = kernel.codegen(problem, spec.arch, config)
        missing = [f for f in HOPPER_FEATURES[Rung.MULTI_CONSUMER] if f not in art.ptx]
        assert not missing, f"{config.name}: PTX lacks {missing}"
        ptx[epilogue] = art.ptx
    assert ptx["overlap"] != ptx["serial"]
    assert kernel.select(problem).epilogue == "overlap"
    ragged = Problem(1000, 1003, 520, "bf16")
    assert kernel.select(ragged).epilogue == "serial"
    overlap = kernel.select(problem)
    assert kernel.supports(ragged, overlap) is not None  # overlap needs the TMA store


def test_ragged_variant_compiles() -> None:
    """N % 8 != 0 compiles the direct-store epilogue (no TMA store) of the final kernel."""
    spec = next(s for s in SPECS if s.name == "sm90/r7_multi_consumer")
    art = spec.load().codegen(Problem(1000, 1003, 520, "bf16"), spec.arch)
    assert "wgmma.mma_async" in art.ptx and "multicast::cluster" in art.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in art.ptx  # no TMA store


def test_rung1_refuses_ragged() -> None:
    spec = next(s for s in SPECS if s.name == "sm90/r1_tiled")
    assert spec.load().supports(Problem(1000, 1003, 520)) is not None
    assert spec.load().supports(Problem(256, 512, 128)) is None


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_r7_wgmma_is_not_serialized(dtype: str) -> None:
    """ptxas must not serialize rung 7's wgmma (warning C7514: a non-wgmma instruction touches
    the accumulators inside the async pipeline). Placing the overlapped epilogue inside the
    k loop did exactly that to the bf16 build, at a cost of ~7 % on an H200."""
    ptxas = require_tool("ptxas", find_ptxas(), "rung 7's wgmma serialization check")
    spec = next(s for s in SPECS if s.name == "sm90/r7_multi_consumer")
    kernel = spec.load()
    problem = Problem(4096, 4096, 4096, dtype)
    for epilogue in ("overlap", "serial"):
        config = kernel.select(problem).with_overrides(f"epilogue={epilogue}")
        ptx = kernel.codegen(problem, spec.arch, config).ptx
        log = _ptxas_log(ptx, ptxas)
        assert "C7514" not in log, f"{config.name} ({dtype}): wgmma serialized by ptxas"


def _ptxas_log(ptx: str, ptxas: str) -> str:
    """``ptxas -v``'s log for sm_90a; the test fails if ptxas refuses the PTX."""
    run = run_ptxas(ptx, "sm_90a", ptxas=ptxas)
    assert run.returncode == 0, run.log[-2000:]
    return run.log


# -- rung 8: one config per code path, and what select() picks ---------------------------------
_TMA_LOAD = "cp.async.bulk.tensor.2d.shared::cta.global"
_TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta"
_MULTICAST = "multicast::cluster"
_SK_PARTIAL = "st.global.v2.b32"  # two fp32 accumulators (also the reduce's four fp16 of D)
_SK_LOAD = "ld.global.v4.b32"  # four fp32 of a partial (the stream-K reduce)
# Swapped tiles' TMA-store epilogue: stmatrix transposes into M-major buffers (D^T's unit
# stride), four 8x8 matrices a warp for sub-tiles of 16 or 32 columns, two for 8.
_ST_T4 = "stmatrix.sync.aligned.m8n8.x4.trans"
_ST_T2 = "stmatrix.sync.aligned.m8n8.x2.trans"
_DIRECT = "st.global.b16"  # one element of D a store: the direct epilogue


def _r8():
    from backends.cutedsl.sm90 import r8_shape_adaptive

    return r8_shape_adaptive


#: (problem, overrides of its selected config or "", PTX that must appear, PTX that must not,
#: kernels in the PTX). One row per distinct code path of rung 8.
R8_PATHS = {
    "swap_ab": (
        Problem(1, 14336, 4096, "fp16"),
        "",
        ("wgmma.mma_async.sync.aligned.m64n16k16", _TMA_LOAD, _DIRECT),
        (_TMA_STORE, _MULTICAST),
        1,
    ),
    "swap_ab_split_k": (
        Problem(1, 3584, 14336, "bf16"),
        "tile_m=128,split_k=4",
        ("wgmma.mma_async.sync.aligned.m64n16k16", "st.global.b32", "ld.global.b32"),
        (_TMA_STORE, _MULTICAST),
        2,
    ),
    "swap_ab_64x16": (
        Problem(16, 6144, 4096, "fp16"),
        "epilogue=serial",
        ("wgmma.mma_async.sync.aligned.m64n16k16", _TMA_LOAD, _TMA_STORE, _ST_T4),
        (_DIRECT, _MULTICAST),
        1,
    ),
    "swap_ab_n32": (
        Problem(32, 8192, 4096, "fp16"),
        "",
        ("wgmma.mma_async.sync.aligned.m64n32k16", _TMA_LOAD, _DIRECT),
        (_TMA_STORE, _MULTICAST),
        1,
    ),
    "swap_ab_n64": (
        Problem(64, 4096, 4096, "fp16"),
        "tile_m=64,tile_n=64,cluster=1,swap_ab=1,split_k=1,epilogue=serial",
        ("wgmma.mma_async.sync.aligned.m64n64k16", _TMA_LOAD, _TMA_STORE, _ST_T4),
        (_DIRECT, _MULTICAST),
        1,
    ),
    # mid-size M: a wide swapped tile (M on the wgmma N side, 176 of it) in a multicast pair
    "swap_wide_cluster2": (
        Problem(338, 8192, 8192, "fp16"),
        "cluster=2",
        ("wgmma.mma_async.sync.aligned.m64n176k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT,),
        1,
    ),
    # ... and in a cluster of four (cuBLAS's 128x72 4x1 at this shape): each CTA issues a
    # quarter of M's column tile to all four (tune-only: ``CLUSTER4_WIDTHS``)
    "swap_wide_cluster4": (
        Problem(196, 4608, 4096, "fp16"),
        "tile_m=128,tile_n=72,cluster=4,swap_ab=1,split_k=1,epilogue=serial,raster=m,group=8",
        ("wgmma.mma_async.sync.aligned.m64n72k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T2),
        (_DIRECT,),
        1,
    ),
    # ... and 208 wide in four, raster n (tune-only: ``CLUSTER4_WIDE``, as cuBLAS's wide 4x1
    # and 4x2 clusters on the H100 at M 400-1300): each CTA issues 52 of the tile's 208 rows
    "swap_wide_cluster4_208": (
        Problem(410, 6144, 4096, "fp16"),
        "tile_m=128,tile_n=208,cluster=4,swap_ab=1,split_k=1,epilogue=serial,raster=n,group=8",
        ("wgmma.mma_async.sync.aligned.m64n208k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT,),
        1,
    ),
    # ... its direct-store twin (the swapped tiles' epilogue before the eleventh version)
    "swap_wide_direct": (
        Problem(338, 8192, 8192, "fp16"),
        "cluster=2,epilogue=direct",
        ("wgmma.mma_async.sync.aligned.m64n176k16", _TMA_LOAD, _MULTICAST, _DIRECT),
        (_TMA_STORE, _ST_T4),
        1,
    ),
    # ... and with 64 rows of N a CTA (one consumer warpgroup): 80 CTAs at N = 5120, not 40
    "swap_wide_64_cluster2": (
        Problem(140, 5120, 4096, "fp16"),
        "tile_m=64,tile_n=144,cluster=2,swap_ab=1,split_k=1,epilogue=serial",
        ("wgmma.mma_async.sync.aligned.m64n144k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT,),
        1,
    ),
    # ... and in 4x2 clusters (cuBLAS's 64x112 4x2 at this shape; tune-only:
    # ``CLUSTER4_64_WIDTHS``): each CTA issues 28 of M's 112 rows to its column of four and, first
    # in its row, the weights' 64 rows to both columns (every load a multicast, none plain)
    "swap_wide_64_cluster4x2": (
        Problem(212, 3072, 3072, "fp16"),
        "tile_m=64,tile_n=112,cluster=4,cluster_n=2,swap_ab=1,split_k=1,epilogue=serial,raster=n",
        ("wgmma.mma_async.sync.aligned.m64n112k16", _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT, _TMA_LOAD),
        1,
    ),
    # widths that are multiples of 8, not 16 (the wgmma N step): M = 667 as 4 x 168, in pairs
    "swap_wide_n168_cluster2": (
        Problem(667, 4096, 14336, "fp16"),
        "tile_m=128,tile_n=168,cluster=2",  # the pick: 192x112 (132 tiles, one wave)
        ("wgmma.mma_async.sync.aligned.m64n168k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T2),
        (_DIRECT,),
        1,
    ),
    # ... the narrowest, 72 (M = 69), split in two: fp32 partials, then the reduce
    "swap_wide_n72_split_k": (
        Problem(69, 4608, 36864, "bf16"),
        "",
        ("wgmma.mma_async.sync.aligned.m64n72k16", "st.global.b32", "ld.global.b32"),
        (_TMA_STORE, _MULTICAST),
        2,
    ),
    # 256 rows of N a CTA: two consumer warpgroups of 128 rows, two m64 wgmma a k-block each
    "swap_wide_256_cluster2": (
        Problem(1116, 8192, 8192, "fp16"),
        "tile_m=256,tile_n=144,cluster=2,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n144k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT,),
        1,
    ),
    # ... 160 wide by the TMA store alone (tune-only: ``ROWS_256_TMA_WIDTHS``), cuBLAS's tile at
    # this shape on the H100: 160 fp32 accumulators a thread, unspilled
    "swap_wide_256_160": (
        Problem(1087, 9216, 3072, "fp16"),
        "tile_m=256,tile_n=160,cluster=2,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n160k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T4),
        (_DIRECT,),
        1,
    ),
    # 192 rows of N a CTA: three consumer warpgroups of 64 rows (152 registers each), M = 410
    # in four columns of 104 (cuBLAS's tile at this shape), in pairs
    "swap_wide_192_cluster2": (
        Problem(410, 6144, 4096, "fp16"),
        "tile_m=192,tile_n=104,cluster=2,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n104k16", _TMA_LOAD, _MULTICAST, _TMA_STORE, _ST_T2),
        (_DIRECT,),
        1,
    ),
    # ... the widest, 160, alone, and the narrowest, 72, on a ragged N (direct stores)
    "swap_wide_192_n160": (
        Problem(301, 6144, 4096, "fp16"),
        "tile_m=192,tile_n=160,cluster=1,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n160k16", _TMA_LOAD, _TMA_STORE, _ST_T4),
        (_DIRECT, _MULTICAST),
        1,
    ),
    "swap_wide_192_n72_ragged": (
        Problem(141, 5003, 1000, "bf16"),
        "tile_m=192,tile_n=72,cluster=2,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n72k16", _TMA_LOAD, _MULTICAST, _DIRECT),
        (_TMA_STORE,),
        1,
    ),
    # the deferred epilogue (tune-only): the whole 64x256 tile staged in one round, its reads
    # waited on at the next tile's epilogue; and a 128x128 pair's, on a ragged M
    "deferred_64x256": (
        Problem(3488, 3072, 3072, "fp16"),
        "tile_m=64,tile_n=256,cluster=1,swap_ab=0,split_k=1,stream_k=0,epilogue=deferred",
        ("wgmma.mma_async.sync.aligned.m64n256k16", _TMA_LOAD, _TMA_STORE),
        (_DIRECT, _MULTICAST, _ST_T4),
        1,
    ),
    "deferred_128x128_cluster2": (
        Problem(1001, 4096, 2048, "bf16"),
        "tile_m=128,tile_n=128,cluster=2,swap_ab=0,split_k=1,stream_k=0,epilogue=deferred",
        ("wgmma.mma_async.sync.aligned.m64n128k16", _TMA_LOAD, _MULTICAST, _TMA_STORE),
        (_DIRECT, _ST_T4),
        1,
    ),
    # 128 rows, the one column of M = 165 split four ways (216 k-tiles: 54 a split)
    "swap_wide_split4": (
        Problem(165, 5120, 13824, "bf16"),
        "tile_m=128,tile_n=168,cluster=1,swap_ab=1,split_k=4,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n168k16", "st.global.b32", "ld.global.b32"),
        (_TMA_STORE, _MULTICAST),
        2,
    ),
    # ... the narrowest, an odd number of 8-row groups (defect 2), alone
    "swap_wide_256_n72": (
        Problem(69, 16384, 4096, "bf16"),
        "tile_m=256,tile_n=72,cluster=1,swap_ab=1,split_k=1,epilogue=serial,group=8",
        ("wgmma.mma_async.sync.aligned.m64n72k16", _TMA_LOAD, _TMA_STORE, _ST_T2),
        (_DIRECT, _MULTICAST),
        1,
    ),
    # the grouped walk (no scheduler) on a count that CUTLASS's group would pad (6 x 20 tiles)
    "grouped_walk_128x256": (
        Problem(668, 5120, 14336, "fp16"),
        "tile_m=128,tile_n=256,cluster=1,swap_ab=0,stream_k=0,group=8,epilogue=overlap",
        ("wgmma.mma_async.sync.aligned.m64n256k16", _TMA_LOAD, _TMA_STORE),
        (_MULTICAST,),
        1,
    ),
    # unswapped split-K, N % 8 == 0: an interior tile's partial in 8-byte pairs, an edge
    # tile's predicated one fp32 at a time
    "split_k": (
        Problem(256, 256, 16384, "fp16"),
        "tile_m=128,tile_n=128,split_k=4,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n128k16", _SK_PARTIAL, "st.global.b32", "ld.global.b32"),
        (_TMA_STORE, _MULTICAST),
        2,
    ),
    # ... N % 8 != 0 (rows not 8-byte aligned): every partial predicated, one fp32 at a time
    "split_k_ragged_n": (
        Problem(130, 4100, 14336, "fp16"),
        "tile_m=64,tile_n=128,cluster=1,split_k=2,swap_ab=0,group=8,epilogue=serial",
        ("wgmma.mma_async.sync.aligned.m64n128k16", "st.global.b32", "ld.global.b32"),
        (_SK_PARTIAL, _TMA_STORE, _MULTICAST),
        2,
    ),
    "tile_64x64_cluster2": (
        Problem(128, 6144, 4096, "fp16"),
        "tile_m=64,tile_n=64,cluster=2,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n64k16", _TMA_STORE, _MULTICAST, "setmaxnreg.inc"),
        (),
        1,
    ),
    "tile_64x256_cluster1": (
        Problem(4096, 4096, 4096, "fp16"),
        "tile_m=64,tile_n=256,cluster=1,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n256k16", _TMA_STORE, _TMA_LOAD),
        (_MULTICAST,),
        1,
    ),
    "tile_128x128_cluster2": (
        Problem(4096, 4096, 4096, "fp16"),
        "tile_m=128,tile_n=128,epilogue=serial,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n128k16", _TMA_STORE, _MULTICAST),
        (),
        1,
    ),
    "tile_128x64_non_persistent": (
        Problem(1024, 1024, 1024, "fp16"),
        "tile_m=128,tile_n=64,cluster=1,persistent=0,epilogue=serial,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n64k16", _TMA_STORE),
        (_MULTICAST,),
        1,
    ),
    "tile_128x160_cluster2": (
        Problem(1024, 10240, 8192, "fp16"),
        "tile_m=128,tile_n=160,cluster=2,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n160k16", _TMA_STORE, _MULTICAST),
        (),
        1,
    ),
    # 128x160 on one CTA, launched without a cluster: the heuristic's pick at 633x36864x4608
    # (fifteenth version)
    "tile_128x160_one_cta": (
        Problem(633, 36864, 4608, "fp16"),
        "",
        ("wgmma.mma_async.sync.aligned.m64n160k16", _TMA_LOAD, _TMA_STORE),
        (_MULTICAST,),
        1,
    ),
    "tile_64x160_split2": (
        Problem(128, 10240, 8192, "fp16"),
        "tile_m=64,tile_n=160,cluster=1,split_k=2,epilogue=serial,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n160k16", "st.global.b32", "ld.global.b32"),
        (_TMA_STORE, _MULTICAST),
        2,
    ),
    "ragged_n": (
        Problem(1000, 1003, 520, "bf16"),
        "",
        ("wgmma.mma_async", "st.global.b16"),
        (_TMA_STORE,),
        1,
    ),
    "tile_128x192_cluster2": (
        Problem(3000, 5000, 1000, "fp16"),
        "tile_m=128,tile_n=192,cluster=2,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n192k16", _TMA_STORE, _MULTICAST),
        (),
        1,
    ),
    # stream-K: whole tiles by TMA store, fp32 partials (8-byte stores), the reduce's 16-byte
    # partial loads
    "stream_k": (
        Problem(300, 7168, 16384, "fp16"),
        "tile_m=64,tile_n=256,cluster=1,stream_k=1,epilogue=serial,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n256k16", _TMA_STORE, _SK_PARTIAL, _SK_LOAD),
        (_MULTICAST,),
        2,
    ),
    # the default: whole tiles' D overlapped with the next unit's first MMAs
    "stream_k_cluster2_overlap": (
        Problem(3000, 5000, 1000, "bf16"),
        "tile_m=128,tile_n=256,cluster=2,stream_k=1,epilogue=overlap,swap_ab=0,group=8",
        ("wgmma.mma_async.sync.aligned.m64n256k16", _TMA_STORE, _MULTICAST, _SK_PARTIAL),
        (),
        2,
    ),
}


@pytest.mark.parametrize("path", list(R8_PATHS))
def test_r8_code_paths_compile(path: str) -> None:
    """Each code path of rung 8 compiles for sm_90a with the instructions it is built on: the
    wgmma N of its tile, TMA loads, the TMA-store epilogue or direct stores (swap-AB writes
    D^T column-major; split-K writes fp32 partials, then the reduce kernel reads them back;
    stream-K stores whole tiles by TMA and its tail's fp32 partials from registers, then its
    reduce kernel reads them back), multicast only with cluster 2."""
    problem, overrides, wanted, unwanted, entries = R8_PATHS[path]
    kernel = _r8().KERNEL
    config = kernel.select(problem)
    if overrides:
        config = config.with_overrides(overrides)
    assert config in kernel.configs
    assert kernel.supports(problem, config) is None
    ptx = kernel.codegen(problem, "sm_90a", config).ptx
    assert ptx.count(".entry ") == entries, f"{config.name}: {ptx.count('.entry ')} kernels"
    missing = [f for f in wanted if f not in ptx]
    assert not missing, f"{config.name}: PTX lacks {missing}"
    present = [f for f in unwanted if f in ptx]
    assert not present, f"{config.name}: PTX has {present}"
    # TMA loads carry CUTLASS C++'s EVICT_NORMAL L2 policy, not CuTeDSL's default of 0.
    assert str(_r8().TMA_CACHE_HINT) in ptx, f"{config.name}: TMA loads lack the L2 policy"
    dec = re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+)", ptx)
    inc = re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+)", ptx)
    # Three consumer warpgroups (192 rows) share what the producer leaves: 152 each.
    assert dec == ["40"] and inc == ["152" if config.tile_m == 192 else "232"]
    _assert_ptxas_clean(ptx, config.name)


def _assert_ptxas_clean(ptx: str, what: str) -> None:
    """ptxas neither serializes the wgmma (C7514, see the rung 7 test) nor spills."""
    ptxas = require_tool("ptxas", find_ptxas(), "the spill and serialization checks of rung 8")
    log = _ptxas_log(ptx, ptxas)
    assert "C7514" not in log, f"{what}: wgmma serialized by ptxas"
    spills = [int(b) for b in re.findall(r"(\d+) bytes spill stores", log)]
    assert spills and not any(spills), f"{what}: spills {spills}"


def test_r8_deferred_epilogue_stores_a_tile_in_one_round() -> None:
    """``epilogue=deferred`` stores the whole tile in one round: per store site one bulk
    group and two barriers (buffers free, tile written) where the overlap epilogue of 64x256
    takes eight rounds of 32 columns, each with its barrier pair and, from the fifth, a wait
    for an earlier round's reads; the same TMA stores either way (8 sub-tiles a site)."""
    kernel = _r8().KERNEL
    problem = Problem(3488, 3072, 3072, "fp16")
    base = "tile_m=64,tile_n=256,cluster=1,swap_ab=0,split_k=1,stream_k=0,"
    counts = {}
    for epilogue in ("overlap", "deferred"):
        config = kernel.select(problem).with_overrides(base + f"epilogue={epilogue}")
        ptx = kernel.codegen(problem, "sm_90a", config).ptx
        counts[epilogue] = [
            ptx.count(f) for f in ("bar.sync", "cp.async.bulk.commit_group", _TMA_STORE)
        ]
    (bars, groups, stores), (dbars, dgroups, dstores) = counts["overlap"], counts["deferred"]
    sites = dgroups  # one bulk group a store site: in the tile loop and after it
    assert sites >= 1 and groups == 8 * sites and stores == dstores == 8 * sites, counts
    assert dbars - 2 * sites == bars - 16 * sites, counts  # the rest: the kernel's own


def test_r8_no_pick_runs_the_padded_grouped_scheduler() -> None:
    """CUTLASS's scheduler's L2 grouping rounds the tile count along N up to the group (8) and
    runs the padded work units as real tiles (full K loop, stores all masked; defect 1).
    Swapped, N is one tile: the first H200 run did 8 units of work per real one (13-23 % of
    cuBLAS at M = 1, 16). Swap and split-K configs therefore run ungrouped, and the grouped
    data-parallel ones walk their tiles themselves (``grouped_tile``): no heuristic pick's PTX
    has the round-up to 8 (``and.b32 ..., -8``), which the raster-n variant, still on the
    scheduler, has."""
    r8 = _r8()
    kernel = r8.KERNEL
    rounded = re.compile(r"and\.b32\s+%r\d+, %r\d+, -8;")
    grouped = Problem(4096, 4096, 4096, "fp16")
    raster_n = kernel.select(grouped).with_overrides("raster=n")
    assert not r8.Gemm(132, True, raster_n).walk
    assert rounded.search(kernel.codegen(grouped, "sm_90a", raster_n).ptx)
    pick = kernel.select(grouped)
    assert r8.Gemm(132, True, pick).grouped_walk, pick.name
    assert not rounded.search(kernel.codegen(grouped, "sm_90a", pick).ptx), pick.name
    for problem in (Problem(1, 57344, 8192, "fp16"), Problem(1, 4096, 4096, "fp16")):
        config = kernel.select(problem)
        assert config.swap_ab and config.group == 8
        assert r8.Gemm(132, True, config).l2_group == 1
        ptx = kernel.codegen(problem, "sm_90a", config).ptx
        assert not rounded.search(ptx), f"{config.name}: tile count rounded up to the group"


def test_r8_swapped_tiles_walk_d_m_first() -> None:
    """``raster`` names D's side walked first, swapped or not: a swapped config's raster m
    is the kernel's column side (D's M), so the column tiles that read one block of B (the
    weights) are consecutive work units and share a wave; raster n walks the kernel's rows
    first. The heuristic takes m where B outgrows L2 and n where it stays there
    (``harness.tile_cost.swap_raster``), and the menu has both for every wide swap."""
    r8 = _r8()
    wide = r8.R8Config(128, 112, 2, swap_ab=True, epilogue="serial")
    assert r8.Gemm(132, False, wide).raster_m is False
    assert r8.Gemm(132, False, dataclasses.replace(wide, raster="n")).raster_m is True
    assert r8.Gemm(132, True, r8.R8Config(128, 256, 2)).raster_m is True
    assert r8.Gemm(132, True, r8.R8Config(128, 256, 2, raster="n")).raster_m is False
    # 291x27648x5120: B is 283 MB; 793x6144x4096: 50 MB (under 50 MiB).
    big, small = Problem(291, 27648, 5120, "fp16"), Problem(793, 6144, 4096, "fp16")
    for problem, raster in ((big, "m"), (small, "n")):
        pick = r8._heuristic(problem)
        assert pick.wide_swap, pick.name
        assert pick.raster == raster, pick.name
    wides = [c for c in r8.MENU if c.wide_swap]
    assert {dataclasses.replace(c, raster="n") for c in wides} <= set(wides)


def test_r8_one_cta_configs_launch_without_a_cluster() -> None:
    """Only a multi-CTA config launches as a cluster. Launched as a 1x1x1 cluster, the one-CTA
    128x256 tile read 12.7 GB from DRAM at 9000x8192x28672 on an H100 (8.0 GB launched plainly) and
    ran at 56-79 % of cuBLAS instead of 83-99 %; every one-CTA config of the menu launches
    plainly, every pair as a (2, 1, 1) cluster (a 2-D cluster as its rows x columns)."""
    r8 = _r8()
    for config in r8.MENU:
        gemm = r8.Gemm(HOPPER.num_sms, True, config)
        ctas = config.cluster * config.cluster_n
        want = None if ctas == 1 else [config.cluster, config.cluster_n, 1]
        assert gemm.launch_cluster == want, config.name


def test_r8_heuristic_runs_128x160_on_one_cta_unsplit_only() -> None:
    """128x160 on one CTA is a heuristic pick since the fifteenth version (it launches plainly
    now), never split: split 2 ran 68-77 % of cuBLAS where timed, far under the model's
    estimate. Over the tuning seeds and ``sweep`` some pick runs it, none splits it."""
    r8 = _r8()
    picks = [r8._heuristic(p) for p in expand(["random:101", "random:102", "random:103", "sweep"])]
    tile160 = [c for c in picks if (c.tile_m, c.tile_n, c.swap_ab) == (128, 160, False)]
    assert any(c.cluster == 1 and c.split_k == 1 for c in tile160), "no one-CTA 128x160 pick"
    assert not [c.name for c in tile160 if c.cluster == 1 and c.split_k > 1]


def test_r8_non_persistent_runs_the_scheduler_on_every_unit() -> None:
    """persistent=0 launches one CTA per work unit through CUTLASS's scheduler (each CTA's loop
    runs once); its persistent twin walks its grouped tiles itself on the persistent grid."""
    r8 = _r8()
    kernel = r8.KERNEL
    problem = Problem(1024, 1024, 1024, "fp16")
    base = r8.R8Config(128, 128, 1, persistent=False, epilogue="serial")
    assert base in kernel.configs and kernel.supports(problem, base) is None
    gemm = r8.Gemm(HOPPER.num_sms, True, base)
    assert not gemm.walk and gemm.max_active_clusters == r8.MAX_GRID_Z
    twin = r8.Gemm(HOPPER.num_sms, True, dataclasses.replace(base, persistent=True))
    assert twin.walk and twin.max_active_clusters == HOPPER.num_sms
    assert list(_kernels(kernel.codegen(problem, "sm_90a", base).ptx)) == ["kernel"]


def _sweep() -> list[Problem]:
    from harness.problems import SUITES

    return [Problem(m, n, k, "fp16") for m, n, k in SUITES["sweep"][1]]


def test_r8_select_on_the_sweep() -> None:
    """What the heuristic picks across decode-to-prefill shapes (no tuned table is consulted:
    no GPU here, so ``select`` falls through to the heuristic)."""
    r8 = _r8()
    kernel = r8.KERNEL
    for p in _sweep():
        c = kernel.select(p)
        assert c == r8._heuristic(p) and c in kernel.configs
        assert kernel.supports(p, c) is None
        # small M: N fills the wgmma M side; a mid-size M only as a wide swap that fits it
        assert (c.swap_ab and not c.wide_swap) == (p.m <= 16), p.key
        assert not c.wide_swap or swap_fits(p, c.tile_n), (p.key, c.name)
        if c.swap_ab and not c.wide_swap:  # Gluon rung 8's decode tile: 16 columns (covers M)
            assert c.tile_n == 16 and c.cluster == 1
        # D leaves by TMA wherever it can, but for the narrow covers (decode): direct stores
        if c.swap_ab:
            want = "serial" if c.wide_swap or c.split_k > 1 else "direct"
        else:
            want = "serial" if p.n % 8 or c.split_k > 1 else "overlap"
        assert c.epilogue == want, c.name
        units = c.ctas(p)
        # Enough work units for nearly half a wave, unless the problem is too small to split:
        # decode streams the weights from DRAM, which 64 CTAs already do at full speed (one
        # wave of larger tiles can beat two of smaller: 128x10240 takes 80 128x128 tiles).
        assert units >= 0.45 * HOPPER.num_sms or p.m * p.n <= 512 * 512, (p.key, c.name)
        if c.split_k > 1:
            assert units <= 1.1 * HOPPER.num_sms and p.k // c.split_k >= 512
        if p.m == 8192 or (p.m, p.n, p.k) == (2048, 2048, 2048):
            # rung 7's kind of tile: two consumer warpgroups, a multicast pair, no split (its
            # width, 128 to 256, and a stream-K tail are the cost model's to choose)
            assert (c.tile_m, c.cluster, c.split_k) == (128, 2, 1), (p.key, c.name)
            assert c.tile_n >= 128, (p.key, c.name)
    rung7 = r8.R8Config(128, 256, 2, epilogue="overlap")
    assert kernel.select(Problem(4096, 4096, 4096, "fp16")) == rung7
    # 8192^3 keeps rung 7's tile and pair (a stream-K tail is the model's to choose): a refit
    # of every constant once moved it to 128x192, 90.1 % of cuBLAS on an H200 (README,
    # "Eighth version"), where rung 7's tile runs >= 99 %. This guards every later refit.
    big = kernel.select(Problem(8192, 8192, 8192, "fp16"))
    assert (big.tile_m, big.tile_n, big.cluster, big.split_k) == (128, 256, 2, 1), big.name
    assert kernel.select(Problem(2048, 2048, 2048, "fp16")) == rung7
    # Decode with few output tiles and long K: split-K fills the SMs; with a short K the
    # reduce costs more than the 64 unsplit 64x16 tiles lose (measured on an H200), and from
    # 0.45 of the SMs (N = 4096: 64 of 132) the unsplit cover wins at long K too (H100 A/B).
    assert kernel.select(Problem(1, 3584, 14336, "fp16")).split_k > 1
    assert kernel.select(Problem(1, 4096, 14336, "fp16")).split_k == 1
    assert kernel.select(Problem(16, 4096, 4096, "fp16")).split_k == 1
    assert kernel.select(Problem(256, 256, 16384, "fp16")).split_k > 1
    assert kernel.select(Problem(1, 57344, 8192, "fp16")).split_k == 1  # 448 tiles already
    # Mid M: smaller tiles, no split.
    mid = kernel.select(Problem(128, 4096, 4096, "fp16"))
    assert (mid.tile_m, mid.tile_n, mid.split_k, mid.swap_ab) == (64, 64, 1, False)
    small = kernel.select(Problem(1024, 1024, 1024, "fp16"))  # a smaller tile than rung 7's
    assert small.tile_m * small.tile_n < rung7.tile_m * rung7.tile_n and small.cluster == 1
    # The measured H200 regressions of the first heuristic (swap 64x32, 64x64 cluster 2, 128x256
    # at 1024 x 6144) get the configs the Gluon rung 8 reaches 86-113 % of cuBLAS with; decode
    # at 4096x4096 the unsplit 64x16 tile its tune found 3-8 % faster than 128x16 split 4.
    one = kernel.select(Problem(1, 4096, 4096, "fp16"))
    assert (one.tile_m, one.tile_n, one.swap_ab, one.split_k) == (64, 16, True, 1)
    mid = kernel.select(Problem(128, 6144, 4096, "fp16"))  # one wave, not 64x64 cluster 2's 1.45
    assert mid.cluster == 1 and not mid.swap_ab and mid.ctas(Problem(128, 6144, 4096)) <= 132
    # 1024 x 6144: not 128x256 cluster 2 (96 cluster tiles, 1.45 waves of 66), but 128x128
    # (192, 2.9 waves) or the 192-wide tile (128, 1.94 waves)
    big = kernel.select(Problem(1024, 6144, 4096, "fp16"))
    assert (big.tile_m, big.cluster, big.stream_k) == (128, 2, False)
    assert big.tile_n in (128, 192)
    # Between the grid's points the wave tail is split: at 300 x 7168 x 16384 the last wave of
    # any tile is part-empty, and the pick spreads its k-iterations over every SM.
    # (or, M being the short side, a wide swapped tile fits it: 300 rows as 2 x 160).
    tail = kernel.select(Problem(300, 7168, 16384, "fp16"))
    if tail.swap_ab:
        assert swap_fits(Problem(300, 7168, 16384), tail.tile_n), tail.name
    else:
        assert tail.stream_k and r8.stream_k(Problem(300, 7168, 16384), 132, tail).sk_tiles > 0


def test_r8_grouped_picks_walk_every_tile_once_without_padding() -> None:
    """Every unswapped, unsplit heuristic pick without stream-K runs group 8 through the
    grouped walk: program p takes tiles p, p + P, ... of ``grouped_tile``'s order on the full
    persistent grid, so every cluster tile runs exactly once and the busiest program runs
    cdiv(tiles, P) of them, with no padded unit in its slots. CUTLASS's group padded 6 x 20
    cluster tiles (668x5120x14336, 128x256) to 6 x 24 = 144 units on 132 SMs: two tile times
    (H200: 55 % of cuBLAS grouped, 86 % ungrouped)."""
    r8 = _r8()
    wide = r8.R8Config(128, 256, 1)
    gemm = r8.Gemm(HOPPER.num_sms, True, wide)
    assert gemm.grouped_walk and gemm.programs == HOPPER.num_sms
    for problem, config in (
        (Problem(668, 5120, 14336), wide),
        (Problem(14423, 7168, 5120), r8.R8Config(128, 256, 2)),
        (Problem(3018, 5120, 13824), r8.R8Config(128, 256, 2)),
        (Problem(1553, 3584, 3584), r8.R8Config(128, 128, 1)),
    ):
        tiles = config.tiles(problem)  # cluster tiles
        tiles_n = cdiv(config.oriented(problem)[1], config.tile_n)
        tiles_m = tiles // tiles_n
        programs = HOPPER.num_sms // config.cluster
        walked = [
            [r8.grouped_tile(u, tiles_m, tiles_n, config.group) for u in range(p, tiles, programs)]
            for p in range(programs)
        ]
        order = sorted(t for units in walked for t in units)
        assert order == [(i, j) for i in range(tiles_m) for j in range(tiles_n)], problem.key
        busiest = max(len(units) for units in walked)
        assert busiest == cdiv(tiles, programs), problem.key
    for problem in [*_sweep(), Problem(1143, 5120, 4096), Problem(13236, 5120, 14336)]:
        pick = r8.KERNEL.select(problem)
        if pick.swap_ab or pick.split_k > 1 or pick.stream_k:
            continue
        assert pick.group == 8 and r8.Gemm(HOPPER.num_sms, True, pick).grouped_walk, pick.name
    assert not any(c.group == 1 for c in r8.MENU)


def test_r8_every_problem_gets_a_valid_config() -> None:
    """The heuristic never refuses: every problem of every suite and random shapes (any M, N
    >= 1, K % 8 == 0) get a menu member that is valid for them; a ragged N never gets the
    TMA-store-only overlap epilogue."""
    import random

    from harness.problems import SUITES, random_shapes

    r8 = _r8()
    kernel = r8.KERNEL
    problems = [
        Problem(m, n, k, d)
        for _, shapes in SUITES.values()
        for m, n, k in shapes
        for d in ("fp16", "bf16")
    ]
    # the random suites (a tuning seed and another), whose M lies between the grid's points
    problems += [Problem(*shape) for seed in (101, 7) for shape in random_shapes(seed, 128)]
    rng = random.Random(8)
    for _ in range(2000):
        m, n = (int(2 ** rng.uniform(0, 16)) for _ in range(2))
        problems.append(Problem(m, n, 8 * int(2 ** rng.uniform(0, 12)), "bf16"))
    problems += [Problem(1, 1, 8), Problem(65536, 1, 8), Problem(1, 65536, 65536)]
    for p in problems:
        c = kernel.select(p)
        assert c in kernel.configs, p.key
        assert kernel.supports(p, c) is None, (p.key, c.name, kernel.supports(p, c))
        if p.n % 8:  # no TMA store: never the overlap, which needs one
            assert c.epilogue in ("serial", "direct"), (p.key, c.name)
        if c.stream_k:  # chosen for a wave tail, which its workspace then holds
            assert r8.stream_k(p, HOPPER.num_sms, c).sk_tiles > 0, (p.key, c.name)
    # the tune ranking: every valid config once, the heuristic's among them, the variants the
    # cost model cannot tell apart after all the others
    for p in (Problem(1, 4096, 14336), Problem(128, 10240, 8192), Problem(1000, 1003, 520)):
        ranked = r8._ranked(p)
        valid = [c for c in kernel.configs if kernel.supports(p, c) is None]
        assert sorted(c.name for c in ranked) == sorted(c.name for c in valid)
        assert r8._heuristic(p) in ranked
        flags = [r8._variant(p, c) for c in ranked]
        assert flags == sorted(flags)
    names = [c.name for c in kernel.configs]
    assert len(set(names)) == len(names)
    assert all(r8._valid(Problem(4096, 4096, 4096), c) is None for c in kernel.configs)


# -- rung 8: stream-K and the 192-wide tile ----------------------------------------------------
def _kernels(ptx: str) -> dict[str, str]:
    """Each kernel's PTX by its method name (``kernel``, ``reduce``, ``streamk_reduce``)."""
    out = {}
    for body in ptx.split(".visible .entry ")[1:]:
        name = re.match(r"kernel_cutlass_(\w+?)_backends", body)
        assert name, body[:80]
        out[name.group(1)] = body
    return out


def _whole_waves(config) -> Problem:
    """A problem of exactly two waves of ``config``'s cluster tiles (no tail)."""
    programs = HOPPER.num_sms // config.cluster
    return Problem(config.tile_rows * programs, 2 * config.tile_n, 4096, "bf16")


#: (tile_m, tile_n, cluster) of the stream-K configs: the unswapped tiles a tail wave is made of.
_STREAM_K_TILES = (
    (128, 256, 2),
    (128, 256, 1),
    (128, 192, 2),
    (128, 192, 1),
    (128, 128, 2),
    (128, 128, 1),
    (64, 256, 1),
    (64, 128, 1),
)
#: (tile_m, tile_n, cluster, stream_k) of the configs stream-K and the 192-wide tile added.
_SK_AND_192 = [(*t, True) for t in _STREAM_K_TILES] + [(128, 192, 2, False), (128, 192, 1, False)]


@pytest.mark.parametrize(
    "knobs", _SK_AND_192, ids=lambda k: f"{k[0]}x{k[1]}-c{k[2]}" + ("-stream_k" * k[3])
)
def test_r8_stream_k_and_192_configs_compile(knobs) -> None:
    """Every stream-K config and every 192-wide one is valid on problems with a wave tail and
    on one of whole waves, and compiles for sm_90a (one compile serves them all: the shape is a
    runtime argument). Stream-K: whole tiles leave through the TMA-store epilogue, each tail
    segment's fp32 partial from registers (one unpredicated 8-byte store per accumulator
    pair: tile_n / 4 a thread), and a second kernel (the reduce) reads the partials 16 bytes at
    a time and writes D; the workspace holds two partial cluster tiles per program, and only
    when there is a tail."""
    r8 = _r8()
    kernel = r8.KERNEL
    tm, tn, cluster, stream_k = knobs
    epilogue = "serial" if stream_k else "overlap"
    config = r8.R8Config(tm, tn, cluster, stream_k=stream_k, epilogue=epilogue)
    assert config in kernel.configs
    tails = (Problem(300, 7168, 16384, "fp16"), Problem(3000, 5000, 1000, "fp16"))
    whole = _whole_waves(config)
    for p in (*tails, whole):
        assert kernel.supports(p, config) is None, (p.key, kernel.supports(p, config))
    assert r8.stream_k(whole, HOPPER.num_sms, config).sk_tiles == 0
    ptx = kernel.codegen(tails[0], "sm_90a", config).ptx
    parts = _kernels(ptx)
    gemm = parts["kernel"]
    assert f"wgmma.mma_async.sync.aligned.m64n{config.tile_n}k16" in gemm
    assert _TMA_STORE in gemm and (_MULTICAST in gemm) == (config.cluster == 2)
    if config.stream_k:
        assert sorted(parts) == ["kernel", "streamk_reduce"]
        assert gemm.count(_SK_PARTIAL) == config.tile_n // 4, config.name
        assert gemm.count("st.global") == gemm.count(_SK_PARTIAL)  # nothing else, no edges
        assert _SK_LOAD in parts["streamk_reduce"] and "st.global" in parts["streamk_reduce"]
        programs = HOPPER.num_sms // config.cluster
        slots = 2 * programs * config.tile_rows * config.tile_n
        assert r8.workspace_elems(whole, config) == 0
        for p in tails:
            sk = r8.stream_k(p, HOPPER.num_sms, config)
            assert sk.sk_tiles > 0 and r8.workspace_elems(p, config) == slots
            # every tail unit's slot lies inside the workspace
            last = max(sk.unit(u)[3] for u in range(sk.dp_tiles, sk.units))
            assert (last + 1) * config.tile_rows * config.tile_n <= slots
    else:
        assert list(parts) == ["kernel"] and "st.global" not in gemm
    _assert_ptxas_clean(ptx, config.name)


def test_r8_stream_k_code_stays_out_of_the_other_configs() -> None:
    """The stream-K twin of rung 7's configuration (128x256, cluster 2) adds its partial
    stores and its reduce kernel; rung 7's configuration itself, serial or overlapped, keeps
    one kernel and no global store (D leaves by TMA store only), as before stream-K."""
    r8 = _r8()
    kernel = r8.KERNEL
    problem = Problem(4096, 4096, 4096, "fp16")
    twin = r8.R8Config(stream_k=True, epilogue="serial")
    assert twin in kernel.configs and kernel.supports(problem, twin) is None
    sk = _kernels(kernel.codegen(problem, "sm_90a", twin).ptx)
    assert sorted(sk) == ["kernel", "streamk_reduce"]
    assert sk["kernel"].count(_SK_PARTIAL) == 256 // 4
    for epilogue in ("overlap", "serial"):
        plain = _kernels(kernel.codegen(problem, "sm_90a", r8.R8Config(epilogue=epilogue)).ptx)
        assert list(plain) == ["kernel"], epilogue
        assert "st.global" not in plain["kernel"] and _SK_LOAD not in plain["kernel"], epilogue


def test_r8_stream_k_tile_order_covers_every_tile_once() -> None:
    """The stream-K kernel and its reduce number cluster tiles with one function (traced
    into both; plain integers here): every tile of the grid exactly once, in group-row bands
    swept column by column (the Gluon rung 8's order)."""
    grouped_tile = _r8().grouped_tile
    for tiles_m, tiles_n in ((1, 1), (3, 5), (8, 4), (9, 7), (17, 2), (33, 40)):
        order = [grouped_tile(t, tiles_m, tiles_n, 8) for t in range(tiles_m * tiles_n)]
        assert sorted(order) == [(i, j) for i in range(tiles_m) for j in range(tiles_n)]
    assert [grouped_tile(t, 9, 2, 8) for t in range(4)] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert grouped_tile(8, 9, 2, 8) == (0, 1) and grouped_tile(16, 9, 2, 8) == (8, 0)


def test_r8_stream_k_validity() -> None:
    """Stream-K runs unswapped and unsplit on the persistent grid, with the TMA-store epilogue
    (D's rows 16-byte aligned), overlapped by default: any other combination is refused with
    a reason, and the menu's stream-K configs are exactly the listed tiles in both epilogues,
    each valid where N % 8 == 0, the serial one a variant."""
    r8 = _r8()
    ok = Problem(3000, 5000, 1000)
    base = r8.R8Config(128, 128, 1, stream_k=True, epilogue="overlap")
    assert r8._valid(ok, base) is None
    assert r8._valid(ok, base.with_overrides("epilogue=serial")) is None
    for override in ("swap_ab=1", "split_k=2", "persistent=0"):
        assert r8._valid(ok, base.with_overrides(override)), override
    assert r8._valid(Problem(3000, 5004, 1000), base)  # N % 8 != 0
    menu = [c for c in r8.MENU if c.stream_k and not c.swap_ab]
    tiles = [(c.tile_m, c.tile_n, c.cluster) for c in menu]
    assert tiles == [t for t in _STREAM_K_TILES for _ in range(2)]
    for c in menu:
        assert (c.persistent, c.raster, c.group) == (True, "m", 8)
        assert not c.swap_ab and c.split_k == 1 and r8._valid(ok, c) is None
        # overlap is stream-K's default, serial a variant the model cannot tell apart
        assert r8._variant(ok, c) == (c.epilogue == "serial"), c.name


def test_r8_swapped_stream_k_validity() -> None:
    """Stream-K also runs the wide swapped tiles of 128 rows (the tail of N's row tiles),
    serial TMA store (no overlap, no direct stores), every width and both clusters in both
    rasters; 64 and 256 rows, narrow covers and splits are refused with a reason."""
    r8 = _r8()
    ok = Problem(155, 36864, 7168)
    swapped = [c for c in r8.MENU if c.stream_k and c.swap_ab]
    assert {(c.tile_n, c.cluster, c.raster) for c in swapped} == {
        (w, c, r) for w in r8.SWAP_WIDE for c in (1, 2) for r in "mn"
    }
    for c in swapped:
        assert (c.tile_m, c.epilogue, c.split_k, c.persistent) == (128, "serial", 1, True)
        assert r8._valid(ok, c) is None, c.name
    base = swapped[0]
    for override in ("tile_m=64", "tile_m=256", "tile_n=32", "epilogue=direct", "split_k=2"):
        assert r8._valid(ok, base.with_overrides(override)), override
    assert r8._valid(Problem(155, 36868, 7168), base)  # D^T's column pitch N % 8 != 0


def test_r8_four_cta_clusters_are_picked_on_an_h100_only() -> None:
    """Clusters of four run the 128-row wide swaps of ``CLUSTER4_WIDTHS`` (both rasters) and
    ``CLUSTER4_WIDE`` (raster n) only (unsplit, the TMA store), every one a variant the
    heuristic never picks, not even at the shapes where cuBLAS runs its 128x72 in 4x1
    clusters; any other knob with four CTAs is refused with a reason. On an H100 the space's
    ``on_gpu`` rule (``harness.tile_cost.swap_clusters``) moves a raster-n one-CTA pick to four
    CTAs, naming why; on an H200 the pick stays."""
    r8 = _r8()
    fours = [c for c in r8.MENU if c.cluster == 4 and c.cluster_n == 1 and c.tile_m == 128]
    assert {(c.tile_n, c.raster) for c in fours} == {
        (w, r) for w in r8.CLUSTER4_WIDTHS for r in "mn"
    } | {(w, "n") for w in r8.CLUSTER4_WIDE}
    assert r8.CLUSTER4_WIDTHS[0] == 72 and r8.CLUSTER4_WIDTHS[-1] == 128
    assert r8.CLUSTER4_WIDE[0] == 136 and r8.CLUSTER4_WIDE[-1] == 256
    shapes = [(212, 5120, 5120), (224, 5120, 4096), (193, 4608, 3584), (196, 4608, 4096)]
    for c in fours:
        knobs = (c.tile_m, c.swap_ab, c.split_k, c.stream_k, c.epilogue)
        assert knobs == (128, True, 1, False, "serial"), c.name
        assert c.label == f"128x{c.tile_n} c4 swap"
        for shape in shapes:
            p = Problem(*shape)
            assert r8._valid(p, c) is None and r8._variant(p, c), (shape, c.name)
    for shape in shapes:
        assert r8._heuristic(Problem(*shape)).cluster in (1, 2), shape
    base = fours[0]
    for override in ("tile_m=192", "tile_m=256", "split_k=2", "stream_k=1", "swap_ab=0"):
        assert r8._valid(Problem(196, 4608, 4096), base.with_overrides(override)), override
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space, p = r8.KERNEL.space, Problem(217, 5120, 4096)  # A/B AA's first shape
    one = space.select(kid, p, h200)
    assert (one.tile_m, one.tile_n, one.cluster, one.swap_ab, one.raster) == (128, 80, 1, True, "n")
    four = space.select(kid, p, h100)
    assert four == dataclasses.replace(one, cluster=4) and four in fours
    assert "four CTAs on the NVIDIA H100" in space.reason(kid, p, four, h100)
    assert space.reason(kid, p, one, h100) is None
    # raster m (the weights past L2): one CTA on the H100 as well (A/B Z)
    assert space.select(kid, Problem(222, 8192, 3584), h100).cluster == 1


def test_r8_one_by_three_clusters_take_an_h100s_three_column_moves_that_fit() -> None:
    """On an H100 the space's ``on_gpu`` rule (``harness.tile_cost.swap_clusters``, A/B AI)
    runs a four-CTA move whose tile holds M in exactly three column tiles as one row tile by
    those three columns (1x3: the weights read once per row tile), where the 39 clusters of
    three an H100 holds cover its cluster tiles (N <= 4992); at N = 5120 (40 cluster tiles, a
    second round) and for two or four column tiles the four-CTA move stays; an H200 keeps the
    one-CTA pick."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space, p = r8.KERNEL.space, Problem(240, 4608, 4096)  # A/B AI's first shape
    one = space.select(kid, p, h200)
    assert (one.tile_m, one.tile_n, one.cluster, one.cluster_n, one.raster) == (128, 80, 1, 1, "n")
    row = space.select(kid, p, h100)
    assert row == dataclasses.replace(one, cluster_n=3) and row in r8.MENU
    assert r8._valid(p, row) is None and (row.tiles(p), row.ctas(p)) == (36, 108)
    assert "36 clusters of three" in space.reason(kid, p, row, h100)
    assert space.select(kid, Problem(217, 5120, 4096), h100).cluster == 4  # 40 > 39
    for shape in ((160, 4608, 4096), (320, 3584, 4096)):  # two and four column tiles of 80
        moved = swap_clusters(Problem(*shape), one, h100)
        assert moved is not None and moved[0] == dataclasses.replace(one, cluster=4), shape
    assert swap_clusters(p, one, h200) is None


def test_r8_fuller_wave_rows_fill_an_h100s_part_empty_raster_m_wave() -> None:
    """On an H100, where neither cluster move applies, the space's ``on_gpu`` rule runs a
    one-CTA raster-m swapped pick that fills under 0.9 of one wave as the 192-row swap of 72-96
    columns that fills it (``harness.tile_cost.fuller_wave_rows``, A/B AN: 0.911x the pick's
    time, faster at 8 of 10), naming why; a raster-n pick (the weights in L2, where A/B AM's
    192-row tiles lost at all four) and an H200 keep the pick."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space, p = r8.KERNEL.space, Problem(302, 6144, 16384)  # A/B AN's second shape
    one = space.select(kid, p, h200)
    assert (one.tile_m, one.tile_n, one.cluster, one.raster) == (128, 152, 1, "m")
    rows = space.select(kid, p, h100)
    assert rows == dataclasses.replace(one, tile_m=192, tile_n=80) and rows in r8.MENU
    assert r8._valid(p, rows) is None and rows.ctas(p) == 128
    assert "fuller_wave_rows" in space.reason(kid, p, rows, h100)
    stays = Problem(313, 6144, 4096)  # A/B AM: 192x80 raster n ran 1.082x the pick's time
    assert space.select(kid, stays, h100) == space.select(kid, stays, h200)
    assert space.select(kid, stays, h100).raster == "n"


def test_r8_64_row_clusters_take_an_h100s_narrow_raster_n_64_row_swaps() -> None:
    """On an H100 the space's ``on_gpu`` rule runs a one-CTA raster-n 64-row wide swap at most
    112 wide holding M in an even number of column tiles in 4x2 clusters (``harness.tile_cost.
    sixty_four_row_clusters``, A/B AP) where the 15 clusters of eight an H100 holds cover its
    cluster tiles; past them, at three column tiles, and on an H200, the pick stays."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space, p = r8.KERNEL.space, Problem(155, 3584, 4096)  # A/B AO: 0.875x the one-CTA time
    one = space.select(kid, p, h200)
    assert one.label == "64x80 swap" and (one.cluster_n, one.raster) == (1, "n")
    moved = space.select(kid, p, h100)
    assert moved == dataclasses.replace(one, cluster=4, cluster_n=2)
    assert r8._valid(p, moved) is None and moved.tiles(p) == 14
    assert "sixty_four_row_clusters" in space.reason(kid, p, moved, h100)
    for shape in ((219, 2112, 7168), (130, 4096, 4096)):  # three columns; 16 clusters of eight
        assert space.select(kid, Problem(*shape), h100) == space.select(kid, Problem(*shape), h200)


def test_r8_narrow_transposes_give_way_on_an_h100_at_n_4096_and_up() -> None:
    """On an H100 the space's ``on_gpu`` rule runs the pick a whole-wave transpose narrower
    than 144 replaced, at N >= 4096 (``harness.tile_cost.transpose_gives_way``, A/B AR), naming
    why; an H200 keeps the transpose, and so does an H100 at N 3072 and at 144 wide."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space, p = r8.KERNEL.space, Problem(1425, 5120, 5120)  # seed 256654: 128x112 at 77.0 %
    transposed = space.select(kid, p, h200)
    assert transposed.label == "128x112 swap" and transposed.tiles(p) == 40 * 13
    pick = space.select(kid, p, h100)
    assert pick == r8._untransposed(p) and not pick.swap_ab and pick != transposed
    assert "transpose_gives_way" in space.reason(kid, p, pick, h100)
    for shape in ((1210, 3072, 3072), (1854, 5120, 5120)):  # N 3072 (A/B AQ); 128x144
        kept = space.select(kid, Problem(*shape), h100)
        assert kept.swap_ab and kept == space.select(kid, Problem(*shape), h200), shape


def test_r8_transposes_past_17_columns_give_way_on_an_h100() -> None:
    """On an H100 the space's ``on_gpu`` rule runs the pick a whole-wave transpose holding M in
    more than 17 column tiles replaced, at any N (``harness.tile_cost.transpose_gives_way``,
    A/B BE), naming the columns; an H200 keeps the transpose, and so does an H100 where it
    holds M in 14 or 16 columns (3040x3584x4096: 128x224, 100.8 % of cuBLAS on seed 415086;
    2842x3072x3072: 128x184, which A/B BD's cap of 14 moved)."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space = r8.KERNEL.space
    for shape, width in (((2828, 8192, 29568), 144), ((3205, 3584, 14336), 144)):
        p = Problem(*shape)  # A/B BD: 2828x8192x29568's 128x144 in 20 columns, 53.9 %
        transposed = space.select(kid, p, h200)
        assert transposed.label == f"128x{width} swap", (shape, transposed.name)
        assert cdiv(p.m, width) > 17
        pick = space.select(kid, p, h100)
        assert pick == r8._untransposed(p) and not pick.swap_ab, (shape, pick.name)
        assert "columns" in space.reason(kid, p, pick, h100)
    for shape, width in (((3040, 3584, 4096), 224), ((2842, 3072, 3072), 184)):
        p = Problem(*shape)
        kept = space.select(kid, p, h100)
        assert kept.label == f"128x{width} swap" and kept == space.select(kid, p, h200), shape


def test_r8_padded_64_row_picks_take_one_column_of_a_64_row_swap_on_an_h100() -> None:
    """On an H100 the space's ``on_gpu`` rule runs M in one column of a 64-row swapped tile,
    one CTA, in place of an unswapped 64-row pick padding 15 % of its rows or more at M 97-192
    (``harness.tile_cost.padded_rows_swap``, A/B AT), at the raster ``swap_raster`` gives,
    which no cluster rule moves on; an H200 keeps the pick, and so does an H100 where the pick
    pads less than that (M 120: 6 %)."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space = r8.KERNEL.space
    for shape, width, raster in (((145, 5120, 4096), 152, "n"), ((105, 4096, 7168), 112, "m")):
        p = Problem(*shape)
        pick = space.select(kid, p, h200)
        assert (pick.tile_m, pick.swap_ab, pick.split_k) == (64, False, 1), shape
        moved = space.select(kid, p, h100)
        knobs = (moved.tile_m, moved.tile_n, moved.raster, moved.cluster, moved.cluster_n)
        assert moved.swap_ab and knobs == (64, width, raster, 1, 1), (shape, moved.name)
        assert moved in r8.MENU and r8._valid(p, moved) is None and moved.split_k == 1
        assert not moved.stream_k and moved.epilogue == "serial"
        assert "padded_rows_swap" in space.reason(kid, p, moved, h100)
    p = Problem(120, 4096, 4096)
    assert space.select(kid, p, h100) == space.select(kid, p, h200)


def test_r8_128x128_picks_past_m_512_take_a_wide_128_row_swap_on_an_h100() -> None:
    """On an H100 the space's ``on_gpu`` rule runs the least-waste one-CTA 128-row swap at least
    144 wide in place of an unswapped 128x128 pick past M 512 at N >= 3584 (``harness.tile_cost
    .square_tile_swap``, A/B BC), with the heuristic's raster and serial epilogue, whether the
    pick was a pair, one CTA or stream-K; an H200 keeps the pick, and so does an H100 at N = 3072
    (3372x3072x3072, where A/B BA's swap ran 1.30x the pick's time), where every such swap
    wastes more of its waves (618x3072x8192 also for that) or takes more than 14 columns of M
    (4183x3584x18944 and 4720x4096x14336, where A/B BB's swaps ran 1.36-1.37x)."""
    r8 = _r8()
    kid, h100, h200 = r8.KERNEL.spec.id, "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    space = r8.KERNEL.space
    for shape, width in (
        ((1711, 3584, 14336), 192),  # Survey AV: the pair 86.1 % of cuBLAS, this swap 102.3
        ((2869, 3584, 14336), 208),
        ((2151, 5120, 14336), 168),
    ):
        p = Problem(*shape)
        pick = space.select(kid, p, h200)
        assert (pick.tile_m, pick.tile_n, pick.swap_ab) == (128, 128, False), (shape, pick.name)
        moved = space.select(kid, p, h100)
        knobs = (moved.tile_m, moved.tile_n, moved.cluster, moved.cluster_n, moved.split_k)
        assert moved.swap_ab and knobs == (128, width, 1, 1, 1), (shape, moved.name)
        assert moved in r8.MENU and r8._valid(p, moved) is None and not r8._variant(p, moved)
        assert not moved.stream_k and moved.epilogue == "serial"
        assert "square_tile_swap" in space.reason(kid, p, moved, h100)
    for shape in ((618, 3072, 8192), (3372, 3072, 3072), (4183, 3584, 18944), (4720, 4096, 14336)):
        p = Problem(*shape)
        assert space.select(kid, p, h200).label == "128x128", shape
        assert space.select(kid, p, h100) == space.select(kid, p, h200), shape


def test_r8_64_row_swaps_in_clusters_of_four_are_variants_only_the_h100_rule_picks() -> None:
    """The 64-row wide swaps of ``CLUSTER4_64_WIDTHS`` in clusters of four along N, alone (4x1)
    or by two columns of M (4x2, as cuBLAS's ``64x112_64x9_4x2`` on the H100 at small N), raster
    n, the TMA store: all on the menu, every one a variant the heuristic never ranks, no
    per-warpgroup twin; an H200 never picks them, an H100 only by ``on_gpu``'s
    ``sixty_four_row_clusters`` (A/B AO); a stage is written by cluster + cluster_n - 1 CTAs,
    each told by the tile's four consumer warps; 64 rows refuse the other 2-D shapes."""
    r8 = _r8()
    ones = [c for c in r8.MENU if c.tile_m == 64 and (c.cluster == 4 or c.cluster_n != 1)]
    assert {(c.tile_n, c.cluster, c.cluster_n) for c in ones} == {
        (w, cm, cn) for w in r8.CLUSTER4_64_WIDTHS for cm, cn in r8.CLUSTERS_64
    }
    assert r8.CLUSTER4_64_WIDTHS[0] == 72 and r8.CLUSTER4_64_WIDTHS[-1] == 160
    shapes = [(212, 3072, 3072), (155, 3584, 3584), (288, 3072, 3072), (153, 3072, 8192)]
    for c in ones:
        knobs = (c.swap_ab, c.split_k, c.stream_k, c.epilogue, c.raster, c.release)
        assert knobs == (True, 1, False, "serial", "n", "warp"), c.name
        assert not r8._release_twin(c), c.name
        for shape in shapes:
            p = Problem(*shape)
            assert r8._valid(p, c) is None and r8._variant(p, c), (shape, c.name)
    kid, space, h100 = r8.KERNEL.spec.id, r8.KERNEL.space, "NVIDIA H100 80GB HBM3"
    for shape in shapes:
        p = Problem(*shape)
        assert space.select(kid, p, "NVIDIA H200") not in ones, shape
        assert space.select(kid, p, None) not in ones, shape
        pick = space.select(kid, p, h100)
        if shape == (288, 3072, 3072):  # 64x144: wider than the rule moves
            assert pick == space.select(kid, p, "NVIDIA H200"), pick.name
            continue
        assert pick in ones, (shape, pick.name)  # two column tiles each: 4x2
        assert "sixty_four_row_clusters" in space.reason(kid, p, pick, h100), shape
    base = r8.R8Config(epilogue="serial").with_overrides(
        "tile_m=64,tile_n=112,cluster=4,swap_ab=1,raster=n"
    )
    p = Problem(212, 3072, 3072)
    for cm, cn in r8.CLUSTERS_2D:
        if (cm, cn) not in r8.CLUSTERS_64:
            assert r8._valid(p, base.with_overrides(f"cluster={cm},cluster_n={cn}")), (cm, cn)
    for cm, cn in r8.CLUSTERS_64:
        c = base.with_overrides(f"cluster={cm},cluster_n={cn}")
        assert c in r8.MENU and c.ctas(p) == 48 * 2  # 48 row tiles by two columns of 112
        ptx = r8.KERNEL.codegen(p, "sm_90a", c).ptx
        assert _empty_barrier_count(ptx) == (cm + cn - 1) * 4, c.name


def _empty_barrier_count(ptx: str) -> int:
    """The arrival count the GEMM kernel's ab_empty barriers are initialised with (the second
    half of its mbarrier inits)."""
    gemm = _kernels(ptx)["kernel"]
    values = dict(re.findall(r"mov\.[bu]32\s+(%r\d+),\s*(\d+);", gemm))
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\],\s*(%r\d+|\d+);", gemm)
    counts = [int(values.get(r, r)) for r in inits]
    half = len(counts) // 2
    assert half and len(set(counts[half:])) == 1, counts
    return counts[half]


def test_r8_stage_release_per_warpgroup_quarters_the_empty_arrivals() -> None:
    """``release=warpgroup`` (tune-only twins of the four-CTA clusters and rung 7's pair): each
    consumer warpgroup's first warp alone tells every CTA of the cluster a stage is free, so
    ab_empty waits on cluster x warpgroups arrivals instead of four times that; every other
    knob the same; an unknown mode is refused."""
    r8 = _r8()
    twins = [c for c in r8.MENU if c.release == "warpgroup"]
    assert {c.cluster for c in twins} == {2, 4} and len(twins) == 2 * len(r8.CLUSTER4_WIDTHS) + 1
    for c in twins:
        assert dataclasses.replace(c, release="warp") in r8.MENU, c.name
        assert r8._variant(Problem(217, 5120, 4096), c), c.name
        assert c.name.endswith(",release=warpgroup")
    assert "release" not in r8.R8Config().name  # names written before the knob still match
    assert r8._valid(Problem(4096, 4096, 4096), r8.R8Config(release="thread"))
    cases = [
        (Problem(217, 5120, 4096), "tile_m=128,tile_n=80,cluster=4,swap_ab=1,raster=n", 4),
        (Problem(4096, 4096, 4096), "tile_m=128,tile_n=256,cluster=2", 2),
    ]
    for problem, name, cluster in cases:
        base = r8.R8Config(epilogue="serial" if cluster == 4 else "overlap").with_overrides(name)
        assert base in r8.MENU
        per_warp = _empty_barrier_count(r8.KERNEL.codegen(problem, "sm_90a", base).ptx)
        twin = base.with_overrides("release=warpgroup")
        per_wg = _empty_barrier_count(r8.KERNEL.codegen(problem, "sm_90a", twin).ptx)
        assert (per_warp, per_wg) == (cluster * 2 * 4, cluster * 2), name


def test_r8_2d_clusters_multicast_both_operands() -> None:
    """``cluster_n`` (tune-only 2-D clusters of the four-CTA widths): the weights (the swapped
    kernel's A) are multicast along the cluster's columns as B is along its rows, so a stage is
    written by the CTAs of a CTA's row and column, cluster + cluster_n - 1 of them, and ab_empty
    waits on that many times eight consumer warps; the names of 1-D configs do not change; a
    2-D cluster anywhere else is refused."""
    r8 = _r8()
    twod = [c for c in r8.MENU if c.cluster_n != 1 and c.tile_m == 128]
    assert len(twod) == len(r8.CLUSTER4_WIDTHS) * len(r8.CLUSTERS_2D)
    assert "cluster_n" not in r8.R8Config().name
    problem = Problem(217, 5120, 4096)
    for c in twod:
        assert r8._variant(problem, c) and not r8._release_twin(c), c.name
        assert c.name.endswith(f",cluster_n={c.cluster_n}")
    refused = [
        "tile_m=128,tile_n=256,cluster=2,cluster_n=2",  # unswapped
        "tile_m=128,tile_n=80,cluster=2,cluster_n=3,swap_ab=1,stream_k=1",
        "tile_m=128,tile_n=80,cluster=4,cluster_n=3,swap_ab=1",  # 12 CTAs
    ]
    for name in refused:
        assert r8._valid(problem, r8.R8Config(epilogue="serial").with_overrides(name)), name
    one_d = r8.R8Config(epilogue="serial").with_overrides(
        "tile_m=128,tile_n=80,cluster=4,swap_ab=1,raster=n"
    )
    for cm, cn in r8.CLUSTERS_2D:
        c = one_d.with_overrides(f"cluster={cm},cluster_n={cn}")
        assert c in r8.MENU and c.label == f"128x80 c{cm}x{cn} swap"
        assert c.tiles(problem) == 40 // cm * -(-3 // cn)
        assert c.ctas(problem) == c.tiles(problem) * cm * cn
        ptx = r8.KERNEL.codegen(problem, "sm_90a", c).ptx
        assert _empty_barrier_count(ptx) == (cm + cn - 1) * 2 * 4, c.name
        gemm = _kernels(ptx)["kernel"]
        # A's load joins B's (if any) among the multicast loads of the same rows in 1-D.
        rows = one_d.with_overrides(f"cluster={cm}")
        base = _kernels(r8.KERNEL.codegen(problem, "sm_90a", rows).ptx)["kernel"]
        assert gemm.count(_MULTICAST) > base.count(_MULTICAST), c.name


@pytest.mark.parametrize("knobs", [(72, 1, "m"), (160, 2, "n"), (256, 1, "n")], ids=str)
def test_r8_swapped_stream_k_compiles(knobs) -> None:
    """A swapped stream-K config compiles for sm_90a: whole tiles leave by the swapped TMA
    store (stmatrix .trans, no global store), each tail segment's fp32 partial from registers
    as unswapped (tile_n / 4 unpredicated 8-byte stores a thread), and the reduce reads the
    partials 16 bytes at a time and writes D^T's columns one predicated 2-byte element at a
    time (M, the columns, has no alignment), four a thread; no spills."""
    r8 = _r8()
    tn, cluster, raster = knobs
    config = r8.R8Config(128, tn, cluster, swap_ab=True, stream_k=True, epilogue="serial")
    config = config.with_overrides(f"raster={raster}")
    problem = Problem(155, 36864, 7168, "fp16")
    assert config in r8.KERNEL.configs and r8.KERNEL.supports(problem, config) is None
    assert r8.stream_k(problem, HOPPER.num_sms, config).sk_tiles > 0
    ptx = r8.KERNEL.codegen(problem, "sm_90a", config).ptx
    parts = _kernels(ptx)
    assert sorted(parts) == ["kernel", "streamk_reduce"]
    gemm, reduce = parts["kernel"], parts["streamk_reduce"]
    assert f"wgmma.mma_async.sync.aligned.m64n{tn}k16" in gemm
    assert _ST_T4 in gemm or _ST_T4.replace("x4", "x2") in gemm  # 8-column sub-tiles: x2
    assert _TMA_STORE in gemm and (_MULTICAST in gemm) == (cluster == 2)
    assert gemm.count(_SK_PARTIAL) == tn // 4 and gemm.count("st.global") == tn // 4
    assert _SK_LOAD in reduce and reduce.count("st.global.b16") == r8.SK_REDUCE_VEC
    assert reduce.count("st.global") == r8.SK_REDUCE_VEC
    _assert_ptxas_clean(ptx, config.name)


def test_r8_says_why_it_chose_each_config() -> None:
    """Every result of the kernel's own choice records why (``selection_reason``): the cost
    model's tiles, waves and time and the runner-up it allowed; a forced config has none."""
    r8 = _r8()
    p = Problem(183, 57344, 8192)
    pick = r8.KERNEL.select(p)
    assert (pick.swap_ab, pick.stream_k, pick.tile_n) == (True, True, 184), pick.name
    why = r8.KERNEL.selection_reason(p, pick)
    assert why.startswith("448 tiles, 3.40 waves, model ") and "; next " in why, why
    assert r8.KERNEL.selection_reason(p, pick.with_overrides("stream_k=0")) is None


def test_r8_menu_fits_shared_memory() -> None:
    """Every menu config's ring, epilogue buffers and barriers fit the 227 KiB of one CTA with
    at least 4 stages; the 192-wide tile takes six epilogue buffers (its six 32-column
    sub-tiles fill whole rounds of them) and four stages, like rung 7's 128x256."""
    r8 = _r8()
    assert any(c.tile_n == 192 for c in r8.MENU)
    for c in r8.MENU:
        for tma_store in (True,) if c.stream_k else (True, False):  # (stream-K: N % 8 == 0)
            g = r8.Gemm(HOPPER.num_sms, tma_store, c)
            epi = g.epi_tile[0] * g.epi_tile[1] * 2 * g.epi_stages if g.tma_epi else 0
            ring = g.num_stages * (c.tile_m + c.tile_n) * r8.BLOCK_K * 2
            assert g.num_stages >= 4 and ring + epi + r8.BARRIER_BYTES <= r8.SMEM_BYTES, c.name
            if c.swap_ab:  # sub-tiles that divide D^T's width, two rounds of them in flight
                assert c.tile_n % g.epi_tile[1] == 0 and g.epi_stages == 2 * g.epi_batch
            else:  # whole buffer rounds
                assert (c.tile_n // r8.EPI_N) % g.epi_stages == 0, c.name
    g = r8.Gemm(HOPPER.num_sms, True, r8.R8Config(128, 192, 2))
    assert (g.epi_stages, g.num_stages) == (6, 4)
    # 256 rows of a swap: two warpgroups of 128 rows each, 256x144's 50 KiB stages four deep
    g = r8.Gemm(HOPPER.num_sms, False, r8.R8Config(256, 144, 2, swap_ab=True, epilogue="serial"))
    assert (g.num_consumers, g.num_stages) == (2, 4)
    # The swapped tiles' TMA-store buffers (16 KiB) cost 128x72 a stage (8, not 9), 128x184
    # none (5), 256x144 none (4: its sub-tiles have 128 rows, one m64 block a warpgroup).
    for tile, stages in (((128, 72), (8, 9)), ((128, 184), (5, 5)), ((256, 144), (4, 4))):
        for epilogue, want in zip(("serial", "direct"), stages, strict=True):
            swap = r8.R8Config(*tile, 1, swap_ab=True, epilogue=epilogue)
            assert r8.Gemm(HOPPER.num_sms, True, swap).num_stages == want, (tile, epilogue)
    # 256x152 (8-column buffers, 51 KiB a stage) and 256x160 (32-column ones, 52 KiB) keep
    # four stages, as cuBLAS's 256x152_64x4 and 256x160_64x4
    for width in r8.ROWS_256_TMA_WIDTHS:
        swap = r8.R8Config(256, width, 2, swap_ab=True, epilogue="serial")
        assert r8.Gemm(HOPPER.num_sms, True, swap).num_stages == 4, swap.name
    # 192 rows: three warpgroups of 64 rows, sub-tiles of 192 rows (one m64 block each); 192x104
    # (37 KiB a stage, 24 KiB of 8-column buffers) five deep, as cuBLAS's 192x104_64x5; 192x160
    # (44 KiB, two 32-column buffers) four.
    for width, stages in ((104, 5), (160, 4)):
        swap = r8.R8Config(192, width, 2, swap_ab=True, epilogue="serial")
        g = r8.Gemm(HOPPER.num_sms, True, swap)
        assert (g.num_consumers, g.consumer_regs, g.epi_tile[0]) == (3, 152, 192), swap.name
        assert g.num_stages == stages, swap.name
    # 105 curated entries, 212 wide swapped tiles (24 widths, 72..256 in the wgmma N step of
    # 8, x 64 rows x cluster 1, 2 or split 2 and x 128 rows x cluster 1, 2 or split 2, 3, 4;
    # 10 widths, 72..144, x 256 rows x cluster 1 or 2) and their 212 raster-n twins, 29
    # ungrouped twins of the data-parallel ones: 558; then each unsplit swapped tile's two
    # ways out of D (TMA store, direct): 767 (the count before swapped stream-K); then the
    # 128-row wide swaps' stream-K twins (24 widths x cluster 1 or 2) in both rasters, 96
    # more: 863; then the 192-row wide swaps (12 widths, 72..160, x cluster 1 or 2, the TMA
    # store only) in both rasters, 48 more: 911; then the deferred epilogue's twins of six
    # small unswapped tiles: 917; then the 4-CTA swapped clusters (8 widths, 72..128, the TMA
    # store only) in both rasters, 16 more: 933; then their per-warpgroup release twins and
    # the pair's, 17: 950; then the 2-D clusters of those 8 widths (1x3, 2x2, 2x3, 4x2): 982;
    # then the wider 4-CTA swaps (16 widths, 136..256, raster n only), 16 more: 998; then the
    # 256-row swaps 152 and 160 wide (cluster 1 or 2, the TMA store only) in both rasters,
    # 8 more: 1006; then the 64-row wide swaps 72..160 in 4x1 and 4x2 clusters (raster n, the
    # TMA store only), 24 more: 1030
    assert len(r8.MENU) <= 1030, "a curated menu, not a cartesian product"


def test_r8_picks_64_row_wide_swaps_only_where_128_rows_leave_sms_idle() -> None:
    """A 64-row wide swapped tile (one consumer warpgroup) runs alone, and only where its
    128-row twin would fill less than half the SMs: 140x5120x4096 (128x144: 40 CTAs) gets
    one, 338x8192x8192 (128x176: 128 CTAs) does not (H200 tune: 95.9 % vs the previous pick's
    71.8 % at the first; 128x176 in pairs 97.2 % vs 64x176 77.7 % at the second)."""
    r8 = _r8()
    small = r8.R8Config(64, 144, 1, swap_ab=True, epilogue="serial")
    assert r8._one_warpgroup_swap_pays(Problem(140, 5120, 4096), small)
    assert not r8._one_warpgroup_swap_pays(Problem(338, 8192, 8192), small)
    assert r8._heuristic_clusters(small) == (1,)
    assert r8._heuristic_clusters(r8.R8Config(128, 144, 2, swap_ab=True)) == (1, 2)
    for m, n, k in ((140, 5120, 4096), (338, 8192, 8192), (207, 6144, 4096), (485, 16384, 16384)):
        c = r8._heuristic(Problem(m, n, k, "fp16"))
        if c.wide_swap and c.tile_m == 64:
            assert c.cluster == 1, c.name
            assert r8._one_warpgroup_swap_pays(Problem(m, n, k), c), c.name
    assert r8._heuristic(Problem(338, 8192, 8192, "fp16")).tile_m == 128


def test_r8_picks_192_row_tiles_alone_in_one_wave_at_widths_timed() -> None:
    """The heuristic picks a 192-row swapped tile alone, 104 or 112 wide (the widths a tuning
    run timed at three shapes or more), and only where its tiles fit one wave: 410x6144x4096
    (cuBLAS's 192x104: 32 x 4 = 128 tiles) and 436x6144x6144 take one (H200: 192x104 103.9 %
    of cuBLAS at 400x6144x4096 against the previous pick's 85.9 %); 300x14336x4096 (225 tiles)
    keeps 128x152 (100.0 % against 192x104's 97.3 %), and no `sweep` pick moves."""
    r8 = _r8()
    tiles = [c for c in r8.MENU if c.tile_m == 192]
    assert tiles and all(c.wide_swap and c.tile_n <= r8.SWAP_WIDE_192 for c in tiles)
    one_wave = Problem(410, 6144, 4096, "fp16")
    for c in tiles:
        assert r8._heuristic_clusters(c) == (1,), c.name
        if c.cluster == 2 or c.tile_n not in r8.ROWS_192_PICKED:  # (the rule: ``one_wave_rows``)
            assert not r8._allowed(one_wave, c), c.name
    assert r8._heuristic(one_wave).label == "192x104 swap"
    assert r8._heuristic(Problem(436, 6144, 6144, "fp16")).label == "192x112 swap"
    many = Problem(300, 14336, 4096, "fp16")
    assert r8._ranked(many)[0].tile_m == 192  # the model alone would take it
    assert not r8._allowed(many, r8._ranked(many)[0])
    assert r8._heuristic(many).label == "128x152 swap"
    assert all(r8._heuristic(p).tile_m != 192 for p in expand(["sweep"]))


def test_r8_picks_a_192_row_tile_only_where_it_fills_the_wave() -> None:
    """A 192-row swapped tile in one wave only where its tiles fill ``ROWS_192_FILL`` of the
    SMs (thirty-third version): 387x4608x3584 (24 x 4 = 96 CTAs, where 251x4608x3584's 96 of
    192x72 ran 80.6 % of cuBLAS against 128x88 swapped's 95.7) keeps 128-row tiles, and no
    one-wave 192-row pick over a counting draw leaves more than a tenth of the SMs idle."""
    r8 = _r8()
    part = Problem(387, 4608, 3584, "fp16")
    assert r8._ranked(part)[0].tile_m == 192  # the model alone would take it
    assert r8._heuristic(part).tile_m == 128
    assert r8._heuristic(Problem(410, 6144, 4096, "fp16")).label == "192x104 swap"  # 128 CTAs
    one_wave = 0
    for seed in range(10**6, 10**6 + 10):
        for m, n, k in random_shapes(seed):
            p = Problem(m, n, k, "fp16")
            c = r8._heuristic(p)
            if c.tile_m == 192 and c.ctas(p) <= r8.DEFAULT_NUM_SMS:
                assert c.ctas(p) >= r8.ROWS_192_FILL * r8.DEFAULT_NUM_SMS, (p, c.name)
                one_wave += 1
    assert one_wave  # the draws hold such picks: the rule is exercised, not vacuous


def _assert_picks(r8, want: dict[tuple[int, int, int], str], epilogue: str) -> None:
    """The heuristic's pick at each (M, N, K) of ``want`` has that label and ``epilogue``,
    and is a menu entry (a rule applied after the model must still land on the menu)."""
    for (m, n, k), label in want.items():
        c = r8._heuristic(Problem(m, n, k, "fp16"))
        assert (c.label, c.epilogue) == (label, epilogue), (m, n, k)
        assert c in r8.MENU


def test_r8_trades_the_64_column_cover_for_a_split_cover_in_one_wave() -> None:
    """At M 33..64 the heuristic runs the split cover (``harness.tile_cost.split_cover``) where
    it fills more of one wave than the 64-column cover, with the cover's direct stores: H200
    A/B, 36x8192x8192 128x32 96.2 % of cuBLAS against the 64x64 cover's 85.4 %, 40x5120x5120
    128x16 99.8 against 89.7 (README, "Twenty-seventh version"). Over a wave (N = 14336) and
    at M <= 32 the picks are the model's, and no `sweep` pick moves."""
    r8 = _r8()
    want = {
        (36, 8192, 8192): "128x32 swap",
        (40, 5120, 5120): "128x16 swap",
        (44, 3072, 3072): "64x32 swap",
    }
    _assert_picks(r8, want, "direct")
    assert r8._heuristic(Problem(30, 8192, 8192, "fp16")).tile_n == 32  # the cover itself
    wide = Problem(36, 14336, 4096, "fp16")
    assert r8._heuristic(wide).tile_n not in (16, 32)
    for p in expand(["sweep"]):
        pick = r8._heuristic(p)
        assert not (p.m > 32 and pick.swap_ab and pick.tile_n < 64), p.key


def test_r8_splits_no_unswapped_tile_where_the_split_cover_streams_as_fast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At M 33..64 and K > 8192 the heuristic splits no unswapped tile where the cover it would
    run fills ``COVER_SPLIT_MAX_FILL`` of the SMs within one wave (``split_covers``): it runs
    that split cover unsplit instead. H100 Survey AW: 57x4096x14336 64x32 108.0 % of cuBLAS
    against the four-way split's 90.1 %, 49x5120x13824 128x32 110.1 against 92.7 (README,
    "Survey AW and A/B AY"). Past one wave (N = 16384) the split stays the model's, and no
    `sweep` pick moves."""
    r8 = _r8()
    want = {
        (57, 4096, 14336): "64x32 swap",
        (42, 3584, 14336): "64x32 swap",
        (49, 5120, 13824): "128x32 swap",
        (40, 5120, 14336): "128x16 swap",
    }
    _assert_picks(r8, want, "direct")
    assert r8._heuristic(Problem(38, 16384, 53248, "fp16")).split_k == 2
    sweep = expand(["sweep"])
    picks = [r8._heuristic(p) for p in sweep]
    monkeypatch.setattr(r8, "SPLIT_COVERS", ())  # the forty-first version's rules
    assert r8._heuristic(Problem(57, 4096, 14336, "fp16")).label == "64x128 split4"
    assert [r8._heuristic(p) for p in sweep] == picks


def test_r8_trades_stream_k_for_192_rows_over_whole_waves() -> None:
    """Where the model picks stream-K for a wide swap and 192-row tiles in two columns fill
    two waves or more, the last to 90 % or more, the heuristic runs those instead
    (``harness.tile_cost.whole_wave_swap``): H200 A/B, 133x37888x3584 192x72 111.8 % of
    cuBLAS against 128x136 stream-K's 99.2 %, 169x36864x4608 192x88 93.2 against 87.9 (README,
    "Twenty-eighth version"). A partial last wave keeps stream-K (183x57344x8192: 97.8
    against 106.3), and no `sweep` pick moves."""
    r8 = _r8()
    want = {
        (133, 37888, 3584): "192x72 swap",
        (169, 36864, 4608): "192x88 swap",
        (184, 37888, 3584): "192x96 swap",
    }
    _assert_picks(r8, want, "serial")
    assert r8._heuristic(Problem(183, 57344, 8192, "fp16")).label == "128x184 swap sk"
    # the traded tile keeps the heuristic's structural rules: two columns only above K = 1024
    two_columns = r8.R8Config(192, 96, 1, swap_ab=True, epilogue="serial")
    assert r8._structurally_allowed(Problem(184, 37888, 3584, "fp16"), two_columns)
    assert not r8._structurally_allowed(Problem(184, 37888, 1024, "fp16"), two_columns)
    for p in expand(["sweep"]):
        pick = r8._heuristic(p)
        assert not (pick.tile_m == 192 and pick.ctas(p) > 132), p.key


def test_r8_transposes_a_part_empty_wave_at_mid_m() -> None:
    """At M 1024-5120, where the unswapped pick leaves 5 % of its waves idle or more, the
    heuristic runs the swapped tile whose tiles fill its waves (``harness.tile_cost.
    whole_wave_transpose``), raster m, serial epilogue: H200 A/Bs, % of cuBLAS, 1152x3072x3072
    101.6 -> 112.4, 1248x2112x7168 89.2 -> 107.5, 4736x3072x3072 101.1 -> 108.9,
    2456x4608x4096 88.9 -> 99.4, 1107x5120x4096 91.9 -> 96.7 (README, "Thirtieth version").
    Whole waves (3456x3072x3072: 128x128 97.4 against 95.6 swapped), rung 7's 4096^3 and
    8192^3, K <= ``ONE_COLUMN_SWAP_K`` and every `sweep` pick stay."""
    r8 = _r8()
    want = {
        (1152, 3072, 3072): "128x112 swap",
        (1248, 2112, 7168): "192x104 swap",
        (1728, 3072, 3072): "128x160 swap",
        (3072, 3584, 3584): "128x224 swap",
        (4736, 3072, 3072): "128x144 swap",
        (2456, 4608, 4096): "128x224 swap",
        (1107, 5120, 4096): "128x88 swap",
    }
    _assert_picks(r8, want, "serial")
    for shape in want:
        assert r8._heuristic(Problem(*shape, "fp16")).raster == "m", shape
    assert r8._heuristic(Problem(3456, 3072, 3072, "fp16")).label == "128x128"
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 520)):
        assert not r8._heuristic(Problem(*shape, "fp16")).swap_ab, shape
    for p in expand(["sweep"]):
        pick = r8._heuristic(p)
        assert not (pick.wide_swap and p.m > 8 * pick.tile_n), p.key


def test_r8_splits_only_swapped_tiles_at_mid_m() -> None:
    """Where a wide swap fits M (64 < M < N) a K split is of a swapped tile only (README,
    "Thirty-second version"): the four counting-draw and sweep shapes whose unswapped split
    it replaced take the swapped split the tuning runs timed faster, no pick at M 65-254 of
    long-K shapes is an unswapped split, and at M = N the unswapped split stays."""
    r8 = _r8()
    moved = {
        (116, 8192, 28672): (120, 2),
        (121, 7168, 16384): (128, 2),
        (128, 4096, 14336): (128, 4),
        (128, 8192, 28672): (128, 2),
    }
    for shape, (width, split) in moved.items():
        pick = r8._heuristic(Problem(*shape, "fp16"))
        assert pick.wide_swap and (pick.tile_m, pick.tile_n, pick.split_k) == (128, width, split)
    for m in range(65, 257, 7):
        for n, k in ((4096, 14336), (8192, 28672), (3584, 18944), (6144, 16384)):
            pick = r8._heuristic(Problem(m, n, k, "fp16"))
            assert pick.swap_ab or pick.split_k == 1, (m, n, k, pick.name)
    assert r8._heuristic(Problem(256, 256, 16384, "fp16")).split_k > 1


def test_r8_short_k_wide_swaps_take_one_column_only() -> None:
    """At K <= ONE_COLUMN_SWAP_K (16 k-steps) no wide swap takes M in several column tiles
    (their serial epilogue is too big a share of each tile); M in one column still swaps, and
    at K = 1536 the several-column swaps stay (README, "Twenty-second version")."""
    r8 = _r8()
    for m in (311, 422, 1073, 1255):
        assert not r8._heuristic(Problem(m, 32768, 512, "fp16")).swap_ab, m
    assert r8._heuristic(Problem(166, 32768, 512, "fp16")).swap_ab
    for m in (264, 390, 656):
        assert r8._heuristic(Problem(m, 24576, 1536, "fp16")).wide_swap, m
