#include "memory/buffer_pool.h"

#include <mutex>
#include <utility>
#include <vector>

namespace infernode {

namespace {
constexpr size_t kMinClassShift = 8;   // 256 bytes
constexpr size_t kMaxClassShift = 48;  // beyond any real host memory
}  // namespace

// Shared by the pool and its buffers; the mutex guards the free lists and counters.
struct PoolState {
  std::unique_ptr<HostAllocator> allocator;
  size_t max_cached_bytes = 0;
  std::mutex mu;
  std::vector<std::vector<void*>> free_lists = std::vector<std::vector<void*>>(kMaxClassShift + 1);
  PoolStats stats;

  ~PoolState() {
    for (size_t shift = 0; shift < free_lists.size(); ++shift) {
      for (void* ptr : free_lists[shift]) allocator->Free(ptr, size_t{1} << shift);
    }
  }

  void Return(void* ptr, size_t capacity) {
    const size_t shift = ShiftOf(capacity);
    {
      std::lock_guard<std::mutex> lock(mu);
      stats.in_use_bytes -= capacity;
      if (stats.cached_bytes + capacity <= max_cached_bytes) {
        free_lists[shift].push_back(ptr);
        stats.cached_bytes += capacity;
        return;
      }
    }
    allocator->Free(ptr, capacity);
  }

  static size_t ShiftOf(size_t capacity) {
    size_t shift = 0;
    while ((size_t{1} << shift) < capacity) ++shift;
    return shift;
  }
};

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept { *this = std::move(other); }

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::move(other.pool_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

PooledBuffer::~PooledBuffer() { Release(); }

void PooledBuffer::Release() {
  if (ptr_ != nullptr && pool_) pool_->Return(ptr_, capacity_);
  ptr_ = nullptr;
  pool_.reset();
  size_ = capacity_ = 0;
}

BufferPool::BufferPool(std::unique_ptr<HostAllocator> allocator, size_t max_cached_bytes)
    : state_(std::make_shared<PoolState>()) {
  state_->allocator = std::move(allocator);
  state_->max_cached_bytes = max_cached_bytes;
}

BufferPool::~BufferPool() = default;

size_t BufferPool::ClassCapacity(size_t bytes) {
  size_t shift = kMinClassShift;
  while (shift < kMaxClassShift && (size_t{1} << shift) < bytes) ++shift;
  return size_t{1} << shift;
}

Status BufferPool::Acquire(size_t bytes, PooledBuffer* out) {
  if (bytes > (size_t{1} << kMaxClassShift)) {
    return Unavailable("buffer of " + std::to_string(bytes) + " bytes exceeds the pool's limit");
  }
  const size_t capacity = ClassCapacity(bytes);
  const size_t shift = PoolState::ShiftOf(capacity);
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& list = state_->free_lists[shift];
    if (!list.empty()) {
      ptr = list.back();
      list.pop_back();
      state_->stats.cached_bytes -= capacity;
      ++state_->stats.hits;
    } else {
      ++state_->stats.misses;
    }
    state_->stats.in_use_bytes += capacity;
  }
  if (ptr == nullptr) ptr = state_->allocator->Allocate(capacity);
  if (ptr == nullptr) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stats.in_use_bytes -= capacity;
    return Unavailable("out of host memory allocating " + std::to_string(capacity) + " bytes");
  }
  PooledBuffer buffer;
  buffer.pool_ = state_;
  buffer.ptr_ = ptr;
  buffer.size_ = bytes;
  buffer.capacity_ = capacity;
  *out = std::move(buffer);
  return Status::Success();
}

PoolStats BufferPool::Stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

const char* BufferPool::AllocatorName() const { return state_->allocator->Name(); }

}  // namespace infernode
