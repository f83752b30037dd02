#include "scheduling/batch_former.h"

#include <algorithm>

namespace infernode {

// Triton's dynamic batcher (dynamic_batch_scheduler.cc), as triton-protocol.md §6.2 states it:
// walk the queue in service order; stop before a request that would exceed the max batch size
// or the largest preferred size, or whose shapes differ; remember the largest preferred size
// reached. Send a preferred batch at once; send a batch that cannot grow at once; otherwise
// wait until the oldest request of the batch has waited max_queue_delay.
BatchDecision FormBatch(const std::vector<PendingRequest>& pending, const ModelConfig& config, uint64_t now_ns,
                        bool draining) {
  BatchDecision decision;
  if (pending.empty()) return decision;
  const DynamicBatchingConfig& b = config.batching;
  if (config.max_batch_size == 0 || !b.enabled) {
    decision.count = 1;
    return decision;
  }
  const std::vector<int64_t>& preferred = b.preferred_batch_sizes;
  const int64_t limit =
      std::min<int64_t>(config.max_batch_size, preferred.empty() ? config.max_batch_size : preferred.back());
  int64_t rows = 0;
  size_t count = 0;
  size_t preferred_count = 0;
  bool blocked = false;  // the next request cannot join: this batch cannot grow
  for (const PendingRequest& request : pending) {
    const bool same_shape = count == 0 || *request.batch_key == *pending[0].batch_key;
    if (!same_shape || rows + request.batch_size > limit) {
      blocked = true;
      break;
    }
    rows += request.batch_size;
    ++count;
    if (std::binary_search(preferred.begin(), preferred.end(), rows)) preferred_count = count;
  }
  if (count == 0) {
    // A single request larger than the largest preferred size still goes alone (validation
    // already bounded it by max_batch_size).
    decision.count = 1;
    return decision;
  }
  // The oldest request of the batch: with priority levels or DELAY-ed requests, the head of the
  // service order is not necessarily the one that has waited longest.
  uint64_t oldest_ns = pending[0].enqueue_ns;
  for (size_t i = 1; i < count; ++i) oldest_ns = std::min(oldest_ns, pending[i].enqueue_ns);
  const uint64_t waited = now_ns > oldest_ns ? now_ns - oldest_ns : 0;
  const uint64_t delay_ns = b.max_queue_delay_us * 1000;
  // As in Triton, a zero delay is never "exceeded": a preferred batch still goes as it is.
  const bool delay_over = delay_ns != 0 && waited >= delay_ns;
  if (preferred_count > 0 && !delay_over) {
    decision.count = preferred_count;
  } else if (blocked || rows >= limit || delay_ns == 0 || delay_over || draining) {
    decision.count = count;
  } else {
    decision.wait_ns = delay_ns - waited;
  }
  return decision;
}

}  // namespace infernode
