// One reading of every GPU NVML sees, as plain values (nothing NVML- or V8-typed): what the
// metrics frontend reports as Triton's nv_gpu_* and nv_energy_consumption families
// (ts/server/metrics/gpu.ts). Called from one JS thread every metricsIntervalMs; each query
// is a driver call of microseconds, so the read is synchronous.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml_library.h"

namespace infernode {

// A metric the device does not report (NVML_ERROR_NOT_SUPPORTED for power on some boards, no
// permission, a transient failure) is left empty, and only that metric is missing for that GPU.
struct GpuDeviceMetrics {
  std::string uuid;  // "GPU-xxxxxxxx-...", Triton's gpu_uuid label
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::optional<double> utilization;               // 0..1 over NVML's last sample period
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> power_usage_watts;
  std::optional<double> power_limit_watts;          // the enforced limit
  std::optional<uint64_t> energy_millijoules;       // total since the driver loaded
};

// Reads every device in NVML's index order. A device whose handle or UUID cannot be read is
// left out (it cannot be labelled); a failing count reports no devices.
std::vector<GpuDeviceMetrics> ReadGpuMetrics(const nvml::NvmlLibrary& nvml);

}  // namespace infernode
