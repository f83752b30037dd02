// Triton's datatypes. Enum values equal Triton's TYPE_* numbers (model_config.proto) and
// ts/tensor.ts dataTypeCode(); the static_asserts in datatype.cc pin them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace infernode {

enum class DataType : int32_t {
  kInvalid = 0,
  kBool = 1,
  kUint8 = 2,
  kUint16 = 3,
  kUint32 = 4,
  kUint64 = 5,
  kInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kFp16 = 10,
  kFp32 = 11,
  kFp64 = 12,
  kBytes = 13,
  kBf16 = 14,
};

// Bytes per element; 0 for BYTES (variable length) and kInvalid.
size_t DataTypeByteSize(DataType dtype);

// Protocol name ("FP32", "BYTES", ...); "INVALID" for anything else.
const char* DataTypeName(DataType dtype);

// kInvalid when the value is not one of the enum's numbers.
DataType DataTypeFromCode(int32_t code);

// Parses a protocol name; kInvalid when unknown.
DataType DataTypeFromName(const std::string& name);

}  // namespace infernode
