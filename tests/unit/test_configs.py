"""Configurations as data: names derived from values, overrides, the menu, the tuned table
that ``select`` consults before its heuristic, and the command that writes that table."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from harness.configs import (
    OWN_CHOICE,
    ConfigSpace,
    KernelConfig,
    TunedEntry,
    TunedTable,
    check_request,
    quiet_knob,
    resolve_config,
    tune_candidates,
    tuned_table_path,
)
from harness.gemm import Problem
from harness.protocol import KernelSpec, Rung
from harness.records import BenchRecord, Stats, Status
from harness.results import Document
from harness.tune import choose, write_tables


@dataclass(frozen=True)
class Knobs(KernelConfig):
    group: int = 8
    raster: str = "m"
    fast: bool = True


MENU = tuple(Knobs(g, r) for g in (4, 8) for r in ("m", "n"))
P = Problem(4096, 4096, 4096)


def test_name_is_derived_from_values_and_parses_back() -> None:
    k = Knobs(16, "n", False)
    assert k.name == "group=16,raster=n,fast=0"
    assert k.values() == {"group": 16, "raster": "n", "fast": False}
    assert Knobs().with_overrides(k.name) == k
    assert Knobs().with_overrides("raster=n") == Knobs(raster="n")
    with pytest.raises(ValueError, match=r"unknown knob\(s\) colour; the knobs are group, raster"):
        Knobs().with_overrides("colour=red")
    with pytest.raises(ValueError, match="takes an integer"):
        Knobs().with_overrides("group=big")


def test_space_refuses_duplicates_and_off_menu_heuristics() -> None:
    with pytest.raises(ValueError, match="repeat"):
        ConfigSpace((Knobs(), Knobs()), lambda p: Knobs())
    space = ConfigSpace(MENU, lambda p: Knobs(group=99))
    with pytest.raises(ValueError, match="not on the menu"):
        space.select("x/y", P)
    picky = ConfigSpace(MENU, lambda p: Knobs(), valid=lambda p, c: "no" if c.group == 8 else None)
    with pytest.raises(ValueError, match="which no"):
        picky.select("x/y", P)


@pytest.fixture()
def kernel_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A throw-away kernel module whose folder can hold a tuned table."""
    pkg = tmp_path / "tmpkernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "r7.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "tmpkernels.r7"
    sys.modules.pop("tmpkernels", None)


def _table(module: str, gpu: str, entries: dict[str, str]) -> Path:
    path = tuned_table_path(module, gpu)
    table = TunedTable(
        gpu, {"x/r7": tuple(TunedEntry(Problem.parse(k), v) for k, v in entries.items())}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table.to_json()))
    return path


def test_select_consults_the_tuned_table_before_the_heuristic(kernel_module: str) -> None:
    space = ConfigSpace(MENU, lambda p: Knobs(), module=kernel_module)
    path = _table(
        kernel_module,
        "NVIDIA H200",
        {"4096x4096x4096-fp16": Knobs(4, "n").name, "128x4096x4096-fp16": Knobs(4, "m").name},
    )
    assert path.name == "nvidia-h200.json" and path.parent.name == "tuned"
    assert space.select("x/r7", P, "NVIDIA H200") == Knobs(4, "n")  # exact problem
    assert space.select("x/r7", Problem(128, 4096, 4096), "NVIDIA H200") == Knobs(4, "m")
    # any other M, however near, is the heuristic's: a tile's fit to waves does not carry
    assert space.select("x/r7", Problem(100, 4096, 4096), "NVIDIA H200") == Knobs()
    assert space.select("x/r7", Problem(4095, 4096, 4096), "NVIDIA H200") == Knobs()
    assert space.select("x/r7", Problem(128, 4096, 4096, "bf16"), "NVIDIA H200") == Knobs()
    assert space.select("x/r7", Problem(100, 512, 4096), "NVIDIA H200") == Knobs()  # heuristic
    assert space.select("x/r7", P, "NVIDIA H100") == Knobs()  # another GPU: no table
    assert space.select("x/r7", P, None) == Knobs()  # compile-only: no GPU
    assert space.select("other/kernel", P, "NVIDIA H200") == Knobs()
    # a stale entry (a config no longer on the menu) falls back to the heuristic
    _table(kernel_module, "NVIDIA H200", {"4096x4096x4096-fp16": "group=3,raster=m,fast=1"})
    assert space.select("x/r7", P, "NVIDIA H200") == Knobs()


def test_a_name_older_than_a_knob_means_that_knob_at_its_default(kernel_module: str) -> None:
    """A tuned entry written before a knob existed (no ``fast=`` in its name) still names the
    menu entry with that knob at its default, and only that one; a name with an unknown knob
    or a changed value names nothing."""
    space = ConfigSpace((*MENU, Knobs(4, "n", False)), lambda p: Knobs(), module=kernel_module)
    assert space.by_name("group=4,raster=n") == Knobs(4, "n", True)
    assert space.by_name("group=4,raster=n,fast=0") == Knobs(4, "n", False)
    assert space.by_name("group=4") == Knobs(4, "m")  # every missing knob at its default
    assert space.by_name("group=4,raster=n,colour=red") is None
    assert space.by_name("group=5,raster=n") is None
    assert space.by_name("not a name") is None
    _table(kernel_module, "NVIDIA H200", {P.key: "group=4,raster=n"})
    assert space.select("x/r7", P, "NVIDIA H200") == Knobs(4, "n", True)


@dataclass(frozen=True)
class Later(Knobs):
    """``Knobs`` with a knob declared after results named its configs."""

    operand: str = quiet_knob("smem")


def test_a_quiet_knob_at_its_default_stays_out_of_the_name(kernel_module: str) -> None:
    """A quiet knob leaves every earlier name naming the same config: out of ``name`` at its
    default (in ``values`` always), named otherwise; a full name without it means its
    default even over a base that sets it, while a partial override keeps the base's; menus
    and tuned tables find both twins by name, and ``--config`` checks know the knob from the
    names that give it."""
    plain, regs = Later(4, "n"), Later(4, "n", operand="regs")
    assert plain.name == Knobs(4, "n").name == "group=4,raster=n,fast=1"
    assert plain.values()["operand"] == "smem"
    assert regs.name == "group=4,raster=n,fast=1,operand=regs"
    assert regs.with_overrides(plain.name) == plain  # a full name: the quiet knob's default
    assert regs.with_overrides("group=8") == Later(8, "n", operand="regs")  # partial: kept
    assert Later().with_overrides(regs.name) == regs
    space = ConfigSpace((plain, regs), lambda p: plain, module=kernel_module)
    assert space.by_name(plain.name) == plain and space.by_name(regs.name) == regs
    _table(kernel_module, "NVIDIA H200", {P.key: regs.name})
    assert space.select("x/r7", P, "NVIDIA H200") == regs
    names = [plain.name, regs.name]  # what a worker declares
    assert check_request(names, "operand=regs") is None
    assert check_request(names, "operand=smem") is None
    assert check_request(names, plain.name) is None
    assert "no config on the menu has group=16,operand=regs" in check_request(
        names, "group=16,operand=regs"
    )
    assert "unknown knob(s) colour" in check_request(names, "colour=red")


def test_reason_says_why_the_selection_chose_a_config(kernel_module: str) -> None:
    """``reason``: the tuned table's entry names the table, the heuristic's pick its
    ``explain`` line (or "heuristic" without one); any other config has no reason."""
    why = ConfigSpace(MENU, lambda p: Knobs(), module=kernel_module, explain=lambda p, c: "cheap")
    plain = ConfigSpace(MENU, lambda p: Knobs(), module=kernel_module)
    assert why.reason("x/r7", P, Knobs(), "NVIDIA H200") == "cheap"  # no table yet
    assert plain.reason("x/r7", P, Knobs(), None) == "heuristic"
    assert why.reason("x/r7", P, Knobs(4, "n"), None) is None  # not the choice: forced
    _table(kernel_module, "NVIDIA H200", {P.key: Knobs(4, "n").name})
    table_why = why.reason("x/r7", P, Knobs(4, "n"), "NVIDIA H200")
    assert table_why == "tuned table (tuned/nvidia-h200.json)"
    assert why.reason("x/r7", P, Knobs(), "NVIDIA H200") is None  # the table overrides it
    assert why.reason("x/r7", P, Knobs(), "NVIDIA H100") == "cheap"


def test_a_gpu_rule_moves_the_heuristics_choice_on_its_gpu_only(kernel_module: str) -> None:
    """``on_gpu`` replaces the heuristic's choice on the GPUs it names, and ``reason`` adds its
    line to the heuristic's; a replacement off the menu or invalid for the problem, another
    GPU, no GPU name and a tuned table's entry all keep what they had."""

    def rule(problem: Problem, chosen: Knobs, gpu: str) -> tuple[Knobs, str] | None:
        if "H100" not in gpu:
            return None
        return (replace(chosen, fast=False) if problem.m > 100 else replace(chosen, group=4)), "h"

    space = ConfigSpace(
        (*MENU, Knobs(8, "m", False)),
        lambda p: Knobs(),
        module=kernel_module,
        valid=lambda p, c: "too slow" if p.m > 9000 and not c.fast else None,
        explain=lambda p, c: "cheap",
        on_gpu=rule,
    )
    slow = Knobs(8, "m", False)
    assert space.select("x/r7", P, "NVIDIA H100 80GB HBM3") == slow
    assert space.reason("x/r7", P, slow, "NVIDIA H100 80GB HBM3") == "cheap; h"
    assert space.reason("x/r7", P, Knobs(), "NVIDIA H100 80GB HBM3") is None  # moved away
    assert space.select("x/r7", P, "NVIDIA H200") == Knobs()
    assert space.reason("x/r7", P, Knobs(), "NVIDIA H200") == "cheap"
    assert space.select("x/r7", P, None) == Knobs()
    big = Problem(9001, 4096, 4096)  # the replacement is invalid there: kept
    assert space.select("x/r7", big, "NVIDIA H100 80GB HBM3") == Knobs()
    assert space.reason("x/r7", big, Knobs(), "NVIDIA H100 80GB HBM3") == "cheap"
    small = Problem(64, 4096, 4096)  # Knobs(4, "m", True) is on the menu, so it moves
    assert space.select("x/r7", small, "NVIDIA H100 PCIe") == Knobs(4, "m")
    _table(kernel_module, "NVIDIA H100 80GB HBM3", {P.key: Knobs(4, "n").name})
    assert space.select("x/r7", P, "NVIDIA H100 80GB HBM3") == Knobs(4, "n")  # timed there


class _Configurable:
    configs = MENU

    def select(self, problem: Problem) -> Knobs:
        return Knobs()


def test_resolve_config_forces_names_and_overrides() -> None:
    k = _Configurable()
    assert resolve_config(k, P, None) == Knobs()
    assert resolve_config(k, P, "raster=n") == Knobs(raster="n")
    assert resolve_config(k, P, Knobs(4, "n").name) == Knobs(4, "n")
    assert resolve_config(k, P, OWN_CHOICE) == k.select(P) == Knobs()
    with pytest.raises(ValueError, match="not on the menu"):
        resolve_config(k, P, "group=16")
    with pytest.raises(ValueError, match="declares no configs"):
        resolve_config(object(), P, "group=4")
    assert resolve_config(object(), P, None) is None


class _Ranked(_Configurable):
    """Ranks the menu backwards; refuses raster n with group 4."""

    def supports(self, problem: Problem, config: Knobs | None = None) -> str | None:
        return "no" if config == Knobs(4, "n") else None

    def ranked(self, problem: Problem) -> list[Knobs]:
        return list(reversed(MENU))


def test_tune_candidates_take_the_top_of_the_ranking_plus_the_kernels_own_choice() -> None:
    k = _Ranked()
    assert tune_candidates(k, P) == [c for c in MENU if c != Knobs(4, "n")]
    # reversed menu without the refused config: (8, n), (8, m), (4, m)
    assert tune_candidates(k, P, top=1) == [Knobs(8, "n"), Knobs()]  # + the selection
    assert tune_candidates(k, P, top=2) == [Knobs(8, "n"), Knobs(8, "m")]
    assert tune_candidates(k, P, top=9) == [Knobs(8, "n"), Knobs(8, "m"), Knobs(4, "m")]
    # without a ranking, menu order
    plain = _Configurable()
    plain.supports = lambda problem, config=None: None  # type: ignore[attr-defined]
    assert tune_candidates(plain, P, top=1) == [MENU[0], Knobs()]


def test_config_requests_are_checked_on_names_alone() -> None:
    names = [c.name for c in MENU]
    assert check_request(names, "raster=n") is None
    assert check_request(names, names[0]) is None
    assert check_request(names, OWN_CHOICE) is None  # the kernel's own choice, whatever it is
    assert "unknown knob(s) colour" in check_request(names, "colour=red")
    assert "no config on the menu has group=16" in check_request(names, "group=16")
    assert "expected k=v" in check_request(names, "fast")


def test_a_request_off_a_long_menu_names_the_nearest_entries_not_the_whole_menu() -> None:
    """Rung-8 menus run to hundreds of names: the error stays one short line."""
    names = [f"tile={t},split={s},raster={r}" for t in range(100) for s in (1, 2) for r in "mn"]
    why = check_request(names, "tile=7,split=3,raster=n")
    assert why is not None and len(why) < 300
    assert "400 entries" in why and "tile=7,split=1,raster=n" in why


# -- tune-table --------------------------------------------------------------------------------
SPEC = KernelSpec("x", "r7", Rung.MULTI_CONSUMER, "sm_90a", "d", module="tmpkernels.r7")


def _rec(config: Knobs, ms: float, selected: bool, problem: Problem = P) -> BenchRecord:
    return BenchRecord(
        **BenchRecord.identity(SPEC),
        problem=problem,
        status=Status.OK,
        config=config.name,
        config_values=config.values(),
        selected=selected,
        timing=Stats(n=100, median_ms=ms, p20_ms=ms, p80_ms=ms, mean_ms=ms, min_ms=ms, cv=0.0),
        pct_of_cublas=100.0,
    )


def _doc(*records: BenchRecord, gpu: str = "NVIDIA H200") -> Document:
    return Document("bench", {"gpu": gpu}, records, "2026-11-23T00:00:00", source="runs/t.json")


def test_tune_table_keeps_the_selected_config_within_the_margin() -> None:
    near = _doc(
        _rec(Knobs(), 1.000, True), _rec(Knobs(4), 0.995, False), _rec(Knobs(4, "n"), 1.1, False)
    )
    (c,) = choose([near], margin=0.01)
    assert c.fastest.config == Knobs(4).name and c.chosen.config == Knobs().name
    far = _doc(_rec(Knobs(), 1.000, True), _rec(Knobs(4), 0.95, False))
    (c,) = choose([far], margin=0.01)
    assert c.chosen.config == Knobs(4).name and c.gain == pytest.approx(1 / 0.95 - 1)
    lonely = _doc(_rec(Knobs(), 1.0, True))
    assert choose([lonely]) == []  # one config timed: nothing to choose between
    assert choose([_doc(_rec(Knobs(), 1.0, True), _rec(Knobs(4), 0.5, False), gpu="")]) == []


def test_tune_table_writes_and_merges_per_gpu(kernel_module: str) -> None:
    other = Problem(8192, 8192, 512)
    first = choose([_doc(_rec(Knobs(), 1.0, True), _rec(Knobs(4), 0.9, False))])
    (path,) = write_tables(first, [SPEC])
    assert path == tuned_table_path(kernel_module, "NVIDIA H200")
    second = choose([_doc(_rec(Knobs(), 1.0, True, other), _rec(Knobs(8, "n"), 0.5, False, other))])
    write_tables(second, [SPEC])
    table = TunedTable.read(path)
    assert table.lookup("x/r7", P) == Knobs(4).name  # kept from the first run
    assert table.lookup("x/r7", other) == Knobs(8, "n").name
    space = ConfigSpace(MENU, lambda p: Knobs(), module=kernel_module)
    assert space.select("x/r7", other, "NVIDIA H200") == Knobs(8, "n")
    skipped: list[str] = []
    assert write_tables(second, [replace(SPEC, name="gone")], log=skipped.append) == []
    assert skipped and "not a kernel of this installation" in skipped[0]
