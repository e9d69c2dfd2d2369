"""CuTeDSL kernels compile without a GPU and their PTX holds the instructions of their rung.

Runs on CPU: ``cute.compile`` with ``--gpu-arch`` set to each kernel's arch, placeholder
pointers and a fake stream (``backends/cutedsl/_host.py``). Skipped when nvidia-cutlass-dsl is
not installed.
"""

from __future__ import annotations

import re

import pytest
from compile_checks import assert_listing_imports_no_dsl

from backends.cutedsl import kernels
from harness.protocol import Problem, Rung

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

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
    import subprocess
    import tempfile
    from pathlib import Path

    from harness.codegen import find_ptxas

    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas (CUDA toolkit) on this machine")
    spec = next(s for s in SPECS if s.name == "sm90/r7_multi_consumer")
    kernel = spec.load()
    problem = Problem(4096, 4096, 4096, dtype)
    for epilogue in ("overlap", "serial"):
        config = kernel.select(problem).with_overrides(f"epilogue={epilogue}")
        ptx = kernel.codegen(problem, spec.arch, config).ptx
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "k.ptx"
            src.write_text(ptx)
            log = subprocess.run(
                [ptxas, "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
                capture_output=True,
                text=True,
                check=True,
            ).stderr
        assert "C7514" not in log, f"{config.name} ({dtype}): wgmma serialized by ptxas"
