#include "scheduling/request_validator.h"

#include <algorithm>

#include "core/message.h"

namespace infernode {

namespace {

std::string InputLabel(const ModelConfig& config, const std::string& input) {
  return "input '" + Clip(input) + "' for model '" + config.name + "'";
}

const TensorConfig* FindInput(const ModelConfig& config, const std::string& name) {
  for (const TensorConfig& t : config.inputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Shape and byte-size checks of one input; `rows` gets its batch dim (batching models).
Status ValidateInput(const ModelConfig& config, const TensorConfig& spec, const InputTensor& in, int64_t* rows) {
  // Only a refusal needs the label: not built per request.
  const auto label = [&] { return InputLabel(config, in.name); };
  if (in.dtype != spec.dtype) {
    return InvalidArg(std::string("unexpected datatype ") + DataTypeName(in.dtype) + " for " + label() + ", expected " +
                      DataTypeName(spec.dtype));
  }
  const bool batching = config.max_batch_size > 0;
  Shape dims = in.shape;
  if (batching) {
    if (in.shape.empty()) {
      return InvalidArg("unexpected shape for " + label() + ": missing the batch dimension, expected [-1" +
                        (spec.dims.empty() ? "" : ",") + ShapeToString(spec.dims).substr(1));
    }
    *rows = in.shape[0];
    dims.erase(dims.begin());
  }
  if (!ShapeMatches(spec.dims, dims)) {
    Shape expected = spec.dims;
    if (batching) expected.insert(expected.begin(), -1);
    // Triton's text; when the shape is one sample without its batch axis, say so.
    const bool one_sample = batching && ShapeMatches(spec.dims, in.shape);
    return InvalidArg("unexpected shape for " + label() + ". Expected " + ShapeToString(expected) + ", got " +
                      ClippedShape(in.shape) +
                      (one_sample ? " (one sample without the batch dimension: give it shape [1," +
                                        ShapeToString(in.shape).substr(1) + ")"
                                  : ""));
  }
  int64_t count = 0;
  Status s = ElementCount(in.shape, &count);
  if (!s.IsOk()) return InvalidArg(s.Message() + " for " + label());
  if (in.dtype == DataType::kBytes) {
    if (in.data_in_js) return Status::Success();  // JS counted its elements
    int64_t found = 0;
    s = CountSerializedBytes(in.data, in.byte_size, &found);
    if (!s.IsOk()) return InvalidArg(s.Message() + " in " + label());
    if (found != count) {
      return InvalidArg("expected " + std::to_string(count) + " string elements for " + label() + ", got " +
                        std::to_string(found));
    }
    return Status::Success();
  }
  uint64_t expected_bytes = 0;
  s = ByteSize(in.dtype, in.shape, &expected_bytes);
  if (!s.IsOk()) return InvalidArg(s.Message() + " for " + label());
  if (expected_bytes != in.byte_size) {
    return InvalidArg("input byte size mismatch for " + label() + ": expected " + std::to_string(expected_bytes) +
                      " bytes for shape " + ClippedShape(in.shape) + ", got " + std::to_string(in.byte_size));
  }
  return Status::Success();
}

// Triton checks how many inputs came before anything else, with this text (infer_request.cc
// ValidateRequestInputs), which Triton's clients and qa/L0_input_validation read word for word.
Status ValidateInputCount(const ModelConfig& config, const std::vector<InputTensor>& inputs) {
  size_t required = 0;
  std::string missing;
  for (const TensorConfig& spec : config.inputs) {
    if (spec.optional) continue;
    ++required;
    const bool present =
        std::any_of(inputs.begin(), inputs.end(), [&spec](const InputTensor& in) { return in.name == spec.name; });
    if (!present) missing += (missing.empty() ? "'" : ",'") + spec.name + "'";
  }
  if (inputs.size() <= config.inputs.size() && inputs.size() >= required) return Status::Success();
  std::string got;
  for (const InputTensor& in : inputs) got += (got.empty() ? "'" : ",'") + Clip(in.name) + "'";
  const std::string total = std::to_string(config.inputs.size());
  const std::string expected = required == config.inputs.size()
                                   ? "expected " + total + " inputs"
                                   : "expected number of inputs between " + std::to_string(required) + " and " + total;
  return InvalidArg(expected + " but got " + std::to_string(inputs.size()) + " inputs for model '" + config.name +
                    "'. Got input(s) [" + got + "], but missing required input(s) [" + missing +
                    "]. Please provide all required input(s).");
}

bool HasVariableDim(const Shape& dims) {
  for (int64_t d : dims) {
    if (d < 0) return true;
  }
  return false;
}

}  // namespace

Status ValidateRequest(const ModelConfig& config, InferenceRequest* request) {
  int64_t batch = -1;
  const auto& inputs = request->inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {  // a handful of inputs: a scan beats a hash set
      if (inputs[j].name == inputs[i].name) return InvalidArg("duplicate " + InputLabel(config, inputs[i].name));
    }
  }
  RETURN_IF_ERROR(ValidateInputCount(config, inputs));
  for (const InputTensor& in : inputs) {
    const TensorConfig* spec = FindInput(config, in.name);
    if (spec == nullptr) {
      return InvalidArg("unexpected inference input '" + Clip(in.name) + "' for model '" + config.name + "'");
    }
    int64_t rows = 1;
    RETURN_IF_ERROR(ValidateInput(config, *spec, in, &rows));
    if (batch >= 0 && rows != batch) {
      return InvalidArg("input '" + Clip(in.name) + "' for model '" + config.name + "' has batch size " +
                        std::to_string(rows) + ", other inputs have " + std::to_string(batch));
    }
    batch = rows;
  }
  std::string key;
  for (const TensorConfig& spec : config.inputs) {
    const InputTensor* present = nullptr;
    for (const InputTensor& in : request->inputs) {
      if (in.name == spec.name) present = &in;
    }
    if (present == nullptr) {
      if (!spec.optional) {
        // Not reached after the count check and the loop above (whatever took this input's
        // place was unexpected or a duplicate); a guard all the same.
        return InvalidArg("expected " + std::to_string(config.inputs.size()) + " inputs but missing input '" +
                          spec.name + "' for model '" + config.name + "'");
      }
      key += "-;";
      continue;
    }
    key += "+";
    // Variable-size inputs must agree on their non-batch dims unless ragged batching is allowed.
    if (HasVariableDim(spec.dims) && !spec.allow_ragged_batch) {
      key += ShapeToString(Shape(present->shape.begin() + (config.max_batch_size > 0 ? 1 : 0), present->shape.end()));
    }
    key += ";";
  }
  if (request->inputs.empty()) { return InvalidArg("request for model '" + config.name + "' has no inputs"); }
  if (config.max_batch_size > 0) {
    if (batch < 1) { return InvalidArg("inference request batch-size must be >= 1 for model '" + config.name + "'"); }
    if (batch > config.max_batch_size) {
      return InvalidArg("inference request batch-size must be <= " + std::to_string(config.max_batch_size) + " for '" +
                        config.name + "', got " + std::to_string(batch));
    }
  }
  request->batch_size = config.max_batch_size > 0 ? batch : 1;
  request->batch_key = std::move(key);
  return Status::Success();
}

}  // namespace infernode
