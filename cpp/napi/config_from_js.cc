#include "napi/config_from_js.h"

#include <string>

#include "core/clock.h"
#include "core/datatype.h"

namespace infernode {

namespace {

double NumberOr(const Napi::Object& obj, const char* key, double fallback) {
  Napi::Value v = obj.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

// A uint64 config field (ts/config/int64-fields.ts): a Number up to 2^53 - 1, or a BigInt beyond,
// read exactly. The TypeScript side has checked the range; a BigInt that does not fit is a
// TypeError.
uint64_t Uint64Or(const Napi::Object& obj, const char* key, uint64_t fallback) {
  Napi::Value v = obj.Get(key);
  if (v.IsBigInt()) {
    bool lossless = true;
    const uint64_t value = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::TypeError::New(obj.Env(), std::string(key) + " does not fit an unsigned 64-bit integer");
    return value;
  }
  if (!v.IsNumber()) return fallback;
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d > 0)) return 0;
  return d >= 18446744073709551616.0 ? UINT64_MAX : static_cast<uint64_t>(d);
}

// A priority_queue_policy key: the decimal digits of a level in 1..2^64 - 1 (as normalize.ts
// writes them).
uint64_t LevelKey(Napi::Env env, const std::string& key) {
  uint64_t level = 0;
  bool ok = !key.empty();
  for (const char c : key) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (c < '0' || c > '9' || level > (UINT64_MAX - digit) / 10) {
      ok = false;
      break;
    }
    level = level * 10 + digit;
  }
  if (!ok) throw Napi::TypeError::New(env, "priority level '" + key + "' is not a level number");
  return level;
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
  // Exact: DeadlineNs (core/clock.h) makes a timeout too long to count in ns one that never expires.
  policy.default_timeout_us = Uint64Or(p, "defaultTimeoutMicroseconds", 0);
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
  b.max_queue_delay_us = LongestWaitUs(Uint64Or(obj, "maxQueueDelayMicroseconds", 0));
  b.preserve_ordering = BoolOr(obj, "preserveOrdering", false);
  b.priority_levels = Uint64Or(obj, "priorityLevels", 0);
  b.default_priority_level = Uint64Or(obj, "defaultPriorityLevel", 0);
  b.default_queue_policy = QueuePolicyFromJs(obj.Get("defaultQueuePolicy").As<Napi::Object>());
  Napi::Object per_level = obj.Get("priorityQueuePolicy").As<Napi::Object>();
  Napi::Array keys = per_level.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    b.priority_queue_policy[LevelKey(value.Env(), key)] = QueuePolicyFromJs(per_level.Get(key).As<Napi::Object>());
  }
  return b;
}

ControlKind ControlKindFromName(const std::string& kind) {
  if (kind == "CONTROL_SEQUENCE_END") return ControlKind::kEnd;
  if (kind == "CONTROL_SEQUENCE_READY") return ControlKind::kReady;
  if (kind == "CONTROL_SEQUENCE_CORRID") return ControlKind::kCorrId;
  return ControlKind::kStart;
}

DataType DataTypeOf(const Napi::Object& obj, const char* key, const std::string& what) {
  const DataType dtype = DataTypeFromName(obj.Get(key).ToString().Utf8Value());
  if (dtype == DataType::kInvalid) throw Napi::TypeError::New(obj.Env(), what + " has an invalid dtype");
  return dtype;
}

std::vector<uint8_t> BytesFromJs(const Napi::Value& value) {
  if (!value.IsTypedArray()) return {};
  Napi::TypedArray array = value.As<Napi::TypedArray>();
  const auto* begin = static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
  return std::vector<uint8_t>(begin, begin + array.ByteLength());
}

StateConfig StateFromJs(const Napi::Object& s) {
  StateConfig state;
  state.input_name = s.Get("inputName").ToString().Utf8Value();
  state.output_name = s.Get("outputName").ToString().Utf8Value();
  state.dtype = DataTypeOf(s, "dtype", "state '" + state.input_name + "'");
  state.dims = ShapeFromJs(s.Get("dims"));
  Napi::Value initial = s.Get("initialState");
  if (initial.IsObject()) {
    state.initial_dims = ShapeFromJs(initial.As<Napi::Object>().Get("dims"));
    state.initial_data = BytesFromJs(initial.As<Napi::Object>().Get("data"));
    return state;
  }
  // No initial_state: zeros of the declared dims (a dynamic dim starts empty).
  state.initial_dims = state.dims;
  int64_t count = 1;
  for (int64_t& d : state.initial_dims) {
    if (d < 0) d = 0;
    count *= d;
  }
  const size_t element = state.dtype == DataType::kBytes ? 4 : DataTypeByteSize(state.dtype);
  state.initial_data.assign(static_cast<size_t>(count) * element, 0);
  return state;
}

TensorConfig ImplicitInput(const std::string& name, DataType dtype, const Shape& dims) {
  TensorConfig tensor;
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.dims = dims;
  return tensor;
}

// sequenceBatching (NormalizedSequenceBatching in ts/config/normalize.ts); also lists the
// inputs it adds in config->implicit_inputs.
void SequenceFromJs(const Napi::Value& value, ModelConfig* config) {
  SequenceBatchingConfig& q = config->sequence;
  if (!value.IsObject()) return;
  Napi::Object obj = value.As<Napi::Object>();
  q.enabled = true;
  q.strategy =
      obj.Get("strategy").ToString().Utf8Value() == "oldest" ? SequenceStrategy::kOldest : SequenceStrategy::kDirect;
  q.max_sequence_idle_us = LongestWaitUs(Uint64Or(obj, "maxSequenceIdleMicroseconds", 1000000));
  q.max_queue_delay_us = LongestWaitUs(Uint64Or(obj, "maxQueueDelayMicroseconds", 0));
  q.minimum_slot_utilization = static_cast<float>(NumberOr(obj, "minimumSlotUtilization", 0));
  q.max_candidate_sequences = static_cast<uint32_t>(NumberOr(obj, "maxCandidateSequences", 1));
  q.preferred_batch_sizes = ShapeFromJs(obj.Get("preferredBatchSize"));
  q.preserve_ordering = BoolOr(obj, "preserveOrdering", false);
  q.iterative = BoolOr(obj, "iterativeSequence", false);
  Napi::Value controls = obj.Get("controls");
  for (uint32_t i = 0; controls.IsArray() && i < controls.As<Napi::Array>().Length(); ++i) {
    Napi::Object c = controls.As<Napi::Array>().Get(i).As<Napi::Object>();
    ControlConfig control;
    control.kind = ControlKindFromName(c.Get("kind").ToString().Utf8Value());
    control.name = c.Get("name").ToString().Utf8Value();
    control.dtype = DataTypeOf(c, "dtype", "control input '" + control.name + "'");
    Napi::Value false_true = c.Get("falseTrue");
    if (false_true.IsArray()) {
      control.false_value = false_true.As<Napi::Array>().Get(uint32_t{0}).ToNumber().DoubleValue();
      control.true_value = false_true.As<Napi::Array>().Get(uint32_t{1}).ToNumber().DoubleValue();
    }
    q.controls.push_back(control);
    config->implicit_inputs.push_back(ImplicitInput(control.name, control.dtype, Shape{1}));
  }
  Napi::Value states = obj.Get("states");
  for (uint32_t i = 0; states.IsArray() && i < states.As<Napi::Array>().Length(); ++i) {
    StateConfig state = StateFromJs(states.As<Napi::Array>().Get(i).As<Napi::Object>());
    config->implicit_inputs.push_back(ImplicitInput(state.input_name, state.dtype, state.dims));
    q.states.push_back(std::move(state));
  }
}

// The GPU of each instance a group makes, as ts/config/instances.ts counts them: `count`
// instances on each GPU a KIND_GPU group lists (Triton), else `count` instances on device 0 (CPU
// instances count as device 0 for the rate limiter, as in Triton).
std::vector<int> InstanceDevicesFromJs(const Napi::Object& group) {
  const auto count = static_cast<uint32_t>(NumberOr(group, "count", 1));
  std::vector<int> gpus;
  Napi::Value listed = group.Get("gpus");
  const bool gpu_kind = group.Get("kind").IsString() && group.Get("kind").ToString().Utf8Value() == "KIND_GPU";
  for (uint32_t i = 0; gpu_kind && listed.IsArray() && i < listed.As<Napi::Array>().Length(); ++i) {
    gpus.push_back(listed.As<Napi::Array>().Get(i).ToNumber().Int32Value());
  }
  if (gpus.empty()) gpus.push_back(0);
  // Count-major, as Triton's backend_model.cc: for each of `count`, one instance per GPU.
  std::vector<int> devices;
  for (uint32_t c = 0; c < count; ++c) devices.insert(devices.end(), gpus.begin(), gpus.end());
  return devices;
}

// A group's rateLimiter ({ resources: [{ name, count, global }], priority }, validated by
// ts/config/rate-limiter.ts) for each of its instances, on that instance's device.
void RateLimitsFromJs(const Napi::Object& group, const std::vector<int>& devices,
                      std::vector<InstanceRateLimits>* out) {
  InstanceRateLimits limits;
  Napi::Value value = group.Get("rateLimiter");
  if (value.IsObject()) {
    Napi::Object rl = value.As<Napi::Object>();
    limits.priority = static_cast<uint32_t>(NumberOr(rl, "priority", 0));
    Napi::Value resources = rl.Get("resources");
    for (uint32_t i = 0; resources.IsArray() && i < resources.As<Napi::Array>().Length(); ++i) {
      Napi::Object r = resources.As<Napi::Array>().Get(i).As<Napi::Object>();
      RateLimitResource resource;
      resource.name = r.Get("name").ToString().Utf8Value();
      resource.count = static_cast<uint64_t>(NumberOr(r, "count", 0));
      resource.global = BoolOr(r, "global", false);
      limits.resources.push_back(std::move(resource));
    }
  }
  for (int device : devices) {
    limits.device = device;
    out->push_back(limits);
  }
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
  SequenceFromJs(js.Get("sequenceBatching"), &config);
  uint32_t instances = 0;
  Napi::Array groups = js.Get("instanceGroup").As<Napi::Array>();
  for (uint32_t i = 0; i < groups.Length(); ++i) {
    Napi::Object group = groups.Get(i).As<Napi::Object>();
    const std::vector<int> devices = InstanceDevicesFromJs(group);
    instances += static_cast<uint32_t>(devices.size());
    RateLimitsFromJs(group, devices, &config.rate_limits);
  }
  config.instance_count = instances == 0 ? 1 : instances;
  config.max_queue_size_hard_limit =
      static_cast<uint32_t>(NumberOr(js, "maxQueueSizeHardLimit", kDefaultMaxQueueSizeHardLimit));
  return config;
}

}  // namespace infernode
