// A pool of host blocks for batch buffers, in power-of-two size classes. Blocks return to the
// pool when their PooledBuffer is destroyed, from any thread. The pool's state is shared with
// its buffers, so a buffer that outlives the BufferPool object still frees correctly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "memory/host_allocator.h"

namespace infernode {

struct PoolState;

struct PoolStats {
  uint64_t hits = 0;          // acquisitions served from a cached block
  uint64_t misses = 0;        // acquisitions that allocated
  uint64_t cached_bytes = 0;  // bytes held in free lists
  uint64_t in_use_bytes = 0;  // capacity of blocks handed out
};

// Move-only owner of one block.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer();

  uint8_t* Data() const { return static_cast<uint8_t*>(ptr_); }
  size_t Size() const { return size_; }
  size_t Capacity() const { return capacity_; }
  bool Empty() const { return ptr_ == nullptr; }

 private:
  friend class BufferPool;
  void Release();

  std::shared_ptr<PoolState> pool_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class BufferPool {
 public:
  // Keeps at most `max_cached_bytes` in free lists; blocks beyond that are freed on return.
  BufferPool(std::unique_ptr<HostAllocator> allocator, size_t max_cached_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A block of at least `bytes`. Fails with UNAVAILABLE when memory cannot be had.
  Status Acquire(size_t bytes, PooledBuffer* out);

  PoolStats Stats() const;
  const char* AllocatorName() const;

  // The size class a request of `bytes` is served from.
  static size_t ClassCapacity(size_t bytes);

 private:
  std::shared_ptr<PoolState> state_;
};

}  // namespace infernode
