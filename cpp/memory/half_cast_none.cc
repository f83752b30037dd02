// CPU-only twin of cuda/half_cast.cu, linked when the build has no CUDA (node-gyp build).
#include "memory/half_cast.h"

namespace infernode {

Status LaunchHalfCast(void*, void*, DataType, const void*, DataType, size_t) {
  return Unavailable("CUDA casts are not available: this build of infernode has no CUDA support");
}

}  // namespace infernode
