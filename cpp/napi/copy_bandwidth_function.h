// measureCopyBandwidth({bytes, iterations, pinned, deviceId?}): host-to-device copy bandwidth
// (memory/copy_bandwidth.h), typed in ts/native.ts. For the bench: it blocks the calling
// thread for the copies, so never call it from a serving process's event loop.
#pragma once

#include <napi.h>

namespace infernode {

// Returns {bytes, iterations, source, gbPerSecond, bestGbPerSecond, totalMs, deviceId,
// deviceName}. Throws InferenceServerError: INVALID_ARG for bad options, UNAVAILABLE without CUDA.
Napi::Value MeasureCopyBandwidthFunction(const Napi::CallbackInfo& info);

}  // namespace infernode
