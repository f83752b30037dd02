// OnnxSession::Run and the tensor conversions it needs (split from onnx_session.cc, which
// creates sessions and reads their metadata).
#include <algorithm>
#include <cstring>
#include <vector>

#include "engines/onnx/onnx_session.h"
#include "engines/onnx/ort_types.h"

namespace infernode {

namespace {

struct ValueReleaser {
  const OrtApi* api;
  void operator()(OrtValue* v) const {
    if (v != nullptr) api->ReleaseValue(v);
  }
};
using ValuePtr = std::unique_ptr<OrtValue, ValueReleaser>;

// BYTES serialized as Triton does: a 4-byte little-endian length before each element.
std::vector<std::pair<const uint8_t*, uint32_t>> SplitSerialized(const uint8_t* data, uint64_t size) {
  std::vector<std::pair<const uint8_t*, uint32_t>> items;
  uint64_t offset = 0;
  while (offset + 4 <= size) {
    uint32_t len = 0;
    std::memcpy(&len, data + offset, 4);
    items.emplace_back(data + offset + 4, len);
    offset += 4 + static_cast<uint64_t>(len);
  }
  return items;
}

}  // namespace

Status OnnxSession::MakeInputValue(const GatheredInput& input, OrtValue** value) const {
  const OrtApi* api = runtime_->Api();
  const ONNXTensorElementDataType type = OnnxFromDataType(input.dtype);
  const std::string what = "input '" + input.name + "'";
  if (input.dtype != DataType::kBytes) {
    // A view of the pooled batch buffer: ONNX Runtime reads it in place.
    return runtime_->Check(api->CreateTensorWithDataAsOrtValue(cpu_memory_, input.buffer.Data(), input.buffer.Size(),
                                                               input.shape.data(), input.shape.size(), type, value),
                           what);
  }
  OrtAllocator* allocator = nullptr;
  RETURN_IF_ERROR(runtime_->Check(api->GetAllocatorWithDefaultOptions(&allocator), what));
  RETURN_IF_ERROR(runtime_->Check(api->CreateTensorAsOrtValue(allocator, input.shape.data(), input.shape.size(), type, value), what));
  const auto items = SplitSerialized(input.buffer.Data(), input.buffer.Size());
  for (size_t i = 0; i < items.size(); ++i) {
    char* dest = nullptr;
    RETURN_IF_ERROR(runtime_->Check(api->GetResizedStringTensorElementBuffer(*value, i, items[i].second, &dest), what));
    if (items[i].second > 0) std::memcpy(dest, items[i].first, items[i].second);
  }
  return Status::Success();
}

Status OnnxSession::ReadOutputValue(OrtValue* value, const std::string& name, std::shared_ptr<const void> owner,
                                    OutputTensor* out) const {
  const OrtApi* api = runtime_->Api();
  const std::string what = "output '" + name + "'";
  OrtTensorTypeAndShapeInfo* info = nullptr;
  RETURN_IF_ERROR(runtime_->Check(api->GetTensorTypeAndShape(value, &info), what));
  ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  Status status = runtime_->Check(api->GetTensorElementType(info, &elem), what);
  if (status.IsOk()) status = runtime_->Check(api->GetDimensionsCount(info, &rank), what);
  out->shape.assign(rank, 0);
  if (status.IsOk()) status = runtime_->Check(api->GetDimensions(info, out->shape.data(), rank), what);
  api->ReleaseTensorTypeAndShapeInfo(info);
  RETURN_IF_ERROR(status);
  out->name = name;
  out->dtype = DataTypeFromOnnx(elem);
  int64_t count = 0;
  RETURN_IF_ERROR(ElementCount(out->shape, &count));
  if (out->dtype != DataType::kBytes) {
    void* data = nullptr;
    RETURN_IF_ERROR(runtime_->Check(api->GetTensorMutableData(value, &data), what));
    out->owner = std::move(owner);
    out->data = static_cast<const uint8_t*>(data);
    out->byte_size = static_cast<uint64_t>(count) * DataTypeByteSize(out->dtype);
    return Status::Success();
  }
  auto serialized = std::make_shared<std::vector<uint8_t>>();
  for (int64_t i = 0; i < count; ++i) {
    size_t len = 0;
    RETURN_IF_ERROR(runtime_->Check(api->GetStringTensorElementLength(value, static_cast<size_t>(i), &len), what));
    const size_t at = serialized->size();
    serialized->resize(at + 4 + len);
    const uint32_t len32 = static_cast<uint32_t>(len);
    std::memcpy(serialized->data() + at, &len32, 4);
    if (len > 0) {
      RETURN_IF_ERROR(runtime_->Check(api->GetStringTensorElement(value, len, static_cast<size_t>(i), serialized->data() + at + 4), what));
    }
  }
  out->data = serialized->data();
  out->byte_size = serialized->size();
  out->owner = std::move(serialized);
  return Status::Success();
}

Status OnnxSession::Run(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                        const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs) {
  const OrtApi* api = runtime_->Api();
  std::vector<ValuePtr> input_values;
  std::vector<const OrtValue*> input_raw;
  std::vector<const char*> input_names;
  for (const GatheredInput& input : inputs) {
    OrtValue* value = nullptr;
    RETURN_IF_ERROR(MakeInputValue(input, &value));
    input_values.emplace_back(value, ValueReleaser{api});
    input_raw.push_back(value);
    input_names.push_back(input.name.c_str());
  }
  // Only the outputs the config serves are fetched (ONNX Runtime skips nodes nothing needs).
  std::vector<const OnnxTensorInfo*> fetched;
  for (const OnnxTensorInfo& info : outputs_) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), info.name) != wanted.end()) fetched.push_back(&info);
  }
  // Outputs whose shape is known up front ([rows, static dims...]) go straight into pooled
  // buffers; the others are allocated by ONNX Runtime and kept alive by their OrtValue.
  std::vector<OrtValue*> output_raw(fetched.size(), nullptr);
  std::vector<std::shared_ptr<PooledBuffer>> pooled(fetched.size());
  std::vector<const char*> output_names;
  for (size_t i = 0; i < fetched.size(); ++i) {
    const OnnxTensorInfo& info = *fetched[i];
    output_names.push_back(info.name.c_str());
    Shape shape = info.dims;
    if (info.dtype == DataType::kBytes || shape.empty()) continue;
    // Only a batching model's first dimension is known to be the batch's rows.
    if (batching && shape[0] == -1) shape[0] = rows;
    uint64_t bytes = 0;
    if (!ByteSize(info.dtype, shape, &bytes).IsOk()) continue;  // symbolic dims remain
    pooled[i] = std::make_shared<PooledBuffer>();
    RETURN_IF_ERROR(pool->Acquire(bytes, pooled[i].get()));
    RETURN_IF_ERROR(runtime_->Check(api->CreateTensorWithDataAsOrtValue(cpu_memory_, pooled[i]->Data(), bytes, shape.data(),
                                                                        shape.size(), OnnxFromDataType(info.dtype), &output_raw[i]),
                                    "output '" + info.name + "'"));
  }
  Status status = runtime_->Check(api->Run(session_.get(), nullptr, input_names.data(), input_raw.data(), input_raw.size(),
                                           output_names.data(), output_names.size(), output_raw.data()),
                                  "running the model");
  outputs->clear();
  for (size_t i = 0; i < fetched.size(); ++i) {
    ValuePtr value(output_raw[i], ValueReleaser{api});
    if (!status.IsOk() || value == nullptr) continue;
    std::shared_ptr<const void> owner = pooled[i];
    if (!owner) {
      // Keep ONNX Runtime's own output alive for as long as any view of it exists.
      owner = std::shared_ptr<OrtValue>(value.release(), [api, session = session_](OrtValue* v) { api->ReleaseValue(v); });
    }
    OutputTensor out;
    status = ReadOutputValue(output_raw[i], fetched[i]->name, std::move(owner), &out);
    if (status.IsOk()) outputs->push_back(std::move(out));
  }
  return status;
}

}  // namespace infernode
