"""``python -m reports launched``: profiled launches side by side, one row per shape, GPU and
kernel, cuBLAS first, its main kernel's tile read from the name; an empty or unknown
selection is one line."""

from __future__ import annotations

from pathlib import Path

from harness.gemm import Problem
from harness.launched import DeviceKernel
from harness.records import BenchRecord, Status
from harness.results import ResultsWriter, load
from reports.cli import main
from reports.launched import format_launched, launch_rows

CUBLAS = dict(kernel="cublas/torch_matmul", backend="cublas", name="torch_matmul", rung=0)
OURS = dict(kernel="alpha/sm90/r8", backend="alpha", name="sm90/r8", rung=8)


def _rec(
    ident: dict, p: Problem, gpu: str, ran: tuple[DeviceKernel, ...] | None, **kw
) -> BenchRecord:
    return BenchRecord(
        **ident,
        rung_name="x",
        arch="sm_90a",
        status=Status.OK,
        problem=p,
        gpu={"name": gpu},
        launched=ran,
        **kw,
    )


def _doc(path: Path, gpu: str, records: list[BenchRecord]):
    w = ResultsWriter(path, "bench", {"gpu": gpu})
    w.add_many(records)
    return load(path)


def _docs(tmp_path: Path):
    p1, p2 = Problem(309, 5120, 4096), Problem(64, 4096, 4096)
    h200 = "NVIDIA H200"
    h100 = "NVIDIA H100 80GB HBM3"
    gemm = DeviceKernel("r8_gemm_kernel", 1.0, 40.0)
    reduce = DeviceKernel("r8_reduce_kernel", 1.0, 5.0)
    a = _doc(
        tmp_path / "a.json",
        h200,
        [
            _rec(OURS, p1, h200, (gemm, reduce), config="tile_m=128,stream_k=1"),
            _rec(
                CUBLAS,
                p1,
                h200,
                (DeviceKernel("nvjet_sm90_hsh_192x104_64x5_1x2_h_bz_TNT", 1, 38.0),),
            ),
            _rec(CUBLAS, p2, h200, None),  # checked, not profiled: no row
        ],
    )
    b = _doc(
        tmp_path / "b.json",
        h100,
        [
            _rec(
                CUBLAS,
                p1,
                h100,
                (DeviceKernel("nvjet_sm90_hsh_256x152_64x4_2x1_v_bz_TNT", 1, 51.0),),
            )
        ],
    )
    return [a, b]


def test_rows_group_a_shape_by_gpu_with_cublas_first(tmp_path: Path) -> None:
    rows = launch_rows(_docs(tmp_path))
    assert [(r.gpu, r.label.split(" ")[0]) for r in rows] == [
        ("NVIDIA H100 80GB HBM3", "cublas/torch_matmul"),
        ("NVIDIA H200", "cublas/torch_matmul"),
        ("NVIDIA H200", "alpha/sm90/r8"),
    ]
    ours = rows[-1]
    assert ours.us == 45.0 and ours.main.name == "r8_gemm_kernel"
    text = format_launched(rows)
    assert (
        "192x104x64, 5 stages, cluster 1x2" in text and "256x152x64, 4 stages, cluster 2x1" in text
    )
    assert "r8_reduce_kernel 5.0 us" in text
    assert [r.label for r in launch_rows(_docs(tmp_path), ["alpha/sm90/r8"])] == [ours.label]


def test_cli_lists_launches_and_says_when_there_are_none(tmp_path: Path, capsys) -> None:
    _docs(tmp_path)
    assert main(["launched", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "nvjet_sm90_hsh_256x152" in capsys.readouterr().out
    assert main(["launched", str(tmp_path / "a.json"), "--kernel", "beta/sm90/r8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m reports: error: --kernel beta/sm90/r8: no profiled launch")
    assert "alpha/sm90/r8, cublas/torch_matmul" in err and len(err.splitlines()) == 1
    empty = tmp_path / "empty.json"
    _doc(empty, "NVIDIA H200", [_rec(CUBLAS, Problem(64, 64, 64), "NVIDIA H200", None)])
    assert main(["launched", str(empty)]) == 0
    assert "no profiled launch in these results" in capsys.readouterr().out
