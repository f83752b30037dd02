// Host-to-device copy bandwidth with CUDA events (cpp/memory/copy_bandwidth.h). The pinned
// source is a block of a BufferPool with the pinned allocator, as the server's batch buffers
// are; the pageable one is malloc'ed and touched first, so page faults are not timed.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "memory/buffer_pool.h"
#include "memory/copy_bandwidth.h"
#include "memory/cuda_host.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace copy_bandwidth_internal {

Status CudaFailure(const std::string& what, cudaError_t err) {
  cudaGetLastError();  // not left for unrelated callers to find
  return Unavailable(what + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

// The device-side resources of one measurement, released in reverse order on every path.
struct DeviceResources {
  int previous_device = -1;
  void* destination = nullptr;
  cudaStream_t stream = nullptr;
  cudaStream_t second = nullptr;  // streams == 2 only
  cudaEvent_t fork = nullptr;     // stream → second, before each split copy
  cudaEvent_t join = nullptr;     // second → stream, after it
  std::vector<cudaEvent_t> events;

  ~DeviceResources() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (join != nullptr) cudaEventDestroy(join);
    if (fork != nullptr) cudaEventDestroy(fork);
    if (second != nullptr) cudaStreamDestroy(second);
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (destination != nullptr) cudaFree(destination);
    if (previous_device >= 0) cudaSetDevice(previous_device);
    cudaGetLastError();
  }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

Status CheckRequest(const CopyBandwidthRequest& r, int devices) {
  if (r.bytes == 0 || r.bytes > kMaxCopyBandwidthBytes) {
    return InvalidArg("copy bandwidth: bytes must be between 1 and " + std::to_string(kMaxCopyBandwidthBytes) +
                      ", got " + std::to_string(r.bytes));
  }
  if (r.iterations == 0 || r.iterations > kMaxCopyBandwidthIterations) {
    return InvalidArg("copy bandwidth: iterations must be between 1 and " +
                      std::to_string(kMaxCopyBandwidthIterations) + ", got " + std::to_string(r.iterations));
  }
  if (r.streams != 1 && r.streams != 2) {
    return InvalidArg("copy bandwidth: streams must be 1 or 2, got " + std::to_string(r.streams));
  }
  if (r.streams == 2 && r.caller != CallerPath::kNone) {
    return InvalidArg("copy bandwidth: a caller buffer's path is measured on one stream; leave streams at 1");
  }
  if (devices == 0) return Unavailable("host-to-device copy bandwidth cannot be measured: no CUDA device was found");
  if (r.device < 0 || r.device >= devices) {
    return InvalidArg("copy bandwidth: invalid CUDA device id " + std::to_string(r.device) + ": " +
                      std::to_string(devices) + " device(s) present");
  }
  return Status::Success();
}

// One timed copy: on `res.stream` alone, or split in halves over it and `res.second`, which
// starts after everything before it on `res.stream` and is joined back before the copy ends.
cudaError_t TimedCopy(const DeviceResources& res, const void* source, size_t bytes) {
  if (res.second == nullptr) {
    return cudaMemcpyAsync(res.destination, source, bytes, cudaMemcpyHostToDevice, res.stream);
  }
  const size_t half = bytes / 2;
  cudaError_t err = cudaEventRecord(res.fork, res.stream);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(res.second, res.fork, 0);
  if (err == cudaSuccess) err = cudaMemcpyAsync(res.destination, source, half, cudaMemcpyHostToDevice, res.stream);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(static_cast<char*>(res.destination) + half, static_cast<const char*>(source) + half,
                          bytes - half, cudaMemcpyHostToDevice, res.second);
  }
  if (err == cudaSuccess) err = cudaEventRecord(res.join, res.second);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(res.stream, res.join, 0);
  return err;
}

double GbPerSecond(uint64_t bytes, double ms) { return ms > 0 ? static_cast<double>(bytes) / 1e9 / (ms / 1e3) : 0; }

// One copy of a caller's pageable buffer by `path`, synchronised: what a request with that
// buffer waits for before its batch can run.
cudaError_t CallerCopy(const DeviceResources& res, CallerPath path, void* caller, void* staging, size_t bytes) {
  if (path == CallerPath::kStaged) {
    std::memcpy(staging, caller, bytes);
    cudaError_t err = cudaMemcpyAsync(res.destination, staging, bytes, cudaMemcpyHostToDevice, res.stream);
    return err == cudaSuccess ? cudaStreamSynchronize(res.stream) : err;
  }
  cudaError_t err = cudaHostRegister(caller, bytes, cudaHostRegisterDefault);
  if (err != cudaSuccess) return err;
  err = cudaMemcpyAsync(res.destination, caller, bytes, cudaMemcpyHostToDevice, res.stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(res.stream);
  const cudaError_t unregistered = cudaHostUnregister(caller);
  return err == cudaSuccess ? unregistered : err;
}

// MeasureCopyBandwidth for request.caller != kNone: host-clock time of each whole CallerCopy.
Status MeasureCallerCopies(const CopyBandwidthRequest& request, DeviceResources& res, CopyBandwidthResult* result) {
  const size_t bytes = static_cast<size_t>(request.bytes);
  std::unique_ptr<HostAllocator> pinned = MakePinnedAllocator();
  if (!pinned) return Unavailable("copy bandwidth: pinned host memory is not available");
  BufferPool pool(std::move(pinned), 0);
  PooledBuffer staging;
  RETURN_IF_ERROR(pool.Acquire(bytes, &staging));
  constexpr size_t kPage = 4096;  // registration pins whole pages: the buffer starts on one
  std::unique_ptr<void, FreeDeleter> caller(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage));
  if (!caller)
    return Unavailable("copy bandwidth: unable to allocate " + std::to_string(bytes) + " bytes of host memory");
  std::memset(caller.get(), 0x5a, bytes);
  cudaError_t err = CallerCopy(res, request.caller, caller.get(), staging.Data(), bytes);  // untimed
  double total_ms = 0;
  double best_ms = 0;
  for (uint32_t i = 0; err == cudaSuccess && i < request.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    err = CallerCopy(res, request.caller, caller.get(), staging.Data(), bytes);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    total_ms += ms;
    if (i == 0 || ms < best_ms) best_ms = ms;
  }
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: caller buffer copies", err);
  result->total_ms = total_ms;
  result->gb_per_second = GbPerSecond(request.bytes * request.iterations, total_ms);
  result->best_gb_per_second = GbPerSecond(request.bytes, best_ms);
  result->source = request.caller == CallerPath::kStaged ? "staged-through-pool" : "registered-per-copy";
  return Status::Success();
}

// The device side shared by every mode: the device selected, `bytes` of device memory, a stream.
Status OpenDevice(const CopyBandwidthRequest& request, DeviceResources& res, CopyBandwidthResult* result) {
  if (cudaGetDevice(&res.previous_device) != cudaSuccess) res.previous_device = -1;
  cudaError_t err = cudaSetDevice(request.device);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: cudaSetDevice", err);
  cudaDeviceProp props{};
  err = cudaGetDeviceProperties(&props, request.device);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: cudaGetDeviceProperties", err);
  result->device_name = props.name;
  err = cudaMalloc(&res.destination, request.bytes);
  if (err != cudaSuccess) {
    return CudaFailure("copy bandwidth: cudaMalloc of " + std::to_string(request.bytes) + " bytes", err);
  }
  err = cudaStreamCreateWithFlags(&res.stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: cudaStreamCreate", err);
  if (request.streams == 2) {
    err = cudaStreamCreateWithFlags(&res.second, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&res.fork, cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&res.join, cudaEventDisableTiming);
    if (err != cudaSuccess) return CudaFailure("copy bandwidth: the second stream and its events", err);
  }
  return Status::Success();
}

// The copies alone from `source`, back to back, an event between each two (event i+1 - event i
// is copy i), after one untimed copy (first-touch costs: the pinned mapping, staging buffers).
Status TimeCopies(const CopyBandwidthRequest& request, DeviceResources& res, const void* source,
                  CopyBandwidthResult* result) {
  const size_t bytes = static_cast<size_t>(request.bytes);
  res.events.resize(request.iterations + 1, nullptr);
  for (cudaEvent_t& e : res.events) {
    const cudaError_t created = cudaEventCreate(&e);
    if (created != cudaSuccess) return CudaFailure("copy bandwidth: cudaEventCreate", created);
  }
  cudaError_t err = TimedCopy(res, source, bytes);
  if (err == cudaSuccess) err = cudaStreamSynchronize(res.stream);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: warm-up copy", err);
  err = cudaEventRecord(res.events[0], res.stream);
  for (uint32_t i = 0; err == cudaSuccess && i < request.iterations; ++i) {
    err = TimedCopy(res, source, bytes);
    if (err == cudaSuccess) err = cudaEventRecord(res.events[i + 1], res.stream);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(res.stream);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: timed copies", err);
  float total_ms = 0;
  float best_ms = 0;
  for (uint32_t i = 0; i < request.iterations; ++i) {
    float ms = 0;
    err = cudaEventElapsedTime(&ms, res.events[i], res.events[i + 1]);
    if (err != cudaSuccess) return CudaFailure("copy bandwidth: cudaEventElapsedTime", err);
    if (i == 0 || ms < best_ms) best_ms = ms;
  }
  err = cudaEventElapsedTime(&total_ms, res.events[0], res.events[request.iterations]);
  if (err != cudaSuccess) return CudaFailure("copy bandwidth: cudaEventElapsedTime", err);
  result->total_ms = total_ms;
  result->gb_per_second = GbPerSecond(request.bytes * request.iterations, total_ms);
  result->best_gb_per_second = GbPerSecond(request.bytes, best_ms);
  return Status::Success();
}

}  // namespace copy_bandwidth_internal
using namespace copy_bandwidth_internal;  // NOLINT(build/namespaces): this file's own helpers

Status MeasureCopyBandwidth(const CopyBandwidthRequest& request, CopyBandwidthResult* result) {
  RETURN_IF_ERROR(CheckRequest(request, CudaDeviceCount()));
  DeviceResources res;
  RETURN_IF_ERROR(OpenDevice(request, res, result));
  if (request.caller != CallerPath::kNone) return MeasureCallerCopies(request, res, result);

  // The source, filled so the copies move real data.
  const size_t bytes = static_cast<size_t>(request.bytes);
  std::unique_ptr<BufferPool> pool;
  PooledBuffer block;
  std::unique_ptr<void, FreeDeleter> pageable;
  const void* source = nullptr;
  if (request.pinned) {
    std::unique_ptr<HostAllocator> pinned = MakePinnedAllocator();
    if (!pinned) return Unavailable("copy bandwidth: pinned host memory is not available");
    pool = std::make_unique<BufferPool>(std::move(pinned), 0);
    RETURN_IF_ERROR(pool->Acquire(bytes, &block));
    std::memset(block.Data(), 0x5a, bytes);
    source = block.Data();
  } else {
    pageable.reset(std::malloc(bytes));
    if (!pageable) {
      return Unavailable("copy bandwidth: unable to allocate " + std::to_string(bytes) + " bytes of host memory");
    }
    std::memset(pageable.get(), 0x5a, bytes);
    source = pageable.get();
  }
  RETURN_IF_ERROR(TimeCopies(request, res, source, result));
  result->source = request.pinned ? "pinned-pool" : "pageable";
  return Status::Success();
}

}  // namespace infernode
