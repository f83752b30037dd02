#include "napi/onnx_loader.h"

#include "napi/errors.h"

namespace infernode {

namespace {

// Marks Externals made here, so a foreign External is never taken for one of ours.
constexpr napi_type_tag kOnnxSessionsTag = {0x6f6e6e7873657373ULL, 0x696e6665726e6f64ULL};

Napi::Array TensorInfosToJs(Napi::Env env, const std::vector<OnnxTensorInfo>& infos) {
  Napi::Array out = Napi::Array::New(env, infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    Napi::Object t = Napi::Object::New(env);
    t.Set("name", infos[i].name);
    t.Set("dtype", DataTypeName(infos[i].dtype));
    Napi::Array dims = Napi::Array::New(env, infos[i].dims.size());
    for (size_t d = 0; d < infos[i].dims.size(); ++d)
      dims.Set(static_cast<uint32_t>(d), static_cast<double>(infos[i].dims[d]));
    t.Set("dims", dims);
    out.Set(static_cast<uint32_t>(i), t);
  }
  return out;
}

class LoadWorker final : public Napi::AsyncWorker {
 public:
  // `device_ids`: the GPU of each session when the options ask for CUDA (empty: options.device_id
  // for every session).
  LoadWorker(Napi::Env env, std::string library, std::string model, uint32_t count, OnnxSessionOptions options,
             std::vector<int> device_ids)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        library_(std::move(library)),
        model_(std::move(model)),
        count_(count),
        options_(options),
        device_ids_(std::move(device_ids)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  // libuv pool thread: no V8 here.
  void Execute() override {
    std::shared_ptr<OrtRuntime> runtime;
    status_ = OrtRuntime::Get(library_, &runtime);
    for (uint32_t i = 0; status_.IsOk() && i < count_; ++i) {
      std::unique_ptr<OnnxSession> session;
      OnnxSessionOptions options = options_;
      if (i < device_ids_.size()) options.device_id = device_ids_[i];
      status_ = OnnxSession::Create(runtime, model_, options, &session);
      if (status_.IsOk()) sessions_->sessions.push_back(std::move(session));
    }
    if (status_.IsOk()) version_ = runtime->Version();
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.IsOk()) {
      deferred_.Reject(MakeError(env, status_));
      return;
    }
    const OnnxSession& first = *sessions_->sessions.front();
    Napi::Object out = Napi::Object::New(env);
    out.Set("inputs", TensorInfosToJs(env, first.Inputs()));
    out.Set("outputs", TensorInfosToJs(env, first.Outputs()));
    out.Set("provider", first.Provider());
    out.Set("ortVersion", version_);
    auto handle =
        Napi::External<OnnxSessions>::New(env, sessions_.release(), [](Napi::Env, OnnxSessions* s) { delete s; });
    napi_type_tag_object(env, handle, &kOnnxSessionsTag);
    out.Set("handle", handle);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::string library_;
  std::string model_;
  uint32_t count_;
  OnnxSessionOptions options_;
  std::vector<int> device_ids_;
  Status status_;
  std::string version_;
  std::unique_ptr<OnnxSessions> sessions_ = std::make_unique<OnnxSessions>();
};

int IntOption(const Napi::Object& options, const char* key) {
  Napi::Value v = options.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : 0;
}

}  // namespace

Napi::Value LoadOnnxModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsString() || !info[2].IsNumber() || !info[3].IsObject()) {
    throw Napi::TypeError::New(env, "loadOnnxModel(libraryPath, modelPath, instanceCount, options)");
  }
  Napi::Object js = info[3].As<Napi::Object>();
  OnnxSessionOptions options;
  options.intra_op_threads = IntOption(js, "intraOpThreads");
  options.inter_op_threads = IntOption(js, "interOpThreads");
  options.device_id = IntOption(js, "deviceId");
  options.use_cuda = js.Get("useCuda").ToBoolean();
  options.use_tensorrt = js.Get("useTensorRt").ToBoolean();
  Napi::Value trt = js.Get("tensorRt");
  if (trt.IsObject()) {
    Napi::Object t = trt.As<Napi::Object>();
    options.tensorrt.fp16 = t.Get("fp16").ToBoolean();
    if (t.Get("maxWorkspaceBytes").IsNumber()) {
      options.tensorrt.max_workspace_bytes =
          static_cast<size_t>(t.Get("maxWorkspaceBytes").As<Napi::Number>().DoubleValue());
    }
    if (t.Get("engineCachePath").IsString())
      options.tensorrt.engine_cache_path = t.Get("engineCachePath").ToString().Utf8Value();
  }
  options.compute_thread_nice = IntOption(js, "computeThreadNice");
  Napi::Value entries = js.Get("sessionConfig");
  if (entries.IsObject()) {
    Napi::Object object = entries.As<Napi::Object>();
    Napi::Array keys = object.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); ++i) {
      const std::string key = keys.Get(i).ToString().Utf8Value();
      options.config_entries.emplace_back(key, object.Get(key).ToString().Utf8Value());
    }
  }
  const uint32_t count = std::max(1u, info[2].As<Napi::Number>().Uint32Value());
  std::vector<int> device_ids;
  Napi::Value ids = js.Get("deviceIds");
  for (uint32_t i = 0; ids.IsArray() && i < ids.As<Napi::Array>().Length(); ++i) {
    device_ids.push_back(ids.As<Napi::Array>().Get(i).ToNumber().Int32Value());
  }
  if (!device_ids.empty() && device_ids.size() != count) {
    throw Napi::TypeError::New(env, "loadOnnxModel: options.deviceIds must name one GPU per instance (" +
                                        std::to_string(count) + "), got " + std::to_string(device_ids.size()));
  }
  auto* worker = new LoadWorker(env, info[0].As<Napi::String>().Utf8Value(), info[1].As<Napi::String>().Utf8Value(),
                                count, options, std::move(device_ids));
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself after OnOK/OnError
  return promise;
}

Napi::Value OnnxRuntimeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "onnxRuntimeInfo(libraryPath)");
  std::shared_ptr<OrtRuntime> runtime;
  Status status = OrtRuntime::Get(info[0].As<Napi::String>().Utf8Value(), &runtime);
  std::vector<std::string> providers;
  if (status.IsOk()) status = runtime->AvailableProviders(&providers);
  if (!status.IsOk()) ThrowStatus(env, status);
  Napi::Array names = Napi::Array::New(env, providers.size());
  for (size_t i = 0; i < providers.size(); ++i) names.Set(static_cast<uint32_t>(i), providers[i]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("version", runtime->Version());
  out.Set("providers", names);
  return out;
}

Napi::Value ReleaseOnnxSessions(const Napi::CallbackInfo& info) {
  TakeOnnxSessions(info[0]);  // the sessions are freed with the vector it returns
  return info.Env().Undefined();
}

std::vector<std::unique_ptr<OnnxSession>> TakeOnnxSessions(const Napi::Value& handle) {
  if (handle.IsArray()) {
    // One handle per instance group, in the config's order: the instances are numbered so.
    Napi::Array handles = handle.As<Napi::Array>();
    std::vector<std::unique_ptr<OnnxSession>> all;
    for (uint32_t i = 0; i < handles.Length(); ++i) {
      for (auto& session : TakeOnnxSessions(handles.Get(i))) all.push_back(std::move(session));
    }
    return all;
  }
  bool tagged = false;
  if (!handle.IsExternal() || napi_check_object_type_tag(handle.Env(), handle, &kOnnxSessionsTag, &tagged) != napi_ok ||
      !tagged) {
    return {};
  }
  OnnxSessions* sessions = handle.As<Napi::External<OnnxSessions>>().Data();
  return sessions == nullptr ? std::vector<std::unique_ptr<OnnxSession>>{} : std::move(sessions->sessions);
}

}  // namespace infernode
