// Host-to-device copy bandwidth, measured with CUDA events on a stream of its own: what a batch
// buffer of the server's pinned BufferPool (or plain pageable memory, for comparison) moves
// per second over the host link. For `npm run bench -- gpu` (ts/bench/gpu.ts). Implemented in
// cuda/copy_bandwidth.cu; the CPU build (cpp/memory/copy_bandwidth_none.cc) answers UNAVAILABLE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace infernode {

// How a caller's buffer (pageable memory the server did not allocate: a JS ArrayBuffer, say)
// reaches the device, each copy timed end to end on the host clock, setup included:
// - kStaged: memcpy into a block of the pinned BufferPool, then one copy from it (what a batch
//   does today: its rows are gathered into a pooled block);
// - kRegistered: cudaHostRegister the buffer, copy from it, cudaHostUnregister (what "register
//   large caller buffers" would do for a buffer used once).
enum class CallerPath { kNone, kStaged, kRegistered };

struct CopyBandwidthRequest {
  uint64_t bytes = 0;       // size of one copy
  uint32_t iterations = 0;  // timed copies (after one untimed warm-up copy)
  bool pinned = true;       // source: a pinned BufferPool block, else malloc'ed pageable memory
  int device = 0;
  // 1: each copy on one stream. 2: each copy split in halves on two streams (forked from the
  // first and joined back before the copy counts as done), so two of the device's copy engines
  // can overlap their fixed per-copy cost; the timing includes the fork and join.
  uint32_t streams = 1;
  // kNone: the source is `pinned` or pageable memory and only the copies are timed (CUDA events).
  // Otherwise the source is pageable and each copy's whole path is timed (`pinned` is ignored).
  CallerPath caller = CallerPath::kNone;
};

struct CopyBandwidthResult {
  // Decimal GB (1e9 bytes) per second: all timed copies back to back, total bytes ÷ total time.
  double gb_per_second = 0;
  // The fastest single copy.
  double best_gb_per_second = 0;
  double total_ms = 0;
  std::string source;       // "pinned-pool", "pageable", "staged-through-pool" or "registered-per-copy"
  std::string device_name;  // cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"
};

constexpr uint64_t kMaxCopyBandwidthBytes = 4ull << 30;  // 4 GiB
constexpr uint32_t kMaxCopyBandwidthIterations = 10000;

// Blocks the calling thread for the copies. INVALID_ARG for sizes or counts out of range or a
// device that does not exist; UNAVAILABLE without CUDA or memory.
Status MeasureCopyBandwidth(const CopyBandwidthRequest& request, CopyBandwidthResult* result);

}  // namespace infernode
