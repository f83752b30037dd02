// Per-environment addon state (the addon also loads in worker threads): the JS error class
// and the constructors, and the environment's NVML handle (GPU metrics). Owned by the Napi::Env as
// instance data.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "gpu/nvml_library.h"

namespace infernode {

struct AddonData {
  Napi::FunctionReference error_class;  // ts/errors.ts InferenceServerError, set by init()
  Napi::FunctionReference native_model;
  Napi::FunctionReference rate_limiter;
  Napi::FunctionReference cuda_shared_memory;
  Napi::FunctionReference system_shared_memory;
  // readGpuMetrics() (napi/gpu_metrics_function.cc): NVML opened on the first call, or why not.
  bool nvml_tried = false;
  std::unique_ptr<nvml::NvmlLibrary> nvml;
  std::string nvml_unavailable;
};

}  // namespace infernode
