// OnnxSession::Run and the tensor conversions it needs (split from onnx_session.cc, which
// creates sessions and reads their metadata).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/bytes_tensor.h"
#include "engines/onnx/onnx_session.h"
#include "engines/onnx/ort_owned.h"
#include "engines/onnx/ort_types.h"

namespace infernode {

Status OnnxSession::MakeInputValue(const GatheredInput& input, OrtPtr<OrtValue>* value) const {
  const OrtApi* api = runtime_->Api();
  const ONNXTensorElementDataType type = OnnxFromDataType(input.dtype);
  const std::string what = "input '" + input.name + "'";
  if (input.dtype != DataType::kBytes) {
    // A view of the pooled batch buffer: ONNX Runtime reads it in place.
    return runtime_->Check(
        api->CreateTensorWithDataAsOrtValue(cpu_memory_.get(), input.buffer.Data(), input.buffer.Size(),
                                            input.shape.data(), input.shape.size(), type, OutParam(*value)),
        what);
  }
  // The gathered buffer was validated per request; walking it checked again costs nothing and
  // keeps a bad gather from writing past the string tensor ONNX Runtime allocated.
  std::vector<std::string_view> items;
  RETURN_IF_ERROR(SplitSerializedBytes(input.buffer.Data(), input.buffer.Size(), &items));
  int64_t count = 0;
  RETURN_IF_ERROR(ElementCount(input.shape, &count));
  if (static_cast<uint64_t>(count) != items.size()) {
    return Internal(what + " holds " + std::to_string(items.size()) + " strings, expected " + std::to_string(count) +
                    " for shape " + ShapeToString(input.shape));
  }
  OrtAllocator* allocator = nullptr;
  RETURN_IF_ERROR(runtime_->Check(api->GetAllocatorWithDefaultOptions(&allocator), what));
  RETURN_IF_ERROR(runtime_->Check(
      api->CreateTensorAsOrtValue(allocator, input.shape.data(), input.shape.size(), type, OutParam(*value)), what));
  for (size_t i = 0; i < items.size(); ++i) {
    char* dest = nullptr;
    RETURN_IF_ERROR(
        runtime_->Check(api->GetResizedStringTensorElementBuffer(value->get(), i, items[i].size(), &dest), what));
    if (!items[i].empty()) std::memcpy(dest, items[i].data(), items[i].size());
  }
  return Status::Success();
}

Status OnnxSession::MakeDeviceInputValue(const GatheredInput& input, std::vector<DeviceBuffer>* held,
                                         OrtPtr<OrtValue>* value) const {
  const std::string what = "input '" + input.name + "'";
  DeviceBuffer device;
  RETURN_IF_ERROR(stream_->Allocate(input.buffer.Size(), &device));
  RETURN_IF_ERROR(stream_->CopyToDevice(device.Data(), input.buffer.Data(), input.buffer.Size()));
  void* data = device.Data();
  held->push_back(std::move(device));
  return runtime_->Check(runtime_->Api()->CreateTensorWithDataAsOrtValue(
                             device_memory_.get(), data, input.buffer.Size(), input.shape.data(), input.shape.size(),
                             OnnxFromDataType(input.dtype), OutParam(*value)),
                         what);
}

Status OnnxSession::ReadOutputValue(OrtValue* value, const std::string& name, std::shared_ptr<const void> owner,
                                    OutputTensor* out) const {
  const OrtApi* api = runtime_->Api();
  const std::string what = "output '" + name + "'";
  OrtPtr<OrtTensorTypeAndShapeInfo> info(api);
  RETURN_IF_ERROR(runtime_->Check(api->GetTensorTypeAndShape(value, OutParam(info)), what));
  ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  RETURN_IF_ERROR(runtime_->Check(api->GetTensorElementType(info.get(), &elem), what));
  RETURN_IF_ERROR(runtime_->Check(api->GetDimensionsCount(info.get(), &rank), what));
  out->shape.assign(rank, 0);
  RETURN_IF_ERROR(runtime_->Check(api->GetDimensions(info.get(), out->shape.data(), rank), what));
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
    if (len > UINT32_MAX) {
      return Internal(what + " element " + std::to_string(i) + " is " + std::to_string(len) +
                      " bytes, more than a BYTES element can hold (4 GiB)");
    }
    const size_t at = serialized->size();
    serialized->resize(at + 4 + len);
    const uint32_t len32 = static_cast<uint32_t>(len);
    std::memcpy(serialized->data() + at, &len32, 4);
    if (len > 0) {
      RETURN_IF_ERROR(runtime_->Check(
          api->GetStringTensorElement(value, len, static_cast<size_t>(i), serialized->data() + at + 4), what));
    }
  }
  out->data = serialized->data();
  out->byte_size = serialized->size();
  out->owner = std::move(serialized);
  return Status::Success();
}

Status OnnxSession::CopyOutputsToHost(const std::vector<DeviceBuffer>& device_outputs,
                                      const std::vector<std::shared_ptr<PooledBuffer>>& pooled,
                                      DeviceCopyTimes* times) {
  RETURN_IF_ERROR(stream_->Record(DeviceMark::kComputed));
  for (size_t i = 0; i < device_outputs.size(); ++i) {
    if (device_outputs[i].Data() == nullptr) continue;
    RETURN_IF_ERROR(stream_->CopyToHost(pooled[i]->Data(), device_outputs[i].Data(), device_outputs[i].Size()));
  }
  RETURN_IF_ERROR(stream_->Record(DeviceMark::kOutputsCopied));
  RETURN_IF_ERROR(stream_->Synchronize());
  if (times != nullptr) {
    times->to_device_ns = stream_->ElapsedNs(DeviceMark::kStart, DeviceMark::kInputsCopied);
    times->to_host_ns = stream_->ElapsedNs(DeviceMark::kComputed, DeviceMark::kOutputsCopied);
  }
  return Status::Success();
}

Status OnnxSession::Run(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                        const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
                        DeviceCopyTimes* device_times) {
  Status status = RunOnce(inputs, rows, batching, wanted, pool, outputs, device_times);
  if (stream_ != nullptr) {
    // Whatever failed, no copy may still read the caller's input blocks once Run returns.
    const Status synced = stream_->Synchronize();
    if (status.IsOk()) status = synced;
  }
  return status;
}

Status OnnxSession::RunOnce(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                            const std::vector<std::string>& wanted, BufferPool* pool,
                            std::vector<OutputTensor>* outputs, DeviceCopyTimes* device_times) {
  const OrtApi* api = runtime_->Api();
  outputs->clear();
  // GPU sessions: device buffers of this batch, released (in stream order) when Run returns,
  // after the stream has been synchronised. Empty and BYTES tensors stay on the host: ONNX
  // Runtime moves them itself.
  const bool on_device = stream_ != nullptr;
  std::vector<DeviceBuffer> device_buffers;
  auto to_device = [on_device](DataType dtype, size_t bytes) {
    return on_device && dtype != DataType::kBytes && bytes > 0;
  };
  if (on_device) RETURN_IF_ERROR(stream_->Record(DeviceMark::kStart));
  std::vector<OrtPtr<OrtValue>> input_values;
  std::vector<const OrtValue*> input_raw;
  std::vector<const char*> input_names;
  input_values.reserve(inputs.size());
  for (const GatheredInput& input : inputs) {
    input_values.emplace_back(api);
    RETURN_IF_ERROR(to_device(input.dtype, input.buffer.Size())
                        ? MakeDeviceInputValue(input, &device_buffers, &input_values.back())
                        : MakeInputValue(input, &input_values.back()));
    input_raw.push_back(input_values.back().get());
    input_names.push_back(input.name.c_str());
  }
  // Only the outputs the config serves are fetched (ONNX Runtime skips nodes nothing needs).
  std::vector<const OnnxTensorInfo*> fetched;
  for (const OnnxTensorInfo& info : outputs_) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), info.name) != wanted.end()) fetched.push_back(&info);
  }
  // Outputs whose shape is known up front ([rows, static dims...]) go straight into pooled
  // buffers; the others are allocated by ONNX Runtime and kept alive by their OrtValue. Each is
  // owned by output_values from its creation, so any early return releases the ones made so far.
  std::vector<OrtPtr<OrtValue>> output_values;
  output_values.reserve(fetched.size());
  std::vector<std::shared_ptr<PooledBuffer>> pooled(fetched.size());
  std::vector<DeviceBuffer> device_outputs(fetched.size());
  std::vector<const char*> output_names;
  for (size_t i = 0; i < fetched.size(); ++i) {
    const OnnxTensorInfo& info = *fetched[i];
    output_values.emplace_back(api);
    output_names.push_back(info.name.c_str());
    Shape shape = info.dims;
    if (info.dtype == DataType::kBytes || shape.empty()) continue;
    // Only a batching model's first dimension is known to be the batch's rows.
    if (batching && shape[0] == -1) shape[0] = rows;
    uint64_t bytes = 0;
    if (!ByteSize(info.dtype, shape, &bytes).IsOk()) continue;  // symbolic dims remain
    pooled[i] = std::make_shared<PooledBuffer>();
    RETURN_IF_ERROR(pool->Acquire(bytes, pooled[i].get()));
    void* data = pooled[i]->Data();
    const OrtMemoryInfo* where = cpu_memory_.get();
    if (to_device(info.dtype, bytes)) {
      // Computed into a device buffer, copied back into the pooled (pinned) block after the run.
      RETURN_IF_ERROR(stream_->Allocate(bytes, &device_outputs[i]));
      data = device_outputs[i].Data();
      where = device_memory_.get();
    }
    RETURN_IF_ERROR(
        runtime_->Check(api->CreateTensorWithDataAsOrtValue(where, data, bytes, shape.data(), shape.size(),
                                                            OnnxFromDataType(info.dtype), OutParam(output_values[i])),
                        "output '" + info.name + "'"));
  }
  if (on_device) RETURN_IF_ERROR(stream_->Record(DeviceMark::kInputsCopied));
  // ONNX Runtime fills the null slots with values it allocates; they are adopted right after the
  // call, whatever it returned.
  std::vector<OrtValue*> output_raw(fetched.size(), nullptr);
  for (size_t i = 0; i < fetched.size(); ++i) output_raw[i] = output_values[i].get();
  Status status =
      runtime_->Check(api->Run(session_.get(), nullptr, input_names.data(), input_raw.data(), input_raw.size(),
                               output_names.data(), output_names.size(), output_raw.data()),
                      "running the model");
  for (size_t i = 0; i < fetched.size(); ++i) {
    if (output_values[i] == nullptr && output_raw[i] != nullptr) output_values[i].reset(output_raw[i]);
  }
  RETURN_IF_ERROR(status);
  if (on_device) RETURN_IF_ERROR(CopyOutputsToHost(device_outputs, pooled, device_times));
  for (size_t i = 0; i < fetched.size(); ++i) {
    if (output_values[i] == nullptr) continue;
    OrtValue* value = output_values[i].get();
    std::shared_ptr<const void> owner = pooled[i];
    if (!owner) {
      // Keep ONNX Runtime's own output alive for as long as any view of it exists.
      owner = std::shared_ptr<OrtValue>(output_values[i].release(),
                                        [api, session = session_](OrtValue* v) { api->ReleaseValue(v); });
    }
    OutputTensor out;
    RETURN_IF_ERROR(ReadOutputValue(value, fetched[i]->name, std::move(owner), &out));
    // A device-bound output's value points at device memory: serve the host copy instead.
    if (device_outputs[i].Data() != nullptr) out.data = pooled[i]->Data();
    outputs->push_back(std::move(out));
  }
  return Status::Success();
}

}  // namespace infernode
