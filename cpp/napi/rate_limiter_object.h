// The JS handle of a Triton's rate limiter (typed in ts/native.ts): made by the Triton when
// rateLimit is 'execution_count' and passed to every NativeModel it creates, which shares the
// limiter (cpp/scheduling/rate_limiter.h) for as long as it lives. Main thread only.
#pragma once

#include <napi.h>

#include <memory>

#include "scheduling/rate_limiter.h"

namespace infernode {

class RateLimiterObject final : public Napi::ObjectWrap<RateLimiterObject> {
 public:
  static Napi::Function Define(Napi::Env env);

  // new RateLimiter(resources: [name, count, device][]): the --rate-limit-resource values;
  // device -1 = every device. A resource named twice for one device keeps the smaller count,
  // as tritonserver does.
  explicit RateLimiterObject(const Napi::CallbackInfo& info);

  // The limiter `value` wraps; throws a TypeError when it is not a RateLimiter.
  static std::shared_ptr<RateLimiter> From(Napi::Env env, const Napi::Value& value);

 private:
  // available(): [device, name, count][] (device -2 = global), for tests and logs.
  Napi::Value Available(const Napi::CallbackInfo& info);

  std::shared_ptr<RateLimiter> limiter_;
};

}  // namespace infernode
