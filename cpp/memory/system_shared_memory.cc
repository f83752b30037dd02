#include "memory/system_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace infernode {

namespace {

// pread/pwrite take off_t: a position beyond it cannot be addressed.
constexpr uint64_t kMaxPosition = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

// The object's current size, or -1 (errno set).
int64_t CurrentSize(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

bool IsValidSharedMemoryKey(const std::string& key) {
  if (key.size() < 2 || key.size() > 251 || key[0] != '/') return false;
  const std::string name = key.substr(1);
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

Status SystemSharedMemory::Open(const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size,
                                std::unique_ptr<SystemSharedMemory>* out) {
  if (!IsValidSharedMemoryKey(key)) {
    return InvalidArg("invalid shared memory key '" + key + "': expected '/name' without further '/'");
  }
  // The key is opened before the sizes are judged, as Triton does: a missing key is INTERNAL
  // "Unable to open shared memory region" whatever the sizes (its L0_grpc aio test sends byte_size 0).
  const int fd = shm_open(key.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    // Triton's status and words (INTERNAL, "Unable to open shared memory region: '<key>'"), then why.
    return Internal("Unable to open shared memory region: '" + key + "' (" + std::strerror(errno) + ")");
  }
  // A range outside the object is refused first, with Triton's words (CheckSharedMemoryRegionSize:
  // its QA matches "failed to register shared memory region.*invalid args"), then the numbers.
  const std::string out_of_bounds = "failed to register shared memory region '" + name + "': invalid args: ";
  if (offset > kMaxPosition || byte_size > kMaxPosition - offset) {
    close(fd);
    return InvalidArg(out_of_bounds + "offset + byte_size overflows for key '" + key + "'");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArg("shared memory region '" + key + "' is not a regular shared memory object");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset + byte_size > size) {
    close(fd);
    return InvalidArg(out_of_bounds + "shared memory object '" + key + "' holds " + std::to_string(size) +
                      " bytes, less than offset " + std::to_string(offset) + " + byte_size " +
                      std::to_string(byte_size));
  }
  if (byte_size == 0) {
    close(fd);
    return InvalidArg("shared memory region '" + key + "' must have a non-zero byte_size");
  }
  out->reset(new SystemSharedMemory(fd, name, key, offset, byte_size));
  return Status::Success();
}

SystemSharedMemory::~SystemSharedMemory() { close(fd_); }

Status SystemSharedMemory::Shrunk(uint64_t needed, uint64_t current) const {
  return InvalidArg("shared memory region '" + name_ + "' (key '" + key_ + "') needs " + std::to_string(needed) +
                    " bytes of its shared memory object, but the object now holds " + std::to_string(current) +
                    " bytes: it shrank after the region was registered; unregister the region, restore the "
                    "object's size and register it again");
}

Status SystemSharedMemory::InRegion(uint64_t offset, uint64_t size) const {
  if (offset > byte_size_ || size > byte_size_ - offset) {
    return InvalidArg("shared memory offset " + std::to_string(offset) + " + byte size " + std::to_string(size) +
                      " exceeds the " + std::to_string(byte_size_) + " bytes of region '" + name_ + "'");
  }
  return Status::Success();
}

Status SystemSharedMemory::CheckRange(uint64_t offset, uint64_t size) const {
  RETURN_IF_ERROR(InRegion(offset, size));
  const int64_t current = CurrentSize(fd_);
  if (current < 0) {
    return InvalidArg("unable to inspect shared memory region '" + name_ + "' (key '" + key_ +
                      "'): " + std::strerror(errno));
  }
  const uint64_t needed = offset_ + offset + size;  // <= offset_ + byte_size_, which Open bounded
  if (static_cast<uint64_t>(current) < needed) return Shrunk(needed, static_cast<uint64_t>(current));
  return Status::Success();
}

Status SystemSharedMemory::Read(uint64_t offset, uint64_t size, uint8_t* dst) const {
  RETURN_IF_ERROR(CheckRange(offset, size));
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd_, dst + done, size - done, static_cast<off_t>(offset_ + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return InvalidArg("unable to read shared memory region '" + name_ + "' (key '" + key_ +
                        "'): " + std::strerror(errno));
    }
    // End of file: the client truncated the object after CheckRange's fstat.
    if (n == 0) return Shrunk(offset_ + offset + size, static_cast<uint64_t>(std::max<int64_t>(CurrentSize(fd_), 0)));
    done += static_cast<uint64_t>(n);
  }
  return Status::Success();
}

Status SystemSharedMemory::Write(uint64_t offset, const uint8_t* src, uint64_t size) const {
  RETURN_IF_ERROR(CheckRange(offset, size));
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd_, src + done, size - done, static_cast<off_t>(offset_ + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return InvalidArg("unable to write shared memory region '" + name_ + "' (key '" + key_ +
                        "'): " + (n < 0 ? std::strerror(errno) : "no progress"));
    }
    done += static_cast<uint64_t>(n);
  }
  return Status::Success();
}

}  // namespace infernode
