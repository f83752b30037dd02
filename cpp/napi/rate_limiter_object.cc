#include "napi/rate_limiter_object.h"

#include <algorithm>
#include <string>

#include "napi/addon_data.h"

namespace infernode {

Napi::Function RateLimiterObject::Define(Napi::Env env) {
  return DefineClass(env, "RateLimiter", {InstanceMethod<&RateLimiterObject::Available>("available")});
}

RateLimiterObject::RateLimiterObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RateLimiterObject>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray())
    throw Napi::TypeError::New(env, "RateLimiter(resources: [name, count, device][])");
  ResourceCounts counts;
  Napi::Array resources = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < resources.Length(); ++i) {
    Napi::Array r = resources.Get(i).As<Napi::Array>();
    const std::string name = r.Get(uint32_t{0}).ToString().Utf8Value();
    const auto count = static_cast<uint64_t>(std::max(0.0, r.Get(uint32_t{1}).ToNumber().DoubleValue()));
    const int32_t device = r.Get(uint32_t{2}).ToNumber().Int32Value();
    auto& by_name = counts[device < 0 ? kEveryDevice : device];
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      by_name.emplace(name, count);
    } else {
      it->second = std::min(it->second, count);
    }
  }
  limiter_ = std::make_shared<RateLimiter>(std::move(counts));
}

std::shared_ptr<RateLimiter> RateLimiterObject::From(Napi::Env env, const Napi::Value& value) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(data->rate_limiter.Value())) {
    throw Napi::TypeError::New(env, "expected a RateLimiter");
  }
  return Unwrap(value.As<Napi::Object>())->limiter_;
}

Napi::Value RateLimiterObject::Available(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t at = 0;
  for (const auto& [device, resources] : limiter_->Available()) {
    for (const auto& [name, count] : resources) {
      Napi::Array entry = Napi::Array::New(env, 3);
      entry.Set(uint32_t{0}, device);
      entry.Set(uint32_t{1}, name);
      entry.Set(uint32_t{2}, static_cast<double>(count));
      out.Set(at++, entry);
    }
  }
  return out;
}

}  // namespace infernode
