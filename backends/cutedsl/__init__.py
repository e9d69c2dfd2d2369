"""CuTeDSL (nvidia-cutlass-dsl) backend: the speedup chain on Hopper, the 2-CTA design on Blackwell.

Listing kernels imports neither the DSL nor torch: each :class:`KernelSpec` names its module.
This list is the one place a kernel's identity is written; a rung module takes its own with
``spec(__name__)``.
"""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung, rung_specs, spec_of_module

_REQUIRES = ("cutlass", "cuda.bindings")
#: The release these kernels are written for (pyproject's `cutedsl` extra pins the same).
_PINS = ("nvidia-cutlass-dsl==4.8.1",)

#: (arch folder, module, rung, arch, one-line description)
_KERNELS: tuple[tuple[str, str, Rung, str, str], ...] = (
    (
        "sm90",
        "r1_tiled",
        Rung.TILED,
        "sm_90a",
        "one CTA per 128x128 tile, threads copy global->shared, wgmma, no overlap",
    ),
    (
        "sm90",
        "r2_tma",
        Rung.TMA,
        "sm_90a",
        "TMA loads on an mbarrier, one stage alternating with wgmma, one CTA per 128x128x64 "
        "tile, TMA-store epilogue",
    ),
    (
        "sm90",
        "r3_pipelined",
        Rung.PIPELINED,
        "sm_90a",
        "6-stage TMA ring prefetching ahead of wgmma, one warpgroup, one CTA per 128x128x64 "
        "tile, TMA-store epilogue",
    ),
    (
        "sm90",
        "r4_persistent",
        Rung.PERSISTENT,
        "sm_90a",
        "persistent pipelined TMA + wgmma in one warpgroup, L2-grouped tile order, 128x128x64, "
        "6 stages, TMA-store epilogue",
    ),
    (
        "sm90",
        "r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_90a",
        "persistent wgmma, producer warpgroup (TMA) + 1 consumer warpgroup, setmaxnreg, "
        "128x128x64, 6 stages, TMA-store epilogue",
    ),
    (
        "sm90",
        "r6_cluster2",
        Rung.CLUSTER2,
        "sm_90a",
        "persistent warp-specialized 2-CTA B-multicast wgmma, 1 consumer warpgroup, 128x128x64, "
        "6 stages, TMA-store epilogue",
    ),
    (
        "sm90",
        "r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_90a",
        "persistent warp-specialized 2-CTA B-multicast wgmma, 2 consumer warpgroups, 128x256x64, "
        "4 stages, TMA-store epilogue",
    ),
    (
        "sm90",
        "r8_shape_adaptive",
        Rung.SHAPE_ADAPTIVE,
        "sm_90a",
        "rung 7's kernel configured per problem: tile 64/128 x 16-256, cluster 1 or 2, swap-AB "
        "for small M, deterministic split-K or stream-K (fp32 partials + reduce kernel)",
    ),
    (
        "sm100",
        "r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_100a",
        "persistent warp-specialized tcgen05 (cta_group::1): TMA warp, MMA warp, 4 epilogue "
        "warps, 128x256x64, 4 stages, TMEM accumulator, TMA-store epilogue",
    ),
    (
        "sm100",
        "r6_cluster2",
        Rung.CLUSTER2,
        "sm_100a",
        "persistent warp-specialized 2-CTA tcgen05 (cta_group::2, leader issues), 256x256x64 "
        "pair tile, 6 stages, TMEM accumulator, TMA-store epilogue",
    ),
    (
        "sm100",
        "r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_100a",
        "persistent warp-specialized 2-CTA tcgen05, 512x256x64 pair tile, 4 stages, two TMEM "
        "accumulators sharing staged B, two epilogue warpgroups, TMA-store epilogue",
    ),
)


def kernels() -> list[KernelSpec]:
    """Every CuTeDSL kernel, importable lazily."""
    return rung_specs(
        "cutedsl",
        __name__,
        [(f"{folder}/{module}", *rest) for folder, module, *rest in _KERNELS],
        requires=_REQUIRES,
        pins=_PINS,
    )


def spec(module: str) -> KernelSpec:
    """The spec of the rung module ``module`` (its identity, written once above)."""
    return spec_of_module(kernels(), module)
