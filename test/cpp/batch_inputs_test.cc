// GatherBatchInputs: a batch's rows concatenated into one pooled buffer per input.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engines/batch_inputs.h"
#include "harness.h"
#include "model_configs.h"

using namespace infernode;
using test_configs::Model;
using test_configs::Spec;

namespace {

// Inputs point into `bytes`, which the test keeps alive.
InputTensor View(const std::string& name, DataType dtype, Shape shape, const std::vector<uint8_t>& bytes) {
  InputTensor in;
  in.name = name;
  in.dtype = dtype;
  in.shape = std::move(shape);
  in.data = bytes.data();
  in.byte_size = bytes.size();
  return in;
}

std::vector<uint8_t> Floats(std::vector<float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> FloatsOf(const GatheredInput& gathered) {
  std::vector<float> values(gathered.buffer.Size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), gathered.buffer.Data(), gathered.buffer.Size());
  return values;
}

std::vector<uint8_t> Serialize(const std::vector<std::string>& elements) {
  std::vector<uint8_t> out;
  for (const std::string& e : elements) {
    const uint32_t len = static_cast<uint32_t>(e.size());
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&len);
    out.insert(out.end(), p, p + 4);
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

// A request with these inputs; its batch size is the first input's first dim (batching models).
std::unique_ptr<InferenceRequest> Request(uint64_t id, std::vector<InputTensor> inputs, bool batching = true) {
  auto request = std::make_unique<InferenceRequest>();
  request->id = id;
  request->inputs = std::move(inputs);
  request->batch_size =
      batching && !request->inputs.empty() && !request->inputs[0].shape.empty() ? request->inputs[0].shape[0] : 1;
  return request;
}

Batch MakeBatch(std::vector<std::unique_ptr<InferenceRequest>> requests) {
  Batch batch;
  batch.requests = std::move(requests);
  for (const auto& r : batch.requests) batch.rows += r->batch_size;
  return batch;
}

BufferPool MakePool() { return BufferPool(MakeAlignedAllocator(), 1 << 20); }

class FailingAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t) override { return nullptr; }
  void Free(void*, size_t) override {}
  const char* Name() const override { return "failing"; }
};

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << ShapeToString(shape); }

}  // namespace

TEST(GatherConcatenatesRowsInBatchOrder) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  const std::vector<uint8_t> a = Floats({1, 2});
  const std::vector<uint8_t> b = Floats({3, 4, 5, 6});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 2}, a)}));
  requests.push_back(Request(2, {View("x", DataType::kFp32, {2, 2}, b)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return;
  EXPECT_EQ(out[0].name, std::string("x"));
  EXPECT_EQ(out[0].dtype, DataType::kFp32);
  EXPECT_EQ(out[0].shape, (Shape{3, 2}));
  EXPECT_EQ(out[0].buffer.Size(), 24u);
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(GatherFollowsTheConfigsInputOrder) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1}), Spec("y", DataType::kFp32, {1})});
  const std::vector<uint8_t> x = Floats({1});
  const std::vector<uint8_t> y = Floats({2});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("y", DataType::kFp32, {1, 1}, y), View("x", DataType::kFp32, {1, 1}, x)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 2u);
  if (out.size() != 2) return;
  EXPECT_EQ(out[0].name, std::string("x"));
  EXPECT_TRUE(FloatsOf(out[0]) == std::vector<float>{1});
  EXPECT_EQ(out[1].name, std::string("y"));
  EXPECT_TRUE(FloatsOf(out[1]) == std::vector<float>{2});
}

TEST(GatherFlattensRaggedInputsWhoseShapesDiffer) {
  const ModelConfig config = Model(8, {Spec("r", DataType::kFp32, {-1}, false, true)});
  const std::vector<uint8_t> a = Floats({1, 2, 3});
  const std::vector<uint8_t> b = Floats({4, 5});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("r", DataType::kFp32, {1, 3}, a)}));
  requests.push_back(Request(2, {View("r", DataType::kFp32, {1, 2}, b)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return;
  EXPECT_EQ(out[0].shape, (Shape{5}));
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(GatherStacksRaggedInputsWhoseShapesAgree) {
  const ModelConfig config = Model(8, {Spec("r", DataType::kFp32, {-1}, false, true)});
  const std::vector<uint8_t> a = Floats({1, 2});
  const std::vector<uint8_t> b = Floats({3, 4});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("r", DataType::kFp32, {1, 2}, a)}));
  requests.push_back(Request(2, {View("r", DataType::kFp32, {1, 2}, b)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() == 1) EXPECT_EQ(out[0].shape, (Shape{2, 2}));
}

TEST(GatherConcatenatesSerializedBytes) {
  const ModelConfig config = Model(8, {Spec("s", DataType::kBytes, {-1})});
  const std::vector<uint8_t> a = Serialize({"ab", ""});
  const std::vector<uint8_t> b = Serialize({"cde", "f"});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("s", DataType::kBytes, {1, 2}, a)}));
  requests.push_back(Request(2, {View("s", DataType::kBytes, {1, 2}, b)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return;
  EXPECT_EQ(out[0].dtype, DataType::kBytes);
  EXPECT_EQ(out[0].shape, (Shape{2, 2}));
  const std::vector<uint8_t> expected = Serialize({"ab", "", "cde", "f"});
  EXPECT_EQ(out[0].buffer.Size(), expected.size());
  EXPECT_TRUE(std::memcmp(out[0].buffer.Data(), expected.data(), expected.size()) == 0);
}

TEST(GatherFlattensRaggedBytesToTheirElementCount) {
  const ModelConfig config = Model(8, {Spec("s", DataType::kBytes, {-1}, false, true)});
  const std::vector<uint8_t> a = Serialize({"a"});
  const std::vector<uint8_t> b = Serialize({"b", "c", "d"});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("s", DataType::kBytes, {1, 1}, a)}));
  requests.push_back(Request(2, {View("s", DataType::kBytes, {1, 3}, b)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return;
  EXPECT_EQ(out[0].shape, (Shape{4}));
  EXPECT_EQ(out[0].buffer.Size(), a.size() + b.size());
}

TEST(GatherNonBatchingModelKeepsTheShape) {
  const ModelConfig config = Model(0, {Spec("x", DataType::kFp32, {2, 3})});
  const std::vector<uint8_t> a = Floats({1, 2, 3, 4, 5, 6});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {2, 3}, a)}, false));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() != 1) return;
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(GatherSkipsAnOptionalInputNoRequestCarries) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1}), Spec("o", DataType::kFp32, {1}, true)});
  const std::vector<uint8_t> x = Floats({1});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 1}, x)}));
  requests.push_back(Request(2, {View("x", DataType::kFp32, {1, 1}, x)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 1u);
  if (out.size() == 1) EXPECT_EQ(out[0].name, std::string("x"));
}

TEST(GatherRejectsAnOptionalInputOnlyLaterRequestsCarry) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1}), Spec("o", DataType::kFp32, {1}, true)});
  const std::vector<uint8_t> x = Floats({1});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 1}, x)}));
  requests.push_back(Request(2, {View("x", DataType::kFp32, {1, 1}, x), View("o", DataType::kFp32, {1, 1}, x)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  const Status status = GatherBatchInputs(config, batch, &pool, -1, &out);
  EXPECT_EQ(status.Code(), StatusCode::kInternal);
  EXPECT_CONTAINS(status.Message(), "'o'");
  EXPECT_CONTAINS(status.Message(), "'m'");
}

TEST(GatherRejectsAnOptionalInputOnlyEarlierRequestsCarry) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1}), Spec("o", DataType::kFp32, {1}, true)});
  const std::vector<uint8_t> x = Floats({1});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 1}, x), View("o", DataType::kFp32, {1, 1}, x)}));
  requests.push_back(Request(2, {View("x", DataType::kFp32, {1, 1}, x)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  const Status status = GatherBatchInputs(config, batch, &pool, -1, &out);
  EXPECT_EQ(status.Code(), StatusCode::kInternal);
  EXPECT_CONTAINS(status.Message(), "'o'");
}

TEST(GatherEmptyBatchGathersNothing) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1})});
  const Batch batch;
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out(1);
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_TRUE(out.empty());
}

TEST(GatherReusesPooledBuffers) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  const std::vector<uint8_t> a = Floats({1, 2});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 2}, a)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  for (int round = 0; round < 3; ++round) {
    std::vector<GatheredInput> out;
    EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  }
  EXPECT_EQ(pool.Stats().misses, 1u);
  EXPECT_EQ(pool.Stats().hits, 2u);
  EXPECT_EQ(pool.Stats().in_use_bytes, 0u);
}

TEST(GatherReportsAnAllocationFailure) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  const std::vector<uint8_t> a = Floats({1, 2});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 2}, a)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool(std::make_unique<FailingAllocator>(), 0);
  std::vector<GatheredInput> out;
  EXPECT_EQ(GatherBatchInputs(config, batch, &pool, -1, &out).Code(), StatusCode::kUnavailable);
}

TEST(GatherAppliesTheConfiguredReshape) {
  // dims [6] reshaped to [2, 3] for the engine; a variable dim keeps the request's size.
  TensorConfig fixed = Spec("x", DataType::kFp32, {6});
  fixed.has_reshape = true;
  fixed.reshape = {2, 3};
  TensorConfig variable = Spec("v", DataType::kFp32, {-1, 2});
  variable.has_reshape = true;
  variable.reshape = {-1, 1, 2};
  const ModelConfig config = Model(8, {fixed, variable});
  const std::vector<uint8_t> x = Floats({1, 2, 3, 4, 5, 6});
  const std::vector<uint8_t> v = Floats({1, 2, 3, 4, 5, 6});
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 6}, x), View("v", DataType::kFp32, {1, 3, 2}, v)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  EXPECT_EQ(out.size(), 2u);
  if (out.size() != 2) return;
  EXPECT_EQ(out[0].shape, (Shape{1, 2, 3}));
  EXPECT_EQ(out[1].shape, (Shape{1, 3, 1, 2}));
}

namespace {

// Input bytes "on a GPU" for the gather's bookkeeping: host memory standing in for the device
// memory of a CUDA shared-memory region (the device path itself runs in test/gpu/).
class HostBackedDeviceBytes final : public DeviceBytes {
 public:
  HostBackedDeviceBytes(int device, std::vector<uint8_t> bytes, bool fail = false)
      : device_(device), bytes_(std::move(bytes)), fail_(fail) {}
  int DeviceId() const override { return device_; }
  uint64_t ByteSize() const override { return bytes_.size(); }
  void* DevicePointer() const override { return const_cast<uint8_t*>(bytes_.data()); }
  Status CopyToHost(uint64_t offset, void* dst, uint64_t bytes) const override {
    if (fail_) return InvalidArg("CUDA shared memory copy failed: an illegal memory access");
    std::memcpy(dst, bytes_.data() + offset, bytes);
    return Status::Success();
  }

 private:
  int device_;
  std::vector<uint8_t> bytes_;
  bool fail_;
};

// An input of `rows` x 2 floats at float `first` of `region`.
InputTensor OnDevice(const std::shared_ptr<const DeviceBytes>& region, uint64_t first, int64_t rows) {
  InputTensor in;
  in.name = "x";
  in.dtype = DataType::kFp32;
  in.shape = {rows, 2};
  in.device = region;
  in.device_offset = first * sizeof(float);
  in.byte_size = static_cast<uint64_t>(rows) * 2 * sizeof(float);
  return in;
}

// A batch of a host row (1, 2), two device rows (floats 2..5 of the region) and a host row (7, 8).
Batch MixedBatch(const std::shared_ptr<const DeviceBytes>& region, const std::vector<uint8_t>& a,
                 const std::vector<uint8_t>& b) {
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 2}, a)}));
  requests.push_back(Request(2, {OnDevice(region, 2, 2)}));
  requests.push_back(Request(3, {View("x", DataType::kFp32, {1, 2}, b)}));
  return MakeBatch(std::move(requests));
}

}  // namespace

TEST(GatherCopiesDeviceRowsToTheHostForACpuInstance) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  auto region = std::make_shared<HostBackedDeviceBytes>(0, Floats({0, 0, 3, 4, 5, 6, 0}));
  const std::vector<uint8_t> a = Floats({1, 2});
  const std::vector<uint8_t> b = Floats({7, 8});
  const Batch batch = MixedBatch(region, a, b);
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, -1, &out).IsOk());
  if (out.size() != 1) return;
  EXPECT_TRUE(out[0].device_rows.empty());
  EXPECT_EQ(out[0].byte_size, 32u);
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out[0].shape, (Shape{4, 2}));
}

TEST(GatherListsDeviceRowsOnTheInstancesGpuAndCopiesTheHostRowsAroundThem) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  auto region = std::make_shared<HostBackedDeviceBytes>(1, Floats({0, 0, 3, 4, 5, 6, 0}));
  const std::vector<uint8_t> a = Floats({1, 2});
  const std::vector<uint8_t> b = Floats({7, 8});
  const Batch batch = MixedBatch(region, a, b);
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, 1, &out).IsOk());
  if (out.size() != 1 || out[0].device_rows.size() != 1) return;
  const DeviceRows& rows = out[0].device_rows[0];
  EXPECT_EQ(rows.offset, 8u);
  EXPECT_EQ(rows.bytes, 16u);
  EXPECT_TRUE(rows.src == static_cast<const uint8_t*>(region->DevicePointer()) + 8);
  // The host rows are in place; the device rows' bytes are left for the engine to fill.
  const std::vector<float> gathered = FloatsOf(out[0]);
  EXPECT_EQ(gathered.size(), 8u);
  if (gathered.size() != 8) return;
  EXPECT_TRUE((std::vector<float>{gathered[0], gathered[1], gathered[6], gathered[7]}) ==
              (std::vector<float>{1, 2, 7, 8}));
}

TEST(GatherTakesNoHostBufferWhenEveryRowIsOnTheDevice) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  auto region = std::make_shared<HostBackedDeviceBytes>(0, Floats({1, 2, 3, 4, 5, 6}));
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {OnDevice(region, 0, 2)}));
  requests.push_back(Request(2, {OnDevice(region, 4, 1)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, 0, &out).IsOk());
  if (out.size() != 1) return;
  EXPECT_TRUE(out[0].buffer.Empty());
  EXPECT_EQ(out[0].byte_size, 24u);
  EXPECT_EQ(out[0].device_rows.size(), 2u);
  if (out[0].device_rows.size() != 2) return;
  EXPECT_EQ(out[0].device_rows[1].offset, 16u);
  EXPECT_EQ(out[0].device_rows[1].bytes, 8u);
}

TEST(GatherCopiesRowsOnAnotherGpuToTheHost) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  auto region = std::make_shared<HostBackedDeviceBytes>(1, Floats({9, 9, 3, 4, 5, 6}));
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {OnDevice(region, 2, 2)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, 0, &out).IsOk());
  if (out.size() != 1) return;
  EXPECT_TRUE(out[0].device_rows.empty());
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{3, 4, 5, 6}));
}

TEST(GatherNamesTheInputWhoseDeviceCopyFailed) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {2})});
  auto region = std::make_shared<HostBackedDeviceBytes>(0, Floats({1, 2}), true);
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {OnDevice(region, 0, 1)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  const Status status = GatherBatchInputs(config, batch, &pool, -1, &out);
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_TRUE(status.Message().find("input 'x': CUDA shared memory copy failed") != std::string::npos);
}

TEST(GatherLeavesALoneRequestsLargeInputInPlaceForAGpuOnly) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {-1})});
  const size_t elements = (4 << 20) / sizeof(float);  // kRegisterHostMinBytes exactly
  const std::vector<uint8_t> big(elements * sizeof(float), 7);
  const std::vector<uint8_t> small = Floats({1, 2});
  for (const int device : {0, -1}) {
    std::vector<std::unique_ptr<InferenceRequest>> requests;
    requests.push_back(Request(1, {View("x", DataType::kFp32, {1, static_cast<int64_t>(elements)}, big)}));
    const Batch batch = MakeBatch(std::move(requests));
    BufferPool pool = MakePool();
    std::vector<GatheredInput> out;
    EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, device, &out).IsOk());
    if (out.size() != 1) return;
    EXPECT_EQ(out[0].byte_size, big.size());
    EXPECT_TRUE(out[0].host_in_place == (device >= 0 ? big.data() : nullptr));
    EXPECT_EQ(out[0].buffer.Empty(), device >= 0);
  }
  // Two requests, or a small one, are gathered on the host as usual.
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request(1, {View("x", DataType::kFp32, {1, 2}, small)}));
  requests.push_back(Request(2, {View("x", DataType::kFp32, {1, 2}, small)}));
  const Batch batch = MakeBatch(std::move(requests));
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out;
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, 0, &out).IsOk());
  if (out.size() != 1) return;
  EXPECT_TRUE(out[0].host_in_place == nullptr);
  EXPECT_TRUE(FloatsOf(out[0]) == (std::vector<float>{1, 2, 1, 2}));
}
