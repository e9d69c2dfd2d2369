"""CuTeDSL · sm_90a · rung 8 ``shape_adaptive`` — rung 7's kernel family, configured per problem.

Changes from rung 7: the configuration is chosen per problem. Rung 7's one 256x256 cluster tile
makes 16 cluster tiles (32 CTAs) at M = 1, N = 4096 and 16 at 1024^2, far below the 132 SMs.
Rung 8 keeps the kernel (persistent, warp-specialized, TMA ring, wgmma consumers, B multicast in
a cluster) and makes its shape a config (``R8Config``: ``harness.tile_cost.GemmConfig``, the
knobs every DSL's rung 8 shares, plus ``persistent`` and ``epilogue``):

* ``tile_m`` x ``tile_n``: the CTA tile on the wgmma M x N sides. ``tile_m`` is 64 (one consumer
  warpgroup), 128 (two, as rung 7), 192 (three of 64 rows at 152 registers a thread; wide
  swaps of 72 to 160 columns only, picked 104 or 112 wide where their tiles fill one wave, or
  in place of stream-K or of a part-empty wave of unswapped tiles where they fill whole
  waves; on an H100 also 72 to 96 wide in place of a one-CTA raster-m swap that leaves over a
  tenth of one wave idle: ``harness.tile_cost.fuller_wave_rows``) or 256 (two of 128 rows
  each; wide swaps up to 144 columns, and 152 and 160 by the TMA store only, tune-only);
  ``tile_n`` 16 to 256 (the wgmma N; 16 and 32 only swapped; 160 for N = 10240, which
  128-wide tiles quantize badly; 192, a step between 128 and 256 for tile counts that fill the
  last wave better).
* ``cluster``: 1, or 2 CTAs along M sharing the B tile by TMA multicast (rung 7); 4 for the
  128-row wide swaps of ``CLUSTER4_WIDTHS`` (four row tiles of N sharing M's column tile, as
  cuBLAS's ``128x72 ... 4x1`` at M 190-230; the model does not price it: picked only on an
  H100, by ``harness.tile_cost.swap_clusters``, the space's ``on_gpu`` rule), and for the
  64-row wide swaps of ``CLUSTER4_64_WIDTHS`` (alone or 4x2; 4x2 at widths up to 112
  picked only on an H100, by ``swap_clusters``' ``sixty_four_row_clusters``, A/B AP).
* ``swap_ab``: compute D^T[N, M] = B A^T. Small M then sits on the wgmma N side (n16 / n32 /
  n64, the narrowest that covers M) and N fills the M side (64 or 128 rows a CTA); at M
  1024-5120 a wide swap of 11 to 33 column tiles of M may fill whole waves where unswapped
  tiles leave one part-empty (``harness.tile_cost.whole_wave_transpose``; on an H100 one
  narrower than 144 at N >= 4096 gives way to the pick it replaced: ``transpose_gives_way``,
  A/B AR); A and B
  swap roles and D is written through a column-major view (D^T(i, j) at i + j * ld): by TMA
  store (``stmatrix .trans`` into M-major buffers; ``_epilogue.py``) or, ``epilogue=direct``,
  by predicated stores from registers, whose per-element writes along D's rows half-fill
  each 32-byte sector. The narrow covers (decode) take the direct stores, whose D is a few
  KiB; the wide swaps the TMA store (backend README, "Eleventh version").
* ``split_k``: the k-tiles are divided evenly over ``split_k`` work units per output tile (the
  scheduler's L mode). Each writes its fp32 partial tile to its own slice of a workspace
  (``split_k`` x M x N fp32, allocated when the launcher is built, never in the launch);
  every element of every slice is written exactly once, so nothing is zeroed (an unswapped
  tile inside the matrix in 8-byte pairs where N % 8 == 0: ``store_split_partial``, whose
  docstring says why; the others one predicated fp32 at a time). A second small
  CuTeDSL kernel (``reduce``) then sums the slices in the order 0, 1, ... and writes D once:
  deterministic, no atomics.
* ``stream_k``: whole waves of tiles as data-parallel work, and the last, part-empty wave's
  k-iterations spread evenly over the first programs, as many as give each at least
  ``SK_MIN_ITERS`` (``harness.tile_cost.StreamK``, below):
  unswapped tiles, and the wide swapped tiles of 128 rows, whose tail is N's row tiles.
* ``persistent``: 1 = CTAs loop over tiles (rung 7) on the grid min(tiles, SMs / cluster), or
  on the full SMs / cluster where the kernel walks its units itself (stream-K, grouped). 0 =
  one CTA per work unit through CUTLASS's scheduler, the hardware handing out the waves.
* ``raster`` / ``group``: the tile order. A persistent, unswapped, unsplit config with raster
  m and a group (every such heuristic pick: group 8) walks its tiles itself in ``grouped_tile``'s
  order, stream-K's walk without a tail: ``group``-row bands of cluster tiles, M fastest, the
  last band as tall as the rows left, so nothing is padded. The others take CUTLASS's
  persistent scheduler: ungrouped (swapped and split configs, ``group=1``) or grouped with
  its padding stepped over (raster n, non-persistent; ``_workarounds.py``, defect 1).
  ``raster`` names D's side walked first, swapped or not: raster m walks a swapped config's
  column tiles (D's M) first, so the tiles reading one block of B run in the same wave.
* ``epilogue``: overlap / serial (rung 7; overlap needs the TMA-store epilogue and an
  unswapped tile: N % 8 == 0, no split; with stream-K it is the whole tiles' D that waits
  for the next unit's first MMAs) / direct (swapped tiles: predicated stores; "serial"
  without a TMA store stores directly too) / deferred (overlap's placement, the whole tile
  in one round of buffers whose reads the next tile's epilogue waits on; six small
  unswapped tiles, ``DEFERRED_TILES``; tune-only: the heuristic never picks it).
* ``release``: warp (every consumer warp tells each CTA of the cluster a stage is free, as
  CuTeDSL's ``PipelineTmaAsync`` does) / warpgroup (only each consumer warpgroup's first
  warp, as CUTLASS C++ does: a quarter of the arrivals; twins of the four-CTA clusters and
  rung 7's pair, ``_release_twin``; tune-only). A quiet knob: "warp" stays out of names.
* ``cluster_n``: 1, or CTAs along the columns (swapped: M's column tiles) sharing the A tile
  (the weights) by TMA multicast, a ``cluster`` x ``cluster_n`` grid of CTAs
  (``CLUSTERS_2D``, the four-CTA widths). A quiet knob: 1 stays out of names. On an H100,
  ``swap_clusters`` picks 1x3 where the four-CTA move's tile holds M in three column tiles
  and 39 clusters of three hold its cluster tiles; the others are tune-only.

Stages are derived, not a knob: as many as fit next to the epilogue buffers, at most 8 (12 for
the swapped tiles, which stream B from DRAM).

Shared-memory arithmetic (fp16/bf16; BLOCK_K = 64; 227 KiB usable, 1 KiB kept for barriers;
epilogue buffers tile_m x 32 x 2 B, min(4, tile_n / 32) of them (5 for 160 columns, 6 for
192: the sub-tiles of a tile must fill whole rounds of buffers), only with the TMA-store
epilogue; "direct" = split, N % 8 != 0 or epilogue=direct; stream-K's partials leave from
registers, so its configs take the TMA-store column; a swapped tile's TMA store takes two
rounds of up to 32 columns of (64 or 128)-row sub-tiles, 8 KiB or 16 KiB, one stage fewer
at some widths, e.g. 128x72 8 instead of 9):

    tile      one stage   epilogue   stages (TMA store)   stages (direct)
    128x256     48 KiB     32 KiB        4 (rung 7)             4
    128x192     40 KiB     48 KiB        4                      5
    128x160     36 KiB     40 KiB        5                      6
    128x128     32 KiB     32 KiB        6                      7
    128x64      24 KiB     16 KiB        8                      8
    64x256      40 KiB     16 KiB        5                      5
    64x160      28 KiB     20 KiB        7                      8
    64x128      24 KiB     16 KiB        8                      8
    64x64       16 KiB      8 KiB        8                      8
    128x16/32/64  18/20/24 KiB  8/16/16    12/10/8             12/11/9   (swap_ab: tile_n covers M)
    64x16/32/64   10/12/16 KiB  4/8/8      12                     12
    64xW, 128xW, 256xW  (rows + W) x 128 B  8 / 16 / 16 KiB   min(12, what fits)   (wide
                 swaps, W = 72..256, 72..160 at 256 rows: 64x144 26 KiB, 8 stages either
                 way; 128x72 25 KiB, 8 / 9; 128x256 48 KiB, 4; 256x144 50 KiB, 4; 256x160
                 52 KiB, 4, the TMA store only)
    192xW       (192 + W) x 128 B  24 KiB (two rounds of 32 columns of 192-row sub-tiles)
                 W = 72..160: 192x72 33 KiB, 6 / 6; 192x104 37 KiB, 5 / 6; 192x160 44 KiB, 4 / 5
    deferred    the whole tile (tile_n / 32 buffers): 64x256 32 KiB, 4 stages; 128x128 32 KiB,
                 6; 64x128 and 128x64 16 KiB, 8; 64x64 8 KiB, 8

Barriers (as rung 7; one pair per stage, counts are arrivals per phase):

    name          arrives                                   waits        meaning
    ab_full[s]    producer lane (arrive.expect_tx of the    consumers    A + whole B tile of
                  stage's bytes) + TMA bytes of all CTAs                 stage s landed
    ab_empty[s]   one elected lane of each consumer warp    producer     stage s free in every
                  of every CTA in this CTA's cluster row                 CTA it writes to
                  and column ((cluster + cluster_n - 1) x
                  consumers x 4; release=warpgroup: the first warp of each consumer
                  warpgroup only, x consumers instead)

Stream-K (``harness.tile_cost.StreamK``, the schedule every DSL's rung 8 implements): the
grid is always P = SMs / cluster programs (clusters). The output's ``tiles`` cluster tiles
(tile_m x cluster rows, tile_n columns, numbered in the Gluon rung 8's order: ``group``-row
bands swept column by column, ``grouped_tile``) take k_tiles = cdiv(K, 64) k-iterations each.
Program p walks work units u = p, p + P, ...: the first dp_tiles = (tiles // P) x P units are
whole tiles, stored to D by the TMA-store epilogue (overlapped: under the first MMAs of the
program's next unit, whole tile or tail segment); the sk_tiles = tiles - dp_tiles
tail tiles form one space of I = sk_tiles x k_tiles iterations, shared by the first S
programs, S = I // SK_MIN_ITERS within [sk_tiles, P] (``tail_programs``: spread over all P,
a tail of a few tiles would give each program a k-iteration or two and a whole partial to
store for it), of which program p < S takes [p I // S, (p + 1) I // S) — at most a tile, so
at most two segments (the rest of the tile it starts in, then the next), units dp_tiles + p
and dp_tiles + P + p; a program from S on runs none. A segment's fp32
partial goes from registers straight into workspace slot u - dp_tiles (2 x P slots of one
cluster tile, row-major: 2 x SMs x tile_m x tile_n x 4 B, 33 MiB for 128x256, allocated once
per launcher). An empty segment is skipped by both roles (no load, no barrier, no store): the
producer and the consumers walk the same units with the same arithmetic
(``_work_unit``), so they stay in step, and so do the two CTAs of a cluster (B
multicast). The second kernel, ``streamk_reduce``, sums each tail tile's partials in program
order (deterministic: no atomics, nothing zeroed) and writes D; it runs only when there is a
tail. The grouped data-parallel configs take the same walk with no tail (dp_tiles = tiles,
every unit a whole tile, stored as rung 7 stores it). Swapped, the schedule is the same over
D^T's tiles (N's row tiles x M's column tiles), walked in the order ``raster`` names (bands of
one row tile for raster m, D's M first; one band of every row tile for raster n); whole tiles
leave by the swapped TMA store, the partials as above (their orientation is the kernel's),
and the reduce gives neighbouring threads neighbouring rows of a tail tile, so its 2-byte
stores run down D^T's columns, each predicated on M.

Both reduces run after the GEMM kernel on the same stream: stream order is their only
synchronization.

``_heuristic``: ``harness.tile_cost.cheapest``, the config of least estimated time under the
cost model every rung 8 shares (the busiest program's k-steps at the tile's MMA rate, the cold
operand stream, DRAM, per-unit overheads, the split-K / stream-K reduce), among the menu entries
that are not variants (``_variant``: ``heuristic_raster``, m or a wide swap's by B's size; group
8; persistent; the epilogue ``_epilogue_for`` names: rung 7's overlap wherever D
allows it, stream-K included; swapped, the TMA store for wide tiles and direct stores for narrow
covers), that ``harness.tile_cost.heuristic_allows`` (swap A and B exactly when M <= 64 < N,
with tile_n the narrowest of 16/32/64 covering M; narrow tiles only as that cover; a wide
swap in one column tile only at K <= ``ONE_COLUMN_SWAP_K``; splits keeping >= 512 of K, of a
grid under half a wave, and of decode only where the cover it would run fills less than
``COVER_SPLIT_MAX_FILL`` of the SMs: at M <= 32 the 64-row cover, at M 33..64 the split cover
below, within one wave, ``SPLIT_COVERS`` passed as ``split_covers``; README, "Survey AW and
A/B AY"), on a cluster ``HEURISTIC_CLUSTERS`` allows; at M 33..64
``harness.tile_cost.split_cover`` then trades the 64-column cover for a narrower one, M in two
or three column tiles, where that fills more of one wave (README, "Twenty-seventh version": the
cover streams the weights slower per CTA than the model says); and
``harness.tile_cost.whole_wave_swap`` trades a stream-K wide swap for a 192-row swapped tile
where its tiles fill two waves or more, the last to 90 % or more (README, "Twenty-eighth
version": stream-K's partials and reduce cost more than a whole last wave); and
``harness.tile_cost.whole_wave_transpose`` trades an unswapped pick wasting 10 % of its waves'
SM time or more (idle slots, rows past M: ``wasted_share``) at M 1024-5120 for a 128-row (or
one-wave 192-row) swapped tile whose tiles fill 95 % of theirs and waste 3 points less, the
widths ``swap_fits`` refuses there (M in more than 8 column tiles, or M past N) open (README,
"Thirtieth version": unswapped tiles leave a wave part-empty there; "Thirty-first version": or
pad M, 1811x6144x6144's 128x256 pair 12 %).
``_ranked`` orders the whole menu by the same model for ``bench --tune --tune-top N``; a tuned table
(``tuned/<gpu>.json``) overrides the heuristic for the exact shapes it holds.

TMA loads pass an explicit L2 cache policy (``TMA_CACHE_HINT``, CUTLASS C++'s EVICT_NORMAL):
CuTeDSL 4.8.1 otherwise emits ``.L2::cache_hint`` with a policy of 0 (SASS ``desc[URZ]``),
which neither CUTLASS C++ (0x1000000000000000) nor Triton (no hint) issues (measured: no
faster than 0 or EVICT_LAST; README, thirteenth version).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from backends.cutedsl import spec
from backends.cutedsl._host import (
    DEFAULT_NUM_SMS,
    CuteDslKernel,
    resident_clusters,
    tma_store_variant,
)
from backends.cutedsl._operands import operand_tensors
from backends.cutedsl._workarounds import padded_unit, stage_layout
from backends.cutedsl.sm90._epilogue import (
    EpilogueConfig,
    TmaStoreEpilogue,
    store_direct,
    tma_store_atom,
)
from backends.cutedsl.sm90.r7_multi_consumer import mma_k_tile
from harness.protocol import ConfigSpace, Problem, cdiv, quiet_knob
from harness.tile_cost import (
    HOPPER,
    NARROW,
    SK_MIN_ITERS,
    SPLIT_COVERS,
    SWAP_ALIGN,
    GemmConfig,
    StreamK,
    TileCostModel,
    cheapest,
    explain,
    heuristic_allows,
    heuristic_raster,
    one_wave_rows,
    padded_rows_swap,
    ranked,
    split_cover,
    square_tile_swap,
    swap_clusters,
    transpose_gives_way,
    whole_wave_swap,
    whole_wave_transpose,
)

# -- constants -------------------------------------------------------------------------------
BLOCK_K = 64  # k-tile: one 128-byte swizzle row of fp16/bf16
SMEM_BYTES = 227 * 1024  # sm_90 dynamic shared memory per CTA
BARRIER_BYTES = 1024  # ab_full/ab_empty for up to MAX_STAGES, rounded up to the 1 KiB alignment
TMA_CACHE_HINT = 0x1000000000000000  # L2 policy EVICT_NORMAL as CUTLASS C++ passes (CacheHintSm90)
MAX_STAGES = 8  # beyond this the ring only holds more bytes than TMA latency needs
# Swapped (decode) tiles stream B from DRAM with no reuse: a deeper ring keeps more of it in
# flight per SM (128x16: 11 x 16 KiB; 64x16: 11 x 8 KiB), one CTA per SM being all that fits.
MAX_STAGES_SWAP = 12
EPI_N = 32  # epilogue sub-tile width (tile_m x 32, one TMA store)
MAX_EPI_STAGES = 4  # epilogue buffers in flight
PRODUCER_REGS = 40  # setmaxnreg.dec for the producer warpgroup
CONSUMER_REGS = 232  # setmaxnreg.inc for the consumer warpgroups (one or two of them)
# Three consumers (192 rows) share the SM's 64K registers four warpgroups ways: 40 x 128 for
# the producer leaves 157 a consumer thread, rounded down to setmaxnreg's step of 8. Asking for
# more would leave setmaxnreg.inc waiting for registers no warpgroup gives back.
CONSUMER_REGS_3 = 152
THREADS_PER_WG = 128
# Consumer warpgroups a CTA of 64, 128 or 256 rows: 64 rows each, or 128 in a 256-row tile (a
# 192-row tile takes three of 64 rows, under ``CONSUMER_REGS_3``).
MAX_CONSUMERS = 2
EPI_STORE_WARP = THREADS_PER_WG // 32  # first warp of the first consumer issues TMA stores
MAX_GRID_Z = 65535  # a non-persistent grid puts its clusters on grid.z
REDUCE_THREADS, REDUCE_VEC = 256, 4  # split-K reduce: threads a block, elements a thread
# Stream-K reduce: threads a block, consecutive fp32 a thread (one 16-byte load per partial).
SK_REDUCE_THREADS, SK_REDUCE_VEC = 256, 4


@dataclass(frozen=True)
class R8Config(GemmConfig):
    """Rung 8's knobs: ``harness.tile_cost.GemmConfig``, the vocabulary every rung 8 shares
    (tile_m, tile_n, cluster, swap_ab, split_k, stream_k, raster, group), plus two of this
    kernel's own (module docstring)."""

    persistent: bool = True  # grid min(tiles, SMs) looping over tiles; else one CTA per tile
    #: "overlap": TMA store of tile i under tile i + 1's first MMAs; "serial": TMA store after
    #: the mainloop; "direct": predicated stores from registers (swapped tiles' A/B twin);
    #: "deferred": overlap's placement, the whole tile staged in one round whose reads the
    #: next tile's epilogue waits on (``DEFERRED_TILES``; tune-only). The TMA store needs
    #: N % 8 == 0 and no split; without it "serial" stores directly too.
    epilogue: str = "overlap"
    #: Who tells a cluster's producers a stage is free: "warp" (CuTeDSL's ``PipelineTmaAsync``:
    #: one lane of every consumer warp arrives on every CTA of the cluster, four arrivals per
    #: warpgroup per CTA) or "warpgroup" (one lane of each consumer warpgroup's first warp per
    #: CTA, as CUTLASS C++'s ``PipelineTmaAsync`` spreads them: a quarter of the remote
    #: arrivals; ``_release_twin``, tune-only).
    release: str = quiet_knob("warp")
    #: CTAs along the kernel's columns (swapped: M's column tiles) sharing the A tile (swapped:
    #: the weights) by TMA multicast, beside ``cluster`` CTAs along the rows sharing B: a
    #: cluster x cluster_n grid of CTAs (``CLUSTERS_2D``; tune-only). 1 stays out of names.
    cluster_n: int = quiet_knob(1)

    @property
    def label(self) -> str:
        """``GemmConfig.label``, a 2-D cluster named rows x columns (``128x80 c2x3 swap``)."""
        if self.cluster_n == 1:
            return super().label
        parts = [p for p in super().label.split() if not (p[0] == "c" and p[1:].isdigit())]
        return " ".join([parts[0], f"c{self.cluster}x{self.cluster_n}", *parts[1:]])

    def tiles(self, problem: Problem) -> int:
        """Cluster tiles: ``tile_rows`` rows by ``cluster_n`` column tiles."""
        rows, cols = self.oriented(problem)
        return cdiv(rows, self.tile_rows) * cdiv(cols, self.tile_n * self.cluster_n)

    def ctas(self, problem: Problem) -> int:
        """CTAs the work would occupy at once if unbounded (``GemmConfig.ctas``, 2-D)."""
        return self.tiles(problem) * self.cluster * self.cluster_n * self.split_k


#: (tile_m, tile_n, cluster) of the stream-K configs: the unswapped tiles a tail wave is made
#: of (the Gluon rung 8's six, plus the 192-wide tile's two).
STREAM_K_TILES = (
    (128, 256, 2),
    (128, 256, 1),
    (128, 192, 2),
    (128, 192, 1),
    (128, 128, 2),
    (128, 128, 1),
    (64, 256, 1),
    (64, 128, 1),
)


#: Widths of the wide swapped tiles (``harness.tile_cost.swap_fits``: M's share, rounded up to
#: ``SWAP_ALIGN``, the wgmma N step of 8): every such width above the narrow covers, up to
#: wgmma's largest N, 256 — 72..256.
SWAP_WIDE = tuple(range(max(NARROW) + SWAP_ALIGN, 256 + 1, SWAP_ALIGN))
#: The widest swapped tile with 256 rows: a thread of its two warpgroups holds W fp32
#: accumulators (two m64nW blocks) beside the direct store's addresses, within the consumers'
#: 232 registers up to W = 144 (152 spills 36 bytes, 192 380: ptxas 13.0).
SWAP_WIDE_256 = 144
#: Wider 256-row swaps that leave by the TMA store alone: without the direct store's addresses
#: a thread holds up to 192 accumulators unspilled (ptxas 13.0), and 152 and 160 keep four
#: stages, as cuBLAS's ``nvjet_sm90_hsh_256x152_64x4`` and ``256x160_64x4`` do where it runs
#: them on the H100, at M 800-15000 (866x5120x5120, 4341x4608x4096, 1087x9216x3072,
#: 14674x3584x3584) in place of this rung's 128-row swaps and 128x256 pairs. Tune-only
#: (``_variant``) until timed (README, "256-row swaps 152 and 160 wide").
ROWS_256_TMA_WIDTHS = (152, 160)
#: The widest swapped tile with 192 rows (three consumer warpgroups of 64 rows, one m64nW block
#: each: W / 2 fp32 accumulators a thread within ``CONSUMER_REGS_3``), and its narrowest: M in
#: two to four columns of 72..160, where N / 192 row tiles fill a wave that N / 128 overfill or
#: N / 256 leave part-empty (cuBLAS's 192x104 at 410x6144x4096: 32 x 4 = 128 CTAs).
SWAP_WIDE_192 = 160
#: The 192-row swapped widths the menu holds: 72..160.
ROWS_192_WIDTHS = tuple(tn for tn in SWAP_WIDE if tn <= SWAP_WIDE_192)
#: The 192-row widths the model may pick in one wave: those a tuning run timed at three shapes
#: or more (``COST``'s 192-row efficiencies; README, "Twenty-sixth version"): 120..160 were
#: timed once each, at 84-94 % of cuBLAS where the pick ran 100-105 %, too few timings to fit
#: an efficiency the whole M range may trust. Over whole waves every width of
#: ``ROWS_192_WHOLE`` may replace a stream-K pick (``_heuristic``; README, "Twenty-eighth
#: version").
ROWS_192_PICKED = (104, 112)
#: The 192-row widths that may replace a stream-K pick over whole waves: those timed at three
#: shapes or more, one wave or several (72..112; 120..160 once each).
ROWS_192_WHOLE = tuple(tn for tn in ROWS_192_WIDTHS if tn <= 112)
#: The least share of the SMs a 192-row tile picked in one wave must fill. Its point is the
#: wave that 128- and 256-row tiles leave part-empty; where its own tiles leave a quarter of
#: the SMs idle it lost at every shape timed (H200 tuning runs: 251x4608x3584 192x72, 96 CTAs,
#: 80.6 % of cuBLAS against 128x88 swapped's 95.7; 250x10240x8192 192x128, 108 CTAs, 90.4
#: against 104.8; held out, 385x4608x3584 192x104, 96 CTAs, 84.2), and it won at each shape
#: where they filled 128 SMs or more (208x12288x4096 105.3 against 89.4; 1248x2112x7168
#: 107.5 against 89.2; README, "Thirty-third version").
ROWS_192_FILL = 0.9
#: The unswapped tiles with a "deferred" twin (tune-only: timed on the H200 against overlap at
#: 8 shapes of 64x64, 64x128 and 64x256, it won once, by 3.5 points, and lost 0.1-1.1 at the
#: others; README, "Twenty-ninth version"): those whose whole tile fits the epilogue buffers
#: at 32 KiB or less, beside four stages or more (64x256: 8 sub-tiles of 64x32, 4 stages of
#: 40 KiB; 128x128: 4 of 128x32, 6 of 32 KiB). Their serial/overlap epilogue stores 32 columns
#: a round through four buffers,
#: two barriers a round (eight rounds at 64x256, from the fifth on waiting for an earlier
#: round's reads), under first k-tile MMAs half as long as 128x256's where the tile is 64 rows
#: or 128 columns wide. Cluster 2 where the heuristic may pair the tile (``HEURISTIC_CLUSTERS``).
DEFERRED_TILES = (
    (64, 256, 1),
    (64, 128, 1),
    (64, 64, 1),
    (128, 128, 1),
    (128, 128, 2),
    (128, 64, 1),
)
#: The widths of the 4-CTA swapped clusters (``_menu``): M 150-450 in two to four columns,
#: where cuBLAS runs ``nvjet_sm90_hsh_128x72`` / ``128x80`` in 4x1 clusters (212x5120x5120,
#: 224x5120x4096, 193x4608x3584, 196x4608x4096) and the best config of ours any run timed
#: reached 83-87 % of it; the profile there found L2-to-SM traffic 18-20 % above cuBLAS's
#: (README, "Tenth session"). Unsplit, no stream-K (an H200 holds 30 clusters of four at once,
#: not 33, and stream-K's tail waits on every program), the TMA store, raster m or n. Correct
#: on the H200 and the H100. The heuristic never ranks them (``_variant``: the model has no
#: constant for four CTAs); on an H100 ``harness.tile_cost.swap_clusters`` moves its raster-n
#: one-CTA picks of these widths at M 150-450 to four CTAs (README, "Thirty-fifth version"), or
#: to 1x3 (``CLUSTERS_2D``); on the H200 they stay tune-only.
CLUSTER4_WIDTHS = tuple(tn for tn in SWAP_WIDE if tn <= 128)
#: The wider four-CTA swaps, 136..256, raster n only (the weights in L2, where four CTAs won
#: A/Bs Z and AA; raster m lost): where cuBLAS runs wide swapped tiles in 4x1 or 4x2 clusters
#: on the H100 at M 400-1300 (``nvjet_sm90_hsh_128x136_64x6_4x1`` at 401x4608x4096,
#: ``128x176_64x5_4x1`` at 513x5120x14336, ``128x216_64x4_4x2`` at 1268x5120x5120) and the
#: one-CTA picks of these widths held out at 80.1-90.2 % (410x6144x4096 128x208,
#: 866x5120x5120 128x152, 275x6144x4096 128x144). Tune-only: A/B AL (README, "Four CTAs at
#: widths 136-256") decides whether ``four_cta_swap`` takes them.
CLUSTER4_WIDE = tuple(tn for tn in SWAP_WIDE if tn > 128)
#: 2-D clusters (cluster, cluster_n) of the same 128-row swaps: the column tiles that read one
#: block of weights share it by multicast as well. At 217x5120x4096 cuBLAS's 128x80 in 4x1
#: clusters read 83 MB from L2 against the four-CTA pick's 145 MB (the same tile, the same
#: 204 MB delivered to the SMs): weights at half, activations at a quarter, where the pick
#: reads the weights once per column tile (``ncu``, README "Thirty-sixth version"). Two rows
#: by three columns read the weights once and the activations at half: 81 MB, but an H100
#: holds 17 clusters of six at once, not the 20 such a shape needs (A/B AD); one row by three
#: columns reads the weights once in clusters of three, of which an H100 holds 39: on an H100
#: ``harness.tile_cost.swap_clusters`` picks 1x3 where its cluster tiles fit them (A/B AI,
#: README "Thirty-seventh version"). The others are tune-only.
CLUSTERS_2D = ((1, 3), (2, 2), (2, 3), (4, 2))
#: 64-row wide swaps in clusters of four along N, alone (4x1) or by two columns of M (4x2),
#: raster n (the weights in L2), variants the heuristic never ranks (on an H100
#: ``harness.tile_cost.sixty_four_row_clusters`` moves one-CTA 64-row picks up to 112 wide to
#: 4x2, A/B AP): at small N (3072-3584) and M 150-300 cuBLAS runs 64-row swapped tiles in 4x2
#: clusters on the H100 (``nvjet_sm90_hsh_64x112_64x9_4x2`` at 212x3072x3072,
#: ``64x80_64x11_4x2`` at 155x3584x3584, ``64x144_64x8_4x2`` at 288x3072x3072:
#: ``h100/diag-r8-launched-smalln-*``), where this rung's one-CTA 64-row picks held out at
#: 79-88 % (README, "Survey: 64-row swaps at small N"). Each CTA of a column issues a quarter of
#: M's tile and, 4x2, the row's first CTA the weights' 64 rows to both columns.
CLUSTER4_64_WIDTHS = tuple(tn for tn in SWAP_WIDE if tn <= 160)
CLUSTERS_64 = ((4, 1), (4, 2))
#: K splits of the wide swapped tiles per row count (cluster 1; ``_menu``). 256 rows are not
#: split: split 2-4 ways they were correct and slower wherever the model ranked them (H200
#: tune, backend README "Ninth version": 72x10240x8192 256x72 split 3 102.5 % of cuBLAS,
#: 128x72 in pairs 114.7 %).
SWAP_WIDE_SPLITS = {64: (2,), 128: (2, 3, 4)}


#: The stage-release modes (``R8Config.release``).
RELEASES = ("warp", "warpgroup")


def _release_twin(c: R8Config) -> bool:
    """The configs the menu also holds with ``release="warpgroup"``: the four-CTA swapped
    clusters of ``CLUSTER4_WIDTHS`` and rung 7's 128x256 pair (raster m, group 8, overlap), the
    two families where a stage's release reaches other CTAs. Their A/B against the per-warp
    release is the CuTeDSL README's "A/B AC": a four-CTA k-step took 675 cycles against
    cuBLAS's about 530 in the same clusters, with L2 reads well under the one-CTA tiles' rate
    ("Thirty-fifth version")."""
    pair = R8Config(128, 256, 2, raster="m", group=8, epilogue="overlap")
    four = c.cluster == 4 and c.cluster_n == 1 and c.tile_m == 128 and c.tile_n in CLUSTER4_WIDTHS
    return four or c == pair


def _swap_epilogues(c: R8Config) -> list[R8Config]:
    """An unsplit swapped tile with both ways out of D: the TMA store after the mainloop and
    the predicated direct stores (backend README, "Eleventh version": the TMA store won at
    mid M, the direct stores at decode). No overlap: under the next tile's MMAs it ran the
    tensor cores harder per clock and the power-limited clock lower, 3-9 points slower in time
    at 8 of 17 wide-swap tuning shapes."""
    return [dataclasses.replace(c, epilogue=e) for e in ("serial", "direct")]


def _menu() -> tuple[R8Config, ...]:
    """The curated menu: rung 7's family, then smaller tiles (cluster, grid and split
    variants), the 160- and 192-wide tiles, the swap-AB family for small M (16, 32 or 64
    columns: the narrowest that covers M) and for mid-size M (72 to 256 columns in steps of
    8), then stream-K. Every heuristic choice is on it."""
    menu = [
        R8Config(128, 256, 2, raster=raster, group=group, epilogue=epilogue)
        for group in (4, 8, 16)
        for raster in ("m", "n")
        for epilogue in ("overlap", "serial")
    ]
    for tm, tn in ((128, 256), (128, 128), (128, 64), (64, 256), (64, 128), (64, 64)):
        for cluster in (1, 2):
            menu += [R8Config(tm, tn, cluster, epilogue=e) for e in ("overlap", "serial")]
        menu.append(R8Config(tm, tn, 1, persistent=False, epilogue="serial"))
        menu += [R8Config(tm, tn, 1, split_k=s, epilogue="serial") for s in (2, 4, 8)]
    # 160 columns: N = 10240 in 64 tiles, not 80 (128x128), so M = 128 splits into one wave
    # (64x160 or 128x160 x 2 splits: 128 CTAs) and M = 1024 fills 3.9 waves, not 4.8.
    menu += [R8Config(128, 160, cluster, epilogue="overlap") for cluster in (1, 2)]
    menu += [R8Config(64, 160, 1, epilogue="overlap")]
    menu += [R8Config(tm, 160, 1, split_k=2, epilogue="serial") for tm in (128, 64)]
    # 192 columns: a third step between 128 and 256, so that a problem whose 256-wide tiles
    # leave the last wave part-empty has one more tile count to fill it with.
    menu += [R8Config(128, 192, cluster, epilogue="overlap") for cluster in (1, 2)]
    for tm in (128, 64):
        for tn in (16, 32, 64):
            menu += _swap_epilogues(R8Config(tm, tn, 1, swap_ab=True))
            menu += [
                R8Config(tm, tn, 1, swap_ab=True, split_k=s, epilogue="serial") for s in (2, 4, 8)
            ]
    # Wide swapped tiles for a mid-size M (65 .. 2048): M on the wgmma N side, whose width
    # steps by 8, so M's share of up to eight column tiles (``swap_fits``) is covered within
    # 7 rows a column; 64 rows of N a CTA (one consumer warpgroup) where 128 would leave too
    # few CTAs.
    # 128 rows also split three or four ways: a short N leaves few row tiles (174x5120x13824:
    # 40 of 128 rows, one column of 176), so only a K split fills the wave (120 CTAs at
    # split 3) while the tile keeps its two consumer warpgroups.
    for tm in (128, 64):
        for tn in SWAP_WIDE:
            for c in (1, 2):
                menu += _swap_epilogues(R8Config(tm, tn, c, swap_ab=True))
            menu += [
                R8Config(tm, tn, 1, swap_ab=True, split_k=s, epilogue="serial")
                for s in SWAP_WIDE_SPLITS[tm]
            ]
    # 256 rows of N a CTA (two consumer warpgroups of 128 rows): per k-tile, each CTA loads
    # its 256 + W rows for twice the MMA work of a 128-row tile, as cuBLAS's 256x152 tiles do
    # at mid M; up to W = SWAP_WIDE_256, the accumulators a thread can hold (W fp32).
    for tn in SWAP_WIDE:
        if tn <= SWAP_WIDE_256:
            for c in (1, 2):
                menu += _swap_epilogues(R8Config(256, tn, c, swap_ab=True))
    # ... and wider by the TMA store alone, cuBLAS's 256x152 and 256x160 (tune-only).
    menu += [
        R8Config(256, tn, c, swap_ab=True, epilogue="serial")
        for tn in ROWS_256_TMA_WIDTHS
        for c in (1, 2)
    ]
    # 192 rows of N a CTA (three consumer warpgroups of 64 rows), the row count cuBLAS runs at
    # mid M on both GPUs (``nvjet_sm90_hsh_192x104`` / ``192x112`` / ``192x80``; README,
    # "Twenty-fourth version"): a third row count between 128 and 256 whose tile count fills
    # the wave where theirs do not. The TMA store only (the wide swaps' way out of D).
    menu += [
        R8Config(192, tn, c, swap_ab=True, epilogue="serial")
        for tn in ROWS_192_WIDTHS
        for c in (1, 2)
    ]
    # Four CTAs of 128 rows along N sharing M's column tile (``CLUSTER4_WIDTHS``): each CTA
    # issues a quarter of the narrow tile, so a k-step brings 128 + W / 4 rows through L2, not
    # 128 + W. Tune-only (``_variant``).
    menu += [R8Config(128, tn, 4, swap_ab=True, epilogue="serial") for tn in CLUSTER4_WIDTHS]
    menu += [
        R8Config(128, tn, 4, swap_ab=True, raster="n", epilogue="serial") for tn in CLUSTER4_WIDE
    ]
    # Stream-K over wide swapped tiles of 128 rows: a mid-size M whose row tiles (N / 128)
    # leave the last wave part-empty (155x36864x7168 as 128x160: 288 tiles, 2.18 waves) runs
    # the tail's k-iterations on every SM instead (README, "Nineteenth version").
    menu += [
        R8Config(128, tn, c, swap_ab=True, stream_k=True, epilogue="serial")
        for tn in SWAP_WIDE
        for c in (1, 2)
    ]
    # Their raster-n twins: the kernel's rows first, where B stays in L2 (``swap_raster``).
    menu += [dataclasses.replace(c, raster="n") for c in menu if c.wide_swap]
    # Stream-K's whole tiles leave by the TMA store, overlapped with the next unit's MMAs or
    # not; its tail partials leave from registers either way.
    menu += [
        R8Config(tm, tn, cluster, stream_k=True, epilogue=epilogue)
        for tm, tn, cluster in STREAM_K_TILES
        for epilogue in ("overlap", "serial")
    ]
    # The deferred epilogue's twins of the small unswapped tiles (``DEFERRED_TILES``).
    menu += [R8Config(tm, tn, c, epilogue="deferred") for tm, tn, c in DEFERRED_TILES]
    # Stage release once per consumer warpgroup (``_release_twin``): the four-CTA clusters and
    # rung 7's pair, where every release crosses to other CTAs.
    menu += [dataclasses.replace(c, release="warpgroup") for c in menu if _release_twin(c)]
    # The four-CTA widths in 2-D clusters (``CLUSTERS_2D``), raster n as ``swap_clusters``'s
    # moves: the weights multicast along the columns too.
    menu += [
        R8Config(128, tn, cm, swap_ab=True, raster="n", epilogue="serial", cluster_n=cn)
        for tn in CLUSTER4_WIDTHS
        for cm, cn in CLUSTERS_2D
    ]
    # 64-row wide swaps in clusters of four, 4x1 and 4x2 (``CLUSTER4_64_WIDTHS``; variants).
    menu += [
        R8Config(64, tn, cm, swap_ab=True, raster="n", epilogue="serial", cluster_n=cn)
        for tn in CLUSTER4_64_WIDTHS
        for cm, cn in CLUSTERS_64
    ]
    return tuple(dict.fromkeys(menu))  # rung 7's default appears twice


MENU = _menu()


def _tma_epilogue(tma_store: bool, config: R8Config) -> bool:
    """The TMA-store epilogue (stmatrix -> shared -> TMA) is used: D's rows aligned (D^T's
    columns, swapped), no split (its fp32 partials leave directly) and not "direct"."""
    return tma_store and config.split_k == 1 and config.epilogue != "direct"


def stream_k(problem: Problem, num_sms: int, config: R8Config) -> StreamK:
    """The stream-K schedule the GEMM kernel walks and its reduce sums
    (``harness.tile_cost.StreamK``: one program per cluster of the persistent grid)."""
    return config.schedule(problem, num_sms, BLOCK_K)


def workspace_elems(
    problem: Problem, config: R8Config | None, num_sms: int = DEFAULT_NUM_SMS
) -> int:
    """fp32 elements of the workspace: split-K's ``split_k`` x M x N slices, stream-K's two
    partial cluster tiles per program (none without a tail), else 0."""
    if config is None:
        return 0
    if config.stream_k:
        if not stream_k(problem, num_sms, config).sk_tiles:
            return 0
        return 2 * (num_sms // config.cluster) * config.tile_rows * config.tile_n
    if config.split_k == 1:
        return 0
    return config.split_k * problem.m * problem.n


def _valid(problem: Problem, config: R8Config) -> str | None:
    # Whole tiles leave by the TMA store (no split, not "direct", N % 8 == 0), on the full
    # persistent grid the schedule assumes.
    tma_epi = _tma_epilogue(tma_store_variant(problem), config)
    if config.stream_k and not (config.persistent and tma_epi):
        return "stream-K: unsplit, persistent, the TMA-store epilogue and N % 8 == 0"
    if config.release not in RELEASES:
        return f"release={config.release}: one of {', '.join(RELEASES)}"
    if config.cluster == 4 and not (
        config.wide_swap
        and config.tile_m in (64, 128)
        and config.split_k == 1
        and not config.stream_k
    ):
        return "cluster=4: unsplit wide swapped tiles of 64 or 128 rows only (no stream-K)"
    shape_2d = (config.cluster, config.cluster_n)
    if config.cluster_n != 1 and not (
        (shape_2d in CLUSTERS_2D if config.tile_m == 128 else shape_2d in CLUSTERS_64)
        and config.wide_swap
        and config.tile_m in (64, 128)
        and config.split_k == 1
        and not config.stream_k
        and config.persistent
    ):
        return (
            "cluster_n > 1: a 2-D cluster of CLUSTERS_2D over unsplit, persistent wide swapped "
            "tiles of 128 rows (64 rows: 4x2 only; no stream-K)"
        )
    if config.stream_k and config.swap_ab and (config.tile_m, config.wide_swap) != (128, True):
        return "stream-K swapped: wide tiles of 128 rows only"
    if config.epilogue in ("overlap", "deferred") and (config.swap_ab or not tma_epi):
        return (
            f"{config.epilogue} needs the TMA-store epilogue of an unswapped tile "
            "(N % 8 == 0, no split_k)"
        )
    deferred_fits = config.tile_m * config.tile_n <= 128 * 128  # its buffers hold the tile
    if config.epilogue == "deferred" and (config.stream_k or not deferred_fits):
        return "deferred: data-parallel tiles of 128 x 128 elements or fewer"
    if config.split_k > cdiv(problem.k, BLOCK_K):
        return f"split_k={config.split_k} leaves a split without a k-tile (K={problem.k})"
    if workspace_elems(problem, config) >= 2**31:
        return "split-K workspace exceeds 2^31 elements (32-bit indexing)"
    rows, cols = config.oriented(problem)
    clusters = cdiv(rows, config.tile_rows) * cdiv(cols, config.tile_n) * config.split_k
    if not config.persistent and clusters > MAX_GRID_Z:
        return f"non-persistent grid of {clusters} clusters exceeds grid.z {MAX_GRID_Z}"
    return None


#: The clusters the heuristic may pick per tile (any other tile: cluster 1), stream-K or not.
#: Cluster 2 where its halved B traffic matters (the Gluon rung 8's menu rule; 128x160 and
#: 128x192 are CuTeDSL's). 128x160 was pair-only while one-CTA configs launched as 1x1x1
#: clusters, which measured slower than the model predicts; launched plainly (thirteenth
#: version) the one-CTA 128x160 is the fastest timed config at mid-M shapes its pair cannot
#: fill, though never split (``_heuristic_clusters``; backend README, "Fifteenth version").
#: Every menu entry stays available to ``bench --tune``.
HEURISTIC_CLUSTERS: dict[tuple[int, int], tuple[int, ...]] = {
    (128, 256): (1, 2),
    (128, 192): (1, 2),
    (128, 160): (1, 2),
    (128, 128): (1, 2),
    (64, 160): (),
}


def _heuristic_clusters(c: R8Config) -> tuple[int, ...]:
    """The clusters the heuristic may pick for ``c``'s tile: a 128- or 256-row wide swapped
    tile either (its pair shares the M-side operand), a 64-row one only alone (the pair ran slower
    at 7 of 9 tuning shapes, e.g. 140x5120x4096 64x144: 95.9 % of cuBLAS alone, 88.4 % as a
    pair), the others per ``HEURISTIC_CLUSTERS``; none for a K split of 128x160, which ran at
    68-77 % of cuBLAS wherever it was timed, far under the model's estimate (README,
    "Fifteenth version"); a 192-row tile alone: its pair ran no faster at any of five shapes
    (H200: 208x12288x4096 192x104 105.3 % of cuBLAS alone, 99.2 % as a pair; README,
    "Twenty-sixth version"; its widths and waves: ``harness.tile_cost.one_wave_rows``)."""
    if c.tile_m == 192:
        return (1,)
    if c.wide_swap:
        return (1, 2) if c.tile_m >= 128 else (1,)
    if (c.tile_m, c.tile_n) == (128, 160) and c.split_k > 1:
        return ()
    return HEURISTIC_CLUSTERS.get((c.tile_m, c.tile_n), (1,))


def _one_warpgroup_swap_pays(problem: Problem, c: R8Config, num_sms: int = DEFAULT_NUM_SMS) -> bool:
    """A 64-row wide swapped tile (one consumer warpgroup) only where its 128-row twin would
    leave more than half the SMs idle: with the twin's CTAs fewer than half a wave, halving
    the rows doubles the CTAs (140x5120x4096: 40 -> 80); with more, the twin's two consumer
    warpgroups a CTA win (338x8192x8192: 128x176 in pairs 97.2 % of cuBLAS, 64x176 77.7 %)."""
    if not (c.wide_swap and c.tile_m == 64):
        return True
    return dataclasses.replace(c, tile_m=128).ctas(problem) < num_sms // 2


def _epilogue_for(problem: Problem, c: R8Config) -> str:
    """The epilogue the heuristic runs ``c`` with. Unswapped: overlapped wherever D allows the
    TMA store (rung 7), else serial. Swapped: the TMA store for a wide tile, direct stores for
    a narrow cover (decode: a 16- to 64-column tile's D is a few KiB, and its one round of
    stores waited on shared memory; README, "Eleventh version"). Without a TMA store (N % 8
    != 0, or split) "serial" stores directly."""
    if c.swap_ab:
        return "serial" if c.wide_swap or c.split_k > 1 else "direct"
    tma = _tma_epilogue(tma_store_variant(problem), dataclasses.replace(c, epilogue="serial"))
    return "overlap" if tma else "serial"


def _variant(problem: Problem, c: R8Config) -> bool:
    """``c`` changes what the cost model cannot see: raster (other than ``heuristic_raster``'s),
    group (other than 8: the grouped walk pads nothing, so no tile needs another), a
    non-persistent grid, another epilogue than the kernel's default for the problem (overlap
    wherever D allows the TMA-store epilogue, stream-K included), a cluster of four (the
    model has no constant for four CTAs, and their A/B was mixed: ``CLUSTER4_WIDTHS``), the
    per-warpgroup release (``_release_twin``), a 2-D cluster (``CLUSTERS_2D``) or a 256-row
    swap wider than ``SWAP_WIDE_256`` (``ROWS_256_TMA_WIDTHS``: no timing yet)."""
    want = _epilogue_for(problem, c)
    raster = heuristic_raster(problem, c)
    return (
        c.raster != raster
        or c.group != 8
        or not c.persistent
        or c.epilogue != want
        or c.cluster == 4
        or c.release != "warp"
        or c.cluster_n != 1
        or (c.tile_m == 256 and c.tile_n > SWAP_WIDE_256)
    )


#: The shared cost model with this kernel family's constants: ``python -m harness fit-cost
#: reports/results --backend cutedsl`` (the H200 tuning runs there: the sweep grid's,
#: ``tune-r8-random10{1,2,3}-cutedsl-h200-2026112*``, ``tune-r8-{mid,sk,mid2,retime}-cutedsl-*``,
#: ``tune-r8-align8-*``; README, "Cost model" and "Sixth version"); the 256-row tiles' on
#: ``tune-r8-rows256{a,b}-*`` alone ("Eighth version": a refit of every constant on all runs
#: moved 8192^3 off rung 7's tile). ``tune-r8-deepsplit-*``, ``tune-r8-shortk-*`` and
#: ``tune-r8-ceiling-*`` (ninth version, tenth session) are in no fit: refits that included them
#: scored worse left one run out (README, "Tenth session"); nor is ``tune-r8-swapepi-*``
#: (eleventh version): an A/B of epilogues, which the model does not price. A tile no run timed
#: takes its neighbours' efficiency (``TileCostModel.tile_efficiency``). ``swap_cluster2_gain``
#: alone is fitted on the timings of one-CTA configs launched plainly (thirteenth version on):
#: ``fit-cost ... --only cluster2_gain --only swap_cluster2_gain`` on
#: ``h100/tune-r8-retime101-*`` and the unevaluated shapes of ``tune-r8-midm-*`` on both GPUs
#: (README, "Fifteenth version").
COST = HOPPER.with_params(
    {
        "hbm_bytes_per_s": 6.661e12,
        "sm_stream_bytes_per_s": 1.392e11,
        "sm_store_bytes_per_s": 1.997e12,
        "reduce_launch_s": 5.133e-06,
        "launch_s": 3.786e-06,
        "unit_s": 2.28e-06,
        "overlap_loss": 0.4307,
        "cluster2_gain": 1.016,
        "swap_gain": 0.9845,
        "swap_cluster2_gain": 0.954,
        "idle_boost": 0.6624,
        "eff:64x16": 0.1763,
        "eff:64x32": 0.2603,
        "eff:64x64": 0.3961,
        "eff:64x80": 0.4538,
        "eff:64x96": 0.5096,
        "eff:64x112": 0.4974,
        "eff:64x128": 0.5435,
        "eff:64x144": 0.6188,
        "eff:64x160": 0.5205,
        "eff:64x176": 0.5881,
        "eff:64x192": 0.5926,
        "eff:64x208": 0.5666,
        "eff:64x224": 0.5411,
        "eff:64x240": 0.6527,
        "eff:64x256": 0.5937,
        "eff:128x16": 0.1939,
        "eff:128x32": 0.294,
        "eff:128x64": 0.4916,
        "eff:128x80": 0.5443,
        "eff:128x96": 0.6177,
        "eff:128x112": 0.6444,
        "eff:128x128": 0.6795,
        "eff:128x144": 0.7144,
        "eff:128x160": 0.7057,
        "eff:128x176": 0.7038,
        "eff:128x192": 0.713,
        "eff:128x208": 0.701,
        "eff:128x224": 0.6786,
        "eff:128x240": 0.6672,
        "eff:128x256": 0.7204,
        # 256 rows (eighth version): ``fit-cost ... --base backends.cutedsl.sm90.
        # r8_shape_adaptive --only 'eff:256x*'`` on ``tune-r8-rows256{a,b}`` (every other
        # constant as fitted before them); 256x72, never timed, takes 256x80's.
        "eff:256x80": 0.6168,
        "eff:256x88": 0.6381,
        "eff:256x96": 0.6081,
        "eff:256x104": 0.6213,
        "eff:256x112": 0.6753,
        "eff:256x120": 0.6724,
        "eff:256x128": 0.6284,
        "eff:256x136": 0.7079,
        "eff:256x144": 0.7033,
        # 192 rows (twenty-sixth version): ``fit-cost ... --only 'eff:192x1*'`` on
        # ``tune-r8-rows192-cutedsl-h200-20261128`` (9 tuning shapes, M 180-900; every other
        # constant as before); the heuristic picks 104 and 112 only (``ROWS_192_PICKED``).
        "eff:192x104": 0.8035,
        "eff:192x112": 0.8035,
        "eff:192x120": 0.7157,
        "eff:192x128": 0.7944,
        "eff:192x136": 0.7079,
        "eff:192x152": 0.7441,
        "eff:192x160": 0.7396,
    }
)


def _ranked(problem: Problem) -> list[R8Config]:
    """Every valid menu config, cheapest first by the shared cost model (what ``bench --tune
    --tune-top`` times first), the variants it cannot tell apart after all the others."""
    return ranked(problem, MENU, _valid, variant=_variant, block_k=BLOCK_K, model=COST)


def _heuristic(problem: Problem, model: TileCostModel = COST, transpose: bool = True) -> R8Config:
    """The cheapest config (``harness.tile_cost``) among the non-variants that
    ``heuristic_allows`` (swap-AB at M <= 64 < N with the narrowest cover, always at M <= 32,
    at M 33..64 against unswapped tiles wider than 64; at M 65..95 no unsplit unswapped tile;
    narrow tiles only as the cover of the short side; a wide swap in one column tile only at
    K <= ``ONE_COLUMN_SWAP_K``; splits keeping >= 512 of K, of a grid under half a wave, at
    K > 8192, and at M <= 64 only where the cover it would run (``harness.tile_cost.cover_ctas``:
    the 64-row cover, or at M 33..64 the split cover, within one wave) fills less than
    ``COVER_SPLIT_MAX_FILL`` of the SMs; a split only of a swapped tile where a wide swap fits M;
    ``heuristic_raster``'s raster) on a cluster ``_heuristic_clusters`` allows; a 64-row wide
    swap only where its 128-row twin leaves half the SMs idle, a 192-row one only in one
    wave whose SMs its tiles fill to ``ROWS_192_FILL``. Ties go to the larger tile, then
    cluster 2, then no split and no stream-K. At M 33..64 a split cover
    (``harness.tile_cost.split_cover``: 64x32, 128x32 or 128x16, M in two or three column
    tiles) replaces the 64-column cover where it fills more of one wave;
    a 192-row swapped tile (``harness.tile_cost.whole_wave_swap``) replaces a stream-K wide
    swap where its tiles fill two waves or more, the last to 90 % or more; at M 1024-5120 a
    swapped tile of ``_transposes`` (``harness.tile_cost.whole_wave_transpose``) replaces an
    unswapped pick wasting 10 % of its waves' SM time or more (idle or past M and N), where
    its own fill 95 % of theirs and waste 3 points less. ``model`` prices the configs
    (``COST``; ``fit-cost --moves`` passes fitted constants to list the picks they would
    move); ``transpose=False`` leaves the transpose out (``_untransposed``)."""

    allowed = functools.partial(_allowed, problem)
    pick = cheapest(problem, MENU, _valid, allowed, block_k=BLOCK_K, model=model)
    whole = whole_wave_swap(problem, pick, 192, ROWS_192_WHOLE)
    if whole in MENU and _valid(problem, whole) is None and _structurally_allowed(problem, whole):
        return whole
    seconds = functools.partial(model.seconds, problem, block_k=BLOCK_K)
    transposed = (
        whole_wave_transpose(problem, pick, _transposes(problem), seconds) if transpose else None
    )
    return transposed or split_cover(problem, pick) or pick


def _untransposed(problem: Problem) -> R8Config:
    """The heuristic's pick without ``harness.tile_cost.whole_wave_transpose``: what
    ``harness.tile_cost.transpose_gives_way`` runs on an H100 in place of a narrow transpose."""
    return _heuristic(problem, transpose=False)


def _on_gpu(problem: Problem, chosen: R8Config, gpu_name: str) -> tuple[R8Config, str] | None:
    """The rules that read the GPU (``harness.tile_cost``), all of them H100 moves: an
    unswapped 64-row pick padding M takes one column of a 64-row swap (``padded_rows_swap``,
    A/B AT), a whole-wave transpose narrower than 144 at N >= 4096, or holding M in more than
    17 columns at any N, gives way to the pick it replaced (``transpose_gives_way``, A/B AR and
    BE), a wide swap takes clusters (``swap_clusters``).
    The first one's tile runs as AT timed it: one CTA at its own raster, which the cluster
    rules would otherwise move on (``fuller_wave_rows`` takes raster-m swaps). Last, a 128x128
    pick past M 512 at N >= 3584 (the heuristic's, or the one a transpose gave way to) takes a
    128-row swap at least 144 wide, in at most 14 columns of M, wasting no more of its waves
    (``square_tile_swap``, A/B BC), as A/B BA and BB timed it: one CTA, the heuristic's raster
    and epilogue."""
    moved = (
        padded_rows_swap(problem, chosen, gpu_name, _unsplit_swaps(problem))
        or transpose_gives_way(problem, chosen, gpu_name, _untransposed)
        or swap_clusters(problem, chosen, gpu_name)
    )
    square = square_tile_swap(
        problem, moved[0] if moved else chosen, gpu_name, _square_swaps(problem)
    )
    return square or moved


def _unsplit_swaps(problem: Problem) -> Iterator[R8Config]:
    """The unsplit swapped tiles ``harness.tile_cost.padded_rows_swap`` may run: valid for
    ``problem`` and within the heuristic's structural rules (``_structurally_allowed``). Lazy:
    the rule reads them only past its own checks, which most problems fail."""
    return (
        c
        for c in MENU
        if c.swap_ab
        and c.split_k == 1
        and _valid(problem, c) is None
        and _structurally_allowed(problem, c)
    )


def _square_swaps(problem: Problem) -> Iterator[R8Config]:
    """The swapped tiles ``harness.tile_cost.square_tile_swap`` may run in place of a 128x128
    pick: 128 rows, valid for ``problem``, as the heuristic would run them (``_variant``: its
    epilogue and raster, one CTA of one warp release), of any column count. Lazy: the rule
    reads them only past its own checks."""
    return (
        c
        for c in MENU
        if c.swap_ab and c.tile_m == 128 and not _variant(problem, c) and _valid(problem, c) is None
    )


def _transposes(problem: Problem) -> list[R8Config]:
    """The swapped tiles ``harness.tile_cost.whole_wave_transpose`` may trade an unswapped pick
    for at M 1024-5120, as its A/B timed them (README, "Thirtieth version"): 128 rows, or 192
    where ``harness.tile_cost.one_wave_rows`` (104 or 112 wide, one wave); one CTA, raster m, the
    serial epilogue of every wide swap; several column tiles of M, so none at K <=
    ``ONE_COLUMN_SWAP_K`` (the serial epilogue's share of a short K loop)."""
    if problem.k <= ONE_COLUMN_SWAP_K:
        return []
    return [
        c
        for c in MENU
        if c.wide_swap
        and c.tile_m in (128, 192)
        and one_wave_rows(problem, c, 192, ROWS_192_PICKED)
        and (c.cluster, c.raster, c.group, c.persistent) == (1, "m", 8, True)
        and c.epilogue == "serial"
        and _valid(problem, c) is None
    ]


#: The K up to which a wide swap may hold M in one column tile only: its epilogue is serial
#: (``_epilogue_for``: the transposed tile leaves before the next tile's K loop starts), which
#: at 16 k-steps or fewer is a share of each tile the cost model's per-unit constant does not
#: see; at 24 (K = 1536) the swaps still win (README, "Twenty-second version").
ONE_COLUMN_SWAP_K = 1024


def _structurally_allowed(problem: Problem, c: R8Config) -> bool:
    """The heuristic's rules short of where a tile's row count pays (``_allowed``): also
    what a rule applied after the model (``whole_wave_swap``) must keep to."""
    return (
        not _variant(problem, c)
        and heuristic_allows(
            problem,
            c,
            BLOCK_K,
            one_column_swap_k=ONE_COLUMN_SWAP_K,
            swapped_splits=True,
            split_covers=SPLIT_COVERS,
        )
        and c.cluster in _heuristic_clusters(c)
    )


def _allowed(problem: Problem, c: R8Config) -> bool:
    """The heuristic's rules (``_heuristic``): what it may pick before the model ranks."""
    return (
        _structurally_allowed(problem, c)
        and _one_warpgroup_swap_pays(problem, c)
        and one_wave_rows(problem, c, 192, ROWS_192_PICKED, min_fill=ROWS_192_FILL)
    )


def _explain(problem: Problem, c: R8Config) -> str:
    """Why ``_heuristic`` chose ``c``: tiles, waves, the model's time and its runner-up among
    the allowed configs (``harness.tile_cost.explain``), recorded with every result."""
    allowed = functools.partial(_allowed, problem)
    return explain(problem, c, MENU, _valid, allowed, model=COST, block_k=BLOCK_K)


# -- stream-K device helpers ---------------------------------------------------------------
def grouped_tile(t, tiles_m, tiles_n, group: int):
    """(row, column) of cluster tile ``t`` in the stream-K order, the Gluon rung 8's:
    ``group``-row bands swept column by column, M fastest in a band, so a wave's A rows and
    B columns stay few (L2) while every program works on its own tile."""
    per_group = group * tiles_n
    first = t // per_group * group
    rows = cutlass.min(tiles_m - first, group)
    in_group = t % per_group
    return first + in_group % rows, in_group // rows


@cute.jit
def store_partial(thr_mma, acc: cute.Tensor, mW: cute.Tensor, tile_mn, row_tile: cutlass.Int32):
    """A stream-K segment's fp32 accumulators, as they are, into row tile ``row_tile`` of the
    workspace: no edge predicates, a slot being a whole tile."""
    tCgW = thr_mma.partition_C(cute.local_tile(mW, tile_mn, (row_tile, 0)))
    cute.autovec_copy(acc, tCgW)


@cute.jit
def store_split_partial(
    thr_mma,
    acc: cute.Tensor,
    mW: cute.Tensor,
    tile_mn,
    tile_m: cutlass.Int32,
    tile_n: cutlass.Int32,
):
    """An unswapped tile's fp32 split-K partial into its row-major workspace slice (rows of
    N % 8 == 0 elements). A thread's accumulators pair up along a row (wgmma's C fragment:
    columns 2t, 2t + 1), so an interior tile leaves in 8-byte stores, a warp's four threads of a
    row filling one 32-byte sector; ``store_direct``'s 4-byte stores, one column of the pair
    each, half-filled it, and the split ran 0.73-0.97x of Gluon's identical configs, whose
    partials leave by TMA (README, "Twenty-fifth version"). Edge tiles stay predicated."""
    rows, cols = mW.shape
    if (tile_m + 1) * tile_mn[0] <= rows and (tile_n + 1) * tile_mn[1] <= cols:
        tCgW = thr_mma.partition_C(cute.local_tile(mW, tile_mn, (tile_m, tile_n)))
        cute.autovec_copy(acc, tCgW)
    else:
        store_direct(thr_mma, acc, mW, tile_mn, tile_m, tile_n, cutlass.Float32)


# -- the kernel ------------------------------------------------------------------------------


def _tma_load_atom(gmem, smem, rows: int, multicast: bool, slices: int = 1):
    """The TMA load atom (and its tensor) of a ``rows`` x BLOCK_K box of ``gmem`` into one
    ``smem`` stage: plain, or multicast, each of ``slices`` CTAs issuing its share of the box."""
    if multicast:
        op = cpasync.CopyBulkTensorTileG2SMulticastOp()
        return cpasync.make_tiled_tma_atom(op, gmem, smem, (rows, BLOCK_K), num_multicast=slices)
    op = cpasync.CopyBulkTensorTileG2SOp()
    return cpasync.make_tiled_tma_atom(op, gmem, smem, (rows, BLOCK_K))


def _tma_load(atom, gmem, smem, tile, kt, stage, bar, mcast_mask=None) -> None:
    """One operand's k-tile ``kt`` of row tile ``tile`` by TMA into ring stage ``stage``,
    completing on ``bar``; multicast to the CTAs ``mcast_mask`` names, if given."""
    multicast = {} if mcast_mask is None else {"mcast_mask": mcast_mask}
    cute.copy(
        atom,
        gmem[(None, tile, kt)],
        smem[(None, stage)],
        tma_bar_ptr=bar,
        cache_policy=cutlass.Int64(TMA_CACHE_HINT),
        **multicast,
    )


class Gemm:
    """D[M, N] = A[M, K] @ B[N, K].T for one ``R8Config``: persistent (or not) warp-specialized
    wgmma, optional B multicast, swap-AB, split-K or stream-K (+ its reduce kernel)."""

    def __init__(self, num_sms: int, tma_store: bool, config: R8Config):
        self.config = config
        self.tile_m, self.tile_n = config.tile_m, config.tile_n
        # One consumer warpgroup per 64 rows, at most two: a 256-row tile gives each 128 rows
        # (two m64 wgmma a k-block), as 512 consumer threads would get 128 registers each
        # (the file's C7602 note) and four 64-row warpgroups the same accumulators. A 192-row
        # tile takes three (one m64 block each; 192 = 1.5 blocks of 128 would not divide),
        # within ``CONSUMER_REGS_3``.
        if config.tile_m == 192:
            self.num_consumers, self.consumer_regs = 3, CONSUMER_REGS_3
        else:
            self.num_consumers = min(MAX_CONSUMERS, config.tile_m // 64)
            self.consumer_regs = CONSUMER_REGS
        self.num_threads = (1 + self.num_consumers) * THREADS_PER_WG
        self.cluster_m, self.cluster_n = config.cluster, config.cluster_n
        self.cluster_mn = (config.cluster, config.cluster_n)
        self.cluster_size = config.cluster * config.cluster_n
        self.release_per_wg = config.release == "warpgroup"
        self.swap, self.split_k, self.stream_k = config.swap_ab, config.split_k, config.stream_k
        self.tma_store = tma_store  # D's rows are 16-byte aligned (N % 8 == 0)
        self.tma_epi = _tma_epilogue(tma_store, config)
        self.overlap = self.tma_epi and config.epilogue in ("overlap", "deferred")
        self.deferred = self.tma_epi and config.epilogue == "deferred"
        # CUTLASS's scheduler's L2 grouping rounds the tile count along N (raster m) or M
        # (raster n) up to a multiple of the group, and the padded work units are *valid*
        # tiles to it: unguarded, each runs the whole K loop (TMA of the real rows of the other
        # operand, MMA on zeros) and stores nothing. Swapped, the N side is cdiv(M, tile_n) = 1
        # tile: 8 units of work for each real one (``_workarounds.py``, defect 1).
        # Grouping only pays for large M x N, so swap and split-K configs run ungrouped (no
        # padding, tiles dealt round-robin).
        ungrouped = config.swap_ab or config.split_k > 1 or config.stream_k
        self.l2_group = 1 if ungrouped else config.group
        # The grouped persistent configs walk their tiles themselves (``_work_unit``: stream-K's
        # walk without a tail), in ``grouped_tile``'s order, whose last band is as tall as the
        # rows left: nothing padded, so no skipped unit holds a slot of the round-robin (which
        # cost a round of tiles where the padding added one) and no tile has to run ungrouped
        # for it (the ungrouped order streams A from DRAM once per wave; README, fourteenth
        # version). Raster n and non-persistent variants keep the scheduler, stepping over its
        # padded units (``_workarounds.padded_unit``).
        self.grouped_walk = self.l2_group > 1 and config.persistent and config.raster == "m"
        self.walk = self.stream_k or self.grouped_walk
        # The walk's band of row tiles (``grouped_tile``): ``group`` rows unswapped. Swapped
        # (stream-K), the order ``raster`` names, as CUTLASS's scheduler walks a swapped
        # config: raster m, D's M first (bands of one row tile: its column tiles, which read
        # the same rows of B, back to back); raster n, the kernel's rows first (one band of
        # every row tile, ``walk_group``).
        self.walk_rows = config.group
        if config.swap_ab:
            self.walk_rows = 1 if config.raster == "m" else None
        # ``raster`` names D's side walked first (``GemmConfig``). Swapped, D's M is the
        # kernel's column side: raster m walks the (at most 8) column tiles of one row tile
        # back to back, so the tiles that read the same rows of B (the weights) share a wave
        # and B comes from DRAM once, not once per column tile (``swap_raster`` picks it
        # where B outgrows L2; README, "Fifth version").
        self.raster_m = (config.raster == "m") != config.swap_ab
        # Stream-K's grid is always the full persistent grid (its whole waves need every
        # program; the tail goes to the first of them): the schedule, both kernels and the
        # workspace size use this count.
        # So does the grouped walk: a program past the last tile finds no unit and exits.
        # Clusters of four: only the clusters the GPU holds at once (``resident_clusters``),
        # else a scheduler's grid past that count leaves its last programs waiting for a whole
        # cluster to finish (fours are swapped, so never grouped nor stream-K: ``_valid``).
        self.programs = resident_clusters(num_sms, self.cluster_size)
        # Non-persistent: as many clusters as there are work units (grid.z bound in _valid).
        self.max_active_clusters = self.programs if config.persistent else MAX_GRID_Z
        # A one-CTA config launches without a cluster, as Triton launches one: launched as a
        # 1x1x1 cluster, a long-K wave read up to 3x the DRAM bytes (README, thirteenth
        # version). Nothing in the kernel needs the cluster: its rank is 0, no multicast.
        self.launch_cluster = [*self.cluster_mn, 1] if self.cluster_size > 1 else None
        self.tile_rows = config.tile_rows
        self.sk_chunk = SK_REDUCE_THREADS * SK_REDUCE_VEC  # reduce: elements of a tile a block
        if self.stream_k:  # what _valid keeps: whole tiles leave by the TMA store
            assert self.tma_epi and config.persistent, config.name
            assert self.tile_rows * self.tile_n % self.sk_chunk == 0, config.name
        self.tile_mnk = (self.tile_m, self.tile_n, BLOCK_K)
        if self.swap:
            # D^T's width steps by 8, so its sub-tiles are the widest of 32, 16 or 8 columns
            # that divide it, in rounds of up to 32 columns (one barrier pair and one bulk
            # group a round), two rounds in flight: 16 KiB of buffers. A sub-tile has the
            # rows of one m64 block per consumer warpgroup (128 of a 256-row tile): the
            # accumulators' register order runs over the columns before the second block,
            # the order the sub-tiles are stored in (``TmaStoreEpilogue.store``).
            epi_rows = self.num_consumers * 64
            epi_n = next(w for w in (EPI_N, 16, 8) if self.tile_n % w == 0)
            self.epi_batch = min(EPI_N, self.tile_n) // epi_n
            self.epi_stages = 2 * self.epi_batch
        elif self.deferred:
            # A buffer per 32-column sub-tile, all stored in one round (``DEFERRED_TILES``).
            epi_rows, epi_n = self.tile_m, EPI_N
            self.epi_batch = self.epi_stages = max(1, self.tile_n // EPI_N)
        else:
            # Every tile starts at buffer 0; sub-tiles that fill whole rounds of buffers never
            # wait for a store to drain: the 160-wide tile's five sub-tiles take five buffers,
            # the 192-wide tile's six six.
            epi_rows, epi_n = self.tile_m, EPI_N
            self.epi_batch = 1
            subtiles = max(1, self.tile_n // EPI_N)
            self.epi_stages = subtiles if subtiles % MAX_EPI_STAGES else MAX_EPI_STAGES
        self.epi_tile = (epi_rows, epi_n)
        epi_bytes = epi_rows * epi_n * 2 * self.epi_stages if self.tma_epi else 0
        stage_bytes = (self.tile_m + self.tile_n) * BLOCK_K * 2
        max_stages = MAX_STAGES_SWAP if self.swap else MAX_STAGES
        self.num_stages = min(max_stages, (SMEM_BYTES - BARRIER_BYTES - epi_bytes) // stage_bytes)
        self.epilogue = EpilogueConfig(
            (self.tile_m, self.tile_n),
            self.epi_tile,
            self.epi_stages,
            self.num_consumers * THREADS_PER_WG,
            EPI_STORE_WARP,
            column_major=self.swap,
            batch=self.epi_batch,
            deferred=self.deferred,
        )

    # -- host: layouts, TMA descriptors, launches -------------------------------------------
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        d_ptr: cute.Pointer,
        w_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.dtype = a_ptr.dtype
        mA, mB, mD = operand_tensors(a_ptr, b_ptr, d_ptr, m, n, k, self.tma_store)
        rows, cols = m, n
        if cutlass.const_expr(self.swap):
            # D^T = B A^T: B is the MMA's "A" (rows over N), A its "B"; D seen column-major.
            mA, mB = mB, mA
            mD = cute.make_tensor(mD.iterator, cute.select(mD.layout, mode=[1, 0]))
            rows, cols = n, m
        if cutlass.const_expr(self.stream_k):
            # Stream-K workspace: 2 x programs slots of one fp32 cluster tile, row-major; slot
            # s is rows [s * tile_rows, (s + 1) * tile_rows).
            slot_rows = 2 * self.programs * self.tile_rows
            mW = cute.make_tensor(
                w_ptr, cute.make_layout((slot_rows, self.tile_n), stride=(self.tile_n, 1))
            )
        else:
            # Split-K workspace: slice s holds the fp32 partial of the s-th K range, in the
            # same orientation as mD (so the reduce reads every slice as plain M x N row-major).
            mn = m * n
            if cutlass.const_expr(self.swap):
                w_layout = cute.make_layout((rows, cols, self.split_k), stride=(1, n, mn))
            else:
                # Rows of N % 8 == 0 fp32 are 32-byte aligned: said so, the interior tiles'
                # partials leave in 8-byte pairs (``store_split_partial``).
                ld_w = cute.assume(n, divby=8) if self.tma_store else n
                w_layout = cute.make_layout((rows, cols, self.split_k), stride=(ld_w, 1, m * ld_w))
            mW = cute.make_tensor(w_ptr, w_layout)

        # MMA: num_consumers warpgroups stacked along M, each m64 x tile_n over 64 rows; a
        # 256-row tile repeats that pair of 64-row blocks, so each warpgroup holds two of them.
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.dtype,
            self.dtype,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
            cutlass.Float32,
            (self.num_consumers, 1, 1),
            tiler_mn=(64, self.tile_n),
        )

        # -- shared-memory plan: swizzled K-major A/B rings, row-major epilogue buffers ------
        row = LayoutEnum.ROW_MAJOR
        stages = self.num_stages
        sA_layout = sm90_utils.make_smem_layout_a(row, self.tile_mnk, self.dtype, stages)
        sB_layout = sm90_utils.make_smem_layout_b(row, self.tile_mnk, self.dtype, stages)
        # Swapped, D^T's unit stride runs along the kernel's rows: M-major buffers.
        d_major = LayoutEnum.COL_MAJOR if self.swap else row
        sD_layout = sm90_utils.make_smem_layout_epi(
            self.dtype, d_major, self.epi_tile, self.epi_stages
        )

        # Only the TMA-store epilogue stages D in shared memory; the others spend it on stages.
        if cutlass.const_expr(self.tma_epi):

            @cute.struct
            class SharedStorage:
                ab_barriers: cute.struct.MemRange[cutlass.Int64, stages * 2]
                sA: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024
                ]
                sB: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024
                ]
                sD: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sD_layout)], 1024
                ]

        else:

            @cute.struct
            class SharedStorage:
                ab_barriers: cute.struct.MemRange[cutlass.Int64, stages * 2]
                sA: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sA_layout)], 1024
                ]
                sB: cute.struct.Align[
                    cute.struct.MemRange[self.dtype, cute.cosize(sB_layout)], 1024
                ]

        self.shared_storage = SharedStorage

        # TMA loads: B multicast along the cluster's rows (each CTA issues 1/cluster of it); A
        # plain, or in a 2-D cluster multicast whole along its columns by the first CTA of
        # each row (128 rows do not split three ways).
        # One stage's layout by ``stage_layout`` (a 168-row ring aborts ``cute.slice_``).
        a_smem, b_smem = stage_layout(sA_layout), stage_layout(sB_layout)
        tma_a, gA_tma = _tma_load_atom(mA, a_smem, self.tile_m, self.cluster_n > 1)
        tma_b, gB_tma = _tma_load_atom(mB, b_smem, self.tile_n, self.cluster_m > 1, self.cluster_m)
        tma_d, gD_out = tma_store_atom(mD, sD_layout, self.epi_tile, self.tma_epi)

        # Work units: output tiles x K splits (the scheduler's L mode carries the split).
        # Stream-K and the grouped walk walk their own units (``_work_unit``) and leave the
        # scheduler unused.
        tiles_mnl = (
            cute.ceil_div(rows, self.tile_m),
            cute.ceil_div(cols, self.tile_n),
            self.split_k,
        )
        sched_params = utils.PersistentTileSchedulerParams(
            tiles_mnl, (*self.cluster_mn, 1), self.l2_group, self.raster_m
        )
        if cutlass.const_expr(self.walk):
            grid = (*self.cluster_mn, self.programs)  # stream-K: every program shares the tail
        else:
            grid = utils.StaticPersistentTileScheduler.get_grid_shape(
                sched_params, self.max_active_clusters
            )

        self.kernel(
            tma_a,
            gA_tma,
            tma_b,
            gB_tma,
            tma_d,
            gD_out,
            mW,
            tiled_mma,
            sA_layout,
            sB_layout,
            sD_layout,
            sched_params,
        ).launch(
            grid=grid,
            block=[self.num_threads, 1, 1],
            cluster=self.launch_cluster,
            min_blocks_per_mp=1,
            stream=stream,
        )

        if cutlass.const_expr(self.split_k > 1):
            # D is contiguous (row pitch N), so the reduce is over flat M*N elements.
            mW_flat = cute.make_tensor(w_ptr, cute.make_layout((mn, self.split_k), stride=(1, mn)))
            mD_flat = cute.make_tensor(d_ptr, cute.make_layout(mn))
            per_block = REDUCE_THREADS * REDUCE_VEC
            self.reduce(mW_flat, mD_flat, mn).launch(
                grid=[cute.ceil_div(mn, per_block), 1, 1],
                block=[REDUCE_THREADS, 1, 1],
                stream=stream,
            )

        if cutlass.const_expr(self.stream_k):
            # One block per tail tile and chunk of it; a problem of whole waves has no tail.
            tiles = cute.ceil_div(rows, self.tile_rows) * cute.ceil_div(cols, self.tile_n)
            sk_tiles = tiles - tiles // self.programs * self.programs
            if sk_tiles > 0:
                self.streamk_reduce(mW, mD, k).launch(
                    grid=[sk_tiles, self.tile_rows * self.tile_n // self.sk_chunk, 1],
                    block=[SK_REDUCE_THREADS, 1, 1],
                    stream=stream,
                )

    # -- device: the GEMM --------------------------------------------------------------------
    @cute.jit
    def _load_k_tile(self, ab_pipe, prod, tma_ops, tile_m, tile_n, kt):
        """Producer step: k-tile ``kt`` of the A rows of tile_m and the B rows of tile_n into
        the stage ``prod`` names, once it is free in every CTA it writes to (multicast: each
        CTA issues its slice of the B tile to its cluster column; in a 2-D cluster the row's
        first CTA issues the whole A tile to its row)."""
        tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, a_mcast_mask, b_mcast_mask, a_issuer = tma_ops
        ab_pipe.producer_acquire(prod)
        bar = ab_pipe.producer_get_barrier(prod)
        if cutlass.const_expr(self.cluster_n > 1):
            if a_issuer:
                _tma_load(tma_a, tAgA, tAsA, tile_m, kt, prod.index, bar, a_mcast_mask)
        else:
            _tma_load(tma_a, tAgA, tAsA, tile_m, kt, prod.index, bar)
        b_mask = b_mcast_mask if self.cluster_m > 1 else None
        _tma_load(tma_b, tBgB, tBsB, tile_n, kt, prod.index, bar, b_mask)

    @cute.jit
    def _work_unit(
        self,
        unit: cutlass.Int32,
        cl_tiles_m: cutlass.Int32,
        tiles_n: cutlass.Int32,
        tiles: cutlass.Int32,
        dp_tiles: cutlass.Int32,
        k_tiles: cutlass.Int32,
        rank_m: cutlass.Int32,
    ):
        """(tile_m, tile_n, first k-tile, end k-tile, workspace slot) of work unit ``unit``, as
        ``harness.tile_cost.StreamK.unit``: a whole tile (slot -1) or segment 0 / 1 of program
        p's share of the tail (slot = unit - dp_tiles; empty when first == end). The grouped
        walk has no tail (dp_tiles = tiles): every unit is a whole tile. tile_m is this CTA's
        row tile in the cluster tile (``grouped_tile``)."""
        tile = unit
        k_lo = cutlass.Int32(0)
        k_hi = k_tiles
        slot = cutlass.Int32(-1)
        if unit >= dp_tiles:
            # The first S programs share the tail (S: tail_programs), program p < S its
            # iterations [p*I//S, (p+1)*I//S), at most one tile, so at most two segments: the
            # rest of the tile it starts in, then the next one. Programs from S on run none.
            v = unit - dp_tiles
            segment = v // self.programs
            p = v - segment * self.programs
            sk_iters = (tiles - dp_tiles) * k_tiles
            shared = self.tail_programs(tiles - dp_tiles, k_tiles)
            lo = cutlass.min(p, shared) * sk_iters // shared
            hi = cutlass.min(p + 1, shared) * sk_iters // shared
            boundary = (lo // k_tiles + 1) * k_tiles
            start = lo
            end = cutlass.min(hi, boundary)
            if segment > 0:
                start = boundary
                end = cutlass.max(hi, boundary)
            t = cutlass.min(start // k_tiles, tiles - dp_tiles - 1)
            tile = dp_tiles + t
            k_lo = start - t * k_tiles
            k_hi = k_lo + (end - start)
            slot = v
        row, col = grouped_tile(tile, cl_tiles_m, tiles_n, self.walk_group(cl_tiles_m))
        return row * self.cluster_m + rank_m, col, k_lo, k_hi, slot

    def tail_programs(self, sk_tiles, k_tiles):
        """The programs that share the stream-K tail (``harness.tile_cost.StreamK.
        tail_programs``): enough for ``SK_MIN_ITERS`` k-iterations each, at least one a tail
        tile, at most all."""
        most = cutlass.min(cutlass.Int32(self.programs), sk_tiles * k_tiles // SK_MIN_ITERS)
        return cutlass.max(most, sk_tiles)

    def walk_group(self, cl_tiles_m):
        """The band height ``grouped_tile`` walks with (``walk_rows``; every row: one band)."""
        return cl_tiles_m if self.walk_rows is None else self.walk_rows

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_d: cute.CopyAtom | cute.Tensor,
        mD: cute.Tensor,
        mW: cute.Tensor,
        tiled_mma: cute.TiledMma,
        sA_layout: cute.ComposedLayout,
        sB_layout: cute.ComposedLayout,
        sD_layout: cute.ComposedLayout,
        sched_params: utils.PersistentTileSchedulerParams,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg_idx = cute.arch.make_warp_uniform(tidx // THREADS_PER_WG)
        stages = self.num_stages

        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(self.tma_epi):
                cpasync.prefetch_descriptor(tma_d)

        cta_layout = cute.make_layout((*self.cluster_mn, 1))
        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster_coord = cta_layout.get_flat_coord(cta_rank)
        # B goes to every CTA that shares this CTA's N coordinate (its cluster column), A to
        # every CTA that shares its M coordinate (its cluster row; itself alone if 1-D).
        b_mcast_mask = cute.make_layout_image_mask(cta_layout, cluster_coord, mode=0)
        a_mcast_mask = cute.make_layout_image_mask(cta_layout, cluster_coord, mode=1)

        # -- shared memory ---------------------------------------------------------------------
        smem = SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)
        sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)

        # -- barriers (table in the module docstring) -------------------------------------------
        stage_bytes = sum(
            cute.size_in_bytes(self.dtype, stage_layout(s)) for s in (sA_layout, sB_layout)
        )
        # ab_empty's arrivals: the pipeline has lane r < cluster of each thread's warp arrive on
        # CTA r, so it takes the lane from ``signal_tidx``. Per warp (release=warp) every
        # consumer warp signals; per warpgroup only each warpgroup's first warp does, the others
        # given a lane of 16 or more, which names no CTA, as CUTLASS C++ spreads them (it takes
        # that warp's wait_group to cover the warpgroup's wgmma, which reads the stage for all
        # four warps; the GPU tests check the twins).
        warps = THREADS_PER_WG // 32  # per warpgroup
        signalling = 1 if cutlass.const_expr(self.release_per_wg) else warps
        # Each CTA's stage is written by the CTAs of its cluster row and column (multicast):
        # cluster + cluster_n - 1 of them, each told by every signalling warp.
        writers = self.cluster_m + self.cluster_n - 1
        consumer_arrivals = writers * self.num_consumers * signalling
        signal_tidx = tidx
        if cutlass.const_expr(self.release_per_wg):
            not_first = (warp_idx % warps + warps - 1) // warps  # 0 for the first warp, else 1
            signal_tidx = (tidx % 32) | (not_first * 16)
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.ab_barriers.data_ptr(),
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arrivals),
            tx_count=stage_bytes,
            cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)),
            tidx=signal_tidx,
            defer_sync=True,
        )
        # With a cluster the peer multicasts into our shared memory and arrives on our
        # barriers: the inits must be visible cluster-wide first (a CTA barrier without one).
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        # -- global tiles and their TMA partitions ------------------------------------------
        tile_mk, tile_nk = (self.tile_m, BLOCK_K), (self.tile_n, BLOCK_K)
        gA = cute.local_tile(mA, tile_mk, (None, None))  # (bM, bK, RestM, RestK)
        gB = cute.local_tile(mB, tile_nk, (None, None))  # (bN, bK, RestN, RestK)
        gD = cute.local_tile(mD, (self.tile_m, self.tile_n), (None, None))
        # A whole (a 2-D cluster's row gets it from its first CTA: ``_load_k_tile``).
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        # B split cluster_m ways: this CTA's rank along M picks its slice of the B tile.
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cluster_coord[0],
            cute.make_layout(self.cluster_m),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        k_tiles = cute.size(gA, mode=[3])
        # Real tile counts: CUTLASS's grouped scheduler pads the count along N (raster m) or M
        # (raster n) up to the group; its loops step over those padded units (``padded_unit``).
        tiles_m, tiles_n = cute.size(gA, mode=[2]), cute.size(gB, mode=[2])
        rank_m = cluster_coord[0]
        if cutlass.const_expr(self.walk):
            # Stream-K's work units (``harness.tile_cost.StreamK``) over cluster tiles: the
            # program is the cluster's index in the grid, so both CTAs of a cluster (and every
            # role in each) walk the same units. The grouped walk: every tile a whole unit.
            cl_tiles_m = (tiles_m + self.cluster_m - 1) // self.cluster_m
            tiles = cl_tiles_m * tiles_n
            dp_tiles = tiles
            units = tiles
            if cutlass.const_expr(self.stream_k):
                dp_tiles = tiles // self.programs * self.programs
                units = dp_tiles
                if tiles > dp_tiles:
                    units = dp_tiles + 2 * self.programs
            program = cute.arch.block_idx()[2]
            sk_shape = (cl_tiles_m, tiles_n, tiles, dp_tiles, k_tiles, rank_m)

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)

        # -- producer warpgroup: warp 0 walks the work units, an elected lane issues TMA ------
        if wg_idx == 0:
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp_idx == 0:
                a_issuer = cluster_coord[1] == 0
                tma_ops = (
                    tma_a,
                    tAgA,
                    tAsA,
                    tma_b,
                    tBgB,
                    tBsB,
                    a_mcast_mask,
                    b_mcast_mask,
                    a_issuer,
                )
                if cutlass.const_expr(self.walk):
                    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
                    unit = program
                    while unit < units:
                        tile_m, tile_n, k_lo, k_hi, _slot = self._work_unit(unit, *sk_shape)
                        for kt in range(k_lo, k_hi):  # an empty segment loads nothing
                            self._load_k_tile(ab_pipe, prod, tma_ops, tile_m, tile_n, kt)
                            prod.advance()
                        unit += self.programs
                else:
                    sched = utils.StaticPersistentTileScheduler.create(
                        sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
                    )
                    work = sched.initial_work_tile_info()
                    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
                    if cutlass.const_expr(self.l2_group > 1):
                        while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                            sched.advance_to_next_work()
                            work = sched.get_current_work()
                    while work.is_valid_tile:
                        tile_m, tile_n, split = work.tile_idx
                        # Split s owns k-tiles [k_tiles*s/S, k_tiles*(s+1)/S): never empty, as
                        # _valid keeps split_k <= k_tiles.
                        k_begin = k_tiles * split // self.split_k
                        k_end = k_tiles * (split + 1) // self.split_k
                        for kt in range(k_begin, k_end):
                            self._load_k_tile(ab_pipe, prod, tma_ops, tile_m, tile_n, kt)
                            prod.advance()
                        sched.advance_to_next_work()
                        work = sched.get_current_work()
                        if cutlass.const_expr(self.l2_group > 1):
                            while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                                sched.advance_to_next_work()
                                work = sched.get_current_work()
                # No remote arrive may target this CTA's barriers after it exits.
                ab_pipe.producer_tail(prod)

        # -- consumer warpgroups: wgmma over the ring, then the epilogue --------------------
        if wg_idx > 0:
            cute.arch.setmaxregister_increase(self.consumer_regs)
            consumer_tidx = tidx - THREADS_PER_WG
            thr_mma = tiled_mma.get_slice(consumer_tidx)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gD).shape[:3], cutlass.Float32)
            tile_mn = (self.tile_m, self.tile_n)

            if cutlass.const_expr(self.tma_epi):
                sD = storage.sD.get_tensor(sD_layout.outer, swizzle=sD_layout.inner)
                epi = TmaStoreEpilogue(
                    self.epilogue, tiled_mma, consumer_tidx, sD, tma_d, mD, self.dtype
                )
                tRS_acc = epi.retile(acc)

            if cutlass.const_expr(not self.walk):
                sched = utils.StaticPersistentTileScheduler.create(
                    sched_params, cute.arch.block_idx(), cute.arch.grid_dim()
                )
                work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            if cutlass.const_expr(self.overlap):
                # The finished tile waits here, in D's type, under the next tile's first MMAs.
                rD_tile = cute.make_rmem_tensor(acc.shape, self.dtype)
                tRS_rD_tile = epi.retile(rD_tile)
                prev_m = cutlass.Int32(0)
                prev_n = cutlass.Int32(0)
                tiles_done = cutlass.Int32(0)
            if cutlass.const_expr(self.walk):
                unit = program
                while unit < units:
                    tile_m, tile_n, k_lo, k_hi, slot = self._work_unit(unit, *sk_shape)
                    # An empty segment: nothing was loaded, so nothing to wait for or release.
                    if k_hi > k_lo:
                        # Mainloop as below, over the unit's k-tiles [k_lo, k_hi).
                        acc.fill(0.0)
                        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                        warpgroup.fence()
                        read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                        if cutlass.const_expr(self.overlap):
                            # The last whole tile's D leaves under this unit's first MMAs,
                            # whether this unit is a whole tile or a tail segment.
                            if tiles_done > 0:
                                epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
                                tiles_done = cutlass.Int32(0)
                        for _kt in range(k_lo + 1, k_hi):
                            read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                            warpgroup.wait_group(1)
                            ab_pipe.consumer_release(release)
                            release.advance()
                        warpgroup.wait_group(0)
                        ab_pipe.consumer_release(release)
                        release.advance()
                        if slot < 0:  # a whole tile: nothing to add to it, D directly
                            if cutlass.const_expr(self.overlap):
                                rD_tile.store(acc.load().to(self.dtype))
                                prev_m, prev_n = tile_m, tile_n
                                tiles_done = cutlass.Int32(1)
                            elif cutlass.const_expr(self.tma_epi):
                                epi.store(tRS_acc, tile_m, tile_n, warp_idx)
                            else:  # the grouped walk without a TMA store (N % 8 != 0)
                                store_direct(thr_mma, acc, mD, tile_mn, tile_m, tile_n, self.dtype)
                        elif cutlass.const_expr(self.stream_k):
                            # A tail segment: the reduce adds its fp32 partial to the others'.
                            store_partial(thr_mma, acc, mW, tile_mn, slot * self.cluster_m + rank_m)
                    unit += self.programs
            else:
                if cutlass.const_expr(self.l2_group > 1):
                    while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                        sched.advance_to_next_work()
                        work = sched.get_current_work()
                while work.is_valid_tile:
                    tile_m, tile_n, split = work.tile_idx
                    num_k = k_tiles * (split + 1) // self.split_k - k_tiles * split // self.split_k
                    # Mainloop as rung 7: one wgmma batch in flight, a stage released only after
                    # the batch that read it retired. Every work unit has >= 1 k-tile.
                    acc.fill(0.0)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    warpgroup.fence()
                    read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                    if cutlass.const_expr(self.overlap):
                        if tiles_done > 0:
                            epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
                    for _kt in range(1, num_k):
                        read = mma_k_tile(ab_pipe, tiled_mma, acc, tCrA, tCrB, read)
                        warpgroup.wait_group(1)
                        ab_pipe.consumer_release(release)
                        release.advance()
                    warpgroup.wait_group(0)
                    ab_pipe.consumer_release(release)
                    release.advance()

                    if cutlass.const_expr(self.split_k > 1):
                        # fp32 partial into this split's workspace slice, predicated on the edge.
                        mW_s = mW[(None, None, split)]
                        if cutlass.const_expr(self.swap or not self.tma_store):
                            store_direct(
                                thr_mma, acc, mW_s, tile_mn, tile_m, tile_n, cutlass.Float32
                            )
                        else:
                            store_split_partial(thr_mma, acc, mW_s, tile_mn, tile_m, tile_n)
                    elif cutlass.const_expr(self.overlap):
                        rD_tile.store(acc.load().to(self.dtype))
                        prev_m, prev_n = tile_m, tile_n
                        tiles_done += 1
                    elif cutlass.const_expr(self.tma_epi):
                        epi.store(tRS_acc, tile_m, tile_n, warp_idx)
                    else:
                        # "direct", or N % 8 != 0 (no TMA store): predicated stores.
                        store_direct(thr_mma, acc, mD, tile_mn, tile_m, tile_n, self.dtype)

                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                    if cutlass.const_expr(self.l2_group > 1):
                        while work.is_valid_tile & padded_unit(work, tiles_m, tiles_n, rank_m):
                            sched.advance_to_next_work()
                            work = sched.get_current_work()

            if cutlass.const_expr(self.overlap):
                if tiles_done > 0:
                    epi.store(tRS_rD_tile, prev_m, prev_n, warp_idx)
            if cutlass.const_expr(self.tma_epi):
                epi.drain()

    # -- device: the split-K reduce ----------------------------------------------------------
    @cute.kernel
    def reduce(self, mW: cute.Tensor, mD: cute.Tensor, mn: cutlass.Int32):
        """D[e] = sum over s = 0, 1, ... of W[e, s], in that order (bit-identical run to run).
        A block covers REDUCE_VEC x REDUCE_THREADS consecutive elements; at each step its
        threads touch consecutive addresses (coalesced)."""
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        base = bidx * (REDUCE_THREADS * REDUCE_VEC) + tidx
        for v in cutlass.range_constexpr(REDUCE_VEC):
            e = base + v * REDUCE_THREADS
            if e < mn:
                total = cutlass.Float32(0.0)
                for s in cutlass.range_constexpr(self.split_k):
                    total = total + mW[e, s]
                mD[e] = total.to(self.dtype)

    # -- device: the stream-K reduce -------------------------------------------------------
    @cute.kernel
    def streamk_reduce(self, mW: cute.Tensor, mD: cute.Tensor, k: cutlass.Int32):
        """D of tail tile ``block_idx.x`` = the sum of its partials, added in program order
        (bit-identical run to run): the programs ``harness.tile_cost.StreamK.contributors``
        names, each partial in the slot of the segment it wrote. Block ``block_idx.y`` covers
        ``sk_chunk`` consecutive elements of the tile (row-major), each thread SK_REDUCE_VEC
        of them: one 16-byte load per partial, neighbouring threads on neighbouring bytes."""
        tidx, _, _ = cute.arch.thread_idx()
        r, chunk, _ = cute.arch.block_idx()
        m, n = mD.shape
        programs = self.programs
        cl_tiles_m = (m + self.tile_rows - 1) // self.tile_rows
        tiles_n = (n + self.tile_n - 1) // self.tile_n
        tiles = cl_tiles_m * tiles_n
        k_tiles = (k + BLOCK_K - 1) // BLOCK_K
        dp_tiles = tiles // programs * programs
        sk_iters = (tiles - dp_tiles) * k_tiles
        shared = self.tail_programs(tiles - dp_tiles, k_tiles)
        first_it = r * k_tiles
        # The program covering iteration x is the last p with p * I // S <= x (all below S).
        p_first = ((first_it + 1) * shared - 1) // sk_iters
        p_last = ((first_it + k_tiles) * shared - 1) // sk_iters
        if cutlass.const_expr(self.swap):
            # D^T's unit stride runs down the tile's rows: neighbouring threads take
            # neighbouring rows (each its 16-byte vector of the row-major partial), so each of
            # their four stores below fills consecutive bytes of one column of D^T.
            t = chunk * SK_REDUCE_THREADS + tidx
            row, col = t % self.tile_rows, t // self.tile_rows * SK_REDUCE_VEC
        else:
            e = (chunk * SK_REDUCE_THREADS + tidx) * SK_REDUCE_VEC
            row, col = e // self.tile_n, e % self.tile_n
        vec = (1, SK_REDUCE_VEC)
        acc = cute.make_rmem_tensor(vec, cutlass.Float32)
        acc.fill(0.0)
        for p in range(p_first, p_last + 1):
            lo = p * sk_iters // shared
            if (p + 1) * sk_iters // shared > lo:  # an empty program wrote no partial
                slot = programs + p  # segment 1: program p started in the tile before
                if lo >= first_it:
                    slot = p
                w = cute.local_tile(mW, vec, (slot * self.tile_rows + row, col // vec[1]))
                acc.store(acc.load() + w.load())
        band = self.walk_group(cl_tiles_m)
        tile_m, tile_n = grouped_tile(dp_tiles + r, cl_tiles_m, tiles_n, band)
        d_row = tile_m * self.tile_rows + row
        d_col = tile_n * self.tile_n + col
        if cutlass.const_expr(self.swap):
            # The columns are D's M, any length: each element on its own edge predicate.
            out = cute.make_rmem_tensor(vec, self.dtype)
            out.store(acc.load().to(self.dtype))
            for i in cutlass.range_constexpr(SK_REDUCE_VEC):
                if (d_row < m) & (d_col + i < n):
                    mD[d_row, d_col + i] = out[0, i]
        else:
            # N % 8 == 0 (a stream-K rule): a thread's columns are all inside D or all outside.
            if (d_row < m) & (d_col < n):
                d = cute.local_tile(mD, vec, (d_row, d_col // vec[1]))
                d.store(acc.load().to(self.dtype))


KERNEL = CuteDslKernel(
    spec(__name__),
    make_gemm=lambda num_sms, tma_store, config: Gemm(num_sms, tma_store, config),
    variant_of=tma_store_variant,
    space=ConfigSpace(
        MENU,
        _heuristic,
        module=__name__,
        valid=_valid,
        rank=_ranked,
        explain=_explain,
        on_gpu=_on_gpu,
    ),
    workspace=workspace_elems,
)
