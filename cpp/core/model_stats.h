// Per-model counters in Triton's statistics shape (the statistics extension and the
// nv_inference_* metrics read them). Guarded by the scheduler's mutex.
#pragma once

#include <array>
#include <cstdint>
#include <map>

namespace infernode {

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
  // The same durations in whole microseconds, each rounded down before it is added: Triton's
  // nv_inference_*_duration_us counters add duration_ns / 1000 per request (infer_stats.cc),
  // which is less than the total's ns / 1000 by the sum of the dropped remainders.
  uint64_t us = 0;
  void Add(uint64_t duration_ns) {
    ++count;
    ns += duration_ns;
    us += duration_ns / 1000;
  }
};

// Why a request failed, as Triton's nv_inference_request_failure labels it.
enum class FailureReason : int {
  kRejected = 0,  // queue full, queue timeout
  kCanceled = 1,  // cancelled by the client
  kBackend = 2,   // the engine (callable, ONNX Runtime) failed it
  kOther = 3,     // invalid request, shutdown
};
constexpr size_t kFailureReasonCount = 4;

// How long the phases of one execution took, as the instance measured them. An instance that
// does not measure leaves `measured` false: the whole dispatch-to-completion time is infer.
struct BatchTimings {
  bool measured = false;
  // The JS engine measures only its callable and output collection: input is then the rest of
  // dispatch-to-completion (the hop to the main thread, building the request objects).
  bool input_is_remainder = false;
  uint64_t input_ns = 0;   // dispatch until the engine starts (gathering inputs, thread hops)
  uint64_t infer_ns = 0;   // the engine's run
  uint64_t output_ns = 0;  // collecting and splitting outputs
};

// Triton's InferBatchStatistics: per batch size (rows), counted per execution.
struct BatchStat {
  DurationStat compute_input;
  DurationStat compute_infer;
  DurationStat compute_output;
};

struct ModelStats {
  DurationStat success;  // whole request, enqueue to completion
  DurationStat fail;
  DurationStat queue;          // enqueue to dispatch, successful requests
  DurationStat compute_input;  // per successful request: its batch's phases
  DurationStat compute_infer;
  DurationStat compute_output;
  uint64_t inference_count = 0;                          // rows inferred
  uint64_t execution_count = 0;                          // batches executed
  uint64_t last_inference_ms = 0;                        // wall clock, ms since the epoch
  std::array<uint64_t, kFailureReasonCount> failures{};  // by FailureReason
  std::map<int64_t, BatchStat> batch_stats;              // by batch size (rows)
  uint64_t pending = 0;                                  // queued or executing now
  uint64_t queued = 0;                                   // queued now (filled in by Stats())

  void Failed(FailureReason reason, uint64_t duration_ns) {
    fail.Add(duration_ns);
    ++failures[static_cast<size_t>(reason)];
  }
  uint64_t Failures(FailureReason reason) const { return failures[static_cast<size_t>(reason)]; }
};

}  // namespace infernode
