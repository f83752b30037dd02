// Per-model counters in Triton's statistics shape (the statistics extension and the
// nv_inference_* metrics read them). Guarded by the scheduler's mutex.
#pragma once

#include <cstdint>
#include <map>

namespace infernode {

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
  void Add(uint64_t duration_ns) {
    ++count;
    ns += duration_ns;
  }
};

struct ModelStats {
  DurationStat success;        // whole request, enqueue to completion
  DurationStat fail;
  DurationStat queue;          // enqueue to dispatch, successful requests
  DurationStat compute_infer;  // dispatch to completion of the batch, successful requests
  uint64_t inference_count = 0;  // rows inferred
  uint64_t execution_count = 0;  // batches executed
  uint64_t last_inference_ms = 0;  // wall clock, ms since the epoch
  uint64_t rejected_count = 0;     // failures of reason REJECTED (queue full, queue timeout)
  std::map<int64_t, DurationStat> batch_compute_infer;  // by batch size (rows)
  uint64_t pending = 0;  // queued or executing now
};

}  // namespace infernode
