"""Operand tensors over raw pointers, shared by every CuTeDSL rung (sm_90a and sm_100a).

The compiled kernels take pointers and runtime ``m, n, k`` (``_host.py`` says why) and rebuild
row-major tensors inside the jit function. The unit stride is static; the row pitch of A and B
(``k``) is a multiple of 8 elements, 16 bytes, which TMA needs; so is D's (``n``) when D is
written by TMA store, which is why the caller says whether it is.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


def operand_tensors(
    a_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    d_ptr: cute.Pointer,
    m: cutlass.Int32,
    n: cutlass.Int32,
    k: cutlass.Int32,
    d_rows_aligned: bool,
) -> tuple[cute.Tensor, cute.Tensor, cute.Tensor]:
    """A (m, k), B (n, k) and D (m, n), all row-major ("TN": D = A @ B.T)."""
    k = cute.assume(k, divby=8)
    ld_d = cute.assume(n, divby=8) if d_rows_aligned else n
    mA = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
    mB = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(k, 1)))
    mD = cute.make_tensor(d_ptr, cute.make_layout((m, n), stride=(ld_d, 1)))
    return mA, mB, mD
