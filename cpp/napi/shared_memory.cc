#include "napi/shared_memory.h"

#include "memory/system_shared_memory.h"
#include "napi/addon_data.h"
#include "napi/errors.h"

namespace infernode {

namespace {

// An exact non-negative integer argument; throws INVALID_ARG naming `what` otherwise.
uint64_t ExactUint(Napi::Env env, const Napi::Value& value, const char* what) {
  const double v = value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : -1;
  if (!(v >= 0) || v > 9007199254740991.0 || static_cast<double>(static_cast<uint64_t>(v)) != v) {
    ThrowStatus(env, InvalidArg(std::string(what) + " must be a non-negative integer"));
  }
  return static_cast<uint64_t>(v);
}

// offset + size within the region, overflow-checked.
void CheckRange(Napi::Env env, uint64_t offset, uint64_t size, uint64_t region_size) {
  if (offset > region_size || size > region_size - offset) {
    ThrowStatus(env, InvalidArg("offset " + std::to_string(offset) + " + byte size " + std::to_string(size) +
                                " exceeds the CUDA shared memory region's " + std::to_string(region_size) + " bytes"));
  }
}

}  // namespace

Napi::Value MapSystemSharedMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) ThrowStatus(env, InvalidArg("shared memory key must be a string"));
  const uint64_t offset = ExactUint(env, info[1], "shared memory offset");
  const uint64_t byte_size = ExactUint(env, info[2], "shared memory byte_size");
  std::unique_ptr<SystemSharedMemory> region;
  Status status = SystemSharedMemory::Map(info[0].As<Napi::String>().Utf8Value(), offset, byte_size, &region);
  if (!status.IsOk()) ThrowStatus(env, status);
  napi_value buffer = nullptr;
  SystemSharedMemory* raw = region.get();
  napi_status created = napi_create_external_arraybuffer(
      env, raw->Data(), raw->ByteSize(),
      [](napi_env, void*, void* hint) { delete static_cast<SystemSharedMemory*>(hint); }, raw, &buffer);
  if (created != napi_ok) {
    // A runtime that forbids external buffers cannot share memory with a client.
    ThrowStatus(env, Status(StatusCode::kUnsupported, "this JavaScript runtime cannot map shared memory"));
  }
  region.release();  // owned by the ArrayBuffer's finalizer now
  return Napi::Value(env, buffer);
}

Napi::Value OpenCudaSharedMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray()) ThrowStatus(env, InvalidArg("CUDA IPC handle must be a Uint8Array"));
  Napi::Uint8Array handle = info[0].As<Napi::Uint8Array>();
  const uint64_t device = ExactUint(env, info[1], "CUDA device id");
  const uint64_t byte_size = ExactUint(env, info[2], "CUDA shared memory byte_size");
  std::unique_ptr<CudaIpcRegion> region;
  Status status = OpenCudaIpcRegion(handle.Data(), handle.ByteLength(), static_cast<int>(device), byte_size, &region);
  if (!status.IsOk()) ThrowStatus(env, status);
  Napi::Object object = env.GetInstanceData<AddonData>()->cuda_shared_memory.New({});
  CudaSharedMemory::Unwrap(object)->Adopt(std::move(region));
  return object;
}

Napi::Function CudaSharedMemory::Define(Napi::Env env) {
  return DefineClass(env, "CudaSharedMemory",
                     {InstanceMethod<&CudaSharedMemory::Read>("read"),
                      InstanceMethod<&CudaSharedMemory::Write>("write"),
                      InstanceMethod<&CudaSharedMemory::Close>("close")});
}

CudaSharedMemory::CudaSharedMemory(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CudaSharedMemory>(info) {}

const CudaIpcRegion& CudaSharedMemory::Region(Napi::Env env) const {
  if (!region_) ThrowStatus(env, InvalidArg("the CUDA shared memory region was closed"));
  return *region_;
}

Napi::Value CudaSharedMemory::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaIpcRegion& region = Region(env);
  const uint64_t offset = ExactUint(env, info[0], "offset");
  const uint64_t size = ExactUint(env, info[1], "byte size");
  CheckRange(env, offset, size, region.ByteSize());
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, size);
  Status status = region.CopyToHost(offset, out.Data(), size);
  if (!status.IsOk()) ThrowStatus(env, status);
  return out;
}

Napi::Value CudaSharedMemory::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Region(env);
  const uint64_t offset = ExactUint(env, info[0], "offset");
  if (!info[1].IsTypedArray()) ThrowStatus(env, InvalidArg("data to write must be a Uint8Array"));
  Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
  CheckRange(env, offset, data.ByteLength(), region_->ByteSize());
  Status status = region_->CopyFromHost(offset, data.Data(), data.ByteLength());
  if (!status.IsOk()) ThrowStatus(env, status);
  return env.Undefined();
}

Napi::Value CudaSharedMemory::Close(const Napi::CallbackInfo& info) {
  region_.reset();
  return info.Env().Undefined();
}

}  // namespace infernode
