#include "engines/onnx/onnx_session.h"

#include <cstdint>
#include <cstring>
#include <new>
#include <system_error>
#include <thread>

#include "core/thread_priority.h"
#include "engines/onnx/ort_types.h"

namespace infernode {

namespace {

// A name ONNX Runtime allocated for us: copied out, and freed through its allocator whatever happens.
std::string CopyName(const OrtApi* api, OrtAllocator* allocator, char* name) {
  auto free_name = [api, allocator](char* p) {
    if (OrtStatus* status = api->AllocatorFree(allocator, p)) api->ReleaseStatus(status);
  };
  std::unique_ptr<char, decltype(free_name)> owned(name, free_name);
  return std::string(owned.get());
}

// Providers are appended in priority order; a failure here (no library, no device) is
// UNAVAILABLE so the caller can fall back (TensorRT → CUDA → CPU) and say so. The option structs
// of the first API version are used on purpose: ONNX Runtime builds without CUDA compiled in
// (the CPU package, with the CUDA provider library dropped beside it) refuse the V2 calls, while
// these go through the provider bridge that loads libonnxruntime_providers_cuda.so.
// Both providers compute on the instance's own stream (`stream`).
Status AppendCuda(const OrtRuntime& runtime, OrtSessionOptions* options, int device_id, void* stream) {
  OrtCUDAProviderOptions cuda;
  cuda.device_id = device_id;
  cuda.has_user_compute_stream = 1;
  cuda.user_compute_stream = stream;
  const Status status = runtime.Check(runtime.Api()->SessionOptionsAppendExecutionProvider_CUDA(options, &cuda),
                                      "CUDA execution provider");
  return status.IsOk() ? status : Unavailable(status.Message());
}

Status AppendTensorRt(const OrtRuntime& runtime, OrtSessionOptions* options, const OnnxSessionOptions& wanted,
                      void* stream) {
  OrtTensorRTProviderOptions trt{};
  trt.device_id = wanted.device_id;
  trt.has_user_compute_stream = 1;
  trt.user_compute_stream = stream;
  trt.trt_max_partition_iterations = 1000;  // ONNX Runtime's defaults
  trt.trt_min_subgraph_size = 1;
  trt.trt_max_workspace_size = wanted.tensorrt.max_workspace_bytes;
  trt.trt_fp16_enable = wanted.tensorrt.fp16 ? 1 : 0;
  trt.trt_engine_cache_enable = wanted.tensorrt.engine_cache_path.empty() ? 0 : 1;
  trt.trt_engine_cache_path = wanted.tensorrt.engine_cache_path.c_str();
  const Status status = runtime.Check(runtime.Api()->SessionOptionsAppendExecutionProvider_TensorRT(options, &trt),
                                      "TensorRT execution provider");
  return status.IsOk() ? status : Unavailable(status.Message());
}

// ONNX Runtime's pool threads, created by us so they run at the compute threads' priority.
// The creation option is the nice increment itself, carried in the pointer (nothing to keep
// alive). The handle is the std::thread, joined and deleted when ORT's pool shuts down.
OrtCustomThreadHandle CreateComputeThread(void* nice_increment, OrtThreadWorkerFn work, void* param) {
  const int increment = static_cast<int>(reinterpret_cast<intptr_t>(nice_increment));
  try {
    auto* thread = new std::thread([increment, work, param] {
      LowerThreadPriority(increment);
      work(param);
    });
    return reinterpret_cast<OrtCustomThreadHandle>(thread);
  } catch (const std::exception&) {
    return nullptr;  // ORT reports the failure to create its thread pool
  }
}

void JoinComputeThread(OrtCustomThreadHandle handle) {
  auto* thread = reinterpret_cast<std::thread*>(const_cast<OrtCustomHandleType*>(handle));
  thread->join();
  delete thread;
}

Status SetComputeThreads(const OrtRuntime& runtime, OrtSessionOptions* options, int nice_increment) {
  const OrtApi* api = runtime.Api();
  void* carried = reinterpret_cast<void*>(static_cast<intptr_t>(nice_increment));
  RETURN_IF_ERROR(
      runtime.Check(api->SessionOptionsSetCustomCreateThreadFn(options, CreateComputeThread), "compute threads"));
  RETURN_IF_ERROR(
      runtime.Check(api->SessionOptionsSetCustomThreadCreationOptions(options, carried), "compute threads"));
  return runtime.Check(api->SessionOptionsSetCustomJoinThreadFn(options, JoinComputeThread), "compute threads");
}

}  // namespace

Status OnnxSession::Create(std::shared_ptr<OrtRuntime> runtime, const std::string& path,
                           const OnnxSessionOptions& options, std::unique_ptr<OnnxSession>* out) {
  const OrtApi* api = runtime->Api();
  std::unique_ptr<OnnxSession> session(new OnnxSession());
  session->runtime_ = runtime;
  OrtPtr<OrtSessionOptions> session_options(api);
  RETURN_IF_ERROR(runtime->Check(api->CreateSessionOptions(OutParam(session_options)), "creating session options"));
  OrtSessionOptions* raw_options = session_options.get();
  if (options.intra_op_threads > 0) {
    RETURN_IF_ERROR(
        runtime->Check(api->SetIntraOpNumThreads(raw_options, options.intra_op_threads), "intra_op_thread_count"));
  }
  if (options.inter_op_threads > 0) {
    RETURN_IF_ERROR(
        runtime->Check(api->SetInterOpNumThreads(raw_options, options.inter_op_threads), "inter_op_thread_count"));
  }
  if (options.compute_thread_nice > 0)
    RETURN_IF_ERROR(SetComputeThreads(*runtime, raw_options, options.compute_thread_nice));
  session->compute_thread_nice_ = options.compute_thread_nice;
  for (const auto& [key, value] : options.config_entries) {
    RETURN_IF_ERROR(runtime->Check(api->AddSessionConfigEntry(raw_options, key.c_str(), value.c_str()),
                                   "session config entry '" + key + "'"));
  }
  if (options.use_tensorrt || options.use_cuda) {
    // The instance's stream: without CUDA or the device, the provider is unavailable (fallback).
    std::unique_ptr<DeviceStream> created_stream;
    RETURN_IF_ERROR(DeviceStream::Create(options.device_id, &created_stream));
    session->stream_ = std::move(created_stream);
    void* stream = session->stream_->Handle();
    if (options.use_tensorrt) RETURN_IF_ERROR(AppendTensorRt(*runtime, raw_options, options, stream));
    RETURN_IF_ERROR(AppendCuda(*runtime, raw_options, options.device_id, stream));
    session->device_memory_ = OrtPtr<OrtMemoryInfo>(api);
    RETURN_IF_ERROR(runtime->Check(api->CreateMemoryInfo("Cuda", OrtDeviceAllocator, options.device_id,
                                                         OrtMemTypeDefault, OutParam(session->device_memory_)),
                                   "creating CUDA memory info"));
  }
  session->provider_ = options.use_tensorrt ? "TensorRT" : options.use_cuda ? "CUDA" : "CPU";
  OrtSession* created = nullptr;
  RETURN_IF_ERROR(runtime->Check(api->CreateSession(runtime->Env(), path.c_str(), raw_options, &created),
                                 "loading ONNX model '" + path + "'"));
  // Shared (not an OrtPtr): ONNX Runtime's own outputs keep the session alive (see session_).
  session->session_ = std::shared_ptr<OrtSession>(
      created, [runtime, stream = session->stream_](OrtSession* s) { runtime->Api()->ReleaseSession(s); });
  session->cpu_memory_ = OrtPtr<OrtMemoryInfo>(api);
  RETURN_IF_ERROR(
      runtime->Check(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, OutParam(session->cpu_memory_)),
                     "creating CPU memory info"));
  RETURN_IF_ERROR(session->ReadMetadata());
  *out = std::move(session);
  return Status::Success();
}

int OnnxSession::DeviceId() const { return stream_ != nullptr ? stream_->DeviceId() : -1; }

Status OnnxSession::ReadMetadata() {
  const OrtApi* api = runtime_->Api();
  OrtAllocator* allocator = nullptr;
  RETURN_IF_ERROR(runtime_->Check(api->GetAllocatorWithDefaultOptions(&allocator), "default allocator"));
  for (const bool is_input : {true, false}) {
    size_t count = 0;
    RETURN_IF_ERROR(runtime_->Check(is_input ? api->SessionGetInputCount(session_.get(), &count)
                                             : api->SessionGetOutputCount(session_.get(), &count),
                                    "reading model metadata"));
    for (size_t i = 0; i < count; ++i) {
      OnnxTensorInfo info;
      char* name = nullptr;
      RETURN_IF_ERROR(runtime_->Check(is_input ? api->SessionGetInputName(session_.get(), i, allocator, &name)
                                               : api->SessionGetOutputName(session_.get(), i, allocator, &name),
                                      "reading model metadata"));
      info.name = CopyName(api, allocator, name);
      OrtPtr<OrtTypeInfo> type_info(api);
      RETURN_IF_ERROR(runtime_->Check(is_input ? api->SessionGetInputTypeInfo(session_.get(), i, OutParam(type_info))
                                               : api->SessionGetOutputTypeInfo(session_.get(), i, OutParam(type_info)),
                                      "reading model metadata"));
      const OrtTensorTypeAndShapeInfo* tensor = nullptr;  // borrowed from type_info
      RETURN_IF_ERROR(
          runtime_->Check(api->CastTypeInfoToTensorInfo(type_info.get(), &tensor), "reading model metadata"));
      if (tensor == nullptr)
        return Status(StatusCode::kUnsupported, "model tensor '" + info.name + "' is not a tensor");
      ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
      size_t rank = 0;
      RETURN_IF_ERROR(runtime_->Check(api->GetTensorElementType(tensor, &elem), "reading model metadata"));
      RETURN_IF_ERROR(runtime_->Check(api->GetDimensionsCount(tensor, &rank), "reading model metadata"));
      info.dims.resize(rank);
      RETURN_IF_ERROR(runtime_->Check(api->GetDimensions(tensor, info.dims.data(), rank), "reading model metadata"));
      for (int64_t& d : info.dims) d = d < 0 ? -1 : d;
      info.dtype = DataTypeFromOnnx(elem);
      if (info.dtype == DataType::kInvalid) {
        return Status(StatusCode::kUnsupported, "model tensor '" + info.name + "' has ONNX element type " +
                                                    std::to_string(elem) + ", which has no Triton datatype");
      }
      (is_input ? inputs_ : outputs_).push_back(std::move(info));
    }
  }
  return Status::Success();
}

}  // namespace infernode
