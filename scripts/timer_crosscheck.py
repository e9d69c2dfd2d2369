"""Cross-check the harness timer against ``triton.testing.do_bench`` on torch.matmul(A, B.T).

Both time the same launch on the same GPU in one process. The harness rotates input sets over
>= 2x L2 and brackets each launch with events; do_bench reuses one input set and flushes L2 by
writing a 256 MB buffer before every launch (outside its events). Agreement within a few percent
says the harness measures what everyone else measures.

    python scripts/timer_crosscheck.py --out crosscheck.json 4096x4096x4096 8192x8192x8192
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
import triton.testing

from harness.check import random_operands
from harness.protocol import Problem
from harness.timing import TimerSettings, rotation_sets, summarize, time_launches, warm_up


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out")
    args = ap.parse_args()
    ts = TimerSettings()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for key in args.problems:
        p = Problem.parse(key)

        def launch(a, b, d):
            torch.matmul(a, b.T, out=d)

        sets = []
        for _ in range(rotation_sets(p, l2, ts)):
            a, b = random_operands(p, "cuda")
            sets.append((a, b, torch.empty(p.m, p.n, device="cuda", dtype=a.dtype)))
        warm_up(launch, sets, ts.warmup_s, "cuda")
        ours = summarize(
            time_launches(
                launch,
                sets,
                ts.min_samples,
                ts.min_time_s,
                ts.max_samples,
                hold_floor_ms=ts.hold_floor_ms,
            ).samples
        )
        a, b, d = sets[0]
        theirs = triton.testing.do_bench(
            lambda a=a, b=b, d=d: launch(a, b, d), warmup=250, rep=500, return_mode="median"
        )
        theirs_all = triton.testing.do_bench(
            lambda a=a, b=b, d=d: launch(a, b, d), warmup=25, rep=500, return_mode="all"
        )
        row = {
            "problem": p.key,
            "harness_median_ms": ours.median_ms,
            "harness_cv": ours.cv,
            "do_bench_median_ms": theirs,
            "do_bench_cv": statistics.stdev(theirs_all) / statistics.fmean(theirs_all),
            "ratio_harness_over_do_bench": ours.median_ms / theirs,
            "harness_tflops": p.flops / ours.median_ms / 1e9,
            "do_bench_tflops": p.flops / theirs / 1e9,
        }
        rows.append(row)
        print(
            f"{p.key:<22} harness {ours.median_ms:8.4f} ms  do_bench {theirs:8.4f} ms  "
            f"ratio {row['ratio_harness_over_do_bench']:.3f}",
            flush=True,
        )
        del sets, a, b, d
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
