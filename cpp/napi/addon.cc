// Module entry: registers NativeModel and the free functions typed in ts/native.ts. State is
// per environment (instance data), so the addon also loads in worker threads.
#include <napi.h>

#include "memory/cuda_host.h"
#include "memory/host_allocator.h"
#include "napi/addon_data.h"
#include "napi/copy_bandwidth_function.h"
#include "napi/gpu_metrics_function.h"
#include "napi/hash128_function.h"
#include "napi/loop_turns.h"
#include "napi/native_model.h"
#include "napi/onnx_loader.h"
#include "napi/rate_limiter_object.h"
#include "napi/shared_memory.h"

namespace infernode {

namespace {

// init(InferenceServerError): the class native code rejects and throws with.
Napi::Value Init(const Napi::CallbackInfo& info) {
  AddonData* data = info.Env().GetInstanceData<AddonData>();
  if (!info[0].IsFunction()) throw Napi::TypeError::New(info.Env(), "init(errorClass)");
  data->error_class = Napi::Persistent(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("cuda", CudaCompiledIn());
  out.Set("cudaDeviceCount", CudaDeviceCount());
  out.Set("napiVersion", NAPI_VERSION);
  out.Set("hostAllocator", MakeDefaultHostAllocator()->Name());
  return out;
}

// pinnedMemory(limitBytes?): sets the process-wide pinned budget when given, and returns its
// statistics (all zero without CUDA).
Napi::Value PinnedMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() > 0 && !info[0].IsUndefined()) {
    if (!info[0].IsNumber() || info[0].As<Napi::Number>().DoubleValue() < 0) {
      throw Napi::TypeError::New(env, "pinnedMemory(limitBytes): a non-negative number");
    }
    SetPinnedMemoryLimit(static_cast<uint64_t>(info[0].As<Napi::Number>().DoubleValue()));
  }
  const PinnedMemoryStats stats = GetPinnedMemoryStats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("totalBytes", static_cast<double>(stats.limit_bytes));
  out.Set("usedBytes", static_cast<double>(stats.used_bytes));
  out.Set("pageableFallbacks", static_cast<double>(stats.fallbacks));
  return out;
}

}  // namespace

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  env.SetInstanceData<AddonData>(data);  // deleted with the environment
  Napi::Function native_model = NativeModel::Define(env);
  data->native_model = Napi::Persistent(native_model);
  exports.Set("NativeModel", native_model);
  Napi::Function rate_limiter = RateLimiterObject::Define(env);
  data->rate_limiter = Napi::Persistent(rate_limiter);
  exports.Set("RateLimiter", rate_limiter);
  exports.Set("init", Napi::Function::New<Init>(env, "init"));
  exports.Set("buildInfo", Napi::Function::New<BuildInfo>(env, "buildInfo"));
  exports.Set("loadOnnxModel", Napi::Function::New<LoadOnnxModel>(env, "loadOnnxModel"));
  exports.Set("onnxRuntimeInfo", Napi::Function::New<OnnxRuntimeInfo>(env, "onnxRuntimeInfo"));
  exports.Set("releaseOnnxSessions", Napi::Function::New<ReleaseOnnxSessions>(env, "releaseOnnxSessions"));
  exports.Set("hash128", Napi::Function::New<Hash128Function>(env, "hash128"));
  exports.Set("loopTurns", Napi::Function::New<LoopTurnsFunction>(env, "loopTurns"));
  exports.Set("pinnedMemory", Napi::Function::New<PinnedMemory>(env, "pinnedMemory"));
  exports.Set("readGpuMetrics", Napi::Function::New<ReadGpuMetricsFunction>(env, "readGpuMetrics"));
  exports.Set("gpuMetricsUnavailable",
              Napi::Function::New<GpuMetricsUnavailableFunction>(env, "gpuMetricsUnavailable"));
  Napi::Function cuda_shm = CudaSharedMemory::Define(env);
  data->cuda_shared_memory = Napi::Persistent(cuda_shm);
  Napi::Function system_shm = SystemSharedMemoryRegion::Define(env);
  data->system_shared_memory = Napi::Persistent(system_shm);
  exports.Set("openSystemSharedMemory", Napi::Function::New<OpenSystemSharedMemory>(env, "openSystemSharedMemory"));
  exports.Set("openCudaSharedMemory", Napi::Function::New<OpenCudaSharedMemory>(env, "openCudaSharedMemory"));
  exports.Set("measureCopyBandwidth", Napi::Function::New<MeasureCopyBandwidthFunction>(env, "measureCopyBandwidth"));
  return exports;
}

}  // namespace infernode

static Napi::Object InitInfernode(Napi::Env env, Napi::Object exports) { return infernode::InitModule(env, exports); }

NODE_API_MODULE(infernode, InitInfernode)
