// FP32 <-> FP16 / BF16 conversions on the host: what a model whose tensor is FLOAT16 or BFLOAT16
// gets when its config serves that tensor as TYPE_FP32 (cpp/engines/onnx/onnx_session_cast.cc).
// Rounding is to nearest, ties to even, as CUDA's __float2half_rn / __float2bfloat16_rn do, so
// the CPU and the GPU paths (cuda/half_cast.cu) give the same bits for every number. NaN stays a
// (quiet) NaN, +-Inf stays infinite, FP32 values past FP16's range become +-Inf, and FP16
// subnormals are produced and read exactly. Pure functions: callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/datatype.h"
#include "core/status.h"

namespace infernode {

uint16_t FloatToHalfBits(float value);
float HalfBitsToFloat(uint16_t bits);
uint16_t FloatToBfloat16Bits(float value);
float Bfloat16BitsToFloat(uint16_t bits);

// Whether a config may serve `served` for a model tensor of type `model` (converted on the way
// in and out): FP32 for FP16, FP32 for BF16. Equal types need no cast and are not a cast pair.
bool IsHalfCastPair(DataType served, DataType model);

// Converts `count` elements from `src` (of `src_type`) into `dst` (of `dst_type`), which must
// not overlap. One of the types is FP32, the other FP16 or BF16; any other pair is INVALID_ARG.
Status HostCast(void* dst, DataType dst_type, const void* src, DataType src_type, size_t count);

}  // namespace infernode
