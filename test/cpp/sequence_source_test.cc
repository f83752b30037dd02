// SequenceSource, the sequence batcher's slot table, with a fake clock: slot assignment, the
// batches each strategy forms, the control and state inputs of each row, the backlog, idle
// expiry, cancellation, iterative rescheduling and Triton's error texts.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "scheduling/sequence_source.h"

using namespace infernode;

namespace {

const float kOnes[8] = {1, 1, 1, 1, 1, 1, 1, 1};

std::ostream& operator<<(std::ostream& os, const std::vector<float>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os << "]";
}
constexpr uint64_t kMs = 1000 * 1000;

// Model "seq": input "x" FP32 [1]; controls START/END/READY (INT32 0/1) and CORRID (UINT64);
// one FP32 state "h" of dims [2] (fed as "h_in", replaced by "h_out"), initially [7, 7].
ModelConfig SeqConfig(int64_t max_batch_size, uint32_t instances = 1,
                      SequenceStrategy strategy = SequenceStrategy::kDirect) {
  ModelConfig config;
  config.name = "seq";
  config.max_batch_size = max_batch_size;
  config.instance_count = instances;
  TensorConfig x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.dims = {1};
  config.inputs = {x};
  SequenceBatchingConfig& s = config.sequence;
  s.enabled = true;
  s.strategy = strategy;
  s.max_sequence_idle_us = 1000 * 1000;
  s.max_candidate_sequences = 4;
  s.preferred_batch_sizes = {static_cast<int64_t>(std::max<int64_t>(1, max_batch_size))};
  for (auto [kind, name] : {std::pair{ControlKind::kStart, "START"}, std::pair{ControlKind::kEnd, "END"},
                            std::pair{ControlKind::kReady, "READY"}}) {
    ControlConfig c;
    c.kind = kind;
    c.name = name;
    c.dtype = DataType::kInt32;
    s.controls.push_back(c);
  }
  ControlConfig corrid;
  corrid.kind = ControlKind::kCorrId;
  corrid.name = "CORRID";
  corrid.dtype = DataType::kUint64;
  s.controls.push_back(corrid);
  StateConfig h;
  h.input_name = "h_in";
  h.output_name = "h_out";
  h.dtype = DataType::kFp32;
  h.dims = {2};
  h.initial_dims = {2};
  const float seven[2] = {7, 7};
  h.initial_data.assign(reinterpret_cast<const uint8_t*>(seven), reinterpret_cast<const uint8_t*>(seven) + 8);
  s.states.push_back(h);
  return config;
}

std::unique_ptr<InferenceRequest> SeqReq(uint64_t id, uint64_t corrid, uint32_t flags, bool batching = true) {
  auto request = std::make_unique<InferenceRequest>();
  request->id = id;
  request->correlation_id.number = corrid;
  request->flags = flags;
  InputTensor x;
  x.name = "x";
  x.dtype = DataType::kFp32;
  x.shape = batching ? Shape{1, 1} : Shape{1};
  x.data = reinterpret_cast<const uint8_t*>(kOnes);
  x.byte_size = sizeof(float);
  request->inputs.push_back(x);
  return request;
}

Status Add(SequenceSource* source, uint64_t id, uint64_t corrid, uint32_t flags, uint64_t now = 0) {
  auto request = SeqReq(id, corrid, flags);
  return source->Enqueue(request, now);
}

const InputTensor* Find(const InferenceRequest& r, const std::string& name) {
  for (const InputTensor& in : r.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

int32_t Int(const InferenceRequest& r, const std::string& name) {
  const InputTensor* in = Find(r, name);
  int32_t v = -1;
  if (in != nullptr) std::memcpy(&v, in->data, 4);
  return v;
}

uint64_t CorrId(const InferenceRequest& r) {
  const InputTensor* in = Find(r, "CORRID");
  uint64_t v = 0;
  if (in != nullptr) std::memcpy(&v, in->data, 8);
  return v;
}

std::vector<float> State(const InferenceRequest& r) {
  const InputTensor* in = Find(r, "h_in");
  std::vector<float> v(in == nullptr ? 0 : in->byte_size / 4);
  if (in != nullptr) std::memcpy(v.data(), in->data, in->byte_size);
  return v;
}

// Ends the execution of `batch` with each request's state output set to `next` (+ its row).
void Finish(SequenceSource* source, FormedBatch& formed, float next, uint64_t now = 0,
            std::vector<Release> release = {}) {
  Batch batch;
  batch.requests = std::move(formed.requests);
  std::vector<std::vector<OutputTensor>> outputs(batch.requests.size());
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    auto bytes = std::make_shared<std::vector<float>>(2, next + static_cast<float>(i));
    OutputTensor out;
    out.name = "h_out";
    out.dtype = DataType::kFp32;
    out.shape = {1, 2};
    out.data = reinterpret_cast<const uint8_t*>(bytes->data());
    out.byte_size = 8;
    out.owner = bytes;
    outputs[i].push_back(out);
  }
  std::vector<Status> statuses{Status()};
  source->Executed(batch, &statuses, &outputs, release, now);
  formed.requests = std::move(batch.requests);           // what the source did not take back
  for (const auto& o : outputs) EXPECT_TRUE(o.empty());  // undeclared state outputs are taken
}

}  // namespace

TEST(SequenceDirectPutsEachSequenceInItsSlotAndFillsGapsWithNullRows) {
  ModelConfig config = SeqConfig(4);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 100, kSequenceStart).IsOk());  // slot 0
  EXPECT_TRUE(Add(&source, 2, 200, kSequenceStart).IsOk());  // slot 1
  FormedBatch first = source.Next(0, 0, false);
  EXPECT_EQ(first.requests.size(), 2u);
  EXPECT_EQ(first.requests[0]->id, 1u);
  EXPECT_EQ(Int(*first.requests[0], "START"), 1);
  EXPECT_EQ(Int(*first.requests[0], "READY"), 1);
  EXPECT_EQ(Int(*first.requests[0], "END"), 0);
  EXPECT_EQ(CorrId(*first.requests[1]), 200u);
  Finish(&source, first, 10);
  // Only sequence 200 (slot 1) has a request: slot 0 becomes a null row with READY = 0.
  EXPECT_TRUE(Add(&source, 3, 200, 0).IsOk());
  FormedBatch second = source.Next(0, 0, false);
  EXPECT_EQ(second.requests.size(), 2u);
  EXPECT_TRUE(second.requests[0]->is_null);
  EXPECT_EQ(Int(*second.requests[0], "READY"), 0);
  EXPECT_EQ(CorrId(*second.requests[0]), 0u);
  EXPECT_EQ(Find(*second.requests[0], "x")->byte_size, 4u);
  EXPECT_EQ(second.requests[1]->id, 3u);
  EXPECT_EQ(Int(*second.requests[1], "START"), 0);
  EXPECT_EQ(State(*second.requests[1]), (std::vector<float>{11, 11}));  // row 1 of the first step's output
}

TEST(SequenceStateStartsFromInitialStateAndStartResetsIt) {
  ModelConfig config = SeqConfig(1);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 5, kSequenceStart).IsOk());
  FormedBatch step = source.Next(0, 0, false);
  EXPECT_EQ(State(*step.requests[0]), (std::vector<float>{7, 7}));
  Finish(&source, step, 3);
  EXPECT_TRUE(Add(&source, 2, 5, 0).IsOk());
  step = source.Next(0, 0, false);
  EXPECT_EQ(State(*step.requests[0]), (std::vector<float>{3, 3}));
  Finish(&source, step, 4);
  EXPECT_TRUE(Add(&source, 3, 5, kSequenceStart).IsOk());  // a new START: back to the initial state
  step = source.Next(0, 0, false);
  EXPECT_EQ(State(*step.requests[0]), (std::vector<float>{7, 7}));
}

TEST(SequenceRefusesRequestsAsTritonDoes) {
  ModelConfig config = SeqConfig(4);
  SequenceSource source(config);
  Status missing_start = Add(&source, 1, 42, 0);
  EXPECT_EQ(missing_start.Code(), StatusCode::kInvalidArg);
  EXPECT_CONTAINS(missing_start.Message(),
                  "inference request for sequence 42 to model 'seq' must specify the START flag on the first request "
                  "of the sequence");
  EXPECT_CONTAINS(Add(&source, 2, 0, kSequenceStart).Message(), "must specify a non-zero or non-empty correlation ID");
  auto text_id = SeqReq(3, 0, kSequenceStart);
  text_id->correlation_id = CorrelationId{true, 0, "abc"};
  EXPECT_CONTAINS(source.Enqueue(text_id, 0).Message(),
                  "sequence batching control 'CORRID' data-type is 'BYTES', but model 'seq' expects 'UINT64'");
  auto batched = SeqReq(4, 9, kSequenceStart);
  batched->batch_size = 2;
  EXPECT_CONTAINS(source.Enqueue(batched, 0).Message(),
                  "must specify batch-size 1 due to requirements of sequence batcher");
  // After END is queued the id is forgotten: a request without START is refused again.
  EXPECT_TRUE(Add(&source, 5, 42, kSequenceStart | kSequenceEnd).IsOk());
  EXPECT_EQ(Add(&source, 6, 42, 0).Code(), StatusCode::kInvalidArg);
  EXPECT_EQ(source.Size(), 1u);
}

TEST(SequenceEndFreesTheSlotForTheBacklog) {
  ModelConfig config = SeqConfig(1);  // one slot
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 1, kSequenceStart).IsOk());
  EXPECT_TRUE(Add(&source, 2, 2, kSequenceStart).IsOk());  // waits in the backlog
  EXPECT_EQ(source.BacklogSequences(), 1u);
  FormedBatch step = source.Next(0, 0, false);
  EXPECT_EQ(step.requests[0]->id, 1u);
  Finish(&source, step, 0);
  EXPECT_TRUE(source.Next(0, 0, false).requests.empty());  // sequence 2 still has no slot
  EXPECT_TRUE(Add(&source, 3, 1, kSequenceEnd).IsOk());
  step = source.Next(0, 0, false);
  EXPECT_EQ(step.requests[0]->id, 3u);
  EXPECT_EQ(Int(*step.requests[0], "END"), 1);
  EXPECT_EQ(source.BacklogSequences(), 0u);  // its END was dispatched: sequence 2 took the slot
  Finish(&source, step, 0);
  step = source.Next(0, 0, false);
  EXPECT_EQ(step.requests[0]->id, 2u);
  EXPECT_EQ(CorrId(*step.requests[0]), 2u);
}

TEST(SequenceIdleExpiryReleasesTheSlot) {
  ModelConfig config = SeqConfig(2);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 8, kSequenceStart, 0).IsOk());
  FormedBatch step = source.Next(0, 0, false);
  Finish(&source, step, 0, 1 * kMs);
  EXPECT_EQ(source.NextDeadline(), 1 * kMs + 1000 * kMs);
  std::vector<Rejected> rejected;
  source.ApplyTimeouts(500 * kMs, &rejected);
  EXPECT_EQ(source.ActiveSequences(), 1u);
  source.ApplyTimeouts(1001 * kMs, &rejected);
  EXPECT_TRUE(rejected.empty());
  EXPECT_EQ(source.ActiveSequences(), 0u);
  EXPECT_EQ(source.NextDeadline(), 0u);
  EXPECT_CONTAINS(Add(&source, 2, 8, 0, 1002 * kMs).Message(), "must specify the START flag");
}

TEST(SequenceCancellingARequestCancelsItsSequence) {
  ModelConfig config = SeqConfig(2);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 8, kSequenceStart).IsOk());
  EXPECT_TRUE(Add(&source, 2, 8, 0).IsOk());
  const Status cancelled(StatusCode::kCancelled, "cancelled");
  std::vector<Rejected> out = source.Remove(2, cancelled);
  EXPECT_EQ(out.size(), 2u);  // both queued requests of the sequence
  EXPECT_TRUE(out[0].reason == FailureReason::kCanceled);
  EXPECT_EQ(source.Size(), 0u);
  EXPECT_EQ(source.ActiveSequences(), 0u);
  EXPECT_TRUE(source.Remove(99, cancelled).empty());
}

TEST(SequenceOldestBatchesOneRequestPerSequenceOldestFirst) {
  ModelConfig config = SeqConfig(2, 1, SequenceStrategy::kOldest);  // 4 candidates, batches of 2
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 30, kSequenceStart, 3).IsOk());
  EXPECT_TRUE(Add(&source, 2, 10, kSequenceStart, 1).IsOk());
  EXPECT_TRUE(Add(&source, 3, 10, 0, 2).IsOk());  // a second request of sequence 10
  EXPECT_TRUE(Add(&source, 4, 20, kSequenceStart, 4).IsOk());
  FormedBatch first = source.Next(0, 10, false);
  EXPECT_EQ(first.requests.size(), 2u);
  EXPECT_EQ(first.requests[0]->id, 2u);  // sequence 10's head (enqueued at 1)
  EXPECT_EQ(first.requests[1]->id, 1u);  // sequence 30 (3); not request 3: one per sequence
  EXPECT_TRUE(!first.requests[0]->is_null && !first.requests[1]->is_null);
  Finish(&source, first, 0);
  FormedBatch second = source.Next(0, 10, false);
  EXPECT_EQ(second.requests.size(), 2u);
  EXPECT_EQ(second.requests[0]->id, 3u);
  EXPECT_EQ(second.requests[1]->id, 4u);
}

TEST(SequenceSlotsSpreadAcrossInstances) {
  ModelConfig config = SeqConfig(2, 2);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 1, kSequenceStart).IsOk());
  EXPECT_TRUE(Add(&source, 2, 2, kSequenceStart).IsOk());
  EXPECT_EQ(source.Next(0, 0, false).requests.size(), 1u);
  FormedBatch other = source.Next(1, 0, false);
  EXPECT_EQ(other.requests.size(), 1u);
  EXPECT_EQ(other.requests[0]->id, 2u);
}

TEST(SequenceIterativeWithAClientIdRunsWhatItQueuedBeforeItEnds) {
  // A client's own id, START without END, and a second request queued while the first
  // executes: the first ending must not end the sequence under the second (which would then be
  // in no slot: never dispatched, never cancellable, missed at shutdown).
  ModelConfig config = SeqConfig(2);
  config.sequence.iterative = true;
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 7, kSequenceStart).IsOk());
  FormedBatch first = source.Next(0, 0, false);
  EXPECT_EQ(first.requests.size(), 1u);
  EXPECT_TRUE(Add(&source, 2, 7, 0).IsOk());
  Finish(&source, first, 1, 0, {Release::kEnded});
  EXPECT_EQ(source.ActiveSequences(), 1u);
  FormedBatch second = source.Next(0, 0, false);
  EXPECT_EQ(second.requests.size(), 1u);
  if (second.requests.size() != 1u) return;
  EXPECT_EQ(second.requests[0]->id, 2u);
  EXPECT_EQ(State(*second.requests[0]), (std::vector<float>{1, 1}));  // the state carried on
  Finish(&source, second, 2, 0, {Release::kEnded});
  EXPECT_EQ(source.ActiveSequences(), 0u);  // nothing left queued: now it ends
  EXPECT_EQ(source.Size(), 0u);
}

TEST(SequenceTakeAllReturnsTheBackloggedAndTheQueuedBehindAnExecutingOne) {
  ModelConfig config = SeqConfig(1);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 1, kSequenceStart).IsOk());
  EXPECT_TRUE(Add(&source, 2, 2, kSequenceStart).IsOk());  // backlogged
  FormedBatch first = source.Next(0, 0, false);
  EXPECT_TRUE(Add(&source, 3, 1, 0).IsOk());  // behind the executing one
  EXPECT_EQ(source.TakeAll().size(), 2u);
  EXPECT_EQ(source.Size(), 0u);
}

TEST(SequenceIterativeRequestsAreRescheduledUntilTheyEnd) {
  ModelConfig config = SeqConfig(2);
  config.sequence.iterative = true;
  config.sequence.controls.pop_back();  // no CORRID control: ids are the sequencer's
  SequenceSource source(config);
  auto request = SeqReq(1, 0, 0);  // no id: the iterative sequencer gives one, and START
  EXPECT_TRUE(source.Enqueue(request, 0).IsOk());
  FormedBatch step = source.Next(0, 0, false);
  EXPECT_EQ(Int(*step.requests[0], "START"), 1);
  Finish(&source, step, 1, 0, {Release::kReschedule});
  EXPECT_TRUE(step.requests[0] == nullptr);  // taken back
  EXPECT_EQ(source.Size(), 1u);
  step = source.Next(0, 0, false);
  EXPECT_EQ(step.requests[0]->id, 1u);
  EXPECT_EQ(Int(*step.requests[0], "START"), 0);
  EXPECT_EQ(State(*step.requests[0]), (std::vector<float>{1, 1}));
  Finish(&source, step, 2, 0, {Release::kEnded});
  EXPECT_EQ(source.ActiveSequences(), 0u);  // the request ended, and its sequence with it
}

TEST(SequenceBacklogTimeoutDropsTheWaitingSequence) {
  ModelConfig config = SeqConfig(1);
  SequenceSource source(config);
  EXPECT_TRUE(Add(&source, 1, 1, kSequenceStart).IsOk());
  auto waiting = SeqReq(2, 2, kSequenceStart);
  waiting->timeout_us = 1000;
  EXPECT_TRUE(source.Enqueue(waiting, 0).IsOk());
  EXPECT_EQ(source.NextDeadline(), 1 * kMs);
  std::vector<Rejected> rejected;
  source.ApplyTimeouts(2 * kMs, &rejected);
  EXPECT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].status.Message(), std::string("timeout of the corresponding sequence has been expired"));
  EXPECT_EQ(source.BacklogSequences(), 0u);
}
