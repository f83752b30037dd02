#include "engines/batch_inputs.h"

#include <cstring>

#include "memory/host_registration.h"

namespace infernode {

namespace {

const InputTensor* FindInput(const InferenceRequest& request, const std::string& name) {
  for (const InputTensor& in : request.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

// The gathered shape: rows stacked when every request has the same non-batch dims, else the
// flat concatenation Triton hands to ragged-batching backends. A configured reshape replaces
// the non-batch dims with what the engine expects.
Shape GatheredShape(const TensorConfig& spec, const std::vector<const InputTensor*>& parts, bool batching) {
  if (!batching) return spec.has_reshape ? MapReshape(parts[0]->shape, spec.dims, spec.reshape) : parts[0]->shape;
  Shape tail(parts[0]->shape.begin() + 1, parts[0]->shape.end());
  int64_t rows = 0;
  int64_t elements = 0;
  bool uniform = true;
  for (const InputTensor* part : parts) {
    rows += part->shape[0];
    int64_t count = 0;
    ElementCount(part->shape, &count);
    elements += count;
    uniform = uniform && Shape(part->shape.begin() + 1, part->shape.end()) == tail;
  }
  if (!uniform) return Shape{elements};
  if (spec.has_reshape) tail = MapReshape(tail, spec.dims, spec.reshape);
  tail.insert(tail.begin(), rows);
  return tail;
}

bool StaysOnDevice(const InputTensor& in, int device_id) {
  return in.device != nullptr && device_id >= 0 && in.device->DeviceId() == device_id;
}

// Copies each part to its offset of the gathered input: host rows into the pooled buffer,
// device rows on `device_id` listed, other device rows copied to the host (synchronously).
Status CopyParts(const std::vector<const InputTensor*>& parts, int device_id, BufferPool* pool,
                 GatheredInput* gathered) {
  bool any_host = false;
  for (const InputTensor* part : parts) any_host = any_host || !StaysOnDevice(*part, device_id);
  if (any_host) RETURN_IF_ERROR(pool->Acquire(gathered->byte_size, &gathered->buffer));
  uint64_t offset = 0;
  for (const InputTensor* part : parts) {
    if (part->byte_size == 0) continue;
    if (StaysOnDevice(*part, device_id)) {
      const auto* base = static_cast<const uint8_t*>(part->device->DevicePointer());
      gathered->device_rows.push_back(DeviceRows{offset, base + part->device_offset, part->byte_size});
    } else if (part->device != nullptr) {
      const Status copied =
          part->device->CopyToHost(part->device_offset, gathered->buffer.Data() + offset, part->byte_size);
      if (!copied.IsOk()) return Status(copied.Code(), "input '" + part->name + "': " + copied.Message());
    } else {
      std::memcpy(gathered->buffer.Data() + offset, part->data, part->byte_size);
    }
    offset += part->byte_size;
  }
  return Status::Success();
}

}  // namespace

Status GatherBatchInputs(const ModelConfig& config, const Batch& batch, BufferPool* pool, int device_id,
                         std::vector<GatheredInput>* out) {
  out->clear();
  if (batch.requests.empty()) return Status::Success();
  std::vector<const TensorConfig*> specs;
  for (const TensorConfig& spec : config.inputs) specs.push_back(&spec);
  for (const TensorConfig& spec : config.implicit_inputs) specs.push_back(&spec);  // sequence controls, state
  for (const TensorConfig* spec_ptr : specs) {
    const TensorConfig& spec = *spec_ptr;
    std::vector<const InputTensor*> parts;
    uint64_t total = 0;
    for (const auto& request : batch.requests) {
      const InputTensor* in = FindInput(*request, spec.name);
      if (in == nullptr) continue;  // counted below: all requests carry it or none does
      parts.push_back(in);
      total += in->byte_size;
    }
    if (parts.empty()) continue;
    if (parts.size() != batch.requests.size()) {
      return Internal("input '" + spec.name + "' of model '" + config.name +
                      "' is present in only some requests of a batch");
    }
    GatheredInput gathered;
    gathered.name = spec.name;
    gathered.dtype = spec.dtype;
    gathered.shape = GatheredShape(spec, parts, config.max_batch_size > 0);
    gathered.byte_size = total;
    const InputTensor& first = *parts[0];
    if (device_id >= 0 && parts.size() == 1 && first.device == nullptr && first.dtype != DataType::kBytes &&
        first.byte_size >= kRegisterHostMinBytes) {
      gathered.host_in_place = first.data;  // the request keeps it alive until it is answered
    } else {
      RETURN_IF_ERROR(CopyParts(parts, device_id, pool, &gathered));
    }
    out->push_back(std::move(gathered));
  }
  return Status::Success();
}

}  // namespace infernode
