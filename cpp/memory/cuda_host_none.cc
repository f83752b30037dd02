// CPU-only twin of cuda/cuda_host.cu, linked when the build has no CUDA (node-gyp build).
#include "memory/cuda_host.h"

namespace infernode {

int CudaDeviceCount() { return 0; }
bool CudaCompiledIn() { return false; }
std::unique_ptr<HostAllocator> MakePinnedAllocator() { return nullptr; }
void SetPinnedMemoryLimit(uint64_t) {}
PinnedMemoryStats GetPinnedMemoryStats() { return {}; }

}  // namespace infernode
