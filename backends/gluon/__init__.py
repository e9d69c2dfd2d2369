"""Gluon (Triton's tile-level DSL, ``triton.experimental.gluon``) backend.

Lists its kernels without importing Triton or torch: each :class:`KernelSpec` names the rung
module, which is imported only when the harness loads that kernel. This list is the one place a
kernel's identity is written; a rung module takes its own with ``spec(__name__)``. Pinned:
``triton==3.9.0`` (see README.md for why 3.9.0 rather than 3.8.0).
"""

from __future__ import annotations

from harness.protocol import KernelSpec, Rung, rung_specs, spec_of_module

#: (folder/module, rung, arch, one-line description) of every kernel that exists and compiles.
_KERNELS: tuple[tuple[str, Rung, str, str], ...] = (
    (
        "sm90/r1_tiled",
        Rung.TILED,
        "sm_90a",
        "one CTA per tile, thread copies global->shared, synchronous wgmma, 128x128x64",
    ),
    (
        "sm90/r2_tma",
        Rung.TMA,
        "sm_90a",
        "one CTA per tile, TMA loads on an mbarrier, synchronous wgmma, 128x128x64",
    ),
    (
        "sm90/r3_pipelined",
        Rung.PIPELINED,
        "sm_90a",
        "one CTA per tile, 4-stage TMA ring prefetching ahead, async wgmma, 128x128x64",
    ),
    (
        "sm90/r4_persistent",
        Rung.PERSISTENT,
        "sm_90a",
        "persistent, L2-grouped tile order, 4-stage TMA ring, 128x128x64",
    ),
    (
        "sm90/r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_90a",
        "persistent, TMA producer warp + 1 wgmma consumer warpgroup, setmaxnreg, 128x128x64, "
        "4 stages",
    ),
    (
        "sm90/r6_cluster2",
        Rung.CLUSTER2,
        "sm_90a",
        "persistent WS 2-CTA cluster, B multicast, 1 consumer warpgroup, 256x128x64",
    ),
    (
        "sm90/r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_90a",
        "persistent WS 2-CTA cluster, B multicast, 2 consumer warpgroups, 256x256 cluster tile",
    ),
    (
        "sm90/r8_shape_adaptive",
        Rung.SHAPE_ADAPTIVE,
        "sm_90a",
        "rung 7's kernel family chosen per problem: 64/128 x 16..256 tiles (256 x 72..144 "
        "swapped), cluster 1/2, swap-AB for small M, deterministic split-K or stream-K "
        "(fp32 partials + reduce)",
    ),
    (
        "sm100/r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_100a",
        "persistent WS: TMA warp, tcgen05 warp, TMEM double buffer, epilogue, 128x256x64, 3 stages",
    ),
    (
        "sm100/r6_cluster2",
        Rung.CLUSTER2,
        "sm_100a",
        "persistent WS 2-CTA cta_group::2 tcgen05, B split across the pair, 256x256x64, 4 stages",
    ),
    (
        "sm100/r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_100a",
        "WS 2-CTA cta_group::2, 2 TMEM accumulators share B, 2 epilogues, 512x128x64, "
        "3 stages; static or cluster-launch-control scheduling (config)",
    ),
)


def kernels() -> list[KernelSpec]:
    """Every Gluon kernel, importable lazily (``requires=("triton",)``)."""
    return rung_specs("gluon", __name__, _KERNELS, requires=("triton",), pins=("triton==3.9.0",))


def spec(module: str) -> KernelSpec:
    """The spec of the rung module ``module`` (its identity, written once above)."""
    return spec_of_module(kernels(), module)
