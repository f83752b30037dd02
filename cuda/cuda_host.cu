// CUDA runtime pieces: device discovery and pinned host memory. cudart is linked statically,
// so on a machine without a driver every call fails cleanly and the device count is 0.
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "memory/cuda_host.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace cuda_host_internal {

// The process-wide pinned budget (Triton's --pinned-memory-pool-byte-size, 256 MiB by default):
// pinned pages are a scarce, system-wide resource, so blocks beyond it come from pageable memory,
// as Triton falls back when its pinned pool is exhausted. Shared by every model's pool.
struct PinnedBudget {
  std::atomic<uint64_t> limit{uint64_t{256} << 20};
  std::atomic<uint64_t> used{0};
  std::atomic<uint64_t> fallbacks{0};

  bool Reserve(uint64_t bytes) {
    uint64_t current = used.load();
    do {
      if (current + bytes > limit.load()) return false;
    } while (!used.compare_exchange_weak(current, current + bytes));
    return true;
  }
};

PinnedBudget& Budget() {
  static PinnedBudget budget;
  return budget;
}

class PinnedAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override {
    const size_t size = bytes == 0 ? 1 : bytes;
    if (Budget().Reserve(size)) {
      void* ptr = nullptr;
      if (cudaHostAlloc(&ptr, size, cudaHostAllocPortable) == cudaSuccess) return ptr;
      cudaGetLastError();  // clear the error so later calls are not confused
      Budget().used -= size;
    }
    // Over the budget (or the driver refused): a pageable block, remembered so Free knows it.
    Budget().fallbacks++;
    void* ptr = pageable_->Allocate(size);
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      pageable_blocks_.insert(ptr);
    }
    return ptr;
  }

  void Free(void* ptr, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pageable_blocks_.erase(ptr) > 0) {
        pageable_->Free(ptr, bytes);
        return;
      }
    }
    cudaFreeHost(ptr);
    Budget().used -= bytes == 0 ? 1 : bytes;
  }

  const char* Name() const override { return "cuda-pinned"; }

 private:
  std::unique_ptr<HostAllocator> pageable_ = MakeAlignedAllocator();
  std::mutex mu_;  // pools free blocks from any thread
  std::unordered_set<void*> pageable_blocks_;
};

}  // namespace cuda_host_internal
using namespace cuda_host_internal;  // NOLINT(build/namespaces): this file's own helpers

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

void SetPinnedMemoryLimit(uint64_t bytes) { Budget().limit = bytes; }

PinnedMemoryStats GetPinnedMemoryStats() {
  if (CudaDeviceCount() == 0) return {};  // nothing is pinned without a device
  return {Budget().limit.load(), Budget().used.load(), Budget().fallbacks.load()};
}

std::unique_ptr<HostAllocator> MakePinnedAllocator() {
  if (CudaDeviceCount() == 0) return nullptr;
  return std::make_unique<PinnedAllocator>();
}

}  // namespace infernode
