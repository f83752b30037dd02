// The sequence batcher's request source (Triton's SequenceBatchScheduler, triton-protocol.md
// §6.3): each instance has slots (direct: max(1, max_batch_size); oldest:
// max_candidate_sequences); a sequence holds one slot of one instance from its START until its
// END is dispatched, it idles past max_sequence_idle_microseconds, or it is cancelled. A START
// with no free slot waits in the backlog. Batches for an instance take at most one request per
// sequence: `direct` puts each in its slot's row (empty slots below the highest ready one get
// READY = 0 null rows), `oldest` forms a dynamic batch of the oldest ready sequences.
// Control inputs and implicit state are added to each row as it is dispatched.
//
// Threads: not thread-safe; the scheduler calls it with its mutex held.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/model_config.h"
#include "scheduling/request_source.h"
#include "scheduling/sequence_inputs.h"

namespace infernode {

class SequenceSource final : public RequestSource {
 public:
  explicit SequenceSource(const ModelConfig& config);

  Status Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns) override;
  size_t Size() const override { return queued_; }
  uint64_t NextDeadline() const override;
  void ApplyTimeouts(uint64_t now_ns, std::vector<Rejected>* rejected) override;
  FormedBatch Next(uint32_t instance, uint64_t now_ns, bool draining) override;
  std::vector<Rejected> Remove(uint64_t request_id, const Status& cancelled) override;
  std::vector<std::unique_ptr<InferenceRequest>> TakeAll() override;
  void Executed(Batch& batch, std::vector<Status>* statuses, std::vector<std::vector<OutputTensor>>* outputs,
                const std::vector<Release>& release, uint64_t now_ns) override;
  bool PreservesOrdering() const override;

  // Sequences holding a slot, and waiting in the backlog (tests, statistics).
  size_t ActiveSequences() const;
  size_t BacklogSequences() const { return backlog_.size(); }

 private:
  struct Sequence {
    CorrelationId id;
    std::deque<std::unique_ptr<InferenceRequest>> queue;
    std::vector<StateValue> states;
    int32_t instance = -1;  // -1: in the backlog
    uint32_t slot = 0;
    bool executing = false;  // one of its requests is in a batch now
    uint64_t last_activity_ns = 0;
  };
  using SequencePtr = std::shared_ptr<Sequence>;

  Status Admit(InferenceRequest* request) const;
  // Releases the sequences idle past max_sequence_idle_microseconds (their slots go to the backlog).
  void ReleaseIdle(uint64_t now_ns);
  bool AssignSlot(const SequencePtr& sequence);
  void ReleaseSlot(const SequencePtr& sequence);
  void FillFromBacklog();
  // Forgets the id → sequence mapping if it still names `sequence`.
  void Forget(const SequencePtr& sequence);
  // Takes a sequence's queued requests out as failures.
  void RejectQueue(Sequence* sequence, const Status& status, FailureReason reason, std::vector<Rejected>* out);
  // The next request of `sequence`, with its control and state inputs.
  std::unique_ptr<InferenceRequest> TakeHead(const SequencePtr& sequence, uint64_t now_ns);
  FormedBatch NextDirect(uint32_t instance, uint64_t now_ns, bool draining);
  FormedBatch NextOldest(uint32_t instance, uint64_t now_ns, bool draining);
  std::string RowKey(const Sequence& sequence) const;

  const ModelConfig& config_;    // the scheduler's, which outlives this source
  ModelConfig oldest_batching_;  // the oldest strategy's batch rules, in FormBatch's terms
  SequenceInputs inputs_;
  uint32_t slots_per_instance_ = 1;
  std::vector<std::vector<SequencePtr>> slots_;         // [instance][slot]; null = free
  std::unordered_map<std::string, SequencePtr> by_id_;  // sequences whose END has not been queued
  std::deque<SequencePtr> backlog_;
  std::unordered_map<uint64_t, SequencePtr> executing_;  // request id → its sequence
  size_t queued_ = 0;
  uint64_t next_iterative_id_ = 1;
  bool variable_state_ = false;  // some state has dynamic dims: rows must agree on its shape
};

}  // namespace infernode
