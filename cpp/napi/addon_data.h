// Per-environment addon state (the addon also loads in worker threads): the JS error class
// and the constructors. Owned by the Napi::Env as instance data.
#pragma once

#include <napi.h>

namespace infernode {

struct AddonData {
  Napi::FunctionReference error_class;  // ts/errors.ts InferenceServerError, set by init()
  Napi::FunctionReference native_model;
  Napi::FunctionReference rate_limiter;
  Napi::FunctionReference cuda_shared_memory;
  Napi::FunctionReference system_shared_memory;
};

}  // namespace infernode
