#!/usr/bin/env bash
# CuTeDSL on the offline GPU host, in two transfers of the bundle (shared/device/README.md):
#   bash scripts/device_cutedsl.sh stash            # carry .carry/cutedsl/{00,unpack,SHA256}
#   bash scripts/device_cutedsl.sh run [dev args]   # carry .carry/cutedsl/{01,unpack,SHA256}
# `run` installs the bundle, then runs scripts/dev_cutedsl.py with the given arguments,
# logging to $OUT. NVIDIA's example, when carried in .carry/nvex/, is timed beside ours.
set -uo pipefail
mode=${1:?stash|run}; shift
if [ "$mode" = stash ]; then
  bash .carry/cutedsl/unpack stash cutedsl; exit
fi
ls /tmp/relay/cutedsl >/dev/null 2>&1 || { echo "fresh host: part 00 is gone, stash again"; exit 3; }
bash .carry/cutedsl/unpack install cutedsl >/dev/null || exit 4
export PYTHONPATH=/tmp/site-cutedsl:/tmp/site-cutedsl/nvidia_cutlass_dsl/dsl_packages:$PWD
export PYTHONUNBUFFERED=1 CUTE_DSL_ARCH=sm_90a
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv | tee "$OUT/gpu.txt"
nv=(); [ -f .carry/nvex/dense_gemm_persistent.py ] && nv=(--nvidia .carry/nvex/dense_gemm_persistent.py)
# Correctness first, one process per kernel under a timeout: a deadlocked kernel is killed and
# recorded, the others still run. Only kernels whose checks all passed are timed.
passed=()
for k in ${KERNELS:-r7 r6 r5 r4 r3 r2 r1}; do
  timeout -s KILL "${CHECK_TIMEOUT:-45}" python3 scripts/dev_cutedsl.py --kernels "$k" --check \
    > "$OUT/check_one.log" 2>&1
  rc=$?
  cat "$OUT/check_one.log" >> "$OUT/checks.log"
  echo "== $k rc=$rc $(grep -c '^CHECK ok' "$OUT/check_one.log") ok, $(grep -c '^CHECK BAD' "$OUT/check_one.log") bad"
  grep '^CHECK BAD' "$OUT/check_one.log" | head -5
  [ $rc -eq 0 ] && passed+=("$k")
  [ $rc -eq 137 ] && tail -3 "$OUT/check_one.log"
done
rm -f "$OUT/check_one.log"
[ ${#passed[@]} -gt 0 ] || exit 1
sel=$(IFS=,; echo "${passed[*]}")
timeout -s KILL "${BENCH_TIMEOUT:-150}" python3 scripts/dev_cutedsl.py --kernels "$sel" "${nv[@]}" \
  --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log" | grep -E '^BENCH|^#|Error|error'
