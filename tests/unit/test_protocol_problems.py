from __future__ import annotations

import dataclasses

import pytest
from expectations import require_module

from harness.problems import SUITES, expand
from harness.protocol import Kernel, KernelSpec, Problem, Rung


def test_rung_names_and_order_match_the_design_table() -> None:
    assert [r.label for r in Rung] == [
        "cublas",
        "tiled",
        "tma",
        "pipelined",
        "persistent",
        "warp_specialized",
        "cluster2",
        "multi_consumer",
        "shape_adaptive",
    ]
    assert [int(r) for r in Rung] == list(range(9))
    assert Rung.parse("5") is Rung.WARP_SPECIALIZED
    assert Rung.parse("cluster2") is Rung.CLUSTER2
    with pytest.raises(ValueError, match="unknown rung"):
        Rung.parse("fastest")


def test_problem_key_roundtrip_and_validation() -> None:
    p = Problem(3000, 5000, 1000, "bf16")
    assert p.key == "3000x5000x1000-bf16"
    assert Problem.parse(p.key) == p
    assert Problem.parse("64x32x16") == Problem(64, 32, 16, "fp16")
    assert p.flops == 2 * 3000 * 5000 * 1000
    with pytest.raises(ValueError, match="dtype"):
        Problem(1, 1, 8, "fp8")
    with pytest.raises(ValueError, match="positive"):
        Problem(0, 1, 8)
    with pytest.raises(ValueError, match="MxNxK"):
        Problem.parse("4096-fp16")


def test_suites_cover_the_design_shapes() -> None:
    square = {m for m, n, k in SUITES["square"][1]}
    assert square == {1024, 2048, 4096, 8192, 16384}
    assert {(m, n) for m, n, _ in SUITES["ksweep"][1]} == {(8192, 8192)}
    assert [k for *_, k in SUITES["ksweep"][1]] == [512, 1024, 2048, 4096, 8192, 16384]
    ragged = SUITES["ragged"][1]
    assert (3000, 5000, 1000) in ragged
    assert any(m == 1 for m, _, _ in ragged) and any(n == 1 for _, n, _ in ragged)
    assert any(m % 128 and n % 256 for m, n, _ in ragged)
    for _, shapes in SUITES.values():
        assert all(k % 8 == 0 for *_, k in shapes)
    sweep = SUITES["sweep"][1]
    projections = {
        (6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),  # Llama-3-8B
        (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672),  # Llama-3-70B
    }  # fmt: skip
    assert {(m, n, k) for m in (1, 16, 128, 1024, 8192) for n, k in projections} <= set(sweep)
    assert {(s, s, s) for s in (512, 1024, 2048)} <= set(sweep)
    assert len(sweep) == len(set(sweep)) == 43


def test_expand_applies_dtypes_dedups_and_rejects_unknown() -> None:
    ps = expand(["smoke", "smoke", "256x256x64-bf16"], ["fp16", "bf16"])
    assert len(ps) == 2 * len(SUITES["smoke"][1]) + 1
    assert len(set(ps)) == len(ps)
    assert {p.dtype for p in ps} == {"fp16", "bf16"}
    with pytest.raises(ValueError, match="unknown suite"):
        expand(["nope"])
    with pytest.raises(ValueError, match="unknown dtype"):
        expand(["smoke"], ["fp32"])


def test_kernel_spec_load_checks_identity() -> None:
    from backends.cublas import kernels

    (spec,) = kernels()
    assert spec.id == "cublas/torch_matmul"
    assert isinstance(spec.load(), Kernel)
    # A spec whose identity differs from what its kernel reports is refused on load.
    for field, value in (("name", "other"), ("description", "something else")):
        liar = dataclasses.replace(spec, **{field: value})
        with pytest.raises(TypeError, match=field):
            liar.load()
    with pytest.raises(ValueError, match="arch"):
        KernelSpec("x", "y", Rung.TILED, "sm_80", "d", module="m")
    missing = KernelSpec(
        "x", "y", Rung.TILED, "sm_90a", "d", module="m", requires=("surely_not_a_module_xyz",)
    )
    assert missing.missing_requirements() == ["surely_not_a_module_xyz"]


def test_pins_are_checked_against_installed_versions() -> None:
    import importlib.metadata

    pytest_version = importlib.metadata.version("pytest")

    def pinned(*pins: str) -> KernelSpec:
        return KernelSpec("x", "y", Rung.TILED, "sm_90a", "d", module="m", pins=pins)

    ok = pinned(f"pytest=={pytest_version}", "pytest>=1.0")
    assert ok.missing_requirements() == []
    old = pinned("pytest>=999", "surely-not-a-dist==1.0")
    assert old.missing_requirements() == [
        f"pytest>=999 (found {pytest_version})",
        "surely-not-a-dist==1.0",
    ]


def test_tma_launch_pads_d_only_for_unaligned_rows_and_warms_up() -> None:
    torch = require_module("torch", "tensors of a problem")
    from harness.protocol import tma_launch

    seen: list[tuple[int, int]] = []

    def run(a, b, d):  # a kernel writing N columns of a D whose rows may be longer
        seen.append(tuple(d.shape))
        d[:, : b.shape[0]] = (a.float() @ b.float().T).to(d.dtype)

    ragged = Problem(5, 13, 8, "bf16")  # 13 bf16 = 26 bytes per row: padded to 16 columns
    launch = tma_launch(ragged, run, "cpu")
    assert seen == [(5, 16)]  # the warm-up launch on zeros, into the scratch D
    a, b = torch.randn(5, 8).bfloat16(), torch.randn(13, 8).bfloat16()
    out = torch.full((5, 13), float("nan"), dtype=torch.bfloat16)
    launch(a, b, out)
    assert torch.equal(out, (a.float() @ b.float().T).bfloat16())
    assert tma_launch(Problem(5, 16, 8), run, "cpu") and seen[-1] == (5, 16)  # aligned: no pad
    tma_launch(ragged, run, "cpu", pad_d=False)
    assert seen[-1] == (5, 13)


def test_spec_kernel_compile_checks_then_builds_once() -> None:
    from harness.protocol import SpecKernel

    spec = KernelSpec("toy", "sm90/r7_x", Rung.MULTI_CONSUMER, "sm_90a", "toy", "toy.mod")
    built: list[Problem] = []

    class Toy(SpecKernel):
        def __init__(self) -> None:
            self.spec = spec

        def _launcher(self, problem, config):
            built.append(problem)
            return lambda a, b, out: None

        def codegen(self, problem, arch, config=None):
            raise NotImplementedError

    toy = Toy()
    ok = Problem(64, 64, 64)
    assert toy.compile(ok) is toy.compile(ok) and built == [ok]  # built once, then cached
    with pytest.raises(ValueError, match=r"toy/sm90/r7_x cannot run 64x64x12-fp16: K = 12"):
        toy.compile(Problem(64, 64, 12))
    assert built == [ok]  # a refused problem builds nothing
