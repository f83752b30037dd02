#!/bin/bash
# Packs what `npm run test:gpu` and `npm run bench -- gpu` need on an offline Linux x86-64 GPU
# machine that has the NVIDIA driver, CUDA 13 libraries and nvcc but no Node.js and no network:
#   part-1/  node.xz (this machine's node binary), modules.tar.xz (node_modules without the
#            linters and ONNX Runtime), onnxruntime.tar.xz (ONNX Runtime as users get it: the CPU
#            library package and the GPU providers package apart, joined by infernode's link
#            directory; onnxruntime-node 1.29.0, the version the CUDA provider was built with, for
#            the headline peer), app.tar.xz (lib/ and the CUDA build of the addon)
#   part-2/ … part-N/  the CUDA execution provider (~230 MB) as xz, in pieces of GPU_KIT_PART_MIB
# so that each part fits a transfer of limited size. On the GPU machine, in a checkout of the same
# commit, each part goes to scripts/gpu-kit-device.sh (which says how).
# Needs: `npm install`, `npm run build` with nvcc present (the addon must have CUDA compiled in),
# and the npm registry for three packages (cached in the kit's work/ directory).
# Env: GPU_KIT_DIR (default .tmp/gpu-kit), GPU_KIT_PART_MIB (default 58).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KIT=${GPU_KIT_DIR:-$ROOT/.tmp/gpu-kit}
PART_MIB=${GPU_KIT_PART_MIB:-58}
GPU_PACKAGE=com.github.asus4.onnxruntime.linux-x64-gpu
GPU_VERSION=$(node -p "require('$ROOT/lib/engines/ort-library').GPU_PROVIDERS_VERSION")
ORT_VERSION=$(node -p "require('$ROOT/packages/onnxruntime-linux-x64/package.json').version")
cd "$ROOT"
node -e "if (!require('./lib/native').native().buildInfo().cuda) { console.error('gpu-kit: the addon was built without CUDA (nvcc not found at npm run build)'); process.exit(1); }"

rm -rf "$KIT"/part-* "$KIT/stage"
mkdir -p "$KIT/work" "$KIT/stage/node_modules" "$KIT/part-1"
(cd "$KIT/work" && for p in "$GPU_PACKAGE@$GPU_VERSION" "onnxruntime-node@$ORT_VERSION" "onnxruntime-common@$ORT_VERSION"; do
  ls "$(echo "$p" | sed 's/@/-/').tgz" >/dev/null 2>&1 || npm pack --silent "$p" >/dev/null; done)

# ONNX Runtime as users get it: the CPU library (from this checkout's copy) and the GPU providers
# package, each in its own package directory; onnxruntime-node with its Linux x64 binaries only.
S=$KIT/stage/node_modules
CPU_LIB=$(node -p "require('./scripts/ort-paths.js').runtimeLibrary().library")
mkdir -p "$S/com.github.asus4.onnxruntime/Plugins/Linux/x64" "$S/$GPU_PACKAGE" "$S/onnxruntime-node" "$S/onnxruntime-common"
cp "$CPU_LIB" "$S/com.github.asus4.onnxruntime/Plugins/Linux/x64/libonnxruntime.so"
printf '{"name":"com.github.asus4.onnxruntime","version":"%s"}\n' "$GPU_VERSION" > "$S/com.github.asus4.onnxruntime/package.json"
tar -xzf "$KIT/work/$GPU_PACKAGE-$GPU_VERSION.tgz" -C "$S/$GPU_PACKAGE" --strip-components=1 \
  package/package.json package/Plugins/Linux/x64/libonnxruntime_providers_shared.so package/Plugins/Linux/x64/libonnxruntime_providers_tensorrt.so
tar -xzf "$KIT/work/onnxruntime-node-$ORT_VERSION.tgz" -C "$S/onnxruntime-node" --strip-components=1 \
  package/package.json package/dist package/lib package/bin/napi-v6/linux/x64
tar -xzf "$KIT/work/onnxruntime-common-$ORT_VERSION.tgz" -C "$S/onnxruntime-common" --strip-components=1

echo "gpu-kit: compressing (a few minutes)"
xz -9 -T0 -c "$(node -p process.execPath)" > "$KIT/part-1/node.xz"
tar -cf - --exclude=node_modules/onnxruntime-node --exclude=node_modules/onnxruntime-common \
  --exclude='node_modules/com.github.asus4.*' --exclude=node_modules/kubernetes-models --exclude=node_modules/@kubernetes-models \
  --exclude=node_modules/eslint --exclude=node_modules/@eslint --exclude=node_modules/@typescript-eslint node_modules \
  | xz -9 -T0 > "$KIT/part-1/modules.tar.xz"
tar -cf - -C "$KIT/stage" node_modules | xz -9 -T0 > "$KIT/part-1/onnxruntime.tar.xz"
tar -cf - lib build/Release/infernode.node | xz -9 -T0 > "$KIT/part-1/app.tar.xz"
git rev-parse HEAD > "$KIT/part-1/commit"

tar -xzf "$KIT/work/$GPU_PACKAGE-$GPU_VERSION.tgz" -C "$KIT/work" package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so
PROVIDER=$KIT/work/package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so
sha256sum "$PROVIDER" | cut -d' ' -f1 > "$KIT/part-1/cuda-provider.sha256"
xz -9 -T0 -c "$PROVIDER" > "$KIT/work/cuda-provider.xz"
rm -rf "$KIT/work/package"
split -b "${PART_MIB}m" -d -a 2 "$KIT/work/cuda-provider.xz" "$KIT/work/cuda-provider.xz."
n=2
for piece in "$KIT"/work/cuda-provider.xz.[0-9][0-9]; do
  mkdir -p "$KIT/part-$n" && mv "$piece" "$KIT/part-$n/"
  n=$((n + 1))
done
rm -rf "$KIT/stage" "$KIT/work/cuda-provider.xz"
du -sh "$KIT"/part-*
echo "gpu-kit: $((n - 1)) parts in $KIT; see scripts/gpu-kit-device.sh"
