"""Toolchain behaviour the Gluon backend works around, each with where it bites.

1. **ptxas serializes register-A wgmmas in a worker partition under register reallocation.**
   Triton 3.9 lowers ``gl.warp_specialize`` with ``worker_num_regs`` to one function whose
   worker partitions sit in a dispatch loop (``brx.idx``) between ``setmaxnreg`` steps: the
   idle workers at 120 registers a thread, the producer warp at its 40. ptxas (``ptxas-
   blackwell`` 13.4 and CUDA 13.0's alike) then serializes every ``wgmma.mma_async`` whose A
   operand is in registers inside a worker partition — "(C7512) ... serialized due to
   insufficient register resources" and a ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` after each one —
   although the consumer's own partition is raised to 232; the same code in the default
   partition keeps its wgmmas in flight. Editing the PTX shows it is the lowest budget on the
   dispatch loop that counts: rung 8's 128x72 wide swap (two consumers, A in registers)
   pipelines once the producer's 40 is raised to 96, its 128x144 only once the 40 and the 120
   are both raised to 168, which the register pool of 384 threads cannot grant next to 232
   (``setmaxnreg.inc`` would wait forever). Without reallocation (``worker_num_regs`` left out:
   168 a thread everywhere) ptxas pipelines them, but with register sets of a whole k-step (16
   registers a thread) only up to 128x136; from 128x144 it serializes again ("(C7511) ...
   for the wgmma pipeline"), and 128x136 with stream-K spills. Worked around in rung 8's
   ``a_operand=regs``: two consumers run without reallocation and load A a whole k-step at a
   time only up to 128x136 (two boxes, no stream-K: 126-158 registers); wider, one 16-column
   K-slice at a time (``_mainloop_regs_slices``: 4 registers a set; 128x192 and stream-K
   pipeline at 140-163 registers, no spills). Narrow three-box tiles (128x88 .. 128x112) are
   serialized with a k-step's sets even at 86-98 registers (C7511) but pipeline with 32-column
   slices (118-130; stream-K 141-150), as narrow stream-K tiles do (119-168); rung 8 takes
   those up to ``REGS_DEEP_MAX`` = 136 columns. One consumer is the default partition and
   keeps a k-step's sets. Three-box tiles (three register-A wgmmas a slice) stay within it
   where ptxas allows: two consumers pipeline every width to 128x224 (118-162 registers), but
   with stream-K spill from 128x176 (4-68 bytes at 168 registers); one consumer with a
   k-step's sets is serialized again at 64x208 and 64x224 (C7512, although it holds 255
   registers; 16-column sets would pipeline them). Rung 8 leaves those out
   (``SWAP_WIDE_3_ONE``, ``SWAP_WIDE_3_SK``). Shared-memory A operands are not affected.
   Seen compiling offline (no GPU needed); not reported upstream yet.
"""
