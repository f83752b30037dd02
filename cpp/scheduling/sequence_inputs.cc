#include "scheduling/sequence_inputs.h"

#include <algorithm>
#include <cstring>

namespace infernode {

namespace {

using Bytes = std::vector<uint8_t>;

// One element of a numeric datatype holding `value` (control values are small integers or
// the floats the config gave).
Bytes ScalarBytes(DataType dtype, double value) {
  Bytes out(DataTypeByteSize(dtype));
  auto put = [&out](auto v) { std::memcpy(out.data(), &v, sizeof(v)); };
  switch (dtype) {
    case DataType::kBool:
      put(static_cast<uint8_t>(value != 0));
      break;
    case DataType::kInt32:
      put(static_cast<int32_t>(value));
      break;
    case DataType::kFp32:
      put(static_cast<float>(value));
      break;
    case DataType::kUint32:
      put(static_cast<uint32_t>(value));
      break;
    case DataType::kInt64:
      put(static_cast<int64_t>(value));
      break;
    case DataType::kUint64:
      put(static_cast<uint64_t>(value));
      break;
    default:
      break;
  }
  return out;
}

// Bytes of a tensor of `count` zero elements (BYTES: empty strings, a zero length each).
Bytes ZeroBytes(DataType dtype, int64_t count) {
  const size_t element = dtype == DataType::kBytes ? 4 : DataTypeByteSize(dtype);
  return Bytes(static_cast<size_t>(std::max<int64_t>(count, 0)) * element, 0);
}

int64_t CountOf(const Shape& shape) {
  int64_t count = 0;
  return ElementCount(shape, &count).IsOk() ? count : 0;
}

}  // namespace

SequenceInputs::SequenceInputs(const ModelConfig& config) : config_(config), batching_(config.max_batch_size > 0) {
  for (const ControlConfig& control : config_.sequence.controls) {
    false_bytes_.push_back(std::make_shared<const Bytes>(ScalarBytes(control.dtype, control.false_value)));
    true_bytes_.push_back(std::make_shared<const Bytes>(ScalarBytes(control.dtype, control.true_value)));
  }
}

InputTensor SequenceInputs::Tensor(const std::string& name, DataType dtype, Shape shape,
                                   std::shared_ptr<const Bytes> bytes) const {
  InputTensor in;
  in.name = name;
  in.dtype = dtype;
  if (batching_) shape.insert(shape.begin(), 1);
  in.shape = std::move(shape);
  in.data = bytes->data();
  in.byte_size = bytes->size();
  in.owner = std::move(bytes);
  in.implicit = true;
  return in;
}

InputTensor SequenceInputs::CorrIdTensor(const ControlConfig& control, const CorrelationId& id) const {
  Bytes bytes;
  if (control.dtype == DataType::kBytes) {
    const std::string& text = id.is_string ? id.text : std::string();
    const auto length = static_cast<uint32_t>(text.size());
    bytes.resize(4 + text.size());
    std::memcpy(bytes.data(), &length, 4);  // little-endian hosts only, as the rest of the core
    std::memcpy(bytes.data() + 4, text.data(), text.size());
  } else {
    // 32-bit types keep the low bits, as Triton does.
    bytes.resize(DataTypeByteSize(control.dtype));
    std::memcpy(bytes.data(), &id.number, bytes.size());
  }
  return Tensor(control.name, control.dtype, Shape{1}, std::make_shared<const Bytes>(std::move(bytes)));
}

void SequenceInputs::AppendControls(InferenceRequest* request, bool start, bool end, bool ready,
                                    const CorrelationId& id) const {
  const auto& controls = config_.sequence.controls;
  for (size_t i = 0; i < controls.size(); ++i) {
    const ControlConfig& control = controls[i];
    if (control.kind == ControlKind::kCorrId) {
      request->inputs.push_back(CorrIdTensor(control, id));
      continue;
    }
    const bool value = control.kind == ControlKind::kStart ? start : control.kind == ControlKind::kEnd ? end : ready;
    request->inputs.push_back(Tensor(control.name, control.dtype, Shape{1}, value ? true_bytes_[i] : false_bytes_[i]));
  }
}

std::vector<StateValue> SequenceInputs::InitialStates() const {
  std::vector<StateValue> states;
  for (const StateConfig& state : config_.sequence.states) {
    StateValue value;
    value.shape = state.initial_dims;
    value.bytes = std::make_shared<const Bytes>(state.initial_data);
    states.push_back(std::move(value));
  }
  return states;
}

void SequenceInputs::AppendStates(InferenceRequest* request, const std::vector<StateValue>& states) const {
  const auto& configs = config_.sequence.states;
  for (size_t i = 0; i < configs.size() && i < states.size(); ++i) {
    request->inputs.push_back(Tensor(configs[i].input_name, configs[i].dtype, states[i].shape, states[i].bytes));
  }
}

std::unique_ptr<InferenceRequest> SequenceInputs::MakeNullRow(const InferenceRequest& like,
                                                              const std::vector<StateValue>& like_states) const {
  auto row = std::make_unique<InferenceRequest>();
  row->is_null = true;
  row->batch_size = 1;
  row->batch_key = like.batch_key;
  for (const InputTensor& in : like.inputs) {
    if (in.implicit) continue;
    auto zeros = std::make_shared<const Bytes>(in.dtype == DataType::kBytes ? ZeroBytes(in.dtype, CountOf(in.shape))
                                                                            : Bytes(in.byte_size, 0));
    InputTensor copy;
    copy.name = in.name;
    copy.dtype = in.dtype;
    copy.shape = in.shape;
    copy.data = zeros->data();
    copy.byte_size = zeros->size();
    copy.owner = std::move(zeros);
    row->inputs.push_back(std::move(copy));
  }
  AppendControls(row.get(), false, false, false, CorrelationId{});
  std::vector<StateValue> zero_states;
  for (size_t i = 0; i < config_.sequence.states.size() && i < like_states.size(); ++i) {
    const StateConfig& state = config_.sequence.states[i];
    zero_states.push_back(StateValue{
        like_states[i].shape, std::make_shared<const Bytes>(ZeroBytes(state.dtype, CountOf(like_states[i].shape)))});
  }
  AppendStates(row.get(), zero_states);
  return row;
}

Status SequenceInputs::TakeStateOutputs(std::vector<OutputTensor>* outputs, std::vector<StateValue>* states) const {
  const auto& configs = config_.sequence.states;
  for (size_t i = 0; i < configs.size() && i < states->size(); ++i) {
    const StateConfig& state = configs[i];
    auto it = std::find_if(outputs->begin(), outputs->end(),
                           [&](const OutputTensor& o) { return o.name == state.output_name; });
    if (it == outputs->end()) continue;  // not produced: the state keeps its value
    if (it->dtype != state.dtype) {
      return InvalidArg("state output '" + state.output_name + "' of model '" + config_.name + "' is " +
                        DataTypeName(it->dtype) + ", its state is declared " + DataTypeName(state.dtype));
    }
    Shape shape = it->shape;
    if (batching_ && !shape.empty()) shape.erase(shape.begin());
    if (!ShapeMatches(state.dims, shape)) {
      return InvalidArg("state output '" + state.output_name + "' of model '" + config_.name + "' has shape " +
                        ShapeToString(shape) + " per request, its state is declared " + ShapeToString(state.dims));
    }
    (*states)[i] = StateValue{std::move(shape), std::make_shared<const Bytes>(it->data, it->data + it->byte_size)};
    const bool declared = std::any_of(config_.outputs.begin(), config_.outputs.end(),
                                      [&](const TensorConfig& o) { return o.name == state.output_name; });
    if (!declared) outputs->erase(it);
  }
  return Status::Success();
}

}  // namespace infernode
