// POSIX shared-memory regions: mapping at an unaligned offset, bounds and key validation.
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

std::string UniqueKey(const char* what) { return "/infernode_test_" + std::string(what) + "_" + std::to_string(getpid()); }

}  // namespace

TEST(SharedMemoryMapsAtAnUnalignedOffset) {
  ScopedShm shm(UniqueKey("map"), 10000);
  std::unique_ptr<SystemSharedMemory> region;
  EXPECT_TRUE(SystemSharedMemory::Map(shm.key, 4099, 100, &region).IsOk());
  if (!region) return;
  EXPECT_EQ(region->ByteSize(), 100u);
  EXPECT_EQ(static_cast<int>(region->Data()[0]), 4099 % 251);
  region->Data()[1] = 0xAB;  // writes reach the object
  std::unique_ptr<SystemSharedMemory> again;
  EXPECT_TRUE(SystemSharedMemory::Map(shm.key, 4100, 1, &again).IsOk());
  if (again) EXPECT_EQ(static_cast<int>(again->Data()[0]), 0xAB);
}

TEST(SharedMemoryRejectsRangesBeyondTheObject) {
  ScopedShm shm(UniqueKey("range"), 4096);
  std::unique_ptr<SystemSharedMemory> region;
  Status s = SystemSharedMemory::Map(shm.key, 4000, 97, &region);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "holds 4096 bytes");
  s = SystemSharedMemory::Map(shm.key, UINT64_MAX - 1, 4, &region);
  EXPECT_CONTAINS(s.Message(), "overflows");
  s = SystemSharedMemory::Map(shm.key, 0, 0, &region);
  EXPECT_CONTAINS(s.Message(), "non-zero byte_size");
  EXPECT_TRUE(region == nullptr);
}

TEST(SharedMemoryKeysAreNamesNotPaths) {
  EXPECT_TRUE(IsValidSharedMemoryKey("/input0"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("input0"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/.."));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/../etc/passwd"));
  EXPECT_TRUE(!IsValidSharedMemoryKey("/a/b"));
  std::unique_ptr<SystemSharedMemory> region;
  const Status s = SystemSharedMemory::Map("/infernode_missing_region_x", 0, 8, &region);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "No such file");
}
