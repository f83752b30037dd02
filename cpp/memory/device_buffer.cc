// DeviceBuffer's ownership moves, shared by the CUDA and CPU builds (device_stream.h).
#include <utility>

#include "memory/device_stream.h"

namespace infernode {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    stream_ = std::exchange(other.stream_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Release(); }

void DeviceBuffer::Release() {
  if (ptr_ != nullptr && stream_ != nullptr) stream_->Free(ptr_);
  ptr_ = nullptr;
  stream_ = nullptr;
  size_ = 0;
}

DeviceBuffer DeviceStream::MakeBuffer(DeviceStream* stream, void* ptr, size_t size) {
  DeviceBuffer buffer;
  buffer.stream_ = stream;
  buffer.ptr_ = ptr;
  buffer.size_ = size;
  return buffer;
}

}  // namespace infernode
