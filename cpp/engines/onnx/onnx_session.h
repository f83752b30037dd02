// One ONNX Runtime session (one per model instance). Created off the event loop (the load
// worker); Run is called only from its instance's thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model_config.h"
#include "core/request.h"
#include "engines/batch_inputs.h"
#include "engines/onnx/ort_owned.h"
#include "engines/onnx/ort_runtime.h"
#include "memory/buffer_pool.h"
#include "memory/device_stream.h"
#include "memory/host_registration.h"

namespace infernode {

struct OnnxTensorInfo {
  std::string name;
  DataType dtype = DataType::kInvalid;  // the model's
  Shape dims;                           // -1 for symbolic or unknown dims
  // The config's datatype when it serves this FP16 / BF16 tensor as FP32 (converted on the way
  // in and out, see ServeConfigTypes); kInvalid when it serves the model's own type.
  DataType served = DataType::kInvalid;
};

// The TensorRT accelerator's parameters (Triton's onnxruntime backend names them precision_mode,
// max_workspace_size_bytes, trt_engine_cache_enable and trt_engine_cache_path).
struct TensorRtOptions {
  bool fp16 = false;
  size_t max_workspace_bytes = size_t{1} << 30;
  std::string engine_cache_path;  // empty: no engine cache
};

// Time a batch spent moving its inputs in and its outputs out, which Triton counts as compute
// input and compute output: on a GPU the copies and casts, measured with CUDA events on the
// instance's stream; on the CPU the host casts (zero without any).
struct DeviceCopyTimes {
  uint64_t to_device_ns = 0;
  uint64_t to_host_ns = 0;
};

// One request's rows of an output, to be written into the client's CUDA shared memory on the
// device (core/request.h, DeviceOutputTarget): rows [row_begin, row_begin + rows) of the batch's
// output `name` (all of it for a model that does not batch), to `dst`, when they fit `capacity`
// bytes and the output was computed into a device buffer. `written` says whether they were.
struct DeviceOutputWrite {
  std::string name;
  size_t request = 0;  // the request's index in its batch
  int64_t row_begin = 0;
  int64_t rows = 0;
  void* dst = nullptr;
  uint64_t capacity = 0;
  // Every request of the batch wants this output on the device, and nothing else reads it (not
  // a sequence state): when all its writes are made, its copy to the host is skipped, and the
  // output's host block is left unwritten (its requests are answered from the device).
  bool only_on_device = false;
  bool written = false;
};

struct OnnxSessionOptions {
  int intra_op_threads = 0;  // 0 = ONNX Runtime's default
  int inter_op_threads = 0;
  bool use_cuda = false;
  int device_id = 0;
  bool use_tensorrt = false;
  TensorRtOptions tensorrt;
  // ONNX Runtime session config entries ("session.intra_op.allow_spinning" = "0", ...), from
  // the model's parameters whose keys start with "session.".
  std::vector<std::pair<std::string, std::string>> config_entries;
  // Nice increment of the instance thread and of ONNX Runtime's pool threads (0 = unchanged):
  // see core/thread_priority.h.
  int compute_thread_nice = 0;
};

class OnnxSession {
 public:
  static Status Create(std::shared_ptr<OrtRuntime> runtime, const std::string& path, const OnnxSessionOptions& options,
                       std::unique_ptr<OnnxSession>* out);
  OnnxSession(const OnnxSession&) = delete;
  OnnxSession& operator=(const OnnxSession&) = delete;

  const std::vector<OnnxTensorInfo>& Inputs() const { return inputs_; }
  const std::vector<OnnxTensorInfo>& Outputs() const { return outputs_; }
  // Serves FP32 for each FP16 / BF16 tensor the config declares TYPE_FP32 (inputs converted to
  // the model's type before the run, outputs back to FP32 after it: on the host on the CPU, by
  // kernels on the instance's stream on a GPU). Other mismatches are left alone: the loader
  // (ts/repository/autocomplete.ts) refuses them. Called once, before the instance's thread
  // starts; returns the cast tensors' names ("input 'x'", ...) for the load log.
  std::vector<std::string> ServeConfigTypes(const ModelConfig& config);

  // The GPU the session runs on; -1 on the CPU.
  int DeviceId() const;

  // Which execution provider the session got ("CPU", "CUDA", "TensorRT").
  const std::string& Provider() const { return provider_; }

  // The nice increment its instance thread takes (OnnxSessionOptions::compute_thread_nice).
  int ComputeThreadNice() const { return compute_thread_nice_; }

  // Runs the batch and fetches the outputs named in `wanted` (every model output when empty);
  // with `batching`, each output covers the whole batch (rows first). Outputs whose shape is
  // known up front are written straight into pooled buffers: with `batching`, a variable first
  // dimension is the batch's `rows`; without it, every variable dimension is left to ONNX Runtime.
  // On a GPU session the inputs are copied to device buffers and the known-shape outputs come
  // back from device buffers, all on the instance's stream; `device_times` (optional) gets how
  // long those copies took on the device, or the host casts on the CPU (ServeConfigTypes).
  // `device_writes` (optional, GPU sessions): rows also written device to device into clients'
  // CUDA shared memory, on the stream, before it is waited for.
  Status Run(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
             const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
             DeviceCopyTimes* device_times = nullptr, std::vector<DeviceOutputWrite>* device_writes = nullptr);

 private:
  OnnxSession() = default;
  Status ReadMetadata();
  Status RunOnce(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                 const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
                 DeviceCopyTimes* device_times, std::vector<DeviceOutputWrite>* device_writes);
  // What one batch holds until Run returns: host blocks of a model's type (CPU casts) and device
  // buffers (GPU sessions, freed in stream order after the stream is synchronised).
  struct RunScratch {
    std::vector<PooledBuffer> host;
    std::vector<DeviceBuffer> device;
    // Callers' buffers registered for this batch's copies; each waits for the stream when released.
    std::vector<std::unique_ptr<HostRegistration>> registered;
    uint64_t cast_in_ns = 0;  // CPU sessions: time spent casting inputs, then outputs
    uint64_t cast_out_ns = 0;
  };
  // One fetched output whose shape is known up front: `host` is what is served (the config's
  // type); the model writes its own type into `model_host` (CPU cast) or `device` (GPU), and a
  // GPU cast goes through `device_served` before the copy to `host`.
  struct OutputSlot {
    std::shared_ptr<PooledBuffer> host;
    PooledBuffer model_host;
    DeviceBuffer device;
    DeviceBuffer device_served;
    DataType model_type = DataType::kInvalid;
    DataType served_type = DataType::kInvalid;
    size_t count = 0;
  };

  const OnnxTensorInfo* FindInput(const std::string& name) const;
  Status MakeInputValue(const GatheredInput& input, OrtPtr<OrtValue>* value) const;
  // GPU sessions: the input's bytes on the device (see InputOnDevice), bound as the input.
  Status MakeDeviceInputValue(const GatheredInput& input, RunScratch* scratch, OrtPtr<OrtValue>* value) const;
  // GPU sessions: where the input's bytes are on the device. The client's own CUDA shared
  // memory when one row there is all of it (no copy at all); otherwise a device buffer (kept in
  // `scratch` until the batch is done) that the host rows are copied into and the CUDA shared
  // memory rows gathered into, by one kernel launch, all on the instance's stream. A large host
  // input left in place is copied from the caller's buffer, registered for the copy.
  Status InputOnDevice(const GatheredInput& input, RunScratch* scratch, const void** data) const;
  // An FP32 input of an FP16 / BF16 model tensor, converted into a block of the model's type:
  // on the host (CPU) or after the copy to the device, by a kernel on the stream (GPU).
  Status MakeCastInputValue(const GatheredInput& input, const OnnxTensorInfo& info, BufferPool* pool,
                            RunScratch* scratch, OrtPtr<OrtValue>* value) const;
  // An output whose shape is known up front, bound to a buffer of ours (see OutputSlot); others
  // are left to ONNX Runtime (`value` stays null).
  Status BindOutput(const OnnxTensorInfo& info, int64_t rows, bool batching, BufferPool* pool, OutputSlot* slot,
                    OrtPtr<OrtValue>* value) const;
  // CPU sessions: the model-typed outputs converted into their served blocks.
  Status CastOutputsOnHost(std::vector<OutputSlot>* slots, RunScratch* scratch) const;
  // An output ONNX Runtime allocated (host memory) whose config type differs: converted into a
  // pooled block, which becomes its owner.
  Status CastAllocatedOutput(DataType served, BufferPool* pool, RunScratch* scratch, OutputTensor* out) const;
  // The run's outputs as served: our blocks where bound, ONNX Runtime's values (cast where served
  // so) otherwise.
  Status CollectOutputs(const std::vector<const OnnxTensorInfo*>& fetched, const std::vector<OutputSlot>& slots,
                        std::vector<OrtPtr<OrtValue>>* values, BufferPool* pool, RunScratch* scratch,
                        std::vector<OutputTensor>* outputs) const;
  // GPU sessions: the known-shape outputs cast (where served so) and copied into their pooled
  // host blocks, and the rows of `writes` copied into clients' memory (one span-copy launch),
  // then one wait on the instance's stream (so the device buffers may be freed). An output every
  // request receives on the device (DeviceOutputWrite::only_on_device) is not copied to the host.
  Status CopyOutputsToHost(const std::vector<const OnnxTensorInfo*>& fetched, const std::vector<OutputSlot>& slots,
                           int64_t rows, bool batching, std::vector<DeviceOutputWrite>* writes, DeviceCopyTimes* times);
  // The spans that write `writes` from the slots' served device buffers; marks those written.
  // `host_skipped[i]`: slot i is only wanted on the device, and every write of it fits.
  void OutputWriteSpans(const std::vector<const OnnxTensorInfo*>& fetched, const std::vector<OutputSlot>& slots,
                        int64_t rows, bool batching, std::vector<DeviceOutputWrite>* writes,
                        std::vector<DeviceSpan>* spans, std::vector<bool>* host_skipped) const;
  Status ReadOutputValue(OrtValue* value, const std::string& name, std::shared_ptr<const void> owner,
                         OutputTensor* out) const;

  std::shared_ptr<OrtRuntime> runtime_;
  // Shared with the outputs ONNX Runtime allocated: they come from the session's allocator, so
  // the session lives until the last of them is released (JS may hold them after an unload).
  std::shared_ptr<OrtSession> session_;
  OrtPtr<OrtMemoryInfo> cpu_memory_{nullptr};  // given its API table in Create
  std::vector<OnnxTensorInfo> inputs_;
  std::vector<OnnxTensorInfo> outputs_;
  std::string provider_ = "CPU";
  // GPU sessions: the instance's stream (ONNX Runtime computes on it) and CUDA memory info for
  // the device buffers bound as inputs and outputs. Null on the CPU.
  // Shared with session_'s deleter: ONNX Runtime may still touch the stream while it releases
  // the session, which can outlive this object (see session_).
  std::shared_ptr<DeviceStream> stream_;
  OrtPtr<OrtMemoryInfo> device_memory_{nullptr};
  int compute_thread_nice_ = 0;
};

}  // namespace infernode
