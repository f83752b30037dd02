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

// One conversion per element, as the host conversion (core/half_float.h) rounds.
struct ToHalf {
  __device__ __half operator()(float v) const { return __float2half_rn(v); }
};
struct ToBfloat16 {
  __device__ __nv_bfloat16 operator()(float v) const { return __float2bfloat16_rn(v); }
};
struct FromHalf {
  __device__ float operator()(__half v) const { return __half2float(v); }
};
struct FromBfloat16 {
  __device__ float operator()(__nv_bfloat16 v) const { return __bfloat162float(v); }
};

template <typename From, typename To, typename Convert>
__global__ void CastKernel(const From* src, To* dst, size_t count) {
  const Convert convert{};
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = convert(src[i]);
  }
}

template <typename From, typename To, typename Convert>
void Launch(unsigned blocks, cudaStream_t stream, const void* src, void* dst, size_t count) {
  CastKernel<From, To, Convert>
      <<<blocks, kThreads, 0, stream>>>(static_cast<const From*>(src), static_cast<To*>(dst), count);
}

template <typename From, typename To, typename Convert>
void Load() {
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, CastKernel<From, To, Convert>) != cudaSuccess) cudaGetLastError();
}

}  // namespace half_cast_internal
using namespace half_cast_internal;  // NOLINT(build/namespaces): this file's own kernels

void LoadHalfCastKernels() {
  Load<float, __half, ToHalf>();
  Load<float, __nv_bfloat16, ToBfloat16>();
  Load<__half, float, FromHalf>();
  Load<__nv_bfloat16, float, FromBfloat16>();
}

Status LaunchHalfCast(void* stream, void* dst, DataType dst_type, const void* src, DataType src_type, size_t count) {
  const std::string what = std::string("casting ") + DataTypeName(src_type) + " to " + DataTypeName(dst_type);
  const bool to_half = src_type == DataType::kFp32 && (dst_type == DataType::kFp16 || dst_type == DataType::kBf16);
  const bool from_half = dst_type == DataType::kFp32 && (src_type == DataType::kFp16 || src_type == DataType::kBf16);
  if (!to_half && !from_half) return InvalidArg(what + " on the GPU: only FP32 <-> FP16 and FP32 <-> BF16 exist");
  if (count == 0) return Status::Success();
  const unsigned blocks = static_cast<unsigned>(std::min(kMaxBlocks, (count + kThreads - 1) / kThreads));
  auto s = static_cast<cudaStream_t>(stream);
  if (src_type == DataType::kFp32 && dst_type == DataType::kFp16) {
    Launch<float, __half, ToHalf>(blocks, s, src, dst, count);
  } else if (src_type == DataType::kFp32) {
    Launch<float, __nv_bfloat16, ToBfloat16>(blocks, s, src, dst, count);
  } else if (src_type == DataType::kFp16) {
    Launch<__half, float, FromHalf>(blocks, s, src, dst, count);
  } else {
    Launch<__nv_bfloat16, float, FromBfloat16>(blocks, s, src, dst, count);
  }
  const cudaError_t err = cudaGetLastError();  // launch errors; also clears a non-sticky one
  if (err != cudaSuccess) return Internal(what + " on the GPU (kernel launch): " + cudaGetErrorString(err));
  return Status::Success();
}

}  // namespace infernode
