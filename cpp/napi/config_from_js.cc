#include "napi/config_from_js.h"

#include <string>

#include "core/datatype.h"

namespace infernode {

namespace {

double NumberOr(const Napi::Object& obj, const char* key, double fallback) {
  Napi::Value v = obj.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

bool BoolOr(const Napi::Object& obj, const char* key, bool fallback) {
  Napi::Value v = obj.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : fallback;
}

Shape ShapeFromJs(const Napi::Value& value) {
  Shape shape;
  if (!value.IsArray()) return shape;
  Napi::Array arr = value.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    shape.push_back(static_cast<int64_t>(arr.Get(i).As<Napi::Number>().Int64Value()));
  }
  return shape;
}

std::vector<TensorConfig> TensorsFromJs(const Napi::Value& value) {
  std::vector<TensorConfig> out;
  Napi::Array arr = value.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Object t = arr.Get(i).As<Napi::Object>();
    TensorConfig tensor;
    tensor.name = t.Get("name").As<Napi::String>().Utf8Value();
    tensor.dtype = DataTypeFromName(t.Get("dtype").As<Napi::String>().Utf8Value());
    if (tensor.dtype == DataType::kInvalid) {
      throw Napi::TypeError::New(arr.Env(), "tensor '" + tensor.name + "' has an invalid dtype");
    }
    tensor.dims = ShapeFromJs(t.Get("dims"));
    tensor.optional = BoolOr(t, "optional", false);
    tensor.allow_ragged_batch = BoolOr(t, "allowRaggedBatch", false);
    tensor.has_reshape = t.Get("reshape").IsArray();
    if (tensor.has_reshape) tensor.reshape = ShapeFromJs(t.Get("reshape"));
    out.push_back(std::move(tensor));
  }
  return out;
}

QueuePolicy QueuePolicyFromJs(const Napi::Object& p) {
  QueuePolicy policy;
  const std::string action = p.Get("timeoutAction").As<Napi::String>().Utf8Value();
  policy.timeout_action = action == "DELAY" ? TimeoutAction::kDelay : TimeoutAction::kReject;
  policy.default_timeout_us = static_cast<uint64_t>(NumberOr(p, "defaultTimeoutMicroseconds", 0));
  policy.allow_timeout_override = BoolOr(p, "allowTimeoutOverride", false);
  policy.max_queue_size = static_cast<uint32_t>(NumberOr(p, "maxQueueSize", 0));
  return policy;
}

DynamicBatchingConfig BatchingFromJs(const Napi::Value& value) {
  DynamicBatchingConfig b;
  if (!value.IsObject()) return b;  // null: the default scheduler
  Napi::Object obj = value.As<Napi::Object>();
  b.enabled = true;
  b.preferred_batch_sizes = ShapeFromJs(obj.Get("preferredBatchSize"));
  b.max_queue_delay_us = static_cast<uint64_t>(NumberOr(obj, "maxQueueDelayMicroseconds", 0));
  b.preserve_ordering = BoolOr(obj, "preserveOrdering", false);
  b.priority_levels = static_cast<uint32_t>(NumberOr(obj, "priorityLevels", 0));
  b.default_priority_level = static_cast<uint32_t>(NumberOr(obj, "defaultPriorityLevel", 0));
  b.default_queue_policy = QueuePolicyFromJs(obj.Get("defaultQueuePolicy").As<Napi::Object>());
  Napi::Object per_level = obj.Get("priorityQueuePolicy").As<Napi::Object>();
  Napi::Array keys = per_level.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    b.priority_queue_policy[static_cast<uint32_t>(std::stoul(key))] =
        QueuePolicyFromJs(per_level.Get(key).As<Napi::Object>());
  }
  return b;
}

}  // namespace

ModelConfig ModelConfigFromJs(const Napi::Object& js) {
  ModelConfig config;
  config.name = js.Get("name").As<Napi::String>().Utf8Value();
  config.version = static_cast<int64_t>(NumberOr(js, "version", 1));
  config.max_batch_size = static_cast<int64_t>(NumberOr(js, "maxBatchSize", 0));
  config.inputs = TensorsFromJs(js.Get("inputs"));
  config.outputs = TensorsFromJs(js.Get("outputs"));
  config.batching = BatchingFromJs(js.Get("dynamicBatching"));
  uint32_t instances = 0;
  Napi::Array groups = js.Get("instanceGroup").As<Napi::Array>();
  for (uint32_t i = 0; i < groups.Length(); ++i) {
    instances += static_cast<uint32_t>(NumberOr(groups.Get(i).As<Napi::Object>(), "count", 1));
  }
  config.instance_count = instances == 0 ? 1 : instances;
  config.max_queue_size_hard_limit = static_cast<uint32_t>(NumberOr(js, "maxQueueSizeHardLimit", 65536));
  return config;
}

}  // namespace infernode
