"""Development check of the CuTeDSL kernels on a GPU: correctness vs torch, then timing.

Not the benchmark (that is ``python -m harness bench``): one script that makes each device
call count. For every selected kernel and dtype it checks several shapes on fresh random
inputs (uniform in [-1, 1]) with the output poisoned with NaN, against ``torch.matmul(a, b.T)``
(max |err| and relative Frobenius error), then times square / K-sweep problems with
``triton.testing.do_bench`` (median) beside ``torch.matmul`` in the same process, rotating
input sets so the operands do not sit in L2. Optionally times NVIDIA's Hopper example
(``--nvidia PATH`` to ``dense_gemm_persistent.py``) on the same problems.

    python scripts/dev_cutedsl.py --kernels r7 --check --bench 4096,8192 --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.cutedsl import kernels  # noqa: E402
from harness.protocol import Problem  # noqa: E402

CHECK_SHAPES = [
    (128, 256, 64),  # one tile
    (256, 512, 1024),
    (1000, 1003, 520),  # ragged, N % 8 != 0
    (4096, 4096, 4096),
    (257, 4096, 4104),  # ragged M, K not a multiple of 64
    (1, 8, 8),
    (3000, 2056, 64),
    (8192, 1024, 8192),
]


def torch_dtype(name: str):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def check(fn, p: Problem) -> dict:
    import torch

    dt = torch_dtype(p.dtype)
    a = torch.rand(p.m, p.k, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    b = torch.rand(p.n, p.k, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dt)
    out = torch.full((p.m, p.n), float("nan"), device="cuda", dtype=dt)
    fn(a, b, out)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float().T)
    err = (out.float() - ref).abs()
    max_err = float(err.max())
    rel = float(torch.linalg.norm(out.float() - ref) / torch.linalg.norm(ref))
    nan = bool(torch.isnan(out).any())
    tol = 1e-2 if p.dtype == "bf16" else 2e-3
    ok = (not nan) and rel < tol and math.isfinite(max_err)
    return {"ok": ok, "max_abs": max_err, "rel_fro": rel, "nan": nan}


def bench(fn, p: Problem, sets: int, timer: str = "harness") -> float:
    """Median ms of fn over rotating input sets (>= 2x L2 in total).

    ``timer="harness"`` measures the way ``python -m harness bench`` does (>= 1 s back-to-back
    warm-up, then >= 100 per-launch event samples over >= 0.5 s: sustained, power-limited
    clocks); ``"do_bench"`` uses ``triton.testing.do_bench`` (median).
    """
    import torch

    dt = torch_dtype(p.dtype)
    bufs = []
    for _ in range(sets):
        a = torch.rand(p.m, p.k, device="cuda").mul_(2).sub_(1).to(dt)
        b = torch.rand(p.n, p.k, device="cuda").mul_(2).sub_(1).to(dt)
        bufs.append((a, b, torch.empty(p.m, p.n, device="cuda", dtype=dt)))
    if timer == "harness":
        from harness.timing import time_launches, warm_up

        warm_up(fn, bufs, 1.0, "cuda")
        return statistics.median(time_launches(fn, bufs, 100, 0.5, 20000, "cuda"))

    import triton.testing

    i = [0]

    def step():
        a, b, o = bufs[i[0] % sets]
        i[0] += 1
        fn(a, b, o)

    return float(triton.testing.do_bench(step, warmup=150, rep=400, return_mode="median"))


def n_sets(p: Problem) -> int:
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(2, min(8, math.ceil(2 * l2 / p.bytes_per_set())))


def torch_fn(a, b, out):
    import torch

    torch.matmul(a, b.T, out=out)


def nvidia_fn(path: str, p: Problem):
    """NVIDIA's Hopper persistent example, cluster (2,1), 128x256, as a launch function."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    spec = importlib.util.spec_from_file_location("nv_dense_gemm_persistent", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gemm = mod.HopperWgmmaGemmPersistentKernel(cutlass.Float32, (128, 256), (2, 1), 1, True)
    dt = torch_dtype(p.dtype)

    def conv(t):
        return from_dlpack(t.unsqueeze(-1), assumed_align=16).mark_layout_dynamic(leading_dim=1)

    a = torch.zeros(p.m, p.k, device="cuda", dtype=dt)
    b = torch.zeros(p.n, p.k, device="cuda", dtype=dt)
    c = torch.zeros(p.m, p.n, device="cuda", dtype=dt)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    clusters = cutlass.utils.HardwareInfo().get_max_active_clusters(2)
    compiled = cute.compile(gemm, conv(a), conv(b), conv(c), clusters, stream)
    cache = {}

    def fn(a, b, out):
        key = (a.data_ptr(), b.data_ptr(), out.data_ptr())
        if key not in cache:
            cache[key] = (conv(a), conv(b), conv(out))
        compiled(*cache[key], cuda.CUstream(torch.cuda.current_stream().cuda_stream))

    return fn


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="", help="comma-separated substrings of kernel names")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bench", default="", help="square sizes, e.g. 4096,8192")
    ap.add_argument("--ksweep", default="", help="K values at M=N=8192")
    ap.add_argument("--bench-dtypes", default="fp16")
    ap.add_argument("--nvidia", default="", help="path to NVIDIA's dense_gemm_persistent.py")
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--r7-variants",
        default="",
        help="rung-7 knob sets, comma-separated, each key=value joined by '+': "
        "l2=<group>, raster=m|n, overlap=0|1; e.g. overlap=0,l2=16",
    )
    ap.add_argument("--timer", choices=("harness", "do_bench"), default="harness")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ksweep-fns", default="", help="substrings of functions timed in ksweep")
    args = ap.parse_args()

    import torch

    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size >> 20} MiB")
    want = [w for w in args.kernels.split(",") if w]
    specs = [
        s for s in kernels() if s.arch == "sm_90a" and (not want or any(w in s.name for w in want))
    ]
    results: dict = {"device": props.name, "checks": [], "bench": []}
    loaded = {}
    for s in specs:
        try:
            t0 = time.perf_counter()
            loaded[s.id] = s.load()
            print(f"# loaded {s.id} in {time.perf_counter() - t0:.2f}s")
        except Exception:
            traceback.print_exc()

    if args.r7_variants:
        import dataclasses

        from backends.cutedsl.sm90 import r7_multi_consumer as r7

        # option key -> (Gemm keyword, value parser)
        knob = {
            "l2": ("l2_group", int),
            "raster": ("raster_m", lambda v: v == "m"),
            "overlap": ("overlap", lambda v: v == "1"),
        }
        for v in args.r7_variants.split(","):
            knobs = {}
            for kv in v.split("+"):
                key, val = kv.split("=")
                name, parse = knob[key]
                knobs[name] = parse(val)
            name = f"r7[{v}]"
            loaded[name] = dataclasses.replace(
                r7.KERNEL,
                name=name,
                make_gemm=lambda ns, ts, kn=knobs: r7.Gemm(ns, ts, **kn),
                _cache={},
            )

    if args.check:
        for sid, k in loaded.items():
            for dtype in args.dtypes.split(","):
                for m, n, kk in CHECK_SHAPES:
                    p = Problem(m, n, kk, dtype)
                    if k.supports(p) is not None:
                        continue
                    try:
                        t0 = time.perf_counter()
                        fn = k.compile(p)
                        ct = time.perf_counter() - t0
                        r = check(fn, p)
                        r2 = check(fn, p)  # fresh inputs again: a moving error is a race
                        r["ok"] = r["ok"] and r2["ok"]
                        r["rel_fro_2"] = r2["rel_fro"]
                    except Exception as e:
                        traceback.print_exc()
                        r, ct = {"ok": False, "error": repr(e)[:300]}, 0.0
                    r.update(kernel=sid, problem=p.key, compile_s=round(ct, 3))
                    results["checks"].append(r)
                    print(
                        f"CHECK {'ok ' if r['ok'] else 'BAD'} {sid:34s} {p.key:22s} "
                        f"rel={r.get('rel_fro', float('nan')):.2e} "
                        f"max={r.get('max_abs', float('nan')):.2e} ct={ct:.2f}s",
                        flush=True,
                    )

    problems = [
        Problem(s, s, s, d)
        for s in map(int, filter(None, args.bench.split(",")))
        for d in args.bench_dtypes.split(",")
    ]
    problems += [
        Problem(8192, 8192, int(kk), "fp16") for kk in filter(None, args.ksweep.split(","))
    ]
    for p in problems:
        sets = n_sets(p)
        row = {"problem": p.key, "times_ms": {}}
        fns = {"torch": torch_fn}
        if args.nvidia and not (p.k != p.m and args.ksweep_fns):
            try:
                fns["nvidia_example"] = nvidia_fn(args.nvidia, p)
            except Exception:
                traceback.print_exc()
        for sid, k in loaded.items():
            if (
                p.k != p.m
                and args.ksweep_fns
                and not any(w in sid for w in args.ksweep_fns.split(","))
            ):
                continue
            try:
                fns[sid] = k.compile(p)
            except Exception:
                traceback.print_exc()
        for _round in range(args.rounds):  # interleaved rounds: the spread says what is noise
            for name, fn in fns.items():
                try:
                    ms = bench(fn, p, sets, args.timer)
                except Exception:
                    traceback.print_exc()
                    continue
                row["times_ms"].setdefault(name, []).append(ms)
                try:  # SM clock right after the measurement (NVML): these GPUs run power-limited
                    row.setdefault("clock_mhz", {}).setdefault(name, []).append(
                        torch.cuda.clock_rate()
                    )
                except Exception:
                    pass
        base = statistics.median(row["times_ms"]["torch"])
        for name, ts in row["times_ms"].items():
            ms = statistics.median(ts)
            print(
                f"BENCH {p.key:22s} {name:38s} {ms * 1e3:9.1f} us  "
                f"{p.flops / ms / 1e9:7.1f} TFLOPS  x{base / ms:5.3f} vs torch  "
                f"rounds={[round(t * 1e3, 1) for t in ts]} "
                f"MHz={row.get('clock_mhz', {}).get(name)}",
                flush=True,
            )
        results["bench"].append(row)

    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    bad = [c for c in results["checks"] if not c["ok"]]
    print(f"# checks: {len(results['checks']) - len(bad)} ok, {len(bad)} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
