#include "core/datatype.h"

#include <array>

namespace infernode {

static_assert(static_cast<int>(DataType::kBool) == 1, "Triton TYPE_BOOL");
static_assert(static_cast<int>(DataType::kFp32) == 11, "Triton TYPE_FP32");
static_assert(static_cast<int>(DataType::kBytes) == 13, "Triton TYPE_STRING");
static_assert(static_cast<int>(DataType::kBf16) == 14, "Triton TYPE_BF16");

namespace {

struct TypeInfo {
  const char* name;
  size_t size;
};

// Indexed by the enum value.
constexpr std::array<TypeInfo, 15> kTypes = {{
    {"INVALID", 0},
    {"BOOL", 1},
    {"UINT8", 1},
    {"UINT16", 2},
    {"UINT32", 4},
    {"UINT64", 8},
    {"INT8", 1},
    {"INT16", 2},
    {"INT32", 4},
    {"INT64", 8},
    {"FP16", 2},
    {"FP32", 4},
    {"FP64", 8},
    {"BYTES", 0},
    {"BF16", 2},
}};

}  // namespace

DataType DataTypeFromCode(int32_t code) {
  if (code < 1 || code >= static_cast<int32_t>(kTypes.size())) return DataType::kInvalid;
  return static_cast<DataType>(code);
}

size_t DataTypeByteSize(DataType dtype) {
  return kTypes[static_cast<size_t>(DataTypeFromCode(static_cast<int32_t>(dtype)))].size;
}

const char* DataTypeName(DataType dtype) {
  return kTypes[static_cast<size_t>(DataTypeFromCode(static_cast<int32_t>(dtype)))].name;
}

DataType DataTypeFromName(const std::string& name) {
  for (size_t i = 1; i < kTypes.size(); ++i) {
    if (name == kTypes[i].name) return static_cast<DataType>(i);
  }
  return DataType::kInvalid;
}

}  // namespace infernode
