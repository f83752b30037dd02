// ONNX Runtime, loaded at run time with dlopen from a path the caller gives (the npm package's
// libonnxruntime.so, or ONNXRUNTIME_ROOT): the addon then loads, and JS models run, on hosts
// without ONNX Runtime; only ONNX models fail to load, with a clear error.
//
// The library and its OrtEnv are process-wide by nature (ONNX Runtime allows one environment per
// process), so one OrtRuntime is shared by every model of every Node environment in the process.
#pragma once

#include <onnxruntime_c_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engines/onnx/ort_owned.h"

namespace infernode {

class OrtRuntime {
 public:
  // Loads the library once per process; later calls return the same runtime (the path of the
  // first successful load wins).
  static Status Get(const std::string& library_path, std::shared_ptr<OrtRuntime>* out);

  ~OrtRuntime();
  OrtRuntime(const OrtRuntime&) = delete;
  OrtRuntime& operator=(const OrtRuntime&) = delete;

  const OrtApi* Api() const { return api_; }
  OrtEnv* Env() const { return env_.get(); }
  const std::string& Version() const { return version_; }

  // The execution providers this ONNX Runtime build knows (GetAvailableProviders); a provider
  // that loads from its own library (CUDA, TensorRT) is listed whether or not that library exists.
  Status AvailableProviders(std::vector<std::string>* out) const;

  // Converts (and releases) an OrtStatus; `what` says what was being done.
  Status Check(OrtStatus* status, const std::string& what) const;

 private:
  OrtRuntime() = default;

  void* library_ = nullptr;
  const OrtApi* api_ = nullptr;
  OrtPtr<OrtEnv> env_{nullptr};  // released before the library (which stays mapped)
  std::string version_;
};

}  // namespace infernode
