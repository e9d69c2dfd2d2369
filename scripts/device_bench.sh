#!/usr/bin/env bash
# The study's benchmark on the offline GPU host, in transfers that each fit one call:
#   bash scripts/device_bench.sh stash     carry .carry/cutedsl/{00,unpack,SHA256}: parked in /tmp
#   bash scripts/device_bench.sh gluon     carry .carry/gluon1 (one part): installed
#   bash scripts/device_bench.sh chain     carry .carry/cutedsl/{01,unpack,SHA256}: installed; then
#                                          every Hopper rung at 4096^3 and 8192^3 fp16 (timed),
#                                          every rung on smoke + ragged, fp16 + bf16 (checked)
#   bash scripts/device_bench.sh final     rung 7 on smoke, square, ksweep, fp16 + bf16 (timed),
#                                          and the harness-vs-do_bench timer cross-check
# A session that revisits one backend after the others were measured:
#   bash scripts/device_bench.sh cutedsl   carry .carry/cutedsl/{01,unpack,SHA256} (after stash),
#                                          .carry/nox and .carry/nvex: rung 7 vs NVIDIA's example
#                                          and rung 7 without epilogue overlap (harness timer),
#                                          then the CuTeDSL GPU tests through nox
#   bash scripts/device_bench.sh final2    carry .carry/gluon1 (nox still installed): rung 7 of
#                                          both DSLs through `nox -s bench`, then Gluon's GPU tests
#   bash scripts/device_bench.sh chain2    after `stash` and `gluon`, carry .carry/cutedsl/{01,unpack,
#                                          SHA256} and .carry/nox: every Hopper rung of both DSLs at
#                                          4096^3 and 8192^3 fp16 through `nox -s bench`, one run
# Results and logs go under $OUT. Every step is `python -m harness ...`, as a user would run it.
# Pass GEMM_STUDY_GIT_SHA=$(git rev-parse --short HEAD) so the results name the code (the
# tree shipped to the host has no .git).
set -uo pipefail
mode=${1:?stash|gluon|chain|final|cutedsl|final2|chain2}
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_BACKENDS_IN_TREE=1 CUTE_DSL_ARCH=sm_90a
export PYTHONPATH=/tmp/site-nox:/tmp/site-gluon1:/tmp/site-cutedsl:/tmp/site-cutedsl/nvidia_cutlass_dsl/dsl_packages:$PWD
common=(--backend cutedsl --backend gluon --arch sm_90a --timeout 120)
case $mode in
  stash) bash .carry/cutedsl/unpack stash cutedsl ;;
  gluon) bash .carry/gluon1/unpack install gluon1 >/dev/null || exit 1 ;;
  chain)
    bash .carry/cutedsl/unpack install cutedsl >/dev/null || exit 1
    python3 -m harness list | tee "$OUT/list.txt"
    python3 -m harness bench "${common[@]}" --suite 4096x4096x4096 --suite 8192x8192x8192 \
      --dtype fp16 --out "$OUT/bench-chain.json" 2>&1 | tee "$OUT/chain.log"
    python3 -m harness bench "${common[@]}" --suite smoke --suite ragged --dtype fp16 \
      --dtype bf16 --check-only --out "$OUT/check-all-rungs.json" 2>&1 | tee "$OUT/check.log" ;;
  final)
    python3 -m harness bench "${common[@]}" --rung 7 --suite smoke --suite square --suite ksweep \
      --dtype fp16 --dtype bf16 --out "$OUT/bench-final.json" 2>&1 | tee "$OUT/final.log"
    python3 scripts/timer_crosscheck.py --out "$OUT/crosscheck.json" 1024x1024x1024 \
      4096x4096x4096 8192x8192x8192 8192x8192x512 2>&1 | tee "$OUT/crosscheck.log" ;;
  cutedsl)
    bash .carry/cutedsl/unpack install cutedsl >/dev/null || exit 1
    bash .carry/nox/unpack install nox >/dev/null || exit 1
    nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    timeout -s KILL 300 python3 scripts/dev_cutedsl.py --kernels r7 --check --bench 4096,8192 \
      --ksweep 512,1024,2048 --r7-variants overlap=0 --nvidia .carry/nvex/dense_gemm_persistent.py \
      --json "$OUT/dev-r7.json" 2>&1 | tee "$OUT/dev-r7.log" | grep -E '^BENCH|^# checks|CHECK BAD|Error'
    timeout -s KILL 280 python3 -m nox --no-venv -s "tests(harness)" -- -p no:cacheprovider \
      -k "test_kernel_is_correct and (cutedsl or cublas)" 2>&1 | tee "$OUT/tests-cutedsl.log" | tail -8 ;;
  final2)
    bash .carry/gluon1/unpack install gluon1 >/dev/null || exit 1
    python3 -m nox --no-venv -s "bench(cutedsl)" -- "${common[@]}" --rung 7 --suite smoke \
      --suite square --suite ksweep --dtype fp16 --dtype bf16 --out "$OUT/bench-final.json" \
      2>&1 | tee "$OUT/final.log" | tail -30
    timeout -s KILL 240 python3 -m nox --no-venv -s "tests(harness)" -- -p no:cacheprovider \
      -k "test_kernel_is_correct and gluon" 2>&1 | tee "$OUT/tests-gluon.log" | tail -8 ;;
  chain2)
    bash .carry/cutedsl/unpack install cutedsl >/dev/null || exit 1
    bash .carry/nox/unpack install nox >/dev/null || exit 1
    python3 -m nox --no-venv -s "bench(cutedsl)" -- "${common[@]}" --suite 4096x4096x4096 \
      --suite 8192x8192x8192 --dtype fp16 --out "$OUT/bench-chain.json" 2>&1 \
      | tee "$OUT/chain.log" | tail -45 ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
