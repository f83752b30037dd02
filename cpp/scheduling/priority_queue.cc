#include "scheduling/priority_queue.h"

#include <algorithm>

#include "core/clock.h"

namespace infernode {

PriorityQueue::PriorityQueue(const ModelConfig& config) {
  const DynamicBatchingConfig& b = config.batching;
  level_count_ = b.priority_levels == 0 ? 1 : b.priority_levels;
  default_level_ = b.default_priority_level == 0 ? 0 : b.default_priority_level - 1;
  default_policy_ = b.default_queue_policy;
  level_policies_ = b.priority_queue_policy;
  hard_limit_ = config.max_queue_size_hard_limit;
  LevelAt(default_level_);
}

uint64_t PriorityQueue::LevelOf(uint64_t priority) const {
  // Triton: priority 0 or beyond the number of levels means the default level.
  if (priority == 0 || priority > level_count_) return default_level_;
  return priority - 1;
}

PriorityQueue::Level& PriorityQueue::LevelAt(uint64_t index) {
  auto [it, made] = levels_.try_emplace(index);
  if (made) {
    auto policy = level_policies_.find(index + 1);
    it->second.policy = policy != level_policies_.end() ? policy->second : default_policy_;
  }
  return it->second;
}

PriorityQueue::Levels::iterator PriorityQueue::DropIfEmpty(Levels::iterator it) {
  if (it->first == default_level_ || !it->second.ready.empty() || !it->second.delayed.empty()) return std::next(it);
  return levels_.erase(it);
}

uint64_t PriorityQueue::DeadlineOf(const Level& level, const InferenceRequest& request, uint64_t now_ns) const {
  uint64_t timeout_us = level.policy.default_timeout_us;
  // scheduler_utils.cc: the request's own timeout counts only when overriding is allowed, the
  // level has a default, and the request asks for less.
  if (level.policy.allow_timeout_override && timeout_us != 0 && request.timeout_us != 0 &&
      request.timeout_us < timeout_us) {
    timeout_us = request.timeout_us;
  }
  return DeadlineNs(now_ns, timeout_us);
}

Status PriorityQueue::Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns) {
  if (size_ >= hard_limit_) return Unavailable("Exceeds maximum queue size");
  const uint64_t index = LevelOf(request->priority);
  Level& level = LevelAt(index);
  const size_t level_size = level.ready.size() + level.delayed.size();
  // (A level just made holds nothing, and max_queue_size 0 is no limit: a refused request never
  // leaves an empty level behind.)
  if (level.policy.max_queue_size != 0 && level_size >= level.policy.max_queue_size) {
    return Unavailable("Exceeds maximum queue size");
  }
  request->level = index;
  request->enqueue_ns = now_ns;
  request->deadline_ns = DeadlineOf(level, *request, now_ns);
  if (request->deadline_ns != 0 && (next_deadline_ns_ == 0 || request->deadline_ns < next_deadline_ns_)) {
    next_deadline_ns_ = request->deadline_ns;
  }
  level.ready.push_back(std::move(request));
  ++size_;
  return Status::Success();
}

void PriorityQueue::ApplyTimeouts(uint64_t now_ns, std::vector<std::unique_ptr<InferenceRequest>>* rejected) {
  if (next_deadline_ns_ == 0 || now_ns < next_deadline_ns_) return;
  for (auto it = levels_.begin(); it != levels_.end();) {
    Level& level = it->second;
    std::deque<std::unique_ptr<InferenceRequest>> keep;
    for (auto& request : level.ready) {
      if (request->deadline_ns == 0 || request->deadline_ns > now_ns) {
        keep.push_back(std::move(request));
      } else if (level.policy.timeout_action == TimeoutAction::kReject) {
        rejected->push_back(std::move(request));
        --size_;
      } else {
        request->deadline_ns = 0;  // delayed requests are served eventually, never rejected
        level.delayed.push_back(std::move(request));
      }
    }
    level.ready.swap(keep);
    it = DropIfEmpty(it);
  }
  RecomputeNextDeadline();
}

void PriorityQueue::RecomputeNextDeadline() {
  next_deadline_ns_ = 0;
  for (const auto& entry : levels_) {
    for (const auto& request : entry.second.ready) {
      if (request->deadline_ns != 0 && (next_deadline_ns_ == 0 || request->deadline_ns < next_deadline_ns_)) {
        next_deadline_ns_ = request->deadline_ns;
      }
    }
  }
}

std::vector<const InferenceRequest*> PriorityQueue::Peek(size_t limit) const {
  std::vector<const InferenceRequest*> out;
  for (const auto& entry : levels_) {
    for (const auto* list : {&entry.second.ready, &entry.second.delayed}) {
      for (const auto& request : *list) {
        if (out.size() >= limit) return out;
        out.push_back(request.get());
      }
    }
  }
  return out;
}

std::vector<std::unique_ptr<InferenceRequest>> PriorityQueue::Pop(size_t count) {
  std::vector<std::unique_ptr<InferenceRequest>> out;
  for (auto it = levels_.begin(); it != levels_.end() && out.size() < count;) {
    for (auto* list : {&it->second.ready, &it->second.delayed}) {
      while (out.size() < count && !list->empty()) {
        out.push_back(std::move(list->front()));
        list->pop_front();
        --size_;
      }
    }
    it = DropIfEmpty(it);
  }
  return out;
}

std::unique_ptr<InferenceRequest> PriorityQueue::Remove(uint64_t id) {
  for (auto level = levels_.begin(); level != levels_.end(); ++level) {
    for (auto* list : {&level->second.ready, &level->second.delayed}) {
      auto it = std::find_if(list->begin(), list->end(), [id](const auto& r) { return r->id == id; });
      if (it != list->end()) {
        std::unique_ptr<InferenceRequest> found = std::move(*it);
        list->erase(it);
        --size_;
        DropIfEmpty(level);
        return found;
      }
    }
  }
  return nullptr;
}

std::vector<std::unique_ptr<InferenceRequest>> PriorityQueue::TakeAll() { return Pop(size_); }

}  // namespace infernode
