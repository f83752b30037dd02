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

Napi::Value OpenSystemSharedMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) ThrowStatus(env, InvalidArg("shared memory region name must be a string"));
  if (!info[1].IsString()) ThrowStatus(env, InvalidArg("shared memory key must be a string"));
  const uint64_t offset = ExactUint(env, info[2], "shared memory offset");
  const uint64_t byte_size = ExactUint(env, info[3], "shared memory byte_size");
  std::unique_ptr<SystemSharedMemory> region;
  Status status = SystemSharedMemory::Open(info[0].As<Napi::String>().Utf8Value(),
                                           info[1].As<Napi::String>().Utf8Value(), offset, byte_size, &region);
  if (!status.IsOk()) ThrowStatus(env, status);
  Napi::Object object = env.GetInstanceData<AddonData>()->system_shared_memory.New({});
  SystemSharedMemoryRegion::Unwrap(object)->Adopt(std::move(region));
  return object;
}

Napi::Function SystemSharedMemoryRegion::Define(Napi::Env env) {
  return DefineClass(env, "SystemSharedMemoryRegion",
                     {InstanceMethod<&SystemSharedMemoryRegion::Read>("read"),
                      InstanceMethod<&SystemSharedMemoryRegion::Write>("write"),
                      InstanceMethod<&SystemSharedMemoryRegion::Close>("close")});
}

SystemSharedMemoryRegion::SystemSharedMemoryRegion(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<SystemSharedMemoryRegion>(info) {}

const SystemSharedMemory& SystemSharedMemoryRegion::Region(Napi::Env env) const {
  if (!region_) ThrowStatus(env, InvalidArg("the system shared memory region was closed"));
  return *region_;
}

Napi::Value SystemSharedMemoryRegion::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const SystemSharedMemory& region = Region(env);
  const uint64_t offset = ExactUint(env, info[0], "offset");
  const uint64_t size = ExactUint(env, info[1], "byte size");
  Status in_region = region.InRegion(offset, size);  // before allocating `size` bytes
  if (!in_region.IsOk()) ThrowStatus(env, in_region);
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, size);
  Status status = region.Read(offset, size, out.Data());
  if (!status.IsOk()) ThrowStatus(env, status);
  return out;
}

Napi::Value SystemSharedMemoryRegion::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const SystemSharedMemory& region = Region(env);
  const uint64_t offset = ExactUint(env, info[0], "offset");
  if (!info[1].IsTypedArray()) ThrowStatus(env, InvalidArg("data to write must be a Uint8Array"));
  Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
  Status status = region.Write(offset, data.Data(), data.ByteLength());
  if (!status.IsOk()) ThrowStatus(env, status);
  return env.Undefined();
}

Napi::Value SystemSharedMemoryRegion::Close(const Napi::CallbackInfo& info) {
  region_.reset();
  return info.Env().Undefined();
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
  return DefineClass(
      env, "CudaSharedMemory",
      {InstanceMethod<&CudaSharedMemory::Read>("read"), InstanceMethod<&CudaSharedMemory::Write>("write"),
       InstanceMethod<&CudaSharedMemory::Close>("close")});
}

CudaSharedMemory::CudaSharedMemory(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CudaSharedMemory>(info) {}

const CudaIpcRegion& CudaSharedMemory::Region(Napi::Env env) const {
  if (!region_) ThrowStatus(env, InvalidArg("the CUDA shared memory region was closed"));
  return *region_;
}

std::shared_ptr<const CudaIpcRegion> CudaSharedMemory::Shared(Napi::Env env) const {
  Region(env);
  return region_;
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
