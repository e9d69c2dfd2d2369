"""The two ``tilus.Class`` helpers the Blackwell Tilus rungs (5-7) share.

:class:`Pipeline` is a ring of ``num_stages`` slots passed from a producer role to a consumer
role: per slot a ``full`` mbarrier (the producer filled it) and an ``empty`` one (the consumers
drained it), and the (stage, phase) each side stands at. The rungs keep three: ``ab`` (TMA warp
-> MMA warp, the A/B shared-memory stages), ``acc`` (MMA warp -> epilogue, the TMEM
accumulators) and, in rung 7, ``clc`` (scheduler -> every role, the cluster-launch-control
responses). Who arrives on which barrier, and how many times, is the rung's business: it is
written in each rung's barrier table and at the arrive itself.

Starting phases: a barrier starts in phase 0 with nothing arrived. The consumer waits for phase
0 to complete (the first fill); the producer waits on ``empty`` for the phase *before* it (1),
which counts as complete, so its first pass over the ring finds every slot free.

Waits are CTA-scope acquires, also where the peer CTA arrives: every payload these barriers
guard arrives through the async proxy (TMA bytes, ``tcgen05`` completion, the CLC response),
whose complete-tx makes it visible to the waiting thread; no role publishes generic-proxy data
through them. (A cluster-scope acquire costs an L1 invalidate, ``CCTL.IVALL``, per wait.)

:class:`TmemAccumulators` holds the TMEM accumulator buffers. It exists because Tilus 0.2.0's
inlined methods take ``GlobalTensor``, ``SharedTensor``, ``RegisterTensor``, scalars and
``tilus.Class`` objects as parameters but not a ``TMemoryTensor``; wrapped in a class, the
buffers reach the MMA and epilogue role methods by reference.
"""

import tilus
from tilus import float32, int32, uint32


class Pipeline(tilus.Class):
    """A ring of ``num_stages`` slots guarded by ``full[s]`` / ``empty[s]`` mbarriers.

    ``full_count`` / ``empty_count`` are the barriers' arrival counts.
    """

    def __init__(self, num_stages: int, full_count: int, empty_count: int):
        self.num_stages: int = num_stages
        self.full = self.mbarrier.alloc([full_count for _ in range(num_stages)])
        self.empty = self.mbarrier.alloc([empty_count for _ in range(num_stages)])
        self.producer_stage: int32 = 0
        self.producer_phase: uint32 = self.mbarrier.producer_initial_phase
        self.consumer_stage: int32 = 0
        self.consumer_phase: uint32 = self.mbarrier.consumer_initial_phase

    def producer_acquire(self):
        """Wait until the producer's slot is free."""
        self.mbarrier.wait(self.empty[self.producer_stage], phase=self.producer_phase)

    def producer_advance(self):
        self.producer_stage = (self.producer_stage + 1) % self.num_stages
        self.producer_phase = self.producer_phase ^ (self.producer_stage == 0)

    def consumer_acquire(self):
        """Wait until the consumer's slot is full."""
        self.mbarrier.wait(self.full[self.consumer_stage], phase=self.consumer_phase)

    def consumer_advance(self):
        self.consumer_stage = (self.consumer_stage + 1) % self.num_stages
        self.consumer_phase = self.consumer_phase ^ (self.consumer_stage == 0)


class TmemAccumulators(tilus.Class):
    """``num_buffers`` fp32 accumulators of ``rows x cols`` in tensor memory (``tmem[b]``).

    Allocated by the CTA's first warp when constructed (``tcgen05.alloc``; with ``cta_group=2``
    the two CTAs of the pair allocate together); the rung deallocates ``tmem`` before exit.
    """

    def __init__(self, num_buffers: int, rows: int, cols: int, cta_group: int):
        self.tmem = self.tcgen05.alloc(
            dtype=float32, shape=[num_buffers, rows, cols], cta_group=cta_group
        )
