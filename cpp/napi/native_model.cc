#include "napi/native_model.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

#include "engines/onnx/onnx_instance.h"
#include "memory/host_allocator.h"
#include "napi/addon_data.h"
#include "napi/config_from_js.h"
#include "napi/errors.h"
#include "napi/js_instance.h"
#include "napi/onnx_loader.h"
#include "napi/rate_limiter_object.h"
#include "napi/shared_memory.h"

namespace infernode {

namespace {

// Batch buffers a model keeps cached for reuse (its pool frees anything beyond).
constexpr size_t kPoolCacheBytes = size_t{256} << 20;

// Outputs up to this size are copied into memory V8 owns rather than lent as external memory:
// an external buffer costs a heap-allocated owner and a finalizer (a weak reference every GC
// processes, then a native immediate that frees it), more than copying a few KiB; and the batch's
// pooled output memory goes back to its pool once the responses are delivered instead of when
// the last view of it is collected.
constexpr size_t kCopiedOutputBytes = 4096;

// Hands a native output to JS: above kCopiedOutputBytes without a copy, as an external
// ArrayBuffer whose finalizer drops the output's owner (a pooled buffer returns to its pool);
// smaller outputs, and every output where the runtime forbids external buffers, as a copy.
Napi::Value OutputDataToJs(Napi::Env env, const OutputTensor& out) {
  napi_value result = nullptr;
  if (out.byte_size > kCopiedOutputBytes) {
    auto* owner = new std::shared_ptr<const void>(out.owner);
    napi_status status = napi_create_external_arraybuffer(
        env, const_cast<uint8_t*>(out.data), out.byte_size,
        [](napi_env, void*, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }, owner, &result);
    if (status == napi_ok) return Napi::Value(env, result);
    delete owner;
  }
  Napi::ArrayBuffer copy = Napi::ArrayBuffer::New(env, out.byte_size);
  if (out.byte_size > 0) std::memcpy(copy.Data(), out.data, out.byte_size);
  return copy;
}

Napi::Object OutputsToJs(Napi::Env env, const std::vector<OutputTensor>& outputs) {
  Napi::Object result = Napi::Object::New(env);
  for (const OutputTensor& out : outputs) {
    Napi::Object tensor = Napi::Object::New(env);
    tensor.Set("dtype", DataTypeName(out.dtype));
    Napi::Array shape = Napi::Array::New(env, out.shape.size());
    for (size_t d = 0; d < out.shape.size(); ++d)
      shape.Set(static_cast<uint32_t>(d), static_cast<double>(out.shape[d]));
    tensor.Set("shape", shape);
    tensor.Set("data", OutputDataToJs(env, out));
    if (out.in_device_memory) tensor.Set("onDevice", true);  // rare: no property otherwise
    result.Set(out.name, tensor);
  }
  return result;
}

// The TypedArray kind that holds `dtype` as it is (BYTES arrive serialized in a Uint8Array).
// A view of another kind would be read as different bits, even when its byte size fits.
napi_typedarray_type ArrayTypeFor(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kBytes:
      return napi_uint8_array;
    case DataType::kInt8:
      return napi_int8_array;
    case DataType::kUint16:
    case DataType::kFp16:
    case DataType::kBf16:
      return napi_uint16_array;
    case DataType::kInt16:
      return napi_int16_array;
    case DataType::kUint32:
      return napi_uint32_array;
    case DataType::kInt32:
      return napi_int32_array;
    case DataType::kUint64:
      return napi_biguint64_array;
    case DataType::kInt64:
      return napi_bigint64_array;
    case DataType::kFp32:
      return napi_float32_array;
    case DataType::kFp64:
      return napi_float64_array;
    default:
      return static_cast<napi_typedarray_type>(-1);
  }
}

const char* ArrayTypeName(napi_typedarray_type type) {
  static constexpr const char* kNames[] = {"Int8Array",    "Uint8Array",    "Uint8ClampedArray", "Int16Array",
                                           "Uint16Array",  "Int32Array",    "Uint32Array",       "Float32Array",
                                           "Float64Array", "BigInt64Array", "BigUint64Array"};
  const auto index = static_cast<size_t>(type);
  return index < sizeof(kNames) / sizeof(kNames[0]) ? kNames[index] : "TypedArray";
}

// Points `in` at `data`: a TypedArray (or Buffer) of the datatype's own kind, read as a view
// (BoundModel keeps it alive, and owns it or a copy of it, until the request is handed back).
// A view of another kind would be read as different bits, even when its byte size fits.
void InputDataFromJs(Napi::Env env, napi_value data, InputTensor* in) {
  napi_typedarray_type type;
  size_t length = 0;
  void* bytes = nullptr;
  napi_value buffer;
  size_t offset = 0;
  if (napi_get_typedarray_info(env, data, &type, &length, &bytes, &buffer, &offset) != napi_ok) {
    ThrowStatus(env, InvalidArg("data of input '" + in->name + "' must be a TypedArray or Buffer"));
  }
  if (type != ArrayTypeFor(in->dtype)) {
    ThrowStatus(env, InvalidArg(std::string("data of input '") + in->name + "' is a " + ArrayTypeName(type) +
                                ", but its datatype " + DataTypeName(in->dtype) + " needs a " +
                                ArrayTypeName(ArrayTypeFor(in->dtype))));
  }
  // `bytes` already points at the view's first element; the byte length follows from the type.
  static constexpr size_t kElementSize[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8, 2};
  const size_t index = static_cast<size_t>(type);
  in->data = static_cast<const uint8_t*>(bytes);
  in->byte_size = length * (index < sizeof(kElementSize) / sizeof(kElementSize[0]) ? kElementSize[index] : 1);
}

// Reads one tensor from a flat list: name, dtype code, shape, data (completeBatch's states).
InputTensor InputFromJs(Napi::Env env, const Napi::Array& args, uint32_t at) {
  InputTensor in;
  in.name = args.Get(at).As<Napi::String>().Utf8Value();
  in.dtype = DataTypeFromCode(args.Get(at + 1).As<Napi::Number>().Int32Value());
  Napi::Array dims = args.Get(at + 2).As<Napi::Array>();
  const uint32_t rank = dims.Length();
  in.shape.resize(rank);
  for (uint32_t d = 0; d < rank; ++d) in.shape[d] = dims.Get(d).As<Napi::Number>().Int64Value();
  InputDataFromJs(env, args.Get(at + 3), &in);
  return in;
}

// Dispatches and completions of up to this many elements are written into a model's scratch
// ArrayBuffers, which JS views once (views()), and JS gets their count: no typed array, array
// or property is made per call, which was a large share of a request's cost. Safe because
// BoundModel reads each one synchronously, before anything that could write it again: #pump
// turns a dispatch's ids into entries before running the batch, #settle reads a completion
// without calling into native code. Larger ones get buffers of their own.
constexpr size_t kScratchElements = 1024;

// Per handed-back request, its RequestTimings as doubles: queue, compute input, infer, output,
// request (ns).
constexpr size_t kTimingFields = 5;

template <typename T>
T* ScratchData(const Napi::Reference<Napi::ArrayBuffer>& scratch) {
  return static_cast<T*>(scratch.Value().Data());
}

// A batch dispatched on the main thread, for JS to execute now: the count of its request ids,
// with [instance, token, id...] in the dispatch scratch; a Float64Array of them when they do
// not fit; undefined when no batch goes now.
Napi::Value DispatchToJs(Napi::Env env, const InlineDispatch& dispatch,
                         const Napi::Reference<Napi::ArrayBuffer>& scratch) {
  if (dispatch.instance < 0) return env.Undefined();
  const size_t n = dispatch.request_ids.size();
  const bool fits = n + 2 <= kScratchElements;
  Napi::Float64Array own;
  double* out = fits ? ScratchData<double>(scratch) : (own = Napi::Float64Array::New(env, n + 2)).Data();
  out[0] = dispatch.instance;
  out[1] = static_cast<double>(dispatch.token);
  for (size_t i = 0; i < n; ++i) out[i + 2] = static_cast<double>(dispatch.request_ids[i]);
  if (fits) return Napi::Number::New(env, static_cast<double>(n));
  return own;
}

}  // namespace

Napi::Function NativeModel::Define(Napi::Env env) {
  return DefineClass(
      env, "NativeModel",
      {InstanceMethod<&NativeModel::FinishRequest>("finishRequest"),
       InstanceMethod<&NativeModel::AddedInputs>("addedInputs"), InstanceMethod<&NativeModel::Cancel>("cancel"),
       InstanceMethod<&NativeModel::Views>("views"), InstanceMethod<&NativeModel::Drain>("drain"),
       InstanceMethod<&NativeModel::Stop>("stop"), InstanceMethod<&NativeModel::Stats>("stats")});
}

// The methods every request calls (enqueue, pump, completeBatch) are own functions of each
// model object whose callback data leads to the model, rather than prototype methods: a
// prototype method unwraps `this`, a private-symbol lookup through V8's runtime that cost
// about as much as the rest of the call (callgrind: ~800 instructions per call). The link
// outlives the model if JS keeps a function: a call then throws instead of reaching freed memory.
struct NativeModel::Link {
  NativeModel* model;
};

template <Napi::Value (NativeModel::*Method)(const Napi::CallbackInfo&)>
Napi::Value NativeModel::CallLinked(const Napi::CallbackInfo& info) {
  NativeModel* model = static_cast<std::shared_ptr<Link>*>(info.Data())->get()->model;
  if (model == nullptr) throw Napi::Error::New(info.Env(), "NativeModel: the model was collected");
  return (model->*Method)(info);
}

void NativeModel::AttachLinkedMethods(Napi::Env env, Napi::Object self) {
  link_ = std::make_shared<Link>(Link{this});
  auto attach = [&](const char* name, Napi::Function fn, std::shared_ptr<Link>* holder) {
    napi_status status = napi_add_finalizer(
        env, fn, holder, [](napi_env, void* data, void*) { delete static_cast<std::shared_ptr<Link>*>(data); }, nullptr,
        nullptr);
    if (status != napi_ok) {
      delete holder;
      throw Napi::Error::New(env, "NativeModel: cannot attach " + std::string(name));
    }
    self.DefineProperty(Napi::PropertyDescriptor::Value(name, fn, napi_default));
  };
  auto* holder = new std::shared_ptr<Link>(link_);
  attach("enqueue", Napi::Function::New<CallLinked<&NativeModel::Enqueue>>(env, "enqueue", holder), holder);
  holder = new std::shared_ptr<Link>(link_);
  attach("pump", Napi::Function::New<CallLinked<&NativeModel::Pump>>(env, "pump", holder), holder);
  holder = new std::shared_ptr<Link>(link_);
  attach("completeBatch", Napi::Function::New<CallLinked<&NativeModel::CompleteBatch>>(env, "completeBatch", holder),
         holder);
}

NativeModel::NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsObject() || !info[1].IsFunction() || !info[2].IsFunction()) {
    throw Napi::TypeError::New(env, "NativeModel(config, onExecute, onComplete)");
  }
  ModelConfig config = ModelConfigFromJs(info[0].As<Napi::Object>());
  on_execute_ = Napi::Persistent(info[1].As<Napi::Function>());
  on_complete_ = Napi::Persistent(info[2].As<Napi::Function>());
  dispatch_scratch_ = Napi::Persistent(Napi::ArrayBuffer::New(env, kScratchElements * sizeof(double)));
  ids_scratch_ = Napi::Persistent(Napi::ArrayBuffer::New(env, kScratchElements * sizeof(double)));
  codes_scratch_ = Napi::Persistent(Napi::ArrayBuffer::New(env, kScratchElements * sizeof(int32_t)));
  flags_scratch_ = Napi::Persistent(Napi::ArrayBuffer::New(env, sizeof(int32_t)));
  timings_scratch_ = Napi::Persistent(Napi::ArrayBuffer::New(env, kScratchElements * kTimingFields * sizeof(double)));
  channel_ = std::make_unique<JsChannel>(env, this);
  pool_ = std::make_unique<BufferPool>(MakeDefaultHostAllocator(), kPoolCacheBytes);
  // This thread pumps (NativeModel::Pump, once per turn of the event loop): JS instances get
  // their batches without a batcher-thread hop (docs/architecture.md).
  scheduler_ = std::make_unique<ModelScheduler>(std::move(config), channel_.get(), DispatchMode::kCallerPumps);
  // The Triton's rate limiter (--rate-limit execution_count), when it has one.
  if (info.Length() > 4 && info[4].IsObject()) {
    Status status = scheduler_->UseRateLimiter(RateLimiterObject::From(env, info[4]));
    if (!status.IsOk()) ThrowStatus(env, status);
  }
  scheduler_->Start(MakeInstances(env, info.Length() > 3 ? info[3] : env.Undefined()));
  AttachLinkedMethods(env, info.This().As<Napi::Object>());
  cleanup_hook_ = env.AddCleanupHook(&NativeModel::CleanupHook, this);
}

std::vector<std::unique_ptr<ModelInstance>> NativeModel::MakeInstances(Napi::Env env, const Napi::Value& onnx_handle) {
  const ModelConfig& config = scheduler_->Config();
  std::vector<std::unique_ptr<ModelInstance>> instances;
  if (onnx_handle.IsUndefined() || onnx_handle.IsNull()) {
    for (uint32_t i = 0; i < config.instance_count; ++i)
      instances.push_back(std::make_unique<JsInstance>(channel_.get()));
    return instances;
  }
  std::vector<std::unique_ptr<OnnxSession>> sessions = TakeOnnxSessions(onnx_handle);
  if (sessions.size() != config.instance_count) {
    throw Napi::TypeError::New(env, "model '" + config.name + "' needs " + std::to_string(config.instance_count) +
                                        " ONNX sessions, the handle holds " + std::to_string(sessions.size()) +
                                        " (a handle can be used once)");
  }
  for (auto& session : sessions) {
    // FP16 / BF16 tensors the config serves as FP32 (the loader checked the pairs and logs them).
    session->ServeConfigTypes(config);
    instances.push_back(
        std::make_unique<OnnxInstance>(std::move(session), &config, pool_.get(), scheduler_.get(), channel_.get()));
  }
  return instances;
}

NativeModel::~NativeModel() {
  if (link_) link_->model = nullptr;
  if (!stopped_) cleanup_hook_.Remove(Env());
  StopAll();
}

void NativeModel::CleanupHook(NativeModel* self) { self->StopAll(); }

void NativeModel::StopAll() {
  if (stopped_) return;
  stopped_ = true;
  scheduler_->Stop();  // joins the batcher thread; results are dropped with the environment
  channel_->Close();
}

namespace {

// A JS number as napi_get_value_int64 reads it: NaN is 0, out of range saturates.
int64_t SaturatedInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

int32_t SaturatedInt32(double v) {
  return static_cast<int32_t>(std::clamp<int64_t>(SaturatedInt64(v), INT32_MIN, INT32_MAX));
}

// A request's priority (uint64 in Triton): NaN and negatives are 0 (the default level), beyond
// 2^64 - 1 saturates (beyond any model's levels: the default level too).
uint64_t PriorityFromJs(double v) {
  if (!(v > 0)) return 0;
  return v >= 18446744073709551616.0 ? UINT64_MAX : static_cast<uint64_t>(v);
}

// Replaces the input's view of JS memory with a pooled copy the request owns: the caller may
// then transfer, free or change its array while native threads read the copy.
void CopyInput(Napi::Env env, BufferPool* pool, InputTensor* in) {
  auto copy = std::make_shared<PooledBuffer>();
  Status status = pool->Acquire(static_cast<size_t>(in->byte_size), copy.get());
  if (!status.IsOk()) ThrowStatus(env, Status(status.Code(), "copying input '" + in->name + "': " + status.Message()));
  if (in->byte_size > 0) std::memcpy(copy->Data(), in->data, static_cast<size_t>(in->byte_size));
  in->data = copy->Data();
  in->owner = std::move(copy);
}

// The region of a [memory: CudaSharedMemory, ...] argument; `what` names it in a TypeError.
std::shared_ptr<const CudaIpcRegion> RegionFromJs(Napi::Env env, Napi::Value memory, const char* what) {
  if (!memory.IsObject() ||
      !memory.As<Napi::Object>().InstanceOf(env.GetInstanceData<AddonData>()->cuda_shared_memory.Value())) {
    throw Napi::TypeError::New(env, std::string("enqueue: ") + what + " needs a CudaSharedMemory");
  }
  return CudaSharedMemory::Unwrap(memory.As<Napi::Object>())->Shared(env);
}

// INVALID_ARG unless [offset, offset + bytes) lies within the region.
void CheckRegionRange(Napi::Env env, const std::string& what, int64_t offset, int64_t bytes, uint64_t size) {
  if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset) > size || static_cast<uint64_t>(bytes) > size - offset) {
    ThrowStatus(env, InvalidArg(what + ": offset " + std::to_string(offset) + " + byte size " + std::to_string(bytes) +
                                " exceeds the CUDA shared memory region's " + std::to_string(size) + " bytes"));
  }
}

// [name, memory, offset, byteSize, ...]: outputs to be written into CUDA shared memory where a
// GPU instance can (core/request.h, DeviceOutputTarget); names the model does not serve are refused.
void DeviceOutputsFromJs(Napi::Env env, const Napi::Array& flat, const ModelConfig& config, InferenceRequest* request) {
  const uint32_t length = flat.Length();
  if (length % 4 != 0)
    throw Napi::TypeError::New(env, "enqueue: device outputs come as [name, memory, offset, byteSize]*");
  for (uint32_t at = 0; at < length; at += 4) {
    DeviceOutputTarget target;
    target.name = flat.Get(at).As<Napi::String>().Utf8Value();
    bool served = false;
    for (const TensorConfig& output : config.outputs) served = served || output.name == target.name;
    if (!served)
      throw Napi::TypeError::New(env, "enqueue: device output '" + target.name + "' is not an output of the model");
    target.region = RegionFromJs(env, flat.Get(at + 1), "a device output");
    const int64_t offset = SaturatedInt64(flat.Get(at + 2).As<Napi::Number>().DoubleValue());
    const int64_t bytes = SaturatedInt64(flat.Get(at + 3).As<Napi::Number>().DoubleValue());
    CheckRegionRange(env, "output '" + target.name + "'", offset, bytes, target.region->ByteSize());
    target.offset = static_cast<uint64_t>(offset);
    target.byte_size = static_cast<uint64_t>(bytes);
    request->device_outputs.push_back(std::move(target));
  }
}

// [memory: CudaSharedMemory, offset]: an input left in a client's CUDA shared-memory region
// (ts/server/device-tensor.ts). The request holds the region until it is answered; the bounds
// were checked by the frontend and are checked again here, where a mistake would read past it.
void DeviceInputFromJs(Napi::Env env, const Napi::Array& where, int64_t byte_size, InputTensor* in) {
  const Napi::Value offset = where.Get(uint32_t{1});
  if (!offset.IsNumber()) throw Napi::TypeError::New(env, "enqueue: a device input must be [CudaSharedMemory, offset]");
  if (in->dtype == DataType::kBytes) {
    ThrowStatus(env,
                InvalidArg("input '" + in->name + "': BYTES tensors are read from CUDA shared memory on the host"));
  }
  std::shared_ptr<const CudaIpcRegion> region = RegionFromJs(env, where.Get(uint32_t{0}), "a device input");
  const int64_t at = SaturatedInt64(offset.As<Napi::Number>().DoubleValue());
  CheckRegionRange(env, "input '" + in->name + "'", at, byte_size, region->ByteSize());
  in->device = std::move(region);
  in->device_offset = static_cast<uint64_t>(at);
  in->byte_size = static_cast<uint64_t>(byte_size);
}

// [correlationId: bigint | string, flags]: a sequence batcher request's id and START/END flags.
void SequenceFromJs(Napi::Env env, const Napi::Array& sequence, InferenceRequest* request) {
  Napi::Value id = sequence.Get(uint32_t{0});
  if (id.IsString()) {
    request->correlation_id.is_string = true;
    request->correlation_id.text = id.As<Napi::String>().Utf8Value();
  } else if (id.IsBigInt()) {
    bool lossless = true;
    request->correlation_id.number = id.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) ThrowStatus(env, InvalidArg("sequence id must be an unsigned 64-bit integer or a string"));
  }
  request->flags = sequence.Get(uint32_t{1}).As<Napi::Number>().Uint32Value();
}

}  // namespace

// enqueue(id, meta, sequence?, data...): `meta` (a Float64Array the caller reuses) holds
// [inputCount, priority, timeoutUs, copyInputs, instance, then per input: index into the
// config's inputs, dtype code, byte size, rank, dims...]; each input's data is an argument of
// its own. No JS array or string is read per request: an element read through Node-API costs a
// property lookup, and this is the in-process path's hottest call (docs/architecture.md).
// A JS engine's inputs are read by JS only, so BoundModel passes no data for them (undefined):
// such an input is data_in_js, its byte size meta's, and JS has checked its elements. An input
// in CUDA shared memory comes as [region, offset] (DeviceInputFromJs), its byte size meta's.
// After the inputs' data, an optional array lists outputs wanted in CUDA shared memory
// (DeviceOutputsFromJs).
Napi::Value NativeModel::Enqueue(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ModelConfig& config = scheduler_->Config();
  Napi::Float64Array meta = info[1].As<Napi::Float64Array>();
  const double* m = meta.Data();
  const size_t meta_length = meta.ElementLength();
  if (meta_length < 5 || !(m[0] >= 0 && m[0] + 3 <= static_cast<double>(info.Length()))) {
    throw Napi::TypeError::New(env, "enqueue(id, meta, sequence, ...data): meta too short or data missing");
  }
  auto request = std::make_unique<InferenceRequest>();
  request->id = static_cast<uint64_t>(info[0].As<Napi::Number>().Int64Value());
  const auto count = static_cast<size_t>(m[0]);
  // As Node-API's number conversions read them, saturated.
  request->priority = PriorityFromJs(m[1]);
  request->timeout_us = static_cast<uint64_t>(SaturatedInt64(m[2]));
  const bool copy_inputs = m[3] != 0;
  request->instance = SaturatedInt32(m[4]);
  request->inputs.resize(count);
  size_t at = 5;
  for (size_t i = 0; i < count; ++i) {
    if (at + 4 > meta_length) throw Napi::TypeError::New(env, "enqueue: meta ends inside an input");
    const int64_t index = SaturatedInt64(m[at]);
    const int64_t rank = SaturatedInt64(m[at + 3]);
    if (index < 0 || static_cast<size_t>(index) >= config.inputs.size() || rank < 0 ||
        static_cast<size_t>(rank) > meta_length - at - 4) {
      throw Napi::TypeError::New(env, "enqueue: bad input index or rank in meta");
    }
    InputTensor& in = request->inputs[i];
    in.name = config.inputs[static_cast<size_t>(index)].name;
    in.dtype = DataTypeFromCode(SaturatedInt32(m[at + 1]));
    const int64_t byte_size = SaturatedInt64(m[at + 2]);
    in.shape.resize(static_cast<size_t>(rank));
    for (size_t d = 0; d < in.shape.size(); ++d) in.shape[d] = SaturatedInt64(m[at + 4 + d]);
    at += 4 + in.shape.size();
    if (info[3 + i].IsUndefined()) {
      if (copy_inputs) throw Napi::TypeError::New(env, "enqueue: copyInputs needs every input's data");
      in.byte_size = byte_size > 0 ? static_cast<uint64_t>(byte_size) : 0;
      in.data_in_js = true;
      continue;
    }
    if (info[3 + i].IsArray()) {
      DeviceInputFromJs(env, info[3 + i].As<Napi::Array>(), byte_size, &in);  // held, not copied
      continue;
    }
    InputDataFromJs(env, info[3 + i], &in);
    if (copy_inputs) CopyInput(env, pool_.get(), &in);
  }
  if (info[2].IsArray()) SequenceFromJs(env, info[2].As<Napi::Array>(), request.get());
  if (info.Length() > 3 + count && info[3 + count].IsArray()) {
    DeviceOutputsFromJs(env, info[3 + count].As<Napi::Array>(), config, request.get());
  }
  if (stopped_) ThrowStatus(env, Unavailable("model '" + config.name + "' is stopped"));
  Status status = scheduler_->Enqueue(request);
  if (!status.IsOk()) ThrowStatus(env, status);
  if (outstanding_++ == 0) channel_->Ref(env);
  return env.Undefined();
}

namespace {

// inferNs and outputNs as the JS instance measured them, when given; compute_input is the rest
// of the batch's dispatch-to-completion time. Two numbers rather than an array: reading a
// typed array through Node-API costs several times more.
BatchTimings TimingsFromJs(const Napi::Value& infer_ns, const Napi::Value& output_ns) {
  BatchTimings timings;
  if (!infer_ns.IsNumber() || !output_ns.IsNumber()) return timings;
  auto ns = [](const Napi::Value& v) {
    const double d = v.As<Napi::Number>().DoubleValue();
    return d > 0 ? static_cast<uint64_t>(std::min(d, 1.8e19)) : uint64_t{0};
  };
  timings.measured = true;
  timings.input_is_remainder = true;
  timings.infer_ns = ns(infer_ns);
  timings.output_ns = ns(output_ns);
  return timings;
}

// The state outputs a JS callable returned, per request of the batch: each entry undefined or
// [name, dtypeCode, shape, data, ...] (enqueue's input form), copied (the scheduler keeps them).
std::vector<std::vector<OutputTensor>> StateOutputsFromJs(Napi::Env env, const Napi::Array& rows) {
  std::vector<std::vector<OutputTensor>> out(rows.Length());
  for (uint32_t r = 0; r < rows.Length(); ++r) {
    Napi::Value row = rows.Get(r);
    if (!row.IsArray()) continue;
    Napi::Array flat = row.As<Napi::Array>();
    for (uint32_t at = 0; at + 3 < flat.Length(); at += 4) {
      InputTensor in = InputFromJs(env, flat, at);
      auto bytes = std::make_shared<std::vector<uint8_t>>(in.data, in.data + in.byte_size);
      OutputTensor tensor;
      tensor.name = in.name;
      tensor.dtype = in.dtype;
      tensor.shape = in.shape;
      tensor.data = bytes->data();
      tensor.byte_size = bytes->size();
      tensor.owner = std::move(bytes);
      out[r].push_back(std::move(tensor));
    }
  }
  return out;
}

}  // namespace

Napi::Value NativeModel::CompleteBatch(const Napi::CallbackInfo& info) {
  // completeBatch(instance, token, code, message, inferNs?, outputNs?, release?, states?) for
  // the whole batch, or completeBatch(instance, token, codes: Int32Array, messages: string[],
  // ...) per request; `release` (Uint8Array): per request 0 ended, 1 open (decoupled, not ended
  // yet), 2 reschedule (iterative sequence); `states`: per request its state outputs (sequence
  // models).
  Napi::Env env = info.Env();
  const uint32_t instance = info[0].As<Napi::Number>().Uint32Value();
  const uint64_t token = static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value());
  std::vector<Status> statuses;
  if (info[2].IsTypedArray()) {
    Napi::Int32Array codes = info[2].As<Napi::Int32Array>();
    Napi::Array messages = info[3].As<Napi::Array>();
    for (size_t i = 0; i < codes.ElementLength(); ++i) {
      const auto code = static_cast<StatusCode>(codes[i]);
      statuses.emplace_back(code, code == StatusCode::kSuccess ? "" : messages.Get(i).ToString().Utf8Value());
    }
  } else {
    const auto code = static_cast<StatusCode>(info[2].As<Napi::Number>().Int32Value());
    statuses.emplace_back(code, code == StatusCode::kSuccess ? "" : info[3].ToString().Utf8Value());
  }
  std::vector<Release> release;
  if (info[6].IsTypedArray()) {
    Napi::Uint8Array open = info[6].As<Napi::Uint8Array>();
    for (size_t i = 0; i < open.ElementLength(); ++i)
      release.push_back(static_cast<Release>(std::min<uint8_t>(open[i], 2)));
  }
  std::vector<std::vector<OutputTensor>> states;
  if (info[7].IsArray()) states = StateOutputsFromJs(env, info[7].As<Napi::Array>());
  int32_t& pump_owed = ScratchData<int32_t>(flags_scratch_)[0];
  pump_owed = 0;
  if (stopped_) return env.Null();
  std::vector<InferenceResponse> released = scheduler_->CompleteBatch(
      instance, token, std::move(statuses), TimingsFromJs(info[4], info[5]), release, std::move(states));
  pump_owed = scheduler_->PumpPending() ? 1 : 0;
  return ResponsesToJs(env, std::move(released));
}

Napi::Value NativeModel::FinishRequest(const Napi::CallbackInfo& info) {
  // finishRequest(id, code, message): a request completeBatch left open ended.
  Napi::Env env = info.Env();
  const auto id = static_cast<uint64_t>(info[0].As<Napi::Number>().Int64Value());
  const auto code = static_cast<StatusCode>(info[1].As<Napi::Number>().Int32Value());
  if (stopped_) return env.Null();
  return ResponsesToJs(env, scheduler_->FinishOpen(
                                id, Status(code, code == StatusCode::kSuccess ? "" : info[2].ToString().Utf8Value())));
}

Napi::Value NativeModel::AddedInputs(const Napi::CallbackInfo& info) {
  // addedInputs(instance, token): per request of that batch, the inputs the scheduler added
  // (sequence models: controls and state; all inputs of a null row), as { name: {dtype, shape,
  // data} } over the scheduler's buffers (no copy: each view holds its buffer).
  Napi::Env env = info.Env();
  const uint32_t instance = info[0].As<Napi::Number>().Uint32Value();
  const uint64_t token = static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value());
  std::vector<std::vector<InputTensor>> added = scheduler_->AddedInputs(instance, token);
  Napi::Array out = Napi::Array::New(env, added.size());
  for (size_t i = 0; i < added.size(); ++i) {
    std::vector<OutputTensor> views;
    for (const InputTensor& in : added[i]) {
      OutputTensor view;
      view.name = in.name;
      view.dtype = in.dtype;
      view.shape = in.shape;
      view.owner = in.owner;
      view.data = in.data;
      view.byte_size = in.byte_size;
      views.push_back(std::move(view));
    }
    out.Set(static_cast<uint32_t>(i), OutputsToJs(env, views));
  }
  return out;
}

Napi::Value NativeModel::Cancel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (stopped_) return env.Null();
  return ResponsesToJs(env, scheduler_->Cancel(static_cast<uint64_t>(info[0].As<Napi::Number>().Int64Value())));
}

Napi::Value NativeModel::Pump(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (stopped_) return env.Undefined();
  InlineDispatch dispatch;
  scheduler_->Pump(&dispatch);
  return DispatchToJs(env, dispatch, dispatch_scratch_);
}

Napi::Value NativeModel::Drain(const Napi::CallbackInfo& info) {
  if (!stopped_) scheduler_->Drain();
  return info.Env().Undefined();
}

Napi::Value NativeModel::Stop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (stopped_) return env.Null();
  // Batches that finished while Stop() joined the instances delivered their responses to the
  // channel, whose wake cannot run before this call returns: hand them back here with the
  // failures, before Close() drops what the channel still holds.
  std::vector<InferenceResponse> settled = scheduler_->Stop();
  for (InferenceResponse& response : channel_->TakeResponses()) settled.push_back(std::move(response));
  Napi::Value result = ResponsesToJs(env, std::move(settled));
  stopped_ = true;
  cleanup_hook_.Remove(env);
  channel_->Close();
  // The callbacks are closures over the BoundModel that holds this object's wrapper: strong
  // references from here made a cycle through a GC root, so no stopped model (its pool, its
  // ONNX sessions, its queues) was ever collected. The closed channel calls neither again.
  on_execute_.Reset();
  on_complete_.Reset();
  return result;
}

void NativeModel::OnExecute(Napi::Env env, uint32_t instance, uint64_t token, const std::vector<uint64_t>& ids) {
  Napi::Float64Array js_ids = Napi::Float64Array::New(env, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) js_ids[i] = static_cast<double>(ids[i]);
  on_execute_.Call({Napi::Number::New(env, instance), Napi::Number::New(env, static_cast<double>(token)), js_ids});
}

void NativeModel::OnResponses(Napi::Env env, std::vector<InferenceResponse> responses) {
  Napi::Value batch = ResponsesToJs(env, std::move(responses));
  if (batch.IsObject()) on_complete_.Call({batch});
}

// Handed-back requests, for #settle: their count, with ids and codes in the completion
// scratch, when none failed or carries outputs (the usual answer of a JS model); otherwise
// [ids: Float64Array, codes: Int32Array, messages?, outputs?, timings?], an array rather than an
// object (no property names per completion), whose sparse messages and outputs arrays exist only
// when an entry has one (failures; outputs of native engines). Each successful request's timings
// (kTimingFields per request) go in the timings scratch, or in a Float64Array of their own (the
// fifth entry) when there are more requests than it holds.
Napi::Value NativeModel::ResponsesToJs(Napi::Env env, std::vector<InferenceResponse> responses) {
  if (responses.empty()) return env.Null();
  const size_t n = responses.size();
  outstanding_ -= static_cast<int64_t>(n);
  if (outstanding_ <= 0) {
    outstanding_ = 0;
    channel_->Unref(env);
  }
  bool plain = n <= kScratchElements;
  for (size_t i = 0; plain && i < n; ++i) plain = responses[i].status.IsOk() && responses[i].outputs.empty();
  Napi::Float64Array own_ids;
  Napi::Int32Array own_codes;
  if (!plain) {
    own_ids = Napi::Float64Array::New(env, n);
    own_codes = Napi::Int32Array::New(env, n);
  }
  double* ids = plain ? ScratchData<double>(ids_scratch_) : own_ids.Data();
  int32_t* codes = plain ? ScratchData<int32_t>(codes_scratch_) : own_codes.Data();
  Napi::Float64Array own_timings;
  if (n > kScratchElements) own_timings = Napi::Float64Array::New(env, n * kTimingFields);
  double* timings = n > kScratchElements ? own_timings.Data() : ScratchData<double>(timings_scratch_);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = static_cast<double>(responses[i].request_id);
    codes[i] = static_cast<int32_t>(responses[i].status.Code());
    const RequestTimings& t = responses[i].timings;
    double* at = timings + i * kTimingFields;
    at[0] = static_cast<double>(t.queue_ns);
    at[1] = static_cast<double>(t.compute_input_ns);
    at[2] = static_cast<double>(t.compute_infer_ns);
    at[3] = static_cast<double>(t.compute_output_ns);
    at[4] = static_cast<double>(t.request_ns);
  }
  if (plain) return Napi::Number::New(env, static_cast<double>(n));
  Napi::Value messages = env.Undefined();
  Napi::Value outputs = env.Undefined();
  for (size_t i = 0; i < n; ++i) {
    if (!responses[i].status.IsOk()) {
      if (messages.IsUndefined()) messages = Napi::Array::New(env);
      messages.As<Napi::Array>().Set(static_cast<uint32_t>(i), responses[i].status.Message());
    }
    if (!responses[i].outputs.empty()) {
      if (outputs.IsUndefined()) outputs = Napi::Array::New(env);
      outputs.As<Napi::Array>().Set(static_cast<uint32_t>(i), OutputsToJs(env, responses[i].outputs));
    }
  }
  Napi::Array out = Napi::Array::New(env, own_timings.IsEmpty() ? 4 : 5);
  out.Set(uint32_t{0}, own_ids);
  out.Set(uint32_t{1}, own_codes);
  out.Set(uint32_t{2}, messages);
  out.Set(uint32_t{3}, outputs);
  if (!own_timings.IsEmpty()) out.Set(uint32_t{4}, own_timings);
  return out;
}

Napi::Value NativeModel::Views(const Napi::CallbackInfo& info) {
  // views(): [dispatch: Float64Array, completedIds: Float64Array, completedCodes: Int32Array,
  // pumpOwed: Int32Array(1), completedTimings: Float64Array] over the scratch buffers pump()
  // and the completions write when they answer with a count (the timings also when they answer
  // with an array without its own), and the flag completeBatch sets when a pump() must follow it.
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env, 5);
  out.Set(uint32_t{0}, Napi::Float64Array::New(env, kScratchElements, dispatch_scratch_.Value(), 0));
  out.Set(uint32_t{1}, Napi::Float64Array::New(env, kScratchElements, ids_scratch_.Value(), 0));
  out.Set(uint32_t{2}, Napi::Int32Array::New(env, kScratchElements, codes_scratch_.Value(), 0));
  out.Set(uint32_t{3}, Napi::Int32Array::New(env, 1, flags_scratch_.Value(), 0));
  out.Set(uint32_t{4}, Napi::Float64Array::New(env, kScratchElements * kTimingFields, timings_scratch_.Value(), 0));
  return out;
}

}  // namespace infernode

namespace infernode {

namespace {

Napi::Object DurationToJs(Napi::Env env, const DurationStat& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("count", static_cast<double>(d.count));
  o.Set("ns", static_cast<double>(d.ns));
  o.Set("us", static_cast<double>(d.us));
  return o;
}

}  // namespace

Napi::Value NativeModel::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ModelStats s = scheduler_->Stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("success", DurationToJs(env, s.success));
  out.Set("fail", DurationToJs(env, s.fail));
  out.Set("queue", DurationToJs(env, s.queue));
  out.Set("computeInput", DurationToJs(env, s.compute_input));
  out.Set("computeInfer", DurationToJs(env, s.compute_infer));
  out.Set("computeOutput", DurationToJs(env, s.compute_output));
  out.Set("inferenceCount", static_cast<double>(s.inference_count));
  out.Set("executionCount", static_cast<double>(s.execution_count));
  out.Set("lastInferenceMs", static_cast<double>(s.last_inference_ms));
  Napi::Object failures = Napi::Object::New(env);
  failures.Set("REJECTED", static_cast<double>(s.Failures(FailureReason::kRejected)));
  failures.Set("CANCELED", static_cast<double>(s.Failures(FailureReason::kCanceled)));
  failures.Set("BACKEND", static_cast<double>(s.Failures(FailureReason::kBackend)));
  failures.Set("OTHER", static_cast<double>(s.Failures(FailureReason::kOther)));
  out.Set("failures", failures);
  out.Set("pending", static_cast<double>(s.pending));
  out.Set("queued", static_cast<double>(s.queued));
  Napi::Array batches = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& [rows, stat] : s.batch_stats) {
    Napi::Object b = Napi::Object::New(env);
    b.Set("batchSize", static_cast<double>(rows));
    b.Set("computeInput", DurationToJs(env, stat.compute_input));
    b.Set("computeInfer", DurationToJs(env, stat.compute_infer));
    b.Set("computeOutput", DurationToJs(env, stat.compute_output));
    batches.Set(i++, b);
  }
  out.Set("batchStats", batches);
  // The model's batch-buffer pool (pinned blocks on a GPU machine).
  const PoolStats pool = pool_->Stats();
  Napi::Object memory = Napi::Object::New(env);
  memory.Set("allocator", pool_->AllocatorName());
  memory.Set("hits", static_cast<double>(pool.hits));
  memory.Set("misses", static_cast<double>(pool.misses));
  memory.Set("cachedBytes", static_cast<double>(pool.cached_bytes));
  memory.Set("inUseBytes", static_cast<double>(pool.in_use_bytes));
  out.Set("memory", memory);
  return out;
}

}  // namespace infernode
