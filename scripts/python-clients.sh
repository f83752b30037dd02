#!/usr/bin/env bash
# Assembles NVIDIA's Python clients (tritonclient: http, grpc, their asyncio variants, utils and
# shared memory) from their public sources into build-pyclients/, for
# test/integration/python-clients.test.ts. Idempotent: a second run with the same pins does nothing.
#
# Needs (Debian 12):
#   apt-get install -y --no-install-recommends python3-grpcio python3-protobuf python3-numpy \
#     python3-geventhttpclient python3-rapidjson python3-aiohttp python3-packaging \
#     protobuf-compiler protobuf-compiler-grpc
# protobuf-compiler-grpc's grpc_python_plugin writes the service stubs (Debian's python3-grpc-tools
# is 1.14, far older than its python3-grpcio 1.51; the plugin matches grpcio).
#
# Sources: the triton-inference-server client and common repositories at the commits pinned
# below, copied in test/python/vendor/ (so CI needs no network beyond npm and Debian), or read from
# git directories named by TRITON_CLIENT_GIT / TRITON_COMMON_GIT when both are set.
# Output: build-pyclients/lib (PYTHONPATH: tritonclient) and build-pyclients/examples (the client
# repository's src/python/examples, unchanged). PYTHON (default /usr/bin/python3, Debian's, whose
# dist-packages hold the python3-* packages) is the interpreter checked.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENT_COMMIT=58a44caa0dce77303115302e6dbdf64626b2b093   # client main, 2026-05-04
COMMON_COMMIT=83adf7cf88a2f343005974dff3728be746de2d66   # common main
PYTHON="${PYTHON:-/usr/bin/python3}"
OUT="build-pyclients"
STAMP="$OUT/.assembled-$CLIENT_COMMIT-$COMMON_COMMIT"

missing=()
command -v protoc >/dev/null 2>&1 || missing+=("protoc (protobuf-compiler)")
command -v grpc_python_plugin >/dev/null 2>&1 || missing+=("grpc_python_plugin (protobuf-compiler-grpc)")
[ -x "$PYTHON" ] || missing+=("$PYTHON")
if [ -x "$PYTHON" ]; then
  for module in grpc google.protobuf numpy geventhttpclient gevent rapidjson aiohttp packaging pkg_resources; do
    "$PYTHON" -c "import $module" >/dev/null 2>&1 || missing+=("python module $module")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "python-clients: missing: ${missing[*]}" >&2
  echo "python-clients: install them with: apt-get install -y --no-install-recommends python3-grpcio python3-protobuf python3-numpy python3-geventhttpclient python3-rapidjson python3-aiohttp python3-packaging protobuf-compiler protobuf-compiler-grpc" >&2
  exit 3
fi

if [ -f "$STAMP" ]; then
  echo "python-clients: $OUT is up to date"
  exit 0
fi

rm -rf "$OUT/lib" "$OUT/examples" "$OUT/tmp" "$OUT"/.assembled-*
mkdir -p "$OUT/lib" "$OUT/tmp"
VENDOR=test/python/vendor
if [ -z "${TRITON_CLIENT_GIT:-}${TRITON_COMMON_GIT:-}" ]; then
  # The copies of the pinned commits kept in the repository (test/python/vendor/README.md).
  cp -r "$VENDOR/triton-client/src" "$OUT/tmp/src"
  cp -r "$VENDOR/triton-common/protobuf" "$OUT/tmp/protobuf"
else
  # Other commits' sources, from git directories that hold the pinned commits.
  for pinned in "${TRITON_CLIENT_GIT:?set both TRITON_CLIENT_GIT and TRITON_COMMON_GIT}:$CLIENT_COMMIT" "${TRITON_COMMON_GIT:?}:$COMMON_COMMIT"; do
    git --git-dir="${pinned%%:*}" cat-file -e "${pinned##*:}^{commit}" 2>/dev/null ||
      { echo "python-clients: ${pinned%%:*} does not hold commit ${pinned##*:}" >&2; exit 4; }
  done
  git --git-dir="$TRITON_CLIENT_GIT" archive "$CLIENT_COMMIT" src/python/library/tritonclient src/python/examples | tar -x -C "$OUT/tmp"
  git --git-dir="$TRITON_COMMON_GIT" archive "$COMMON_COMMIT" protobuf | tar -x -C "$OUT/tmp"
fi
mv "$OUT/tmp/src/python/library/tritonclient" "$OUT/lib/tritonclient"
mv "$OUT/tmp/src/python/examples" "$OUT/examples"
rm -f "$OUT/lib/tritonclient/CMakeLists.txt" "$OUT/lib/tritonclient/utils/CMakeLists.txt" "$OUT/examples/CMakeLists.txt"

# The stubs, named and imported as the client's build_wheel.py does (grpc_service_pb2 →
# tritonclient.grpc.service_pb2, absolute imports rewritten into the package).
protoc -I "$OUT/tmp/protobuf" --python_out="$OUT/tmp" \
  --grpc_out="$OUT/tmp" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
  "$OUT/tmp/protobuf/grpc_service.proto" "$OUT/tmp/protobuf/model_config.proto"
grpc_dir="$OUT/lib/tritonclient/grpc"
mv "$OUT/tmp/model_config_pb2.py" "$grpc_dir/model_config_pb2.py"
mv "$OUT/tmp/grpc_service_pb2.py" "$grpc_dir/service_pb2.py"
mv "$OUT/tmp/grpc_service_pb2_grpc.py" "$grpc_dir/service_pb2_grpc.py"
sed -E -i 's/^import ([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' \
  "$grpc_dir/model_config_pb2.py" "$grpc_dir/service_pb2.py"
sed -E -i 's/^import grpc_([^ ]*)_pb2 as ([^ ]*)$/from tritonclient.grpc import \1_pb2 as \2/' \
  "$grpc_dir/service_pb2_grpc.py"
rm -rf "$OUT/tmp"

PYTHONPATH="$OUT/lib" "$PYTHON" -c '
import tritonclient.http, tritonclient.http.aio, tritonclient.grpc, tritonclient.grpc.aio
import tritonclient.utils.shared_memory
print("python-clients: tritonclient imports (http, http.aio, grpc, grpc.aio, shared_memory)")'
touch "$STAMP"
echo "python-clients: assembled into $OUT (client $CLIENT_COMMIT, common $COMMON_COMMIT)"
