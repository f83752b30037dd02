#!/bin/bash
# The GPU machine's side of scripts/gpu-kit.sh, run from the root of a checkout of the kit's commit:
#   scripts/gpu-kit-device.sh base PART_DIR   keeps part-1, unpacks Node, node_modules, ONNX Runtime
#                                              and the build; runs the GPU suites that need no CUDA
#                                              execution provider
#   scripts/gpu-kit-device.sh keep PART_DIR   keeps one piece of the CUDA provider (part-2 …)
#   scripts/gpu-kit-device.sh full [PART_DIR] keeps the last piece, joins the provider, runs every
#                                              GPU suite and `bench gpu`
# Parts are kept in GPU_KIT_HOME (default /root/gpu-kit) between calls. Logs and results go to
# $OUT when set, else .tmp/gpu-results/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
HOME_KIT=${GPU_KIT_HOME:-/root/gpu-kit}
RESULTS=${OUT:-$PWD/.tmp/gpu-results}
mkdir -p "$HOME_KIT" "$RESULTS"
GPU_DIR=node_modules/com.github.asus4.onnxruntime.linux-x64-gpu/Plugins/Linux/x64
PEER_DIR=node_modules/onnxruntime-node/bin/napi-v6/linux/x64

unxz_cat() {  # xz, or Python's lzma where xz is missing
  if command -v xz >/dev/null; then xz -dc "$1"
  else python3 -c 'import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi
}

keep() { [ -n "${1:-}" ] && cp -r "$1"/. "$HOME_KIT"/; ls -la "$HOME_KIT"; }

unpack() {
  local bin=$HOME_KIT/bin
  mkdir -p "$bin"
  [ -x "$bin/node" ] || { unxz_cat "$HOME_KIT/node.xz" > "$bin/node" && chmod +x "$bin/node"; }
  export PATH=$bin:/usr/local/cuda/bin:$PATH
  [ -d node_modules/jest ] || unxz_cat "$HOME_KIT/modules.tar.xz" | tar -x
  [ -d node_modules/onnxruntime-node ] || unxz_cat "$HOME_KIT/onnxruntime.tar.xz" | tar -x
  [ -f build/Release/infernode.node ] || unxz_cat "$HOME_KIT/app.tar.xz" | tar -x
  [ "$(git rev-parse HEAD 2>/dev/null || cat "$HOME_KIT/commit")" = "$(cat "$HOME_KIT/commit")" ] ||
    echo "gpu-kit: WARNING: the kit was built at $(cat "$HOME_KIT/commit"), this checkout differs"
  node --version
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  node -e "console.log(require('./lib/native').native().buildInfo())"
}

jest_gpu() { node node_modules/jest/bin/jest.js --config jest.gpu.config.js "$@"; }

# The CUDA provider beside the GPU package's other libraries (found by infernode's link directory)
# and beside onnxruntime-node's library (the peer); cuBLAS, cuRAND and cuDNN on LD_LIBRARY_PATH.
join_provider() {
  cat "$HOME_KIT"/cuda-provider.xz.* > /tmp/cuda-provider.xz
  unxz_cat /tmp/cuda-provider.xz > "$GPU_DIR/libonnxruntime_providers_cuda.so" && rm -f /tmp/cuda-provider.xz
  echo "provider sha256 $(sha256sum "$GPU_DIR/libonnxruntime_providers_cuda.so" | cut -d' ' -f1), expected $(cat "$HOME_KIT/cuda-provider.sha256")"
  ln -sf "$PWD/$GPU_DIR/libonnxruntime_providers_cuda.so" "$PWD/$GPU_DIR/libonnxruntime_providers_shared.so" "$PEER_DIR/"
  local dirs="" d
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
    keep "${2:-}"; unpack
    jest_gpu test/gpu/cuda.test.ts test/gpu/pinned-memory.test.ts test/gpu/gpu-metrics.test.ts \
      test/gpu/cuda-shared-memory.test.ts test/gpu/half-cast.test.ts 2>&1 | tee "$RESULTS/gpu-tests-base.log" | tail -60
    ;;
  keep) keep "${2:-}" ;;
  full)
    keep "${2:-}"; unpack; join_provider
    jest_gpu 2>&1 | tee "$RESULTS/gpu-tests.log" | tail -80
    touch /tmp/gpu-kit-bench-start
    node lib/bench/main.js gpu 2>&1 | tee "$RESULTS/bench-gpu.log" | tail -60
    # Only what this run wrote (the checkout holds earlier results under the same names).
    find bench/results -name 'gpu.*' -newer /tmp/gpu-kit-bench-start -exec cp {} "$RESULTS/" \;
    ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
