from __future__ import annotations

import math

import pytest
from expectations import require_module

from harness.check import check_kernel, compare, tolerances, validate_operands
from harness.protocol import Problem

torch = require_module("torch", "the checks compare tensors")


def _ok(a, b, out):
    out.copy_(torch.matmul(a.float(), b.float().T).to(out.dtype))


def test_tolerance_scales_with_sqrt_k_and_dtype() -> None:
    a1, r1 = tolerances(Problem(8, 8, 1024))
    a4, r4 = tolerances(Problem(8, 8, 4096))
    assert a4 == pytest.approx(2 * a1)
    assert r1 == r4
    ab, rb = tolerances(Problem(8, 8, 1024, "bf16"))
    assert ab == pytest.approx(8 * a1) and rb == pytest.approx(8 * r1)


def test_correct_kernel_passes_on_fresh_inputs() -> None:
    for dtype in ("fp16", "bf16"):
        r = check_kernel(Problem(96, 80, 264, dtype), _ok, device="cpu", checks=2)
        assert r.passed, r.summary()
        assert r.checks == 2


def test_kernel_missing_one_k_slice_fails() -> None:
    def drops_last_k(a, b, out):
        out.copy_(torch.matmul(a[:, :-8].float(), b[:, :-8].float().T).to(out.dtype))

    r = check_kernel(Problem(64, 64, 1024), drops_last_k, device="cpu")
    assert not r.passed
    assert r.max_abs_err > r.atol


def test_unwritten_output_keeps_nan_poison_and_fails() -> None:
    def skips_a_tile(a, b, out):
        out[:, :-16].copy_(torch.matmul(a.float(), b[:-16].float().T).to(out.dtype))

    r = check_kernel(Problem(64, 64, 64), skips_a_tile, device="cpu")
    assert not r.passed
    assert r.nonfinite == 64 * 16


def test_nan_never_passes_even_where_reference_is_nan() -> None:
    p = Problem(4, 4, 8)
    ref = torch.zeros(4, 4, dtype=torch.float16)
    out = ref.clone()
    out[0, 0] = math.nan
    assert not compare(p, out, ref).passed
    ref[0, 0] = math.nan
    assert not compare(p, out, ref).passed


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a, b, d: (a.to(torch.bfloat16), b, d), "A: dtype"),
        (lambda a, b, d: (a, b[:, :-8].contiguous(), d), "B: shape"),
        (lambda a, b, d: (a, b, d.T.contiguous().T), "D: layout"),
        (lambda a, b, d: (a[:, :64].contiguous().T.contiguous().T, b, d), "A: shape"),
        (lambda a, b, d: (a, b, torch.empty(64, 65, dtype=d.dtype)[:, :64]), "D: layout"),
        (lambda a, b, d: ([1, 2], b, d), "A: expected a torch.Tensor"),
    ],
)
def test_validation_names_the_problem(mutate, message) -> None:
    p = Problem(64, 64, 128)
    a = torch.zeros(64, 128, dtype=torch.float16)
    b = torch.zeros(64, 128, dtype=torch.float16)
    d = torch.zeros(64, 64, dtype=torch.float16)
    validate_operands(p, a, b, d, device="cpu")
    with pytest.raises(ValueError, match=message):
        validate_operands(p, *mutate(a, b, d), device="cpu")


def test_validation_requires_cuda_tensors_and_k_alignment() -> None:
    p = Problem(8, 8, 16)
    t = [torch.zeros(8, 16, dtype=torch.float16)] * 2 + [torch.zeros(8, 8, dtype=torch.float16)]
    with pytest.raises(ValueError, match="A: expected a cuda tensor"):
        validate_operands(p, *t)
    p12 = Problem(8, 8, 12)
    t12 = [torch.zeros(8, 12, dtype=torch.float16)] * 2 + [torch.zeros(8, 8, dtype=torch.float16)]
    with pytest.raises(ValueError, match="multiple of 8"):
        validate_operands(p12, *t12, device="cpu")


def test_validation_rejects_misaligned_base() -> None:
    p = Problem(8, 8, 16)
    base = torch.zeros(8 * 16 + 1, dtype=torch.float16)
    a = base[1:].view(8, 16)
    b = torch.zeros(8, 16, dtype=torch.float16)
    d = torch.zeros(8, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="16-byte aligned"):
        validate_operands(p, a, b, d, device="cpu")


# -- the tolerances, pinned by hand -------------------------------------------------------------
def test_tolerances_by_hand() -> None:
    """u = 2^-11 (fp16), 2^-8 (bf16); atol = 8 u sqrt(K), rtol = 2 u. At K = 1024:
    fp16 8 * 2^-11 * 32 = 0.125 and 2^-10; bf16 8 * 2^-8 * 32 = 1.0 and 2^-7."""
    assert tolerances(Problem(64, 64, 1024)) == (0.125, 2.0**-10)
    assert tolerances(Problem(64, 64, 1024, "bf16")) == (1.0, 2.0**-7)
    assert tolerances(Problem(1, 1, 16)) == (8 * 2.0**-11 * 4, 2.0**-10)


def _fp32_reference(problem: Problem) -> torch.Tensor:
    gen = torch.Generator().manual_seed(22)
    a = torch.empty(problem.m, problem.k).uniform_(-1, 1, generator=gen)
    b = torch.empty(problem.n, problem.k).uniform_(-1, 1, generator=gen)
    return a @ b.T


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_relative_tolerance_alone(dtype: str) -> None:
    """D = ref * (1 + e): every element off by the same relative error e, so ||D - ref|| /
    ||ref|| = e exactly. Just above rtol fails, just below passes, while the absolute error
    stays within atol both times: the relative bound alone decides. (fp32 D: no rounding
    noise on top of e.)"""
    p = Problem(64, 64, 1024, dtype)
    atol, rtol = tolerances(p)
    ref = _fp32_reference(p)
    for factor, passes in ((1.02, False), (0.98, True)):
        r = compare(p, ref * (1 + factor * rtol), ref)
        assert r.rel_err == pytest.approx(factor * rtol, rel=1e-3)
        assert r.max_abs_err <= atol  # not the bound that decides
        assert r.passed is passes, (factor, r.summary())


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_absolute_tolerance_alone(dtype: str) -> None:
    """One element off by just over atol fails, by just under passes; the relative error of a
    single element stays far below rtol both times: the absolute bound alone decides."""
    p = Problem(64, 64, 1024, dtype)
    atol, rtol = tolerances(p)
    ref = _fp32_reference(p)
    for factor, passes in ((1.02, False), (0.98, True)):
        out = ref.clone()
        out[17, 5] += factor * atol
        r = compare(p, out, ref)
        assert r.max_abs_err == pytest.approx(factor * atol, rel=1e-4)
        assert r.rel_err < rtol / 2
        assert r.passed is passes, (factor, r.summary())


# -- what a launch may touch: D only ------------------------------------------------------------
def _past_the_end(count: int):
    def kernel(a, b, out):
        _ok(a, b, out)
        end = out.storage_offset() + out.numel()
        torch.as_strided(out, (count,), (1,), end).zero_()

    return kernel


def test_guard_band_catches_a_write_past_the_end_of_d() -> None:
    r = check_kernel(Problem(100, 72, 40), _past_the_end(3), device="cpu")
    assert r.within_tolerance  # D itself is right
    assert not r.passed
    assert r.faults == ("wrote 3 elements past the end of D",)
    assert r.failure() == "wrote 3 elements past the end of D"


def test_guard_band_catches_a_write_before_the_start_of_d() -> None:
    def before(a, b, out):
        _ok(a, b, out)
        torch.as_strided(out, (1,), (1,), out.storage_offset() - 1).fill_(1.0)

    r = check_kernel(Problem(64, 64, 64), before, device="cpu")
    assert not r.passed and r.faults == ("wrote 1 element before the start of D",)


def test_guard_band_is_bitwise() -> None:
    """A store of another NaN into the guard is a store too."""

    def other_nan(a, b, out):
        _ok(a, b, out)
        end = out.storage_offset() + out.numel()
        torch.as_strided(out.view(torch.int16), (1,), (1,), end).fill_(0x7FFF)

    r = check_kernel(Problem(64, 64, 64), other_nan, device="cpu")
    assert r.faults == ("wrote 1 element past the end of D",)


@pytest.mark.parametrize("operand", ["A", "B"])
def test_a_kernel_that_modifies_an_input_fails(operand: str) -> None:
    def scratch(a, b, out):
        _ok(a, b, out)
        (a if operand == "A" else b)[0].zero_()  # an operand used as scratch after the MMA

    r = check_kernel(Problem(64, 48, 32), scratch, device="cpu")
    assert r.within_tolerance and not r.passed
    assert r.faults == (
        f"modified {operand} (32 of {(64 if operand == 'A' else 48) * 32} elements)",
    )


def test_faults_and_wrong_values_are_both_named() -> None:
    def both(a, b, out):
        out.zero_()
        a[0, 0] = 5.0

    r = check_kernel(Problem(64, 64, 64), both, device="cpu", checks=2)
    assert r.faults == ("modified A (1 of 4096 elements)",)
    assert r.failure().startswith("modified A (1 of 4096 elements); result differs from")


@pytest.mark.parametrize(
    ("m", "n", "dtype"), [(1, 1, "fp16"), (100, 72, "bf16"), (3, 3001, "fp16")]
)
def test_guarded_d_is_what_kernels_expect(m: int, n: int, dtype: str) -> None:
    """D is (M, N) contiguous row-major, its base as aligned as its allocation's (guards are
    whole 256-byte units), at least a row of D and 4 KiB of NaN on each side."""
    from harness.check import GuardedOutput, guard_elements

    p = Problem(m, n, 64, dtype)
    g = GuardedOutput(p, "cpu")
    assert g.d.shape == (m, n) and g.d.is_contiguous() and g.d.stride() == (n, 1)
    assert (g.d.data_ptr() - g.buffer.data_ptr()) % 256 == 0
    assert g.guard == guard_elements(p) >= max(n, 2048) and g.guard * 2 % 256 == 0
    assert g.buffer.numel() == m * n + 2 * g.guard
    assert torch.isnan(g.buffer.float()).all()
    validate_operands(p, *[torch.zeros(r, 64, dtype=g.d.dtype) for r in (m, n)], g.d, "cpu")
    g.d.zero_()
    assert g.faults() == []
    g.buffer[-1] = 0.0
    g.buffer[0] = 0.0
    assert g.faults() == [
        "wrote 1 element before the start of D",
        "wrote 1 element past the end of D",
    ]
    g.poison()
    assert g.faults() == [] and torch.isnan(g.d.float()).all()
