// The dynamic batcher's (and the default scheduler's) request source: one priority queue for
// all instances, batches formed by FormBatch.
#pragma once

#include "core/model_config.h"
#include "scheduling/batch_former.h"
#include "scheduling/priority_queue.h"
#include "scheduling/request_source.h"

namespace infernode {

class QueueSource final : public RequestSource {
 public:
  explicit QueueSource(const ModelConfig& config) : config_(config), queue_(config) {}

  Status Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns) override {
    return queue_.Enqueue(request, now_ns);
  }
  size_t Size() const override { return queue_.Size(); }
  uint64_t NextDeadline() const override { return queue_.NextDeadline(); }
  void ApplyTimeouts(uint64_t now_ns, std::vector<Rejected>* rejected) override;
  FormedBatch Next(uint32_t instance, uint64_t now_ns, bool draining) override;
  std::vector<Rejected> Remove(uint64_t request_id, const Status& cancelled) override;
  std::vector<std::unique_ptr<InferenceRequest>> TakeAll() override { return queue_.TakeAll(); }
  bool PreservesOrdering() const override { return config_.batching.preserve_ordering; }

 private:
  const ModelConfig& config_;  // the scheduler's, which outlives this source
  PriorityQueue queue_;
};

}  // namespace infernode
