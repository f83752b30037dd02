#!/bin/bash
# The GPU machine's side of scripts/gpu-kit.sh, run from the root of a checkout of the kit's commit:
#   scripts/gpu-kit-device.sh base PART_DIR   starts a kit from part-1: unpacks Node, node_modules,
#                                              ONNX Runtime and the build; runs the GPU suites that
#                                              need no CUDA execution provider
#   scripts/gpu-kit-device.sh keep PART_DIR   keeps one piece of the CUDA provider (part-2 …)
#   scripts/gpu-kit-device.sh full [PART_DIR] keeps the last piece, joins the provider (checked
#                                              against its sha256), runs every GPU suite and
#                                              `bench gpu` (GPU_KIT_BENCH=0: the suites only)
# Parts are kept in GPU_KIT_HOME (default ~/gpu-kit) between calls. Logs and results go to $OUT
# when set, else .tmp/gpu-results/. Exits non-zero when a suite, the bench or the kit fails.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
HOME_KIT=${GPU_KIT_HOME:-$HOME/gpu-kit}
RESULTS=${OUT:-$PWD/.tmp/gpu-results}
mkdir -p "$HOME_KIT" "$RESULTS"
GPU_DIR=node_modules/com.github.asus4.onnxruntime.linux-x64-gpu/Plugins/Linux/x64
PEER_DIR=node_modules/onnxruntime-node/bin/napi-v6/linux/x64

fail() { echo "gpu-kit: $*" >&2; exit 1; }

unxz_cat() {  # xz, or Python's lzma where xz is missing
  if command -v xz >/dev/null; then xz -dc "$1"
  else python3 -c 'import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi
}

keep() { [ -z "${1:-}" ] || cp -r "$1"/. "$HOME_KIT"/ || fail "cannot keep $1"; ls -la "$HOME_KIT"; }

# Unpacks the kit into the checkout unless this very kit was unpacked here already (a warm
# machine keeps ignored files between calls; an older kit's files are replaced, not reused).
unpack() {
  local bin=$HOME_KIT/bin kit
  kit=$(cat "$HOME_KIT/commit" 2>/dev/null) || fail "no kit in $HOME_KIT: run 'base' with part-1 first"
  if [ "$(cat .tmp/gpu-kit-unpacked 2>/dev/null)" != "$kit" ]; then
    [ -f .tmp/gpu-kit-unpacked ] || [ ! -e node_modules ] ||
      fail "this checkout has a node_modules of its own; unpack a kit only in a checkout made for it"
    mkdir -p "$bin" .tmp
    unxz_cat "$HOME_KIT/node.xz" > "$bin/node" && chmod +x "$bin/node" || fail "cannot unpack node"
    rm -rf node_modules lib build/Release
    for archive in modules onnxruntime app; do
      unxz_cat "$HOME_KIT/$archive.tar.xz" | tar -x || fail "cannot unpack $archive.tar.xz"
    done
    echo "$kit" > .tmp/gpu-kit-unpacked
  fi
  export PATH=$bin:/usr/local/cuda/bin:$PATH
  [ "$(git rev-parse HEAD 2>/dev/null || echo "$kit")" = "$kit" ] ||
    echo "gpu-kit: WARNING: the kit was built at $kit, this checkout differs"
  node --version
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  node -e "console.log(require('./lib/native').native().buildInfo())"
}

jest_gpu() { node node_modules/jest/bin/jest.js --config jest.gpu.config.js "$@"; }

# The CUDA provider beside the GPU package's other libraries (found by infernode's link directory)
# and beside onnxruntime-node's library (the peer); cuBLAS, cuRAND and cuDNN on LD_LIBRARY_PATH.
join_provider() {
  local provider=$GPU_DIR/libonnxruntime_providers_cuda.so dirs="" d
  cat "$HOME_KIT"/cuda-provider.xz.* > /tmp/cuda-provider.xz || fail "no pieces of the CUDA provider in $HOME_KIT"
  unxz_cat /tmp/cuda-provider.xz > "$provider"; rm -f /tmp/cuda-provider.xz
  [ "$(sha256sum "$provider" | cut -d' ' -f1)" = "$(cat "$HOME_KIT/cuda-provider.sha256")" ] ||
    fail "the CUDA provider's pieces do not add up to the kit's (sha256 differs): a piece is missing or from another kit"
  ln -sf "$PWD/$provider" "$PWD/$GPU_DIR/libonnxruntime_providers_shared.so" "$PEER_DIR/"
  for lib in 'libcublasLt.so.13*' 'libcurand.so.10*' 'libcudnn.so.9*'; do
    d=$(find /usr/local/cuda/lib64/ /usr/local/cuda*/targets/ /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
    [ -n "$d" ] && dirs="$dirs:$(dirname "$d")"
  done
  export LD_LIBRARY_PATH=${dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  unset ONNXRUNTIME_ROOT
  export INFERNODE_CACHE_DIR=${INFERNODE_CACHE_DIR:-/tmp/infernode-cache}
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  node -e "console.log(require('./lib/engines/ort-library').locateOnnxRuntime())"
}

case "${1:-}" in
  base)
    [ -n "${2:-}" ] || fail "base needs part-1's directory"
    rm -rf "$HOME_KIT"; mkdir -p "$HOME_KIT"  # a new kit: no piece of an older one stays
    keep "$2"; unpack
    jest_gpu test/gpu/cuda.test.ts test/gpu/pinned-memory.test.ts test/gpu/gpu-metrics.test.ts \
      test/gpu/half-cast.test.ts test/gpu/span-copy.test.ts test/gpu/streams.test.ts 2>&1 | tee "$RESULTS/gpu-tests-base.log" | tail -60
    ;;
  keep) keep "${2:-}" ;;
  full)
    keep "${2:-}"; unpack; join_provider
    jest_gpu 2>&1 | tee "$RESULTS/gpu-tests.log" | tail -80
    suites=${PIPESTATUS[0]}
    bench=0
    if [ "${GPU_KIT_BENCH:-1}" != 0 ]; then
      touch /tmp/gpu-kit-bench-start
      node lib/bench/main.js gpu 2>&1 | tee "$RESULTS/bench-gpu.log" | tail -60
      bench=${PIPESTATUS[0]}
    fi
    # Only what this run wrote (the checkout holds earlier results under the same names).
    find bench/results -name 'gpu.*' -newer /tmp/gpu-kit-bench-start -exec cp {} "$RESULTS/" \;
    echo "gpu-kit: suites exited $suites, bench $bench"
    [ "$suites" = 0 ] && [ "$bench" = 0 ]
    ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
