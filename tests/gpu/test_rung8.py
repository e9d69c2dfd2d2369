"""Rung 8's code paths that no shape of the fixed suites forces, correct against cuBLAS on the
GPU (skipped without one): every stream-K config, each tile family only one backend has and
Gluon's A in registers, forced on smoke, ragged, a held-out random suite and shapes whose last
wave is partial (so the tail's K is split between programs and the reduction runs), fp16 and
bf16.

Through the harness's isolated runner (check only), like ``test_kernels.py``.
"""

from __future__ import annotations

import pytest
from expectations import config_shard, forced_records, require_module, require_runnable

from harness.gemm import Problem
from harness.problems import expand
from harness.protocol import KernelSpec, Rung
from harness.records import Status
from harness.registry import discover
from harness.runner import Runner, RunSettings
from harness.tile_cost import GemmConfig

torch = require_module("torch", "the GPU tests")

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

CAP = tuple(torch.cuda.get_device_capability())
SMS = torch.cuda.get_device_properties(0).multi_processor_count
SPECS = [s for s in discover() if s.rung == Rung.SHAPE_ADAPTIVE and "cuda" in s.devices]
pytestmark = pytest.mark.gpu

#: A wave and a few tail tiles; one partial wave; a tail of one tile; whole waves only; ragged;
#: a tail too short for every program (``SK_MIN_ITERS``: in 128x256 tiles two tiles of 60
#: k-iterations shared by 15 programs, the eighth straddling the two).
TAILS = [
    "300x7168x16384",
    "1000x4096x4096",
    "777x1024x4096",
    "200x4096x14336",
    "4352x4096x512",
    "8448x8192x512",
    "3000x5000x1000",
    "2418x3584x3840",
]
#: A held-out seed (never a tuning seed): shapes nobody chose these kernels for.
RANDOM = "random:3:8"


@pytest.fixture(autouse=True)
def _only_selected_backends(request: pytest.FixtureRequest) -> None:
    spec = request.node.callspec.params.get("spec") if hasattr(request.node, "callspec") else None
    wanted = request.config.getoption("--backend", default=None)
    if spec is not None and wanted and spec.backend not in wanted:
        pytest.skip(f"--backend {' '.join(wanted)} given")


def _values(name: str) -> dict[str, str]:
    """A config name's knobs (``tile_m=128,tile_n=256,...``)."""
    return dict(kv.split("=") for kv in name.split(","))


def _new_paths(menu: list[str]) -> list[str]:
    """The menu entries no fixed-suite shape selects: unswapped stream-K, and unswapped tiles
    whose width is not a power of two (96, 160, 192; Gluon's are two boxes: 64 + 32, 128 + 32,
    128 + 64)."""
    knobs = {n: _values(n) for n in menu}
    return [
        n
        for n, v in knobs.items()
        if v["swap_ab"] == "0" and (v["stream_k"] == "1" or _not_a_power_of_two(int(v["tile_n"])))
    ]


def _not_a_power_of_two(width: int) -> bool:
    """A tile width Triton's blocks cannot be in one piece (Gluon runs it as two boxes)."""
    return width & (width - 1) != 0


def _tail(problem: Problem, name: str) -> bool:
    """Whether ``name`` (a config) leaves ``problem`` a stream-K tail on this GPU."""
    values = _values(name)
    config = GemmConfig(
        int(values["tile_m"]),
        int(values["tile_n"]),
        int(values["cluster"]),
        swap_ab=values["swap_ab"] == "1",
    )
    return config.schedule(problem, SMS).sk_tiles > 0


def _menu(spec: KernelSpec) -> list[str]:
    """The names of ``spec``'s configs, as its worker process declares them."""
    require_runnable(spec, CAP)
    with Runner([spec], RunSettings(measure=False, timeout_s=300)) as runner:
        menu = runner.menus()[spec.id]
    assert isinstance(menu, list), f"{spec.id} failed to load or declares no configs: {menu}"
    return menu


def _check_forced(
    spec: KernelSpec, names: list[str], suites: list[str], shard: str | None
) -> dict[str, list]:
    """Every config of ``names`` (of the ``shard`` slice of them) forced on every problem of
    ``suites`` (fp16 and bf16), checked against cuBLAS (``expectations.forced_records``: in
    several worker processes at once): none wrong, errored or timed out, each ran at least one
    problem. Returns each config's problems that ran."""
    names = config_shard(names, shard)
    if not names:
        pytest.skip(f"not applicable: --config-shard {shard} holds none of these configs")
    records = forced_records(spec, names, expand(suites, ["fp16", "bf16"]))
    bad = [
        f"{r.problem_key} [{r.config}]: {r.status.value}: {r.reason}"
        for r in records
        if r.status not in (Status.OK, Status.UNSUPPORTED)
    ]
    assert not bad, "\n".join(bad)
    ok = [r for r in records if r.status == Status.OK]
    ran = {n: [r.problem for r in ok if r.config == n] for n in names}
    assert all(ran.values()), f"ran no problem: {[n for n, ok in ran.items() if not ok]}"
    return ran


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_stream_k_and_new_tiles_are_correct(spec: KernelSpec, shard: str | None) -> None:
    names = _new_paths(_menu(spec))
    assert names, f"{spec.id} has no stream-K config"
    ran = _check_forced(spec, names, ["smoke", "ragged", RANDOM, *TAILS], shard)
    for name, ok in ran.items():
        if _values(name)["stream_k"] == "1":
            with_tail = [p for p in ok if _tail(p, name)]
            assert len(with_tail) >= 4, f"{name}: only {len(with_tail)} problems with a tail ran"


#: Grids for the grouped data-parallel order: fewer tiles than programs, a last band shorter
#: than the group (CUTLASS's group padded these: 6 x 20 and 4 x 20 cluster tiles), several
#: waves with a part-empty last one, and ragged M and N.
GROUPED = ["668x5120x2048", "1000x5120x1000", "2500x4100x512", "4095x4097x520", "9000x3000x256"]


def _grouped(name: str) -> bool:
    """A data-parallel tile in the heuristic's grouped order: unswapped, unsplit, no stream-K,
    group 8, raster m, persistent and overlapped where a backend has those knobs."""
    v = _values(name)
    return (
        (v["swap_ab"], v["split_k"], v["stream_k"], v["raster"], v["group"])
        == ("0", "1", "0", "m", "8")
        and v.get("persistent", "1") == "1"
        and v.get("epilogue", "overlap") == "overlap"
    )


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_grouped_tiles_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every data-parallel tile of the heuristic's grouped order (CuTeDSL: the kernel's own
    walk, ``grouped_tile``, in place of CUTLASS's padded grouped scheduler) on grids that end
    in a short band or a part-empty wave, on the ragged suite and a held-out random suite."""
    names = [n for n in _menu(spec) if _grouped(n)]
    assert names, f"{spec.id}: no grouped data-parallel tile"
    _check_forced(spec, names, ["ragged", RANDOM, *GROUPED], shard)


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_deferred_epilogues_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """CuTeDSL's ``epilogue=deferred`` tiles (the whole tile staged in one round, the store
    warp's wait on its reads at the next tile's epilogue) on the grouped grids (several tiles a
    program, so a tile's buffers are rewritten after its stores), ragged shapes and a held-out
    random suite. Backends without the knob have nothing to check."""
    names = [n for n in _menu(spec) if _values(n).get("epilogue") == "deferred"]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no deferred epilogue")
    _check_forced(spec, names, ["smoke", "ragged", RANDOM, *GROUPED], shard)


#: Mid-size M for the wide swapped tiles: ragged M, N and K, one to four column tiles of M.
MID_M = ["77x3000x512", "100x4104x2048", "338x8192x1000", "555x5000x1032", "1000x4096x4096"]
#: Widths of the wide swapped tiles checked: the narrowest, an odd multiple of the wgmma N step
#: of 8 (its ring has an odd number of 8-row swizzle groups: ``_workarounds``, defect 2 of the
#: CuTeDSL backend), a tile of two boxes (Gluon: 144 = 128 + 16, two wgmmas and two D boxes;
#: 72 = 64 + 8 too), the widest.
WIDE = ("72", "144", "168", "256")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_wide_swapped_tiles_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every wide swapped config (64- and 128-row, every cluster, raster and split up to 2)
    at the ``WIDE`` widths a backend has. A backend whose swapped tiles are all narrow covers
    has nothing to check here."""
    swapped = [n for n in _menu(spec) if _values(n)["swap_ab"] == "1"]
    if all(int(_values(n)["tile_n"]) <= 64 for n in swapped):
        pytest.skip(f"not applicable: {spec.id} has no swapped tile wider than 64 columns")
    names = [
        n
        for n in swapped
        if _values(n)["tile_n"] in WIDE
        and _values(n)["tile_m"] in ("64", "128")
        and int(_values(n)["split_k"]) <= 2
        and _serial(n)
    ]
    assert names, f"{spec.id}: a wide swapped family without the widths {WIDE}"
    _check_forced(spec, names, ["ragged", *MID_M], shard)


#: K of one to four k-tiles and a ragged one (the register-A loop's peeled first step, its
#: pairs of steps, and the step an even count leaves), at mid-size M on both sides of 64.
REGS_K = ["100x4104x64", "338x8192x128", "555x5000x192", "77x3000x256", "1000x4096x1000"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_a_in_registers_is_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every config that feeds wgmma's A from registers (Gluon's ``a_operand=regs``: one
    ``ldmatrix`` a k-step for both boxes of a two-box tile, two register sets in turn) at
    K of every parity of k-steps, ragged shapes and mid-size M; split over K too."""
    names = [n for n in _menu(spec) if _values(n).get("a_operand") == "regs"]
    if not names:
        pytest.skip(f"not applicable: {spec.id} reads A from shared memory only")
    _check_forced(spec, names, ["ragged", *REGS_K, *MID_M], shard)


#: Mid-size M whose wide swaps leave N's row tiles a partial last wave (stream-K's tail split
#: over K), with the two- and three-box widths' M: 300x7168x16384 and 200x4096x14336 from
#: ``TAILS``, 155x36864x7168 (288 tiles of 128x160), ragged M, N and K.
REGS_TAILS = ["300x7168x16384", "200x4096x14336", "155x36864x7168", "331x17000x3000"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_a_in_registers_stream_k_is_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every stream-K config with A in registers (Gluon: the register loops under a tail split
    over K, two or three boxes a partial) on smoke, a held-out random suite and ``REGS_TAILS``,
    each config with a tail at two problems or more."""
    names = [
        n
        for n in _menu(spec)
        if _values(n).get("a_operand") == "regs" and _values(n)["stream_k"] == "1"
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no stream-K config with A in registers")
    ran = _check_forced(spec, names, ["smoke", RANDOM, *REGS_TAILS], shard)
    for name, ok in ran.items():
        with_tail = [p for p in ok if _tail(p, name)]
        assert len(with_tail) >= 2, f"{name}: only {len(with_tail)} problems with a tail ran"


#: Shapes for the 4-CTA swapped clusters: cuBLAS's 4x1 shape (196x4608x4096: 9 x 3 clusters),
#: N in a part of a cluster (2112 = 4.125 clusters of 512 rows: the last one's three upper
#: CTAs hold no row of D and still take and issue their quarters of M's tile), ragged M, N, K,
#: and more clusters of work than the GPU holds at once (257x5120x4096 at 72 wide: 40 clusters,
#: the persistent grid CuTeDSL's ``resident_clusters``, 30 on an H200).
FOUR_CTA = ["196x4608x4096", "212x2112x1000", "77x3000x512", "300x1000x2056", "257x5120x4096"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_four_cta_swapped_clusters_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every swapped config in a cluster of four (CuTeDSL: the 128-row wide swaps of
    ``CLUSTER4_WIDTHS`` and ``CLUSTER4_WIDE``, the 64-row ones of ``CLUSTER4_64_WIDTHS``) on
    ``FOUR_CTA`` and the ragged suite. A backend without four-CTA clusters has nothing to
    check."""
    names = [
        n for n in _menu(spec) if _values(n)["cluster"] == "4" and "cluster_n" not in _values(n)
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no cluster of four")
    _check_forced(spec, names, ["ragged", *FOUR_CTA], shard)


#: Shapes for the 2-D clusters: ``FOUR_CTA``'s, plus M in three column tiles of 80 (a 2x3
#: cluster's columns exactly) and in five of 72 (the last cluster's columns past M: those CTAs
#: hold no column of D and still issue their slices of B and, first in a row, A).
CLUSTERS_2D = [*FOUR_CTA, "217x5120x4096", "333x2048x1024"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_2d_clusters_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every config in a 2-D cluster (CuTeDSL: ``cluster_n`` > 1, the weights multicast along
    the columns as well, 128-row tiles and the 64-row 4x2; tune-only) on ``CLUSTERS_2D`` and
    the ragged suite. A backend without 2-D clusters has nothing to check."""
    names = [n for n in _menu(spec) if _values(n).get("cluster_n", "1") != "1"]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no 2-D cluster")
    _check_forced(spec, names, ["ragged", *CLUSTERS_2D], shard)


#: M the long side or nearly, ragged M, N and K: a swapped tile with M in 5 to 33 column tiles
#: (``harness.tile_cost.whole_wave_transpose``: 4736x3072x3072 runs as 33 columns of 144).
TRANSPOSED = ["1153x3000x1032", "2411x2112x1096", "4737x3072x3064"]
#: The widths its A/B timed there (CuTeDSL README, "Thirtieth version"), and those of Gluon's
#: transposes, its three-box register swaps (Gluon README, "Twenty-seventh version").
TRANSPOSED_WIDTHS = ("104", "112", "144", "160", "200", "208", "224")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_whole_wave_transposes_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """The 128- and 192-row swapped tiles, one CTA, at ``TRANSPOSED_WIDTHS`` where M is no
    short side: many column tiles of M, M past N. A backend without such tiles skips."""
    names = [
        n
        for n in _menu(spec)
        if _values(n)["swap_ab"] == "1"
        and _values(n)["tile_m"] in ("128", "192")
        and _values(n)["tile_n"] in TRANSPOSED_WIDTHS
        and (_values(n)["cluster"], _values(n)["split_k"], _values(n)["stream_k"])
        == ("1", "1", "0")
        and _values(n).get("raster", "m") == "m"
        and _serial(n)
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no swapped tile {TRANSPOSED_WIDTHS} wide")
    _check_forced(spec, names, TRANSPOSED, shard)


def _serial(name: str) -> bool:
    """The serial epilogue only: the swapped tiles' other way out (direct stores) is
    ``test_swapped_tma_store_epilogues_are_correct``'s, not multiplied over every width."""
    return _values(name).get("epilogue", "serial") == "serial"


#: Swapped tiles whose TMA-store epilogue plans differ (CuTeDSL: sub-tiles of 8, 16 or 32
#: columns, rounds of one to four of them, tiles whose rounds end mid-rotation and drain):
#: (tile_m, tile_n) pairs, narrow covers included.
SWAP_EPILOGUE_TILES = {
    ("64", "16"),
    ("128", "32"),
    ("128", "64"),
    ("128", "72"),
    ("64", "80"),
    ("128", "96"),
    ("128", "120"),
    ("256", "72"),
    ("256", "144"),
    ("128", "256"),
}
#: Shapes for them: M from one column tile to several, ragged N (N % 8 == 0 for the TMA
#: store, and one N % 8 != 0, which falls back to direct stores), several tiles a CTA (each
#: starting its stores at buffer 0 after the last one's drained).
SWAP_EPILOGUE_SHAPES = [
    "ragged",
    "9x4104x1000",
    "61x5000x2048",
    "100x4104x2048",
    "211x37888x512",
    "338x8192x1000",
    "555x5000x1032",
    "1000x4096x4096",
    "77x3001x512",
]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_swapped_tma_store_epilogues_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every epilogue of the swapped tiles in ``SWAP_EPILOGUE_TILES`` (raster m, unsplit, one
    CTA; the 72-wide tiles in pairs too): the TMA store through D's column-major view and the
    direct stores. A backend without an epilogue knob (Gluon) has nothing to check here."""
    swapped = [n for n in _menu(spec) if _values(n)["swap_ab"] == "1"]
    # Decided by the knob, not by what the menu holds: a backend whose configs have an
    # epilogue knob must have both swapped ways out, or the test fails.
    if not any("epilogue" in _values(n) for n in swapped):
        pytest.skip(f"not applicable: {spec.id}'s swapped configs have no epilogue knob")
    names = [
        n
        for n in swapped
        if (_values(n)["tile_m"], _values(n)["tile_n"]) in SWAP_EPILOGUE_TILES
        and _values(n)["split_k"] == "1"
        and _values(n)["raster"] == "m"
        and (_values(n)["cluster"] == "1" or _values(n)["tile_n"] == "72")
    ]
    found = {(_values(n)["tile_m"], _values(n)["tile_n"]) for n in names}
    assert found == SWAP_EPILOGUE_TILES, f"missing {sorted(SWAP_EPILOGUE_TILES - found)}"
    assert {_values(n)["epilogue"] for n in names} == {"serial", "direct"}
    _check_forced(spec, names, SWAP_EPILOGUE_SHAPES, shard)


def _wide_swaps_of(
    spec: KernelSpec, rows: str, widths: tuple[str, ...], rasters: tuple[str, ...]
) -> list[str]:
    """``spec``'s unsplit wide swapped configs of ``rows`` rows a CTA (serial epilogue) at
    ``widths`` in ``rasters``, asserted present for both clusters; a skip where the backend has
    no swapped tile of that many rows. A width the backend has at no row count (Gluon's tiles
    are one or two power-of-two boxes: no 104) is left out."""
    swapped = [n for n in _menu(spec) if _values(n)["swap_ab"] == "1"]
    names = [n for n in swapped if _values(n)["tile_m"] == rows]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no {rows}-row swapped tile")
    widths = tuple(w for w in widths if any(_values(n)["tile_n"] == w for n in swapped))
    names = [
        n
        for n in names
        if _values(n)["tile_n"] in widths
        and _values(n)["raster"] in rasters
        and _values(n)["split_k"] == "1"
        and _serial(n)
    ]
    found = {(_values(n)["tile_n"], _values(n)["cluster"], _values(n)["raster"]) for n in names}
    want = {(w, c, r) for w in widths for c in ("1", "2") for r in rasters}
    assert found == want, f"{spec.id}: {rows}-row tiles missing {sorted(want - found)}"
    return names


#: Widths of the 256-row wide swaps checked: the narrowest, an odd multiple of 8 (defect 2
#: above), the widest (``SWAP_WIDE_256``, 144 in both rung 8s).
WIDE_256 = ("72", "136", "144")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_wide_swaps_of_256_rows_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every wide swapped config with 256 rows a CTA (two consumer warpgroups of 128 rows each,
    so each thread holds two m64 blocks of accumulators) at the ``WIDE_256`` widths, both
    clusters and rasters. A backend without 256-row tiles has nothing to check here."""
    names = _wide_swaps_of(spec, "256", WIDE_256, ("m", "n"))
    _check_forced(spec, names, ["ragged", *MID_M], shard)


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_wide_swaps_of_256_rows_past_144_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every 256-row swapped config wider than 144 (CuTeDSL: 152 and 160, the TMA store only,
    tune-only: 8- and 32-column epilogue sub-tiles, 152 and 160 accumulators a thread) on
    ragged and mid-M shapes and cuBLAS's 256x160 shape on the H100. A backend without them
    has nothing to check here."""
    names = [
        n
        for n in _menu(spec)
        if _values(n)["swap_ab"] == "1"
        and _values(n)["tile_m"] == "256"
        and int(_values(n)["tile_n"]) > 144
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} has no 256-row swap wider than 144")
    _check_forced(spec, names, ["ragged", *MID_M, "1087x9216x3072"], shard)


#: Widths of the 192-row wide swaps checked: the narrowest, cuBLAS's 104 at 410x6144x4096 (an
#: 8-column epilogue sub-tile; not a Gluon width), the widest (``SWAP_WIDE_192``, 160: 32-column
#: sub-tiles in CuTeDSL, two boxes of 128 + 32 in Gluon).
WIDE_192 = ("72", "104", "160")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_wide_swaps_of_192_rows_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every wide swapped config with 192 rows a CTA (three consumer warpgroups of 64 rows,
    one m64 block each, under a smaller register share) at the ``WIDE_192`` widths, both
    clusters, raster m (raster n walks the same tiles in another order, the scheduler's code
    every swapped tile shares), on ragged and mid-M shapes (several row tiles a CTA,
    N % 8 != 0's direct stores). A backend without 192-row tiles has nothing to check here."""
    names = _wide_swaps_of(spec, "192", WIDE_192, ("m",))
    _check_forced(spec, names, ["ragged", *MID_M, "410x6144x4096"], shard)


#: Shapes for the unswapped split-K partials: N % 8 == 0 with interior tiles and edge tiles on
#: both sides (300 rows, 4104 columns), a `sweep` shape of whole tiles, and N % 8 != 0 (every
#: partial predicated).
SPLIT_SHAPES = ["300x4104x2048", "128x4096x14336", "200x4099x2048"]


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_unswapped_split_partials_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """The unswapped split-K configs the heuristics pick from (128 or 256 columns, split 2 or
    4): each split's fp32 partial written whole where the tile is inside the matrix (CuTeDSL:
    8-byte pairs) and predicated on its edge, the reduce summing them, on ``SPLIT_SHAPES``. A
    backend without unswapped splits has nothing to check here."""
    names = [
        n
        for n in _menu(spec)
        if _values(n)["swap_ab"] == "0"
        and _values(n)["split_k"] in ("2", "4")
        and _values(n)["tile_n"] in ("128", "256")
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} splits no unswapped tile")
    _check_forced(spec, names, SPLIT_SHAPES, shard)


#: Widths of the wide swaps checked split three and four ways (128 rows): the narrowest and
#: one with an odd number of 8-row groups (defect 2 above).
WIDE_SPLIT = ("72", "168")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_deep_wide_swap_splits_are_correct(spec: KernelSpec, shard: str | None) -> None:
    """Every wide swapped config split more than twice at the ``WIDE_SPLIT`` widths, both
    rasters: K ranges of unequal k-tile counts (the ragged and ``MID_M`` K's: 8, 16, 17, 32
    k-tiles), each split's fp32 partial in its own slice, the reduce summing three or four.
    A backend with no such split has nothing to check here."""
    names = [
        n
        for n in _menu(spec)
        if _values(n)["swap_ab"] == "1"
        and int(_values(n)["tile_n"]) > 64
        and int(_values(n)["split_k"]) > 2
    ]
    if not names:
        pytest.skip(f"not applicable: {spec.id} splits no wide swap more than twice")
    names = [n for n in names if _values(n)["tile_n"] in WIDE_SPLIT]
    assert {_values(n)["tile_n"] for n in names} == set(WIDE_SPLIT)
    _check_forced(spec, names, ["ragged", *MID_M], shard)


#: Swapped stream-K: N's row tiles leave a part-empty wave (a tail) at most widths, M is no
#: multiple of 8 or of the width (the reduce's edge predicates), K no multiple of 64.
SWAPPED_TAILS = [
    "155x9216x1000",
    "300x7168x4096",
    "67x5120x2048",
    "1000x4104x520",
    "777x1024x4096",
    "213x36864x576",
]
#: The widths forced: the narrowest, one between (two boxes in Gluon: 128 + 8), the widest,
#: each in both rasters and clusters (the two walks and the multicast pair).
SWAPPED_WIDTHS = ("72", "136", "256")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_swapped_stream_k_is_correct(spec: KernelSpec, shard: str | None) -> None:
    """Stream-K over wide swapped tiles (D^T's tail tiles summed by the reduce and written
    down D's columns) on the ragged suite and shapes with a tail, fp16 and bf16."""
    names = [
        n
        for n in _menu(spec)
        if (_values(n)["swap_ab"], _values(n)["stream_k"]) == ("1", "1")
        and _values(n)["tile_n"] in SWAPPED_WIDTHS
    ]
    assert names, f"{spec.id} has no swapped stream-K config of the forced widths"
    ran = _check_forced(spec, names, ["ragged", *SWAPPED_TAILS], shard)
    for name, ok in ran.items():
        with_tail = [p for p in ok if _tail(p, name)]
        assert len(with_tail) >= 4, f"{name}: only {len(with_tail)} problems with a tail ran"
