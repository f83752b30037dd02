#include "memory/host_allocator.h"

#include <cstdlib>

#include "memory/cuda_host.h"

namespace infernode {

namespace {

class AlignedAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override {
    const size_t rounded = (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  }
  void Free(void* ptr, size_t) override { std::free(ptr); }
  const char* Name() const override { return "aligned"; }
};

}  // namespace

std::unique_ptr<HostAllocator> MakeAlignedAllocator() { return std::make_unique<AlignedAllocator>(); }

std::unique_ptr<HostAllocator> MakeDefaultHostAllocator() {
  if (CudaDeviceCount() > 0) {
    std::unique_ptr<HostAllocator> pinned = MakePinnedAllocator();
    if (pinned) return pinned;
  }
  return MakeAlignedAllocator();
}

}  // namespace infernode
