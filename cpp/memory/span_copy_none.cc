// CPU-only twin of cuda/span_copy.cu, linked when the build has no CUDA (node-gyp build).
#include "memory/span_copy.h"

namespace infernode {

Status LaunchSpanCopy(void*, const DeviceSpan*, size_t) {
  return Unavailable("CUDA span copies are not available: this build of infernode has no CUDA support");
}

}  // namespace infernode
