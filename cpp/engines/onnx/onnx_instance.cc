#include "engines/onnx/onnx_instance.h"

#include <algorithm>

#include "core/bytes_tensor.h"
#include "core/clock.h"
#include "core/thread_priority.h"
#include "engines/batch_inputs.h"

namespace infernode {

namespace {

// The rows each request asked to receive in CUDA shared memory on `device_id` (the instance's
// GPU; none on the CPU): the session writes them there device to device. An output every request
// of the batch wants there, and that is no sequence state (fed back from the host), is wanted
// only on the device.
std::vector<DeviceOutputWrite> DeviceOutputWrites(const Batch& batch, const ModelConfig& config, int device_id) {
  std::vector<DeviceOutputWrite> writes;
  if (device_id < 0) return writes;
  int64_t row = 0;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    const InferenceRequest& request = *batch.requests[i];
    for (const DeviceOutputTarget& target : request.device_outputs) {
      if (target.region->DeviceId() != device_id) continue;
      void* dst = static_cast<uint8_t*>(target.region->DevicePointer()) + target.offset;
      writes.push_back(DeviceOutputWrite{target.name, i, row, request.batch_size, dst, target.byte_size, false, false});
    }
    row += request.batch_size;
  }
  for (DeviceOutputWrite& write : writes) {
    std::vector<bool> wants(batch.requests.size(), false);  // by request: a name may be listed twice
    for (const DeviceOutputWrite& other : writes) {
      if (other.name == write.name) wants[other.request] = true;
    }
    const auto wanting = static_cast<size_t>(std::count(wants.begin(), wants.end(), true));
    bool state = false;
    for (const StateConfig& s : config.sequence.states) state = state || s.output_name == write.name;
    write.only_on_device = wanting == batch.requests.size() && !state;
  }
  return writes;
}

// Marks the outputs written into their requests' CUDA shared memory.
void MarkDeviceWrites(const std::vector<DeviceOutputWrite>& writes,
                      std::vector<std::vector<OutputTensor>>* per_request) {
  for (const DeviceOutputWrite& write : writes) {
    if (!write.written || write.request >= per_request->size()) continue;
    for (OutputTensor& out : (*per_request)[write.request]) {
      if (out.name == write.name) out.in_device_memory = true;
    }
  }
}

}  // namespace

OnnxInstance::OnnxInstance(std::unique_ptr<OnnxSession> session, const ModelConfig* config, BufferPool* pool,
                           BatchCompleter* completer, CompletionSink* sink)
    : session_(std::move(session)), config_(config), pool_(pool), completer_(completer), sink_(sink) {
  for (const TensorConfig& output : config_->outputs) served_outputs_.push_back(output.name);
  // Implicit state: the session also computes each state's next value (the scheduler takes it).
  for (const StateConfig& state : config_->sequence.states) {
    if (std::find(served_outputs_.begin(), served_outputs_.end(), state.output_name) == served_outputs_.end()) {
      served_outputs_.push_back(state.output_name);
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

OnnxInstance::~OnnxInstance() { Shutdown(); }

void OnnxInstance::Execute(const Batch& batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_ = &batch;
  }
  cv_.notify_one();
}

void OnnxInstance::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void OnnxInstance::Loop() {
  LowerThreadPriority(session_->ComputeThreadNice());
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || next_ != nullptr; });
    if (next_ == nullptr) return;  // stopping with nothing to do
    const Batch* batch = next_;
    next_ = nullptr;
    lock.unlock();
    RunBatch(*batch);  // a batch handed over before Shutdown is always finished
    lock.lock();
  }
}

void OnnxInstance::RunBatch(const Batch& batch) {
  const uint32_t instance = batch.instance;
  const uint64_t token = batch.token;
  std::vector<GatheredInput> inputs;
  std::vector<OutputTensor> outputs;
  std::vector<std::vector<OutputTensor>> per_request;
  BatchTimings timings;
  timings.measured = true;
  Status status = GatherBatchInputs(*config_, batch, pool_, session_->DeviceId(), &inputs);
  const uint64_t gathered = SteadyNowNs();
  timings.input_ns = gathered > batch.dispatch_ns ? gathered - batch.dispatch_ns : 0;
  DeviceCopyTimes copies;
  std::vector<DeviceOutputWrite> writes = DeviceOutputWrites(batch, *config_, session_->DeviceId());
  if (status.IsOk()) {
    status = session_->Run(inputs, batch.rows, config_->max_batch_size > 0, served_outputs_, pool_, &outputs, &copies,
                           &writes);
  }
  if (status.IsOk()) UndoOutputReshapes(*config_, &outputs);
  const uint64_t ran = SteadyNowNs();
  // On a GPU, Triton counts the copies to and from the device as compute input and output.
  const uint64_t copied = copies.to_device_ns + copies.to_host_ns;
  timings.infer_ns = ran - gathered > copied ? ran - gathered - copied : 0;
  timings.input_ns += copies.to_device_ns;
  if (status.IsOk()) status = SplitOutputs(batch, config_->max_batch_size > 0, outputs, &per_request);
  if (status.IsOk()) MarkDeviceWrites(writes, &per_request);
  timings.output_ns = SteadyNowNs() - ran + copies.to_host_ns;
  if (!status.IsOk()) { status = Status(status.Code(), "model '" + config_->name + "': " + status.Message()); }
  // `batch` must not be touched after this call: the scheduler frees it.
  std::vector<InferenceResponse> released =
      completer_->CompleteBatchWithOutputs(instance, token, {status}, std::move(per_request), timings);
  if (!released.empty()) sink_->Deliver(std::move(released));
}

void UndoOutputReshapes(const ModelConfig& config, std::vector<OutputTensor>* outputs) {
  const bool batching = config.max_batch_size > 0;
  for (OutputTensor& out : *outputs) {
    for (const TensorConfig& spec : config.outputs) {
      if (spec.name != out.name || !spec.has_reshape) continue;
      if (!batching) {
        out.shape = MapReshape(out.shape, spec.reshape, spec.dims);
      } else if (!out.shape.empty()) {
        const Shape tail(out.shape.begin() + 1, out.shape.end());
        Shape mapped = MapReshape(tail, spec.reshape, spec.dims);
        mapped.insert(mapped.begin(), out.shape[0]);
        out.shape = std::move(mapped);
      }
    }
  }
}

Status SplitOutputs(const Batch& batch, bool batching, const std::vector<OutputTensor>& outputs,
                    std::vector<std::vector<OutputTensor>>* per_request) {
  per_request->assign(batch.requests.size(), {});
  for (const OutputTensor& out : outputs) {
    if (!batching || batch.requests.size() == 1) {
      for (auto& list : *per_request) list.push_back(out);
      continue;
    }
    if (out.shape.empty() || out.shape[0] != batch.rows) {
      return Internal("output '" + out.name + "' has shape " + ShapeToString(out.shape) + ", expected the batch's " +
                      std::to_string(batch.rows) + " rows first");
    }
    int64_t count = 0;
    RETURN_IF_ERROR(ElementCount(out.shape, &count));
    const int64_t per_row = batch.rows == 0 ? 0 : count / batch.rows;
    std::vector<uint64_t> offsets;
    if (out.dtype == DataType::kBytes) {
      const Status walked = SerializedBytesOffsets(out.data, out.byte_size, &offsets);
      if (!walked.IsOk()) return Internal("output '" + out.name + "': " + walked.Message());
      if (offsets.size() != static_cast<size_t>(count) + 1) {
        return Internal("output '" + out.name + "' holds " + std::to_string(offsets.size() - 1) +
                        " strings, expected " + std::to_string(count));
      }
    }
    const uint64_t elem = DataTypeByteSize(out.dtype);
    int64_t row = 0;
    for (size_t i = 0; i < batch.requests.size(); ++i) {
      const int64_t rows = batch.requests[i]->batch_size;
      OutputTensor piece = out;
      piece.shape[0] = rows;
      const uint64_t first = static_cast<uint64_t>(row * per_row);
      const uint64_t last = static_cast<uint64_t>((row + rows) * per_row);
      const uint64_t begin = out.dtype == DataType::kBytes ? offsets.at(first) : first * elem;
      const uint64_t end = out.dtype == DataType::kBytes ? offsets.at(last) : last * elem;
      piece.data = out.data + begin;
      piece.byte_size = end - begin;
      (*per_request)[i].push_back(std::move(piece));
      row += rows;
    }
  }
  return Status::Success();
}

}  // namespace infernode
