// Shared-memory regions for the frontends (typed in ts/native.ts): a POSIX region mapped as an
// external ArrayBuffer, and a CUDA IPC region wrapped as a CudaSharedMemory object.
#pragma once

#include <napi.h>

#include <memory>

#include "memory/cuda_ipc.h"

namespace infernode {

// mapSystemSharedMemory(key, offset, byteSize): ArrayBuffer over the mapping; unmapped when
// the ArrayBuffer is collected. Throws InferenceServerError.
Napi::Value MapSystemSharedMemory(const Napi::CallbackInfo& info);

// openCudaSharedMemory(handle: Uint8Array, deviceId, byteSize): CudaSharedMemory.
Napi::Value OpenCudaSharedMemory(const Napi::CallbackInfo& info);

// A CUDA IPC region: read(offset, size) copies into a new Buffer, write(offset, bytes) copies
// from one; close() releases the handle (also done when collected). Main thread only.
class CudaSharedMemory final : public Napi::ObjectWrap<CudaSharedMemory> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit CudaSharedMemory(const Napi::CallbackInfo& info);

  void Adopt(std::unique_ptr<CudaIpcRegion> region) { region_ = std::move(region); }

 private:
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  const CudaIpcRegion& Region(Napi::Env env) const;

  std::unique_ptr<CudaIpcRegion> region_;
};

}  // namespace infernode
