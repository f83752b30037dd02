// CPU-only twin of cuda/device_stream.cu, linked when the build has no CUDA (node-gyp build).
#include "memory/device_stream.h"

namespace infernode {

Status DeviceStream::Create(int, std::unique_ptr<DeviceStream>*) {
  return Unavailable("CUDA streams are not available: this build of infernode has no CUDA support");
}

}  // namespace infernode
