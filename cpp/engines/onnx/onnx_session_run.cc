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
        api->CreateTensorWithDataAsOrtValue(cpu_memory_.get(), input.buffer.Data(), input.byte_size, input.shape.data(),
                                            input.shape.size(), type, OutParam(*value)),
        what);
  }
  // The gathered buffer was validated per request; walking it checked again costs nothing and
  // keeps a bad gather from writing past the string tensor ONNX Runtime allocated.
  std::vector<std::string_view> items;
  RETURN_IF_ERROR(SplitSerializedBytes(input.buffer.Data(), input.byte_size, &items));
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

Status OnnxSession::InputOnDevice(const GatheredInput& input, RunScratch* scratch, const void** data) const {
  const std::vector<DeviceRows>& rows = input.device_rows;
  if (rows.size() == 1 && rows[0].offset == 0 && rows[0].bytes == input.byte_size) {
    *data = rows[0].src;  // read in place: the request holds the region until it is answered
    return Status::Success();
  }
  DeviceBuffer device;
  RETURN_IF_ERROR(stream_->Allocate(input.byte_size, &device));
  auto* base = static_cast<uint8_t*>(device.Data());
  if (input.host_in_place != nullptr) {
    // Registered, the copy runs at the link's speed; unregistered (pages another registration
    // holds), the driver stages it through its own pinned memory.
    std::unique_ptr<HostRegistration> registered =
        HostRegistration::Make(input.host_in_place, input.byte_size, stream_.get());
    if (registered) scratch->registered.push_back(std::move(registered));
    RETURN_IF_ERROR(stream_->CopyToDevice(base, input.host_in_place, input.byte_size));
    *data = base;
    scratch->device.push_back(std::move(device));
    return Status::Success();
  }
  // The host rows in runs between the device rows (all of it when none is on the device).
  std::vector<DeviceSpan> spans;
  uint64_t at = 0;
  for (size_t i = 0; i <= rows.size(); ++i) {
    const uint64_t end = i < rows.size() ? rows[i].offset : input.byte_size;
    if (end > at) RETURN_IF_ERROR(stream_->CopyToDevice(base + at, input.buffer.Data() + at, end - at));
    if (i == rows.size()) break;
    spans.push_back(DeviceSpan{rows[i].src, base + rows[i].offset, rows[i].bytes});
    at = rows[i].offset + rows[i].bytes;
  }
  if (!spans.empty()) RETURN_IF_ERROR(stream_->CopySpans(spans.data(), spans.size()));
  *data = base;
  scratch->device.push_back(std::move(device));
  return Status::Success();
}

Status OnnxSession::MakeDeviceInputValue(const GatheredInput& input, RunScratch* scratch,
                                         OrtPtr<OrtValue>* value) const {
  const std::string what = "input '" + input.name + "'";
  const void* data = nullptr;
  RETURN_IF_ERROR(InputOnDevice(input, scratch, &data));
  // ONNX Runtime never writes an input: the const_cast only fits its C API.
  return runtime_->Check(runtime_->Api()->CreateTensorWithDataAsOrtValue(
                             device_memory_.get(), const_cast<void*>(data), input.byte_size, input.shape.data(),
                             input.shape.size(), OnnxFromDataType(input.dtype), OutParam(*value)),
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

void OnnxSession::OutputWriteSpans(const std::vector<const OnnxTensorInfo*>& fetched,
                                   const std::vector<OutputSlot>& slots, int64_t rows, bool batching,
                                   std::vector<DeviceOutputWrite>* writes, std::vector<DeviceSpan>* spans,
                                   std::vector<bool>* host_skipped) const {
  // A slot skips its host copy when it has writes, all of them only on the device and made.
  std::vector<int> state(fetched.size(), 0);  // 0: no write yet, 1: skippable so far, -1: copy it
  for (DeviceOutputWrite& write : *writes) {
    for (size_t i = 0; i < fetched.size(); ++i) {
      const OutputSlot& slot = slots[i];
      if (fetched[i]->name != write.name || slot.device.Data() == nullptr) continue;
      const DeviceBuffer& served = slot.device_served.Data() != nullptr ? slot.device_served : slot.device;
      const uint64_t total = slot.count * DataTypeByteSize(slot.served_type);
      // A batching model's output is the batch's rows first; one that does not batch has one request.
      if (batching && (rows <= 0 || total % static_cast<uint64_t>(rows) != 0)) break;
      const uint64_t per_row = batching ? total / static_cast<uint64_t>(rows) : 0;
      const uint64_t begin = batching ? per_row * static_cast<uint64_t>(write.row_begin) : 0;
      const uint64_t bytes = batching ? per_row * static_cast<uint64_t>(write.rows) : total;
      if (bytes > write.capacity || begin + bytes > total) break;  // the frontend says it does not fit
      spans->push_back(DeviceSpan{static_cast<const uint8_t*>(served.Data()) + begin, write.dst, bytes});
      write.written = true;
      break;
    }
    for (size_t i = 0; i < fetched.size(); ++i) {
      if (fetched[i]->name != write.name) continue;
      if (state[i] >= 0) state[i] = write.written && write.only_on_device ? 1 : -1;
    }
  }
  host_skipped->assign(fetched.size(), false);
  for (size_t i = 0; i < fetched.size(); ++i) (*host_skipped)[i] = state[i] == 1;
}

Status OnnxSession::CopyOutputsToHost(const std::vector<const OnnxTensorInfo*>& fetched,
                                      const std::vector<OutputSlot>& slots, int64_t rows, bool batching,
                                      std::vector<DeviceOutputWrite>* writes, DeviceCopyTimes* times) {
  std::vector<DeviceSpan> spans;
  std::vector<bool> host_skipped(slots.size(), false);
  if (writes != nullptr) OutputWriteSpans(fetched, slots, rows, batching, writes, &spans, &host_skipped);
  // Casts count as compute output (as Triton counts conversions): they follow kComputed.
  RETURN_IF_ERROR(stream_->Record(DeviceMark::kComputed));
  for (size_t i = 0; i < slots.size(); ++i) {
    const OutputSlot& slot = slots[i];
    if (slot.device.Data() == nullptr) continue;
    const DeviceBuffer* from = &slot.device;
    if (slot.device_served.Data() != nullptr) {
      RETURN_IF_ERROR(
          stream_->Cast(slot.device_served.Data(), slot.served_type, slot.device.Data(), slot.model_type, slot.count));
      from = &slot.device_served;
    }
    if (!host_skipped[i]) RETURN_IF_ERROR(stream_->CopyToHost(slot.host->Data(), from->Data(), from->Size()));
  }
  if (!spans.empty()) {
    // After the casts on the same stream: the spans read the served (cast) buffers.
    const Status copied = stream_->CopySpans(spans.data(), spans.size());
    if (!copied.IsOk()) {
      for (DeviceOutputWrite& write : *writes) write.written = false;
      return copied;
    }
  }
  RETURN_IF_ERROR(stream_->Record(DeviceMark::kOutputsCopied));
  RETURN_IF_ERROR(stream_->Synchronize());
  if (times != nullptr) {
    times->to_device_ns = stream_->ElapsedNs(DeviceMark::kStart, DeviceMark::kInputsCopied);
    times->to_host_ns = stream_->ElapsedNs(DeviceMark::kComputed, DeviceMark::kOutputsCopied);
  }
  return Status::Success();
}

Status OnnxSession::BindOutput(const OnnxTensorInfo& info, int64_t rows, bool batching, BufferPool* pool,
                               OutputSlot* slot, OrtPtr<OrtValue>* value) const {
  Shape shape = info.dims;
  if (info.dtype == DataType::kBytes || shape.empty()) return Status::Success();
  // Only a batching model's first dimension is known to be the batch's rows.
  if (batching && shape[0] == -1) shape[0] = rows;
  uint64_t bytes = 0;
  if (!ByteSize(info.dtype, shape, &bytes).IsOk()) return Status::Success();  // symbolic dims remain
  slot->model_type = info.dtype;
  slot->served_type = info.served == DataType::kInvalid ? info.dtype : info.served;
  slot->count = static_cast<size_t>(bytes / DataTypeByteSize(info.dtype));
  const bool cast = slot->served_type != slot->model_type && bytes > 0;
  slot->host = std::make_shared<PooledBuffer>();
  RETURN_IF_ERROR(pool->Acquire(slot->count * DataTypeByteSize(slot->served_type), slot->host.get()));
  void* data = slot->host->Data();
  const OrtMemoryInfo* where = cpu_memory_.get();
  if (stream_ != nullptr && bytes > 0) {
    // Computed into a device buffer, (cast and) copied back into the pooled (pinned) block.
    RETURN_IF_ERROR(stream_->Allocate(bytes, &slot->device));
    if (cast)
      RETURN_IF_ERROR(stream_->Allocate(slot->count * DataTypeByteSize(slot->served_type), &slot->device_served));
    data = slot->device.Data();
    where = device_memory_.get();
  } else if (cast) {
    RETURN_IF_ERROR(pool->Acquire(bytes, &slot->model_host));
    data = slot->model_host.Data();
  }
  return runtime_->Check(
      runtime_->Api()->CreateTensorWithDataAsOrtValue(where, data, bytes, shape.data(), shape.size(),
                                                      OnnxFromDataType(info.dtype), OutParam(*value)),
      "output '" + info.name + "'");
}

Status OnnxSession::Run(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                        const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
                        DeviceCopyTimes* device_times, std::vector<DeviceOutputWrite>* device_writes) {
  Status status = RunOnce(inputs, rows, batching, wanted, pool, outputs, device_times, device_writes);
  if (stream_ != nullptr) {
    // Whatever failed, no copy may still read the caller's input blocks once Run returns.
    const Status synced = stream_->Synchronize();
    if (status.IsOk()) status = synced;
  }
  return status;
}

Status OnnxSession::RunOnce(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                            const std::vector<std::string>& wanted, BufferPool* pool,
                            std::vector<OutputTensor>* outputs, DeviceCopyTimes* device_times,
                            std::vector<DeviceOutputWrite>* device_writes) {
  const OrtApi* api = runtime_->Api();
  outputs->clear();
  // GPU sessions: device buffers of this batch, released (in stream order) when Run returns,
  // after the stream has been synchronised. Empty and BYTES tensors stay on the host: ONNX
  // Runtime moves them itself.
  const bool on_device = stream_ != nullptr;
  RunScratch scratch;
  if (on_device) RETURN_IF_ERROR(stream_->Record(DeviceMark::kStart));
  std::vector<OrtPtr<OrtValue>> input_values;
  std::vector<const OrtValue*> input_raw;
  std::vector<const char*> input_names;
  input_values.reserve(inputs.size());
  for (const GatheredInput& input : inputs) {
    input_values.emplace_back(api);
    const OnnxTensorInfo* info = FindInput(input.name);
    if (info != nullptr && info->served == input.dtype && info->dtype != input.dtype) {
      RETURN_IF_ERROR(MakeCastInputValue(input, *info, pool, &scratch, &input_values.back()));
    } else if (on_device && input.dtype != DataType::kBytes && input.byte_size > 0) {
      RETURN_IF_ERROR(MakeDeviceInputValue(input, &scratch, &input_values.back()));
    } else {
      RETURN_IF_ERROR(MakeInputValue(input, &input_values.back()));
    }
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
  std::vector<OutputSlot> slots(fetched.size());
  std::vector<const char*> output_names;
  for (size_t i = 0; i < fetched.size(); ++i) {
    output_values.emplace_back(api);
    output_names.push_back(fetched[i]->name.c_str());
    RETURN_IF_ERROR(BindOutput(*fetched[i], rows, batching, pool, &slots[i], &output_values[i]));
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
  if (on_device) {
    const Status copied = CopyOutputsToHost(fetched, slots, rows, batching, device_writes, device_times);
    if (!copied.IsOk()) {
      // Copies queued before the failure write into the slots' pooled blocks, which return to
      // the model's pool (shared by every instance) when this returns: let them finish first.
      stream_->Synchronize();
      return copied;
    }
  } else {
    RETURN_IF_ERROR(CastOutputsOnHost(&slots, &scratch));
  }
  RETURN_IF_ERROR(CollectOutputs(fetched, slots, &output_values, pool, &scratch, outputs));
  if (device_times != nullptr) {
    // CPU casts count as compute input and output, as the GPU's copies and casts do.
    device_times->to_device_ns += scratch.cast_in_ns;
    device_times->to_host_ns += scratch.cast_out_ns;
  }
  return Status::Success();
}

Status OnnxSession::CollectOutputs(const std::vector<const OnnxTensorInfo*>& fetched,
                                   const std::vector<OutputSlot>& slots, std::vector<OrtPtr<OrtValue>>* values,
                                   BufferPool* pool, RunScratch* scratch, std::vector<OutputTensor>* outputs) const {
  const OrtApi* api = runtime_->Api();
  for (size_t i = 0; i < fetched.size(); ++i) {
    if ((*values)[i] == nullptr) continue;
    OrtValue* value = (*values)[i].get();
    std::shared_ptr<const void> owner = slots[i].host;
    if (!owner) {
      // Keep ONNX Runtime's own output alive for as long as any view of it exists.
      owner = std::shared_ptr<OrtValue>((*values)[i].release(),
                                        [api, session = session_](OrtValue* v) { api->ReleaseValue(v); });
    }
    OutputTensor out;
    RETURN_IF_ERROR(ReadOutputValue(value, fetched[i]->name, std::move(owner), &out));
    if (slots[i].host) {
      // Our block holds what is served: the host copy of a device output, or the cast values.
      out.dtype = slots[i].served_type;
      out.data = slots[i].host->Data();
      out.byte_size = slots[i].count * DataTypeByteSize(out.dtype);
    } else if (fetched[i]->served != DataType::kInvalid && fetched[i]->served != out.dtype) {
      RETURN_IF_ERROR(CastAllocatedOutput(fetched[i]->served, pool, scratch, &out));
    }
    outputs->push_back(std::move(out));
  }
  return Status::Success();
}

}  // namespace infernode
