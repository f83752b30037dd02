// Bytes that lie in a GPU's memory rather than the host's: a client's CUDA shared-memory region
// (memory/cuda_ipc.h) that a request's input names. A GPU instance on the same device reads them
// where they are (engines/batch_inputs.h); anything else copies them to the host first.
// Thread-safe: read by the instance threads of every request that names the region, and kept
// open by those requests (shared_ptr) after the client unregisters it.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace infernode {

class DeviceBytes {
 public:
  virtual ~DeviceBytes() = default;
  virtual int DeviceId() const = 0;
  virtual uint64_t ByteSize() const = 0;
  // The first byte, valid on DeviceId() only (never dereferenced on the host). Inputs are read
  // there and outputs written there by kernels and copies on that device.
  virtual void* DevicePointer() const = 0;
  // Copies `bytes` from `offset` into host memory, synchronously; bounds are the caller's.
  virtual Status CopyToHost(uint64_t offset, void* dst, uint64_t bytes) const = 0;
};

}  // namespace infernode
