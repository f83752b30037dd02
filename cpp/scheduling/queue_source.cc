#include "scheduling/queue_source.h"

namespace infernode {

void QueueSource::ApplyTimeouts(uint64_t now_ns, std::vector<Rejected>* rejected) {
  std::vector<std::unique_ptr<InferenceRequest>> expired;
  queue_.ApplyTimeouts(now_ns, &expired);
  for (auto& request : expired) {
    rejected->push_back(Rejected{std::move(request), Unavailable("Request timeout expired"), FailureReason::kRejected});
  }
}

FormedBatch QueueSource::Next(uint32_t instance, uint64_t now_ns, bool draining) {
  FormedBatch formed;
  if (queue_.Size() == 0) return formed;
  const size_t limit = static_cast<size_t>(config_.max_batch_size) + 1;
  std::vector<PendingRequest> view;
  for (const InferenceRequest* r : queue_.Peek(limit)) {
    // A request pinned to another instance (warm-up, before the model serves) ends the batch.
    if (r->instance >= 0 && static_cast<uint32_t>(r->instance) != instance) break;
    view.push_back(PendingRequest{r->batch_size, r->enqueue_ns, &r->batch_key});
  }
  if (view.empty()) return formed;
  const BatchDecision decision = FormBatch(view, config_, now_ns, draining);
  if (decision.count == 0) {
    formed.wait_ns = decision.wait_ns;
    return formed;
  }
  formed.requests = queue_.Pop(decision.count);
  return formed;
}

std::vector<Rejected> QueueSource::Remove(uint64_t request_id, const Status& cancelled) {
  std::vector<Rejected> out;
  std::unique_ptr<InferenceRequest> request = queue_.Remove(request_id);
  if (request) out.push_back(Rejected{std::move(request), cancelled, FailureReason::kCanceled});
  return out;
}

}  // namespace infernode
