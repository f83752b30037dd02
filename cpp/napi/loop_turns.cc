#include "napi/loop_turns.h"

#include <memory>

#include "napi/addon_data.h"

// The libuv 1.x entry points used here. Node-API's headers (node-api-headers, what the cmake-js
// build compiles against) do not include uv.h, so they are declared from libuv's stable 1.x ABI,
// with the handle kept opaque and sized by uv_handle_size(); the node binary provides them.
extern "C" {
struct uv_handle_s;
struct uv_prepare_s;
size_t uv_handle_size(int type);
int uv_prepare_init(uv_loop_s* loop, uv_prepare_s* prepare);
int uv_prepare_start(uv_prepare_s* prepare, void (*cb)(uv_prepare_s*));
int uv_prepare_stop(uv_prepare_s* prepare);
void uv_close(uv_handle_s* handle, void (*close_cb)(uv_handle_s*));
void uv_unref(uv_handle_s* handle);
void* uv_handle_get_data(const uv_handle_s* handle);
void uv_handle_set_data(uv_handle_s* handle, void* data);
}

namespace infernode {

namespace {
constexpr int kUvPrepare = 9;  // UV_PREPARE in libuv 1.x's uv_handle_type
}  // namespace

// Owned by AddonData from the first loopTurns() call; the handle and the buffer it writes live
// until the environment's cleanup closes the handle (CloseHandle), then the closed handle frees
// this (OnClosed).
struct LoopTurns {
  std::unique_ptr<char[]> handle_memory{new char[uv_handle_size(kUvPrepare)]()};
  Napi::Reference<Napi::ArrayBuffer> buffer;
  double* count = nullptr;
  napi_async_cleanup_hook_handle cleanup = nullptr;

  uv_prepare_s* Prepare() { return reinterpret_cast<uv_prepare_s*>(handle_memory.get()); }
  uv_handle_s* Handle() { return reinterpret_cast<uv_handle_s*>(handle_memory.get()); }
};

namespace {

LoopTurns* TurnsOf(uv_handle_s* handle) { return static_cast<LoopTurns*>(uv_handle_get_data(handle)); }

void OnPrepare(uv_prepare_s* prepare) {
  LoopTurns* turns = TurnsOf(reinterpret_cast<uv_handle_s*>(prepare));
  if (turns->count != nullptr) ++*turns->count;
}

void OnClosed(uv_handle_s* handle) {
  LoopTurns* turns = TurnsOf(handle);
  if (turns->cleanup != nullptr) napi_remove_async_cleanup_hook(turns->cleanup);
  delete turns;
}

// The environment is going away: stop counting and close the handle; its close callback frees
// the rest. The buffer's reference is released here, on the main thread, while N-API works.
void CloseHandle(napi_async_cleanup_hook_handle, void* arg) {
  auto* turns = static_cast<LoopTurns*>(arg);
  uv_prepare_stop(turns->Prepare());
  turns->count = nullptr;
  turns->buffer.Reset();
  uv_close(turns->Handle(), OnClosed);
}

LoopTurns* StartLoopTurns(Napi::Env env) {
  uv_loop_s* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    throw Napi::Error::New(env, "loopTurns: the environment has no event loop");
  }
  auto* turns = new LoopTurns();
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, sizeof(double));
  turns->buffer = Napi::Persistent(buffer);
  turns->count = static_cast<double*>(buffer.Data());
  *turns->count = 0;
  uv_prepare_init(loop, turns->Prepare());
  uv_handle_set_data(turns->Handle(), turns);
  uv_prepare_start(turns->Prepare(), OnPrepare);
  uv_unref(turns->Handle());
  if (napi_add_async_cleanup_hook(env, CloseHandle, turns, &turns->cleanup) != napi_ok) {
    // Without a cleanup hook the handle could outlive the environment: do not count at all.
    CloseHandle(nullptr, turns);
    throw Napi::Error::New(env, "loopTurns: cannot register the environment's cleanup");
  }
  return turns;
}

}  // namespace

Napi::Value LoopTurnsFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data->loop_turns == nullptr) data->loop_turns = StartLoopTurns(env);
  return Napi::Float64Array::New(env, 1, data->loop_turns->buffer.Value(), 0);
}

}  // namespace infernode
