"""Toolchain behaviour the Gluon backend works around, each with where it bites.

1. **ptxas serializes register-A wgmmas in a worker partition under register reallocation.**
   Triton 3.9 lowers ``gl.warp_specialize`` with ``worker_num_regs`` to one function whose
   worker partitions sit in a dispatch loop (``brx.idx``) between ``setmaxnreg`` steps: the
   idle workers at 120 registers a thread, the producer warp at its 40. ptxas (``ptxas-
   blackwell`` 13.4 and CUDA 13.0's alike) then serializes every ``wgmma.mma_async`` whose A
   operand is in registers inside a worker partition — "(C7512) ... serialized due to
   insufficient register resources" and a ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` after each one —
   although the consumer's own partition is raised to 232; the same code in the default
   partition keeps one k-step in flight. Editing the PTX shows it is the lowest budget on
   the loop that counts: rung 8's 128x72 wide swap (two consumers, A in registers) pipelines
   once the producer's 40 is raised to 96, and its 128x144 only once the 40 and the 120 are
   both raised to 168, which the register pool of 384 threads cannot grant next to 232
   (setmaxnreg.inc would wait forever). Without reallocation (``worker_num_regs`` left out:
   168 a thread everywhere) ptxas pipelines them up to 128x136 (160 registers used); 128x144
   and wider are serialized again (C7511, "for the wgmma pipeline"). So rung 8's
   ``a_operand=regs`` runs two consumers without reallocation and only up to
   :data:`REGS_TWO_CONSUMERS_MAX_N` wide; one consumer (the default partition) at any width.
   Shared-memory A operands are not affected. Seen compiling offline (no GPU needed); not
   reported upstream yet.
"""

from __future__ import annotations

__all__ = ["REGS_TWO_CONSUMERS_MAX_N"]

#: The widest two-box tile whose two consumer warpgroups keep register-A wgmmas pipelined
#: (defect 1): at 168 registers a thread, 128x136 (128 + 8 columns) assembles with one k-step in
#: flight, 128x144 does not.
REGS_TWO_CONSUMERS_MAX_N = 136
