#include "gpu/gpu_metrics.h"

namespace infernode {

namespace {

// The text NVML wrote into `buffer` (NUL-terminated within its size).
std::string TextOf(const char* buffer, size_t size) {
  size_t length = 0;
  while (length < size && buffer[length] != '\0') ++length;
  return std::string(buffer, length);
}

GpuDeviceMetrics ReadDevice(const nvml::Functions& api, nvml::Device device, std::string uuid) {
  GpuDeviceMetrics out;
  out.uuid = std::move(uuid);
  char name[nvml::kNameBufferSize] = {};
  if (api.device_get_name(device, name, sizeof(name)) == nvml::kSuccess) out.name = TextOf(name, sizeof(name));
  nvml::Utilization utilization{};
  if (api.device_get_utilization_rates(device, &utilization) == nvml::kSuccess) {
    out.utilization = utilization.gpu / 100.0;  // percent -> Triton's [0, 1]
  }
  nvml::Memory memory{};
  if (api.device_get_memory_info(device, &memory) == nvml::kSuccess) {
    out.memory_total_bytes = memory.total;
    out.memory_used_bytes = memory.used;
  }
  unsigned int milliwatts = 0;
  if (api.device_get_power_usage(device, &milliwatts) == nvml::kSuccess) out.power_usage_watts = milliwatts / 1000.0;
  if (api.device_get_enforced_power_limit(device, &milliwatts) == nvml::kSuccess) {
    out.power_limit_watts = milliwatts / 1000.0;
  }
  unsigned long long millijoules = 0;
  if (api.device_get_total_energy_consumption(device, &millijoules) == nvml::kSuccess) {
    out.energy_millijoules = millijoules;
  }
  return out;
}

}  // namespace

std::vector<GpuDeviceMetrics> ReadGpuMetrics(const nvml::NvmlLibrary& nvml) {
  const nvml::Functions& api = nvml.Api();
  std::vector<GpuDeviceMetrics> devices;
  unsigned int count = 0;
  if (api.device_get_count_v2(&count) != nvml::kSuccess) return devices;
  for (unsigned int index = 0; index < count; ++index) {
    nvml::Device device = nullptr;
    if (api.device_get_handle_by_index_v2(index, &device) != nvml::kSuccess) continue;
    char uuid[nvml::kUuidBufferSize] = {};
    if (api.device_get_uuid(device, uuid, sizeof(uuid)) != nvml::kSuccess) continue;
    devices.push_back(ReadDevice(api, device, TextOf(uuid, sizeof(uuid))));
  }
  return devices;
}

Status GpuMetricsSource::Read(std::vector<GpuDeviceMetrics>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tried_) {
    tried_ = true;
    open_status_ = nvml::NvmlLibrary::Open(library_, &nvml_);
  }
  if (!open_status_.IsOk()) return open_status_;
  *out = ReadGpuMetrics(*nvml_);
  return Status::Success();
}

std::string GpuMetricsSource::UnavailableReason() {
  std::lock_guard<std::mutex> lock(mu_);
  return open_status_.Message();
}

}  // namespace infernode
