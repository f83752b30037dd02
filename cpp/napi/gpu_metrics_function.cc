#include "napi/gpu_metrics_function.h"

#include <memory>
#include <utility>
#include <vector>

#include "gpu/gpu_metrics.h"
#include "napi/addon_data.h"

namespace infernode {

namespace {

Napi::Object DeviceObject(Napi::Env env, const GpuDeviceMetrics& device) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("uuid", device.uuid);
  out.Set("name", device.name);
  // Byte and millijoule counts reach 2^53 only after far more memory or energy than exists.
  if (device.utilization) out.Set("utilization", *device.utilization);
  if (device.memory_total_bytes) out.Set("memoryTotalBytes", static_cast<double>(*device.memory_total_bytes));
  if (device.memory_used_bytes) out.Set("memoryUsedBytes", static_cast<double>(*device.memory_used_bytes));
  if (device.power_usage_watts) out.Set("powerUsageWatts", *device.power_usage_watts);
  if (device.power_limit_watts) out.Set("powerLimitWatts", *device.power_limit_watts);
  if (device.energy_millijoules) out.Set("energyMillijoules", static_cast<double>(*device.energy_millijoules));
  return out;
}

class ReadWorker final : public Napi::AsyncWorker {
 public:
  ReadWorker(Napi::Env env, std::shared_ptr<GpuMetricsSource> source)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), source_(std::move(source)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  // libuv pool thread: no V8 here.
  void Execute() override { status_ = source_->Read(&devices_); }

  void OnOK() override {
    Napi::Env env = Env();
    if (!status_.IsOk()) {
      deferred_.Resolve(env.Null());  // no NVML: GPU metrics are absent, which is no error
      return;
    }
    Napi::Array out = Napi::Array::New(env, devices_.size());
    for (size_t i = 0; i < devices_.size(); ++i) out.Set(static_cast<uint32_t>(i), DeviceObject(env, devices_[i]));
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<GpuMetricsSource> source_;
  Status status_;
  std::vector<GpuDeviceMetrics> devices_;
};

}  // namespace

Napi::Value ReadGpuMetricsFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* worker = new ReadWorker(env, env.GetInstanceData<AddonData>()->gpu_metrics);
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself after OnOK/OnError
  return promise;
}

Napi::Value GpuMetricsUnavailableFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string reason = env.GetInstanceData<AddonData>()->gpu_metrics->UnavailableReason();
  if (reason.empty()) return env.Null();
  return Napi::String::New(env, reason);
}

}  // namespace infernode
