// FormBatch with a fake clock: Triton's dynamic batcher rules (triton-protocol.md §6.2).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "scheduling/batch_former.h"

using namespace infernode;

namespace {

const std::string kKeyA = "+[3];";
const std::string kKeyB = "+[4];";

constexpr uint64_t kUs = 1000;  // ns per µs
constexpr uint64_t kMs = 1000 * kUs;

ModelConfig Batching(int64_t max_batch_size, std::vector<int64_t> preferred, uint64_t delay_us) {
  ModelConfig config;
  config.name = "m";
  config.max_batch_size = max_batch_size;
  config.batching.enabled = true;
  config.batching.preferred_batch_sizes = std::move(preferred);
  config.batching.max_queue_delay_us = delay_us;
  return config;
}

PendingRequest Req(int64_t rows, uint64_t enqueue_ns, const std::string* key = &kKeyA) {
  return PendingRequest{rows, enqueue_ns, key};
}

// `n` single-row requests, all enqueued at `enqueue_ns`.
std::vector<PendingRequest> Singles(size_t n, uint64_t enqueue_ns = 0) {
  return std::vector<PendingRequest>(n, Req(1, enqueue_ns));
}

}  // namespace

TEST(FormBatchNonBatchingModelSendsOne) {
  ModelConfig config;  // max_batch_size 0
  const BatchDecision d = FormBatch(Singles(3), config, 0, false);
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.wait_ns, 0u);
}

TEST(FormBatchBatchingDisabledSendsOne) {
  ModelConfig config = Batching(8, {8}, 1000);
  config.batching.enabled = false;  // the default scheduler: one request per batch
  EXPECT_EQ(FormBatch(Singles(3), config, 0, false).count, 1u);
}

TEST(FormBatchEmptyQueueSendsNothingAndSetsNoTimer) {
  const BatchDecision d = FormBatch({}, Batching(8, {8}, 1000), 5 * kMs, false);
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.wait_ns, 0u);
}

TEST(FormBatchZeroDelaySendsWhatIsThere) {
  const BatchDecision d = FormBatch(Singles(3), Batching(8, {8}, 0), 0, false);
  EXPECT_EQ(d.count, 3u);
}

TEST(FormBatchWaitsTheRemainingDelay) {
  // The oldest request came at t=1 ms; the delay is 100 µs and 40 µs have passed.
  const BatchDecision d = FormBatch(Singles(2, 1 * kMs), Batching(8, {8}, 100), 1 * kMs + 40 * kUs, false);
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.wait_ns, 60 * kUs);
}

TEST(FormBatchSendsOnceTheDelayIsOver) {
  const ModelConfig config = Batching(8, {8}, 100);
  EXPECT_EQ(FormBatch(Singles(2, 1 * kMs), config, 1 * kMs + 100 * kUs, false).count, 2u);
  EXPECT_EQ(FormBatch(Singles(2, 1 * kMs), config, 9 * kMs, false).count, 2u);
}

TEST(FormBatchDelayCountsFromTheOldestRequestOfTheBatch) {
  // A higher-priority request (first in service order) came later than the one behind it.
  const std::vector<PendingRequest> pending = {Req(1, 50 * kUs), Req(1, 0)};
  const BatchDecision d = FormBatch(pending, Batching(8, {8}, 100), 100 * kUs, false);
  EXPECT_EQ(d.count, 2u);
  const BatchDecision early = FormBatch(pending, Batching(8, {8}, 100), 30 * kUs, false);
  EXPECT_EQ(early.count, 0u);
  EXPECT_EQ(early.wait_ns, 70 * kUs);
}

TEST(FormBatchClockBeforeEnqueueCountsAsNoWait) {
  const BatchDecision d = FormBatch(Singles(1, 10 * kMs), Batching(8, {8}, 100), 5 * kMs, false);
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.wait_ns, 100 * kUs);
}

TEST(FormBatchPreferredSizeSendsBeforeTheDelay) {
  const ModelConfig config = Batching(8, {2, 4}, 1000 * 1000);
  EXPECT_EQ(FormBatch(Singles(2), config, 0, false).count, 2u);
  // Three queued: the largest preferred size reachable is 2.
  EXPECT_EQ(FormBatch(Singles(3), config, 0, false).count, 2u);
  EXPECT_EQ(FormBatch(Singles(1), config, 0, false).count, 0u);
}

TEST(FormBatchPreferredSizeWithZeroDelayStillSendsThePreferredSize) {
  // Triton: a zero delay is never "exceeded", so a reachable preferred size is what goes.
  EXPECT_EQ(FormBatch(Singles(3), Batching(8, {2, 4}, 0), 0, false).count, 2u);
}

TEST(FormBatchPreferredSizeAfterTheDelaySendsEverythingThatFits) {
  const ModelConfig config = Batching(8, {2, 4}, 100);
  EXPECT_EQ(FormBatch(Singles(3), config, 100 * kUs, false).count, 3u);
}

TEST(FormBatchStopsAtTheLargestPreferredSize) {
  const ModelConfig config = Batching(8, {2, 4}, 1000 * 1000);
  EXPECT_EQ(FormBatch(Singles(6), config, 0, false).count, 4u);
  // Even once the delay is over, the batch does not grow past the largest preferred size.
  EXPECT_EQ(FormBatch(Singles(6), config, 2000 * kMs, false).count, 4u);
}

TEST(FormBatchFullBatchIsSentAtOnce) {
  // Rows reach the limit without hitting a preferred size on the way (3 + 1 with preferred {4}).
  const std::vector<PendingRequest> pending = {Req(3, 0), Req(1, 0)};
  EXPECT_EQ(FormBatch(pending, Batching(8, {4}, 1000 * 1000), 0, false).count, 2u);
}

TEST(FormBatchNeverExceedsMaxBatchSize) {
  // 3 + 3 > 4: the second request waits for the next batch; the first cannot grow, so it goes.
  const std::vector<PendingRequest> pending = {Req(3, 0), Req(3, 0)};
  const BatchDecision d = FormBatch(pending, Batching(4, {4}, 1000 * 1000), 0, false);
  EXPECT_EQ(d.count, 1u);
}

TEST(FormBatchNeverExceedsMaxBatchSizeForAnyQueue) {
  std::mt19937 rng(1234);  // fixed seed: the same cases every run
  for (int round = 0; round < 2000; ++round) {
    const int64_t mbs = 1 + static_cast<int64_t>(rng() % 8);
    std::vector<int64_t> preferred;
    for (int64_t size = 1; size <= mbs; ++size) {
      if (rng() % 3 == 0) preferred.push_back(size);
    }
    if (preferred.empty()) preferred.push_back(mbs);
    const uint64_t delay_us = rng() % 3 == 0 ? 0 : 100;
    std::vector<PendingRequest> pending;
    const size_t n = rng() % static_cast<size_t>(mbs + 2);
    for (size_t i = 0; i < n; ++i) {
      pending.push_back(Req(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(mbs)), rng() % (200 * kUs),
                            rng() % 4 == 0 ? &kKeyB : &kKeyA));
    }
    const uint64_t now = rng() % (400 * kUs);
    const bool draining = rng() % 5 == 0;
    const BatchDecision d = FormBatch(pending, Batching(mbs, preferred, delay_us), now, draining);
    EXPECT_TRUE(d.count <= pending.size());
    EXPECT_TRUE(pending.empty() || d.count > 0 || d.wait_ns > 0);  // never stalls without a timer
    EXPECT_TRUE(d.count == 0 || d.wait_ns == 0);
    int64_t rows = 0;
    for (size_t i = 0; i < d.count; ++i) {
      rows += pending[i].batch_size;
      EXPECT_TRUE(*pending[i].batch_key == *pending[0].batch_key);
    }
    EXPECT_TRUE(rows <= mbs);
    if (draining || delay_us == 0) EXPECT_TRUE(pending.empty() || d.count > 0);
  }
}

TEST(FormBatchDifferentBatchKeyClosesTheBatch) {
  // The third request has other shapes: the first two cannot grow, so they go before the delay.
  const std::vector<PendingRequest> pending = {Req(1, 0), Req(1, 0), Req(1, 0, &kKeyB), Req(1, 0)};
  const BatchDecision d = FormBatch(pending, Batching(8, {8}, 1000 * 1000), 0, false);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.wait_ns, 0u);
}

TEST(FormBatchRequestLargerThanLargestPreferredGoesAlone) {
  const std::vector<PendingRequest> pending = {Req(6, 0), Req(1, 0)};
  const BatchDecision d = FormBatch(pending, Batching(8, {2, 4}, 1000 * 1000), 0, false);
  EXPECT_EQ(d.count, 1u);
}

TEST(FormBatchDrainingSendsWithoutWaiting) {
  const ModelConfig config = Batching(8, {8}, 1000 * 1000);
  EXPECT_EQ(FormBatch(Singles(3), config, 0, false).count, 0u);
  EXPECT_EQ(FormBatch(Singles(3), config, 0, true).count, 3u);
}
