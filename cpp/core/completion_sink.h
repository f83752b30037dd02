// Where finished requests go when no caller is waiting synchronously: the N-API layer
// implements it with one ThreadSafeFunction that drains many responses per wake.
#pragma once

#include <vector>

#include "core/request.h"

namespace infernode {

class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  // Called from scheduler or instance threads; must not block for long.
  virtual void Deliver(std::vector<InferenceResponse> responses) = 0;
};

}  // namespace infernode
