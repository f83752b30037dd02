// Reads the normalized model config (ts/config/normalize.ts NormalizedModelConfig) into the
// core's ModelConfig, once, on the main thread.
#pragma once

#include <napi.h>

#include "core/model_config.h"

namespace infernode {

ModelConfig ModelConfigFromJs(const Napi::Object& js);

}  // namespace infernode
