// A client's CUDA shared-memory region (Triton's CUDA shared-memory extension): device memory
// of another process opened from its cudaIpcMemHandle_t. Implemented in cuda/cuda_ipc.cu; the
// CPU build (cpp/memory/cuda_ipc_none.cc) answers that no CUDA device exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace infernode {

constexpr size_t kCudaIpcHandleSize = 64;  // sizeof(cudaIpcMemHandle_t)

class CudaIpcRegion {
 public:
  virtual ~CudaIpcRegion() = default;
  virtual uint64_t ByteSize() const = 0;
  virtual int DeviceId() const = 0;
  // Bounds are checked by the caller (the region's byte size); these copy synchronously.
  virtual Status CopyToHost(uint64_t offset, void* dst, uint64_t bytes) const = 0;
  virtual Status CopyFromHost(uint64_t offset, const void* src, uint64_t bytes) = 0;
};

// Opens the region; UNAVAILABLE without a CUDA device, INVALID_ARG for a bad handle or device.
Status OpenCudaIpcRegion(const uint8_t* handle, size_t handle_size, int device_id, uint64_t byte_size,
                         std::unique_ptr<CudaIpcRegion>* out);

}  // namespace infernode
