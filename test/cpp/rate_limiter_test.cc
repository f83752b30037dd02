// The rate limiter alone (resource counts, validation, grant order), then with real
// ModelSchedulers sharing one limiter: instances whose resources are taken wait, a completion
// or a Stop() hands them on. Fake instances record their batches and are completed by the test
// thread; waits are bounded by kWait, which only a broken limiter reaches.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "scheduling/model_scheduler.h"
#include "scheduling/rate_limiter.h"

using namespace infernode;

namespace {

constexpr auto kWait = std::chrono::seconds(10);
const float kZeros[4] = {};

InstanceRateLimits Needs(const std::string& name, uint64_t count, uint32_t priority = 0, bool global = false) {
  InstanceRateLimits limits;
  limits.resources.push_back(RateLimitResource{name, count, global});
  limits.priority = priority;
  return limits;
}

// Grants as they arrive, in order, as "model:instance".
class GrantLog {
 public:
  OnGrant For(const std::string& model) {
    return [this, model](uint32_t instance, Grants*) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(model + ":" + std::to_string(instance));
    };
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
};

std::unique_ptr<RateLimitRegistration> MustRegister(RateLimiter* limiter, const std::string& model,
                                                    std::vector<InstanceRateLimits> instances, OnGrant on_grant) {
  std::unique_ptr<RateLimitRegistration> registration;
  const Status status = limiter->Register(model, std::move(instances), std::move(on_grant), &registration);
  EXPECT_TRUE(status.IsOk());
  if (!status.IsOk()) std::cerr << "    " << status.Message() << "\n";
  return registration;
}

using Strings = std::vector<std::string>;

std::ostream& operator<<(std::ostream& os, const Strings& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os << "]";
}

}  // namespace

TEST(RateLimiterCountsDefaultToTheLargestNeed) {
  RateLimiter limiter({});
  GrantLog log;
  auto a = MustRegister(&limiter, "a", {Needs("R", 2), Needs("G", 3, 0, true)}, log.For("a"));
  auto b = MustRegister(&limiter, "b", {Needs("R", 5)}, log.For("b"));
  ResourceCounts available = limiter.Available();
  EXPECT_EQ(available[0]["R"], 5u);
  EXPECT_EQ(available[kGlobalResourceDevice]["G"], 3u);
  b.reset();  // unloading b lowers R back to a's need
  available = limiter.Available();
  EXPECT_EQ(available[0]["R"], 2u);
}

TEST(RateLimiterExplicitCountsOverrideAndMustCoverEveryNeed) {
  RateLimiter limiter({{kEveryDevice, {{"R", 4}}}, {1, {{"R", 6}}}});
  GrantLog log;
  InstanceRateLimits on_gpu1 = Needs("R", 1);
  on_gpu1.device = 1;
  auto a = MustRegister(&limiter, "a", {Needs("R", 1), on_gpu1}, log.For("a"));
  ResourceCounts available = limiter.Available();
  EXPECT_EQ(available[0]["R"], 4u);
  EXPECT_EQ(available[1]["R"], 6u);

  std::unique_ptr<RateLimitRegistration> refused;
  Status status = limiter.Register("big", {Needs("R", 5)}, log.For("big"), &refused);
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(status.Message(), "model 'big'");
  EXPECT_CONTAINS(status.Message(), "Resource count for \"R\" is limited to 4");
  EXPECT_CONTAINS(status.Message(), "the minimum required count is 5");
  EXPECT_TRUE(refused == nullptr);
  // A resource the explicit counts do not name is unavailable.
  status = limiter.Register("other", {Needs("S", 1)}, log.For("other"), &refused);
  EXPECT_CONTAINS(status.Message(), "Resource count for \"S\" is limited to 0");
  available = limiter.Available();
  EXPECT_EQ(available[0]["R"], 4u);  // the refused models changed nothing
}

TEST(RateLimiterRefusesAResourceBothGlobalAndPerDevice) {
  RateLimiter limiter({});
  GrantLog log;
  auto a = MustRegister(&limiter, "a", {Needs("R", 1)}, log.For("a"));
  std::unique_ptr<RateLimitRegistration> refused;
  const Status status = limiter.Register("b", {Needs("R", 1, 0, true)}, log.For("b"), &refused);
  EXPECT_EQ(status.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(status.Message(), "Resource \"R\" is present as both global and device-specific resource");
}

TEST(RateLimiterGrantsByExecutionsTimesPriorityThenFifo) {
  RateLimiter limiter({});
  GrantLog log;
  auto holder = MustRegister(&limiter, "holder", {Needs("R", 1)}, log.For("holder"));
  auto p1 = MustRegister(&limiter, "p1", {Needs("R", 1, 1)}, log.For("p1"));
  auto p2 = MustRegister(&limiter, "p2", {Needs("R", 1, 2)}, log.For("p2"));
  Grants grants;
  // Both run once: scores p1 = 1 x 1, p2 = 1 x 2.
  EXPECT_TRUE(p1->Request(0, &grants));
  p1->Release(0, &grants);
  EXPECT_TRUE(p2->Request(0, &grants));
  p2->Release(0, &grants);
  EXPECT_TRUE(grants.Empty());

  EXPECT_TRUE(holder->Request(0, &grants));
  EXPECT_TRUE(!p2->Request(0, &grants));  // p2 waits first ...
  EXPECT_TRUE(!p1->Request(0, &grants));  // ... but p1's score is lower
  holder->Release(0, &grants);
  grants.Deliver();
  EXPECT_EQ(log.Log(), (Strings{"p1:0"}));
  p1->Release(0, &grants);  // p1: 2 x 1 = 2, p2: 1 x 2 = 2: equal, p2 waited first
  grants.Deliver();
  EXPECT_EQ(log.Log(), (Strings{"p1:0", "p2:0"}));
}

TEST(RateLimiterFirstWaiterHoldsBackSmallerOnes) {
  RateLimiter limiter({{kEveryDevice, {{"R", 2}}}});
  GrantLog log;
  auto small = MustRegister(&limiter, "small", {Needs("R", 1), Needs("R", 1)}, log.For("small"));
  auto big = MustRegister(&limiter, "big", {Needs("R", 2)}, log.For("big"));
  Grants grants;
  EXPECT_TRUE(small->Request(0, &grants));
  EXPECT_TRUE(!big->Request(0, &grants));    // needs both
  EXPECT_TRUE(!small->Request(1, &grants));  // one is free, but big waits before it
  small->Release(0, &grants);
  grants.Deliver();
  EXPECT_EQ(log.Log(), (Strings{"big:0"}));
  big->Release(0, &grants);
  grants.Deliver();
  EXPECT_EQ(log.Log(), (Strings{"big:0", "small:1"}));
}

TEST(RateLimiterUnregisterFreesWhatAModelHeld) {
  RateLimiter limiter({});
  GrantLog log;
  auto a = MustRegister(&limiter, "a", {Needs("R", 1)}, log.For("a"));
  auto b = MustRegister(&limiter, "b", {Needs("R", 1)}, log.For("b"));
  Grants grants;
  EXPECT_TRUE(a->Request(0, &grants));
  EXPECT_TRUE(!b->Request(0, &grants));
  a.reset();  // delivers b's grant itself
  EXPECT_EQ(log.Log(), (Strings{"b:0"}));
}

namespace {

// A sink nobody reads in these tests (completions come back from CompleteBatch).
class NullSink final : public CompletionSink {
 public:
  void Deliver(std::vector<InferenceResponse>) override {}
};

// Instances that record their batches; the test thread completes them.
class Recorder {
 public:
  void Add(const Batch& batch) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tokens_.emplace_back(batch.instance, batch.token);
    }
    cv_.notify_all();
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return tokens_.size() >= n; });
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_.size();
  }
  std::pair<uint32_t, uint64_t> Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_.back();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<uint32_t, uint64_t>> tokens_;
};

class RecordingInstance final : public ModelInstance {
 public:
  explicit RecordingInstance(Recorder* recorder) : recorder_(recorder) {}
  void Execute(const Batch& batch) override { recorder_->Add(batch); }

 private:
  Recorder* recorder_;
};

// Model `name`: one FP32 input "x" [1], default scheduler, one instance needing R:1.
ModelConfig LimitedConfig(const std::string& name) {
  ModelConfig config;
  config.name = name;
  TensorConfig x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.dims = {1};
  config.inputs = {x};
  config.rate_limits = {Needs("R", 1)};
  return config;
}

void Enqueue(ModelScheduler* scheduler, uint64_t id) {
  auto request = std::make_unique<InferenceRequest>();
  request->id = id;
  InputTensor x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.shape = {1};
  x.data = reinterpret_cast<const uint8_t*>(kZeros);
  x.byte_size = sizeof(float);
  request->inputs.push_back(x);
  EXPECT_TRUE(scheduler->Enqueue(request).IsOk());
}

// True once the scheduler's queue is empty: its batch was formed and asked the limiter (both
// happen under the scheduler's lock, which Stats() takes).
bool WaitLeftQueue(ModelScheduler* scheduler) {
  const auto until = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < until) {
    if (scheduler->Stats().queued == 0) return true;
    std::this_thread::yield();
  }
  return false;
}

struct LimitedModel {
  LimitedModel(const std::string& name, std::shared_ptr<RateLimiter> limiter)
      : scheduler(LimitedConfig(name), &sink, DispatchMode::kBatcherThread) {
    EXPECT_TRUE(scheduler.UseRateLimiter(std::move(limiter)).IsOk());
    std::vector<std::unique_ptr<ModelInstance>> instances;
    instances.push_back(std::make_unique<RecordingInstance>(&recorder));
    scheduler.Start(std::move(instances));
  }
  std::vector<InferenceResponse> CompleteLast() {
    const auto [instance, token] = recorder.Last();
    return scheduler.CompleteBatch(instance, token, {Status()});
  }
  NullSink sink;
  Recorder recorder;
  ModelScheduler scheduler;
};

}  // namespace

TEST(RateLimitedSchedulersSharingOneResourceTakeTurns) {
  auto limiter = std::make_shared<RateLimiter>(ResourceCounts{});
  LimitedModel a("a", limiter);
  LimitedModel b("b", limiter);
  Enqueue(&a.scheduler, 1);
  EXPECT_TRUE(a.recorder.WaitFor(1));  // a holds R
  Enqueue(&b.scheduler, 2);
  EXPECT_TRUE(WaitLeftQueue(&b.scheduler));
  EXPECT_EQ(b.recorder.Count(), 0u);  // b's batch waits for R
  EXPECT_EQ(a.CompleteLast().size(), 1u);
  EXPECT_TRUE(b.recorder.WaitFor(1));  // a's release granted b
  Enqueue(&a.scheduler, 3);
  EXPECT_TRUE(WaitLeftQueue(&a.scheduler));
  EXPECT_EQ(a.recorder.Count(), 1u);
  EXPECT_EQ(b.CompleteLast().size(), 1u);
  EXPECT_TRUE(a.recorder.WaitFor(2));
  EXPECT_EQ(a.CompleteLast().size(), 1u);
  const ModelStats stats = b.scheduler.Stats();
  EXPECT_EQ(stats.success.count, 1u);
  EXPECT_EQ(stats.queue.count, 1u);
}

TEST(RateLimitedSchedulerStopHandsItsResourceOn) {
  auto limiter = std::make_shared<RateLimiter>(ResourceCounts{});
  LimitedModel b("b", limiter);
  {
    LimitedModel a("a", limiter);
    Enqueue(&a.scheduler, 1);
    EXPECT_TRUE(a.recorder.WaitFor(1));
    Enqueue(&b.scheduler, 2);
    EXPECT_TRUE(WaitLeftQueue(&b.scheduler));
    EXPECT_EQ(a.scheduler.Stop().size(), 1u);  // a's executing request fails; R goes to b
  }
  EXPECT_TRUE(b.recorder.WaitFor(1));
  EXPECT_EQ(b.CompleteLast().size(), 1u);
}

TEST(RateLimitedSchedulerStopFailsABatchWaitingForItsResource) {
  auto limiter = std::make_shared<RateLimiter>(ResourceCounts{});
  LimitedModel a("a", limiter);
  LimitedModel b("b", limiter);
  Enqueue(&a.scheduler, 1);
  EXPECT_TRUE(a.recorder.WaitFor(1));
  Enqueue(&b.scheduler, 2);
  EXPECT_TRUE(WaitLeftQueue(&b.scheduler));
  const std::vector<InferenceResponse> failed = b.scheduler.Stop();
  EXPECT_EQ(failed.size(), 1u);
  if (!failed.empty()) EXPECT_EQ(failed[0].status.Code(), StatusCode::kUnavailable);
  EXPECT_EQ(a.CompleteLast().size(), 1u);  // nothing is granted to the stopped b
  Enqueue(&a.scheduler, 3);
  EXPECT_TRUE(a.recorder.WaitFor(2));
  EXPECT_EQ(a.CompleteLast().size(), 1u);
}

TEST(RateLimitedSchedulersUnderConcurrentTrafficServeEverything) {
  auto limiter = std::make_shared<RateLimiter>(ResourceCounts{});
  LimitedModel a("a", limiter);
  LimitedModel b("b", limiter);
  // Each model's test thread completes its batches as they come; R lets one run at a time.
  constexpr int kRequests = 200;
  auto drive = [](LimitedModel* m, uint64_t first) {
    for (int i = 0; i < kRequests; ++i) {
      Enqueue(&m->scheduler, first + static_cast<uint64_t>(i));
      if (!m->recorder.WaitFor(static_cast<size_t>(i) + 1)) return;
      m->CompleteLast();
    }
  };
  std::thread ta(drive, &a, 1000);
  std::thread tb(drive, &b, 5000);
  ta.join();
  tb.join();
  EXPECT_EQ(a.scheduler.Stats().success.count, static_cast<uint64_t>(kRequests));
  EXPECT_EQ(b.scheduler.Stats().success.count, static_cast<uint64_t>(kRequests));
}
