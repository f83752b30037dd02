// The CUDA pieces the core needs, behind a plain C++ interface. Implemented in
// cuda/cuda_host.cu when the build has CUDA, and by cpp/memory/cuda_host_none.cc otherwise.
#pragma once

#include <memory>

#include "memory/host_allocator.h"

namespace infernode {

// Number of usable CUDA devices; 0 without a driver, a device, or CUDA in the build.
int CudaDeviceCount();

// True when this binary was built with CUDA.
bool CudaCompiledIn();

// cudaHostAlloc-backed allocator; nullptr when CUDA is unavailable.
std::unique_ptr<HostAllocator> MakePinnedAllocator();

}  // namespace infernode
