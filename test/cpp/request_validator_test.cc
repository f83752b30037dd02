// ValidateRequest: every mismatch with the model config is INVALID_ARG naming the model and the
// input; a valid request gets its batch size and batch key.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"
#include "model_configs.h"
#include "scheduling/request_validator.h"

using namespace infernode;
using test_configs::Model;
using test_configs::Spec;

namespace {

const uint8_t kZeros[1024] = {};

// A batching model with one FP32 input "x" of dims [3].
ModelConfig SimpleModel() { return Model(8, {Spec("x", DataType::kFp32, {3})}); }

// A numeric tensor of zeros whose byte size matches its shape.
InputTensor Tensor(const std::string& name, DataType dtype, Shape shape) {
  InputTensor in;
  in.name = name;
  in.dtype = dtype;
  in.shape = std::move(shape);
  in.data = kZeros;
  ByteSize(dtype, in.shape, &in.byte_size);
  if (in.byte_size > sizeof(kZeros)) in.byte_size = 0;  // tests keep their tensors small
  return in;
}

// BYTES serialization: a 4-byte little-endian length before each element.
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

InputTensor Strings(const std::string& name, Shape shape, const std::vector<uint8_t>& serialized) {
  InputTensor in;
  in.name = name;
  in.dtype = DataType::kBytes;
  in.shape = std::move(shape);
  in.data = serialized.data();
  in.byte_size = serialized.size();
  return in;
}

InferenceRequest Request(std::vector<InputTensor> inputs) {
  InferenceRequest request;
  request.id = 1;
  request.inputs = std::move(inputs);
  return request;
}

Status Validate(const ModelConfig& config, std::vector<InputTensor> inputs) {
  InferenceRequest request = Request(std::move(inputs));
  return ValidateRequest(config, &request);
}

// The batch key a valid request gets.
std::string KeyOf(const ModelConfig& config, std::vector<InputTensor> inputs) {
  InferenceRequest request = Request(std::move(inputs));
  const Status status = ValidateRequest(config, &request);
  EXPECT_TRUE(status.IsOk());
  return request.batch_key;
}

// INVALID_ARG, naming the model and the input.
void ExpectInvalid(const Status& status, const std::string& input) {
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(status.Message(), "'m'");
  if (!input.empty()) EXPECT_CONTAINS(status.Message(), "'" + input + "'");
}

}  // namespace

TEST(ValidatorAcceptsAValidRequest) {
  InferenceRequest request = Request({Tensor("x", DataType::kFp32, {4, 3})});
  EXPECT_TRUE(ValidateRequest(SimpleModel(), &request).IsOk());
  EXPECT_EQ(request.batch_size, 4);
}

TEST(ValidatorRejectsUnknownInput) {
  const Status status =
      Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {1, 3}), Tensor("y", DataType::kFp32, {1, 3})});
  ExpectInvalid(status, "y");
}

TEST(ValidatorRejectsDuplicateInput) {
  const Status status =
      Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {1, 3}), Tensor("x", DataType::kFp32, {1, 3})});
  ExpectInvalid(status, "x");
  EXPECT_CONTAINS(status.Message(), "duplicate");
}

TEST(ValidatorRejectsMissingRequiredInput) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {3}), Spec("y", DataType::kInt32, {1})});
  const Status status = Validate(config, {Tensor("x", DataType::kFp32, {1, 3})});
  ExpectInvalid(status, "y");
}

TEST(ValidatorCountsInputsFirstWithTritonsText) {
  // Copies: Message() refers into its Status, which must outlive the comparison.
  auto message = [](const ModelConfig& config, std::vector<InputTensor> inputs) {
    return Validate(config, std::move(inputs)).Message();
  };
  const ModelConfig all = Model(8, {Spec("a", DataType::kFp32, {3}), Spec("b", DataType::kInt32, {1})});
  EXPECT_EQ(message(all, {Tensor("a", DataType::kFp32, {1, 3})}),
            std::string("expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['a'], but missing required "
                        "input(s) ['b']. Please provide all required input(s)."));
  // Counted before names: one unknown input in place of two is a count error, as in Triton.
  EXPECT_EQ(message(all, {Tensor("z", DataType::kFp32, {1, 3})}),
            std::string("expected 2 inputs but got 1 inputs for model 'm'. Got input(s) ['z'], but missing required "
                        "input(s) ['a','b']. Please provide all required input(s)."));
  const ModelConfig optional = Model(
      8, {Spec("a", DataType::kFp32, {3}), Spec("b", DataType::kInt32, {1}), Spec("c", DataType::kInt32, {1}, true)});
  EXPECT_EQ(
      message(optional, {}),
      std::string("expected number of inputs between 2 and 3 but got 0 inputs for model 'm'. Got input(s) [], but "
                  "missing required input(s) ['a','b']. Please provide all required input(s)."));
}

TEST(ValidatorAcceptsAbsentOptionalInput) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {3}), Spec("y", DataType::kInt32, {1}, true)});
  EXPECT_TRUE(Validate(config, {Tensor("x", DataType::kFp32, {1, 3})}).IsOk());
  EXPECT_TRUE(Validate(config, {Tensor("x", DataType::kFp32, {1, 3}), Tensor("y", DataType::kInt32, {1, 1})}).IsOk());
}

TEST(ValidatorRejectsRequestWithNoInputs) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {3}, true)});
  ExpectInvalid(Validate(config, {}), "");
}

TEST(ValidatorRejectsWrongDatatype) {
  const Status status = Validate(SimpleModel(), {Tensor("x", DataType::kInt32, {1, 3})});
  ExpectInvalid(status, "x");
  EXPECT_CONTAINS(status.Message(), "INT32");
  EXPECT_CONTAINS(status.Message(), "FP32");
}

TEST(ValidatorRejectsWrongShape) {
  const Status status = Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {2, 4})});
  ExpectInvalid(status, "x");
  EXPECT_CONTAINS(status.Message(), "[-1,3]");
  EXPECT_CONTAINS(status.Message(), "[2,4]");
  ExpectInvalid(Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {2, 3, 1})}), "x");  // rank
}

TEST(ValidatorRejectsMissingBatchDimension) {
  const Status status = Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {})});
  ExpectInvalid(status, "x");
  EXPECT_CONTAINS(status.Message(), "[-1,3]");
}

TEST(ValidatorWildcardDimsAcceptAnySize) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {-1, 2})});
  EXPECT_TRUE(Validate(config, {Tensor("x", DataType::kFp32, {1, 7, 2})}).IsOk());
  EXPECT_TRUE(Validate(config, {Tensor("x", DataType::kFp32, {2, 0, 2})}).IsOk());
  ExpectInvalid(Validate(config, {Tensor("x", DataType::kFp32, {1, 7, 3})}), "x");
}

TEST(ValidatorRejectsNegativeDimensionNamingTheInput) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {-1})});
  InputTensor in = Tensor("x", DataType::kFp32, {1, 1});
  in.shape = {1, -4};  // -1 in the config accepts any value, even a negative one
  ExpectInvalid(Validate(config, {in}), "x");
}

TEST(ValidatorRejectsOverflowingByteSizeNamingTheInput) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp64, {-1})});
  InputTensor in = Tensor("x", DataType::kFp64, {1, 1});
  in.shape = {1, std::numeric_limits<int64_t>::max() / 4};
  ExpectInvalid(Validate(config, {in}), "x");
}

TEST(ValidatorRejectsByteSizeMismatch) {
  InputTensor in = Tensor("x", DataType::kFp32, {2, 3});
  in.byte_size -= 4;
  const Status status = Validate(SimpleModel(), {in});
  ExpectInvalid(status, "x");
  EXPECT_CONTAINS(status.Message(), "24");
  EXPECT_CONTAINS(status.Message(), "20");
}

TEST(ValidatorChecksBytesElementCount) {
  const ModelConfig config = Model(8, {Spec("s", DataType::kBytes, {2})});
  const std::vector<uint8_t> two = Serialize({"ab", ""});
  EXPECT_TRUE(Validate(config, {Strings("s", {1, 2}, two)}).IsOk());
  const std::vector<uint8_t> three = Serialize({"ab", "c", "d"});
  const Status status = Validate(config, {Strings("s", {1, 2}, three)});
  ExpectInvalid(status, "s");
  EXPECT_CONTAINS(status.Message(), "2 string elements");
}

TEST(ValidatorRejectsTruncatedBytes) {
  const ModelConfig config = Model(8, {Spec("s", DataType::kBytes, {1})});
  std::vector<uint8_t> data = Serialize({"hello"});
  data.pop_back();  // the element runs past the end
  ExpectInvalid(Validate(config, {Strings("s", {1, 1}, data)}), "s");
  const std::vector<uint8_t> short_length = {5, 0};  // not even a whole length prefix
  ExpectInvalid(Validate(config, {Strings("s", {1, 1}, short_length)}), "s");
}

TEST(ValidatorTrustsJsCountsOnlyForInputsWhoseDataStaysInJs) {
  // A JS engine's input carries no bytes: its elements were counted by JS, its byte size is checked.
  const ModelConfig strings = Model(8, {Spec("s", DataType::kBytes, {2})});
  InputTensor in_js = Strings("s", {1, 2}, {});
  in_js.data = nullptr;
  in_js.data_in_js = true;
  EXPECT_TRUE(Validate(strings, {in_js}).IsOk());
  // Bytes that are not JS's are walked, a null pointer included.
  InputTensor absent = Strings("s", {1, 2}, {});
  absent.data = nullptr;
  ExpectInvalid(Validate(strings, {absent}), "s");
  InputTensor fixed = Tensor("x", DataType::kFp32, {1, 3});
  fixed.data = nullptr;
  fixed.data_in_js = true;
  EXPECT_TRUE(Validate(SimpleModel(), {fixed}).IsOk());
  fixed.byte_size = 8;  // the byte size JS reported must still match the shape
  ExpectInvalid(Validate(SimpleModel(), {fixed}), "x");
}

TEST(ValidatorRejectsBatchSizeAboveMax) {
  const Status status = Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {9, 3})});
  ExpectInvalid(status, "");
  EXPECT_CONTAINS(status.Message(), "<= 8");
  EXPECT_TRUE(Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {8, 3})}).IsOk());
}

TEST(ValidatorRejectsBatchSizeZero) {
  const Status status = Validate(SimpleModel(), {Tensor("x", DataType::kFp32, {0, 3})});
  ExpectInvalid(status, "");
  EXPECT_CONTAINS(status.Message(), ">= 1");
}

TEST(ValidatorRejectsInputsDisagreeingOnBatchSize) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {3}), Spec("y", DataType::kInt32, {1})});
  const Status status = Validate(config, {Tensor("x", DataType::kFp32, {2, 3}), Tensor("y", DataType::kInt32, {3, 1})});
  ExpectInvalid(status, "y");
}

TEST(ValidatorNonBatchingModelTakesShapesAsTheyAre) {
  const ModelConfig config = Model(0, {Spec("x", DataType::kFp32, {2, 3})});
  InferenceRequest request = Request({Tensor("x", DataType::kFp32, {2, 3})});
  EXPECT_TRUE(ValidateRequest(config, &request).IsOk());
  EXPECT_EQ(request.batch_size, 1);
  ExpectInvalid(Validate(config, {Tensor("x", DataType::kFp32, {1, 2, 3})}), "x");
  const ModelConfig scalar = Model(0, {Spec("x", DataType::kFp32, {})});
  EXPECT_TRUE(Validate(scalar, {Tensor("x", DataType::kFp32, {})}).IsOk());
}

TEST(ValidatorBatchKeyEqualForSameVariableShapes) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {-1})});
  // The batch dim is not part of the key; the variable dim is.
  EXPECT_EQ(KeyOf(config, {Tensor("x", DataType::kFp32, {1, 5})}),
            KeyOf(config, {Tensor("x", DataType::kFp32, {3, 5})}));
  EXPECT_TRUE(KeyOf(config, {Tensor("x", DataType::kFp32, {1, 5})}) !=
              KeyOf(config, {Tensor("x", DataType::kFp32, {1, 6})}));
}

TEST(ValidatorBatchKeyIgnoresFixedShapes) {
  EXPECT_EQ(KeyOf(SimpleModel(), {Tensor("x", DataType::kFp32, {1, 3})}),
            KeyOf(SimpleModel(), {Tensor("x", DataType::kFp32, {7, 3})}));
}

TEST(ValidatorBatchKeyLeavesOutRaggedInputs) {
  const ModelConfig config = Model(8, {Spec("r", DataType::kFp32, {-1}, false, true)});
  EXPECT_EQ(KeyOf(config, {Tensor("r", DataType::kFp32, {1, 5})}),
            KeyOf(config, {Tensor("r", DataType::kFp32, {1, 9})}));
}

TEST(ValidatorBatchKeyTellsOptionalInputPresence) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {3}), Spec("y", DataType::kInt32, {1}, true)});
  const std::string without = KeyOf(config, {Tensor("x", DataType::kFp32, {1, 3})});
  const std::string with = KeyOf(config, {Tensor("x", DataType::kFp32, {1, 3}), Tensor("y", DataType::kInt32, {1, 1})});
  EXPECT_TRUE(without != with);
}

TEST(ValidatorBatchKeyDoesNotDependOnInputOrder) {
  const ModelConfig config = Model(8, {Spec("x", DataType::kFp32, {-1}), Spec("y", DataType::kInt32, {-1})});
  EXPECT_EQ(KeyOf(config, {Tensor("x", DataType::kFp32, {1, 2}), Tensor("y", DataType::kInt32, {1, 3})}),
            KeyOf(config, {Tensor("y", DataType::kInt32, {1, 3}), Tensor("x", DataType::kFp32, {1, 2})}));
}
