// POSIX shared-memory regions: copies at an unaligned offset, bounds, objects that shrink after
// registration (must answer INVALID_ARG, not SIGBUS) and key validation.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "harness.h"
#include "memory/system_shared_memory.h"

using namespace infernode;

namespace {

// Creates a shm object of `size` bytes filled with its byte index; removed on destruction.
struct ScopedShm {
  explicit ScopedShm(const std::string& key, size_t size) : key(key) {
    const int fd = shm_open(key.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd >= 0) {
      std::string bytes(size, '\0');
      for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i % 251);
      if (ftruncate(fd, static_cast<off_t>(size)) != 0 || write(fd, bytes.data(), size) != static_cast<ssize_t>(size)) {
        std::perror("shm setup");
      }
      close(fd);
    }
  }
  ~ScopedShm() { shm_unlink(key.c_str()); }
  std::string key;
};

std::string UniqueKey(const char* what) {
  return "/infernode_test_" + std::string(what) + "_" + std::to_string(getpid());
}

}  // namespace

TEST(SharedMemoryCopiesAtAnUnalignedOffset) {
  ScopedShm shm(UniqueKey("map"), 10000);
  std::unique_ptr<SystemSharedMemory> region;
  EXPECT_TRUE(SystemSharedMemory::Open("r", shm.key, 4099, 100, &region).IsOk());
  if (!region) return;
  EXPECT_EQ(region->ByteSize(), 100u);
  uint8_t byte = 0;
  EXPECT_TRUE(region->Read(0, 1, &byte).IsOk());
  EXPECT_EQ(static_cast<int>(byte), 4099 % 251);
  const uint8_t written = 0xAB;
  EXPECT_TRUE(region->Write(1, &written, 1).IsOk());  // writes reach the object
  std::unique_ptr<SystemSharedMemory> again;
  EXPECT_TRUE(SystemSharedMemory::Open("again", shm.key, 4100, 1, &again).IsOk());
  if (again) EXPECT_TRUE(again->Read(0, 1, &byte).IsOk());
  EXPECT_EQ(static_cast<int>(byte), 0xAB);
  const Status outside = region->Read(99, 2, &byte);
  EXPECT_EQ(outside.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(outside.Message(), "exceeds the 100 bytes of region 'r'");
  EXPECT_CONTAINS(region->Read(UINT64_MAX, 2, &byte).Message(), "exceeds");
  EXPECT_CONTAINS(region->Write(2, &written, UINT64_MAX).Message(), "exceeds");
}

TEST(SharedMemoryRejectsRangesBeyondTheObject) {
  ScopedShm shm(UniqueKey("range"), 4096);
  std::unique_ptr<SystemSharedMemory> region;
  Status s = SystemSharedMemory::Open("r", shm.key, 4000, 97, &region);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "failed to register shared memory region 'r': invalid args: ");  // Triton's words
  EXPECT_CONTAINS(s.Message(), "holds 4096 bytes");
  s = SystemSharedMemory::Open("r", shm.key, UINT64_MAX - 1, 4, &region);
  EXPECT_CONTAINS(s.Message(), "failed to register shared memory region 'r': invalid args: ");
  EXPECT_CONTAINS(s.Message(), "overflows");
  s = SystemSharedMemory::Open("r", shm.key, 0, 0, &region);
  EXPECT_CONTAINS(s.Message(), "non-zero byte_size");
  // Out of bounds before empty, as Triton checks (its QA registers byte_size 0 at offset size + 1).
  s = SystemSharedMemory::Open("r", shm.key, 4097, 0, &region);
  EXPECT_CONTAINS(s.Message(), "failed to register shared memory region 'r': invalid args: ");
  EXPECT_TRUE(region == nullptr);
}

// The client shrinks its object after registration: reads and writes answer INVALID_ARG naming
// the region, the key, the size needed and the object's size (a mapping would have raised SIGBUS).
TEST(SharedMemoryThatShrankIsAnErrorNotACrash) {
  ScopedShm shm(UniqueKey("shrink"), 8192);
  std::unique_ptr<SystemSharedMemory> region;
  EXPECT_TRUE(SystemSharedMemory::Open("input", shm.key, 4096, 4096, &region).IsOk());
  if (!region) return;
  const int fd = shm_open(shm.key.c_str(), O_RDWR, 0);
  EXPECT_TRUE(fd >= 0 && ftruncate(fd, 0) == 0);
  std::string bytes(4096, '\0');
  uint8_t* data = reinterpret_cast<uint8_t*>(&bytes[0]);
  Status s = region->Read(0, 4096, data);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "shared memory region 'input' (key '" + shm.key + "') needs 8192 bytes");
  EXPECT_CONTAINS(s.Message(), "the object now holds 0 bytes");
  s = region->Write(0, data, 16);
  EXPECT_CONTAINS(s.Message(), "needs 4112 bytes");
  // Partly shrunk: the bytes still inside the object are readable, the rest are not.
  EXPECT_TRUE(ftruncate(fd, 6000) == 0);
  EXPECT_TRUE(region->Read(0, 1904, data).IsOk());
  EXPECT_CONTAINS(region->Read(0, 1905, data).Message(), "now holds 6000 bytes");
  // Grown back: usable again.
  EXPECT_TRUE(ftruncate(fd, 8192) == 0);
  EXPECT_TRUE(region->Read(0, 4096, data).IsOk());
  if (fd >= 0) close(fd);
}

TEST(SharedMemoryKeysAreNamesNotPaths) {
  EXPECT_TRUE(IsValidSharedMemoryKey("/input0"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("input0"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/.."));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/../etc/passwd"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/a/b"));
  std::unique_ptr<SystemSharedMemory> region;
  const Status s = SystemSharedMemory::Open("m", "/infernode_missing_region_x", 0, 8, &region);
  EXPECT_EQ(s.Code(), StatusCode::kInternal);  // Triton's status for a key that does not open
  EXPECT_CONTAINS(s.Message(), "Unable to open shared memory region: '/infernode_missing_region_x'");
  EXPECT_CONTAINS(s.Message(), "No such file");
}
