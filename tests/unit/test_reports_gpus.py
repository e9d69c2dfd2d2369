"""``python -m reports gpus``: the same configs on two GPUs, beside cuBLAS over the same shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from records import bench_record

from harness.check import CheckResult
from harness.gemm import Problem
from harness.records import BenchRecord, Status
from harness.results import Document, document_to_json
from harness.telemetry import Telemetry
from reports.cli import main
from reports.gpus import format_gpus, gpu_pairs

WIDE = {"tile_m": 128, "tile_n": 256, "cluster": 2, "swap_ab": False}
NARROW = {"tile_m": 64, "tile_n": 128, "cluster": 1, "swap_ab": False}
P_MID, P_BIG = Problem(600, 8192, 8192), Problem(8192, 8192, 8192)


def _rec(backend: str, p: Problem, per_ghz: float, mhz: float, **kw: object) -> BenchRecord:
    values = kw.pop("values", None)
    if values is not None:
        kw["config"] = ",".join(f"{k}={v}" for k, v in values.items())  # type: ignore[union-attr]
    return bench_record(
        backend,
        0 if backend == "cublas" else 8,
        p,
        0.5,
        tflops_per_ghz=per_ghz,
        telemetry=Telemetry(samples=3, sm_clock_mhz_mean=mhz, power_w_mean=690.0),
        config_values=values,
        **kw,
    )


def _doc(gpu: str, *records: BenchRecord) -> Document:
    return Document("bench", {"gpu": gpu}, records, "2026-12-05T00:00:00", source=f"{gpu}.json")


def _docs() -> list[Document]:
    bad = CheckResult(False, 1.0, 1.0, 0, 1e-2, 1e-2, 2)
    h200 = _doc(
        "NVIDIA H200",
        _rec("cublas", P_MID, 400.0, 1500.0),
        _rec("cublas", P_BIG, 450.0, 1450.0),
        _rec("gluon", P_MID, 400.0, 1500.0, values=NARROW),
        _rec("gluon", P_BIG, 460.0, 1450.0, values=WIDE),
        _rec("gluon", P_MID, 380.0, 1500.0, values=WIDE),  # never timed on the H100: no pair
    )
    h100 = _doc(
        "NVIDIA H100 80GB HBM3",
        _rec("cublas", P_MID, 460.0, 1400.0),
        _rec("cublas", P_BIG, 495.0, 1350.0),
        _rec("gluon", P_MID, 360.0, 1530.0, values=NARROW),
        _rec("gluon", P_MID, 999.0, 1530.0, values=NARROW, check=bad),  # failed: never counted
        _rec("gluon", P_BIG, 506.0, 1350.0, values=WIDE),
        _rec("gluon", P_BIG, 999.0, 1350.0, values=WIDE, status=Status.WRONG),
    )
    return [h200, h100]


def test_pairs_are_one_config_at_one_shape_on_both_gpus() -> None:
    """Each (kernel, config, shape) timed correct on both GPUs is one pair carrying cuBLAS's
    TFLOPS/GHz at that shape on both; a config timed on one GPU only, or a failed record,
    gives none. The GPUs are named by a part of their names; a record's own GPU name wins
    over its run's (a run over several GPUs)."""
    a, b, found = gpu_pairs(_docs(), "H200", "H100")
    assert (a, b) == ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    r = lambda xs: tuple(round(x, 6) for x in xs) if xs else xs  # noqa: E731
    got = {(p.m, p.label): (r(p.per_ghz), r(p.clock_mhz), r(p.cublas_per_ghz)) for p in found}
    assert got == {
        (600, "64x128"): ((400.0, 360.0), (1500.0, 1530.0), (400.0, 460.0)),
        (8192, "128x256 c2"): ((460.0, 506.0), (1450.0, 1350.0), (450.0, 495.0)),
    }
    moved = _docs()
    moved[1] = _doc(
        "NVIDIA H200",
        *(
            BenchRecord(**{**r.__dict__, "gpu": {"name": "NVIDIA H100 80GB HBM3"}})
            for r in moved[1].records
        ),
    )
    assert len(gpu_pairs(moved, "H200", "H100")[2]) == 2


def test_the_table_gives_each_band_against_cublas() -> None:
    """Per kernel and M band: the kernel's TFLOPS/GHz on B over A, its clock, cuBLAS's over
    the same shapes and the kernel's over cuBLAS's: 0.9 / 1.15 at M 600 (a kernel that fell
    behind cuBLAS on the H100 by that much), 1.1 / 1.1 at 8192."""
    text = format_gpus(*gpu_pairs(_docs(), "H200", "H100"))
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line[:2] == "  "}
    assert rows["257-1024"] == ["1", "0.900", "1.020", "1.150", f"{0.9 / 1.15:.3f}"]
    assert rows[">"] == ["4096", "1", "1.100", "0.931", "1.100", "1.000"]
    assert rows["all"][:2] == ["2", f"{(0.9 * 1.1) ** 0.5:.3f}"]
    by_config = format_gpus(*gpu_pairs(_docs(), "H200", "H100"), by="config")
    assert "  64x128 " in by_config and "  128x256 c2 " in by_config
    with pytest.raises(ValueError, match="by='tile'"):
        format_gpus(*gpu_pairs(_docs()), by="tile")


def test_gpus_must_be_two_that_the_results_ran_on() -> None:
    with pytest.raises(ValueError, match="1 GPU"):
        gpu_pairs(_docs()[:1])
    with pytest.raises(ValueError, match="'B200': no GPU of the results match"):
        gpu_pairs(_docs(), "H200", "B200")
    with pytest.raises(ValueError, match="both name"):
        gpu_pairs(_docs(), "H200", "NVIDIA H200")
    a, b, _ = gpu_pairs(_docs())  # default: A the first document's GPU
    assert (a, b) == ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    assert gpu_pairs(_docs()[::-1])[:2] == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")


def test_reports_gpus_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for doc in _docs():
        (tmp_path / f"{doc.environment['gpu'].split()[1]}.json").write_text(
            json.dumps(document_to_json(doc))
        )
    assert main(["gpus", str(tmp_path), "--gpus", "H200", "H100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A = NVIDIA H200, B = NVIDIA H100 80GB HBM3")
    assert "gluon/sm90/r8_shape_adaptive" in out
    # without --gpus, A is the first path's GPU; --out writes the tables with their command
    (tmp_path / "h100").mkdir()
    (tmp_path / "H100.json").rename(tmp_path / "h100" / "H100.json")
    page = tmp_path / "latest" / "gpus.md"
    assert main(["gpus", str(tmp_path / "h100"), str(tmp_path), "--out", str(page)]) == 0
    assert capsys.readouterr().out.startswith("A = NVIDIA H100 80GB HBM3, B = NVIDIA H200")
    text = page.read_text()
    assert f"`python -m reports gpus {tmp_path / 'h100'} {tmp_path}`" in text
    assert "A = NVIDIA H100 80GB HBM3, B = NVIDIA H200" in text and "--out" not in text
    assert main(["gpus", str(tmp_path), str(tmp_path / "h100")]) == 0
    assert capsys.readouterr().out.startswith("A = NVIDIA H200, B = NVIDIA H100 80GB HBM3")
    (tmp_path / "h100" / "H100.json").rename(tmp_path / "H100.json")
    assert main(["gpus", str(tmp_path), "--gpus", "H200", "H100", "--m", "1000-"]) == 0
    out = capsys.readouterr().out
    assert "  > 4096 " in out and "257-1024" not in out
    with pytest.raises(SystemExit):
        main(["gpus", str(tmp_path), "--m", "600-300"])
    assert "'600-300': LO-HI or LO-" in capsys.readouterr().err
    assert main(["gpus", str(tmp_path), "--gpus", "H200", "B200"]) == 2
    assert "no GPU of the results match" in capsys.readouterr().err
    assert main(["gpus", str(tmp_path), "--kernel", "cutedsl/sm90/r8_shape_adaptive"]) == 2
    assert "no pair of it" in capsys.readouterr().err


def test_config_rows_leave_out_the_knobs_every_row_shares() -> None:
    """A backend's own knob at one value in every row (``persistent=True``) tells the rows
    nothing apart and is left out of the labels; one that differs between rows stays."""
    own = {"persistent": True}
    docs = [
        _doc(
            gpu,
            _rec("cublas", P_MID, 400.0, 1500.0),
            _rec("cutedsl", P_MID, 380.0, 1500.0, values={**NARROW, **own, "epilogue": "serial"}),
            _rec("cutedsl", P_MID, 390.0, 1500.0, values={**WIDE, **own, "epilogue": "overlap"}),
        )
        for gpu in ("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    ]
    text = format_gpus(*gpu_pairs(docs, "H200", "H100"), by="config")
    assert "persistent" not in text
    assert "64x128 epilogue=serial" in text and "128x256 c2 epilogue=overlap" in text
