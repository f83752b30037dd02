// ONNX tensor element types ↔ Triton datatypes.
#pragma once

#include <onnxruntime_c_api.h>

#include "core/datatype.h"

namespace infernode {

// kInvalid for ONNX types Triton has no datatype for (complex, 8-bit floats, 4-bit ints).
DataType DataTypeFromOnnx(ONNXTensorElementDataType type);

ONNXTensorElementDataType OnnxFromDataType(DataType dtype);

}  // namespace infernode
