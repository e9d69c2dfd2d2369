"""CuTeDSL (nvidia-cutlass-dsl) backend: the speedup chain on Hopper, the 2-CTA design on Blackwell.

Listing kernels imports neither the DSL nor torch: each :class:`KernelSpec` names its module.
"""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung

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
        "TMA loads on an mbarrier, one stage alternating with wgmma, one CTA per tile, TMA store",
    ),
    (
        "sm90",
        "r3_pipelined",
        Rung.PIPELINED,
        "sm_90a",
        "6-stage TMA ring prefetching ahead of wgmma, one warpgroup, one CTA per tile, TMA store",
    ),
    (
        "sm90",
        "r4_persistent",
        Rung.PERSISTENT,
        "sm_90a",
        "persistent pipelined TMA + wgmma in one warpgroup, L2-grouped tile order, TMA store",
    ),
    (
        "sm90",
        "r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_90a",
        "persistent wgmma, producer warpgroup (TMA) + consumer warpgroup, setmaxnreg, TMA store",
    ),
    (
        "sm90",
        "r6_cluster2",
        Rung.CLUSTER2,
        "sm_90a",
        "persistent warp-specialized 2-CTA B-multicast wgmma, 1 consumer warpgroup, TMA store",
    ),
    (
        "sm90",
        "r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_90a",
        "persistent warp-specialized 2-CTA B-multicast wgmma, 2 consumer warpgroups, TMA store",
    ),
    (
        "sm100",
        "r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_100a",
        "persistent tcgen05 (cta_group::1): TMA warp, MMA warp, epilogue warps, TMEM, TMA store",
    ),
    (
        "sm100",
        "r6_cluster2",
        Rung.CLUSTER2,
        "sm_100a",
        "persistent warp-specialized 2-CTA tcgen05 (cta_group::2, leader issues), TMEM, TMA store",
    ),
    (
        "sm100",
        "r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_100a",
        "2-CTA tcgen05, 512x256 pair tile, two TMEM accumulators sharing B, two epilogue groups",
    ),
)


def kernels() -> list[KernelSpec]:
    """Every CuTeDSL kernel, importable lazily."""
    return [
        KernelSpec(
            backend="cutedsl",
            name=f"{folder}/{module}",
            rung=rung,
            arch=arch,
            description=description,
            module=f"backends.cutedsl.{folder}.{module}",
            requires=_REQUIRES,
            pins=_PINS,
        )
        for folder, module, rung, arch, description in _KERNELS
    ]
