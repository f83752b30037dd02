// NVML (libnvidia-ml.so.1, installed with the NVIDIA driver), loaded at run time with dlopen and
// never linked: the addon loads and runs on hosts with no driver and no GPU, where Open reports
// UNAVAILABLE and GPU metrics are simply absent.
//
// No nvml.h is needed to build: the few types and entry points used are declared below, with the
// layouts of nvml.h (CUDA 12.x, NVML API version 12; unchanged since the _v2 entry points of
// CUDA 8). An NvmlLibrary owns one nvmlInit_v2 (NVML counts them; nvmlShutdown in the destructor
// releases it) and the dlopen handle. NVML is thread-safe; infernode calls it from the JS thread
// of the environment that owns the NvmlLibrary (cpp/napi/addon_data.h).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace infernode {
namespace nvml {

// nvml.h: `typedef enum nvmlReturn_enum {...} nvmlReturn_t;` (an int-sized enum).
using Return = int;
constexpr Return kSuccess = 0;            // NVML_SUCCESS
constexpr Return kErrorNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED (e.g. power on some boards)

// nvml.h: `typedef struct nvmlDevice_st* nvmlDevice_t;` (opaque).
struct DeviceSt;
using Device = DeviceSt*;

// nvml.h nvmlUtilization_t: percent of the last sample period (1/6 s to 1 s by product).
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

// nvml.h nvmlMemory_t (the v1 struct nvmlDeviceGetMemoryInfo fills), in bytes.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvml.h NVML_DEVICE_UUID_V2_BUFFER_SIZE and NVML_DEVICE_NAME_V2_BUFFER_SIZE.
constexpr unsigned int kUuidBufferSize = 96;
constexpr unsigned int kNameBufferSize = 96;

// The entry points used, with nvml.h's signatures.
struct Functions {
  Return (*init_v2)();                                                         // nvmlInit_v2
  Return (*shutdown)();                                                        // nvmlShutdown
  const char* (*error_string)(Return);                                         // nvmlErrorString
  Return (*device_get_count_v2)(unsigned int*);                                // nvmlDeviceGetCount_v2
  Return (*device_get_handle_by_index_v2)(unsigned int, Device*);              // nvmlDeviceGetHandleByIndex_v2
  Return (*device_get_uuid)(Device, char*, unsigned int);                      // nvmlDeviceGetUUID
  Return (*device_get_name)(Device, char*, unsigned int);                      // nvmlDeviceGetName
  Return (*device_get_utilization_rates)(Device, Utilization*);                // nvmlDeviceGetUtilizationRates
  Return (*device_get_memory_info)(Device, Memory*);                           // nvmlDeviceGetMemoryInfo
  Return (*device_get_power_usage)(Device, unsigned int*);                     // nvmlDeviceGetPowerUsage (mW)
  Return (*device_get_enforced_power_limit)(Device, unsigned int*);            // nvmlDeviceGetEnforcedPowerLimit (mW)
  Return (*device_get_total_energy_consumption)(Device, unsigned long long*);  // ...TotalEnergyConsumption (mJ)
};

// The soname the driver installs (the unversioned libnvidia-ml.so comes only with dev packages).
constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // dlopens `library`, resolves every entry point and calls nvmlInit_v2. UNAVAILABLE (naming the
  // library and dlerror's or NVML's reason) when the library is missing, lacks an entry point or
  // cannot initialise (no driver loaded, no permission).
  static Status Open(const std::string& library, std::unique_ptr<NvmlLibrary>* out);

  // nvmlShutdown, then dlclose.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const Functions& Api() const { return api_; }
  // NVML's text for a return code ("Not Supported", ...).
  std::string ErrorString(Return code) const;

 private:
  NvmlLibrary() = default;

  void* handle_ = nullptr;
  bool initialised_ = false;
  Functions api_{};
};

}  // namespace nvml
}  // namespace infernode
