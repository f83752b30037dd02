// FP32 <-> FP16 / BF16 conversion kernels (cpp/memory/half_cast.h): a grid-stride loop over the
// elements with CUDA's round-to-nearest-even intrinsics, on the caller's stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "memory/half_cast.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace half_cast_internal {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 4096;  // the grid-stride loop covers the rest

__global__ void FloatToHalfKernel(const float* src, __half* dst, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = __float2half_rn(src[i]);
  }
}

__global__ void HalfToFloatKernel(const __half* src, float* dst, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = __half2float(src[i]);
  }
}

__global__ void FloatToBfloat16Kernel(const float* src, __nv_bfloat16* dst, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = __float2bfloat16_rn(src[i]);
  }
}

__global__ void Bfloat16ToFloatKernel(const __nv_bfloat16* src, float* dst, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = __bfloat162float(src[i]);
  }
}

}  // namespace half_cast_internal
using namespace half_cast_internal;  // NOLINT(build/namespaces): this file's own kernels

Status LaunchHalfCast(void* stream, void* dst, DataType dst_type, const void* src, DataType src_type, size_t count) {
  const std::string what = std::string("casting ") + DataTypeName(src_type) + " to " + DataTypeName(dst_type);
  const bool to_half = src_type == DataType::kFp32 && (dst_type == DataType::kFp16 || dst_type == DataType::kBf16);
  const bool from_half = dst_type == DataType::kFp32 && (src_type == DataType::kFp16 || src_type == DataType::kBf16);
  if (!to_half && !from_half) return InvalidArg(what + " on the GPU: only FP32 <-> FP16 and FP32 <-> BF16 exist");
  if (count == 0) return Status::Success();
  const unsigned blocks = static_cast<unsigned>(std::min(kMaxBlocks, (count + kThreads - 1) / kThreads));
  auto s = static_cast<cudaStream_t>(stream);
  if (src_type == DataType::kFp32 && dst_type == DataType::kFp16) {
    FloatToHalfKernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(src), static_cast<__half*>(dst), count);
  } else if (src_type == DataType::kFp32) {
    FloatToBfloat16Kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(src), static_cast<__nv_bfloat16*>(dst),
                                                      count);
  } else if (src_type == DataType::kFp16) {
    HalfToFloatKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(src), static_cast<float*>(dst), count);
  } else {
    Bfloat16ToFloatKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), static_cast<float*>(dst),
                                                      count);
  }
  const cudaError_t err = cudaGetLastError();  // launch errors; also clears a non-sticky one
  if (err != cudaSuccess) return Internal(what + " on the GPU (kernel launch): " + cudaGetErrorString(err));
  return Status::Success();
}

}  // namespace infernode
