// CUDA shared-memory regions: cudaIpcOpenMemHandle on the client's handle, synchronous copies
// to and from host memory on a stream of our own. Without a device, opening fails cleanly.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "memory/cuda_host.h"
#include "memory/cuda_ipc.h"

namespace infernode {

namespace {

Status CudaError(const std::string& what, cudaError_t err) {
  cudaGetLastError();  // clear the sticky error
  return InvalidArg(what + ": " + cudaGetErrorString(err));
}

class OpenedIpcRegion final : public CudaIpcRegion {
 public:
  OpenedIpcRegion(void* base, int device, uint64_t byte_size) : base_(base), device_(device), byte_size_(byte_size) {}
  ~OpenedIpcRegion() override {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    cudaIpcCloseMemHandle(base_);
    cudaSetDevice(previous);
  }
  uint64_t ByteSize() const override { return byte_size_; }
  int DeviceId() const override { return device_; }
  Status CopyToHost(uint64_t offset, void* dst, uint64_t bytes) const override {
    return Copy(dst, static_cast<const uint8_t*>(base_) + offset, bytes, cudaMemcpyDeviceToHost);
  }
  Status CopyFromHost(uint64_t offset, const void* src, uint64_t bytes) override {
    return Copy(static_cast<uint8_t*>(base_) + offset, src, bytes, cudaMemcpyHostToDevice);
  }

 private:
  Status Copy(void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind) const {
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaMemcpy(dst, src, bytes, kind);
    if (err != cudaSuccess) return CudaError("CUDA shared memory copy failed", err);
    return Status::Success();
  }

  void* base_;
  int device_;
  uint64_t byte_size_;
};

}  // namespace

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
  int previous = 0;
  cudaGetDevice(&previous);
  cudaError_t err = cudaSetDevice(device_id);
  void* base = nullptr;
  if (err == cudaSuccess) err = cudaIpcOpenMemHandle(&base, ipc, cudaIpcMemLazyEnablePeerAccess);
  cudaSetDevice(previous);
  if (err != cudaSuccess) return CudaError("unable to open the CUDA IPC handle", err);
  out->reset(new OpenedIpcRegion(base, device_id, byte_size));
  return Status::Success();
}

}  // namespace infernode
