#!/usr/bin/env bash
# The study's benchmark on the offline GPU host, in transfers that each fit one call (the
# machine keeps /tmp only while it stays warm, so run them back to back):
#   bash scripts/device_bench.sh stash     carry .carry/cutedsl/{00,unpack,SHA256}: parked in /tmp
#   bash scripts/device_bench.sh gluon     carry .carry/gluon1 (one part): installed
#   bash scripts/device_bench.sh chain     carry .carry/cutedsl/{01,unpack,SHA256} and .carry/nox:
#                                          installed; every Hopper rung of both DSLs at 4096^3 and
#                                          8192^3 fp16 through `nox -s bench` (one run), then the
#                                          GPU tests of both DSLs through `nox -s tests(harness)`
#   bash scripts/device_bench.sh final     rung 7 of both DSLs on smoke, square, ksweep, fp16 +
#                                          bf16 through `nox -s bench`, and the harness-vs-do_bench
#                                          timer cross-check
#   bash scripts/device_bench.sh cutedsl   instead of chain when tuning CuTeDSL's rung 7 (same
#                                          carry plus .carry/nvex): checks, then rung 7 beside cuBLAS,
#                                          its no-overlap variant and NVIDIA's example (harness
#                                          timer), then the CuTeDSL GPU tests
# Results and logs go under $OUT. Pass GEMM_STUDY_GIT_SHA=$(git rev-parse --short HEAD) so the
# results name the code (the tree shipped to the host has no .git, or a stale one).
set -uo pipefail
mode=${1:?stash|gluon|chain|final|cutedsl}
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_BACKENDS_IN_TREE=1 CUTE_DSL_ARCH=sm_90a
export PYTHONPATH=/tmp/site-nox:/tmp/site-gluon1:/tmp/site-cutedsl:/tmp/site-cutedsl/nvidia_cutlass_dsl/dsl_packages:$PWD
common=(--backend cutedsl --backend gluon --arch sm_90a --timeout 120)

install_cutedsl_and_nox() {
  bash .carry/cutedsl/unpack install cutedsl >/dev/null || exit 1
  bash .carry/nox/unpack install nox >/dev/null || exit 1
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv \
    | tee "$OUT/gpu.txt"
}

gpu_tests() {  # $1: pytest -k expression, $2: log name, $3: seconds allowed
  timeout -s KILL "$3" python3 -m nox --no-venv -s "tests(harness)" -- -p no:cacheprovider \
    -k "$1" 2>&1 | tee "$OUT/$2" | tail -8
}

case $mode in
  stash) bash .carry/cutedsl/unpack stash cutedsl ;;
  gluon) bash .carry/gluon1/unpack install gluon1 >/dev/null || exit 1 ;;
  chain)
    install_cutedsl_and_nox
    python3 -m nox --no-venv -s "bench(cutedsl)" -- "${common[@]}" --suite 4096x4096x4096 \
      --suite 8192x8192x8192 --dtype fp16 --out "$OUT/bench-chain.json" 2>&1 \
      | tee "$OUT/chain.log" | tail -45
    gpu_tests "test_kernel_is_correct and (cutedsl or gluon) or test_direct_store" \
      tests-gpu.log 300 ;;
  final)
    python3 -m nox --no-venv -s "bench(cutedsl)" -- "${common[@]}" --rung 7 --suite smoke \
      --suite square --suite ksweep --dtype fp16 --dtype bf16 --out "$OUT/bench-final.json" \
      2>&1 | tee "$OUT/final.log" | tail -30
    python3 scripts/timer_crosscheck.py --out "$OUT/crosscheck.json" 1024x1024x1024 \
      4096x4096x4096 8192x8192x8192 8192x8192x512 2>&1 | tee "$OUT/crosscheck.log" ;;
  cutedsl)
    install_cutedsl_and_nox
    timeout -s KILL 300 python3 scripts/dev_cutedsl.py --kernels r7 --check --bench 4096,8192 \
      --ksweep 512,1024,2048 --r7-variants overlap=0 --nvidia .carry/nvex/dense_gemm_persistent.py \
      --json "$OUT/dev-r7.json" 2>&1 | tee "$OUT/dev-r7.log" | grep -E '^BENCH|^# checks|CHECK BAD|Error'
    gpu_tests "test_kernel_is_correct and (cutedsl or cublas) or test_direct_store" \
      tests-cutedsl.log 280 ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
