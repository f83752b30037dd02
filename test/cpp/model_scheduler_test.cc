// ModelScheduler with fake instances and a fake sink. Instances either record their
// batches for the test thread to complete, or complete them inline on the batcher thread.
// Batch shapes are made deterministic by queueing before Start() or by long queue delays;
// waits are bounded by kWait, which only a broken scheduler reaches.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness.h"
#include "scheduling/model_scheduler.h"

using namespace infernode;

namespace {

constexpr auto kWait = std::chrono::seconds(10);
constexpr uint64_t kLongDelayUs = 60ull * 1000 * 1000;  // a queue delay no test waits out

const float kZeros[64] = {};

struct Executed {
  uint32_t instance = 0;
  uint64_t token = 0;
  int64_t rows = 0;
  std::vector<uint64_t> ids;
};

// Where finished requests go when no caller gets them back (queue timeouts, inline completion).
class FakeSink final : public CompletionSink {
 public:
  void Deliver(std::vector<InferenceResponse> responses) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& r : responses) responses_.push_back(std::move(r));
    }
    cv_.notify_all();
  }
  // True once at least `n` responses arrived.
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return responses_.size() >= n; });
  }
  std::vector<InferenceResponse> Responses() {
    std::lock_guard<std::mutex> lock(mu_);
    return responses_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<InferenceResponse> responses_;
};

// What the fake instances were given. Declared before the scheduler so it outlives it.
class Recorder {
 public:
  void Add(const Batch& batch) {
    Executed e;
    e.instance = batch.instance;
    e.token = batch.token;
    e.rows = batch.rows;
    for (const auto& r : batch.requests) e.ids.push_back(r->id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      batches_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  void AddShutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    ++shutdowns_;
  }
  // True once at least `n` batches were executed.
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return batches_.size() >= n; });
  }
  std::vector<Executed> Batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  // The batch given to `instance` (the last one); token 0 when none.
  Executed On(uint32_t instance) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = batches_.rbegin(); it != batches_.rend(); ++it) {
      if (it->instance == instance) return *it;
    }
    return Executed{};
  }
  int Shutdowns() {
    std::lock_guard<std::mutex> lock(mu_);
    return shutdowns_;
  }

  // For instances that complete inline.
  ModelScheduler* scheduler = nullptr;
  CompletionSink* sink = nullptr;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Executed> batches_;
  int shutdowns_ = 0;
};

enum class Mode { kManual, kInline };

class FakeInstance final : public ModelInstance {
 public:
  FakeInstance(Recorder* recorder, Mode mode, bool caller_thread = false)
      : recorder_(recorder), mode_(mode), caller_thread_(caller_thread) {}

  void Execute(const Batch& batch) override {
    const uint32_t instance = batch.instance;
    const uint64_t token = batch.token;
    recorder_->Add(batch);
    if (mode_ == Mode::kInline) {
      // `batch` is freed by CompleteBatch: only the copies above are used from here on.
      std::vector<InferenceResponse> released = recorder_->scheduler->CompleteBatch(instance, token, {Status()});
      if (!released.empty()) recorder_->sink->Deliver(std::move(released));
    }
  }
  bool RunsOnCallerThread() const override { return caller_thread_; }
  void Shutdown() override { recorder_->AddShutdown(); }

 private:
  Recorder* recorder_;
  Mode mode_;
  bool caller_thread_;
};

std::vector<std::unique_ptr<ModelInstance>> Instances(Recorder* recorder, size_t count, Mode mode) {
  std::vector<std::unique_ptr<ModelInstance>> instances;
  for (size_t i = 0; i < count; ++i) instances.push_back(std::make_unique<FakeInstance>(recorder, mode));
  return instances;
}

// Model "m": one FP32 input "x" of dims [1], dynamic batching on.
ModelConfig Config(int64_t max_batch_size, std::vector<int64_t> preferred, uint64_t delay_us) {
  ModelConfig config;
  config.name = "m";
  config.max_batch_size = max_batch_size;
  TensorConfig x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.dims = {1};
  config.inputs = {x};
  config.batching.enabled = true;
  config.batching.preferred_batch_sizes = std::move(preferred);
  config.batching.max_queue_delay_us = delay_us;
  return config;
}

std::unique_ptr<InferenceRequest> Req(uint64_t id, int64_t rows = 1, uint32_t priority = 0) {
  auto request = std::make_unique<InferenceRequest>();
  request->id = id;
  request->priority = priority;
  InputTensor x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.shape = {rows, 1};
  x.data = reinterpret_cast<const uint8_t*>(kZeros);
  x.byte_size = static_cast<uint64_t>(rows) * sizeof(float);
  request->inputs.push_back(x);
  return request;
}

void Enqueue(ModelScheduler* scheduler, uint64_t id, int64_t rows = 1, uint32_t priority = 0) {
  auto request = Req(id, rows, priority);
  const Status status = scheduler->Enqueue(request);
  EXPECT_TRUE(status.IsOk());
  if (!status.IsOk()) std::cerr << "    enqueue " << id << ": " << status.Message() << "\n";
}

std::vector<uint64_t> Ids(const std::vector<InferenceResponse>& responses) {
  std::vector<uint64_t> ids;
  for (const InferenceResponse& r : responses) ids.push_back(r.request_id);
  return ids;
}

using Order = std::vector<uint64_t>;

std::ostream& operator<<(std::ostream& os, const Order& ids) {
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? "," : "") << ids[i];
  return os << "]";
}

bool AllOk(const std::vector<InferenceResponse>& responses) {
  return std::all_of(responses.begin(), responses.end(), [](const InferenceResponse& r) { return r.status.IsOk(); });
}

}  // namespace

TEST(SchedulerBatchesNeverExceedMaxBatchSize) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {4}, 0), &sink, DispatchMode::kBatcherThread);
  recorder.scheduler = &scheduler;
  recorder.sink = &sink;
  const std::vector<int64_t> rows = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1};
  for (size_t i = 0; i < rows.size(); ++i) Enqueue(&scheduler, i + 1, rows[i]);
  scheduler.Start(Instances(&recorder, 1, Mode::kInline));
  EXPECT_TRUE(sink.WaitFor(rows.size()));
  EXPECT_TRUE(AllOk(sink.Responses()));
  EXPECT_EQ(Ids(sink.Responses()), (Order{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  std::vector<Order> batches;
  for (const Executed& e : recorder.Batches()) {
    EXPECT_TRUE(e.rows <= 4);
    batches.push_back(e.ids);
  }
  // A request that would overflow the batch starts the next one.
  EXPECT_TRUE(batches == (std::vector<Order>{{1, 2}, {3, 4}, {5}, {6, 7}, {8}, {9, 10}}));
}

TEST(SchedulerSendsPreferredBatchSizesAtOnce) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(8, {2, 4}, kLongDelayUs), &sink, DispatchMode::kBatcherThread);
  recorder.scheduler = &scheduler;
  recorder.sink = &sink;
  for (uint64_t id = 1; id <= 7; ++id) Enqueue(&scheduler, id);
  scheduler.Start(Instances(&recorder, 1, Mode::kInline));
  EXPECT_TRUE(sink.WaitFor(6));
  const std::vector<Executed> batches = recorder.Batches();
  EXPECT_EQ(batches.size(), 2u);
  if (batches.size() == 2) {
    EXPECT_EQ(batches[0].ids, (Order{1, 2, 3, 4}));  // the largest preferred size
    EXPECT_EQ(batches[1].ids, (Order{5, 6}));
  }
  // The last request waits for the queue delay: Stop fails it.
  const std::vector<InferenceResponse> failed = scheduler.Stop();
  EXPECT_EQ(Ids(failed), (Order{7}));
}

TEST(SchedulerPreservesOrderingAcrossInstances) {
  ModelConfig config = Config(1, {1}, 0);
  config.batching.preserve_ordering = true;
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(config, &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  scheduler.Start(Instances(&recorder, 2, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(2));
  const Executed first = recorder.On(0);
  const Executed second = recorder.On(1);
  EXPECT_EQ(first.ids, (Order{1}));
  EXPECT_EQ(second.ids, (Order{2}));
  // Instance 1 finishes first: its response is held until request 1's is released.
  EXPECT_TRUE(scheduler.CompleteBatch(1, second.token, {Status()}).empty());
  const std::vector<InferenceResponse> released = scheduler.CompleteBatch(0, first.token, {Status()});
  EXPECT_EQ(Ids(released), (Order{1, 2}));
  EXPECT_TRUE(AllOk(released));
}

TEST(SchedulerWithoutPreserveOrderingReleasesAsBatchesFinish) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  scheduler.Start(Instances(&recorder, 2, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(2));
  EXPECT_EQ(Ids(scheduler.CompleteBatch(1, recorder.On(1).token, {Status()})), (Order{2}));
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, recorder.On(0).token, {Status()})), (Order{1}));
}

TEST(SchedulerQueueFullIsUnavailable) {
  ModelConfig config = Config(4, {4}, 0);
  config.batching.default_queue_policy.max_queue_size = 2;
  FakeSink sink;
  ModelScheduler scheduler(config, &sink, DispatchMode::kBatcherThread);  // not started: everything stays queued
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  auto third = Req(3);
  const Status status = scheduler.Enqueue(third);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.Message(), std::string("Exceeds maximum queue size"));
  EXPECT_TRUE(third != nullptr);  // the caller keeps it
  // Never held, so counted nowhere: Triton's PriorityQueue refuses it back to the caller.
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.Failures(FailureReason::kRejected), 0u);
  EXPECT_EQ(stats.fail.count, 0u);
  EXPECT_EQ(stats.pending, 2u);
  EXPECT_EQ(Ids(scheduler.Stop()), (Order{1, 2}));
}

TEST(SchedulerHardQueueLimitIsUnavailable) {
  ModelConfig config = Config(4, {4}, 0);
  config.max_queue_size_hard_limit = 1;
  FakeSink sink;
  ModelScheduler scheduler(config, &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  auto second = Req(2);
  const Status status = scheduler.Enqueue(second);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.Message(), std::string("Exceeds maximum queue size"));
}

TEST(SchedulerRejectsInvalidRequestsWithoutQueueing) {
  FakeSink sink;
  ModelScheduler scheduler(Config(4, {4}, 0), &sink, DispatchMode::kBatcherThread);
  auto request = Req(1, 5);  // batch 5 > max_batch_size 4
  const Status status = scheduler.Enqueue(request);
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_TRUE(request != nullptr);
  EXPECT_EQ(scheduler.Stats().pending, 0u);
  // Never queued and counted nowhere: Triton refuses it in PrepareForInference, before any
  // statistics (nv_inference_request_failure counts only requests it accepted).
  EXPECT_EQ(scheduler.Stats().fail.count, 0u);
  EXPECT_EQ(scheduler.Stats().Failures(FailureReason::kOther), 0u);
  EXPECT_TRUE(scheduler.Stop().empty());
}

TEST(SchedulerQueueTimeoutRejectsThroughTheSink) {
  // Level 1 has no timeout, level 2 rejects after 1 ms. Request 1 (level 1) occupies the only
  // instance, so request 2 (level 2) can only time out.
  ModelConfig config = Config(1, {1}, 0);
  config.batching.priority_levels = 2;
  QueuePolicy reject;
  reject.timeout_action = TimeoutAction::kReject;
  reject.default_timeout_us = 1000;
  config.batching.priority_queue_policy[2] = reject;
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(config, &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1, 1, 1);
  EXPECT_TRUE(recorder.WaitFor(1));
  Enqueue(&scheduler, 2, 1, 2);
  EXPECT_TRUE(sink.WaitFor(1));
  const std::vector<InferenceResponse> rejected = sink.Responses();
  EXPECT_EQ(Ids(rejected), (Order{2}));
  if (!rejected.empty()) {
    EXPECT_EQ(rejected[0].status.Code(), StatusCode::kUnavailable);
    EXPECT_EQ(rejected[0].status.Message(), std::string("Request timeout expired"));
  }
  const std::vector<InferenceResponse> released = scheduler.CompleteBatch(0, recorder.On(0).token, {Status()});
  EXPECT_EQ(Ids(released), (Order{1}));
  EXPECT_TRUE(AllOk(released));
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.Failures(FailureReason::kRejected), 1u);
  EXPECT_EQ(stats.fail.count, 1u);
  EXPECT_EQ(stats.success.count, 1u);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(recorder.Batches().size(), 1u);
}

TEST(SchedulerCancelRemovesAQueuedRequest) {
  FakeSink sink;
  ModelScheduler scheduler(Config(4, {4}, 0), &sink, DispatchMode::kBatcherThread);  // not started
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  const std::vector<InferenceResponse> cancelled = scheduler.Cancel(2);
  EXPECT_EQ(Ids(cancelled), (Order{2}));
  if (!cancelled.empty()) {
    EXPECT_EQ(cancelled[0].status.Code(), StatusCode::kCancelled);
    EXPECT_CONTAINS(cancelled[0].status.Message(), "'m'");
  }
  EXPECT_TRUE(scheduler.Cancel(2).empty());   // already gone
  EXPECT_TRUE(scheduler.Cancel(99).empty());  // never queued
  EXPECT_EQ(scheduler.Stats().pending, 1u);
  EXPECT_EQ(scheduler.Stats().fail.count, 1u);
  EXPECT_EQ(Ids(scheduler.Stop()), (Order{1}));
}

TEST(SchedulerCancelOfAnExecutingRequestIsANoop) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1);
  EXPECT_TRUE(recorder.WaitFor(1));
  EXPECT_TRUE(scheduler.Cancel(1).empty());
  const std::vector<InferenceResponse> released = scheduler.CompleteBatch(0, recorder.On(0).token, {Status()});
  EXPECT_EQ(Ids(released), (Order{1}));
  EXPECT_TRUE(AllOk(released));
}

TEST(SchedulerDrainSendsWithoutWaitingTheDelay) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(8, {8}, kLongDelayUs), &sink, DispatchMode::kBatcherThread);
  recorder.scheduler = &scheduler;
  recorder.sink = &sink;
  scheduler.Start(Instances(&recorder, 1, Mode::kInline));
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  EXPECT_TRUE(recorder.Batches().empty());  // waiting out a one-minute delay
  scheduler.Drain();
  EXPECT_TRUE(sink.WaitFor(2));
  EXPECT_EQ(Ids(sink.Responses()), (Order{1, 2}));
  EXPECT_EQ(recorder.Batches().size(), 1u);
  auto late = Req(3);
  const Status status = scheduler.Enqueue(late);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(status.Message(), "'m'");
}

TEST(SchedulerStopFailsQueuedAndExecutingRequests) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(1));  // 1 executing, 2 queued
  const std::vector<InferenceResponse> failed = scheduler.Stop();
  EXPECT_EQ(Ids(failed), (Order{1, 2}));
  for (const InferenceResponse& r : failed) {
    EXPECT_EQ(r.status.Code(), StatusCode::kUnavailable);
    EXPECT_CONTAINS(r.status.Message(), "'m'");
  }
  EXPECT_EQ(recorder.Shutdowns(), 1);
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(stats.fail.count, 2u);
  EXPECT_EQ(stats.execution_count, 0u);
  EXPECT_TRUE(scheduler.Stop().empty());  // a second Stop has nothing left
  auto late = Req(3);
  EXPECT_EQ(scheduler.Enqueue(late).Code(), StatusCode::kUnavailable);
}

TEST(SchedulerIgnoresACompletionAfterStop) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1);
  EXPECT_TRUE(recorder.WaitFor(1));
  EXPECT_EQ(scheduler.Stop().size(), 1u);
  EXPECT_TRUE(scheduler.CompleteBatch(0, recorder.On(0).token, {Status()}).empty());
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.success.count, 0u);
  EXPECT_EQ(stats.fail.count, 1u);
}

TEST(SchedulerIgnoresCompletionsNamingAnotherBatch) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1);
  EXPECT_TRUE(recorder.WaitFor(1));
  const uint64_t token = recorder.On(0).token;
  EXPECT_TRUE(scheduler.CompleteBatch(0, token + 1, {Status()}).empty());  // wrong token
  EXPECT_TRUE(scheduler.CompleteBatch(7, token, {Status()}).empty());      // no such instance
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, token, {Status()})), (Order{1}));
  EXPECT_TRUE(scheduler.CompleteBatch(0, token, {Status()}).empty());  // twice
}

TEST(SchedulerStatsCountSuccessfulBatches) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {4}, 0), &sink, DispatchMode::kBatcherThread);
  recorder.scheduler = &scheduler;
  recorder.sink = &sink;
  Enqueue(&scheduler, 1, 1);
  Enqueue(&scheduler, 2, 2);
  Enqueue(&scheduler, 3, 1);
  scheduler.Start(Instances(&recorder, 1, Mode::kInline));
  EXPECT_TRUE(sink.WaitFor(3));
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.success.count, 3u);
  EXPECT_EQ(stats.fail.count, 0u);
  EXPECT_EQ(stats.queue.count, 3u);
  EXPECT_EQ(stats.compute_infer.count, 3u);
  EXPECT_EQ(stats.inference_count, 4u);  // rows
  EXPECT_EQ(stats.execution_count, 1u);  // one batch of 4 rows
  EXPECT_EQ(stats.batch_stats.size(), 1u);
  EXPECT_EQ(stats.batch_stats.count(4), 1u);
  if (stats.batch_stats.count(4)) EXPECT_EQ(stats.batch_stats.at(4).compute_infer.count, 1u);
  EXPECT_EQ(stats.Failures(FailureReason::kRejected), 0u);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_TRUE(stats.last_inference_ms > 0);
}

TEST(SchedulerStatsCountFailedRequests) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {2}, 0), &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  Enqueue(&scheduler, 3);
  Enqueue(&scheduler, 4);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(1));
  // One status per request: request 2 fails, request 1 succeeds.
  std::vector<InferenceResponse> released =
      scheduler.CompleteBatch(0, recorder.On(0).token, {Status(), InvalidArg("bad row")});
  EXPECT_EQ(Ids(released), (Order{1, 2}));
  if (released.size() == 2) {
    EXPECT_TRUE(released[0].status.IsOk());
    EXPECT_EQ(released[1].status.Message(), std::string("bad row"));
  }
  ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.success.count, 1u);
  EXPECT_EQ(stats.fail.count, 1u);
  EXPECT_EQ(stats.execution_count, 1u);
  // One status for the whole batch: both fail, and no execution is counted.
  EXPECT_TRUE(recorder.WaitFor(2));
  released = scheduler.CompleteBatch(0, recorder.On(0).token, {Status(StatusCode::kInternal, "boom")});
  EXPECT_EQ(Ids(released), (Order{3, 4}));
  for (const InferenceResponse& r : released) EXPECT_EQ(r.status.Code(), StatusCode::kInternal);
  stats = scheduler.Stats();
  EXPECT_EQ(stats.success.count, 1u);
  EXPECT_EQ(stats.fail.count, 3u);
  EXPECT_EQ(stats.execution_count, 1u);
  EXPECT_EQ(stats.pending, 0u);
}

TEST(SchedulerStatsTellFailureReasons) {
  FakeSink sink;
  Recorder recorder;
  ModelConfig config = Config(1, {1}, 0);
  config.batching.default_queue_policy.max_queue_size = 1;
  ModelScheduler scheduler(config, &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1);  // executing
  EXPECT_TRUE(recorder.WaitFor(1));
  Enqueue(&scheduler, 2);  // queued
  auto full = Req(3);
  EXPECT_EQ(scheduler.Enqueue(full).Code(), StatusCode::kUnavailable);  // refused: not counted
  auto invalid = Req(4);
  invalid->inputs[0].name = "NOPE";
  EXPECT_EQ(scheduler.Enqueue(invalid).Code(), StatusCode::kInvalidArg);  // refused: not counted
  EXPECT_EQ(Ids(scheduler.Cancel(2)), (Order{2}));                        // CANCELED
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, recorder.On(0).token, {Internal("engine failed")})), (Order{1}));  // BACKEND
  const ModelStats stats = scheduler.Stats();
  // Only requests the scheduler held count, as in Triton (REJECTED is a queued request's
  // timeout: SchedulerQueueTimeoutRejectsThroughTheSink).
  EXPECT_EQ(stats.Failures(FailureReason::kRejected), 0u);
  EXPECT_EQ(stats.Failures(FailureReason::kOther), 0u);
  EXPECT_EQ(stats.Failures(FailureReason::kCanceled), 1u);
  EXPECT_EQ(stats.Failures(FailureReason::kBackend), 1u);
  EXPECT_EQ(stats.fail.count, 2u);
  EXPECT_EQ(stats.success.count, 0u);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(stats.queued, 0u);
}

TEST(SchedulerStatsUseTheInstancesTimings) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {2}, 0), &sink, DispatchMode::kBatcherThread);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  EXPECT_TRUE(recorder.WaitFor(1));
  const int64_t rows = recorder.On(0).rows;
  BatchTimings timings;
  timings.measured = true;
  timings.input_ns = 1000;
  timings.infer_ns = 20000;
  timings.output_ns = 300;
  const std::vector<Status> ok(recorder.On(0).ids.size(), Status());
  EXPECT_TRUE(AllOk(scheduler.CompleteBatch(0, recorder.On(0).token, ok, timings)));
  if (rows == 1) {  // the first request may go alone before the second is queued
    EXPECT_TRUE(recorder.WaitFor(2));
    EXPECT_TRUE(AllOk(scheduler.CompleteBatch(0, recorder.On(0).token, {Status()}, timings)));
  }
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.compute_input.count, 2u);
  EXPECT_EQ(stats.compute_input.ns, 2000u);  // counted per request, as Triton's inference_stats
  EXPECT_EQ(stats.compute_infer.ns, 40000u);
  EXPECT_EQ(stats.compute_output.ns, 600u);
  // Whole microseconds per request, as Triton's duration counters add them: 2 x 300 ns is 0 us.
  EXPECT_EQ(stats.compute_input.us, 2u);
  EXPECT_EQ(stats.compute_infer.us, 40u);
  EXPECT_EQ(stats.compute_output.us, 0u);
  const BatchStat& by_size = stats.batch_stats.at(rows);
  EXPECT_EQ(by_size.compute_input.ns, 1000u * static_cast<uint64_t>(2 / rows));
  EXPECT_EQ(by_size.compute_infer.count, static_cast<uint64_t>(2 / rows));
}

TEST(SchedulerResponsesCarryWhatTheirRequestsCounted) {
  // What an ensemble sums of its step requests (Triton's secondary stats aggregator): each
  // successful response carries its request's queue time and its batch's phases, as counted in
  // the model's statistics; a failed one carries zeros; an open (decoupled) request's come with
  // its final response.
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {2}, kLongDelayUs), &sink, DispatchMode::kBatcherThread);
  for (uint64_t id = 1; id <= 4; ++id) Enqueue(&scheduler, id);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(1));
  BatchTimings timings;
  timings.measured = true;
  timings.input_ns = 1000;
  timings.infer_ns = 20000;
  timings.output_ns = 300;
  std::vector<InferenceResponse> released =
      scheduler.CompleteBatch(0, recorder.On(0).token, {Status(), InvalidArg("bad row")}, timings);
  EXPECT_EQ(Ids(released), (Order{1, 2}));
  if (released.size() == 2) {
    const RequestTimings& ok = released[0].timings;
    EXPECT_EQ(ok.compute_input_ns, 1000u);
    EXPECT_EQ(ok.compute_infer_ns, 20000u);
    EXPECT_EQ(ok.compute_output_ns, 300u);
    const RequestTimings& failed = released[1].timings;
    EXPECT_EQ(failed.queue_ns + failed.compute_input_ns + failed.compute_infer_ns + failed.compute_output_ns, 0u);
  }
  EXPECT_TRUE(recorder.WaitFor(2));
  EXPECT_TRUE(
      scheduler.CompleteBatch(0, recorder.On(0).token, {Status(), Status()}, timings, {Release::kOpen, Release::kOpen})
          .empty());
  const std::vector<InferenceResponse> three = scheduler.FinishOpen(3, Status());
  EXPECT_EQ(Ids(three), (Order{3}));
  if (!three.empty()) EXPECT_EQ(three[0].timings.compute_infer_ns, 20000u);
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.compute_infer.ns, 40000u);  // requests 1 and 3: what their responses carried
  // The queue time the statistics counted is the sum of what the successful responses carried.
  if (released.size() == 2 && !three.empty()) {
    EXPECT_EQ(stats.queue.ns, released[0].timings.queue_ns + three[0].timings.queue_ns);
    EXPECT_EQ(stats.success.ns, released[0].timings.request_ns + three[0].timings.request_ns);
    EXPECT_EQ(stats.success.us, released[0].timings.request_ns / 1000 + three[0].timings.request_ns / 1000);
  }
  scheduler.Stop();
}

TEST(SchedulerWrongStatusCountFailsTheBatch) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {2}, 0), &sink, DispatchMode::kBatcherThread);
  Enqueue(&scheduler, 1);
  Enqueue(&scheduler, 2);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(1));
  const std::vector<InferenceResponse> released =
      scheduler.CompleteBatch(0, recorder.On(0).token, {Status(), Status(), Status()});
  EXPECT_EQ(Ids(released), (Order{1, 2}));
  for (const InferenceResponse& r : released) {
    EXPECT_EQ(r.status.Code(), StatusCode::kInternal);
    EXPECT_CONTAINS(r.status.Message(), "'m'");
  }
}

TEST(SchedulerServesConcurrentRequestsExactlyOnce) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {4}, 0), &sink, DispatchMode::kBatcherThread);
  recorder.scheduler = &scheduler;
  recorder.sink = &sink;
  scheduler.Start(Instances(&recorder, 2, Mode::kInline));
  const uint64_t count = 300;
  for (uint64_t id = 1; id <= count; ++id) Enqueue(&scheduler, id, 1 + static_cast<int64_t>(id % 3));
  EXPECT_TRUE(sink.WaitFor(count));
  std::vector<uint64_t> ids = Ids(sink.Responses());
  std::sort(ids.begin(), ids.end());
  Order expected;
  for (uint64_t id = 1; id <= count; ++id) expected.push_back(id);
  EXPECT_TRUE(ids == expected);
  EXPECT_TRUE(AllOk(sink.Responses()));
  for (const Executed& e : recorder.Batches()) EXPECT_TRUE(e.rows >= 1 && e.rows <= 4);
  EXPECT_EQ(scheduler.Stats().pending, 0u);
  EXPECT_TRUE(scheduler.Stop().empty());
}

TEST(SchedulerPumpDispatchesToACallerThreadInstance) {
  // The batcher thread may also hand the batch over (it can be awake for its own reasons), so
  // either path is accepted; the batch is dispatched exactly once and completes normally.
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(2, {2}, kLongDelayUs), &sink, DispatchMode::kCallerPumps);
  std::vector<std::unique_ptr<ModelInstance>> instances;
  instances.push_back(std::make_unique<FakeInstance>(&recorder, Mode::kManual, true));
  scheduler.Start(std::move(instances));
  InlineDispatch dispatch;
  scheduler.Pump(&dispatch);
  EXPECT_EQ(dispatch.instance, -1);  // nothing queued
  for (uint64_t id = 1; id <= 2; ++id) {
    auto request = Req(id);
    EXPECT_TRUE(scheduler.Enqueue(request).IsOk());
  }
  scheduler.Pump(&dispatch);
  uint64_t token = 0;
  if (dispatch.instance >= 0) {
    EXPECT_EQ(dispatch.instance, 0);
    EXPECT_EQ(dispatch.request_ids, (Order{1, 2}));
    token = dispatch.token;
  } else {
    EXPECT_TRUE(recorder.WaitFor(1));
    EXPECT_EQ(recorder.On(0).ids, (Order{1, 2}));
    token = recorder.On(0).token;
  }
  InlineDispatch again;
  scheduler.Pump(&again);
  EXPECT_EQ(again.instance, -1);  // the only instance is busy
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, token, {Status()})), (Order{1, 2}));
}

TEST(SchedulerCallerPumpsOwesAPumpAfterACompletionOnlyWhileRequestsAreQueued) {
  // kCallerPumps: a completion on the caller's thread promises a Pump() only when something is
  // queued (PumpPending), so a lone request costs its caller no empty pump afterwards.
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kCallerPumps);
  std::vector<std::unique_ptr<ModelInstance>> instances;
  instances.push_back(std::make_unique<FakeInstance>(&recorder, Mode::kManual, true));
  scheduler.Start(std::move(instances));
  EXPECT_TRUE(!scheduler.PumpPending());
  for (uint64_t id = 1; id <= 2; ++id) {
    auto request = Req(id);
    EXPECT_TRUE(scheduler.Enqueue(request).IsOk());
  }
  EXPECT_TRUE(scheduler.PumpPending());  // the enqueues promised one
  InlineDispatch first;
  scheduler.Pump(&first);
  EXPECT_EQ(first.request_ids, (Order{1}));
  EXPECT_TRUE(!scheduler.PumpPending());
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, first.token, {Status()})), (Order{1}));
  EXPECT_TRUE(scheduler.PumpPending());  // request 2 waits for it
  InlineDispatch second;
  scheduler.Pump(&second);
  EXPECT_EQ(second.request_ids, (Order{2}));
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, second.token, {Status()})), (Order{2}));
  EXPECT_TRUE(!scheduler.PumpPending());  // nothing queued: no pump owed
  // With no pump owed the batcher thread takes what arrives next from the caller's enqueue +
  // pump as before: the contract is unchanged for arrivals.
  auto third = Req(3);
  EXPECT_TRUE(scheduler.Enqueue(third).IsOk());
  InlineDispatch dispatch;
  scheduler.Pump(&dispatch);
  EXPECT_EQ(dispatch.request_ids, (Order{3}));
  EXPECT_EQ(Ids(scheduler.CompleteBatch(0, dispatch.token, {Status()})), (Order{3}));
}

TEST(SchedulerCallerPumpsLeavesInstanceThreadCompletionsToTheBatcherThread) {
  // kCallerPumps: a completion on an instance's own thread (CompleteBatchWithOutputs, as the
  // ONNX engine reports) promises no Pump(), so the batcher thread must send the next batch.
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kCallerPumps);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));  // runs on its own thread
  for (uint64_t id = 1; id <= 2; ++id) {
    auto request = Req(id);
    EXPECT_TRUE(scheduler.Enqueue(request).IsOk());
  }
  InlineDispatch dispatch;
  scheduler.Pump(&dispatch);         // the promised pump; the batcher thread may have sent it already
  EXPECT_EQ(dispatch.instance, -1);  // no instance runs on this thread
  EXPECT_TRUE(recorder.WaitFor(1));
  EXPECT_EQ(recorder.On(0).ids, (Order{1}));
  const std::vector<InferenceResponse> first =
      scheduler.CompleteBatchWithOutputs(0, recorder.On(0).token, {Status()}, {}, BatchTimings{});
  EXPECT_EQ(Ids(first), (Order{1}));
  EXPECT_TRUE(recorder.WaitFor(2));  // no Pump() follows: the batcher thread dispatched it
  EXPECT_EQ(recorder.On(0).ids, (Order{2}));
  EXPECT_EQ(Ids(scheduler.CompleteBatchWithOutputs(0, recorder.On(0).token, {Status()}, {}, BatchTimings{})),
            (Order{2}));
}

TEST(SchedulerDestructorStopsARunningScheduler) {
  FakeSink sink;
  Recorder recorder;
  {
    ModelScheduler scheduler(Config(1, {1}, 0), &sink, DispatchMode::kBatcherThread);
    Enqueue(&scheduler, 1);
    Enqueue(&scheduler, 2);
    scheduler.Start(Instances(&recorder, 1, Mode::kManual));
    EXPECT_TRUE(recorder.WaitFor(1));
  }  // joins the batcher thread and frees both requests (ASan checks for leaks)
  EXPECT_EQ(recorder.Shutdowns(), 1);
}

// Decoupled models: an executed batch frees its instance while its requests stay open (pending)
// until each ends; the next batch runs meanwhile; Stop() fails what is still open.
TEST(SchedulerKeepsDecoupledRequestsOpenAfterTheirBatchExecuted) {
  FakeSink sink;
  Recorder recorder;
  ModelScheduler scheduler(Config(4, {2}, kLongDelayUs), &sink, DispatchMode::kBatcherThread);
  for (uint64_t id = 1; id <= 5; ++id) Enqueue(&scheduler, id);
  scheduler.Start(Instances(&recorder, 1, Mode::kManual));
  EXPECT_TRUE(recorder.WaitFor(1));
  const Executed first = recorder.On(0);
  EXPECT_EQ(first.ids, (Order{1, 2}));
  // Request 1 already ended during the execution; request 2 is still streaming.
  const std::vector<InferenceResponse> released =
      scheduler.CompleteBatch(0, first.token, {Status(), Status()}, BatchTimings{}, {Release::kEnded, Release::kOpen});
  EXPECT_EQ(Ids(released), (Order{1}));
  EXPECT_EQ(scheduler.Stats().pending, 4u);  // 2 open, 3 and 4 dispatched next, 5 queued
  // The instance is free: the next batch goes while request 2 is open.
  EXPECT_TRUE(recorder.WaitFor(2));
  const Executed second = recorder.On(0);
  EXPECT_EQ(second.ids, (Order{3, 4}));
  EXPECT_TRUE(
      scheduler.CompleteBatch(0, second.token, {Status(), Status()}, BatchTimings{}, {Release::kOpen, Release::kOpen})
          .empty());
  // Request 2 ends with its final response; request 3 fails mid-stream.
  const std::vector<InferenceResponse> two = scheduler.FinishOpen(2, Status());
  EXPECT_EQ(Ids(two), (Order{2}));
  EXPECT_TRUE(AllOk(two));
  const std::vector<InferenceResponse> three = scheduler.FinishOpen(3, Internal("failed mid-stream"));
  EXPECT_EQ(Ids(three), (Order{3}));
  EXPECT_TRUE(!three.empty() && three[0].status.Code() == StatusCode::kInternal);
  EXPECT_TRUE(scheduler.FinishOpen(3, Status()).empty());  // ended already
  const ModelStats stats = scheduler.Stats();
  EXPECT_EQ(stats.success.count, 2u);
  EXPECT_EQ(stats.fail.count, 1u);
  EXPECT_EQ(stats.execution_count, 2u);
  EXPECT_EQ(stats.inference_count, 4u);
  // Stop fails the request still open (4) and the queued one (5).
  std::vector<uint64_t> failed = Ids(scheduler.Stop());
  std::sort(failed.begin(), failed.end());
  EXPECT_EQ(failed, (Order{4, 5}));
  EXPECT_EQ(scheduler.Stats().pending, 0u);
}
