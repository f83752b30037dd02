// Copy bandwidth in a build without CUDA: there is no device to copy to.
#include "memory/copy_bandwidth.h"

namespace infernode {

Status MeasureCopyBandwidth(const CopyBandwidthRequest&, CopyBandwidthResult*) {
  return Unavailable("host-to-device copy bandwidth cannot be measured: this build of infernode has no CUDA support");
}

}  // namespace infernode
