"""Gluon · sm_90a · rung 8 ``shape_adaptive`` — rung 7's kernel family, configured per problem.

One warp-specialized TMA + wgmma kernel whose tile, cluster, operand order and K
split are constexprs chosen per problem from a declared menu (``R8Config``), so that decode
(M = 1) to prefill (M = 8192) shapes all fill the 132 SMs. At large M x N the heuristic picks
exactly rung 7's shape (128x256 per CTA, two consumer warpgroups, 2-CTA cluster, B multicast).

Changes from rung 7 (``multi_consumer``):
  * the kernel is a family: ``NUM_CONSUMERS`` 1, 2 or 3 (a 64-, 128- or 192-row CTA tile of
    ``wgmma m64nNk16``, the third consumer of a 192-row wide swap under a smaller register
    share, ``CONSUMER_REGS_3``; a wide swap may also have 256 rows, two consumers of 128 rows
    whose accumulators are two m64 blocks each), a tile width of 16..256 (powers of two: Triton's
    block shapes must be; a wide swap's may be the sum of two), ``CLUSTER`` 1 (no multicast,
    no pair barrier) or 2 (rung 7's B multicast); the stage count is the most that fits the
    shared memory;
  * ``swap_ab`` (small M): the kernel runs on (B, A), so N fills the 64-row wgmma side and M
    the narrow tile width; the epilogue permutes the accumulator in registers and stores
    the transposed tile into shared memory, and one TMA store writes D (a [tile_n, 64] box,
    [tile_n, 128] at 256 rows);
  * wide swaps (mid-size M, ``SWAP_WIDE``: 72..256 columns): M's share of up to eight column
    tiles on the wgmma N side. Triton's blocks and TMA boxes are powers of two, so a width
    that is not one is two boxes (``R8Config.boxes``: 144 = 128 + 16) — two B rings filled
    under one ``ab_full``, two wgmmas and accumulators per k-step (one step in flight is two
    commit groups), two D boxes stored; ``TAIL_N`` > 0 compiles that in. Their ``raster`` m
    walks the column tiles of one block of rows first (``ROWS_FIRST`` off), raster n the rows;
  * unswapped two-box tiles (``WIDE_UNSWAPPED``: 160 = 128 + 32, 192 = 128 + 64 columns of
    N), the widths the CuTeDSL rung 8 and cuBLAS run where N is 5 or 3 times a power of two
    (5120, 10240, 6144, 3072): the same two rings and wgmmas, D leaving as two untransposed
    boxes side by side; priced by their own efficiencies (``COST``'s ``ueff:``, fitted to
    their timings: the wide swaps of the same size run at another rate);
  * ``a_operand=regs`` (a variant until an A/B puts its tile family in ``REGS_PICKED``): a
    two-box tile's consumer loads its A into registers (``ldmatrix``) once for both boxes'
    wgmmas, which otherwise each read it from shared memory; two register sets in turn keep
    one k-step in flight (``_mainloop_regs``), or with two consumers, without register
    reallocation, a k-step up to ``REGS_DEEP_MAX`` columns wide, else one K-slice of 32
    columns (three boxes and stream-K up to it) or 16 (wider) (``_mainloop_regs_slices``;
    ptxas: ``backends.gluon._workarounds``); the heuristic picks it for the
    ``REGS_PICKED`` families;
  * three-box wide swaps (``SWAP_WIDE_3``: 152 = 128 + 16 + 8, ...; A in registers only, so
    the third box costs only its B): a third B ring, wgmma, accumulator and D box;
    ``TAIL2_N`` > 0 compiles that in;
  * ``split_k`` (few tiles, long K): work units run over (split, tile); split s reduces the
    k-tiles ``[s*kt//S, (s+1)*kt//S)`` and TMA-stores fp32 partials into its own slice of a
    workspace allocated at compile time; ``splitk_reduce_kernel`` then sums the S slices in
    order and writes D once per element (deterministic; nothing is zeroed: every element the
    reduction reads was written by exactly one tile of its split);
  * ``stream_k`` (a partial last wave): the programs (one per SM or cluster) take whole tiles
    for the full waves, then the first of them share the tail tiles' k-iterations evenly,
    as many as give each at least ``SK_MIN_ITERS`` (``harness.tile_cost.StreamK``, the
    reference this kernel implements): a program's share is at most one tile, so it runs at
    most two *segments*; each stores its fp32 partial from
    registers into its own workspace slot (no shared memory: the D epilogue's buffers stay
    fp16-sized), an empty segment is skipped by both roles, and ``streamk_reduce_kernel``
    adds each tail tile's partials in program order and writes D (deterministic). The
    128-row wide swaps take it too (their tail is N's row tiles): a two-box tile's partial is
    its two accumulators side by side, and the reduce writes D^T down its columns;
  * the grid is persistent (#SMs / CLUSTER programs striding over work units) when the tiles
    exceed one wave or with stream-K; otherwise one program per tile and no tile loop
    (``PERSISTENT=False``).

Config knobs: ``R8Config`` is ``harness.tile_cost.GemmConfig``, the vocabulary every rung 8
shares — ``tile_m`` (64 | 128 | 192 rows per CTA = 1 | 2 | 3 consumer warpgroups; 256: two
of 128 rows), ``tile_n``, ``cluster``, ``swap_ab``, ``split_k``, ``stream_k``, ``raster``
("m": the tile order walks M within a group — a narrow swapped cover has one column, so the
order is the same either way; "n" only for the wide swaps, see above), ``group``; and this
kernel's own ``a_operand`` (above). The menu is curated (``MENU`` below); the heuristic is
the shared cost model's cheapest allowed entry.
Derived per problem, not knobs: the stage count (from the tile family) and persistence (from
the problem's tile count).

Shared memory per CTA (2-byte operands, BLOCK_K = 64; budget 224 KiB + barriers < 227 KiB):
  stage = (tile_m + tile_n) x 64 x 2;  epilogue = tile_m x tile_n x (2, or 4 for split-K),
  except the one-CTA 256-wide tiles, which leave in 64-column boxes through two buffers per
  consumer (tile_m x 64 x 2 x 2: one more ring stage than a whole-tile buffer allows); a
  stream-K config has its unsplit tile's ring (the partials bypass shared memory);
  stages = min(8, or 12 swapped, (224 KiB - epilogue) // stage):

  | tile (rows x cols) | stage | epilogue fp16 / fp32 | stages fp16 / fp32 |
  | --- | --- | --- | --- |
  | 128x256 cluster 2 (rung 7) | 48 KiB | 64 KiB / - | 3 / - |
  | 128x256 cluster 1 | 48 KiB | 32 KiB / - | 4 / - |
  | 128x128 | 32 KiB | 32 / 64 KiB | 6 / 5 |
  | 128x64 | 24 KiB | 16 / 32 KiB | 8 / 8 |
  | 64x256 | 40 KiB | 16 KiB / - | 5 / - |
  | 128x192, 128x160 (two boxes) | 40, 36 KiB | 48, 40 KiB / - | 4, 5 / - |
  | 64x160 (two boxes) | 28 KiB | 20 KiB / - | 7 / - |
  | 64x128, 64x64 | 24, 16 KiB | 16, 8 / 32, 16 KiB | 8 / 8 |
  | 128x32, 128x16 | 20, 18 KiB | 8, 4 / 16, 8 KiB | 8 / 8 |
  | swap 128x16, x32, x64 | 18, 20, 24 KiB | 4, 8, 16 / 8, 16, 32 KiB | 12, 10, 8 / 12, 10, 8 |
  | swap 64x16, 64x32, 64x64 | 10, 12, 16 KiB | 2, 4, 8 / 4, 8, 16 KiB | 12 / 12 |
  | wide swap 128x72 .. 128x256 | 25 .. 48 KiB | 18 .. 64 KiB / - | 8 .. 3 / - |
  | wide swap 64x72 .. 64x256 | 17 .. 40 KiB | 9 .. 32 KiB / - | 12 .. 4 / - |
  | wide swap 256x72 .. 256x144 | 41 .. 50 KiB | 36 .. 72 KiB / - | 4 .. 3 / - |
  | wide swap 192x72 .. 192x160 | 33 .. 44 KiB | 27 .. 60 KiB / - | 5 .. 3 / - |
  | three-box swap 128x88 .. 128x224 | 27 .. 44 KiB | 22 .. 56 KiB / - | 7 .. 3 / - |

Barriers (per stage s; the pair barrier exists only with ``CLUSTER = 2``):

  | name | count | arrives | waits | means |
  | --- | --- | --- | --- | --- |
  | ``ab_full`` | 1 + tx bytes | producer expect; TMA | every consumer | A + B boxes landed |
  | ``ab_empty`` | NUM_CONSUMERS | each consumer (1 elected) | own producer | stage s free |
  | ``b_empty`` | NUM_CONSUMERS x 2 CTAs | all consumers, remote | lead producer | B free in both |

As in rung 7, the lead CTA issues the whole multicast B tile, so only its producer needs the
pair barrier; the compiler fences the barrier inits cluster-wide and adds the exit barrier.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from backends.gluon import spec
from backends.gluon._host import (
    DEFAULT_NUM_SMS,
    Artifacts,
    Desc,
    GluonKernel,
    Plan,
    Ptr,
    bind,
    compile_offline,
)
from backends.gluon._pipeline import Counter
from backends.gluon._schedule import grouped_tile
from harness.protocol import (
    ConfigSpace,
    KernelConfig,
    LaunchFn,
    Problem,
    cdiv,
    quiet_knob,
    tma_launch,
)
from harness.tile_cost import (
    HOPPER,
    SK_MIN_ITERS,
    GemmConfig,
    StreamK,
    TileCostModel,
    cheapest,
    explain,
    heuristic_allows,
    heuristic_raster,
    one_wave_rows,
    ranked,
    unsplit_twin,
    whole_wave_swap,
    whole_wave_transpose,
)

# -- constants --------------------------------------------------------------------------------
SUB_M = 64  # rows of one wgmma (m64): a consumer warpgroup's rows, or half of a 256-row tile's
MAX_CONSUMERS = 3  # consumer warpgroups a CTA (a 192-row tile; a 256-row tile: two of 128 rows)
#: The widest 256-row wide swap: each consumer thread holds W fp32 accumulators (two m64 blocks
#: of W / 2), and from W = 160 the ring and the D^T buffers no longer fit three stages.
SWAP_WIDE_256 = 144
BLOCK_K = 64  # 128-byte rows of 2-byte operands: the widest swizzle
EPI_N = 64  # columns per epilogue box of the 256-wide tiles (a 128-byte-swizzled TMA box)
SMEM_BUDGET = 224 * 1024  # buffers; barriers and the compiler's few bytes fit in 227 KiB
MAX_STAGES = 8
#: Swapped (decode) tiles stream their weight rows from DRAM, once: the bytes a ring keeps in
#: flight set how fast one SM pulls them (the README has the measurement).
MAX_STAGES_SWAP = 12
PRODUCER_WARPS = 1
PRODUCER_REGS = 40  # setmaxnreg.dec for the TMA warp
CONSUMER_REGS = 232  # setmaxnreg.inc for the second consumer warpgroup (of two)
#: Three consumers (192 rows) and the producer's warpgroup share the SM's 64K registers four
#: ways: 40 x 128 for the producer leaves 157 a consumer thread, rounded down to setmaxnreg's
#: step of 8; the default partition (consumer 0) takes what the two workers leave (168).
CONSUMER_REGS_3 = 152
MAX_WORKSPACE_BYTES = 256 << 20  # fp32 partials; the heuristic's splits need < 10 MiB
#: Stream-K's least share of the tail a program (``harness.tile_cost.SK_MIN_ITERS``), as the
#: kernels' schedules read it.
_SK_MIN_ITERS = gl.constexpr(SK_MIN_ITERS)
#: The widest tile whose two register-A consumers load A more than 16 K-columns at a time
#: (``regs_set_k``; README, "Twenty-fifth version").
REGS_DEEP_MAX = 136
REDUCE_BLOCK_N = 512  # the split-K reduction: 4 warps x 32 lanes x 4 columns per row
SK_REDUCE_BLOCK_M, SK_REDUCE_BLOCK_N = 32, 64  # the stream-K reduction's block of a tile


@gluon.aggregate
class Smem:
    """The shared-memory plan and the tile family, allocated before warp_specialize."""

    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    b2_desc: tma.tensor_descriptor
    b3_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    c2_desc: tma.tensor_descriptor
    c3_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    b2_bufs: gl.shared_memory_descriptor
    b3_bufs: gl.shared_memory_descriptor
    c_smem: gl.shared_memory_descriptor
    c2_smem: gl.shared_memory_descriptor
    c3_smem: gl.shared_memory_descriptor
    w_ptr: gl.tensor
    ab_full: gl.shared_memory_descriptor
    ab_empty: gl.shared_memory_descriptor
    b_empty: gl.shared_memory_descriptor
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    split_rows: gl.tensor
    NUM_STAGES: gl.constexpr
    GROUP_M: gl.constexpr
    NUM_CONSUMERS: gl.constexpr
    CLUSTER: gl.constexpr
    SPLIT_K: gl.constexpr
    STREAM_K: gl.constexpr
    SWAP_AB: gl.constexpr
    PERSISTENT: gl.constexpr
    TAIL_N: gl.constexpr
    TAIL2_N: gl.constexpr
    ROWS_FIRST: gl.constexpr
    A_KS: gl.constexpr

    @gluon.constexpr_function
    def __init__(
        self,
        a_desc,
        b_desc,
        b2_desc,
        b3_desc,
        c_desc,
        c2_desc,
        c3_desc,
        a_bufs,
        b_bufs,
        b2_bufs,
        b3_bufs,
        c_smem,
        c2_smem,
        c3_smem,
        w_ptr,
        ab_full,
        ab_empty,
        b_empty,
        M,
        N,
        K,
        split_rows,
        NUM_STAGES,
        GROUP_M,
        NUM_CONSUMERS,
        CLUSTER,
        SPLIT_K,
        STREAM_K,
        SWAP_AB,
        PERSISTENT,
        TAIL_N,
        TAIL2_N,
        ROWS_FIRST,
        A_KS,
    ):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.b2_desc = b2_desc
        self.b3_desc = b3_desc
        self.c_desc = c_desc
        self.c2_desc = c2_desc
        self.c3_desc = c3_desc
        self.a_bufs = a_bufs
        self.b_bufs = b_bufs
        self.b2_bufs = b2_bufs
        self.b3_bufs = b3_bufs
        self.c_smem = c_smem
        self.c2_smem = c2_smem
        self.c3_smem = c3_smem
        self.w_ptr = w_ptr
        self.ab_full = ab_full
        self.ab_empty = ab_empty
        self.b_empty = b_empty
        self.M = M
        self.N = N
        self.K = K
        self.split_rows = split_rows
        self.NUM_STAGES = gl.constexpr(NUM_STAGES)
        self.GROUP_M = gl.constexpr(GROUP_M)
        self.NUM_CONSUMERS = gl.constexpr(NUM_CONSUMERS)
        self.CLUSTER = gl.constexpr(CLUSTER)
        self.SPLIT_K = gl.constexpr(SPLIT_K)
        self.STREAM_K = gl.constexpr(STREAM_K)
        self.SWAP_AB = gl.constexpr(SWAP_AB)
        self.PERSISTENT = gl.constexpr(PERSISTENT)
        self.TAIL_N = gl.constexpr(TAIL_N)
        self.TAIL2_N = gl.constexpr(TAIL2_N)
        self.ROWS_FIRST = gl.constexpr(ROWS_FIRST)
        self.A_KS = gl.constexpr(A_KS)


# -- the schedule: work units -> (tile, K range, where the result goes) -----------------------
@gluon.jit
def _num_units(s: Smem):
    """Work units the persistent programs stride over: tiles x K splits, or with stream-K the
    data-parallel tiles plus two tail segments per program (``harness.tile_cost.StreamK``)."""
    TILE_M: gl.constexpr = s.a_desc.block_shape[0] * s.NUM_CONSUMERS  # the cluster tile
    TILE_N: gl.constexpr = s.b_desc.block_shape[0] + s.TAIL_N + s.TAIL2_N
    tiles = gl.cdiv(s.M, TILE_M) * gl.cdiv(s.N, TILE_N)
    if s.STREAM_K:
        programs = gl.num_programs(0)
        dp_tiles = (tiles // programs) * programs
        units = dp_tiles + gl.where(tiles > dp_tiles, 2 * programs, 0)
    else:
        units = tiles * s.SPLIT_K
    return units


@gluon.jit
def _unit(s: Smem, unit):
    """(off_m, off_n, first k-tile, end k-tile, split, slot) of work unit ``unit`` in the
    kernel's view. ``split`` picks split-K's workspace slice; ``slot`` >= 0 marks a stream-K
    segment whose fp32 partial goes to workspace slot ``slot`` (-1: the whole tile, to D). An
    empty segment has first == end: both roles then skip the unit."""
    TILE_M: gl.constexpr = s.a_desc.block_shape[0] * s.NUM_CONSUMERS
    TILE_N: gl.constexpr = s.b_desc.block_shape[0] + s.TAIL_N + s.TAIL2_N
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    num_tiles_m = gl.cdiv(s.M, TILE_M)
    num_tiles_n = gl.cdiv(s.N, TILE_N)
    k_tiles = gl.cdiv(s.K, TILE_K)
    split = 0
    slot = -1
    tile = unit
    k_lo = 0
    k_hi = k_tiles
    if s.STREAM_K:
        programs = gl.num_programs(0)
        tiles = num_tiles_m * num_tiles_n
        dp_tiles = (tiles // programs) * programs
        if unit >= dp_tiles:
            # The first S programs share the tail (S: _tail_programs), program p < S its
            # iterations [p*I//S, (p+1)*I//S), at most one tile, so at most two segments: the
            # rest of the tile it starts in, then the next one. Programs from S on run none.
            v = unit - dp_tiles
            segment = v // programs
            p = v - segment * programs
            sk_iters = (tiles - dp_tiles) * k_tiles
            shared = _tail_programs(tiles - dp_tiles, k_tiles, programs)
            lo = gl.minimum(p, shared) * sk_iters // shared
            hi = gl.minimum(p + 1, shared) * sk_iters // shared
            boundary = (lo // k_tiles + 1) * k_tiles
            start = gl.where(segment == 0, lo, boundary)
            end = gl.where(segment == 0, gl.minimum(hi, boundary), gl.maximum(hi, boundary))
            t = gl.minimum(start // k_tiles, tiles - dp_tiles - 1)
            tile = dp_tiles + t
            k_lo = start - t * k_tiles
            k_hi = k_lo + (end - start)
            slot = v
    elif s.SPLIT_K > 1:
        # Balanced ranges: split s gets k-tiles [s*kt//S, (s+1)*kt//S), never empty as long
        # as kt >= S (the config's validity rule), so every split writes its whole slice.
        tiles_mn = num_tiles_m * num_tiles_n
        split = unit // tiles_mn
        tile = unit % tiles_mn
        k_lo = split * k_tiles // s.SPLIT_K
        k_hi = (split + 1) * k_tiles // s.SPLIT_K
    if s.ROWS_FIRST:
        tile_m, tile_n = grouped_tile(tile, num_tiles_m, num_tiles_n, s.GROUP_M)
    else:  # a wide swap's raster m: the column tiles (D's M) of one block of rows first
        tile_n, tile_m = grouped_tile(tile, num_tiles_n, num_tiles_m, s.GROUP_M)
    return tile_m * TILE_M, tile_n * TILE_N, k_lo, k_hi, split, slot


@gluon.jit
def _tail_programs(sk_tiles, k_tiles, programs):
    """The programs that share the stream-K tail (``harness.tile_cost.StreamK.tail_programs``):
    enough for ``SK_MIN_ITERS`` k-iterations each, at least one a tail tile, at most all."""
    return gl.maximum(gl.minimum(programs, sk_tiles * k_tiles // _SK_MIN_ITERS), sk_tiles)


# -- producer: one warp issuing TMA ----------------------------------------------------------
@gluon.jit
def _load_tile(s: Smem, unit, empty):
    BOX_M: gl.constexpr = s.a_desc.block_shape[0]  # one consumer's cluster rows
    TILE_K: gl.constexpr = s.a_desc.block_shape[1]
    # B's bytes: every box of the tile (a one-box tile's b2 is b again, a two-box tile's b3 b2)
    B_BYTES: gl.constexpr = (
        s.b_desc.nbytes_per_cta
        + s.b2_desc.nbytes_per_cta * (s.TAIL_N > 0)
        + s.b3_desc.nbytes_per_cta * (s.TAIL2_N > 0)
    )
    off_m, off_n, k_lo, k_hi, _, _ = _unit(s, unit)
    for kk in range(k_lo, k_hi):  # an empty stream-K segment loads nothing
        mbarrier.wait(s.ab_empty.index(empty.index), empty.phase)
        if s.CLUSTER == 2:
            mbarrier.wait(s.b_empty.index(empty.index), empty.phase)  # lead CTA only
        full = s.ab_full.index(empty.index)
        # Each CTA receives its rows of each consumer's A box and the whole B tile.
        mbarrier.expect(full, s.NUM_CONSUMERS * s.a_desc.nbytes_per_cta + B_BYTES)
        for c in gl.static_range(s.NUM_CONSUMERS):
            tma.async_load(
                s.a_desc,
                [off_m + c * BOX_M, kk * TILE_K],
                full,
                s.a_bufs.index(s.NUM_CONSUMERS * empty.index + c),
            )
        tma.async_load(
            s.b_desc,
            [off_n, kk * TILE_K],
            full,
            s.b_bufs.index(empty.index),
            multicast=s.CLUSTER == 2,
        )
        if s.TAIL_N > 0:
            tma.async_load(
                s.b2_desc,
                [off_n + s.b_desc.block_shape[0], kk * TILE_K],
                full,
                s.b2_bufs.index(empty.index),
                multicast=s.CLUSTER == 2,
            )
        if s.TAIL2_N > 0:
            tma.async_load(
                s.b3_desc,
                [off_n + s.b_desc.block_shape[0] + s.TAIL_N, kk * TILE_K],
                full,
                s.b3_bufs.index(empty.index),
                multicast=s.CLUSTER == 2,
            )
        empty = empty.next()
    return empty


@gluon.jit
def _producer(s: Smem):
    # Producer waits on "empty" starting at phase 1: fresh barriers report the previous
    # phase complete, i.e. every stage starts free.
    empty = Counter.create(1, s.NUM_STAGES)
    if s.PERSISTENT:
        for unit in range(gl.program_id(0), _num_units(s), gl.num_programs(0)):
            empty = _load_tile(s, unit, empty)
    else:
        _load_tile(s, gl.program_id(0), empty)


# -- consumers: one to three warpgroups issuing wgmma, each with its own epilogue ------------
@gluon.jit
def _acc_layout(s: Smem, width: gl.constexpr):
    return gl.NVMMADistributedLayout(
        version=[3, 0],
        warps_per_cta=[gl.num_warps(), 1],
        instr_shape=[16, width, 16],
        cga_layout=s.a_desc.layout.cga_layout,
    )


@gluon.jit
def _release(s: Smem, release):
    """Hand a stage back once this consumer's wgmmas no longer read it."""
    mbarrier.arrive(s.ab_empty.index(release.index))
    if s.CLUSTER == 2:
        mbarrier.arrive(s.b_empty.index(release.index))  # remote arrive on the lead
    return release.next()


@gluon.jit
def _regs_mma(
    s: Smem, C: gl.constexpr, stage, K0: gl.constexpr, KW: gl.constexpr, a_prev, acc, acc2, acc3
):
    """K-columns [K0, K0 + KW) of a ring stage with A in registers: consumer C's A slice
    ``ldmatrix``-ed once (an A operand's layout does not depend on N, so every box's wgmma
    reads it), one wgmma per box on the matching rows of B, then the previous call's retire.
    ``a_prev``, the registers the previous call's wgmmas read, stays live until that wait:
    ptxas keeps in-flight wgmma operands only as long as the program does (this load must not
    land in them). A two-box tile passes its tail accumulator for ``acc3`` too (unused)."""
    HEAD_N: gl.constexpr = s.b_desc.block_shape[0]
    a_smem = s.a_bufs.index(s.NUM_CONSUMERS * stage + C).slice(K0, KW, dim=1)
    a = a_smem.load(gl.DotOperandLayout(0, _acc_layout(s, HEAD_N), 2))
    b = s.b_bufs.index(stage).slice(K0, KW, dim=1).permute((1, 0))
    b2 = s.b2_bufs.index(stage).slice(K0, KW, dim=1).permute((1, 0))
    acc = warpgroup_mma(a, b, acc, is_async=True)
    acc2 = warpgroup_mma(a, b2, acc2, is_async=True)
    if s.TAIL2_N > 0:  # a third box: its wgmma reads the same A registers
        b3 = s.b3_bufs.index(stage).slice(K0, KW, dim=1).permute((1, 0))
        acc3 = warpgroup_mma(a, b3, acc3, is_async=True)
        acc, acc2, acc3, a, a_prev, b, b2, b3 = warpgroup_mma_wait(
            num_outstanding=3, deps=(acc, acc2, acc3, a, a_prev, b, b2, b3)
        )
    else:
        acc, acc2, a, a_prev, b, b2 = warpgroup_mma_wait(
            num_outstanding=2, deps=(acc, acc2, a, a_prev, b, b2)
        )
    return a, acc, acc2, acc3


@gluon.jit
def _regs_step(s: Smem, C: gl.constexpr, a_prev, acc, acc2, acc3, full):
    """One whole k-step with A in registers (``_regs_mma``), once its stage has landed."""
    mbarrier.wait(s.ab_full.index(full.index), full.phase)
    return _regs_mma(s, C, full.index, 0, s.a_desc.block_shape[1], a_prev, acc, acc2, acc3)


@gluon.jit
def _mainloop_regs(s: Smem, C: gl.constexpr, k_lo, k_hi, acc, acc2, acc3, full, release):
    """The k-loop of ``a_operand=regs`` with a k-step's register sets (``regs_set_k``: one
    consumer, and two on a narrow two-box tile): as the shared-memory loop, one k-step in
    flight (a lone consumer has nothing to hide a shorter step's issue behind),
    but unrolled by two so that consecutive steps load A into two register sets (``a0``,
    ``a1``) and a load never overwrites registers an unretired wgmma still reads (one set,
    reloaded every step, would have to drain each step: README, "Thirteenth version"). The
    first step is peeled; an even count leaves one step after the pairs. Returns with the
    last step in flight, as the shared-memory loop does."""
    # The first step: nothing older is in flight, so its wait retires nothing and there is
    # no previous register set to keep (the tail accumulator stands in for it).
    a0, acc, acc2, acc3 = _regs_step(s, C, acc2, acc, acc2, acc3, full)
    full = full.next()
    for _ in range(k_lo + 1, k_hi - 1, 2):
        a1, acc, acc2, acc3 = _regs_step(s, C, a0, acc, acc2, acc3, full)
        release = _release(s, release)
        full = full.next()
        a0, acc, acc2, acc3 = _regs_step(s, C, a1, acc, acc2, acc3, full)
        release = _release(s, release)
        full = full.next()
    if (k_hi - k_lo) % 2 == 0:
        a1, acc, acc2, acc3 = _regs_step(s, C, a0, acc, acc2, acc3, full)
        release = _release(s, release)
        full = full.next()
    return acc, acc2, acc3, full, release


@gluon.jit
def _mainloop_regs_slices(
    s: Smem, C: gl.constexpr, k_lo, k_hi, acc, acc2, acc3, full, release, KS: gl.constexpr
):
    """The k-loop of ``a_operand=regs`` for two consumers where a k-step's register sets would
    be serialized or spill: sets of one KS-column K-slice (KS / 4 registers a thread, not a
    k-step's 16; 32 or 16 columns, ``regs_set_k``), two in turn, one slice in flight. The
    other consumer's wgmmas fill the tensor core while this one waits on a slice. A stage
    goes back once its last slice retires: at the next stage's first wait."""
    BK: gl.constexpr = s.a_desc.block_shape[1]
    mbarrier.wait(s.ab_full.index(full.index), full.phase)
    # Nothing is in flight before the first slice (the tail accumulator stands in for a set).
    a0, acc, acc2, acc3 = _regs_mma(s, C, full.index, 0, KS, acc2, acc, acc2, acc3)
    a1, acc, acc2, acc3 = _regs_mma(s, C, full.index, KS, KS, a0, acc, acc2, acc3)
    for k0 in gl.static_range(2 * KS, BK, 2 * KS):
        a0, acc, acc2, acc3 = _regs_mma(s, C, full.index, k0, KS, a1, acc, acc2, acc3)
        a1, acc, acc2, acc3 = _regs_mma(s, C, full.index, k0 + KS, KS, a0, acc, acc2, acc3)
    full = full.next()
    for _ in range(k_lo + 1, k_hi):
        mbarrier.wait(s.ab_full.index(full.index), full.phase)
        a0, acc, acc2, acc3 = _regs_mma(s, C, full.index, 0, KS, a1, acc, acc2, acc3)
        release = _release(s, release)
        a1, acc, acc2, acc3 = _regs_mma(s, C, full.index, KS, KS, a0, acc, acc2, acc3)
        for k0 in gl.static_range(2 * KS, BK, 2 * KS):
            a0, acc, acc2, acc3 = _regs_mma(s, C, full.index, k0, KS, a1, acc, acc2, acc3)
            a1, acc, acc2, acc3 = _regs_mma(s, C, full.index, k0 + KS, KS, a0, acc, acc2, acc3)
        full = full.next()
    return acc, acc2, acc3, full, release


@gluon.jit
def _mma_tile(s: Smem, unit, C: gl.constexpr, full, release):
    BOX_M: gl.constexpr = s.a_desc.block_shape[0]
    HEAD_N: gl.constexpr = s.b_desc.block_shape[0]
    off_m, off_n, k_lo, k_hi, split, slot = _unit(s, unit)
    if k_hi > k_lo:  # an empty stream-K segment: nothing arrived, nothing to release or store
        acc = gl.zeros([BOX_M, HEAD_N], gl.float32, _acc_layout(s, HEAD_N))
        if s.TAIL_N > 0:  # a tile two boxes wide: a second wgmma per k-step, on the tail box
            acc2 = gl.zeros([BOX_M, s.TAIL_N], gl.float32, _acc_layout(s, s.TAIL_N))
        if s.TAIL2_N > 0:  # three boxes wide (A in registers only): a third wgmma
            acc3 = gl.zeros([BOX_M, s.TAIL2_N], gl.float32, _acc_layout(s, s.TAIL2_N))
        elif s.A_KS > 0:
            acc3 = acc2  # the register loops' third accumulator, unused with two boxes
        # A read once, from registers, in sets of A_KS K-columns (``regs_set_k``): a k-step's,
        # or a slice's where a k-step's would be serialized or spill.
        if s.A_KS == s.a_desc.block_shape[1]:
            acc, acc2, acc3, full, release = _mainloop_regs(
                s, C, k_lo, k_hi, acc, acc2, acc3, full, release
            )
        elif s.A_KS > 0:
            acc, acc2, acc3, full, release = _mainloop_regs_slices(
                s, C, k_lo, k_hi, acc, acc2, acc3, full, release, s.A_KS
            )
        else:
            gl.static_assert(s.TAIL2_N == 0)  # three boxes read A from registers only
            for kk in range(k_lo, k_hi):
                mbarrier.wait(s.ab_full.index(full.index), full.phase)
                a = s.a_bufs.index(s.NUM_CONSUMERS * full.index + C)
                b = s.b_bufs.index(full.index).permute((1, 0))
                acc = warpgroup_mma(a, b, acc, is_async=True)
                # Keep one k-step of wgmma in flight: once only the newest step's are
                # outstanding, the previous stage's operands are no longer read and can be
                # handed back.
                if s.TAIL_N > 0:
                    b2 = s.b2_bufs.index(full.index).permute((1, 0))
                    acc2 = warpgroup_mma(a, b2, acc2, is_async=True)
                    acc, acc2, a, b, b2 = warpgroup_mma_wait(
                        num_outstanding=2, deps=(acc, acc2, a, b, b2)
                    )
                else:
                    acc, a, b = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a, b))
                if kk > k_lo:
                    release = _release(s, release)
                full = full.next()
        if s.TAIL2_N > 0:
            acc, acc2, acc3 = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc2, acc3))
        elif s.TAIL_N > 0:
            acc, acc2 = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc2))
        else:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        release = _release(s, release)
        if slot >= 0:
            _store_partial(s, acc, slot, C, 0)
            if s.TAIL_N > 0:
                _store_partial(s, acc2, slot, C, HEAD_N)
            if s.TAIL2_N > 0:
                _store_partial(s, acc3, slot, C, HEAD_N + s.TAIL_N)
        else:
            _store_tile(s, acc, off_m, off_n, split, C)
            if s.TAIL_N > 0:
                _store_tail(s, acc2, s.c2_desc, s.c2_smem, off_m, off_n, split, C, HEAD_N)
            if s.TAIL2_N > 0:
                col: gl.constexpr = HEAD_N + s.TAIL_N
                _store_tail(s, acc3, s.c3_desc, s.c3_smem, off_m, off_n, split, C, col)
    return full, release


@gluon.jit
def _store_partial(s: Smem, acc, slot, C: gl.constexpr, COL0: gl.constexpr):
    """A stream-K segment's fp32 partial, straight from registers into its workspace slot (a
    whole cluster tile, row-major; no bounds: the slot is tile-sized), one box at a time: a
    tile of two or three boxes stores each tail box's columns from ``COL0`` on. Only the
    tail's few segments take this path, so the D epilogue's shared buffers stay fp16-sized."""
    BOX_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0] + s.TAIL_N + s.TAIL2_N  # a slot row: all of it
    WIDTH: gl.constexpr = acc.shape[1]
    TILE_M: gl.constexpr = BOX_M * s.NUM_CONSUMERS
    layout: gl.constexpr = acc.type.layout
    rows = gl.arange(0, BOX_M, gl.SliceLayout(1, layout))
    cols = gl.arange(0, WIDTH, gl.SliceLayout(0, layout))
    base = (slot.to(gl.int64) * TILE_M + C * BOX_M) * TILE_N + COL0
    offs = gl.expand_dims(rows, 1) * TILE_N + gl.expand_dims(cols, 0)
    gl.store(s.w_ptr + base + offs, acc)


@gluon.jit
def _store_tile(s: Smem, acc, off_m, off_n, split, C: gl.constexpr):
    """Epilogue: registers -> shared -> TMA store into D (or into split's fp32 slice of the
    workspace). The previous tile's store overlapped this main loop."""
    BOX_M: gl.constexpr = s.a_desc.block_shape[0]
    TILE_N: gl.constexpr = s.b_desc.block_shape[0]
    EPI_N: gl.constexpr = s.c_desc.block_shape[1]
    row0 = split * s.split_rows  # 0 without split-K
    if s.SWAP_AB:
        # The kernel computed D^T (its rows are D's columns). The permute only relabels the
        # register layout; the shared store transposes (stmatrix .trans for 16-bit D) into
        # D's row-major box.
        tma.store_wait(pendings=0)  # the previous tile's stores have read the buffers
        c_smem = s.c_smem.index(C)
        c_smem.store(gl.permute(acc.to(s.c_desc.dtype), (1, 0)))
        fence_async_shared()  # generic-proxy smem writes -> async-proxy (TMA) reads
        tma.async_store(s.c_desc, [row0 + off_n, off_m + C * BOX_M], c_smem)
    elif EPI_N == TILE_N:
        tma.store_wait(pendings=0)
        c_smem = s.c_smem.index(C)
        c_smem.store(acc.to(s.c_desc.dtype))
        fence_async_shared()
        tma.async_store(s.c_desc, [row0 + off_m + C * BOX_M, off_n], c_smem)
    else:
        # A 256-wide tile leaves in four 64-column boxes through two buffers per consumer
        # (16 KiB, not a 32 KiB tile: one more ring stage fits). Buffer j % 2 was last read
        # by the store issued two boxes ago, so all but the newest store must be done.
        gl.static_assert(TILE_N == 4 * EPI_N)
        left, right = _halves(acc.to(s.c_desc.dtype))
        boxes = (_halves(left), _halves(right))
        for j in gl.static_range(4):
            tma.store_wait(pendings=1)
            c_smem = s.c_smem.index(2 * C + j % 2)
            c_smem.store(boxes[j // 2][j % 2])
            fence_async_shared()
            tma.async_store(s.c_desc, [row0 + off_m + C * BOX_M, off_n + j * EPI_N], c_smem)


@gluon.jit
def _store_tail(s: Smem, acc, desc, bufs, off_m, off_n, split, C: gl.constexpr, COL0: gl.constexpr):
    """A tile's second or third box (through ``desc`` from its buffers ``bufs``), after its
    first (``_store_tile``, whose ``store_wait`` covered these buffers too: the previous
    tile's tail stores are done), into the same split's slice of the workspace as the first:
    swapped, D's rows ``COL0`` below the head box's; unswapped, D's columns right of them."""
    BOX_M: gl.constexpr = s.a_desc.block_shape[0]
    row0 = split * s.split_rows  # 0 without split-K
    c_smem = bufs.index(C)
    if s.SWAP_AB:
        c_smem.store(gl.permute(acc.to(desc.dtype), (1, 0)))
        fence_async_shared()
        tma.async_store(desc, [row0 + off_n + COL0, off_m + C * BOX_M], c_smem)
    else:
        c_smem.store(acc.to(desc.dtype))
        fence_async_shared()
        tma.async_store(desc, [row0 + off_m + C * BOX_M, off_n + COL0], c_smem)


@gluon.jit
def _halves(x):
    """The left and right column halves of a register tile (a view: no data moves, each
    thread already holds both halves' columns)."""
    ROWS: gl.constexpr = x.shape[0]
    COLS: gl.constexpr = x.shape[1]
    return gl.split(gl.permute(gl.reshape(x, [ROWS, 2, COLS // 2]), (0, 2, 1)))


@gluon.jit
def _consumer(s: Smem, C: gl.constexpr):
    full = Counter.create(0, s.NUM_STAGES)
    release = Counter.create(0, s.NUM_STAGES)
    if s.PERSISTENT:
        for unit in range(gl.program_id(0), _num_units(s), gl.num_programs(0)):
            full, release = _mma_tile(s, unit, C, full, release)
    else:
        _mma_tile(s, gl.program_id(0), C, full, release)
    tma.store_wait(pendings=0)


@gluon.jit
def _box_buffers(b_desc, c_desc, NUM_STAGES: gl.constexpr, NUM_CONSUMERS: gl.constexpr):
    """A tail box's B ring and its D buffer per consumer."""
    b_bufs = gl.allocate_shared_memory(
        b_desc.dtype,
        [NUM_STAGES] + b_desc.block_shape,  # noqa: RUF005
        b_desc.layout,
    )
    c_smem = gl.allocate_shared_memory(
        c_desc.dtype,
        [NUM_CONSUMERS] + c_desc.block_shape,  # noqa: RUF005
        c_desc.layout,
    )
    return b_bufs, c_smem


# Every global access goes through a TMA descriptor or a tile-sized workspace slot, so Triton's
# specialization of M, N, K and split_rows on divisibility by 16 changes no instruction (the PTX
# is identical at all 300 configs: README, "What Gluon made easy") and only compiled each config
# again per alignment class of the shape: six times in the register-A GPU test. A size of 1 is
# still specialized (it does change the code).
@gluon.jit(do_not_specialize_on_alignment=("M", "N", "K", "split_rows"))
def r8_shape_adaptive_kernel(
    a_desc,
    b_desc,
    b2_desc,
    b3_desc,
    c_desc,
    c2_desc,
    c3_desc,
    w_ptr,
    M,
    N,
    K,
    split_rows,
    NUM_STAGES: gl.constexpr,
    GROUP_M: gl.constexpr,
    NUM_CONSUMERS: gl.constexpr,
    CLUSTER: gl.constexpr,
    SPLIT_K: gl.constexpr,
    STREAM_K: gl.constexpr,
    SWAP_AB: gl.constexpr,
    PERSISTENT: gl.constexpr,
    TAIL_N: gl.constexpr,
    TAIL2_N: gl.constexpr,
    ROWS_FIRST: gl.constexpr,
    A_KS: gl.constexpr,
    PRODUCER_WARPS: gl.constexpr,
    PRODUCER_REGS: gl.constexpr,
    CONSUMER_REGS: gl.constexpr,
):
    gl.static_assert(gl.num_ctas() == CLUSTER)
    dtype: gl.constexpr = a_desc.dtype
    # -- shared-memory plan --
    a_bufs = gl.allocate_shared_memory(
        dtype,
        [NUM_STAGES * NUM_CONSUMERS] + a_desc.block_shape,  # noqa: RUF005
        a_desc.layout,
    )
    b_bufs = gl.allocate_shared_memory(dtype, [NUM_STAGES] + b_desc.block_shape, b_desc.layout)  # noqa: RUF005
    # One epilogue buffer per consumer, or two when the tile leaves in 64-column boxes.
    boxed: gl.constexpr = not SWAP_AB and c_desc.block_shape[1] < b_desc.block_shape[0]
    EPI_BUFS: gl.constexpr = 2 if boxed else 1
    c_smem = gl.allocate_shared_memory(
        c_desc.dtype,
        [NUM_CONSUMERS * EPI_BUFS] + c_desc.block_shape,  # noqa: RUF005
        c_desc.layout,
    )
    # A tile two boxes wide (TAIL_N > 0: a wide swap, or an unswapped 160 or 192) has a second
    # B ring and D buffer, three boxes wide (TAIL2_N > 0: a wide swap, A in registers) a third;
    # any other tile passes its previous box's descriptors again, unused.
    if TAIL_N > 0:
        b2_bufs, c2_smem = _box_buffers(b2_desc, c2_desc, NUM_STAGES, NUM_CONSUMERS)
    else:
        b2_bufs = b_bufs
        c2_smem = c_smem
    if TAIL2_N > 0:
        b3_bufs, c3_smem = _box_buffers(b3_desc, c3_desc, NUM_STAGES, NUM_CONSUMERS)
    else:
        b3_bufs = b2_bufs
        c3_smem = c2_smem
    # -- barriers --
    ab_full = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    ab_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ab_full.index(i), count=1)  # the producer's expect; bytes via tx
        mbarrier.init(ab_empty.index(i), count=NUM_CONSUMERS)  # one arrive per consumer
    if CLUSTER == 2:
        b_empty = mbarrier.allocate_mbarrier(batch=NUM_STAGES, two_ctas=True)
        for i in gl.static_range(NUM_STAGES):
            mbarrier.init(b_empty.index(i), count=NUM_CONSUMERS)  # x2 by Gluon: both CTAs
    else:
        b_empty = ab_empty  # one CTA: B lives only here, ab_empty guards it (never waited)
    # A size of 1 arrives as a constexpr (Triton specializes it): make all four tensors.
    s = Smem(
        a_desc,
        b_desc,
        b2_desc,
        b3_desc,
        c_desc,
        c2_desc,
        c3_desc,
        a_bufs,
        b_bufs,
        b2_bufs,
        b3_bufs,
        c_smem,
        c2_smem,
        c3_smem,
        w_ptr,
        ab_full,
        ab_empty,
        b_empty,
        gl.to_tensor(M),
        gl.to_tensor(N),
        gl.to_tensor(K),
        gl.to_tensor(split_rows),
        NUM_STAGES,
        GROUP_M,
        NUM_CONSUMERS,
        CLUSTER,
        SPLIT_K,
        STREAM_K,
        SWAP_AB,
        PERSISTENT,
        TAIL_N,
        TAIL2_N,
        ROWS_FIRST,
        A_KS,
    )
    # -- roles --
    if NUM_CONSUMERS == 3:
        gl.warp_specialize(
            [(_consumer, (s, 0)), (_producer, (s,)), (_consumer, (s, 1)), (_consumer, (s, 2))],
            [PRODUCER_WARPS, 4, 4],
            [PRODUCER_REGS, CONSUMER_REGS, CONSUMER_REGS],
        )
    elif NUM_CONSUMERS == 2 and A_KS > 0:
        # No register reallocation: under setmaxnreg, ptxas serializes the worker consumer's
        # register-A wgmmas (C7512; backends.gluon._workarounds, defect 1); 168 a thread hold
        # the widest two-box tile with K-slice register sets (_mainloop_regs_slices).
        gl.warp_specialize(
            [(_consumer, (s, 0)), (_producer, (s,)), (_consumer, (s, 1))],
            [PRODUCER_WARPS, 4],
        )
    elif NUM_CONSUMERS == 2:
        gl.warp_specialize(
            [(_consumer, (s, 0)), (_producer, (s,)), (_consumer, (s, 1))],
            [PRODUCER_WARPS, 4],
            [PRODUCER_REGS, CONSUMER_REGS],
        )
    else:
        gl.warp_specialize(
            [(_consumer, (s, 0)), (_producer, (s,))], [PRODUCER_WARPS], [PRODUCER_REGS]
        )


# -- split-K: the second kernel, summing the fp32 slices in a fixed order ----------------------
@gluon.jit
def splitk_reduce_kernel(
    w_ptr,
    d_ptr,
    M,
    N,
    ld_w,
    split_rows,
    SPLIT_K: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
):
    """D[m, n] = sum over s = 0..SPLIT_K-1 of W[s * split_rows + m, n], D contiguous (M, N)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [1, gl.num_warps()], [1, 0])
    rows = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout))
    cols = gl.program_id(1) * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, layout))
    rows2 = gl.expand_dims(rows, 1).to(gl.int64)
    cols2 = gl.expand_dims(cols, 0)
    mask = (rows2 < M) & (cols2 < N)
    offs = rows2 * ld_w + cols2
    slice_stride = split_rows.to(gl.int64) * ld_w
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout)
    for split in gl.static_range(SPLIT_K):  # fixed order: the sum is deterministic
        acc += gl.load(w_ptr + split * slice_stride + offs, mask=mask, other=0.0)
    gl.store(d_ptr + rows2 * N + cols2, acc.to(d_ptr.dtype.element_ty), mask=mask)


# -- stream-K: the tail tiles' partials summed in program order --------------------------------
@gluon.jit
def streamk_reduce_kernel(
    w_ptr,
    d_ptr,
    M,
    N,
    K,
    programs,
    TILE_M: gl.constexpr,
    TILE_N: gl.constexpr,
    TILE_K: gl.constexpr,
    GROUP_M: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    SWAP_AB: gl.constexpr,
    ROWS_FIRST: gl.constexpr,
):
    """D of tail tile ``program_id(0)`` = the sum of its partials (``harness.tile_cost.
    StreamK.contributors``: the programs whose share overlaps the tile, each partial in the
    slot of the segment it wrote), added in program order so the result is deterministic.
    ``programs`` is the GEMM's grid; M x N is the GEMM's view (N x M of D swapped), its
    tiles numbered as ``_unit`` numbers them (``ROWS_FIRST``). D is contiguous: (M, N)
    with N % 8 == 0 (a stream-K rule), or swapped D^T column-major (D^T(i, j) at i + j * M),
    which the block leaves down its columns; a block past the tile's columns (a width that is
    not a multiple of BLOCK_N) is masked."""
    layout: gl.constexpr = gl.BlockedLayout(
        [1, BLOCK_N // 32], [1, 32], [gl.num_warps(), 1], [1, 0]
    )
    num_tiles_m = gl.cdiv(M, TILE_M)
    num_tiles_n = gl.cdiv(N, TILE_N)
    tiles = num_tiles_m * num_tiles_n
    k_tiles = gl.cdiv(K, TILE_K)
    dp_tiles = (tiles // programs) * programs
    sk_iters = (tiles - dp_tiles) * k_tiles
    shared = _tail_programs(tiles - dp_tiles, k_tiles, programs)
    r = gl.program_id(0)
    if ROWS_FIRST:
        tile_m, tile_n = grouped_tile(dp_tiles + r, num_tiles_m, num_tiles_n, GROUP_M)
    else:
        tile_n, tile_m = grouped_tile(dp_tiles + r, num_tiles_n, num_tiles_m, GROUP_M)
    rows = gl.program_id(1) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout))
    cols = gl.program_id(2) * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, layout))
    in_tile = gl.expand_dims(rows, 1) * TILE_N + gl.expand_dims(cols, 0)
    in_width = gl.expand_dims(cols < TILE_N, 0)
    first_it = r * k_tiles
    # The program covering iteration x is the last p with p * I // S <= x (all below S).
    p_first = ((first_it + 1) * shared - 1) // sk_iters
    p_last = ((first_it + k_tiles) * shared - 1) // sk_iters
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout)
    for p in range(p_first, p_last + 1):
        lo = p * sk_iters // shared
        hi = (p + 1) * sk_iters // shared
        if hi > lo:  # an empty program wrote no partial
            slot = gl.where(lo >= first_it, p, programs + p)  # segment 0 or 1 of program p
            w = w_ptr + slot.to(gl.int64) * (TILE_M * TILE_N) + in_tile
            acc += gl.load(w, mask=in_width, other=0.0)
    out = acc.to(d_ptr.dtype.element_ty)
    if SWAP_AB:
        # D^T's unit stride runs down the rows: lanes along them, so a warp's stores fill
        # consecutive bytes of one column (the loads above kept the partials' row order).
        down: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [1, gl.num_warps()], [0, 1])
        out = gl.convert_layout(out, down)
        rows = gl.program_id(1) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, down))
        cols = gl.program_id(2) * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, down))
    d_rows = gl.expand_dims(tile_m * TILE_M + rows, 1).to(gl.int64)
    d_cols = gl.expand_dims(tile_n * TILE_N + cols, 0).to(gl.int64)
    mask = (d_rows < M) & (d_cols < N) & gl.expand_dims(cols < TILE_N, 0)
    if SWAP_AB:
        gl.store(d_ptr + d_cols * M + d_rows, out, mask=mask)
    else:
        gl.store(d_ptr + d_rows * N + d_cols, out, mask=mask)


# -- configs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class R8Config(GemmConfig):
    """Rung 8's knobs: ``harness.tile_cost.GemmConfig``, the vocabulary every rung 8 shares
    (Gluon's tile order walks M within an L2 group: ``raster`` is always "m" here), plus one
    of this kernel's own, ``a_operand``."""

    #: Where a consumer's wgmmas read A: "smem" (the ring's buffer; a two-box tile's two
    #: wgmmas each read it) or "regs" (loaded once a k-step with ``ldmatrix`` and fed to both
    #: boxes' wgmmas: A read once, not twice; two-box tiles of one or two 64-row consumers).
    #: A variant until timed; quiet at "smem", so every name written before it still names
    #: the same config.
    a_operand: str = quiet_knob("smem")

    @property
    def num_consumers(self) -> int:
        """Consumer warpgroups a CTA: one per 64 rows up to ``MAX_CONSUMERS`` (192 rows: three);
        a 256-row tile has two of 128 rows, each issuing two m64 wgmmas a k16."""
        return self.tile_m // SUB_M if self.tile_m <= MAX_CONSUMERS * SUB_M else 2

    @property
    def consumer_rows(self) -> int:
        """Rows of one consumer warpgroup's A box and accumulator in each CTA: 64, or 128."""
        return self.tile_m // self.num_consumers

    @property
    def boxes(self) -> tuple[int, int, int]:
        """(head, tail, tail2): the columns of the tile's B (and D) boxes, largest first. TMA
        boxes and Triton's blocks are powers of two, so a wide swap of another width is two
        boxes, each with its own wgmma and accumulator (144 = 128 + 16), as is an unswapped
        160 or 192 (128 + 32, 128 + 64), or with A in registers three (152 = 128 + 16 + 8,
        ``SWAP_WIDE_3``); tail 0: one box, tail2 0: at most two. A width of four or more
        powers of two leaves a tail2 that is not one (refused by ``_valid``)."""
        head = 1 << (self.tile_n.bit_length() - 1)
        rest = self.tile_n - head
        tail = 1 << (rest.bit_length() - 1) if rest else 0
        return head, tail, rest - tail

    @property
    def epi_n(self) -> int:
        """Columns of one epilogue box: the whole tile, or ``EPI_N`` for the one-CTA 256-wide
        tiles (four boxes through two buffers per consumer: one more ring stage; backend
        README, "boxed epilogue")."""
        boxed = self.tile_n == 4 * EPI_N and self.cluster == 1 and not self.swap_ab
        return EPI_N if boxed else self.tile_n

    def epilogue_bytes(self, out_bytes: int) -> int:
        """Shared memory of the epilogue buffers (``out_bytes`` per element)."""
        buffers = 1 if self.epi_n == self.tile_n else 2
        return self.tile_m * self.epi_n * buffers * out_bytes

    def stages(self, out_bytes: int) -> int:
        """The deepest ring that fits next to the epilogue buffers."""
        stage = (self.tile_m + self.tile_n) * BLOCK_K * 2
        epilogue = self.epilogue_bytes(out_bytes)
        most = MAX_STAGES_SWAP if self.swap_ab else MAX_STAGES
        return min(most, (SMEM_BUDGET - epilogue) // stage)


#: Rung 7's config, the heuristic's answer for large M x N.
RUNG7 = R8Config()


def _menu() -> tuple[R8Config, ...]:
    """Curated: cluster 2 only for the wide 128-row tiles (where B traffic matters); split-K
    only where the fp32 epilogue still leaves room for a ring (tile_n <= 128); swap-AB with
    the narrow tiles that cover a small M (16/32/64 columns, cluster 1, split or not) and with
    the ``SWAP_WIDE`` tiles for a mid-size M (64 or 128 rows, 256 up to ``SWAP_WIDE_256``
    and 192 up to ``SWAP_WIDE_192``, cluster 1 or 2, both rasters; split 2 or 4 only at 128
    rows up to ``SWAP_WIDE_SPLIT`` wide, one CTA);
    stream-K on the unswapped tiles a tail wave is made of (the partials bypass shared memory)
    and on the 128-row wide swaps. Unswapped widths are powers of two (Triton's block shapes
    must be) or ``WIDE_UNSWAPPED``'s two boxes."""
    menu = [RUNG7, R8Config(group=16), R8Config(tile_n=128), R8Config(tile_n=128, group=16)]
    one_cta = ((128, 256), (128, 128), (128, 64), (128, 32), (128, 16), (64, 256))
    for tm, tn in (*one_cta, (64, 128), (64, 64)):
        menu.append(R8Config(tm, tn, cluster=1))
    for tm, tn in ((128, 128), (128, 64), (64, 128), (64, 64)):
        menu += [R8Config(tm, tn, cluster=1, split_k=s) for s in (2, 4, 8)]
    for tm in (128, 64):
        for tn in (16, 32, 64):
            menu += [R8Config(tm, tn, cluster=1, swap_ab=True, split_k=s) for s in (1, 2, 4)]
    for tm, tn, cluster in STREAM_K_TILES:
        menu.append(R8Config(tm, tn, cluster, stream_k=True))
    # Unswapped two-box tiles: the CuTeDSL rung 8's unswapped tiles whose width is not a power
    # of two (unsplit: a split's fp32 D buffers of 160 or 192 columns take 80-96 KiB of ring).
    for tm, tn, cluster in UNSWAPPED_TWO_BOX:
        menu.append(R8Config(tm, tn, cluster))
    menu += [R8Config(128, 192, cluster, stream_k=True) for cluster in (1, 2)]
    for tn in SWAP_WIDE:
        for tm, cluster in WIDE_SWAP_TILES:
            menu += [R8Config(tm, tn, cluster, swap_ab=True, raster=r) for r in ("m", "n")]
    for tn in (w for w in SWAP_WIDE if w <= SWAP_WIDE_256):
        for cluster in (2, 1):
            menu += [R8Config(256, tn, cluster, swap_ab=True, raster=r) for r in ("m", "n")]
    # K split over the 128-row wide swaps, M's columns padded to fewer rows than an unswapped
    # split's 128: where one fits M, the only split the heuristic takes (``swapped_splits``;
    # README, "Nineteenth version").
    for tn in (w for w in SWAP_WIDE if w <= SWAP_WIDE_SPLIT):
        for split in (2, 4):
            menu += [
                R8Config(128, tn, 1, swap_ab=True, split_k=split, raster=r) for r in ("m", "n")
            ]
    # 192 rows of N a CTA (three consumer warpgroups of 64 rows): the row count cuBLAS and the
    # CuTeDSL rung 8 run at mid M where N / 128 row tiles overfill a wave and N / 256 leave it
    # part-empty (the heuristic's: ``one_wave_rows``, ``whole_wave_swap``).
    for tn in ROWS_192_WIDTHS:
        for cluster in (2, 1):
            menu += [R8Config(192, tn, cluster, swap_ab=True, raster=r) for r in ("m", "n")]
    # Stream-K over the 128-row wide swaps: N's row tiles leaving the last wave part-empty
    # run the tail's k-iterations on every SM (the CuTeDSL rung 8's nineteenth version).
    for tn in SWAP_WIDE:
        for cluster in (2, 1):
            menu += [
                R8Config(128, tn, cluster, swap_ab=True, stream_k=True, raster=r)
                for r in ("m", "n")
            ]
    # A in registers: a twin of every two-box tile it can run (``_regs_reason``), raster m
    # (the order does not change what a k-step reads), a variant until timed against the
    # shared-memory A it would replace (README, "Twenty-third version").
    menu += [
        dataclasses.replace(c, a_operand="regs")
        for c in menu
        if c.raster == "m" and _regs_reason(c) is None
    ]
    # Three boxes, A in registers only: the wide swaps of the widths two boxes cannot make
    # (``SWAP_WIDE_3``), as the two-box ones but raster m only and unsplit; variants until
    # timed (README, "Twenty-fourth version").
    for tn in SWAP_WIDE_3:
        three = [R8Config(tm, tn, cl, swap_ab=True, a_operand="regs") for tm, cl in WIDE_SWAP_TILES]
        three += [dataclasses.replace(c, stream_k=True) for c in three if c.tile_m == 128]
        menu += [c for c in three if _regs_reason(c) is None]
    return tuple(menu)


def _regs_reason(config: R8Config) -> str | None:
    """Why ``config`` cannot take A from registers (None: it can): only a tile of two or three
    boxes reads A more than once; a 128-row consumer (256-row tiles) issues two m64 wgmmas on
    different rows anyway; three consumers share 128 registers a thread without reallocation,
    which ptxas needs to keep register-A wgmmas in flight in a worker partition; and two
    limits of three boxes where ptxas runs out of registers (``backends.gluon._workarounds``)."""
    if not config.boxes[1]:
        return "A in registers: tiles of two or three boxes only (one box reads A once)"
    if config.consumer_rows != SUB_M or config.num_consumers > 2:
        return "A in registers: one or two consumers of 64 rows"
    if config.boxes[2] and config.num_consumers == 1 and config.tile_n > SWAP_WIDE_3_ONE:
        return f"three boxes on one consumer: up to {SWAP_WIDE_3_ONE} wide (ptxas serializes)"
    if config.boxes[2] and config.stream_k and config.tile_n > SWAP_WIDE_3_SK:
        return f"three boxes with stream-K: up to {SWAP_WIDE_3_SK} wide (registers spill)"
    return None


#: Widths of the wide swapped tiles (M on the wgmma N side): the sums of one or two powers of
#: two from 8 up that ``boxes`` splits, 72..256 (``harness.tile_cost.swap_fits`` pads M's
#: share of its column tiles to the next of them: 338 rows as 2 x 192, where CuTeDSL, with
#: every multiple of 8, runs 2 x 176).
SWAP_WIDE = (72, 80, 96, 128, 136, 144, 160, 192, 256)
#: Widths of three boxes, the sums of three powers of two from 8 up (88, 104, 112, 152, 168,
#: 176, 200, 208, 224): with A in registers a box's wgmma reads no A from shared memory, so a
#: third box costs only its B; M's share of its column tiles then comes within 8 columns as
#: often as the CuTeDSL rung 8's one-box widths (every multiple of 8) do but for 120, 184,
#: 232, 240 and 248. Wide swaps with ``a_operand=regs`` only.
SWAP_WIDE_3 = tuple(w for w in range(72, 257, 8) if (w // 8).bit_count() == 3)
#: The widest three-box tile of one consumer: with a k-step's register sets ptxas serializes the
#: register-A wgmmas of 64x208 and 64x224 (C7512; ``backends.gluon._workarounds``).
SWAP_WIDE_3_ONE = 200
#: The widest three-box stream-K tile: from 176 its partial's stores spill at 168 registers.
SWAP_WIDE_3_SK = 168
#: (tile_m, cluster) of the wide swaps (one, two or three boxes).
WIDE_SWAP_TILES = ((128, 2), (128, 1), (64, 1))
#: The widest wide swap split over K: its fp32 D^T buffers (128 x W x 4 bytes, 64 KiB at 128)
#: leave a ring of five stages or more.
SWAP_WIDE_SPLIT = 128
#: The widest 192-row wide swap: a consumer thread holds W / 2 fp32 accumulators (one m64 block)
#: within ``CONSUMER_REGS_3``, and its ring keeps three stages beside the D^T buffers.
SWAP_WIDE_192 = 160
#: The 192-row swapped widths the menu holds: 72..160.
ROWS_192_WIDTHS = tuple(w for w in SWAP_WIDE if w <= SWAP_WIDE_192)
#: The 192-row widths the model may pick in one wave: those that beat the pick in the H200 A/B
#: (README, "Eighteenth version": 96 at both one-wave shapes timed, 128 at 7 of 8; at the eighth,
#: 341x6144x16384, 96 won and is the model's pick); 144 ran 17-21 points behind 128 at both
#: shapes that timed it (96 CTAs against 128).
ROWS_192_PICKED = (96, 128)
#: The 192-row widths ``harness.tile_cost.whole_wave_swap`` may trade a stream-K pick for (as in
#: the CuTeDSL rung 8: up to 112; here the sums of powers of two among them).
ROWS_192_WHOLE = tuple(w for w in ROWS_192_WIDTHS if w <= 112)


#: Unswapped widths of two boxes (64 + 32, 128 + 32, 128 + 64): N's tiles where N is 5 or 3
#: times a power of two, as the CuTeDSL rung 8 (whose 128x160 pair ran 1427x5120x5120 at
#: 93.7 % of cuBLAS where this kernel's 128x256 pair ran 87.5 %: README, "Nineteenth version").
WIDE_UNSWAPPED = (96, 160, 192)
#: (tile_m, tile_n, cluster) of the unswapped two-box tiles (and 128x192 with stream-K); one
#: without an efficiency of its own in ``COST`` (``ueff:``) is tune-only (``_variant``): 64x96
#: and 64x192, added after 64x160's picks won their A/B (README, "Twenty-first version").
UNSWAPPED_TWO_BOX = (
    (64, 96, 1),
    (64, 160, 1),
    (64, 192, 1),
    (128, 160, 1),
    (128, 160, 2),
    (128, 192, 1),
    (128, 192, 2),
)
#: (tile_m, tile_n, cluster) of the stream-K configs.
STREAM_K_TILES = (
    (128, 256, 2),
    (128, 256, 1),
    (128, 128, 2),
    (128, 128, 1),
    (64, 256, 1),
    (64, 128, 1),
)
MENU = _menu()


def _valid(problem: Problem, config: R8Config) -> str | None:
    k_tiles = cdiv(problem.k, BLOCK_K)
    if config.split_k > k_tiles:
        return f"splits K = {problem.k} ({k_tiles} k-tiles) into {config.split_k} parts"
    if config.tile_m == 256 and not (config.wide_swap and config.tile_n <= SWAP_WIDE_256):
        return f"256 rows a CTA: only a wide swap up to {SWAP_WIDE_256} columns (accumulators)"
    if config.tile_m == 192 and not (config.wide_swap and config.tile_n <= SWAP_WIDE_192):
        return f"192 rows a CTA: only a wide swap up to {SWAP_WIDE_192} columns (registers)"
    if config.raster != "m" and not config.wide_swap:
        return "raster n walks a wide swap's rows first; other tiles walk M (raster m only)"
    _, tail, tail2 = config.boxes
    if tail2 & (tail2 - 1) or 0 < min(tail, tail2 or tail) < 8:
        return f"tile_n = {config.tile_n}: up to three boxes of powers of two, 8 wide or more"
    if tail2 and not (config.a_operand == "regs" and config.wide_swap):
        return (
            f"tile_n = {config.tile_n}: three boxes only as a wide swap with A in registers "
            "(each box's wgmma would read A from shared memory)"
        )
    if tail and not config.swap_ab and (config.tile_n not in WIDE_UNSWAPPED or config.split_k > 1):
        return f"tile_n = {config.tile_n} unswapped: two boxes only {WIDE_UNSWAPPED} wide, unsplit"
    if config.stream_k and (config.split_k > 1 or problem.n % 8):
        return "stream-K: unsplit, and D's rows 16-byte aligned (N % 8 == 0)"
    if config.stream_k and config.swap_ab and (config.tile_m, config.wide_swap) != (128, True):
        return "stream-K swapped: wide tiles of 128 rows only"
    if config.a_operand not in ("smem", "regs"):
        return f"a_operand = {config.a_operand!r}: 'smem' or 'regs'"
    if config.a_operand == "regs" and (why := _regs_reason(config)):
        return why
    rows, cols = workspace_shape(problem, config)
    if config.split_k > 1 and rows * cols * 4 > MAX_WORKSPACE_BYTES:
        return f"needs a {rows * cols * 4 >> 20} MiB split-K workspace (split-K is for small M x N)"
    return None


#: The shared cost model with this kernel family's constants: ``python -m harness fit-cost
#: reports/results --backend gluon --base backends.gluon.sm90.r8_shape_adaptive
#: --min-problems 3`` (the H200 tuning runs there: the sweep grid's,
#: ``tune-r8-random10{1,2,3}-gluon-h200-2026112*`` and the wide swaps'
#: ``tune-r8-wideswap{A,B}-gluon-h200-20261125``; README, "Cost model"). A tile no run timed
#: (or timed on fewer than 3 problems) takes its neighbours' efficiency
#: (``TileCostModel.tile_efficiency``). ``swap_cluster2_gain`` is measured, not fitted: the
#: wide swaps' pairs ran 1/0.978 the time of the same tile on one CTA (geomean of the 102
#: pairs both wide-swap runs timed, 1.021 and 1.024 run by run); the log-error fit leaves it
#: at 1, where every tie went to the pair (README, "Eighth version"). ``reduce_step_s`` alone
#: was fitted on the rest kept (``--only reduce_step_s``): ``streamk_reduce_kernel`` adds a
#: tile's partials in a loop, one load after another, so a tail of few tiles with many
#: contributors each waits out a DRAM round trip per partial (README, "Fifteenth version").
#: The 192-row efficiencies alone were fitted on the rest kept (``--only 'eff:192x*'``) to
#: ``tune-r8-rows192-gluon-h200-20261129`` among those runs: 192x96 on 4 problems, 192x128 on 8
#: (72 and 80 wide, timed on two and one, keep their neighbours'; README, "Eighteenth version").
#: The unswapped two-box tiles' own efficiencies (``ueff:``; the wide swaps of their size keep
#: ``eff:``) alone were fitted on the rest kept (``--only 'ueff:*'``) to
#: ``tune-r8-twobox{,64}-gluon-h200-20261204`` among those runs: 128x160 and 128x192 on 10
#: problems, 64x160 on 3 (README, "Twenty-first version"). The A/B that then kept the 64x160
#: picks (``tune-r8-64x160-ab-gluon-h200-20261204``) would refit 64x160 to 0.700, moving picks
#: to it at large M that no timing backs: left out of this fit until such a timing exists.
COST = HOPPER.with_params(
    {
        "hbm_bytes_per_s": 6.064e12,
        "sm_stream_bytes_per_s": 1.458e11,
        "sm_store_bytes_per_s": 8.3e17,
        "reduce_launch_s": 4.53e-06,
        "launch_s": 5.424e-06,
        "unit_s": 9.959e-07,
        "overlap_loss": 0.411,
        "cluster2_gain": 1,
        "swap_gain": 0.9542,
        "swap_cluster2_gain": 0.978,
        "idle_boost": 0.4846,
        "reduce_step_s": 2.986e-07,
        "eff:64x16": 0.1819,
        "eff:64x32": 0.2603,
        "eff:64x64": 0.4087,
        "eff:64x72": 0.3665,
        "eff:64x80": 0.4831,
        "eff:64x96": 0.6052,
        "eff:64x128": 0.6555,
        "eff:64x136": 0.5732,
        "eff:64x144": 0.5486,
        "eff:64x160": 0.537,
        "eff:64x192": 0.6928,
        "eff:64x256": 0.6941,
        "eff:128x16": 0.2032,
        "eff:128x32": 0.3179,
        "eff:128x64": 0.5399,
        "eff:128x72": 0.5628,
        "eff:128x80": 0.6235,
        "eff:128x96": 0.6723,
        "eff:128x128": 0.7233,
        "eff:128x136": 0.6573,
        "eff:128x144": 0.6662,
        "eff:128x160": 0.6947,
        "eff:128x192": 0.759,
        "eff:128x200": 0.7098,
        "eff:128x208": 0.7291,
        "eff:128x224": 0.7571,
        "eff:128x256": 0.7318,
        "eff:192x96": 0.75,
        "eff:192x128": 0.7463,
        "eff:256x80": 0.5997,
        "eff:256x96": 0.6467,
        "eff:256x128": 0.7405,
        "eff:256x136": 0.6224,
        "eff:256x144": 0.6407,
        "ueff:64x160": 0.6895,
        "ueff:128x160": 0.6325,
        "ueff:128x192": 0.6804,
    }
)


#: Tile families (tile_m, tile_n, swap_ab: what an efficiency of ``COST`` prices) whose pick
#: reads A from registers: a device A/B found ``a_operand=regs`` faster there, so the heuristic
#: takes the register twin, ``fit-cost`` prices the family from its timings (``priced``) and
#: the shared-memory twin is the variant (the two-box families here keep the efficiencies fitted
#: to their shared-memory timings: two and three register timings are too few to price them, and
#: they under-price the twin by the 2.5-5 % it measured). Each passed its rule, fixed before
#: its run (README,
#: "Twenty-sixth version"): the two-box 128x136 and 128x160 swaps (register / shared-memory
#: time 0.947 and 0.975, none above 1.02), the three-box 128x200, 128x208, 128x224 swaps (0.987,
#: 0.987, 0.913 of the own pick's time at unseen tuning shapes).
REGS_PICKED: frozenset[tuple[int, int, bool]] = frozenset(
    {(128, 136, True), (128, 160, True), (128, 200, True), (128, 208, True), (128, 224, True)}
)


def _priced_operand(tile_m: int, tile_n: int, swap_ab: bool, raster: str = "m") -> str:
    """The A operand of the kernel the cost model prices for a tile family: registers for a
    three-box tile (its only kernel) or a family of ``REGS_PICKED`` in raster m (the register
    twins' only raster: where ``heuristic_raster`` says n the family keeps A in shared
    memory), else shared memory."""
    three = R8Config(tile_m, tile_n, swap_ab=swap_ab).boxes[2] > 0
    picked = (tile_m, tile_n, swap_ab) in REGS_PICKED and raster == "m"
    return "regs" if three or picked else "smem"


def _as_priced(c: R8Config | None) -> R8Config | None:
    """``c`` with the A operand the model prices for its tile family: what the heuristic's
    rules (``harness.tile_cost``'s, which see tile geometry only) return becomes a config
    of this menu."""
    if c is None:
        return None
    return dataclasses.replace(
        c, a_operand=_priced_operand(c.tile_m, c.tile_n, c.swap_ab, c.raster)
    )


def priced(values: Mapping[str, Any]) -> bool:
    """Whether the shared cost model prices the kernel a record with these config values ran
    (``harness.fitcost.Priced``: ``fit-cost --base`` fits only such timings): the A operand
    ``_priced_operand`` names for its tile family ("smem" where a record predates the knob)."""
    operand = _priced_operand(
        int(values["tile_m"]),
        int(values["tile_n"]),
        bool(values.get("swap_ab")),
        str(values.get("raster", "m")),
    )
    return values.get("a_operand", "smem") == operand


def _variant(problem: Problem, config: R8Config, model: TileCostModel = COST) -> bool:
    """Knobs the cost model cannot see, set otherwise than the heuristic would: group 16, a
    wide swap's raster other than ``heuristic_raster``'s, or an A operand other than the one
    the model prices for the family (``_priced_operand``); a three-box tile until its family is
    ``REGS_PICKED``; and an unswapped two-box tile no tuning run has given an efficiency of its
    own (``ueff:`` in ``COST``: the wide swap of its size, whose ``eff:`` it would take, runs at
    another rate), tune-only until one has."""
    tile = (config.tile_m, config.tile_n)
    unpriced = not config.swap_ab and config.boxes[1] > 0 and tile not in model.unswapped_efficiency
    family = (config.tile_m, config.tile_n, config.swap_ab)
    return (
        unpriced
        or config.group != 8
        or config.raster != heuristic_raster(problem, config)
        or config.a_operand != _priced_operand(*family, config.raster)
        or (config.boxes[2] > 0 and family not in REGS_PICKED)
    )


def _ranked(problem: Problem) -> list[R8Config]:
    """Every valid menu config, cheapest first by the shared cost model (what ``bench --tune
    --tune-top`` times first), the variants (``_variant``) after all the others."""
    return ranked(problem, MENU, _valid, variant=_variant, block_k=BLOCK_K, model=COST)


#: The M band where an unswapped 64x160 pick gives way to the wide swap the heuristic would pick
#: without it (``_swap_over_64x160``). In A/B U and A/B V, at the 9 tuning shapes of M 262-664
#: where that pick is a swap of 64 or 128 rows, the swap took 0.823 of the 64x160's time on the
#: H100 (9 of 9 faster) and 0.924 on the H200 (8 of 9), where the model priced it 2.5 %
#: slower (README, "Twenty-eighth version"). Below 257 no A/B timed it.
SWAP_OVER_64X160_ROWS = (257, 1024)


def _heuristic(problem: Problem, model: TileCostModel = COST) -> R8Config:
    """``_model_pick``, unless it is an unswapped 64x160 that ``_swap_over_64x160`` replaces."""
    pick = _model_pick(problem, model)
    swap = _swap_over_64x160(problem, pick, model)
    return pick if swap is None else swap


def _swap_over_64x160(problem: Problem, pick: R8Config, model: TileCostModel) -> R8Config | None:
    """The pick ``_model_pick`` makes without the unswapped 64x160 (``model`` without its own
    efficiency, ``ueff:64x160``: the tile turns tune-only, ``_variant``), where ``pick`` is
    that tile at M in ``SWAP_OVER_64X160_ROWS`` and the pick without it is a swap of 64 or 128
    rows; else None. A/B U timed the other alternatives too, on the H100, and kept the 64x160
    over them: 64x128 (1.078x its time), the 192x128 swap (1.074x) and the 128x128 pair with
    stream-K (1.150x)."""
    lo, hi = SWAP_OVER_64X160_ROWS
    unswapped_64x160 = (pick.tile_m, pick.tile_n, pick.swap_ab) == (64, 160, False)
    if not (unswapped_64x160 and lo <= problem.m <= hi):
        return None
    alt = _model_pick(problem, model.without_own(64, 160))
    return alt if alt.swap_ab and alt.tile_m in (64, 128) else None


def _model_pick(problem: Problem, model: TileCostModel = COST) -> R8Config:
    """The cheapest config (``harness.tile_cost``) among those ``heuristic_allows``: swap-AB
    at M <= 64 < N (always at M <= 32, at M 33..64 against unswapped tiles wider than 64), no
    unsplit unswapped tile at M 65..95, narrow tiles only as the cover of the short side,
    splits that keep >= 512 of K of a grid under half a wave and K > 8192 (decode at any K;
    at M <= 32 and K > 8192 only where the 64-row cover fills less than
    ``COVER_SPLIT_MAX_FILL`` of the SMs), a 192-row tile only alone, ``ROWS_192_PICKED`` wide,
    in one wave (``harness.tile_cost.one_wave_rows``), group 8, and where a wide swap fits M
    no unswapped split (``swapped_splits``); then the 64-row unsplit twin of a 128-row wide
    swap split two ways (``harness.tile_cost.unsplit_twin``); then a 192-row swapped tile in
    place of a stream-K wide swap where its tiles fill two waves or more, the last to 90 %
    (``harness.tile_cost.whole_wave_swap``); at M 1024-5120 the three-box register swap of
    ``_transposes`` in place of an unswapped pick wasting 10 % of its waves' SM time
    (``harness.tile_cost.whole_wave_transpose``, as in CuTeDSL's rung 8); else
    ``_one_box_wider``. Ties go to the larger tile, then to cluster 2 (rung 7 at large M x N),
    then to no split and no stream-K.
    ``model`` prices the configs (``COST``; ``fit-cost --moves`` passes fitted constants to
    list the picks they would move, an unswapped two-box tile pickable where it names one).
    The shared rules see tile geometry; ``_as_priced`` gives the configs they return the A
    operand their family is priced with (a ``REGS_PICKED`` pick's 192-row whole-wave swap reads
    A from shared memory, as every 192-row tile does)."""

    allowed = functools.partial(_allowed, problem, model=model)

    def takes(c: R8Config | None) -> bool:  # a rule's replacement, if the heuristic allows it
        return c is not None and c in MENU and _valid(problem, c) is None and allowed(c)

    pick = cheapest(problem, MENU, _valid, allowed, block_k=BLOCK_K, model=model)
    unsplit = _as_priced(unsplit_twin(problem, pick))
    if takes(unsplit):
        pick = unsplit
    whole = _as_priced(whole_wave_swap(problem, pick, 192, ROWS_192_WHOLE))
    if whole in MENU and _valid(problem, whole) is None:
        return whole
    seconds = functools.partial(model.seconds, problem, block_k=BLOCK_K)
    transposed = whole_wave_transpose(problem, pick, _transposes(problem), seconds)
    if transposed is not None:
        return transposed
    wider = _as_priced(_one_box_wider(problem, pick))
    return wider if takes(wider) else pick


def _transposes(problem: Problem) -> list[R8Config]:
    """The swapped tiles ``harness.tile_cost.whole_wave_transpose`` may trade an unswapped pick
    for at M 1024-5120: the three-box wide swaps of the ``REGS_PICKED`` families (128 rows, A
    in registers, one CTA, raster m: their only kernel, as they were timed), unsplit. Not the
    two-box swaps: at the five shapes the shared rule first moved, those ran 5-10 points
    behind the pick at four (README, "Not taken, timed: the shared whole-wave transpose"); the
    three-box 128x224 ran 11-12 points ahead of the 128x256 pair at both tuning shapes that
    timed it there (README, "Twenty-seventh version")."""
    return [
        c
        for c in MENU
        if c.boxes[2]  # three boxes: a wide swap with A in registers (``_valid``)
        and (c.tile_m, c.tile_n, c.swap_ab) in REGS_PICKED
        and (c.cluster, c.raster, c.group, c.split_k, c.stream_k) == (1, "m", 8, 1, False)
        and _valid(problem, c) is None
    ]


#: The M up to which the heuristic still splits a K of at most ``SPLIT_SHORT_K``: decode,
#: where this kernel's unsplit swapped covers run slower than a split's (README, "Seventeenth
#: version").
SHORT_K_SPLIT_ROWS = 16


def _swap_widths(c: R8Config) -> tuple[int, ...]:
    """The widths ``swap_fits`` weighs ``c`` among: ``SWAP_WIDE``, and for a three-box tile
    those with the three-box widths of the ``REGS_PICKED`` families added. A two-box tile keeps
    ``SWAP_WIDE`` alone, so a picked three-box width adds a candidate and removes none: with
    176 among its widths, 192 would no longer be the narrowest for 338 rows in two columns,
    and where the model prices 128x176 low the pick would move to a third tile, not back to
    the 128x192 it had."""
    if not c.boxes[2]:
        return SWAP_WIDE
    return tuple(sorted({*SWAP_WIDE, *(n for m, n, swap in REGS_PICKED if swap and m == c.tile_m)}))


def _allowed(problem: Problem, c: R8Config, model: TileCostModel = COST) -> bool:
    """The heuristic's rules (``_heuristic``): what it may pick before the model ranks."""
    return (
        not _variant(problem, c, model)
        and one_wave_rows(problem, c, 192, ROWS_192_PICKED)
        and heuristic_allows(
            problem,
            c,
            BLOCK_K,
            _swap_widths(c),
            short_k_split_rows=SHORT_K_SPLIT_ROWS,
            swapped_splits=True,
        )
    )


def _explain(problem: Problem, c: R8Config) -> str:
    """Why ``_heuristic`` chose ``c``: tiles, waves, the model's time and its runner-up among
    the allowed configs (``harness.tile_cost.explain``; a rule's pick reads "by rule"),
    recorded with every result."""
    allowed = functools.partial(_allowed, problem)
    return explain(problem, c, MENU, _valid, allowed, model=COST, block_k=BLOCK_K)


def _one_box_wider(problem: Problem, c: R8Config) -> R8Config | None:
    """The 64-row twin of twice the width that replaces ``c``, a 128-row wide swap of 72 or
    80 columns (a 64-column box plus one of 8 or 16) splitting M into several column tiles,
    where the heuristic allows it (its width fits M: ``swap_fits``); else None. As many CTAs,
    half the column tiles, one consumer warpgroup whose wgmmas are 128 + 16 columns wide
    instead of two issuing 64 + 8. In one column (M <= 80) the 128-row tile ran at 99-118 %
    of cuBLAS; in two to four it ran 5-12 points behind the twin at all six tuning shapes that
    timed both (279x3584x4096: 79 % against 88 %; README, "Tenth version"), a difference the
    cost model's per-tile efficiencies do not capture."""
    if not (c.swap_ab and c.tile_m == 128 and c.tile_n in (72, 80) and problem.m > c.tile_n):
        return None
    return dataclasses.replace(c, tile_m=64, tile_n=2 * c.tile_n, cluster=1)


# -- host side ---------------------------------------------------------------------------------
def plan(problem: Problem, num_sms: int, config: R8Config) -> Plan:
    """The GEMM kernel's launch: descriptors in the kernel's view, stages, grid."""
    rows, cols = config.oriented(problem)
    box_m = config.consumer_rows * config.cluster  # one consumer's A box, 64 or 128 rows a CTA
    split = config.split_k > 1
    out_dtype = "fp32" if split else problem.dtype
    cta = ((1, 0),) if config.cluster == 2 else ()
    a_op, b_op = ("b", "a") if config.swap_ab else ("a", "b")
    head, tail, tail2 = config.boxes
    b_cta = ((0, 0),) if config.cluster == 2 else ()  # multicast: each CTA holds the whole box
    c_cta = cta
    if config.swap_ab:  # D's box is the transposed tile: [tile_n rows of D, box_m columns]
        c_box, c2_box, c3_box = (head, box_m), (tail, box_m), (tail2, box_m)
        c_cta = ((0, 1),) if config.cluster == 2 else ()  # the CTAs split D's columns
    elif tail:  # an unswapped two-box tile: D's head columns, then its tail's, side by side
        c_box, c2_box, c3_box = (box_m, head), (box_m, tail), (box_m, tail2)
    else:
        c_box = c2_box = c3_box = (box_m, config.epi_n)
    tiles = cdiv(rows, box_m * config.num_consumers) * cdiv(cols, config.tile_n) * config.split_k
    programs = num_sms // config.cluster
    # Stream-K always runs one program per SM (cluster): its tail is spread over all of them.
    persistent = tiles > programs or config.stream_k
    c_op, c_dtype = ("w", out_dtype) if split else ("c", None)
    b = Desc(b_op, (head, BLOCK_K), b_cta)
    c = Desc(c_op, c_box, c_cta, dtype=c_dtype)
    b2 = Desc(b_op, (tail, BLOCK_K), b_cta) if tail else b  # a one-box tile: unused
    c2 = Desc(c_op, c2_box, c_cta, dtype=c_dtype) if tail else c
    return Plan(
        args=(
            Desc(a_op, (box_m, BLOCK_K), cta),
            b,
            b2,
            Desc(b_op, (tail2, BLOCK_K), b_cta) if tail2 else b2,  # at most two boxes: unused
            c,
            c2,
            Desc(c_op, c3_box, c_cta, dtype=c_dtype) if tail2 else c2,
            # stream-K's partials; any other config ignores it (D stands in)
            Ptr("w", dtype="fp32") if config.stream_k else Ptr("c"),
            rows,
            cols,
            problem.k,
            slice_rows(problem, config),
        ),
        constexprs=dict(
            NUM_STAGES=config.stages(4 if split else 2),
            GROUP_M=config.group,
            NUM_CONSUMERS=config.num_consumers,
            CLUSTER=config.cluster,
            SPLIT_K=config.split_k,
            STREAM_K=config.stream_k,
            SWAP_AB=config.swap_ab,
            PERSISTENT=persistent,
            TAIL_N=tail,
            TAIL2_N=tail2,
            ROWS_FIRST=rows_first(config),
            A_KS=regs_set_k(config),
            PRODUCER_WARPS=PRODUCER_WARPS,
            PRODUCER_REGS=PRODUCER_REGS,
            CONSUMER_REGS=CONSUMER_REGS_3 if config.num_consumers == 3 else CONSUMER_REGS,
        ),
        grid=(programs if persistent else tiles,),
        num_warps=4,  # the default partition: consumer 0; consumers 1 and 2 are 4-warp workers
        num_ctas=config.cluster,
    )


def regs_set_k(config: R8Config) -> int:
    """The K-columns of A a consumer's register set holds (the kernel's ``A_KS``): 0 with A in
    shared memory; a whole k-step on one consumer, and on two for a two-box tile up to
    ``REGS_DEEP_MAX`` wide without stream-K; else a 32-column slice up to it (three boxes,
    whose k-step sets ptxas serializes; stream-K, whose spill) and 16 wider, where a k-step's
    would be serialized (``backends.gluon._workarounds``, defect 1). Narrower sets leave less
    work in flight: a 16-column slice of a narrow tile is likely too little to cover a wgmma's
    latency (README, "Twenty-fifth version")."""
    if config.a_operand != "regs":
        return 0
    narrow = config.tile_n <= REGS_DEEP_MAX
    if config.num_consumers == 1 or (narrow and not config.boxes[2] and not config.stream_k):
        return BLOCK_K
    return 32 if narrow else 16


def rows_first(config: R8Config) -> bool:
    """The tile order: kernel rows first within a group, but a wide swap's raster m walks its
    column tiles (D's M) first. A narrow cover has one column: the same order either way."""
    return not (config.wide_swap and config.raster == "m")


def slice_rows(problem: Problem, config: R8Config) -> int:
    """Rows of D per split-K slice of the workspace: M rounded up to the tile's D rows, so no
    tile's TMA store crosses into the next slice."""
    d_rows = config.tile_n if config.swap_ab else config.tile_rows
    return cdiv(problem.m, d_rows) * d_rows


def workspace_shape(problem: Problem, config: R8Config) -> tuple[int, int]:
    """The fp32 split-K workspace: ``split_k`` slices of ``split_rows`` x N (16-byte rows)."""
    return config.split_k * slice_rows(problem, config), cdiv(problem.n, 4) * 4


def reduce_plan(problem: Problem, config: R8Config) -> Plan:
    block_m = min(8, 1 << (problem.m - 1).bit_length())
    return Plan(
        args=(
            Ptr("w", dtype="fp32"),
            Ptr("c"),
            problem.m,
            problem.n,
            workspace_shape(problem, config)[1],
            slice_rows(problem, config),
        ),
        constexprs=dict(SPLIT_K=config.split_k, BLOCK_M=block_m, BLOCK_N=REDUCE_BLOCK_N),
        grid=(cdiv(problem.m, block_m), cdiv(problem.n, REDUCE_BLOCK_N)),
        num_warps=4,
    )


def stream_k(problem: Problem, num_sms: int, config: R8Config) -> StreamK:
    """The stream-K schedule the GEMM kernel walks (``harness.tile_cost.StreamK``)."""
    return config.schedule(problem, num_sms, BLOCK_K)


def streamk_workspace_shape(num_sms: int, config: R8Config) -> tuple[int, int]:
    """Two partial cluster tiles per program, fp32, one slot after another."""
    return 2 * (num_sms // config.cluster) * config.tile_rows, config.tile_n


def streamk_reduce_plan(problem: Problem, num_sms: int, config: R8Config) -> Plan:
    sk = stream_k(problem, num_sms, config)
    rows, cols = config.oriented(problem)
    return Plan(
        args=(Ptr("w", dtype="fp32"), Ptr("c"), rows, cols, problem.k, sk.programs),
        constexprs=dict(
            TILE_M=config.tile_rows,
            TILE_N=config.tile_n,
            TILE_K=BLOCK_K,
            GROUP_M=config.group,
            BLOCK_M=SK_REDUCE_BLOCK_M,
            BLOCK_N=SK_REDUCE_BLOCK_N,
            SWAP_AB=config.swap_ab,
            ROWS_FIRST=rows_first(config),
        ),
        grid=(
            max(1, sk.sk_tiles),
            config.tile_rows // SK_REDUCE_BLOCK_M,
            cdiv(config.tile_n, SK_REDUCE_BLOCK_N),
        ),
        num_warps=4,
    )


class ShapeAdaptiveKernel(GluonKernel):
    """Rung 7's host side plus the two K decompositions that need a second kernel: split-K
    (the fp32 workspace summed by ``splitk_reduce_kernel``) and stream-K (the tail's partials
    summed by ``streamk_reduce_kernel``). Workspaces are allocated once per problem, outside
    the launch, and never zeroed: every element a reduction reads was written by one unit."""

    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        import torch

        assert isinstance(config, R8Config)
        if config.split_k == 1 and not config.stream_k:
            return super()._launcher(problem, config)
        dev = torch.device("cuda", torch.cuda.current_device())
        num_sms = torch.cuda.get_device_properties(dev).multi_processor_count
        gemm = bind(self._jit_fn, plan(problem, num_sms, config), problem.dtype)
        if config.stream_k:
            sk = stream_k(problem, num_sms, config)
            reduce = bind(
                streamk_reduce_kernel, streamk_reduce_plan(problem, num_sms, config), problem.dtype
            )
            shape = streamk_workspace_shape(num_sms, config) if sk.sk_tiles else (1, 4)
            w = torch.empty(shape, dtype=torch.float32, device=dev)

            def run_sk(a: Any, b: Any, d: Any) -> None:
                tensors = {"a": a, "b": b, "c": d, "w": w}
                gemm(tensors)
                if sk.sk_tiles:  # a problem of whole waves has no tail to reduce
                    reduce(tensors)

            return tma_launch(problem, run_sk, dev, pad_d=False)  # N % 8 == 0: never padded
        reduce = bind(splitk_reduce_kernel, reduce_plan(problem, config), problem.dtype)
        w = torch.empty(workspace_shape(problem, config), dtype=torch.float32, device=dev)

        def run(a: Any, b: Any, d: Any) -> None:
            tensors = {"a": a, "b": b, "c": d, "w": w}
            gemm(tensors)
            reduce(tensors)

        return tma_launch(problem, run, dev, pad_d=False)  # D is written by pointers

    def codegen(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> Artifacts:
        """The GEMM kernel's artifacts; with split-K or stream-K, ``reduce_codegen`` has the
        second one."""
        art = super().codegen(problem, arch, config)
        chosen = self.config_for(problem, config)
        if isinstance(chosen, R8Config) and (chosen.split_k > 1 or chosen.stream_k):
            which = "streamk" if chosen.stream_k else "splitk"
            note = f"{chosen.name}: plus {which}_reduce_kernel (see reduce_codegen)"
            art = dataclasses.replace(art, notes=(*art.notes, note))
        return art

    def reduce_codegen(
        self, problem: Problem, arch: str, config: KernelConfig | None = None
    ) -> Artifacts:
        chosen = self.config_for(problem, config)
        assert isinstance(chosen, R8Config), "not a rung-8 config"
        if chosen.stream_k:
            reduce = streamk_reduce_plan(problem, DEFAULT_NUM_SMS, chosen)
            return compile_offline(streamk_reduce_kernel, reduce, problem.dtype, arch)
        assert chosen.split_k > 1, "no split-K or stream-K in this config"
        return compile_offline(
            splitk_reduce_kernel, reduce_plan(problem, chosen), problem.dtype, arch
        )


KERNEL = ShapeAdaptiveKernel(
    spec(__name__),
    jit_fn=r8_shape_adaptive_kernel,
    plan=plan,
    space=ConfigSpace(
        MENU, _heuristic, module=__name__, valid=_valid, rank=_ranked, explain=_explain
    ),
    notes=(
        "B multicast (cluster=2): as rung 7, the lead CTA issues the whole B tile",
        "swap_ab: D^T tile transposed in registers (gl.permute), TMA-stored as D's box",
    ),
)
