// NativeModel: the JS handle of one bound model (typed in ts/native.ts). It owns the model's
// scheduler and its JS channel; JS instances run the bound callables.
//
// Threads: every method runs on the main thread. `outstanding_` counts requests enqueued and
// not yet handed back to JS; while it is non-zero the channel keeps the event loop alive.
#pragma once

#include <napi.h>

#include <memory>

#include "memory/buffer_pool.h"
#include "napi/js_channel.h"
#include "scheduling/model_scheduler.h"

namespace infernode {

class NativeModel final : public Napi::ObjectWrap<NativeModel>, public JsChannelListener {
 public:
  static Napi::Function Define(Napi::Env env);

  // new NativeModel(config, onExecute(instance, token, ids), onComplete(responses), onnxHandle?,
  // rateLimiter?) Without a handle the instances are JS callables; with one, ONNX Runtime
  // sessions. With a RateLimiter (rate_limiter_object.h) the instances execute only when the
  // resources of their group (config.instanceGroup[].rateLimiter) are available.
  explicit NativeModel(const Napi::CallbackInfo& info);
  ~NativeModel() override;

  void OnExecute(Napi::Env env, uint32_t instance, uint64_t token, const std::vector<uint64_t>& ids) override;
  void OnResponses(Napi::Env env, std::vector<InferenceResponse> responses) override;

 private:
  Napi::Value Enqueue(const Napi::CallbackInfo& info);
  Napi::Value CompleteBatch(const Napi::CallbackInfo& info);
  Napi::Value FinishRequest(const Napi::CallbackInfo& info);
  Napi::Value AddedInputs(const Napi::CallbackInfo& info);
  Napi::Value Cancel(const Napi::CallbackInfo& info);
  Napi::Value Pump(const Napi::CallbackInfo& info);
  Napi::Value Views(const Napi::CallbackInfo& info);
  Napi::Value Drain(const Napi::CallbackInfo& info);
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);

  // enqueue, pump and completeBatch as own functions of the JS object (see CallLinked).
  struct Link;
  template <Napi::Value (NativeModel::*Method)(const Napi::CallbackInfo&)>
  static Napi::Value CallLinked(const Napi::CallbackInfo& info);
  void AttachLinkedMethods(Napi::Env env, Napi::Object self);

  // Converts handed-back responses to their count (in the scratch) or [ids, codes, messages?,
  // outputs?, timings?], and updates outstanding_.
  Napi::Value ResponsesToJs(Napi::Env env, std::vector<InferenceResponse> responses);
  void StopAll();
  static void CleanupHook(NativeModel* self);

  std::vector<std::unique_ptr<ModelInstance>> MakeInstances(Napi::Env env, const Napi::Value& onnx_handle);

  // Declaration order is teardown order reversed: the scheduler (and its instances, which use
  // the pool and the channel) goes first.
  std::unique_ptr<JsChannel> channel_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<ModelScheduler> scheduler_;
  Napi::FunctionReference on_execute_;
  Napi::FunctionReference on_complete_;
  Napi::Env::CleanupHook<void (*)(NativeModel*), NativeModel> cleanup_hook_;
  // Memory behind the views pump() and the completions hand to JS (views(); see ScratchData).
  Napi::Reference<Napi::ArrayBuffer> dispatch_scratch_;
  Napi::Reference<Napi::ArrayBuffer> ids_scratch_;
  Napi::Reference<Napi::ArrayBuffer> codes_scratch_;
  Napi::Reference<Napi::ArrayBuffer> flags_scratch_;    // [pump owed after completeBatch]
  Napi::Reference<Napi::ArrayBuffer> timings_scratch_;  // kTimingFields doubles per handed-back request
  std::shared_ptr<Link> link_;  // shared with the linked functions; nulled when this model is destroyed
  int64_t outstanding_ = 0;
  bool stopped_ = false;
};

}  // namespace infernode
