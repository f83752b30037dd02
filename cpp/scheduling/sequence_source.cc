#include "scheduling/sequence_source.h"

#include <algorithm>

#include "core/clock.h"
#include "scheduling/batch_former.h"

namespace infernode {

namespace {

// Triton names a string id's type by its protocol name (infer_request.cc ValidateCorrelationId:
// DataTypeToProtocolString), as qa/L0_sequence_corrid_batcher expects.
const char* CorrIdTypeName(DataType dtype) { return dtype == DataType::kBytes ? "BYTES" : DataTypeName(dtype); }

// Ids the iterative sequencer gives requests that came without one: far from any a client picks.
constexpr uint64_t kFirstIterativeId = uint64_t{1} << 63;

}  // namespace

SequenceSource::SequenceSource(const ModelConfig& config) : config_(config), oldest_batching_(config), inputs_(config) {
  const SequenceBatchingConfig& s = config_.sequence;
  slots_per_instance_ = s.strategy == SequenceStrategy::kOldest
                            ? std::max<uint32_t>(1, s.max_candidate_sequences)
                            : static_cast<uint32_t>(std::max<int64_t>(1, config_.max_batch_size));
  slots_.assign(config_.instance_count, std::vector<SequencePtr>(slots_per_instance_));
  oldest_batching_.batching.enabled = true;
  oldest_batching_.batching.preferred_batch_sizes = s.preferred_batch_sizes;
  oldest_batching_.batching.max_queue_delay_us = s.max_queue_delay_us;
  for (const StateConfig& state : s.states) {
    variable_state_ = variable_state_ || std::find(state.dims.begin(), state.dims.end(), -1) != state.dims.end();
  }
  next_iterative_id_ = kFirstIterativeId;
}

bool SequenceSource::PreservesOrdering() const {
  return config_.sequence.strategy == SequenceStrategy::kOldest && config_.sequence.preserve_ordering;
}

// Triton's checks, with its texts (sequence_batch_scheduler.cc, sequence_utils.h,
// infer_request.cc ValidateCorrelationId).
Status SequenceSource::Admit(InferenceRequest* request) const {
  const std::string& model = config_.name;
  if (request->batch_size > 1) {
    return InvalidArg("inference request to model '" + model +
                      "' must specify batch-size 1 due to requirements of sequence batcher");
  }
  const CorrelationId& id = request->correlation_id;
  if (!id.InSequence()) {
    return InvalidArg("inference request to model '" + model + "' must specify a non-zero or non-empty correlation ID");
  }
  for (const ControlConfig& control : config_.sequence.controls) {
    if (control.kind != ControlKind::kCorrId) continue;
    const bool string_type = control.dtype == DataType::kBytes;
    if (id.is_string != string_type) {
      return InvalidArg("sequence batching control '" + control.name + "' data-type is '" +
                        (id.is_string ? "BYTES" : "UINT64") + "', but model '" + model + "' expects '" +
                        CorrIdTypeName(control.dtype) + "'");
    }
  }
  if ((request->flags & kSequenceStart) == 0 && by_id_.find(id.Key()) == by_id_.end()) {
    return InvalidArg("inference request for sequence " + id.ToString() + " to model '" + model +
                      "' must specify the START flag on the first request of the sequence");
  }
  return Status::Success();
}

Status SequenceSource::Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns) {
  if (config_.sequence.iterative && !request->correlation_id.InSequence()) {
    // The iterative sequencer: a request without an id is a whole sequence by itself.
    request->correlation_id = CorrelationId{false, next_iterative_id_++, {}};
    request->flags = kSequenceStart;
  }
  // Expiry does not wait for the batcher thread to wake: a request after the idle time finds
  // its sequence released, whenever the thread gets to run.
  ReleaseIdle(now_ns);
  RETURN_IF_ERROR(Admit(request.get()));
  if (queued_ >= config_.max_queue_size_hard_limit) return Unavailable("Exceeds maximum queue size");
  const std::string key = request->correlation_id.Key();
  SequencePtr sequence;
  auto found = by_id_.find(key);
  if (found != by_id_.end()) {
    // A START for a sequence still active continues in its slot, as Triton does: the new START
    // resets the state when it is dispatched.
    sequence = found->second;
  } else {
    sequence = std::make_shared<Sequence>();
    sequence->id = request->correlation_id;
    sequence->states = inputs_.InitialStates();
    if (!AssignSlot(sequence)) backlog_.push_back(sequence);
    by_id_[key] = sequence;
  }
  request->enqueue_ns = now_ns;
  request->deadline_ns = DeadlineNs(now_ns, request->timeout_us);
  const bool end = (request->flags & kSequenceEnd) != 0;
  sequence->queue.push_back(std::move(request));
  sequence->last_activity_ns = now_ns;
  ++queued_;
  if (end) by_id_.erase(key);  // a later request with this id starts a new sequence
  return Status::Success();
}

bool SequenceSource::AssignSlot(const SequencePtr& sequence) {
  // Lowest slot first, across instances (Triton's ready-slot order): sequences spread over
  // the instances before any instance gets a second one.
  for (uint32_t slot = 0; slot < slots_per_instance_; ++slot) {
    for (size_t instance = 0; instance < slots_.size(); ++instance) {
      if (slots_[instance][slot]) continue;
      slots_[instance][slot] = sequence;
      sequence->instance = static_cast<int32_t>(instance);
      sequence->slot = slot;
      return true;
    }
  }
  return false;
}

void SequenceSource::ReleaseSlot(const SequencePtr& sequence) {
  if (sequence->instance < 0) {
    backlog_.erase(std::remove(backlog_.begin(), backlog_.end(), sequence), backlog_.end());
    return;
  }
  SequencePtr& holder = slots_[static_cast<size_t>(sequence->instance)][sequence->slot];
  if (holder == sequence) holder.reset();
  sequence->instance = -1;
  FillFromBacklog();
}

void SequenceSource::FillFromBacklog() {
  while (!backlog_.empty()) {
    SequencePtr next = backlog_.front();
    if (!AssignSlot(next)) return;
    backlog_.pop_front();
  }
}

void SequenceSource::Forget(const SequencePtr& sequence) {
  auto it = by_id_.find(sequence->id.Key());
  if (it != by_id_.end() && it->second == sequence) by_id_.erase(it);
}

void SequenceSource::RejectQueue(Sequence* sequence, const Status& status, FailureReason reason,
                                 std::vector<Rejected>* out) {
  for (auto& request : sequence->queue) out->push_back(Rejected{std::move(request), status, reason});
  queued_ -= sequence->queue.size();
  sequence->queue.clear();
}

uint64_t SequenceSource::NextDeadline() const {
  uint64_t next = 0;
  auto consider = [&next](uint64_t t) {
    if (t != 0 && (next == 0 || t < next)) next = t;
  };
  const uint64_t idle_ns = config_.sequence.max_sequence_idle_us * 1000;
  for (const auto& instance : slots_) {
    for (const SequencePtr& s : instance) {
      if (s && s->queue.empty() && !s->executing) consider(s->last_activity_ns + idle_ns);
    }
  }
  for (const SequencePtr& s : backlog_) {
    for (const auto& request : s->queue) consider(request->deadline_ns);
  }
  return next;
}

void SequenceSource::ReleaseIdle(uint64_t now_ns) {
  const uint64_t idle_ns = config_.sequence.max_sequence_idle_us * 1000;
  for (auto& instance : slots_) {
    for (SequencePtr& s : instance) {
      if (!s || !s->queue.empty() || s->executing || now_ns < s->last_activity_ns + idle_ns) continue;
      SequencePtr idle = s;  // released: a later request without START is refused
      s.reset();
      idle->instance = -1;
      Forget(idle);
    }
  }
  FillFromBacklog();
}

void SequenceSource::ApplyTimeouts(uint64_t now_ns, std::vector<Rejected>* rejected) {
  ReleaseIdle(now_ns);
  // Triton's backlog timeout: a backlogged sequence whose request waited past its `timeout`
  // is dropped whole (the requests after it could not run without it).
  for (auto it = backlog_.begin(); it != backlog_.end();) {
    Sequence& s = **it;
    const bool expired = std::any_of(s.queue.begin(), s.queue.end(), [now_ns](const auto& r) {
      return r->deadline_ns != 0 && now_ns >= r->deadline_ns;
    });
    if (!expired) {
      ++it;
      continue;
    }
    RejectQueue(&s, Unavailable("timeout of the corresponding sequence has been expired"), FailureReason::kRejected,
                rejected);
    Forget(*it);
    it = backlog_.erase(it);
  }
  FillFromBacklog();
}

std::string SequenceSource::RowKey(const Sequence& sequence) const {
  std::string key = sequence.queue.front()->batch_key;
  if (!variable_state_) return key;
  for (const StateValue& state : sequence.states) key += "|" + ShapeToString(state.shape);
  return key;
}

std::unique_ptr<InferenceRequest> SequenceSource::TakeHead(const SequencePtr& sequence, uint64_t now_ns) {
  std::unique_ptr<InferenceRequest> request = std::move(sequence->queue.front());
  sequence->queue.pop_front();
  --queued_;
  const bool start = (request->flags & kSequenceStart) != 0;
  const bool end = (request->flags & kSequenceEnd) != 0;
  if (start) sequence->states = inputs_.InitialStates();
  inputs_.AppendControls(request.get(), start, end, true, sequence->id);
  inputs_.AppendStates(request.get(), sequence->states);
  sequence->executing = true;
  sequence->last_activity_ns = now_ns;
  executing_[request->id] = sequence;
  // Its END is dispatched: the slot goes to the next sequence (this one's state lives on in
  // executing_ until the execution ends).
  if (end) ReleaseSlot(sequence);
  return request;
}

FormedBatch SequenceSource::Next(uint32_t instance, uint64_t now_ns, bool draining) {
  if (instance >= slots_.size()) return FormedBatch{};
  return config_.sequence.strategy == SequenceStrategy::kOldest ? NextOldest(instance, now_ns, draining)
                                                                : NextDirect(instance, now_ns, draining);
}

FormedBatch SequenceSource::NextDirect(uint32_t instance, uint64_t now_ns, bool draining) {
  FormedBatch formed;
  std::vector<SequencePtr> slots = slots_[instance];  // a copy: TakeHead may refill released slots
  int32_t last_ready = -1;
  size_t ready = 0;
  uint64_t oldest_ns = UINT64_MAX;
  const Sequence* like = nullptr;
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    const SequencePtr& s = slots[slot];
    if (!s || s->queue.empty()) continue;
    if (like == nullptr) like = s.get();
    oldest_ns = std::min(oldest_ns, s->queue.front()->enqueue_ns);
    ++ready;
    last_ready = static_cast<int32_t>(slot);
  }
  if (last_ready < 0) return formed;
  const SequenceBatchingConfig& cfg = config_.sequence;
  const uint64_t delay_ns = cfg.max_queue_delay_us * 1000;
  if (!draining && delay_ns > 0 && cfg.minimum_slot_utilization > 0) {
    const uint64_t waited = now_ns > oldest_ns ? now_ns - oldest_ns : 0;
    const bool full_enough =
        static_cast<float>(ready) / static_cast<float>(slots.size()) >= cfg.minimum_slot_utilization;
    if (waited <= delay_ns && !full_enough) {
      formed.wait_ns = delay_ns - waited + 1;
      return formed;
    }
  }
  const std::string key = RowKey(*like);
  const InferenceRequest& like_request = *like->queue.front();
  // Null rows copy the shapes of the first ready row, taken before any head leaves its queue.
  std::unique_ptr<InferenceRequest> like_copy = std::make_unique<InferenceRequest>();
  like_copy->inputs = like_request.inputs;
  like_copy->batch_key = like_request.batch_key;
  const std::vector<StateValue> like_states = like->states;
  // One null row is built per batch and copied for each idle slot: the copies share its zeroed,
  // read-only buffers instead of each allocating and clearing its own.
  std::unique_ptr<InferenceRequest> null_row;
  for (int32_t slot = 0; slot <= last_ready; ++slot) {
    const SequencePtr& s = slots[static_cast<size_t>(slot)];
    const bool usable = s && !s->queue.empty() && RowKey(*s) == key;
    if (!usable) {
      if (!null_row) null_row = inputs_.MakeNullRow(*like_copy, like_states);
      auto row = std::make_unique<InferenceRequest>(*null_row);
      row->enqueue_ns = now_ns;
      formed.requests.push_back(std::move(row));
      continue;
    }
    formed.requests.push_back(TakeHead(s, now_ns));
  }
  return formed;
}

FormedBatch SequenceSource::NextOldest(uint32_t instance, uint64_t now_ns, bool draining) {
  FormedBatch formed;
  std::vector<SequencePtr> ready;
  for (const SequencePtr& s : slots_[instance]) {
    if (s && !s->queue.empty()) ready.push_back(s);
  }
  if (ready.empty()) return formed;
  std::stable_sort(ready.begin(), ready.end(), [](const SequencePtr& a, const SequencePtr& b) {
    return a->queue.front()->enqueue_ns < b->queue.front()->enqueue_ns;
  });
  std::vector<std::string> keys;
  keys.reserve(ready.size());  // PendingRequest points into it
  std::vector<PendingRequest> view;
  for (const SequencePtr& s : ready) {
    keys.push_back(RowKey(*s));
    view.push_back(PendingRequest{1, s->queue.front()->enqueue_ns, &keys.back()});
  }
  const BatchDecision decision = FormBatch(view, oldest_batching_, now_ns, draining);
  if (decision.count == 0) {
    formed.wait_ns = decision.wait_ns;
    return formed;
  }
  for (size_t i = 0; i < decision.count && i < ready.size(); ++i) formed.requests.push_back(TakeHead(ready[i], now_ns));
  return formed;
}

std::vector<Rejected> SequenceSource::Remove(uint64_t request_id, const Status& cancelled) {
  std::vector<Rejected> out;
  auto find_in = [request_id](const SequencePtr& s) {
    return s &&
           std::any_of(s->queue.begin(), s->queue.end(), [request_id](const auto& r) { return r->id == request_id; });
  };
  SequencePtr owner;
  for (const auto& instance : slots_) {
    for (const SequencePtr& s : instance) {
      if (find_in(s)) owner = s;
    }
  }
  for (const SequencePtr& s : backlog_) {
    if (find_in(s)) owner = s;
  }
  if (!owner) return out;
  // Triton cancels the whole sequence: its queued requests fail and its slot is released.
  RejectQueue(owner.get(), cancelled, FailureReason::kCanceled, &out);
  Forget(owner);
  ReleaseSlot(owner);
  return out;
}

std::vector<std::unique_ptr<InferenceRequest>> SequenceSource::TakeAll() {
  std::vector<std::unique_ptr<InferenceRequest>> all;
  auto drain = [&all](const SequencePtr& s) {
    if (!s) return;
    for (auto& request : s->queue) all.push_back(std::move(request));
    s->queue.clear();
  };
  for (auto& instance : slots_) {
    for (SequencePtr& s : instance) {
      drain(s);
      s.reset();
    }
  }
  for (const SequencePtr& s : backlog_) drain(s);
  // An executing sequence is in a slot or the backlog while it has requests queued; draining the
  // ones executing too means no invariant slip can strand a request at shutdown.
  for (const auto& executing : executing_) drain(executing.second);
  backlog_.clear();
  by_id_.clear();
  queued_ = 0;
  return all;
}

void SequenceSource::Executed(Batch& batch, std::vector<Status>* statuses,
                              std::vector<std::vector<OutputTensor>>* outputs, const std::vector<Release>& release,
                              uint64_t now_ns) {
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    std::unique_ptr<InferenceRequest>& request = batch.requests[i];
    if (!request || request->is_null) continue;
    auto it = executing_.find(request->id);
    if (it == executing_.end()) continue;
    SequencePtr sequence = it->second;
    executing_.erase(it);
    sequence->executing = false;
    sequence->last_activity_ns = now_ns;
    auto succeeded = [&] { return (statuses->size() == 1 ? (*statuses)[0] : (*statuses)[i]).IsOk(); };
    if (succeeded() && outputs != nullptr && i < outputs->size()) {
      Status taken = inputs_.TakeStateOutputs(&(*outputs)[i], &sequence->states);
      if (!taken.IsOk()) {
        // The request fails; its state stays as it was.
        if (statuses->size() == 1) statuses->assign(batch.requests.size(), (*statuses)[0]);
        (*statuses)[i] = std::move(taken);
      }
    }
    const Release how = i < release.size() ? release[i] : Release::kEnded;
    if (how == Release::kReschedule && succeeded() && sequence->instance >= 0) {
      // Another step of the same request, before anything queued after it; no longer START.
      request->flags = 0;
      request->inputs.erase(std::remove_if(request->inputs.begin(), request->inputs.end(),
                                           [](const InputTensor& in) { return in.implicit; }),
                            request->inputs.end());
      sequence->queue.push_front(std::move(request));
      ++queued_;
      continue;
    }
    if (config_.sequence.iterative && sequence->queue.empty()) {
      // The request ended, and with it its sequence, unless the client queued more of it (its
      // own id, no END yet): those run first, as Triton's IterativeSequencer queues the
      // sequence's end behind them.
      Forget(sequence);
      ReleaseSlot(sequence);
    }
  }
}

size_t SequenceSource::ActiveSequences() const {
  size_t active = 0;
  for (const auto& instance : slots_)
    active += static_cast<size_t>(
        std::count_if(instance.begin(), instance.end(), [](const SequencePtr& s) { return s != nullptr; }));
  return active;
}

}  // namespace infernode
