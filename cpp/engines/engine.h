// The engine side of scheduling: a model instance executes one batch at a time.
//
// Ownership: the scheduler owns every dispatched Batch until the instance reports it done
// through BatchCompleter::CompleteBatch; an instance only reads the batch it was given.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/request.h"

namespace infernode {

struct Batch {
  uint32_t instance = 0;
  uint64_t sequence = 0;    // dispatch order, for preserve_ordering
  uint64_t token = 0;       // unique per dispatch; a stale completion names an old token
  int64_t rows = 0;         // sum of the requests' batch sizes
  uint64_t dispatch_ns = 0;
  std::vector<std::unique_ptr<InferenceRequest>> requests;
};

class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  // Starts executing; must not block for the batch's duration. The result comes back through
  // the scheduler's CompleteBatch, on any thread.
  virtual void Execute(const Batch& batch) = 0;
};

}  // namespace infernode
