// A client's CUDA shared-memory region (Triton's CUDA shared-memory extension): device memory
// of another process opened from its cudaIpcMemHandle_t. Implemented in cuda/cuda_ipc.cu; the
// CPU build (cpp/memory/cuda_ipc_none.cc) answers that no CUDA device exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/device_bytes.h"
#include "core/status.h"

namespace infernode {

constexpr size_t kCudaIpcHandleSize = 64;  // sizeof(cudaIpcMemHandle_t)

// Requests whose inputs lie in the region hold it (DeviceBytes) until they are answered, so it is
// closed by whichever thread lets go last: the main thread or an instance thread.
class CudaIpcRegion : public DeviceBytes {
 public:
  // Bounds are checked by the caller (the region's byte size); this copies synchronously.
  virtual Status CopyFromHost(uint64_t offset, const void* src, uint64_t bytes) = 0;
};

// Opens the region; UNAVAILABLE without a CUDA device, INVALID_ARG for a bad handle or device.
Status OpenCudaIpcRegion(const uint8_t* handle, size_t handle_size, int device_id, uint64_t byte_size,
                         std::unique_ptr<CudaIpcRegion>* out);

}  // namespace infernode
