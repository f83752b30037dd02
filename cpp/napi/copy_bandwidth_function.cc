#include "napi/copy_bandwidth_function.h"

#include <string>

#include "memory/copy_bandwidth.h"
#include "napi/errors.h"

namespace infernode {

namespace {

// A whole number in [min, max] from options[key]; `fallback` when absent.
uint64_t WholeOption(Napi::Env env, const Napi::Object& options, const char* key, uint64_t min, uint64_t max,
                     uint64_t fallback) {
  Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return fallback;
  const double v = value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : -1;
  if (!(v >= static_cast<double>(min) && v <= static_cast<double>(max)) ||
      static_cast<double>(static_cast<uint64_t>(v)) != v) {
    ThrowStatus(env, InvalidArg("measureCopyBandwidth: '" + std::string(key) + "' must be a whole number from " +
                                std::to_string(min) + " to " + std::to_string(max)));
  }
  return static_cast<uint64_t>(v);
}

}  // namespace

Napi::Value MeasureCopyBandwidthFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) {
    ThrowStatus(
        env,
        InvalidArg("measureCopyBandwidth({bytes, iterations?, pinned?, deviceId?, streams?, caller?}): options object "
                   "expected"));
  }
  Napi::Object options = info[0].As<Napi::Object>();
  CopyBandwidthRequest request;
  request.bytes = WholeOption(env, options, "bytes", 1, kMaxCopyBandwidthBytes, 0);
  if (options.Get("bytes").IsUndefined()) ThrowStatus(env, InvalidArg("measureCopyBandwidth: 'bytes' is required"));
  request.iterations =
      static_cast<uint32_t>(WholeOption(env, options, "iterations", 1, kMaxCopyBandwidthIterations, 10));
  request.device = static_cast<int>(WholeOption(env, options, "deviceId", 0, 1023, 0));
  request.streams = static_cast<uint32_t>(WholeOption(env, options, "streams", 1, 2, 1));
  Napi::Value pinned = options.Get("pinned");
  if (!pinned.IsUndefined() && !pinned.IsBoolean())
    ThrowStatus(env, InvalidArg("measureCopyBandwidth: 'pinned' must be a boolean"));
  request.pinned = pinned.IsUndefined() || pinned.As<Napi::Boolean>().Value();
  Napi::Value caller = options.Get("caller");
  const std::string path = caller.IsString() ? caller.As<Napi::String>().Utf8Value() : "";
  if (!caller.IsUndefined() && path != "staged" && path != "registered") {
    ThrowStatus(env, InvalidArg("measureCopyBandwidth: 'caller' must be 'staged' or 'registered'"));
  }
  if (path == "staged") request.caller = CallerPath::kStaged;
  if (path == "registered") request.caller = CallerPath::kRegistered;

  CopyBandwidthResult result;
  Status status = MeasureCopyBandwidth(request, &result);
  if (!status.IsOk()) ThrowStatus(env, status);
  Napi::Object out = Napi::Object::New(env);
  out.Set("bytes", static_cast<double>(request.bytes));
  out.Set("iterations", request.iterations);
  out.Set("source", result.source);
  out.Set("gbPerSecond", result.gb_per_second);
  out.Set("bestGbPerSecond", result.best_gb_per_second);
  out.Set("totalMs", result.total_ms);
  out.Set("deviceId", request.device);
  out.Set("streams", request.streams);
  out.Set("deviceName", result.device_name);
  return out;
}

}  // namespace infernode
