// A client's POSIX shared-memory region (Triton's system shared-memory extension). The region
// is NOT mapped: this object keeps the shm_open file descriptor and copies through it, pread()
// for inputs and pwrite() for outputs. A client can shrink its object (ftruncate) at any time;
// touching a mapping past the object's new end raises SIGBUS and kills the server, while a
// pread past the end only comes back short. So every Read/Write fstat()s the object first and
// answers INVALID_ARG when it no longer covers the range, and a truncation that lands between
// that fstat and the copy is still caught (short read) or harmless (a pwrite grows the client's
// object back). Owned by one JS object; used on the main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/status.h"

namespace infernode {

class SystemSharedMemory {
 public:
  // Opens the shm_open object `key` ("/name") for the region `name` (the client's name for it,
  // used in messages): `byte_size` bytes at `offset`. Errors name the key: it does not exist,
  // or is too small for offset + byte_size now.
  static Status Open(const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size,
                     std::unique_ptr<SystemSharedMemory>* out);
  ~SystemSharedMemory();
  SystemSharedMemory(const SystemSharedMemory&) = delete;
  SystemSharedMemory& operator=(const SystemSharedMemory&) = delete;

  uint64_t ByteSize() const { return byte_size_; }

  // OK when offset + size lies within the region (overflow-safe); does not look at the object.
  Status InRegion(uint64_t offset, uint64_t size) const;

  // Copies `size` bytes at `offset` of the region into `dst`. INVALID_ARG when the range is
  // outside the region or the object no longer holds it (it shrank since registration).
  Status Read(uint64_t offset, uint64_t size, uint8_t* dst) const;
  // Copies `size` bytes from `src` to `offset` of the region; same errors as Read.
  Status Write(uint64_t offset, const uint8_t* src, uint64_t size) const;

 private:
  SystemSharedMemory(int fd, std::string name, std::string key, uint64_t offset, uint64_t byte_size)
      : fd_(fd), name_(std::move(name)), key_(std::move(key)), offset_(offset), byte_size_(byte_size) {}

  // InRegion, and the object is at least large enough for the range right now (fstat).
  Status CheckRange(uint64_t offset, uint64_t size) const;
  Status Shrunk(uint64_t needed, uint64_t current) const;

  int fd_;
  std::string name_;
  std::string key_;
  uint64_t offset_;     // of the region within the object
  uint64_t byte_size_;  // of the region
};

// True when `key` is a plain shm_open name: one leading '/', then 1..250 characters that are
// not '/', and not "." or "..".
bool IsValidSharedMemoryKey(const std::string& key);

}  // namespace infernode
