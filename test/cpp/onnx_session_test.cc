// The ONNX engine's session (engines/onnx/onnx_session*.cc) run against the real ONNX Runtime,
// dlopen'ed from the path scripts/native-tests.js passes (INFERNODE_ORT_LIBRARY), on the small
// models in test/cpp/fixtures/ (INFERNODE_TEST_FIXTURES). The failure paths are driven for real
// (a pool that runs out of memory part-way through the outputs, a string input that does not fit
// its shape, a run ONNX Runtime rejects) and LeakSanitizer is asked, right after each, whether any
// ONNX Runtime object was left unreachable.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/bytes_tensor.h"
#include "core/half_float.h"
#include "engines/onnx/onnx_session.h"
#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define INFERNODE_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFERNODE_HAS_LSAN 1
#endif
#endif
#ifdef INFERNODE_HAS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

using namespace infernode;

namespace {

// True when LeakSanitizer finds memory nothing points to any more (it prints the stacks).
// Without ASan, nothing to ask: false.
bool LeaksFound() {
#ifdef INFERNODE_HAS_LSAN
  return __lsan_do_recoverable_leak_check() != 0;
#else
  return false;
#endif
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Null (and the test fails saying why) when ONNX Runtime or the model cannot be loaded.
std::unique_ptr<OnnxSession> LoadSession(const std::string& model) {
  const std::string library = Env("INFERNODE_ORT_LIBRARY");
  const std::string fixtures = Env("INFERNODE_TEST_FIXTURES");
  if (library.empty() || fixtures.empty()) {
    ::harness::Fail(
        __FILE__, __LINE__,
        "INFERNODE_ORT_LIBRARY and INFERNODE_TEST_FIXTURES must be set (scripts/native-tests.js sets them)");
    return nullptr;
  }
  std::shared_ptr<OrtRuntime> runtime;
  Status s = OrtRuntime::Get(library, &runtime);
  if (!s.IsOk()) {
    ::harness::Fail(__FILE__, __LINE__, s.Message());
    return nullptr;
  }
  OnnxSessionOptions options;
  options.intra_op_threads = 1;
  options.inter_op_threads = 1;
  std::unique_ptr<OnnxSession> session;
  s = OnnxSession::Create(runtime, fixtures + "/" + model, options, &session);
  if (!s.IsOk()) ::harness::Fail(__FILE__, __LINE__, s.Message());
  return session;
}

// An allocator that serves `allowed` blocks and then reports out of memory, to fail a pool
// acquisition part-way through a run.
class RationedAllocator final : public HostAllocator {
 public:
  explicit RationedAllocator(int allowed) : inner_(MakeAlignedAllocator()), allowed_(allowed) {}
  void* Allocate(size_t bytes) override {
    if (allowed_ <= 0) return nullptr;
    --allowed_;
    return inner_->Allocate(bytes);
  }
  void Free(void* ptr, size_t bytes) override { inner_->Free(ptr, bytes); }
  const char* Name() const override { return "rationed"; }

 private:
  std::unique_ptr<HostAllocator> inner_;
  int allowed_;
};

GatheredInput Input(BufferPool* pool, const std::string& name, DataType dtype, Shape shape,
                    const std::vector<uint8_t>& bytes) {
  GatheredInput in;
  in.name = name;
  in.dtype = dtype;
  in.shape = std::move(shape);
  in.byte_size = bytes.size();
  EXPECT_TRUE(pool->Acquire(bytes.size(), &in.buffer).IsOk());
  if (!bytes.empty()) std::memcpy(in.buffer.Data(), bytes.data(), bytes.size());
  return in;
}

std::vector<uint8_t> Floats(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> Serialize(const std::vector<std::string>& elements) {
  std::vector<uint8_t> out;
  for (const std::string& e : elements) {
    const uint32_t len = static_cast<uint32_t>(e.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

// INPUT0, INPUT1 FP32 [rows, 4] for add_sub_fp32.onnx.
std::vector<GatheredInput> AddSubInputs(BufferPool* pool, int64_t rows0, int64_t rows1) {
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(pool, "INPUT0", DataType::kFp32, {rows0, 4}, Floats(std::vector<float>(rows0 * 4, 3.0f))));
  inputs.push_back(Input(pool, "INPUT1", DataType::kFp32, {rows1, 4}, Floats(std::vector<float>(rows1 * 4, 1.0f))));
  return inputs;
}

}  // namespace

TEST(OnnxRunWritesBothOutputsInPlace) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp32.onnx");
  if (!session) return;
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  std::vector<OutputTensor> outputs;
  const Status s = session->Run(AddSubInputs(&pool, 2, 2), 2, true, {}, &pool, &outputs);
  EXPECT_TRUE(s.IsOk());
  EXPECT_EQ(outputs.size(), 2u);
  if (outputs.size() == 2) {
    float sum = 0, diff = 0;
    std::memcpy(&sum, outputs[0].data, 4);
    std::memcpy(&diff, outputs[1].data, 4);
    EXPECT_EQ(sum, 4.0f);
    EXPECT_EQ(diff, 2.0f);
    EXPECT_EQ(outputs[1].byte_size, 32u);
  }
}

TEST(OnnxRunReleasesOutputsMadeBeforeMemoryRanOut) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp32.onnx");
  if (!session) return;
  {
    BufferPool inputs_pool(MakeAlignedAllocator(), 1 << 20);
    // One block for OUTPUT0 (its OrtValue is made), none for OUTPUT1: the run stops there.
    BufferPool outputs_pool(std::make_unique<RationedAllocator>(1), 1 << 20);
    std::vector<OutputTensor> outputs;
    const Status s = session->Run(AddSubInputs(&inputs_pool, 2, 2), 2, true, {}, &outputs_pool, &outputs);
    EXPECT_EQ(s.Code(), StatusCode::kUnavailable);
    EXPECT_TRUE(outputs.empty());
  }
  EXPECT_TRUE(!LeaksFound());
}

TEST(OnnxRunReleasesEverythingWhenOnnxRuntimeRejectsTheRun) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp32.onnx");
  if (!session) return;
  {
    BufferPool pool(MakeAlignedAllocator(), 1 << 20);
    std::vector<OutputTensor> outputs;
    // INPUT1 has 3 rows where INPUT0 has 2: ONNX Runtime fails the Add after both outputs exist.
    const Status s = session->Run(AddSubInputs(&pool, 2, 3), 2, true, {}, &pool, &outputs);
    EXPECT_TRUE(!s.IsOk());
    EXPECT_CONTAINS(s.Message(), "running the model");
    EXPECT_TRUE(outputs.empty());
  }
  EXPECT_TRUE(!LeaksFound());
}

TEST(OnnxRunRoundTripsStrings) {
  std::unique_ptr<OnnxSession> session = LoadSession("identity_bytes.onnx");
  if (!session) return;
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(&pool, "INPUT0", DataType::kBytes, {1, 2}, Serialize({"hello", ""})));
  std::vector<OutputTensor> outputs;
  EXPECT_TRUE(session->Run(inputs, 1, true, {}, &pool, &outputs).IsOk());
  EXPECT_EQ(outputs.size(), 1u);
  if (outputs.size() == 1) {
    std::vector<std::string_view> elements;
    EXPECT_TRUE(SplitSerializedBytes(outputs[0].data, outputs[0].byte_size, &elements).IsOk());
    EXPECT_EQ(elements.size(), 2u);
    if (elements.size() == 2) EXPECT_EQ(std::string(elements[0]), std::string("hello"));
  }
}

TEST(OnnxRunReleasesAStringInputThatDoesNotFitItsShape) {
  std::unique_ptr<OnnxSession> session = LoadSession("identity_bytes.onnx");
  if (!session) return;
  {
    BufferPool pool(MakeAlignedAllocator(), 1 << 20);
    std::vector<GatheredInput> inputs;
    // Shape [1, 2] holds 2 strings; the buffer carries 3, so the third has nowhere to go.
    inputs.push_back(Input(&pool, "INPUT0", DataType::kBytes, {1, 2}, Serialize({"a", "b", "c"})));
    std::vector<OutputTensor> outputs;
    const Status s = session->Run(inputs, 1, true, {}, &pool, &outputs);
    EXPECT_TRUE(!s.IsOk());
    EXPECT_CONTAINS(s.Message(), "input 'INPUT0'");
  }
  EXPECT_TRUE(!LeaksFound());
}

TEST(OnnxRunRejectsATruncatedStringInput) {
  std::unique_ptr<OnnxSession> session = LoadSession("identity_bytes.onnx");
  if (!session) return;
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  std::vector<uint8_t> bytes = Serialize({"a", "bb"});
  bytes.pop_back();  // the second element now claims a byte past the end
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(&pool, "INPUT0", DataType::kBytes, {1, 2}, bytes));
  std::vector<OutputTensor> outputs;
  const Status s = session->Run(inputs, 1, true, {}, &pool, &outputs);
  EXPECT_EQ(s.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(s.Message(), "BYTES element 1");
}

namespace {

// A config serving every tensor named in `inputs` / `outputs` as FP32.
ModelConfig ServedFp32(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  ModelConfig config;
  for (const std::string& name : inputs) config.inputs.push_back({name, DataType::kFp32, {-1}});
  for (const std::string& name : outputs) config.outputs.push_back({name, DataType::kFp32, {-1}});
  return config;
}

float ThroughHalf(float value) { return HalfBitsToFloat(FloatToHalfBits(value)); }

std::vector<float> OutputFloats(const OutputTensor& out) {
  std::vector<float> values(out.byte_size / 4);
  if (!values.empty()) std::memcpy(values.data(), out.data, out.byte_size);
  return values;
}

}  // namespace

TEST(OnnxRunCastsFp32InputsAndOutputsOfAnFp16Model) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp16.onnx");
  if (!session) return;
  const std::vector<std::string> cast =
      session->ServeConfigTypes(ServedFp32({"INPUT0", "INPUT1"}, {"OUTPUT0", "OUTPUT1"}));
  EXPECT_EQ(cast.size(), 4u);
  if (!cast.empty()) EXPECT_CONTAINS(cast[0], "input 'INPUT0' (FP32 served, FP16 in the model)");
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  // Three rows (an odd count): ties, overflow, subnormals; INPUT1 quarters keep the sums exact.
  const std::vector<float> a = {1.0f + 1.0f / 2048,
                                1.0f + 3.0f / 2048,
                                65520.0f,
                                5.96e-8f,
                                6.1e-5f,
                                0.1f,
                                -2.5f,
                                1000.3f,
                                0.0f,
                                -0.0f,
                                2047.5f,
                                3.0f};
  const std::vector<float> b = {0, 0, 0, 0, 0, 0.25f, -1.75f, 0.125f, 0, 0, 0.5f, -3};
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(&pool, "INPUT0", DataType::kFp32, {3, 4}, Floats(a)));
  inputs.push_back(Input(&pool, "INPUT1", DataType::kFp32, {3, 4}, Floats(b)));
  std::vector<OutputTensor> outputs;
  DeviceCopyTimes times;
  const Status s = session->Run(inputs, 3, true, {}, &pool, &outputs, &times);
  EXPECT_TRUE(s.IsOk());
  EXPECT_EQ(outputs.size(), 2u);
  if (outputs.size() != 2) return;
  for (const OutputTensor& out : outputs) {
    EXPECT_EQ(out.dtype, DataType::kFp32);
    EXPECT_EQ(out.byte_size, 48u);
    EXPECT_TRUE(out.shape == Shape({3, 4}));
  }
  const std::vector<float> sum = OutputFloats(outputs[0]);
  const std::vector<float> diff = OutputFloats(outputs[1]);
  int wrong = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (sum[i] != ThroughHalf(ThroughHalf(a[i]) + ThroughHalf(b[i]))) ++wrong;
    if (diff[i] != ThroughHalf(ThroughHalf(a[i]) - ThroughHalf(b[i]))) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(sum[0], 1.0f);                                    // tie to even (down)
  EXPECT_EQ(sum[1], 1.0f + 2.0f / 1024);                      // tie to even (up)
  EXPECT_EQ(sum[2], std::numeric_limits<float>::infinity());  // overflow
  EXPECT_EQ(sum[3], HalfBitsToFloat(0x0001));                 // the smallest subnormal
  EXPECT_EQ(sum[4], HalfBitsToFloat(0x03ff));                 // the largest subnormal
}

TEST(OnnxRunCastsAnOutputOnnxRuntimeAllocated) {
  std::unique_ptr<OnnxSession> session = LoadSession("identity_bf16_dynamic.onnx");
  if (!session) return;
  EXPECT_EQ(session->ServeConfigTypes(ServedFp32({"INPUT0"}, {"OUTPUT0"})).size(), 2u);
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  const std::vector<float> x = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -3.0f, 1e-40f, 3e38f};
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(&pool, "INPUT0", DataType::kFp32, {1, 5}, Floats(x)));
  std::vector<OutputTensor> outputs;
  EXPECT_TRUE(session->Run(inputs, 1, true, {}, &pool, &outputs).IsOk());
  EXPECT_EQ(outputs.size(), 1u);
  if (outputs.size() != 1) return;
  EXPECT_EQ(outputs[0].dtype, DataType::kFp32);
  EXPECT_TRUE(outputs[0].shape == Shape({1, 5}));
  const std::vector<float> y = OutputFloats(outputs[0]);
  EXPECT_EQ(y.size(), 5u);
  for (size_t i = 0; i < y.size() && i < x.size(); ++i) EXPECT_EQ(y[i], Bfloat16BitsToFloat(FloatToBfloat16Bits(x[i])));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f + 4.0f / 256);
}

TEST(OnnxRunWithoutServedTypesPassesHalfThrough) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp16.onnx");
  if (!session) return;
  // A config of the model's own types (auto-complete): nothing to cast.
  ModelConfig config;
  config.inputs.push_back({"INPUT0", DataType::kFp16, {4}});
  EXPECT_TRUE(session->ServeConfigTypes(config).empty());
  BufferPool pool(MakeAlignedAllocator(), 1 << 20);
  const std::vector<uint16_t> one = {0x3c00, 0x3c00, 0x3c00, 0x3c00};
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), one.data(), 8);
  std::vector<GatheredInput> inputs;
  inputs.push_back(Input(&pool, "INPUT0", DataType::kFp16, {1, 4}, bytes));
  inputs.push_back(Input(&pool, "INPUT1", DataType::kFp16, {1, 4}, bytes));
  std::vector<OutputTensor> outputs;
  EXPECT_TRUE(session->Run(inputs, 1, true, {}, &pool, &outputs).IsOk());
  EXPECT_EQ(outputs.size(), 2u);
  if (outputs.empty()) return;
  EXPECT_EQ(outputs[0].dtype, DataType::kFp16);
  EXPECT_EQ(outputs[0].byte_size, 8u);
  uint16_t first = 0;
  std::memcpy(&first, outputs[0].data, 2);
  EXPECT_EQ(first, 0x4000);  // 1 + 1 = 2
}

TEST(OnnxRunReleasesCastBlocksWhenMemoryRunsOut) {
  std::unique_ptr<OnnxSession> session = LoadSession("add_sub_fp16.onnx");
  if (!session) return;
  session->ServeConfigTypes(ServedFp32({"INPUT0", "INPUT1"}, {"OUTPUT0", "OUTPUT1"}));
  for (int allowed = 0; allowed < 6; ++allowed) {
    {
      BufferPool inputs_pool(MakeAlignedAllocator(), 1 << 20);
      // Blocks for the cast inputs and outputs run out at each point in turn.
      BufferPool pool(std::make_unique<RationedAllocator>(allowed), 1 << 20);
      std::vector<GatheredInput> inputs;
      inputs.push_back(Input(&inputs_pool, "INPUT0", DataType::kFp32, {2, 4}, Floats(std::vector<float>(8, 1.5f))));
      inputs.push_back(Input(&inputs_pool, "INPUT1", DataType::kFp32, {2, 4}, Floats(std::vector<float>(8, 0.5f))));
      std::vector<OutputTensor> outputs;
      const Status s = session->Run(inputs, 2, true, {}, &pool, &outputs);
      EXPECT_EQ(s.Code(), StatusCode::kUnavailable);
      EXPECT_TRUE(outputs.empty());
    }
    EXPECT_TRUE(!LeaksFound());
  }
}
