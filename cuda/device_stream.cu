// DeviceStream on the CUDA runtime (cpp/memory/device_stream.h). Every call first selects the
// stream's device on the calling thread (the instance thread), which costs nanoseconds and keeps
// instances on different GPUs from depending on a thread's current device.
#include <cuda_runtime.h>

#include <string>

#include "memory/cuda_host.h"
#include "memory/device_stream.h"
#include "memory/half_cast.h"
#include "memory/span_copy.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace device_stream_internal {

Status CudaStatus(const char* what, cudaError_t err) {
  if (err == cudaSuccess) return Status::Success();
  cudaGetLastError();  // clear a non-sticky error so later calls are not confused
  return Internal(std::string(what) + ": " + cudaGetErrorString(err));
}

class CudaDeviceStream final : public DeviceStream {
 public:
  CudaDeviceStream(int device, cudaStream_t stream, cudaEvent_t (&events)[kDeviceMarks])
      : device_(device), stream_(stream) {
    for (int i = 0; i < kDeviceMarks; ++i) events_[i] = events[i];
  }
  ~CudaDeviceStream() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);  // stream-ordered frees and copies finish before the stream goes
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaStreamDestroy(stream_);
  }

  void* Handle() const override { return stream_; }
  int DeviceId() const override { return device_; }

  Status Allocate(size_t bytes, DeviceBuffer* out) override {
    void* ptr = nullptr;
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaMallocAsync(&ptr, bytes == 0 ? 1 : bytes, stream_);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return Unavailable("cannot allocate " + std::to_string(bytes) + " bytes on CUDA device " +
                         std::to_string(device_) + ": " + cudaGetErrorString(err));
    }
    *out = MakeBuffer(this, ptr, bytes);
    return Status::Success();
  }

  Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_);
    return CudaStatus("copying inputs to the GPU", err);
  }

  Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) override {
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_);
    return CudaStatus("copying outputs from the GPU", err);
  }

  Status Cast(void* dst, DataType dst_type, const void* src, DataType src_type, size_t count) override {
    RETURN_IF_ERROR(CudaStatus("selecting the CUDA device", cudaSetDevice(device_)));
    return LaunchHalfCast(stream_, dst, dst_type, src, src_type, count);
  }

  Status CopySpans(const DeviceSpan* spans, size_t count) override {
    if (count == 0) return Status::Success();
    RETURN_IF_ERROR(CudaStatus("selecting the CUDA device", cudaSetDevice(device_)));
    return LaunchSpanCopy(stream_, spans, count);
  }

  Status Record(DeviceMark mark) override {
    const int i = static_cast<int>(mark);
    recorded_[i] = cudaEventRecord(events_[i], stream_) == cudaSuccess;
    if (!recorded_[i]) cudaGetLastError();
    return Status::Success();  // a missing mark only loses a timing
  }

  Status Synchronize() override {
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
    return CudaStatus("waiting for the GPU", err);
  }

  uint64_t ElapsedNs(DeviceMark from, DeviceMark to) override {
    const int a = static_cast<int>(from);
    const int b = static_cast<int>(to);
    float ms = 0;
    if (!recorded_[a] || !recorded_[b] || cudaEventElapsedTime(&ms, events_[a], events_[b]) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return ms <= 0 ? 0 : static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  }

 protected:
  void Free(void* ptr) override {
    cudaSetDevice(device_);
    if (cudaFreeAsync(ptr, stream_) != cudaSuccess) cudaGetLastError();
  }

 private:
  int device_;
  cudaStream_t stream_;
  cudaEvent_t events_[kDeviceMarks];
  bool recorded_[kDeviceMarks] = {};
};

// Lets the device's default pool keep freed blocks (instead of returning them to the driver at
// every synchronisation), so batch buffers are reused rather than reallocated.
void KeepPoolBlocks(int device) {
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  uint64_t threshold = UINT64_MAX;
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) != cudaSuccess) cudaGetLastError();
}

}  // namespace device_stream_internal
using namespace device_stream_internal;  // NOLINT(build/namespaces): this file's own helpers

Status DeviceStream::Create(int device_id, std::unique_ptr<DeviceStream>* out) {
  const int devices = CudaDeviceCount();
  if (device_id < 0 || device_id >= devices) {
    return Unavailable("CUDA device " + std::to_string(device_id) + " is not available (" + std::to_string(devices) +
                       " device(s) present)");
  }
  RETURN_IF_ERROR(CudaStatus("selecting the CUDA device", cudaSetDevice(device_id)));
  KeepPoolBlocks(device_id);
  LoadHalfCastKernels();  // now, not at a batch's first launch (see half_cast.h)
  LoadSpanCopyKernel();
  cudaStream_t stream = nullptr;
  RETURN_IF_ERROR(CudaStatus("creating a CUDA stream", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  cudaEvent_t events[kDeviceMarks] = {};
  for (int i = 0; i < kDeviceMarks; ++i) {
    const cudaError_t err = cudaEventCreate(&events[i]);
    if (err != cudaSuccess) {
      for (int j = 0; j < i; ++j) cudaEventDestroy(events[j]);
      cudaStreamDestroy(stream);
      return CudaStatus("creating CUDA events", err);
    }
  }
  out->reset(new CudaDeviceStream(device_id, stream, events));
  return Status::Success();
}

}  // namespace infernode
