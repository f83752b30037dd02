// One reading of every GPU NVML sees, as plain values (nothing NVML- or V8-typed): what the
// metrics frontend reports as Triton's nv_gpu_* and nv_energy_consumption families
// (ts/server/metrics/gpu.ts), every metricsIntervalMs. Reads run on a libuv pool thread, not the
// event loop: most queries take 1-80 us, but nvmlDeviceGetTotalEnergyConsumption takes about
// 4 ms per GPU (H100, driver 580), 30 ms and more on an eight-GPU host.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml_library.h"

namespace infernode {

// A metric the device does not report (NVML_ERROR_NOT_SUPPORTED for power on some boards, no
// permission, a transient failure) is left empty, and only that metric is missing for that GPU.
struct GpuDeviceMetrics {
  std::string uuid;                   // "GPU-xxxxxxxx-...", Triton's gpu_uuid label
  std::string name;                   // "NVIDIA H100 80GB HBM3"
  std::optional<double> utilization;  // 0..1 over NVML's last sample period
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> power_usage_watts;
  std::optional<double> power_limit_watts;     // the enforced limit
  std::optional<uint64_t> energy_millijoules;  // total since the driver loaded
};

// Reads every device in NVML's index order. A device whose handle or UUID cannot be read is
// left out (it cannot be labelled); a failing count reports no devices.
std::vector<GpuDeviceMetrics> ReadGpuMetrics(const nvml::NvmlLibrary& nvml);

// NVML for one Node environment: opened by the first Read (on whichever thread makes it), kept
// until the source is destroyed. Reads are serialised by a mutex, so a read still running on
// the pool when the next one is asked for only delays it.
class GpuMetricsSource {
 public:
  explicit GpuMetricsSource(std::string library = nvml::kDefaultLibrary) : library_(std::move(library)) {}

  // Every device's readings; UNAVAILABLE with the reason when NVML cannot be used (decided at
  // the first call: later ones answer the same at once).
  Status Read(std::vector<GpuDeviceMetrics>* out);

  // Why Read reports UNAVAILABLE; empty when NVML is usable or not tried yet.
  std::string UnavailableReason();

 private:
  std::mutex mu_;
  const std::string library_;
  bool tried_ = false;                       // guarded by mu_
  Status open_status_;                       // guarded by mu_
  std::unique_ptr<nvml::NvmlLibrary> nvml_;  // guarded by mu_
};

}  // namespace infernode
