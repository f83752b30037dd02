// A caller's large host buffer made readable by a GPU's copy engines for one batch, so it is
// copied to the device straight from where it is instead of through a pinned pool block first.
// Measured on an H200 (bench/results/gpu.md, "Large caller buffers"): cudaHostRegister, one copy
// and cudaHostUnregister beat a memcpy into a pinned block plus its copy from 4 MiB up (12.0
// against 9.5 GB/s; 14.6 against 5.9 at 64 MiB) and lose below (6.4 against 9.5 at 1 MiB).
// Made and destroyed on an instance's thread, within one batch (engines/onnx/onnx_session_run.cc).
// Implemented in cuda/host_registration.cu; the CPU build (host_registration_none.cc) makes none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace infernode {

class DeviceStream;

// Inputs of at least this many bytes are copied to the device from the caller's buffer.
constexpr uint64_t kRegisterHostMinBytes = uint64_t{4} << 20;

class HostRegistration {
 public:
  // The buffer ready for copies on `stream`: used as it is when it is pinned already (a pool
  // block), else registered. Null when it cannot be (pages shared with another registration,
  // no CUDA): the caller stages it through a pinned block as usual.
  static std::unique_ptr<HostRegistration> Make(const void* ptr, size_t bytes, DeviceStream* stream);
  // Waits for `stream` (the copies that read the buffer) before unregistering it.
  virtual ~HostRegistration() = default;
};

}  // namespace infernode
