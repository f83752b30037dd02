// Where a model's queued requests wait and how batches are formed from them: the dynamic
// batcher's priority queue (QueueSource) or the sequence batcher's slot table (SequenceSource).
// ModelScheduler owns one and drives it; both are pure bookkeeping with the time passed in, so
// every rule is unit-testable with a fake clock.
//
// Threads: not thread-safe; the scheduler calls it with its mutex held.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/model_stats.h"
#include "core/request.h"
#include "engines/engine.h"

namespace infernode {

// A request that leaves the source without executing (timeout, cancellation): how it fails.
struct Rejected {
  std::unique_ptr<InferenceRequest> request;
  Status status;
  FailureReason reason = FailureReason::kRejected;
};

// What the source would send to an instance now.
struct FormedBatch {
  std::vector<std::unique_ptr<InferenceRequest>> requests;  // empty: nothing to send now
  uint64_t wait_ns = 0;  // when empty: look again after this long (0 = on the next event)
};

// How a request left an execution (the JS engine reports it per request; native engines
// always end their requests).
enum class Release : uint8_t {
  kEnded = 0,       // its final response is known
  kOpen = 1,        // decoupled: still sending responses (FinishOpen ends it)
  kReschedule = 2,  // iterative sequence: hand it back for another step
};

class RequestSource {
 public:
  virtual ~RequestSource() = default;

  // Queues a validated request. On failure the request stays with the caller.
  virtual Status Enqueue(std::unique_ptr<InferenceRequest>& request, uint64_t now_ns) = 0;

  // Requests waiting (not executing).
  virtual size_t Size() const = 0;

  // The earliest time the source must be looked at without an event (a queue timeout, an idle
  // sequence's expiry); 0 when none.
  virtual uint64_t NextDeadline() const = 0;

  // Acts on what is due at `now_ns`: requests that leave are appended to `rejected`.
  virtual void ApplyTimeouts(uint64_t now_ns, std::vector<Rejected>* rejected) = 0;

  // The batch for idle `instance` if one should go now.
  virtual FormedBatch Next(uint32_t instance, uint64_t now_ns, bool draining) = 0;

  // Cancels a queued request (and what must go with it); empty when it is not queued.
  virtual std::vector<Rejected> Remove(uint64_t request_id, const Status& cancelled) = 0;

  // Everything queued, for shutdown.
  virtual std::vector<std::unique_ptr<InferenceRequest>> TakeAll() = 0;

  // An execution of a batch this source formed ended. `statuses` holds one status per request
  // or one for all (the source may fail a request); `outputs` (may be null) each request's
  // outputs, of which the source may take some (implicit state). Requests whose release is
  // kReschedule are taken back (their pointers in `batch` become null).
  virtual void Executed(Batch& batch, std::vector<Status>* statuses, std::vector<std::vector<OutputTensor>>* outputs,
                        const std::vector<Release>& release, uint64_t now_ns) {}

  // Whether requests are ordered per dispatch (preserve_ordering).
  virtual bool PreservesOrdering() const = 0;
};

}  // namespace infernode
