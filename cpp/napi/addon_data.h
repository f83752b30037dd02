// Per-environment addon state (the addon also loads in worker threads): the JS error class
// and the constructors, the environment's NVML (GPU metrics) and its loop-turn count. Owned by the Napi::Env as
// instance data.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "gpu/gpu_metrics.h"

namespace infernode {

struct LoopTurns;  // napi/loop_turns.cc

struct AddonData {
  Napi::FunctionReference error_class;  // ts/errors.ts InferenceServerError, set by init()
  Napi::FunctionReference native_model;
  Napi::FunctionReference rate_limiter;
  Napi::FunctionReference cuda_shared_memory;
  Napi::FunctionReference system_shared_memory;
  // readGpuMetrics() (napi/gpu_metrics_function.cc); shared with the pool thread of a read in
  // flight, so NVML closes when both are done.
  std::shared_ptr<GpuMetricsSource> gpu_metrics = std::make_shared<GpuMetricsSource>();
  // loopTurns(): started by its first call; freed by its handle's close at the environment's cleanup.
  LoopTurns* loop_turns = nullptr;
};

}  // namespace infernode
