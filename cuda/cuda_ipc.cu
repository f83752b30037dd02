// CUDA shared-memory regions: cudaIpcOpenMemHandle on the client's handle, synchronous copies
// to and from host memory on a non-blocking stream of the region's own. Without a device,
// opening fails cleanly.
//
// Threads: a region is opened and written on the Node main thread (the frontends decode and
// answer requests there); it is read there or, for inputs, by the instance threads of CPU
// instances, and closed by whichever thread releases it last (core/device_bytes.h). The device a
// thread has current is restored after every call, so other CUDA users of that thread are not
// moved to another device.
#include <cuda.h>  // CUdeviceptr and CUresult only: the driver is reached through cudart's entry points
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "memory/cuda_host.h"
#include "memory/cuda_ipc.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace cuda_ipc_internal {

// Clears the error a failed call left behind: a later, unrelated cudaGetLastError() (an engine
// checking its kernel launch) must not see it.
void ClearLastError() { cudaGetLastError(); }

Status CudaError(const std::string& what, cudaError_t err) {
  ClearLastError();
  return InvalidArg(what + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

// Makes `device` current for a scope and restores the caller's device after it.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
    ClearLastError();
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_;
};

// The extent, in this process, of the device allocation holding `ptr` (cuMemGetAddressRange,
// through cudart's driver entry points: the addon links no libcuda, so it loads without a driver).
using GetAddressRangeFn = CUresult (*)(CUdeviceptr* base, size_t* size, CUdeviceptr ptr);

Status AllocationExtent(const void* ptr, uint64_t* base, uint64_t* size) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t err = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &found);
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
    ClearLastError();
    return Internal("unable to check the size of the CUDA IPC allocation: the driver has no cuMemGetAddressRange");
  }
  CUdeviceptr alloc_base = 0;
  size_t alloc_size = 0;
  const CUresult result =
      reinterpret_cast<GetAddressRangeFn>(fn)(&alloc_base, &alloc_size, reinterpret_cast<CUdeviceptr>(ptr));
  if (result != CUDA_SUCCESS) {
    return InvalidArg("unable to find the size of the opened CUDA IPC allocation (driver error " +
                      std::to_string(static_cast<int>(result)) + ")");
  }
  *base = alloc_base;
  *size = alloc_size;
  return Status::Success();
}

class OpenedIpcRegion final : public CudaIpcRegion {
 public:
  OpenedIpcRegion(void* base, int device, uint64_t byte_size, cudaStream_t stream)
      : base_(base), device_(device), byte_size_(byte_size), stream_(stream) {}
  ~OpenedIpcRegion() override {
    DeviceScope scope(device_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaIpcCloseMemHandle(base_);  // reference-counted by the driver: one close per open
  }
  uint64_t ByteSize() const override { return byte_size_; }
  int DeviceId() const override { return device_; }
  void* DevicePointer() const override { return base_; }
  Status CopyToHost(uint64_t offset, void* dst, uint64_t bytes) const override {
    return Copy(dst, static_cast<const uint8_t*>(base_) + offset, bytes, cudaMemcpyDeviceToHost);
  }
  Status CopyFromHost(uint64_t offset, const void* src, uint64_t bytes) override {
    return Copy(static_cast<uint8_t*>(base_) + offset, src, bytes, cudaMemcpyHostToDevice);
  }

 private:
  // On the region's own non-blocking stream: a copy on the legacy default stream would wait for
  // every kernel in flight on the device (the engines' batches), blocking the event loop.
  Status Copy(void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind) const {
    if (bytes == 0) return Status::Success();
    DeviceScope scope(device_);
    cudaError_t err = scope.status();
    if (err == cudaSuccess) err = cudaMemcpyAsync(dst, src, bytes, kind, stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess) return CudaError("CUDA shared memory copy failed", err);
    return Status::Success();
  }

  void* base_;
  int device_;
  uint64_t byte_size_;
  cudaStream_t stream_;
};

}  // namespace cuda_ipc_internal
using namespace cuda_ipc_internal;  // NOLINT(build/namespaces): this file's own helpers

Status OpenCudaIpcRegion(const uint8_t* handle, size_t handle_size, int device_id, uint64_t byte_size,
                         std::unique_ptr<CudaIpcRegion>* out) {
  const int devices = CudaDeviceCount();
  if (devices == 0) return Unavailable("CUDA shared memory is not available: no CUDA device was found");
  if (device_id < 0 || device_id >= devices) {
    return InvalidArg("invalid CUDA device id " + std::to_string(device_id) + ": " + std::to_string(devices) +
                      " device(s) present");
  }
  if (handle_size != sizeof(cudaIpcMemHandle_t)) {
    return InvalidArg("CUDA IPC handle must be " + std::to_string(sizeof(cudaIpcMemHandle_t)) + " bytes, got " +
                      std::to_string(handle_size));
  }
  cudaIpcMemHandle_t ipc{};
  std::memcpy(&ipc, handle, sizeof(ipc));
  DeviceScope scope(device_id);
  if (scope.status() != cudaSuccess)
    return CudaError("unable to use CUDA device " + std::to_string(device_id), scope.status());
  void* base = nullptr;
  // A handle made in this very process, a freed allocation or random bytes: cudaErrorInvalidValue
  // or cudaErrorInvalidContext, neither sticky.
  cudaError_t err = cudaIpcOpenMemHandle(&base, ipc, cudaIpcMemLazyEnablePeerAccess);
  if (err != cudaSuccess) return CudaError("unable to open the CUDA IPC handle", err);
  // The client's byte_size must lie within its allocation: past it, copies would reach whatever
  // this process has mapped next (another client's region, a model's weights).
  uint64_t alloc_base = 0;
  uint64_t alloc_size = 0;
  Status extent = AllocationExtent(base, &alloc_base, &alloc_size);
  const uint64_t available = extent.IsOk() ? alloc_size - (reinterpret_cast<uint64_t>(base) - alloc_base) : 0;
  if (extent.IsOk() && byte_size > available) {
    extent = InvalidArg("byte_size " + std::to_string(byte_size) + " exceeds the " + std::to_string(available) +
                        " bytes of the CUDA allocation the IPC handle refers to");
  }
  cudaStream_t stream = nullptr;
  if (extent.IsOk()) {
    err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) extent = CudaError("unable to create a CUDA stream for the shared memory region", err);
  }
  if (!extent.IsOk()) {
    cudaIpcCloseMemHandle(base);
    return extent;
  }
  out->reset(new OpenedIpcRegion(base, device_id, byte_size, stream));
  return Status::Success();
}

}  // namespace infernode
