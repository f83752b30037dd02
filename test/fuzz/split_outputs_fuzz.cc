// libFuzzer target: splitting a batch's output into each request's rows
// (engines/onnx/onnx_instance.h SplitOutputs), the offset arithmetic behind every batched
// response. The engine's invariants hold (rows = the requests' batch sizes summed; fixed-size
// outputs hold exactly their shape's bytes); shapes, batch sizes and BYTES contents are fuzzed.
// Every piece must lie inside the output, the pieces must tile it in order, or the split fails.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/shape.h"
#include "engines/onnx/onnx_instance.h"

using namespace infernode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Batch batch;
  const size_t requests = in.ConsumeIntegralInRange<size_t>(1, 5);
  for (size_t i = 0; i < requests; ++i) {
    auto request = std::make_unique<InferenceRequest>();
    request->batch_size = in.ConsumeIntegralInRange<int64_t>(0, 4);
    batch.rows += request->batch_size;
    batch.requests.push_back(std::move(request));
  }
  OutputTensor out;
  out.name = "OUTPUT0";
  out.dtype = in.ConsumeBool() ? DataType::kBytes : DataType::kFp32;
  out.shape.push_back(in.ConsumeBool() ? batch.rows : in.ConsumeIntegralInRange<int64_t>(0, 6));
  const size_t rank = in.ConsumeIntegralInRange<size_t>(0, 2);
  for (size_t i = 0; i < rank; ++i) out.shape.push_back(in.ConsumeIntegralInRange<int64_t>(0, 3));
  int64_t count = 0;
  if (!ElementCount(out.shape, &count).IsOk()) return 0;
  std::vector<uint8_t> bytes;
  if (out.dtype == DataType::kBytes) {
    const std::string rest = in.ConsumeRemainingBytesAsString();
    bytes.assign(rest.begin(), rest.end());
  } else {
    bytes.assign(static_cast<size_t>(count) * 4, 0);
  }
  // An exact-size heap copy so ASan catches a piece reaching past the output.
  std::unique_ptr<uint8_t[]> owned(new uint8_t[bytes.size() + 1]);
  std::copy(bytes.begin(), bytes.end(), owned.get());
  out.data = owned.get();
  out.byte_size = bytes.size();

  std::vector<std::vector<OutputTensor>> per_request;
  if (!SplitOutputs(batch, true, {out}, &per_request).IsOk()) return 0;
  if (per_request.size() != batch.requests.size()) std::abort();
  const uint8_t* next = out.data;
  for (const auto& pieces : per_request) {
    if (pieces.size() != 1) std::abort();
    const OutputTensor& piece = pieces[0];
    if (piece.data < out.data || piece.data + piece.byte_size > out.data + out.byte_size) std::abort();
    if (batch.requests.size() > 1 && piece.data != next) std::abort();
    next = piece.data + piece.byte_size;
    if (piece.byte_size > 0) {
      volatile uint8_t last = piece.data[piece.byte_size - 1];
      (void)last;
    }
  }
  if (batch.requests.size() > 1 && next != out.data + out.byte_size) std::abort();
  return 0;
}
