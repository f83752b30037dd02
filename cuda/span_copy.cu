// The span-copy kernel (cpp/memory/span_copy.h): many device-to-device copies in one launch. The
// launch's span table is a by-value kernel parameter; each span gets blocks in proportion to its
// size (at least one), found by a binary search of the table's first-block column. A span is
// stored in 16-byte words between single bytes before the destination's first 16-byte boundary
// and after its last; the words are loaded 16 bytes at a time when the source is aligned alike,
// else as aligned 4-byte words shifted into place, so a misaligned row costs little more than an
// aligned one.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "memory/span_copy.h"

namespace infernode {

// A named namespace, not an anonymous one: nvcc names anonymous namespaces after the source
// file's absolute path, which would make the release prebuild depend on where it was built.
namespace span_copy_internal {

constexpr unsigned kThreads = 256;
constexpr int kUnroll = 4;                                    // words in flight per thread
constexpr uint64_t kBytesPerBlock = kThreads * 16 * kUnroll;  // 16 KiB: one pass of 16-byte words
constexpr uint64_t kMaxBlocksPerSpan = 1024;                  // a larger span loops over its blocks

struct Span {
  const char* src;
  char* dst;
  uint64_t bytes;
};

// The kernel's parameter: 3,592 bytes for 128 spans, within the 4 KiB every CUDA version accepts.
struct SpanTable {
  uint32_t count;
  uint32_t blocks;                           // the grid: every span's blocks, in order
  uint32_t first_block[kMaxSpansPerLaunch];  // span i has blocks first_block[i] .. first_block[i+1] - 1
  Span spans[kMaxSpansPerLaunch];
};
static_assert(sizeof(SpanTable) <= 4096, "the span table must fit CUDA's 4 KiB of kernel parameters");

// 16-byte words [first, count) of a span, `stride` apart, kUnroll loads in flight before their
// stores. `Load` gives word i.
template <typename Load>
__device__ void CopyWords(const Load& load, uint4* __restrict__ dst, uint64_t count, uint64_t first, uint64_t stride) {
  uint64_t i = first;
  for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
    uint4 w[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) w[k] = load(i + k * stride);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) dst[i + k * stride] = w[k];
  }
  for (; i < count; i += stride) dst[i] = load(i);
}

// A source aligned like the destination: 16-byte loads.
struct AlignedLoad {
  const uint4* __restrict__ src;
  __device__ uint4 operator()(uint64_t i) const { return src[i]; }
};

// A source at another alignment: the 4-byte words around each 16 bytes, shifted into place
// (__funnelshift_r), so loads stay aligned and stores stay 16 bytes wide. The fifth word is read
// only when the source is not 4-byte aligned, and then holds a byte of the span, so no load
// leaves the words the span touches.
struct ShiftedLoad {
  const uint32_t* __restrict__ words;  // the source rounded down to 4 bytes
  unsigned bits;                       // 8 x the bytes it was rounded down by
  __device__ uint4 operator()(uint64_t i) const {
    const uint32_t* w = words + 4 * i;
    const uint32_t w0 = w[0];
    const uint32_t w1 = w[1];
    const uint32_t w2 = w[2];
    const uint32_t w3 = w[3];
    const uint32_t w4 = bits != 0 ? w[4] : 0;
    return make_uint4(__funnelshift_r(w0, w1, bits), __funnelshift_r(w1, w2, bits), __funnelshift_r(w2, w3, bits),
                      __funnelshift_r(w3, w4, bits));
  }
};

__device__ void CopyBytes(const char* __restrict__ src, char* __restrict__ dst, uint64_t bytes, uint64_t first,
                          uint64_t stride) {
  for (uint64_t i = first; i < bytes; i += stride) dst[i] = src[i];
}

__global__ void __launch_bounds__(kThreads) SpanCopyKernel(const SpanTable table) {
  // The span this block works on: the last whose first block is at or before blockIdx.x.
  uint32_t lo = 0;
  uint32_t hi = table.count - 1;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (table.first_block[mid] <= blockIdx.x) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const Span span = table.spans[lo];
  const uint32_t end_block = lo + 1 < table.count ? table.first_block[lo + 1] : table.blocks;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x - table.first_block[lo]) * kThreads + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(end_block - table.first_block[lo]) * kThreads;

  // Single bytes up to the destination's first 16-byte boundary (the head) and after its last
  // (the tail); 16-byte stores between.
  const uint64_t to_aligned = (16 - (reinterpret_cast<uintptr_t>(span.dst) & 15)) & 15;
  const uint64_t head = to_aligned < span.bytes ? to_aligned : span.bytes;
  const uint64_t words = (span.bytes - head) / 16;
  const uint64_t tail = head + words * 16;

  CopyBytes(span.src, span.dst, head, first, stride);
  const char* src = span.src + head;
  auto* dst = reinterpret_cast<uint4*>(span.dst + head);
  const unsigned shift = reinterpret_cast<uintptr_t>(src) & 3;
  if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
    CopyWords(AlignedLoad{reinterpret_cast<const uint4*>(src)}, dst, words, first, stride);
  } else {
    CopyWords(ShiftedLoad{reinterpret_cast<const uint32_t*>(src - shift), shift * 8}, dst, words, first, stride);
  }
  CopyBytes(span.src + tail, span.dst + tail, span.bytes - tail, first, stride);
}

}  // namespace span_copy_internal
using namespace span_copy_internal;  // NOLINT(build/namespaces): this file's own kernel

void LoadSpanCopyKernel() {
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, SpanCopyKernel) != cudaSuccess) cudaGetLastError();  // a launch will say
}

Status LaunchSpanCopy(void* stream, const DeviceSpan* spans, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (spans[i].bytes != 0 && (spans[i].src == nullptr || spans[i].dst == nullptr)) {
      return InvalidArg("copying spans on the GPU: span " + std::to_string(i) + " of " +
                        std::to_string(spans[i].bytes) + " bytes has a null pointer");
    }
  }
  auto s = static_cast<cudaStream_t>(stream);
  SpanTable table;
  size_t next = 0;
  while (next < count) {
    // The next kMaxSpansPerLaunch spans that have bytes.
    table.count = 0;
    table.blocks = 0;
    for (; next < count && table.count < kMaxSpansPerLaunch; ++next) {
      const DeviceSpan& span = spans[next];
      if (span.bytes == 0) continue;
      table.first_block[table.count] = table.blocks;
      table.spans[table.count] = {static_cast<const char*>(span.src), static_cast<char*>(span.dst), span.bytes};
      table.blocks +=
          static_cast<uint32_t>(std::min(kMaxBlocksPerSpan, (span.bytes + kBytesPerBlock - 1) / kBytesPerBlock));
      ++table.count;
    }
    if (table.count == 0) break;  // only zero-byte spans were left
    SpanCopyKernel<<<table.blocks, kThreads, 0, s>>>(table);
    const cudaError_t err = cudaGetLastError();  // launch errors; also clears a non-sticky one
    if (err != cudaSuccess) {
      return Internal(std::string("copying spans on the GPU (kernel launch): ") + cudaGetErrorString(err));
    }
  }
  return Status::Success();
}

}  // namespace infernode
