// Turns a core Status into the JS InferenceServerError the facade registered at init.
#pragma once

#include <napi.h>

#include "core/status.h"

namespace infernode {

Napi::Value MakeError(Napi::Env env, const Status& status);

// Throws the error as a C++ Napi::Error (the napi layer is built with C++ exceptions).
[[noreturn]] void ThrowStatus(Napi::Env env, const Status& status);

}  // namespace infernode
