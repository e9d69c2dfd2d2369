"""Development check of the Gluon kernels on a GPU: correctness vs cuBLAS, then timing.

Not the harness: a self-contained loop the Gluon engineer runs on the device machine.
Every check uses fresh uniform(-1, 1) inputs and an output poisoned with NaN; the metrics are
max |err| and ||D - ref||_F / ||ref||_F against ``torch.matmul(a, b.T)``. Timing is
``triton.testing.do_bench`` (median) with torch.matmul timed in the same run, on the same
inputs. Writes a JSON lines log (one record per kernel x problem) to ``--out``.

    python scripts/dev_gluon.py --kernels sm90/r7_multi_consumer --check smoke,ragged \
        --bench 4096x4096x4096,8192x8192x8192 --out $OUT/gluon.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.protocol import Problem

SUITES = {
    "smoke": ["256x256x64", "512x512x512", "1024x1024x1024", "2048x2048x2048"],
    "ragged": [
        "1x1x8",
        "129x257x72",
        "1000x1000x1000",
        "777x1535x520",
        "3001x2049x4104",
        "300x5000x8",
    ],
    "square": ["1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192"],
    "ksweep": [f"8192x8192x{k}" for k in (512, 1024, 2048, 4096, 8192, 16384)],
}


def _problems(spec: str, dtypes: list[str]) -> list[Problem]:
    keys: list[str] = []
    for part in filter(None, spec.split(",")):
        keys += SUITES.get(part, [part])
    return [Problem.parse(f"{k}-{d}") for k in keys for d in dtypes]


def _load(name: str):
    from backends.gluon import kernels

    for spec in kernels():
        if spec.name == name:
            return spec.load()
    # Development trials not (yet) listed in kernels(): import the module directly.
    return importlib.import_module(f"backends.gluon.{name.replace('/', '.')}").KERNEL


def check(kernel, problem: Problem, torch) -> dict:
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    reason = kernel.supports(problem)
    if reason:
        return {"status": "unsupported", "reason": reason}
    fn = kernel.compile(problem)
    a = torch.empty(problem.m, problem.k, dtype=dt, device="cuda").uniform_(-1, 1)
    b = torch.empty(problem.n, problem.k, dtype=dt, device="cuda").uniform_(-1, 1)
    out = torch.full((problem.m, problem.n), float("nan"), dtype=dt, device="cuda")
    fn(a, b, out)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float().T)
    err = out.float() - ref
    max_abs = err.abs().max().item()
    rel = (err.norm() / ref.norm().clamp_min(1e-30)).item()
    tol = (2e-2 if problem.dtype == "bf16" else 4e-3) * max(1.0, math.sqrt(problem.k / 1024))
    ok = math.isfinite(max_abs) and math.isfinite(rel) and rel < tol
    return {"status": "ok" if ok else "wrong", "max_abs": max_abs, "rel_fro": rel, "tol": tol}


def bench(kernel, problem: Problem, torch, triton) -> dict:
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    fn = kernel.compile(problem)
    a = torch.empty(problem.m, problem.k, dtype=dt, device="cuda").uniform_(-1, 1)
    b = torch.empty(problem.n, problem.k, dtype=dt, device="cuda").uniform_(-1, 1)
    out = torch.empty(problem.m, problem.n, dtype=dt, device="cuda")
    ms_ref = triton.testing.do_bench(lambda: torch.matmul(a, b.T, out=out), warmup=100, rep=400)
    ms = triton.testing.do_bench(lambda: fn(a, b, out), warmup=100, rep=400)
    ms_ref2 = triton.testing.do_bench(lambda: torch.matmul(a, b.T, out=out), warmup=25, rep=200)
    ms_ref = min(ms_ref, ms_ref2)
    tf = problem.flops / (ms * 1e-3) / 1e12
    tf_ref = problem.flops / (ms_ref * 1e-3) / 1e12
    return {
        "ms": ms,
        "tflops": tf,
        "cublas_ms": ms_ref,
        "cublas_tflops": tf_ref,
        "ratio": ms_ref / ms,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", required=True, help="comma list, e.g. sm90/r7_multi_consumer")
    ap.add_argument("--check", default="smoke,ragged")
    ap.add_argument("--bench", default="")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--bench-dtypes", default="fp16")
    ap.add_argument("--out", default="gluon_dev.jsonl")
    ap.add_argument("--variant-bench", default="", help="shapes for --variants (default: --bench)")
    ap.add_argument(
        "--variants",
        default="",
        help="tuning trials of the rung module's constants, e.g. "
        "'k32:BLOCK_K=32,NUM_STAGES=6;g16:GROUP_M=16' (benched on --bench)",
    )
    args = ap.parse_args()

    import torch
    import triton

    gpu = torch.cuda.get_device_name()
    log = open(args.out, "a")

    def emit(rec: dict) -> None:
        rec["gpu"] = gpu
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)

    for name in args.kernels.split(","):
        try:
            kernel = _load(name)
        except Exception as exc:
            emit({"kernel": name, "phase": "load", "status": "error", "error": repr(exc)})
            continue
        for problem in _problems(args.check, args.dtypes.split(",")):
            t0 = time.perf_counter()
            try:
                rec = check(kernel, problem, torch)
            except Exception as exc:
                rec = {
                    "status": "error",
                    "error": repr(exc)[:500],
                    "tb": traceback.format_exc()[-1500:],
                }
            rec.update(
                kernel=name,
                phase="check",
                problem=problem.key,
                seconds=round(time.perf_counter() - t0, 2),
            )
            emit(rec)
        for problem in _problems(args.bench, args.bench_dtypes.split(",")):
            try:
                rec = bench(kernel, problem, torch, triton)
            except Exception as exc:
                rec = {"status": "error", "error": repr(exc)[:500]}
            rec.update(kernel=name, phase="bench", problem=problem.key)
            emit(rec)
    for name in filter(None, args.variants and args.kernels.split(",")[:1]):
        kernel = _load(name)
        module = sys.modules[kernel._plan.__module__]
        for variant in args.variants.split(";"):
            _label, _, assigns = variant.partition(":")
            saved = {}
            for kv in filter(None, assigns.split(",")):
                key, _, value = kv.partition("=")
                saved[key] = getattr(module, key)
                setattr(module, key, int(value))
            kernel._launchers.clear()
            shapes = args.variant_bench or args.bench
            for problem in [Problem(1000, 1000, 1000), *_problems(shapes, ["fp16"])]:
                try:
                    if problem.m == 1000:
                        rec = check(kernel, problem, torch)
                    else:
                        rec = bench(kernel, problem, torch, triton)
                except Exception as exc:
                    rec = {"status": "error", "error": repr(exc)[:300]}
                rec.update(kernel=name, phase="variant", variant=variant, problem=problem.key)
                emit(rec)
            for key, value in saved.items():
                setattr(module, key, value)
            kernel._launchers.clear()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
