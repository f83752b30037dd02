// One ONNX Runtime session (one per model instance). Created off the event loop (the load
// worker); Run is called only from its instance's thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/request.h"
#include "engines/batch_inputs.h"
#include "engines/onnx/ort_owned.h"
#include "engines/onnx/ort_runtime.h"
#include "memory/buffer_pool.h"
#include "memory/device_stream.h"

namespace infernode {

struct OnnxTensorInfo {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape dims;  // -1 for symbolic or unknown dims
};

// The TensorRT accelerator's parameters (Triton's onnxruntime backend names them precision_mode,
// max_workspace_size_bytes, trt_engine_cache_enable and trt_engine_cache_path).
struct TensorRtOptions {
  bool fp16 = false;
  size_t max_workspace_bytes = size_t{1} << 30;
  std::string engine_cache_path;  // empty: no engine cache
};

// Time a GPU batch spent copying, measured with CUDA events on the instance's stream.
struct DeviceCopyTimes {
  uint64_t to_device_ns = 0;
  uint64_t to_host_ns = 0;
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
  // long those copies took on the device (zero on the CPU).
  Status Run(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
             const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
             DeviceCopyTimes* device_times = nullptr);

 private:
  OnnxSession() = default;
  Status ReadMetadata();
  Status RunOnce(const std::vector<GatheredInput>& inputs, int64_t rows, bool batching,
                 const std::vector<std::string>& wanted, BufferPool* pool, std::vector<OutputTensor>* outputs,
                 DeviceCopyTimes* device_times);
  Status MakeInputValue(const GatheredInput& input, OrtPtr<OrtValue>* value) const;
  // GPU sessions: the input copied into a device buffer (kept in `held` until the batch is done).
  Status MakeDeviceInputValue(const GatheredInput& input, std::vector<DeviceBuffer>* held,
                              OrtPtr<OrtValue>* value) const;
  // GPU sessions: the known-shape outputs copied into their pooled host blocks, then one wait on
  // the instance's stream (which also means the run's device buffers may be freed).
  Status CopyOutputsToHost(const std::vector<DeviceBuffer>& device_outputs,
                           const std::vector<std::shared_ptr<PooledBuffer>>& pooled, DeviceCopyTimes* times);
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
