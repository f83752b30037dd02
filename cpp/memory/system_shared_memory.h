// A client's POSIX shared-memory region (Triton's system shared-memory extension), mapped
// read-write into this process. The mapping lives as long as this object: the JS side holds it
// through an external ArrayBuffer, so a region unregistered while a request still reads it
// stays mapped until that request lets go (Triton's semantics).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace infernode {

class SystemSharedMemory {
 public:
  // Maps `byte_size` bytes at `offset` of the shm_open object `key` ("/name"). Errors name the
  // key: it does not exist, is too small for offset + byte_size, or cannot be mapped.
  static Status Map(const std::string& key, uint64_t offset, uint64_t byte_size,
                    std::unique_ptr<SystemSharedMemory>* out);
  ~SystemSharedMemory();
  SystemSharedMemory(const SystemSharedMemory&) = delete;
  SystemSharedMemory& operator=(const SystemSharedMemory&) = delete;

  uint8_t* Data() const { return data_; }
  uint64_t ByteSize() const { return byte_size_; }

 private:
  SystemSharedMemory(void* base, uint64_t mapped, uint8_t* data, uint64_t byte_size)
      : base_(base), mapped_(mapped), data_(data), byte_size_(byte_size) {}

  void* base_;        // what mmap returned (page aligned)
  uint64_t mapped_;   // bytes mapped from base_
  uint8_t* data_;     // base_ + (offset - page-aligned offset)
  uint64_t byte_size_;
};

// True when `key` is a plain shm_open name: one leading '/', then 1..250 characters that are
// not '/', and not "." or "..".
bool IsValidSharedMemoryKey(const std::string& key);

}  // namespace infernode
