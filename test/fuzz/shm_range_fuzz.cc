// libFuzzer target: the offset/byte_size checks of system shared-memory registration
// (memory/system_shared_memory.h), against a real shm object of known size. There is no pure
// range-check function to call (the check lives inside SystemSharedMemory::Map), so the target
// drives Map itself: it must accept exactly the ranges with 0 < byte_size and
// offset + byte_size <= the object's size (no wrap-around), and the mapping it returns must cover
// the whole range. Keys are fuzzed through IsValidSharedMemoryKey as well.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "memory/system_shared_memory.h"

using namespace infernode;

namespace {

std::string g_key;            // this process's shm object
uint64_t g_size = 0;          // its size: a few pages and a ragged tail

void Unlink() { shm_unlink(g_key.c_str()); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_key = "/infernode-fuzz-" + std::to_string(getpid());
  g_size = 3 * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + 100;
  const int fd = shm_open(g_key.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(g_size)) != 0) std::abort();
  close(fd);
  std::atexit(Unlink);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    const std::string key = in.ConsumeRandomLengthString(300);
    const bool valid = IsValidSharedMemoryKey(key);
    if (valid && (key.size() < 2 || key.size() > 251 || key[0] != '/' || key.find('/', 1) != std::string::npos)) std::abort();
    return 0;
  }
  // Offsets and sizes near the object's edges, and anything at all.
  auto take = [&in]() -> uint64_t {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: return in.ConsumeIntegralInRange<uint64_t>(0, g_size + 8);
      case 1: return UINT64_MAX - in.ConsumeIntegralInRange<uint64_t>(0, g_size + 8);
      default: return in.ConsumeIntegral<uint64_t>();
    }
  };
  const uint64_t offset = take();
  const uint64_t byte_size = take();
  std::unique_ptr<SystemSharedMemory> region;
  const bool mapped = SystemSharedMemory::Map(g_key, offset, byte_size, &region).IsOk();
  const bool fits = byte_size > 0 && offset <= g_size && byte_size <= g_size - offset;
  if (mapped != fits) std::abort();
  if (mapped) {
    if (region->ByteSize() != byte_size) std::abort();
    region->Data()[0] ^= 1;              // first and last byte are mapped read-write
    region->Data()[byte_size - 1] ^= 1;
  }
  return 0;
}
