"""Ring-buffer bookkeeping shared by the pipelined Gluon rungs (3 onwards).

Rung 3 introduces a ring of ``NUM_STAGES`` shared-memory slots, each with an mbarrier that
flips phase every time the slot is filled (or freed). The (slot, phase) pair advances together:
slot ``s`` wraps to 0 after ``NUM_STAGES - 1`` and the phase flips on the wrap. ``Counter``
packages that arithmetic once; ``next()`` returns a new value (it is ``@must_use_result`` so a
forgotten reassignment is a compile error rather than a silent hang).

Starting phases: a *consumer* of a "full" barrier starts at phase 0 (it waits for the first
completion). A *producer* waiting on an "empty" barrier starts at phase 1: a freshly initialised
mbarrier is in phase 0, and waiting for parity 1 returns at once ("the previous phase is
complete"), which is exactly "every slot starts empty".
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.aggregate
class Counter:
    index: gl.tensor
    phase: gl.tensor
    num_stages: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, index, phase, num_stages):
        self.index = index
        self.phase = phase
        self.num_stages = gl.constexpr(num_stages)

    @gluon.jit
    def create(phase, num_stages: gl.constexpr):
        return Counter(gl.to_tensor(0), gl.to_tensor(phase), num_stages)

    @gluon.must_use_result
    @gluon.jit
    def next(self):
        incr = self.index + 1
        wrap = incr == self.num_stages
        return Counter(
            gl.where(wrap, 0, incr), gl.where(wrap, self.phase ^ 1, self.phase), self.num_stages
        )
