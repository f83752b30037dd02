#include "napi/hash128_function.h"

#include <string>

#include "core/hash128.h"

namespace infernode {

namespace {

// One per process, never shown to clients: keys of the response cache cannot be predicted from
// outside, so a client cannot search for a request whose key collides with another client's.
// Shared by every environment (worker threads): each caches under its own keys anyway.
const Hash128Secret& ProcessSecret() {
  static const Hash128Secret secret = Hash128RandomSecret();
  return secret;
}

[[noreturn]] void ThrowNotAPart(Napi::Env env, uint32_t index) {
  throw Napi::TypeError::New(env, "hash128(parts): part " + std::to_string(index) +
                                      " is neither a string nor an ArrayBufferView (TypedArray, Buffer, DataView)");
}

// Bytes of napi_typedarray_type's elements, in the enum's order (int8 .. float16).
size_t ElementSize(napi_typedarray_type type) {
  static constexpr size_t kElementSize[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8, 2};
  const size_t index = static_cast<size_t>(type);
  return index < sizeof(kElementSize) / sizeof(kElementSize[0]) ? kElementSize[index] : 1;
}

void UpdateWithString(napi_env env, napi_value value, Hash128State* state) {
  // Headers are short: a stack buffer, else one allocation.
  char16_t small[256];
  size_t length = 0;
  napi_get_value_string_utf16(env, value, nullptr, 0, &length);
  std::u16string large;
  char16_t* units = small;
  if (length + 1 > sizeof(small) / sizeof(small[0])) {
    large.resize(length + 1);
    units = &large[0];
  }
  size_t copied = 0;
  napi_get_value_string_utf16(env, value, units, length + 1, &copied);
  state->Update(units, copied * sizeof(char16_t));
}

// Adds one part; false when it is neither a string nor a view.
bool UpdateWithPart(napi_env env, napi_value value, Hash128State* state) {
  napi_valuetype kind;
  napi_typeof(env, value, &kind);
  if (kind == napi_string) {
    UpdateWithString(env, value, state);
    return true;
  }
  if (kind != napi_object) return false;
  bool is_typed = false;
  napi_is_typedarray(env, value, &is_typed);
  if (is_typed) {
    napi_typedarray_type type;
    size_t length = 0;
    void* data = nullptr;  // already at the view's first element
    if (napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr) != napi_ok) return false;
    state->Update(data, length * ElementSize(type));
    return true;
  }
  bool is_data_view = false;
  napi_is_dataview(env, value, &is_data_view);
  if (is_data_view) {
    size_t byte_length = 0;
    void* data = nullptr;
    if (napi_get_dataview_info(env, value, &byte_length, &data, nullptr, nullptr) != napi_ok) return false;
    state->Update(data, byte_length);
    return true;
  }
  return false;
}

}  // namespace

Napi::Value Hash128Function(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "hash128(parts): parts must be an array");
  const Napi::Array parts = info[0].As<Napi::Array>();
  const Hash128Secret& secret = ProcessSecret();
  Hash128State state(secret.data(), secret.size());
  const uint32_t count = parts.Length();
  for (uint32_t i = 0; i < count; ++i) {
    napi_value part;
    if (napi_get_element(env, parts, i, &part) != napi_ok || !UpdateWithPart(env, part, &state)) ThrowNotAPart(env, i);
  }
  char hex[32];
  Hash128ToHex(state.Final(), hex);
  napi_value out;
  napi_create_string_latin1(env, hex, sizeof(hex), &out);
  return Napi::Value(env, out);
}

}  // namespace infernode
