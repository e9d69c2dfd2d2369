"""What one launch ran on the device (``bench --check-only --launched``, harness.launched):
the profiler's activities folded into one launch's kernels, cuBLAS's tile read from its
kernel name, the records carrying them through JSON, and the whole path on a CPU, where the
"kernels" are the launch's top-level torch operators."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_harness
from expectations import require_module
from records import bench_record

from harness.gemm import Problem
from harness.launched import DeviceKernel, aggregate, cublas_tile, summary
from harness.results import record_from_json, record_to_json


def test_activities_fold_into_one_launch_in_the_order_run() -> None:
    # two launches of a split GEMM: a fill, the GEMM, the reduction
    events = [("fill", 1.0), ("gemm", 10.0), ("reduce", 2.0)] * 2
    events[4] = ("gemm", 12.0)
    got = aggregate(events, launches=2)
    assert [k.name for k in got] == ["fill", "gemm", "reduce"]
    assert got[1] == DeviceKernel("gemm", 1.0, 11.0)
    # a kernel run twice per launch counts twice, its time is per run
    twice = aggregate([("gemm", 4.0), ("gemm", 6.0)], launches=1)
    assert twice == (DeviceKernel("gemm", 2.0, 5.0),)
    with pytest.raises(ValueError, match="launches must be >= 1"):
        aggregate(events, launches=0)


@pytest.mark.parametrize(
    ("name", "tile"),
    [
        ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "256x128x64, 4 stages, cluster 1x2"),
        # cuBLAS 13's names on the H100 (410x6144x4096, 962x10240x8192; CuTeDSL README)
        ("nvjet_sm90_hsh_192x104_64x5_1x2_h_bz_TNT", "192x104x64, 5 stages, cluster 1x2"),
        ("nvjet_sm90_hsh_320x128_64x3_1x2_h_bz_coopB_TNT", "320x128x64, 3 stages, cluster 1x2"),
        ("nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", "192x192x64, 3 stages, cluster 2x1"),
        (
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_cluster2x1x1_"
            "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
            "128x256x64, cluster 2x1",
        ),
        (
            "void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_"
            "128x256x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma>(...)",
            "128x256x64, cluster 2x1",
        ),
        (
            "void cutlass::Kernel2<cutlass_80_tensorop_h16816gemm_256x128_32x3_tn_align8>(...)",
            "256x128x32, 3 stages",
        ),
        ("void splitKreduce_kernel<32, 16, int, float, __half>(...)", None),
        ("r8_shape_adaptive_kernel", None),
        ("Memset (Device)", None),
    ],
)
def test_cublas_tile_is_read_from_the_kernel_name(name: str, tile: str | None) -> None:
    assert cublas_tile(name) == tile


def test_summary_names_each_kernel_its_time_and_cublas_tile() -> None:
    lines = summary(
        [
            DeviceKernel("nvjet_hsh_128x256_64x4_2x1_v_bz_NTN", 1.0, 812.4),
            DeviceKernel("x" * 200, 2.0, 3.0),
        ],
        width=40,
    )
    assert lines[0].split() == [
        "812.4",
        "us",
        "nvjet_hsh_128x256_64x4_2x1_v_bz_NTN",
        "[128x256x64,",
        "4",
        "stages,",
        "cluster",
        "2x1]",
    ]
    assert " x2 " in lines[1] and lines[1].rstrip().endswith("x" * 37 + "...")


def test_records_carry_what_ran_through_json() -> None:
    base = bench_record("cublas", 0, Problem(309, 5120, 4096), None)
    plain = record_to_json(base)
    assert "launched" not in plain and record_from_json(plain, "bench") == base
    ran = replace(base, launched=(DeviceKernel("nvjet_hsh_64x8_64x8_1x1_v", 1.0, 9.5),))
    back = record_from_json(json.loads(json.dumps(record_to_json(ran))), "bench")
    assert back == ran and back.launched is not None and back.launched[0].us == 9.5


@pytest.mark.slow
def test_bench_check_only_launched_records_each_launch_on_a_cpu(plugin_env, tmp_path: Path) -> None:
    require_module("torch", "the toy plugin's kernels run in torch")
    out = tmp_path / "run.json"
    r = run_harness(
        plugin_env,
        *("bench", "--device", "cpu", "--kernel", "toy/tuned", "--no-reference"),
        *("--suite", "64x64x64", "--config", "split=2", "--check-only", "--launched"),
        *("--out", str(out)),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = json.loads(out.read_text())["records"]
    assert rec["status"] == "ok" and rec["config"] == "split=2"
    ran = {k["name"]: k for k in rec["launched"]}
    # split=2 sums two partial products: two matmuls a launch, one copy into D
    assert ran["aten::matmul"]["calls"] == 2 and ran["aten::copy_"]["calls"] == 1
    assert all(k["us"] > 0 for k in rec["launched"])
    assert "aten::matmul" in r.stdout  # listed under the record's line
    doc = json.loads(out.read_text())
    assert doc["environment"]["run"]["launched"] is True
