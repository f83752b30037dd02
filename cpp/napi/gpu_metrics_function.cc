#include "napi/gpu_metrics_function.h"

#include "gpu/gpu_metrics.h"
#include "napi/addon_data.h"

namespace infernode {

namespace {

// The environment's NVML, opened on first use; null (with the reason kept) when unavailable.
const nvml::NvmlLibrary* NvmlOf(AddonData* data) {
  if (!data->nvml_tried) {
    data->nvml_tried = true;
    Status status = nvml::NvmlLibrary::Open(nvml::kDefaultLibrary, &data->nvml);
    if (!status.IsOk()) data->nvml_unavailable = status.Message();
  }
  return data->nvml.get();
}

Napi::Object DeviceObject(Napi::Env env, const GpuDeviceMetrics& device) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("uuid", device.uuid);
  out.Set("name", device.name);
  // Byte and millijoule counts reach 2^53 only after far more memory or energy than exists.
  if (device.utilization) out.Set("utilization", *device.utilization);
  if (device.memory_total_bytes) out.Set("memoryTotalBytes", static_cast<double>(*device.memory_total_bytes));
  if (device.memory_used_bytes) out.Set("memoryUsedBytes", static_cast<double>(*device.memory_used_bytes));
  if (device.power_usage_watts) out.Set("powerUsageWatts", *device.power_usage_watts);
  if (device.power_limit_watts) out.Set("powerLimitWatts", *device.power_limit_watts);
  if (device.energy_millijoules) out.Set("energyMillijoules", static_cast<double>(*device.energy_millijoules));
  return out;
}

}  // namespace

Napi::Value ReadGpuMetricsFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const nvml::NvmlLibrary* nvml = NvmlOf(env.GetInstanceData<AddonData>());
  if (nvml == nullptr) return env.Null();
  std::vector<GpuDeviceMetrics> devices = ReadGpuMetrics(*nvml);
  Napi::Array out = Napi::Array::New(env, devices.size());
  for (size_t i = 0; i < devices.size(); ++i) out.Set(static_cast<uint32_t>(i), DeviceObject(env, devices[i]));
  return out;
}

Napi::Value GpuMetricsUnavailableFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data->nvml_unavailable.empty()) return env.Null();
  return Napi::String::New(env, data->nvml_unavailable);
}

}  // namespace infernode
