#!/usr/bin/env bash
# Gluon on the offline GPU host: bring triton 3.9.0 from a bundle, then run the development
# check/benchmark (scripts/dev_gluon.py), logs under $OUT.
#   bash scripts/device_gluon.sh run -- <dev_gluon args>
#   bash scripts/device_gluon.sh pack                    # here, on the CPU machine: build .carry/gluon1
# BUNDLE=gluon1 (default): a one-part bundle (carry .carry/gluon1), built like
#   `../shared/device/pack gluon triton==3.9.0` with the same STRIP list plus
#   `strip --strip-debug _C/libtriton.so` (477 MB -> 235 MB) and only ptxas-blackwell kept
#   (3.9.0 uses it for every arch >= 90; legacy ptxas 12.9 and nvdisasm dropped):
#   57 MiB, one transfer instead of two.
# BUNDLE=gluon: the standard 2-part bundle; first `stash` with part 00, then `run` with 01.
set -uo pipefail
mode=${1:?pack|stash|run}; shift
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
case $mode in
  pack)
    # Same tree as ../shared/device/pack would install, trimmed to fit one 60 MiB part.
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    python3 -m pip install -q --no-deps --no-compile --only-binary=:all: \
      --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --target "$tmp/site" triton==3.9.0 || exit 1
    (cd "$tmp/site/triton" && rm -rf backends/amd backends/nvidia/lib/cupti* profiler \
       _C/libproton* backends/nvidia/bin/ptxas backends/nvidia/bin/nvdisasm \
       && strip --strip-debug _C/libtriton.so) || exit 1
    tar -C "$tmp" -cf - site | xz -T0 -6 > "$tmp/site.tar.xz"
    size=$(stat -c %s "$tmp/site.tar.xz")
    [ "$size" -le $((60 * 1024 * 1024)) ] || { echo "bundle is $size bytes: > 60 MiB" >&2; exit 1; }
    rm -rf .carry/gluon1 && mkdir -p .carry/gluon1/00
    mv "$tmp/site.tar.xz" .carry/gluon1/00/part
    sha256sum .carry/gluon1/00/part | cut -d' ' -f1 > .carry/gluon1/SHA256
    cp "$(dirname "$here")/shared/device/unpack" .carry/gluon1/unpack 2>/dev/null \
      || cp /work/shared/device/unpack .carry/gluon1/unpack
    echo "bundle gluon1: 1 part, $size bytes; carry .carry/gluon1"
    ;;
  stash) bash .carry/${BUNDLE:-gluon1}/unpack stash ${BUNDLE:-gluon1} ;;
  run)
    b=${BUNDLE:-gluon1}
    # (Re)install when this bundle's checksum differs from the one installed on this host.
    if [ "$(cat /tmp/site-$b.sha 2>/dev/null)" != "$(cat .carry/$b/SHA256)" ]; then
      rm -rf /tmp/relay/$b
      bash .carry/$b/unpack install $b && cp .carry/$b/SHA256 /tmp/site-$b.sha || exit 1
    fi
    export PYTHONPATH=/tmp/site-$b:$here${PYTHONPATH:+:$PYTHONPATH}
    export TRITON_BACKENDS_IN_TREE=1 TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1
    export TRITON_CACHE_DIR=/tmp/triton-cache-gluon
    out=${OUT:-/tmp/out}; mkdir -p "$out"
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv | tee "$out/gpu.txt"
    python3 -c "import triton, torch; print('triton', triton.__version__, triton.__file__, 'torch', torch.__version__)"
    python3 scripts/dev_gluon.py --out "$out/gluon_dev.jsonl" "$@" 2>&1 | tee -a "$out/gluon_dev.log"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
