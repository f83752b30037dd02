// CUDA shared memory in a build without CUDA: every registration fails with a clear error.
#include "memory/cuda_ipc.h"

namespace infernode {

Status OpenCudaIpcRegion(const uint8_t*, size_t, int, uint64_t, std::unique_ptr<CudaIpcRegion>*) {
  return Unavailable("CUDA shared memory is not available: this build of infernode has no CUDA support");
}

}  // namespace infernode
