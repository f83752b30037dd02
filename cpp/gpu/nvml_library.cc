#include "gpu/nvml_library.h"

#include <dlfcn.h>

namespace infernode {
namespace nvml {

namespace {

// Resolves `name` into `*fn`; false when the library does not export it.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

Status NvmlLibrary::Open(const std::string& library, std::unique_ptr<NvmlLibrary>* out) {
  std::unique_ptr<NvmlLibrary> nvml(new NvmlLibrary());
  nvml->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nvml->handle_ == nullptr) {
    const char* why = dlerror();
    return Unavailable("cannot load NVML from '" + library + "': " + (why ? why : "unknown error") +
                       " (GPU metrics need the NVIDIA driver)");
  }
  Functions& f = nvml->api_;
  const char* missing = nullptr;
  if (!Resolve(nvml->handle_, "nvmlInit_v2", &f.init_v2))
    missing = "nvmlInit_v2";
  else if (!Resolve(nvml->handle_, "nvmlShutdown", &f.shutdown))
    missing = "nvmlShutdown";
  else if (!Resolve(nvml->handle_, "nvmlErrorString", &f.error_string))
    missing = "nvmlErrorString";
  else if (!Resolve(nvml->handle_, "nvmlDeviceGetCount_v2", &f.device_get_count_v2))
    missing = "nvmlDeviceGetCount_v2";
  else if (!Resolve(nvml->handle_, "nvmlDeviceGetHandleByIndex_v2", &f.device_get_handle_by_index_v2)) {
    missing = "nvmlDeviceGetHandleByIndex_v2";
  } else if (!Resolve(nvml->handle_, "nvmlDeviceGetUUID", &f.device_get_uuid))
    missing = "nvmlDeviceGetUUID";
  else if (!Resolve(nvml->handle_, "nvmlDeviceGetName", &f.device_get_name))
    missing = "nvmlDeviceGetName";
  else if (!Resolve(nvml->handle_, "nvmlDeviceGetUtilizationRates", &f.device_get_utilization_rates)) {
    missing = "nvmlDeviceGetUtilizationRates";
  } else if (!Resolve(nvml->handle_, "nvmlDeviceGetMemoryInfo", &f.device_get_memory_info)) {
    missing = "nvmlDeviceGetMemoryInfo";
  } else if (!Resolve(nvml->handle_, "nvmlDeviceGetPowerUsage", &f.device_get_power_usage)) {
    missing = "nvmlDeviceGetPowerUsage";
  } else if (!Resolve(nvml->handle_, "nvmlDeviceGetEnforcedPowerLimit", &f.device_get_enforced_power_limit)) {
    missing = "nvmlDeviceGetEnforcedPowerLimit";
  } else if (!Resolve(nvml->handle_, "nvmlDeviceGetTotalEnergyConsumption", &f.device_get_total_energy_consumption)) {
    missing = "nvmlDeviceGetTotalEnergyConsumption";
  }
  if (missing != nullptr) {
    // The destructor dlcloses; nvmlShutdown is skipped because nvmlInit_v2 was not called.
    return Unavailable("'" + library + "' does not export " + missing + " (NVIDIA driver too old for GPU metrics)");
  }
  const Return init = f.init_v2();
  if (init != kSuccess) {
    return Unavailable("NVML from '" + library + "' did not initialise: " + nvml->ErrorString(init) + " (error " +
                       std::to_string(init) + "; is the NVIDIA driver loaded?)");
  }
  nvml->initialised_ = true;
  *out = std::move(nvml);
  return Status::Success();
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) api_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::ErrorString(Return code) const {
  const char* text = api_.error_string ? api_.error_string(code) : nullptr;
  return text ? text : "unknown NVML error";
}

}  // namespace nvml
}  // namespace infernode
