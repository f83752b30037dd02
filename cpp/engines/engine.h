// The engine side of scheduling: a model instance executes one batch at a time.
//
// Ownership: the scheduler owns every dispatched Batch until the instance reports it done
// through BatchCompleter::CompleteBatch; an instance only reads the batch it was given.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model_stats.h"
#include "core/request.h"

namespace infernode {

struct Batch {
  uint32_t instance = 0;
  uint64_t sequence = 0;  // dispatch order, for preserve_ordering
  uint64_t token = 0;     // unique per dispatch; a stale completion names an old token
  int64_t rows = 0;       // sum of the requests' batch sizes
  uint64_t dispatch_ns = 0;
  std::vector<std::unique_ptr<InferenceRequest>> requests;
};

class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  // Starts executing; must not block for the batch's duration. The result comes back through
  // the scheduler's CompleteBatch, on any thread.
  virtual void Execute(const Batch& batch) = 0;

  // True when the instance runs on the thread that reports events to the scheduler (the JS
  // main thread): the scheduler may then hand it a batch directly from Enqueue/CompleteBatch
  // instead of waking the batcher thread, saving two thread hops per request.
  virtual bool RunsOnCallerThread() const { return false; }

  // Waits for the batch in progress (if any) and stops the instance's own threads. Called by
  // the scheduler's Stop() before it fails what is still in flight, so nothing reads a batch
  // that is being torn down.
  virtual void Shutdown() {}
};

// Where a native instance reports a finished batch: one status per request (or one for all),
// each request's outputs, and how long its phases took. Returns the responses releasable now.
class BatchCompleter {
 public:
  virtual ~BatchCompleter() = default;
  virtual std::vector<InferenceResponse> CompleteBatchWithOutputs(uint32_t instance, uint64_t token,
                                                                  std::vector<Status> statuses,
                                                                  std::vector<std::vector<OutputTensor>> outputs,
                                                                  const BatchTimings& timings) = 0;
};

// A batch dispatched on the caller's thread (see RunsOnCallerThread).
struct InlineDispatch {
  int instance = -1;  // -1: nothing was dispatched
  uint64_t token = 0;
  std::vector<uint64_t> request_ids;
};

}  // namespace infernode
