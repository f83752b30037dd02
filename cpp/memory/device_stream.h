// One CUDA stream on one device, owned by a GPU model instance: the batch's inputs are copied
// host-to-device on it, ONNX Runtime computes on it (its user_compute_stream), and outputs are
// copied back on it, so one instance never waits for another's work and nothing synchronises
// the whole device. Device memory comes from CUDA's stream-ordered pool (cudaMallocAsync on this
// stream; freed in stream order), which caches blocks between batches.
// Created on the load worker; afterwards used only from its instance's thread.
// Implemented in cuda/device_stream.cu; the CPU build (device_stream_none.cc) has none, and the
// twins of its kernels (half_cast_none.cc, span_copy_none.cc) answer UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/datatype.h"
#include "core/status.h"

namespace infernode {

class DeviceStream;

// One device-to-device copy of a span: `bytes` bytes from `src` to `dst`, both in memory of the
// stream's device (a CUDA IPC region opened on it counts), any alignment, any size.
struct DeviceSpan {
  const void* src = nullptr;
  void* dst = nullptr;
  uint64_t bytes = 0;
};

// How many spans one launch of the span-copy kernel (cuda/span_copy.cu) takes: its span table is
// a by-value kernel parameter (24 bytes a span), within CUDA's 4 KiB parameter limit.
constexpr size_t kMaxSpansPerLaunch = 128;

// Move-only owner of a block of device memory, returned to the pool in stream order.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* Data() const { return ptr_; }
  size_t Size() const { return size_; }

 private:
  friend class DeviceStream;
  void Release();

  DeviceStream* stream_ = nullptr;  // outlives the buffer (buffers live within one batch)
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// The phases of a batch on the device, measured with CUDA events between marks.
enum class DeviceMark { kStart = 0, kInputsCopied = 1, kComputed = 2, kOutputsCopied = 3 };
constexpr int kDeviceMarks = 4;

class DeviceStream {
 public:
  // A non-blocking stream on `device_id`. UNAVAILABLE without CUDA or without that device.
  static Status Create(int device_id, std::unique_ptr<DeviceStream>* out);
  virtual ~DeviceStream() = default;

  // The cudaStream_t, for ONNX Runtime's user_compute_stream.
  virtual void* Handle() const = 0;
  virtual int DeviceId() const = 0;

  virtual Status Allocate(size_t bytes, DeviceBuffer* out) = 0;
  // Asynchronous on this stream; the host side must stay valid until Synchronize returns.
  virtual Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;
  // Converts `count` elements of device memory between FP32 and FP16 / BF16 on this stream
  // (the kernels of cuda/half_cast.cu, rounding as core/half_float.h does). Asynchronous.
  virtual Status Cast(void* dst, DataType dst_type, const void* src, DataType src_type, size_t count) = 0;
  // Copies every span on this stream, asynchronously: a batch's rows gathered from scattered
  // places into one buffer, or one buffer's rows scattered to several places. One kernel launch
  // per kMaxSpansPerLaunch spans (not one cudaMemcpyAsync per span); spans must not overlap.
  virtual Status CopySpans(const DeviceSpan* spans, size_t count) = 0;
  virtual Status Record(DeviceMark mark) = 0;
  // Waits for this stream alone.
  virtual Status Synchronize() = 0;
  // Nanoseconds between two recorded marks (after Synchronize); 0 when either is missing.
  virtual uint64_t ElapsedNs(DeviceMark from, DeviceMark to) = 0;

 protected:
  friend class DeviceBuffer;
  static DeviceBuffer MakeBuffer(DeviceStream* stream, void* ptr, size_t size);
  virtual void Free(void* ptr) = 0;
};

}  // namespace infernode
