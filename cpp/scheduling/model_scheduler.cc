#include "scheduling/model_scheduler.h"

#include <utility>

#include "core/clock.h"
#include "scheduling/queue_source.h"
#include "scheduling/request_validator.h"
#include "scheduling/sequence_source.h"

namespace infernode {

namespace {

InferenceResponse Fail(const InferenceRequest& request, const Status& status) {
  InferenceResponse response;
  response.request_id = request.id;
  response.status = status;
  return response;
}

std::unique_ptr<RequestSource> MakeSource(const ModelConfig& config) {
  if (config.sequence.enabled) return std::make_unique<SequenceSource>(config);
  return std::make_unique<QueueSource>(config);
}

}  // namespace

ModelScheduler::ModelScheduler(ModelConfig config, CompletionSink* sink, DispatchMode mode)
    : config_(std::move(config)),
      sink_(sink),
      mode_(mode),
      source_(MakeSource(config_)),
      orderer_(source_->PreservesOrdering()) {}

ModelScheduler::~ModelScheduler() { Stop(); }

Status ModelScheduler::UseRateLimiter(std::shared_ptr<RateLimiter> limiter) {
  std::vector<InstanceRateLimits> limits = config_.rate_limits;
  limits.resize(config_.instance_count);
  std::unique_ptr<RateLimitRegistration> registration;
  // The registration (destroyed in Stop) detaches the callback before `this` goes.
  Status status = limiter->Register(
      config_.name, std::move(limits), [this](uint32_t i, Grants* more) { OnGrant(i, more); }, &registration);
  if (!status.IsOk()) return status;
  std::lock_guard<std::mutex> lock(mu_);
  limiter_ = std::move(limiter);
  limits_ = std::move(registration);
  return Status::Success();
}

void ModelScheduler::Start(std::vector<std::unique_ptr<ModelInstance>> instances) {
  std::lock_guard<std::mutex> lock(mu_);
  instances_ = std::move(instances);
  in_flight_.resize(instances_.size());
  gate_.assign(instances_.size(), Gate::kOpen);
  started_ = true;
  thread_ = std::thread([this] { Run(); });
}

Status ModelScheduler::Enqueue(std::unique_ptr<InferenceRequest>& request) {
  Status valid = ValidateRequest(config_, request.get());
  bool wake = false;
  {
    // A request refused here (invalid, the model stopping, a full queue, a sequence request the
    // batcher refuses) counts in no statistics: Triton refuses it before its scheduler holds it
    // (PrepareForInference, or the scheduler's Enqueue returning the error to
    // TRITONSERVER_ServerInferAsync), and counts failures only of requests it accepted.
    std::lock_guard<std::mutex> lock(mu_);
    if (!valid.IsOk()) return valid;
    if (stopping_ || draining_) {
      return Unavailable("model '" + config_.name + "' is not accepting requests: it is shutting down");
    }
    Status status = source_->Enqueue(request, SteadyNowNs());
    if (!status.IsOk()) return status;
    ++stats_.pending;
    const bool pump_promised = PumpPromised(CalledOn::kCallerThread);
    pump_pending_ = pump_pending_ || pump_promised;
    wake = ThreadNeededLocked(pump_promised);
  }
  if (wake) cv_.notify_one();
  return Status::Success();
}

bool ModelScheduler::PumpPromised(CalledOn where) const {
  return mode_ == DispatchMode::kCallerPumps && where == CalledOn::kCallerThread;
}

bool ModelScheduler::ThreadNeededLocked(bool pump_promised) const {
  const uint64_t deadline = source_->NextDeadline();
  if (deadline != 0 && deadline < thread_wake_ns_) return true;
  if (source_->Size() == 0) return false;
  // A caller that pumps dispatches to every idle instance itself (Pump).
  if (pump_promised) return false;
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    if (!in_flight_[i]) return true;
  }
  return false;
}

void ModelScheduler::Pump(InlineDispatch* dispatch) {
  dispatch->instance = -1;
  bool wake = false;
  Grants grants;
  std::vector<std::pair<ModelInstance*, const Batch*>> handed;  // batches for instances on their own threads
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    pump_pending_ = false;
    DispatchOtherThreadsLocked(&handed, &grants);
    DispatchInlineLocked(dispatch, &grants);
    wake = dispatch->instance < 0 && ThreadNeededLocked(false);
  }
  if (wake) cv_.notify_one();
  grants.Deliver();
  // As the batcher thread does, with mu_ released: Execute only hands the batch over (the
  // instance's own thread runs it), and nothing frees a batch before it is executed except
  // Stop(), which runs on this same thread.
  for (const auto& [instance, batch] : handed) instance->Execute(*batch);
}

void ModelScheduler::DispatchOtherThreadsLocked(std::vector<std::pair<ModelInstance*, const Batch*>>* handed,
                                                Grants* grants) {
  const uint64_t now = SteadyNowNs();
  const uint64_t deadline = source_->NextDeadline();
  if (deadline != 0 && now >= deadline) return;  // the batcher thread's (timeouts first)
  uint64_t wait_ns = 0;
  int instance;
  while ((instance = DispatchLocked(now, Pick::kOtherThreadsOnly, &wait_ns, grants)) >= 0) {
    handed->emplace_back(instances_[instance].get(), in_flight_[instance].get());
  }
}

void ModelScheduler::DispatchInlineLocked(InlineDispatch* dispatch, Grants* grants) {
  const uint64_t now = SteadyNowNs();
  // Expired requests are the batcher thread's to reject; leave everything to it then.
  const uint64_t deadline = source_->NextDeadline();
  if (deadline != 0 && now >= deadline) return;
  uint64_t wait_ns = 0;
  const int instance = DispatchLocked(now, Pick::kCallerThreadOnly, &wait_ns, grants);
  if (instance < 0) return;
  const Batch& batch = *in_flight_[instance];
  dispatch->instance = instance;
  dispatch->token = batch.token;
  dispatch->request_ids.clear();
  for (const auto& r : batch.requests) dispatch->request_ids.push_back(r->id);
}

std::vector<InferenceResponse> ModelScheduler::Cancel(uint64_t request_id) {
  std::vector<InferenceResponse> out;
  std::lock_guard<std::mutex> lock(mu_);
  const Status cancelled(StatusCode::kCancelled, "Request for model '" + config_.name + "' was cancelled");
  RecordRejected(source_->Remove(request_id, cancelled), SteadyNowNs(), &out);
  return out;
}

void ModelScheduler::RecordRejected(std::vector<Rejected> rejected, uint64_t now_ns,
                                    std::vector<InferenceResponse>* out) {
  for (Rejected& r : rejected) {
    --stats_.pending;
    stats_.Failed(r.reason, now_ns > r.request->enqueue_ns ? now_ns - r.request->enqueue_ns : 0);
    out->push_back(Fail(*r.request, r.status));
  }
}

int ModelScheduler::IdleInstance(Pick pick) const {
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    if (in_flight_[i]) continue;
    const bool caller_thread = instances_[i]->RunsOnCallerThread();
    if (pick == Pick::kAny || (pick == Pick::kCallerThreadOnly) == caller_thread) return static_cast<int>(i);
  }
  return -1;
}

int ModelScheduler::DispatchLocked(uint64_t now_ns, Pick pick, uint64_t* wait_ns, Grants* grants) {
  *wait_ns = 0;
  if (source_->Size() == 0) return -1;
  // Each idle instance in turn: the sequence batcher's requests belong to one instance each.
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    if (in_flight_[i]) continue;
    const bool caller_thread = instances_[i]->RunsOnCallerThread();
    if (pick != Pick::kAny && (pick == Pick::kCallerThreadOnly) != caller_thread) continue;
    FormedBatch formed = source_->Next(static_cast<uint32_t>(i), now_ns, draining_);
    if (formed.requests.empty()) {
      if (formed.wait_ns != 0 && (*wait_ns == 0 || formed.wait_ns < *wait_ns)) *wait_ns = formed.wait_ns;
      continue;
    }
    auto batch = std::make_unique<Batch>();
    batch->instance = static_cast<uint32_t>(i);
    batch->sequence = next_sequence_++;
    batch->token = next_token_++;
    batch->dispatch_ns = now_ns;
    batch->requests = std::move(formed.requests);
    for (const auto& r : batch->requests) batch->rows += r->batch_size;
    in_flight_[i] = std::move(batch);
    *wait_ns = 0;
    // Rate limited: the batch waits in in_flight_ for the instance's resources (OnGrant).
    if (limits_ && !AcquireLocked(static_cast<uint32_t>(i), grants)) continue;
    return static_cast<int>(i);
  }
  return -1;
}

bool ModelScheduler::AcquireLocked(uint32_t instance, Grants* grants) {
  if (limits_->Request(instance, grants)) return true;
  gate_[instance] = Gate::kWaiting;
  return false;
}

int ModelScheduler::GrantedInstanceLocked() const {
  for (size_t i = 0; i < gate_.size(); ++i) {
    if (gate_[i] == Gate::kGranted) return static_cast<int>(i);
  }
  return -1;
}

void ModelScheduler::OnGrant(uint32_t instance, Grants* grants) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (instance < gate_.size() && gate_[instance] == Gate::kWaiting && in_flight_[instance] && !stopping_) {
      gate_[instance] = Gate::kGranted;
      // Triton counts the wait for the rate limiter as queue time: the batch starts now.
      in_flight_[instance]->dispatch_ns = SteadyNowNs();
      wake = true;
    } else if (limits_) {
      limits_->Release(instance, grants);  // nothing waits for it any more (stopped)
    }
  }
  if (wake) cv_.notify_one();
}

std::vector<std::vector<InputTensor>> ModelScheduler::AddedInputs(uint32_t instance, uint64_t token) const {
  std::vector<std::vector<InputTensor>> added;
  std::lock_guard<std::mutex> lock(mu_);
  if (instance >= in_flight_.size() || !in_flight_[instance] || in_flight_[instance]->token != token) return added;
  for (const auto& request : in_flight_[instance]->requests) {
    std::vector<InputTensor> inputs;
    for (const InputTensor& in : request->inputs) {
      if (request->is_null || in.implicit) inputs.push_back(in);
    }
    added.push_back(std::move(inputs));
  }
  return added;
}

void ModelScheduler::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    thread_wake_ns_ = 0;  // awake: it looks at the source before it waits again
    const uint64_t now = SteadyNowNs();
    std::vector<Rejected> expired;
    source_->ApplyTimeouts(now, &expired);
    if (!expired.empty()) {
      std::vector<InferenceResponse> failed;
      RecordRejected(std::move(expired), now, &failed);
      lock.unlock();
      sink_->Deliver(std::move(failed));
      lock.lock();
      continue;
    }
    uint64_t wait_ns = 0;
    Grants grants;
    int idle = limits_ ? GrantedInstanceLocked() : -1;
    if (idle >= 0) {
      gate_[idle] = Gate::kOpen;
    } else {
      // A promised Pump() dispatches what can go now; until it runs the thread leaves it be.
      idle = pump_pending_ ? -1 : DispatchLocked(now, Pick::kAny, &wait_ns, &grants);
    }
    if (!grants.Empty()) {
      lock.unlock();
      grants.Deliver();
      lock.lock();
      if (idle >= 0 && (stopping_ || !in_flight_[idle])) continue;
    }
    if (idle >= 0) {
      const Batch& dispatched = *in_flight_[idle];
      ModelInstance* instance = instances_[idle].get();
      lock.unlock();
      instance->Execute(dispatched);  // must not touch `dispatched` after handing it on
      lock.lock();
      continue;
    }
    uint64_t wake_ns = wait_ns == 0 ? 0 : now + wait_ns;
    const uint64_t deadline = source_->NextDeadline();
    if (deadline != 0 && (wake_ns == 0 || deadline < wake_ns)) wake_ns = deadline;
    thread_wake_ns_ = wake_ns == 0 ? UINT64_MAX : wake_ns;
    if (wake_ns == 0) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::nanoseconds(wake_ns - now));
    }
  }
}

RequestTimings ModelScheduler::RecordRequest(const InferenceRequest& request, const Status& status,
                                             uint64_t dispatch_ns, uint64_t now_ns, const BatchTimings& t,
                                             FailureReason failure_reason) {
  RequestTimings counted;
  --stats_.pending;
  if (!status.IsOk()) {
    const bool cancelled = status.Code() == StatusCode::kCancelled;
    stats_.Failed(cancelled ? FailureReason::kCanceled : failure_reason, now_ns - request.enqueue_ns);
    return counted;
  }
  counted.request_ns = now_ns - request.enqueue_ns;
  counted.queue_ns = dispatch_ns - request.enqueue_ns;
  counted.compute_input_ns = t.input_ns;
  counted.compute_infer_ns = t.infer_ns;
  counted.compute_output_ns = t.output_ns;
  stats_.success.Add(counted.request_ns);
  stats_.queue.Add(counted.queue_ns);
  stats_.compute_input.Add(counted.compute_input_ns);
  stats_.compute_infer.Add(counted.compute_infer_ns);
  stats_.compute_output.Add(counted.compute_output_ns);
  return counted;
}

void ModelScheduler::RecordCompletion(Batch& batch, const std::vector<Status>& statuses,
                                      std::vector<std::vector<OutputTensor>>* outputs, uint64_t now_ns,
                                      const BatchTimings& timings, FailureReason failure_reason,
                                      std::vector<InferenceResponse>* out, const std::vector<Release>& release) {
  const uint64_t total_ns = now_ns > batch.dispatch_ns ? now_ns - batch.dispatch_ns : 0;
  BatchTimings t = timings;
  if (!t.measured) {
    t.infer_ns = total_ns;
  } else if (t.input_is_remainder) {
    const uint64_t measured = t.infer_ns + t.output_ns;
    t.input_ns = total_ns > measured ? total_ns - measured : 0;
  }
  bool any_success = false;
  uint64_t inferred_rows = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const Status& status = statuses.size() == 1 ? statuses[0] : statuses[i];
    if (!batch.requests[i] || batch.requests[i]->is_null) {
      any_success = any_success || (batch.requests[i] && status.IsOk());
      continue;  // taken back by the source (another step), or a null row: no response
    }
    if (status.IsOk()) inferred_rows += static_cast<uint64_t>(batch.requests[i]->batch_size);
    if (i < release.size() && release[i] == Release::kOpen && status.IsOk()) {
      any_success = true;  // it executed; how it ends is counted by FinishOpen
      const uint64_t id = batch.requests[i]->id;
      open_[id] = OpenRequest{std::move(batch.requests[i]), batch.dispatch_ns, t};
      continue;
    }
    const InferenceRequest& request = *batch.requests[i];
    InferenceResponse response;
    response.request_id = request.id;
    response.status = status;
    if (status.IsOk()) {
      any_success = true;
      if (outputs != nullptr && i < outputs->size()) response.outputs = std::move((*outputs)[i]);
    }
    response.timings = RecordRequest(request, status, batch.dispatch_ns, now_ns, t, failure_reason);
    out->push_back(std::move(response));
  }
  if (any_success) {
    stats_.inference_count += inferred_rows;
    ++stats_.execution_count;
    BatchStat& by_size = stats_.batch_stats[batch.rows];
    by_size.compute_input.Add(t.input_ns);
    by_size.compute_infer.Add(t.infer_ns);
    by_size.compute_output.Add(t.output_ns);
    stats_.last_inference_ms = WallNowMs();
  }
}

std::vector<InferenceResponse> ModelScheduler::FinishOpen(uint64_t request_id, Status status) {
  std::vector<InferenceResponse> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(request_id);
  if (it == open_.end()) return out;
  OpenRequest open = std::move(it->second);
  open_.erase(it);
  InferenceResponse response;
  response.timings =
      RecordRequest(*open.request, status, open.dispatch_ns, SteadyNowNs(), open.timings, FailureReason::kBackend);
  response.request_id = request_id;
  response.status = std::move(status);
  out.push_back(std::move(response));
  return out;
}

std::vector<InferenceResponse> ModelScheduler::CompleteBatch(uint32_t instance, uint64_t token,
                                                             std::vector<Status> statuses, const BatchTimings& timings,
                                                             const std::vector<Release>& release,
                                                             std::vector<std::vector<OutputTensor>> outputs) {
  return Complete(instance, token, std::move(statuses), outputs.empty() ? nullptr : &outputs, CalledOn::kCallerThread,
                  timings, release);
}

std::vector<InferenceResponse> ModelScheduler::CompleteBatchWithOutputs(uint32_t instance, uint64_t token,
                                                                        std::vector<Status> statuses,
                                                                        std::vector<std::vector<OutputTensor>> outputs,
                                                                        const BatchTimings& timings) {
  return Complete(instance, token, std::move(statuses), &outputs, CalledOn::kInstanceThread, timings, {});
}

std::vector<InferenceResponse> ModelScheduler::Complete(uint32_t instance, uint64_t token, std::vector<Status> statuses,
                                                        std::vector<std::vector<OutputTensor>>* outputs, CalledOn where,
                                                        const BatchTimings& timings,
                                                        const std::vector<Release>& release) {
  std::vector<InferenceResponse> released;
  bool wake = false;
  Grants grants;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (instance >= in_flight_.size() || !in_flight_[instance] || in_flight_[instance]->token != token ||
        gate_[instance] != Gate::kOpen) {
      return released;  // stale: the batch was already failed by Stop(), or it has not started
    }
    std::unique_ptr<Batch> batch = std::move(in_flight_[instance]);
    // The execution ended (a decoupled model's requests may stay open): its resources go back.
    if (limits_) limits_->Release(instance, &grants);
    if (statuses.size() != 1 && statuses.size() != batch->requests.size()) {
      statuses.assign(1, Internal("model '" + config_.name + "' returned " + std::to_string(statuses.size()) +
                                  " statuses for a batch of " + std::to_string(batch->requests.size()) + " requests"));
    }
    const uint64_t now = SteadyNowNs();
    source_->Executed(*batch, &statuses, outputs, release, now);
    std::vector<InferenceResponse> responses;
    RecordCompletion(*batch, statuses, outputs, now, timings, FailureReason::kBackend, &responses, release);
    released = orderer_.Complete(batch->sequence, std::move(responses));
    // Nothing queued: nothing for a Pump() to dispatch, so the caller need not make one
    // (PumpPending() tells it), and the batcher thread stays free to take the next arrival.
    const bool pump_promised = PumpPromised(where) && source_->Size() > 0;
    pump_pending_ = pump_pending_ || pump_promised;
    wake = ThreadNeededLocked(pump_promised) || draining_;
  }
  if (wake) cv_.notify_one();
  grants.Deliver();
  return released;
}

bool ModelScheduler::PumpPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pump_pending_;
}

void ModelScheduler::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_one();
}

std::vector<InferenceResponse> ModelScheduler::Stop() {
  std::vector<InferenceResponse> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return failed;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  // Native instances finish the batch they are reading before anything is torn down; their
  // completions during this wait are recorded normally. mu_ is not held: they take it.
  for (auto& instance : instances_) instance->Shutdown();
  // The instances (ONNX Runtime sessions and their thread pools) go now, not when the JS
  // object holding this scheduler is collected; destroyed below, after mu_ is released.
  std::vector<std::unique_ptr<ModelInstance>> released;
  std::unique_ptr<RateLimitRegistration> registration;
  std::lock_guard<std::mutex> lock(mu_);
  const Status shutting_down = Unavailable("model '" + config_.name + "' was stopped before the request completed");
  for (auto& batch : in_flight_) {
    if (!batch) continue;
    std::vector<InferenceResponse> responses;
    RecordCompletion(*batch, {shutting_down}, nullptr, SteadyNowNs(), BatchTimings{}, FailureReason::kOther,
                     &responses);
    for (auto& r : orderer_.Complete(batch->sequence, std::move(responses))) failed.push_back(std::move(r));
    batch.reset();
  }
  for (auto& r : orderer_.TakeAll()) failed.push_back(std::move(r));
  const uint64_t now = SteadyNowNs();
  for (auto& [id, open] : open_) {
    RecordRequest(*open.request, shutting_down, open.dispatch_ns, now, open.timings, FailureReason::kOther);
    failed.push_back(Fail(*open.request, shutting_down));
  }
  open_.clear();
  for (auto& request : source_->TakeAll()) {
    stats_.Failed(FailureReason::kOther, now - request->enqueue_ns);
    --stats_.pending;
    failed.push_back(Fail(*request, shutting_down));
  }
  in_flight_.clear();
  gate_.clear();
  released = std::move(instances_);
  instances_.clear();
  // Unregistered after mu_ is released (below, in reverse declaration order: the registration
  // before `released`): it frees what this model held and may grant other models' instances.
  registration = std::move(limits_);
  return failed;
}

ModelStats ModelScheduler::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ModelStats copy = stats_;
  copy.queued = source_->Size();
  return copy;
}

}  // namespace infernode
