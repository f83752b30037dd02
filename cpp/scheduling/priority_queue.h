// The per-model request queue: priority levels, each with its own queue policy (size limit,
// timeout, REJECT or DELAY). Not thread-safe: the scheduler guards it with its mutex.
//
// A model may have up to 2^64 - 1 levels (Triton's priority_levels is a uint64), so levels are
// not made up front: a level exists while it holds requests (the default level always), as in
// Triton's PriorityQueue, which inserts a level when a request first uses it. Levels that empty
// are dropped again, so the queue's size follows what is queued, not the priorities seen.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "core/model_config.h"
#include "core/request.h"

namespace infernode {

class PriorityQueue {
 public:
  explicit PriorityQueue(const ModelConfig& config);

  // Queues the request on its level; UNAVAILABLE "Exceeds maximum queue size" when full.
  // On failure the request is left in `request`.
  Status Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns);

  // Applies timeouts: REJECT-level requests past their deadline are moved to `rejected`,
  // DELAY-level ones behind the level's other requests.
  void ApplyTimeouts(uint64_t now_ns, std::vector<std::unique_ptr<InferenceRequest>>* rejected);

  // Earliest deadline among queued requests that can still expire; 0 when none.
  uint64_t NextDeadline() const { return next_deadline_ns_; }

  // The first `limit` requests in service order (levels high to low, FIFO, delayed last).
  std::vector<const InferenceRequest*> Peek(size_t limit) const;

  // Removes and returns the first `count` requests in service order.
  std::vector<std::unique_ptr<InferenceRequest>> Pop(size_t count);

  // Removes a queued request by id; nullptr when it is not queued.
  std::unique_ptr<InferenceRequest> Remove(uint64_t id);

  // Everything queued, in service order.
  std::vector<std::unique_ptr<InferenceRequest>> TakeAll();

  size_t Size() const { return size_; }

 private:
  struct Level {
    QueuePolicy policy;
    std::deque<std::unique_ptr<InferenceRequest>> ready;
    std::deque<std::unique_ptr<InferenceRequest>> delayed;  // timed out under DELAY
  };

  using Levels = std::map<uint64_t, Level>;

  uint64_t LevelOf(uint64_t priority) const;
  // The level (0-based), made with its policy when it holds nothing yet.
  Level& LevelAt(uint64_t index);
  // Drops `it` when it is empty and not the default level; returns the next level.
  Levels::iterator DropIfEmpty(Levels::iterator it);
  uint64_t DeadlineOf(const Level& level, const InferenceRequest& request, uint64_t now_ns) const;
  void RecomputeNextDeadline();

  // 0-based level → its requests, in service order (level 1 first).
  Levels levels_;
  uint64_t level_count_ = 1;
  uint64_t default_level_ = 0;
  QueuePolicy default_policy_;
  std::map<uint64_t, QueuePolicy> level_policies_;  // 1-based, as the config gives them
  size_t size_ = 0;
  size_t hard_limit_ = 0;
  uint64_t next_deadline_ns_ = 0;
};

}  // namespace infernode
