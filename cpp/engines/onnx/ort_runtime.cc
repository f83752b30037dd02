#include "engines/onnx/ort_runtime.h"

#include <dlfcn.h>

#include <mutex>

namespace infernode {

namespace {
std::mutex g_runtime_mu;
std::weak_ptr<OrtRuntime> g_runtime;  // the process-wide runtime while any model uses it
}  // namespace

Status OrtRuntime::Get(const std::string& library_path, std::shared_ptr<OrtRuntime>* out) {
  std::lock_guard<std::mutex> lock(g_runtime_mu);
  if (auto existing = g_runtime.lock()) {
    *out = existing;
    return Status::Success();
  }
  void* library = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return Unavailable("cannot load ONNX Runtime from '" + library_path + "': " + (why ? why : "unknown error"));
  }
  using GetApiBaseFn = const OrtApiBase* (*)();
  auto get_api_base = reinterpret_cast<GetApiBaseFn>(dlsym(library, "OrtGetApiBase"));
  const OrtApi* api = get_api_base ? get_api_base()->GetApi(ORT_API_VERSION) : nullptr;
  if (api == nullptr) {
    dlclose(library);
    return Unavailable("'" + library_path + "' does not provide ONNX Runtime API version " +
                       std::to_string(ORT_API_VERSION));
  }
  std::shared_ptr<OrtRuntime> runtime(new OrtRuntime());
  runtime->library_ = library;
  runtime->api_ = api;
  runtime->version_ = get_api_base()->GetVersionString();
  runtime->env_ = OrtPtr<OrtEnv>(api);
  RETURN_IF_ERROR(runtime->Check(api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "infernode", OutParam(runtime->env_)),
                                 "creating the ONNX Runtime environment"));
  g_runtime = runtime;
  *out = std::move(runtime);
  return Status::Success();
}

// The library stays mapped: ONNX Runtime's own static destructors may still run at exit.
OrtRuntime::~OrtRuntime() = default;

Status OrtRuntime::AvailableProviders(std::vector<std::string>* out) const {
  char** names = nullptr;
  int count = 0;
  RETURN_IF_ERROR(Check(api_->GetAvailableProviders(&names, &count), "listing ONNX Runtime's execution providers"));
  out->assign(names, names + count);
  return Check(api_->ReleaseAvailableProviders(names, count), "releasing the provider list");
}

Status OrtRuntime::Check(OrtStatus* status, const std::string& what) const {
  if (status == nullptr) return Status::Success();
  const OrtErrorCode code = api_->GetErrorCode(status);
  std::string message = what + ": " + api_->GetErrorMessage(status);
  api_->ReleaseStatus(status);
  switch (code) {
    case ORT_INVALID_ARGUMENT:
    case ORT_INVALID_GRAPH:
    case ORT_INVALID_PROTOBUF:
    case ORT_NO_SUCHFILE:
      return InvalidArg(std::move(message));
    case ORT_NOT_IMPLEMENTED:
      return Status(StatusCode::kUnsupported, std::move(message));
    default:
      return Internal(std::move(message));
  }
}

}  // namespace infernode
