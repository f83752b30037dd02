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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  const Status status = GatherBatchInputs(config, batch, &pool, &out);
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
  const Status status = GatherBatchInputs(config, batch, &pool, &out);
  EXPECT_EQ(status.Code(), StatusCode::kInternal);
  EXPECT_CONTAINS(status.Message(), "'o'");
}

TEST(GatherEmptyBatchGathersNothing) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {1})});
  const Batch batch;
  BufferPool pool = MakePool();
  std::vector<GatheredInput> out(1);
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
    EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
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
  EXPECT_EQ(GatherBatchInputs(config, batch, &pool, &out).Code(), StatusCode::kUnavailable);
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
  EXPECT_TRUE(GatherBatchInputs(config, batch, &pool, &out).IsOk());
  EXPECT_EQ(out.size(), 2u);
  if (out.size() != 2) return;
  EXPECT_EQ(out[0].shape, (Shape{1, 2, 3}));
  EXPECT_EQ(out[1].shape, (Shape{1, 3, 1, 2}));
}
