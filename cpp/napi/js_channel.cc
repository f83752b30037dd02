#include "napi/js_channel.h"

#include <iterator>
#include <utility>

namespace infernode {

namespace {
struct ExecuteMessage {
  uint32_t instance;
  uint64_t token;
  std::vector<uint64_t> ids;
};
}  // namespace

struct JsChannel::State {
  std::mutex mu;
  std::vector<ExecuteMessage> executes;
  std::vector<InferenceResponse> responses;
  bool wake_pending = false;
  bool closed = false;
  JsChannelListener* listener = nullptr;    // read and cleared on the main thread only
  napi_threadsafe_function tsfn = nullptr;  // for re-waking from Drain; unused once closed

  // Hands the queued messages to the listener. A JS exception out of a listener (a throwing
  // callback, or a worker being terminated) must not escape this C callback, which would end
  // the process: the rest of the messages go back on the queue for another wake, and the
  // exception is rethrown into JS for Node to report.
  void Drain(Napi::Env env) {
    std::vector<ExecuteMessage> execs;
    std::vector<InferenceResponse> resps;
    {
      std::lock_guard<std::mutex> lock(mu);
      execs.swap(executes);
      resps.swap(responses);
      wake_pending = false;
    }
    // The first execute not yet handed to the listener. An execute whose OnExecute threw was
    // handed over (its callable ran and failed on its own); one behind a throwing OnResponses
    // was not, so none is skipped.
    size_t next = 0;
    try {
      if (listener != nullptr && !resps.empty()) listener->OnResponses(env, std::move(resps));
      while (next < execs.size() && listener != nullptr) {
        const ExecuteMessage& message = execs[next++];
        listener->OnExecute(env, message.instance, message.token, message.ids);
      }
    } catch (const Napi::Error& error) {
      Requeue(std::move(execs), next);
      error.ThrowAsJavaScriptException();
    }
  }

  // Puts the executes from `from` on back in front of anything queued since, and wakes again.
  void Requeue(std::vector<ExecuteMessage> execs, size_t from) {
    std::lock_guard<std::mutex> lock(mu);
    if (closed || from >= execs.size()) return;
    executes.insert(executes.begin(), std::make_move_iterator(execs.begin() + static_cast<std::ptrdiff_t>(from)),
                    std::make_move_iterator(execs.end()));
    if (!wake_pending && napi_call_threadsafe_function(tsfn, nullptr, napi_tsfn_nonblocking) == napi_ok) {
      wake_pending = true;
    }
  }
};

void JsChannel::CallJs(Napi::Env env, Napi::Function, SharedState* state, std::nullptr_t*) {
  if (env != nullptr && state != nullptr) (*state)->Drain(env);
}

JsChannel::JsChannel(Napi::Env env, JsChannelListener* listener) : state_(std::make_shared<State>()) {
  state_->listener = listener;
  auto* context = new SharedState(state_);  // freed by the finalizer below
  tsfn_ = Tsfn::New(env, "infernode-model", 0, 1, context, [](Napi::Env, void*, SharedState* ctx) { delete ctx; });
  tsfn_.Unref(env);
  state_->tsfn = static_cast<napi_threadsafe_function>(tsfn_);
}

JsChannel::~JsChannel() { Close(); }

void JsChannel::Wake(std::unique_lock<std::mutex>& lock) {
  if (state_->wake_pending || state_->closed) return;
  state_->wake_pending = true;
  lock.unlock();
  if (tsfn_.NonBlockingCall(static_cast<std::nullptr_t*>(nullptr)) != napi_ok) {
    std::lock_guard<std::mutex> relock(state_->mu);
    state_->wake_pending = false;  // the env is closing; nothing will drain
  }
}

void JsChannel::PostExecute(uint32_t instance, uint64_t token, std::vector<uint64_t> ids) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->closed) return;
  state_->executes.push_back(ExecuteMessage{instance, token, std::move(ids)});
  Wake(lock);
}

void JsChannel::Deliver(std::vector<InferenceResponse> responses) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->closed) return;
  std::move(responses.begin(), responses.end(), std::back_inserter(state_->responses));
  Wake(lock);
}

void JsChannel::Ref(Napi::Env env) {
  if (!state_->closed) tsfn_.Ref(env);
}

void JsChannel::Unref(Napi::Env env) {
  if (!state_->closed) tsfn_.Unref(env);
}

std::vector<InferenceResponse> JsChannel::TakeResponses() {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<InferenceResponse> taken;
  taken.swap(state_->responses);
  return taken;
}

void JsChannel::Close() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed) return;
    state_->closed = true;
  }
  state_->listener = nullptr;
  tsfn_.Release();
}

}  // namespace infernode
