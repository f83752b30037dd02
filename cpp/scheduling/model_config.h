// The normalized model config as native code sees it (the C++ twin of NormalizedModelConfig in
// ts/config/normalize.ts). Built once on the main thread by cpp/napi/config_from_js.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "core/shape.h"

namespace infernode {

enum class TimeoutAction : int32_t { kReject = 0, kDelay = 1 };

struct QueuePolicy {
  TimeoutAction timeout_action = TimeoutAction::kReject;
  uint64_t default_timeout_us = 0;
  bool allow_timeout_override = false;
  uint32_t max_queue_size = 0;  // 0 = only the hard limit applies
};

struct TensorConfig {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape dims;  // without the batch axis
  bool optional = false;
  bool allow_ragged_batch = false;
  bool has_reshape = false;  // the engine sees `reshape` instead of `dims` (after the batch axis)
  Shape reshape;
};

struct DynamicBatchingConfig {
  bool enabled = false;                     // false = default scheduler (one request per batch)
  std::vector<int64_t> preferred_batch_sizes;  // sorted ascending; never empty when enabled
  uint64_t max_queue_delay_us = 0;
  bool preserve_ordering = false;
  uint32_t priority_levels = 0;             // 0 = one level
  uint32_t default_priority_level = 0;
  QueuePolicy default_queue_policy;
  std::map<uint32_t, QueuePolicy> priority_queue_policy;  // 1-based level → policy
};

struct ModelConfig {
  std::string name;
  int64_t version = 1;
  int64_t max_batch_size = 0;  // 0 = not batching
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
  DynamicBatchingConfig batching;
  uint32_t instance_count = 1;
  uint32_t max_queue_size_hard_limit = 65536;
};

}  // namespace infernode
