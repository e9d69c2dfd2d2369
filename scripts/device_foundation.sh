#!/usr/bin/env bash
# On the offline GPU host: the cuBLAS baseline through the README's own commands (nox from a
# bundle, --no-venv against the host's torch), the timer cross-check, and the GPU tests.
#   bash scripts/device_foundation.sh        (with .carry/nox carried; writes under $OUT)
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
bash .carry/nox/unpack install nox >/dev/null || exit 1
export PYTHONPATH=/tmp/site-nox${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -m harness list 2>&1 | tee "$OUT/list.txt"
python3 -m nox --no-venv -s "bench(cublas)" -- --suite smoke --suite square --suite ksweep \
    --dtype fp16 --dtype bf16 --out "$OUT/bench-cublas.json" 2>&1 | tee "$OUT/bench.log"
PYTHONPATH=$PWD:$PYTHONPATH python3 scripts/timer_crosscheck.py --out "$OUT/crosscheck.json" 1024x1024x1024 \
    4096x4096x4096 8192x8192x8192 16384x16384x16384 8192x8192x512 2>&1 | tee "$OUT/crosscheck.log"
python3 -m nox --no-venv -s "tests(harness)" -- -m "not slow" \
    -k "not test_kernel_is_correct or cublas" 2>&1 | tail -25 | tee "$OUT/tests.log"
