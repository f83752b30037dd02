// CUDA runtime pieces: device discovery and pinned host memory. cudart is linked statically,
// so on a machine without a driver every call fails cleanly and the device count is 0.
#include <cuda_runtime.h>

#include <mutex>

#include "memory/cuda_host.h"

namespace infernode {

namespace {

class PinnedAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* ptr = nullptr;
    if (cudaHostAlloc(&ptr, bytes == 0 ? 1 : bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls are not confused
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr, size_t) override { cudaFreeHost(ptr); }
  const char* Name() const override { return "cuda-pinned"; }
};

}  // namespace

int CudaDeviceCount() {
  static std::once_flag once;
  static int count = 0;
  std::call_once(once, [] {
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      count = 0;
    }
  });
  return count;
}

bool CudaCompiledIn() { return true; }

std::unique_ptr<HostAllocator> MakePinnedAllocator() {
  if (CudaDeviceCount() == 0) return nullptr;
  return std::make_unique<PinnedAllocator>();
}

}  // namespace infernode
