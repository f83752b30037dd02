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

// Requests one model may hold queued when its config sets no max_queue_size (Triton's 0 =
// unlimited), unless TritonConfig.maxQueueSizeHardLimit says otherwise. The TypeScript side's
// default is DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT in ts/config/defaults.ts;
// test/unit/shared-constants.test.ts checks they agree.
constexpr uint32_t kDefaultMaxQueueSizeHardLimit = 65536;

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
  bool enabled = false;                        // false = default scheduler (one request per batch)
  std::vector<int64_t> preferred_batch_sizes;  // sorted ascending; never empty when enabled
  uint64_t max_queue_delay_us = 0;             // at most kLongestWaitUs (core/clock.h)
  bool preserve_ordering = false;
  // Levels are uint64 as in Triton's ModelDynamicBatching (up to 2^64 - 1 of them): the queue
  // creates a level when a request first uses it, never all of them.
  uint64_t priority_levels = 0;  // 0 = one level
  uint64_t default_priority_level = 0;
  QueuePolicy default_queue_policy;
  std::map<uint64_t, QueuePolicy> priority_queue_policy;  // 1-based level → policy
};

// A control input the sequence batcher synthesizes per batch row.
enum class ControlKind : int32_t { kStart = 0, kReady = 1, kEnd = 2, kCorrId = 3 };

struct ControlConfig {
  ControlKind kind = ControlKind::kStart;
  std::string name;
  DataType dtype = DataType::kInvalid;  // START/END/READY: INT32, FP32 or BOOL; CORRID: its data_type
  double false_value = 0;               // START/END/READY
  double true_value = 1;
};

// One implicit state tensor: fed as `input_name`, replaced by `output_name` after each step.
struct StateConfig {
  std::string input_name;
  std::string output_name;
  DataType dtype = DataType::kInvalid;
  Shape dims;                         // without the batch axis; -1 = takes the output's shape
  Shape initial_dims;                 // the state at START: these dims ...
  std::vector<uint8_t> initial_data;  // ... and bytes (zeros or initial_state's data_file)
};

enum class SequenceStrategy : int32_t { kDirect = 0, kOldest = 1 };

struct SequenceBatchingConfig {
  bool enabled = false;
  SequenceStrategy strategy = SequenceStrategy::kDirect;
  uint64_t max_sequence_idle_us = 1000000;  // both at most kLongestWaitUs (core/clock.h)
  uint64_t max_queue_delay_us = 0;
  float minimum_slot_utilization = 0;          // direct
  uint32_t max_candidate_sequences = 1;        // oldest: slots per instance
  std::vector<int64_t> preferred_batch_sizes;  // oldest
  bool preserve_ordering = false;              // oldest
  std::vector<ControlConfig> controls;
  std::vector<StateConfig> states;
  bool iterative = false;
};

// One resource of an instance group's `rate_limiter` (ModelRateLimiter.Resource).
struct RateLimitResource {
  std::string name;
  uint64_t count = 0;
  bool global = false;
};

// What one instance needs from the rate limiter: its group's rate_limiter, and the device it
// runs on (0 for CPU instances, as Triton).
struct InstanceRateLimits {
  std::vector<RateLimitResource> resources;
  uint32_t priority = 0;  // 0 counts as 1
  int32_t device = 0;
};

struct ModelConfig {
  std::string name;
  int64_t version = 1;
  int64_t max_batch_size = 0;  // 0 = not batching
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
  DynamicBatchingConfig batching;
  SequenceBatchingConfig sequence;
  // The inputs the scheduler adds to requests (control inputs, state inputs): engines gather
  // them like the declared ones; clients may not send them.
  std::vector<TensorConfig> implicit_inputs;
  uint32_t instance_count = 1;
  // Per instance (in instance order; may be shorter: the rest need nothing). Used only when
  // the Triton has a rate limiter.
  std::vector<InstanceRateLimits> rate_limits;
  uint32_t max_queue_size_hard_limit = kDefaultMaxQueueSizeHardLimit;
};

}  // namespace infernode
