// preserve_ordering: responses of dispatched batches are released in dispatch order, whatever
// order the instances finish in. Not thread-safe: the scheduler guards it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/request.h"

namespace infernode {

class ResponseOrderer {
 public:
  explicit ResponseOrderer(bool preserve) : preserve_(preserve) {}

  // Records batch `sequence` as done and returns every response that may be released now.
  std::vector<InferenceResponse> Complete(uint64_t sequence, std::vector<InferenceResponse> responses);

  // Every held response, in order (shutdown).
  std::vector<InferenceResponse> TakeAll();

 private:
  bool preserve_;
  uint64_t next_ = 0;  // the sequence that must complete before anything later is released
  std::map<uint64_t, std::vector<InferenceResponse>> held_;
};

}  // namespace infernode
