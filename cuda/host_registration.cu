// HostRegistration on the CUDA runtime (cpp/memory/host_registration.h).
#include <cuda_runtime.h>

#include "memory/device_stream.h"
#include "memory/host_registration.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace host_registration_internal {

// Already page-locked memory (a pinned pool block, a registration of someone else's): nothing
// to undo. The stream is not waited for: whoever owns the memory outlives the batch.
class AlreadyPinned final : public HostRegistration {};

class Registered final : public HostRegistration {
 public:
  Registered(void* ptr, DeviceStream* stream) : ptr_(ptr), stream_(stream) {}
  ~Registered() override {
    stream_->Synchronize();  // the copies reading the pages finish before they are unlocked
    if (cudaHostUnregister(ptr_) != cudaSuccess) cudaGetLastError();
  }

 private:
  void* ptr_;
  DeviceStream* stream_;
};

}  // namespace host_registration_internal
using namespace host_registration_internal;  // NOLINT(build/namespaces): this file's own helpers

std::unique_ptr<HostRegistration> HostRegistration::Make(const void* ptr, size_t bytes, DeviceStream* stream) {
  if (ptr == nullptr || bytes == 0 || cudaSetDevice(stream->DeviceId()) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) == cudaSuccess && attributes.type == cudaMemoryTypeHost) {
    return std::make_unique<AlreadyPinned>();
  }
  cudaGetLastError();
  void* pages = const_cast<void*>(ptr);
  if (cudaHostRegister(pages, bytes, cudaHostRegisterPortable) != cudaSuccess) {
    cudaGetLastError();  // e.g. pages shared with another registration: staged instead
    return nullptr;
  }
  return std::make_unique<Registered>(pages, stream);
}

}  // namespace infernode
