"""Compile-only tests for the Gluon backend: every kernel builds for its arch without a GPU.

Runs on a CPU in a venv holding only ``triton==3.9.0`` + pytest + this repo (no torch): Gluon's
``GluonASTSource`` + ``triton.compile(target=GPUTarget(...))`` emit PTX and a cubin offline.
Each kernel's PTX is checked for the instructions that define its rung. Where Triton is not
installed the module skips, unless the session installs it (``tests/expectations.py``): then it
fails. Spills are read with the ptxas Triton bundles, so they are always known.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
from compile_checks import (
    assert_identity_and_supports,
    assert_listing_imports_no_dsl,
    assert_tuned_entries_on_the_menu,
)
from expectations import require_dsl

from backends.gluon import kernels
from harness.protocol import Problem, Rung
from harness.tile_cost import (
    HOPPER,
    MIN_K_PER_SPLIT,
    TRANSPOSE_FILL,
    TRANSPOSE_M,
    idle_share,
    swap_fits,
)

require_dsl("gluon", "triton.experimental.gluon", "Gluon (triton==3.9.0)")

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


def test_tuned_tables_name_menu_configs():
    assert_tuned_entries_on_the_menu(SPECS)


# -- rung 8 (shape_adaptive): one compile per distinct code path, and its choice per shape ------
R8_ID = "gluon/sm90/r8_shape_adaptive"


def _r8():
    from backends.gluon.sm90 import r8_shape_adaptive as r8

    return r8


def _r8_cases():
    """(id, problem, config knobs): every tile family of the
    menu once, cluster 2 at 128x128 (rung 7's 128x256 is the generic test above), swap-AB with
    and without split-K, split-K unswapped, persistent and one-tile-per-CTA grids, wide swaps
    of one box (128, 256) and of two (72 = 64 + 8, 144 = 128 + 16, 192 = 128 + 64) on 64,
    128, 192 and 256 rows, cluster 1 and 2, both rasters; unswapped tiles of two boxes (160,
    192), with stream-K too."""
    c1 = dict(cluster=1)
    swap = dict(cluster=1, swap_ab=True)
    shapes = {
        "c2-128x128-persistent": (Problem(8192, 8192, 8192), dict(tile_n=128)),
        "128x256-c1": (Problem(128, 28672, 4096), dict(**c1)),
        "128x128-c1-persistent": (Problem(4096, 4096, 1024), dict(tile_n=128, **c1)),
        "128x64-c1": (Problem(1024, 1024, 1024), dict(tile_n=64, **c1)),
        "128x32-c1": (Problem(4096, 32, 4096), dict(tile_n=32, **c1)),
        "128x16-c1": (Problem(4096, 1, 4096), dict(tile_n=16, **c1)),
        "64x256-c1-persistent": (Problem(8192, 8192, 1024), dict(tile_m=64, **c1)),
        "64x128-c1": (Problem(512, 1024, 512), dict(tile_m=64, tile_n=128, **c1)),
        "64x64-c1-one-wave": (Problem(512, 512, 512), dict(tile_m=64, tile_n=64, **c1)),
        "swap-128x16-persistent": (Problem(16, 28672, 4096), dict(tile_n=16, **swap)),
        "swap-64x64-bf16": (Problem(64, 4096, 4096, "bf16"), dict(tile_m=64, tile_n=64, **swap)),
        "swap-128x32": (Problem(32, 8192, 4096), dict(tile_n=32, **swap)),
        "swap-128x16-split4": (Problem(1, 4096, 4096), dict(tile_n=16, split_k=4, **swap)),
        "wide-128x144-c2": (Problem(274, 16384, 16384), dict(tile_n=144, swap_ab=True)),
        "wide-128x144-c1-rn": (
            Problem(274, 4096, 4096),
            dict(tile_n=144, raster="n", **swap),
        ),
        "wide-64x72-c1-bf16": (
            Problem(100, 6144, 5120, "bf16"),
            dict(tile_m=64, tile_n=72, **swap),
        ),
        "wide-64x192-c1-rn": (
            Problem(334, 6144, 5120),
            dict(tile_m=64, tile_n=192, raster="n", **swap),
        ),
        "wide-128x128-c2-rn": (
            Problem(362, 4608, 4096),
            dict(tile_n=128, swap_ab=True, raster="n"),
        ),
        "wide-128x256-c1": (Problem(500, 16384, 4096), dict(tile_n=256, **swap)),
        # 256 rows: two consumers of 128 rows, two m64 wgmmas per box per k16, and D^T boxes
        # 128 columns wide (two 64-column TMA messages each)
        "wide-256x144-c1": (Problem(274, 16384, 16384), dict(tile_m=256, tile_n=144, **swap)),
        "wide-256x136-c2-rn": (
            Problem(532, 7168, 18432),
            dict(tile_m=256, tile_n=136, swap_ab=True, raster="n"),
        ),
        "wide-256x128-c1-bf16": (
            Problem(128, 8192, 4096, "bf16"),
            dict(tile_m=256, tile_n=128, **swap),
        ),
        # 192 rows: three consumers of 64 rows under CONSUMER_REGS_3, one m64 wgmma per box
        "wide-192x72-c1": (Problem(133, 37888, 3584), dict(tile_m=192, tile_n=72, **swap)),
        "wide-192x160-c2-rn-bf16": (
            Problem(410, 6144, 4096, "bf16"),
            dict(tile_m=192, tile_n=160, swap_ab=True, raster="n"),
        ),
        # a wide swap split over K: fp32 D^T boxes into the split's slice, the tail box too
        "wide-split2-128x72-c1": (
            Problem(68, 6144, 16384),
            dict(tile_n=72, split_k=2, **swap),
        ),
        "wide-split4-128x128-c1-rn-bf16": (
            Problem(121, 7168, 16384, "bf16"),
            dict(tile_n=128, split_k=4, raster="n", **swap),
        ),
        # unswapped two-box tiles: 128 + 32, 128 + 64 and 64 + 32 columns of N, D in two boxes
        "128x160-c2": (Problem(1427, 5120, 5120), dict(tile_n=160)),
        "128x192-c1-bf16": (Problem(2510, 6144, 6144, "bf16"), dict(tile_n=192, **c1)),
        "64x160-c1": (Problem(128, 10240, 8192), dict(tile_m=64, tile_n=160, **c1)),
        "64x96-c1": (Problem(250, 6144, 4096), dict(tile_m=64, tile_n=96, **c1)),
        "64x192-c1-bf16": (Problem(250, 6144, 8192, "bf16"), dict(tile_m=64, tile_n=192, **c1)),
        "split4-128x128": (Problem(128, 4096, 14336), dict(tile_n=128, split_k=4, **c1)),
        "split8-64x64-bf16": (
            Problem(256, 256, 8192, "bf16"),
            dict(tile_m=64, tile_n=64, split_k=8, **c1),
        ),
        # stream-K: a wave and a tail (140 tiles), a single partial wave (84 cluster tiles of
        # 66 programs... 42), and whole waves only (no tail: the segments never run)
        "sk-64x256-c1": (Problem(300, 7168, 16384), dict(tile_m=64, stream_k=True, **c1)),
        "sk-128x256-c2": (Problem(300, 7168, 16384), dict(stream_k=True)),
        "sk-128x256-c1-bf16": (Problem(3000, 5000, 1000, "bf16"), dict(stream_k=True, **c1)),
        "sk-128x128-c2": (Problem(1000, 4096, 4096), dict(tile_n=128, stream_k=True)),
        "sk-128x128-c1": (Problem(8448, 8192, 512), dict(tile_n=128, stream_k=True, **c1)),
        "sk-128x192-c2": (Problem(3790, 5120, 13824), dict(tile_n=192, stream_k=True)),
        "sk-64x128-c1": (
            Problem(777, 1024, 4096),
            dict(tile_m=64, tile_n=128, stream_k=True, **c1),
        ),
        # stream-K over wide swaps: N's row tiles with a tail (288 of 132 programs; 56 x 5
        # and 128 x 2 of 66), of two boxes (the tail box's partial beside the head's) or one
        "sk-wide-128x144-c1": (Problem(155, 36864, 7168), dict(tile_n=144, stream_k=True, **swap)),
        "sk-wide-128x136-c2-rn": (
            Problem(661, 7168, 16384),
            dict(tile_n=136, swap_ab=True, stream_k=True, raster="n"),
        ),
        "sk-wide-128x256-c2-bf16": (
            Problem(500, 16384, 4096, "bf16"),
            dict(tile_n=256, swap_ab=True, stream_k=True),
        ),
        # A in registers (a_operand=regs): one consumer at the widest swap and unswapped, two
        # (no register reallocation) at 72..136, cluster 2, split, bf16
        "regs-wide-64x192-c1": (
            Problem(179, 6144, 6144),
            dict(tile_m=64, tile_n=192, a_operand="regs", **swap),
        ),
        "regs-wide-64x72-c1-bf16": (
            Problem(100, 6144, 5120, "bf16"),
            dict(tile_m=64, tile_n=72, a_operand="regs", **swap),
        ),
        "regs-64x160-c1": (
            Problem(2607, 5120, 4096),
            dict(tile_m=64, tile_n=160, a_operand="regs", **c1),
        ),
        "regs-wide-128x136-c1": (
            Problem(404, 10240, 8192),
            dict(tile_n=136, a_operand="regs", **swap),
        ),
        "regs-wide-split2-128x80-c1": (
            Problem(68, 6144, 16384),
            dict(tile_n=80, split_k=2, a_operand="regs", **swap),
        ),
        "regs-wide-128x72-c2": (
            Problem(201, 10240, 8192),
            dict(tile_n=72, swap_ab=True, a_operand="regs"),
        ),
        # two consumers at the widest two-box tiles (16-column register sets), with stream-K
        "regs-wide-128x192-c2-bf16": (
            Problem(530, 53248, 16384, "bf16"),
            dict(tile_n=192, swap_ab=True, a_operand="regs"),
        ),
        "regs-128x160-c2": (Problem(1427, 5120, 5120), dict(tile_n=160, a_operand="regs")),
        "regs-sk-wide-128x144-c1": (
            Problem(155, 36864, 7168),
            dict(tile_n=144, stream_k=True, a_operand="regs", **swap),
        ),
        "regs-sk-128x192-c2": (
            Problem(3790, 5120, 13824),
            dict(tile_n=192, stream_k=True, a_operand="regs"),
        ),
        # three boxes (A in registers only): one and two consumers, the widest of each, the
        # widest with stream-K, bf16
        "regs3-wide-128x152-c1": (
            Problem(404, 10240, 8192),
            dict(tile_n=152, a_operand="regs", **swap),
        ),
        "regs3-wide-128x224-c2": (
            Problem(1000, 7168, 4096),
            dict(tile_n=224, swap_ab=True, a_operand="regs"),
        ),
        "regs3-wide-64x200-c1": (
            Problem(395, 8192, 4096),
            dict(tile_m=64, tile_n=200, a_operand="regs", **swap),
        ),
        "regs3-wide-64x104-c1-bf16": (
            Problem(101, 4608, 3584, "bf16"),
            dict(tile_m=64, tile_n=104, a_operand="regs", **swap),
        ),
        "regs3-sk-wide-128x168-c1": (
            Problem(331, 36864, 7168),
            dict(tile_n=168, stream_k=True, a_operand="regs", **swap),
        ),
        # up to REGS_DEEP_MAX wide, two consumers load 32-column slices: three boxes (a
        # k-step's sets serialize them), stream-K
        "regs3-wide-128x104-c2": (
            Problem(207, 6144, 4096),
            dict(tile_n=104, swap_ab=True, a_operand="regs"),
        ),
        "regs-sk-wide-128x96-c1": (
            Problem(196, 36864, 7168),
            dict(tile_n=96, stream_k=True, a_operand="regs", **swap),
        ),
    }
    return [pytest.param(p, o, id=name) for name, (p, o) in shapes.items()]


def _r8_config(kernel, problem, knobs):
    config = _r8().R8Config(**knobs)
    assert config in kernel.configs, f"{config.name} is not on the menu"
    assert kernel.supports(problem, config) is None
    return config


@pytest.mark.parametrize(("problem", "knobs"), _r8_cases())
def test_r8_code_paths(problem, knobs):
    """Each code path compiles and has the instructions (and only those) it needs: the wgmma
    width of each box of its tile, one k-step of them in flight and no wgmma serialized by
    ptxas; A from
    shared memory, or from registers ``ldmatrix`` filled (``a_operand=regs``); TMA multicast,
    a cluster launch and remote barrier arrives only with cluster 2; the second consumer
    warpgroup's ``setmaxnreg 232`` only with two consumers (not with A in registers: no
    reallocation), 152 with three (192 rows); a transposing ``stmatrix`` only with swap-AB
    (fp16/bf16 out); no atomics anywhere (split-K is deterministic); no spills; shared memory
    within 227 KiB."""
    from triton import knobs as triton_knobs

    from harness.toolchain import run_ptxas

    r8 = _r8()
    kernel = r8.KERNEL
    config = _r8_config(kernel, problem, knobs)
    art = kernel.codegen(problem, "sm_90a", config)
    ptx = art.ptx
    assert art.cubin and re.search(r"\.target sm_90a", ptx)
    # one wgmma width per box of the tile: a two- or three-box tile issues each, nothing else
    widths = {f"m64n{w}k16" for w in config.boxes if w}
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\.f32", ptx)) == widths
    # one k-step's wgmmas stay in flight while the next step's issue: one commit group a box
    # (each box's wgmma commits its own)
    in_flight = set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)) - {"0"}
    assert in_flight == {str(len(widths))}, config.name
    # ... and ptxas keeps it so: no wgmma serialized (C7510-C7515), which it does silently to
    # register-A wgmmas it cannot keep in flight (backends.gluon._workarounds, defect 1)
    log = run_ptxas(ptx, "sm_90a", ptxas=triton_knobs.nvidia.ptxas_blackwell.path).log
    assert "serialized" not in log, (config.name, log)
    # A's operand: a shared-memory descriptor, or (a_operand=regs) registers that one ldmatrix
    # x4 per 16 k-columns filled (a 64x16 slice a warpgroup), in each copy of the k-loop's
    # body: four a consumer that loads a k-step's sets (the first step, the pair of steps, the
    # step an even count leaves), two a consumer that loads K-slices (the first k-step, the
    # loop's); and a wait after each set's wgmmas (``regs_set_k``: a k-step, 32 or 16 columns)
    a_ops = re.findall(r"wgmma\.mma_async\.sync\.aligned\.\S+ \{[^}]*\}, (\S)", ptx)
    regs = config.a_operand == "regs"
    assert a_ops and set(a_ops) == ({"{"} if regs else {"%"}), config.name
    loads = len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", ptx))
    set_k = r8.regs_set_k(config)
    copies = (4 if set_k == r8.BLOCK_K else 2) * config.num_consumers
    assert loads == (copies * r8.BLOCK_K // 16 if regs else 0), (config.name, loads)
    if regs:
        waits = len(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+[1-9]", ptx))
        assert waits == copies * r8.BLOCK_K // set_k, (config.name, waits)
    else:
        assert set_k == 0
    stores = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)  # TMA store
    assert stores
    if config.swap_ab and config.split_k == 1:  # one store per box per consumer
        # (three consumers: LLVM may merge the two 4-warp workers' identical epilogues, which
        # differ only in C's row offset, already in a register: 192x160 has two copies)
        copies = {config.num_consumers, 2} if config.num_consumers == 3 else {config.num_consumers}
        assert len(stores) in {len(widths) * n for n in copies}, config.name
    if not config.swap_ab and config.boxes[1]:  # an unswapped two-box tile: both D boxes
        assert len(stores) == 2 * config.num_consumers, config.name
    # register reallocation, except two consumers with A in registers (defect 1 again)
    realloc = not (regs and config.num_consumers == 2)
    assert bool(re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40;", ptx)) == realloc
    two = config.cluster == 2
    assert bool(re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster.*multicast", ptx)) == two
    assert bool(re.search(r"\.reqnctapercluster 2", ptx)) == two
    assert bool(re.search(r"mbarrier\.arrive\.shared::cluster", ptx)) == two
    assert bool(re.search(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+232;", ptx)) == (
        config.num_consumers == 2 and realloc
    )
    assert bool(re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+152;", ptx)) == (
        config.num_consumers == 3
    )
    if config.tile_m == 256:  # each consumer's 128 rows are two m64 wgmmas per box per k16
        per_k16 = 2 * len(widths) * config.num_consumers
        assert len(re.findall(r"wgmma\.mma_async", ptx)) == per_k16 * r8.BLOCK_K // 16
    # (an fp32 split-K partial has no 16-bit stmatrix: plain shared stores transpose it)
    transposed = config.swap_ab and config.split_k == 1
    assert bool(re.search(r"stmatrix\.sync\.aligned\.\S*\.trans", ptx)) == transposed
    assert not re.search(r"\b(atom|red)\.", ptx)
    assert art.spill_bytes == 0, f"{config.name}: spills {art.spill_bytes} (None: no ptxas log)"
    assert art.shared_bytes is not None and art.shared_bytes <= 227 * 1024
    # only a stream-K segment stores from registers: its fp32 partial, 32 bits a store
    assert bool(re.search(r"st\.global", ptx)) == config.stream_k
    if config.stream_k:
        assert any("streamk_reduce_kernel" in n for n in art.notes)
        red = kernel.reduce_codegen(problem, "sm_90a", config)
        assert red.cubin and re.search(r"ld\.global", red.ptx) and re.search(r"st\.global", red.ptx)
        assert not re.search(r"\b(atom|red)\.", red.ptx)  # a fixed-order sum, not atomics
    if config.split_k > 1:
        assert any("splitk_reduce_kernel" in n for n in art.notes)
        red = kernel.reduce_codegen(problem, "sm_90a", config)
        assert red.cubin and re.search(r"ld\.global", red.ptx) and re.search(r"st\.global", red.ptx)
        assert not re.search(r"\b(atom|red)\.", red.ptx)  # a fixed-order sum, not atomics
        assert len(re.findall(r"add\.f32", red.ptx)) >= config.split_k - 1


def test_r8_one_cta_256_wide_tiles_store_in_boxes():
    """The one-CTA 256-wide tiles store four 64-column boxes per consumer through two buffers
    (one ring stage more); rung 7's cluster tile keeps one box per consumer and 3 stages."""
    r8 = _r8()
    problem = Problem(1024, 28672, 4096)
    stores = r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta"
    for knobs, boxes, stages in ((dict(cluster=1), 4, 4), (dict(), 1, 3)):
        config = r8.R8Config(**knobs)
        assert r8.plan(problem, 132, config).constexprs["NUM_STAGES"] == stages
        ptx = r8.KERNEL.codegen(problem, "sm_90a", config).ptx
        assert len(re.findall(stores, ptx)) == boxes * config.num_consumers, config.name


def test_r8_persistence_is_a_distinct_compile():
    """Above one wave the tile loop is compiled in; at or below one wave each CTA runs one
    tile with no loop (grid = tiles): same config, two kernels."""
    r8 = _r8()
    config = r8.R8Config(64, 64, cluster=1)
    one_wave, many = Problem(512, 512, 512), Problem(2048, 2048, 512)
    p1, p2 = r8.plan(one_wave, 132, config), r8.plan(many, 132, config)
    assert (p1.constexprs["PERSISTENT"], p1.grid) == (False, (64,))
    assert (p2.constexprs["PERSISTENT"], p2.grid) == (True, (132,))
    a1 = r8.KERNEL.codegen(one_wave, "sm_90a", config)
    a2 = r8.KERNEL.codegen(many, "sm_90a", config)
    assert a1.ptx != a2.ptx


@pytest.mark.parametrize(
    ("problem", "knobs"),
    [
        # stream-K: fp32 partials in tile-sized workspace slots, two CTAs, two consumers
        (Problem(1000, 4096, 4096), dict(stream_k=True)),
        # a split over K into split_rows-high slices, swapped, A from registers in two boxes
        (
            Problem(300, 7168, 16384),
            dict(tile_n=72, cluster=1, swap_ab=True, split_k=2, a_operand="regs"),
        ),
    ],
    ids=["stream-k", "split-k-swap-two-box"],
)
def test_r8_alignment_of_the_sizes_changes_no_instruction(problem, knobs):
    """The kernel turns off Triton's specialization of its sizes on divisibility by 16 (each
    alignment class of a shape was another compile of the same code): the PTX with M, N, K and
    split_rows known to be multiples of 16 is the PTX without."""
    from backends.gluon._host import compile_offline

    r8 = _r8()
    sizes = ("M", "N", "K", "split_rows")
    assert set(r8.r8_shape_adaptive_kernel.do_not_specialize_on_alignment) == set(sizes)
    config = r8.R8Config(**knobs)
    assert config in r8.KERNEL.configs, config.name
    plan = r8.plan(problem, 132, config)
    unaligned = compile_offline(r8.r8_shape_adaptive_kernel, plan, "fp16", "sm_90a")
    aligned = compile_offline(r8.r8_shape_adaptive_kernel, plan, "fp16", "sm_90a", divisible=sizes)
    assert aligned.ptx == unaligned.ptx


def test_offline_compiles_see_the_alignment_they_are_given():
    """The control of the test above: the split-K reduce (which keeps the specialization) uses
    N and the workspace's ld_w as row strides; known to be multiples of 16 they vectorize its
    loads and stores, so there the named sizes do change the PTX."""
    from backends.gluon._host import compile_offline

    r8 = _r8()
    config = r8.R8Config(128, 128, cluster=1, split_k=4)
    plan = r8.reduce_plan(Problem(1000, 4096, 4096), config)
    pointers = ("w_ptr", "d_ptr")  # 16-byte aligned, as every torch allocation is
    compiled = [
        compile_offline(r8.splitk_reduce_kernel, plan, "fp16", "sm_90a", divisible=named).ptx
        for named in (pointers, (*pointers, "N", "ld_w"))
    ]
    vectors = [len(re.findall(r"ld\.global\.v4", ptx)) for ptx in compiled]
    assert vectors[1] > vectors[0], vectors
    with pytest.raises(ValueError, match="ld_x"):
        compile_offline(r8.splitk_reduce_kernel, plan, "fp16", "sm_90a", divisible=("ld_x",))


def _all_problems():
    from harness.problems import SUITES, expand

    problems = expand([*SUITES, "random:3"], ("fp16", "bf16"))
    rng = random.Random(8)
    for _ in range(300):
        m = rng.choice([1, 2, 7, 16, 33, 64, 65, 100, 128, 255, 1000, 4097, rng.randint(1, 9000)])
        n = rng.choice([1, 3, 8, 17, 64, 100, 777, 4096, rng.randint(1, 60000)])
        k = 8 * rng.choice([1, 2, 8, 63, 64, 65, 512, rng.randint(1, 4000)])
        problems.append(Problem(m, n, k, rng.choice(["fp16", "bf16"])))
    return problems


def test_r8_select_valid_for_every_problem():
    """The heuristic never refuses: every suite's problem, a held-out random suite and random
    shapes (any M, N >= 1, K % 8 == 0) get a menu config that is valid, whose ring fits shared
    memory with >= 2 stages, whose K splits are never empty and keep >= 512 of K, which swaps
    A and B only when M <= 64 < N and always when M <= 32, and whose plan launches at least
    one program and no more than one per SM (cluster) or per work unit."""
    r8 = _r8()
    kernel = r8.KERNEL
    for problem in _all_problems():
        config = kernel.select(problem)  # no GPU here: the heuristic
        assert config in kernel.configs
        assert kernel.supports(problem, config) is None, problem.key
        # A in registers only where the family's A/B said so (REGS_PICKED), and in raster m
        family = (config.tile_m, config.tile_n, config.swap_ab)
        regs = family in r8.REGS_PICKED and config.raster == "m"
        assert config.a_operand == ("regs" if regs else "smem"), (problem.key, config.name)
        plan = r8.plan(problem, 132, config)
        stages = plan.constexprs["NUM_STAGES"]
        out_bytes = 4 if config.split_k > 1 else 2
        ring = stages * (config.tile_m + config.tile_n) * r8.BLOCK_K * 2
        assert stages >= 2 and ring + config.epilogue_bytes(out_bytes) <= r8.SMEM_BUDGET
        k_tiles = -(-problem.k // r8.BLOCK_K)
        ranges = [
            (s * k_tiles // config.split_k, (s + 1) * k_tiles // config.split_k)
            for s in range(config.split_k)
        ]
        assert all(hi > lo for lo, hi in ranges) and ranges[-1][1] == k_tiles
        if config.split_k > 1:
            assert k_tiles * r8.BLOCK_K // config.split_k >= MIN_K_PER_SPLIT
            assert r8.slice_rows(problem, config) >= problem.m
        units = config.tiles(problem) * config.split_k
        assert 1 <= plan.grid[0] <= max(units, 132 // config.cluster)
        if config.stream_k:
            assert plan.constexprs["PERSISTENT"] and plan.grid == (132 // config.cluster,)
        if config in r8._transposes(problem) and TRANSPOSE_M[0] <= problem.m <= TRANSPOSE_M[1]:
            assert 1 - idle_share(config, problem) >= TRANSPOSE_FILL, (problem.key, config.name)
        elif config.wide_swap:  # a mid-size M, as the narrowest of the widths that fits it
            widths = r8._swap_widths(config)  # a picked three-box width among them
            assert swap_fits(problem, config.tile_n, widths), (problem.key, config.name)
        elif config.swap_ab:
            assert problem.m <= 64 < problem.n
        elif problem.m <= 32 and 64 < problem.n:
            raise AssertionError(f"{problem.key}: M <= 32 must swap A and B, got {config.name}")
    # the tune ranking: every valid config once, the heuristic's among them, no invalid one
    for problem in (Problem(1, 4096, 14336), Problem(128, 10240, 8192), Problem(1000, 1003, 520)):
        ranked = r8._ranked(problem)
        valid = [c for c in kernel.configs if kernel.supports(problem, c) is None]
        assert sorted(c.name for c in ranked) == sorted(c.name for c in valid)
        assert r8._heuristic(problem) in ranked


def test_r8_picks_192_rows_in_one_wave_or_whole_waves():
    """192-row swapped tiles (three consumers): the model's pick on one CTA at 96 or 128 wide
    where their tiles fit one wave (414x6144x6144: 32 x 4 of 192x128, over 256x96's 24 x 5),
    or ``whole_wave_swap``'s in place of a stream-K wide swap over whole waves (133x37888x3584:
    192x72, 396 tiles); nowhere else on the tuning draws, and none on ``sweep``."""
    from harness.problems import expand, random_shapes

    r8 = _r8()
    c = r8._heuristic(Problem(414, 6144, 6144))
    assert (c.tile_m, c.tile_n, c.swap_ab, c.cluster, c.stream_k) == (192, 128, True, 1, False)
    c = r8._heuristic(Problem(133, 37888, 3584))
    assert (c.tile_m, c.tile_n, c.swap_ab, c.cluster, c.stream_k) == (192, 72, True, 1, False)
    assert c.tiles(Problem(133, 37888, 3584)) == 3 * HOPPER.num_sms
    shapes = {s for seed in (101, 102, 103) for s in random_shapes(seed, 256)}
    picked = 0
    for s in shapes:
        p = Problem(*s)
        c = r8._heuristic(p)
        if c.tile_m != 192:
            continue
        picked += 1
        assert c.cluster == 1 and not c.stream_k and c.split_k == 1, (s, c.name)
        one_wave = c.tile_n in r8.ROWS_192_PICKED and c.ctas(p) <= HOPPER.num_sms
        whole = c.tile_n in r8.ROWS_192_WHOLE and c.tiles(p) >= 2 * HOPPER.num_sms
        assert one_wave or whole, (s, c.name)
    assert picked >= 5
    for problem in expand(["sweep"]):
        assert r8._heuristic(problem).tile_m != 192, problem


def test_r8_a_narrow_two_box_swap_in_columns_gives_way_to_its_wider_twin():
    """128 rows x 72 or 80 columns (a 64-wide box plus an 8- or 16-wide one) in several
    column tiles becomes the 64-row tile twice as wide where that width fits M; in one
    column, or where the twin's width does not fit, the cost model's choice stands."""
    r8 = _r8()
    c = r8._heuristic(Problem(140, 7168, 4096))  # the model's first: 128x72 in 2 columns
    assert (c.tile_m, c.tile_n, c.swap_ab, c.cluster) == (64, 144, True, 1), c.name
    c = r8._heuristic(Problem(150, 7168, 16384))
    assert (c.tile_m, c.tile_n, c.swap_ab) == (64, 160, True), c.name
    c = r8._heuristic(Problem(71, 10240, 8192))  # one column: 128x72 stays
    assert (c.tile_m, c.tile_n, c.swap_ab) == (128, 72, True), c.name
    # Since the twenty-first version (two-box tiles priced) the model's first at these two is
    # the unswapped 64x160, so the rule is asked directly: the twin of 128x72 in 4 columns
    # fits M, that of 2 x 97 rows (padded to 128, not 144) does not.
    narrow = r8.R8Config(128, 72, 1, swap_ab=True)
    for m, n, fits in ((279, 3584, True), (194, 5120, False)):
        problem = Problem(m, n, 4096)
        twin = r8._one_box_wider(problem, narrow)
        assert (twin.tile_m, twin.tile_n) == (64, 144), twin.name
        assert swap_fits(problem, twin.tile_n, r8.SWAP_WIDE) == fits, problem


def test_r8_swapped_splits_replace_unswapped_ones():
    """The 128-row wide swaps up to ``SWAP_WIDE_SPLIT`` split K two and four ways (one CTA,
    both rasters), valid where a split is; where one fits M the heuristic splits no unswapped
    tile (``swapped_splits``), and a swapped split two ways gives way to its 64-row unsplit
    twin (``unsplit_twin``): README, "Nineteenth version"."""
    r8 = _r8()
    splits = [c for c in r8.MENU if c.wide_swap and c.split_k > 1 and c.a_operand == "smem"]
    widths = [w for w in r8.SWAP_WIDE if w <= r8.SWAP_WIDE_SPLIT]
    assert {(c.tile_m, c.tile_n, c.cluster, c.split_k, c.raster) for c in splits} == {
        (128, w, 1, s, r) for w in widths for s in (2, 4) for r in "mn"
    }
    p = Problem(68, 6144, 16384)
    for c in splits:
        assert r8._valid(p, c) is None, c.name
        assert r8._variant(p, c) == (c.raster != "m"), c.name
        assert c.stages(4) >= 5, c.name

    def pick(m: int, n: int, k: int) -> tuple:
        c = r8._heuristic(Problem(m, n, k))
        return (c.tile_m, c.tile_n, c.swap_ab, c.split_k)

    assert pick(71, 4096, 14336) == (128, 72, True, 4)  # 32 tiles: the split adds CTAs
    assert pick(108, 3584, 18944) == (128, 128, True, 4)  # was unswapped 128x128 split 4
    assert pick(68, 6144, 16384) == (64, 72, True, 1)  # the twin of 128x72 split 2
    assert pick(150, 4096, 14336) == (64, 80, True, 1)  # the twin of 128x80 split 2
    assert pick(104, 8192, 28672) == (64, 128, False, 1)  # no unswapped split at mid M


def test_r8_swapped_stream_k_validity():
    """Stream-K also runs the 128-row wide swaps (every ``SWAP_WIDE`` width, one box or two,
    cluster 1 and 2, both rasters; three boxes, A in registers, up to ``SWAP_WIDE_3_SK``, raster
    m); 64 and 256 rows, narrow covers, splits and a D^T whose column pitch (N) is not 16-byte
    aligned are refused with a reason."""
    r8 = _r8()
    ok = Problem(155, 36864, 7168)
    swapped = [c for c in r8.MENU if c.stream_k and c.swap_ab]
    assert {(c.tile_m, c.tile_n, c.cluster, c.raster) for c in swapped if c.boxes[2] == 0} == {
        (128, w, c, r) for w in r8.SWAP_WIDE for c in (1, 2) for r in "mn"
    }
    three = {(c.tile_m, c.tile_n, c.cluster, c.raster) for c in swapped if c.boxes[2]}
    widths = [w for w in r8.SWAP_WIDE_3 if w <= r8.SWAP_WIDE_3_SK]
    assert three == {(128, w, c, "m") for w in widths for c in (1, 2)} and len(widths) >= 4
    assert all(r8._valid(ok, c) is None for c in swapped)
    base = swapped[0]
    for override in ("tile_m=64", "tile_m=256", "tile_n=32", "split_k=2"):
        assert r8._valid(ok, base.with_overrides(override)), override
    assert r8._valid(Problem(155, 36868, 7168), base)


def test_r8_says_why_it_chose_each_config():
    """``selection_reason``: the model's tiles, waves, time and runner-up; where a rule
    replaced the model's first (the 64-row twin of a 128x72 swap in two columns) or chose a
    config the rules before the model do not allow (a 192-row tile in three whole waves, in
    place of a stream-K wide swap), it says so; otherwise it names the runner-up (a 192-row
    tile in one wave)."""
    r8 = _r8()
    p = Problem(140, 7168, 4096)
    pick = r8.KERNEL.select(p)
    why = r8.KERNEL.selection_reason(p, pick)
    assert (pick.tile_m, pick.tile_n) == (64, 144) and "; by rule over 128x72 swap, -" in why
    p = Problem(136, 36864, 7168)
    why = r8.KERNEL.selection_reason(p, r8.KERNEL.select(p))
    # (the model prices it under the stream-K swap; only one wave of 192-row tiles is allowed)
    assert why.startswith("384 tiles, 3.00 waves, model ")
    assert "; by rule over 128x136 swap sk, +" in why, why
    p = Problem(414, 6144, 6144)
    why = r8.KERNEL.selection_reason(p, r8.KERNEL.select(p))
    assert why.startswith("128 tiles, 1.00 waves, model ") and "; next 128x208 swap +" in why, why


def test_r8_a_in_registers_twins_the_two_box_tiles_ptxas_pipelines():
    """``a_operand=regs`` is a raster-m twin of exactly the two-box tiles of one or two 64-row
    consumers (``backends.gluon._workarounds``), and the only way to run three boxes (the wide
    swaps of ``SWAP_WIDE_3``, within the widths ptxas keeps in flight and in registers);
    elsewhere it is refused with the reason. It is a variant until its tile family's A/B
    puts the family in ``REGS_PICKED`` (then the shared-memory twin is): the tune ranking
    times variants after every priced config, the heuristic never picks one, and the register
    config's name (unlike the shared-memory one's) says which it is."""
    r8 = _r8()
    p = Problem(300, 8192, 8192)
    regs = {c for c in r8.MENU if c.a_operand == "regs" and not c.boxes[2]}
    twins = {
        dataclasses.replace(c, a_operand="regs")
        for c in r8.MENU
        if c.a_operand == "smem"
        and c.raster == "m"
        and c.boxes[1]
        and c.consumer_rows == 64
        and c.num_consumers <= 2
    }
    assert regs == twins and len(regs) > 10
    three = {c for c in r8.MENU if c.boxes[2]}
    assert {(c.tile_m, c.tile_n, c.cluster, c.stream_k) for c in three} == {
        (tm, w, cl, sk)
        for w in r8.SWAP_WIDE_3
        for tm, cl in r8.WIDE_SWAP_TILES
        for sk in (False, True)
        if (tm == 128 or w <= r8.SWAP_WIDE_3_ONE)
        and (tm == 128 or not sk)
        and (not sk or w <= r8.SWAP_WIDE_3_SK)
    }
    assert all(c.a_operand == "regs" and c.raster == "m" and c.split_k == 1 for c in three)

    def picked(c):
        return (c.tile_m, c.tile_n, c.swap_ab) in r8.REGS_PICKED

    for c in regs | three:
        assert "a_operand=regs" in c.name
        assert "a_operand" not in dataclasses.replace(c, a_operand="smem").name
        assert r8._variant(p, c) == (not picked(c)), c.name
    # the families whose register twin won its A/B (README, "Twenty-sixth version"): two two-box
    # swaps and three three-box ones; their shared-memory twins in raster m became the variants
    assert r8.REGS_PICKED == {
        (128, 136, True),
        (128, 160, True),
        (128, 200, True),
        (128, 208, True),
        (128, 224, True),
    }
    assert all(
        (m, n, swap) in {(c.tile_m, c.tile_n, c.swap_ab) for c in regs | three}
        for m, n, swap in r8.REGS_PICKED
    )
    # what fit-cost prices (``priced``): the register kernel of a three-box tile and of a picked
    # family in raster m (a record from before the knob read A from shared memory), else A
    # from shared memory
    values = {c: {**dataclasses.asdict(c), "a_operand": c.a_operand} for c in r8.MENU}
    smem_twins = {dataclasses.replace(c, a_operand="smem") for c in regs if picked(c)}
    assert smem_twins and smem_twins <= set(r8.MENU)
    unpriced = {c for c in regs if not picked(c)} | smem_twins
    assert {c for c in r8.MENU if not r8.priced(values[c])} == unpriced
    assert all(
        r8.priced({k: v for k, v in values[c].items() if k != "a_operand"})
        for c in r8.MENU
        if c.a_operand == "smem" and c not in smem_twins
    )
    for c in smem_twins:  # picked, the family keeps A in shared memory where the raster is n
        raster_n = dataclasses.replace(c, raster="n")
        assert r8.priced({**dataclasses.asdict(raster_n), "a_operand": "smem"}), c.name
    refused = {
        "one box": r8.R8Config(128, 128, 1, swap_ab=True, a_operand="regs"),
        "256 rows": r8.R8Config(256, 144, 1, swap_ab=True, a_operand="regs"),
        "192 rows": r8.R8Config(192, 72, 1, swap_ab=True, a_operand="regs"),
        "unknown": r8.R8Config(64, 160, 1, a_operand="tmem"),
        "three boxes, A in shared memory": r8.R8Config(128, 152, 1, swap_ab=True),
        "three boxes unswapped": r8.R8Config(128, 224, 1, a_operand="regs"),
        "four boxes": r8.R8Config(128, 184, 1, swap_ab=True, a_operand="regs"),
        "three boxes, one consumer, serialized": r8.R8Config(
            64, 208, 1, swap_ab=True, a_operand="regs"
        ),
        "three boxes, stream-K, spills": r8.R8Config(
            128, 176, 1, swap_ab=True, stream_k=True, a_operand="regs"
        ),
    }
    for what, c in refused.items():
        assert c not in r8.MENU and r8._valid(p, c), what
    ranked = r8._ranked(p)
    variants = [r8._variant(p, c) for c in ranked]  # timed after every priced config
    assert variants == sorted(variants) and any(variants)
    first_unpicked = next(
        i for i, c in enumerate(ranked) if c.a_operand == "regs" and not picked(c)
    )
    assert all(variants[first_unpicked:])
    # the K-columns a register set holds (backends.gluon._workarounds, defect 1): a k-step on
    # one consumer and on two for a narrow two-box tile; else 32 up to REGS_DEEP_MAX, then 16
    sets = {
        (64, 200, False): r8.BLOCK_K,
        (128, 136, False): r8.BLOCK_K,
        (128, 96, True): 32,
        (128, 104, False): 32,
        (128, 144, False): 16,
        (128, 224, False): 16,
    }
    for (tm, tn, sk), k in sets.items():
        c = r8.R8Config(tm, tn, 1, swap_ab=True, stream_k=sk, a_operand="regs")
        assert r8.regs_set_k(c) == k, c.name
    assert r8.regs_set_k(r8.R8Config(128, 136, 1, swap_ab=True)) == 0


def test_a_picked_three_box_family_adds_a_width_and_removes_none(monkeypatch):
    """A three-box family in ``REGS_PICKED`` is pickable: priced (by its register kernel) and,
    among the widths ``swap_fits`` weighs, its width added for three-box tiles only. A two-box
    tile keeps the widths it had: with 176 picked but priced low, 338 rows in two columns still
    take the 128x192 swap (with 176 among the two-box widths too, 192 would not fit and the pick
    would move to the 192x128 swap)."""
    r8 = _r8()
    wide = Problem(444, 8192, 8192)
    fast = r8.COST.with_params({"eff:128x224": 0.80, "eff:128x176": 0.30})
    monkeypatch.setattr(r8, "REGS_PICKED", frozenset())
    before = r8._heuristic(wide, fast)
    assert before.boxes[2] == 0  # a variant until picked, however it is priced
    monkeypatch.setattr(r8, "REGS_PICKED", frozenset({(128, 224, True), (128, 176, True)}))
    pick = r8._heuristic(wide, fast)
    assert (pick.tile_m, pick.tile_n, pick.swap_ab, pick.a_operand) == (128, 224, True, "regs")
    assert r8._swap_widths(pick) == tuple(sorted({*r8.SWAP_WIDE, 176, 224}))
    assert r8.priced({**dataclasses.asdict(pick), "a_operand": "regs"})
    two_box = Problem(338, 8192, 8192)
    kept = r8._heuristic(two_box, fast)
    assert (kept.tile_m, kept.tile_n, kept.swap_ab) == (128, 192, True)
    assert r8._swap_widths(kept) == r8.SWAP_WIDE
    monkeypatch.setattr(r8, "REGS_PICKED", frozenset())
    assert r8._heuristic(two_box, fast) == kept


def test_the_shared_rules_see_a_register_pick_as_its_tile():
    """``harness.tile_cost``'s rules (whole-wave swap, unsplit twin, one box wider) replace a
    pick by tile geometry; ``_as_priced`` gives what they return the A operand its family is
    priced with, so a register pick is replaced as its shared-memory twin was. A picked family
    keeps A in shared memory where the raster is n (its register twins are raster m only)."""
    r8 = _r8()
    for shape in ((136, 36864, 7168), (133, 37888, 3584)):  # 128x136 stream-K, 3 waves of 192x72
        p = Problem(*shape)
        ranked = [c for c in r8._ranked(p) if r8._allowed(p, c)]
        assert (ranked[0].tile_n, ranked[0].stream_k, ranked[0].a_operand) == (136, True, "regs")
        pick = r8._heuristic(p)
        assert (pick.tile_m, pick.tile_n, pick.a_operand) == (192, 72, "smem"), pick.name
    for shape, tile_n in (((631, 4096, 4096), 160), ((909, 4608, 3584), 136)):
        pick = r8._heuristic(Problem(*shape))
        assert (pick.tile_n, pick.raster, pick.a_operand) == (tile_n, "n", "smem"), pick.name
        assert not r8._variant(Problem(*shape), pick)


def test_r8_transposes_a_part_empty_wave_into_a_picked_three_box_swap(monkeypatch):
    """At M 1024-5120 an unswapped pick wasting 10 % of its waves' SM time gives way to the
    three-box register swap of a ``REGS_PICKED`` family whose tiles fill its waves
    (``harness.tile_cost.whole_wave_transpose`` over ``_transposes``): H200, % of cuBLAS,
    1463x4608x3584 128x256 pair 85.4 -> 128x224 swapped 96.9, 2456x4608x4096 87.2 -> 98.3
    (README, "Twenty-seventh version"). Only those families: no two-box swap, no pick where
    the REGS_PICKED set is empty; rung 7's 4096^3 and 8192^3 and every `sweep` pick stay."""
    from harness.problems import expand

    r8 = _r8()
    for shape in ((1463, 4608, 3584), (2456, 4608, 4096)):
        p = Problem(*shape)
        pick = r8._heuristic(p)
        assert (pick.tile_m, pick.tile_n, pick.swap_ab, pick.a_operand) == (128, 224, True, "regs")
        assert (pick.cluster, pick.raster, pick.split_k, pick.stream_k) == (1, "m", 1, False)
        assert pick.boxes[2] and 1 - idle_share(pick, p) >= TRANSPOSE_FILL
    candidates = {
        c
        for shape in ((1463, 4608, 3584), (3000, 3584, 8192))
        for c in r8._transposes(Problem(*shape))
    }
    assert candidates and all(c.boxes[2] and c.a_operand == "regs" for c in candidates)
    assert {c.tile_n for c in candidates} <= {n for m, n, swap in r8.REGS_PICKED if swap}
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (1024, 4096, 4096)):
        assert not r8._heuristic(Problem(*shape)).swap_ab, shape
    for p in expand(["sweep"]):
        assert r8._heuristic(p) not in r8._transposes(p) or p.m < TRANSPOSE_M[0], p.key
    monkeypatch.setattr(r8, "REGS_PICKED", frozenset())
    assert not r8._transposes(Problem(1463, 4608, 3584))
    assert r8._heuristic(Problem(1463, 4608, 3584)).label == "128x256 c2"


def test_r8_a_mid_m_64x160_gives_way_to_the_swap_picked_without_it():
    """At M 257-1024 an unswapped 64x160 pick becomes the pick made without that tile where
    that is a swap of 64 or 128 rows (``_swap_over_64x160``): A/B U and A/B V timed it 0.823
    and 0.924 of the 64x160's time on the H100 and the H200 (README, "Twenty-eighth version").
    The swap is the config those A/Bs ran (A operand, raster); where the pick without it is
    unswapped or 192 rows, outside the band, or the pick is no 64x160, the pick stands."""
    r8 = _r8()
    # (tile_m, tile_n, swap_ab, raster, a_operand) of the configs A/B U and A/B V ran
    moved = {
        (634, 8192, 8192): (128, 160, True, "m", "regs"),
        (523, 4608, 36864): (128, 192, True, "m", "smem"),
        (642, 28672, 4096): (128, 96, True, "m", "smem"),
        (262, 3584, 4096): (64, 136, True, "n", "smem"),
    }
    for shape, knobs in moved.items():
        p = Problem(*shape)
        assert r8._model_pick(p).label == "64x160", shape
        pick = r8._heuristic(p)
        assert (pick.tile_m, pick.tile_n, pick.swap_ab, pick.raster, pick.a_operand) == knobs
        assert (pick.cluster, pick.split_k, pick.stream_k, pick.group) == (1, 1, False, 8)
        assert "; by rule over 64x160, -" in r8._explain(p, pick), r8._explain(p, pick)
    # the pick without it is 64x128 (unswapped) and the 192x128 swap: the 64x160 stays
    for shape in ((805, 6144, 6144), (489, 5120, 4096)):
        assert r8._heuristic(Problem(*shape)).label == "64x160", shape
    # a 64x160 pick below the band stays, as does a pick that is no 64x160
    low = Problem(182, 27648, 5120)
    assert r8._model_pick(low).label == r8._heuristic(low).label == "64x160"
    assert r8._swap_over_64x160(low, r8._model_pick(low), r8.COST) is None
    other = Problem(4096, 4096, 4096)
    assert r8._swap_over_64x160(other, r8._heuristic(other), r8.COST) is None
    # without its own efficiency the model has no 64x160 to pick
    bare = r8.COST.without_own(64, 160)
    assert (64, 160) not in bare.unswapped_efficiency and (64, 160) in r8.COST.unswapped_efficiency
    assert r8._model_pick(Problem(634, 8192, 8192), bare).label != "64x160"


def test_r8_menu_fits_shared_memory():
    r8 = _r8()
    for config in r8.MENU:
        for out_bytes in (2, 4):
            if out_bytes == 4 and config.split_k == 1:
                continue
            stage = (config.tile_m + config.tile_n) * r8.BLOCK_K * 2
            epilogue = config.epilogue_bytes(out_bytes)
            assert config.stages(out_bytes) >= 2, config.name
            assert config.stages(out_bytes) * stage + epilogue <= r8.SMEM_BUDGET, config.name
    # curated: 48 configs, plus the wide swaps (each width on three tile families, two rasters)
    # and the 256- and 192-row ones up to SWAP_WIDE_256 and SWAP_WIDE_192 (cluster 1 and 2, two
    # rasters), the 128-row ones' stream-K twins (cluster 1 and 2, two rasters) and splits,
    # and the unswapped two-box tiles (128x192 with stream-K too)
    wide256 = sum(w <= r8.SWAP_WIDE_256 for w in r8.SWAP_WIDE)
    wide192 = len(r8.ROWS_192_WIDTHS)
    wide_split = sum(w <= r8.SWAP_WIDE_SPLIT for w in r8.SWAP_WIDE)
    most = 48 + len(r8.SWAP_WIDE) * 3 * 2 + (wide256 + wide192 + len(r8.SWAP_WIDE)) * 2 * 2
    most += wide_split * 2 * 2  # the wide swapped splits: two ways, two rasters
    most += len(r8.UNSWAPPED_TWO_BOX) + 2
    # A in registers: a raster-m twin of the two-box tiles of one or two 64-row consumers
    # (test_r8_a_in_registers_twins_the_two_box_tiles_ptxas_pipelines)
    # (and the three-box wide swaps, A in registers only: five tiles a width at most)
    regs = [c for c in r8.MENU if c.a_operand == "regs"]
    assert len(regs) <= 60 + 5 * len(r8.SWAP_WIDE_3), len(regs)
    assert len(r8.MENU) <= most + len(regs), "a curated menu, not a product"
    for config in r8.MENU:
        if config.tile_m == 256:  # W fp32 accumulators a consumer thread: no wider than 144
            assert config.wide_swap and config.tile_n <= r8.SWAP_WIDE_256, config.name
            assert config.stages(2) >= 3, config.name
        if config.tile_m == 192:  # W / 2 a thread of three consumers under CONSUMER_REGS_3
            assert config.wide_swap and config.tile_n <= r8.SWAP_WIDE_192, config.name
            assert config.num_consumers == 3 and config.stages(2) >= 3, config.name
        head, tail, tail2 = config.boxes
        assert all(w & (w - 1) == 0 and (w == 0 or w >= 8) for w in config.boxes), config.name
        assert head > tail > tail2 or (tail2 == 0 and (head > tail or tail == 0)), config.name
        if tail2:  # three boxes: wide swaps, A in registers
            assert config.wide_swap and config.a_operand == "regs", config.name
        # two boxes: wide swaps, and unswapped 96, 160 and 192, unsplit, priced by their own
        # efficiencies (``ueff:``), not the wide swaps' of their size, else tune-only
        if tail and not config.swap_ab:
            assert config.tile_n in r8.WIDE_UNSWAPPED and config.split_k == 1, config.name
            priced = (config.tile_m, config.tile_n) in r8.COST.unswapped_efficiency
            priced = priced and config.a_operand == "smem"  # A in registers: a variant too
            assert r8._variant(Problem(4096, 4096, 4096), config) != priced, config.name
        assert tail == 0 or config.wide_swap or not config.swap_ab, config.name


def test_r8_select_on_the_sweep():
    """What each ``sweep`` shape gets: decode shapes swap A and B with a 16-wide tile and split
    K only where few tiles stream a long K; a mid-size M may swap into a wide tile that fits it
    (M = 128 as one 128-wide column); prefill shapes get a 128-row cluster-2 tile 128 or
    256 wide (stream-K where the model prices the partial last wave above its tail); and no
    choice leaves more than 55 % of the SMs idle (decode is bound by streaming the weights from
    DRAM, which 64 CTAs already do at full speed: 64 unsplit 64x16 tiles beat 128 CTAs of
    split-K at 1x4096x4096)."""
    r8 = _r8()
    from harness.problems import expand

    sweep = expand(["sweep"])
    chosen = {p: r8.KERNEL.select(p) for p in sweep}
    for p, c in chosen.items():
        if p.m <= 16:
            assert c.swap_ab and c.tile_n == 16 and c.cluster == 1, (p.key, c.name)
        else:  # unswapped, or a mid-size M as the wide swap that fits it
            assert not c.swap_ab or swap_fits(p, c.tile_n, r8.SWAP_WIDE), (p.key, c.name)
        if p.m == 8192:  # prefill: two consumer warpgroups on a wide tile, B multicast
            assert (c.tile_m, c.cluster, c.split_k) == (128, 2, 1) and c.tile_n >= 128, c.name
        ctas = c.ctas(p)
        assert ctas > HOPPER.num_sms or ctas >= HOPPER.num_sms * 0.45 or p.m * p.n <= 512 * 512, (
            p.key,
            c.name,
        )
    # The bars' squares keep rung 7's tile and pair (stream-K's tail the model's to choose),
    # so no refit of the cost model can move them off it unnoticed.
    for s in (4096, 8192):
        c = r8.KERNEL.select(Problem(s, s, s))
        assert (c.tile_m, c.tile_n, c.cluster, c.split_k) == (128, 256, 2, 1), c.name
    assert chosen[Problem(1, 4096, 4096)].split_k == 1  # 64 tiles stream the weights
    # at K = 14336 too: 64 cover CTAs fill COVER_SPLIT_MAX_FILL of the SMs; 56 do not
    assert chosen[Problem(1, 4096, 14336)].split_k == 1
    assert chosen[Problem(16, 4096, 14336)].split_k == 1
    assert r8.KERNEL.select(Problem(16, 3584, 14336)).split_k > 1  # 28 tiles of 128 rows
    assert chosen[Problem(128, 4096, 14336)].ctas(Problem(128, 4096, 14336)) >= 128
    assert chosen[Problem(1, 57344, 8192)].split_k == 1  # 448 tiles: no need to split
    small = chosen[Problem(1024, 1024, 1024)]
    assert small.tile_m * small.tile_n < r8.RUNG7.tile_m * r8.RUNG7.tile_n
