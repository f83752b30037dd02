#include "engines/onnx/ort_types.h"

namespace infernode {

DataType DataTypeFromOnnx(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return DataType::kBool;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return DataType::kUint8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return DataType::kUint16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return DataType::kUint32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return DataType::kUint64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return DataType::kInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return DataType::kInt16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return DataType::kInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return DataType::kInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return DataType::kFp16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return DataType::kFp32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return DataType::kFp64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
      return DataType::kBytes;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return DataType::kBf16;
    default:
      return DataType::kInvalid;
  }
}

ONNXTensorElementDataType OnnxFromDataType(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case DataType::kUint8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DataType::kUint16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
    case DataType::kUint32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
    case DataType::kUint64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
    case DataType::kInt8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DataType::kInt16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case DataType::kInt32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DataType::kInt64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DataType::kFp16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DataType::kFp32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DataType::kFp64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DataType::kBytes:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
    case DataType::kBf16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    default:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
}

}  // namespace infernode
