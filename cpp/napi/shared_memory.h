// Shared-memory regions for the frontends (typed in ts/native.ts): a POSIX region wrapped as a
// SystemSharedMemoryRegion object (copies through the object's fd, never a mapping: see
// memory/system_shared_memory.h), and a CUDA IPC region wrapped as a CudaSharedMemory object.
#pragma once

#include <napi.h>

#include <memory>

#include "memory/cuda_ipc.h"
#include "memory/system_shared_memory.h"

namespace infernode {

// openSystemSharedMemory(name, key, offset, byteSize): SystemSharedMemoryRegion. Throws
// InferenceServerError.
Napi::Value OpenSystemSharedMemory(const Napi::CallbackInfo& info);

// A POSIX region: read(offset, size) copies into a new Buffer, write(offset, bytes) copies from
// one; both fstat the object first and throw INVALID_ARG when it shrank. close() closes the fd
// (also done when collected). Main thread only.
class SystemSharedMemoryRegion final : public Napi::ObjectWrap<SystemSharedMemoryRegion> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit SystemSharedMemoryRegion(const Napi::CallbackInfo& info);

  void Adopt(std::unique_ptr<SystemSharedMemory> region) { region_ = std::move(region); }

 private:
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  const SystemSharedMemory& Region(Napi::Env env) const;

  std::unique_ptr<SystemSharedMemory> region_;
};

// openCudaSharedMemory(handle: Uint8Array, deviceId, byteSize): CudaSharedMemory.
Napi::Value OpenCudaSharedMemory(const Napi::CallbackInfo& info);

// A CUDA IPC region: read(offset, size) copies into a new Buffer, write(offset, bytes) copies
// from one; close() lets go of the handle (also done when collected), which closes when no
// queued request still reads an input in it (Shared()). Main thread only.
class CudaSharedMemory final : public Napi::ObjectWrap<CudaSharedMemory> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit CudaSharedMemory(const Napi::CallbackInfo& info);

  void Adopt(std::unique_ptr<CudaIpcRegion> region) { region_ = std::move(region); }
  // The region, for a request whose input lies in it; throws INVALID_ARG once closed.
  std::shared_ptr<const CudaIpcRegion> Shared(Napi::Env env) const;

 private:
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  const CudaIpcRegion& Region(Napi::Env env) const;

  std::shared_ptr<CudaIpcRegion> region_;
};

}  // namespace infernode
