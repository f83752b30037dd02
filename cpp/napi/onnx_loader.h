// loadOnnxModel(libraryPath, modelPath, instanceCount, options) → Promise<OnnxModelHandle>:
// creates one ONNX Runtime session per instance on the libuv pool (a one-off job: a model
// load, not compute) and resolves with the model's metadata and an opaque handle that
// NativeModel takes the sessions from.
#pragma once

#include <napi.h>

#include <memory>
#include <vector>

#include "engines/onnx/onnx_session.h"

namespace infernode {

// What the handle's External holds until a NativeModel takes the sessions.
struct OnnxSessions {
  std::vector<std::unique_ptr<OnnxSession>> sessions;
};

Napi::Value LoadOnnxModel(const Napi::CallbackInfo& info);

// onnxRuntimeInfo(libraryPath) → { version, providers }: opens the library (or reuses the
// process's runtime) on the calling thread; for `infernode doctor`, not for the hot path.
Napi::Value OnnxRuntimeInfo(const Napi::CallbackInfo& info);

// releaseOnnxSessions(handle): frees a handle's sessions now, for a load that failed after they
// were made (else they would wait for V8's collector, which does not see what they hold); does
// nothing for a handle a NativeModel took. On the JS thread: freeing a session joins its ONNX
// Runtime threads, a one-off on a failure path.
Napi::Value ReleaseOnnxSessions(const Napi::CallbackInfo& info);

// The sessions of a handle, or of an array of handles in order (moved out; none from a handle
// taken already or from anything that is not a handle).
std::vector<std::unique_ptr<OnnxSession>> TakeOnnxSessions(const Napi::Value& handle);

}  // namespace infernode
