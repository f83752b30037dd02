// Host memory for batch buffers. The pool asks an allocator for blocks; the pinned allocator
// (cuda/pinned_allocator.cu) is chosen at run time when a CUDA device exists, the aligned one
// otherwise, so the same binary runs with and without a GPU.
#pragma once

#include <cstddef>
#include <memory>

namespace infernode {

class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  // nullptr on failure.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
  virtual const char* Name() const = 0;
};

// 64-byte aligned pageable memory.
std::unique_ptr<HostAllocator> MakeAlignedAllocator();

// Pinned memory when a CUDA device exists, otherwise the aligned allocator.
std::unique_ptr<HostAllocator> MakeDefaultHostAllocator();

}  // namespace infernode
