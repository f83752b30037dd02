// Batch formation as a pure function of the queue's head, the config and the time, so every
// rule can be unit-tested with a fake clock (test/cpp/batch_former_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace infernode {

// What the batcher needs to know of one queued request.
struct PendingRequest {
  int64_t batch_size = 1;
  uint64_t enqueue_ns = 0;
  const std::string* batch_key = nullptr;  // requests with different keys never share a batch
};

struct BatchDecision {
  size_t count = 0;      // > 0: send the first `count` requests now
  uint64_t wait_ns = 0;  // count == 0: wake again after this long (0 = only on a new event)
};

// `pending` is the queue head in service order; it needs at most max_batch_size + 1 entries.
// `draining` sends whatever is queued without waiting for the delay (shutdown).
BatchDecision FormBatch(const std::vector<PendingRequest>& pending, const ModelConfig& config, uint64_t now_ns,
                        bool draining);

}  // namespace infernode
