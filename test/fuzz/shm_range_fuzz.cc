// libFuzzer target: the offset/byte_size checks of system shared memory
// (memory/system_shared_memory.h), against a real shm object of known size. Open must accept
// exactly the regions with 0 < byte_size and offset + byte_size <= the object's size (no
// wrap-around); within an open region, InRegion/Read/Write must accept exactly the ranges that
// stay inside it. Keys are fuzzed through IsValidSharedMemoryKey as well.
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

std::string g_key;    // this process's shm object
uint64_t g_size = 0;  // its size: a few pages and a ragged tail

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
    if (valid && (key.size() < 2 || key.size() > 251 || key[0] != '/' || key.find('/', 1) != std::string::npos))
      std::abort();
    return 0;
  }
  // Offsets and sizes near the object's edges, and anything at all.
  auto take = [&in]() -> uint64_t {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0:
        return in.ConsumeIntegralInRange<uint64_t>(0, g_size + 8);
      case 1:
        return UINT64_MAX - in.ConsumeIntegralInRange<uint64_t>(0, g_size + 8);
      default:
        return in.ConsumeIntegral<uint64_t>();
    }
  };
  const uint64_t offset = take();
  const uint64_t byte_size = take();
  std::unique_ptr<SystemSharedMemory> region;
  const bool opened = SystemSharedMemory::Open("fuzz", g_key, offset, byte_size, &region).IsOk();
  const bool fits = byte_size > 0 && offset <= g_size && byte_size <= g_size - offset;
  if (opened != fits) std::abort();
  if (!opened) return 0;
  if (region->ByteSize() != byte_size) std::abort();
  // An access inside the region: accepted exactly when offset + size stays within it, and a
  // read or write of an accepted range copies through the object without touching memory
  // outside `buffer`.
  const uint64_t at = take();
  const uint64_t length = in.ConsumeIntegralInRange<uint64_t>(0, 2 * g_size);
  const bool inside = at <= byte_size && length <= byte_size - at;
  if (region->InRegion(at, length).IsOk() != inside) std::abort();
  std::unique_ptr<uint8_t[]> buffer(new uint8_t[length + 1]);
  if (region->Read(at, length, buffer.get()).IsOk() != inside) std::abort();
  if (inside && !region->Write(at, buffer.get(), length).IsOk()) std::abort();
  return 0;
}
