// BufferPool: size classes, reuse, the cached-bytes cap, buffers outliving the pool, moves.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "harness.h"
#include "memory/buffer_pool.h"

using namespace infernode;

namespace {

// What the counting allocator saw; shared so it can be read after the pool is gone.
struct AllocCounts {
  std::mutex mu;
  int allocations = 0;
  int frees = 0;
  size_t live_bytes = 0;
  bool fail = false;  // Allocate returns nullptr
};

class CountingAllocator final : public HostAllocator {
 public:
  explicit CountingAllocator(std::shared_ptr<AllocCounts> counts) : counts_(std::move(counts)) {}
  void* Allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(counts_->mu);
    if (counts_->fail) return nullptr;
    ++counts_->allocations;
    counts_->live_bytes += bytes;
    return std::malloc(bytes);
  }
  void Free(void* ptr, size_t bytes) override {
    std::lock_guard<std::mutex> lock(counts_->mu);
    ++counts_->frees;
    counts_->live_bytes -= bytes;
    std::free(ptr);
  }
  const char* Name() const override { return "counting"; }

 private:
  std::shared_ptr<AllocCounts> counts_;
};

struct TestPool {
  std::shared_ptr<AllocCounts> counts = std::make_shared<AllocCounts>();
  std::unique_ptr<BufferPool> pool;
  explicit TestPool(size_t max_cached_bytes = 1 << 20)
      : pool(std::make_unique<BufferPool>(std::make_unique<CountingAllocator>(counts), max_cached_bytes)) {}
};

PooledBuffer Acquire(BufferPool* pool, size_t bytes) {
  PooledBuffer buffer;
  const Status status = pool->Acquire(bytes, &buffer);
  EXPECT_TRUE(status.IsOk());
  return buffer;
}

}  // namespace

TEST(PoolClassCapacityRoundsUpToAPowerOfTwoFrom256) {
  EXPECT_EQ(BufferPool::ClassCapacity(0), 256u);
  EXPECT_EQ(BufferPool::ClassCapacity(1), 256u);
  EXPECT_EQ(BufferPool::ClassCapacity(256), 256u);
  EXPECT_EQ(BufferPool::ClassCapacity(257), 512u);
  EXPECT_EQ(BufferPool::ClassCapacity(1000), 1024u);
  EXPECT_EQ(BufferPool::ClassCapacity(4096), 4096u);
  EXPECT_EQ(BufferPool::ClassCapacity((size_t{1} << 30) + 1), size_t{1} << 31);
}

TEST(PoolAcquireGivesTheSizeAskedInAClassBlock) {
  TestPool t;
  PooledBuffer buffer = Acquire(t.pool.get(), 300);
  EXPECT_TRUE(!buffer.Empty());
  EXPECT_EQ(buffer.Size(), 300u);
  EXPECT_EQ(buffer.Capacity(), 512u);
  std::memset(buffer.Data(), 0xab, buffer.Capacity());  // the whole block is usable (ASan checks)
  const PoolStats stats = t.pool->Stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.in_use_bytes, 512u);
  EXPECT_EQ(stats.cached_bytes, 0u);
  EXPECT_EQ(std::string(t.pool->AllocatorName()), std::string("counting"));
}

TEST(PoolReusesAReleasedBlockOfTheSameClass) {
  TestPool t;
  void* first = nullptr;
  {
    PooledBuffer buffer = Acquire(t.pool.get(), 300);
    first = buffer.Data();
  }
  EXPECT_EQ(t.pool->Stats().cached_bytes, 512u);
  EXPECT_EQ(t.pool->Stats().in_use_bytes, 0u);
  PooledBuffer again = Acquire(t.pool.get(), 400);  // same 512-byte class
  EXPECT_TRUE(static_cast<void*>(again.Data()) == first);
  EXPECT_EQ(again.Size(), 400u);
  const PoolStats stats = t.pool->Stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.cached_bytes, 0u);
  EXPECT_EQ(stats.in_use_bytes, 512u);
  EXPECT_EQ(t.counts->allocations, 1);
}

TEST(PoolDoesNotServeFromAnotherClass) {
  TestPool t;
  { PooledBuffer small = Acquire(t.pool.get(), 300); }
  PooledBuffer large = Acquire(t.pool.get(), 600);
  EXPECT_EQ(large.Capacity(), 1024u);
  EXPECT_EQ(t.pool->Stats().misses, 2u);
  EXPECT_EQ(t.pool->Stats().cached_bytes, 512u);
  EXPECT_EQ(t.counts->allocations, 2);
}

TEST(PoolFreesBlocksBeyondTheCachedBytesCap) {
  TestPool t(1024);
  PooledBuffer a = Acquire(t.pool.get(), 1024);
  PooledBuffer b = Acquire(t.pool.get(), 1024);
  a = PooledBuffer();  // cached: 1024 of 1024
  EXPECT_EQ(t.pool->Stats().cached_bytes, 1024u);
  EXPECT_EQ(t.counts->frees, 0);
  b = PooledBuffer();  // over the cap: freed
  EXPECT_EQ(t.pool->Stats().cached_bytes, 1024u);
  EXPECT_EQ(t.pool->Stats().in_use_bytes, 0u);
  EXPECT_EQ(t.counts->frees, 1);
}

TEST(PoolWithZeroCapCachesNothing) {
  TestPool t(0);
  { PooledBuffer buffer = Acquire(t.pool.get(), 10); }
  EXPECT_EQ(t.pool->Stats().cached_bytes, 0u);
  EXPECT_EQ(t.counts->frees, 1);
  { PooledBuffer buffer = Acquire(t.pool.get(), 10); }
  EXPECT_EQ(t.pool->Stats().hits, 0u);
}

TEST(PoolDestructionFreesCachedBlocks) {
  TestPool t;
  { PooledBuffer a = Acquire(t.pool.get(), 100), b = Acquire(t.pool.get(), 5000); }
  EXPECT_EQ(t.counts->frees, 0);
  t.pool.reset();
  EXPECT_EQ(t.counts->frees, 2);
  EXPECT_EQ(t.counts->live_bytes, 0u);
}

TEST(PoolBufferOutlivesThePool) {
  TestPool t;
  PooledBuffer buffer = Acquire(t.pool.get(), 100);
  { PooledBuffer cached = Acquire(t.pool.get(), 100); }
  t.pool.reset();
  EXPECT_EQ(t.counts->frees, 0);  // the pool's state lives while a buffer does
  std::memset(buffer.Data(), 1, buffer.Size());
  buffer = PooledBuffer();
  EXPECT_EQ(t.counts->frees, 2);
  EXPECT_EQ(t.counts->live_bytes, 0u);
}

TEST(PoolBufferMoveConstructionTransfersOwnership) {
  TestPool t;
  PooledBuffer a = Acquire(t.pool.get(), 100);
  uint8_t* data = a.Data();
  PooledBuffer b(std::move(a));
  EXPECT_TRUE(a.Empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(a.Size(), 0u);
  EXPECT_EQ(a.Capacity(), 0u);
  EXPECT_TRUE(b.Data() == data);
  EXPECT_EQ(b.Size(), 100u);
  EXPECT_EQ(b.Capacity(), 256u);
  EXPECT_EQ(t.pool->Stats().in_use_bytes, 256u);
}

TEST(PoolBufferMoveAssignmentReleasesTheOldBlock) {
  TestPool t;
  PooledBuffer a = Acquire(t.pool.get(), 100);
  PooledBuffer b = Acquire(t.pool.get(), 1000);
  uint8_t* data = a.Data();
  b = std::move(a);
  EXPECT_TRUE(a.Empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.Data() == data);
  EXPECT_EQ(b.Capacity(), 256u);
  const PoolStats stats = t.pool->Stats();
  EXPECT_EQ(stats.in_use_bytes, 256u);
  EXPECT_EQ(stats.cached_bytes, 1024u);  // b's old block went back to the pool
}

TEST(PoolDefaultBufferIsEmpty) {
  PooledBuffer buffer;
  EXPECT_TRUE(buffer.Empty());
  EXPECT_TRUE(buffer.Data() == nullptr);
  PooledBuffer other(std::move(buffer));
  EXPECT_TRUE(other.Empty());
}

TEST(PoolAllocationFailureIsUnavailable) {
  TestPool t;
  t.counts->fail = true;
  PooledBuffer buffer;
  const Status status = t.pool->Acquire(100, &buffer);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_TRUE(buffer.Empty());
  EXPECT_EQ(t.pool->Stats().in_use_bytes, 0u);
}

TEST(PoolRefusesSizesBeyondItsLargestClass) {
  TestPool t;
  PooledBuffer buffer;
  const Status status = t.pool->Acquire((size_t{1} << 48) + 1, &buffer);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_TRUE(buffer.Empty());
  EXPECT_EQ(t.counts->allocations, 0);
}

TEST(PoolBuffersReturnFromOtherThreads) {
  TestPool t;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&t, i] {
      for (int n = 0; n < 500; ++n) {
        PooledBuffer buffer;
        if (!t.pool->Acquire(static_cast<size_t>(64 * (1 + (n + i) % 8)), &buffer).IsOk()) return;
        buffer.Data()[0] = static_cast<uint8_t>(n);
        PooledBuffer moved = std::move(buffer);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const PoolStats stats = t.pool->Stats();
  EXPECT_EQ(stats.hits + stats.misses, 2000u);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  t.pool.reset();
  EXPECT_EQ(t.counts->allocations, t.counts->frees);
  EXPECT_EQ(t.counts->live_bytes, 0u);
}

TEST(PoolAlignedAllocatorIs64ByteAligned) {
  std::unique_ptr<HostAllocator> allocator = MakeAlignedAllocator();
  EXPECT_EQ(std::string(allocator->Name()), std::string("aligned"));
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}}) {
    void* ptr = allocator->Allocate(bytes);
    EXPECT_TRUE(ptr != nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 64, 0u);
    allocator->Free(ptr, bytes);
  }
}
