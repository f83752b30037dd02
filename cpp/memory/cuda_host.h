// The CUDA pieces the core needs, behind a plain C++ interface. Implemented in
// cuda/cuda_host.cu when the build has CUDA, and by cpp/memory/cuda_host_none.cc otherwise.
#pragma once

#include <cstdint>
#include <memory>

#include "memory/host_allocator.h"

namespace infernode {

// Number of usable CUDA devices; 0 without a driver, a device, or CUDA in the build.
int CudaDeviceCount();

// True when this binary was built with CUDA.
bool CudaCompiledIn();

// cudaHostAlloc-backed allocator; nullptr when CUDA is unavailable. Its blocks count against a
// process-wide budget; past it, blocks are pageable (counted as fallbacks).
std::unique_ptr<HostAllocator> MakePinnedAllocator();

struct PinnedMemoryStats {
  uint64_t limit_bytes = 0;  // the budget (Triton: nv_pinned_memory_pool_total_bytes)
  uint64_t used_bytes = 0;   // pinned now (nv_pinned_memory_pool_used_bytes)
  uint64_t fallbacks = 0;    // blocks served pageable because the budget was spent
};

// The budget, set once at start-up (--pinned-memory-pool-byte-size); 0 pins nothing.
void SetPinnedMemoryLimit(uint64_t bytes);
PinnedMemoryStats GetPinnedMemoryStats();

}  // namespace infernode
