// readGpuMetrics(): the per-GPU readings behind Triton's GPU metrics (ts/server/metrics/gpu.ts),
// typed in ts/native.ts. JS thread only. NVML is opened on the first call and kept, with the
// outcome, in the environment's AddonData (closed with the environment).
#pragma once

#include <napi.h>

namespace infernode {

// Returns null when NVML cannot be used (no driver: the reason is in `gpuMetricsUnavailable()`),
// else an array with one plain object per GPU: { uuid, name, utilization?, memoryTotalBytes?,
// memoryUsedBytes?, powerUsageWatts?, powerLimitWatts?, energyMillijoules? } (a key is absent
// when the device does not report that metric). Synchronous: NVML answers in microseconds.
Napi::Value ReadGpuMetricsFunction(const Napi::CallbackInfo& info);

// Why readGpuMetrics() returns null (NVML's or dlopen's words); null when NVML is usable or
// has not been tried yet.
Napi::Value GpuMetricsUnavailableFunction(const Napi::CallbackInfo& info);

}  // namespace infernode
