// libFuzzer target: request validation (scheduling/request_validator.h), which sees shapes,
// datatypes and bytes straight from clients. Whatever the config and request, it must not crash,
// overflow or read outside an input's bytes; what it accepts must be consistent: every fixed-size
// input's byte size matches its shape, every BYTES input walks cleanly to its element count, and
// the batch size is within the model's limit.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/bytes_tensor.h"
#include "core/shape.h"
#include "scheduling/request_validator.h"

using namespace infernode;

namespace {

const char* const kNames[] = {"INPUT0", "INPUT1", "INPUT2"};
const DataType kTypes[] = {DataType::kFp32, DataType::kBytes, DataType::kInt8, DataType::kFp64, DataType::kBool};

DataType TakeType(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? kTypes[in.ConsumeIntegralInRange<size_t>(0, 4)]
                          : DataTypeFromCode(in.ConsumeIntegralInRange<int32_t>(-1, 20));
}

Shape TakeDims(FuzzedDataProvider& in, int64_t low) {
  Shape dims(in.ConsumeIntegralInRange<size_t>(0, 4));
  for (int64_t& d : dims)
    d = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(low, 6) : in.ConsumeIntegral<int64_t>();
  return dims;
}

ModelConfig TakeConfig(FuzzedDataProvider& in) {
  ModelConfig config;
  config.name = "fuzzed";
  const int64_t batch_choices[] = {0, 1, 4, 8, INT32_MAX};
  config.max_batch_size = batch_choices[in.ConsumeIntegralInRange<size_t>(0, 4)];
  const size_t count = in.ConsumeIntegralInRange<size_t>(1, 3);
  for (size_t i = 0; i < count; ++i) {
    TensorConfig spec;
    spec.name = kNames[i];
    spec.dtype = TakeType(in);
    spec.dims = TakeDims(in, -1);
    spec.optional = in.ConsumeBool();
    spec.allow_ragged_batch = in.ConsumeBool();
    config.inputs.push_back(std::move(spec));
  }
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const ModelConfig config = TakeConfig(in);
  auto request = std::make_unique<InferenceRequest>();
  // Each input's bytes live in their own exact-size allocation, so ASan catches any overread.
  std::vector<std::unique_ptr<uint8_t[]>> buffers;
  const size_t inputs = in.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < inputs; ++i) {
    InputTensor tensor;
    tensor.name = in.ConsumeBool() ? std::string(kNames[in.ConsumeIntegralInRange<size_t>(0, 2)])
                                   : in.ConsumeRandomLengthString(8);
    tensor.dtype = TakeType(in);
    tensor.shape = TakeDims(in, -2);
    const std::string bytes = in.ConsumeRandomLengthString(64);
    buffers.emplace_back(new uint8_t[bytes.size() + 1]);
    std::copy(bytes.begin(), bytes.end(), buffers.back().get());
    tensor.data = bytes.empty() ? nullptr : buffers.back().get();
    tensor.byte_size = bytes.size();
    request->inputs.push_back(std::move(tensor));
  }

  if (!ValidateRequest(config, request.get()).IsOk()) return 0;

  if (config.max_batch_size > 0 && (request->batch_size < 1 || request->batch_size > config.max_batch_size))
    std::abort();
  for (const InputTensor& tensor : request->inputs) {
    int64_t count = 0;
    if (!ElementCount(tensor.shape, &count).IsOk()) std::abort();
    if (tensor.dtype == DataType::kBytes) {
      int64_t found = -1;
      if (!CountSerializedBytes(tensor.data, tensor.byte_size, &found).IsOk() || found != count) std::abort();
    } else {
      uint64_t expected = 0;
      if (!ByteSize(tensor.dtype, tensor.shape, &expected).IsOk() || expected != tensor.byte_size) std::abort();
    }
  }
  return 0;
}
