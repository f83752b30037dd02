// The one way native threads reach JS for a model: a ThreadSafeFunction whose queue holds at
// most one pending wake. Threads append to our own lists and wake JS only when no wake is
// pending, so one wake drains many messages (execute requests for JS instances, and responses).
//
// Threads: Post*/Deliver from any thread; everything else on the main thread. The shared
// State outlives this object until the TSFN finalizer runs, so a late wake is harmless.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/completion_sink.h"

namespace infernode {

// Receives the drained messages on the main thread.
class JsChannelListener {
 public:
  virtual ~JsChannelListener() = default;
  virtual void OnExecute(Napi::Env env, uint32_t instance, uint64_t token, const std::vector<uint64_t>& ids) = 0;
  virtual void OnResponses(Napi::Env env, std::vector<InferenceResponse> responses) = 0;
};

class JsChannel final : public CompletionSink {
 public:
  JsChannel(Napi::Env env, JsChannelListener* listener);
  ~JsChannel() override;

  void PostExecute(uint32_t instance, uint64_t token, std::vector<uint64_t> ids);
  void Deliver(std::vector<InferenceResponse> responses) override;

  // Main thread. Keep the event loop alive while requests are outstanding.
  void Ref(Napi::Env env);
  void Unref(Napi::Env env);

  // Main thread. Responses delivered and not yet drained (the caller hands them to JS itself:
  // a model's stop() must not leave any behind for a channel that is about to close).
  std::vector<InferenceResponse> TakeResponses();

  // Main thread. Detaches the listener and releases the TSFN; later posts are dropped.
  void Close();

  struct State;
  using SharedState = std::shared_ptr<State>;
  static void CallJs(Napi::Env env, Napi::Function, SharedState* state, std::nullptr_t*);
  using Tsfn = Napi::TypedThreadSafeFunction<SharedState, std::nullptr_t, &JsChannel::CallJs>;

 private:
  void Wake(std::unique_lock<std::mutex>& lock);

  SharedState state_;
  Tsfn tsfn_;  // released by Close(); the finalizer frees its SharedState context
};

}  // namespace infernode
