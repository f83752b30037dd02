// The FP32 <-> FP16 / BF16 casts of OnnxSession (a config serving a model's FP16 or BF16 tensor
// as TYPE_FP32): which tensors are cast, and the conversions around the run, on the host for CPU
// sessions and by kernels on the instance's stream for GPU sessions. Everything but
// ServeConfigTypes runs on the instance's thread, inside Run.
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/half_float.h"
#include "engines/onnx/onnx_session.h"
#include "engines/onnx/ort_types.h"

namespace infernode {

namespace {

void MarkServed(const std::vector<TensorConfig>& declared, const char* kind, std::vector<OnnxTensorInfo>* tensors,
                std::vector<std::string>* cast) {
  for (const TensorConfig& tensor : declared) {
    for (OnnxTensorInfo& info : *tensors) {
      if (info.name != tensor.name || !IsHalfCastPair(tensor.dtype, info.dtype)) continue;
      info.served = tensor.dtype;
      cast->push_back(std::string(kind) + " '" + info.name + "' (" + DataTypeName(tensor.dtype) + " served, " +
                      DataTypeName(info.dtype) + " in the model)");
    }
  }
}

}  // namespace

std::vector<std::string> OnnxSession::ServeConfigTypes(const ModelConfig& config) {
  std::vector<std::string> cast;
  MarkServed(config.inputs, "input", &inputs_, &cast);
  MarkServed(config.outputs, "output", &outputs_, &cast);
  return cast;
}

const OnnxTensorInfo* OnnxSession::FindInput(const std::string& name) const {
  for (const OnnxTensorInfo& info : inputs_) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

Status OnnxSession::MakeCastInputValue(const GatheredInput& input, const OnnxTensorInfo& info, BufferPool* pool,
                                       RunScratch* scratch, OrtPtr<OrtValue>* value) const {
  const std::string what = "input '" + input.name + "'";
  int64_t elements = 0;
  RETURN_IF_ERROR(ElementCount(input.shape, &elements));
  const size_t count = static_cast<size_t>(elements);
  if (input.byte_size != count * DataTypeByteSize(input.dtype)) {
    return Internal(what + " holds " + std::to_string(input.byte_size) + " bytes, expected " + std::to_string(count) +
                    " " + DataTypeName(input.dtype) + " elements");
  }
  const size_t bytes = count * DataTypeByteSize(info.dtype);
  void* data = input.buffer.Data();  // an empty tensor has nothing to convert
  const OrtMemoryInfo* where = cpu_memory_.get();
  if (count > 0 && stream_ == nullptr) {
    PooledBuffer block;
    RETURN_IF_ERROR(pool->Acquire(bytes, &block));
    const uint64_t start = SteadyNowNs();
    RETURN_IF_ERROR(HostCast(block.Data(), info.dtype, input.buffer.Data(), input.dtype, count));
    scratch->cast_in_ns += SteadyNowNs() - start;
    data = block.Data();
    scratch->host.push_back(std::move(block));
  } else if (count > 0) {
    // On the device as served (FP32), then cast on the stream into the model's type; the buffers
    // are held until the batch is done, and the stream orders the kernel after the copies.
    const void* served = nullptr;
    RETURN_IF_ERROR(InputOnDevice(input, scratch, &served));
    DeviceBuffer model;
    RETURN_IF_ERROR(stream_->Allocate(bytes, &model));
    RETURN_IF_ERROR(stream_->Cast(model.Data(), info.dtype, served, input.dtype, count));
    data = model.Data();
    where = device_memory_.get();
    scratch->device.push_back(std::move(model));
  }
  return runtime_->Check(
      runtime_->Api()->CreateTensorWithDataAsOrtValue(where, data, bytes, input.shape.data(), input.shape.size(),
                                                      OnnxFromDataType(info.dtype), OutParam(*value)),
      what);
}

Status OnnxSession::CastOutputsOnHost(std::vector<OutputSlot>* slots, RunScratch* scratch) const {
  const uint64_t start = SteadyNowNs();
  for (OutputSlot& slot : *slots) {
    if (slot.model_host.Empty()) continue;
    RETURN_IF_ERROR(HostCast(slot.host->Data(), slot.served_type, slot.model_host.Data(), slot.model_type, slot.count));
  }
  scratch->cast_out_ns += SteadyNowNs() - start;
  return Status::Success();
}

Status OnnxSession::CastAllocatedOutput(DataType served, BufferPool* pool, RunScratch* scratch,
                                        OutputTensor* out) const {
  const size_t count = out->byte_size / DataTypeByteSize(out->dtype);
  auto block = std::make_shared<PooledBuffer>();
  RETURN_IF_ERROR(pool->Acquire(count * DataTypeByteSize(served), block.get()));
  const uint64_t start = SteadyNowNs();
  RETURN_IF_ERROR(HostCast(block->Data(), served, out->data, out->dtype, count));
  scratch->cast_out_ns += SteadyNowNs() - start;
  out->dtype = served;
  out->data = block->Data();
  out->byte_size = count * DataTypeByteSize(served);
  out->owner = std::move(block);  // ONNX Runtime's value is released with the old owner
  return Status::Success();
}

}  // namespace infernode
