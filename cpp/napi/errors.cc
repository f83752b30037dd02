#include "napi/errors.h"

#include "napi/addon_data.h"

namespace infernode {

Napi::Value MakeError(Napi::Env env, const Status& status) {
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data != nullptr && !data->error_class.IsEmpty()) {
    return data->error_class.New(
        {Napi::Number::New(env, static_cast<int>(status.Code())), Napi::String::New(env, status.Message())});
  }
  return Napi::Error::New(env, status.Message()).Value();
}

void ThrowStatus(Napi::Env env, const Status& status) { throw Napi::Error(env, MakeError(env, status)); }

}  // namespace infernode
