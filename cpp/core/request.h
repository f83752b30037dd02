// Request and response objects of the native core.
//
// Ownership: an InputTensor's bytes are a view. Either `owner` holds them (a copy made when the
// request was queued), or the JS pending-request table (ts/model.ts) holds the TypedArrays they
// belong to until this request's completion has been delivered back to the main thread, which
// happens only after every native reader is done; infernode owns those arrays (the frontends'
// received buffers), so no caller can transfer or free them meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "core/device_bytes.h"
#include "core/shape.h"
#include "core/status.h"

namespace infernode {

struct InputTensor {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;                    // full shape, batch axis included when the model batches
  const uint8_t* data = nullptr;  // null when data_in_js
  uint64_t byte_size = 0;
  std::shared_ptr<const void> owner;  // keeps `data` alive when it is a copy; may be null
  bool implicit = false;              // added by the sequence batcher (control or state input)
  // A JS engine's input: its data stays in JS, which checked its datatype and counted its
  // elements; native code has its shape and byte size only (napi/native_model.cc, Enqueue).
  bool data_in_js = false;
  // An input in a client's CUDA shared-memory region: its `byte_size` bytes start at
  // `device_offset` of `device`, and `data` is null. The request holds the region open until it
  // is answered (napi/native_model.cc, Enqueue). Never BYTES.
  std::shared_ptr<const DeviceBytes> device;
  uint64_t device_offset = 0;
};

// A sequence's correlation id: an unsigned integer or a string; 0 / "" = not in a sequence.
struct CorrelationId {
  bool is_string = false;
  uint64_t number = 0;
  std::string text;

  bool InSequence() const { return is_string ? !text.empty() : number != 0; }
  std::string ToString() const { return is_string ? text : std::to_string(number); }
  // A map key that keeps 7 and "7" apart.
  std::string Key() const { return is_string ? "s" + text : "u" + std::to_string(number); }
};

// An output the client asked to receive in its CUDA shared-memory region: a GPU instance on the
// region's device writes the request's rows there from its own device buffer when they fit
// `byte_size`, and marks the output in_device_memory; otherwise the frontend copies the host
// output in, or refuses it, as before. The request holds the region until it is answered.
struct DeviceOutputTarget {
  std::string name;
  std::shared_ptr<const DeviceBytes> region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// Request flags (Triton's TRITONSERVER_REQUEST_FLAG_SEQUENCE_*).
constexpr uint32_t kSequenceStart = 1;
constexpr uint32_t kSequenceEnd = 2;

struct InferenceRequest {
  uint64_t id = 0;
  std::vector<InputTensor> inputs;
  uint64_t priority = 0;                           // as the client sent it; 0 = the model's default level
  uint64_t timeout_us = 0;                         // the client's timeout; 0 = none
  int32_t instance = -1;                           // warm-up: the instance that must run it; -1 = any
  CorrelationId correlation_id;                    // sequence batcher models only
  std::vector<DeviceOutputTarget> device_outputs;  // usually empty
  uint32_t flags = 0;                              // kSequenceStart | kSequenceEnd
  // A row the direct sequence batcher adds to keep other rows in their slots (READY = 0): it
  // has no client, gets no response and is not counted.
  bool is_null = false;

  // Filled in by validation and the queue.
  int64_t batch_size = 1;  // rows this request adds to a batch (1 when not batching)
  std::string batch_key;   // requests batch together only when their keys are equal
  uint64_t level = 0;      // 0-based priority level it was queued on
  uint64_t enqueue_ns = 0;
  uint64_t deadline_ns = 0;  // queue timeout; 0 = none
};

// An output produced by a native engine. `data` lives as long as `owner` (a pooled batch
// buffer, an ONNX Runtime value, ...); several requests' outputs may share one owner, each a
// row range of the batch's output.
struct OutputTensor {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;
  std::shared_ptr<const void> owner;
  // Null for a JS engine's input: JS holds its data and counted its elements; native code has
  // only its byte size (napi/native_model.cc, Enqueue).
  const uint8_t* data = nullptr;
  uint64_t byte_size = 0;  // BYTES: serialized (4-byte length before each element)
  // Also written into the request's DeviceOutputTarget of the same name, on the device.
  bool in_device_memory = false;
};

// What a successful request counted in its model's statistics (ModelScheduler::RecordRequest):
// its wait in the queue and its batch's phases. Its caller may fold them into statistics of its
// own, as Triton's ensemble sums its step requests' compute times into the ensemble's (the step
// request's secondary stats aggregator), and the metrics' per-request latency summaries observe
// them. All zero for a failed request.
struct RequestTimings {
  uint64_t request_ns = 0;  // enqueue to completion: what the success duration counted
  uint64_t queue_ns = 0;
  uint64_t compute_input_ns = 0;
  uint64_t compute_infer_ns = 0;
  uint64_t compute_output_ns = 0;
};

struct InferenceResponse {
  uint64_t request_id = 0;
  Status status;
  std::vector<OutputTensor> outputs;  // empty for the JS engine: its outputs stay in JS
  RequestTimings timings;             // set when the request succeeded
};

}  // namespace infernode
