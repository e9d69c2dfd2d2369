"""Tilus (NVIDIA's tile-level Python DSL, ``tilus.Script``) backend.

Lists its kernels without importing Tilus or torch: each :class:`KernelSpec` names the rung
module, which is imported only when the harness loads that kernel. This list is the one place a
kernel's identity is written; a rung module takes its own with ``spec(__name__)``. Pinned:
``tilus==0.2.0`` with ``apache-tvm-ffi==0.1.12`` (>= 0.1.13 breaks Tilus 0.2.0's generated host
code); the 0.2.0 defects worked around are in ``_workarounds.py``.
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
        "one CTA per tile, TMA loads on an mbarrier, synchronous wgmma, TMA store, 128x128x64",
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
        "persistent WS 2-CTA cluster, each CTA multicasts half of B, 1 consumer warpgroup, "
        "256x128x64",
    ),
    (
        "sm90/r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_90a",
        "persistent WS 2-CTA cluster, each CTA multicasts half of B, 2 consumer warpgroups, "
        "256x256 cluster tile",
    ),
    (
        "sm100/r5_warp_specialized",
        Rung.WARP_SPECIALIZED,
        "sm_100a",
        "persistent WS: TMA warp, tcgen05 warp, TMEM double buffer, epilogue warpgroup",
    ),
    (
        "sm100/r6_cluster2",
        Rung.CLUSTER2,
        "sm_100a",
        "persistent WS 2-CTA cta_group::2 tcgen05 issued by CTA 0, cluster-mapped TMA barriers",
    ),
    (
        "sm100/r7_multi_consumer",
        Rung.MULTI_CONSUMER,
        "sm_100a",
        "2-CTA cta_group::2, cluster-launch-control scheduling, pipelined TMEM epilogue",
    ),
)


def kernels() -> list[KernelSpec]:
    """Every Tilus kernel, importable lazily (``requires=("tilus",)``)."""
    return rung_specs(
        "tilus",
        __name__,
        _KERNELS,
        requires=("tilus",),
        pins=("tilus==0.2.0", "apache-tvm-ffi==0.1.12"),
    )


def spec(module: str) -> KernelSpec:
    """The spec of the rung module ``module`` (its identity, written once above)."""
    return spec_of_module(kernels(), module)
