#include "memory/system_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace infernode {

bool IsValidSharedMemoryKey(const std::string& key) {
  if (key.size() < 2 || key.size() > 251 || key[0] != '/') return false;
  const std::string name = key.substr(1);
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

Status SystemSharedMemory::Map(const std::string& key, uint64_t offset, uint64_t byte_size,
                               std::unique_ptr<SystemSharedMemory>* out) {
  if (!IsValidSharedMemoryKey(key)) {
    return InvalidArg("invalid shared memory key '" + key + "': expected '/name' without further '/'");
  }
  if (byte_size == 0) return InvalidArg("shared memory region '" + key + "' must have a non-zero byte_size");
  if (offset > UINT64_MAX - byte_size) return InvalidArg("shared memory offset + byte_size overflows for key '" + key + "'");
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return InvalidArg("unable to open shared memory region '" + key + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArg("shared memory region '" + key + "' is not a regular shared memory object");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset + byte_size > size) {
    close(fd);
    return InvalidArg("shared memory region '" + key + "' holds " + std::to_string(size) + " bytes, less than offset " +
                      std::to_string(offset) + " + byte_size " + std::to_string(byte_size));
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t aligned = offset - offset % page;
  const uint64_t mapped = byte_size + (offset - aligned);
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(aligned));
  const int map_errno = errno;
  close(fd);  // the mapping keeps the object alive
  if (base == MAP_FAILED) {
    return InvalidArg("unable to map shared memory region '" + key + "': " + std::strerror(map_errno));
  }
  out->reset(new SystemSharedMemory(base, mapped, static_cast<uint8_t*>(base) + (offset - aligned), byte_size));
  return Status::Success();
}

SystemSharedMemory::~SystemSharedMemory() { munmap(base_, mapped_); }

}  // namespace infernode
