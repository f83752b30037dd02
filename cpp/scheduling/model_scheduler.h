// One model's scheduler: its request source (the dynamic batcher's queue or the sequence
// batcher's slot table, request_source.h), its batcher thread, its instances, its statistics.
//
// Threads: Enqueue/Cancel/Stop are called from the main thread; CompleteBatch from whichever
// thread an instance finishes on; the batcher thread forms batches and hands them to idle
// instances. All state below is guarded by mu_; the batcher thread never calls an instance
// while holding it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/completion_sink.h"
#include "core/model_config.h"
#include "core/model_stats.h"
#include "engines/engine.h"
#include "scheduling/rate_limiter.h"
#include "scheduling/request_source.h"
#include "scheduling/response_orderer.h"

namespace infernode {

// Who hands queued batches to idle instances. Decided once, by whoever makes the scheduler
// (cpp/napi/native_model.cc: kCallerPumps; the native unit tests: kBatcherThread), and fixed
// for its life. docs/architecture.md, "Why JS instances are pumped on the main thread".
enum class DispatchMode {
  // The batcher thread dispatches every batch; Pump() is never promised.
  kBatcherThread,
  // The caller's thread (the JS main thread) calls Pump() soon after each Enqueue and
  // CompleteBatch it makes (once per burst of requests), which dispatches to every idle
  // instance without a batcher-thread wake. Until that Pump() runs the batcher thread
  // dispatches nothing. The batcher thread still owns timeouts, queue-delay windows, rate
  // limiter grants and the batch after a completion on an instance's own thread
  // (CompleteBatchWithOutputs: no Pump() follows it).
  kCallerPumps,
};

class ModelScheduler final : public BatchCompleter {
 public:
  ModelScheduler(ModelConfig config, CompletionSink* sink, DispatchMode mode);
  ~ModelScheduler() override;
  ModelScheduler(const ModelScheduler&) = delete;
  ModelScheduler& operator=(const ModelScheduler&) = delete;

  // Before Start: the Triton's rate limiter (--rate-limit execution_count), shared by its
  // models; the instances register with the config's rate_limits. INVALID_ARG when the
  // limiter refuses them (nothing changes then).
  Status UseRateLimiter(std::shared_ptr<RateLimiter> limiter);

  // Takes the instances (one batch at a time each) and starts the batcher thread.
  void Start(std::vector<std::unique_ptr<ModelInstance>> instances);

  // Validates and queues. On error the request stays with the caller and nothing is queued.
  // kCallerPumps: the caller's thread calls it and promises a Pump().
  Status Enqueue(std::unique_ptr<InferenceRequest>& request);

  // Caller's thread (kCallerPumps): hands the batches the batcher would send now to idle
  // instances that run on their own threads (native engines), and describes the next one for
  // an idle instance that runs on this thread in `dispatch` (the caller must execute it). When
  // nothing can go now but something waits (queue delay), wakes the batcher thread.
  void Pump(InlineDispatch* dispatch);

  // Removes a queued request; returns its CANCELLED response, or nothing when it already left
  // the queue (then it completes normally and the caller drops the result).
  std::vector<InferenceResponse> Cancel(uint64_t request_id);

  // An instance finished the batch of `token`. `statuses` holds one status per request, or
  // one for the whole batch; `timings` the phases the instance measured (if it did). Returns
  // the responses that may be released now (ordering).
  // `release` says per request how it left (empty: all ended): decoupled requests marked kOpen
  // have not sent their final response and stay open (pending, outside the orderer) until
  // FinishOpen; iterative sequences' kReschedule ones go back to the source for another step.
  // `outputs` (JS engines: the state outputs of a sequence model; may be empty) per request.
  // kCallerPumps: the caller's thread calls it (instances running there) and promises a Pump()
  // when PumpPending() says one is owed (something is queued).
  std::vector<InferenceResponse> CompleteBatch(uint32_t instance, uint64_t token, std::vector<Status> statuses,
                                               const BatchTimings& timings = BatchTimings{},
                                               const std::vector<Release>& release = {},
                                               std::vector<std::vector<OutputTensor>> outputs = {});

  // The inputs the scheduler added to the requests of the batch in flight on `instance` (its
  // `token`): per request, the implicit ones (controls, state), or all of a null row's. Empty
  // when that batch is no longer in flight. For JS engines, which get requests by id.
  std::vector<std::vector<InputTensor>> AddedInputs(uint32_t instance, uint64_t token) const;

  // A request CompleteBatch left open ended (its final response, or an error): its response,
  // or nothing when it is not open (it was failed by Stop()).
  std::vector<InferenceResponse> FinishOpen(uint64_t request_id, Status status);

  // A native instance finished, on its own thread: as CompleteBatch, with each request's
  // outputs. No Pump() follows it, so the batcher thread forms the next batch.
  std::vector<InferenceResponse> CompleteBatchWithOutputs(uint32_t instance, uint64_t token,
                                                          std::vector<Status> statuses,
                                                          std::vector<std::vector<OutputTensor>> outputs,
                                                          const BatchTimings& timings) override;

  // kCallerPumps, caller's thread: whether a Pump() the caller promised (by an Enqueue or a
  // CompleteBatch that left requests queued) has not run yet. Only that thread sets or clears
  // it, so the answer holds until its next call.
  bool PumpPending() const;

  // From now on queued requests are sent without waiting for the queue delay.
  void Drain();

  // Stops the batcher thread (joined before returning) and fails everything queued or
  // executing with UNAVAILABLE. Later completions of executing batches are ignored.
  std::vector<InferenceResponse> Stop();

  ModelStats Stats() const;
  const ModelConfig& Config() const { return config_; }

 private:
  void Run();
  // The rate limiter granted `instance` (any thread; no scheduler or limiter lock held): its
  // waiting batch may go. A grant it cannot use goes back; what that grants goes to `grants`.
  void OnGrant(uint32_t instance, Grants* grants);
  // A batch formed for `instance` asks the rate limiter; false when it must wait for a grant.
  bool AcquireLocked(uint32_t instance, Grants* grants);
  // An instance whose batch was granted and is not executing yet (the batcher thread sends it).
  int GrantedInstanceLocked() const;
  // Which idle instances a dispatch may use.
  enum class Pick { kAny, kCallerThreadOnly, kOtherThreadsOnly };
  int IdleInstance(Pick pick) const;
  // Forms the next batch for an idle instance if the batcher would send it now and records it
  // in in_flight_. Returns the instance, or -1 with `wait_ns` set to how long to wait.
  // Rate limited: a batch formed for an instance that must wait for its resources stays in
  // in_flight_ (the loop goes on to the next idle instance); `grants` collects other
  // instances the limiter granted meanwhile, for the caller to deliver after unlocking.
  int DispatchLocked(uint64_t now_ns, Pick pick, uint64_t* wait_ns, Grants* grants);
  // Pump(): forms the batches that can go now for idle instances running on their own threads
  // (native engines), to be executed once mu_ is released: no batcher-thread hop for them.
  void DispatchOtherThreadsLocked(std::vector<std::pair<ModelInstance*, const Batch*>>* handed, Grants* grants);
  void DispatchInlineLocked(InlineDispatch* dispatch, Grants* grants);
  // True when the batcher thread must look at the queue now. With `pump_promised` (this call
  // was made on the caller's thread in kCallerPumps mode), idle instances are left to the
  // promised Pump(); timeouts still need the thread.
  bool ThreadNeededLocked(bool pump_promised) const;
  // Whether a call made on `where` is followed by a Pump(): kCallerPumps, on the caller's thread.
  enum class CalledOn { kCallerThread, kInstanceThread };
  bool PumpPromised(CalledOn where) const;
  // Counts a finished batch; failed requests count under `failure_reason` (CANCELLED ones
  // under kCanceled).
  // Requests released kOpen move to open_ instead (their outcome is FinishOpen's); null rows
  // and requests the source took back (rescheduled) get no response.
  void RecordCompletion(Batch& batch, const std::vector<Status>& statuses,
                        std::vector<std::vector<OutputTensor>>* outputs, uint64_t now_ns, const BatchTimings& timings,
                        FailureReason failure_reason, std::vector<InferenceResponse>* out,
                        const std::vector<Release>& release = {});
  void RecordRejected(std::vector<Rejected> rejected, uint64_t now_ns, std::vector<InferenceResponse>* out);
  // Counts one request's end: success with its batch's phases, or a failure. Returns what a
  // success counted (zeros for a failure), which its response carries.
  RequestTimings RecordRequest(const InferenceRequest& request, const Status& status, uint64_t dispatch_ns,
                               uint64_t now_ns, const BatchTimings& t, FailureReason failure_reason);
  std::vector<InferenceResponse> Complete(uint32_t instance, uint64_t token, std::vector<Status> statuses,
                                          std::vector<std::vector<OutputTensor>>* outputs, CalledOn where,
                                          const BatchTimings& timings, const std::vector<Release>& release);

  // A decoupled request whose batch executed but which has not ended: what its end is counted with.
  struct OpenRequest {
    std::unique_ptr<InferenceRequest> request;
    uint64_t dispatch_ns = 0;
    BatchTimings timings;  // its batch's phases, as RecordCompletion resolved them
  };

  const ModelConfig config_;
  CompletionSink* const sink_;  // not owned; outlives the scheduler
  const DispatchMode mode_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<RequestSource> source_;
  ResponseOrderer orderer_;
  std::vector<std::unique_ptr<ModelInstance>> instances_;
  std::vector<std::unique_ptr<Batch>> in_flight_;   // per instance; null when idle
  std::unordered_map<uint64_t, OpenRequest> open_;  // by request id (decoupled models)
  ModelStats stats_;
  uint64_t next_sequence_ = 0;
  uint64_t next_token_ = 1;
  // kCallerPumps: the caller promised a Pump() (by an Enqueue or CompleteBatch) that has not
  // run yet: until it does, the batcher thread dispatches nothing, so a batch never takes the
  // thread hop when the caller is about to dispatch it anyway (timeouts stay the thread's).
  bool pump_pending_ = false;
  // When the batcher thread will look at the source again by itself: 0 while it is awake,
  // its wake-up time while it waits (UINT64_MAX: only when notified). A deadline earlier than
  // this needs a notify; a later one does not.
  uint64_t thread_wake_ns_ = 0;
  bool draining_ = false;
  bool stopping_ = false;
  bool started_ = false;
  // The rate limiter (null when off) and this model's registration in it. Batches formed while
  // an instance waits for its resources stay in in_flight_ with gate_ kWaiting; a grant makes
  // it kGranted and the batcher thread executes them. Grants collected under mu_ are delivered
  // after it is released (another model's scheduler may take its own mutex in OnGrant).
  enum class Gate : uint8_t { kOpen, kWaiting, kGranted };
  std::shared_ptr<RateLimiter> limiter_;
  std::unique_ptr<RateLimitRegistration> limits_;
  std::vector<Gate> gate_;  // per instance
  std::thread thread_;
};

}  // namespace infernode
