"""How long a rested, power-capped GPU takes to settle: idle, then cuBLAS back to back.

For each problem: the GPU idles ``--rest`` seconds (as it does while a problem's kernels compile
and are checked), then ``torch.matmul`` runs back to back for ``--run`` seconds, two sets of
normal-distributed fp16 inputs alternating. Every launch is timed with CUDA events and
NVML samples the SM clock and power every 10 ms. The table prints, per window after the rest,
the median launch time, the mean clock and the mean power; the JSON keeps every sample. This is
the measurement behind the timer's ``settle_s`` and ``rewarm_s`` (docs/design.md, "Timing").

    python scripts/clock_settle.py --out settle.json 8192x8192x8192 4425x8192x28672
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import torch

from harness.protocol import Problem
from harness.telemetry import _nvml_handle, power_reader

#: Starts (s after the rest) of the printed windows, each ``WINDOW_S`` long.
WINDOWS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
WINDOW_S = 0.25


def settle_curve(problem: Problem, rest_s: float, run_s: float) -> dict[str, list]:
    """Per-launch (end s, ms) and NVML (s, MHz, W) samples of ``run_s`` of back-to-back
    launches after ``rest_s`` of idle."""
    import pynvml

    handle = _nvml_handle(0)
    reader = power_reader(handle)
    if reader is None:
        raise SystemExit("NVML gives no power reading on this GPU")
    power_w = reader[0]
    m, n, k = problem.m, problem.n, problem.k
    sets = [
        (
            torch.randn(m, k, device="cuda", dtype=torch.half),
            torch.randn(k, n, device="cuda", dtype=torch.half),
        )
        for _ in range(2)
    ]
    for a, b in sets:
        torch.matmul(a, b)
    torch.cuda.synchronize()
    time.sleep(rest_s)
    tel: list[tuple[float, float, float]] = []
    stop = threading.Event()
    t0 = time.perf_counter()

    def sample() -> None:
        while not stop.is_set():
            clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            tel.append((time.perf_counter() - t0, clock, power_w()))
            stop.wait(0.01)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    launches: list[tuple[float, float]] = []
    try:
        while time.perf_counter() - t0 < run_s:
            events = [torch.cuda.Event(enable_timing=True) for _ in range(21)]
            events[0].record()
            for i in range(20):
                a, b = sets[i % 2]
                torch.matmul(a, b)
                events[i + 1].record()
            events[-1].synchronize()
            end = time.perf_counter() - t0
            launches += [(end, events[i].elapsed_time(events[i + 1])) for i in range(20)]
    finally:
        stop.set()
        thread.join()
    return {"launches": launches, "telemetry": tel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+", help="MxNxK shapes (fp16)")
    ap.add_argument("--rest", type=float, default=4.0, help="idle seconds before each run")
    ap.add_argument("--run", type=float, default=6.0, help="seconds of back-to-back launches")
    ap.add_argument("--out", help="write every sample here (JSON)")
    args = ap.parse_args()
    out = {}
    for key in args.problems:
        problem = Problem.parse(key)
        curve = settle_curve(problem, args.rest, args.run)
        out[problem.key] = curve
        print(problem.key)
        for lo in WINDOWS:
            hi = lo + WINDOW_S
            ms = [x[1] for x in curve["launches"] if lo <= x[0] < hi]
            tel = [x for x in curve["telemetry"] if lo <= x[0] < hi]
            if ms and tel:
                mhz = statistics.fmean(x[1] for x in tel)
                watts = statistics.fmean(x[2] for x in tel)
                print(
                    f"  {lo:4.2f}-{hi:4.2f} s  {statistics.median(ms):8.4f} ms"
                    f"  {mhz:5.0f} MHz  {watts:4.0f} W"
                )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
