// readGpuMetrics(): the per-GPU readings behind Triton's GPU metrics (ts/server/metrics/gpu.ts),
// typed in ts/native.ts. The read runs on the libuv pool (NVML's energy query takes
// milliseconds); NVML is opened by the first read and kept in the environment's AddonData.
#pragma once

#include <napi.h>

namespace infernode {

// Returns a Promise of null when NVML cannot be used (no driver: the reason is in
// gpuMetricsUnavailable()), else of an array with one plain object per GPU: { uuid, name,
// utilization?, memoryTotalBytes?, memoryUsedBytes?, powerUsageWatts?, powerLimitWatts?,
// energyMillijoules? } (a key is absent when the device does not report that metric).
Napi::Value ReadGpuMetricsFunction(const Napi::CallbackInfo& info);

// Why readGpuMetrics() resolves null (dlopen's or NVML's words); null when NVML is usable or
// has not been tried yet. JS thread.
Napi::Value GpuMetricsUnavailableFunction(const Napi::CallbackInfo& info);

}  // namespace infernode
