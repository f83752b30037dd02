// PriorityQueue: levels, per-level policies, REJECT/DELAY timeouts, the timeout-override rule.
#include <cstdint>
#include <memory>
#include <vector>

#include "harness.h"
#include "scheduling/priority_queue.h"

using namespace infernode;

namespace {

using Order = std::vector<uint64_t>;

std::ostream& operator<<(std::ostream& os, const Order& ids) {
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? "," : "") << ids[i];
  return os << "]";
}

constexpr uint64_t kUs = 1000;  // ns per µs

ModelConfig Levels(uint64_t levels, uint64_t default_level = 0) {
  ModelConfig config;
  config.name = "m";
  config.max_batch_size = 8;
  config.batching.enabled = true;
  config.batching.preferred_batch_sizes = {8};
  config.batching.priority_levels = levels;
  config.batching.default_priority_level = default_level;
  return config;
}

QueuePolicy Timeout(TimeoutAction action, uint64_t default_us, bool allow_override = false) {
  QueuePolicy policy;
  policy.timeout_action = action;
  policy.default_timeout_us = default_us;
  policy.allow_timeout_override = allow_override;
  return policy;
}

std::unique_ptr<InferenceRequest> Req(uint64_t id, uint64_t priority = 0, uint64_t timeout_us = 0) {
  auto request = std::make_unique<InferenceRequest>();
  request->id = id;
  request->priority = priority;
  request->timeout_us = timeout_us;
  return request;
}

void Push(PriorityQueue* queue, uint64_t id, uint64_t priority = 0, uint64_t now_ns = 0, uint64_t timeout_us = 0) {
  auto request = Req(id, priority, timeout_us);
  const Status status = queue->Enqueue(request, now_ns);
  EXPECT_TRUE(status.IsOk());
}

std::vector<uint64_t> Ids(const std::vector<const InferenceRequest*>& requests) {
  std::vector<uint64_t> ids;
  for (const InferenceRequest* r : requests) ids.push_back(r->id);
  return ids;
}

std::vector<uint64_t> Ids(const std::vector<std::unique_ptr<InferenceRequest>>& requests) {
  std::vector<uint64_t> ids;
  for (const auto& r : requests) ids.push_back(r->id);
  return ids;
}

// The deadline the queue gives a request enqueued at t=0 on a single level with `policy`.
uint64_t DeadlineFor(const QueuePolicy& policy, uint64_t request_timeout_us) {
  ModelConfig config = Levels(0);
  config.batching.default_queue_policy = policy;
  PriorityQueue queue(config);
  Push(&queue, 1, 0, 0, request_timeout_us);
  return queue.Peek(1).at(0)->deadline_ns;
}

}  // namespace

TEST(QueueSingleLevelIsFifo) {
  PriorityQueue queue(Levels(0));
  for (uint64_t id = 1; id <= 3; ++id) Push(&queue, id);
  EXPECT_EQ(queue.Size(), 3u);
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{1, 2, 3}));
  EXPECT_EQ(Ids(queue.Peek(2)), (Order{1, 2}));
  EXPECT_EQ(Ids(queue.Pop(2)), (Order{1, 2}));
  EXPECT_EQ(queue.Size(), 1u);
  EXPECT_EQ(Ids(queue.Pop(5)), (Order{3}));
  EXPECT_EQ(queue.Size(), 0u);
}

TEST(QueueEnqueueStampsLevelAndTime) {
  PriorityQueue queue(Levels(3));
  Push(&queue, 1, 2, 777);
  const InferenceRequest* r = queue.Peek(1).at(0);
  EXPECT_EQ(r->level, 1u);
  EXPECT_EQ(r->enqueue_ns, 777u);
  EXPECT_EQ(r->deadline_ns, 0u);
}

TEST(QueueServesHigherLevelsFirstFifoWithin) {
  PriorityQueue queue(Levels(3));
  Push(&queue, 1, 3);
  Push(&queue, 2, 1);
  Push(&queue, 3, 2);
  Push(&queue, 4, 1);
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{2, 4, 3, 1}));
  EXPECT_EQ(Ids(queue.TakeAll()), (Order{2, 4, 3, 1}));
  EXPECT_EQ(queue.Size(), 0u);
}

TEST(QueuePriorityZeroOrOutOfRangeUsesTheDefaultLevel) {
  PriorityQueue queue(Levels(3, 2));
  Push(&queue, 1, 3);
  Push(&queue, 2, 0);   // default level 2
  Push(&queue, 3, 99);  // beyond the levels: default level 2
  Push(&queue, 4, 1);
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{4, 2, 3, 1}));
  EXPECT_EQ(queue.Peek(10).at(1)->level, 1u);
  EXPECT_EQ(queue.Peek(10).at(2)->level, 1u);
}

TEST(QueueMaxQueueSizeIsPerLevel) {
  ModelConfig config = Levels(2);
  QueuePolicy small;
  small.max_queue_size = 2;
  config.batching.priority_queue_policy[1] = small;  // level 1 only
  PriorityQueue queue(config);
  Push(&queue, 1, 1);
  Push(&queue, 2, 1);
  auto third = Req(3, 1);
  const Status status = queue.Enqueue(third, 0);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.Message(), std::string("Exceeds maximum queue size"));
  EXPECT_TRUE(third != nullptr);  // left with the caller
  EXPECT_EQ(queue.Size(), 2u);
  Push(&queue, 4, 2);  // level 2 has the default policy: unbounded
  EXPECT_EQ(queue.Size(), 3u);
}

TEST(QueueHardLimitBoundsAllLevels) {
  ModelConfig config = Levels(2);
  config.max_queue_size_hard_limit = 2;
  PriorityQueue queue(config);
  Push(&queue, 1, 1);
  Push(&queue, 2, 2);
  auto third = Req(3, 2);
  EXPECT_EQ(queue.Enqueue(third, 0).Code(), StatusCode::kUnavailable);
  EXPECT_TRUE(third != nullptr);
}

TEST(QueueRejectTimeoutRemovesExpiredRequests) {
  ModelConfig config = Levels(0);
  config.batching.default_queue_policy = Timeout(TimeoutAction::kReject, 100);
  PriorityQueue queue(config);
  Push(&queue, 1, 0, 0);
  Push(&queue, 2, 0, 50 * kUs);
  EXPECT_EQ(queue.NextDeadline(), 100 * kUs);
  std::vector<std::unique_ptr<InferenceRequest>> rejected;
  queue.ApplyTimeouts(100 * kUs - 1, &rejected);
  EXPECT_TRUE(rejected.empty());
  queue.ApplyTimeouts(100 * kUs, &rejected);
  EXPECT_EQ(Ids(rejected), (Order{1}));
  EXPECT_EQ(queue.Size(), 1u);
  EXPECT_EQ(queue.NextDeadline(), 150 * kUs);
  queue.ApplyTimeouts(1000 * kUs, &rejected);
  EXPECT_EQ(Ids(rejected), (Order{1, 2}));
  EXPECT_EQ(queue.Size(), 0u);
  EXPECT_EQ(queue.NextDeadline(), 0u);
}

TEST(QueueDelayTimeoutMovesRequestBehindTheLevel) {
  ModelConfig config = Levels(2);
  config.batching.priority_queue_policy[1] = Timeout(TimeoutAction::kDelay, 100);
  PriorityQueue queue(config);
  Push(&queue, 1, 1, 0);         // deadline 100 µs
  Push(&queue, 2, 1, 50 * kUs);  // deadline 150 µs
  Push(&queue, 3, 2, 0);         // level 2: no timeout
  std::vector<std::unique_ptr<InferenceRequest>> rejected;
  queue.ApplyTimeouts(120 * kUs, &rejected);
  EXPECT_TRUE(rejected.empty());
  EXPECT_EQ(queue.Size(), 3u);
  // 1 goes behind its level's other requests, still ahead of lower levels.
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{2, 1, 3}));
  EXPECT_EQ(queue.NextDeadline(), 150 * kUs);
  queue.ApplyTimeouts(10000 * kUs, &rejected);  // a delayed request is never rejected
  EXPECT_TRUE(rejected.empty());
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{1, 2, 3}));
  EXPECT_EQ(queue.NextDeadline(), 0u);
  EXPECT_EQ(Ids(queue.Pop(3)), (Order{1, 2, 3}));
}

TEST(QueuePerLevelPolicyOverridesTheDefault) {
  ModelConfig config = Levels(2);
  config.batching.default_queue_policy = Timeout(TimeoutAction::kReject, 100);
  config.batching.priority_queue_policy[2] = Timeout(TimeoutAction::kReject, 300);
  PriorityQueue queue(config);
  Push(&queue, 1, 1, 0);
  Push(&queue, 2, 2, 0);
  EXPECT_EQ(queue.Peek(2).at(0)->deadline_ns, 100 * kUs);
  EXPECT_EQ(queue.Peek(2).at(1)->deadline_ns, 300 * kUs);
}

TEST(QueueNoTimeoutByDefault) {
  EXPECT_EQ(DeadlineFor(QueuePolicy{}, 0), 0u);
  EXPECT_EQ(DeadlineFor(Timeout(TimeoutAction::kReject, 100), 0), 100 * kUs);
}

TEST(QueueRequestTimeoutShortensTheDefaultWhenOverrideAllowed) {
  EXPECT_EQ(DeadlineFor(Timeout(TimeoutAction::kReject, 100, true), 40), 40 * kUs);
}

TEST(QueueRequestTimeoutNeverLengthensTheDefault) {
  EXPECT_EQ(DeadlineFor(Timeout(TimeoutAction::kReject, 100, true), 400), 100 * kUs);
}

TEST(QueueRequestTimeoutIgnoredWithoutOverride) {
  EXPECT_EQ(DeadlineFor(Timeout(TimeoutAction::kReject, 100, false), 40), 100 * kUs);
}

TEST(QueueRequestTimeoutIgnoredWhenTheDefaultIsZero) {
  // scheduler_utils.cc: with no level default, the request's own timeout does not count.
  EXPECT_EQ(DeadlineFor(Timeout(TimeoutAction::kReject, 0, true), 40), 0u);
}

TEST(QueueRemoveById) {
  ModelConfig config = Levels(0);
  config.batching.default_queue_policy = Timeout(TimeoutAction::kDelay, 100);
  PriorityQueue queue(config);
  Push(&queue, 1, 0, 0);
  Push(&queue, 2, 0, 500 * kUs);
  Push(&queue, 3, 0, 500 * kUs);
  std::vector<std::unique_ptr<InferenceRequest>> rejected;
  queue.ApplyTimeouts(200 * kUs, &rejected);  // 1 is now delayed
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{2, 3, 1}));
  std::unique_ptr<InferenceRequest> removed = queue.Remove(2);
  EXPECT_TRUE(removed != nullptr && removed->id == 2);
  removed = queue.Remove(1);  // from the delayed list
  EXPECT_TRUE(removed != nullptr && removed->id == 1);
  EXPECT_TRUE(queue.Remove(1) == nullptr);
  EXPECT_TRUE(queue.Remove(42) == nullptr);
  EXPECT_EQ(queue.Size(), 1u);
  EXPECT_EQ(Ids(queue.TakeAll()), (Order{3}));
}

TEST(QueuePopAndPeekOnEmptyQueue) {
  PriorityQueue queue(Levels(4));
  EXPECT_TRUE(queue.Peek(3).empty());
  EXPECT_TRUE(queue.Pop(3).empty());
  EXPECT_TRUE(queue.TakeAll().empty());
  std::vector<std::unique_ptr<InferenceRequest>> rejected;
  queue.ApplyTimeouts(1000, &rejected);
  EXPECT_TRUE(rejected.empty());
}

// Triton's qa/L0_model_queue test_max_priority_levels: priority_levels 2^64 - 1, the default
// level 2^32 (past uint32). Levels are made as requests use them, never all 2^64 - 1.
TEST(QueueUint64LevelsServeInLevelOrder) {
  constexpr uint64_t kMax = UINT64_MAX;
  constexpr uint64_t kDefault = uint64_t{1} << 32;
  PriorityQueue queue(Levels(kMax, kDefault));
  Push(&queue, 1, 0);             // the default level, 2^32
  Push(&queue, 2, kDefault);      // the same level
  Push(&queue, 3, kMax);          // the lowest level
  Push(&queue, 4, kDefault + 1);  // just below the default
  Push(&queue, 5, 1);             // the highest
  EXPECT_EQ(Ids(queue.Peek(10)), (Order{5, 1, 2, 4, 3}));
  EXPECT_EQ(queue.Peek(10).at(1)->level, kDefault - 1);
  EXPECT_EQ(queue.Peek(10).at(4)->level, kMax - 1);
  EXPECT_EQ(Ids(queue.Pop(2)), (Order{5, 1}));
  EXPECT_EQ(Ids(queue.TakeAll()), (Order{2, 4, 3}));
  EXPECT_EQ(queue.Size(), 0u);
}

TEST(QueueUint64LevelPoliciesApplyToTheirLevels) {
  // max_priority_level.pbtxt of Triton's qa/L0_config_json: a policy keyed 2^32 whose timeout is
  // 2^64 - 1 µs (never expires: too long to count in ns), and a short one on level 2^40.
  ModelConfig config = Levels(UINT64_MAX, 1);
  config.batching.priority_queue_policy[uint64_t{1} << 32] = Timeout(TimeoutAction::kReject, UINT64_MAX);
  config.batching.priority_queue_policy[uint64_t{1} << 40] = Timeout(TimeoutAction::kReject, 100);
  PriorityQueue queue(config);
  Push(&queue, 1, uint64_t{1} << 32, 0);
  Push(&queue, 2, uint64_t{1} << 40, 0);
  Push(&queue, 3, (uint64_t{1} << 40) + 1, 0);  // no policy of its own: the default (no timeout)
  EXPECT_EQ(queue.Peek(3).at(0)->deadline_ns, 0u);
  EXPECT_EQ(queue.Peek(3).at(1)->deadline_ns, 100 * kUs);
  EXPECT_EQ(queue.Peek(3).at(2)->deadline_ns, 0u);
  std::vector<std::unique_ptr<InferenceRequest>> rejected;
  queue.ApplyTimeouts(UINT64_MAX - 1, &rejected);
  EXPECT_EQ(Ids(rejected), (Order{2}));
  EXPECT_EQ(Ids(queue.TakeAll()), (Order{1, 3}));
}

TEST(QueueLevelsThatEmptyAreMadeAgainWithTheirPolicy) {
  constexpr uint64_t kLimited = uint64_t{1} << 40;
  ModelConfig config = Levels(UINT64_MAX, UINT64_MAX);
  QueuePolicy small;
  small.max_queue_size = 1;
  config.batching.priority_queue_policy[kLimited] = small;
  PriorityQueue queue(config);
  for (uint64_t round = 0; round < 3; ++round) {
    Push(&queue, 1, kLimited);
    auto second = Req(2, kLimited);
    EXPECT_EQ(queue.Enqueue(second, 0).Code(), StatusCode::kUnavailable);
    Push(&queue, 3, 0);  // the default level, the lowest
    EXPECT_EQ(Ids(queue.TakeAll()), (Order{1, 3}));
  }
  Push(&queue, 4, kLimited);
  EXPECT_TRUE(queue.Remove(4) != nullptr);
  Push(&queue, 5, kLimited);  // its level went with its last request and is made again, still limited
  auto sixth = Req(6, kLimited);
  EXPECT_EQ(queue.Enqueue(sixth, 0).Code(), StatusCode::kUnavailable);
}
