#include "scheduling/response_orderer.h"

#include <iterator>
#include <utility>

namespace infernode {

std::vector<InferenceResponse> ResponseOrderer::Complete(uint64_t sequence, std::vector<InferenceResponse> responses) {
  if (!preserve_) return responses;
  held_[sequence] = std::move(responses);
  std::vector<InferenceResponse> released;
  for (auto it = held_.begin(); it != held_.end() && it->first == next_; it = held_.erase(it), ++next_) {
    std::move(it->second.begin(), it->second.end(), std::back_inserter(released));
  }
  return released;
}

std::vector<InferenceResponse> ResponseOrderer::TakeAll() {
  std::vector<InferenceResponse> released;
  for (auto& entry : held_) { std::move(entry.second.begin(), entry.second.end(), std::back_inserter(released)); }
  held_.clear();
  return released;
}

}  // namespace infernode
